package ingress

// Authentication annotations (ingress-nginx's auth-*), mapped onto the
// machinery of SecurityPolicy: auth-url is an HTTP external authorization
// check (ir.ExtAuth, its URL a cluster of its own made by
// gatewayapi.Refs.ExternalAuthURL), auth-type basic is Envoy's basic_auth
// with the users of an htpasswd Secret (ir.BasicAuth, the same htpasswd
// parsing: gatewayapi.Refs.BasicAuthUsers). Unlike the other annotations,
// an authentication annotation that cannot be honoured is never ignored:
// every path of the Ingress answers FailureStatus (503, as ingress-nginx's
// denied locations do) until it is fixed, so that a mistake never serves
// without the authentication asked for (fail closed).

import (
	"cmp"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/ir"
)

// signInVariables are the nginx variables an auth-signin URL may hold and
// the Envoy command operators that give their values ($host and
// $http_host the request's Host; $request_uri and $escaped_request_uri
// its path and query, unescaped: Envoy's formatter cannot escape).
var signInVariables = []struct{ nginx, envoy string }{
	{"$escaped_request_uri", "%REQ(:path)%"},
	{"$request_uri", "%REQ(:path)%"},
	{"$http_host", "%REQ(:authority)%"},
	{"$host", "%REQ(:authority)%"},
	{"$scheme", "%REQ(:scheme)%"},
}

// authAnnotations reads auth-url (with auth-signin,
// auth-signin-redirect-param, auth-response-headers, auth-method) and
// auth-type basic (with auth-secret, auth-secret-type, auth-realm) into
// s.filters ExtAuth and BasicAuth. A value that cannot be honoured, and
// any other auth-* annotation (auth-snippet, auth-tls-*, ...), sets
// s.authFailed: the Ingress's paths answer FailureStatus. auth-secret,
// auth-secret-type and auth-realm without auth-type are unused when they
// come from the class's defaultAnnotations (defaults for the Ingresses
// that set auth-type basic), and fail when they are the Ingress's own.
func (t *translator) authAnnotations(a *annotationReader, s *settings) {
	fail := func(key, format string, args ...any) {
		a.is.problemf(ReasonInvalidAnnotation, "annotation %s: %s; every path of the Ingress answers %d until it is fixed (fail closed)", key, fmt.Sprintf(format, args...), FailureStatus)
		s.authFailed = true
	}
	ns := a.is.obj.Namespace
	if v, key, ok := a.get("auth-url", "auth-url"); ok {
		t.authURL(a, s, fail, ns, v, key)
	} else {
		for _, k := range []string{"auth-signin", "auth-signin-redirect-param", "auth-response-headers", "auth-method"} {
			if _, key, ok := a.get(k, k); ok {
				a.invalid(key, "it needs auth-url")
			}
		}
	}
	t.authBasic(a, s, fail, ns)
	for _, k := range slices.Sorted(maps.Keys(a.values)) {
		name, ours := strings.CutPrefix(k, Prefix)
		if !ours {
			name, _ = strings.CutPrefix(k, NginxPrefix)
		}
		if name == k || !strings.HasPrefix(name, "auth-") || a.read[k] {
			continue
		}
		a.read[k] = true
		a.is.problemf(ReasonUnsupportedAnnotation, "annotation %s is not supported, and ignoring it could serve without the authentication it asks for: every path of the Ingress answers %d until it is removed (fail closed; docs/ingress.md)", k, FailureStatus)
		s.authFailed = true
	}
}

// authURL reads auth-url v (of annotation key) and its companions.
func (t *translator) authURL(a *annotationReader, s *settings, fail func(string, string, ...any), ns, v, key string) {
	if strings.Contains(v, "$") {
		fail(key, "%q holds an nginx variable; the URL must be fixed", v)
		return
	}
	ea, msg := t.refs.ExternalAuthURL(ns, v)
	if msg != "" {
		fail(key, "%s", msg)
		return
	}
	if v, key, ok := a.get("auth-response-headers", "auth-response-headers"); ok {
		for _, h := range strings.Split(v, ",") {
			if h = strings.TrimSpace(h); h == "" {
				continue
			}
			if m := gatewayapi.ValidHeaderName(h); m != "" {
				fail(key, "%q %s", h, m)
				return
			}
			ea.AllowedResponseHeaders = append(ea.AllowedResponseHeaders, strings.ToLower(h))
		}
		if len(ea.AllowedResponseHeaders) == 0 {
			fail(key, "no header names")
			return
		}
	}
	if v, key, ok := a.get("auth-method", "auth-method"); ok {
		a.invalid(key, "%q: Envoy's ext_authz asks the service with the request's own method", v)
	}
	if v, key, ok := a.get("auth-signin", "auth-signin"); ok {
		param, _, _ := a.get("auth-signin-redirect-param", "auth-signin-redirect-param")
		si, msg := signIn(v, cmp.Or(param, "rd"))
		if msg != "" {
			fail(key, "%s", msg)
			return
		}
		ea.SignIn = si
	} else if _, key, ok := a.get("auth-signin-redirect-param", "auth-signin-redirect-param"); ok {
		a.invalid(key, "it needs auth-signin")
	}
	s.filters.ExtAuth = ea
}

