package e2ecluster

// The Ingress of examples/40-ingress.yaml on the local cluster, in both
// modes: served by the fleet of the chart's GatewayClass on ports 80 and
// 443 of the IngressClass's own Service, whose LoadBalancer address is the
// Ingress's status.loadBalancer.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestIngressOnTheLocalCluster is the Ingress part of
// TestGatewaysOnTheLocalCluster (which runs it too) alone.
func TestIngressOnTheLocalCluster(t *testing.T) {
	inBothModes(t, func(e *env, mode string) {
		e.cleanup()
		e.helmInstall(mode)
		e.applyExamples()
		e.ingressServed()
	})
}

// ingressServed checks the example Ingress (applied with the examples):
// status.loadBalancer from the IngressClass's Service, HTTP with the
// rewrite and HTTPS through it, and a Gateway of the same fleet beside it.
func (e *env) ingressServed() {
	t := e.t
	addr := e.ingressAddress("shop", 4*time.Minute)
	t.Logf("Ingress shop: status.loadBalancer %s", addr)
	svc, err := e.kube.CoreV1().Services(releaseNamespace).Get(context.Background(), "ingress-"+className+"-"+className, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the IngressClass's Service: %v", err)
	}
	if len(svc.Status.LoadBalancer.Ingress) == 0 || svc.Status.LoadBalancer.Ingress[0].IP != addr {
		t.Errorf("Ingress address %s, Service %s/%s has %+v", addr, svc.Namespace, svc.Name, svc.Status.LoadBalancer.Ingress)
	}

	// rewrite-target /$2: the backend sees the rewritten path.
	e.expectRewritten(addr, "shop.example.com", "/store/items", "foo", "/items", 3*time.Minute)
	e.expectRewritten(addr, "shop.example.com", "/checkout", "bar", "/", time.Minute)
	e.expectRewritten(addr, "api.example.com", "/v1/users", "bar", "/users", time.Minute)
	for _, p := range []string{"/checkout/cart", "/v2"} { // Exact is exact; no such path
		if r, err := e.get(addr, "shop.example.com", p); err == nil {
			t.Errorf("shop.example.com%s (no path of the Ingress) answered: %+v", p, r)
		}
	}

	// HTTPS on 443 with the Secret's certificate, by SNI.
	secret, err := e.kube.CoreV1().Secrets(exampleNamespace).Get(context.Background(), "example-tls", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(secret.Data["tls.crt"]) {
		t.Fatal("the example Secret's tls.crt is not PEM")
	}
	e.eventually("https://"+addr+"/checkout SNI shop.example.com -> bar", 2*time.Minute, func() error {
		return e.httpsBackend(addr, "shop.example.com", "/checkout", "bar", roots)
	})
	if err := e.httpsBackend(addr, "api.example.com", "/v1/x", "bar", roots); err != nil {
		t.Errorf("HTTPS api.example.com: %v", err)
	}
	// The Gateways of the same fleet answer beside it.
	e.expectBackend(e.gatewayAddress("web", 2*time.Minute), "foo.example.com", "/", "foo", time.Minute)
}

// expectRewritten waits until GET addr host path is answered by the echo
// backend backend, which saw the path rewritten.
func (e *env) expectRewritten(addr, host, path, backend, rewritten string, timeout time.Duration) {
	e.t.Helper()
	e.eventually(fmt.Sprintf("http://%s%s Host %s -> %s as %s", addr, path, host, backend, rewritten), timeout, func() error {
		r, err := e.get(addr, host, path)
		if err != nil {
			return err
		}
		if r.Namespace != exampleNamespace || !strings.HasPrefix(r.Pod, backend+"-") || r.Path != rewritten {
			return fmt.Errorf("answered by pod %s/%s for path %s, want %s/%s-* for %s", r.Namespace, r.Pod, r.Path, exampleNamespace, backend, rewritten)
		}
		return nil
	})
}

// ingressAddress waits until the Ingress in the example namespace has an
// address in status.loadBalancer from the LoadBalancer pool, and returns it.
func (e *env) ingressAddress(name string, timeout time.Duration) string {
	e.t.Helper()
	var addr string
	e.eventually("Ingress "+name+" status.loadBalancer", timeout, func() error {
		ing, err := e.kube.NetworkingV1().Ingresses(exampleNamespace).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		lb := ing.Status.LoadBalancer.Ingress
		if len(lb) == 0 || lb[0].IP == "" {
			return fmt.Errorf("status.loadBalancer %+v", lb)
		}
		if err := fromLBPool(lb[0].IP); err != nil {
			return fmt.Errorf("status.loadBalancer: %w", err)
		}
		addr = lb[0].IP
		return nil
	})
	if err := allowedAddress(addr); err != nil {
		e.t.Fatal(err)
	}
	return addr
}

// httpsBackend sends GET https://addr:443path with SNI and Host host,
// verifying the server's certificate against roots, and checks that the
// echo backend backend answered.
func (e *env) httpsBackend(addr, host, path, backend string, roots *x509.CertPool) error {
	tr := e.http.Transport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: roots, ServerName: host}
	c := &http.Client{Timeout: 10 * time.Second, Transport: tr}
	req, err := http.NewRequest(http.MethodGet, "https://"+net.JoinHostPort(addr, "443")+path, nil)
	if err != nil {
		return err
	}
	req.Host = host
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	switch {
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("status %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))
	case !strings.Contains(string(body), `"pod":"`+backend+"-") && !strings.Contains(string(body), `"pod": "`+backend+"-"):
		return fmt.Errorf("not answered by %s: %.200s", backend, body)
	case resp.TLS == nil || len(resp.TLS.PeerCertificates) == 0:
		return errors.New("no server certificate")
	}
	return nil
}
