package identity

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/spiffe/go-spiffe/v2/spiffeid"
	"github.com/spiffe/go-spiffe/v2/svid/x509svid"
	authv1 "k8s.io/api/authentication/v1"

	"github.com/xds-controller/xds-controller/pkg/pki"
)

func csrFor(t *testing.T, key crypto.Signer, tmpl *x509.CertificateRequest) []byte {
	t.Helper()
	if tmpl == nil {
		tmpl = &x509.CertificateRequest{}
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func TestCheckCSRKeys(t *testing.T) {
	p256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	p521, _ := ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	rsa2048, _ := rsa.GenerateKey(rand.Reader, 2048)
	rsa1024, _ := rsa.GenerateKey(rand.Reader, 1024)
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	for _, tc := range []struct {
		name string
		key  crypto.Signer
		ok   bool
		msg  string
	}{
		{"ECDSA P-256", p256, true, ""},
		{"ECDSA P-384", p384, true, ""},
		{"RSA 2048", rsa2048, true, ""},
		{"ECDSA P-521", p521, false, "curve P-521 refused"},
		{"RSA 1024", rsa1024, false, "RSA key of 1024 bits refused"},
		{"Ed25519", ed, false, "Ed25519 keys are refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := CheckCSR(csrFor(t, tc.key, nil))
			if tc.ok {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("error %v, want ErrBadRequest with %q", err, tc.msg)
			}
		})
	}
}

func TestCheckCSRSignatureAndEncoding(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	good := csrFor(t, key, nil)
	block, _ := pem.Decode(good)
	// Flip a bit of the signature (the DER's last byte).
	bad := append([]byte(nil), block.Bytes...)
	bad[len(bad)-1] ^= 1
	for name, in := range map[string][]byte{
		"bad signature": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: bad}),
		"not PEM":       []byte("hello"),
		"wrong type":    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: block.Bytes}),
		"trailing data": append(append([]byte(nil), good...), good...),
		"empty":         nil,
	} {
		if _, err := CheckCSR(in); !errors.Is(err, ErrBadRequest) {
			t.Errorf("%s: error %v, want ErrBadRequest", name, err)
		}
	}
}

func review(user string, audiences []string, pod bool) authv1.TokenReviewStatus {
	st := authv1.TokenReviewStatus{Authenticated: true, Audiences: audiences, User: authv1.UserInfo{Username: user}}
	if pod {
		st.User.Extra = map[string]authv1.ExtraValue{podNameExtra: {"envoy-xyz"}}
	}
	return st
}

func TestCheckReview(t *testing.T) {
	aud := []string{DefaultAudience}
	sa, err := CheckReview(review("system:serviceaccount:ns1:web-gw", aud, true), DefaultAudience)
	if err != nil || sa != (ServiceAccount{"ns1", "web-gw", "envoy-xyz"}) {
		t.Fatalf("got %v %v", sa, err)
	}
	for name, tc := range map[string]struct {
		st  authv1.TokenReviewStatus
		msg string
	}{
		"refused by the API server": {authv1.TokenReviewStatus{Error: `token audiences ["other"] is invalid for the target audiences ["xds-controller-identity"]`}, "is invalid for the target audiences"},
		"audience missing":          {review("system:serviceaccount:ns1:web-gw", []string{"other"}, true), "not valid for audience"},
		"a user":                    {review("alice", aud, true), "is not a ServiceAccount"},
		"malformed name":            {review("system:serviceaccount:ns1", aud, true), "is not a ServiceAccount"},
		"not bound to a pod":        {review("system:serviceaccount:ns1:web-gw", aud, false), "not bound to a pod"},
	} {
		_, err := CheckReview(tc.st, DefaultAudience)
		if !errors.Is(err, ErrUnauthenticated) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: error %v, want ErrUnauthenticated with %q", name, err, tc.msg)
		}
	}
}

// jwt builds an unsigned token with the given claims (the signature is
// the API server's business; CheckToken reads claims only).
func jwt(claims map[string]any) string {
	enc := base64.RawURLEncoding
	b, _ := json.Marshal(claims)
	return enc.EncodeToString([]byte(`{"alg":"RS256"}`)) + "." + enc.EncodeToString(b) + ".c2ln"
}

type fleetSet map[string]bool

