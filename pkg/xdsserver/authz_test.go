package xdsserver

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	clusterservice "github.com/envoyproxy/go-control-plane/envoy/service/cluster/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	endpointservice "github.com/envoyproxy/go-control-plane/envoy/service/endpoint/v3"
	listenerservice "github.com/envoyproxy/go-control-plane/envoy/service/listener/v3"
	routeservice "github.com/envoyproxy/go-control-plane/envoy/service/route/v3"
	secretservice "github.com/envoyproxy/go-control-plane/envoy/service/secret/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/spiffe/go-spiffe/v2/spiffeid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/xds-controller/xds-controller/internal/xdsclient"
	"github.com/xds-controller/xds-controller/pkg/pki"
)

func TestAuthorize(t *testing.T) {
	shared := spiffeid.RequireFromString("spiffe://cluster.local/ns/xds-system/sa/envoy-xds")
	web := spiffeid.RequireFromString("spiffe://cluster.local/ns/apps/sa/web-xds")
	foreign := spiffeid.RequireFromString("spiffe://other.domain/ns/apps/sa/web-xds")
	table := ScopeTable{shared: {"gatewayclass/xds"}, web: {"gateway/apps/web"}}
	for _, tc := range []struct {
		id    spiffeid.ID
		scope string
		ok    bool
	}{
		{shared, "gatewayclass/xds", true},
		{web, "gateway/apps/web", true},
		{shared, "gateway/apps/web", false},
		{web, "gatewayclass/xds", false},
		{web, "gateway/apps/other", false},
		{foreign, "gateway/apps/web", false},
		{web, "", false},
	} {
		err := Authorize(table, tc.id, tc.scope)
		if tc.ok != (err == nil) {
			t.Errorf("%s -> %q: %v", tc.id, tc.scope, err)
		}
		if err != nil && status.Code(err) != codes.PermissionDenied {
			t.Errorf("%s -> %q: code %s, want PermissionDenied", tc.id, tc.scope, status.Code(err))
		}
	}
}

// TestStreamsAreAuthorized: over a real TLS connection, a proxy gets the
// configuration of its own scope, on SotW and delta streams, and a proxy
// of another scope is refused with PERMISSION_DENIED and no resource.
func TestStreamsAreAuthorized(t *testing.T) {
	addr, ca := serve(t)
	clientTLS := func(path string) *tls.Config {
		svid, err := ca.Issue(spiffeid.RequireFromPath(td, path), time.Hour, pki.ClientAuth, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		pair, _ := tls.X509KeyPair(svid.CertPEM, svid.KeyPEM)
		return &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost", Certificates: []tls.Certificate{pair}}
	}
	shared, web := clientTLS("/ns/x/sa/envoy"), clientTLS("/ns/y/sa/web-xds")
	for name, fetch := range map[string]func(string, *tls.Config, string) ([]string, error){
		"sotw": xdsclient.FetchClusters, "delta": xdsclient.FetchClustersDelta,
	} {
		if names, err := fetch(addr, shared, "gatewayclass/demo"); err != nil || len(names) != 1 {
			t.Errorf("%s: own scope: %v %v", name, names, err)
		}
		names, err := fetch(addr, web, "gatewayclass/demo")
		if status.Code(err) != codes.PermissionDenied || len(names) != 0 {
			t.Fatalf("%s: another fleet's scope: clusters %v, error %v; want PERMISSION_DENIED", name, names, err)
		}
		if !strings.Contains(err.Error(), `spiffe://test.local/ns/y/sa/web-xds may not subscribe to proxy scope "gatewayclass/demo"`) {
			t.Errorf("%s: message %q", name, err)
		}
		t.Logf("%s: %v", name, err)
	}
}

func TestStreamsBeforeTheFirstTableAreUnavailable(t *testing.T) {
	ca, _, _ := pki.NewCA(td, time.Hour)
	srvCert, _ := ca.Issue(spiffeid.RequireFromPath(td, "/ns/x/sa/controller"), time.Hour, pki.ServerAuth, []string{"localhost"}, nil)
	pair, _ := tls.X509KeyPair(srvCert.CertPEM, srvCert.KeyPEM)
	s := New(slog.Default())
	lis, _ := net.Listen("tcp", "127.0.0.1:0")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- s.Serve(ctx, lis, &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool()})
	}()
	defer func() { cancel(); <-done }()
	svid, _ := ca.Issue(spiffeid.RequireFromPath(td, "/ns/x/sa/envoy"), time.Hour, pki.ClientAuth, nil, nil)
	cp, _ := tls.X509KeyPair(svid.CertPEM, svid.KeyPEM)
	_, err := xdsclient.FetchClusters(lis.Addr().String(), &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost", Certificates: []tls.Certificate{cp}}, "gatewayclass/demo")
	if status.Code(err) != codes.Unavailable {
		t.Errorf("error %v, want UNAVAILABLE", err)
	}
}

