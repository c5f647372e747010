package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// SecurityPolicyKind is the kind of SecurityPolicy.
const SecurityPolicyKind = "SecurityPolicy"

// SecurityPolicySpec is how the requests of the routes a SecurityPolicy
// covers are authenticated and authorized at the gateway, before they are
// forwarded. Every method set must pass (they are ANDed): a policy with
// basicAuth and apiKeyAuth asks for both. docs/security-policy.md is the
// user's guide; a policy that cannot be honoured is Accepted=False and
// the routes it covers answer 500 (never open).
//
// +kubebuilder:validation:XValidation:rule="has(self.jwt) || has(self.oidc) || has(self.basicAuth) || has(self.apiKeyAuth) || has(self.authorization) || has(self.extAuth)",message="at least one of jwt, oidc, basicAuth, apiKeyAuth, authorization and extAuth is required"
type SecurityPolicySpec struct {
	// TargetRefs are the objects, in the policy's namespace, whose
	// requests the policy covers (GEP-713): a Gateway or a ListenerSet
	// (sectionName: one listener of it), an HTTPRoute or a GRPCRoute
	// (sectionName: one named rule of it). The most specific policy
	// applies to a route rule: rule over route over listener over
	// ListenerSet over Gateway; of two on the same target the older wins
	// and the other is Accepted=False reason Conflicted.
	//
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="self.all(r, r.group == 'gateway.networking.k8s.io' && r.kind in ['Gateway', 'ListenerSet', 'HTTPRoute', 'GRPCRoute'])",message="targetRefs must be Gateways, ListenerSets, HTTPRoutes or GRPCRoutes of gateway.networking.k8s.io"
	// +kubebuilder:validation:XValidation:rule="self.all(r1, self.exists_one(r2, r1.group == r2.group && r1.kind == r2.kind && r1.name == r2.name && (has(r1.sectionName) ? has(r2.sectionName) && r1.sectionName == r2.sectionName : !has(r2.sectionName))))",message="targetRefs must be distinct"
	TargetRefs []gwapiv1.LocalPolicyTargetReferenceWithSectionName `json:"targetRefs"`

	// JWT validates JSON Web Tokens (Envoy's jwt_authn HTTP filter,
	// envoy.extensions.filters.http.jwt_authn.v3.JwtAuthentication).
	// +optional
	JWT *JWT `json:"jwt,omitempty"`

	// OIDC logs browsers in with an OpenID Connect provider (Envoy's
	// OAuth2 HTTP filter, envoy.extensions.filters.http.oauth2.v3.OAuth2).
	// +optional
	OIDC *OIDC `json:"oidc,omitempty"`

	// BasicAuth asks for a user name and password (HTTP Basic, RFC 7617)
	// checked against an htpasswd Secret (Envoy's basic_auth HTTP filter,
	// envoy.extensions.filters.http.basic_auth.v3.BasicAuth).
	// +optional
	BasicAuth *BasicAuth `json:"basicAuth,omitempty"`

	// APIKeyAuth asks for an API key, from a header, a query parameter or
	// a cookie, checked against keys held in Secrets (Envoy's
	// api_key_auth HTTP filter,
	// envoy.extensions.filters.http.api_key_auth.v3.ApiKeyAuth).
	// +optional
	APIKeyAuth *APIKeyAuth `json:"apiKeyAuth,omitempty"`

	// Authorization allows or denies requests by client address, JWT
	// claim, header, method and path (Envoy's RBAC HTTP filter,
	// envoy.extensions.filters.http.rbac.v3.RBAC), after every
	// authentication method.
	// +optional
	Authorization *Authorization `json:"authorization,omitempty"`

	// ExtAuth asks an external authorization service about every request,
	// as the Gateway API's HTTPRoute ExternalAuth filter does (the same
	// type and the same rendering: Envoy's ext_authz HTTP filter, fail
	// closed), at any attachment level. A rule with its own ExternalAuth
	// filter asks both, this one first: a request must pass both.
	// +optional
	ExtAuth *gwapiv1.HTTPExternalAuthFilter `json:"extAuth,omitempty"`
}

