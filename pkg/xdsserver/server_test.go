package xdsserver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/spiffe/go-spiffe/v2/spiffeid"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xds-controller/xds-controller/internal/xdsclient"
	"github.com/xds-controller/xds-controller/pkg/pki"
	"github.com/xds-controller/xds-controller/pkg/xdstranslator"
)

var td = spiffeid.RequireTrustDomainFromString("test.local")

func cluster(name string) *xdstranslator.Resources {
	return &xdstranslator.Resources{Clusters: []types.Resource{&clusterv3.Cluster{
		Name:                 name,
		ConnectTimeout:       durationpb.New(time.Second),
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC},
	}}}
}

func TestPublishSkipsUnchanged(t *testing.T) {
	s := New(slog.Default())
	ctx := context.Background()
	if _, changed, err := s.Publish(ctx, "a", cluster("one")); err != nil || !changed {
		t.Fatalf("first publish: changed=%v err=%v, want true, nil", changed, err)
	}
	v1 := s.Scopes()["a"]
	if _, changed, _ := s.Publish(ctx, "a", cluster("one")); changed {
		t.Error("publishing the same content again reported a change")
	}
	if v, changed, _ := s.Publish(ctx, "a", cluster("two")); !changed || v != s.Scopes()["a"] {
		t.Error("publishing new content reported no change, or a version other than the one now served")
	}
	if v2 := s.Scopes()["a"]; v2 == v1 {
		t.Errorf("version did not change with the content: %s", v2)
	}
	s.Remove("a")
	if _, ok := s.Scopes()["a"]; ok {
		t.Error("scope still present after Remove")
	}
}

func TestPublishRejectsInconsistent(t *testing.T) {
	// A ClusterLoadAssignment without its cluster is fine for the cache,
	// but an EDS cluster without its assignment is not.
	r := &xdstranslator.Resources{Clusters: []types.Resource{&clusterv3.Cluster{
		Name:                 "eds",
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS},
		EdsClusterConfig:     &clusterv3.Cluster_EdsClusterConfig{EdsConfig: &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}}}},
	}}}
	if _, _, err := New(slog.Default()).Publish(context.Background(), "a", r); err == nil {
		t.Error("an EDS cluster without a ClusterLoadAssignment was published")
	}
}

// TestConsistencyCheckedWhenItsInputsChange: Publish skips the snapshot's
// consistency check only while the listeners, clusters and
// ClusterLoadAssignments keep their digests and the route configurations
// their names: an edited route configuration under a rebuilt but equal
// listener is published, while a route configuration renamed under the
// same listener, or an EDS cluster added without its assignment, is
// still refused, and the scope keeps its last version.
func TestConsistencyCheckedWhenItsInputsChange(t *testing.T) {
	s := New(slog.Default())
	ctx := context.Background()
	first := withConfig(cluster("one"), vhost("a.example.com"))
	if _, _, err := s.Publish(ctx, "a", first); err != nil {
		t.Fatal(err)
	}
	// The same lists but the routes, which keep their name: published.
	edited := &xdstranslator.Resources{Listeners: first.Listeners, Clusters: first.Clusters,
		Routes: withConfig(&xdstranslator.Resources{}, vhost("b.example.com")).Routes}
	if _, changed, err := s.Publish(ctx, "a", edited); err != nil || !changed {
		t.Fatalf("a route configuration edited under the same listeners: changed=%v err=%v, want published", changed, err)
	}
	// The translation rebuilds a listener whose routes changed: equal
	// content in new objects.
	rebuilt := &xdstranslator.Resources{Listeners: []types.Resource{proto.Clone(first.Listeners[0])}, Clusters: first.Clusters,
		Routes: withConfig(&xdstranslator.Resources{}, vhost("c.example.com")).Routes}
	if _, changed, err := s.Publish(ctx, "a", rebuilt); err != nil || !changed {
		t.Fatalf("a route configuration edited under a rebuilt, equal listener: changed=%v err=%v, want published", changed, err)
	}
	// Each refused publish follows a passed check, which it must not
	// reuse.
	eds := &clusterv3.Cluster{Name: "eds", ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS},
		EdsClusterConfig: &clusterv3.Cluster_EdsClusterConfig{EdsConfig: &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}}}}}
	for i, bad := range []struct {
		what string
		r    *xdstranslator.Resources
	}{
		{"a listener naming a route configuration the snapshot lacks", &xdstranslator.Resources{Listeners: first.Listeners, Clusters: first.Clusters,
			Routes: []types.Resource{&routev3.RouteConfiguration{Name: "other", VirtualHosts: []*routev3.VirtualHost{vhost("b.example.com")}}}}},
		{"an EDS cluster without its ClusterLoadAssignment", &xdstranslator.Resources{Listeners: first.Listeners, Routes: edited.Routes,
			Clusters: append(append([]types.Resource{}, first.Clusters...), eds)}},
	} {
		good := &xdstranslator.Resources{Listeners: first.Listeners, Clusters: first.Clusters,
			Routes: withConfig(&xdstranslator.Resources{}, vhost(fmt.Sprintf("good-%d.example.com", i))).Routes}
		if _, _, err := s.Publish(ctx, "a", good); err != nil {
			t.Fatal(err)
		}
		served := s.Scopes()["a"]
		if _, _, err := s.Publish(ctx, "a", bad.r); err == nil {
			t.Errorf("%s was published", bad.what)
		}
		if got := s.Scopes()["a"]; got != served {
			t.Errorf("after %s was refused the scope serves %s, want %s", bad.what, got, served)
		}
	}
}

