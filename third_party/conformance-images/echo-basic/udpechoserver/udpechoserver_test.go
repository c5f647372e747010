package udpechoserver

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"
)

var pod = Context{Namespace: "gateway-conformance-infra", Service: "udp-echo", Pod: "udp-echo-6f7-abcde"}

// TestEchoOnLoopback: each datagram sent to Serve on 127.0.0.1 comes back
// to its sender as an EchoResponse with the payload unchanged (a 0-byte,
// a short and a 9000-byte datagram) and the pod's context; Serve returns
// nil once its context is cancelled.
func TestEchoOnLoopback(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, pc, pod) }()

	conn, err := net.Dial("udp", pc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, payload := range []string{"", "gateway-api-conformance-udp-weight\n", strings.Repeat("x", 9000)} {
		if _, err := conn.Write([]byte(payload)); err != nil {
			t.Fatal(err)
		}
		// A deadline only so that a lost datagram fails the test instead
		// of hanging it; nothing is asserted about time.
		conn.SetReadDeadline(time.Now().Add(time.Minute))
		buf := make([]byte, 1<<16)
		n, err := conn.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		var got EchoResponse
		if err := json.Unmarshal(buf[:n], &got); err != nil {
			t.Fatalf("answer %q: %v", buf[:n], err)
		}
		if want := (EchoResponse{Request: payload, Context: pod}); got != want {
			t.Errorf("answer %+v, want %+v", got, want)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve after cancel: %v, want nil", err)
	}
}

// TestJSONLayout: the answer's JSON has the pod's context keys at the top
// level beside "request", as the echo pods write it.
func TestJSONLayout(t *testing.T) {
	b, err := json.Marshal(EchoResponse{Request: "hi\n", Context: Context{Namespace: "ns", Service: "svc", Pod: "p"}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"request":"hi\n","namespace":"ns","ingress":"","service":"svc","pod":"p"}`
	if !bytes.Equal(b, []byte(want)) {
		t.Errorf("JSON %s, want %s", b, want)
	}
}
