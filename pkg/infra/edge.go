package infra

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
	bootstrap "github.com/xds-controller/xds-controller/envoy-bootstrap"
	"github.com/xds-controller/xds-controller/pkg/ir"
)

// HeapShareOfMemoryLimit is the share of the Envoy container's memory
// limit that becomes the overload manager's heap size when the parameters
// set none (spec.edge.overload.maxHeapSize): the rest is memory the heap
// statistic does not count (code, thread stacks, the allocator's own use),
// so that Envoy sheds load before the kernel kills it.
const HeapShareOfMemoryLimit = 0.8

// mergeEdge is the Gateway's edge settings over the class's, field by
// field (Effective); nil when neither sets any.
func mergeEdge(c, g *v1alpha1.EdgeSpec) *v1alpha1.EdgeSpec {
	if c == nil && g == nil {
		return nil
	}
	if c == nil {
		c = &v1alpha1.EdgeSpec{}
	}
	if g == nil {
		g = &v1alpha1.EdgeSpec{}
	}
	out := &v1alpha1.EdgeSpec{
		RequestHeadersTimeout:  firstSet(g.RequestHeadersTimeout, c.RequestHeadersTimeout),
		StreamIdleTimeout:      firstSet(g.StreamIdleTimeout, c.StreamIdleTimeout),
		ConnectionIdleTimeout:  firstSet(g.ConnectionIdleTimeout, c.ConnectionIdleTimeout),
		HeadersWithUnderscores: firstSet(g.HeadersWithUnderscores, c.HeadersWithUnderscores),
		MaxRequestHeadersKB:    firstSet(g.MaxRequestHeadersKB, c.MaxRequestHeadersKB),
		MaxRequestHeadersCount: firstSet(g.MaxRequestHeadersCount, c.MaxRequestHeadersCount),
	}
	if g.HTTP2 != nil || c.HTTP2 != nil {
		gh, ch := zeroIfNil(g.HTTP2), zeroIfNil(c.HTTP2)
		out.HTTP2 = &v1alpha1.HTTP2EdgeSpec{
			MaxConcurrentStreams:        firstSet(gh.MaxConcurrentStreams, ch.MaxConcurrentStreams),
			InitialStreamWindowSize:     firstSet(gh.InitialStreamWindowSize, ch.InitialStreamWindowSize),
			InitialConnectionWindowSize: firstSet(gh.InitialConnectionWindowSize, ch.InitialConnectionWindowSize),
		}
	}
	if g.Overload != nil || c.Overload != nil {
		gv, cv := zeroIfNil(g.Overload), zeroIfNil(c.Overload)
		out.Overload = &v1alpha1.OverloadSpec{
			MaxHeapSize:              firstSet(gv.MaxHeapSize, cv.MaxHeapSize),
			MaxDownstreamConnections: firstSet(gv.MaxDownstreamConnections, cv.MaxDownstreamConnections),
		}
	}
	return out.DeepCopy()
}

func zeroIfNil[T any](v *T) *T {
	if v == nil {
		return new(T)
	}
	return v
}

// validateEdge checks what the CRD's schema checks too, for parameters that
// did not pass through the API server (standalone mode's file): durations
// that Go parses and that are above zero (Envoy reads 0 as "no timeout"),
// and the schema's bounds.
func validateEdge(e *v1alpha1.EdgeSpec) error {
	if e == nil {
		return nil
	}
	for name, d := range map[string]*v1alpha1.Duration{
		"requestHeadersTimeout": e.RequestHeadersTimeout, "streamIdleTimeout": e.StreamIdleTimeout,
		"connectionIdleTimeout": e.ConnectionIdleTimeout,
	} {
		if d == nil {
			continue
		}
		if v, err := time.ParseDuration(string(*d)); err != nil || v <= 0 {
			return fmt.Errorf("edge.%s: %q is not a duration above zero", name, *d)
		}
	}
	if a := e.HeadersWithUnderscores; a != nil && *a != v1alpha1.HeadersWithUnderscoresReject &&
		*a != v1alpha1.HeadersWithUnderscoresDrop && *a != v1alpha1.HeadersWithUnderscoresAllow {
		return fmt.Errorf("edge.headersWithUnderscores: %q is none of RejectRequest, DropHeader, Allow", *a)
	}
	inRange := func(name string, v *int32, lo, hi int32) error {
		if v != nil && (*v < lo || *v > hi) {
			return fmt.Errorf("edge.%s: %d is outside %d-%d", name, *v, lo, hi)
		}
		return nil
	}
	h := zeroIfNil(e.HTTP2)
	o := zeroIfNil(e.Overload)
	for _, err := range []error{
		inRange("maxRequestHeadersKB", e.MaxRequestHeadersKB, 1, 96),
		inRange("maxRequestHeadersCount", e.MaxRequestHeadersCount, 1, 1000),
		inRange("http2.maxConcurrentStreams", h.MaxConcurrentStreams, 1, 1000),
		inRange("http2.initialStreamWindowSize", h.InitialStreamWindowSize, 65535, 16777216),
		inRange("http2.initialConnectionWindowSize", h.InitialConnectionWindowSize, 65535, 16777216),
	} {
		if err != nil {
			return err
		}
	}
	if o.MaxHeapSize != nil && o.MaxHeapSize.Value() < 1<<20 {
		return fmt.Errorf("edge.overload.maxHeapSize: %s is below 1Mi", o.MaxHeapSize)
	}
	if n := o.MaxDownstreamConnections; n != nil && (*n < 1 || *n > 1000000) {
		return fmt.Errorf("edge.overload.maxDownstreamConnections: %d is outside 1-1000000", *n)
	}
	return nil
}

