package ingress

// The Ingress API's path and host semantics (networking.k8s.io/v1
// HTTPIngressPath, IngressRule host), expressed as IR matches.

import (
	"cmp"
	"fmt"
	"regexp"
	"strings"
	"unicode"

	networkingv1 "k8s.io/api/networking/v1"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/re2"
)

// pathMatch is one path of an Ingress rule as served.
type pathMatch struct {
	// exact is pathType Exact; otherwise the path matches by element
	// (Prefix, and ImplementationSpecific, which we treat as Prefix).
	exact bool
	// regex: the path is a regular expression (the use-regex and
	// rewrite-target annotations), matched case-insensitively from the
	// path's start as ingress-nginx does: the whole path for Exact,
	// a beginning of it otherwise.
	regex bool
	// value is the path; for a prefix without its trailing slashes ("/"
	// stays "/"), since "/foo/" and "/foo" match the same requests.
	value string
}

// readPath reads an HTTPIngressPath's pathType and path:
//
//   - Exact matches the URL path exactly, case-sensitively;
//   - Prefix matches by path element: "/foo" (or "/foo/") matches "/foo",
//     "/foo/" and "/foo/bar", not "/foobar";
//   - ImplementationSpecific is ours to define: we treat it as Prefix.
//
// An empty path is "/" (the Ingress API's default for Prefix paths). A
// path must start with "/", and, as the API server checks for every path
// type, must not contain "//", "/./", "/../", an encoded slash (%2f) or end
// with "/." or "/.."; nor may it hold '?', '#', spaces or control
// characters, which no request path matched by Envoy contains. pathType is
// required. With regex (annotations) the path is a regular expression: it
// must start with "/" and be RE2 (Envoy's syntax; Perl's lookarounds and
// backreferences are not). The error says what is wrong.
func readPath(p networkingv1.HTTPIngressPath, regex bool) (pathMatch, error) {
	if p.PathType == nil {
		return pathMatch{}, fmt.Errorf("pathType is required (Exact, Prefix or ImplementationSpecific)")
	}
	value := cmp.Or(p.Path, "/")
	var exact bool
	switch *p.PathType {
	case networkingv1.PathTypeExact:
		exact = true
	case networkingv1.PathTypePrefix, networkingv1.PathTypeImplementationSpecific:
	default:
		return pathMatch{}, fmt.Errorf("pathType %q is not Exact, Prefix or ImplementationSpecific", *p.PathType)
	}
	if regex {
		if !strings.HasPrefix(value, "/") || len(value) > maxPathLength || strings.IndexFunc(value, unicode.IsControl) >= 0 {
			return pathMatch{}, fmt.Errorf("path %q must start with / and be at most %d characters without control characters", value, maxPathLength)
		}
		// What Envoy matches is irPath's expression; a rewrite-target's
		// pattern, when Envoy would refuse it, is pre-validation's to
		// find (the path then answers 503).
		m := pathMatch{exact: exact, regex: true, value: value}
		if why := re2.Problem(m.irPath().Value); why != "" {
			return pathMatch{}, fmt.Errorf("path %q (use-regex, rewrite-target): the expression Envoy gets %s", value, why)
		}
		return m, nil
	}
	if why := checkPath(value); why != "" {
		return pathMatch{}, fmt.Errorf("path %q %s", value, why)
	}
	if !exact {
		value = cmp.Or(strings.TrimRight(value, "/"), "/")
	}
	return pathMatch{exact: exact, value: value}, nil
}

// maxPathLength bounds a path (the Gateway API's limit for path matches).
const maxPathLength = 1024

