package gatewayapi

import (
	"cmp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwapiv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
	gwapixv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

// telemetryPolicyOn is an XTelemetryPolicy "tp" on Gateway web with
// tracing tc.
func telemetryPolicyOn(tc gwapixv1alpha1.TracingConfig) *gwapixv1alpha1.XTelemetryPolicy {
	return &gwapixv1alpha1.XTelemetryPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "tp", Generation: 4},
		Spec: gwapixv1alpha1.TelemetryPolicySpec{
			TargetRefs: []gwapiv1.LocalObjectReference{{Group: gwapiv1.GroupName, Kind: "Gateway", Name: "web"}},
			Tracing:    tc,
		},
	}
}

// enabled is mode Enabled with the collector app:80 (fixture) and what
// edit changes.
func enabled(edit func(*gwapixv1alpha1.TracingConfig)) gwapixv1alpha1.TracingConfig {
	tc := gwapixv1alpha1.TracingConfig{
		Mode:     gwapixv1alpha1.TracingModeEnabled,
		Provider: gwapixv1alpha1.TracingProvider{BackendRef: gwapiv1.BackendObjectReference{Name: "app", Port: ptr(gwapiv1.PortNumber(80))}},
	}
	if edit != nil {
		edit(&tc)
	}
	return tc
}

func fraction(n int32, d ...int32) *gwapiv1.Fraction {
	f := &gwapiv1.Fraction{Numerator: n}
	if len(d) > 0 {
		f.Denominator = &d[0]
	}
	return f
}

