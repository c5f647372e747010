package xdstranslator

// Tracing of an HTTP connection manager (ir.Tracing, XTelemetryPolicy):
// Envoy's OpenTelemetry tracer exporting OTLP over gRPC to the
// collector's cluster.
//
// How Envoy 1.40 samples (measured: 200 requests per case, see
// docs/tracing.md): a request span is exported when the HTTP connection
// manager's local decision (random_sampling, then overall_sampling, drawn
// per request) traces the request AND the tracer samples the span. The
// tracer without a sampler follows the traceparent's sampled flag (so a
// local rate below 100% also thins requests whose parent is sampled); with
// a sampler, the sampler alone decides (trace_id_ratio_based ignores the
// traceparent's flag; parent_based follows it when there is a parent and
// asks its wrapped sampler otherwise). So a policy renders both: the local
// rate and a sampler, always.

import (
	"math"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tracev3 "github.com/envoyproxy/go-control-plane/envoy/config/trace/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	samplersv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/tracers/opentelemetry/samplers/v3"
	tracingv3 "github.com/envoyproxy/go-control-plane/envoy/type/tracing/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

// Tracer and sampler extension names (labels; the typed config's type
// URL selects the extension).
const (
	tracerOpenTelemetry  = "envoy.tracers.opentelemetry"
	samplerParentBased   = "envoy.tracers.opentelemetry.samplers.parent_based"
	samplerTraceIDRatio  = "envoy.tracers.opentelemetry.samplers.trace_id_ratio_based"
	tracingExportTimeout = 5 * time.Second
)

// tracingOf is the Tracing of the listeners ls that one HTTP connection
// manager serves: the first one's that has one (they are one Gateway's,
// ir.Listener Tracing), or nil.
func tracingOf(ls ...*ir.Listener) *ir.Tracing {
	for _, l := range ls {
		if l.Tracing != nil {
			return l.Tracing
		}
	}
	return nil
}

// tracing renders t as an HTTP connection manager's tracing, and records
// the use of its collector's cluster; nil for nil.
func (s *scopeBuilder) tracing(t *ir.Tracing) *hcmv3.HttpConnectionManager_Tracing {
	if t == nil || t.Collector == nil || t.Collector.Invalid {
		return nil
	}
	s.useBackend(t.Collector)
	grpc := &corev3.GrpcService{
		TargetSpecifier: &corev3.GrpcService_EnvoyGrpc_{EnvoyGrpc: &corev3.GrpcService_EnvoyGrpc{ClusterName: t.Collector.Name}},
		Timeout:         durationpb.New(tracingExportTimeout),
	}
	for _, h := range t.Headers {
		grpc.InitialMetadata = append(grpc.InitialMetadata, &corev3.HeaderValue{Key: h.Name, Value: h.Value})
	}
	var sampler *corev3.TypedExtensionConfig
	ratio := &corev3.TypedExtensionConfig{Name: samplerTraceIDRatio, TypedConfig: toAny(&samplersv3.TraceIdRatioBasedSamplerConfig{
		SamplingPercentage: fractionalPercent(t.RootSampling),
	})}
	if t.ParentBased {
		sampler = &corev3.TypedExtensionConfig{Name: samplerParentBased, TypedConfig: toAny(&samplersv3.ParentBasedSamplerConfig{WrappedSampler: ratio})}
	} else {
		sampler = ratio
	}
	otel := &tracev3.OpenTelemetryConfig{
		GrpcService: grpc,
		ServiceName: t.ServiceName,
		Sampler:     sampler,
	}
	out := &hcmv3.HttpConnectionManager_Tracing{
		RandomSampling: &typev3.Percent{Value: t.RandomSampling},
		Operation:      t.SpanName,
		Provider: &tracev3.Tracing_Http{
			Name:       tracerOpenTelemetry,
			ConfigType: &tracev3.Tracing_Http_TypedConfig{TypedConfig: toAny(otel)},
		},
	}
	for _, a := range t.Attributes {
		tag := &tracingv3.CustomTag{Tag: a.Name}
		switch {
		case a.RequestHeader != "":
			tag.Type = &tracingv3.CustomTag_RequestHeader{RequestHeader: &tracingv3.CustomTag_Header{Name: a.RequestHeader}}
		case a.Format != "":
			tag.Type = &tracingv3.CustomTag_Value{Value: a.Format}
		default:
			tag.Type = &tracingv3.CustomTag_Literal_{Literal: &tracingv3.CustomTag_Literal{Value: a.Literal}}
		}
		out.CustomTags = append(out.CustomTags, tag)
	}
	return out
}

// fractionalPercent is pc percent (0-100) in millionths, Envoy's finest
// FractionalPercent.
func fractionalPercent(pc float64) *typev3.FractionalPercent {
	return &typev3.FractionalPercent{
		Numerator:   uint32(math.Round(min(max(pc, 0), 100) * 10000)),
		Denominator: typev3.FractionalPercent_MILLION,
	}
}
