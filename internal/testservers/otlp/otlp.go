// Package otlp holds a real OTLP trace receiver for tests: a gRPC server of
// opentelemetry.proto.collector.trace.v1.TraceService/Export on
// 127.0.0.1:0 that records every span it receives (trace id, span id,
// parent span id, name, kind, attributes, service name) for the test to
// read, concurrency-safely, with Spans or Wait.
package otlp

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonv1 "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/grpc"
)

// Span is one received span. Ids are lower-case hex; ParentSpanID is ""
// for a root span.
type Span struct {
	TraceID, SpanID, ParentSpanID string
	Name                          string
	// Kind is the OTLP SpanKind name, e.g. "SPAN_KIND_SERVER".
	Kind string
	// Attributes are the span's attributes, each value in its string
	// form (ints and bools formatted, arrays and maps as fmt prints them).
	Attributes map[string]string
	// Service is the resource attribute service.name.
	Service string
}

// Receiver is a running OTLP/gRPC trace receiver.
type Receiver struct {
	// Addr is host:port on 127.0.0.1.
	Addr string

	mu      sync.Mutex
	spans   []Span
	changed chan struct{} // closed and replaced on every Export
	gs      *grpc.Server
	once    sync.Once
}

// Start starts a receiver on 127.0.0.1:0 (plaintext HTTP/2; point an
// envoy_grpc cluster with http2_protocol_options at Receiver.Addr). It is
// stopped at t's cleanup.
func Start(t testing.TB) *Receiver {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := Serve(lis)
	t.Cleanup(r.Stop)
	return r
}

// Serve is Start on a listener of the caller's (a program that is not a
// test: cmd/xds-testservers); Receiver.Stop closes it.
func Serve(lis net.Listener) *Receiver {
	r := &Receiver{Addr: lis.Addr().String(), changed: make(chan struct{}), gs: grpc.NewServer()}
	collectortrace.RegisterTraceServiceServer(r.gs, &traceService{r: r})
	go func() { _ = r.gs.Serve(lis) }()
	return r
}

// Stop closes the listener and ends open calls. Safe to call more than
// once.
func (r *Receiver) Stop() { r.once.Do(r.gs.Stop) }

// Spans returns a copy of the spans received so far, in arrival order.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Wait returns the spans received once done(spans) is true, or an error
// carrying the spans so far when timeout passes first.
func (r *Receiver) Wait(timeout time.Duration, done func([]Span) bool) ([]Span, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		spans, changed := append([]Span(nil), r.spans...), r.changed
		r.mu.Unlock()
		if done(spans) {
			return spans, nil
		}
		select {
		case <-changed:
		case <-deadline.C:
			return spans, fmt.Errorf("otlp: condition not met within %v; %d spans received: %+v", timeout, len(spans), spans)
		}
	}
}

type traceService struct {
	collectortrace.UnimplementedTraceServiceServer
	r *Receiver
}

// Export implements opentelemetry.proto.collector.trace.v1.TraceService.Export.
func (s *traceService) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	var got []Span
	for _, rs := range req.GetResourceSpans() {
		service := attributes(rs.GetResource().GetAttributes())["service.name"]
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				got = append(got, Span{
					TraceID:      hex.EncodeToString(sp.GetTraceId()),
					SpanID:       hex.EncodeToString(sp.GetSpanId()),
					ParentSpanID: hex.EncodeToString(sp.GetParentSpanId()),
					Name:         sp.GetName(),
					Kind:         sp.GetKind().String(),
					Attributes:   attributes(sp.GetAttributes()),
					Service:      service,
				})
			}
		}
	}
	s.r.mu.Lock()
	s.r.spans = append(s.r.spans, got...)
	close(s.r.changed)
	s.r.changed = make(chan struct{})
	s.r.mu.Unlock()
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

func attributes(kvs []*commonv1.KeyValue) map[string]string {
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		out[kv.GetKey()] = valueString(kv.GetValue())
	}
	return out
}

func valueString(v *commonv1.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonv1.AnyValue_StringValue:
		return x.StringValue
	case *commonv1.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonv1.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue)
	case *commonv1.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
	case *commonv1.AnyValue_BytesValue:
		return hex.EncodeToString(x.BytesValue)
	case *commonv1.AnyValue_ArrayValue:
		var parts []string
		for _, e := range x.ArrayValue.GetValues() {
			parts = append(parts, valueString(e))
		}
		return fmt.Sprint(parts)
	case *commonv1.AnyValue_KvlistValue:
		return fmt.Sprint(attributes(x.KvlistValue.GetValues()))
	}
	return ""
}
