package ingress

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

// The {SHA} hash of "builder" (htpasswd -s).
const shaBuilder = "9SMYoF5RilWWASry7TjeaKwmpGg="

// translateAuth translates one Ingress "ing" (host a.example.com, / to
// Service app) of class xds with annotations, beside secrets, and returns
// its IR route and problems.
func translateAuth(t *testing.T, annotations map[string]string, edit func(*resources.Resources), secrets ...*corev1.Secret) (*ir.HTTPRoute, []Problem) {
	t.Helper()
	res := &resources.Resources{
		IngressClasses: []*networkingv1.IngressClass{class("xds", ControllerName, time.Unix(0, 0), false)},
		Services: []*corev1.Service{{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app"},
			Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.1", Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}},
		Secrets: secrets,
		Ingresses: []*networkingv1.Ingress{{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ing", Annotations: annotations},
			Spec: networkingv1.IngressSpec{IngressClassName: ptr.To("xds"), Rules: []networkingv1.IngressRule{{Host: "a.example.com",
				IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
					Path: "/", PathType: ptr.To(networkingv1.PathTypePrefix),
					Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "app", Port: networkingv1.ServiceBackendPort{Number: 80}}},
				}}}}}}},
		}},
	}
	if edit != nil {
		edit(res)
	}
	res.Sort()
	c := gatewayapi.NewCache()
	c.Translate(res, gatewayapi.Options{})
	out := Translate(res, gatewayapi.Options{}, Config{}, c.Refs())
	st := out.Status[types.NamespacedName{Namespace: "ns", Name: "ing"}]
	if len(out.Gateways) != 1 || len(out.Gateways[0].Listeners) == 0 || len(out.Gateways[0].Listeners[0].HTTPRoutes) != 1 {
		t.Fatalf("IR %+v, problems %+v: want one route", out.Gateways, st)
	}
	return out.Gateways[0].Listeners[0].HTTPRoutes[0], st.Problems
}

