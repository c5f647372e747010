// Package xdstest builds IR by hand for the tests and benchmarks of the xDS
// translator and of Envoy validation: FeatureIR touches every feature the
// translator renders, ScaleIR has one route per hostname for benchmarks.
package xdstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"slices"
	"time"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

// Cert returns a self-signed ECDSA certificate and key (PEM) for the given
// DNS names (a name that parses as an IP address is an IP SAN instead),
// valid for a day.
func Cert(names ...string) (chain, key []byte) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: names[0]},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		panic(err)
	}
	kd, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		panic(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd})
}

// Service is a valid backend "service/<ns>/<name>/<port>" with n endpoints
// 10.0.<i>.<j>:8080.
func Service(ns, name string, port uint32, weight uint32, n int) *ir.Backend {
	b := &ir.Backend{Name: fmt.Sprintf("service/%s/%s/%d", ns, name, port), Weight: weight, Protocol: ir.AppProtocolHTTP1}
	for i := range n {
		b.Endpoints = append(b.Endpoints, ir.Endpoint{Address: fmt.Sprintf("10.0.%d.%d", i/250, i%250+1), Port: 8080})
	}
	return b
}

func dur(d time.Duration) *ir.Duration { return ir.NewDuration(d) }

// FeatureIR is one IR that uses every feature of the translator, in two
// scopes. Certificates are generated, so two calls differ in their secrets.
func FeatureIR() *ir.IR {
	chain, key := Cert("secure.example.com", "*.example.com")
	cert := &ir.Certificate{Name: "default/example-tls", CertificateChain: chain, PrivateKey: key}
	caPEM, _ := Cert("backend.internal")

	web := Service("default", "web", 80, 1, 2)
	api := Service("default", "api", 8080, 3, 1)
	grpc := Service("default", "grpc", 9000, 1, 1)
	grpc.Protocol = ir.AppProtocolH2C
	secure := Service("default", "secure", 443, 1, 1)
	secure.Protocol = ir.AppProtocolHTTP2
	secure.TLS = &ir.BackendTLS{SNI: "backend.internal", CACertificates: caPEM}
	// secure as a Gateway with a backend client certificate reaches it.
	clientChain, clientKey := Cert("gateway.example.com")
	secureMTLS := secure.DeepCopy()
	secureMTLS.Name += "/client-certificate/default/backend-client"
	secureMTLS.TLS.ClientCertificate = &ir.Certificate{Name: "default/backend-client", CertificateChain: clientChain, PrivateKey: clientKey}
	public := Service("default", "public", 443, 1, 1)
	public.TLS = &ir.BackendTLS{SNI: "api.public.example", WellKnownCACertificates: true, SubjectAltNames: []string{"api.public.example", "spiffe://cluster.local/ns/default/sa/public"}}
	external := &ir.Backend{Name: "service/default/external/80", Weight: 1, Protocol: ir.AppProtocolHTTP1, Endpoints: []ir.Endpoint{{Address: "httpbin.org", Port: 80}}}
	empty := &ir.Backend{Name: "service/default/empty/80", Weight: 1, Protocol: ir.AppProtocolHTTP1}
	invalid := &ir.Backend{Name: "service/default/missing/80", Weight: 1, Invalid: true}
	mirror := Service("default", "mirror", 80, 0, 1)
	tcpBackend := Service("default", "tcp", 5432, 1, 1)
	tcpBackend.Protocol = ir.AppProtocolTCP
	udpBackend := Service("default", "dns", 53, 1, 1)
	udpBackend.Protocol = ir.AppProtocolUDP

	with := func(b *ir.Backend, weight uint32) *ir.Backend { c := b.DeepCopy(); c.Weight = weight; return c }

	httpRoutes := []*ir.HTTPRoute{
		{Name: "httproute/default/web/rule/0/match/0", Hostname: "foo.example.com",
			Match: ir.HTTPMatch{Path: &ir.StringMatch{Type: ir.MatchPathPrefix, Value: "/api/"}, Method: "GET",
				Headers:     []ir.StringMatch{{Name: "X-Env", Type: ir.MatchExact, Value: "prod"}, {Name: "X-Id", Type: ir.MatchRegex, Value: "[0-9]+"}},
				QueryParams: []ir.StringMatch{{Name: "debug", Type: ir.MatchExact, Value: "1"}, {Name: "v", Type: ir.MatchRegex, Value: "v[12]"}}},
			Filters: ir.HTTPFilters{
				RequestHeaders:  &ir.HeaderModifier{Set: []ir.Header{{Name: "X-Set", Value: "a"}}, Add: []ir.Header{{Name: "X-Add", Value: "b"}}, Remove: []string{"X-Remove"}},
				ResponseHeaders: &ir.HeaderModifier{Set: []ir.Header{{Name: "X-Resp", Value: "c"}}, Remove: []string{"Server"}},
				URLRewrite:      &ir.URLRewrite{Hostname: "internal.example.com", Path: &ir.PathModifier{Type: ir.ReplacePrefixMatch, Value: "/v2"}},
				Mirrors:         []*ir.Mirror{{Backend: mirror, Percent: 12.5}, {Backend: with(mirror, 0), Percent: 100}},
				CORS: &ir.CORS{AllowOrigins: []string{"https://app.example.com", "https://*.example.org"}, AllowMethods: []string{"GET", "POST"},
					AllowHeaders: []string{"X-Custom"}, ExposeHeaders: []string{"X-Expose"}, AllowCredentials: true, MaxAge: dur(time.Hour)},
			},
			Backends: &ir.BackendGroup{Backends: []*ir.Backend{
				with(web, 80),
				func() *ir.Backend {
					b := with(api, 20)
					b.RequestHeaders = &ir.HeaderModifier{Set: []ir.Header{{Name: "X-Backend", Value: "api"}}}
					b.ResponseHeaders = &ir.HeaderModifier{Add: []ir.Header{{Name: "X-From", Value: "api"}}}
					return b
				}(),
				with(invalid, 10), with(api, 0),
			}},
			Timeouts: &ir.Timeouts{Request: dur(10 * time.Second), BackendRequest: dur(2 * time.Second)},
			Retry:    &ir.Retry{Attempts: 3, Codes: []uint32{500, 502, 503}, Backoff: dur(100 * time.Millisecond)},
		},
		{Name: "httproute/default/web/rule/1/match/0", Hostname: "foo.example.com",
			Match:    ir.HTTPMatch{Path: &ir.StringMatch{Type: ir.MatchExact, Value: "/exact"}},
			Filters:  ir.HTTPFilters{URLRewrite: &ir.URLRewrite{Path: &ir.PathModifier{Type: ir.ReplaceFullPath, Value: "/replaced"}}},
			Backends: &ir.BackendGroup{Backends: []*ir.Backend{with(grpc, 1)}},
			Timeouts: &ir.Timeouts{Request: dur(0), BackendRequest: dur(0)},
		},
		{Name: "httproute/default/web/rule/2/match/0", Hostname: "foo.example.com",
			Match:    ir.HTTPMatch{Path: &ir.StringMatch{Type: ir.MatchRegex, Value: "/re/[a-z]+"}},
			Filters:  ir.HTTPFilters{URLRewrite: &ir.URLRewrite{Path: &ir.PathModifier{Type: ir.ReplaceFullPath, Value: "/"}}},
			Backends: &ir.BackendGroup{Backends: []*ir.Backend{with(secure, 1), with(secureMTLS, 1), with(public, 1), with(external, 1), with(empty, 1)}},
			Timeouts: &ir.Timeouts{BackendRequest: dur(3 * time.Second)},
		},
		{Name: "httproute/default/redirect/rule/0/match/0", Hostname: "foo.example.com",
			Match:   ir.HTTPMatch{Path: &ir.StringMatch{Type: ir.MatchPathPrefix, Value: "/old"}},
			Filters: ir.HTTPFilters{Redirect: &ir.Redirect{Scheme: "https", Hostname: "new.example.com", StatusCode: 301, Path: &ir.PathModifier{Type: ir.ReplacePrefixMatch, Value: "/"}}}},
		{Name: "httproute/default/redirect/rule/1/match/0", Hostname: "foo.example.com",
			Match:   ir.HTTPMatch{Path: &ir.StringMatch{Type: ir.MatchPathPrefix, Value: "/moved"}},
			Filters: ir.HTTPFilters{Redirect: &ir.Redirect{Port: 8443, StatusCode: 302, Path: &ir.PathModifier{Type: ir.ReplaceFullPath, Value: "/new"}}}},
		{Name: "httproute/default/redirect/rule/2/match/0", Hostname: "foo.example.com",
			Match:   ir.HTTPMatch{Path: &ir.StringMatch{Type: ir.MatchPathPrefix, Value: "/"}},
			Filters: ir.HTTPFilters{Redirect: &ir.Redirect{StatusCode: 308, Path: &ir.PathModifier{Type: ir.ReplacePrefixMatch, Value: "/prefix"}}}},
		{Name: "httproute/default/broken/rule/0/match/0", Hostname: "*.example.com",
			Match:          ir.HTTPMatch{Path: &ir.StringMatch{Type: ir.MatchPathPrefix, Value: "/"}},
			DirectResponse: &ir.DirectResponse{StatusCode: 500, Body: "invalid backend reference"}},
		{Name: "httproute/default/zero/rule/0/match/0", Hostname: "*",
			Match:    ir.HTTPMatch{Path: &ir.StringMatch{Type: ir.MatchPathPrefix, Value: "/zero"}},
			Backends: &ir.BackendGroup{Backends: []*ir.Backend{with(web, 0)}}},
		{Name: "httproute/default/catchall/rule/0/match/0", Hostname: "*",
			Backends: &ir.BackendGroup{Backends: []*ir.Backend{with(web, 1)}},
			Retry:    &ir.Retry{Attempts: 2}},
	}
	// The routes for "*.example.com" and "*" live on the listener without
	// hostname; its route for foo.example.com is shadowed by the listener
	// default/gw/http-foo, which is more specific.
	catchAll := []*ir.HTTPRoute{
		{Name: "httproute/default/shadowed/rule/0/match/0", Hostname: "foo.example.com",
			DirectResponse: &ir.DirectResponse{StatusCode: 418}},
	}
	for len(httpRoutes) > 0 && httpRoutes[len(httpRoutes)-1].Hostname != "foo.example.com" {
		catchAll = append(catchAll, httpRoutes[len(httpRoutes)-1])
		httpRoutes = httpRoutes[:len(httpRoutes)-1]
	}
	slices.Reverse(catchAll[1:])
	httpsRoutes := []*ir.HTTPRoute{
		{Name: "httproute/default/secure/rule/0/match/0", Hostname: "secure.example.com",
			Match:    ir.HTTPMatch{Path: &ir.StringMatch{Type: ir.MatchPathPrefix, Value: "/"}},
			Backends: &ir.BackendGroup{Backends: []*ir.Backend{with(web, 1)}}},
	}
	httpsWildcard := []*ir.HTTPRoute{
		{Name: "httproute/default/wild/rule/0/match/0", Hostname: "bar.example.com",
			Match:    ir.HTTPMatch{Path: &ir.StringMatch{Type: ir.MatchPathPrefix, Value: "/"}},
			Backends: &ir.BackendGroup{Backends: []*ir.Backend{with(api, 1)}},
			Filters:  ir.HTTPFilters{CORS: &ir.CORS{AllowOrigins: []string{"*"}}}},
	}
	return &ir.IR{Gateways: []*ir.Gateway{
		{Namespace: "default", Name: "gw", Class: "xds", Scope: "gatewayclass/xds", Listeners: []*ir.Listener{
			{Name: "default/gw/http", Protocol: ir.ProtocolHTTP, Address: "0.0.0.0", Port: 8080, GatewayPort: 80, HTTPRoutes: catchAll},
			{Name: "default/gw/http-foo", Protocol: ir.ProtocolHTTP, Address: "0.0.0.0", Port: 8080, GatewayPort: 80, Hostname: "foo.example.com", HTTPRoutes: httpRoutes},
			{Name: "default/gw/https", Protocol: ir.ProtocolHTTPS, Address: "0.0.0.0", Port: 8443, GatewayPort: 443, Hostname: "secure.example.com",
				TLS: &ir.ListenerTLS{Mode: ir.TLSTerminate, Certificates: []*ir.Certificate{cert}}, HTTPRoutes: httpsRoutes},
			{Name: "default/gw/https-wild", Protocol: ir.ProtocolHTTPS, Address: "0.0.0.0", Port: 8443, GatewayPort: 443, Hostname: "*.example.com",
				TLS: &ir.ListenerTLS{Mode: ir.TLSTerminate, Certificates: []*ir.Certificate{cert}}, HTTPRoutes: httpsWildcard},
			{Name: "default/gw/tls", Protocol: ir.ProtocolTLS, Address: "0.0.0.0", Port: 8443, GatewayPort: 443, Hostname: "",
				TLS: &ir.ListenerTLS{Mode: ir.TLSPassthrough}, L4Routes: []*ir.L4Route{
					{Name: "tlsroute/default/pass", Hostnames: []string{"pass.example.net", "secure.example.com"}, Backends: ir.BackendGroup{Backends: []*ir.Backend{with(tcpBackend, 1), with(invalid, 1)}}},
					{Name: "tlsroute/default/any", Backends: ir.BackendGroup{Backends: []*ir.Backend{with(tcpBackend, 1)}}},
				}},
			{Name: "default/gw/tcp", Protocol: ir.ProtocolTCP, Address: "0.0.0.0", Port: 5432, GatewayPort: 5432,
				L4Routes: []*ir.L4Route{{Name: "tcproute/default/db", Backends: ir.BackendGroup{Backends: []*ir.Backend{with(tcpBackend, 1)}}}}},
			{Name: "default/gw/tcp-empty", Protocol: ir.ProtocolTCP, Address: "0.0.0.0", Port: 5433, GatewayPort: 5433},
			{Name: "default/gw/udp", Protocol: ir.ProtocolUDP, Address: "0.0.0.0", Port: 5353, GatewayPort: 53,
				L4Routes: []*ir.L4Route{{Name: "udproute/default/dns", Backends: ir.BackendGroup{Backends: []*ir.Backend{with(udpBackend, 1)}}}}},
		}},
		{Namespace: "other", Name: "dedicated", Class: "xds", Scope: "gateway/other/dedicated", Listeners: []*ir.Listener{
			{Name: "other/dedicated/http", Protocol: ir.ProtocolHTTP, Address: "::", Port: 80, GatewayPort: 80, HTTPRoutes: []*ir.HTTPRoute{
				{Name: "httproute/other/r/rule/0/match/0", Hostname: "*", Backends: &ir.BackendGroup{Backends: []*ir.Backend{with(invalid, 1)}}},
			}},
		}},
	}}
}

