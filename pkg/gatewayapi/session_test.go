package gatewayapi

import (
	"regexp"
	"testing"
	"time"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

// TestSessionPersistenceIR shows what a rule's sessionPersistence becomes
// in the IR: the API's defaults (type Cookie, path "/", lifetimeType
// Session: no Max-Age, a generated cookie name, one per rule, the same
// at every translation), a Permanent cookie's absoluteTimeout as its
// Max-Age, a header's name; a GRPCRoute rule's the same way; a rule
// without it, none.
func TestSessionPersistenceIR(t *testing.T) {
	rule := func(path string, sp *gwapiv1.SessionPersistence) gwapiv1.HTTPRouteRule {
		return gwapiv1.HTTPRouteRule{Matches: pathPrefix(path), BackendRefs: []gwapiv1.HTTPBackendRef{toApp(80)}, SessionPersistence: sp}
	}
	translate := func(grpc bool) map[string]*ir.SessionPersistence {
		res := fixture()
		// An HTTPRoute and a GRPCRoute do not share a listener's
		// hostname: one kind at a time.
		res.HTTPRoutes = []*gwapiv1.HTTPRoute{httpRoute("app",
			rule("/default", &gwapiv1.SessionPersistence{}),
			rule("/default-too", &gwapiv1.SessionPersistence{Type: ptr(gwapiv1.CookieBasedSessionPersistence), Cookie: &gwapiv1.CookieConfig{}}),
			rule("/permanent", &gwapiv1.SessionPersistence{AbsoluteTimeout: ptr(gwapiv1.Duration("1h30m")),
				Cookie: &gwapiv1.CookieConfig{Name: ptr(gwapiv1.CookieName("JSESSIONID")), Path: ptr("/app"), LifetimeType: ptr(gwapiv1.PermanentCookieLifetimeType)}}),
			rule("/header", &gwapiv1.SessionPersistence{Type: ptr(gwapiv1.HeaderBasedSessionPersistence), Header: &gwapiv1.HeaderConfig{Name: "X-Session"}}),
			rule("/none", nil),
		)}
		if grpc {
			res.HTTPRoutes = nil
			res.GRPCRoutes = []*gwapiv1.GRPCRoute{grpcRoute("grpc", gwapiv1.GRPCRouteRule{BackendRefs: []gwapiv1.GRPCBackendRef{grpcToApp()},
				SessionPersistence: &gwapiv1.SessionPersistence{Type: ptr(gwapiv1.HeaderBasedSessionPersistence), Header: &gwapiv1.HeaderConfig{Name: "x-grpc"}}})}
		}
		r := Translate(res, Options{})
		mustValid(t, r)
		out := map[string]*ir.SessionPersistence{}
		for _, rt := range r.IR.Gateways[0].Listeners[0].HTTPRoutes {
			key := "grpc"
			if !rt.GRPC {
				key = rt.Match.Path.Value
			}
			if rt.Backends == nil {
				t.Fatalf("route %s does not forward: %+v", rt.Name, rt)
			}
			out[key] = rt.SessionPersistence
		}
		return out
	}
	got := translate(false)

	generated := regexp.MustCompile(`^session-[0-9a-f]{16}$`)
	for _, p := range []string{"/default", "/default-too"} {
		sp := got[p]
		if sp == nil || sp.Type != ir.SessionCookie || !generated.MatchString(sp.Name) || sp.CookiePath != "/" || sp.CookieMaxAge != nil {
			t.Errorf("%s: %+v, want a session cookie of a generated name, path /", p, sp)
		}
	}
	if got["/default"].Name == got["/default-too"].Name {
		t.Errorf("two rules share the generated cookie name %s", got["/default"].Name)
	}
	if again := translate(false); again["/default"].Name != got["/default"].Name {
		t.Errorf("generated name changed between translations: %s, %s", got["/default"].Name, again["/default"].Name)
	}
	if sp := got["/permanent"]; sp == nil || sp.Name != "JSESSIONID" || sp.CookiePath != "/app" || sp.CookieMaxAge == nil || sp.CookieMaxAge.Duration != 90*time.Minute {
		t.Errorf("/permanent: %+v, want JSESSIONID, path /app, Max-Age 1h30m", sp)
	}
	if sp := got["/header"]; sp == nil || *sp != (ir.SessionPersistence{Type: ir.SessionHeader, Name: "X-Session"}) {
		t.Errorf("/header: %+v", sp)
	}
	if sp := translate(true)["grpc"]; sp == nil || *sp != (ir.SessionPersistence{Type: ir.SessionHeader, Name: "x-grpc"}) {
		t.Errorf("GRPCRoute rule: %+v", sp)
	}
	if sp := got["/none"]; sp != nil {
		t.Errorf("/none: %+v, want none", sp)
	}
}
