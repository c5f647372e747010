package ingress

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
	"github.com/xds-controller/xds-controller/internal/xdstest"
	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

// TestTrafficAnnotations: each traffic annotation, with good and bad
// values, fills the IR fields the policy kinds fill; a bad value is
// reported (InvalidAnnotation) and ignored.
func TestTrafficAnnotations(t *testing.T) {
	sec, min := time.Second, time.Minute
	nginx := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[NginxPrefix+kv[i]] = kv[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		// check says what is wrong with the route, "" when nothing.
		check func(r *ir.HTTPRoute) string
		// problem is a substring of the one problem expected ("" : none).
		problem string
	}{
		{"limit-rps", nginx("limit-rps", "10"), rules(ir.RateLimitRule{Requests: 10, Period: sec, Burst: 50, Key: ir.RateLimitClientIP}), ""},
		{"limit-rps and rpm with a multiplier", nginx("limit-rps", "2", "limit-rpm", "30", "limit-burst-multiplier", "1"),
			rules(ir.RateLimitRule{Requests: 2, Period: sec, Burst: 2, Key: ir.RateLimitClientIP}, ir.RateLimitRule{Requests: 30, Period: min, Burst: 30, Key: ir.RateLimitClientIP}), ""},
		{"ours wins", map[string]string{Prefix + "limit-rps": "3", NginxPrefix + "limit-rps": "9"},
			rules(ir.RateLimitRule{Requests: 3, Period: sec, Burst: 15, Key: ir.RateLimitClientIP}), ""},
		{"limit-rps not a number", nginx("limit-rps", "ten"), rules(), "limit-rps: \"ten\" is not a whole number"},
		{"limit-rps zero", nginx("limit-rps", "0"), rules(), "limit-rps: \"0\""},
		{"multiplier zero", nginx("limit-rps", "1", "limit-burst-multiplier", "0"), rules(ir.RateLimitRule{Requests: 1, Period: sec, Burst: 5, Key: ir.RateLimitClientIP}), "limit-burst-multiplier"},
		{"limit-connections", nginx("limit-connections", "5"), rules(), "no limit of concurrent connections per client"},
		{"limit-whitelist", nginx("limit-rpm", "6", "limit-whitelist", "10.0.0.0/8, 192.168.1.7"), exempt("10.0.0.0/8", "192.168.1.7/32"), ""},
		{"limit-whitelist bad", nginx("limit-rpm", "6", "limit-whitelist", "10.0.0.0/33"), exempt(), "limit-whitelist"},
		{"limit-whitelist without a limit", nginx("limit-whitelist", "10.0.0.0/8"), rules(), "it needs limit-rps or limit-rpm"},
		{"proxy-body-size 8m", nginx("proxy-body-size", "8m"), bodyLimit(8 << 20), ""},
		{"proxy-body-size bytes", nginx("proxy-body-size", "1000"), bodyLimit(1000), ""},
		{"proxy-body-size 512K", nginx("proxy-body-size", "512K"), bodyLimit(512 << 10), ""},
		{"proxy-body-size 0 is no limit", nginx("proxy-body-size", "0"), bodyLimit(0), ""},
		{"proxy-body-size over 64m", nginx("proxy-body-size", "1g"), bodyLimit(0), "over 64m"},
		{"proxy-body-size bad unit", nginx("proxy-body-size", "8mb"), bodyLimit(0), "is not a size"},
		{"proxy-body-size negative", nginx("proxy-body-size", "-1"), bodyLimit(0), "is not a size"},
		{"affinity cookie", nginx("affinity", "cookie"),
			session(&ir.SessionPersistence{Type: ir.SessionCookie, Name: "INGRESSCOOKIE", CookiePath: "/"}), ""},
		{"affinity cookie named, path, max-age", nginx("affinity", "cookie", "session-cookie-name", "route", "session-cookie-path", "/app", "session-cookie-max-age", "3600", "session-cookie-expires", "60"),
			session(&ir.SessionPersistence{Type: ir.SessionCookie, Name: "route", CookiePath: "/app", CookieMaxAge: ir.NewDuration(time.Hour)}), ""},
		{"affinity expires", nginx("affinity", "cookie", "session-cookie-expires", "60"),
			session(&ir.SessionPersistence{Type: ir.SessionCookie, Name: "INGRESSCOOKIE", CookiePath: "/", CookieMaxAge: ir.NewDuration(time.Minute)}), ""},
		{"affinity bad name", nginx("affinity", "cookie", "session-cookie-name", "a b"), session(nil), "cookie name"},
		{"affinity bad path", nginx("affinity", "cookie", "session-cookie-path", "app"), session(nil), "cookie path"},
		{"affinity bad max-age", nginx("affinity", "cookie", "session-cookie-max-age", "1h"), session(nil), "session-cookie-max-age: \"1h\""},
		{"affinity not cookie", nginx("affinity", "ip"), session(nil), "only cookie"},
		{"session-cookie-name without affinity", nginx("session-cookie-name", "x"), session(nil), "it needs affinity: cookie"},
		{"upstream-hash-by remote_addr", nginx("upstream-hash-by", "$remote_addr"), lb(ir.LoadBalancerRingHash, &ir.HashKey{Type: ir.HashClientIP}), ""},
		{"upstream-hash-by header", nginx("upstream-hash-by", "$http_x_user_id"), lb(ir.LoadBalancerRingHash, &ir.HashKey{Type: ir.HashHeader, Name: "x-user-id"}), ""},
		{"upstream-hash-by cookie", nginx("upstream-hash-by", "$cookie_session"), lb(ir.LoadBalancerRingHash, &ir.HashKey{Type: ir.HashCookie, Name: "session", CookieNotSet: true}), ""},
		{"upstream-hash-by request_uri", nginx("upstream-hash-by", "$request_uri"), lb(ir.LoadBalancerRingHash, &ir.HashKey{Type: ir.HashHeader, Name: ":path"}), ""},
		{"upstream-hash-by host wins over load-balance", nginx("upstream-hash-by", "$host", "load-balance", "ewma"), lb(ir.LoadBalancerRingHash, &ir.HashKey{Type: ir.HashHeader, Name: ":authority"}), ""},
		{"upstream-hash-by two variables", nginx("upstream-hash-by", "$host$request_uri"), lb("", nil), "upstream-hash-by"},
		{"upstream-hash-by another variable", nginx("upstream-hash-by", "$uri"), lb("", nil), "upstream-hash-by"},
		{"load-balance ewma", nginx("load-balance", "ewma"), lb(ir.LoadBalancerLeastRequest, nil), ""},
		{"load-balance round_robin", nginx("load-balance", "round_robin"), lb(ir.LoadBalancerRoundRobin, nil), ""},
		{"load-balance bad", nginx("load-balance", "chash"), lb("", nil), "not round_robin or ewma"},
		{"permanent-redirect", nginx("permanent-redirect", "https://new.example.com/docs"),
			redirect(&ir.Redirect{Scheme: "https", Hostname: "new.example.com", Path: &ir.PathModifier{Type: ir.ReplaceFullPath, Value: "/docs"}, StatusCode: 301}), ""},
		{"permanent-redirect code and port", nginx("permanent-redirect", "http://new.example.com:8080", "permanent-redirect-code", "308"),
			redirect(&ir.Redirect{Scheme: "http", Hostname: "new.example.com", Port: 8080, Path: &ir.PathModifier{Type: ir.ReplaceFullPath, Value: "/"}, StatusCode: 308}), ""},
		{"permanent-redirect code 300", nginx("permanent-redirect", "https://x.example.com/", "permanent-redirect-code", "300"), redirect(nil), "status 300"},
		{"permanent-redirect relative", nginx("permanent-redirect", "/docs"), redirect(nil), "not an absolute http or https URL"},
		{"permanent-redirect query", nginx("permanent-redirect", "https://x.example.com/a?b=1"), redirect(nil), "query"},
		{"permanent-redirect bad host", nginx("permanent-redirect", "https://x_y.example.com/"), redirect(nil), "permanent-redirect"},
		{"temporal-redirect", nginx("temporal-redirect", "https://x.example.com/maintenance"),
			redirect(&ir.Redirect{Scheme: "https", Hostname: "x.example.com", Path: &ir.PathModifier{Type: ir.ReplaceFullPath, Value: "/maintenance"}, StatusCode: 302}), ""},
		{"permanent wins over temporal", nginx("temporal-redirect", "https://t.example.com/", "permanent-redirect", "https://p.example.com/"),
			redirect(&ir.Redirect{Scheme: "https", Hostname: "p.example.com", Path: &ir.PathModifier{Type: ir.ReplaceFullPath, Value: "/"}, StatusCode: 301}), "permanent-redirect is set"},
		{"permanent-redirect-code alone", nginx("permanent-redirect-code", "308"), redirect(nil), "it needs permanent-redirect"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, problems := translateAuth(t, tc.annotations, nil)
			if msg := tc.check(r); msg != "" {
				t.Error(msg)
			}
			switch {
			case tc.problem == "" && len(problems) > 0:
				t.Errorf("problems %+v, want none", problems)
			case tc.problem != "" && (len(problems) != 1 || problems[0].Reason != ReasonInvalidAnnotation || !strings.Contains(problems[0].Message, tc.problem)):
				t.Errorf("problems %+v, want one InvalidAnnotation with %q", problems, tc.problem)
			}
		})
	}
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// rules checks the route's local rate limit rules (none: no limit).
func rules(want ...ir.RateLimitRule) func(*ir.HTTPRoute) string {
	return func(r *ir.HTTPRoute) string {
		var got []ir.RateLimitRule
		if r.Traffic != nil && r.Traffic.LocalRateLimit != nil {
			got = r.Traffic.LocalRateLimit.Rules
		}
		if js(got) != js(want) {
			return "rate limit rules " + js(got) + ", want " + js(want)
		}
		return ""
	}
}

