package gatewayapi

// Session persistence of HTTPRoute and GRPCRoute rules (rule
// sessionPersistence, GEP-1619, experimental channel of v1.7.0): what
// the API asks, checked against what Envoy's stateful session filter can
// do (pkg/xdstranslator renders it).

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

// maxCookiePathLen is CookieConfig path's MaxLength.
const maxCookiePathLen = 1024

// sessionPersistence maps a rule's sessionPersistence (SessionPersistence,
// v1.7.0) to the IR; nil stays nil. Every field as the API defines it:
//   - type Cookie (the default) or Header;
//   - cookie.name, or one generated for the rule (CookieConfig name: "a
//     unique cookie name SHOULD be generated"): sessionCookieName;
//     header.name, required; both RFC 7230 tokens of 1-256 characters;
//   - cookie.path, "/" by default (GEP-1619 "MUST default the cookie
//     path to /"): at most 1024 characters, starting with "/", without
//     control characters or ";" (RFC 6265 path-value);
//   - cookie.lifetimeType Session (the default: no Expires or Max-Age) or
//     Permanent, whose absoluteTimeout becomes the cookie's Max-Age and is
//     required (the API's CEL rule);
//   - absoluteTimeout: a GEP-2257 duration of whole seconds, at least 1s
//     (Max-Age counts seconds).
//
// What Envoy's stateful session cannot do is UnsupportedValue (the rule
// is invalid): an absoluteTimeout with lifetimeType Session (the session
// must then expire at the proxy with a cookie that has no Max-Age; Envoy
// expires a session only through the cookie's Max-Age) or with type
// Header (Envoy's header-based session has no expiry). So are the
// schema's own rules (cookie only with type Cookie, header only and
// required with type Header), for objects that skipped the CRD's
// validation (standalone files).
func (rc *ruleContext) sessionPersistence(sp *gwapiv1.SessionPersistence) *ir.SessionPersistence {
	if sp == nil {
		return nil
	}
	return sessionPersistenceIR(sp, sessionCookieName(rc.route.key.Kind, rc.route.key.Namespace, rc.route.key.Name, "/rule/"+strconv.Itoa(rc.index)),
		func(format string, a ...any) {
			rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "sessionPersistence: "+format, a...)
		})
}

// sessionPersistenceIR is sessionPersistence for any owner of a
// SessionPersistence (a route rule, an XBackendTrafficPolicy): cookie is
// the cookie name when sp names none, bad reports each problem (the
// result is then not to be used).
func sessionPersistenceIR(sp *gwapiv1.SessionPersistence, cookie string, bad func(string, ...any)) *ir.SessionPersistence {
	var timeout *ir.Duration
	if sp.AbsoluteTimeout != nil {
		d, p := checkDuration(string(*sp.AbsoluteTimeout))
		switch {
		case p != "":
			bad("absoluteTimeout %s %s", q(string(*sp.AbsoluteTimeout)), p)
		case d < time.Second || d%time.Second != 0:
			bad("absoluteTimeout %s is not a whole number of seconds of at least 1s (the cookie's Max-Age counts seconds)", *sp.AbsoluteTimeout)
		default:
			timeout = ir.NewDuration(d)
		}
	}
	typ := deref(sp.Type, gwapiv1.CookieBasedSessionPersistence)
	switch typ {
	case gwapiv1.CookieBasedSessionPersistence:
		if sp.Header != nil {
			bad("header must not be set with type Cookie")
		}
		return sessionCookie(sp, cookie, timeout, bad)
	case gwapiv1.HeaderBasedSessionPersistence:
		if sp.Cookie != nil {
			bad("cookie must not be set with type Header")
		}
		if sp.Header == nil {
			bad("header is required with type Header")
			return nil
		}
		name := string(sp.Header.Name)
		if p := checkHeaderName(name); p != "" {
			bad("header name %s %s", q(name), p)
		}
		if sp.AbsoluteTimeout != nil {
			bad("absoluteTimeout is not supported with type Header (Envoy's header-based session does not expire)")
		}
		return &ir.SessionPersistence{Type: ir.SessionHeader, Name: name}
	}
	bad("type %s is not supported (Cookie or Header)", q(string(typ)))
	return nil
}