func checkPath(v string) string {
	switch {
	case !strings.HasPrefix(v, "/"):
		return "must start with /"
	case len(v) > maxPathLength:
		return fmt.Sprintf("is longer than %d characters", maxPathLength)
	case strings.ContainsAny(v, "?#"):
		return "must not contain '?' or '#'"
	case strings.IndexFunc(v, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return "must not contain spaces or control characters"
	case strings.Contains(v, "//"), strings.Contains(v, "/./"), strings.Contains(v, "/../"),
		strings.Contains(strings.ToLower(v), "%2f"), strings.HasSuffix(v, "/."), strings.HasSuffix(v, "/.."):
		return "must not contain \"//\", \"/./\", \"/../\" or \"%2f\", nor end with \"/.\" or \"/..\""
	}
	return ""
}

// irPath is the path match Envoy serves. A regular expression matches
// the whole path in Envoy, so a prefix one gets ".*" appended.
func (m pathMatch) irPath() *ir.StringMatch {
	switch {
	case m.regex && m.exact:
		return &ir.StringMatch{Type: ir.MatchRegex, Value: "(?i)" + m.value}
	case m.regex:
		return &ir.StringMatch{Type: ir.MatchRegex, Value: "(?i)(?:" + m.value + ").*"}
	case m.exact:
		return &ir.StringMatch{Type: ir.MatchExact, Value: m.value}
	}
	return &ir.StringMatch{Type: ir.MatchPathPrefix, Value: m.value}
}

// rewritePattern is the pattern a rewrite-target that refers to groups up
// to \refs replaces: the whole path, the groups numbered as in the
// Ingress's regular expression, and empty groups appended up to refs, so
// that a group the path does not have substitutes nothing, as an unset
// capture does in ingress-nginx (and Envoy is never given a substitution
// of a group its pattern lacks).
func (m pathMatch) rewritePattern(refs int) string {
	p := "(?i)^(?:" + m.value + ").*"
	if m.exact {
		p = "(?i)^(?:" + m.value + ")$"
	}
	if re, err := regexp.Compile(p); err == nil && re.NumSubexp() < refs {
		p += strings.Repeat("()", refs-re.NumSubexp())
	}
	return p
}

// String is "Exact /a" or "Prefix /a" (ImplementationSpecific shows as
// Prefix: it is served as one), with " (regex)" for a regular expression.
func (m pathMatch) String() string {
	s := "Prefix " + m.value
	if m.exact {
		s = "Exact " + m.value
	}
	if m.regex {
		s += " (regex)"
	}
	return s
}

// comparePaths orders the paths of one host by the Ingress API's
// precedence (HTTPIngressPath): the longest path first (a prefix counted
// without its trailing slash, "/" as 0), and at equal length Exact before
// Prefix; then by value, so the order is total. The first route that
// matches a request wins in Envoy, so this is "the longest matching path
// wins, Exact before Prefix".
func comparePaths(a, b pathMatch) int {
	return cmp.Or(-cmp.Compare(pathLength(a), pathLength(b)), -cmp.Compare(boolInt(a.exact), boolInt(b.exact)), cmp.Compare(a.value, b.value))
}

func pathLength(m pathMatch) int {
	if !m.exact && m.value == "/" {
		return 0
	}
	return len(m.value)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// hostRule is the host of an IngressRule as served.
type hostRule struct {
	// vhost is the IR virtual host: the host, a "*." wildcard, or "*" for
	// a rule without host (every host).
	vhost string
	// wildcard is a "*." host: it matches exactly one DNS label in place
	// of "*" (IngressRule host: "*.foo.com" matches "bar.foo.com", not
	// "baz.bar.foo.com" nor "foo.com").
	wildcard bool
}

// maxWildcardLabels bounds the labels after "*." so that the one-label
// check (authorityMatch) stays within Envoy's regular expression size
// limit: its RE2 program is 5 instructions a label and 13 more (measured
// with Envoy 1.40: 98 at 17 labels, 103 at 18, which Envoy refuses).
const maxWildcardLabels = 17

// readHost reads an IngressRule host: "" is every host; otherwise a
// lower-case RFC 1123 name with an optional "*." first label
// (gatewayapi.ValidHostname, the same rule the API server applies), no IP
// address.
func readHost(h string) (hostRule, error) {
	if h == "" {
		return hostRule{vhost: "*"}, nil
	}
	if why := gatewayapi.ValidHostname(h); why != "" {
		return hostRule{}, fmt.Errorf("host %q %s", h, why)
	}
	wild := strings.HasPrefix(h, "*.")
	if wild && strings.Count(h, ".") > maxWildcardLabels {
		return hostRule{}, fmt.Errorf("host %q: a wildcard host has at most %d labels after \"*.\"", h, maxWildcardLabels)
	}
	return hostRule{vhost: h, wildcard: wild}, nil
}

// authorityMatch is the header match a wildcard host's routes carry: the
// virtual host "*.foo.com" lets Envoy in any name ending in ".foo.com",
// and the Ingress API wants exactly one label before it, so the request's
// :authority (Host) must have exactly one label more than the suffix (an
// optional :port aside). Counting labels keeps the expression small
// whatever the suffix's length.
func (h hostRule) authorityMatch() []ir.StringMatch {
	if !h.wildcard {
		return nil
	}
	labels := strings.Count(h.vhost, ".")
	return []ir.StringMatch{{
		Name:  ":authority",
		Type:  ir.MatchRegex,
		Value: fmt.Sprintf(`[^.:]+(?:\.[^.:]+){%d}(?::[0-9]+)?`, labels),
	}}
}
