package integration

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"path/filepath"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// TestXDSWithFleetCertificate: a proxy holding a certificate from
// IssueFleetCertificate reaches the controller's xDS server over mutual
// TLS, verifying the server as xds-controller.<ns>.svc, and receives its
// scope's configuration; a client without a certificate is refused.
func TestXDSWithFleetCertificate(t *testing.T) {
	requireAPIServer(t)
	r := startReplica(t, replicaOptions{identity: "xds"})
	applyFile(t, filepath.Join(testdata, "01-basic-http.in.yaml"))
	eventually(t, 20*time.Second, "the scope to be published", func() error {
		if r.XDS().Scopes()["gatewayclass/xds"] == "" {
			return context.DeadlineExceeded
		}
		return nil
	})
	certPEM, keyPEM, caPEM, err := r.Identity().IssueFleetCertificate("default", "web-xds")
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	clientTLS := &tls.Config{
		Certificates: []tls.Certificate{pair},
		RootCAs:      roots,
		ServerName:   "xds-controller." + controllerNamespace + ".svc",
		MinVersion:   tls.VersionTLS13,
	}
	names, err := fetchClusters(r.XDSAddr().String(), clientTLS, "gatewayclass/xds")
	if err != nil {
		t.Fatalf("ADS with a fleet certificate: %v", err)
	}
	if len(names) != 1 {
		t.Errorf("clusters %v, want the one backend of 01-basic-http", names)
	}
	anonymous := clientTLS.Clone()
	anonymous.Certificates = nil
	if _, err := fetchClusters(r.XDSAddr().String(), anonymous, "gatewayclass/xds"); err == nil {
		t.Error("a client without a certificate was served")
	}
}

func fetchClusters(addr string, client *tls.Config, scope string) ([]string, error) {
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