// exempt checks the ranges the route's rate limit exempts.
func exempt(want ...string) func(*ir.HTTPRoute) string {
	return func(r *ir.HTTPRoute) string {
		if r.Traffic == nil || r.Traffic.LocalRateLimit == nil {
			return "no rate limit"
		}
		if got := r.Traffic.LocalRateLimit.ExemptRanges; js(got) != js(want) && (len(got) > 0 || len(want) > 0) {
			return "exempt ranges " + js(got) + ", want " + js(want)
		}
		return ""
	}
}

// bodyLimit checks the route's body limit (0: none).
func bodyLimit(want uint32) func(*ir.HTTPRoute) string {
	return func(r *ir.HTTPRoute) string {
		var got uint32
		if r.Traffic != nil {
			got = r.Traffic.MaxRequestBodyBytes
		}
		if got != want {
			return "body limit " + js(got) + ", want " + js(want)
		}
		return ""
	}
}

// session checks the route's session persistence (on the HTTP listener:
// not Secure).
func session(want *ir.SessionPersistence) func(*ir.HTTPRoute) string {
	return func(r *ir.HTTPRoute) string {
		if js(r.SessionPersistence) != js(want) {
			return "session persistence " + js(r.SessionPersistence) + ", want " + js(want)
		}
		return ""
	}
}

