package gatewayapi

// XTelemetryPolicy (gateway.networking.x-k8s.io/v1alpha1, experimental
// channel): tracing of a Gateway's HTTP and HTTPS listeners to an OTLP
// collector. Its attachment (spec.targetRefs: Gateways), conflicts (the
// older policy on a Gateway wins, the younger is Conflicted) and
// status.ancestors (the Gateways it targets) are every policy kind's
// (policy.go); here are its validation, what it renders (ir.Listener
// Tracing) and its registration. docs/tracing.md is the user's view.

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwapixv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

// KindXTelemetryPolicy is the registry name of XTelemetryPolicy.
var KindXTelemetryPolicy = resources.XTelemetryPolicyKind.Name()

// telemetryPolicyKind registers XTelemetryPolicy (policy.go): it targets
// Gateways and renders the tracing of their HTTP and HTTPS listeners; the
// effect of a policy is the *ir.Tracing of mode Enabled (the service name
// left to each Gateway when unset), nil for Disabled and
// ImplementationDefault (no tracing: the implementation's default).
var telemetryPolicyKind = registerPolicyKind(resources.XTelemetryPolicyKind, policyKindSpec[*gwapixv1alpha1.XTelemetryPolicy]{
	targets:    []targetKind{targetGateway},
	targetRefs: telemetryTargetRefs,
	// TelemetryPolicyStatus is a PolicyStatus field for field.
	status: func(p *gwapixv1alpha1.XTelemetryPolicy) *gwapiv1.PolicyStatus {
		return (*gwapiv1.PolicyStatus)(&p.Status)
	},
	validate:     (*translator).telemetryPolicy,
	resolvedRefs: true,
	listener:     telemetryListener,
})

// telemetryListener renders the effective policy of a Gateway on l, one
// of its HTTP or HTTPS listeners: its Tracing, named after the Gateway
// ("<namespace>/<name>") unless the policy names the service.
func telemetryListener(st *policyState, ls *listenerState, l *ir.Listener) {
	tr, _ := st.effect.(*ir.Tracing)
	if tr == nil || l.Protocol != ir.ProtocolHTTP && l.Protocol != ir.ProtocolHTTPS {
		return
	}
	l.Tracing = tr.DeepCopy()
	if l.Tracing.ServiceName == "" {
		l.Tracing.ServiceName = ls.gw.nn.Namespace + "/" + ls.gw.nn.Name
	}
}

// The schema of TracingConfig's strings (XTelemetryPolicy CRD patterns).
var (
	telemetryNameRE     = regexp.MustCompile(`^[a-zA-Z0-9_.:/-]+$`)
	telemetrySpanNameRE = regexp.MustCompile(`^[a-zA-Z0-9_.:/-]+( [a-zA-Z0-9_.:/-]+)*$`)
	attributeKeyRE      = regexp.MustCompile(`^[a-z0-9_.-]+$`)
)

// semconvFormats maps the OpenTelemetry semantic convention attributes
// (attribute sourceType Attribute, attributeKey) that Envoy can fill to
// the Envoy substitution format that fills them when the span ends.
// http.request.header.<name> and http.response.header.<name> are read
// from the header (attributeFormat).
var semconvFormats = map[string]string{
	"http.request.method":       "%REQ(:METHOD)%",
	"http.response.status_code": "%RESPONSE_CODE%",
	"http.request.body.size":    "%BYTES_RECEIVED%",
	"http.response.body.size":   "%BYTES_SENT%",
	"url.scheme":                "%REQ(:SCHEME)%",
	"url.path":                  "%PATH(WQ:ORIG)%",
	"user_agent.original":       "%REQ(USER-AGENT)%",
	"client.address":            "%DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT%",
	"client.port":               "%DOWNSTREAM_REMOTE_PORT%",
	"network.peer.address":      "%DOWNSTREAM_DIRECT_REMOTE_ADDRESS_WITHOUT_PORT%",
	"network.peer.port":         "%DOWNSTREAM_DIRECT_REMOTE_PORT%",
	"server.port":               "%DOWNSTREAM_LOCAL_PORT%",
}

