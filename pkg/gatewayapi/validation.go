package gatewayapi

import (
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/xds-controller/xds-controller/pkg/re2"
)

// This file holds the value rules the translator enforces on user input.
// In a cluster the API server applies the Gateway API CRD schemas (the
// kubebuilder patterns, lengths and CEL rules of
// sigs.k8s.io/gateway-api/apis/v1) before we see an object; in standalone
// mode nobody does, so the translator must. On top of the schema, a value
// must fit the Envoy field it becomes: protoc-gen-validate rules
// (ValidateAll: no NUL, CR or LF in header values, host rewrites, path
// rewrites and redirects; non-empty regexes), Envoy's own checks at load
// time (RE2 program size, header value format strings) and proto3's
// requirement that strings be valid UTF-8. A value that breaks either would
// otherwise make Envoy refuse a whole route configuration, so one bad route
// would freeze every route of its listener.
//
// Each check returns "" when the value is fine, else why it is not (the
// value itself is quoted by the caller).

// Patterns of the Gateway API schema (apis/v1, v1.6.3).
var (
	// Hostname (shared_types.go): an optional "*." wildcard label, then
	// lower-case RFC 1123 labels.
	hostnameRE = regexp.MustCompile(`^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	// PreciseHostname (shared_types.go): no wildcard.
	preciseHostnameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	// HeaderName (shared_types.go): an RFC 7230 token.
	headerNameRE = regexp.MustCompile("^[A-Za-z0-9!#$%&'*+\\-.^_`|~]+$")
	// HTTPPathMatch CEL rule: the characters of an RFC 3986 path, and
	// percent-encodings.
	pathCharsRE = regexp.MustCompile(`^(?:[-A-Za-z0-9/._~!$&'()*+,;=:@]|[%][0-9a-fA-F]{2})+$`)
	// Duration (shared_types.go, GEP-2257).
	durationRE = regexp.MustCompile(`^([0-9]{1,5}(h|m|s|ms)){1,4}$`)
	// SectionName (shared_types.go): a listener name.
	sectionNameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	// ProtocolType (gateway_types.go).
	protocolRE = regexp.MustCompile(`^[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?$|[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/[A-Za-z0-9]+$`)
	// CORSOrigin (shared_types.go).
	corsOriginRE = regexp.MustCompile(`(^\*$)|(^(http(s)?):\/\/(((\*\.)?([a-zA-Z0-9\-]+\.)*[a-zA-Z0-9-]+|\*)(:([0-9]{1,5}))?)$)`)
	// Namespace (shared_types.go): an RFC 1123 label.
	namespaceRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
)

// Lengths of the Gateway API schema.
const (
	maxHostnameLen      = 253  // Hostname, PreciseHostname
	maxHeaderNameLen    = 256  // HeaderName
	maxHeaderValueLen   = 4096 // HTTPHeader.value, HTTPHeaderMatch.value
	maxQueryValueLen    = 1024 // HTTPQueryParamMatch.value
	maxPathLen          = 1024 // HTTPPathMatch.value, HTTPPathModifier
	maxSectionNameLen   = 253
	maxProtocolLen      = 255
	maxNamespaceLen     = 63
	maxItems16          = 16 // hostnames, rules, filters, backendRefs, header matches, ...
	maxMatchesPerRule   = 64
	maxMatchesPerRoute  = 128
	maxCORSItems        = 64
	maxGatewayListeners = 64
)

// q quotes a value for a status message, shortened so that a huge value
// does not make a huge condition message (the API server caps messages at
// 32768 bytes).
func q(s string) string {
	const max = 64
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		return fmt.Sprintf("%q... (%d bytes)", s[:cut], len(s))
	}
	return fmt.Sprintf("%q", s)
}

// plainRE matches names that read well unquoted in a message.
var plainRE = regexp.MustCompile(`^[A-Za-z0-9][-A-Za-z0-9._/]{0,252}$`)

// show is s as is when it is a plain name, else quoted (q).
func show(s string) string {
	if plainRE.MatchString(s) {
		return s
	}
	return q(s)
}

