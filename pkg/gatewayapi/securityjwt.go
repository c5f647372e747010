package gatewayapi

// SecurityPolicy jwt: validation of spec.jwt and its IR (ir.JWT on every
// route the policy covers). The JWKS of a provider is read from a Secret
// or ConfigMap and checked here with go-jose (a key set Envoy could not
// use never reaches it: the policy is ResolvedRefs=False and its routes
// answer 500), or fetched by Envoy from an https URL through the cluster
// externalURLBackend makes (TLS verified). docs/security-policy.md is the
// user's view; pkg/xdstranslator/jwt.go renders it.

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"k8s.io/apimachinery/pkg/util/validation"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
	"github.com/xds-controller/xds-controller/pkg/ir"
)

const (
	// defaultJWKSKey is the key of a localJWKS Secret or ConfigMap that
	// holds the JWKS when localJWKS.key is not set.
	defaultJWKSKey = "jwks.json"
	// defaultJWKSCache is remoteJWKS.cacheDuration's default.
	defaultJWKSCache = 5 * time.Minute
	// defaultClockSkew is clockSkewSeconds' default (Envoy's own).
	defaultClockSkew = 60
	// reasonConfigMapNotFound and reasonInvalidJWKS are ResolvedRefs=False
	// reasons of a localJWKS that cannot be used.
	reasonConfigMapNotFound = "ConfigMapNotFound"
	reasonInvalidJWKS       = "InvalidJWKS"
)

// jwt validates spec.jwt of policy p and returns its IR, named after the
// policy ("namespace/name", unique in a snapshot). bad is a schema
// violation (Invalid), refs a JWKS or CA reference that cannot be used
// (ResolvedRefs=False): a Secret or ConfigMap missing, without the key,
// or whose JWKS go-jose cannot read as a set of public keys, or CA
// references of a remoteJWKS that cannot be used. A remoteJWKS URL that
// externalURLBackend refuses is Invalid.
func (t *translator) jwt(p *v1alpha1.SecurityPolicy, j *v1alpha1.JWT) (out *ir.JWT, bad, refs *problem) {
	invalid := func(format string, a ...any) (*ir.JWT, *problem, *problem) {
		return nil, &problem{"", fmt.Sprintf(format, a...)}, nil
	}
	if n := len(j.Providers); n < 1 || n > 4 {
		return invalid("jwt.providers: %d entries; 1 to 4 are required", n)
	}
	out = &ir.JWT{Name: p.Namespace + "/" + p.Name}
	for i, pr := range j.Providers {
		field := fmt.Sprintf("jwt.providers[%d]", i)
		if len(validation.IsDNS1123Label(pr.Name)) > 0 {
			return invalid("%s.name %s is not a DNS label (lower-case letters, digits and '-', at most 63)", field, q(pr.Name))
		}
		if slices.ContainsFunc(j.Providers[:i], func(o v1alpha1.JWTProvider) bool { return o.Name == pr.Name }) {
			return invalid("%s.name %s is given twice", field, q(pr.Name))
		}
		o, bad, refs := t.jwtProvider(p, field, &pr)
		if bad != nil || refs != nil {
			return nil, bad, refs
		}
		out.Providers = append(out.Providers, *o)
	}
	return out, nil, nil
}