func (f fleetSet) Known(id spiffeid.ID) bool { return f[id.String()] }

// testServer is a Server with a fake TokenReview: a token whose sub claim
// is system:serviceaccount:<ns>:<sa> is a pod-bound token of that
// ServiceAccount for the audience in its aud claim.
func testServer(t *testing.T, now time.Time) (*Server, *pki.CA) {
	t.Helper()
	td := spiffeid.RequireTrustDomainFromString("cluster.local")
	ca, _, err := pki.NewCA(td, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	rev := ReviewerFunc(func(_ context.Context, token string, audiences []string) (authv1.TokenReviewStatus, error) {
		b, _ := base64.RawURLEncoding.DecodeString(strings.Split(token, ".")[1])
		var c struct {
			Sub string `json:"sub"`
			Aud string `json:"aud"`
		}
		_ = json.Unmarshal(b, &c)
		if c.Aud != audiences[0] {
			return authv1.TokenReviewStatus{Error: "token audiences [\"" + c.Aud + "\"] is invalid for the target audiences"}, nil
		}
		return review(c.Sub, audiences, true), nil
	})
	return &Server{
		CA:           ca,
		TrustDomain:  td,
		Reviewer:     rev,
		Fleets:       fleetSet{"spiffe://cluster.local/ns/xds-system/sa/envoy-xds": true},
		SVIDLifetime: 2 * time.Minute,
		Now:          func() time.Time { return now },
	}, ca
}

// token is a 10-minute token of ServiceAccount sa ("<namespace>/<name>")
// for aud, issued at now.
func token(now time.Time, sa, aud string) string {
	return jwt(map[string]any{"sub": saUser(sa), "aud": aud, "iat": now.Unix(), "nbf": now.Unix(), "exp": now.Unix() + 600})
}

// saUser is the user name of ServiceAccount "<namespace>/<name>".
func saUser(sa string) string {
	return serviceAccountPrefix + strings.Replace(sa, "/", ":", 1)
}

// TestIssueSetsTheSANFromTheToken: the SVID names the token's
// ServiceAccount whatever the CSR asks for, lives SVIDLifetime and chains
// to the CA.
func TestIssueSetsTheSANFromTheToken(t *testing.T) {
	now := time.Now()
	s, ca := testServer(t, now)
	var issued []string
	s.Issued = func(ns, pod string, notAfter time.Time) {
		issued = append(issued, fmt.Sprintf("%s/%s %d", ns, pod, notAfter.Unix()))
	}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	evil, _ := url.Parse("spiffe://cluster.local/ns/xds-system/sa/xds-controller")
	csr := csrFor(t, key, &x509.CertificateRequest{
		Subject:     pkix.Name{CommonName: "admin"},
		DNSNames:    []string{"xds-controller.xds-system.svc"},
		URIs:        []*url.URL{evil},
		IPAddresses: []net.IP{net.IPv4(10, 0, 0, 1)},
	})
	resp, err := s.Issue(context.Background(), token(now, "xds-system/envoy-xds", DefaultAudience), csr)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode([]byte(resp.CertChain))
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	id, err := x509svid.IDFromCert(cert)
	if err != nil || id.String() != "spiffe://cluster.local/ns/xds-system/sa/envoy-xds" {
		t.Fatalf("SPIFFE ID %v %v", id, err)
	}
	if len(cert.URIs) != 1 || len(cert.DNSNames) != 0 || len(cert.IPAddresses) != 0 || cert.Subject.CommonName != "" {
		t.Errorf("the CSR's names leaked into the SVID: URIs %v DNS %v IPs %v CN %q", cert.URIs, cert.DNSNames, cert.IPAddresses, cert.Subject.CommonName)
	}
	if !cert.PublicKey.(*ecdsa.PublicKey).Equal(key.Public()) {
		t.Error("the SVID is not for the CSR's key")
	}
	// X.509 times have whole seconds.
	if got := cert.NotAfter.Sub(now); got <= 2*time.Minute-time.Second || got > 2*time.Minute {
		t.Errorf("expires %s after the request, want 2m", got)
	}
	if !resp.ExpiresAt.Equal(cert.NotAfter) || resp.Bundle != string(ca.CertPEM) {
		t.Errorf("expiresAt %s (cert %s), bundle is the CA: %v", resp.ExpiresAt, cert.NotAfter, resp.Bundle == string(ca.CertPEM))
	}
	if want := fmt.Sprintf("xds-system/envoy-xyz %d", cert.NotAfter.Unix()); len(issued) != 1 || issued[0] != want {
		t.Errorf("Issued was told %v, want [%s] (the pod the token is bound to)", issued, want)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("SVID does not verify as a client certificate: %v", err)
	}
}

func TestIssueRefusals(t *testing.T) {
	now := time.Now()
	s, _ := testServer(t, now)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	rsa1024, _ := rsa.GenerateKey(rand.Reader, 1024)
	csr := csrFor(t, key, nil)
	for name, tc := range map[string]struct {
		token  string
		csr    []byte
		target error
		msg    string
	}{
		"unknown ServiceAccount": {token(now, "xds-example/web-xds", DefaultAudience), csr, ErrForbidden, "is not the ServiceAccount of an Envoy fleet"},
		"wrong audience":         {token(now, "xds-system/envoy-xds", "api"), csr, ErrUnauthenticated, "is not valid for audience"},
		"expired token":          {jwt(map[string]any{"sub": saUser("xds-system/envoy-xds"), "aud": DefaultAudience, "iat": now.Unix() - 900, "exp": now.Unix() - 300}), csr, ErrUnauthenticated, "token expired"},
		"no token":               {"", csr, ErrUnauthenticated, "no bearer token"},
		"weak key":               {token(now, "xds-system/envoy-xds", DefaultAudience), csrFor(t, rsa1024, nil), ErrBadRequest, "1024 bits"},
	} {
		_, err := s.Issue(context.Background(), tc.token, tc.csr)
		if !errors.Is(err, tc.target) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: error %v, want %v with %q", name, err, tc.target, tc.msg)
		}
	}
}

