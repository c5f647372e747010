package translate

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/provider/file"
)

// update regenerates the golden files: go test ./pkg/translate -update
// (or `make golden`). Review the diff like code.
var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// TestGolden runs every testdata/<case>.in.yaml through the pipeline and
// compares the IR and status with <case>.ir.yaml and the xDS resources with
// <case>.xds.yaml. Documents that fail to load are listed at the top of the
// IR file under loadErrors.
func TestGolden(t *testing.T) {
	inputs, err := filepath.Glob("testdata/*.in.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(inputs) == 0 {
		t.Fatal("no golden cases under testdata/")
	}
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".in.yaml")
		t.Run(name, func(t *testing.T) {
			irYAML, xdsYAML := runCase(t, in)
			compareGolden(t, "testdata/"+name+".ir.yaml", irYAML)
			compareGolden(t, "testdata/"+name+".xds.yaml", xdsYAML)
		})
	}
}

// runCase translates one golden input and returns its IR and xDS YAML.
func runCase(t *testing.T, in string) (irYAML, xdsYAML []byte) {
	t.Helper()
	res, problems, err := file.Load(in)
	if err != nil {
		t.Fatal(err)
	}
	var head bytes.Buffer
	if len(problems) > 0 {
		head.WriteString("loadErrors:\n")
		for _, p := range problems {
			fmt.Fprintf(&head, "- %q\n", fmt.Sprintf("%s: %v", p.Object, p.Err))
		}
	}
	out, err := Run(res, goldenOptions(t, in))
	if err != nil {
		t.Fatalf("pipeline failed: %v", err)
	}
	// The IR shows its (test) private keys, so that the golden files say
	// which key reached which listener; TestRedact covers the redaction.
	irYAML, err = MarshalIR(out.Result, true)
	if err != nil {
		t.Fatal(err)
	}
	xdsYAML, err = MarshalXDS(out.XDS, false)
	if err != nil {
		t.Fatal(err)
	}
	return append(head.Bytes(), irYAML...), xdsYAML
}

// goldenOptions are the options of the golden case in (GoldenOptions).
func goldenOptions(t *testing.T, in string) gatewayapi.Options {
	t.Helper()
	b, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	return GoldenOptions(b)
}

func compareGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run `make golden` to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got); run `make golden` and review the diff:\n%s", path, diff)
	}
}

// TestDeterministic checks that two runs on the same input give
// byte-identical output, so that golden files and offline translation can be
// trusted.
func TestDeterministic(t *testing.T) {
	inputs, _ := filepath.Glob("testdata/*.in.yaml")
	for _, in := range inputs {
		a1, b1 := runCase(t, in)
		a2, b2 := runCase(t, in)
		if !bytes.Equal(a1, a2) || !bytes.Equal(b1, b2) {
			t.Errorf("%s: two runs differ", in)
		}
	}
}
