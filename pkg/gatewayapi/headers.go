package gatewayapi

// Header edits Envoy cannot apply as written: Host and the HTTP/2
// pseudo-headers (":authority", ":path", ":method", ":scheme", ":status",
// ...). Envoy refuses a whole route configuration whose
// request_headers_to_add, response_headers_to_add or *_headers_to_remove
// name one of them (":-prefixed or host headers may not be modified"), so
// a Request- or ResponseHeaderModifier that names one is honoured another
// way or refused here, never accepted and ignored: the xDS translator never
// sees such an edit (pkg/ir HeaderModifier, checked by ir.Validate;
// pkg/xdstranslator modifiable is only a guard).
//
// The choices, from the Gateway API (HTTPHeaderFilter: "set overwrites the
// request with the given header"; RequestHeaderModifier is Core support, so
// a route that uses it gets what it says or is told it does not) and from
// what users of a gateway expect (setting Host is how they pick the virtual
// host of a backend behind it):
//   - `set` of Host in a request is a host rewrite, Envoy's
//     host_rewrite_literal, as an HTTPURLRewriteFilter hostname is: on a
//     rule, RouteAction host_rewrite_literal; on a backendRef,
//     WeightedCluster ClusterWeight host_rewrite_literal, for that
//     backend's share of requests only. For a GRPCRoute, which has no
//     URLRewrite filter, it is the only way to choose the upstream
//     authority. The value must be a Host (RFC 9110 section 7.2:
//     checkHostHeaderValue); setting Host twice in one filter is refused
//     (HTTPHeaderFilter: one action per header name).
//   - A request's Host has one rewrite. A rule that sets Host and has a
//     URLRewrite hostname, or whose backendRef sets Host too, is refused
//     rather than letting Envoy pick one silently; so is a rule that sets
//     Host and redirects (nothing is forwarded: the redirect's hostname says
//     where the client goes).
//   - `add` of Host would give the request two Host values, an invalid
//     request (RFC 9112 section 3.2); `remove` of Host would leave an
//     HTTP/1.1 request without one. Envoy can do neither: both are refused,
//     as is any edit of Host in a response (Host is a request header, and
//     Envoy refuses it there too).
//   - Pseudo-headers are Envoy's own: the path changes with a URLRewrite
//     path, the authority with a Host rewrite, and the rest not at all.
//     Their names are not HTTPHeaderNames, so the API server refuses them
//     in a cluster; standalone, they are refused here with a message that
//     says why.
//
// Refused follows the project's convention for an invalid filter value:
// the rule is UnsupportedValue (PartiallyInvalid=True when other rules are
// valid, else Accepted=False) and answers its failure status (500 for
// HTTPRoute, 503 for GRPCRoute).

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

// isHostHeader says whether name is Host (header names are
// case-insensitive).
func isHostHeader(name string) bool { return strings.EqualFold(name, "host") }

// modifierType names the filter type of a request (or response) header
// modifier in messages.
func modifierType(request bool) string {
	if request {
		return string(gwapiv1.HTTPRouteFilterRequestHeaderModifier)
	}
	return string(gwapiv1.HTTPRouteFilterResponseHeaderModifier)
}

// framingHeaders say how long a message is; Envoy computes them, and an
// edit would desynchronise the connection, so no header filter may touch
// them.
var framingHeaders = map[string]bool{"content-length": true, "transfer-encoding": true}

// pseudoHints say how to get what an edit of a pseudo-header would do.
var pseudoHints = map[string]string{
	":authority": "; to change the authority, set Host (or use an HTTPRoute URLRewrite hostname)",
	":path":      "; to change the path, use an HTTPRoute URLRewrite path",
	":status":    "; the status is the backend's (or a redirect's)",
}

