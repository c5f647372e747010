package infra

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
	bootstrap "github.com/xds-controller/xds-controller/envoy-bootstrap"
	"github.com/xds-controller/xds-controller/pkg/ir"
)

// TestEffectiveEdge: the Gateway's edge settings win field by field, the
// class's fill the rest, in edge.http2 and edge.overload too.
func TestEffectiveEdge(t *testing.T) {
	class := &v1alpha1.GatewayParametersSpec{Edge: &v1alpha1.EdgeSpec{
		RequestHeadersTimeout: ptr.To[v1alpha1.Duration]("5s"),
		MaxRequestHeadersKB:   ptr.To[int32](32),
		HTTP2:                 &v1alpha1.HTTP2EdgeSpec{MaxConcurrentStreams: ptr.To[int32](50), InitialStreamWindowSize: ptr.To[int32](131072)},
		Overload:              &v1alpha1.OverloadSpec{MaxHeapSize: ptr.To(resource.MustParse("1Gi"))},
	}}
	gw := &v1alpha1.GatewayParametersSpec{Edge: &v1alpha1.EdgeSpec{
		MaxRequestHeadersKB: ptr.To[int32](64),
		HTTP2:               &v1alpha1.HTTP2EdgeSpec{MaxConcurrentStreams: ptr.To[int32](200)},
	}}
	got := Effective(class, gw).Edge
	want := &v1alpha1.EdgeSpec{
		RequestHeadersTimeout: ptr.To[v1alpha1.Duration]("5s"),
		MaxRequestHeadersKB:   ptr.To[int32](64),
		HTTP2:                 &v1alpha1.HTTP2EdgeSpec{MaxConcurrentStreams: ptr.To[int32](200), InitialStreamWindowSize: ptr.To[int32](131072)},
		Overload:              &v1alpha1.OverloadSpec{MaxHeapSize: ptr.To(resource.MustParse("1Gi"))},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("effective edge (-want +got):\n%s", d)
	}
	if e := Effective(nil, nil).Edge; e != nil {
		t.Errorf("edge without any: %+v", e)
	}
	// A Shared fleet's overload comes from the class alone.
	if o := SharedFleetParams(class.DeepCopy()).Edge.Overload; o == nil || o.MaxHeapSize.String() != "1Gi" {
		t.Errorf("shared fleet overload %+v", o)
	}
}

// TestValidateEdge: values the schema would refuse are refused for
// parameters that did not pass it (standalone's file), by name.
func TestValidateEdge(t *testing.T) {
	for _, c := range []struct {
		edge v1alpha1.EdgeSpec
		want string
	}{
		{v1alpha1.EdgeSpec{RequestHeadersTimeout: ptr.To[v1alpha1.Duration]("0s")}, "edge.requestHeadersTimeout"},
		{v1alpha1.EdgeSpec{StreamIdleTimeout: ptr.To[v1alpha1.Duration]("soon")}, "edge.streamIdleTimeout"},
		{v1alpha1.EdgeSpec{HeadersWithUnderscores: ptr.To[v1alpha1.HeadersWithUnderscoresAction]("Maybe")}, "edge.headersWithUnderscores"},
		{v1alpha1.EdgeSpec{MaxRequestHeadersKB: ptr.To[int32](8192)}, "edge.maxRequestHeadersKB"},
		{v1alpha1.EdgeSpec{HTTP2: &v1alpha1.HTTP2EdgeSpec{InitialStreamWindowSize: ptr.To[int32](1024)}}, "edge.http2.initialStreamWindowSize"},
		{v1alpha1.EdgeSpec{Overload: &v1alpha1.OverloadSpec{MaxHeapSize: ptr.To(resource.MustParse("1Ki"))}}, "edge.overload.maxHeapSize"},
		{v1alpha1.EdgeSpec{RequestHeadersTimeout: ptr.To[v1alpha1.Duration]("1h30m"), MaxRequestHeadersKB: ptr.To[int32](96)}, ""},
	} {
		err := Validate(&v1alpha1.GatewayParametersSpec{Edge: &c.edge})
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%+v refused: %v", c.edge, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%+v: error %v, want one naming %s", c.edge, err, c.want)
		}
	}
}

// TestHTTPEdge: spec.edge's listener settings in the IR; none set is nil.
func TestHTTPEdge(t *testing.T) {
	if e := HTTPEdge(&v1alpha1.EdgeSpec{Overload: &v1alpha1.OverloadSpec{MaxDownstreamConnections: ptr.To[int64](10)}}); e != nil {
		t.Errorf("overload only: %+v, want nil", e)
	}
	got := HTTPEdge(&v1alpha1.EdgeSpec{
		StreamIdleTimeout:      ptr.To[v1alpha1.Duration]("1m30s"),
		HeadersWithUnderscores: ptr.To(v1alpha1.HeadersWithUnderscoresDrop),
		MaxRequestHeadersCount: ptr.To[int32](200),
		HTTP2:                  &v1alpha1.HTTP2EdgeSpec{InitialConnectionWindowSize: ptr.To[int32](2097152)},
	})
	want := &ir.HTTPEdge{StreamIdleTimeout: ir.NewDuration(90 * time.Second), HeadersWithUnderscores: ir.UnderscoresDrop,
		MaxRequestHeadersCount: 200, HTTP2InitialConnectionWindowSize: 2097152}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("HTTPEdge (-want +got):\n%s", d)
	}
}

// TestFleetOverloadFollowsMemoryLimit: the bootstrap's heap size is 80%
// of the Envoy container's memory limit, the parameters' maxHeapSize when
// set, the bootstrap's default without either.
func TestFleetOverloadFollowsMemoryLimit(t *testing.T) {
	boot := func(spec *v1alpha1.GatewayParametersSpec) string {
		t.Helper()
		objs, err := testRenderer().SharedFleet(SharedFleetInput{Class: testClass(), Params: SharedFleetParams(spec), TrustBundle: testBundle})
		if err != nil {
			t.Fatal(err)
		}
		find[*appsv1.Deployment](t, objs)
		return find[*corev1.ConfigMap](t, objs)[0].Data["bootstrap.yaml"]
	}
	limited := &v1alpha1.GatewayParametersSpec{Envoy: &v1alpha1.EnvoySpec{Resources: &corev1.ResourceRequirements{
		Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")},
	}}}
	for _, c := range []struct {
		name string
		spec *v1alpha1.GatewayParametersSpec
		want string
	}{
		{"no limit", nil, "max_heap_size_bytes: 2147483648"},
		{"a 512Mi limit", limited, "max_heap_size_bytes: 429496729"},
		{"maxHeapSize", &v1alpha1.GatewayParametersSpec{Envoy: limited.Envoy, Edge: &v1alpha1.EdgeSpec{Overload: &v1alpha1.OverloadSpec{
			MaxHeapSize: ptr.To(resource.MustParse("300Mi")), MaxDownstreamConnections: ptr.To[int64](1000),
		}}}, "max_heap_size_bytes: 314572800"},
	} {
		if b := boot(c.spec); !strings.Contains(b, c.want) {
			t.Errorf("%s: bootstrap lacks %q", c.name, c.want)
		}
	}
	if got := Overload(nil, nil); got != (bootstrap.Overload{}) {
		t.Errorf("Overload without anything = %+v, want the bootstrap's defaults (zero)", got)
	}
}
