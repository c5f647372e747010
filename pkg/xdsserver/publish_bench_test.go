package xdsserver

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	stream "github.com/envoyproxy/go-control-plane/pkg/server/stream/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xds-controller/xds-controller/pkg/xdstranslator"
)

// BenchmarkPublishRouteChange: one Publish of a scope of 3000 EDS
// clusters with their ClusterLoadAssignments and one route configuration
// of 3000 virtual hosts, after one virtual host changed, as the
// translation hands it over: the same cluster and assignment lists, the
// listener rebuilt equal. proxies=0: nobody subscribed; proxies=2 and
// 100: that many proxies hold delta watches of every type, answered (and
// watched again) as go-control-plane's server does, each response encoded
// as gRPC's codec encodes it, so the cache's responses and their encoding
// per stream count too.
func BenchmarkPublishRouteChange(b *testing.B) {
	for _, proxies := range []int{0, 2, 100} {
		b.Run(fmt.Sprintf("proxies=%d", proxies), func(b *testing.B) { benchPublish(b, proxies, false) })
	}
}

// BenchmarkPublishClusterChange is BenchmarkPublishRouteChange after one
// cluster changed instead (its connect timeout), as the translation hands
// it over: new cluster and assignment lists, with a new cluster and a new
// ClusterLoadAssignment of the same endpoints in its place, the same
// route configurations. Delta proxies receive the cluster and its
// ClusterLoadAssignment again (claVersion).
func BenchmarkPublishClusterChange(b *testing.B) {
	for _, proxies := range []int{0, 2, 100} {
		b.Run(fmt.Sprintf("proxies=%d", proxies), func(b *testing.B) { benchPublish(b, proxies, true) })
	}
}

// benchPublish publishes, per iteration, a scope of 3000 clusters and
// virtual hosts after one virtual host changed, or with cluster one
// cluster, to proxies delta proxies.
func benchPublish(b *testing.B, proxies int, cluster bool) {
	const n = 3000
	r := withConfig(&xdstranslator.Resources{})
	vhosts := make([]*routev3.VirtualHost, n)
	var edsNames []string
	for i := range n {
		name := fmt.Sprintf("svc-%d", i)
		vhosts[i] = vhost(name + ".example.com")
		r.Clusters = append(r.Clusters, &clusterv3.Cluster{Name: name, ConnectTimeout: durationpb.New(time.Second),
			ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS},
			EdsClusterConfig:     &clusterv3.Cluster_EdsClusterConfig{EdsConfig: &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}}}}})
		r.Endpoints = append(r.Endpoints, &endpointv3.ClusterLoadAssignment{ClusterName: name})
		edsNames = append(edsNames, name)
	}
	s := New(slog.Default())
	ctx := context.Background()
	var routes []types.Resource
	publish := func(i int) {
		// A new list, as the translation hands over (a published one is
		// never modified).
		var next *xdstranslator.Resources
		if cluster && routes != nil {
			c := proto.Clone(r.Clusters[i%n]).(*clusterv3.Cluster)
			c.ConnectTimeout = durationpb.New(time.Duration(1+i) * time.Millisecond)
			r.Clusters, r.Endpoints = slices.Clone(r.Clusters), slices.Clone(r.Endpoints)
			r.Clusters[i%n], r.Endpoints[i%n] = c, proto.Clone(r.Endpoints[i%n])
			next = &xdstranslator.Resources{Clusters: r.Clusters, Endpoints: r.Endpoints, Routes: routes}
		} else {
			vhosts = slices.Clone(vhosts)
			vhosts[i%n] = vhost(fmt.Sprintf("svc-%d-%d.example.com", i%n, i))
			next = withConfig(&xdstranslator.Resources{Clusters: r.Clusters, Endpoints: r.Endpoints}, vhosts...)
			routes = next.Routes
		}
		next.Listeners = []types.Resource{proto.Clone(r.Listeners[0])}
		if _, changed, err := s.Publish(ctx, "s", next); err != nil || !changed {
			b.Fatalf("publish %d: changed=%v err=%v, want a published change", i, changed, err)
		}
	}
	publish(0)
	// The proxies' delta watches, by request.
	responses := make(chan cachev3.DeltaResponse, 64+10*proxies)
	watchers := map[*discoveryv3.DeltaDiscoveryRequest]*stream.Subscription{}
	watch := func(req *discoveryv3.DeltaDiscoveryRequest) {
		if _, err := s.cache.mux.CreateDeltaWatch(req, watchers[req], responses); err != nil {
			b.Fatal(err)
		}
	}
	for p := range proxies {
		node := &corev3.Node{Id: fmt.Sprintf("p%d", p), Cluster: "s"}
		for typ, names := range map[string][]string{resource.ClusterType: nil, resource.EndpointType: edsNames,
			resource.ListenerType: nil, resource.RouteType: {"rc"}, resource.SecretType: nil} {
			req := &discoveryv3.DeltaDiscoveryRequest{Node: node, TypeUrl: typ, ResourceNamesSubscribe: names}
			sub := stream.NewDeltaSubscription(names, nil, nil, false)
			watchers[req] = &sub
			watch(req)
		}
	}
	answer := func() {
		for {
			select {
			case resp := <-responses:
				// What the server sends: the response, encoded as
				// gRPC's codec encodes it, per stream.
				d, err := resp.GetDeltaDiscoveryResponse()
				if err != nil {
					b.Fatal(err)
				}
				if _, err := proto.Marshal(d); err != nil {
					b.Fatal(err)
				}
				req := resp.GetDeltaRequest()
				watchers[req].SetReturnedResources(resp.GetReturnedResources())
				watch(req)
			default:
				return
			}
		}
	}
	answer()
	b.ReportAllocs()
	for i := 1; b.Loop(); i++ {
		publish(i)
		answer()
	}
}
