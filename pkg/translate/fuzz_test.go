package translate

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/internal/envoyvalidate"
	"github.com/xds-controller/xds-controller/internal/testenvoy"
	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/provider/file"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

// fuzzRun decodes data as the file provider does (standalone mode: no API
// server, so every object the Gateway API types decode reaches the
// translator, a superset of what the CRD schemas admit) and runs the
// pipeline. ok is false when nothing decoded.
func fuzzRun(t *testing.T, data []byte) (out *Output, xdsYAML []byte, ok bool) {
	t.Helper()
	res, problems, err := file.Load(writeTemp(t, data))
	if err != nil {
		t.Fatal(err)
	}
	_ = problems // documents that do not decode are the loader's to report
	if res == nil || len(res.Gateways)+len(res.Ingresses) == 0 {
		return nil, nil, false
	}
	out, err = Run(res, gatewayapi.Options{})
	if err != nil {
		t.Fatalf("the pipeline failed (a translator bug: invalid IR, a failed xDS translation or a panic): %v", err)
	}
	if xdsYAML, err = MarshalXDS(out.XDS, true); err != nil {
		t.Fatal(err)
	}
	return out, xdsYAML, true
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
// equal IR and status, byte-identical xDS), and refuses no scope: every
// problem pre-validation finds is traced to an object, which gets a
// condition, and what is published passes pre-validation. The seeds are the golden
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
		out, xds1, ok := fuzzRun(t, data)
		if !ok {
			return
		}
		for scope, ps := range out.Refused {
			t.Errorf("scope %s refused (its Gateways would get nothing new): %v", scope, ps)
		}
		out2, xds2, _ := fuzzRun(t, data)
		if !reflect.DeepEqual(out.Result.IR, out2.Result.IR) || !reflect.DeepEqual(out.Result.Status, out2.Result.Status) || !bytes.Equal(xds1, xds2) {
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
	fields, err := filepath.Glob("testdata/fuzz/FuzzHTTPRouteFields/*")
	if err != nil {
		t.Fatal(err)
	}
	entries = append(entries, fields...)
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
		values := corpusEntry(t, e)
		var out *Output
		if len(values) == 1 {
			var ok bool
			if out, _, ok = fuzzRun(t, values[0].([]byte)); !ok {
				continue
			}
		} else {
			var err error
			if out, err = Run(routeFields(t, values), gatewayapi.Options{}); err != nil {
				t.Fatalf("%s: %v", e, err)
			}
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
const maxEnvoyCorpus = 100

// corpusEntry reads a `go test fuzz v1` file: its values ([]byte,
// string, uint8 and int32 are the types our fuzz targets take).
func corpusEntry(t *testing.T, path string) []any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if lines[0] != "go test fuzz v1" {
		t.Fatalf("%s: not a go test fuzz v1 file", path)
	}
	var values []any
	for _, l := range lines[1:] {
		typ, arg, ok := strings.Cut(l, "(")
		arg, ok2 := strings.CutSuffix(arg, ")")
		if !ok || !ok2 {
			t.Fatalf("%s: cannot read %q", path, l)
		}
		var v any
		switch typ {
		case "[]byte", "string":
			s, err := strconv.Unquote(arg)
			if err != nil {
				t.Fatalf("%s: %q: %v", path, l, err)
			}
			v = s
			if typ == "[]byte" {
				v = []byte(s)
			}
		case "uint8", "byte", "int32", "rune":
			// A number, or a character literal (the fuzzer writes
			// byte('\x01') and rune('a')).
			var n int64
			if c, err := strconv.Unquote(arg); err == nil && strings.HasPrefix(arg, "'") {
				n = int64([]rune(c)[0])
			} else if n, err = strconv.ParseInt(arg, 0, 64); err != nil {
				t.Fatalf("%s: %q: %v", path, l, err)
			}
			v = int32(n)
			if typ == "uint8" || typ == "byte" {
				v = uint8(n)
			}
		default:
			t.Fatalf("%s: type %s is not one our fuzz targets take", path, typ)
		}
		values = append(values, v)
	}
	return values
}

// FuzzHTTPRouteFields fuzzes the values of one HTTPRoute rule, typed (so
// that the fuzzer spends its time on values, not on YAML syntax), on the
// Gateway, Service and EndpointSlice of the golden case 50: its hostname,
// path match, header and query parameter matches, header modifier,
// redirect or rewrite, backend weights and timeout (routeFields). The
// properties are FuzzTranslate's; a rule whose values the translator
// refuses gets a condition, and its resources are left out.
func FuzzHTTPRouteFields(f *testing.F) {
	f.Add("a.example.com", uint8(1), "/re/[a-z]+", "x-id", "v1", uint8(1), "q", "1", "x-set", "v", "b.example.com", "/new", int32(1), int32(0), "10s")
	f.Add("*.example.com", uint8(0), "/", "X-A", `\w{33}`, uint8(2), "p", `\x{100}`, "x-a", "%REQ(:path)%", "", "/", int32(0), int32(0), "0s")
	f.Add("10.0.0.1", uint8(2), "/a", "te", "é", uint8(0), "", "", ":path", "a\r\nb", "B.example.com", "//x", int32(1000000), int32(1000000), "99999h")
	f.Fuzz(func(t *testing.T, host string, pathType uint8, path, hName, hValue string, hType uint8, qName, qValue, setName, setValue, redirectHost, rewrite string, w1, w2 int32, timeout string) {
		res := routeFields(t, []any{host, pathType, path, hName, hValue, hType, qName, qValue, setName, setValue, redirectHost, rewrite, w1, w2, timeout})
		run := func() (*Output, []byte) {
			out, err := Run(res, gatewayapi.Options{})
			if err != nil {
				t.Fatalf("the pipeline failed: %v", err)
			}
			b, err := MarshalXDS(out.XDS, true)
			if err != nil {
				t.Fatal(err)
			}
			return out, b
		}
		out, x1 := run()
		for scope, ps := range out.Refused {
			t.Errorf("scope %s refused: %v", scope, ps)
		}
		if _, x2 := run(); !bytes.Equal(x1, x2) {
			t.Error("two runs on the same input differ")
		}
	})
}

// routeFields is the input of FuzzHTTPRouteFields for its arguments v.
func routeFields(t *testing.T, v []any) *resources.Resources {
	t.Helper()
	host, pathType, path, hName, hValue, hType := v[0].(string), v[1].(uint8), v[2].(string), v[3].(string), v[4].(string), v[5].(uint8)
	qName, qValue, setName, setValue, redirectHost, rewrite := v[6].(string), v[7].(string), v[8].(string), v[9].(string), v[10].(string), v[11].(string)
	w1, w2, timeout := v[12].(int32), v[13].(int32), v[14].(string)
	data, err := os.ReadFile("testdata/50-invalid-regex.in.yaml")
	if err != nil {
		t.Fatal(err)
	}
	res, _, err := file.Load(writeTemp(t, data))
	if err != nil {
		t.Fatal(err)
	}
	rt := res.HTTPRoutes[0].DeepCopy()
	types := []gwapiv1.PathMatchType{gwapiv1.PathMatchExact, gwapiv1.PathMatchPathPrefix, gwapiv1.PathMatchRegularExpression}
	htypes := []gwapiv1.HeaderMatchType{gwapiv1.HeaderMatchExact, gwapiv1.HeaderMatchRegularExpression}
	qtypes := []gwapiv1.QueryParamMatchType{gwapiv1.QueryParamMatchExact, gwapiv1.QueryParamMatchRegularExpression}
	rt.Spec.Hostnames = []gwapiv1.Hostname{gwapiv1.Hostname(host)}
	rule := gwapiv1.HTTPRouteRule{
		Matches: []gwapiv1.HTTPRouteMatch{{
			Path:    &gwapiv1.HTTPPathMatch{Type: &types[int(pathType)%len(types)], Value: &path},
			Headers: []gwapiv1.HTTPHeaderMatch{{Type: &htypes[int(hType)%len(htypes)], Name: gwapiv1.HTTPHeaderName(hName), Value: hValue}},
		}},
		Filters: []gwapiv1.HTTPRouteFilter{{Type: gwapiv1.HTTPRouteFilterRequestHeaderModifier,
			RequestHeaderModifier: &gwapiv1.HTTPHeaderFilter{Set: []gwapiv1.HTTPHeader{{Name: gwapiv1.HTTPHeaderName(setName), Value: setValue}}}}},
		BackendRefs: []gwapiv1.HTTPBackendRef{
			{BackendRef: gwapiv1.BackendRef{BackendObjectReference: gwapiv1.BackendObjectReference{Name: "app", Port: ptrTo(gwapiv1.PortNumber(80))}, Weight: &w1}},
			{BackendRef: gwapiv1.BackendRef{BackendObjectReference: gwapiv1.BackendObjectReference{Name: "app", Port: ptrTo(gwapiv1.PortNumber(80))}, Weight: &w2}},
		},
		Timeouts: &gwapiv1.HTTPRouteTimeouts{Request: ptrTo(gwapiv1.Duration(timeout))},
	}
	if qName != "" {
		rule.Matches[0].QueryParams = []gwapiv1.HTTPQueryParamMatch{{Type: &qtypes[int(hType/2)%len(qtypes)], Name: gwapiv1.HTTPHeaderName(qName), Value: qValue}}
	}
	if redirectHost != "" {
		// A redirect instead of backends: its hostname and path.
		rule.BackendRefs = nil
		rule.Filters = append(rule.Filters, gwapiv1.HTTPRouteFilter{Type: gwapiv1.HTTPRouteFilterRequestRedirect,
			RequestRedirect: &gwapiv1.HTTPRequestRedirectFilter{Hostname: ptrTo(gwapiv1.PreciseHostname(redirectHost)),
				Path: &gwapiv1.HTTPPathModifier{Type: gwapiv1.FullPathHTTPPathModifier, ReplaceFullPath: &rewrite}}})
	} else {
		rule.Filters = append(rule.Filters, gwapiv1.HTTPRouteFilter{Type: gwapiv1.HTTPRouteFilterURLRewrite,
			URLRewrite: &gwapiv1.HTTPURLRewriteFilter{Path: &gwapiv1.HTTPPathModifier{Type: gwapiv1.PrefixMatchHTTPPathModifier, ReplacePrefixMatch: &rewrite}}})
	}
	rt.Spec.Rules = []gwapiv1.HTTPRouteRule{rule, {BackendRefs: rt.Spec.Rules[1].BackendRefs}}
	res.HTTPRoutes[0] = rt
	return res
}