// sessionCookie is sessionPersistenceIR for type Cookie; name is the
// cookie's name unless sp names one, timeout the valid absoluteTimeout,
// bad reports a problem.
func sessionCookie(sp *gwapiv1.SessionPersistence, name string, timeout *ir.Duration, bad func(string, ...any)) *ir.SessionPersistence {
	out := &ir.SessionPersistence{Type: ir.SessionCookie, Name: name, CookiePath: "/"}
	lifetime := gwapiv1.SessionCookieLifetimeType
	if c := sp.Cookie; c != nil {
		if c.Name != nil {
			out.Name = string(*c.Name)
			if p := checkHeaderName(out.Name); p != "" {
				// CookieName: "cookie names and header names share the
				// same RFC token character set".
				bad("cookie name %s %s", q(out.Name), p)
			}
		}
		if c.Path != nil && *c.Path != "" {
			out.CookiePath = *c.Path
			if p := checkCookiePath(out.CookiePath); p != "" {
				bad("cookie path %s %s", q(out.CookiePath), p)
			}
		}
		lifetime = deref(c.LifetimeType, lifetime)
	}
	switch lifetime {
	case gwapiv1.SessionCookieLifetimeType:
		if sp.AbsoluteTimeout != nil {
			bad("absoluteTimeout with cookie lifetimeType Session is not supported (Envoy expires a session only through the cookie's Max-Age, which a Session cookie must not have; use lifetimeType Permanent)")
		}
	case gwapiv1.PermanentCookieLifetimeType:
		if sp.AbsoluteTimeout == nil {
			bad("absoluteTimeout is required with cookie lifetimeType Permanent")
		}
		out.CookieMaxAge = timeout
	default:
		bad("cookie lifetimeType %s is not supported (Session or Permanent)", q(string(lifetime)))
	}
	return out
}

// sessionCookieName is the cookie name of a sessionPersistence that
// names none: "session-" and 16 hex digits of the SHA-256 of its owner's
// kind, namespace, name and part ("/rule/<index>" for a route rule, ""
// for a policy), so that every rule and policy has its own, the same at
// every translation, and the cookie does not tell clients the owner's
// name.
func sessionCookieName(kind, ns, name, part string) string {
	// Not routeRuleName: the route kind table (routekinds.go) reaches
	// this function, so it must not reach the table back.
	sum := sha256.Sum256([]byte(kind + "/" + ns + "/" + name + part))
	return "session-" + hex.EncodeToString(sum[:8])
}

// checkCookiePath says what is wrong with a cookie Path attribute, "" when
// nothing: RFC 6265 path-value (no control character, no ";"), starting
// with "/" (else browsers take the default path instead), at most 1024
// characters (CookieConfig path).
func checkCookiePath(p string) string {
	switch {
	case len(p) > maxCookiePathLen:
		return "is longer than 1024 characters"
	case !strings.HasPrefix(p, "/"):
		return "does not start with \"/\""
	case strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f || r == ';' }):
		return "contains a control character or \";\""
	}
	return ""
}

// SessionCookie maps a cookie sessionPersistence of an Ingress's affinity
// annotations (pkg/ingress) to the IR with a rule's rules
// (sessionPersistenceIR): sp must name its cookie. It returns what is
// wrong with sp, "" when nothing.
func SessionCookie(sp *gwapiv1.SessionPersistence) (*ir.SessionPersistence, string) {
	var msgs []string
	out := sessionPersistenceIR(sp, "", func(format string, a ...any) { msgs = append(msgs, fmt.Sprintf(format, a...)) })
	return out, strings.Join(msgs, "; ")
}
