package e2ecluster

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// testserversYAML runs internal/testservers/cmd/xds-testservers (its image
// imported by make e2e) as the Service testservers of the example
// namespace: the ext_authz gRPC and HTTP servers on ports 9000 and 9001,
// the OTLP/gRPC receiver on port 4317 (no appProtocol: Envoy speaks h2c to
// gRPC services), and the report port 8080 (GET /spans, /checks).
const testserversYAML = `apiVersion: apps/v1
kind: Deployment
metadata: {name: testservers, namespace: xds-example, labels: {app: testservers}}
spec:
  replicas: 1
  selector: {matchLabels: {app: testservers}}
  template:
    metadata: {labels: {app: testservers}}
    spec:
      containers:
      - name: testservers
        image: ghcr.io/xds-controller/xds-testservers:e2e
        imagePullPolicy: IfNotPresent
        ports: [{containerPort: 9000}, {containerPort: 9001}, {containerPort: 4317}, {containerPort: 8080}]
        readinessProbe: {httpGet: {path: /healthz, port: 8080}, periodSeconds: 2}
---
apiVersion: v1
kind: Service
metadata: {name: testservers, namespace: xds-example}
spec:
  selector: {app: testservers}
  ports:
  - {name: authz-grpc, port: 9000, targetPort: 9000}
  - {name: authz-http, port: 9001, targetPort: 9001}
  - {name: otlp, port: 4317, targetPort: 4317}
  - {name: report, port: 8080, targetPort: 8080}
`

// tracingYAML routes spans.example.com to the test servers' report port
// and traces Gateway web's requests to their OTLP receiver.
const tracingYAML = `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: spans, namespace: xds-example}
spec:
  parentRefs: [{name: web}]
  hostnames: [spans.example.com]
  rules:
  - backendRefs: [{name: testservers, port: 8080}]
---
apiVersion: gateway.networking.x-k8s.io/v1alpha1
kind: XTelemetryPolicy
metadata: {name: web-tracing, namespace: xds-example}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: web}]
  tracing:
    mode: Enabled
    provider: {backendRef: {name: testservers, port: 4317}}
    serviceName: e2e-cluster
    attributes:
    - {name: e2e.mode, sourceType: Literal, literalValue: cluster}
`

// deployTestServers applies testserversYAML and waits for its rollout.
func (e *env) deployTestServers() {
	e.mustKubectl(testserversYAML, "apply", "-f", "-")
	e.mustKubectl("", "-n", exampleNamespace, "rollout", "status", "deploy/testservers", "--timeout=120s")
}

// span is what the report port says of a span (otlp.Span's JSON).
type span struct {
	TraceID, SpanID, ParentSpanID, Name, Service string
	Attributes                                   map[string]string
}

// tracing applies an XTelemetryPolicy to Gateway web whose collector is
// the test servers' OTLP receiver, waits for it to be Accepted, sends a
// request with a sampled traceparent through web and waits for its span:
// a child of the client's span, of the service e2e-cluster, with the
// policy's attribute.
func (e *env) tracing(web string) {
	t := e.t
	e.deployTestServers()
	e.mustKubectl(tracingYAML, "apply", "-f", "-")
	e.eventually("XTelemetryPolicy web-tracing Accepted and ResolvedRefs on Gateway web", time.Minute, func() error {
		out, err := e.kubectl("", "-n", exampleNamespace, "get", "xtelemetrypolicy", "web-tracing", "-o",
			`jsonpath={range .status.ancestors[*]}{.ancestorRef.name}:{range .conditions[*]}{.type}={.status},{end}{end}`)
		if err == nil && (!strings.Contains(out, "web:") || !strings.Contains(out, "Accepted=True") || !strings.Contains(out, "ResolvedRefs=True")) {
			err = fmt.Errorf("status.ancestors: %q", out)
		}
		return err
	})
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	traceID, clientSpan := hex.EncodeToString(b[:16]), hex.EncodeToString(b[16:])
	var got span
	e.eventually("the span of a traced request through Gateway web", 2*time.Minute, func() error {
		// A request per try: the policy may reach Envoy after the status.
		req, _ := http.NewRequest(http.MethodGet, "http://"+net.JoinHostPort(web, "80")+"/traced", nil)
		req.Host = "foo.example.com"
		req.Header.Set("traceparent", "00-"+traceID+"-"+clientSpan+"-01")
		if resp, err := e.http.Do(req); err == nil {
			resp.Body.Close()
		}
		spans, err := e.spans(web)
		if err != nil {
			return err
		}
		for _, s := range spans {
			if s.TraceID == traceID {
				got = s
				return nil
			}
		}
		return fmt.Errorf("no span of trace %s among %d", traceID, len(spans))
	})
	if got.ParentSpanID != clientSpan || got.Service != "e2e-cluster" || got.Name != "ingress" || got.Attributes["e2e.mode"] != "cluster" {
		t.Fatalf("span %+v; want ingress of e2e-cluster, child of %s, e2e.mode=cluster", got, clientSpan)
	}
	t.Logf("tracing: span %s of trace %s, child of the client's %s, service %s, upstream %s", got.SpanID, traceID, clientSpan, got.Service, got.Attributes["upstream_cluster"])
}

// spans reads the spans the test servers received, through Gateway web.
func (e *env) spans(web string) ([]span, error) {
	req, err := http.NewRequest(http.MethodGet, "http://"+net.JoinHostPort(web, "80")+"/spans", nil)
	if err != nil {
		return nil, err
	}
	req.Host = "spans.example.com"
	resp, err := e.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /spans: %d %.200s", resp.StatusCode, body)
	}
	var out []span
	return out, json.Unmarshal(body, &out)
}
