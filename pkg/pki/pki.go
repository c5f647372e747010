// Package pki is xds-controller's certificate authority for the xDS
// channel: it creates or loads a CA and signs X.509 SVIDs, certificates
// whose only identity is a SPIFFE ID in the URI SAN
// (spiffe://<trust-domain>/ns/<namespace>/sa/<serviceaccount>).
//
// Keys are ECDSA P-256. Files are PEM; private keys are written 0600.
package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/spiffe/go-spiffe/v2/spiffeid"
)

// CA is a signing certificate and its key.
type CA struct {
	Cert    *x509.Certificate
	CertPEM []byte
	key     crypto.Signer
}

// File names inside a CA folder.
const (
	CACertFile = "ca.crt"
	CAKeyFile  = "ca.key"
)

// LoadOrCreateCA reads dir/ca.crt and dir/ca.key, or, when neither exists,
// creates a CA for trustDomain valid for validity and writes it there. It
// fails when only one of the two files exists, when they do not parse, or
// when the CA has expired.
func LoadOrCreateCA(dir string, trustDomain spiffeid.TrustDomain, validity time.Duration) (*CA, error) {
	certPath, keyPath := filepath.Join(dir, CACertFile), filepath.Join(dir, CAKeyFile)
	certPEM, errC := os.ReadFile(certPath)
	keyPEM, errK := os.ReadFile(keyPath)
	switch {
	case errC == nil && errK == nil:
		ca, err := ParseCA(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("CA in %s: %w", dir, err)
		}
		if time.Now().After(ca.Cert.NotAfter) {
			return nil, fmt.Errorf("CA in %s expired at %s; remove %s and %s to create a new one", dir, ca.Cert.NotAfter.Format(time.RFC3339), certPath, keyPath)
		}
		return ca, nil
	case errors.Is(errC, os.ErrNotExist) && errors.Is(errK, os.ErrNotExist):
	default:
		return nil, fmt.Errorf("CA in %s is incomplete: %v, %v", dir, errC, errK)
	}
	ca, keyPEM, err := NewCA(trustDomain, validity)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(keyPath, keyPEM, 0o600); err != nil {
		return nil, err
	}
	return ca, os.WriteFile(certPath, ca.CertPEM, 0o644)
}

// NewCA creates a self-signed CA for trustDomain (its URI SAN is the trust
// domain's SPIFFE ID) valid from now for validity. It returns the CA and
// its key as PEM.
func NewCA(trustDomain spiffeid.TrustDomain, validity time.Duration) (*CA, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{Organization: []string{"xds-controller"}, CommonName: "xds-controller CA " + trustDomain.String()},
		URIs:                  []*url.URL{trustDomain.ID().URL()},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	cert, _ := x509.ParseCertificate(der)
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	return &CA{Cert: cert, CertPEM: pemBlock("CERTIFICATE", der), key: key}, keyPEM, nil
}

// ParseCA reads a CA certificate and key from PEM. The certificate must be
// a CA and the key must match it.
func ParseCA(certPEM, keyPEM []byte) (*CA, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, err
	}
	if !cert.IsCA {
		return nil, errors.New("certificate is not a CA")
	}
	signer, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, errors.New("key cannot sign")
	}
	return &CA{Cert: cert, CertPEM: pemBlock("CERTIFICATE", cert.Raw), key: signer}, nil
}

// Usage says whether a certificate authenticates a server, a client or both.
type Usage int

// Usages.
const (
	ServerAuth Usage = 1 << iota
	ClientAuth
)

// SVID is an issued certificate and its key, PEM encoded.
type SVID struct {
	CertPEM []byte
	KeyPEM  []byte
	Cert    *x509.Certificate
}

// Issue creates a key and signs an X.509 SVID for id, valid from now for
// ttl (never past the CA's own expiry). dnsNames and ips are added as SANs
// for servers that clients dial by name or address.
func (ca *CA) Issue(id spiffeid.ID, ttl time.Duration, usage Usage, dnsNames []string, ips []net.IP) (*SVID, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := ca.Sign(id, &key.PublicKey, ttl, usage, dnsNames, ips)
	if err != nil {
		return nil, err
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, err
	}
	cert, _ := x509.ParseCertificate(der)
	return &SVID{CertPEM: pemBlock("CERTIFICATE", der), KeyPEM: keyPEM, Cert: cert}, nil
}

// Sign signs a certificate for pub whose URI SAN is id; the identity comes
// from the caller, never from a request. It returns the DER certificate.
func (ca *CA) Sign(id spiffeid.ID, pub crypto.PublicKey, ttl time.Duration, usage Usage, dnsNames []string, ips []net.IP) ([]byte, error) {
	if id.IsZero() {
		return nil, errors.New("an SVID needs a SPIFFE ID")
	}
	now := time.Now()
	notAfter := now.Add(ttl)
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter
	}
	var eku []x509.ExtKeyUsage
	if usage&ServerAuth != 0 {
		eku = append(eku, x509.ExtKeyUsageServerAuth)
	}
	if usage&ClientAuth != 0 {
		eku = append(eku, x509.ExtKeyUsageClientAuth)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{Organization: []string{"xds-controller"}},
		URIs:         []*url.URL{id.URL()},
		DNSNames:     dnsNames,
		IPAddresses:  ips,
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  eku,
	}
	return x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, pub, ca.key)
}

// Pool returns a certificate pool holding the CA, for verifying peers.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err)
	}
	return n
}

func encodeKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pemBlock("PRIVATE KEY", der), nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// DerivationKey is a 32-byte key for purpose derived from the CA's
// private key (HKDF-SHA256, RFC 5869, of its PKCS #8 encoding, info
// purpose): every holder of the CA key (each controller replica, after
// every restart) derives the same one, and the CA key itself never leaves
// this package. Another CA (a rotation) derives another key. It returns
// nil when the key cannot be encoded (not a key this package made or
// loads).
func (ca *CA) DerivationKey(purpose string) []byte {
	der, err := x509.MarshalPKCS8PrivateKey(ca.key)
	if err != nil {
		return nil
	}
	k, err := hkdf.Key(sha256.New, der, nil, "xds-controller derivation key\x00"+purpose, 32)
	if err != nil {
		return nil
	}
	return k
}