// serve starts a Server with one published scope and returns its address
// and the CA that signs its peers.
func serve(t *testing.T) (string, *pki.CA) {
	t.Helper()
	s := New(slog.Default())
	s.Authorizer().Set(ScopeTable{
		spiffeid.RequireFromPath(td, "/ns/x/sa/envoy"):   {"gatewayclass/demo"},
		spiffeid.RequireFromPath(td, "/ns/y/sa/web-xds"): {"gateway/y/web"},
	})
	if _, _, err := s.Publish(context.Background(), "gatewayclass/demo", cluster("service/default/web/80")); err != nil {
		t.Fatal(err)
	}
	return serveCA(t, s)
}

// serveWith serves s and returns its address and a client TLS
// configuration with a certificate of its CA, whose SPIFFE ID may
// subscribe to the scopes "a" and "b".
func serveWith(t *testing.T, s *Server) (string, *tls.Config) {
	s.Authorizer().Set(ScopeTable{spiffeid.RequireFromPath(td, "/ns/x/sa/envoy"): {"a", "b"}})
	addr, ca := serveCA(t, s)
	c, _ := ca.Issue(spiffeid.RequireFromPath(td, "/ns/x/sa/envoy"), time.Hour, pki.ClientAuth, nil, nil)
	pair, _ := tls.X509KeyPair(c.CertPEM, c.KeyPEM)
	return addr, &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost", Certificates: []tls.Certificate{pair}}
}

func serveCA(t *testing.T, s *Server) (string, *pki.CA) {
	t.Helper()
	ca, _, err := pki.NewCA(td, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	srvCert, _ := ca.Issue(spiffeid.RequireFromPath(td, "/ns/x/sa/controller"), time.Hour, pki.ServerAuth, []string{"localhost"}, nil)
	pair, _ := tls.X509KeyPair(srvCert.CertPEM, srvCert.KeyPEM)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- s.Serve(ctx, lis, &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool()})
	}()
	t.Cleanup(func() { cancel(); <-done })
	return lis.Addr().String(), ca
}

