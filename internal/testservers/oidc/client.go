package oidc

import (
	"slices"
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// Client is an OAuth 2.0 client registered with the provider.
type Client struct {
	// ID is the client_id.
	ID string
	// Secret is the client_secret. A client with a secret is confidential
	// and authenticates at the token endpoint with client_secret_basic or
	// client_secret_post; one without is public (a native app: token
	// endpoint auth "none", so it must use PKCE) and may only redirect to
	// loopback or a custom scheme.
	Secret string
	// RedirectURIs are the exact redirect_uri values allowed (OAuth 2.0
	// section 3.1.2; no wildcards).
	RedirectURIs []string
	// PostLogoutRedirectURIs are the redirect URIs allowed at the end
	// session endpoint.
	PostLogoutRedirectURIs []string
	// OpaqueAccessTokens makes access tokens opaque strings; by default
	// they are JWTs signed by the provider's current key (RFC 9068-like:
	// iss, sub, aud = client ID, exp, client_id, scope), which Envoy's
	// jwt_authn can verify with the provider's JWKS.
	OpaqueAccessTokens bool
	// ExtraScopes are scopes beyond the standard OpenID ones (openid,
	// profile, email, phone, address, offline_access) that this client may
	// ask for; they go into the access token's scope claim.
	ExtraScopes []string
}

// client adapts Client to op.Client.
type client struct {
	c        Client
	loginURL string
	idTTL    time.Duration
}

var _ op.Client = (*client)(nil)

func (c *client) GetID() string                    { return c.c.ID }
func (c *client) RedirectURIs() []string           { return c.c.RedirectURIs }
func (c *client) PostLogoutRedirectURIs() []string { return c.c.PostLogoutRedirectURIs }
func (c *client) LoginURL(id string) string        { return c.loginURL + "?authRequestID=" + id }
func (c *client) IDTokenLifetime() time.Duration   { return c.idTTL }
func (c *client) DevMode() bool                    { return false }
func (c *client) ClockSkew() time.Duration         { return 0 }
func (c *client) IsScopeAllowed(s string) bool     { return slices.Contains(c.c.ExtraScopes, s) }

// IDTokenUserinfoClaimsAssertion puts the user's profile and email claims
// into the ID token even when an access token is issued, so a relying
// party (Envoy's oauth2 filter forwards only tokens) sees them.
func (c *client) IDTokenUserinfoClaimsAssertion() bool { return true }

func (c *client) ApplicationType() op.ApplicationType {
	if c.c.Secret == "" {
		return op.ApplicationTypeNative
	}
	return op.ApplicationTypeWeb
}

func (c *client) AuthMethod() oidc.AuthMethod {
	if c.c.Secret == "" {
		return oidc.AuthMethodNone
	}
	return oidc.AuthMethodBasic
}

func (c *client) ResponseTypes() []oidc.ResponseType {
	return []oidc.ResponseType{oidc.ResponseTypeCode}
}

func (c *client) GrantTypes() []oidc.GrantType {
	return []oidc.GrantType{oidc.GrantTypeCode, oidc.GrantTypeRefreshToken}
}

func (c *client) AccessTokenType() op.AccessTokenType {
	if c.c.OpaqueAccessTokens {
		return op.AccessTokenTypeBearer
	}
	return op.AccessTokenTypeJWT
}

func (c *client) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}

func (c *client) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
