package xdstranslator_test

import (
	"bytes"
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	oauth2v3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/oauth2/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/proto"

	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/xdstranslator"
)

// testLogin is a login of policy default/<name> with client secret
// secret.
func testLogin(name, secret string) *ir.OIDC {
	return &ir.OIDC{
		Name: "default/" + name, ClientID: "web", ClientSecret: secret, HMACKey: bytes.Repeat([]byte{7}, 32),
		AuthorizationEndpoint: "https://id.example.com/authorize", TokenEndpoint: "https://id.example.com/token",
		TokenBackend: &ir.Backend{Name: "url/https/id.example.com/443", Weight: 1, Protocol: ir.AppProtocolHTTP1,
			Endpoints: []ir.Endpoint{{Address: "id.example.com", Port: 443}}, DNSNoSearch: true},
		RedirectPath: "/oauth2/callback", LogoutPath: "/logout", Scopes: []string{"openid"}, RefreshToken: true,
	}
}

// oidcIR has three routes on one listener: /a and /b with logins a and
// b, /open without one.
func oidcIR(a, b *ir.OIDC) *ir.IR {
	x := oneRouteIR(&ir.HTTPRoute{Name: "httproute/default/r/rule/0/match/0", Match: ir.HTTPMatch{Path: &ir.StringMatch{Type: ir.MatchPathPrefix, Value: "/a"}},
		Backends: group(backend("app", 1)), Filters: ir.HTTPFilters{OIDC: a}})
	l := x.Gateways[0].Listeners[0]
	l.HTTPRoutes = append(l.HTTPRoutes,
		&ir.HTTPRoute{Name: "httproute/default/r/rule/1/match/0", Hostname: "*", Match: ir.HTTPMatch{Path: &ir.StringMatch{Type: ir.MatchPathPrefix, Value: "/b"}},
			Backends: group(backend("app", 1)), Filters: ir.HTTPFilters{OIDC: b}},
		&ir.HTTPRoute{Name: "httproute/default/r/rule/2/match/0", Hostname: "*", Match: ir.HTTPMatch{Path: &ir.StringMatch{Type: ir.MatchPathPrefix, Value: "/open"}},
			Backends: group(backend("app", 1))})
	return x
}

// TestOAuth2: each login is an OAuth2 filter of its own, disabled in the
// chain, enabled only on its routes (a route without a login has no
// configuration for it); its client secret and HMAC key are SDS generic
// secrets the filter names, never inline; the token endpoint's cluster
// is in the snapshot though no route forwards to it; the cookie names
// of two logins differ.
func TestOAuth2(t *testing.T) {
	out := translate(t, oidcIR(testLogin("a", "secret-a"), testLogin("b", "secret-b")))[scope]
	h := hcmOf(t, oidcIR(testLogin("a", "secret-a"), testLogin("b", "secret-b")), "listener/0.0.0.0/80")
	var names []string
	cookies := map[string]bool{}
	for _, f := range h.HttpFilters {
		if !strings.HasPrefix(f.Name, "envoy.filters.http.oauth2/") {
			continue
		}
		names = append(names, f.Name)
		var c oauth2v3.OAuth2
		if err := f.GetTypedConfig().UnmarshalTo(&c); err != nil {
			t.Fatal(err)
		}
		if !f.Disabled {
			t.Errorf("%s is enabled in the chain; want it disabled, enabled per route", f.Name)
		}
		cr := c.Config.Credentials
		if !strings.HasPrefix(cr.TokenSecret.Name, "oidc/default/") || cr.GetHmacSecret() == nil || cr.TokenSecret.SdsConfig.GetAds() == nil {
			t.Errorf("%s: credentials %v; want SDS secrets over ADS", f.Name, cr)
		}
		if strings.Contains(c.String(), "secret-a") || strings.Contains(c.String(), "secret-b") {
			t.Errorf("%s holds a client secret inline", f.Name)
		}
		cookies[cr.CookieNames.BearerToken] = true
		if c.Config.RedirectUri != "%REQ(x-forwarded-proto)%://%REQ(:authority)%/oauth2/callback" || c.Config.TokenEndpoint.GetCluster() != "url/https/id.example.com/443" {
			t.Errorf("%s: redirect %q token endpoint %v", f.Name, c.Config.RedirectUri, c.Config.TokenEndpoint)
		}
	}
	if len(names) != 2 || len(cookies) != 2 {
		t.Fatalf("oauth2 filters %v with %d cookie names; want two, distinct", names, len(cookies))
	}
	rc := routeConfig(t, out, "listener/0.0.0.0/80")
	enabled := map[string][]string{}
	for _, r := range rc.VirtualHosts[0].Routes {
		for name, cfg := range r.TypedPerFilterConfig {
			if strings.HasPrefix(name, "envoy.filters.http.oauth2/") {
				var fc routev3.FilterConfig
				if err := cfg.UnmarshalTo(&fc); err != nil || fc.Disabled || fc.Config == nil {
					t.Errorf("%s on %s: %v %v; want a FilterConfig that enables it", name, r.Name, &fc, err)
				}
				enabled[r.Name] = append(enabled[r.Name], name)
			}
		}
	}
	if len(enabled) != 2 || len(enabled["httproute/default/r/rule/2/match/0"]) != 0 || enabled["httproute/default/r/rule/0/match/0"][0] == enabled["httproute/default/r/rule/1/match/0"][0] {
		t.Errorf("oauth2 enabled on %v; want one filter on each login's route, none on /open", enabled)
	}
	secrets := map[string][]byte{}
	for _, r := range out.Secrets {
		s := r.(*tlsv3.Secret)
		if g := s.GetGenericSecret(); g != nil {
			secrets[s.Name] = g.Secret.GetInlineBytes()
		}
	}
	a, ha := xdstranslator.OIDCSecretNames(testLogin("a", ""))
	if string(secrets[a]) != "secret-a" || len(secrets[ha]) != 32 || len(secrets) != 4 {
		t.Errorf("generic secrets %v; want the two logins' client secrets and HMAC keys", secrets)
	}
	found := false
	for _, r := range out.Clusters {
		found = found || r.(*clusterv3.Cluster).Name == "url/https/id.example.com/443"
	}
	if !found {
		t.Error("the token endpoint's cluster is not in the snapshot")
	}
}

// TestOAuth2SecretChangeKeepsTheListener: a new client secret changes
// its SDS secret only; the listener (the filter) is the same, so Envoy
// does not drain connections for it.
func TestOAuth2SecretChangeKeepsTheListener(t *testing.T) {
	before := translate(t, oidcIR(testLogin("a", "one"), nil))[scope]
	after := translate(t, oidcIR(testLogin("a", "two"), nil))[scope]
	if !proto.Equal(before.Listeners[0], after.Listeners[0]) || !proto.Equal(before.Routes[0], after.Routes[0]) {
		t.Error("the listener or the routes changed with the client secret")
	}
	if proto.Equal(before.Secrets[0], after.Secrets[0]) && proto.Equal(before.Secrets[1], after.Secrets[1]) {
		t.Error("the secrets did not change with the client secret")
	}
}
