package xdsvalidate_test

import (
	"path/filepath"
	"strings"
	"testing"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/provider/file"
	"github.com/xds-controller/xds-controller/pkg/translate"
	"github.com/xds-controller/xds-controller/pkg/xdsvalidate"
)

// Every golden case's xDS passes Check: the checks find nothing in what
// the translator makes of valid (or validated) input.
func TestGoldenCasesPass(t *testing.T) {
	ins, _ := filepath.Glob("../translate/testdata/*.in.yaml")
	if len(ins) == 0 {
		t.Fatal("no golden inputs")
	}
	for _, in := range ins {
		loaded, err := (&file.Loader{}).Load(in)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		out, err := translate.Run(loaded.Resources, gatewayapi.Options{Scope: func(*gwapiv1.Gateway) string { return "s" }})
		if err != nil {
			continue
		}
		for scope, r := range out.XDS {
			if ps := xdsvalidate.Check(r); len(ps) > 0 {
				t.Errorf("%s scope %s: %v", strings.TrimSuffix(filepath.Base(in), ".in.yaml"), scope, ps)
			}
		}
	}
}
