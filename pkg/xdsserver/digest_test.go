package xdsserver

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xds-controller/xds-controller/pkg/xdstranslator"
)

func vhost(name string) *routev3.VirtualHost {
	return &routev3.VirtualHost{Name: name, Domains: []string{name}, Routes: []*routev3.Route{{
		Name: name, Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
		Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "one"}}},
	}}}
}

// withConfig adds route configuration "rc" with vhosts, and a listener
// whose HTTP connection manager uses it.
func withConfig(r *xdstranslator.Resources, vhosts ...*routev3.VirtualHost) *xdstranslator.Resources {
	hcm, _ := anypb.New(&hcmv3.HttpConnectionManager{StatPrefix: "http", RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{
		RouteConfigName: "rc", ConfigSource: &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}}}}}})
	r.Listeners = []types.Resource{&listenerv3.Listener{Name: "l", FilterChains: []*listenerv3.FilterChain{{Filters: []*listenerv3.Filter{{
		Name: "envoy.filters.network.http_connection_manager", ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: hcm}}}}}}}
	r.Routes = []types.Resource{&routev3.RouteConfiguration{Name: "rc", IgnorePortInHostMatching: true, VirtualHosts: vhosts}}
	return r
}

// TestDigestsFollowContent: a resource's version in the snapshot's
// VersionMap (which delta xDS compares) follows its content, not its
// object: a route configuration rebuilt around the same virtual hosts, or
// a copy of them, keeps its version; one changed virtual host changes it
// and nothing else. A digester that kept the last digests agrees with a
// fresh one (Version).
func TestDigestsFollowContent(t *testing.T) {
	s := New(slog.Default())
	ctx := context.Background()
	a, b := vhost("a.example.com"), vhost("b.example.com")
	versions := func(r *xdstranslator.Resources) (string, map[string]map[string]string) {
		t.Helper()
		v, _, err := s.Publish(ctx, "s", r)
		if err != nil {
			t.Fatal(err)
		}
		if fresh, _ := Version(r); fresh != v {
			t.Errorf("Publish versions the snapshot %s, Version says %s", v, fresh)
		}
		snap := s.cache.snapshot("s")
		m := map[string]map[string]string{}
		for _, typ := range []string{resource.RouteType, resource.ClusterType} {
			m[typ] = snap.GetVersionMap(typ)
		}
		return v, m
	}
	v1, m1 := versions(withConfig(cluster("one"), a, b))
	v2, m2 := versions(withConfig(cluster("one"), proto.Clone(a).(*routev3.VirtualHost), b))
	if v2 != v1 || m2[resource.RouteType]["rc"] != m1[resource.RouteType]["rc"] {
		t.Errorf("the same content in new objects: version %s, rc %s; want %s, %s", v2, m2[resource.RouteType]["rc"], v1, m1[resource.RouteType]["rc"])
	}
	changed := vhost("b.example.com")
	changed.Routes[0].Match = &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/v2"}}
	v3, m3 := versions(withConfig(cluster("one"), a, changed))
	if v3 == v1 || m3[resource.RouteType]["rc"] == m1[resource.RouteType]["rc"] || m3[resource.ClusterType]["one"] != m1[resource.ClusterType]["one"] {
		t.Errorf("one virtual host changed: version %s (was %s), rc %s (was %s), cluster one %s (was %s); want the first two changed, the cluster not",
			v3, v1, m3[resource.RouteType]["rc"], m1[resource.RouteType]["rc"], m3[resource.ClusterType]["one"], m1[resource.ClusterType]["one"])
	}
	bad := vhost("c.example.com")
	bad.Domains = nil // at least one domain is required
	if _, _, err := s.Publish(ctx, "s", withConfig(cluster("one"), a, bad)); err == nil || !strings.Contains(err.Error(), "virtual host c.example.com") {
		t.Errorf("a virtual host without domains was published (err=%v)", err)
	}
}

