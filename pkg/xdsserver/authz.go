package xdsserver

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"github.com/spiffe/go-spiffe/v2/spiffeid"
	"github.com/spiffe/go-spiffe/v2/svid/x509svid"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// Who may subscribe to what. The TLS handshake already proved that a peer
// holds an SVID of our CA (an expired or foreign certificate never gets
// this far); here the SVID's SPIFFE ID must be allowed the proxy scope the
// request asks for (its node's cluster). Every RPC the server exposes is
// checked, before the cache sees it: every request of an ADS or
// per-type stream (state of the world and delta), and every unary
// Fetch* call of the per-type discovery services (go-control-plane's
// REST path, OnFetchRequest), which no Envoy of ours uses but which
// would otherwise answer for any scope its request names. A refused
// stream or fetch receives no resource: it ends with PERMISSION_DENIED.

// ScopeTable maps a proxy's SPIFFE ID to the proxy scopes it may
// subscribe to.
type ScopeTable map[spiffeid.ID][]string

// Authorize decides whether id may subscribe to scope under t: nil when
// scope is one of t[id], else a gRPC PERMISSION_DENIED status error that
// names both. It is pure.
func Authorize(t ScopeTable, id spiffeid.ID, scope string) error {
	if scope == "" {
		return status.Errorf(codes.PermissionDenied, "xDS: %s sent no node cluster (proxy scope)", id)
	}
	if slices.Contains(t[id], scope) {
		return nil
	}
	return status.Errorf(codes.PermissionDenied, "xDS: %s may not subscribe to proxy scope %q", id, scope)
}

// Authorizer holds the current ScopeTable (the controller replaces it
// after every translation). Before the first Set every stream is refused
// with UNAVAILABLE: the proxy retries later.
type Authorizer struct {
	mu    sync.RWMutex
	table ScopeTable
	set   bool
}

// Set replaces the table; the caller must not change t afterwards.
func (a *Authorizer) Set(t ScopeTable) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.table, a.set = t, true
}

// Known reports whether id may subscribe to any scope: it is the
// identity of one of our fleets (identity.Fleets).
func (a *Authorizer) Known(id spiffeid.ID) bool {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return len(a.table[id]) > 0
}

// Authorize is Authorize on the current table.
func (a *Authorizer) Authorize(id spiffeid.ID, scope string) error {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if !a.set {
		return status.Error(codes.Unavailable, "xDS: the controller has not translated its configuration yet")
	}
	return Authorize(a.table, id, scope)
}

// PeerID is the SPIFFE ID of the client certificate of the gRPC peer in
// ctx (x509svid.IDFromCert of the verified leaf). It fails when the peer
// did not authenticate with TLS or its certificate is not an SVID.
func PeerID(ctx context.Context) (spiffeid.ID, error) {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return spiffeid.ID{}, errors.New("no peer")
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(info.State.VerifiedChains) == 0 || len(info.State.PeerCertificates) == 0 {
		return spiffeid.ID{}, errors.New("no verified client certificate")
	}
	return x509svid.IDFromCert(info.State.PeerCertificates[0])
}

// authzCallbacks wrap the server's callbacks: a stream's peer ID is read
// when it opens, and every request is authorized before the inner
// callbacks and the cache see it.
type authzCallbacks struct {
	serverv3.Callbacks
	authz *Authorizer
	log   *slog.Logger

	mu      sync.Mutex
	streams map[int64]*streamAuth
}

// streamAuth is what a stream proved: its peer, and the scope of its
// first authorized request.
type streamAuth struct {
	peer  spiffeid.ID
	scope string
}

func withAuthorization(inner serverv3.Callbacks, a *Authorizer, log *slog.Logger) serverv3.Callbacks {
	return &authzCallbacks{Callbacks: inner, authz: a, log: log, streams: map[int64]*streamAuth{}}
}

func (c *authzCallbacks) open(ctx context.Context, id int64) error {
	pid, err := PeerID(ctx)
	if err != nil {
		return status.Errorf(codes.Unauthenticated, "xDS: %v", err)
	}
	c.mu.Lock()
	c.streams[id] = &streamAuth{peer: pid}
	c.mu.Unlock()
	return nil
}

func (c *authzCallbacks) close(id int64) {
	c.mu.Lock()
	delete(c.streams, id)
	c.mu.Unlock()
}

// check authorizes one request of stream id. Envoy sends its node on the
// first request only (set_node_on_first_message_only): a later request
// without one is checked against the scope the stream started with (a
// delta request's node is filled in only after the callbacks).
func (c *authzCallbacks) check(id int64, node *corev3.Node) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.streams[id]
	if !ok {
		return status.Error(codes.Unauthenticated, "xDS: stream without an authenticated peer")
	}
	scope := st.scope
	if node != nil {
		scope = node.GetCluster()
	}
	if err := c.authz.Authorize(st.peer, scope); err != nil {
		c.log.Warn("xDS stream refused", "stream", id, "peer", st.peer.String(), "scope", scope, "error", err)
		return err
	}
	st.scope = scope
	return nil
}

func (c *authzCallbacks) OnStreamOpen(ctx context.Context, id int64, typeURL string) error {
	if err := c.open(ctx, id); err != nil {
		return err
	}
	return c.Callbacks.OnStreamOpen(ctx, id, typeURL)
}

func (c *authzCallbacks) OnDeltaStreamOpen(ctx context.Context, id int64, typeURL string) error {
	if err := c.open(ctx, id); err != nil {
		return err
	}
	return c.Callbacks.OnDeltaStreamOpen(ctx, id, typeURL)
}

func (c *authzCallbacks) OnStreamClosed(id int64, node *corev3.Node) {
	c.close(id)
	c.Callbacks.OnStreamClosed(id, node)
}

func (c *authzCallbacks) OnDeltaStreamClosed(id int64, node *corev3.Node) {
	c.close(id)
	c.Callbacks.OnDeltaStreamClosed(id, node)
}

func (c *authzCallbacks) OnStreamRequest(id int64, req *discoveryv3.DiscoveryRequest) error {
	if err := c.check(id, req.GetNode()); err != nil {
		return err
	}
	return c.Callbacks.OnStreamRequest(id, req)
}

func (c *authzCallbacks) OnStreamDeltaRequest(id int64, req *discoveryv3.DeltaDiscoveryRequest) error {
	if err := c.check(id, req.GetNode()); err != nil {
		return err
	}
	return c.Callbacks.OnStreamDeltaRequest(id, req)
}

// OnFetchRequest authorizes a unary fetch (FetchListeners, FetchRoutes,
// FetchClusters, FetchEndpoints, FetchSecrets): its peer's SVID must be
// allowed the scope its request's node names, exactly as on a stream.
// A fetch carries its node on every request, so there is no stream state.
func (c *authzCallbacks) OnFetchRequest(ctx context.Context, req *discoveryv3.DiscoveryRequest) error {
	pid, err := PeerID(ctx)
	if err != nil {
		return status.Errorf(codes.Unauthenticated, "xDS: %v", err)
	}
	if err := c.authz.Authorize(pid, req.GetNode().GetCluster()); err != nil {
		c.log.Warn("xDS fetch refused", "peer", pid.String(), "scope", req.GetNode().GetCluster(), "type", req.GetTypeUrl(), "error", err)
		return err
	}
	return c.Callbacks.OnFetchRequest(ctx, req)
}

// Authorizer is the server's: set its table to let proxies in.
func (s *Server) Authorizer() *Authorizer { return s.authz }
