// Package xdsserver serves the xDS configuration to Envoy: go-control-plane's
// ADS server (state-of-the-world and delta) over snapshot caches keyed by
// proxy scope (one per resource type for delta: typecaches.go), on gRPC
// with mutual TLS.
//
// A proxy's scope is the `cluster` field of its Envoy node (the bootstrap in
// envoy-bootstrap/ sets it). Publish replaces a scope's snapshot only when
// its content changed; the snapshot version is a hash of the content, so
// the same configuration always has the same version, across restarts too.
package xdsserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	clusterservice "github.com/envoyproxy/go-control-plane/envoy/service/cluster/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	endpointservice "github.com/envoyproxy/go-control-plane/envoy/service/endpoint/v3"
	listenerservice "github.com/envoyproxy/go-control-plane/envoy/service/listener/v3"
	routeservice "github.com/envoyproxy/go-control-plane/envoy/service/route/v3"
	secretservice "github.com/envoyproxy/go-control-plane/envoy/service/secret/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/peer"

	"github.com/xds-controller/xds-controller/pkg/xdstranslator"
)

// ScopeHash keys the snapshot cache by the node's cluster, the proxy scope.
type ScopeHash struct{}

// ID returns node.cluster.
func (ScopeHash) ID(node *corev3.Node) string { return node.GetCluster() }

// Server is the snapshot caches and the ADS server in front of them, with the
// ACK/NACK bookkeeping of every connected proxy (generations.go).
type Server struct {
	cache   *typeCaches
	log     *slog.Logger
	metrics metrics
	authz   *Authorizer

	mu     sync.Mutex
	scopes map[string]*scopeState
	// digesters keep each scope's resource digests (digest.go).
	digesters map[string]*digester
	acks      *Tracker
	nacks     []Nack
	nackSeq   uint64
	// peers are the other replicas' reports (peers.go); peerNacks the
	// NACKs of theirs already listed in nacks.
	peers     map[string]Report
	peerNacks map[peerNackKey]bool
	// svids: "namespace/pod" -> NotAfter of the newest SVID this
	// replica's identity service issued to the pod (RecordSVID).
	svids map[string]time.Time
	// now is the clock (publish times, SVID expiry); time.Now.
	now func() time.Time

	subMu sync.Mutex
	subs  []chan struct{}
}

// New returns a Server with an empty cache. log receives connection and
// NACK messages.
func New(log *slog.Logger) *Server {
	return &Server{
		cache:     newTypeCaches(),
		log:       log,
		metrics:   newMetrics(),
		scopes:    map[string]*scopeState{},
		digesters: map[string]*digester{},
		acks:      NewTracker(),
		authz:     &Authorizer{},
		peerNacks: map[peerNackKey]bool{},
		svids:     map[string]time.Time{},
		now:       time.Now,
	}
}

