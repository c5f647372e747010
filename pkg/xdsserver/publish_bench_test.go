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
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xds-controller/xds-controller/pkg/xdstranslator"
)

// BenchmarkPublishRouteChange: one Publish of a scope of 3000 EDS
// clusters with their ClusterLoadAssignments and one route configuration
// of 3000 virtual hosts, after one virtual host changed, as the
// translation hands it over: the same cluster and assignment lists, the
// listener rebuilt equal. No proxy is subscribed, so go-control-plane's
// responses are not part of it.
func BenchmarkPublishRouteChange(b *testing.B) {
	const n = 3000
	r := withConfig(&xdstranslator.Resources{})
	vhosts := make([]*routev3.VirtualHost, n)
	for i := range n {
		name := fmt.Sprintf("svc-%d", i)
		vhosts[i] = vhost(name + ".example.com")
		r.Clusters = append(r.Clusters, &clusterv3.Cluster{Name: name, ConnectTimeout: durationpb.New(time.Second),
			ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS},
			EdsClusterConfig:     &clusterv3.Cluster_EdsClusterConfig{EdsConfig: &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}}}}})
		r.Endpoints = append(r.Endpoints, &endpointv3.ClusterLoadAssignment{ClusterName: name})
	}
	s := New(slog.Default())
	ctx := context.Background()
	publish := func(i int) {
		// A new list, as the translation hands over (a published one is
		// never modified).
		vhosts = slices.Clone(vhosts)
		vhosts[i%n] = vhost(fmt.Sprintf("svc-%d-%d.example.com", i%n, i))
		next := withConfig(&xdstranslator.Resources{Clusters: r.Clusters, Endpoints: r.Endpoints}, vhosts...)
		next.Listeners = []types.Resource{proto.Clone(r.Listeners[0])}
		if _, changed, err := s.Publish(ctx, "s", next); err != nil || !changed {
			b.Fatalf("publish %d: changed=%v err=%v, want a published change", i, changed, err)
		}
	}
	publish(0)
	b.ReportAllocs()
	for i := 1; b.Loop(); i++ {
		publish(i)
	}
}