// TestSnapshotHoldsEveryListAsGiven: each type of a published snapshot
// holds exactly the resources of its list, with a version for each, when
// only some lists changed since the last publish (the others keep their
// maps) and when a list changed back.
func TestSnapshotHoldsEveryListAsGiven(t *testing.T) {
	s := New(slog.Default())
	ctx := context.Background()
	base := withConfig(cluster("one"), vhost("a.example.com"))
	two := &xdstranslator.Resources{Listeners: base.Listeners, Routes: base.Routes, Clusters: cluster("two").Clusters}
	renamedVhosts := &xdstranslator.Resources{Listeners: base.Listeners, Clusters: two.Clusters,
		Routes: withConfig(&xdstranslator.Resources{}, vhost("b.example.com")).Routes}
	for _, step := range []struct {
		name string
		r    *xdstranslator.Resources
	}{{"first", base}, {"clusters changed", two}, {"routes changed", renamedVhosts}, {"back to the first", base}} {
		if _, _, err := s.Publish(ctx, "s", step.r); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		snap := s.cache.snapshot("s")
		for i, l := range lists(step.r) {
			var want []string
			for _, res := range l {
				want = append(want, cachev3.GetResourceName(res))
			}
			got := slices.Sorted(maps.Keys(snap.GetResources(typeURLs[i])))
			versioned := slices.Sorted(maps.Keys(snap.GetVersionMap(typeURLs[i])))
			slices.Sort(want)
			if !slices.Equal(got, want) || !slices.Equal(versioned, want) {
				t.Errorf("%s: %s resources %v, versioned %v; want %v", step.name, typeURLs[i], got, versioned, want)
			}
		}
		if got := servedRoute(t, s, "s").GetVirtualHosts(); len(step.r.Routes) > 0 && got[0].GetName() != step.r.Routes[0].(*routev3.RouteConfiguration).VirtualHosts[0].GetName() {
			t.Errorf("%s: serves virtual host %s", step.name, got[0].GetName())
		}
	}
}

// TestCLAVersionFollowsItsCluster: a ClusterLoadAssignment's version in
// the snapshot changes when its cluster changes, even with the very same
// endpoints (objects and content), so that delta xDS sends it again
// after the cluster (claVersion); the ClusterLoadAssignment of another
// cluster keeps its version, and a change of endpoints alone changes its
// ClusterLoadAssignment only. Versions follow content: a server that
// starts afresh on the same resources gives the same versions, and the
// first cluster back gives the first version again.
func TestCLAVersionFollowsItsCluster(t *testing.T) {
	eds := func(name string, lb clusterv3.Cluster_LbPolicy) *clusterv3.Cluster {
		return &clusterv3.Cluster{Name: name, LbPolicy: lb, ConnectTimeout: durationpb.New(time.Second),
			ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS},
			EdsClusterConfig: &clusterv3.Cluster_EdsClusterConfig{EdsConfig: &corev3.ConfigSource{
				ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}}}}}
	}
	cla := func(name string, endpoints int) *endpointv3.ClusterLoadAssignment {
		c := &endpointv3.ClusterLoadAssignment{ClusterName: name}
		for range endpoints {
			c.Endpoints = append(c.Endpoints, &endpointv3.LocalityLbEndpoints{})
		}
		return c
	}
	claA, claB := cla("a", 1), cla("b", 1)
	config := func(a *clusterv3.Cluster, b *endpointv3.ClusterLoadAssignment) *xdstranslator.Resources {
		return &xdstranslator.Resources{Clusters: []types.Resource{a, eds("b", clusterv3.Cluster_ROUND_ROBIN)},
			Endpoints: []types.Resource{claA, b}}
	}
	s := New(slog.Default())
	versions := func(s *Server, r *xdstranslator.Resources) (clusters, endpoints map[string]string) {
		t.Helper()
		if _, _, err := s.Publish(context.Background(), "s", r); err != nil {
			t.Fatal(err)
		}
		snap := s.cache.snapshot("s")
		return snap.GetVersionMap(resource.ClusterType), snap.GetVersionMap(resource.EndpointType)
	}
	c1, e1 := versions(s, config(eds("a", clusterv3.Cluster_ROUND_ROBIN), claB))
	random := config(eds("a", clusterv3.Cluster_RANDOM), claB)
	c2, e2 := versions(s, random)
	if c2["a"] == c1["a"] || e2["a"] == e1["a"] || c2["b"] != c1["b"] || e2["b"] != e1["b"] {
		t.Errorf("cluster a changed: clusters %v -> %v, endpoints %v -> %v; want a's cluster and ClusterLoadAssignment changed, b's not", c1, c2, e1, e2)
	}
	if _, fresh := versions(New(slog.Default()), random); !maps.Equal(fresh, e2) {
		t.Errorf("a fresh server versions the ClusterLoadAssignments %v, want %v", fresh, e2)
	}
	c3, e3 := versions(s, config(eds("a", clusterv3.Cluster_RANDOM), cla("b", 2)))
	if !maps.Equal(c3, c2) || e3["a"] != e2["a"] || e3["b"] == e2["b"] {
		t.Errorf("endpoints of b changed: clusters %v -> %v, endpoints %v -> %v; want b's ClusterLoadAssignment changed, nothing else", c2, c3, e2, e3)
	}
	c4, e4 := versions(s, config(eds("a", clusterv3.Cluster_ROUND_ROBIN), claB))
	if !maps.Equal(c4, c1) || !maps.Equal(e4, e1) {
		t.Errorf("back to the first resources: clusters %v, endpoints %v; want %v, %v", c4, e4, c1, e1)
	}
}