// HTTPEdge is the IR form of spec.edge's listener settings (nil when none
// is set): what reaches every HTTP and HTTPS listener of the Gateway
// (gatewayapi.Options.Edge). Settings that fail validateEdge are left
// unset (the translator's default): Validate refuses such parameters
// before they get here.
func HTTPEdge(e *v1alpha1.EdgeSpec) *ir.HTTPEdge {
	if e == nil {
		return nil
	}
	dur := func(d *v1alpha1.Duration) *ir.Duration {
		if d == nil {
			return nil
		}
		v, err := time.ParseDuration(string(*d))
		if err != nil || v <= 0 {
			return nil
		}
		return ir.NewDuration(v)
	}
	u := func(v *int32) uint32 {
		if v == nil || *v < 0 {
			return 0
		}
		return uint32(*v)
	}
	h := zeroIfNil(e.HTTP2)
	out := ir.HTTPEdge{
		RequestHeadersTimeout:            dur(e.RequestHeadersTimeout),
		StreamIdleTimeout:                dur(e.StreamIdleTimeout),
		ConnectionIdleTimeout:            dur(e.ConnectionIdleTimeout),
		MaxRequestHeadersKB:              u(e.MaxRequestHeadersKB),
		MaxRequestHeadersCount:           u(e.MaxRequestHeadersCount),
		HTTP2MaxConcurrentStreams:        u(h.MaxConcurrentStreams),
		HTTP2InitialStreamWindowSize:     u(h.InitialStreamWindowSize),
		HTTP2InitialConnectionWindowSize: u(h.InitialConnectionWindowSize),
	}
	if a := e.HeadersWithUnderscores; a != nil {
		out.HeadersWithUnderscores = map[v1alpha1.HeadersWithUnderscoresAction]ir.HeadersWithUnderscores{
			v1alpha1.HeadersWithUnderscoresReject: ir.UnderscoresReject,
			v1alpha1.HeadersWithUnderscoresDrop:   ir.UnderscoresDrop,
			v1alpha1.HeadersWithUnderscoresAllow:  ir.UnderscoresAllow,
		}[*a]
	}
	if out == (ir.HTTPEdge{}) {
		return nil
	}
	return &out
}

// Overload is the overload manager of a fleet's bootstrap from its
// parameters' spec.edge.overload and the Envoy container it runs in: the
// heap size the parameters set, else HeapShareOfMemoryLimit of the
// container's memory limit, else (no limit) the bootstrap's default; the
// connection limit the parameters set, else the bootstrap's default.
func Overload(e *v1alpha1.EdgeSpec, envoy *corev1.Container) bootstrap.Overload {
	var out bootstrap.Overload
	o := zeroIfNil(zeroIfNil(e).Overload)
	switch {
	case o.MaxHeapSize != nil && o.MaxHeapSize.Value() > 0:
		out.MaxHeapSizeBytes = uint64(o.MaxHeapSize.Value())
	case envoy != nil && envoy.Resources.Limits.Memory() != nil && envoy.Resources.Limits.Memory().Value() > 0:
		out.MaxHeapSizeBytes = uint64(float64(envoy.Resources.Limits.Memory().Value()) * HeapShareOfMemoryLimit)
	}
	if n := o.MaxDownstreamConnections; n != nil && *n > 0 {
		out.MaxDownstreamConnections = uint64(*n)
	}
	return out
}
