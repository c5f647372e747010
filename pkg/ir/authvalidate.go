package ir

import (
	"encoding/base64"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"unicode"
)

// basicAuth checks what Envoy's basic_auth filter would refuse (a NACK):
// at least one user; names without ':', whitespace or control characters,
// distinct; each hash the 28-character base64 of a 20-byte SHA-1; a realm
// without control characters, '"' or '\'; a forwarded header name that is
// an RFC 7230 token.
func (v *validator) basicAuth(p string, a *BasicAuth) {
	if len(a.Users) == 0 {
		v.add(p, "basic auth needs at least one user")
	}
	for i, u := range a.Users {
		if u.Name == "" || strings.ContainsFunc(u.Name, func(r rune) bool { return r == ':' || r <= ' ' || r == 0x7f }) {
			v.add(p, fmt.Sprintf("basic auth user name %q is empty or holds ':', whitespace or a control character", u.Name))
		}
		if i > 0 && a.Users[i-1].Name >= u.Name {
			v.add(p, fmt.Sprintf("basic auth users are not sorted and distinct at %q", u.Name))
		}
		if b, err := base64.StdEncoding.DecodeString(u.SHA); err != nil || len(b) != 20 || len(u.SHA) != 28 {
			v.add(p, fmt.Sprintf("basic auth user %q: the hash is not the base64 of a SHA-1", u.Name))
		}
	}
	if a.Realm == "" || strings.ContainsFunc(a.Realm, func(r rune) bool { return r < ' ' || r == 0x7f || r == '"' || r == '\\' }) {
		v.add(p, fmt.Sprintf("basic auth realm %q is empty or holds a control character, '\"' or '\\'", a.Realm))
	}
	if h := a.ForwardUsernameHeader; h != "" && !isToken(h) {
		v.add(p, fmt.Sprintf("basic auth header name %q is not an RFC 7230 token", h))
	}
}

// apiKeyAuth checks what Envoy's api_key_auth filter would refuse: at
// least one credential, keys and clients not empty, keys distinct; at
// least one source, each exactly one of a header (an RFC 7230 token), a
// query parameter and a cookie; a forwarded header name that is a token.
func (v *validator) apiKeyAuth(p string, a *APIKeyAuth) {
	if len(a.Credentials) == 0 {
		v.add(p, "API key auth needs at least one key")
	}
	keys := make([]string, 0, len(a.Credentials))
	for _, c := range a.Credentials {
		if c.Client == "" || c.Key == "" {
			v.add(p, "an API key and its client may not be empty")
		}
		keys = append(keys, c.Key)
	}
	slices.Sort(keys)
	if len(slices.Compact(keys)) != len(a.Credentials) {
		v.add(p, "two clients have the same API key")
	}
	if len(a.Sources) == 0 {
		v.add(p, "API key auth needs at least one source")
	}
	for _, s := range a.Sources {
		n := 0
		for _, x := range []string{s.Header, s.Query, s.Cookie} {
			if x != "" {
				n++
			}
		}
		if n != 1 || s.Header != "" && !isToken(s.Header) {
			v.add(p, fmt.Sprintf("API key source %+v is not exactly one of a header (a token), a query parameter and a cookie", s))
		}
	}
	if h := a.ForwardClientIDHeader; h != "" && !isToken(h) {
		v.add(p, fmt.Sprintf("API key header name %q is not an RFC 7230 token", h))
	}
}

// jwt checks what Envoy's jwt_authn filter would refuse or could not
// tell apart: a requirement name; at least one provider, names distinct
// and not empty; each with exactly one of a local JWKS (JSON) and a
// remote one (an absolute https URI, a valid backend, a positive cache
// duration); header names that are RFC 7230 tokens, claim headers too;
// claims (of claim headers and requirements) that are not empty.
func (v *validator) jwt(p string, j *JWT) {
	if j.Name == "" {
		v.add(p, "JWT authentication needs a name")
	}
	if len(j.Providers) == 0 {
		v.add(p, "JWT authentication needs at least one provider")
	}
	seen := map[string]bool{}
	for _, pr := range j.Providers {
		if pr.Name == "" || seen[pr.Name] {
			v.add(p, fmt.Sprintf("JWT provider name %q is empty or given twice", pr.Name))
		}
		seen[pr.Name] = true
		switch r := pr.RemoteJWKS; {
		case (r == nil) == (pr.LocalJWKS == ""):
			v.add(p, fmt.Sprintf("JWT provider %q needs exactly one of a local and a remote JWKS", pr.Name))
		case r != nil:
			if !strings.HasPrefix(r.URI, "https://") || r.CacheDuration <= 0 {
				v.add(p, fmt.Sprintf("JWT provider %q: the remote JWKS needs an https URI and a positive cache duration", pr.Name))
			}
			if r.Backend == nil || r.Backend.Invalid {
				v.add(p, fmt.Sprintf("JWT provider %q: the remote JWKS needs a valid backend", pr.Name))
			} else {
				v.backend(p, r.Backend)
			}
		}
		for _, h := range pr.Headers {
			if !isToken(h.Name) {
				v.add(p, fmt.Sprintf("JWT provider %q: header name %q is not an RFC 7230 token", pr.Name, h.Name))
			}
		}
		for _, c := range pr.ClaimToHeaders {
			if !isToken(c.Header) || c.Claim == "" {
				v.add(p, fmt.Sprintf("JWT provider %q: claim %q to header %q: a claim and a token header name are required", pr.Name, c.Claim, c.Header))
			}
		}
		v.claims(p, pr.RequiredClaims)
	}
}

