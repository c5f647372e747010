package translate

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/ingress"
	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/provider/file"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

// copyIngressStatus copies an Ingress's status so that a later change to
// it shows (ingress.Cache shares statuses between runs).
func copyIngressStatus(st *ingress.Status) *ingress.Status {
	cp := *st
	cp.Listeners, cp.Problems = slices.Clone(st.Listeners), slices.Clone(st.Problems)
	cp.LoadBalancer = *st.LoadBalancer.DeepCopy()
	return &cp
}

// editSecret changes a Secret (a copy): a kubernetes.io/tls Secret gets a
// new key pair half of the time (a rotation: gatewayapi.Cache rotate),
// else, as for any Secret, the data of another Secret of the world.
func (w *world) editSecret(v *corev1.Secret) string {
	if v.Type == corev1.SecretTypeTLS && w.rng.IntN(2) == 0 {
		cert, key := newKeyPair(w.rng.Int64())
		v.Data = map[string][]byte{corev1.TLSCertKey: cert, corev1.TLSPrivateKeyKey: key}
		return "rotated"
	}
	return w.swap(v, "Data")
}

// newKeyPair returns a self-signed ECDSA P-256 certificate for
// *.example.com with the serial number serial, and its key, in PEM.
func newKeyPair(serial int64) (cert, key []byte) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial&0x7fffffff + 1), Subject: pkix.Name{CommonName: "example.com"},
		DNSNames: []string{"*.example.com", "example.com"}, NotBefore: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		NotAfter: time.Date(2036, 1, 1, 0, 0, 0, 0, time.UTC)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		panic(err)
	}
	kd, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		panic(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd})
}

// TestSecretRotationIsIncremental: a listener certificate's Secret given a
// new key pair is loaded again without a full translation (the Gateway
// API Cache's LastRun), and the run gives what Run gives: of the xDS only
// the Envoy secret changes (the listeners, route configurations, clusters
// and endpoints stay equal), the statuses are unchanged. With
// the rotation applied to nothing (the listener keeping its old
// certificate) the comparison fails (tried).
func TestSecretRotationIsIncremental(t *testing.T) {
	for _, in := range []string{"testdata/04-https-terminate.in.yaml", "testdata/85-ingress-tls.in.yaml"} {
		res, _, err := file.Load(in)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		i := slices.IndexFunc(res.Secrets, func(s *corev1.Secret) bool { return s.Type == corev1.SecretTypeTLS })
		if i < 0 {
			t.Fatalf("%s: no TLS Secret", in)
		}
		c := NewCache()
		if _, err := c.Run(res, gatewayapi.Options{}); err != nil {
			t.Fatal(err)
		}
		alt := *res
		alt.Secrets = slices.Clone(res.Secrets)
		s := alt.Secrets[i].DeepCopy()
		s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey] = newKeyPair(7)
		alt.Secrets[i] = s
		prev, _ := Run(res, gatewayapi.Options{})
		for _, r := range []*resources.Resources{&alt, res, &alt} {
			got, gotErr := c.Run(r, gatewayapi.Options{})
			if full, _ := c.gw.LastRun(); full {
				t.Errorf("%s: a Secret's rotation started over", in)
			}
			// Of the xDS, only the secret differs.
			for scope, x := range got.XDS {
				y := prev.XDS[scope]
				for i, pair := range [][2][]types.Resource{{x.Listeners, y.Listeners}, {x.Routes, y.Routes}, {x.Clusters, y.Clusters}, {x.Endpoints, y.Endpoints}} {
					if !slices.EqualFunc(pair[0], pair[1], func(a, b types.Resource) bool { return proto.Equal(a, b) }) {
						t.Errorf("%s: scope %s: resources of type %d changed", in, scope, i)
					}
				}
				if slices.EqualFunc(x.Secrets, y.Secrets, func(a, b types.Resource) bool { return proto.Equal(a, b) }) {
					t.Errorf("%s: scope %s: the secret did not change", in, scope)
				}
			}
			prev = got
			want, wantErr := Run(r, gatewayapi.Options{})
			if d := diffOutputs(got, want, gotErr, wantErr); d != "" {
				t.Fatalf("%s: incremental and full differ: %s", in, d)
			}
		}
	}
}

