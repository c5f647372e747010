// Package interop checks this module against its two counterparts: the
// Gateway API v1.7.0 conformance suite's own clients (utils/grpc, utils/tcp,
// utils/udp, which import our packages) talk to the echo-basic program the
// local cluster runs (Gateway API v1.6.3 conformance/echo-basic, path in
// $ECHO_BASIC) in its gRPC, TCP, TLS and UDP modes on loopback, and to our
// own tcpserver and udpechoserver. Run with `make interop` in
// third_party/conformance-images (Go 1.27: GOTOOLCHAIN=go1.27.3).
package interop

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	pb "sigs.k8s.io/gateway-api-conformance-images/echo-basic/grpcechoserver"
	"sigs.k8s.io/gateway-api-conformance-images/echo-basic/tcpserver"
	"sigs.k8s.io/gateway-api-conformance-images/echo-basic/udpechoserver"
	"sigs.k8s.io/gateway-api/conformance/utils/config"
	grpcutil "sigs.k8s.io/gateway-api/conformance/utils/grpc"
	tcputil "sigs.k8s.io/gateway-api/conformance/utils/tcp"
	udputil "sigs.k8s.io/gateway-api/conformance/utils/udp"
)

const (
	namespace = "gateway-conformance-infra"
	backend   = "infra-backend-v1"
	pod       = backend + "-7d9c5-x2k4q"
	service   = "infra-backend-v1"
)

