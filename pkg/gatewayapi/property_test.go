package gatewayapi

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"google.golang.org/protobuf/proto"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/xds-controller/xds-controller/internal/envoyvalidate"
	"github.com/xds-controller/xds-controller/internal/testenvoy"
	"github.com/xds-controller/xds-controller/pkg/provider/file"
	"github.com/xds-controller/xds-controller/pkg/resources"
	"github.com/xds-controller/xds-controller/pkg/xdstranslator"
)

// nastyValues are what the mutation writes into string fields, whole or
// spliced into the field's value: the characters Envoy, the Gateway API
// schema or proto3 refuse somewhere (CR, LF, NUL, "?", "#", "%", spaces,
// ":"), path tricks, hostname tricks, regex syntax, non-ASCII and invalid
// UTF-8, and long strings.
var nastyValues = []string{
	"", " ", "a b", "\r\n", "a\r\nb", "\r", "\n", "\x00", "a\x00b", "\t", "\x01", "\x7f",
	"?", "#", "/x?y#z", "%", "%2f", "%2F", "%zz", "%%", "%DOWNSTREAM_REMOTE_ADDRESS%", "\\", "\\1",
	"/", "//", "/./", "/../", "/.", "/..", "..", ".", "*", "*.", "*.*.example.com", "a.*.example.com",
	"foo:80", "[::1]", "1.2.3.4", "::1", "999.1.2.3", "fe80::1%eth0", "-a", "a-", "UPPER.example.com", "a..b",
	"[", "(", ")", "(?P<x", "a{1001}", "x{2}{2}{2}{2}{2}{2}{2}{2}", "ÿ", "日本語", "\u2028", "\uFEFF", "😀",
	"\xff\xfe", "\xc3", "https://*.example.com", "http://", "GET", "*", "Exact", "PathPrefix",
	"RegularExpression", "Terminate", "Passthrough", "HTTP", "HTTPS", "TCP", "ReplaceFullPath",
	"ReplacePrefixMatch", "1h", "0s", "-1s", "1.5s", "100000h", "1h1m1s1ms1h",
	strings.Repeat("a", 64), strings.Repeat("a", 300), strings.Repeat("/a", 600), strings.Repeat("x", 5000),
	strings.Repeat("a.", 130) + "com", strings.Repeat("[a-z]+", 40), "/" + strings.Repeat("a", 200),
}

// nastyInts are what the mutation writes into integer fields.
var nastyInts = []int64{-1, 0, 1, 2, 100, 399, 600, 65535, 65536, 1000000, 1000001, math.MaxInt32, math.MinInt32}

type mutator struct {
	rng *rand.Rand
	p   float64
}

func (m *mutator) nastyString(old string) string {
	n := nastyValues[m.rng.IntN(len(nastyValues))]
	switch m.rng.IntN(4) {
	case 0:
		return n
	case 1:
		return old + n
	case 2:
		return n + old
	default:
		i := 0
		if len(old) > 0 {
			i = m.rng.IntN(len(old) + 1)
		}
		return old[:i] + n + old[i:]
	}
}

// walk mutates v in place: strings and integers with probability p, nil
// pointers and slices it sometimes fills, slice elements it sometimes
// repeats (duplicates, more than the schema's maxItems). Object metadata is
// left alone: names make objects meet.
func (m *mutator) walk(v reflect.Value, depth int) {
	if depth > 14 {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			if v.CanSet() && m.rng.Float64() < m.p/4 {
				v.Set(reflect.New(v.Type().Elem()))
				m.walk(v.Elem(), depth+1)
			}
			return
		}
		m.walk(v.Elem(), depth+1)
	case reflect.Struct:
		switch v.Type() {
		case reflect.TypeFor[metav1.ObjectMeta](), reflect.TypeFor[metav1.TypeMeta](), reflect.TypeFor[metav1.Time]():
			return
		}
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				m.walk(v.Field(i), depth+1)
			}
		}
	case reflect.Slice:
		if !v.CanSet() || v.Type().Elem().Kind() == reflect.Uint8 {
			return
		}
		if v.Len() == 0 && m.rng.Float64() < m.p/4 {
			v.Set(reflect.Append(v, reflect.New(v.Type().Elem()).Elem()))
		}
		for i := 0; i < v.Len(); i++ {
			m.walk(v.Index(i), depth+1)
		}
		// Repeat an element after the walk: copies share its pointers,
		// which must not be mutated once per copy.
		if v.Len() > 0 && m.rng.Float64() < m.p/3 {
			n := []int{1, 1, 1, 17, 65}[m.rng.IntN(5)] // duplicates; past maxItems 16 and 64
			e := v.Index(m.rng.IntN(v.Len()))
			for range n {
				v.Set(reflect.Append(v, e))
			}
		}
	case reflect.String:
		if v.CanSet() && m.rng.Float64() < m.p {
			v.SetString(m.nastyString(v.String()))
		}
	case reflect.Int, reflect.Int32, reflect.Int64:
		if v.CanSet() && m.rng.Float64() < m.p {
			v.SetInt(nastyInts[m.rng.IntN(len(nastyInts))])
		}
	case reflect.Bool:
		if v.CanSet() && m.rng.Float64() < m.p {
			v.SetBool(!v.Bool())
		}
	}
}