// jwtProvider validates one provider (field names it in messages).
func (t *translator) jwtProvider(p *v1alpha1.SecurityPolicy, field string, pr *v1alpha1.JWTProvider) (out *ir.JWTProvider, bad, refs *problem) {
	invalid := func(format string, a ...any) (*ir.JWTProvider, *problem, *problem) {
		return nil, &problem{"", field + fmt.Sprintf(format, a...)}, nil
	}
	out = &ir.JWTProvider{Name: pr.Name, Issuer: pr.Issuer, ClockSkewSeconds: defaultClockSkew, Forward: pr.ForwardToken}
	if msg := checkFieldValue(pr.Issuer, 253); pr.Issuer != "" && msg != "" {
		return invalid(".issuer %s", msg)
	}
	if len(pr.Audiences) > maxItems16 {
		return invalid(".audiences: at most %d", maxItems16)
	}
	for _, a := range pr.Audiences {
		if a == "" || checkFieldValue(a, 253) != "" {
			return invalid(".audiences: %s is empty, too long or holds a control character", q(a))
		}
		if !slices.Contains(out.Audiences, a) {
			out.Audiences = append(out.Audiences, a)
		}
	}
	if s := pr.ClockSkewSeconds; s != nil {
		if *s < 0 || *s > 600 {
			return invalid(".clockSkewSeconds %d is outside 0-600", *s)
		}
		out.ClockSkewSeconds = uint32(*s)
	}
	if (pr.RemoteJWKS == nil) == (pr.LocalJWKS == nil) {
		return invalid(": exactly one of remoteJWKS and localJWKS is required")
	}
	if e := pr.ExtractFrom; e != nil {
		if len(e.Headers) > 8 || len(e.QueryParameters) > 8 || len(e.Cookies) > 8 {
			return invalid(".extractFrom: at most 8 headers, 8 query parameters and 8 cookies")
		}
		for _, h := range e.Headers {
			if msg := checkHeaderName(string(h.Name)); msg != "" {
				return invalid(".extractFrom.headers: %s", msg)
			}
			if h.ValuePrefix != "" && checkFieldValue(h.ValuePrefix, 64) != "" {
				return invalid(".extractFrom.headers %s: the value prefix is longer than 64 or holds a control character", string(h.Name))
			}
			out.Headers = append(out.Headers, ir.JWTHeader{Name: strings.ToLower(string(h.Name)), ValuePrefix: h.ValuePrefix})
		}
		for _, names := range []struct {
			what string
			in   []string
			to   *[]string
		}{{"queryParameters", e.QueryParameters, &out.QueryParams}, {"cookies", e.Cookies, &out.Cookies}} {
			for _, n := range names.in {
				if msg := checkHeaderName(n); msg != "" {
					return invalid(".extractFrom.%s: %s %s", names.what, q(n), msg)
				}
				*names.to = append(*names.to, n)
			}
		}
	}
	if len(pr.ClaimToHeaders) > maxItems16 {
		return invalid(".claimToHeaders: at most %d", maxItems16)
	}
	for _, c := range pr.ClaimToHeaders {
		if msg := checkHeaderName(string(c.Header)); msg != "" {
			return invalid(".claimToHeaders.header %s", msg)
		}
		if msg := checkClaimName(c.Claim); msg != "" {
			return invalid(".claimToHeaders.claim %s", msg)
		}
		out.ClaimToHeaders = append(out.ClaimToHeaders, ir.ClaimToHeader{Header: strings.ToLower(string(c.Header)), Claim: c.Claim})
	}
	claims, msg := jwtClaims(pr.RequiredClaims)
	if msg != "" {
		return invalid(".requiredClaims%s", msg)
	}
	out.RequiredClaims = claims
	if msg := checkScopes(pr.RequiredScopes); msg != "" {
		return invalid(".requiredScopes%s", msg)
	}
	out.RequiredScopes = slices.Clone(pr.RequiredScopes)
	if l := pr.LocalJWKS; l != nil {
		jwks, bad, refs := t.localJWKS(p, field+".localJWKS", l)
		if bad != nil || refs != nil {
			return nil, bad, refs
		}
		out.LocalJWKS = jwks
		return out, nil, nil
	}
	r := pr.RemoteJWKS
	if !strings.HasPrefix(r.URI, "https://") || len(r.URI) > 2048 {
		return invalid(".remoteJWKS.uri %s is not an https:// URL of at most 2048 characters", q(r.URI))
	}
	if len(r.CACertificateRefs) > 8 {
		return invalid(".remoteJWKS.caCertificateRefs: at most 8")
	}
	cache := defaultJWKSCache
	if d := r.CacheDuration; d != nil {
		var msg string
		if cache, msg = checkDuration(string(*d)); msg != "" {
			return invalid(".remoteJWKS.cacheDuration %s %s", q(string(*d)), msg)
		}
		if cache < time.Second {
			return invalid(".remoteJWKS.cacheDuration %s is shorter than 1s", q(string(*d)))
		}
	}
	b, u, prob := t.externalURLBackend(p.Namespace, r.URI, r.CACertificateRefs)
	switch {
	case prob != nil && prob.reason == string(gwapiv1.PolicyReasonInvalid):
		return invalid(".remoteJWKS: %s", prob.msg) // the URL itself
	case prob != nil:
		return nil, nil, &problem{prob.reason, field + ".remoteJWKS: " + prob.msg} // its CA references
	}
	out.RemoteJWKS = &ir.RemoteJWKS{URI: u.String(), Backend: b, CacheDuration: cache}
	return out, nil, nil
}