// lb checks the load balancer and hash key of the route's backend, and
// its cluster's name.
func lb(typ ir.LoadBalancerType, hash *ir.HashKey) func(*ir.HTTPRoute) string {
	return func(r *ir.HTTPRoute) string {
		b := r.Backends.Backends[0]
		if typ == "" {
			if b.Policy != nil || strings.Contains(b.Name, "/lb/") {
				return "backend " + b.Name + " policy " + js(b.Policy) + ", want none"
			}
			return ""
		}
		want := &ir.BackendPolicy{LoadBalancer: &ir.LoadBalancer{Type: typ}, Hash: hash}
		suffix := "/lb/" + strings.ToLower(string(typ))
		if hash != nil {
			suffix += "/" + strings.TrimSuffix(strings.ToLower(string(hash.Type))+"/"+hash.Name, "/")
		}
		if js(b.Policy) != js(want) || !strings.HasSuffix(b.Name, suffix) {
			return "backend " + b.Name + " policy " + js(b.Policy) + ", want " + js(want)
		}
		return ""
	}
}

// redirect checks that the route answers with the redirect (nil: it
// forwards to its backend).
func redirect(want *ir.Redirect) func(*ir.HTTPRoute) string {
	return func(r *ir.HTTPRoute) string {
		if js(r.Filters.Redirect) != js(want) || (want != nil) != (r.Backends == nil) {
			return "redirect " + js(r.Filters.Redirect) + " backends " + js(r.Backends != nil) + ", want " + js(want)
		}
		return ""
	}
}