func cloneResources(r *resources.Resources) *resources.Resources {
	out := &resources.Resources{}
	for _, o := range r.GatewayClasses {
		out.GatewayClasses = append(out.GatewayClasses, o.DeepCopy())
	}
	for _, o := range r.Gateways {
		out.Gateways = append(out.Gateways, o.DeepCopy())
	}
	for _, o := range r.HTTPRoutes {
		out.HTTPRoutes = append(out.HTTPRoutes, o.DeepCopy())
	}
	for _, o := range r.GRPCRoutes {
		out.GRPCRoutes = append(out.GRPCRoutes, o.DeepCopy())
	}
	for _, o := range r.TLSRoutes {
		out.TLSRoutes = append(out.TLSRoutes, o.DeepCopy())
	}
	for _, o := range r.TCPRoutes {
		out.TCPRoutes = append(out.TCPRoutes, o.DeepCopy())
	}
	for _, o := range r.UDPRoutes {
		out.UDPRoutes = append(out.UDPRoutes, o.DeepCopy())
	}
	for _, o := range r.ReferenceGrants {
		out.ReferenceGrants = append(out.ReferenceGrants, o.DeepCopy())
	}
	for _, o := range r.Services {
		out.Services = append(out.Services, o.DeepCopy())
	}
	for _, o := range r.EndpointSlices {
		out.EndpointSlices = append(out.EndpointSlices, o.DeepCopy())
	}
	for _, o := range r.Secrets {
		out.Secrets = append(out.Secrets, o.DeepCopy())
	}
	for _, o := range r.ConfigMaps {
		out.ConfigMaps = append(out.ConfigMaps, o.DeepCopy())
	}
	for _, o := range r.Namespaces {
		out.Namespaces = append(out.Namespaces, o.DeepCopy())
	}
	return out
}

