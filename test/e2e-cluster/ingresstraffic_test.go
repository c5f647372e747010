package e2ecluster

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// ingressTrafficYAML: three Ingresses of our class with ingress-nginx's
// traffic annotations, each host to foo: limited (limit-rpm 3 with a
// burst multiplier of 1: 3 requests a minute per client address),
// upload (proxy-body-size 1k: 413 above 1024 bytes) and moved
// (permanent-redirect: 301 to https://new.example.com/docs).
const ingressTrafficYAML = `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: limited
  namespace: xds-example
  annotations:
    nginx.ingress.kubernetes.io/limit-rpm: "3"
    nginx.ingress.kubernetes.io/limit-burst-multiplier: "1"
spec:
  ingressClassName: xds-controller
  rules:
  - host: limited.example.com
    http:
      paths: [{path: /, pathType: Prefix, backend: {service: {name: foo, port: {number: 80}}}}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: upload
  namespace: xds-example
  annotations:
    nginx.ingress.kubernetes.io/proxy-body-size: 1k
spec:
  ingressClassName: xds-controller
  rules:
  - host: upload.example.com
    http:
      paths: [{path: /, pathType: Prefix, backend: {service: {name: foo, port: {number: 80}}}}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: moved
  namespace: xds-example
  annotations:
    nginx.ingress.kubernetes.io/permanent-redirect: https://new.example.com/docs
spec:
  ingressClassName: xds-controller
  rules:
  - host: moved.example.com
    http:
      paths: [{path: /, pathType: Prefix, backend: {service: {name: foo, port: {number: 80}}}}]
`

// TestIngressTrafficAnnotationsOnTheLocalCluster, in both modes: the
// ingress-nginx traffic annotations through the class's fleet (they fill
// the traffic policies' IR, docs/ingress.md): permanent-redirect answers
// 301 with its Location; proxy-body-size 1k answers 413 to 1025 bytes and
// passes 1024; limit-rpm 3 (burst multiplier 1) lets 3 requests of a
// client through in a burst on one connection (one Envoy replica: local
// buckets) and answers the rest 429 with the rate-limit headers.
func TestIngressTrafficAnnotationsOnTheLocalCluster(t *testing.T) {
	inBothModes(t, func(e *env, mode string) {
		e.cleanup()
		e.helmInstall(mode)
		e.applyExamples()
		e.ingressTraffic()
	})
}

func (e *env) ingressTraffic() {
	t := e.t
	e.mustKubectl(ingressTrafficYAML, "apply", "-f", "-")
	addr := e.ingressAddress("moved", 4*time.Minute)
	c := keepAliveClient()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	e.eventually("moved.example.com answers 301 to https://new.example.com/docs", 3*time.Minute, func() error {
		status, _, h, err := e.do(c, http.MethodGet, addr, "moved.example.com", "/old", nil, nil)
		if err == nil && (status != http.StatusMovedPermanently || !strings.HasPrefix(h.Get("Location"), "https://new.example.com")) {
			err = fmt.Errorf("status %d, Location %q", status, h.Get("Location"))
		}
		return err
	})
	e.eventually("upload.example.com answers 413 to 1025 bytes", 2*time.Minute, func() error {
		status, _, _, err := e.do(c, http.MethodPost, addr, "upload.example.com", "/", nil, bytes.NewReader(make([]byte, 1025)))
		if err == nil && status != http.StatusRequestEntityTooLarge {
			err = fmt.Errorf("status %d", status)
		}
		return err
	})
	if status, body, _, err := e.do(c, http.MethodPost, addr, "upload.example.com", "/", nil, bytes.NewReader(make([]byte, 1024))); err != nil || status != http.StatusOK {
		t.Fatalf("upload.example.com, 1024 bytes: %d %.100q (%v), want 200", status, body, err)
	}

	// The limit: the first answer with its headers costs one of the three.
	e.eventually("limited.example.com: X-RateLimit-Limit on the pinned connection", 2*time.Minute, func() error {
		status, _, h, err := e.do(c, http.MethodGet, addr, "limited.example.com", "/", nil, nil)
		if err == nil && (status != http.StatusOK || h.Get("X-Ratelimit-Limit") == "") {
			err = fmt.Errorf("status %d, X-RateLimit-Limit %q", status, h.Get("X-Ratelimit-Limit"))
		}
		return err
	})
	passed, refused := 0, 0
	for i := range 8 {
		status, body, h, err := e.do(c, http.MethodGet, addr, "limited.example.com", "/", nil, nil)
		if err != nil {
			t.Fatalf("limited request %d: %v", i+1, err)
		}
		switch status {
		case http.StatusOK:
			passed++
		case http.StatusTooManyRequests:
			refused++
			if h.Get("Retry-After") == "" || h.Get("X-Ratelimit-Limit") == "" {
				t.Errorf("a 429 without the rate-limit headers: %q %v", body, h)
			}
		default:
			t.Fatalf("limited request %d: status %d %.100q", i+1, status, body)
		}
	}
	t.Logf("Ingress limit-rpm 3: a probe, then 8 requests on one connection: %d x 200, %d x 429", passed, refused)
	if passed != 2 || refused != 6 {
		t.Errorf("limited: %d x 200, %d x 429 after the probe, want 2 and 6", passed, refused)
	}
}
