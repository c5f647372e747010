package e2ecluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/quic-go/quic-go/http3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestHTTP3OnTheLocalCluster installs the chart in Shared and in
// Dedicated mode and serves Gateway h3's HTTPS listener (port 443, the
// examples' certificate for shop.example.com) over HTTP/3 with a
// ListenerPolicy http3: its Service gets port 443 in UDP (http3-443),
// HTTPS/1.1 responses carry alt-svc: h3=":443"; ma=86400, and quic-go's
// HTTP/3 client reaches foo through the load balancer's address in UDP.
func TestHTTP3OnTheLocalCluster(t *testing.T) {
	inBothModes(t, (*env).http3)
}

const http3ClusterYAML = `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: h3, namespace: xds-example}
spec:
  gatewayClassName: xds-controller
  listeners:
  - name: https
    protocol: HTTPS
    port: 443
    hostname: shop.example.com
    tls: {certificateRefs: [{name: example-tls}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: h3, namespace: xds-example}
spec:
  parentRefs: [{name: h3}]
  rules:
  - backendRefs: [{name: foo, port: 80}]
---
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: ListenerPolicy
metadata: {name: h3, namespace: xds-example}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: h3}]
  http3: {}
`

// http3 is one mode's scenario of TestHTTP3OnTheLocalCluster.
func (e *env) http3(mode string) {
	t := e.t
	e.cleanup()
	e.helmInstall(mode)
	e.applyExamples()
	e.mustKubectl(http3ClusterYAML, "apply", "-f", "-")
	addr := e.gatewayAddress("h3", 4*time.Minute)
	const host = "shop.example.com"

	e.eventually("Service h3-"+className+" has port 443 in UDP", 2*time.Minute, func() error {
		svc, err := e.kube.CoreV1().Services(exampleNamespace).Get(context.Background(), "h3-"+className, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, p := range svc.Spec.Ports {
			if p.Port == 443 && p.Protocol == corev1.ProtocolUDP && p.Name == "http3-443" {
				return nil
			}
		}
		return fmt.Errorf("ports %+v", svc.Spec.Ports)
	})
	secret, err := e.kube.CoreV1().Secrets(exampleNamespace).Get(context.Background(), "example-tls", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(secret.Data["tls.crt"]) {
		t.Fatal("the example Secret's tls.crt is not PEM")
	}
	const want = `h3=":443"; ma=86400`
	e.eventually("https://"+addr+"/tcp -> foo with alt-svc "+want, 2*time.Minute, func() error {
		tr := e.http.Transport.(*http.Transport).Clone()
		tr.TLSClientConfig = &tls.Config{RootCAs: roots, ServerName: host}
		resp, body, err := roundTrip(tr, addr, host, "/tcp")
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"foo-`) {
			return fmt.Errorf("status %d: %.200s", resp.StatusCode, body)
		}
		if got := resp.Header.Get("alt-svc"); got != want {
			return fmt.Errorf("alt-svc %q", got)
		}
		return nil
	})
	var proto string
	e.eventually("HTTP/3 to "+addr+":443 (UDP) -> foo", 2*time.Minute, func() error {
		tr := &http3.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: host}}
		defer tr.Close()
		resp, body, err := roundTrip(tr, addr, host, "/quic")
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"foo-`) || !strings.Contains(body, `/quic`) {
			return fmt.Errorf("status %d: %.200s", resp.StatusCode, body)
		}
		proto = resp.Proto
		return nil
	})
	if proto != "HTTP/3.0" {
		t.Fatalf("proto %q, want HTTP/3.0", proto)
	}
	t.Logf("%s: Gateway h3 at %s served HTTPS/1.1 with alt-svc %s and %s from foo", mode, addr, want, proto)
}

// roundTrip sends GET https://addr:443path with Host host through rt (5
// s at most) and returns the response and its body (at most 1 MiB).
func roundTrip(rt http.RoundTripper, addr, host, path string) (*http.Response, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+net.JoinHostPort(addr, "443")+path, nil)
	if err != nil {
		return nil, "", err
	}
	req.Host = host
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp, string(b), nil
}