// conditionReasonRE is the API server's pattern for a condition reason.
var conditionReasonRE = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`)

// TestNoInvalidValueReachesEnvoy is the property behind the schema checks:
// whatever a user writes into a route of any kind (or a Gateway, Service or
// EndpointSlice), translation yields an IR that passes ir.Validate, xDS
// that passes every resource's ValidateAll and marshals (proto3 strings
// must be UTF-8), and status the API server would take. For every golden
// input it mutates string, integer and boolean fields at random many times
// over (nastyValues), fills nil fields and repeats list items.
//
// Failures print the input file, the seed and the mutated routes.
// XDSC_PROPERTY_ITERATIONS changes the number of runs per input (default
// 30). XDSC_PROPERTY_ENVOY=1 also loads every result into a real Envoy
// (envoy --mode validate, slow: use few iterations), which catches what
// ValidateAll cannot: RE2 program sizes, header value format strings.
func TestNoInvalidValueReachesEnvoy(t *testing.T) {
	inputs, err := filepath.Glob("../translate/testdata/*.in.yaml")
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no golden inputs: %v", err)
	}
	iterations := 30
	if s := os.Getenv("XDSC_PROPERTY_ITERATIONS"); s != "" {
		if iterations, err = strconv.Atoi(s); err != nil {
			t.Fatal(err)
		}
	}
	if testing.Short() {
		iterations = 5
	}
	envoyBin := ""
	if os.Getenv("XDSC_PROPERTY_ENVOY") != "" {
		envoyBin = testenvoy.Path(t)
	}
	for _, in := range inputs {
		base, _, err := file.Load(in)
		if err != nil {
			t.Fatal(err)
		}
		h := fnv.New64a()
		h.Write([]byte(filepath.Base(in)))
		for i := range iterations {
			seed := h.Sum64() + uint64(i)
			rng := rand.New(rand.NewPCG(seed, 7))
			res := cloneResources(base)
			routeMut := &mutator{rng: rng, p: []float64{0.02, 0.08, 0.25}[i%3]}
			for _, hr := range res.HTTPRoutes {
				routeMut.walk(reflect.ValueOf(&hr.Spec).Elem(), 0)
			}
			for _, gr := range res.GRPCRoutes {
				routeMut.walk(reflect.ValueOf(&gr.Spec).Elem(), 0)
			}
			for _, tr := range res.TLSRoutes {
				routeMut.walk(reflect.ValueOf(&tr.Spec).Elem(), 0)
			}
			for _, tr := range res.TCPRoutes {
				routeMut.walk(reflect.ValueOf(&tr.Spec).Elem(), 0)
			}
			for _, ur := range res.UDPRoutes {
				routeMut.walk(reflect.ValueOf(&ur.Spec).Elem(), 0)
			}
			other := &mutator{rng: rng, p: 0.03}
			if i%2 == 1 {
				for _, gw := range res.Gateways {
					other.walk(reflect.ValueOf(&gw.Spec).Elem(), 0)
				}
				for _, es := range res.EndpointSlices {
					other.walk(reflect.ValueOf(es).Elem(), 0)
				}
				for _, s := range res.Services {
					other.walk(reflect.ValueOf(&s.Spec).Elem(), 0)
				}
			}
			if err := checkPipeline(res, envoyBin); err != nil {
				dump, _ := yaml.Marshal(map[string]any{"httpRoutes": res.HTTPRoutes, "grpcRoutes": res.GRPCRoutes,
					"tlsRoutes": res.TLSRoutes, "tcpRoutes": res.TCPRoutes, "udpRoutes": res.UDPRoutes})
				if len(dump) > 20000 {
					dump = dump[:20000]
				}
				t.Fatalf("%s, seed %d: %v\nmutated routes:\n%s", filepath.Base(in), seed, err, dump)
			}
		}
	}
}

// checkPipeline runs the translation and says what, if anything, would
// not reach Envoy or the API server.
func checkPipeline(res *resources.Resources, envoyBin string) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	r := Translate(res, Options{})
	if err := r.IR.Validate(); err != nil {
		return fmt.Errorf("invalid IR: %w", err)
	}
	x, err := xdstranslator.Translate(r.IR)
	if err != nil {
		return fmt.Errorf("xDS translation: %w", err)
	}
	for scope, rs := range x {
		for _, list := range [][]types.Resource{rs.Listeners, rs.Routes, rs.Clusters, rs.Endpoints, rs.Secrets} {
			for _, m := range list {
				if _, err := proto.Marshal(m); err != nil {
					return fmt.Errorf("scope %s: %T does not marshal: %w", scope, m, err)
				}
			}
		}
	}
	if envoyBin != "" {
		for scope, rs := range x {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			err := envoyvalidate.Validate(ctx, envoyBin, rs)
			cancel()
			if err != nil {
				return fmt.Errorf("scope %s: %w", scope, err)
			}
		}
	}
	var conds []metav1.Condition
	for _, s := range r.Status.Gateways {
		conds = append(conds, s.Conditions...)
		for _, l := range s.Listeners {
			conds = append(conds, l.Conditions...)
		}
	}
	for _, s := range r.Status.Routes {
		for _, p := range s.Parents {
			conds = append(conds, p.Conditions...)
		}
	}
	for _, c := range conds {
		if len(c.Reason) > 1024 || !conditionReasonRE.MatchString(c.Reason) {
			return fmt.Errorf("condition %s has reason %q, which the API server refuses", c.Type, c.Reason)
		}
		if len(c.Message) > maxConditionMessage {
			return fmt.Errorf("condition %s has a message of %d bytes, more than the API server takes", c.Type, len(c.Message))
		}
	}
	return nil
}
