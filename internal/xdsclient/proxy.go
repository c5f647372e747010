package xdsclient

import (
	"context"
	"crypto/tls"
	"slices"
	"sync"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// Proxy plays an Envoy on a state-of-the-world ADS stream: it subscribes
// to every Cluster, Listener and RouteConfiguration and ACKs each response,
// or NACKs it while Reject has set a message.
type Proxy struct {
	conn   *grpc.ClientConn
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	reject string
	// rejectDomain, rejectMsg: NACK route configurations with a virtual
	// host of that domain (RejectDomain).
	rejectDomain, rejectMsg string
	accepted                map[string]string // type URL -> version
	// domains are the virtual host domains of the route configurations
	// last accepted.
	domains []string
}

// Connect opens the stream to addr over TLS (client) as node nodeID of
// scope (node cluster) and starts answering responses.
func Connect(addr string, client *tls.Config, nodeID, scope string) (*Proxy, error) {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(client)))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	stream, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(ctx)
	if err != nil {
		cancel()
		conn.Close()
		return nil, err
	}
	p := &Proxy{conn: conn, cancel: cancel, done: make(chan struct{}), accepted: map[string]string{}}
	node := &corev3.Node{Id: nodeID, Cluster: scope}
	for _, typ := range []string{resource.ClusterType, resource.ListenerType, resource.RouteType} {
		if err := stream.Send(&discoveryv3.DiscoveryRequest{Node: node, TypeUrl: typ}); err != nil {
			cancel()
			conn.Close()
			return nil, err
		}
	}
	go func() {
		defer close(p.done)
		for {
			resp, err := stream.Recv()
			if err != nil {
				return
			}
			req := &discoveryv3.DiscoveryRequest{Node: node, TypeUrl: resp.TypeUrl, ResponseNonce: resp.Nonce}
			p.mu.Lock()
			reject := p.reject
			if reject == "" && p.rejectDomain != "" && hasDomain(resp, p.rejectDomain) {
				reject = p.rejectMsg
			}
			if reject != "" {
				req.VersionInfo = p.accepted[resp.TypeUrl]
				req.ErrorDetail = &statuspb.Status{Code: 3, Message: reject}
			} else {
				p.accepted[resp.TypeUrl] = resp.VersionInfo
				if resp.TypeUrl == resource.RouteType {
					p.domains = domains(resp)
				}
				req.VersionInfo = resp.VersionInfo
			}
			p.mu.Unlock()
			if err := stream.Send(req); err != nil {
				return
			}
		}
	}()
	return p, nil
}

// Reject makes the proxy NACK every following response with msg, or ACK
// them again when msg is "".
func (p *Proxy) Reject(msg string) {
	p.mu.Lock()
	p.reject = msg
	p.mu.Unlock()
}

// RejectDomain makes the proxy NACK, with msg, every following response
// of route configurations of which one has a virtual host for domain, as
// Envoy refuses a route configuration with one bad route ("" for domain
// stops it).
func (p *Proxy) RejectDomain(domain, msg string) {
	p.mu.Lock()
	p.rejectDomain, p.rejectMsg = domain, msg
	p.mu.Unlock()
}

// hasDomain reports whether resp carries a route configuration with a
// virtual host for domain.
func hasDomain(resp *discoveryv3.DiscoveryResponse, domain string) bool {
	return resp.TypeUrl == resource.RouteType && slices.Contains(domains(resp), domain)
}

// domains are the virtual host domains of the route configurations of
// resp.
func domains(resp *discoveryv3.DiscoveryResponse) []string {
	var out []string
	for _, a := range resp.Resources {
		var rc routev3.RouteConfiguration
		if a.UnmarshalTo(&rc) != nil {
			continue
		}
		for _, vh := range rc.VirtualHosts {
			out = append(out, vh.Domains...)
		}
	}
	return out
}

// Domains returns the virtual host domains of the route configurations
// last accepted (what a real Envoy would route).
func (p *Proxy) Domains() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.domains)
}

// Accepted returns the version last accepted of typeURL.
func (p *Proxy) Accepted(typeURL string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted[typeURL]
}

// Close ends the stream and the connection.
func (p *Proxy) Close() {
	p.cancel()
	p.conn.Close()
	<-p.done
}
