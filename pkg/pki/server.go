package pki

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"sync"
	"time"

	"github.com/spiffe/go-spiffe/v2/spiffeid"
)

// ServerCert is the certificate of a server whose clients hold SVIDs of an
// Authority (the xDS server, the identity service): issued in memory by
// Authority.ServerCA, so that during a CA rotation it comes from the old
// CA until the handover, then from the new one. Set the fields, then use
// Certificate or the TLS configurations; safe for concurrent use.
type ServerCert struct {
	Authority *Authority
	// ID is the server's SPIFFE ID; DNSNames and IPs further SANs.
	ID       spiffeid.ID
	DNSNames []string
	IPs      []net.IP
	// Validity of each certificate; a new one is issued when a third of
	// it is left.
	Validity time.Duration
	// Overlap times a rotation (OverlapFor the SVIDs' lifetime).
	Overlap Overlap
	// Now is the clock (default time.Now).
	Now func() time.Time

	mu   sync.Mutex
	cert *tls.Certificate
	// by signed cert.
	by *x509.Certificate
}

// Certificate returns the server certificate, issuing a new one when there
// is none, when less than a third of its lifetime is left, or when another
// CA must sign it (Authority.ServerCA). Errors: the CA's.
func (s *ServerCert) Certificate() (*tls.Certificate, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if s.Now != nil {
		now = s.Now()
	}
	ca := s.Authority.ServerCA(now, s.Overlap)
	if s.cert != nil && s.by.Equal(ca.Cert) {
		leaf := s.cert.Leaf
		if leaf.NotAfter.Sub(now) > leaf.NotAfter.Sub(leaf.NotBefore)/3 {
			return s.cert, nil
		}
	}
	svid, err := ca.Issue(s.ID, s.Validity, ServerAuth, s.DNSNames, s.IPs)
	if err != nil {
		return nil, err
	}
	pair, err := tls.X509KeyPair(svid.CertPEM, svid.KeyPEM)
	if err != nil {
		return nil, err
	}
	pair.Leaf = svid.Cert
	s.cert, s.by = &pair, ca.Cert
	return s.cert, nil
}

func (s *ServerCert) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return s.Certificate()
}

// MTLSConfig is a server configuration for clients with SVIDs: TLS 1.3,
// ALPN nextProtos, a client certificate required that chains to a CA of
// the Authority's bundle as it is at the handshake (GetConfigForClient:
// during a rotation the old and the new CA, later the new one only;
// connections already open are not checked again).
func (s *ServerCert) MTLSConfig(nextProtos ...string) *tls.Config {
	conf := func(pool *x509.CertPool) *tls.Config {
		return &tls.Config{
			MinVersion:     tls.VersionTLS13,
			GetCertificate: s.getCertificate,
			ClientAuth:     tls.RequireAndVerifyClientCert,
			ClientCAs:      pool,
			NextProtos:     nextProtos,
		}
	}
	c := conf(nil)
	c.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		pool := x509.NewCertPool()
		for _, ca := range s.Authority.Bundle().X509Authorities() {
			pool.AddCert(ca)
		}
		return conf(pool), nil
	}
	return c
}

// TLSConfig is a server configuration without client certificates: TLS
// 1.3, ALPN nextProtos.
func (s *ServerCert) TLSConfig(nextProtos ...string) *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS13, GetCertificate: s.getCertificate, NextProtos: nextProtos}
}
