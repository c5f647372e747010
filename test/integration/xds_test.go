package integration

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"path/filepath"
	"testing"
	"time"

	"github.com/xds-controller/xds-controller/internal/xdsclient"
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
	names, err := xdsclient.FetchClusters(r.XDSAddr().String(), clientTLS, "gatewayclass/xds")
	if err != nil {
		t.Fatalf("ADS with a fleet certificate: %v", err)
	}
	if len(names) != 1 {
		t.Errorf("clusters %v, want the one backend of 01-basic-http", names)
	}
	anonymous := clientTLS.Clone()
	anonymous.Certificates = nil
	if _, err := xdsclient.FetchClusters(r.XDSAddr().String(), anonymous, "gatewayclass/xds"); err == nil {
		t.Error("a client without a certificate was served")
	}
}
