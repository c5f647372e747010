package xdstranslator

// External authorization (GEP-1494) as Envoy's ext_authz HTTP filter:
// one filter per distinct check (ir.ExtAuth) in a chain, disabled by
// default, and enabled where a check applies by an ExtAuthzPerRoute in
// typed_per_filter_config: on a route (HTTPRoute ExternalAuth filter), or
// on every virtual host of a listener (Gateway listener filters).
//
// Why a filter per check rather than one filter whose service each route
// overrides (CheckSettings grpc_service / http_service): what a check
// says about headers lives in the filter's own configuration, not in the
// per-route one (allowed_headers: the request headers sent; the mutation
// rules), and a listener's checks must run in their order before any
// route's, which only distinct filters in the chain's order give.

import (
	"fmt"
	"hash/fnv"
	"reflect"
	"strings"
	"time"

	mutationrulesv3 "github.com/envoyproxy/go-control-plane/envoy/config/common/mutation_rules/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extauthzv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

const (
	// filterExtAuthz starts the names of the ext_authz filters:
	// "<filterExtAuthz>/listener/<k>/<hash>" for the k-th filter of a
	// listener, "<filterExtAuthz>/policy/<hash>" for a SecurityPolicy's
	// check of a route, "<filterExtAuthz>/route/<hash>" for a route
	// rule's own; hash is of the filter's configuration, so equal checks
	// share a filter. The chain holds them sorted by name: a listener's,
	// then the policies', then the rules'.
	filterExtAuthz = "envoy.filters.http.ext_authz"
	// extAuthTimeout bounds each check: a service slower than this
	// denies (403), as one that cannot be reached does.
	extAuthTimeout = 5 * time.Second
	// extAuthProtectedHeaders are the request headers an authorization
	// service may not set (Envoy ext_authz decoder_header_mutation_rules
	// disallow_expression; the rules' defaults already refuse Host,
	// :authority, :scheme, :method and x-envoy-*): those that describe
	// the message or the connection rather than the request. An HTTP
	// service whose every header is copied (allowedResponseHeaders empty)
	// would otherwise replace the request's Content-Length with its own.
	// (Envoy drops keep-alive and proxy-connection towards upstreams
	// itself; the expression stays within RE2's program size of 100.)
	extAuthProtectedHeaders = `content-(length|type|encoding)|transfer-encoding|connection|upgrade|te|trailer|date|server`
)

// authzFilter is one ext_authz filter of a chain.
type authzFilter struct {
	name   string
	filter *hcmv3.HttpFilter
	// secrets are the SDS secrets the filter reads (oauth2.go).
	secrets []*tlsv3.Secret
}

// extAuthz renders check a as the ext_authz filter named for it (listener
// k >= 0: the k-th filter of a listener's filters.requests; k < 0: a
// route's), disabled by default, and the per-route configuration that
// enables it.
//
//   - GRPC: grpc_service to the backend's cluster; allowed_headers the
//     check's request headers (none: Envoy sends every header).
//   - HTTP: http_service to the backend's cluster with path_prefix (or
//     path_override);
//     allowed_headers the check's request headers (Envoy always adds Host,
//     Method, Path, Content-Length and Authorization, as
//     HTTPAuthConfig allowedHeaders says); the 200 answer's headers copied
//     into the request are allowedResponseHeaders (none: every header, bar
//     Host and extAuthProtectedHeaders); a denial's status, body and
//     headers go to the client.
//   - Both: failure_mode_allow false (a service that fails, times out
//     after extAuthTimeout or answers 5xx denies with 403: fail closed);
//     with_request_body when MaxBodyBytes is set (allow_partial_message:
//     a longer body is cut to MaxBodyBytes, ForwardBodyConfig maxSize;
//     raw bytes for gRPC); validate_mutations and mutation rules that keep
//     Host, :authority and extAuthProtectedHeaders as the client sent
//     them. A listener's check clears the route cache when it sets
//     headers, so that route matching reads them (ListenerFilters
//     requests: pre-routing).
func extAuthz(a *ir.ExtAuth, k int) (authzFilter, *anypb.Any) {
	c := &extauthzv3.ExtAuthz{
		TransportApiVersion: corev3.ApiVersion_V3,
		FailureModeAllow:    false,
		ValidateMutations:   true,
		ClearRouteCache:     k >= 0,
		DecoderHeaderMutationRules: &mutationrulesv3.HeaderMutationRules{
			DisallowExpression: &matcherv3.RegexMatcher{Regex: "^(" + extAuthProtectedHeaders + ")$"},
		},
	}
	cluster := clusterOf(a.Backend)
	switch a.Protocol {
	case ir.ExtAuthGRPC:
		c.Services = &extauthzv3.ExtAuthz_GrpcService{GrpcService: &corev3.GrpcService{
			TargetSpecifier: &corev3.GrpcService_EnvoyGrpc_{EnvoyGrpc: &corev3.GrpcService_EnvoyGrpc{ClusterName: cluster}},
			Timeout:         durationpb.New(extAuthTimeout),
		}}
	default:
		resp := &extauthzv3.AuthorizationResponse{}
		if len(a.AllowedResponseHeaders) > 0 {
			resp.AllowedUpstreamHeaders = headerNames(a.AllowedResponseHeaders)
		} else {
			resp.AllowedUpstreamHeaders = &matcherv3.ListStringMatcher{Patterns: []*matcherv3.StringMatcher{{
				MatchPattern: &matcherv3.StringMatcher_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: ".*"}},
			}}}
		}
		c.Services = &extauthzv3.ExtAuthz_HttpService{HttpService: &extauthzv3.HttpService{
			ServerUri: &corev3.HttpUri{
				Uri:              "http://ext-authz",
				HttpUpstreamType: &corev3.HttpUri_Cluster{Cluster: cluster},
				Timeout:          durationpb.New(extAuthTimeout),
			},
			PathPrefix:            a.PathPrefix,
			PathOverride:          a.PathOverride,
			AuthorizationResponse: resp,
		}}
	}
	if len(a.AllowedRequestHeaders) > 0 {
		c.AllowedHeaders = headerNames(a.AllowedRequestHeaders)
	}
	if a.AllRequestHeaders {
		c.AllowedHeaders = &matcherv3.ListStringMatcher{Patterns: []*matcherv3.StringMatcher{{
			MatchPattern: &matcherv3.StringMatcher_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: ".*"}},
		}}}
	}
	if hs, ok := c.Services.(*extauthzv3.ExtAuthz_HttpService); ok && a.PathOverride != "" {
		// The service is asked a fixed path: the original URL and
		// method go in headers, as ingress-nginx's auth_request sends
		// them.
		hs.HttpService.AuthorizationRequest = &extauthzv3.AuthorizationRequest{HeadersToAdd: []*corev3.HeaderValue{
			{Key: "x-original-url", Value: "%REQ(:scheme)%://%REQ(:authority)%%REQ(:path)%"},
			{Key: "x-original-method", Value: "%REQ(:method)%"},
		}}
	}
	if a.MaxBodyBytes > 0 {
		c.WithRequestBody = &extauthzv3.BufferSettings{
			MaxRequestBytes:     a.MaxBodyBytes,
			AllowPartialMessage: true,
			PackAsBytes:         true,
		}
	}
	h := configHash(c)
	name := filterExtAuthz + "/route/" + h
	if k >= 0 {
		name = fmt.Sprintf("%s/listener/%02d/%s", filterExtAuthz, k, h)
	}
	f := authzFilter{name: name, filter: &hcmv3.HttpFilter{
		Name:       name,
		ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: toAny(c)},
		Disabled:   true,
	}}
	enable := toAny(&extauthzv3.ExtAuthzPerRoute{Override: &extauthzv3.ExtAuthzPerRoute_CheckSettings{CheckSettings: &extauthzv3.CheckSettings{}}})
	return f, enable
}