// TestIngressAuthAnnotations: each authentication annotation maps onto
// ir.ExtAuth or ir.BasicAuth; what cannot be honoured makes the path
// answer 503 (fail closed) and is reported, never ignored.
func TestIngressAuthAnnotations(t *testing.T) {
	users := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "users"}, Data: map[string][]byte{"auth": []byte("bob:{SHA}" + shaBuilder + "\n")}}
	amap := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "amap"}, Data: map[string][]byte{"bob": []byte("{SHA}" + shaBuilder)}}
	token := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "token"}, Type: corev1.SecretTypeServiceAccountToken,
		Data: map[string][]byte{"auth": []byte("bob:{SHA}" + shaBuilder + "\n")}}
	bcrypt := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "bcrypt"}, Data: map[string][]byte{"auth": []byte("bob:$2y$05$abc")}}
	n := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[NginxPrefix+kv[i]] = kv[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		fails       string // a part of the problem; the route answers 503
		check       func(t *testing.T, f ir.HTTPFilters)
		problem     string // a problem reported, the route still served
	}{
		{name: "auth-url, signin, response headers", annotations: n("auth-url", "https://auth.example.com/oauth2/auth?allowed_groups=a",
			"auth-signin", "https://auth.example.com/oauth2/start", "auth-response-headers", "X-Auth-Request-User, X-Auth-Request-Email"),
			check: func(t *testing.T, f ir.HTTPFilters) {
				a := f.ExtAuth
				if a == nil || a.PathOverride != "/oauth2/auth?allowed_groups=a" || !a.AllRequestHeaders || a.Backend.Name != "url/https/auth.example.com/443" ||
					strings.Join(a.AllowedResponseHeaders, ",") != "x-auth-request-user,x-auth-request-email" ||
					a.SignIn == nil || a.SignIn.URL != "https://auth.example.com/oauth2/start" || a.SignIn.Param != "rd" {
					t.Errorf("check %+v", a)
				}
			}},
		{name: "signin with nginx variables and its own rd", annotations: n("auth-url", "http://10.0.0.5:4180/oauth2/auth",
			"auth-signin", "https://$host/oauth2/start?rd=$escaped_request_uri&x=100%"),
			check: func(t *testing.T, f ir.HTTPFilters) {
				if s := f.ExtAuth.SignIn; s.URL != "https://%REQ(:authority)%/oauth2/start?rd=%REQ(:path)%&x=100%%" || s.Param != "" {
					t.Errorf("sign-in %+v", s)
				}
			}},
		{name: "signin redirect param", annotations: n("auth-url", "http://10.0.0.5/a", "auth-signin", "https://login.example.com/?a=b", "auth-signin-redirect-param", "next"),
			check: func(t *testing.T, f ir.HTTPFilters) {
				if s := f.ExtAuth.SignIn; s.Param != "next" {
					t.Errorf("sign-in %+v", s)
				}
			}},
		{name: "auth-method refused, check kept", annotations: n("auth-url", "http://10.0.0.5/a", "auth-method", "POST"), problem: "with the request's own method",
			check: func(t *testing.T, f ir.HTTPFilters) {
				if f.ExtAuth == nil {
					t.Error("the check was dropped")
				}
			}},
		{name: "basic auth-file", annotations: n("auth-type", "basic", "auth-secret", "users", "auth-realm", "Staff"), check: func(t *testing.T, f ir.HTTPFilters) {
			if b := f.BasicAuth; b == nil || b.Realm != "Staff" || len(b.Users) != 1 || b.Users[0].Name != "bob" {
				t.Errorf("basic %+v", b)
			}
		}},
		{name: "basic auth-map, default realm", annotations: n("auth-type", "basic", "auth-secret", "ns/amap", "auth-secret-type", "auth-map"), check: func(t *testing.T, f ir.HTTPFilters) {
			if b := f.BasicAuth; b == nil || b.Realm != "ns/ing" || b.Users[0].SHA != shaBuilder {
				t.Errorf("basic %+v", b)
			}
		}},
		{name: "auth-url with a variable", annotations: n("auth-url", "https://$host/oauth2/auth"), fails: "nginx variable"},
		{name: "auth-url not http", annotations: n("auth-url", "ftp://auth/"), fails: "scheme must be http or https"},
		{name: "auth-url with credentials", annotations: n("auth-url", "http://u:p@auth.example.com/"), fails: "user information"},
		{name: "signin with another variable", annotations: n("auth-url", "http://10.0.0.5/a", "auth-signin", "https://$server_name/start"), fails: "nginx variable other than"},
		{name: "bad response header", annotations: n("auth-url", "http://10.0.0.5/a", "auth-response-headers", "X User"), fails: `"X User"`},
		{name: "auth-snippet", annotations: n("auth-url", "http://10.0.0.5/a", "auth-snippet", "proxy_set_header X-A b;"), fails: "auth-snippet is not supported"},
		{name: "auth-tls-verify-client", annotations: n("auth-tls-verify-client", "on"), fails: "auth-tls-verify-client is not supported"},
		{name: "digest", annotations: n("auth-type", "digest", "auth-secret", "users"), fails: "only basic"},
		{name: "basic without a Secret", annotations: n("auth-type", "basic"), fails: "needs auth-secret"},
		{name: "Secret missing", annotations: n("auth-type", "basic", "auth-secret", "nowhere"), fails: "Secret ns/nowhere not found"},
		{name: "bcrypt", annotations: n("auth-type", "basic", "auth-secret", "bcrypt"), fails: "bcrypt"},
		{name: "not Opaque", annotations: n("auth-type", "basic", "auth-secret", "token"), fails: `type is "kubernetes.io/service-account-token"`},
		{name: "another namespace", annotations: n("auth-type", "basic", "auth-secret", "other/users"), fails: "another namespace"},
		{name: "own auth-secret without auth-type", annotations: n("auth-secret", "users"), fails: "needs auth-type: basic"},
		{name: "bad realm", annotations: n("auth-type", "basic", "auth-secret", "users", "auth-realm", `a"b`), fails: "auth-realm"},
		{name: "bad secret type", annotations: n("auth-type", "basic", "auth-secret", "users", "auth-secret-type", "ldap"), fails: "auth-file or auth-map"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, problems := translateAuth(t, tc.annotations, nil, users, amap, bcrypt, token)
			msgs := ""
			for _, p := range problems {
				msgs += p.Reason + ": " + p.Message + "\n"
			}
			if tc.fails != "" {
				if r.DirectResponse == nil || r.DirectResponse.StatusCode != FailureStatus || r.Backends != nil {
					t.Fatalf("route %+v, want a %d answer and no backends (fail closed)", r, FailureStatus)
				}
				if !strings.Contains(msgs, tc.fails) || !strings.Contains(msgs, "fail closed") {
					t.Errorf("problems:\n%s want %q and fail closed", msgs, tc.fails)
				}
				return
			}
			if r.DirectResponse != nil || r.Backends == nil {
				t.Fatalf("route %+v, problems:\n%s want it served", r, msgs)
			}
			if (tc.problem == "") != (msgs == "") || !strings.Contains(msgs, tc.problem) {
				t.Errorf("problems:\n%s want %q", msgs, tc.problem)
			}
			tc.check(t, r.Filters)
		})
	}
}