// localJWKS reads the JWKS of l, in p's namespace: the entry l.Key
// (default "jwks.json") of a Secret (data) or ConfigMap (data, then
// binaryData; a Secret as policySecret reads it), which go-jose must
// read as a JWK Set (RFC 7517 section 5) of 1 to 64 valid public keys. The JWKS returned is go-jose's encoding
// of those keys (private or symmetric keys are refused, never copied).
func (t *translator) localJWKS(p *v1alpha1.SecurityPolicy, field string, l *v1alpha1.LocalJWKS) (jwks string, bad, refs *problem) {
	key := cmp.Or(l.Key, defaultJWKSKey)
	if len(key) > 253 {
		return "", &problem{"", field + ".key is longer than 253 characters"}, nil
	}
	name := fmt.Sprintf("%s %s %s/%s", field, l.Kind, p.Namespace, l.Name)
	var data []byte
	var found bool
	switch l.Kind {
	case "Secret":
		// The one way a policy reads a Secret (its type checked there).
		s, refs := t.policySecret(p, field, gwapiv1.SecretObjectReference{Name: l.Name})
		if refs != nil {
			return "", nil, refs
		}
		data, found = s.Data[key]
	case "ConfigMap":
		c := t.configMaps[nn(p.Namespace, string(l.Name))]
		if c == nil {
			return "", nil, &problem{reasonConfigMapNotFound, name + ": ConfigMap not found"}
		}
		var s string
		if s, found = c.Data[key]; found {
			data = []byte(s)
		} else {
			data, found = c.BinaryData[key]
		}
	default:
		return "", &problem{"", fmt.Sprintf("%s.kind %s is not Secret or ConfigMap", field, q(l.Kind))}, nil
	}
	if !found {
		return "", nil, &problem{reasonInvalidJWKS, fmt.Sprintf("%s: no key %s", name, q(key))}
	}
	out, msg := parseJWKS(data)
	if msg != "" {
		return "", nil, &problem{reasonInvalidJWKS, fmt.Sprintf("%s key %s: %s", name, q(key), msg)}
	}
	return out, nil, nil
}

// parseJWKS reads data as a JWK Set with go-jose and returns the set
// re-encoded by go-jose, or why it cannot be used: not a JWK Set, no
// keys or more than 64, a key that is not a valid public key (a private
// or symmetric key is refused: a JWKS is published, never secret).
func parseJWKS(data []byte) (string, string) {
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(data, &set); err != nil {
		return "", "not a JWK Set: " + err.Error()
	}
	if n := len(set.Keys); n == 0 || n > 64 {
		return "", fmt.Sprintf("the JWK Set has %d keys; 1 to 64 are required", n)
	}
	for i, k := range set.Keys {
		if !k.IsPublic() || !k.Valid() {
			return "", fmt.Sprintf("key %d (kid %s) is not a valid public key (private and symmetric keys are refused)", i, q(k.KeyID))
		}
	}
	out, err := json.Marshal(set)
	if err != nil {
		return "", "the JWK Set cannot be encoded: " + err.Error()
	}
	return string(out), ""
}

// checkClaimName checks a claim name: 1 to 253 characters, its
// dot-separated segments (nested claims) not empty, no control
// characters.
func checkClaimName(c string) string {
	if c == "" || len(c) > 253 || slices.Contains(strings.Split(c, "."), "") || checkFieldValue(c, 253) != "" {
		return q(c) + " is not 1-253 characters of non-empty dot-separated segments without control characters"
	}
	return ""
}

// jwtClaims validates claim matches (requiredClaims, an authorization
// rule's jwt.claims): at most 16, each a claim name and 1 to 16 values.
// The message starts with what is wrong where (": ..." or "[i]...").
func jwtClaims(cs []v1alpha1.JWTClaim) ([]ir.Claim, string) {
	if len(cs) > maxItems16 {
		return nil, fmt.Sprintf(": at most %d", maxItems16)
	}
	var out []ir.Claim
	for i, c := range cs {
		if msg := checkClaimName(c.Name); msg != "" {
			return nil, fmt.Sprintf("[%d].name %s", i, msg)
		}
		if n := len(c.Values); n < 1 || n > maxItems16 {
			return nil, fmt.Sprintf("[%d].values: %d entries; 1 to %d are required", i, n, maxItems16)
		}
		for _, v := range c.Values {
			if msg := checkFieldValue(v, 4096); msg != "" {
				return nil, fmt.Sprintf("[%d].values: %s %s", i, q(v), msg)
			}
		}
		out = append(out, ir.Claim{Name: c.Name, Values: slices.Clone(c.Values)})
	}
	return out, ""
}

// checkScopes checks scopes: at most 16, each 1 to 253 visible ASCII
// characters (RFC 6749 section 3.3: no spaces).
func checkScopes(ss []string) string {
	if len(ss) > maxItems16 {
		return fmt.Sprintf(": at most %d", maxItems16)
	}
	for _, s := range ss {
		if s == "" || len(s) > 253 || strings.ContainsFunc(s, func(c rune) bool { return c <= ' ' || c >= 0x7f || c == '"' || c == '\\' }) {
			return fmt.Sprintf(": %s is not 1-253 visible ASCII characters without '\"' or '\\'", q(s))
		}
	}
	return ""
}

// jwtRequirements are the requirements (requiredClaims, requiredScopes)
// of j's providers for the route's authorization, one per provider, or
// nil when no provider has any: a token of any provider is enough, so
// the one that validated it must have its own requirements met.
func jwtRequirements(j *ir.JWT) []ir.JWTMatch {
	var out []ir.JWTMatch
	need := false
	for _, pr := range j.Providers {
		out = append(out, ir.JWTMatch{Provider: pr.Name, Claims: pr.RequiredClaims, Scopes: pr.RequiredScopes})
		need = need || len(pr.RequiredClaims) > 0 || len(pr.RequiredScopes) > 0
	}
	if !need {
		return nil
	}
	return out
}