// authorization checks an authorization's rules: CIDRs that parse,
// header names that are tokens, regular expressions RE2 accepts, paths
// that start with "/" (but regular expressions), methods not empty, JWT
// matches that name a provider of the route's JWT j (nil: none may).
func (v *validator) authorization(p string, a *Authorization, j *JWT) {
	provider := func(name string) bool {
		return j != nil && slices.ContainsFunc(j.Providers, func(pr JWTProvider) bool { return pr.Name == name })
	}
	for _, m := range a.RequireJWT {
		if !provider(m.Provider) {
			v.add(p, fmt.Sprintf("authorization requires JWT provider %q, which the route's JWT authentication does not have", m.Provider))
		}
		v.claims(p, m.Claims)
	}
	for i, r := range a.Rules {
		for _, c := range r.ClientCIDRs {
			if pf, err := netip.ParsePrefix(c); err != nil || pf != pf.Masked() {
				v.add(p, fmt.Sprintf("authorization rule %d: client CIDR %q is not a canonical prefix", i, c))
			}
		}
		if m := r.JWT; m != nil {
			if !provider(m.Provider) {
				v.add(p, fmt.Sprintf("authorization rule %d: JWT provider %q is not one of the route's JWT authentication", i, m.Provider))
			}
			v.claims(p, m.Claims)
		}
		for _, h := range r.Headers {
			if !isToken(h.Name) {
				v.add(p, fmt.Sprintf("authorization rule %d: header name %q is not an RFC 7230 token", i, h.Name))
			}
			if h.Type == MatchRegex {
				if msg := re2Syntax(h.Value); msg != "" {
					v.add(p, fmt.Sprintf("authorization rule %d: header %q: %s", i, h.Name, msg))
				}
			}
		}
		for _, m := range r.Methods {
			if !isToken(m) {
				v.add(p, fmt.Sprintf("authorization rule %d: method %q is not a token", i, m))
			}
		}
		for _, pm := range r.Paths {
			switch pm.Type {
			case MatchRegex:
				if msg := re2Syntax(pm.Value); msg != "" {
					v.add(p, fmt.Sprintf("authorization rule %d: path: %s", i, msg))
				}
			case MatchExact, MatchPathPrefix:
				if !strings.HasPrefix(pm.Value, "/") {
					v.add(p, fmt.Sprintf("authorization rule %d: path %q does not start with /", i, pm.Value))
				}
			default:
				v.add(p, fmt.Sprintf("authorization rule %d: path match type %q is unknown", i, pm.Type))
			}
		}
	}
}

// claims checks claim matches: a name whose dot-separated segments are
// not empty, and at least one value.
func (v *validator) claims(p string, cs []Claim) {
	for _, c := range cs {
		if c.Name == "" || slices.Contains(strings.Split(c.Name, "."), "") || len(c.Values) == 0 {
			v.add(p, fmt.Sprintf("claim %q needs a name of non-empty dot-separated segments and at least one value", c.Name))
		}
	}
}

