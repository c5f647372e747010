package translate

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/ingress"
	"github.com/xds-controller/xds-controller/pkg/provider/file"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

// benchInput returns the shared benchmark input for n HTTPRoutes: one
// Gateway, n Services and n HTTPRoutes with one hostname each, written by
// the workspace's shared/bench/gen-routes.py so figures compare with other
// implementations. Set BENCH_GEN_ROUTES to the script's path when the
// workspace is laid out differently.
func benchInput(b *testing.B, n int, endpointSlices bool) *resources.Resources {
	b.Helper()
	script := os.Getenv("BENCH_GEN_ROUTES")
	if script == "" {
		script = filepath.Join("..", "..", "..", "shared", "bench", "gen-routes.py")
	}
	args := []string{fmt.Sprint(n)}
	if endpointSlices {
		args = append(args, "--endpointslices")
	}
	return benchGenerate(b, script, args...)
}

// benchGenerate runs the Python input generator script with args and
// returns the objects it writes, sorted; it skips the benchmark when the
// script is missing.
func benchGenerate(b *testing.B, script string, args ...string) *resources.Resources {
	b.Helper()
	if _, err := os.Stat(script); err != nil {
		b.Skipf("benchmark input generator not found at %s (set BENCH_GEN_ROUTES)", script)
	}
	out, err := exec.Command("python3", append([]string{script}, args...)...).Output()
	if err != nil {
		b.Fatal(err)
	}
	res := &resources.Resources{}
	if problems := file.Decode("bench.yaml", out, res); len(problems) > 0 {
		b.Fatalf("benchmark input: %v", problems[0])
	}
	res.Sort()
	return res
}

// BenchmarkTranslate measures the whole pure pipeline (Gateway API -> IR ->
// validation -> xDS) on the shared benchmark input.
func BenchmarkTranslate(b *testing.B) {
	for _, n := range []int{100, 1000, 5000} {
		b.Run(fmt.Sprintf("routes=%d", n), func(b *testing.B) {
			benchFull(b, benchInput(b, n, true))
		})
	}
}