// TestTrafficClassDefaults: the class's defaultAnnotations apply to the
// traffic annotations as to the others; its session-cookie-* are
// defaults for the Ingresses that set affinity, unused by the others.
func TestTrafficClassDefaults(t *testing.T) {
	defaults := map[string]string{NginxPrefix + "limit-rpm": "60", NginxPrefix + "session-cookie-name": "sticky"}
	withDefaults := func(res *resources.Resources) {
		res.IngressClasses[0].Spec.Parameters = &networkingv1.IngressClassParametersReference{APIGroup: ptr.To("gateway.xds-controller.dev"),
			Kind: "IngressClassParameters", Scope: ptr.To("Namespace"), Namespace: ptr.To("infra"), Name: "p"}
		res.IngressClassParameters = []*v1alpha1.IngressClassParameters{{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "p"},
			Spec: v1alpha1.IngressClassParametersSpec{DefaultAnnotations: defaults}}}
	}
	r, problems := translateAuth(t, nil, withDefaults)
	if msg := rules(ir.RateLimitRule{Requests: 60, Period: time.Minute, Burst: 300, Key: ir.RateLimitClientIP})(r); msg != "" || len(problems) != 0 || r.SessionPersistence != nil {
		t.Errorf("%s; session %s; problems %+v", msg, js(r.SessionPersistence), problems)
	}
	r, problems = translateAuth(t, map[string]string{NginxPrefix + "affinity": "cookie", NginxPrefix + "limit-rpm": "6"}, withDefaults)
	if sp := r.SessionPersistence; len(problems) != 0 || sp == nil || sp.Name != "sticky" || r.Traffic.LocalRateLimit.Rules[0].Requests != 6 {
		t.Errorf("session %s, traffic %s, problems %+v", js(sp), js(r.Traffic), problems)
	}
}

// translateRoutes translates Ingress "ing" (rules of hosts a.example.com
// and b.example.com, "/app" to Service app, spec.tls for a.example.com)
// with annotations and returns the routes of the HTTP and HTTPS listeners
// and the problems.
func translateRoutes(t *testing.T, annotations map[string]string) (http, https []*ir.HTTPRoute, problems []Problem) {
	t.Helper()
	cert, key := xdstest.Cert("a.example.com")
	rule := func(host string) networkingv1.IngressRule {
		return networkingv1.IngressRule{Host: host, IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
			Path: "/app", PathType: ptr.To(networkingv1.PathTypePrefix),
			Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "app", Port: networkingv1.ServiceBackendPort{Number: 80}}},
		}}}}}
	}
	res := &resources.Resources{
		IngressClasses: []*networkingv1.IngressClass{class("xds", ControllerName, time.Unix(0, 0), false)},
		Services: []*corev1.Service{{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app"},
			Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.1", Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}},
		Secrets: []*corev1.Secret{{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "tls"}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{corev1.TLSCertKey: cert, corev1.TLSPrivateKeyKey: key}}},
		Ingresses: []*networkingv1.Ingress{{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ing", Annotations: annotations},
			Spec: networkingv1.IngressSpec{IngressClassName: ptr.To("xds"), Rules: []networkingv1.IngressRule{rule("a.example.com"), rule("b.example.com")},
				TLS: []networkingv1.IngressTLS{{Hosts: []string{"a.example.com"}, SecretName: "tls"}}},
		}},
	}
	res.Sort()
	c := gatewayapi.NewCache()
	c.Translate(res, gatewayapi.Options{})
	out := Translate(res, gatewayapi.Options{}, Config{}, c.Refs())
	st := out.Status[types.NamespacedName{Namespace: "ns", Name: "ing"}]
	if len(out.Gateways) != 1 || len(out.Gateways[0].Listeners) != 2 {
		t.Fatalf("IR %+v, problems %+v: want two listeners", out.Gateways, st)
	}
	return out.Gateways[0].Listeners[0].HTTPRoutes, out.Gateways[0].Listeners[1].HTTPRoutes, st.Problems
}