// checkHostname checks a Hostname: a route hostname (HTTPRoute, GRPCRoute,
// TLSRoute spec.hostnames), a listener hostname, a subjectAltNames
// hostname. Beyond the CRD's pattern it applies what the type's
// documentation says and the pattern does not check (checkNameRules).
func checkHostname(h string) string {
	if len(h) == 0 || len(h) > maxHostnameLen || !hostnameRE.MatchString(h) {
		return "is not a valid hostname (lower-case RFC 1123 labels, at most 253 characters, an optional \"*.\" wildcard as the first label only)"
	}
	return checkNameRules(strings.TrimPrefix(h, "*."))
}

// checkPreciseHostname checks a PreciseHostname: a redirect or rewrite
// hostname (Envoy host_redirect, host_rewrite_literal), a
// BackendTLSPolicy validation hostname; and checkNameRules.
func checkPreciseHostname(h string) string {
	if len(h) == 0 || len(h) > maxHostnameLen || !preciseHostnameRE.MatchString(h) {
		return "is not a valid hostname (lower-case RFC 1123 labels, at most 253 characters, no wildcard)"
	}
	return checkNameRules(h)
}

// maxLabelLen is the length limit of a DNS label (RFC 1123 section 2.1,
// RFC 1035 section 2.3.4).
const maxLabelLen = 63

// checkNameRules checks the rules of the Gateway API's Hostname and
// PreciseHostname (shared_types.go) that their CRD pattern does not
// enforce, so that the API server admits values the types forbid:
//   - "IPs are not allowed": a name whose last label is a number (all
//     digits, or 0x and hex digits) is refused, which covers "10.0.0.1"
//     and the other forms a URL parser reads as an IPv4 address ("127.1",
//     "0x7f.1": the WHATWG URL Standard's "ends in a number" rule); no DNS
//     top-level domain is all-numeric (RFC 3696 section 2);
//   - labels are RFC 1123 labels: at most 63 characters.
//
// n is a name without its wildcard label, already matching the pattern.
func checkNameRules(n string) string {
	labels := strings.Split(n, ".")
	for _, l := range labels {
		if len(l) > maxLabelLen {
			return fmt.Sprintf("has a label of %d characters (RFC 1123 labels have at most %d)", len(l), maxLabelLen)
		}
	}
	last := labels[len(labels)-1]
	hex, isHex := strings.CutPrefix(last, "0x")
	if strings.Trim(last, "0123456789") == "" || isHex && strings.Trim(hex, "0123456789abcdef") == "" {
		return "is an IP address or reads as one (its last label is a number): a hostname is a name, never an IP address"
	}
	return ""
}

// checkHeaderName checks an HTTPHeaderName: a header or query parameter
// name.
func checkHeaderName(n string) string {
	if len(n) == 0 || len(n) > maxHeaderNameLen || !headerNameRE.MatchString(n) {
		return "is not a valid name (an RFC 7230 token of 1-256 characters)"
	}
	return ""
}

// checkFieldValue checks a value that Envoy sees as a header value or
// matches against one: 1 to maxLen bytes (Gateway API), valid UTF-8
// (proto3 strings), and no control characters other than tab (RFC 9110
// field-value; Envoy's HeaderValue refuses NUL, CR and LF).
func checkFieldValue(v string, maxLen int) string {
	switch {
	case len(v) == 0:
		return "is empty"
	case len(v) > maxLen:
		return fmt.Sprintf("is longer than %d characters", maxLen)
	case !utf8.ValidString(v):
		return "is not valid UTF-8"
	}
	for _, c := range v {
		if (c < 0x20 && c != '\t') || c == 0x7f {
			return "contains a control character (CR, LF, NUL, ...), which a header value cannot hold"
		}
	}
	return ""
}

// checkHeaderSetValue checks a value a header modifier sets or adds. ("%"
// is fine: the xDS translator escapes it for Envoy's format strings.)
func checkHeaderSetValue(v string) string {
	return checkFieldValue(v, maxHeaderValueLen)
}

