package xdstranslator

// OpenID Connect login (SecurityPolicy oidc) as Envoy's OAuth2 HTTP
// filter: one filter per distinct login (ir.OIDC) in a chain, disabled
// by default and enabled on the routes the login covers by a
// FilterConfig in typed_per_filter_config (the filter has no per-route
// configuration of its own but a whole OAuth2Config, so a login is a
// filter, as an ext_authz check is: extauth.go). Its two secrets, the
// client secret and the HMAC key of the session cookies, reach Envoy by
// SDS (generic secrets, secret.go), never inline in the listener: a
// Secret that changes changes one SDS resource, not the listener.

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	oauth2v3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/oauth2/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

const (
	// filterOAuth2 starts the names of the OAuth2 filters:
	// "<filterOAuth2>/<hash>", hash of the filter's configuration.
	filterOAuth2 = "envoy.filters.http.oauth2"
	// oauth2TokenTimeout bounds a request to the token endpoint; a login
	// whose code exchange times out gets 401 and can start again.
	oauth2TokenTimeout = 5 * time.Second
)

// OIDCSecretNames are the SDS names of login o's client secret and HMAC
// key: "oidc/<namespace>/<name>/client-secret" and ".../hmac" (a
// Secret's name holds no '/', so they never meet a certificate's
// "<namespace>/<name>").
func OIDCSecretNames(o *ir.OIDC) (clientSecret, hmac string) {
	return "oidc/" + o.Name + "/client-secret", "oidc/" + o.Name + "/hmac"
}

// oauth2 renders login o as the OAuth2 filter that serves it (disabled by
// default), with its two SDS generic secrets, and the per-route
// configuration that enables it (a FilterConfig, config an empty Any).
//
//   - authorization_endpoint, token_endpoint (the TokenBackend's cluster,
//     oauth2TokenTimeout), end_session_endpoint (OpenID RP-initiated
//     logout; Envoy sends the id_token_hint), auth_scopes: o's;
//   - redirect_uri: "%REQ(x-forwarded-proto)%://%REQ(:authority)%" and
//     RedirectPath, the host the browser asked for (the HTTP connection
//     manager sets x-forwarded-proto from the connection: it uses the
//     remote address), redirect_path_matcher RedirectPath and
//     signout_path LogoutPath, exact;
//   - forward_bearer_token: the access token reaches the backend as
//     Authorization: Bearer (what the client sent in Authorization is
//     replaced); forward_id_token: the ID token in ForwardIDTokenHeader;
//     use_refresh_token: RefreshToken;
//   - credentials: client_id, token_secret and hmac_secret by SDS (ADS),
//     cookie_names each suffixed with a hash of o.Name so that two
//     logins on one host keep their own sessions (the token cookies'
//     names o's when given), cookie_domain.
//
// Envoy always uses PKCE (S256) and sends the client secret in the
// request body (client_secret_post).
func oauth2(o *ir.OIDC) (authzFilter, *anypb.Any) {
	secretName, hmacName := OIDCSecretNames(o)
	sum := sha256.Sum256([]byte(o.Name))
	suffix := "-" + hex.EncodeToString(sum[:4])
	names := &oauth2v3.OAuth2Credentials_CookieNames{
		BearerToken:  cmp.Or(o.AccessTokenCookie, "BearerToken"+suffix),
		IdToken:      cmp.Or(o.IDTokenCookie, "IdToken"+suffix),
		OauthHmac:    "OauthHMAC" + suffix,
		OauthExpires: "OauthExpires" + suffix,
		RefreshToken: "RefreshToken" + suffix,
		OauthNonce:   "OauthNonce" + suffix,
		CodeVerifier: "CodeVerifier" + suffix,
	}
	c := &oauth2v3.OAuth2Config{
		TokenEndpoint: &corev3.HttpUri{
			Uri:              o.TokenEndpoint,
			HttpUpstreamType: &corev3.HttpUri_Cluster{Cluster: clusterOf(o.TokenBackend)},
			Timeout:          durationpb.New(oauth2TokenTimeout),
		},
		AuthorizationEndpoint: o.AuthorizationEndpoint,
		EndSessionEndpoint:    o.EndSessionEndpoint,
		Credentials: &oauth2v3.OAuth2Credentials{
			ClientId:    o.ClientID,
			TokenSecret: &tlsv3.SdsSecretConfig{Name: secretName, SdsConfig: adsSource()},
			TokenFormation: &oauth2v3.OAuth2Credentials_HmacSecret{
				HmacSecret: &tlsv3.SdsSecretConfig{Name: hmacName, SdsConfig: adsSource()},
			},
			CookieNames:  names,
			CookieDomain: o.CookieDomain,
		},
		RedirectUri:         "%REQ(x-forwarded-proto)%://%REQ(:authority)%" + o.RedirectPath,
		RedirectPathMatcher: exactPath(o.RedirectPath),
		SignoutPath:         exactPath(o.LogoutPath),
		ForwardBearerToken:  true,
		AuthScopes:          o.Scopes,
		UseRefreshToken:     wrapperspb.Bool(o.RefreshToken),
	}
	if o.ForwardIDTokenHeader != "" {
		c.ForwardIdToken = &oauth2v3.OAuth2TokenForwarding{Header: o.ForwardIDTokenHeader}
	}
	cfg := &oauth2v3.OAuth2{Config: c}
	name := filterOAuth2 + "/" + configHash(cfg)
	f := authzFilter{name: name, filter: &hcmv3.HttpFilter{
		Name:       name,
		ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: toAny(cfg)},
		Disabled:   true,
	}, secrets: []*tlsv3.Secret{genericSecret(secretName, []byte(o.ClientSecret)), genericSecret(hmacName, o.HMACKey)}}
	// A FilterConfig whose config is an empty Any enables a filter that
	// is disabled by default (Envoy refuses one without config).
	return f, toAny(&routev3.FilterConfig{Config: &anypb.Any{}})
}

// exactPath matches the path p exactly.
func exactPath(p string) *matcherv3.PathMatcher {
	return &matcherv3.PathMatcher{Rule: &matcherv3.PathMatcher_Path{Path: &matcherv3.StringMatcher{
		MatchPattern: &matcherv3.StringMatcher_Exact{Exact: p},
	}}}
}