func TestServeRequiresClientCertificate(t *testing.T) {
	addr, ca := serve(t)
	id := spiffeid.RequireFromPath(td, "/ns/x/sa/envoy")
	good, _ := ca.Issue(id, time.Hour, pki.ClientAuth, nil, nil)
	pair, _ := tls.X509KeyPair(good.CertPEM, good.KeyPEM)
	names, err := xdsclient.FetchClusters(addr, &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost", Certificates: []tls.Certificate{pair}}, "gatewayclass/demo")
	if err != nil {
		t.Fatalf("a proxy with an SVID from our CA was refused: %v", err)
	}
	if len(names) != 1 || names[0] != "service/default/web/80" {
		t.Errorf("clusters = %v, want [service/default/web/80]", names)
	}

	if _, err := xdsclient.FetchClusters(addr, &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost"}, "gatewayclass/demo"); err == nil {
		t.Error("a proxy without a client certificate got configuration")
	}

	foreign, _, _ := pki.NewCA(td, time.Hour)
	bad, _ := foreign.Issue(id, time.Hour, pki.ClientAuth, nil, nil)
	badPair, _ := tls.X509KeyPair(bad.CertPEM, bad.KeyPEM)
	if _, err := xdsclient.FetchClusters(addr, &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost", Certificates: []tls.Certificate{badPair}}, "gatewayclass/demo"); err == nil {
		t.Error("a proxy with a certificate from a foreign CA got configuration")
	}
}

func TestServeRefusesPlaintextConfig(t *testing.T) {
	lis, _ := net.Listen("tcp", "127.0.0.1:0")
	defer lis.Close()
	if err := New(slog.Default()).Serve(context.Background(), lis, &tls.Config{}); err == nil {
		t.Error("Serve accepted a TLS config without client authentication")
	}
}

// TestServeLiveBundle: with a TLS configuration chosen per connection
// from a live bundle (a CA rotation), a proxy of the new CA is refused
// before the rotation and accepted after it, while the old CA's proxies
// stay accepted during the overlap and refused after the drop.
func TestServeLiveBundle(t *testing.T) {
	s := New(slog.Default())
	id := spiffeid.RequireFromPath(td, "/ns/x/sa/envoy")
	s.Authorizer().Set(ScopeTable{id: {"gatewayclass/demo"}})
	if _, _, err := s.Publish(context.Background(), "gatewayclass/demo", cluster("service/default/web/80")); err != nil {
		t.Fatal(err)
	}
	old, _, _ := pki.NewCA(td, time.Hour)
	next, _, _ := pki.NewCA(td, time.Hour)
	auth := pki.NewAuthority(td, old)
	srvCert, _ := old.Issue(spiffeid.RequireFromPath(td, "/ns/x/sa/controller"), time.Hour, pki.ServerAuth, []string{"localhost"}, nil)
	pair, _ := tls.X509KeyPair(srvCert.CertPEM, srvCert.KeyPEM)
	conf := &tls.Config{
		Certificates: []tls.Certificate{pair},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			pool := x509.NewCertPool()
			for _, c := range auth.Bundle().X509Authorities() {
				pool.AddCert(c)
			}
			return &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}, nil
		},
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, lis, conf) }()
	t.Cleanup(func() { cancel(); <-done })
	addr := lis.Addr().String()
	fetch := func(ca *pki.CA) error {
		svid, _ := ca.Issue(id, time.Hour, pki.ClientAuth, nil, nil)
		p, _ := tls.X509KeyPair(svid.CertPEM, svid.KeyPEM)
		_, err := xdsclient.FetchClusters(addr, &tls.Config{RootCAs: old.Pool(), ServerName: "localhost", Certificates: []tls.Certificate{p}}, "gatewayclass/demo")
		return err
	}
	if err := fetch(old); err != nil {
		t.Fatalf("a proxy of the CA was refused: %v", err)
	}
	if fetch(next) == nil {
		t.Error("a proxy of the next CA was served before the rotation")
	}
	auth.Set(auth.Trust().Rotate(next, time.Now()))
	if err := fetch(next); err != nil {
		t.Errorf("a proxy of the new CA was refused after the rotation: %v", err)
	}
	if err := fetch(old); err != nil {
		t.Errorf("a proxy of the old CA was refused during the overlap: %v", err)
	}
	auth.Set(auth.Trust().Prune(time.Now().Add(time.Hour), pki.Overlap{}))
	if fetch(old) == nil {
		t.Error("a proxy of the dropped CA was served")
	}
}
