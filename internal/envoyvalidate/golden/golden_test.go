// Package golden loads the xDS output of every golden case of
// pkg/translate into a real Envoy (go test ./internal/envoyvalidate/golden). It
// lives apart from internal/envoyvalidate so that the validator's own tests do
// not depend on the Gateway API translator.
package golden

import (
	"github.com/xds-controller/xds-controller/internal/testenvoy"
	"os"

	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xds-controller/xds-controller/internal/envoyvalidate"
	"github.com/xds-controller/xds-controller/pkg/provider/file"
	"github.com/xds-controller/xds-controller/pkg/translate"
)

// TestGolden loads the xDS output of every golden case into Envoy.
func TestGolden(t *testing.T) {
	inputs, err := filepath.Glob("../../../pkg/translate/testdata/*.in.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(inputs) == 0 {
		t.Fatal("no golden cases found under pkg/translate/testdata (moved?)")
	}
	bin := testenvoy.Path(t)
	for _, in := range inputs {
		t.Run(strings.TrimSuffix(filepath.Base(in), ".in.yaml"), func(t *testing.T) {
			res, _, err := file.Load(in)
			if err != nil {
				t.Fatal(err)
			}
			input, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			out, err := translate.Run(res, translate.GoldenOptions(input))
			if err != nil {
				t.Fatal(err)
			}
			for _, scope := range translate.ScopeNames(out.XDS) {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				err := envoyvalidate.Validate(ctx, bin, out.XDS[scope])
				cancel()
				if err != nil {
					t.Errorf("scope %s: %v", scope, err)
				}
			}
		})
	}
}