// editableHeader says why a header modifier cannot apply action ("set",
// "add", "remove") to the header name, or returns "" when it can. A
// request's `set` of Host is not asked about: it is a host rewrite (see the
// file comment).
func editableHeader(action, name string, request bool) string {
	switch {
	case strings.HasPrefix(name, ":"):
		return fmt.Sprintf("%s is an HTTP/2 pseudo-header, which Envoy maintains itself and does not let a header filter set, add or remove%s",
			name, pseudoHints[strings.ToLower(name)])
	case framingHeaders[strings.ToLower(name)]:
		return fmt.Sprintf("%s frames the message (RFC 9112 section 6): a value other than the one Envoy computes breaks the connection (a client reading too few or too many bytes, a backend waiting for a body)", name)
	case !isHostHeader(name):
		return ""
	case !request:
		return "Host is a request header; Envoy does not let a response header filter set, add or remove it"
	case action == "add":
		return "a request has exactly one Host, and adding one would make two; use set to rewrite it"
	case action == "remove":
		return "a request cannot go without its Host (HTTP/1.1 requires it, and Envoy refuses to remove it); use set to rewrite it"
	}
	return ""
}

// checkHostHeaderValue checks the value of a `set` of Host, which becomes
// Envoy's host_rewrite_literal: a host (a DNS name of RFC 1123 labels, in
// any case, at most 253 characters; an IPv4 address; or an IPv6 address in
// brackets) and an optional ":port" (1-65535), as RFC 9110 section 7.2
// defines Host. "" when it is fine.
func checkHostHeaderValue(v string) string {
	const why = "is not a valid Host (a DNS name, an IPv4 address or an IPv6 address in brackets, and an optional :port)"
	host, port := v, ""
	if strings.HasPrefix(v, "[") {
		end := strings.Index(v, "]")
		if end < 0 {
			return why
		}
		host, port = v[1:end], v[end+1:]
		if a, err := netip.ParseAddr(host); err != nil || !a.Is6() || a.Zone() != "" {
			return why
		}
		if port != "" && !strings.HasPrefix(port, ":") {
			return why
		}
		port = strings.TrimPrefix(port, ":")
	} else {
		if i := strings.LastIndex(v, ":"); i >= 0 {
			host, port = v[:i], v[i+1:]
		}
		if a, err := netip.ParseAddr(host); (err != nil || !a.Is4()) && checkPreciseHostname(strings.ToLower(host)) != "" {
			return why
		}
	}
	if port != "" || strings.HasSuffix(v, ":") {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 || strings.TrimLeft(port, "0123456789") != "" {
			return why
		}
	}
	return ""
}

// hostHeader applies a rule's `set` of Host (host, "" when none) to its
// filters out (fs are the rule's filters): out.URLRewrite.Hostname becomes
// host, which Envoy applies as RouteAction host_rewrite_literal. The rule
// is UnsupportedValue when it also has a URLRewrite hostname or a
// RequestRedirect. rc.ruleHost records what rewrites the rule's Host, for
// its backendRefs (backendFilters).
func (rc *ruleContext) hostHeader(out *ir.HTTPFilters, fs []gwapiv1.HTTPRouteFilter, host string) {
	redirect := false
	for _, f := range fs {
		switch {
		case f.Type == gwapiv1.HTTPRouteFilterURLRewrite && f.URLRewrite != nil && f.URLRewrite.Hostname != nil:
			rc.ruleHost = "its URLRewrite hostname"
		case f.Type == gwapiv1.HTTPRouteFilterRequestRedirect:
			redirect = true
		}
	}
	if host == "" {
		return
	}
	switch {
	case rc.ruleHost != "":
		rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "RequestHeaderModifier sets Host, which is a host rewrite, and the URLRewrite hostname rewrites it too; keep one of them")
	case redirect:
		rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "RequestHeaderModifier sets Host, but a RequestRedirect forwards nothing; use the redirect's hostname")
	default:
		if out.URLRewrite == nil {
			out.URLRewrite = &ir.URLRewrite{}
		}
		out.URLRewrite.Hostname = host
		rc.ruleHost = "its RequestHeaderModifier sets Host"
	}
}