// TestTelemetryPolicyValidation is the validation table of
// XTelemetryPolicy: each spec gives the Accepted and ResolvedRefs
// conditions on Gateway web (reason, and a part of the message) and the
// Tracing of its HTTP listener (nil: no tracing). The schema the CRD
// enforces is refused as Invalid (standalone mode has no API server); the
// collector's references as a route's are; what Envoy cannot do is said
// in Accepted=True's message.
func TestTelemetryPolicyValidation(t *testing.T) {
	collector := func(protocol ir.AppProtocol, name string) *ir.Backend {
		return &ir.Backend{Name: name, Protocol: protocol, Endpoints: []ir.Endpoint{{Address: "10.0.0.1", Port: 8080}, {Address: "10.0.0.2", Port: 8080}}}
	}
	h2c := collector(ir.AppProtocolH2C, "service/default/app/80/h2c")
	for _, tc := range []struct {
		name         string
		tracing      gwapixv1alpha1.TracingConfig
		edit         func(*gwapixv1alpha1.XTelemetryPolicy)
		accepted     string // reason; "" for Accepted
		acceptedMsg  string
		refs         string // reason; "" for ResolvedRefs
		want         *ir.Tracing
		wantNoStatus bool
	}{
		{name: "enabled, defaults", tracing: enabled(nil),
			want: &ir.Tracing{Collector: h2c, ServiceName: "default/web", RandomSampling: 100, RootSampling: 100, ParentBased: true}},
		{name: "disabled", tracing: gwapixv1alpha1.TracingConfig{Mode: gwapixv1alpha1.TracingModeDisabled}},
		{name: "implementation default", tracing: gwapixv1alpha1.TracingConfig{}},
		{name: "unknown mode", tracing: gwapixv1alpha1.TracingConfig{Mode: "Sometimes"}, accepted: "Invalid", acceptedMsg: "tracing.mode"},
		{name: "disabled with a provider", tracing: enabled(func(c *gwapixv1alpha1.TracingConfig) { c.Mode = gwapixv1alpha1.TracingModeDisabled }),
			accepted: "Invalid", acceptedMsg: "only be set when mode is Enabled"},
		{name: "enabled without a provider", tracing: gwapixv1alpha1.TracingConfig{Mode: gwapixv1alpha1.TracingModeEnabled},
			accepted: "Invalid", acceptedMsg: "backendRef is required"},
		{name: "sampling rate 1/8", tracing: enabled(func(c *gwapixv1alpha1.TracingConfig) { c.SamplingRate = fraction(1, 8) }),
			want: &ir.Tracing{Collector: h2c, ServiceName: "default/web", RandomSampling: 100, RootSampling: 12.5, ParentBased: true}},
		{name: "sampling rate above 1", tracing: enabled(func(c *gwapixv1alpha1.TracingConfig) { c.SamplingRate = fraction(101) }),
			accepted: "Invalid", acceptedMsg: "101/100"},
		{name: "sampling rate denominator 0", tracing: enabled(func(c *gwapixv1alpha1.TracingConfig) { c.SamplingRate = fraction(0, 0) }),
			accepted: "Invalid", acceptedMsg: "0/0"},
		{name: "parent-based at 50%, roots at 10%", tracing: enabled(func(c *gwapixv1alpha1.TracingConfig) {
			c.SamplingRate = fraction(10)
			c.ParentBasedSampling = gwapixv1alpha1.ParentBasedSampling{Mode: gwapixv1alpha1.ParentBasedSamplingModeEnabled, SamplingRate: fraction(50)}
		}), want: &ir.Tracing{Collector: h2c, ServiceName: "default/web", RandomSampling: 50, RootSampling: 20, ParentBased: true}},
		{name: "parent-based below the root rate", tracing: enabled(func(c *gwapixv1alpha1.TracingConfig) {
			c.SamplingRate = fraction(50)
			c.ParentBasedSampling = gwapixv1alpha1.ParentBasedSampling{Mode: gwapixv1alpha1.ParentBasedSamplingModeEnabled, SamplingRate: fraction(10)}
		}), acceptedMsg: "requests whose parent is sampled are sampled at 50%",
			want: &ir.Tracing{Collector: h2c, ServiceName: "default/web", RandomSampling: 50, RootSampling: 100, ParentBased: true}},
		{name: "parent-based at 0%", tracing: enabled(func(c *gwapixv1alpha1.TracingConfig) {
			c.ParentBasedSampling = gwapixv1alpha1.ParentBasedSampling{Mode: gwapixv1alpha1.ParentBasedSamplingModeEnabled, SamplingRate: fraction(0)}
		}), acceptedMsg: "samplingRate 100% is not honoured",
			want: &ir.Tracing{Collector: h2c, ServiceName: "default/web", RandomSampling: 0, RootSampling: 100, ParentBased: true}},
		{name: "parent-based disabled", tracing: enabled(func(c *gwapixv1alpha1.TracingConfig) {
			c.SamplingRate = fraction(3, 10)
			c.ParentBasedSampling = gwapixv1alpha1.ParentBasedSampling{Mode: gwapixv1alpha1.ParentBasedSamplingModeDisabled}
		}), want: &ir.Tracing{Collector: h2c, ServiceName: "default/web", RandomSampling: 100, RootSampling: 30}},
		{name: "parent-based rate without mode Enabled", tracing: enabled(func(c *gwapixv1alpha1.TracingConfig) {
			c.ParentBasedSampling = gwapixv1alpha1.ParentBasedSampling{SamplingRate: fraction(50)}
		}), accepted: "Invalid", acceptedMsg: "its mode is Enabled"},
		{name: "names and attributes", tracing: enabled(func(c *gwapixv1alpha1.TracingConfig) {
			c.ServiceName, c.SpanName = "shop", "edge request"
			c.Attributes = []gwapixv1alpha1.Attribute{
				{Name: "user", SourceType: gwapixv1alpha1.AttributeSourceHeader, HeaderName: "X-User"},
				{Name: "env", SourceType: gwapixv1alpha1.AttributeSourceLiteral, LiteralValue: "prod"},
				{Name: "m", SourceType: gwapixv1alpha1.AttributeSourceAttribute, AttributeKey: "http.request.method"},
				{Name: "ct", SourceType: gwapixv1alpha1.AttributeSourceAttribute, AttributeKey: "http.response.header.content-type"},
				{Name: "r", SourceType: gwapixv1alpha1.AttributeSourceAttribute, AttributeKey: "http.route"},
			}
			c.Provider.Headers = []gwapiv1.HTTPHeader{{Name: "Authorization", Value: "Bearer x"}}
		}), acceptedMsg: "attribute r: Envoy has no value for attributeKey http.route",
			want: &ir.Tracing{Collector: h2c, ServiceName: "shop", SpanName: "edge request", RandomSampling: 100, RootSampling: 100, ParentBased: true,
				Headers: []ir.Header{{Name: "authorization", Value: "Bearer x"}},
				Attributes: []ir.TracingAttribute{{Name: "user", RequestHeader: "x-user"}, {Name: "env", Literal: "prod"},
					{Name: "m", Format: "%REQ(:METHOD)%"}, {Name: "ct", Format: "%RESP(content-type)%"}}}},
		{name: "span name with a percent", tracing: enabled(func(c *gwapixv1alpha1.TracingConfig) { c.SpanName = "%REQ(:PATH)%" }),
			accepted: "Invalid", acceptedMsg: "tracing.spanName"},
		{name: "attribute without its field", tracing: enabled(func(c *gwapixv1alpha1.TracingConfig) {
			c.Attributes = []gwapixv1alpha1.Attribute{{Name: "x", SourceType: gwapixv1alpha1.AttributeSourceLiteral, HeaderName: "x"}}
		}), accepted: "Invalid", acceptedMsg: "needs its field"},
		{name: "attribute twice", tracing: enabled(func(c *gwapixv1alpha1.TracingConfig) {
			a := gwapixv1alpha1.Attribute{Name: "x", SourceType: gwapixv1alpha1.AttributeSourceLiteral, LiteralValue: "v"}
			c.Attributes = []gwapixv1alpha1.Attribute{a, a}
		}), accepted: "Invalid", acceptedMsg: "listed twice"},
		{name: "literal with a newline", tracing: enabled(func(c *gwapixv1alpha1.TracingConfig) {
			c.Attributes = []gwapixv1alpha1.Attribute{{Name: "x", SourceType: gwapixv1alpha1.AttributeSourceLiteral, LiteralValue: "a\nb"}}
		}), accepted: "Invalid", acceptedMsg: "control character"},
		{name: "export header Envoy sets", tracing: enabled(func(c *gwapixv1alpha1.TracingConfig) {
			c.Provider.Headers = []gwapiv1.HTTPHeader{{Name: "Content-Type", Value: "text/plain"}}
		}), accepted: "Invalid", acceptedMsg: "set by Envoy's gRPC client"},
		{name: "export header twice", tracing: enabled(func(c *gwapixv1alpha1.TracingConfig) {
			c.Provider.Headers = []gwapiv1.HTTPHeader{{Name: "X-A", Value: "1"}, {Name: "x-a", Value: "2"}}
		}), accepted: "Invalid", acceptedMsg: "listed twice"},
		{name: "targetRefs twice", tracing: enabled(nil), edit: func(p *gwapixv1alpha1.XTelemetryPolicy) {
			p.Spec.TargetRefs = append(p.Spec.TargetRefs, p.Spec.TargetRefs[0])
		}, accepted: "Invalid", acceptedMsg: "distinct"},
		{name: "collector of appProtocol grpc", tracing: enabled(nil), edit: func(*gwapixv1alpha1.XTelemetryPolicy) {},
			want: &ir.Tracing{Collector: collector(ir.AppProtocolHTTP2, "service/default/app/80"), ServiceName: "default/web", RandomSampling: 100, RootSampling: 100, ParentBased: true}},
		{name: "collector not found", tracing: enabled(func(c *gwapixv1alpha1.TracingConfig) { c.Provider.BackendRef.Name = "nope" }),
			refs: "BackendNotFound", acceptedMsg: "nothing is traced"},
		{name: "collector of another kind", tracing: enabled(func(c *gwapixv1alpha1.TracingConfig) {
			c.Provider.BackendRef.Kind = ptr(gwapiv1.Kind("Collector"))
			c.Provider.BackendRef.Group = ptr(gwapiv1.Group("example.com"))
		}), refs: "InvalidKind"},
		{name: "collector an XBackend that does not exist", tracing: enabled(func(c *gwapixv1alpha1.TracingConfig) {
			c.Provider.BackendRef.Kind = ptr(gwapiv1.Kind("XBackend"))
			c.Provider.BackendRef.Group = ptr(gwapiv1.Group("gateway.networking.x-k8s.io"))
		}), refs: "BackendNotFound", acceptedMsg: "nothing is traced"},
		{name: "collector in another namespace, no grant", tracing: enabled(func(c *gwapixv1alpha1.TracingConfig) {
			c.Provider.BackendRef.Namespace = ptr(gwapiv1.Namespace("obs"))
		}), refs: "RefNotPermitted"},
		{name: "collector in another namespace, a grant for routes", tracing: enabled(func(c *gwapixv1alpha1.TracingConfig) {
			c.Provider.BackendRef.Namespace = ptr(gwapiv1.Namespace("obs"))
		}), edit: func(*gwapixv1alpha1.XTelemetryPolicy) {}, refs: "RefNotPermitted"},
		{name: "collector in another namespace, granted", tracing: enabled(func(c *gwapixv1alpha1.TracingConfig) {
			c.Provider.BackendRef.Namespace = ptr(gwapiv1.Namespace("obs"))
		}), edit: func(*gwapixv1alpha1.XTelemetryPolicy) {},
			want: &ir.Tracing{Collector: &ir.Backend{Name: "service/obs/app/80/h2c", Protocol: ir.AppProtocolH2C, Endpoints: []ir.Endpoint{{Address: "10.96.0.9", Port: 80}}},
				ServiceName: "default/web", RandomSampling: 100, RootSampling: 100, ParentBased: true}},
		{name: "collector behind a BackendTLSPolicy", tracing: enabled(nil), edit: func(*gwapixv1alpha1.XTelemetryPolicy) {},
			want: &ir.Tracing{Collector: &ir.Backend{Name: "service/default/app/80/h2c", Protocol: ir.AppProtocolH2C,
				Endpoints: []ir.Endpoint{{Address: "10.0.0.1", Port: 8080}, {Address: "10.0.0.2", Port: 8080}},
				TLS:       &ir.BackendTLS{SNI: "collector.example.com", WellKnownCACertificates: true}},
				ServiceName: "default/web", RandomSampling: 100, RootSampling: 100, ParentBased: true}},
		{name: "target of another kind", tracing: enabled(nil), edit: func(p *gwapixv1alpha1.XTelemetryPolicy) {
			p.Spec.TargetRefs[0].Kind = "HTTPRoute"
		}, wantNoStatus: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := fixture()
			p := telemetryPolicyOn(tc.tracing)
			if tc.edit != nil {
				tc.edit(p)
			}
			switch tc.name {
			case "collector behind a BackendTLSPolicy":
				res.BackendTLSPolicies = []*gwapiv1.BackendTLSPolicy{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "tls"},
					Spec: gwapiv1.BackendTLSPolicySpec{
						TargetRefs: []gwapiv1.LocalPolicyTargetReferenceWithSectionName{{LocalPolicyTargetReference: gwapiv1.LocalPolicyTargetReference{Kind: "Service", Name: "app"}}},
						Validation: gwapiv1.BackendTLSPolicyValidation{Hostname: "collector.example.com", WellKnownCACertificates: ptr(gwapiv1.WellKnownCACertificatesSystem)},
					}}}
			case "collector of appProtocol grpc":
				res.Services[0].Spec.Ports[0].AppProtocol = ptr("grpc")
			case "collector in another namespace, no grant", "collector in another namespace, a grant for routes", "collector in another namespace, granted":
				kind := gwapiv1.Kind("XTelemetryPolicy")
				group := gwapiv1.Group("gateway.networking.x-k8s.io")
				if tc.name == "collector in another namespace, a grant for routes" {
					kind, group = "HTTPRoute", gwapiv1.GroupName
				}
				res.Services = append(res.Services, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "obs", Name: "app"},
					Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.9", Ports: []corev1.ServicePort{{Port: 80}}}})
				if tc.name == "collector in another namespace, no grant" {
					break
				}
				res.ReferenceGrants = []*gwapiv1.ReferenceGrant{{ObjectMeta: metav1.ObjectMeta{Namespace: "obs", Name: "g"},
					Spec: gwapiv1beta1.ReferenceGrantSpec{From: []gwapiv1.ReferenceGrantFrom{{Group: group, Kind: kind, Namespace: "default"}},
						To: []gwapiv1.ReferenceGrantTo{{Kind: "Service"}}}}}
			}
			res.XTelemetryPolicies = []*gwapixv1alpha1.XTelemetryPolicy{p}
			res.Sort()
			r := Translate(res, Options{})
			mustValid(t, r)
			st := r.Status.Policies[PolicyKey{Kind: KindXTelemetryPolicy, Namespace: "default", Name: "tp"}]
			if tc.wantNoStatus {
				if st != nil {
					t.Fatalf("status %+v, want none (no ancestor)", st)
				}
			} else {
				if st == nil || len(st.Ancestors) != 1 || st.Ancestors[0].AncestorRef.Name != "web" {
					t.Fatalf("status %+v, want one ancestor, Gateway web", st)
				}
				cs := st.Ancestors[0].Conditions
				acc := cond(t, cs, string(gwapiv1.PolicyConditionAccepted))
				if want := cmp.Or(tc.accepted, "Accepted"); acc.Reason != want || !strings.Contains(acc.Message, tc.acceptedMsg) || acc.ObservedGeneration != 4 {
					t.Errorf("Accepted: %s %q (generation %d), want reason %s with %q", acc.Reason, acc.Message, acc.ObservedGeneration, want, tc.acceptedMsg)
				}
				if tc.accepted == "" {
					wantCond(t, cs, "ResolvedRefs", map[bool]metav1.ConditionStatus{true: "True", false: "False"}[tc.refs == ""], cmp.Or(tc.refs, "ResolvedRefs"))
				}
			}
			got := r.IR.Gateways[0].Listeners[0].Tracing
			if tc.want == nil {
				if got != nil {
					t.Fatalf("tracing %+v, want none", got)
				}
				return
			}
			if got == nil || got.Collector == nil {
				t.Fatalf("tracing %+v, want %+v", got, tc.want)
			}
			got.Collector.Weight = 0
			if gy, wy := yamlOf(t, got), yamlOf(t, tc.want); gy != wy {
				t.Errorf("tracing:\n%s\nwant:\n%s", gy, wy)
			}
		})
	}
}

func yamlOf(t *testing.T, v any) string {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