// BasicAuth is HTTP Basic authentication against an htpasswd file.
type BasicAuth struct {
	// Users names the Secret holding the users, in ingress-nginx's format
	// (auth-type: basic, auth-secret-type: auth-file): its key "auth" is an
	// htpasswd file, one "user:{SHA}hash" line per user (htpasswd -s;
	// Envoy's basic_auth accepts SHA-1 hashes only: bcrypt, MD5 (apr1),
	// crypt and plain-text lines make the policy ResolvedRefs=False). It
	// becomes the per-route BasicAuthPerRoute users. A Secret in another
	// namespace needs a ReferenceGrant from SecurityPolicies of this one.
	Users gwapiv1.SecretObjectReference `json:"users"`

	// Realm is the realm of the WWW-Authenticate challenge sent with a
	// 401 (BasicAuthPerRoute realm). Default: the policy's namespace and
	// name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^[^\x00-\x1f\x7f"\\]+$`
	// +optional
	Realm *string `json:"realm,omitempty"`

	// ForwardUsernameHeader, when set, is the request header in which the
	// authenticated user's name is sent to the backend (BasicAuth
	// forward_username_header; a client's own value is replaced). The
	// Authorization header itself is always forwarded as the client sent
	// it.
	// +optional
	ForwardUsernameHeader *gwapiv1.HTTPHeaderName `json:"forwardUsernameHeader,omitempty"`
}

// APIKeyAuth is authentication by an API key.
type APIKeyAuth struct {
	// CredentialRefs name the Secrets holding the keys: each data entry of
	// a Secret is one client, its key the client id and its value the API
	// key (ApiKeyAuthPerRoute credentials: client and key). A key may not
	// be given to two clients. Secrets in another namespace need a
	// ReferenceGrant from SecurityPolicies of this one.
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	CredentialRefs []gwapiv1.SecretObjectReference `json:"credentialRefs"`

	// ExtractFrom are where the key is read from, the first found wins
	// (ApiKeyAuthPerRoute key_sources). The key is removed from the request
	// before it is forwarded (Forwarding hide_credentials), whatever its
	// source. A header value "Bearer <key>" gives <key>.
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	ExtractFrom []APIKeySource `json:"extractFrom"`

	// ForwardClientIDHeader, when set, is the request header in which the
	// client id of the matched key is sent to the backend (Forwarding
	// header; a client's own value is replaced).
	// +optional
	ForwardClientIDHeader *gwapiv1.HTTPHeaderName `json:"forwardClientIDHeader,omitempty"`
}

// APIKeySource is one place an API key is read from (Envoy KeySource):
// exactly one of header, queryParameter and cookie.
//
// +kubebuilder:validation:XValidation:rule="(has(self.header) ? 1 : 0) + (has(self.queryParameter) ? 1 : 0) + (has(self.cookie) ? 1 : 0) == 1",message="exactly one of header, queryParameter and cookie is required"
type APIKeySource struct {
	// Header is a request header name (KeySource header).
	// +optional
	Header *gwapiv1.HTTPHeaderName `json:"header,omitempty"`
	// QueryParameter is a query parameter name (KeySource query).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9!#$%&'*+\-.^_\x60|~]+$`
	// +optional
	QueryParameter *string `json:"queryParameter,omitempty"`
	// Cookie is a cookie name (KeySource cookie).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9!#$%&'*+\-.^_\x60|~]+$`
	// +optional
	Cookie *string `json:"cookie,omitempty"`
}

// JWT is the validation of JSON Web Tokens: a request must carry a token
// that one of the providers validates.
type JWT struct {
	// Providers are the token issuers trusted (JwtAuthentication
	// providers, required as requires_any).
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=4
	Providers []JWTProvider `json:"providers"`
}

