package ir

import "time"

// JWT is JSON Web Token authentication (Envoy's jwt_authn filter): a
// request must carry a token that one of Providers validates (any one is
// enough).
type JWT struct {
	// Name identifies the requirement in the listener: unique among the
	// JWT authentications of a snapshot, the policy's "namespace/name".
	Name string `json:"name"`
	// Providers are the trusted issuers, names distinct, at least one.
	Providers []JWTProvider `json:"providers"`
}

// JWTProvider is one trusted token issuer.
type JWTProvider struct {
	// Name is the provider's name in its policy: the key of its payload in
	// the jwt_authn dynamic metadata, which authorization rules read.
	Name string `json:"name"`
	// Issuer, when set, must equal the token's iss.
	Issuer string `json:"issuer,omitempty"`
	// Audiences, when set, are the aud values accepted (one is enough).
	Audiences []string `json:"audiences,omitempty"`
	// LocalJWKS is a JWK Set (JSON, public keys only, validated), or
	// empty when RemoteJWKS is set.
	LocalJWKS string `json:"localJWKS,omitempty"`
	// RemoteJWKS is a JWKS Envoy fetches, or nil when LocalJWKS is set.
	RemoteJWKS *RemoteJWKS `json:"remoteJWKS,omitempty"`
	// Headers, QueryParams and Cookies are where the token is read from;
	// all empty reads "Authorization: Bearer <token>".
	Headers     []JWTHeader `json:"headers,omitempty"`
	QueryParams []string    `json:"queryParams,omitempty"`
	Cookies     []string    `json:"cookies,omitempty"`
	// ClaimToHeaders copy claims (dot-separated paths) into request
	// headers (lower-case names); a client's own value is removed first.
	ClaimToHeaders []ClaimToHeader `json:"claimToHeaders,omitempty"`
	// RequiredClaims and RequiredScopes are what a token this provider
	// validated must hold, checked by the route's authorization (403).
	RequiredClaims   []Claim  `json:"requiredClaims,omitempty"`
	RequiredScopes   []string `json:"requiredScopes,omitempty"`
	ClockSkewSeconds uint32   `json:"clockSkewSeconds"`
	// Forward keeps the token in the request forwarded.
	Forward bool `json:"forward,omitempty"`
}

// RemoteJWKS is a JWKS that Envoy fetches and caches.
type RemoteJWKS struct {
	// URI is the absolute https URL, its host and port explicit.
	URI string `json:"uri"`
	// Backend is the cluster the JWKS is fetched through (a valid
	// external URL backend, TLS verified).
	Backend *Backend `json:"backend"`
	// CacheDuration is how long a fetched JWKS is used.
	CacheDuration time.Duration `json:"cacheDuration"`
}

// JWTHeader is a request header a token is read from, after ValuePrefix.
type JWTHeader struct {
	Name        string `json:"name"`
	ValuePrefix string `json:"valuePrefix,omitempty"`
}

// ClaimToHeader copies a claim into a request header.
type ClaimToHeader struct {
	Header string `json:"header"`
	Claim  string `json:"claim"`
}

// Claim is a claim (a dot-separated path into the token's payload) and
// the values accepted: the claim is one of them, or a list holding one.
type Claim struct {
	Name   string   `json:"name"`
	Values []string `json:"values"`
}

// Authorization is an ordered list of rules: the first rule that matches
// decides, DefaultAllow when none does. RequireJWT, when set, is checked
// first: a request whose token does not hold the claims of its JWT
// provider is denied whatever the rules say.
type Authorization struct {
	Rules        []AuthorizationRule `json:"rules,omitempty"`
	DefaultAllow bool                `json:"defaultAllow"`
	// RequireJWT are the requirements of the route's JWT providers
	// (JWTProvider RequiredClaims, RequiredScopes), one per provider:
	// one of them must match (the provider that validated the token).
	RequireJWT []JWTMatch `json:"requireJWT,omitempty"`
}

// AuthorizationRule matches when every condition set holds (an empty
// rule matches every request).
type AuthorizationRule struct {
	Name  string `json:"name,omitempty"`
	Allow bool   `json:"allow"`
	// ClientCIDRs: the client address (as the connection manager sees
	// it) is in one of them (canonical prefixes).
	ClientCIDRs []string `json:"clientCIDRs,omitempty"`
	// JWT: the token provider JWT.Provider validated has the claims and
	// scopes.
	JWT *JWTMatch `json:"jwt,omitempty"`
	// Headers must all match (Exact or RegularExpression; names
	// lower-case).
	Headers []StringMatch `json:"headers,omitempty"`
	// Methods: the request's is one of them.
	Methods []string `json:"methods,omitempty"`
	// Paths: the request's path (without the query) matches one of them
	// (Exact, PathPrefix, RegularExpression).
	Paths []StringMatch `json:"paths,omitempty"`
}

// JWTMatch matches the payload a JWT provider validated.
type JWTMatch struct {
	Provider string   `json:"provider"`
	Claims   []Claim  `json:"claims,omitempty"`
	Scopes   []string `json:"scopes,omitempty"`
}
