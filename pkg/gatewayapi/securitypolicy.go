package gatewayapi

// SecurityPolicy (gateway.xds-controller.dev/v1alpha1, ours): the
// authentication of the requests of the Gateways, listeners, ListenerSets,
// routes and route rules it targets. Its attachment, precedence (rule over
// route over listener over ListenerSet over Gateway), conflicts and
// status.ancestors are every policy kind's (policy.go); here are its
// validation, what it renders (ir.HTTPFilters BasicAuth and APIKeyAuth, on
// every IR route of the rules it covers) and its registration.
// docs/security-policy.md is the user's view.
//
// Fail closed: a policy that applies to a rule but cannot be honoured (a
// Secret missing or unreadable, a schema violation) makes the rule's
// routes answer 500, never forward unauthenticated.

import (
	"cmp"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

// KindSecurityPolicy is the registry name of SecurityPolicy.
var KindSecurityPolicy = resources.SecurityPolicyKind.Name()

// Secret keys of the basicAuth users Secret: ingress-nginx's
// (auth-secret-type auth-file), then Envoy Gateway's.
var htpasswdKeys = []string{"auth", ".htpasswd"}

// ResolvedRefs=False reasons of a SecurityPolicy's Secret references.
const (
	reasonRefNotPermitted = string(gwapiv1.RouteReasonRefNotPermitted)
	reasonInvalidKind     = string(gwapiv1.RouteReasonInvalidKind)
	reasonSecretNotFound  = "SecretNotFound"
	reasonInvalidSecret   = "InvalidSecret"
)

// securityPolicyKind registers SecurityPolicy (policy.go): it targets
// Gateways, ListenerSets, HTTPRoutes and GRPCRoutes (and their listeners
// and named rules) and renders every IR route of the rules it covers;
// the effect of a policy is a *securityEffect, nil when it cannot be
// honoured.
var securityPolicyKind = registerPolicyKind(resources.SecurityPolicyKind, policyKindSpec[*v1alpha1.SecurityPolicy]{
	targets: []targetKind{targetGateway, targetListenerSet, targetHTTPRoute, targetGRPCRoute},
	targetRefs: func(p *v1alpha1.SecurityPolicy) []gwapiv1.LocalPolicyTargetReferenceWithSectionName {
		return p.Spec.TargetRefs
	},
	status:       func(p *v1alpha1.SecurityPolicy) *gwapiv1.PolicyStatus { return &p.Status },
	validate:     (*translator).securityPolicy,
	resolvedRefs: true,
	references:   securityReferences,
	route:        securityRoute,
})

// securityEffect is what a valid policy renders on a route.
type securityEffect struct {
	basic  *ir.BasicAuth
	apiKey *ir.APIKeyAuth
	jwt    *ir.JWT           // securityjwt.go
	authz  *ir.Authorization // securityauthz.go: authorization and jwt's required claims
	oidc   *ir.OIDC
	// extAuth is spec.extAuth resolved (securityextauth.go).
	extAuth *ir.ExtAuth
}

// securityRoute renders the effective policy of a rule on r, one IR
// route of it: its authentication filters, or, when the policy cannot be
// honoured, a 500 answer in place of what the route did (nothing is
// forwarded or mirrored; the response header filter stays).
func securityRoute(st *policyState, r *ir.HTTPRoute) {
	e, _ := st.effect.(*securityEffect)
	if e == nil {
		r.Filters = ir.HTTPFilters{ResponseHeaders: r.Filters.ResponseHeaders}
		r.Backends, r.SessionPersistence, r.Retry = nil, nil, nil
		r.DirectResponse = &ir.DirectResponse{StatusCode: 500}
		return
	}
	r.Filters.BasicAuth, r.Filters.APIKeyAuth = e.basic, e.apiKey
	r.Filters.JWT, r.Filters.Authorization = e.jwt, e.authz
	r.Filters.OIDC = e.oidc
	r.Filters.SecurityExtAuth = e.extAuth
}

// securityReferences are the Secrets a policy reads: basicAuth users,
// apiKeyAuth credentialRefs and the oidc clientSecret (core Secrets; the
// namespace defaults to the policy's), and the ConfigMaps: oidc
// caCertificateRefs.
func securityReferences(p *v1alpha1.SecurityPolicy) (secrets, configMaps []types.NamespacedName) {
	var refs []gwapiv1.SecretObjectReference
	if b := p.Spec.BasicAuth; b != nil {
		refs = append(refs, b.Users)
	}
	if a := p.Spec.APIKeyAuth; a != nil {
		refs = append(refs, a.CredentialRefs...)
	}
	if o := p.Spec.OIDC; o != nil {
		refs = append(refs, o.ClientSecret)
	}
	for _, r := range refs {
		if deref(r.Group, "") == "" && deref(r.Kind, "Secret") == "Secret" {
			secrets = append(secrets, nn(string(deref(r.Namespace, gwapiv1.Namespace(p.Namespace))), string(r.Name)))
		}
	}
	secrets, configMaps = jwtReferences(p, secrets, configMaps)
	if o := p.Spec.OIDC; o != nil {
		for _, r := range o.CACertificateRefs {
			if r.Group == "" && r.Kind == "ConfigMap" {
				configMaps = append(configMaps, nn(p.Namespace, string(r.Name)))
			}
		}
	}
	return secrets, configMaps
}

// securityPolicy validates one policy (SecurityPolicySpec, with the CRD's
// schema and CEL rules, which standalone mode has no API server to
// apply): a schema violation is Accepted=False reason Invalid; a Secret
// (or a service, a URL) that cannot be used is ResolvedRefs=False (reasons RefNotPermitted,
// InvalidKind, SecretNotFound, InvalidSecret) and Accepted=False. In
// every such case the effect is nil and the routes the policy covers
// answer 500.
func (t *translator) securityPolicy(p *v1alpha1.SecurityPolicy, st *policyState) {
	const failClosed = "; the routes it covers answer 500 until it is fixed"
	invalid := func(format string, a ...any) {
		st.notAccepted = &problem{string(gwapiv1.PolicyReasonInvalid), fmt.Sprintf(format, a...) + failClosed}
	}
	spec := p.Spec
	if msg := checkTargetRefs(spec.TargetRefs); msg != "" {
		invalid("%s", msg)
		return
	}
	if spec.BasicAuth == nil && spec.APIKeyAuth == nil && spec.JWT == nil && spec.Authorization == nil && spec.OIDC == nil && spec.ExtAuth == nil {
		invalid("at least one of jwt, oidc, basicAuth, apiKeyAuth, authorization and extAuth is required")
		return
	}
	e := &securityEffect{}
	var bad, refs *problem
	if b := spec.BasicAuth; b != nil {
		e.basic, bad, refs = t.basicAuth(p, b)
	}
	if a := spec.APIKeyAuth; a != nil && bad == nil && refs == nil {
		e.apiKey, bad, refs = t.apiKeyAuth(p, a)
	}
	if bad == nil && refs == nil {
		e.jwt, e.authz, bad, refs = t.jwtAndAuthorization(p)
	}
	if o := spec.OIDC; o != nil && bad == nil && refs == nil {
		e.oidc, bad, refs = t.oidc(p, o)
	}
	if f := spec.ExtAuth; f != nil && bad == nil && refs == nil {
		e.extAuth, bad, refs = t.securityExtAuth(p, f)
	}
	switch {
	case bad != nil:
		invalid("%s", bad.msg)
	case refs != nil:
		st.refs = refs
		st.notAccepted = &problem{string(gwapiv1.PolicyReasonInvalid), refs.msg + failClosed}
	default:
		st.effect = e
	}
}

// policySecret resolves a Secret reference of policy p (field names it in
// messages): a core Secret of type Opaque (the type of ingress-nginx's
// auth Secrets, and the only type besides kubernetes.io/tls that the
// Kubernetes provider reads: a ServiceAccount token or a Helm release is
// never a credential of ours), in p's namespace or in another one whose
// ReferenceGrant lets SecurityPolicies of p's namespace use it.
func (t *translator) policySecret(p *v1alpha1.SecurityPolicy, field string, ref gwapiv1.SecretObjectReference) (*corev1.Secret, *problem) {
	group, kind := deref(ref.Group, ""), deref(ref.Kind, "Secret")
	ns := string(deref(ref.Namespace, gwapiv1.Namespace(p.Namespace)))
	name := field + " " + ns + "/" + string(ref.Name)
	if group != "" || kind != "Secret" {
		return nil, &problem{reasonInvalidKind, fmt.Sprintf("%s: %s is not a core Secret", name, groupKind(group, kind))}
	}
	if ns != p.Namespace && !t.grantAllows(v1alpha1.GroupVersion.Group, v1alpha1.SecurityPolicyKind, p.Namespace, "", "Secret", ns, string(ref.Name)) {
		return nil, &problem{reasonRefNotPermitted, fmt.Sprintf("%s: no ReferenceGrant in namespace %s allows SecurityPolicies of namespace %s to use it", name, ns, p.Namespace)}
	}
	s := t.secret(nn(ns, string(ref.Name)))
	if s == nil {
		return nil, &problem{reasonSecretNotFound, name + ": Secret not found"}
	}
	if msg := notOpaque(s); msg != "" {
		return nil, &problem{reasonInvalidSecret, name + ": Secret " + msg}
	}
	return s, nil
}

// notOpaque says why Secret s cannot hold credentials (a SecurityPolicy's,
// an Ingress's auth-secret): its type is not Opaque (no type reads as
// Opaque). "" when it is.
func notOpaque(s *corev1.Secret) string {
	if typ := cmp.Or(s.Type, corev1.SecretTypeOpaque); typ != corev1.SecretTypeOpaque {
		return fmt.Sprintf("type is %q, not %q", typ, corev1.SecretTypeOpaque)
	}
	return ""
}

// htpasswdFile is the htpasswd file of Secret s: the data of its first
// key of htpasswdKeys, and that key; ok is false when it has none.
func htpasswdFile(s *corev1.Secret) (data []byte, key string, ok bool) {
	for _, key = range htpasswdKeys {
		if data, ok = s.Data[key]; ok {
			return data, key, true
		}
	}
	return nil, "", false
}

// basicAuth validates spec.basicAuth and reads its users: bad is a schema
// violation, refs a Secret that cannot be used.
func (t *translator) basicAuth(p *v1alpha1.SecurityPolicy, b *v1alpha1.BasicAuth) (out *ir.BasicAuth, bad, refs *problem) {
	out = &ir.BasicAuth{Realm: p.Namespace + "/" + p.Name}
	if r := b.Realm; r != nil {
		if len(*r) == 0 || len(*r) > 256 || strings.ContainsFunc(*r, func(c rune) bool { return c < ' ' || c == 0x7f || c == '"' || c == '\\' }) {
			return nil, &problem{"", fmt.Sprintf("basicAuth.realm %s is not 1-256 characters without control characters, '\"' or '\\'", q(*r))}, nil
		}
		out.Realm = *r
	}
	if h := b.ForwardUsernameHeader; h != nil {
		if msg := checkHeaderName(string(*h)); msg != "" {
			return nil, &problem{"", "basicAuth.forwardUsernameHeader " + msg}, nil
		}
		out.ForwardUsernameHeader = strings.ToLower(string(*h))
	}
	s, refs := t.policySecret(p, "basicAuth.users", b.Users)
	if refs != nil {
		return nil, nil, refs
	}
	data, key, ok := htpasswdFile(s)
	field := fmt.Sprintf("basicAuth.users %s/%s", s.Namespace, s.Name)
	if !ok {
		return nil, nil, &problem{reasonInvalidSecret, fmt.Sprintf("%s: the Secret has no key %s", field, strings.Join(htpasswdKeys, " or "))}
	}
	users, msg := parseHtpasswd(string(data))
	if msg != "" {
		return nil, nil, &problem{reasonInvalidSecret, fmt.Sprintf("%s key %s: %s", field, key, msg)}
	}
	out.Users = users
	return out, nil, nil
}

// parseHtpasswd reads an htpasswd file whose every password is a "{SHA}"
// hash (htpasswd -s: base64 of the password's SHA-1), the one format
// Envoy's basic_auth filter checks: one "user:hash" per line, blank lines
// skipped, CR LF line ends allowed. It returns the users sorted by name,
// or the first problem: a line without ':', a user name empty or with
// whitespace or control characters, a user twice, a hash of another
// format (named: bcrypt, MD5 apr1, SHA-256/512 crypt, crypt or plain
// text) or a {SHA} hash that is not the base64 of 20 bytes.
func parseHtpasswd(s string) ([]ir.BasicAuthUser, string) {
	var users []ir.BasicAuthUser
	for i, line := range strings.Split(s, "\n") {
		line = strings.TrimSuffix(line, "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		name, hash, ok := strings.Cut(line, ":")
		switch {
		case !ok:
			return nil, fmt.Sprintf("line %d is not user:hash", i+1)
		case name == "" || strings.ContainsFunc(name, func(c rune) bool { return c <= ' ' || c == 0x7f }):
			return nil, fmt.Sprintf("line %d: the user name is empty or holds whitespace or a control character", i+1)
		}
		sha, isSHA := strings.CutPrefix(hash, "{SHA}")
		if !isSHA {
			return nil, fmt.Sprintf("user %s: the password is %s; Envoy checks SHA-1 hashes only (htpasswd -s: {SHA}...)", q(name), hashFormat(hash))
		}
		if b, err := base64.StdEncoding.DecodeString(sha); err != nil || len(b) != 20 /* SHA-1 */ {
			return nil, fmt.Sprintf("user %s: the {SHA} hash is not the base64 of a SHA-1", q(name))
		}
		if slices.ContainsFunc(users, func(u ir.BasicAuthUser) bool { return u.Name == name }) {
			return nil, fmt.Sprintf("user %s is given twice", q(name))
		}
		users = append(users, ir.BasicAuthUser{Name: name, SHA: sha})
	}
	if len(users) == 0 {
		return nil, "no users"
	}
	slices.SortFunc(users, func(a, b ir.BasicAuthUser) int { return cmp.Compare(a.Name, b.Name) })
	return users, ""
}

// hashFormat names the format of an htpasswd password that is not {SHA}.
func hashFormat(h string) string {
	for prefix, f := range map[string]string{"$2y$": "bcrypt", "$2a$": "bcrypt", "$2b$": "bcrypt", "$apr1$": "an MD5 (apr1) hash", "$1$": "an MD5 crypt hash", "$5$": "a SHA-256 crypt hash", "$6$": "a SHA-512 crypt hash"} {
		if strings.HasPrefix(h, prefix) {
			return f
		}
	}
	if len(h) == 13 {
		return "a crypt hash or plain text"
	}
	return "plain text or an unknown hash"
}

// apiKeyAuth validates spec.apiKeyAuth and reads its keys: bad is a
// schema violation, refs a Secret that cannot be used. Each data entry of
// each Secret is a client (its key) and its API key (its value): 1 to
// 1024 bytes of visible ASCII (a key travels in a header, a query
// parameter or a cookie); a key given twice is refused.
func (t *translator) apiKeyAuth(p *v1alpha1.SecurityPolicy, a *v1alpha1.APIKeyAuth) (out *ir.APIKeyAuth, bad, refs *problem) {
	out = &ir.APIKeyAuth{}
	if n := len(a.ExtractFrom); n < 1 || n > 8 {
		return nil, &problem{"", fmt.Sprintf("apiKeyAuth.extractFrom: %d entries; 1 to 8 are required", n)}, nil
	}
	for i, src := range a.ExtractFrom {
		var s ir.APIKeySource
		n := 0
		if h := src.Header; h != nil {
			if msg := checkHeaderName(string(*h)); msg != "" {
				return nil, &problem{"", fmt.Sprintf("apiKeyAuth.extractFrom[%d].header %s", i, msg)}, nil
			}
			s.Header, n = strings.ToLower(string(*h)), n+1
		}
		for _, f := range []struct {
			name string
			v    *string
			to   *string
		}{{"queryParameter", src.QueryParameter, &s.Query}, {"cookie", src.Cookie, &s.Cookie}} {
			if f.v == nil {
				continue
			}
			if msg := checkHeaderName(*f.v); msg != "" {
				return nil, &problem{"", fmt.Sprintf("apiKeyAuth.extractFrom[%d].%s %s", i, f.name, msg)}, nil
			}
			*f.to, n = *f.v, n+1
		}
		if n != 1 {
			return nil, &problem{"", fmt.Sprintf("apiKeyAuth.extractFrom[%d]: exactly one of header, queryParameter and cookie is required", i)}, nil
		}
		out.Sources = append(out.Sources, s)
	}
	if h := a.ForwardClientIDHeader; h != nil {
		if msg := checkHeaderName(string(*h)); msg != "" {
			return nil, &problem{"", "apiKeyAuth.forwardClientIDHeader " + msg}, nil
		}
		out.ForwardClientIDHeader = strings.ToLower(string(*h))
	}
	if n := len(a.CredentialRefs); n < 1 || n > maxItems16 {
		return nil, &problem{"", fmt.Sprintf("apiKeyAuth.credentialRefs: %d entries; 1 to %d are required", n, maxItems16)}, nil
	}
	clientOf := map[string]string{}
	for i, ref := range a.CredentialRefs {
		s, refs := t.policySecret(p, fmt.Sprintf("apiKeyAuth.credentialRefs[%d]", i), ref)
		if refs != nil {
			return nil, nil, refs
		}
		field := fmt.Sprintf("apiKeyAuth.credentialRefs[%d] %s/%s", i, s.Namespace, s.Name)
		if len(s.Data) == 0 {
			return nil, nil, &problem{reasonInvalidSecret, field + ": the Secret holds no keys"}
		}
		for _, client := range sortedKeys(s.Data) {
			key := string(s.Data[client])
			if len(key) == 0 || len(key) > 1024 || strings.ContainsFunc(key, func(c rune) bool { return c <= ' ' || c >= 0x7f }) {
				return nil, nil, &problem{reasonInvalidSecret, fmt.Sprintf("%s: the key of client %s is not 1-1024 visible ASCII characters (a trailing newline?)", field, q(client))}
			}
			if other, dup := clientOf[key]; dup {
				return nil, nil, &problem{reasonInvalidSecret, fmt.Sprintf("%s: client %s has the key of client %s; keys must be distinct", field, q(client), q(other))}
			}
			clientOf[key] = client
			out.Credentials = append(out.Credentials, ir.APIKeyCredential{Client: client, Key: key})
		}
	}
	slices.SortFunc(out.Credentials, func(a, b ir.APIKeyCredential) int {
		return cmp.Or(cmp.Compare(a.Client, b.Client), cmp.Compare(a.Key, b.Key))
	})
	return out, nil, nil
}

// sortedKeys are m's keys, sorted.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