// checkPathMatch checks the value of an Exact or PathPrefix path match
// against the HTTPPathMatch CEL rules. They also keep Envoy's
// path_separated_prefix pattern (^[^?#]+[^?#/]$) satisfied.
func checkPathMatch(v string) string {
	switch {
	case len(v) > maxPathLen:
		return fmt.Sprintf("is longer than %d characters", maxPathLen)
	case !strings.HasPrefix(v, "/"):
		return "must be an absolute path and start with '/'"
	case strings.Contains(v, "//"):
		return "must not contain '//'"
	case strings.Contains(v, "/./"):
		return "must not contain '/./'"
	case strings.Contains(v, "/../"):
		return "must not contain '/../'"
	case strings.Contains(v, "%2f"), strings.Contains(v, "%2F"):
		return "must not contain '%2f' or '%2F'"
	case strings.Contains(v, "#"):
		return "must not contain '#'"
	case strings.HasSuffix(v, "/.."):
		return "must not end with '/..'"
	case strings.HasSuffix(v, "/."):
		return "must not end with '/.'"
	case !pathCharsRE.MatchString(v):
		return "must only contain valid path characters (RFC 3986 pchar, '/', and %-encodings; no spaces, '?' or '#')"
	}
	return ""
}

// checkReplacePath checks a ReplaceFullPath (full) or ReplacePrefixMatch
// value. The schema only bounds their length; Envoy puts them into
// path_redirect, prefix_rewrite or a regex substitution, which must not hold
// NUL, CR or LF, and RE2 reads "\" in a substitution as a group reference.
// We ask for what the replacement is, a path: empty (ReplacePrefixMatch
// only) or an absolute path of the characters a path match may use.
func checkReplacePath(v string, full bool) string {
	switch {
	case len(v) > maxPathLen:
		return fmt.Sprintf("is longer than %d characters", maxPathLen)
	case v == "" && !full:
		return ""
	case !strings.HasPrefix(v, "/"):
		return "must be an absolute path and start with '/'"
	case !pathCharsRE.MatchString(v):
		return "must only contain valid path characters (RFC 3986 pchar, '/', and %-encodings; no spaces, '?' or '#')"
	}
	return ""
}

// checkRegex checks a RegularExpression match value: at most maxLen bytes
// (Gateway API), valid UTF-8 (proto3 strings), and one that Envoy accepts
// (re2.Problem: non-empty, RE2 as Envoy's engine reads it, small enough for
// Envoy's program size limit).
func checkRegex(v string, maxLen int) string {
	switch {
	case len(v) > maxLen:
		return fmt.Sprintf("is longer than %d characters", maxLen)
	case !utf8.ValidString(v):
		return "is not valid UTF-8"
	}
	return re2.Problem(v)
}

// checkDuration checks a Gateway API Duration (GEP-2257) and returns it.
func checkDuration(d string) (time.Duration, string) {
	if !durationRE.MatchString(d) {
		return 0, "is not a Gateway API duration (GEP-2257: 1 to 4 groups of up to 5 digits and a unit h, m, s or ms, e.g. \"1h30m\", \"500ms\")"
	}
	v, err := time.ParseDuration(d)
	if err != nil {
		return 0, "is not a duration: " + err.Error()
	}
	return v, ""
}

// checkSectionName checks a listener name (SectionName).
func checkSectionName(n string) string {
	if len(n) == 0 || len(n) > maxSectionNameLen || !sectionNameRE.MatchString(n) {
		return "is not a valid listener name (lower-case RFC 1123 labels, at most 253 characters)"
	}
	return ""
}

// checkNamespace checks a Namespace reference (an RFC 1123 label).
func checkNamespace(n string) string {
	if len(n) == 0 || len(n) > maxNamespaceLen || !namespaceRE.MatchString(n) {
		return "is not a valid namespace name (an RFC 1123 label)"
	}
	return ""
}

// corsOriginRegex is the regular expression the xDS translator builds for a
// CORS origin with a "*" (xdstranslator corsPolicy); "" for an exact one.
func corsOriginRegex(o string) string {
	if !strings.Contains(o, "*") {
		return ""
	}
	if o == "*" {
		return ".*"
	}
	return strings.ReplaceAll(regexp.QuoteMeta(o), `\*`, "[^/]+")
}
