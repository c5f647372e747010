package xdsserver

import (
	"context"
	"log/slog"
	"slices"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/stream/v3"
	"google.golang.org/protobuf/proto"

	"github.com/xds-controller/xds-controller/pkg/xdstranslator"
)

// watchOnce opens a delta watch of typ for node on s's caches, with the
// subscription sub, and returns the response it is answered at once, or
// nil when the watch stays open (which it then closes).
func watchOnce(t *testing.T, s *Server, node *corev3.Node, typ, nonce string, sub *stream.Subscription) *discoveryv3.DeltaDiscoveryResponse {
	t.Helper()
	out := make(chan cachev3.DeltaResponse, 1)
	req := &discoveryv3.DeltaDiscoveryRequest{Node: node, TypeUrl: typ, ResponseNonce: nonce}
	cancel, err := s.cache.mux.CreateDeltaWatch(req, sub, out)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case resp := <-out:
		sub.SetReturnedResources(resp.GetReturnedResources())
		d, err := resp.GetDeltaDiscoveryResponse()
		if err != nil {
			t.Fatal(err)
		}
		return d
	default:
		if cancel != nil {
			cancel()
		}
		return nil
	}
}

func names(rs []*discoveryv3.Resource) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.GetName())
	}
	slices.Sort(out)
	return out
}

// TestDeltaEntriesEncodedOnce: every stream that receives a resource
// receives the very same entry (encoded once per resource version, not
// per stream), whose version is the resource's version in the snapshot's
// VersionMap and whose encoding decodes to the published resource (a
// route configuration: with all its virtual hosts). A stream holding
// those versions (initial_resource_versions after a reconnect) receives
// nothing; a resource gone is listed as removed to the streams that held
// it, by wildcard and by name; a changed route configuration is a new
// entry, the unchanged cluster's entry stays the same.
func TestDeltaEntriesEncodedOnce(t *testing.T) {
	s := New(slog.Default())
	ctx := context.Background()
	a, b := vhost("a.example.com"), vhost("b.example.com")
	one := &clusterv3.Cluster{Name: "one", ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC}}
	two := &clusterv3.Cluster{Name: "two", ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC}}
	publish := func(vhosts []*routev3.VirtualHost, clusters ...types.Resource) {
		t.Helper()
		r := withConfig(&xdstranslator.Resources{Clusters: clusters}, vhosts...)
		if _, _, err := s.Publish(ctx, "a", r); err != nil {
			t.Fatal(err)
		}
	}
	publish([]*routev3.VirtualHost{a, b}, one, two)
	versions := s.cache.snapshot("a").GetVersionMap(resource.RouteType)

	p1, p2 := &corev3.Node{Id: "p1", Cluster: "a"}, &corev3.Node{Id: "p2", Cluster: "a"}
	subs := map[*corev3.Node]map[string]*stream.Subscription{}
	first := map[*corev3.Node]map[string]*discoveryv3.DeltaDiscoveryResponse{}
	for _, n := range []*corev3.Node{p1, p2} {
		rds := stream.NewDeltaSubscription([]string{"rc"}, nil, nil, false)
		cds := stream.NewDeltaSubscription(nil, nil, nil, true)
		subs[n] = map[string]*stream.Subscription{resource.RouteType: &rds, resource.ClusterType: &cds}
		first[n] = map[string]*discoveryv3.DeltaDiscoveryResponse{
			resource.RouteType:   watchOnce(t, s, n, resource.RouteType, "", &rds),
			resource.ClusterType: watchOnce(t, s, n, resource.ClusterType, "", &cds),
		}
	}
	r1, r2 := first[p1][resource.RouteType], first[p2][resource.RouteType]
	if len(r1.GetResources()) != 1 || len(r2.GetResources()) != 1 {
		t.Fatalf("route configuration responses %v and %v, want rc in each", r1, r2)
	}
	if r1.Resources[0] != r2.Resources[0] {
		t.Error("the two streams received route configuration rc in two entries, want the same entry (encoded once)")
	}
	if got := r1.Resources[0].GetVersion(); got != versions["rc"] {
		t.Errorf("rc's entry has version %q, want its VersionMap version %q", got, versions["rc"])
	}
	var rc routev3.RouteConfiguration
	if err := r1.Resources[0].GetResource().UnmarshalTo(&rc); err != nil {
		t.Fatal(err)
	}
	want := withConfig(&xdstranslator.Resources{}, a, b).Routes[0]
	if !proto.Equal(&rc, want) {
		t.Errorf("rc's entry decodes to %v, want %v", &rc, want)
	}
	c1, c2 := first[p1][resource.ClusterType], first[p2][resource.ClusterType]
	if got := names(c1.GetResources()); !slices.Equal(got, []string{"one", "two"}) {
		t.Fatalf("wildcard cluster response names %v, want [one two]", got)
	}
	for i := range c1.Resources {
		if !slices.Contains(c2.Resources, c1.Resources[i]) {
			t.Errorf("cluster %s: the streams' entries differ, want the same entry", c1.Resources[i].GetName())
		}
	}

	// A reconnecting proxy that holds rc's version is sent nothing.
	held := stream.NewDeltaSubscription([]string{"rc"}, nil, map[string]string{"rc": versions["rc"]}, false)
	if resp := watchOnce(t, s, &corev3.Node{Id: "p3", Cluster: "a"}, resource.RouteType, "", &held); resp != nil {
		t.Errorf("a proxy holding rc at %s was sent %v, want nothing", versions["rc"], resp)
	}

	// rc changes, cluster two goes: a new entry for rc, "two" removed,
	// and no entry for the unchanged cluster "one".
	clusterOne := c1.Resources[slices.IndexFunc(c1.Resources, func(r *discoveryv3.Resource) bool { return r.GetName() == "one" })]
	publish([]*routev3.VirtualHost{a, vhost("c.example.com")}, one)
	rdsNext := watchOnce(t, s, p1, resource.RouteType, "1", subs[p1][resource.RouteType])
	if rdsNext == nil || len(rdsNext.Resources) != 1 || rdsNext.Resources[0] == r1.Resources[0] ||
		rdsNext.Resources[0].GetVersion() != s.cache.snapshot("a").GetVersionMap(resource.RouteType)["rc"] {
		t.Errorf("after rc changed, response %v, want rc's new entry at its new version", rdsNext)
	}
	cdsNext := watchOnce(t, s, p1, resource.ClusterType, "2", subs[p1][resource.ClusterType])
	if cdsNext == nil || len(cdsNext.Resources) != 0 || !slices.Equal(cdsNext.RemovedResources, []string{"two"}) {
		t.Errorf("after cluster two went, response %v, want only two removed", cdsNext)
	}
	// A proxy that connects now receives cluster one's very entry.
	late := stream.NewDeltaSubscription(nil, nil, nil, true)
	if resp := watchOnce(t, s, &corev3.Node{Id: "p4", Cluster: "a"}, resource.ClusterType, "", &late); resp == nil ||
		len(resp.Resources) != 1 || resp.Resources[0] != clusterOne {
		t.Errorf("a late proxy was sent %v, want cluster one's entry of the first publish", resp)
	}
	// By name: a subscribed route configuration that goes is removed.
	if _, _, err := s.Publish(ctx, "a", &xdstranslator.Resources{Clusters: []types.Resource{one}}); err != nil {
		t.Fatal(err)
	}
	if resp := watchOnce(t, s, p2, resource.RouteType, "3", subs[p2][resource.RouteType]); resp == nil ||
		!slices.Equal(resp.RemovedResources, []string{"rc"}) {
		t.Errorf("after rc went, response %v, want rc removed", resp)
	}
}
