// Package tcpserver is the TCP echo protocol of the Gateway API conformance
// echo server (echo-basic started with TCP_ECHO_SERVER set): the greeting
// (WelcomeMessage), the JSON answer to TEST (TCPAssertions), and Serve, a
// server speaking the protocol on any net.Listener.
//
// The protocol, per connection: after the TLS handshake when the listener
// terminates TLS, the server writes WelcomeMessage; then it reads lines
// ending in "\n" and answers each known command with one line:
//
//	PING   -> "PONG"
//	IS_TLS -> "true" or "false" (whether the server terminated TLS)
//	TEST   -> TCPAssertions as one line of JSON
//
// Other lines get no answer. The connection stays open until the client
// closes it.
package tcpserver

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
)

// WelcomeMessage is the first line the server writes on every connection.
const WelcomeMessage = "Gateway API Test TCP Server\n"

// Context identifies the answering pod. The echo pods fill it from their
// environment: NAMESPACE, INGRESS_NAME, SERVICE_NAME, POD_NAME, TCP_PORT
// (default 3000) and TLS_PORT (default 8443; present only when the pod
// serves TLS).
type Context struct {
	Namespace string `json:"namespace"`
	Ingress   string `json:"ingress"`
	Service   string `json:"service"`
	Pod       string `json:"pod"`
	TCPPort   string `json:"tcpport"`
	TLSPort   string `json:"tlsport,omitempty"`
}

// TLSAssertions describes the TLS session the server terminated.
type TLSAssertions struct {
	// Version is tls.VersionName of the negotiated version, e.g. "TLS 1.3".
	Version string `json:"version"`
	// ServerName is the SNI the client sent.
	ServerName string `json:"serverName"`
	// NegotiatedProtocol is the ALPN protocol, empty when none was agreed.
	NegotiatedProtocol string `json:"negotiatedProtocol,omitempty"`
	// Curves is the key exchange group (tls.CurveID's String), when known.
	Curves string `json:"curves,omitempty"`
	// CipherSuite is tls.CipherSuiteName of the negotiated suite.
	CipherSuite string `json:"cipherSuite"`
}

// TCPAssertions is the answer to TEST: the pod's Context (its fields at the
// top level of the JSON object), whether the server terminated TLS, and the
// TLS session when it did.
type TCPAssertions struct {
	Context
	IsTLS        bool           `json:"isTLS"`
	TLSAssertion *TLSAssertions `json:"tls,omitempty"`
}

// Serve accepts connections on l until ctx is done or l fails, and speaks
// the protocol on each one in its own goroutine, answering TEST with pod.
// Wrap l with tls.NewListener to serve TLS. It returns nil after ctx ends
// (closing l), otherwise the Accept error.
func Serve(ctx context.Context, l net.Listener, pod Context) error {
	stop := context.AfterFunc(ctx, func() { l.Close() })
	defer stop()
	for {
		conn, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		go handle(ctx, conn, pod)
	}
}

// handle speaks the protocol on one connection and closes it when the
// client goes away, a write fails or ctx ends.
func handle(ctx context.Context, conn net.Conn, pod Context) {
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()

	answer := TCPAssertions{Context: pod}
	if tc, ok := conn.(*tls.Conn); ok {
		if err := tc.HandshakeContext(ctx); err != nil {
			return
		}
		st := tc.ConnectionState()
		answer.IsTLS = true
		answer.TLSAssertion = &TLSAssertions{
			Version:            tls.VersionName(st.Version),
			ServerName:         st.ServerName,
			NegotiatedProtocol: st.NegotiatedProtocol,
			CipherSuite:        tls.CipherSuiteName(st.CipherSuite),
		}
		if st.CurveID != 0 {
			answer.TLSAssertion.Curves = st.CurveID.String()
		}
	}
	test, err := json.Marshal(answer)
	if err != nil {
		return
	}
	if _, err := fmt.Fprint(conn, WelcomeMessage); err != nil {
		return
	}
	lines := bufio.NewScanner(conn)
	for lines.Scan() {
		var reply string
		switch lines.Text() {
		case "PING":
			reply = "PONG"
		case "IS_TLS":
			reply = fmt.Sprint(answer.IsTLS)
		case "TEST":
			reply = string(test)
		default:
			continue
		}
		if _, err := fmt.Fprintf(conn, "%s\n", reply); err != nil {
			return
		}
	}
}
