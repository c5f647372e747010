package ir

import (
	"fmt"
	"strings"
)

// Tracing is how the HTTP connection manager of an HTTP or HTTPS listener
// traces its requests: OpenTelemetry spans exported over OTLP/gRPC to a
// collector (Gateway API XTelemetryPolicy spec.tracing). A listener
// without Tracing traces nothing.
//
// Sampling: a request is sampled when Envoy's local decision (a random
// draw at RandomSampling percent) says so AND the tracer's sampler does:
// with ParentBased, a request whose traceparent carries a sampling
// decision follows it and one without is sampled by trace id at
// RootSampling percent; without ParentBased every request is sampled by
// trace id at RootSampling percent, whatever its traceparent says.
type Tracing struct {
	// Collector is the OTLP/gRPC collector (its protocol HTTP/2 or h2c),
	// valid.
	Collector *Backend `json:"collector"`
	// Headers are sent with every export call (gRPC initial metadata),
	// names lower-case.
	Headers []Header `json:"headers,omitempty"`
	// ServiceName is the service.name resource attribute of the spans.
	ServiceName string `json:"serviceName"`
	// SpanName, when set, names the request spans (Envoy's default is
	// "ingress").
	SpanName string `json:"spanName,omitempty"`
	// RandomSampling is the percentage (0-100) of requests Envoy decides
	// to trace locally (HTTP connection manager tracing random_sampling).
	RandomSampling float64 `json:"randomSampling"`
	// RootSampling is the percentage (0-100) of the requests Envoy's local
	// decision lets through that the trace id ratio sampler samples: every
	// request, or with ParentBased those without a parent decision.
	RootSampling float64 `json:"rootSampling"`
	// ParentBased: a request with a traceparent follows its sampled flag.
	ParentBased bool `json:"parentBased,omitempty"`
	// Attributes are added to every request span.
	Attributes []TracingAttribute `json:"attributes,omitempty"`
}

// TracingAttribute is one span attribute: Name and exactly one of
// Literal (a constant), RequestHeader (the value of a request header,
// absent when the request has none) and Format (an Envoy substitution
// format such as "%RESPONSE_CODE%", evaluated when the span ends).
type TracingAttribute struct {
	Name          string `json:"name"`
	Literal       string `json:"literal,omitempty"`
	RequestHeader string `json:"requestHeader,omitempty"`
	Format        string `json:"format,omitempty"`
}

// tracing checks a listener's Tracing: on an HTTP or HTTPS listener, a
// valid HTTP/2 collector, percentages within 0-100, a service name,
// distinct named attributes with one source each, and header names
// that are lower-case tokens.
func (v *validator) tracing(p string, l *Listener) {
	t := l.Tracing
	p += ": tracing"
	if l.Protocol != ProtocolHTTP && l.Protocol != ProtocolHTTPS {
		v.add(p, "only HTTP and HTTPS listeners trace")
	}
	switch c := t.Collector; {
	case c == nil || c.Invalid:
		v.add(p, "a valid collector is required")
	case c.Protocol != AppProtocolHTTP2 && c.Protocol != AppProtocolH2C:
		v.add(p, fmt.Sprintf("collector %s speaks %q; OTLP/gRPC needs HTTP/2", c.Name, c.Protocol))
	default:
		v.backend(p, c)
	}
	for _, pc := range []float64{t.RandomSampling, t.RootSampling} {
		if pc < 0 || pc > 100 {
			v.add(p, fmt.Sprintf("sampling percentage %v is outside 0-100", pc))
		}
	}
	if t.ServiceName == "" {
		v.add(p, "a service name is required")
	}
	names := map[string]bool{}
	for _, a := range t.Attributes {
		sources := 0
		for _, s := range []string{a.Literal, a.RequestHeader, a.Format} {
			if s != "" {
				sources++
			}
		}
		if a.Name == "" || names[a.Name] || sources != 1 {
			v.add(p, fmt.Sprintf("attribute %q: a unique name and exactly one of literal, requestHeader and format are required", a.Name))
		}
		names[a.Name] = true
	}
	for _, h := range t.Headers {
		if h.Name == "" || h.Name != strings.ToLower(h.Name) || strings.HasPrefix(h.Name, ":") {
			v.add(p, fmt.Sprintf("header %q: a lower-case header name is required", h.Name))
		}
	}
}
