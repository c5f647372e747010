package e2ecluster

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// proxiedYAML: Gateway proxied (an HTTP listener on 8080) whose
// ListenerPolicy expects the PROXY protocol from a load balancer in front
// of it, and a route of host proxied.example.com to foo.
const proxiedYAML = `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: proxied, namespace: xds-example}
spec:
  gatewayClassName: xds-controller
  listeners:
  - {name: http, protocol: HTTP, port: 8080}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: proxied, namespace: xds-example}
spec:
  parentRefs: [{name: proxied}]
  hostnames: [proxied.example.com]
  rules:
  - backendRefs: [{name: foo, port: 80}]
---
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: ListenerPolicy
metadata: {name: behind-lb, namespace: xds-example}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: proxied}]
  proxyProtocol: {}
`

// TestProxyProtocolOnTheLocalCluster, in both modes: a ListenerPolicy's
// proxyProtocol on a Gateway; a client that sends a PROXY protocol v1
// header naming 203.0.113.7 (a documentation address: only written in the
// header, never sent to) reaches foo, which sees that address in
// X-Forwarded-For; a connection without the header gets no answer.
func TestProxyProtocolOnTheLocalCluster(t *testing.T) {
	inBothModes(t, func(e *env, mode string) {
		e.cleanup()
		e.helmInstall(mode)
		e.applyExamples()
		e.proxyProtocol()
	})
}

func (e *env) proxyProtocol() {
	t := e.t
	e.mustKubectl(proxiedYAML, "apply", "-f", "-")
	addr := e.gatewayAddress("proxied", 4*time.Minute)
	e.policyAccepted("listenerpolicy", "behind-lb", "proxied")
	const client = "203.0.113.7"
	var got *echoResponse
	e.eventually("GET proxied.example.com behind a PROXY header -> foo", 2*time.Minute, func() error {
		r, err := proxiedGet(addr, "8080", "PROXY TCP4 "+client+" "+addr+" 40000 8080\r\n", "proxied.example.com")
		if err != nil {
			return err
		}
		if !strings.HasPrefix(r.Pod, "foo-") {
			return fmt.Errorf("answered by %s", r.Pod)
		}
		got = r
		return nil
	})
	xff := strings.Join(got.Headers["X-Forwarded-For"], ",")
	if !slices.Contains(strings.Split(strings.ReplaceAll(xff, " ", ""), ","), client) {
		t.Errorf("foo saw X-Forwarded-For %q, want the PROXY header's %s", xff, client)
	}
	if r, err := proxiedGet(addr, "8080", "", "proxied.example.com"); err == nil {
		t.Errorf("a connection without the PROXY header was served: %+v", r)
	}
	t.Logf("ListenerPolicy proxyProtocol: PROXY TCP4 %s -> foo saw X-Forwarded-For %q; without the header no answer", client, xff)
}

// proxiedGet dials addr:port (an address of the local cluster), writes
// header (a PROXY protocol line, or nothing) and GET / for host, and
// returns the echo backend's answer; an error when none comes in 5 s.
func proxiedGet(addr, port, header, host string) (*echoResponse, error) {
	if err := allowedAddress(addr); err != nil {
		return nil, err
	}
	conn, err := net.DialTimeout("tcp", net.JoinHostPort(addr, port), 5*time.Second)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := fmt.Fprintf(conn, "%sGET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", header, host); err != nil {
		return nil, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %d %.100q", resp.StatusCode, body)
	}
	var r echoResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, err
	}
	return &r, nil
}