// TestClientAndServerOverTLS: the client authenticates the service by its
// SPIFFE ID and gets an SVID; refusals arrive as *RefusedError with the
// HTTP status; a service with another SPIFFE ID is not trusted.
func TestClientAndServerOverTLS(t *testing.T) {
	now := time.Now()
	s, ca := testServer(t, now)
	serverID := spiffeid.RequireFromString("spiffe://cluster.local/ns/xds-system/sa/xds-controller")
	svid, err := ca.Issue(serverID, time.Hour, pki.ServerAuth, []string{"xds-controller.xds-system.svc"}, []net.IP{net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	pair, _ := tls.X509KeyPair(svid.CertPEM, svid.KeyPEM)
	hs := httptest.NewUnstartedServer(s)
	hs.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS13}
	hs.StartTLS()
	defer hs.Close()
	addr := strings.TrimPrefix(hs.URL, "https://")

	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	c := NewClient(addr, serverID, []*x509.Certificate{ca.Cert})
	resp, err := c.Sign(context.Background(), token(now, "xds-system/envoy-xds", DefaultAudience), csrFor(t, key, nil))
	if err != nil {
		t.Fatal(err)
	}
	if resp.SPIFFEID != "spiffe://cluster.local/ns/xds-system/sa/envoy-xds" {
		t.Errorf("SPIFFE ID %s", resp.SPIFFEID)
	}
	_, err = c.Sign(context.Background(), token(now, "xds-system/envoy-xds", "api"), csrFor(t, key, nil))
	var refused *RefusedError
	if !errors.As(err, &refused) || refused.StatusCode != http.StatusUnauthorized {
		t.Errorf("wrong audience: %v, want a 401 refusal", err)
	}
	t.Logf("wrong audience: %v", err)
	_, err = c.Sign(context.Background(), token(now, "xds-example/web-xds", DefaultAudience), csrFor(t, key, nil))
	if !errors.As(err, &refused) || refused.StatusCode != http.StatusForbidden {
		t.Errorf("unknown ServiceAccount: %v, want a 403 refusal", err)
	}
	other := NewClient(addr, spiffeid.RequireFromString("spiffe://cluster.local/ns/xds-system/sa/someone-else"), []*x509.Certificate{ca.Cert})
	if _, err := other.Sign(context.Background(), token(now, "xds-system/envoy-xds", DefaultAudience), csrFor(t, key, nil)); err == nil {
		t.Error("a client expecting another server ID trusted the service")
	}
}