// oidc checks what Envoy's OAuth2 filter would refuse, or what would make
// the login unsafe: a name, a client id and secret, a 32-byte HMAC key;
// absolute http(s) endpoints (the end session one optional) and a valid
// token endpoint backend; redirect and logout paths that start with "/"
// and differ; scopes starting with "openid", without whitespace; cookie
// names that are RFC 7230 tokens; a forwarded header name that is one.
func (v *validator) oidc(p string, o *OIDC) {
	if o.Name == "" || o.ClientID == "" || o.ClientSecret == "" {
		v.add(p, "an OIDC login needs a name, a client id and a client secret")
	}
	if len(o.HMACKey) != 32 {
		v.add(p, fmt.Sprintf("an OIDC login's HMAC key has %d bytes; 32 are needed", len(o.HMACKey)))
	}
	for _, e := range []struct{ name, url string }{{"authorization", o.AuthorizationEndpoint}, {"token", o.TokenEndpoint}, {"end session", o.EndSessionEndpoint}} {
		if e.url == "" && e.name == "end session" {
			continue
		}
		if u, err := url.Parse(e.url); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || strings.ContainsFunc(e.url, unicode.IsSpace) {
			v.add(p, fmt.Sprintf("OIDC %s endpoint %q is not an absolute http(s) URL", e.name, e.url))
		}
	}
	for _, path := range []string{o.RedirectPath, o.LogoutPath} {
		if !strings.HasPrefix(path, "/") || strings.ContainsAny(path, "?# \t") {
			v.add(p, fmt.Sprintf("OIDC path %q must start with / and hold no query, fragment or space", path))
		}
	}
	if o.RedirectPath == o.LogoutPath {
		v.add(p, "the OIDC redirect and logout paths must differ")
	}
	if len(o.Scopes) == 0 || o.Scopes[0] != "openid" {
		v.add(p, "OIDC scopes must start with openid")
	}
	for _, s := range o.Scopes {
		if s == "" || strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f || r == '"' || r == '\\' }) {
			v.add(p, fmt.Sprintf("OIDC scope %q is empty or holds whitespace, a control character, '\"' or '\\'", s))
		}
	}
	for _, c := range []string{o.AccessTokenCookie, o.IDTokenCookie, o.ForwardIDTokenHeader} {
		if c != "" && !isToken(c) {
			v.add(p, fmt.Sprintf("OIDC cookie or header name %q is not an RFC 7230 token", c))
		}
	}
	if d := o.CookieDomain; d != "" && strings.ContainsFunc(d, func(r rune) bool { return r <= ' ' || r >= 0x7f || r == ';' || r == ',' }) {
		v.add(p, fmt.Sprintf("OIDC cookie domain %q holds whitespace, ';' or ','", d))
	}
	if o.TokenBackend == nil || o.TokenBackend.Invalid {
		v.add(p, "an OIDC login needs a valid token endpoint backend")
		return
	}
	v.backend(p, o.TokenBackend)
}

// extAuthSignIn checks a check's sign-in redirect: HTTP only; an absolute
// http or https URL without spaces, control characters or '#', whose only
// '%' sequences are "%%" and the command operators %REQ(:authority)%,
// %REQ(:path)% and %REQ(:scheme)% (Envoy would refuse any other format
// in the Location header); a query parameter name that is an RFC 7230
// token, or none.
func (v *validator) extAuthSignIn(p string, a *ExtAuth) {
	s := a.SignIn
	if a.Protocol != ExtAuthHTTP {
		v.add(p, "a sign-in redirect needs an HTTP external authorization check")
	}
	rest := s.URL
	for _, op := range []string{"%%", "%REQ(:authority)%", "%REQ(:path)%", "%REQ(:scheme)%"} {
		rest = strings.ReplaceAll(rest, op, "")
	}
	if !(strings.HasPrefix(s.URL, "https://") || strings.HasPrefix(s.URL, "http://")) || strings.ContainsAny(rest, "%#") ||
		strings.ContainsFunc(s.URL, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		v.add(p, fmt.Sprintf("sign-in URL %q is not an absolute http(s) URL whose only %% sequences are %%%%, %%REQ(:authority)%%, %%REQ(:path)%% and %%REQ(:scheme)%%", s.URL))
	}
	if s.Param != "" && !isToken(s.Param) {
		v.add(p, fmt.Sprintf("sign-in redirect parameter %q is not an RFC 7230 token", s.Param))
	}
}

// extAuthHTTPOptions checks an HTTP check's path override, a path (and
// query) starting with "/", without whitespace, control characters or
// '#', never beside a path prefix (Envoy HttpService: only one of
// path_prefix and path_override); and that AllRequestHeaders comes
// without a list of request headers.
func (v *validator) extAuthHTTPOptions(p string, a *ExtAuth) {
	if a.AllRequestHeaders && len(a.AllowedRequestHeaders) > 0 {
		v.add(p, "an external authorization check sends every request header and a list of them")
	}
	o := a.PathOverride
	if o == "" {
		return
	}
	if a.PathPrefix != "" {
		v.add(p, "an external authorization check has a path prefix and a path override")
	}
	if !strings.HasPrefix(o, "/") || strings.ContainsFunc(o, func(r rune) bool { return r <= ' ' || r == 0x7f || r == '#' }) {
		v.add(p, fmt.Sprintf("external authorization path override %q is not a path and query starting with /", o))
	}
}
