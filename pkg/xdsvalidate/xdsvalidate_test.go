package xdsvalidate

import (
	"slices"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xds-controller/xds-controller/pkg/xdstranslator"
)

const routeName = "httproute/default/app/rule/1/match/0"

// base is a valid scope: listener -> HCM -> RDS "rc" -> route -> cluster
// "web"; change changes the route before it is checked.
func base(t *testing.T, change func(*routev3.Route, *listenerv3.Listener)) *xdstranslator.Resources {
	t.Helper()
	hcm, err := anypb.New(&hcmv3.HttpConnectionManager{
		StatPrefix:     "http",
		RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{RouteConfigName: "rc", ConfigSource: &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	l := &listenerv3.Listener{
		Name:    "listener/0.0.0.0/80",
		Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{Address: "0.0.0.0", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 80}}}},
		FilterChains: []*listenerv3.FilterChain{{Name: "http", Filters: []*listenerv3.Filter{{
			Name: "envoy.filters.network.http_connection_manager", ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: hcm}}}}},
	}
	rt := &routev3.Route{
		Name:   routeName,
		Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
		Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "web"}}},
	}
	if change != nil {
		change(rt, l)
	}
	return &xdstranslator.Resources{
		Listeners: []types.Resource{l},
		Routes:    []types.Resource{&routev3.RouteConfiguration{Name: "rc", VirtualHosts: []*routev3.VirtualHost{{Name: "a", Domains: []string{"*"}, Routes: []*routev3.Route{rt}}}}},
		Clusters: []types.Resource{&clusterv3.Cluster{Name: "web", ConnectTimeout: durationpb.New(time.Second),
			ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC}}},
	}
}

func regexMatch(re string) *routev3.RouteMatch {
	return &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: re}}}
}

func TestCheck(t *testing.T) {
	if ps := Check(base(t, nil)); len(ps) != 0 {
		t.Fatalf("a valid scope has problems: %v", ps)
	}
	for _, c := range []struct {
		name    string
		change  func(*routev3.Route, *listenerv3.Listener)
		route   string // "" for a problem outside routes
		inMatch bool
		want    string
	}{
		{"regex that RE2 refuses", func(r *routev3.Route, _ *listenerv3.Listener) { r.Match = regexMatch("(") }, routeName, true, "not a valid RE2"},
		{"regex over the program size limit", func(r *routev3.Route, _ *listenerv3.Listener) { r.Match = regexMatch("/" + strings.Repeat("a", 100)) }, routeName, true, "Envoy refuses regular expressions larger than 100"},
		// Go's regexp accepts these; Envoy 1.40's RE2 (Latin-1) does not.
		{"regex escape above \\xFF", func(r *routev3.Route, _ *listenerv3.Listener) { r.Match = regexMatch(`/\x{100}`) }, routeName, true, "invalid escape sequence"},
		{"regex Unicode class RE2 lacks", func(r *routev3.Route, _ *listenerv3.Listener) { r.Match = regexMatch(`/\p{Garay}`) }, routeName, true, "not a Unicode class"},
		// Go's program is 36 instructions, RE2's 103 (\w is 3 ranges).
		{"regex over the limit in RE2's count only", func(r *routev3.Route, _ *listenerv3.Listener) { r.Match = regexMatch(`\w{33}`) }, routeName, true, "about 103 instructions"},
		{"header name", func(r *routev3.Route, _ *listenerv3.Listener) {
			r.ResponseHeadersToAdd = []*corev3.HeaderValueOption{{Header: &corev3.HeaderValue{Key: "bad header", Value: "x"}}}
		}, routeName, false, `header name "bad header"`},
		{"header value", func(r *routev3.Route, _ *listenerv3.Listener) {
			r.ResponseHeadersToAdd = []*corev3.HeaderValueOption{{Header: &corev3.HeaderValue{Key: "x", Value: "a\r\nb"}}}
		}, routeName, false, "CR or LF"},
		{"pseudo-header modified", func(r *routev3.Route, _ *listenerv3.Listener) {
			r.RequestHeadersToAdd = []*corev3.HeaderValueOption{{Header: &corev3.HeaderValue{Key: ":path", Value: "/x"}}}
		}, routeName, false, `request header ":path" cannot be modified`},
		{"host removed from responses", func(r *routev3.Route, _ *listenerv3.Listener) {
			r.ResponseHeadersToRemove = []string{"Host"}
		}, routeName, false, `response header "Host" cannot be removed`},
		{"host set on a weighted cluster", func(r *routev3.Route, _ *listenerv3.Listener) {
			r.Action = &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_WeightedClusters{WeightedClusters: &routev3.WeightedCluster{
				Clusters: []*routev3.WeightedCluster_ClusterWeight{{Name: "web", RequestHeadersToAdd: []*corev3.HeaderValueOption{{Header: &corev3.HeaderValue{Key: "host", Value: "x"}}}}},
			}}}}
		}, routeName, false, `request header "host" cannot be modified`},
		{"empty typed config", func(r *routev3.Route, _ *listenerv3.Listener) {
			r.TypedPerFilterConfig = map[string]*anypb.Any{"envoy.filters.http.oauth2/x": {}}
		}, routeName, false, "cannot be decoded"},
		{"missing cluster", func(r *routev3.Route, _ *listenerv3.Listener) {
			r.Action = &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "nope"}}}
		}, routeName, false, `cluster "nope" does not exist`},
		{"proto validation", func(r *routev3.Route, _ *listenerv3.Listener) {
			r.Match = nil
		}, routeName, false, "Route.Match: value is required"},
		{"duplicate filter chain match", func(_ *routev3.Route, l *listenerv3.Listener) {
			l.FilterChains = append(l.FilterChains, &listenerv3.FilterChain{Name: "http2", Filters: l.FilterChains[0].Filters})
		}, "", false, `filter chains "http" and "http2" have the same filter_chain_match`},
		{"missing route configuration", func(_ *routev3.Route, l *listenerv3.Listener) {
			hcm := &hcmv3.HttpConnectionManager{}
			_ = l.FilterChains[0].Filters[0].GetTypedConfig().UnmarshalTo(hcm)
			hcm.GetRds().RouteConfigName = "gone"
			a, _ := anypb.New(hcm)
			l.FilterChains[0].Filters[0].ConfigType = &listenerv3.Filter_TypedConfig{TypedConfig: a}
		}, "", false, `route configuration "gone" does not exist`},
	} {
		t.Run(c.name, func(t *testing.T) {
			ps := Check(base(t, c.change))
			if len(ps) == 0 {
				t.Fatal("no problem found")
			}
			for _, p := range ps {
				if p.Route == c.route && p.InMatch == c.inMatch && strings.Contains(p.Message, c.want) {
					return
				}
			}
			t.Errorf("problems %+v, want one in route %q (inMatch %v) with %q", ps, c.route, c.inMatch, c.want)
		})
	}
}