// JWTProvider is one trusted token issuer (Envoy JwtProvider).
//
// +kubebuilder:validation:XValidation:rule="has(self.remoteJWKS) != has(self.localJWKS)",message="exactly one of remoteJWKS and localJWKS is required"
type JWTProvider struct {
	// Name identifies the provider in the policy (and in authorization
	// rules' jwt principals).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`
	// Issuer, when set, must equal the token's iss claim (JwtProvider
	// issuer).
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Issuer string `json:"issuer,omitempty"`
	// Audiences, when set, are the aud values accepted: the token must
	// have one of them (JwtProvider audiences).
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Audiences []string `json:"audiences,omitempty"`
	// RemoteJWKS is a JWKS that Envoy fetches (JwtProvider remote_jwks).
	// +optional
	RemoteJWKS *RemoteJWKS `json:"remoteJWKS,omitempty"`
	// LocalJWKS is a JWKS held in a Secret or ConfigMap (JwtProvider
	// local_jwks).
	// +optional
	LocalJWKS *LocalJWKS `json:"localJWKS,omitempty"`
	// ExtractFrom is where the token is read from (JwtProvider
	// from_headers, from_params, from_cookies). Default: the
	// Authorization header, "Bearer <token>".
	// +optional
	ExtractFrom *JWTExtractFrom `json:"extractFrom,omitempty"`
	// ClaimToHeaders copy claims into request headers (JwtProvider
	// claim_to_headers).
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +optional
	ClaimToHeaders []ClaimToHeader `json:"claimToHeaders,omitempty"`
	// RequiredClaims are claims the token must have, each with one of the
	// values listed (a JwtRequirement with claim checks).
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +optional
	RequiredClaims []JWTClaim `json:"requiredClaims,omitempty"`
	// RequiredScopes are scopes the token's scope (or scp) claim must
	// all hold.
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +optional
	RequiredScopes []string `json:"requiredScopes,omitempty"`
	// ClockSkewSeconds is the skew allowed on exp and nbf (JwtProvider
	// clock_skew_seconds). Default 60.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=600
	// +optional
	ClockSkewSeconds *int32 `json:"clockSkewSeconds,omitempty"`
	// ForwardToken keeps the token in the request forwarded (JwtProvider
	// forward). Default false: it is removed.
	// +optional
	ForwardToken bool `json:"forwardToken,omitempty"`
}

// RemoteJWKS is a JWKS fetched by Envoy over HTTPS, the server's
// certificate verified (its own cluster).
type RemoteJWKS struct {
	// URI is the https:// URL of the JWKS (HttpUri uri).
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https://[^\s]+$`
	URI string `json:"uri"`
	// CacheDuration is how long a fetched JWKS is used (RemoteJwks
	// cache_duration). Default 5m.
	// +optional
	CacheDuration *gwapiv1.Duration `json:"cacheDuration,omitempty"`
	// CACertificateRefs are the CA certificates the JWKS server's
	// certificate is verified against, as BackendTLSPolicy's: ConfigMaps
	// (key "ca.crt") in the policy's namespace or ClusterTrustBundles.
	// Default: the system trust store.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	// +optional
	CACertificateRefs []gwapiv1.LocalObjectReference `json:"caCertificateRefs,omitempty"`
}

// LocalJWKS is a JWKS held in the cluster.
type LocalJWKS struct {
	// Kind is Secret or ConfigMap (core).
	// +kubebuilder:validation:Enum=Secret;ConfigMap
	Kind string `json:"kind"`
	// Name of the Secret or ConfigMap, in the policy's namespace.
	Name gwapiv1.ObjectName `json:"name"`
	// Key of the entry holding the JWKS (JSON). Default "jwks.json".
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Key string `json:"key,omitempty"`
}