// TestAppRootAndSecureAffinity: app-root adds an Exact "/" per host that
// redirects (302) to the root, claimed before the paths; with ssl-redirect, the
// HTTP listener redirects the TLS host's paths, the app-root one
// included, to HTTPS; the affinity cookie is Secure on HTTPS only.
func TestAppRootAndSecureAffinity(t *testing.T) {
	http, https, problems := translateRoutes(t, map[string]string{NginxPrefix + "app-root": "/app", NginxPrefix + "affinity": "cookie", NginxPrefix + "ssl-redirect": "true"})
	if len(problems) != 0 {
		t.Fatalf("problems %+v", problems)
	}
	describe := func(rs []*ir.HTTPRoute) string {
		var out []string
		for _, r := range rs {
			s := r.Hostname + " " + js(r.Match.Path) + " "
			switch {
			case r.Filters.Redirect != nil:
				s += "redirect " + js(r.Filters.Redirect)
			case r.SessionPersistence != nil:
				s += "backend secure=" + js(r.SessionPersistence.Secure)
			}
			out = append(out, s)
		}
		return strings.Join(out, "\n")
	}
	// Longest path first: "/app", then the Exact "/".
	wantHTTP := `a.example.com {"type":"PathPrefix","value":"/app"} redirect {"scheme":"https","statusCode":308}
a.example.com {"type":"Exact","value":"/"} redirect {"scheme":"https","statusCode":308}
b.example.com {"type":"PathPrefix","value":"/app"} backend secure=false
b.example.com {"type":"Exact","value":"/"} redirect {"path":{"type":"ReplaceFullPath","value":"/app"},"statusCode":302}`
	wantHTTPS := `a.example.com {"type":"PathPrefix","value":"/app"} backend secure=true
a.example.com {"type":"Exact","value":"/"} redirect {"path":{"type":"ReplaceFullPath","value":"/app"},"statusCode":302}
b.example.com {"type":"PathPrefix","value":"/app"} backend secure=true
b.example.com {"type":"Exact","value":"/"} redirect {"path":{"type":"ReplaceFullPath","value":"/app"},"statusCode":302}`
	if got := describe(http); got != wantHTTP {
		t.Errorf("HTTP routes:\n%s\nwant\n%s", got, wantHTTP)
	}
	if got := describe(https); got != wantHTTPS {
		t.Errorf("HTTPS routes:\n%s\nwant\n%s", got, wantHTTPS)
	}
	for _, bad := range []string{"app", "/a b", "/a?b"} {
		_, _, problems := translateRoutes(t, map[string]string{NginxPrefix + "app-root": bad})
		if len(problems) != 1 || problems[0].Reason != ReasonInvalidAnnotation {
			t.Errorf("app-root %q: problems %+v, want it refused", bad, problems)
		}
	}
}

