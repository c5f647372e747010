package gatewayapi

// External authorization (GEP-1494): the HTTPRoute rule filter of type
// ExternalAuth and the Gateway (or ListenerSet) listener filter of type
// ExternalAuth (GatewayListenerFilters) are one HTTPExternalAuthFilter,
// validated and resolved here by one function, extAuth, into one
// ir.ExtAuth; pkg/xdstranslator renders both as Envoy's ext_authz filter.

import (
	"fmt"
	"regexp"

	corev1 "k8s.io/api/core/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

const (
	// maxExtAuthHeaders is the most allowedHeaders and
	// allowedResponseHeaders each list may hold (GRPCAuthConfig,
	// HTTPAuthConfig MaxItems).
	maxExtAuthHeaders = 64
	// maxExtAuthPath is the longest http.path (HTTPAuthConfig MaxLength).
	maxExtAuthPath = 1024
	// MaxExtAuthBody is the largest forwardBody.maxSize we accept: Envoy
	// holds that much of every request of the route in memory while it
	// asks the service, so a namespace's route must not make the shared
	// fleet buffer without bound. The API sets no maximum; a larger value
	// is UnsupportedValue.
	MaxExtAuthBody = 1 << 20
)

// extAuthPathRE is HTTPAuthConfig path's pattern.
var extAuthPathRE = regexp.MustCompile(`^(?:[-A-Za-z0-9/._~!$&'()*+,;=:@]|[%][0-9a-fA-F]{2})+$`)

// extAuthResult is what extAuth found.
type extAuthResult struct {
	// auth is the check, nil when it cannot be served.
	auth *ir.ExtAuth
	// bad are the values the API or we do not accept (UnsupportedValue).
	bad []string
	// ref is why the backendRef does not resolve (its reason is a
	// RouteConditionReason: BackendNotFound, RefNotPermitted, InvalidKind).
	ref *problem
}

// extAuth validates f and resolves its backendRef as a reference made by
// r (a route, or the Gateway or ListenerSet of a listener filter: its kind
// and namespace are what a ReferenceGrant must allow) through
// resolveBackend, as every backendRef is: a core Service port in r's
// namespace or granted, with the BackendTLSPolicy that targets the port.
//
// Rules (HTTPExternalAuthFilter): protocol GRPC or HTTP, grpc set only
// with GRPC and http only with HTTP; http.path 1-1024 characters of the
// API's pattern, starting with "/"; header names RFC 7230 tokens, at most
// 64 per list; forwardBody.maxSize 0 (not forwarded) to MaxExtAuthBody.
// A GRPC service speaks HTTP/2: an HTTP/1.1 port (no appProtocol, http)
// is reached with h2c, on a cluster of its own ("/h2c"), as for GRPCRoute.
// A backend a BackendTLSPolicy cannot be honoured for (Invalid) leaves
// auth nil without a problem of r's: the policy's status says why.
func (t *translator) extAuth(r *routeState, f *gwapiv1.HTTPExternalAuthFilter) extAuthResult {
	var out extAuthResult
	badf := func(format string, a ...any) { out.bad = append(out.bad, fmt.Sprintf(format, a...)) }
	a := &ir.ExtAuth{}
	switch f.ExternalAuthProtocol {
	case gwapiv1.HTTPRouteExternalAuthGRPCProtocol:
		a.Protocol = ir.ExtAuthGRPC
		if f.HTTPAuthConfig != nil {
			badf("http is set but protocol is GRPC")
		}
		if f.GRPCAuthConfig != nil {
			a.AllowedRequestHeaders = extAuthHeaders(badf, "grpc.allowedHeaders", f.GRPCAuthConfig.AllowedRequestHeaders)
		}
	case gwapiv1.HTTPRouteExternalAuthHTTPProtocol:
		a.Protocol = ir.ExtAuthHTTP
		if f.GRPCAuthConfig != nil {
			badf("grpc is set but protocol is HTTP")
		}
		if h := f.HTTPAuthConfig; h != nil {
			switch p := h.Path; {
			case p == "":
			case len(p) > maxExtAuthPath || !extAuthPathRE.MatchString(p) || p[0] != '/':
				badf("http.path %s is not a path (starting with /, at most %d characters of the path match's alphabet)", q(p), maxExtAuthPath)
			default:
				a.PathPrefix = p
			}
			a.AllowedRequestHeaders = extAuthHeaders(badf, "http.allowedHeaders", h.AllowedRequestHeaders)
			a.AllowedResponseHeaders = extAuthHeaders(badf, "http.allowedResponseHeaders", h.AllowedResponseHeaders)
		}
	default:
		badf("protocol %s is not supported (GRPC or HTTP)", q(string(f.ExternalAuthProtocol)))
	}
	if fb := f.ForwardBody; fb != nil {
		if fb.MaxSize < 0 || fb.MaxSize > MaxExtAuthBody {
			badf("forwardBody.maxSize %d is outside 0-%d", fb.MaxSize, MaxExtAuthBody)
		} else {
			a.MaxBodyBytes = uint32(fb.MaxSize)
		}
	}
	ref := f.BackendRef
	if ref.Port != nil && (*ref.Port < 1 || *ref.Port > 65535) {
		badf("backendRef port %d is outside 1-65535", *ref.Port)
	}
	if ref.Namespace != nil {
		if p := checkNamespace(string(*ref.Namespace)); p != "" {
			badf("backendRef namespace %s %s", q(string(*ref.Namespace)), p)
		}
	}
	if len(out.bad) > 0 {
		return out
	}
	b, p := t.resolveBackend(r, ref, corev1.ProtocolTCP)
	switch {
	case p != nil:
		out.ref = p
		return out
	case b.Invalid:
		return out
	case a.Protocol == ir.ExtAuthGRPC:
		asHTTP2(b)
	}
	a.Backend = b
	out.auth = a
	return out
}

// extAuthHeaders checks a list of header names (field names it).
func extAuthHeaders(badf func(string, ...any), field string, hs []string) []string {
	if len(hs) > maxExtAuthHeaders {
		badf("%s has %d entries; at most %d are allowed", field, len(hs), maxExtAuthHeaders)
	}
	for _, h := range hs {
		if p := checkHeaderName(h); p != "" {
			badf("%s entry %s %s", field, q(h), p)
		}
	}
	return hs
}

// routeExtAuth translates rule filter k of type ExternalAuth: what the
// API refuses makes the rule UnsupportedValue; a backendRef that does not
// resolve sets ResolvedRefs=False with resolveBackend's reason. In both
// cases, and when a BackendTLSPolicy cannot be honoured, it returns nil
// and the rule answers the failure status: a request is never forwarded
// unchecked (fail closed).
func (rc *ruleContext) routeExtAuth(k int, f *gwapiv1.HTTPExternalAuthFilter) *ir.ExtAuth {
	res := rc.t.extAuth(rc.route, f)
	for _, b := range res.bad {
		rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "filter %d: externalAuth: %s", k, b)
	}
	if res.ref != nil {
		rc.refProblem(gwapiv1.RouteConditionReason(res.ref.reason), "filter %d: externalAuth backendRef: %s; the rule answers %d", k, res.ref.msg, rc.failure)
	}
	return res.auth
}