// TestIngressAuthClassDefaults: the class's defaultAnnotations may name a
// Secret in another namespace and a realm for the Ingresses that opt in
// with auth-type basic; an Ingress without auth-type leaves them unused.
// The controller reads that Secret (ReferencedSecrets).
func TestIngressAuthClassDefaults(t *testing.T) {
	defaults := map[string]string{NginxPrefix + "auth-secret": "auth/staff", NginxPrefix + "auth-realm": "Staff only"}
	staff := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "auth", Name: "staff"}, Data: map[string][]byte{"auth": []byte("root:{SHA}" + shaBuilder)}}
	withDefaults := func(res *resources.Resources) {
		res.IngressClasses[0].Spec.Parameters = &networkingv1.IngressClassParametersReference{APIGroup: ptr.To("gateway.xds-controller.dev"),
			Kind: "IngressClassParameters", Scope: ptr.To("Namespace"), Namespace: ptr.To("infra"), Name: "p"}
		res.IngressClassParameters = []*v1alpha1.IngressClassParameters{{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "p"},
			Spec: v1alpha1.IngressClassParametersSpec{DefaultAnnotations: defaults}}}
	}
	r, problems := translateAuth(t, map[string]string{NginxPrefix + "auth-type": "basic"}, withDefaults, staff)
	if b := r.Filters.BasicAuth; len(problems) != 0 || b == nil || b.Realm != "Staff only" || b.Users[0].Name != "root" {
		t.Errorf("opted in: basic %+v, problems %+v", b, problems)
	}
	r, problems = translateAuth(t, nil, withDefaults, staff)
	if len(problems) != 0 || r.Filters.BasicAuth != nil || r.Backends == nil {
		t.Errorf("not opted in: route %+v, problems %+v; want it served without basic auth", r, problems)
	}
	res := &resources.Resources{IngressClasses: []*networkingv1.IngressClass{class("xds", ControllerName, time.Unix(0, 0), false)},
		Ingresses: []*networkingv1.Ingress{{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ing", Annotations: map[string]string{NginxPrefix + "auth-type": "basic"}},
			Spec: networkingv1.IngressSpec{IngressClassName: ptr.To("xds")}}}}
	withDefaults(res)
	if got := ReferencedSecrets(res); len(got) != 1 || got[0].String() != "auth/staff" {
		t.Errorf("ReferencedSecrets %v, want auth/staff", got)
	}
}