// TestAccessLogAndPassthrough: enable-access-log "false" in the class's
// defaultAnnotations turns the class listeners' access log off; an
// Ingress's own value that differs is reported. ssl-passthrough adds a TLS
// passthrough listener for the host on the HTTPS port, to the backend of
// the host's path.
func TestAccessLogAndPassthrough(t *testing.T) {
	off := map[string]string{NginxPrefix + "enable-access-log": "false"}
	for _, tc := range []struct {
		name          string
		own, defaults map[string]string
		noLog         bool
		problem       string
	}{
		{"class off", nil, off, true, ""},
		{"class off, own false", off, off, true, ""},
		{"class off, own true", map[string]string{NginxPrefix + "enable-access-log": "true"}, off, true, "the access log is the class's listener's"},
		{"own false", off, nil, false, "the access log is the class's listener's"},
		{"own true", map[string]string{Prefix + "enable-access-log": "true"}, nil, false, ""},
		{"bad", map[string]string{NginxPrefix + "enable-access-log": "no way"}, nil, false, "is not true or false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ls, problems := translateListeners(t, tc.own, tc.defaults)
			if ls[0].NoAccessLog != tc.noLog {
				t.Errorf("NoAccessLog %v, want %v", ls[0].NoAccessLog, tc.noLog)
			}
			if (tc.problem == "") != (len(problems) == 0) || (tc.problem != "" && !strings.Contains(problems[0].Message, tc.problem)) {
				t.Errorf("problems %+v, want %q", problems, tc.problem)
			}
		})
	}
	ls, problems := translateListeners(t, map[string]string{NginxPrefix + "ssl-passthrough": "true"}, nil)
	if len(problems) != 0 || len(ls) != 2 || ls[1].Protocol != ir.ProtocolTLS || ls[1].TLS.Mode != ir.TLSPassthrough || ls[1].Hostname != "a.example.com" ||
		ls[1].GatewayPort != 443 || len(ls[1].L4Routes) != 1 || ls[1].L4Routes[0].Backends.Backends[0].Name != "service/ns/app/80" {
		t.Errorf("listeners %s, problems %+v; want HTTP, then a TLS passthrough listener for a.example.com on 443 to app", js(ls), problems)
	}
}

// translateListeners translates Ingress "ing" (host a.example.com, / to
// Service app) with annotations, its class's defaultAnnotations
// defaults, and returns the class Gateway's listeners and the problems.
func translateListeners(t *testing.T, annotations, defaults map[string]string) ([]*ir.Listener, []Problem) {
	t.Helper()
	ic := class("xds", ControllerName, time.Unix(0, 0), false)
	ic.Spec.Parameters = &networkingv1.IngressClassParametersReference{APIGroup: ptr.To("gateway.xds-controller.dev"),
		Kind: "IngressClassParameters", Scope: ptr.To("Namespace"), Namespace: ptr.To("infra"), Name: "p"}
	res := &resources.Resources{
		IngressClasses: []*networkingv1.IngressClass{ic},
		IngressClassParameters: []*v1alpha1.IngressClassParameters{{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "p"},
			Spec: v1alpha1.IngressClassParametersSpec{DefaultAnnotations: defaults}}},
		Services: []*corev1.Service{{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app"},
			Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.1", Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}},
		Ingresses: []*networkingv1.Ingress{{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ing", Annotations: annotations},
			Spec: networkingv1.IngressSpec{IngressClassName: ptr.To("xds"), Rules: []networkingv1.IngressRule{{Host: "a.example.com",
				IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
					Path: "/", PathType: ptr.To(networkingv1.PathTypePrefix),
					Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "app", Port: networkingv1.ServiceBackendPort{Number: 80}}},
				}}}}}}},
		}},
	}
	res.Sort()
	c := gatewayapi.NewCache()
	c.Translate(res, gatewayapi.Options{})
	out := Translate(res, gatewayapi.Options{}, Config{}, c.Refs())
	st := out.Status[types.NamespacedName{Namespace: "ns", Name: "ing"}]
	if len(out.Gateways) != 1 || len(out.Gateways[0].Listeners) == 0 {
		t.Fatalf("IR %+v, problems %+v: want the class's listeners", out.Gateways, st)
	}
	return out.Gateways[0].Listeners, st.Problems
}