// benchFull measures full translations (Run) of res, which holds one
// Gateway.
func benchFull(b *testing.B, res *resources.Resources) {
	b.ReportAllocs()
	for b.Loop() {
		out, err := Run(res, gatewayapi.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if got := len(out.Result.IR.Gateways); got != 1 {
			b.Fatalf("gateways = %d, want 1", got)
		}
	}
}

// BenchmarkTranslateChange measures one run of a Cache after one change,
// at 1000 and 5000 routes of the shared benchmark input: each iteration
// alternates between two snapshots that share every object but one, so
// that every run sees exactly one changed object: an HTTPRoute whose path
// changed (change=httproute), or an EndpointSlice with one more endpoint
// (change=endpointslice); ingressclass=1: the same HTTPRoute change with
// an IngressClass of ours that has no Ingresses, as the chart installs;
// ingress=1: with that class and one Ingress of it, which resolves a
// Service backend (gatewayapi.Refs); ingress=1000: with 1000 Ingresses
// of it, one host and Service each (benchIngresses), and
// change=ingress: one of them whose path changed; change=secret: the
// certificate Secret of an HTTPS listener of the Gateway (https=1,
// withHTTPSListener) given a new key pair, also at 3000 routes.
// BenchmarkTranslate is the full translation the figures compare with.
func BenchmarkTranslateChange(b *testing.B) {
	for _, n := range []int{1000, 3000, 5000} {
		for _, change := range []string{"httproute", "endpointslice", "httproute/ingressclass=1", "httproute/ingress=1",
			"httproute/ingress=1000", "ingress/ingress=1000", "secret/https=1"} {
			if n == 3000 && change != "secret/https=1" {
				continue
			}
			b.Run(fmt.Sprintf("routes=%d/change=%s", n, change), func(b *testing.B) {
				res := benchInput(b, n, true)
				if _, withIngress, ok := strings.Cut(change, "/ingress"); ok {
					res.IngressClasses = []*networkingv1.IngressClass{{ObjectMeta: metav1.ObjectMeta{Name: "xds-controller"},
						Spec: networkingv1.IngressClassSpec{Controller: ingress.ControllerName}}}
					switch withIngress {
					case "=1":
						res.Ingresses = []*networkingv1.Ingress{benchIngress()}
					case "=1000":
						res.Ingresses = benchIngresses(1000)
					}
				}
				if strings.HasSuffix(change, "/https=1") {
					withHTTPSListener(res)
				}
				benchChange(b, res, change)
			})
		}
	}
}

// benchIngresses are n Ingresses like benchIngress, each of its own host
// (ingress-<i>.example.com) and Service of the benchmark input (svc-<i>).
func benchIngresses(n int) []*networkingv1.Ingress {
	out := make([]*networkingv1.Ingress, n)
	for i := range out {
		ing := benchIngress()
		ing.Name = fmt.Sprintf("bench-%04d", i)
		ing.Spec.Rules[0].Host = fmt.Sprintf("ingress-%d.example.com", i)
		ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Name = fmt.Sprintf("svc-%d", i)
		out[i] = ing
	}
	return out
}

// withHTTPSListener gives the benchmark input's Gateway an HTTPS listener
// on port 443 whose certificate is the kubernetes.io/tls Secret
// default/bench-tls (a new key pair), beside its HTTP listener.
func withHTTPSListener(res *resources.Resources) {
	gw := res.Gateways[0].DeepCopy()
	gw.Spec.Listeners = append(gw.Spec.Listeners, gwapiv1.Listener{Name: "https", Port: 443, Protocol: gwapiv1.HTTPSProtocolType,
		TLS: &gwapiv1.ListenerTLSConfig{CertificateRefs: []gwapiv1.SecretObjectReference{{Name: "bench-tls"}}}})
	res.Gateways = []*gwapiv1.Gateway{gw}
	cert, key := newKeyPair(1)
	res.Secrets = []*corev1.Secret{{ObjectMeta: metav1.ObjectMeta{Namespace: gw.Namespace, Name: "bench-tls"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: cert, corev1.TLSPrivateKeyKey: key}}}
}

// benchChange measures runs of a Cache that alternate between res and a
// copy of it with one object changed (BenchmarkTranslateChange): change
// is "httproute" (the path of the HTTPRoute in the middle of the sorted
// list) or "endpointslice" (one more endpoint in the EndpointSlice in the
// middle), "ingress" (the path of the Ingress in the middle) or "secret"
// (the first Secret given a new key pair), optionally followed by "/" and
// a variant of the input that res already has.
func benchChange(b *testing.B, res *resources.Resources, change string) {
	alt := *res
	switch kind, _, _ := strings.Cut(change, "/"); kind {
	case "httproute":
		alt.HTTPRoutes = slices.Clone(res.HTTPRoutes)
		k := len(alt.HTTPRoutes) / 2
		r := alt.HTTPRoutes[k].DeepCopy()
		r.Generation++
		r.Spec.Rules[0].Matches = []gwapiv1.HTTPRouteMatch{{Path: &gwapiv1.HTTPPathMatch{Value: ptrTo("/v2")}}}
		alt.HTTPRoutes[k] = r
	case "ingress":
		alt.Ingresses = slices.Clone(res.Ingresses)
		k := len(alt.Ingresses) / 2
		ing := alt.Ingresses[k].DeepCopy()
		ing.Generation++
		ing.Spec.Rules[0].HTTP.Paths[0].Path = "/v2"
		alt.Ingresses[k] = ing
	case "secret":
		alt.Secrets = slices.Clone(res.Secrets)
		sec := alt.Secrets[0].DeepCopy()
		sec.Data[corev1.TLSCertKey], sec.Data[corev1.TLSPrivateKeyKey] = newKeyPair(7)
		alt.Secrets[0] = sec
	case "endpointslice":
		alt.EndpointSlices = slices.Clone(res.EndpointSlices)
		k := len(alt.EndpointSlices) / 2
		es := alt.EndpointSlices[k].DeepCopy()
		es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.200.0.1"}})
		alt.EndpointSlices[k] = es
	}
	c := NewCache()
	if _, err := c.Run(res, gatewayapi.Options{}); err != nil {
		b.Fatal(err)
	}
	snaps := []*resources.Resources{&alt, res}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		out, err := c.Run(snaps[i%2], gatewayapi.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if got := len(out.Result.IR.Gateways); got != 1+len(res.IngressClasses) {
			b.Fatalf("gateways = %d, want %d", got, 1+len(res.IngressClasses))
		}
		i++
	}
}

// benchIngress is an Ingress of IngressClass xds-controller whose one
// path routes host ingress.example.com to svc-0:8080 of the benchmark
// input.
func benchIngress() *networkingv1.Ingress {
	class := "xds-controller"
	prefix := networkingv1.PathTypePrefix
	return &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "bench"},
		Spec: networkingv1.IngressSpec{IngressClassName: &class, Rules: []networkingv1.IngressRule{{
			Host: "ingress.example.com",
			IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
				Path: "/", PathType: &prefix,
				Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
					Name: "svc-0", Port: networkingv1.ServiceBackendPort{Number: 8080}}},
			}}}},
		}}},
	}
}