// Publish makes r the configuration of scope, as its next generation, and
// returns its version (see Version). changed is false, and nothing changes,
// when r equals what the scope was last given. It fails, and nothing
// changes, when a resource breaks its proto validation rules (ValidateAll)
// or the snapshot is inconsistent (a route or cluster referenced but
// absent). A version that a proxy rejected before becomes the scope's
// generation but is not served again: the error says so, and the scope
// keeps serving the last accepted one.
func (s *Server) Publish(ctx context.Context, scope string, r *xdstranslator.Resources) (version string, changed bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.digesters[scope]
	if d == nil {
		d = &digester{validate: true}
		s.digesters[scope] = d
	}
	ds, err := d.digests(r)
	if err != nil {
		delete(s.digesters, scope)
		return "", false, err
	}
	version = d.version(ds)
	st := s.scopes[scope]
	if st != nil && st.desired == version {
		return version, false, nil
	}
	if err := invalid(r, ds); err != nil {
		return version, false, fmt.Errorf("scope %s: %w", scope, err)
	}
	// The resources' versions, for delta xDS, are their digests,
	// computed once per resource (go-control-plane would hash every
	// resource of every snapshot).
	snap, wire, err := d.snapshot(version, r, ds)
	if err != nil {
		delete(s.digesters, scope)
		return version, false, fmt.Errorf("scope %s: %w", scope, err)
	}
	if err := d.consistent(r, snap); err != nil {
		return version, false, fmt.Errorf("scope %s: inconsistent snapshot: %w", scope, err)
	}
	if st == nil {
		st = newScopeState()
		s.scopes[scope] = st
	}
	st.published(version, snap, s.now())
	st.digestTypes(version, d.typeSums())
	defer func() { go s.notify() }()
	// A peer may have seen this version ACKed or rejected already.
	if s.applyPeers(scope, st) && st.served != "" && st.served != version {
		go s.withdraw(scope, st.served)
	}
	if n, bad := st.rejected[version]; bad {
		return version, true, fmt.Errorf("scope %s: Envoy proxy %s rejected this configuration before (%s); the scope keeps serving generation %d",
			scope, n.NodeID, n.Detail, st.genOf[st.served])
	}
	if err := s.cache.set(ctx, scope, version, snap, wire); err != nil {
		return version, false, err
	}
	st.served = version
	st.snaps[version] = snap
	st.remember(version)
	s.acks.CarryForward(scope, version, func(typeURL, acked string) bool { return st.sameResources(typeURL, acked, version) })
	st.prune()
	// Peers' ACKs of this version count once its snapshot is held here
	// (their reports may have come first).
	s.applyPeers(scope, st)
	return version, true, nil
}

// Remove drops a scope that no longer has any Gateway; its proxies then
// receive nothing new until the scope returns.
func (s *Server) Remove(scope string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.scopes[scope]; !ok {
		return
	}
	delete(s.scopes, scope)
	delete(s.digesters, scope)
	s.cache.clear(scope)
	go s.notify()
}

// Scopes returns the scopes that have a published snapshot and the
// versions last published to them.
func (s *Server) Scopes() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]string, len(s.scopes))
	for k, st := range s.scopes {
		out[k] = st.desired
	}
	return out
}

// Served returns the version the cache serves to scope's proxies: the
// last published one, or after a NACK the last accepted one.
func (s *Server) Served(scope string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.scopes[scope]; st != nil {
		return st.served
	}
	return ""
}

// Version is the content hash of r: the first 16 hex digits of SHA-256 over
// the SHA-256 of each list's digests, in order (digest.go: a resource's
// digest is the SHA-256 of its deterministic protobuf encoding; a route
// configuration's combines its virtual hosts'). Publish versions
// snapshots so.
func Version(r *xdstranslator.Resources) (string, error) {
	d := &digester{}
	ds, err := d.digests(r)
	if err != nil {
		return "", err
	}
	return d.version(ds), nil
}

// Serve serves ADS on lis with tlsConfig (which must require and verify a
// client certificate) until ctx ends. Every stream is authorized by the
// Authorizer (authz.go). It returns the gRPC server's error,
// or nil after ctx ends.
func (s *Server) Serve(ctx context.Context, lis net.Listener, tlsConfig *tls.Config) error {
	if tlsConfig == nil || tlsConfig.ClientAuth != tls.RequireAndVerifyClientCert {
		return errors.New("xds: the server requires mutual TLS")
	}
	srv := serverv3.NewServer(ctx, s.cache.mux, withAuthorization(s.callbacks(), s.authz, s.log))
	g := grpc.NewServer(
		grpc.Creds(credentials.NewTLS(tlsConfig)),
		grpc.MaxConcurrentStreams(1_000_000),
		// Per connection, gRPC keeps a 32 KiB read buffer and a 32 KiB
		// write buffer for its lifetime by default; at a thousand
		// proxies that was 64 MB for connections that are idle between
		// changes. TLS buffers what it reads already (a record at a
		// time), and the write buffer is taken from a pool for each write.
		grpc.ReadBufferSize(0),
		grpc.SharedWriteBuffer(true),
		// A connection is pinged after 30 s without activity and closed
		// when the ping's answer takes over 20 s (gRPC's default). Envoy
		// answers on its main thread, the one that applies a large
		// configuration: with 5 s, 1000 simulated proxies syncing 3000
		// clusters at once had hundreds of streams closed and synced
		// again (docs/performance.md, "Many proxies on the local
		// cluster"), with 20 s none.
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: 30 * time.Second, Timeout: 20 * time.Second}),
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

