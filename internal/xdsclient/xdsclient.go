// Package xdsclient is a minimal ADS client for tests: it connects like an
// Envoy of one proxy scope and reports what the server sends.
package xdsclient

import (
	"context"
	"crypto/tls"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// FetchClusters opens a state-of-the-world ADS stream to addr over TLS
// (client), as node "p1" of the given scope (node cluster), asks for
// clusters and returns the names in the first response. It fails on a
// refused handshake, a refused stream, or after 5 seconds.
func FetchClusters(addr string, client *tls.Config, scope string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(client)))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	stream, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(ctx)
	if err != nil {
		return nil, err
	}
	if err := stream.Send(&discoveryv3.DiscoveryRequest{Node: &corev3.Node{Id: "p1", Cluster: scope}, TypeUrl: resource.ClusterType}); err != nil {
		return nil, err
	}
	resp, err := stream.Recv()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, a := range resp.Resources {
		c := &clusterv3.Cluster{}
		if err := a.UnmarshalTo(c); err != nil {
			return nil, err
		}
		names = append(names, c.Name)
	}
	return names, nil
}

// FetchClustersDelta is FetchClusters over an incremental (delta) ADS
// stream.
func FetchClustersDelta(addr string, client *tls.Config, scope string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(client)))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	stream, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).DeltaAggregatedResources(ctx)
	if err != nil {
		return nil, err
	}
	if err := stream.Send(&discoveryv3.DeltaDiscoveryRequest{Node: &corev3.Node{Id: "p1", Cluster: scope}, TypeUrl: resource.ClusterType}); err != nil {
		return nil, err
	}
	resp, err := stream.Recv()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, r := range resp.Resources {
		c := &clusterv3.Cluster{}
		if err := r.GetResource().UnmarshalTo(c); err != nil {
			return nil, err
		}
		names = append(names, c.Name)
	}
	return names, nil
}