// attributeFormat is the Envoy format of a semantic convention attribute,
// or "" when Envoy has none.
func attributeFormat(key string) string {
	if f, ok := semconvFormats[key]; ok {
		return f
	}
	for prefix, op := range map[string]string{"http.request.header.": "REQ", "http.response.header.": "RESP"} {
		if h, ok := strings.CutPrefix(key, prefix); ok && checkHeaderName(h) == "" {
			return "%" + op + "(" + h + ")%"
		}
	}
	return ""
}

// reservedExportHeaders are the headers Envoy's gRPC client sets on an
// export call itself, which provider.headers may not name.
var reservedExportHeaders = []string{"host", "content-type", "te", "user-agent"}

// telemetryTargetRefs are an XTelemetryPolicy's targetRefs (Gateways: no
// sectionName) in the shape every policy kind's are read in.
func telemetryTargetRefs(p *gwapixv1alpha1.XTelemetryPolicy) []gwapiv1.LocalPolicyTargetReferenceWithSectionName {
	out := make([]gwapiv1.LocalPolicyTargetReferenceWithSectionName, 0, len(p.Spec.TargetRefs))
	for _, r := range p.Spec.TargetRefs {
		out = append(out, gwapiv1.LocalPolicyTargetReferenceWithSectionName{LocalPolicyTargetReference: gwapiv1.LocalPolicyTargetReference{
			Group: r.Group, Kind: r.Kind, Name: r.Name,
		}})
	}
	return out
}

