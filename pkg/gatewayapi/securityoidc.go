package gatewayapi

// SecurityPolicy oidc: an OpenID Connect login by Envoy's OAuth2 filter
// (ir.OIDC; pkg/xdstranslator/oauth2.go renders it). What needs I/O
// happens outside the translation and comes in through Options: the
// issuer's discovery document (OIDCProviders, fetched by
// pkg/oidcdiscovery for the requests OIDCDiscoveries lists) and the key
// the session cookies' HMAC key is derived from (SecretKey).

import (
	"cmp"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"slices"
	"strings"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

// Defaults of SecurityPolicy oidc.
const (
	defaultOIDCRedirectPath = "/oauth2/callback"
	defaultOIDCLogoutPath   = "/logout"
	// oidcClientSecretKey is the key of the client secret in its Secret.
	oidcClientSecretKey = "client-secret"
	// reasonDiscoveryFailed is ResolvedRefs=False of a policy whose
	// issuer's discovery document could not be used.
	reasonDiscoveryFailed = "DiscoveryFailed"
	// reasonDiscoveryPending is ResolvedRefs=False of a policy whose
	// issuer's discovery document is being fetched for the first time.
	reasonDiscoveryPending = "DiscoveryPending"
)

// SecretKeyPurpose is the purpose the controller's CA derives
// Options.SecretKey for (pki.CA DerivationKey).
const SecretKeyPurpose = "gatewayapi.Options.SecretKey"

// OIDCProvider is what an OpenID provider's discovery document
// (<issuer>/.well-known/openid-configuration, OpenID Connect Discovery
// 1.0 section 4) gives a login, or why it could not be had (Error).
type OIDCProvider struct {
	AuthorizationEndpoint string
	TokenEndpoint         string
	EndSessionEndpoint    string
	// Error, when set, is why the document could not be fetched or used.
	Error string
	// Pending says that the document is being fetched for the first
	// time (pkg/oidcdiscovery fetches in the background): the policy is
	// translated again when it is there.
	Pending bool
}

// OIDCDiscovery is one discovery document the translation needs: an
// issuer, and the PEM CA certificates its certificate is verified with
// (nil: the system trust store).
type OIDCDiscovery struct {
	Issuer string
	CA     []byte
}

// OIDCDiscoveryKey is the key of Options.OIDCProviders for issuer and
// the CA certificates ca: the issuer, and a hash of ca when set.
func OIDCDiscoveryKey(issuer string, ca []byte) string {
	if len(ca) == 0 {
		return issuer
	}
	sum := sha256.Sum256(ca)
	return issuer + " ca=" + hex.EncodeToString(sum[:8])
}

// OIDCDiscoveries lists, sorted by key and once each, the discovery
// documents the SecurityPolicies of res need: those with an oidc issuer
// and not both an authorizationEndpoint and a tokenEndpoint. The CA of
// each is read from res as the translation reads it (caCertificateRefs:
// ConfigMaps' "ca.crt", ClusterTrustBundles); references that cannot be
// read are left out (the translation reports them).
func OIDCDiscoveries(res *resources.Resources) []OIDCDiscovery {
	if res == nil {
		return nil
	}
	discovers := func(p *v1alpha1.SecurityPolicy) bool {
		return p != nil && p.Spec.OIDC != nil && (p.Spec.OIDC.AuthorizationEndpoint == nil || p.Spec.OIDC.TokenEndpoint == nil)
	}
	if !slices.ContainsFunc(res.SecurityPolicies, discovers) {
		return nil
	}
	t := newTranslator(res, Options{})
	seen := map[string]bool{}
	var out []OIDCDiscovery
	for _, p := range res.SecurityPolicies {
		if !discovers(p) {
			continue
		}
		o := p.Spec.OIDC
		d := OIDCDiscovery{Issuer: o.Issuer, CA: t.oidcCA(p.Namespace, o.CACertificateRefs)}
		if k := OIDCDiscoveryKey(d.Issuer, d.CA); !seen[k] {
			seen[k] = true
			out = append(out, d)
		}
	}
	slices.SortFunc(out, func(a, b OIDCDiscovery) int {
		return strings.Compare(OIDCDiscoveryKey(a.Issuer, a.CA), OIDCDiscoveryKey(b.Issuer, b.CA))
	})
	return out
}

// oidcCA is the PEM of the CA certificates refs name (in namespace ns),
// those that can be read, concatenated in order.
func (t *translator) oidcCA(ns string, refs []gwapiv1.LocalObjectReference) []byte {
	var out []byte
	for _, ref := range refs {
		if pem, p := t.caCertificates(ns, ref); p == nil {
			out = append(out, pem...)
		}
	}
	return out
}

// oidcOptionsKey writes what Options.OIDCProviders and SecretKey decide to
// the options key (optionsKey): a change translates everything again.
func oidcOptionsKey(b *strings.Builder, opts Options) {
	for _, k := range sortedKeys(opts.OIDCProviders) {
		fmt.Fprintf(b, "oidc %q %+v\n", k, opts.OIDCProviders[k])
	}
	if len(opts.SecretKey) > 0 {
		sum := sha256.Sum256(opts.SecretKey)
		fmt.Fprintf(b, "secretKey %x\n", sum[:8])
	}
}

// oidcHMACKey derives the 32-byte HMAC key of policy p's session cookies
// from the controller's key: HKDF-SHA256 (RFC 5869), info naming the use
// and the policy (namespace, name, uid). Every controller with the same
// key derives the same one, so every Envoy of a fleet accepts the
// cookies any of them set; another key (a rotated CA) means another HMAC
// key, and users log in again.
func oidcHMACKey(secretKey []byte, p *v1alpha1.SecurityPolicy) []byte {
	info := "xds-controller oidc hmac\x00" + p.Namespace + "\x00" + p.Name + "\x00" + string(p.UID)
	k, err := hkdf.Key(sha256.New, secretKey, nil, info, 32)
	if err != nil {
		panic(err) // 32 bytes of SHA-256 HKDF cannot fail
	}
	return k
}

// oidc validates spec.oidc and renders it: bad is a schema violation,
// refs a reference that cannot be used (the client secret's Secret, the
// CA references, the discovery document). Defaults: redirectPath
// /oauth2/callback, logoutPath /logout, scopes "openid" (always asked,
// first), refreshToken true. The endpoints are the spec's when set, the
// discovery document's (Options.OIDCProviders) otherwise; each must be
// https (the token endpoint receives the client secret).
func (t *translator) oidc(p *v1alpha1.SecurityPolicy, o *v1alpha1.OIDC) (out *ir.OIDC, bad, refs *problem) {
	invalid := func(format string, a ...any) (*ir.OIDC, *problem, *problem) {
		return nil, &problem{"", "oidc." + fmt.Sprintf(format, a...)}, nil
	}
	if msg := checkHTTPSURL(o.Issuer, true); msg != "" {
		return invalid("issuer %s", msg)
	}
	if n := len(o.ClientID); n == 0 || n > 253 || strings.ContainsFunc(o.ClientID, func(c rune) bool { return c < ' ' || c == 0x7f }) {
		return invalid("clientID is not 1-253 characters without control characters")
	}
	out = &ir.OIDC{
		Name:         p.Namespace + "/" + p.Name,
		ClientID:     o.ClientID,
		RedirectPath: cmp.Or(o.RedirectPath, defaultOIDCRedirectPath),
		LogoutPath:   cmp.Or(o.LogoutPath, defaultOIDCLogoutPath),
		Scopes:       []string{"openid"},
		CookieDomain: strings.ToLower(o.CookieDomain),
		RefreshToken: deref(o.RefreshToken, true),
	}
	for _, f := range []struct{ name, v string }{{"redirectPath", out.RedirectPath}, {"logoutPath", out.LogoutPath}} {
		if len(f.v) > 1024 || !strings.HasPrefix(f.v, "/") || strings.ContainsFunc(f.v, func(c rune) bool { return c <= ' ' || c == 0x7f || c == '?' || c == '#' }) {
			return invalid("%s %s is not a path of at most 1024 characters without whitespace, '?' or '#'", f.name, q(f.v))
		}
	}
	if out.RedirectPath == out.LogoutPath {
		return invalid("redirectPath and logoutPath are both %s; they must differ", q(out.RedirectPath))
	}
	if len(o.Scopes) > maxItems16 {
		return invalid("scopes: %d entries; at most %d", len(o.Scopes), maxItems16)
	}
	for _, s := range o.Scopes {
		if s == "" || strings.ContainsFunc(s, func(c rune) bool { return c <= ' ' || c >= 0x7f || c == '"' || c == '\\' }) {
			return invalid("scopes: %s is not a scope (RFC 6749 3.3: visible ASCII but '\"' and '\\')", q(s))
		}
		if !slices.Contains(out.Scopes, s) {
			out.Scopes = append(out.Scopes, s)
		}
	}
	if c := o.CookieNames; c != nil {
		for _, f := range []struct {
			name, v string
			to      *string
		}{{"accessToken", c.AccessToken, &out.AccessTokenCookie}, {"idToken", c.IDToken, &out.IDTokenCookie}} {
			if f.v == "" {
				continue
			}
			if len(f.v) > 64 || checkHeaderName(f.v) != "" {
				return invalid("cookieNames.%s %s is not a cookie name (an RFC 7230 token of at most 64 characters)", f.name, q(f.v))
			}
			*f.to = f.v
		}
	}
	if d := strings.TrimPrefix(out.CookieDomain, "."); out.CookieDomain != "" && checkPreciseHostname(d) != "" {
		return invalid("cookieDomain %s is not a host name", q(o.CookieDomain))
	}
	if h := o.ForwardIDTokenHeader; h != nil {
		if msg := checkHeaderName(string(*h)); msg != "" {
			return invalid("forwardIDTokenHeader %s", msg)
		}
		out.ForwardIDTokenHeader = strings.ToLower(string(*h))
	}
	if n := len(o.CACertificateRefs); n > 8 {
		return invalid("caCertificateRefs: %d entries; at most 8", n)
	}
	explicit := map[string]*string{"authorizationEndpoint": o.AuthorizationEndpoint, "tokenEndpoint": o.TokenEndpoint, "endSessionEndpoint": o.EndSessionEndpoint}
	for _, name := range sortedKeys(explicit) {
		if v := explicit[name]; v != nil {
			if msg := checkHTTPSURL(*v, false); msg != "" {
				return invalid("%s %s", name, msg)
			}
		}
	}
	if len(t.opts.SecretKey) == 0 {
		return invalid("issuer %s: this controller has no key to derive the session cookies' HMAC key from (Options.SecretKey)", q(o.Issuer))
	}
	out.HMACKey = oidcHMACKey(t.opts.SecretKey, p)

	// References: the client secret, then the endpoints.
	s, refs := t.policySecret(p, "oidc.clientSecret", o.ClientSecret)
	if refs != nil {
		return nil, nil, refs
	}
	secret := string(s.Data[oidcClientSecretKey])
	if secret == "" || len(secret) > 4096 || strings.ContainsFunc(secret, func(c rune) bool { return c < ' ' || c == 0x7f }) {
		return nil, nil, &problem{reasonInvalidSecret, fmt.Sprintf("oidc.clientSecret %s/%s: key %s is missing, empty, longer than 4096 bytes or holds a control character (a trailing newline?)", s.Namespace, s.Name, oidcClientSecretKey)}
	}
	out.ClientSecret = secret
	var found OIDCProvider
	if o.AuthorizationEndpoint == nil || o.TokenEndpoint == nil {
		key := OIDCDiscoveryKey(o.Issuer, t.oidcCA(p.Namespace, o.CACertificateRefs))
		d, ok := t.opts.OIDCProviders[key]
		switch {
		case !ok:
			return nil, nil, &problem{reasonDiscoveryFailed, fmt.Sprintf("oidc.issuer %s: its discovery document was not fetched (this translation has no discovery; set authorizationEndpoint and tokenEndpoint)", q(o.Issuer))}
		case d.Pending:
			return nil, nil, &problem{reasonDiscoveryPending, fmt.Sprintf("oidc.issuer %s: its discovery document is being fetched (the policy is translated again when it is there)", q(o.Issuer))}
		case d.Error != "":
			return nil, nil, &problem{reasonDiscoveryFailed, fmt.Sprintf("oidc.issuer %s: discovery failed: %s", q(o.Issuer), d.Error)}
		}
		found = d
	}
	out.AuthorizationEndpoint = deref(o.AuthorizationEndpoint, found.AuthorizationEndpoint)
	out.TokenEndpoint = deref(o.TokenEndpoint, found.TokenEndpoint)
	out.EndSessionEndpoint = deref(o.EndSessionEndpoint, found.EndSessionEndpoint)
	for _, e := range []struct{ name, v string }{{"authorization_endpoint", out.AuthorizationEndpoint}, {"token_endpoint", out.TokenEndpoint}, {"end_session_endpoint", out.EndSessionEndpoint}} {
		if e.v == "" && e.name == "end_session_endpoint" {
			continue
		}
		if msg := checkHTTPSURL(e.v, false); msg != "" {
			return nil, nil, &problem{reasonDiscoveryFailed, fmt.Sprintf("oidc.issuer %s: the discovery document's %s %s", q(o.Issuer), e.name, msg)}
		}
	}
	b, _, pr := t.externalURLBackend(p.Namespace, out.TokenEndpoint, o.CACertificateRefs)
	if pr != nil {
		if pr.reason == string(gwapiv1.PolicyReasonInvalid) {
			return nil, &problem{"", "oidc.tokenEndpoint " + pr.msg}, nil
		}
		return nil, nil, &problem{pr.reason, "oidc.caCertificateRefs: " + pr.msg}
	}
	out.TokenBackend = b
	return out, nil, nil
}

// checkHTTPSURL says what makes s not an absolute https URL of at most
// 2048 characters without user information, fragment or whitespace (an
// issuer also without a query: OpenID Connect Discovery 1.0 section 2),
// or "" when it is one.
func checkHTTPSURL(s string, issuer bool) string {
	u, err := url.Parse(s)
	switch {
	case len(s) > 2048 || err != nil || strings.ContainsFunc(s, func(c rune) bool { return c <= ' ' || c == 0x7f }):
		return fmt.Sprintf("%s is not a URL of at most 2048 characters without whitespace", q(s))
	case u.Scheme != "https" || u.Host == "" || u.Opaque != "":
		return fmt.Sprintf("%s is not an absolute https URL", q(s))
	case u.User != nil || u.Fragment != "":
		return fmt.Sprintf("%s has user information or a fragment", q(s))
	case issuer && u.RawQuery != "":
		return fmt.Sprintf("%s has a query", q(s))
	}
	return ""
}
