package gatewayapi

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/internal/xdstest"
	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

// backendCertFixture is fixture() with a BackendTLSPolicy on Service app
// (CA from ConfigMap ca), the kubernetes.io/tls Secret default/client, and
// Gateway web with clientCertificateRef ref; an HTTPRoute (hostname
// h.example) and a GRPCRoute (g.example) to app.
func backendCertFixture(ref gwapiv1.SecretObjectReference) *resourcesWithCert {
	res := fixture()
	chain, key := xdstest.Cert("gateway.example")
	ca, _ := xdstest.Cert("app.example")
	res.Secrets = []*corev1.Secret{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "client"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: chain, corev1.TLSPrivateKeyKey: key}}}
	res.ConfigMaps = []*corev1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "ca"}, Data: map[string]string{"ca.crt": string(ca)}}}
	res.BackendTLSPolicies = []*gwapiv1.BackendTLSPolicy{{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "app"},
		Spec: gwapiv1.BackendTLSPolicySpec{
			TargetRefs: []gwapiv1.LocalPolicyTargetReferenceWithSectionName{{LocalPolicyTargetReference: gwapiv1.LocalPolicyTargetReference{Kind: "Service", Name: "app"}}},
			Validation: gwapiv1.BackendTLSPolicyValidation{CACertificateRefs: []gwapiv1.LocalObjectReference{{Kind: "ConfigMap", Name: "ca"}}, Hostname: "app.example"},
		},
	}}
	res.Gateways[0].Spec.TLS = &gwapiv1.GatewayTLSConfig{Backend: &gwapiv1.GatewayBackendTLS{ClientCertificateRef: &ref}}
	hr := httpRoute("h", gwapiv1.HTTPRouteRule{BackendRefs: []gwapiv1.HTTPBackendRef{toApp(80)}})
	hr.Spec.Hostnames = []gwapiv1.Hostname{"h.example"}
	gr := grpcRoute("g", gwapiv1.GRPCRouteRule{BackendRefs: []gwapiv1.GRPCBackendRef{grpcToApp()}})
	gr.Spec.Hostnames = []gwapiv1.Hostname{"g.example"}
	res.HTTPRoutes, res.GRPCRoutes = []*gwapiv1.HTTPRoute{hr}, []*gwapiv1.GRPCRoute{gr}
	return &resourcesWithCert{res, chain}
}

// resourcesWithCert is a snapshot and the client certificate chain of its
// Secret default/client.
type resourcesWithCert struct {
	*resources.Resources
	chain []byte
}

// backendsByHost are the backends of the routes of the IR's only listener,
// by hostname.
func backendsByHost(t *testing.T, r *Result) map[string]*ir.Backend {
	t.Helper()
	if len(r.IR.Gateways) != 1 || len(r.IR.Gateways[0].Listeners) != 1 {
		t.Fatalf("IR %+v: want one Gateway with one listener", r.IR.Gateways)
	}
	out := map[string]*ir.Backend{}
	for _, rt := range r.IR.Gateways[0].Listeners[0].HTTPRoutes {
		if rt.Backends == nil || len(rt.Backends.Backends) != 1 {
			t.Fatalf("route %s: backends %+v, want one", rt.Name, rt.Backends)
		}
		out[rt.Hostname] = rt.Backends.Backends[0]
	}
	return out
}

// TestBackendClientCertificateBothKinds: the TLS backends of an HTTPRoute
// and of a GRPCRoute of a Gateway with a clientCertificateRef present the
// Secret's certificate, through clusters named after it.
func TestBackendClientCertificateBothKinds(t *testing.T) {
	f := backendCertFixture(gwapiv1.SecretObjectReference{Name: "client"})
	r := Translate(f.Resources, Options{})
	mustValid(t, r)
	wantCond(t, r.Status.Gateways[nn("default", "web")].Conditions, "ResolvedRefs", metav1.ConditionTrue, "ResolvedRefs")
	want := map[string]string{
		"h.example": "service/default/app/80/client-certificate/default/client",
		"g.example": "service/default/app/80/h2c/client-certificate/default/client",
	}
	for host, b := range backendsByHost(t, r) {
		if b.Name != want[host] || b.Invalid || b.TLS == nil || b.TLS.ClientCertificate == nil ||
			b.TLS.ClientCertificate.Name != "default/client" || string(b.TLS.ClientCertificate.CertificateChain) != string(f.chain) {
			t.Errorf("%s: backend %+v (TLS %+v), want %s presenting default/client", host, b, b.TLS, want[host])
		}
	}
}

// TestBackendClientCertificateUnresolved: a clientCertificateRef that
// does not resolve leaves the Gateway accepted and programmed with
// ResolvedRefs=False, and its TLS backends invalid (the failure status,
// never a handshake without the certificate).
func TestBackendClientCertificateUnresolved(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ref    gwapiv1.SecretObjectReference
		reason string
	}{
		{"missing", gwapiv1.SecretObjectReference{Name: "nope"}, "InvalidClientCertificateRef"},
		{"wrong group", gwapiv1.SecretObjectReference{Name: "client", Group: ptr(gwapiv1.Group("wrong.example.io"))}, "InvalidClientCertificateRef"},
		{"wrong kind", gwapiv1.SecretObjectReference{Name: "ca", Kind: ptr(gwapiv1.Kind("ConfigMap"))}, "InvalidClientCertificateRef"},
		{"cross namespace without grant", gwapiv1.SecretObjectReference{Name: "client", Namespace: ptr(gwapiv1.Namespace("certs"))}, "RefNotPermitted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := backendCertFixture(tc.ref)
			r := Translate(f.Resources, Options{})
			mustValid(t, r)
			cs := r.Status.Gateways[nn("default", "web")].Conditions
			wantCond(t, cs, "ResolvedRefs", metav1.ConditionFalse, tc.reason)
			wantCond(t, cs, "Accepted", metav1.ConditionTrue, "Accepted")
			wantCond(t, cs, "Programmed", metav1.ConditionTrue, "Programmed")
			for host, b := range backendsByHost(t, r) {
				if !b.Invalid || b.TLS != nil {
					t.Errorf("%s: backend %+v, want it invalid", host, b)
				}
			}
		})
	}
}

// TestNoBackendClientCertificate: without clientCertificateRef nothing
// changes: the cluster is the Service port's and the Gateway has no
// ResolvedRefs condition.
func TestNoBackendClientCertificate(t *testing.T) {
	f := backendCertFixture(gwapiv1.SecretObjectReference{Name: "client"})
	f.Gateways[0].Spec.TLS = nil
	r := Translate(f.Resources, Options{})
	mustValid(t, r)
	for host, b := range backendsByHost(t, r) {
		if b.TLS == nil || b.TLS.ClientCertificate != nil || (b.Name != "service/default/app/80" && b.Name != "service/default/app/80/h2c") {
			t.Errorf("%s: backend %+v (TLS %+v), want the Service port's cluster, TLS without client certificate", host, b, b.TLS)
		}
	}
	for _, c := range r.Status.Gateways[nn("default", "web")].Conditions {
		if c.Type == "ResolvedRefs" {
			t.Errorf("Gateway without clientCertificateRef has %+v", c)
		}
	}
}
