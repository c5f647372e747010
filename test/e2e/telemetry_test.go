package e2e

// XTelemetryPolicy (experimental) through the real controller and Envoy:
// spans of three Gateways' requests reach a real OTLP/gRPC receiver
// (internal/testservers/otlp) behind the Service collector (a port
// without appProtocol: Envoy speaks h2c to it).

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xds-controller/xds-controller/internal/testservers/otlp"
)

// telemetryYAML: Gateway gw (gatewayYAML) traces every request with
// parent-based sampling (the default), the service name e2e-gateway, the
// request header x-user-id as user.id, a literal and two semantic
// convention attributes, and an export header; Gateway half (port
// HalfPort) samples 50% by trace id whatever the traceparent says
// (parentBasedSampling Disabled) and names its spans "sampled request";
// Gateway untraced (port OffPort) has tracing Disabled; Gateway parent
// (port ParentPort) samples 10% of new traces and 50% of the requests
// whose parent is sampled. One HTTPRoute sends
// all three to the Service app.
const telemetryYAML = `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: half, namespace: default}
spec:
  gatewayClassName: e2e
  addresses: [{type: IPAddress, value: 127.0.0.1}]
  listeners: [{name: http, protocol: HTTP, port: {{.HalfPort}}}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: untraced, namespace: default}
spec:
  gatewayClassName: e2e
  addresses: [{type: IPAddress, value: 127.0.0.1}]
  listeners: [{name: http, protocol: HTTP, port: {{.OffPort}}}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: parent, namespace: default}
spec:
  gatewayClassName: e2e
  addresses: [{type: IPAddress, value: 127.0.0.1}]
  listeners: [{name: http, protocol: HTTP, port: {{.ParentPort}}}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: app, namespace: default}
spec:
  parentRefs: [{name: gw}, {name: half}, {name: untraced}, {name: parent}]
  rules:
  - backendRefs: [{name: app, port: 80}]
---
apiVersion: gateway.networking.x-k8s.io/v1alpha1
kind: XTelemetryPolicy
metadata: {name: gw, namespace: default}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: gw}]
  tracing:
    mode: Enabled
    provider:
      backendRef: {name: collector, port: 80}
      headers: [{name: x-tenant, value: e2e}]
    serviceName: e2e-gateway
    attributes:
    - {name: user.id, sourceType: Header, headerName: X-User-ID}
    - {name: deployment.environment, sourceType: Literal, literalValue: e2e}
    - {name: http.request.method, sourceType: Attribute, attributeKey: http.request.method}
    - {name: http.response.status_code, sourceType: Attribute, attributeKey: http.response.status_code}
---
apiVersion: gateway.networking.x-k8s.io/v1alpha1
kind: XTelemetryPolicy
metadata: {name: half, namespace: default}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: half}]
  tracing:
    mode: Enabled
    provider: {backendRef: {name: collector, port: 80}}
    samplingRate: {numerator: 50}
    parentBasedSampling: {mode: Disabled}
    spanName: sampled request
    attributes:
    - {name: gateway, sourceType: Literal, literalValue: half}
---
apiVersion: gateway.networking.x-k8s.io/v1alpha1
kind: XTelemetryPolicy
metadata: {name: untraced, namespace: default}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: untraced}]
  tracing: {mode: Disabled}
---
apiVersion: gateway.networking.x-k8s.io/v1alpha1
kind: XTelemetryPolicy
metadata: {name: parent, namespace: default}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: parent}]
  tracing:
    mode: Enabled
    provider: {backendRef: {name: collector, port: 80}}
    samplingRate: {numerator: 10}
    parentBasedSampling: {mode: Enabled, samplingRate: {numerator: 50}}
    attributes:
    - {name: gateway, sourceType: Literal, literalValue: parent}
`

// flushWait outlasts Envoy's OpenTelemetry export timer (runtime
// tracing.opentelemetry.flush_interval_ms, 5 s by default: the
// production bootstrap keeps Envoy's batching), so that every span of
// the requests sent before it has been exported.
const flushWait = 6500 * time.Millisecond

// traceparent is a W3C traceparent with random trace and span ids and the
// flags given ("01" sampled, "00" not), and its trace and span ids.
func traceparent(t *testing.T, flags string) (header, traceID, spanID string) {
	t.Helper()
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	traceID, spanID = hex.EncodeToString(b[:16]), hex.EncodeToString(b[16:])
	return "00-" + traceID + "-" + spanID + "-" + flags, traceID, spanID
}