// telemetryPolicy validates one policy (TelemetryPolicySpec, with the
// CRD's schema and CEL rules, which standalone mode has no API server to
// apply): a schema violation is Accepted=False reason Invalid; the
// collector (provider.backendRef) is resolved like a route's backendRef
// (resolveBackend: a core Service port, a ReferenceGrant for another
// namespace, a BackendTLSPolicy on the port applied), its problems
// ResolvedRefs=False with reason BackendNotFound, InvalidKind or
// RefNotPermitted, and then the policy renders nothing. What Envoy cannot
// do as written is left out and said in Accepted's message (notes).
func (t *translator) telemetryPolicy(p *gwapixv1alpha1.XTelemetryPolicy, st *policyState) {
	invalid := func(format string, a ...any) {
		st.notAccepted = &problem{string(gwapiv1.PolicyReasonInvalid), fmt.Sprintf(format, a...)}
	}
	spec := p.Spec
	if msg := checkTargetRefs(telemetryTargetRefs(p)); msg != "" {
		invalid("%s", msg)
		return
	}
	tc := spec.Tracing
	mode := tc.Mode
	if mode == "" {
		mode = gwapixv1alpha1.TracingModeImplementationDefault
	}
	switch mode {
	case gwapixv1alpha1.TracingModeEnabled:
	case gwapixv1alpha1.TracingModeDisabled, gwapixv1alpha1.TracingModeImplementationDefault:
		// The CRD's rules: nothing else may be set then.
		if tc.Provider.BackendRef.Name != "" || tc.SamplingRate != nil || tc.ParentBasedSampling != (gwapixv1alpha1.ParentBasedSampling{}) ||
			tc.ServiceName != "" || tc.SpanName != "" || len(tc.Attributes) > 0 || len(tc.Provider.Headers) > 0 {
			invalid("tracing: provider, samplingRate, parentBasedSampling, serviceName, spanName and attributes can only be set when mode is Enabled")
		}
		return // no tracing: ImplementationDefault is ours, which traces nothing
	default:
		invalid("tracing.mode %s is not Enabled, Disabled or ImplementationDefault", q(string(tc.Mode)))
		return
	}
	if tc.Provider.BackendRef.Name == "" {
		invalid("tracing.provider.backendRef is required when mode is Enabled")
		return
	}
	out := &ir.Tracing{ServiceName: tc.ServiceName, SpanName: tc.SpanName}
	var notes []string
	if out.ServiceName != "" && (len(out.ServiceName) > 253 || !telemetryNameRE.MatchString(out.ServiceName)) {
		invalid("tracing.serviceName %s is not 1-253 characters of [a-zA-Z0-9_.:/-]", q(out.ServiceName))
		return
	}
	if out.SpanName != "" && (len(out.SpanName) > 256 || !telemetrySpanNameRE.MatchString(out.SpanName)) {
		invalid("tracing.spanName %s is not 1-256 characters of [a-zA-Z0-9_.:/-] in words separated by single spaces", q(out.SpanName))
		return
	}

	// Sampling (docs/tracing.md, xdstranslator tracing.go): Envoy's local
	// decision (RandomSampling) gates every request; the sampler then
	// decides by the parent's flag or by trace id (RootSampling).
	rate, msg := fractionPercent(tc.SamplingRate, 100)
	if msg != "" {
		invalid("tracing.samplingRate %s", msg)
		return
	}
	pb := tc.ParentBasedSampling
	switch pb.Mode {
	case "", gwapixv1alpha1.ParentBasedSamplingModeImplementationDefault, gwapixv1alpha1.ParentBasedSamplingModeEnabled, gwapixv1alpha1.ParentBasedSamplingModeDisabled:
	default:
		invalid("tracing.parentBasedSampling.mode %s is not Enabled, Disabled or ImplementationDefault", q(string(pb.Mode)))
		return
	}
	if pb.SamplingRate != nil && pb.Mode != gwapixv1alpha1.ParentBasedSamplingModeEnabled {
		invalid("tracing.parentBasedSampling.samplingRate can only be set when its mode is Enabled")
		return
	}
	parentRate, msg := fractionPercent(pb.SamplingRate, 100)
	if msg != "" {
		invalid("tracing.parentBasedSampling.samplingRate %s", msg)
		return
	}
	if pb.Mode == gwapixv1alpha1.ParentBasedSamplingModeDisabled {
		// Every request by trace id, whatever its traceparent says.
		out.RandomSampling, out.RootSampling = 100, rate
	} else {
		// ImplementationDefault is Enabled: OpenTelemetry's default
		// sampler is parent-based too.
		out.ParentBased = true
		switch {
		case parentRate == 0:
			out.RandomSampling, out.RootSampling = 0, 100
			if rate > 0 {
				notes = append(notes, fmt.Sprintf("parentBasedSampling.samplingRate is 0%%: Envoy draws one local rate for every request, so requests without a parent are not sampled either (samplingRate %s%% is not honoured)", percent(rate)))
			}
		case rate <= parentRate:
			out.RandomSampling, out.RootSampling = parentRate, 100*rate/parentRate
		default:
			out.RandomSampling, out.RootSampling = rate, 100
			notes = append(notes, fmt.Sprintf("parentBasedSampling.samplingRate %s%% is below samplingRate %s%%: Envoy draws one local rate for every request, so requests whose parent is sampled are sampled at %s%%",
				percent(parentRate), percent(rate), percent(rate)))
		}
	}

	names := map[string]bool{}
	for i, a := range tc.Attributes {
		where := fmt.Sprintf("tracing.attributes[%d]", i)
		name := string(a.Name)
		if len(name) > 256 || !telemetryNameRE.MatchString(name) {
			invalid("%s: name %s is not 1-256 characters of [a-zA-Z0-9_.:/-]", where, q(name))
			return
		}
		if names[name] {
			invalid("%s: name %s is listed twice", where, q(name))
			return
		}
		names[name] = true
		set := map[gwapixv1alpha1.AttributeSourceType]bool{
			gwapixv1alpha1.AttributeSourceHeader:    a.HeaderName != "",
			gwapixv1alpha1.AttributeSourceLiteral:   a.LiteralValue != "",
			gwapixv1alpha1.AttributeSourceAttribute: a.AttributeKey != "",
		}
		if _, ok := set[a.SourceType]; !ok {
			invalid("%s: sourceType %s is not Header, Literal or Attribute", where, q(string(a.SourceType)))
			return
		}
		for typ, has := range set {
			if has != (typ == a.SourceType) {
				invalid("%s: sourceType %s needs its field (headerName, literalValue or attributeKey), and only it", where, a.SourceType)
				return
			}
		}
		attr := ir.TracingAttribute{Name: name}
		switch a.SourceType {
		case gwapixv1alpha1.AttributeSourceHeader:
			if m := checkHeaderName(string(a.HeaderName)); m != "" {
				invalid("%s: headerName %s %s", where, q(string(a.HeaderName)), m)
				return
			}
			attr.RequestHeader = strings.ToLower(string(a.HeaderName))
		case gwapixv1alpha1.AttributeSourceLiteral:
			if m := checkFieldValue(a.LiteralValue, 1024); m != "" {
				invalid("%s: literalValue %s", where, m)
				return
			}
			attr.Literal = a.LiteralValue
		default:
			if len(a.AttributeKey) > 256 || !attributeKeyRE.MatchString(a.AttributeKey) {
				invalid("%s: attributeKey %s is not 1-256 characters of [a-z0-9_.-]", where, q(a.AttributeKey))
				return
			}
			if attr.Format = attributeFormat(a.AttributeKey); attr.Format == "" {
				notes = append(notes, fmt.Sprintf("attribute %s: Envoy has no value for attributeKey %s, so spans do not carry it", name, a.AttributeKey))
				continue
			}
		}
		out.Attributes = append(out.Attributes, attr)
	}

	prov := tc.Provider
	if len(prov.Headers) > maxItems16 {
		invalid("tracing.provider.headers: %d entries; at most %d are allowed", len(prov.Headers), maxItems16)
		return
	}
	for i, h := range prov.Headers {
		where := fmt.Sprintf("tracing.provider.headers[%d]", i)
		name := strings.ToLower(string(h.Name))
		switch {
		case checkHeaderName(string(h.Name)) != "":
			invalid("%s: name %s %s", where, q(string(h.Name)), checkHeaderName(string(h.Name)))
			return
		case slices.Contains(reservedExportHeaders, name) || strings.HasPrefix(name, "grpc-"):
			invalid("%s: %s is set by Envoy's gRPC client on every export call (host, content-type, te, user-agent, grpc-*)", where, q(name))
			return
		case slices.ContainsFunc(out.Headers, func(o ir.Header) bool { return o.Name == name }):
			invalid("%s: %s is listed twice (names are case-insensitive)", where, q(name))
			return
		case checkFieldValue(h.Value, maxHeaderValueLen) != "":
			invalid("%s: value %s", where, checkFieldValue(h.Value, maxHeaderValueLen))
			return
		}
		out.Headers = append(out.Headers, ir.Header{Name: name, Value: h.Value})
	}

	// The collector: resolved as a route's backendRef is, by the policy
	// (its kind and namespace for ReferenceGrants); OTLP/gRPC is HTTP/2.
	ref := prov.BackendRef
	if ref.Port != nil && (*ref.Port < 1 || *ref.Port > 65535) {
		invalid("tracing.provider.backendRef: port %d is outside 1-65535", *ref.Port)
		return
	}
	if ref.Namespace != nil {
		if m := checkNamespace(string(*ref.Namespace)); m != "" {
			invalid("tracing.provider.backendRef: namespace %s %s", q(string(*ref.Namespace)), m)
			return
		}
	}
	referrer := &routeState{key: RouteKey{Kind: KindXTelemetryPolicy, Namespace: p.Namespace, Name: p.Name}}
	b, prob := t.resolveBackend(referrer, ref, corev1.ProtocolTCP)
	switch {
	case prob != nil:
		st.refs = &problem{prob.reason, "tracing.provider.backendRef: " + prob.msg}
	case b.Invalid:
		// A BackendTLSPolicy on the port that cannot be honoured: never
		// export in plaintext. Its own status says why.
		st.refs = &problem{string(gwapiv1.RouteReasonBackendNotFound), "tracing.provider.backendRef: the collector's BackendTLSPolicy cannot be honoured"}
	}
	if st.refs != nil {
		st.acceptedMsg = "policy is accepted; its collector does not resolve (ResolvedRefs), so nothing is traced"
		return
	}
	asHTTP2(b)
	out.Collector = b
	st.effect = out
	if len(notes) > 0 {
		st.acceptedMsg = "policy is accepted; not as written: " + strings.Join(notes, "; ")
	}
}

// fractionPercent is f (a Gateway API Fraction: numerator 0 or more,
// denominator 1 or more, 100 when unset, numerator at most denominator)
// as a percentage, def when f is nil, or why f is not valid.
func fractionPercent(f *gwapiv1.Fraction, def float64) (float64, string) {
	if f == nil {
		return def, ""
	}
	d := deref(f.Denominator, 100)
	if f.Numerator < 0 || d < 1 || f.Numerator > d {
		return 0, fmt.Sprintf("%d/%d is not a fraction from 0 to 1 (numerator 0 or more, at most the denominator, 1 or more)", f.Numerator, d)
	}
	return 100 * float64(f.Numerator) / float64(d), ""
}

// percent formats a percentage for a message ("12.5").
func percent(pc float64) string { return strconv.FormatFloat(pc, 'f', -1, 64) }