// callbacks feed every request and response into the ACK/NACK bookkeeping
// (generations.go) and log stream opens and closes.
func (s *Server) callbacks() serverv3.Callbacks {
	return serverv3.CallbackFuncs{
		StreamRequestFunc: func(id int64, req *discoveryv3.DiscoveryRequest) error {
			s.onRequest(id, req.GetNode().GetId(), req.GetNode().GetCluster(), req.GetTypeUrl(), req.GetVersionInfo(),
				req.GetResponseNonce(), req.GetErrorDetail() != nil, req.GetErrorDetail().GetMessage())
			return nil
		},
		StreamResponseFunc: func(_ context.Context, id int64, _ *discoveryv3.DiscoveryRequest, resp *discoveryv3.DiscoveryResponse) {
			s.onResponse(id, resp.GetTypeUrl(), resp.GetNonce(), resp.GetVersionInfo())
		},
		StreamDeltaRequestFunc: func(id int64, req *discoveryv3.DeltaDiscoveryRequest) error {
			internRequest(req)
			s.onRequest(id, req.GetNode().GetId(), req.GetNode().GetCluster(), req.GetTypeUrl(), "",
				req.GetResponseNonce(), req.GetErrorDetail() != nil, req.GetErrorDetail().GetMessage())
			if req.GetResponseNonce() == "" && len(req.GetInitialResourceVersions()) > 0 {
				_, scope := s.nodeOf(id)
				names := req.GetResourceNamesSubscribe()
				wildcard := len(names) == 0 || slices.Contains(names, "*")
				s.onDeltaInitial(id, scope, req.GetTypeUrl(), req.GetInitialResourceVersions(), wildcard)
			}
			return nil
		},
		StreamDeltaResponseFunc: func(id int64, _ *discoveryv3.DeltaDiscoveryRequest, resp *discoveryv3.DeltaDiscoveryResponse) {
			s.onResponse(id, resp.GetTypeUrl(), resp.GetNonce(), resp.GetSystemVersionInfo())
		},
		StreamOpenFunc: func(ctx context.Context, id int64, _ string) error {
			s.log.Debug("xDS stream opened", "stream", id)
			s.onOpen(ctx, id)
			return nil
		},
		StreamClosedFunc: func(id int64, node *corev3.Node) {
			s.log.Debug("xDS stream closed", "stream", id, "node", node.GetId())
			s.onClosed(id)
		},
		DeltaStreamOpenFunc: func(ctx context.Context, id int64, _ string) error {
			s.log.Debug("delta xDS stream opened", "stream", id)
			s.onOpen(ctx, id)
			return nil
		},
		DeltaStreamClosedFunc: func(id int64, node *corev3.Node) {
			s.log.Debug("delta xDS stream closed", "stream", id, "node", node.GetId())
			s.onClosed(id)
		},
	}
}

// onOpen records when a stream opened and the expiry of the client
// certificate (the proxy's SVID) it authenticated with, for Report.
func (s *Server) onOpen(ctx context.Context, stream int64) {
	var expiry time.Time
	if p, ok := peer.FromContext(ctx); ok {
		if info, ok := p.AuthInfo.(credentials.TLSInfo); ok && len(info.State.PeerCertificates) > 0 {
			expiry = info.State.PeerCertificates[0].NotAfter
		}
	}
	s.mu.Lock()
	s.acks.Opened(stream, s.now(), expiry)
	s.mu.Unlock()
}
