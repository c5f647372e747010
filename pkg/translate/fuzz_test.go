package translate

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xds-controller/xds-controller/internal/testenvoy"
	"github.com/xds-controller/xds-controller/pkg/envoyvalidate"
	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/provider/file"
)

// fuzzRun decodes data as the file provider does (standalone mode: no API
// server, so every object the Gateway API types decode reaches the
// translator, a superset of what the CRD schemas admit) and runs the
// pipeline. ok is false when nothing decoded.
func fuzzRun(t *testing.T, data []byte) (out *Output, irYAML, xdsYAML []byte, ok bool) {
	t.Helper()
	res, problems, err := file.Load(writeTemp(t, data))
	if err != nil {
		t.Fatal(err)
	}
	_ = problems // documents that do not decode are the loader's to report
	if res == nil || len(res.Gateways)+len(res.Ingresses) == 0 {
		return nil, nil, nil, false
	}
	out, err = Run(res, gatewayapi.Options{})
	if err != nil {
		t.Fatalf("the pipeline failed (a translator bug: invalid IR, a failed xDS translation or a panic): %v", err)
	}
	if irYAML, err = MarshalIR(out.Result); err != nil {
		t.Fatal(err)
	}
	if xdsYAML, err = MarshalXDS(out.XDS, true); err != nil {
		t.Fatal(err)
	}
	return out, irYAML, xdsYAML, true
}

func writeTemp(t *testing.T, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "in.yaml")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// FuzzTranslate: for any YAML, the pipeline (translate + pre-validation)
// never fails or panics, is deterministic (the same input twice gives
// byte-identical IR, status and xDS), and refuses no scope: every problem
// pre-validation finds is traced to an object, which gets a condition,
// and what is published passes pre-validation. The seeds are the golden
// inputs (testdata/*.in.yaml); what the fuzzer found is kept under
// testdata/fuzz/FuzzTranslate, and TestFuzzCorpusEnvoy has Envoy load
// its output. `make fuzz FUZZTIME=2m` runs it.
func FuzzTranslate(f *testing.F) {
	inputs, err := filepath.Glob("testdata/*.in.yaml")
	if err != nil {
		f.Fatal(err)
	}
	for _, in := range inputs {
		b, err := os.ReadFile(in)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out, ir1, xds1, ok := fuzzRun(t, data)
		if !ok {
			return
		}
		for scope, ps := range out.Refused {
			t.Errorf("scope %s refused (its Gateways would get nothing new): %v", scope, ps)
		}
		_, ir2, xds2, _ := fuzzRun(t, data)
		if !bytes.Equal(ir1, ir2) || !bytes.Equal(xds1, xds2) {
			t.Error("two runs on the same input differ")
		}
	})
}

// TestFuzzCorpusEnvoy has Envoy load (envoy --mode validate) the xDS of
// every scope translated from the committed fuzz corpus (a sample of
// maxEnvoyCorpus entries when it is larger): inputs that once broke a
// property, and edge values of every field we render (hostnames, header
// names and values, paths, redirects, weights, timeouts, retries, CORS,
// regular expressions). What passes pre-validation must be what Envoy
// accepts.
func TestFuzzCorpusEnvoy(t *testing.T) {
	envoy := testenvoy.Path(t)
	entries, err := filepath.Glob("testdata/fuzz/FuzzTranslate/*")
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) == 0 {
		t.Fatal("no fuzz corpus under testdata/fuzz/FuzzTranslate")
	}
	// A sample when the corpus grows: Envoy takes a fraction of a second
	// per scope.
	if len(entries) > maxEnvoyCorpus {
		sample := make([]string, maxEnvoyCorpus)
		for i := range sample {
			sample[i] = entries[i*len(entries)/maxEnvoyCorpus]
		}
		entries = sample
	}
	validated := 0
	for _, e := range entries {
		data := corpusEntry(t, e)
		out, _, _, ok := fuzzRun(t, data)
		if !ok {
			continue
		}
		for _, scope := range ScopeNames(out.XDS) {
			if out.Refused[scope] != nil {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			err := envoyvalidate.Validate(ctx, envoy, out.XDS[scope])
			cancel()
			if err != nil {
				t.Errorf("%s: scope %s passed pre-validation, Envoy refused it: %v", filepath.Base(e), scope, err)
			}
			validated++
		}
	}
	t.Logf("%d corpus entries, %d scopes loaded by Envoy", len(entries), validated)
}

// maxEnvoyCorpus is how many corpus entries TestFuzzCorpusEnvoy loads
// at most (evenly spread over the sorted corpus).
const maxEnvoyCorpus = 60

// corpusEntry reads a `go test fuzz v1` file of one []byte value.
func corpusEntry(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.TrimSpace(string(b))
	s, ok := strings.CutPrefix(s, "go test fuzz v1\n[]byte(")
	if !ok || !strings.HasSuffix(s, ")") {
		t.Fatalf("%s: not a go test fuzz v1 []byte entry", path)
	}
	v, err := strconv.Unquote(strings.TrimSuffix(s, ")"))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return []byte(v)
}