// TestIngressChangeCostsItsClass: with the Ingresses of one class beside
// a Gateway API route, a run after the route's change translates no class
// (ingress.Cache LastRun) and hands out the same Ingress IR routes and
// statuses; a run after one Ingress's change translates its class again,
// and the IR routes of the other Ingresses stay the same objects. Every
// run equals Run's.
func TestIngressChangeCostsItsClass(t *testing.T) {
	res, _, err := file.Load("testdata/01-basic-http.in.yaml")
	if err != nil {
		t.Fatal(err)
	}
	res.IngressClasses = []*networkingv1.IngressClass{{ObjectMeta: metav1.ObjectMeta{Name: "xds-controller"},
		Spec: networkingv1.IngressClassSpec{Controller: ingress.ControllerName}}}
	res.Ingresses = benchIngresses(3)
	res.Sort()
	c := NewCache()
	first, err := c.Run(res, gatewayapi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	routesOf := func(out *Output) map[string]*ir.HTTPRoute {
		m := map[string]*ir.HTTPRoute{}
		for _, g := range out.Result.IR.Gateways {
			for _, l := range g.Listeners {
				for _, r := range l.HTTPRoutes {
					if r.Origin.Object.Kind == gatewayapi.KindIngress {
						m[l.Name+" "+r.Name] = r
					}
				}
			}
		}
		return m
	}
	before := routesOf(first)
	if len(before) != 3 {
		t.Fatalf("%d Ingress routes, want 3", len(before))
	}
	route := *res
	route.HTTPRoutes = slices.Clone(res.HTTPRoutes)
	hr := route.HTTPRoutes[0].DeepCopy()
	hr.Spec.Hostnames = append(hr.Spec.Hostnames, "more.example.com")
	route.HTTPRoutes[0] = hr
	edited := route
	edited.Ingresses = slices.Clone(res.Ingresses)
	ing := edited.Ingresses[1].DeepCopy()
	ing.Spec.Rules[0].HTTP.Paths[0].Path = "/v2"
	edited.Ingresses[1] = ing
	for _, step := range []struct {
		res     *resources.Resources
		classes int
		changed string // the Ingress whose routes are new objects
	}{{&route, 0, ""}, {&edited, 1, ing.Name}} {
		got, gotErr := c.Run(step.res, gatewayapi.Options{})
		want, wantErr := Run(step.res, gatewayapi.Options{})
		if d := diffOutputs(got, want, gotErr, wantErr); d != "" {
			t.Fatalf("incremental and full differ: %s", d)
		}
		if n := c.ing.LastRun(); n != step.classes {
			t.Errorf("%d classes translated, want %d", n, step.classes)
		}
		for k, r := range routesOf(got) {
			mine := strings.Contains(k, "/"+step.changed+"/")
			if same := before[k] == r; same == (mine && step.changed != "") {
				t.Errorf("route %s: same object %v", k, same)
			}
		}
		if step.changed == "" {
			for k, st := range got.Result.Ingresses {
				if first.Result.Ingresses[k] != st {
					t.Errorf("Ingress %s: status is another object", k)
				}
			}
		}
	}
}

// TestNamespaceAndGrantChangesAreIncremental: a Namespace's labels that a
// listener's allowedRoutes selector reads (golden 18), and a
// ReferenceGrant that a cross-namespace backendRef asks (golden 25),
// changed back and forth: no run starts over (the routes that read them
// are translated again), and every run equals Run's (the route attaches
// or not, its backend is allowed or not). With the indexes not updated
// (rotate.go reindex) the comparison fails (tried).
func TestNamespaceAndGrantChangesAreIncremental(t *testing.T) {
	for _, tc := range []struct {
		in   string
		edit func(*resources.Resources) *resources.Resources
	}{
		{"testdata/18-allowed-routes-selector.in.yaml", func(res *resources.Resources) *resources.Resources {
			alt := *res
			alt.Namespaces = slices.Clone(res.Namespaces)
			for i, n := range alt.Namespaces {
				n = n.DeepCopy()
				if n.Labels["gateway-access"] == "true" {
					n.Labels["gateway-access"] = "false"
				} else {
					n.Labels["gateway-access"] = "true"
				}
				alt.Namespaces[i] = n
			}
			return &alt
		}},
		{"testdata/25-backend-cross-namespace-granted.in.yaml", func(res *resources.Resources) *resources.Resources {
			alt := *res
			alt.ReferenceGrants = nil
			return &alt
		}},
	} {
		res, _, err := file.Load(tc.in)
		if err != nil {
			t.Fatal(err)
		}
		c := NewCache()
		if _, err := c.Run(res, gatewayapi.Options{}); err != nil {
			t.Fatal(err)
		}
		alt := tc.edit(res)
		for _, r := range []*resources.Resources{alt, res, alt} {
			got, gotErr := c.Run(r, gatewayapi.Options{})
			if full, n := c.gw.LastRun(); full || n == 0 {
				t.Errorf("%s: the run started over (%v) or translated no route (%d)", tc.in, full, n)
			}
			want, wantErr := Run(r, gatewayapi.Options{})
			if d := diffOutputs(got, want, gotErr, wantErr); d != "" {
				t.Fatalf("%s: incremental and full differ: %s", tc.in, d)
			}
		}
	}
}