// listenerFilters validates a listener's filters.requests
// (GatewayListenerFilters): only on HTTP and HTTPS listeners, at most 16,
// each an ExternalAuth filter (extAuth's rules). An ExtensionRef names a
// kind we do not support, which, like any value we do not accept, makes
// the listener Accepted=False reason UnsupportedValue: it is not served,
// rather than served without the filter. The filters run in their order
// (so InvalidListenerFilterOrder never applies). The backendRefs are
// resolved later, by resolveListenerFilters, once policies are read.
func (l *listenerState) listenerFilters() {
	if l.spec.Filters == nil || len(l.spec.Filters.Requests) == 0 || l.notAccepted != nil {
		return
	}
	reqs := l.spec.Filters.Requests
	bad := func(format string, a ...any) {
		l.notAccepted = &problem{string(gwapiv1.ListenerReasonUnsupportedValue), "filters.requests: " + fmt.Sprintf(format, a...)}
	}
	switch {
	case l.protocol != ir.ProtocolHTTP && l.protocol != ir.ProtocolHTTPS:
		bad("listener filters apply only to HTTP and HTTPS listeners")
		return
	case len(reqs) > maxItems16:
		bad("%d filters; at most %d are allowed", len(reqs), maxItems16)
		return
	}
	for k, f := range reqs {
		switch {
		case f.Type == gwapiv1.ListenerFilterExternalAuth && f.ExternalAuth != nil:
		case f.Type == gwapiv1.ListenerFilterExtensionRef && f.ExtensionRef != nil:
			e := f.ExtensionRef
			bad("filter %d: ExtensionRef %s %s is not a filter kind xds-controller supports", k, groupKind(string(e.Group), string(e.Kind)), e.Name)
			return
		default:
			bad("filter %d: type %s is not supported or lacks its field", k, q(string(f.Type)))
			return
		}
	}
}

