package jwt

import (
	"crypto/tls"
	"net"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/xds-controller/xds-controller/internal/xdstest"
)

// JWKSPath is the path the JWKS server serves the key set on.
const JWKSPath = "/jwks.json"

// Server serves a KeySet's JWKS over plain HTTP and counts the fetches.
// Rotating the KeySet changes what the next fetch gets.
type Server struct {
	// Addr is the listen address, "127.0.0.1:port" for StartJWKS.
	Addr string
	// URL is the JWKS URL: "http://" + Addr + JWKSPath, or https for
	// StartJWKSTLS.
	URL string
	// CA is, for StartJWKSTLS, the PEM certificate that signed the
	// server's (it is self-signed: the two are one): what a client
	// trusts, for example Envoy's validation_context.trusted_ca.
	CA []byte

	set     *KeySet
	fetches atomic.Int64
	srv     *http.Server
}

// StartJWKS serves set on 127.0.0.1:0 until t ends.
func StartJWKS(t testing.TB, set *KeySet) *Server {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := ServeJWKS(l, set)
	t.Cleanup(s.Stop)
	return s
}

// StartJWKSTLS serves set over HTTPS on 127.0.0.1:0 until t ends, with a
// fresh self-signed certificate (xdstest.Cert) whose only DNS SAN is
// serverName; clients send serverName as SNI and verify it against
// Server.CA. The URL keeps the IP address (nothing resolves serverName).
func StartJWKSTLS(t testing.TB, set *KeySet, serverName string) *Server {
	t.Helper()
	certPEM, keyPEM := xdstest.Cert(serverName)
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := ServeJWKS(tls.NewListener(l, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}), set)
	s.URL, s.CA = "https://"+s.Addr+JWKSPath, certPEM
	t.Cleanup(s.Stop)
	return s
}

// ServeJWKS serves set's JWKS on l at JWKSPath (GET only; any other path
// is 404) until Stop. The content type is application/json.
func ServeJWKS(l net.Listener, set *KeySet) *Server {
	s := &Server{Addr: l.Addr().String(), URL: "http://" + l.Addr().String() + JWKSPath, set: set}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+JWKSPath, func(w http.ResponseWriter, _ *http.Request) {
		s.fetches.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(set.JWKS())
	})
	s.srv = &http.Server{Handler: mux}
	go func() { _ = s.srv.Serve(l) }()
	return s
}

// Fetches returns how many times the JWKS was served.
func (s *Server) Fetches() int { return int(s.fetches.Load()) }

// Stop closes the listener and every connection.
func (s *Server) Stop() { _ = s.srv.Close() }