// signIn turns an auth-signin URL into the sign-in redirect of a check:
// its nginx variables ($host, $http_host, $scheme, $request_uri,
// $escaped_request_uri) become Envoy command operators, a literal '%'
// becomes "%%"; the original URL goes in query parameter param unless
// the URL has it already (ingress-nginx's buildAuthSignURL). It returns
// why the URL cannot be used: not an absolute http(s) URL, another nginx
// variable, a fragment, spaces or control characters, a bad parameter
// name.
func signIn(raw, param string) (*ir.ExtAuthSignIn, string) {
	if m := gatewayapi.ValidHeaderName(param); m != "" {
		return nil, fmt.Sprintf("auth-signin-redirect-param %q %s", param, m)
	}
	probe, out := raw, strings.ReplaceAll(raw, "%", "%%")
	for _, v := range signInVariables {
		probe = strings.ReplaceAll(probe, v.nginx, "x")
		out = strings.ReplaceAll(out, v.nginx, v.envoy)
	}
	u, err := url.Parse(probe)
	switch {
	case strings.Contains(probe, "$"):
		return nil, fmt.Sprintf("%q holds an nginx variable other than $host, $http_host, $scheme, $request_uri and $escaped_request_uri", raw)
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil:
		return nil, fmt.Sprintf("%q is not an absolute http or https URL", raw)
	case strings.ContainsAny(raw, "# ") || strings.ContainsFunc(raw, func(r rune) bool { return r < ' ' || r == 0x7f }):
		return nil, fmt.Sprintf("%q holds a fragment, a space or a control character", raw)
	}
	si := &ir.ExtAuthSignIn{URL: out, Param: param}
	if u.Query().Has(param) {
		si.Param = ""
	}
	return si, ""
}

// authBasic reads auth-type basic, auth-secret, auth-secret-type and
// auth-realm.
func (t *translator) authBasic(a *annotationReader, s *settings, fail func(string, string, ...any), ns string) {
	typ, typKey, hasType := a.get("auth-type", "auth-type")
	secret, secretKey, hasSecret := a.get("auth-secret", "auth-secret")
	secretType, secretTypeKey, _ := a.get("auth-secret-type", "auth-secret-type")
	realm, realmKey, hasRealm := a.get("auth-realm", "auth-realm")
	switch {
	case !hasType && !hasSecret && !hasRealm && secretType == "":
		return
	case !hasType:
		// The class's defaultAnnotations may hold the Secret and realm
		// for the Ingresses that opt in with auth-type basic; an
		// Ingress's own auth-secret without it is a mistake.
		for _, k := range []string{secretKey, realmKey, secretTypeKey} {
			if _, own := a.is.obj.Annotations[k]; own && k != "" {
				fail(k, "it needs auth-type: basic")
				return
			}
		}
		return
	case typ != "basic":
		fail(typKey, "%q: only basic is supported (Envoy's basic_auth; no digest)", typ)
		return
	case !hasSecret || secret == "":
		fail(typKey, "auth-type basic needs auth-secret")
		return
	}
	authMap := false
	switch secretType {
	case "", "auth-file":
	case "auth-map":
		authMap = true
	default:
		fail(secretTypeKey, "%q is not auth-file or auth-map", secretType)
		return
	}
	ref, msg := authSecretRef(a.is.obj, secret, secretKey)
	if msg != "" {
		fail(secretKey, "%s", msg)
		return
	}
	t.reads = append(t.reads, read{secret: true, k: ref})
	users, msg := t.refs.BasicAuthUsers(ref.Namespace, ref.Name, authMap)
	if msg != "" {
		fail(secretKey, "%s", msg)
		return
	}
	b := &ir.BasicAuth{Users: users, Realm: ns + "/" + a.is.obj.Name}
	if hasRealm {
		if realm == "" || len(realm) > 256 || strings.ContainsFunc(realm, func(c rune) bool { return c < ' ' || c == 0x7f || c == '"' || c == '\\' }) {
			fail(realmKey, "%q is not 1-256 characters without control characters, '\"' or '\\'", realm)
			return
		}
		b.Realm = realm
	}
	s.filters.BasicAuth = b
}

// authSecretRef is the Secret an auth-secret value names: "name" in the
// Ingress's namespace, or "namespace/name". Another namespace is allowed
// only when the value is not the Ingress's own (it comes from its class's
// IngressClassParameters defaultAnnotations, which the cluster admin
// writes): an Ingress may not use another namespace's credentials.
func authSecretRef(ing *networkingv1.Ingress, v, key string) (types.NamespacedName, string) {
	ns, name, found := strings.Cut(v, "/")
	if !found {
		ns, name = ing.Namespace, v
	}
	if gatewayapi.ValidHostname(name) != "" || strings.Contains(name, "/") || (found && gatewayapi.ValidHostname(ns) != "") {
		return types.NamespacedName{}, fmt.Sprintf("%q is not a Secret name or namespace/name", v)
	}
	if _, own := ing.Annotations[key]; own && ns != ing.Namespace {
		return types.NamespacedName{}, fmt.Sprintf("%q is in another namespace; only the class's defaultAnnotations may name one", v)
	}
	return types.NamespacedName{Namespace: ns, Name: name}, ""
}

// authSecret is the Secret the effective annotations of ing (its class's
// defaultAnnotations overlaid by its own) name for basic auth, if any:
// what the controller must read for it.
func authSecret(ing *networkingv1.Ingress, class *Class) (types.NamespacedName, bool) {
	a := newAnnotationReader(&ingressState{obj: ing}, class)
	v, key, ok := a.get("auth-secret", "auth-secret")
	if !ok || v == "" {
		return types.NamespacedName{}, false
	}
	ref, msg := authSecretRef(ing, v, key)
	return ref, msg == ""
}