// resolveListenerFilters resolves the ExternalAuth filters of every
// listener of every Gateway (listenerFilters accepted them) into
// listenerState.extAuth, as references made by the listener's Gateway or
// ListenerSet. What the API refuses makes the listener UnsupportedValue;
// a backendRef that does not resolve (or whose BackendTLSPolicy cannot be
// honoured) sets filterProblem: ResolvedRefs=False and the listener is not
// programmed (fail closed). What they read is Gateway-level state
// (translator gatewayReads, set by Cache.reset).
func (t *translator) resolveListenerFilters() {
	for _, gs := range t.gateways {
		for _, l := range gs.allListeners() {
			if l.spec.Filters == nil || len(l.spec.Filters.Requests) == 0 || !l.accepted() {
				continue
			}
			t.resolveFiltersOf(l)
		}
	}
}

func (t *translator) resolveFiltersOf(l *listenerState) {
	owner := l.gw.nn.Name
	if l.set != nil {
		owner = l.set.nn.Name
	}
	referrer := &routeState{key: RouteKey{Kind: l.ownerKind(), Namespace: l.namespace(), Name: owner}}
	var auth []*ir.ExtAuth
	for k, f := range l.spec.Filters.Requests {
		ref := f.ExternalAuth.BackendRef
		svc := nn(string(deref(ref.Namespace, gwapiv1.Namespace(l.namespace()))), string(ref.Name))
		res := t.extAuth(referrer, f.ExternalAuth)
		switch {
		case len(res.bad) > 0:
			l.notAccepted = &problem{string(gwapiv1.ListenerReasonUnsupportedValue), fmt.Sprintf("filters.requests: filter %d: externalAuth: %s", k, joinMessages(res.bad))}
			return
		case res.ref != nil:
			l.filterProblem = &problem{res.ref.reason, fmt.Sprintf("filters.requests: filter %d: externalAuth backendRef: %s", k, res.ref.msg)}
			return
		case res.auth == nil:
			l.filterProblem = &problem{string(gwapiv1.ListenerReasonInvalid), fmt.Sprintf("filters.requests: filter %d: externalAuth backendRef: the BackendTLSPolicy of Service %s cannot be honoured (see its status)", k, svc)}
			return
		}
		if gc := l.gw.backendCert; gc != nil {
			// The Gateway's client certificate, as for every TLS backend
			// of its routes (applyBackendClientCert).
			if res.auth.Backend = gc.apply(res.auth.Backend); res.auth.Backend.Invalid {
				l.filterProblem = &problem{string(gwapiv1.ListenerReasonInvalid), fmt.Sprintf("filters.requests: filter %d: externalAuth backendRef: the Gateway's backend client certificate does not resolve (see the Gateway's ResolvedRefs)", k)}
				return
			}
		}
		auth = append(auth, res.auth)
	}
	l.extAuth = auth
}
