// Package xdsserver serves the xDS configuration to Envoy: go-control-plane's
// ADS server (state-of-the-world and delta) over a snapshot cache keyed by
// proxy scope, on gRPC with mutual TLS.
//
// A proxy's scope is the `cluster` field of its Envoy node (the bootstrap in
// envoy-bootstrap/ sets it). Publish replaces a scope's snapshot only when
// its content changed; the snapshot version is a hash of the content, so
// the same configuration always has the same version, across restarts too.
package xdsserver

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	clusterservice "github.com/envoyproxy/go-control-plane/envoy/service/cluster/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	endpointservice "github.com/envoyproxy/go-control-plane/envoy/service/endpoint/v3"
	listenerservice "github.com/envoyproxy/go-control-plane/envoy/service/listener/v3"
	routeservice "github.com/envoyproxy/go-control-plane/envoy/service/route/v3"
	secretservice "github.com/envoyproxy/go-control-plane/envoy/service/secret/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/protobuf/proto"

	"github.com/xds-controller/xds-controller/pkg/xdstranslator"
)

// ScopeHash keys the snapshot cache by the node's cluster, the proxy scope.
type ScopeHash struct{}

// ID returns node.cluster.
func (ScopeHash) ID(node *corev3.Node) string { return node.GetCluster() }

// Server is the snapshot cache and the ADS server in front of it.
type Server struct {
	cache cachev3.SnapshotCache
	log   *slog.Logger

	mu       sync.Mutex
	versions map[string]string // scope -> published version
}

// New returns a Server with an empty cache. log receives connection and
// NACK messages.
func New(log *slog.Logger) *Server {
	return &Server{
		cache:    cachev3.NewSnapshotCache(true, ScopeHash{}, nil),
		log:      log,
		versions: map[string]string{},
	}
}

// Publish makes r the configuration of scope and returns its version (see
// Version). changed is false, and nothing changes, when r equals what the
// scope already has. It fails when the snapshot is inconsistent (a route or
// cluster referenced but absent).
func (s *Server) Publish(ctx context.Context, scope string, r *xdstranslator.Resources) (version string, changed bool, err error) {
	version, err = Version(r)
	if err != nil {
		return "", false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.versions[scope] == version {
		return version, false, nil
	}
	snap, err := cachev3.NewSnapshot(version, map[resource.Type][]types.Resource{
		resource.ListenerType: r.Listeners,
		resource.RouteType:    r.Routes,
		resource.ClusterType:  r.Clusters,
		resource.EndpointType: r.Endpoints,
		resource.SecretType:   r.Secrets,
	})
	if err != nil {
		return version, false, err
	}
	if err := snap.Consistent(); err != nil {
		return version, false, fmt.Errorf("scope %s: inconsistent snapshot: %w", scope, err)
	}
	if err := s.cache.SetSnapshot(ctx, scope, snap); err != nil {
		return version, false, err
	}
	s.versions[scope] = version
	return version, true, nil
}

// Remove drops a scope that no longer has any Gateway; its proxies then
// receive nothing new until the scope returns.
func (s *Server) Remove(scope string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.versions[scope]; !ok {
		return
	}
	delete(s.versions, scope)
	s.cache.ClearSnapshot(scope)
}

// Scopes returns the scopes that have a published snapshot and their
// versions.
func (s *Server) Scopes() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]string, len(s.versions))
	for k, v := range s.versions {
		out[k] = v
	}
	return out
}

// Version is the content hash of r: the first 16 hex digits of SHA-256 over
// the deterministic protobuf encoding of every resource, in order.
func Version(r *xdstranslator.Resources) (string, error) {
	h := sha256.New()
	for _, list := range [][]types.Resource{r.Listeners, r.Routes, r.Clusters, r.Endpoints, r.Secrets} {
		for _, res := range list {
			b, err := proto.MarshalOptions{Deterministic: true}.Marshal(res)
			if err != nil {
				return "", err
			}
			fmt.Fprintf(h, "%d:", len(b))
			h.Write(b)
		}
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// Serve serves ADS on lis with tlsConfig (which must require and verify a
// client certificate) until ctx ends. It returns the gRPC server's error,
// or nil after ctx ends.
func (s *Server) Serve(ctx context.Context, lis net.Listener, tlsConfig *tls.Config) error {
	if tlsConfig == nil || tlsConfig.ClientAuth != tls.RequireAndVerifyClientCert {
		return errors.New("xds: the server requires mutual TLS")
	}
	srv := serverv3.NewServer(ctx, s.cache, s.callbacks())
	g := grpc.NewServer(
		grpc.Creds(credentials.NewTLS(tlsConfig)),
		grpc.MaxConcurrentStreams(1_000_000),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: 30 * time.Second, Timeout: 5 * time.Second}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 15 * time.Second, PermitWithoutStream: true}),
	)
	discoveryv3.RegisterAggregatedDiscoveryServiceServer(g, srv)
	listenerservice.RegisterListenerDiscoveryServiceServer(g, srv)
	routeservice.RegisterRouteDiscoveryServiceServer(g, srv)
	clusterservice.RegisterClusterDiscoveryServiceServer(g, srv)
	endpointservice.RegisterEndpointDiscoveryServiceServer(g, srv)
	secretservice.RegisterSecretDiscoveryServiceServer(g, srv)
	go func() {
		<-ctx.Done()
		g.GracefulStop()
	}()
	if err := g.Serve(lis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return err
	}
	return nil
}

// callbacks log stream opens and closes and every NACK with Envoy's error
// detail.
func (s *Server) callbacks() serverv3.Callbacks {
	nack := func(node *corev3.Node, typeURL, version string, detail string) {
		s.log.Warn("Envoy rejected configuration (NACK)", "node", node.GetId(), "scope", node.GetCluster(), "type", typeURL, "version", version, "error", detail)
	}
	return serverv3.CallbackFuncs{
		StreamRequestFunc: func(_ int64, req *discoveryv3.DiscoveryRequest) error {
			if req.ErrorDetail != nil {
				nack(req.Node, req.TypeUrl, req.VersionInfo, req.ErrorDetail.GetMessage())
			}
			return nil
		},
		StreamDeltaRequestFunc: func(_ int64, req *discoveryv3.DeltaDiscoveryRequest) error {
			if req.ErrorDetail != nil {
				nack(req.Node, req.TypeUrl, "", req.ErrorDetail.GetMessage())
			}
			return nil
		},
		StreamOpenFunc: func(ctx context.Context, id int64, _ string) error {
			s.log.Debug("xDS stream opened", "stream", id)
			return nil
		},
		StreamClosedFunc: func(id int64, node *corev3.Node) {
			s.log.Debug("xDS stream closed", "stream", id, "node", node.GetId())
		},
		DeltaStreamOpenFunc: func(ctx context.Context, id int64, _ string) error {
			s.log.Debug("delta xDS stream opened", "stream", id)
			return nil
		},
		DeltaStreamClosedFunc: func(id int64, node *corev3.Node) {
			s.log.Debug("delta xDS stream closed", "stream", id, "node", node.GetId())
		},
	}
}