// TestTelemetryTracing shows XTelemetryPolicy tracing: a request with a
// sampled traceparent gives one SERVER span "ingress" of the service
// e2e-gateway, child of the client's span in its trace, with the policy's
// attributes (a request header, a literal, the method and the response
// status), and the backend sees Envoy's span as its parent; a request
// whose traceparent says "not sampled" gives none (parent-based, the
// default). On Gateway half, samplingRate 50% over 200 requests without
// traceparent, and over 100 whose traceparent says "not sampled"
// (parentBasedSampling Disabled: ignored), lands within 5 standard
// deviations of half, each span named "sampled request"; Gateway
// untraced (Disabled) exports nothing. On Gateway parent (samplingRate
// 10%, parentBasedSampling 50%) requests with a sampled parent are
// sampled at 50%, new traces at 10%, unsampled parents never: the local
// rate and the parent-based sampler of docs/tracing.md.
func TestTelemetryTracing(t *testing.T) {
	recv := otlp.Start(t)
	half, off, parent := freePort(t), freePort(t), freePort(t)
	f := startWith(t, func(f *fixture) {
		// app answers with the traceparent it received.
		app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("x-traceparent", r.Header.Get("traceparent"))
			fmt.Fprint(w, "app")
		}))
		t.Cleanup(app.Close)
		render(t, filepath.Join(f.dir, "gateway.yaml"), gatewayYAML, map[string]any{
			"GatewayPort": f.gwPort,
			"Backends": []gatewayBackend{
				{Name: "app", Port: portOf(app)},
				{Name: "collector", Port: portOfAddr(t, recv.Addr)},
			},
		})
		render(t, filepath.Join(f.dir, "telemetry.yaml"), telemetryYAML, map[string]any{"HalfPort": half, "OffPort": off, "ParentPort": parent})
	})
	for _, port := range []int{f.gwPort, half, off, parent} {
		poll(t, fmt.Sprintf("port %d served", port), func() error {
			if r := f.send(port, "app.example.com", "/warm-up"); r.status != 200 {
				return fmt.Errorf("%d %q", r.status, r.body)
			}
			return nil
		})
	}

	// Gateway gw: a sampled parent, then one that is not sampled.
	tp, traceID, clientSpan := traceparent(t, "01")
	r := f.send(f.gwPort, "app.example.com", "/traced", "traceparent", tp, "x-user-id", "u-42")
	if r.status != 200 {
		t.Fatalf("traced request: %d %q", r.status, r.body)
	}
	unsampled, unsampledTrace, _ := traceparent(t, "00")
	if r := f.send(f.gwPort, "app.example.com", "/unsampled", "traceparent", unsampled); r.status != 200 {
		t.Fatalf("unsampled request: %d %q", r.status, r.body)
	}
	spans, err := recv.Wait(15*time.Second, func(s []otlp.Span) bool {
		for _, sp := range s {
			if sp.TraceID == traceID {
				return true
			}
		}
		return false
	})
	if err != nil {
		t.Fatal(err)
	}
	var span otlp.Span
	for _, sp := range spans {
		if sp.TraceID == traceID {
			span = sp
		}
	}
	t.Logf("span of the traced request: %+v", span)
	want := map[string]string{"user.id": "u-42", "deployment.environment": "e2e", "http.request.method": "GET", "http.response.status_code": "200"}
	for k, v := range want {
		if span.Attributes[k] != v {
			t.Errorf("span attribute %s = %q, want %q", k, span.Attributes[k], v)
		}
	}
	if up, want := r.header.Get("x-traceparent"), "00-"+traceID+"-"+span.SpanID+"-01"; up != want {
		t.Errorf("the backend got traceparent %q, want %q (Envoy's span as parent)", up, want)
	}
	if span.Name != "ingress" || span.Service != "e2e-gateway" || span.Kind != "SPAN_KIND_SERVER" || span.ParentSpanID != clientSpan {
		t.Errorf("span %q of service %q, kind %s, parent %s; want ingress of e2e-gateway, SERVER, child of the client's span %s",
			span.Name, span.Service, span.Kind, span.ParentSpanID, clientSpan)
	}

	// Gateway half: 50% by trace id, with or without an unsampled parent.
	const plain, withParent = 200, 100
	for i := range plain + withParent {
		var headers []string
		if i >= plain {
			h, _, _ := traceparent(t, "00")
			headers = []string{"traceparent", h}
		}
		if r := f.send(half, "app.example.com", fmt.Sprintf("/half/%d", i), headers...); r.status != 200 {
			t.Fatalf("request %d on half: %d %q", i, r.status, r.body)
		}
	}
	// Gateway parent: sampled parents at 50%, new traces at 10%,
	// unsampled parents never.
	const parentKinds = 3
	parentN := [parentKinds]int{200, 200, 50}
	for kind, n := range parentN {
		for i := range n {
			var headers []string
			if kind != 1 {
				h, _, _ := traceparent(t, []string{"01", "", "00"}[kind])
				headers = []string{"traceparent", h}
			}
			if r := f.send(parent, "app.example.com", fmt.Sprintf("/parent/%d/%d", kind, i), headers...); r.status != 200 {
				t.Fatalf("request %d on parent: %d %q", i, r.status, r.body)
			}
		}
	}
	// Gateway untraced: nothing.
	for i := range 20 {
		if r := f.send(off, "app.example.com", fmt.Sprintf("/off/%d", i)); r.status != 200 {
			t.Fatalf("request %d on untraced: %d %q", i, r.status, r.body)
		}
	}
	time.Sleep(flushWait)
	spans = recv.Spans()
	var gotPlain, gotParent, halfNames, offSpans, unsampledSpans int
	var gotByParent [parentKinds]int
	for _, sp := range spans {
		switch {
		case sp.Attributes["gateway"] == "half" && strings.Contains(sp.Attributes["http.url"], "/half/"):
			var n int
			fmt.Sscanf(sp.Attributes["http.url"][strings.LastIndex(sp.Attributes["http.url"], "/")+1:], "%d", &n)
			if n < plain {
				gotPlain++
			} else {
				gotParent++
			}
			if sp.Name == "sampled request" {
				halfNames++
			}
		case sp.Attributes["gateway"] == "parent" && strings.Contains(sp.Attributes["http.url"], "/parent/"):
			var kind, i int
			fmt.Sscanf(sp.Attributes["http.url"][strings.Index(sp.Attributes["http.url"], "/parent/"):], "/parent/%d/%d", &kind, &i)
			gotByParent[kind]++
		case strings.Contains(sp.Attributes["http.url"], "/off/"):
			offSpans++
		case sp.TraceID == unsampledTrace:
			unsampledSpans++
		}
	}
	t.Logf("Gateway half, samplingRate 50%%: %d/%d requests without traceparent sampled, %d/%d with an unsampled traceparent; %d spans in all",
		gotPlain, plain, gotParent, withParent, len(spans))
	// Binomial(n, 1/2): within 5 standard deviations (sqrt(n)/2) of n/2.
	for _, c := range []struct{ got, n int }{{gotPlain, plain}, {gotParent, withParent}} {
		if band := 5 * sqrtInt(c.n) / 2; c.got < c.n/2-band || c.got > c.n/2+band {
			t.Errorf("%d/%d sampled, want %d±%d", c.got, c.n, c.n/2, band)
		}
	}
	t.Logf("Gateway parent, samplingRate 10%%, parentBasedSampling 50%%: %d/%d requests with a sampled parent sampled, %d/%d without traceparent, %d/%d with an unsampled parent",
		gotByParent[0], parentN[0], gotByParent[1], parentN[1], gotByParent[2], parentN[2])
	// Binomial(n, p): within 5 standard deviations of n·p.
	for kind, p := range [parentKinds]float64{0.5, 0.1, 0} {
		n := float64(parentN[kind])
		mean, band := n*p, 5*math.Sqrt(n*p*(1-p))
		// A positive share must show: new traces at 10% of 200 have a band
		// reaching 0, and 0 is what never sampling them would give.
		if got := float64(gotByParent[kind]); got < mean-band || got > mean+band || p > 0 && got == 0 {
			t.Errorf("Gateway parent, requests of kind %d: %d/%d sampled, want %.0f±%.0f", kind, gotByParent[kind], parentN[kind], mean, band)
		}
	}
	if halfNames != gotPlain+gotParent || halfNames == 0 {
		t.Errorf("%d of Gateway half's %d spans are named \"sampled request\"", halfNames, gotPlain+gotParent)
	}
	if offSpans != 0 || unsampledSpans != 0 {
		t.Errorf("%d spans from Gateway untraced (Disabled), %d of the request whose parent is not sampled; want none", offSpans, unsampledSpans)
	}
}

// portOfAddr is the port of a "host:port" address.
func portOfAddr(t *testing.T, addr string) int {
	t.Helper()
	var port int
	if _, err := fmt.Sscanf(addr[strings.LastIndex(addr, ":")+1:], "%d", &port); err != nil {
		t.Fatalf("address %q: %v", addr, err)
	}
	return port
}

// sqrtInt is the integer square root of n, rounded up.
func sqrtInt(n int) int {
	r := 0
	for r*r < n {
		r++
	}
	return r
}