var timeouts = config.DefaultTimeoutConfig()

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T, network string) string {
	t.Helper()
	if network == "udp" {
		c, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return strconv.Itoa(c.LocalAddr().(*net.UDPAddr).Port)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// echoBasic starts $ECHO_BASIC with the pod environment plus env, and kills
// it when the test ends.
func echoBasic(t *testing.T, env ...string) {
	t.Helper()
	bin := os.Getenv("ECHO_BASIC")
	if bin == "" {
		t.Fatal("ECHO_BASIC must name the echo-basic binary (make interop builds it)")
	}
	cmd := exec.Command(bin)
	cmd.Env = append([]string{"NAMESPACE=" + namespace, "POD_NAME=" + pod, "SERVICE_NAME=" + service}, env...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
}

// TestGRPCAgainstEchoBasic: the suite's gRPC client, with our generated
// messages and stub, gets Echo and EchoTwo answered by echo-basic
// (GRPC_ECHO_SERVER) at the expected method, namespace and pod, and
// EchoThree refused with Unimplemented.
func TestGRPCAgainstEchoBasic(t *testing.T) {
	port := freePort(t, "tcp")
	echoBasic(t, "GRPC_ECHO_SERVER=1", "HTTP_PORT="+port)
	addr := "127.0.0.1:" + port
	for _, exp := range []grpcutil.ExpectedResponse{
		{EchoRequest: &pb.EchoRequest{}, Backend: backend, Namespace: namespace},
		{EchoTwoRequest: &pb.EchoRequest{}, Backend: backend, Namespace: namespace,
			RequestMetadata: &grpcutil.RequestMetadata{Authority: "grpc.example.com", Metadata: map[string]string{"x-echo": "1"}}},
		{EchoThreeRequest: &pb.EchoRequest{}, Response: grpcutil.Response{Code: codes.Unimplemented}},
	} {
		grpcutil.MakeRequestAndExpectEventuallyConsistentResponse(t, nil, timeouts, addr, exp)
	}
	// The answer's fields beyond what the suite compares: authority and
	// headers as echo-basic saw them.
	c := &grpcutil.DefaultClient{}
	defer c.Close()
	resp, err := c.SendRPC(t, addr, grpcutil.ExpectedResponse{EchoRequest: &pb.EchoRequest{},
		RequestMetadata: &grpcutil.RequestMetadata{Authority: "grpc.example.com", Metadata: map[string]string{"x-echo": "1"}}}, time.Minute)
	if err != nil || resp.Code != codes.OK {
		t.Fatalf("Echo: %v %v", err, resp.Code)
	}
	a := resp.Response.GetAssertions()
	if a.GetAuthority() != "grpc.example.com" || a.GetContext().GetServiceName() != service {
		t.Errorf("authority %q service %q", a.GetAuthority(), a.GetContext().GetServiceName())
	}
	found := false
	for _, h := range a.GetHeaders() {
		found = found || (h.GetKey() == "x-echo" && h.GetValue() == "1")
	}
	if !found {
		t.Errorf("x-echo: 1 not among the echoed headers %v", a.GetHeaders())
	}
}

// TestGRPCOverTLSAssertionsAgainstEchoBasic: echo-basic with TLS_SERVER_CERT and
// TLS_SERVER_PRIV_KEY (as the v1.7.0 grpc-infra-backend-v1 pods, the
// backend of backendtlspolicy-grpcroute) answers our client over TLS on
// HTTPS_PORT, and its TLSAssertions (field 5 of Assertions) decode with the
// SNI and version the client negotiated.
func TestGRPCOverTLSAssertionsAgainstEchoBasic(t *testing.T) {
	certPEM, certFile, keyFile := writeCert(t, "grpc.example.com")
	httpPort, httpsPort := freePort(t, "tcp"), freePort(t, "tcp")
	echoBasic(t, "GRPC_ECHO_SERVER=1", "HTTP_PORT="+httpPort, "HTTPS_PORT="+httpsPort,
		"TLS_SERVER_CERT="+certFile, "TLS_SERVER_PRIV_KEY="+keyFile)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(certPEM)
	conn, err := grpc.NewClient("127.0.0.1:"+httpsPort, grpc.WithTransportCredentials(credentials.NewTLS(
		&tls.Config{RootCAs: roots, ServerName: "grpc.example.com", MinVersion: tls.VersionTLS13})))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// The server may still be starting: retry until it answers (the
	// suite's clients poll the same way), at most MaxTimeToConsistency.
	var resp *pb.EchoResponse
	deadline := time.Now().Add(timeouts.MaxTimeToConsistency)
	for {
		ctx, cancel := context.WithTimeout(t.Context(), timeouts.RequestTimeout)
		resp, err = pb.NewGrpcEchoClient(conn).Echo(ctx, &pb.EchoRequest{})
		cancel()
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(timeouts.DefaultPollInterval)
	}
	if err != nil {
		t.Fatalf("Echo over TLS: %v", err)
	}
	tlsA := resp.GetAssertions().GetTlsAssertions()
	if tlsA.GetServerName() != "grpc.example.com" || tlsA.GetVersion() == "" || tlsA.GetCipherSuite() == "" || tlsA.GetNegotiatedProtocol() != "h2" {
		t.Errorf("tls assertions %v", tlsA)
	}
	if got := resp.GetAssertions().GetContext().GetPod(); got != pod {
		t.Errorf("pod %q, want %q", got, pod)
	}
}

// TestTCPAgainstEchoBasic: the suite's TCP check (greeting, PING, IS_TLS,
// TEST decoded into our TCPAssertions) passes against echo-basic
// (TCP_ECHO_SERVER) over plain TCP and over TLS, where the SNI is checked.
func TestTCPAgainstEchoBasic(t *testing.T) {
	certPEM, certFile, keyFile := writeCert(t, "tcp.example.com")
	tcpPort, tlsPort := freePort(t, "tcp"), freePort(t, "tcp")
	echoBasic(t, "TCP_ECHO_SERVER=1", "TCP_PORT="+tcpPort, "TLS_PORT="+tlsPort,
		"TLS_SERVER_CERT="+certFile, "TLS_SERVER_PRIV_KEY="+keyFile)
	tcputil.MakeTCPRequestAndExpectEventuallyValidResponse(t, timeouts, "127.0.0.1:"+tcpPort, nil, "", false,
		tcputil.ExpectedResponse{Backend: backend, Namespace: namespace})
	tcputil.MakeTCPRequestAndExpectEventuallyValidResponse(t, timeouts, "127.0.0.1:"+tlsPort, certPEM, "tcp.example.com", true,
		tcputil.ExpectedResponse{BackendIsTLS: true, Backend: backend, Namespace: namespace, Hostname: "tcp.example.com"})
	got, err := tcputil.EchoSendOnce(t.Context(), "127.0.0.1:"+tcpPort, time.Minute)
	if err != nil || got != pod {
		t.Errorf("EchoSendOnce: %q %v, want %q", got, err, pod)
	}
}

// TestTCPAgainstOurServer: the same suite check against our tcpserver.Serve.
func TestTCPAgainstOurServer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go tcpserver.Serve(ctx, l, tcpserver.Context{Namespace: namespace, Pod: pod, Service: service})
	tcputil.MakeTCPRequestAndExpectEventuallyValidResponse(t, timeouts, l.Addr().String(), nil, "", false,
		tcputil.ExpectedResponse{Backend: backend, Namespace: namespace})
}

// TestUDPAgainstEchoBasic: echo-basic (UDP_ECHO_SERVER, the v0.2.0 image's
// mode) answers the suite's UDP probe with the expected service and
// namespace, and a datagram the way udproute-weighted-routing sends it
// decodes into our EchoResponse with the pod and the payload.
func TestUDPAgainstEchoBasic(t *testing.T) {
	port := freePort(t, "udp")
	echoBasic(t, "UDP_ECHO_SERVER=1", "UDP_PORT="+port)
	udpProbes(t, "127.0.0.1:"+port)
}

// TestUDPAgainstOurServer: the same against our udpechoserver.Serve.
func TestUDPAgainstOurServer(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go udpechoserver.Serve(ctx, pc, udpechoserver.Context{Namespace: namespace, Pod: pod, Service: service})
	udpProbes(t, pc.LocalAddr().String())
}

func udpProbes(t *testing.T, addr string) {
	t.Helper()
	udputil.ExpectEchoResponseFromBackend(t, timeouts, addr, udputil.ExpectedResponse{Service: service, Namespace: namespace})
	const payload = "gateway-api-conformance-udp-weight\n"
	conn, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(time.Minute)) // lost datagram: fail, not hang
	if _, err := conn.Write([]byte(payload)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	n, err := conn.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	var resp udpechoserver.EchoResponse
	if err := json.Unmarshal(buf[:n], &resp); err != nil {
		t.Fatalf("%q: %v", buf[:n], err)
	}
	want := udpechoserver.EchoResponse{Request: payload, Context: udpechoserver.Context{Namespace: namespace, Service: service, Pod: pod}}
	if resp != want {
		t.Errorf("answer %+v, want %+v", resp, want)
	}
}

// writeCert writes a self-signed certificate for host and its key into a
// temporary folder; returns the certificate PEM and both file names.
func writeCert(t *testing.T, host string) (certPEM []byte, certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: host}, DNSNames: []string{host},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	for f, b := range map[string][]byte{certFile: certPEM, keyFile: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})} {
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(fmt.Errorf("writing %s: %w", f, err))
		}
	}
	return certPEM, certFile, keyFile
}
