package xdsserver

import (
	"context"
	"crypto/tls"
	"log/slog"
	"slices"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/xds-controller/xds-controller/pkg/xdstranslator"
)

// deltaProxy plays an Envoy on a delta ADS stream of scope "a": it
// subscribes to every cluster and listener, to ClusterLoadAssignment
// "eds" and route configuration "rc".
type deltaProxy struct {
	t      *testing.T
	stream discoveryv3.AggregatedDiscoveryService_DeltaAggregatedResourcesClient
	node   *corev3.Node
}

func connectDelta(t *testing.T, addr string, client *tls.Config, nodeID string) *deltaProxy {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(client)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(func() { cancel(); conn.Close() })
	stream, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).DeltaAggregatedResources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p := &deltaProxy{t: t, stream: stream, node: &corev3.Node{Id: nodeID, Cluster: "a"}}
	for typ, names := range map[string][]string{resource.ClusterType: nil, resource.EndpointType: {"eds"},
		resource.ListenerType: nil, resource.RouteType: {"rc"}} {
		if err := stream.Send(&discoveryv3.DeltaDiscoveryRequest{Node: p.node, TypeUrl: typ, ResourceNamesSubscribe: names}); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// next receives a response, ACKs it, and returns its type's short name
// and system version.
func (p *deltaProxy) next() (typ, version string) {
	p.t.Helper()
	resp := p.response()
	return typeName(resp.GetTypeUrl()), resp.GetSystemVersionInfo()
}

// response receives a response, ACKs it, and returns it.
func (p *deltaProxy) response() *discoveryv3.DeltaDiscoveryResponse {
	p.t.Helper()
	resp, err := p.stream.Recv()
	if err != nil {
		p.t.Fatal(err)
	}
	if err := p.stream.Send(&discoveryv3.DeltaDiscoveryRequest{Node: p.node, TypeUrl: resp.GetTypeUrl(), ResponseNonce: resp.GetNonce()}); err != nil {
		p.t.Fatal(err)
	}
	return resp
}

// waitAcked waits until the proxy's ACK of generation gen of the
// ClusterLoadAssignments is recorded (its next EDS watch is then open).
func waitAcked(t *testing.T, s *Server, gen uint64) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if pv := s.View()["a"].Proxies; len(pv) == 1 && pv[0].Acked[resource.EndpointType] == gen {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("proxy view %+v, want the ClusterLoadAssignments ACKed at generation %d", s.View()["a"].Proxies, gen)
		}
	}
}

// TestDeltaResponsesOnlyForChangedTypes: over delta ADS, a publish that
// changes only the route configurations sends only a
// RouteConfiguration response, and one that changes the clusters and
// their assignments only those, in ADS order, each labelled with the
// version published; a cluster change sends its unchanged
// ClusterLoadAssignment again, after it; a proxy that ACKed them holds the newest version
// of every type (its listener was carried forward), and a proxy that
// connects afterwards receives every type labelled with the newest
// version.
func TestDeltaResponsesOnlyForChangedTypes(t *testing.T) {
	s := New(slog.Default())
	ctx := context.Background()
	edsCluster := &clusterv3.Cluster{Name: "eds", ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS},
		EdsClusterConfig: &clusterv3.Cluster_EdsClusterConfig{EdsConfig: &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}}}}}
	config := func(host string, endpoints int) *xdstranslator.Resources {
		cla := &endpointv3.ClusterLoadAssignment{ClusterName: "eds"}
		for range endpoints {
			cla.Endpoints = append(cla.Endpoints, &endpointv3.LocalityLbEndpoints{})
		}
		r := withConfig(&xdstranslator.Resources{}, vhost(host))
		r.Clusters = []types.Resource{edsCluster}
		r.Endpoints = []types.Resource{cla}
		return r
	}
	publish := func(r *xdstranslator.Resources) string {
		t.Helper()
		v, changed, err := s.Publish(ctx, "a", r)
		if err != nil || !changed {
			t.Fatalf("publish: changed=%v err=%v", changed, err)
		}
		return v
	}
	v1 := publish(config("a.example.com", 1))
	addr, client := serveWith(t, s)
	p := connectDelta(t, addr, client, "p1")
	got := map[string]string{}
	for range 4 {
		typ, v := p.next()
		got[typ] = v
	}
	for _, typ := range []string{"Cluster", "ClusterLoadAssignment", "Listener", "RouteConfiguration"} {
		if got[typ] != v1 {
			t.Errorf("first responses: %s labelled %q, want %s", typ, got[typ], v1)
		}
	}

	v2 := publish(config("b.example.com", 1))
	if typ, v := p.next(); typ != "RouteConfiguration" || v != v2 {
		t.Errorf("after a route change the proxy received %s %s, want RouteConfiguration %s", typ, v, v2)
	}
	v3 := publish(config("b.example.com", 2))
	if typ, v := p.next(); typ != "ClusterLoadAssignment" || v != v3 {
		t.Errorf("after an endpoint change the proxy received %s %s, want ClusterLoadAssignment %s (nothing else before it)", typ, v, v3)
	}
	// A cluster change sends the cluster and then its
	// ClusterLoadAssignment again, unchanged: Envoy warms the modified
	// cluster anew and waits for it (claVersion).
	waitAcked(t, s, 3)
	edsCluster = &clusterv3.Cluster{Name: "eds", ConnectTimeout: edsCluster.ConnectTimeout, ClusterDiscoveryType: edsCluster.ClusterDiscoveryType,
		EdsClusterConfig: edsCluster.EdsClusterConfig, LbPolicy: clusterv3.Cluster_RANDOM}
	v4 := publish(config("c.example.com", 2))
	var order []string
	for range 3 {
		resp := p.response()
		typ, v := typeName(resp.GetTypeUrl()), resp.GetSystemVersionInfo()
		if v != v4 {
			t.Errorf("after a cluster and route change the proxy received %s labelled %s, want %s", typ, v, v4)
		}
		if typ == "ClusterLoadAssignment" {
			cla := &endpointv3.ClusterLoadAssignment{}
			if len(resp.GetResources()) != 1 || resp.GetResources()[0].GetResource().UnmarshalTo(cla) != nil || cla.GetClusterName() != "eds" || len(cla.GetEndpoints()) != 2 {
				t.Errorf("after a cluster change the proxy received the ClusterLoadAssignments %v, want eds with its 2 endpoints", resp.GetResources())
			}
		}
		order = append(order, typ)
	}
	if !slices.Equal(order, []string{"Cluster", "ClusterLoadAssignment", "RouteConfiguration"}) {
		t.Errorf("after a cluster and route change the proxy received %v, want [Cluster ClusterLoadAssignment RouteConfiguration]", order)
	}

	// The ACKs are recorded: every type of p1 is at the newest generation.
	deadline := time.Now().Add(5 * time.Second)
	for {
		pv := s.View()["a"].Proxies
		ok := len(pv) == 1
		for _, typ := range []string{resource.ClusterType, resource.EndpointType, resource.ListenerType, resource.RouteType} {
			ok = ok && pv[0].Acked[typ] == s.View()["a"].Generation
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("proxy view %+v, want every type at generation %d", pv, s.View()["a"].Generation)
		}
		time.Sleep(10 * time.Millisecond)
	}

	late := connectDelta(t, addr, client, "p2")
	for range 4 {
		if typ, v := late.next(); v != v4 {
			t.Errorf("a proxy connecting after the publishes received %s labelled %s, want %s", typ, v, v4)
		}
	}
}
