package gatewayapi

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/internal/xdstest"
	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

// TestExternalURLBackend: the cluster of a URL Envoy calls itself, its
// endpoint, TLS and name, and every URL it refuses with the reason.
func TestExternalURLBackend(t *testing.T) {
	ca, _ := xdstest.Cert("idp.example")
	res := &resources.Resources{ConfigMaps: []*corev1.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "auth", Name: "idp-ca"}, Data: map[string]string{"ca.crt": string(ca)}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "auth", Name: "empty"}, Data: map[string]string{}},
	}}
	tr := newTranslator(res, Options{ProxyPorts: []uint32{9901, 19001}, DNSResolvers: []string{"127.0.0.1:53"}})
	caRef := []gwapiv1.LocalObjectReference{{Kind: "ConfigMap", Name: "idp-ca"}}

	for _, tc := range []struct {
		url      string
		caRefs   []gwapiv1.LocalObjectReference
		name     string // the backend's name
		endpoint ir.Endpoint
		tls      string // "system", "ca", or "" for none
		host     string // the URL's host after resolution
	}{
		{url: "https://idp.example/.well-known/jwks.json", name: "url/https/idp.example/443", endpoint: ir.Endpoint{Address: "idp.example", Port: 443}, tls: "system", host: "idp.example:443"},
		{url: "https://idp.example:8443/keys", caRefs: caRef, name: "url/https/idp.example/8443/ca/auth/", endpoint: ir.Endpoint{Address: "idp.example", Port: 8443}, tls: "ca", host: "idp.example:8443"},
		{url: "http://10.0.0.7/auth", name: "url/http/10.0.0.7/80", endpoint: ir.Endpoint{Address: "10.0.0.7", Port: 80}, host: "10.0.0.7:80"},
		{url: "http://[::1]:8080/auth", name: "url/http/::1/8080", endpoint: ir.Endpoint{Address: "::1", Port: 8080}, host: "[::1]:8080"},
	} {
		b, u, p := tr.externalURLBackend("auth", tc.url, tc.caRefs)
		if p != nil {
			t.Errorf("%s: %s %s", tc.url, p.reason, p.msg)
			continue
		}
		if !strings.HasPrefix(b.Name, tc.name) || len(b.Endpoints) != 1 || b.Endpoints[0] != tc.endpoint || u.Host != tc.host {
			t.Errorf("%s: backend %s %+v, host %s; want %s %+v, host %s", tc.url, b.Name, b.Endpoints, u.Host, tc.name, tc.endpoint, tc.host)
		}
		isName := tc.endpoint.Address == "idp.example"
		if isName != b.DNSNoSearch || isName != (len(b.DNSResolvers) == 1) {
			t.Errorf("%s: DNS resolvers %v, no search %v; want them for a host name only", tc.url, b.DNSResolvers, b.DNSNoSearch)
		}
		switch tc.tls {
		case "":
			if b.TLS != nil {
				t.Errorf("%s: TLS %+v, want none", tc.url, b.TLS)
			}
		case "system":
			if b.TLS == nil || !b.TLS.WellKnownCACertificates || b.TLS.SNI != "idp.example" {
				t.Errorf("%s: TLS %+v, want the system trust store and SNI idp.example", tc.url, b.TLS)
			}
		case "ca":
			if b.TLS == nil || b.TLS.WellKnownCACertificates || string(b.TLS.CACertificates) != string(ca) || b.TLS.SNI != "idp.example" {
				t.Errorf("%s: TLS %+v, want the ConfigMap's CA and SNI idp.example", tc.url, b.TLS)
			}
		}
	}

	for _, tc := range []struct {
		url, reason, msg string
		caRefs           []gwapiv1.LocalObjectReference
	}{
		{url: "ftp://idp.example/x", reason: "Invalid", msg: "scheme must be http or https"},
		{url: "idp.example/keys", reason: "Invalid", msg: "scheme must be http or https"},
		{url: "https://user:pw@idp.example/", reason: "Invalid", msg: "user information"},
		{url: "https://idp.example/#frag", reason: "Invalid", msg: "fragment"},
		{url: "https:///keys", reason: "Invalid", msg: "names no host"},
		{url: "https://idp.example:0/", reason: "Invalid", msg: "outside 1-65535"},
		{url: "https://idp.example:70000/", reason: "Invalid", msg: "outside 1-65535"},
		{url: "http://localhost:9901/config_dump", reason: "Invalid", msg: "proxy itself listens on"},
		{url: "https://Bad_Host/", reason: "Invalid", msg: "not a valid hostname"},
		{url: "https://127.0.0.1/keys", reason: "Invalid", msg: "needs a host name"},
		{url: "http://idp.example/", caRefs: caRef, reason: "Invalid", msg: "need an https URL"},
		{url: "https://idp.example/", caRefs: []gwapiv1.LocalObjectReference{{Kind: "ConfigMap", Name: "empty"}}, reason: string(gwapiv1.BackendTLSPolicyReasonNoValidCACertificate), msg: "no usable CA certificate"},
		{url: "https://idp.example/", caRefs: []gwapiv1.LocalObjectReference{{Kind: "Secret", Name: "x"}}, reason: string(gwapiv1.BackendTLSPolicyReasonNoValidCACertificate), msg: "is not a core ConfigMap"},
	} {
		b, _, p := tr.externalURLBackend("auth", tc.url, tc.caRefs)
		if p == nil {
			t.Errorf("%s: accepted as %+v, want %s", tc.url, b, tc.msg)
			continue
		}
		if p.reason != tc.reason || !strings.Contains(p.msg, tc.msg) || !strings.Contains(p.msg, tc.url) {
			t.Errorf("%s: %s %q, want %s with %q and the URL", tc.url, p.reason, p.msg, tc.reason, tc.msg)
		}
	}
}
