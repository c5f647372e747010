package xdstranslator

// Sign-in redirects (ir.ExtAuthSignIn, ingress-nginx auth-signin): a 401
// that a route's external authorization check answers becomes a 302 to a
// sign-in page carrying the original URL, as ingress-nginx's error_page
// 401 does. Envoy's custom_response filter does it: the route's
// per-filter configuration matches the response status 401 of a local
// reply (HttpResponseLocalReplyMatchInput: the ext_authz denial, never a
// backend's own 401) and replaces it with a LocalResponsePolicy of status
// 302 and a Location header. The filter sits right before the route's
// ext_authz filters in the chain (httpfilters.go). Envoy sends a local
// reply through every encoder filter of the stream, so the 401 of an
// earlier filter of the same route (basic_auth) is redirected too, as
// ingress-nginx's error_page 401 catches auth_basic's (test/e2e
// ingressauth_test.go shows both).

import (
	"strings"

	xdsmatcherv3 "github.com/cncf/xds/go/xds/type/matcher/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	customresponsev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/custom_response/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	localresponsev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/custom_response/local_response_policy/v3"
	envoymatcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

// filterCustomResponse is Envoy's custom_response filter: it answers a
// route's sign-in redirects (signInRedirect).
const filterCustomResponse = "envoy.filters.http.custom_response"

// customResponseFilter is the chain's custom_response filter: no policy of
// its own (routes without a per-route one keep their responses).
func customResponseFilter() *hcmv3.HttpFilter {
	return &hcmv3.HttpFilter{
		Name:       filterCustomResponse,
		ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: toAny(&customresponsev3.CustomResponse{})},
	}
}

// signInRedirect is the per-route custom_response configuration of s: a
// local reply of status 401 becomes a 302 whose Location is s.URL with
// the original URL appended as the query parameter s.Param
// ("<param>=<scheme>://<host><path and query>", unescaped: Envoy's
// formatter has no URL encoding, so an original query's own '&' splits
// it), unless Param is "". The 401's headers (a Set-Cookie of the
// service) stay.
func signInRedirect(s *ir.ExtAuthSignIn) *anypb.Any {
	loc := s.URL
	if s.Param != "" {
		sep := "?"
		if strings.Contains(loc, "?") {
			sep = "&"
		}
		loc += sep + s.Param + "=%REQ(:scheme)%://%REQ(:authority)%%REQ(:path)%"
	}
	single := func(name string, input proto.Message, value string) *xdsmatcherv3.Matcher_MatcherList_Predicate {
		return &xdsmatcherv3.Matcher_MatcherList_Predicate{MatchType: &xdsmatcherv3.Matcher_MatcherList_Predicate_SinglePredicate_{
			SinglePredicate: &xdsmatcherv3.Matcher_MatcherList_Predicate_SinglePredicate{
				Input: typedExtension(name, input),
				Matcher: &xdsmatcherv3.Matcher_MatcherList_Predicate_SinglePredicate_ValueMatch{
					ValueMatch: &xdsmatcherv3.StringMatcher{MatchPattern: &xdsmatcherv3.StringMatcher_Exact{Exact: value}},
				},
			},
		}}
	}
	policy := &localresponsev3.LocalResponsePolicy{
		StatusCode: wrapperspb.UInt32(302),
		ResponseHeadersToAdd: []*corev3.HeaderValueOption{{
			Header:       &corev3.HeaderValue{Key: "location", Value: loc},
			AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
		}},
	}
	m := &xdsmatcherv3.Matcher{MatcherType: &xdsmatcherv3.Matcher_MatcherList_{MatcherList: &xdsmatcherv3.Matcher_MatcherList{
		Matchers: []*xdsmatcherv3.Matcher_MatcherList_FieldMatcher{{
			Predicate: &xdsmatcherv3.Matcher_MatcherList_Predicate{MatchType: &xdsmatcherv3.Matcher_MatcherList_Predicate_AndMatcher{
				AndMatcher: &xdsmatcherv3.Matcher_MatcherList_Predicate_PredicateList{Predicate: []*xdsmatcherv3.Matcher_MatcherList_Predicate{
					single("status", &envoymatcherv3.HttpResponseStatusCodeMatchInput{}, "401"),
					single("local-reply", &envoymatcherv3.HttpResponseLocalReplyMatchInput{}, "true"),
				}},
			}},
			OnMatch: &xdsmatcherv3.Matcher_OnMatch{OnMatch: &xdsmatcherv3.Matcher_OnMatch_Action{Action: typedExtension("sign-in", policy)}},
		}},
	}}}
	return toAny(&customresponsev3.CustomResponse{CustomResponseMatcher: m})
}