// TestFilterConfigEnablingOnly: a route's FilterConfig whose config is an
// empty Any enables a filter disabled by default (the OAuth2 filter's
// way), which Envoy accepts: not a problem.
func TestFilterConfigEnablingOnly(t *testing.T) {
	enable, err := anypb.New(&routev3.FilterConfig{Config: &anypb.Any{}})
	if err != nil {
		t.Fatal(err)
	}
	ps := Check(base(t, func(r *routev3.Route, _ *listenerv3.Listener) {
		r.TypedPerFilterConfig = map[string]*anypb.Any{"envoy.filters.http.oauth2/x": enable}
	}))
	if len(ps) != 0 {
		t.Fatalf("a FilterConfig enabling a filter has problems: %v", ps)
	}
}

func TestInvalidBackendClusterIsAllowed(t *testing.T) {
	r := base(t, func(r *routev3.Route, _ *listenerv3.Listener) {
		r.Action = &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: xdstranslator.InvalidBackendCluster}}}
	})
	if ps := Check(r); len(ps) != 0 {
		t.Errorf("the deliberate invalid-backend cluster is reported: %v", ps)
	}
}

// TestCacheChecksReferencesAgain: a Cache reuses what it found in a
// resource it saw before (an oversized regex stays reported), but checks
// its references against what the scope holds now: the same route
// configuration is fine while cluster "web" exists, and refers to a
// missing cluster once it is gone.
func TestCacheChecksReferencesAgain(t *testing.T) {
	r := base(t, func(rt *routev3.Route, _ *listenerv3.Listener) {
		rt.Match = regexMatch("/" + strings.Repeat("a", 120))
	})
	c := NewCache()
	first := c.Check(r)
	if len(first) != 1 || !strings.Contains(first[0].Message, "program") {
		t.Fatalf("first check: %v, want the oversized regex", first)
	}
	if again := c.Check(r); len(again) != 1 || again[0] != first[0] {
		t.Errorf("second check of the same resources: %v, want %v", again, first)
	}
	r.Clusters = nil
	gone := c.Check(r)
	// The walk's order within a route (protobuf field ranging) is not
	// defined: the regex's problem may come before the cluster's or after.
	byMessage := func(a, b Problem) int { return strings.Compare(a.Message, b.Message) }
	slices.SortFunc(gone, byMessage)
	if len(gone) != 2 || !strings.Contains(gone[0].Message, `cluster "web" does not exist`) || gone[0].Route != routeName || gone[1] != first[0] {
		t.Errorf("after the cluster went: %v, want the regex and the missing cluster, in route %s", gone, routeName)
	}
	fresh := Check(r)
	if slices.SortFunc(fresh, byMessage); !slices.Equal(fresh, gone) {
		t.Errorf("a fresh Check gives %v, the Cache %v", fresh, gone)
	}
}