// bodyBufferLimit is the request body buffer limit (Route and VirtualHost
// request_body_buffer_limit) a check that forwards MaxBodyBytes of the
// body needs: without it the stream holds at most the connection's
// 32 KiB buffer (per_connection_buffer_limit_bytes) and a longer body
// is answered 413 before the check. nil when that buffer is enough. A
// route's own limit replaces its virtual host's (Envoy's precedence): a
// route whose check forwards less of the body than its listener's holds
// its own maximum, and a body between the two gets 413 (never
// forwarded unchecked).
func bodyBufferLimit(a *ir.ExtAuth) *wrapperspb.UInt64Value {
	if a.MaxBodyBytes <= bufferLimitPB.GetValue() {
		return nil
	}
	return wrapperspb.UInt64(uint64(a.MaxBodyBytes))
}

// headerNames matches the header names given, in any case.
func headerNames(names []string) *matcherv3.ListStringMatcher {
	out := &matcherv3.ListStringMatcher{}
	for _, n := range names {
		out.Patterns = append(out.Patterns, &matcherv3.StringMatcher{
			MatchPattern: &matcherv3.StringMatcher_Exact{Exact: n},
			IgnoreCase:   true,
		})
	}
	return out
}

// configHash is a short hash of m's deterministic encoding.
func configHash(m proto.Message) string {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		panic(err) // a message we built: cannot fail
	}
	h := fnv.New64a()
	_, _ = h.Write(b)
	return fmt.Sprintf("%016x", h.Sum64())
}

// routeChecks are the external checks of a route, in the order they run:
// its SecurityPolicy's (ir.HTTPFilters SecurityExtAuth), then its rule's
// own ExternalAuth filter; a check equal to the policy's is asked once.
func routeChecks(f *ir.HTTPFilters) []*ir.ExtAuth {
	var out []*ir.ExtAuth
	if a := f.SecurityExtAuth; a != nil {
		out = append(out, a)
	}
	if a := f.ExtAuth; a != nil && (f.SecurityExtAuth == nil || !reflect.DeepEqual(a, f.SecurityExtAuth)) {
		out = append(out, a)
	}
	return out
}

// policyCheck renames f, a route's ext_authz filter (extAuthz with k < 0),
// as a SecurityPolicy's: "<filterExtAuthz>/policy/<hash>", which sorts
// before every rule's filter, so that the policy's check runs first.
func policyCheck(f authzFilter) authzFilter {
	name := filterExtAuthz + "/policy/" + strings.TrimPrefix(f.name, filterExtAuthz+"/route/")
	hf := proto.Clone(f.filter).(*hcmv3.HttpFilter)
	hf.Name = name
	return authzFilter{name: name, filter: hf}
}
