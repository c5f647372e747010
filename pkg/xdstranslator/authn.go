package xdstranslator

// Authentication at the gateway (SecurityPolicy basicAuth and
// apiKeyAuth) as Envoy's basic_auth and api_key_auth HTTP filters. Each is
// in a chain disabled by default and enabled on a route by its per-route
// configuration (typed_per_filter_config), which carries the route's own
// users or keys: a Secret that changes changes only the routes (RDS), not
// the listener. What only a filter's own configuration holds gets a
// filter per distinct value, as ext_authz checks do (extauth.go): the
// basic_auth filter's forward_username_header. The api_key_auth filter's
// per-route configuration holds everything, so one filter serves all.

import (
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	apikeyauthv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/api_key_auth/v3"
	basicauthv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/basic_auth/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

const (
	// filterBasicAuth starts the names of the basic_auth filters:
	// "<filterBasicAuth>/<hash>", hash of the filter's configuration.
	filterBasicAuth = "envoy.filters.http.basic_auth"
	// filterAPIKeyAuth is Envoy's api_key_auth filter, one per chain.
	filterAPIKeyAuth = "envoy.filters.http.api_key_auth"
	// basicAuthPlaceholder is the basic_auth filter's own users (basicAuth).
	basicAuthPlaceholder = "xds-controller-no-user:{SHA}AAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"
)

// basicAuth renders a as the basic_auth filter that serves it (no users
// of its own; forward_username_header a's), disabled by default, and the
// per-route BasicAuthPerRoute that enables it on a route: users, an
// htpasswd file of one "name:{SHA}hash" line per user, rebuilt from the
// IR (never the Secret's bytes: Envoy refuses a line it cannot read, and
// the IR's users are validated), and realm. A request without valid
// credentials gets 401 with WWW-Authenticate: Basic realm="<realm>".
func basicAuth(a *ir.BasicAuth) (authzFilter, *anypb.Any) {
	c := &basicauthv3.BasicAuth{
		// Envoy requires the filter's users, not empty; the per-route
		// ones replace them, and the filter is disabled where a route has
		// none. The one user here, whose hash is 20 zero bytes (no known
		// password hashes to it), is never asked.
		Users:                 &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: basicAuthPlaceholder}},
		ForwardUsernameHeader: a.ForwardUsernameHeader,
	}
	name := filterBasicAuth + "/" + configHash(c)
	var users strings.Builder
	for _, u := range a.Users {
		users.WriteString(u.Name + ":{SHA}" + u.SHA + "\n")
	}
	per := &basicauthv3.BasicAuthPerRoute{
		Users: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: users.String()}},
		Realm: a.Realm,
	}
	return authzFilter{name: name, filter: &hcmv3.HttpFilter{
		Name:       name,
		ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: toAny(c)},
		Disabled:   true,
	}}, toAny(per)
}

// apiKeyAuthFilter is the chain's api_key_auth filter: no keys of its
// own, disabled by default (apiKeyAuth enables it per route).
func apiKeyAuthFilter() *hcmv3.HttpFilter {
	return &hcmv3.HttpFilter{
		Name:       filterAPIKeyAuth,
		ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: toAny(&apikeyauthv3.ApiKeyAuth{})},
		Disabled:   true,
	}
}

// apiKeyAuth is the per-route ApiKeyAuthPerRoute of a: credentials (key,
// client), key_sources in a's order, and forwarding: the client in
// ForwardClientIDHeader when set, hide_credentials always (the key is
// removed from the header, query parameter or cookie it came in). A
// request without a known key gets 401.
func apiKeyAuth(a *ir.APIKeyAuth) *anypb.Any {
	per := &apikeyauthv3.ApiKeyAuthPerRoute{
		Forwarding: &apikeyauthv3.Forwarding{Header: a.ForwardClientIDHeader, HideCredentials: true},
	}
	for _, c := range a.Credentials {
		per.Credentials = append(per.Credentials, &apikeyauthv3.Credential{Key: c.Key, Client: c.Client})
	}
	for _, s := range a.Sources {
		per.KeySources = append(per.KeySources, &apikeyauthv3.KeySource{Header: s.Header, Query: s.Query, Cookie: s.Cookie})
	}
	return toAny(per)
}