// JWTExtractFrom is where a token is read from.
type JWTExtractFrom struct {
	// Headers are request headers, each with an optional value prefix
	// (JwtHeader name, value_prefix).
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	// +optional
	Headers []JWTHeader `json:"headers,omitempty"`
	// QueryParameters are query parameter names (from_params).
	// +listType=set
	// +kubebuilder:validation:MaxItems=8
	// +optional
	QueryParameters []string `json:"queryParameters,omitempty"`
	// Cookies are cookie names (from_cookies).
	// +listType=set
	// +kubebuilder:validation:MaxItems=8
	// +optional
	Cookies []string `json:"cookies,omitempty"`
}

// JWTHeader is a header a token is read from.
type JWTHeader struct {
	Name gwapiv1.HTTPHeaderName `json:"name"`
	// ValuePrefix precedes the token in the value ("Bearer ").
	// +kubebuilder:validation:MaxLength=64
	// +optional
	ValuePrefix string `json:"valuePrefix,omitempty"`
}

// ClaimToHeader copies a claim into a request header.
type ClaimToHeader struct {
	Header gwapiv1.HTTPHeaderName `json:"header"`
	// Claim is the claim's name; nested claims are dot-separated.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Claim string `json:"claim"`
}

// JWTClaim is a claim and the values accepted for it.
type JWTClaim struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	Values []string `json:"values"`
}