// TestFetchesAreAuthorized: the unary Fetch* RPCs of every discovery
// service the server registers answer a proxy for its own scope and
// refuse another fleet's SVID with PERMISSION_DENIED and no resource
// (issue 25: they used to answer for whatever scope node.cluster named,
// listener private keys included).
func TestFetchesAreAuthorized(t *testing.T) {
	addr, ca := serve(t)
	dial := func(path string) *grpc.ClientConn {
		svid, err := ca.Issue(spiffeid.RequireFromPath(td, path), time.Hour, pki.ClientAuth, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		pair, _ := tls.X509KeyPair(svid.CertPEM, svid.KeyPEM)
		cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(
			&tls.Config{RootCAs: ca.Pool(), ServerName: "localhost", Certificates: []tls.Certificate{pair}})))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cc.Close() })
		return cc
	}
	own, other := dial("/ns/x/sa/envoy"), dial("/ns/y/sa/web-xds")
	type fetch func(context.Context, *discoveryv3.DiscoveryRequest, ...grpc.CallOption) (*discoveryv3.DiscoveryResponse, error)
	fetches := func(cc *grpc.ClientConn) map[string]fetch {
		return map[string]fetch{
			resourcev3.ListenerType: listenerservice.NewListenerDiscoveryServiceClient(cc).FetchListeners,
			resourcev3.RouteType:    routeservice.NewRouteDiscoveryServiceClient(cc).FetchRoutes,
			resourcev3.ClusterType:  clusterservice.NewClusterDiscoveryServiceClient(cc).FetchClusters,
			resourcev3.EndpointType: endpointservice.NewEndpointDiscoveryServiceClient(cc).FetchEndpoints,
			resourcev3.SecretType:   secretservice.NewSecretDiscoveryServiceClient(cc).FetchSecrets,
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := func(typeURL string) *discoveryv3.DiscoveryRequest {
		return &discoveryv3.DiscoveryRequest{Node: &corev3.Node{Id: "p", Cluster: "gatewayclass/demo"}, TypeUrl: typeURL}
	}
	resp, err := fetches(own)[resourcev3.ClusterType](ctx, req(resourcev3.ClusterType))
	if err != nil || len(resp.GetResources()) != 1 {
		t.Fatalf("own scope: FetchClusters = %v, %v; want the scope's one cluster", resp, err)
	}
	for typeURL, f := range fetches(other) {
		resp, err := f(ctx, req(typeURL))
		if status.Code(err) != codes.PermissionDenied || len(resp.GetResources()) != 0 {
			t.Errorf("%s: another fleet's scope: %d resources, error %v; want PERMISSION_DENIED", typeURL, len(resp.GetResources()), err)
		} else if !strings.Contains(err.Error(), `may not subscribe to proxy scope "gatewayclass/demo"`) {
			t.Errorf("%s: message %q", typeURL, err)
		}
	}
}