// ScaleIR is one Gateway with one HTTP listener and n HTTPRoutes, each with
// a hostname of its own, a PathPrefix match, a header filter and a backend
// of its own with 3 endpoints.
func ScaleIR(n int) *ir.IR {
	l := &ir.Listener{Name: "default/gw/http", Protocol: ir.ProtocolHTTP, Address: "0.0.0.0", Port: 8080, GatewayPort: 80}
	for i := range n {
		l.HTTPRoutes = append(l.HTTPRoutes, &ir.HTTPRoute{
			Name:     fmt.Sprintf("httproute/default/route-%d/rule/0/match/0", i),
			Hostname: fmt.Sprintf("host-%d.example.com", i),
			Match:    ir.HTTPMatch{Path: &ir.StringMatch{Type: ir.MatchPathPrefix, Value: "/app"}},
			Filters:  ir.HTTPFilters{RequestHeaders: &ir.HeaderModifier{Set: []ir.Header{{Name: "X-Route", Value: fmt.Sprint(i)}}}},
			Backends: &ir.BackendGroup{Backends: []*ir.Backend{Service("default", fmt.Sprintf("svc-%d", i), 80, 1, 3)}},
		})
	}
	return &ir.IR{Gateways: []*ir.Gateway{{Namespace: "default", Name: "gw", Class: "xds", Scope: "gatewayclass/xds", Listeners: []*ir.Listener{l}}}}
}