// OIDC is an OpenID Connect login (authorization code flow) by Envoy's
// OAuth2 filter.
type OIDC struct {
	// Issuer is the provider's https:// issuer URL; its
	// /.well-known/openid-configuration gives the endpoints.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https://[^\s]+$`
	Issuer string `json:"issuer"`
	// ClientID is the client's id at the provider (OAuth2Credentials
	// client_id).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	ClientID string `json:"clientID"`
	// ClientSecret names the Secret whose key "client-secret" holds the
	// client's secret (OAuth2Credentials token_secret).
	ClientSecret gwapiv1.SecretObjectReference `json:"clientSecret"`
	// RedirectPath is the path of the callback the provider redirects to
	// (OAuth2Config redirect_path_matcher). Default /oauth2/callback.
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^/[^\s?#]*$`
	// +optional
	RedirectPath string `json:"redirectPath,omitempty"`
	// LogoutPath is the path that clears the session (OAuth2Config
	// signout_path). Default /logout.
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^/[^\s?#]*$`
	// +optional
	LogoutPath string `json:"logoutPath,omitempty"`
	// Scopes asked for (auth_scopes); "openid" is always asked.
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Scopes []string `json:"scopes,omitempty"`
	// CookieNames are the names of the session cookies (OAuth2Credentials
	// cookie_names).
	// +optional
	CookieNames *OIDCCookieNames `json:"cookieNames,omitempty"`
	// CookieDomain is the Domain of the session cookies (cookie_domain).
	// +kubebuilder:validation:MaxLength=253
	// +optional
	CookieDomain string `json:"cookieDomain,omitempty"`
	// ForwardIDTokenHeader, when set, is the request header the ID token
	// is sent to the backend in.
	// +optional
	ForwardIDTokenHeader *gwapiv1.HTTPHeaderName `json:"forwardIDTokenHeader,omitempty"`
	// RefreshToken uses the refresh token to renew an expired access token
	// (use_refresh_token). Default true.
	// +optional
	RefreshToken *bool `json:"refreshToken,omitempty"`
	// AuthorizationEndpoint overrides the discovery document's
	// authorization_endpoint (OAuth2Config authorization_endpoint): the
	// URL browsers are sent to to log in. When it and TokenEndpoint are
	// both set, the issuer's discovery document is not fetched.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https://[^\s]+$`
	// +optional
	AuthorizationEndpoint *string `json:"authorizationEndpoint,omitempty"`
	// TokenEndpoint overrides the discovery document's token_endpoint
	// (OAuth2Config token_endpoint): the URL Envoy exchanges codes and
	// refresh tokens at, with the client secret.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https://[^\s]+$`
	// +optional
	TokenEndpoint *string `json:"tokenEndpoint,omitempty"`
	// EndSessionEndpoint overrides the discovery document's
	// end_session_endpoint (OAuth2Config end_session_endpoint): where a
	// browser that logs out is sent (OpenID RP-initiated logout). Without
	// one, logging out clears the cookies and goes to "/".
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https://[^\s]+$`
	// +optional
	EndSessionEndpoint *string `json:"endSessionEndpoint,omitempty"`
	// CACertificateRefs are the CA certificates the provider's certificate
	// is verified with, for the discovery document and the token endpoint
	// (BackendTLSPolicy's shape: ConfigMaps with key "ca.crt" in the
	// policy's namespace, or ClusterTrustBundles). Default: the system
	// trust store.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	// +optional
	CACertificateRefs []gwapiv1.LocalObjectReference `json:"caCertificateRefs,omitempty"`
}

// OIDCCookieNames are the OAuth2 filter's cookie names.
type OIDCCookieNames struct {
	// +kubebuilder:validation:MaxLength=64
	// +optional
	AccessToken string `json:"accessToken,omitempty"`
	// +kubebuilder:validation:MaxLength=64
	// +optional
	IDToken string `json:"idToken,omitempty"`
}

// AuthorizationAction is what a rule does.
// +kubebuilder:validation:Enum=Allow;Deny
type AuthorizationAction string

// Authorization actions.
const (
	AuthorizationAllow AuthorizationAction = "Allow"
	AuthorizationDeny  AuthorizationAction = "Deny"
)

// Authorization is a list of rules: the first that matches decides, and
// when none does, defaultAction.
type Authorization struct {
	// DefaultAction is the action when no rule matches. Default Deny.
	// +optional
	DefaultAction *AuthorizationAction `json:"defaultAction,omitempty"`
	// Rules, in order.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Rules []AuthorizationRule `json:"rules,omitempty"`
}

// AuthorizationRule matches when every condition set holds.
type AuthorizationRule struct {
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Name   string              `json:"name,omitempty"`
	Action AuthorizationAction `json:"action"`
	// ClientCIDRs are client address ranges, the client as Envoy sees it
	// (the peer, or the X-Forwarded-For hop the listener trusts; RBAC
	// remote_ip).
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +optional
	ClientCIDRs []string `json:"clientCIDRs,omitempty"`
	// JWT matches claims of the token a provider of spec.jwt validated.
	// +optional
	JWT *JWTPrincipal `json:"jwt,omitempty"`
	// Headers must all match (RBAC header).
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Headers []gwapiv1.HTTPHeaderMatch `json:"headers,omitempty"`
	// Methods: the request's is one of them.
	// +listType=set
	// +kubebuilder:validation:MaxItems=9
	// +optional
	Methods []gwapiv1.HTTPMethod `json:"methods,omitempty"`
	// Paths: the request's path matches one of them.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Paths []gwapiv1.HTTPPathMatch `json:"paths,omitempty"`
}

// JWTPrincipal matches a validated token's claims.
type JWTPrincipal struct {
	// Provider is the name of a provider of spec.jwt.
	Provider string `json:"provider"`
	// Claims must all have one of their values.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Claims []JWTClaim `json:"claims,omitempty"`
	// Scopes must all be in the token's scope claim.
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Scopes []string `json:"scopes,omitempty"`
}

// SecurityPolicy authenticates and authorizes the requests of the
// Gateways, listeners, routes and route rules it targets (docs/security-policy.md).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories=gateway-api;xds-controller,shortName=secpol
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type SecurityPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec SecurityPolicySpec `json:"spec"`
	// Status is one entry per Gateway the policy reaches (GEP-713
	// PolicyAncestorStatus): Accepted, ResolvedRefs, Conflicted.
	// +optional
	Status gwapiv1.PolicyStatus `json:"status,omitempty"`
}

// SecurityPolicyList is a list of SecurityPolicies.
//
// +kubebuilder:object:root=true
type SecurityPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SecurityPolicy `json:"items"`
}

func init() {
	SchemeBuilder.Register(&SecurityPolicy{}, &SecurityPolicyList{})
}
