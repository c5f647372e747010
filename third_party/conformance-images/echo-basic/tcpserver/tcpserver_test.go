package tcpserver

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"math/big"
	"net"
	"reflect"
	"testing"
	"time"
)

var pod = Context{Namespace: "gateway-conformance-infra", Service: "tcp-backend", Pod: "tcp-backend-7d9-x2k", TCPPort: "3000"}

// serve starts Serve on a loopback listener (wrapped in TLS when cfg is not
// nil) and returns its address; the server stops with the test.
func serve(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if cfg != nil {
		l = tls.NewListener(l, cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, l, pod) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve after cancel: %v, want nil", err)
		}
	})
	return l.Addr().String()
}

// converse sends each command line and returns the line read after it,
// following the greeting; it reads the way the conformance suite does.
func converse(t *testing.T, conn net.Conn, cmds ...string) (greeting string, replies []string) {
	t.Helper()
	r := bufio.NewReader(conn)
	greeting, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("greeting: %v", err)
	}
	for _, c := range cmds {
		fmt.Fprintf(conn, "%s\n", c)
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("after %q: %v", c, err)
		}
		replies = append(replies, line)
	}
	return greeting, replies
}

// TestPlainConversation: over plain TCP the server greets with
// WelcomeMessage, ignores an unknown line, answers PING, IS_TLS (false) and
// TEST with the pod's context and no TLS details.
func TestPlainConversation(t *testing.T) {
	conn, err := net.Dial("tcp", serve(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	greeting, replies := converse(t, conn, "HELLO\nPING", "IS_TLS", "TEST")
	if greeting != WelcomeMessage {
		t.Errorf("greeting %q", greeting)
	}
	if replies[0] != "PONG\n" || replies[1] != "false\n" {
		t.Errorf("PING, IS_TLS answers %q", replies[:2])
	}
	var got TCPAssertions
	if err := json.Unmarshal([]byte(replies[2]), &got); err != nil {
		t.Fatalf("TEST answer %q: %v", replies[2], err)
	}
	if want := (TCPAssertions{Context: pod}); !reflect.DeepEqual(got, want) {
		t.Errorf("TEST answer %+v, want %+v", got, want)
	}
}

// TestTLSConversation: behind tls.NewListener the server answers IS_TLS with
// true and TEST with the negotiated version, SNI, ALPN protocol and cipher
// suite.
func TestTLSConversation(t *testing.T) {
	cert := selfSigned(t)
	addr := serve(t, &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"echo"}})
	roots := x509.NewCertPool()
	roots.AddCert(cert.Leaf)
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots, ServerName: "tcp.example.com", NextProtos: []string{"echo"}, MinVersion: tls.VersionTLS13})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, replies := converse(t, conn, "IS_TLS", "TEST")
	if replies[0] != "true\n" {
		t.Errorf("IS_TLS answer %q", replies[0])
	}
	var got TCPAssertions
	if err := json.Unmarshal([]byte(replies[1]), &got); err != nil {
		t.Fatalf("TEST answer %q: %v", replies[1], err)
	}
	st := conn.ConnectionState()
	want := TCPAssertions{Context: pod, IsTLS: true, TLSAssertion: &TLSAssertions{
		Version: "TLS 1.3", ServerName: "tcp.example.com", NegotiatedProtocol: "echo",
		CipherSuite: tls.CipherSuiteName(st.CipherSuite), Curves: st.CurveID.String(),
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("TEST answer %+v %+v, want %+v %+v", got, got.TLSAssertion, want, want.TLSAssertion)
	}
}

// TestDecodesEchoPodAnswer: a TEST answer in the echo pods' JSON layout
// (context keys at the top level, "isTLS", "tls") decodes into the fields
// the suite reads.
func TestDecodesEchoPodAnswer(t *testing.T) {
	line := `{"namespace":"ns","ingress":"","service":"svc","pod":"backend-1-abc","tcpport":"3000","tlsport":"8443","isTLS":true,` +
		`"tls":{"version":"TLS 1.3","serverName":"sni.example.com","negotiatedProtocol":"h2","curves":"X25519","cipherSuite":"TLS_AES_128_GCM_SHA256"}}` + "\n"
	var got TCPAssertions
	if err := json.Unmarshal([]byte(line), &got); err != nil {
		t.Fatal(err)
	}
	want := TCPAssertions{
		Context: Context{Namespace: "ns", Service: "svc", Pod: "backend-1-abc", TCPPort: "3000", TLSPort: "8443"},
		IsTLS:   true,
		TLSAssertion: &TLSAssertions{Version: "TLS 1.3", ServerName: "sni.example.com", NegotiatedProtocol: "h2",
			Curves: "X25519", CipherSuite: "TLS_AES_128_GCM_SHA256"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("decoded %+v %+v, want %+v %+v", got, got.TLSAssertion, want, want.TLSAssertion)
	}
}

func selfSigned(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "tcp.example.com"},
		DNSNames: []string{"tcp.example.com"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}
