package gatewayapi

// Access log formats: the command operators of Envoy's substitution
// format strings that a ListenerPolicy's accessLog (and later an
// Ingress's) may use. Envoy refuses a listener whose format names an
// operator it does not know, so a format is checked here, against this
// list, before it reaches the IR.

import (
	"fmt"
	"regexp"
	"strings"
)

// accessLogOperators are the command operators without an argument
// (Envoy "Access logging: command operators"), each optionally
// truncated (":N").
var accessLogOperators = fieldSet(`
	START_TIME REQUEST_HEADERS_BYTES RESPONSE_HEADERS_BYTES BYTES_RECEIVED BYTES_SENT
	PROTOCOL UPSTREAM_PROTOCOL RESPONSE_CODE RESPONSE_CODE_DETAILS CONNECTION_TERMINATION_DETAILS
	DURATION REQUEST_DURATION REQUEST_TX_DURATION RESPONSE_DURATION RESPONSE_TX_DURATION
	RESPONSE_FLAGS RESPONSE_FLAGS_LONG
	UPSTREAM_HOST UPSTREAM_CLUSTER UPSTREAM_LOCAL_ADDRESS UPSTREAM_REMOTE_ADDRESS
	UPSTREAM_TRANSPORT_FAILURE_REASON UPSTREAM_REQUEST_ATTEMPT_COUNT
	DOWNSTREAM_REMOTE_ADDRESS DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT DOWNSTREAM_REMOTE_PORT
	DOWNSTREAM_DIRECT_REMOTE_ADDRESS DOWNSTREAM_DIRECT_REMOTE_ADDRESS_WITHOUT_PORT DOWNSTREAM_DIRECT_REMOTE_PORT
	DOWNSTREAM_LOCAL_ADDRESS DOWNSTREAM_LOCAL_ADDRESS_WITHOUT_PORT DOWNSTREAM_LOCAL_PORT
	REQUESTED_SERVER_NAME ROUTE_NAME CONNECTION_ID HOSTNAME
	DOWNSTREAM_TLS_VERSION DOWNSTREAM_TLS_CIPHER DOWNSTREAM_TLS_SESSION_ID
	DOWNSTREAM_PEER_SUBJECT DOWNSTREAM_PEER_URI_SAN DOWNSTREAM_PEER_FINGERPRINT_256 DOWNSTREAM_LOCAL_URI_SAN`)

// fieldSet is the set of the words of s.
func fieldSet(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.Fields(s) {
		out[w] = true
	}
	return out
}

// accessLogHeaderOperators take a header name (REQ(X?Y):N, the request's
// X, else Y; RESP and TRAILER the response's).
var accessLogHeaderOperators = map[string]bool{"REQ": true, "RESP": true, "TRAILER": true}

// accessLogOperatorRE is one command operator: %NAME%, %NAME(arg)% or
// either followed by ":N" (a length).
var accessLogOperatorRE = regexp.MustCompile(`^%([A-Z0-9_]+)(?:\(([^()%]*)\))?(?::([0-9]{1,5}))?%`)

// startTimeArgRE is START_TIME's argument: strftime specifiers and
// Envoy's %f, %s, %Ns, printable ASCII without "(", ")" and "%" outside
// specifiers.
var startTimeArgRE = regexp.MustCompile(`^([ -$&-'*-~]|%[a-zA-Z]|%[1-9]f)*$`)

// ValidateAccessLogFormat checks f, an Envoy substitution format string
// (text, or one JSON field's value): every "%" opens a command operator of
// accessLogOperators or accessLogHeaderOperators (with a valid header
// name: "REQ(:PATH)", "REQ(X-A?X-B)") or START_TIME(format), and the text
// outside them is printable (a tab, and a final line feed, allowed). It
// returns why f is not valid, or "".
func ValidateAccessLogFormat(f string) string {
	for i := 0; i < len(f); {
		c := f[i]
		if c != '%' {
			if (c < ' ' || c == 0x7f) && c != '\t' && !(c == '\n' && i == len(f)-1) {
				return fmt.Sprintf("a control character (0x%02x) at byte %d", c, i)
			}
			i++
			continue
		}
		end := strings.IndexByte(f[i+1:], '%')
		if f[i:] == "%" || end < 0 {
			return fmt.Sprintf("the %% at byte %d opens no command operator (a literal %% is not supported)", i)
		}
		m := accessLogOperatorRE.FindStringSubmatch(f[i:])
		if m == nil {
			// START_TIME's argument holds "%": read it on its own.
			if n, ok := startTime(f[i:]); ok {
				i += n
				continue
			}
			return fmt.Sprintf("%s at byte %d is not a command operator (%%NAME%%, %%NAME(arg)%%, :N for a length)", q(f[i:i+end+2]), i)
		}
		name, arg, hasArg := m[1], m[2], strings.Contains(m[0], "(")
		switch {
		case accessLogHeaderOperators[name]:
			if !hasArg {
				return fmt.Sprintf("%s needs a header name: %%%s(name)%%", name, name)
			}
			for _, h := range strings.SplitN(arg, "?", 2) {
				if msg := checkHeaderName(strings.TrimPrefix(h, ":")); msg != "" {
					return fmt.Sprintf("%s: header %s %s", name, q(h), msg)
				}
			}
		case accessLogOperators[name]:
			if hasArg && name != "START_TIME" {
				return fmt.Sprintf("%s takes no argument", name)
			}
		default:
			return fmt.Sprintf("%%%s%% is not a command operator this controller passes to Envoy", name)
		}
		i += len(m[0])
	}
	return ""
}

// startTime reads %START_TIME(format)% at the start of f, whose format
// has strftime specifiers: its length, and whether it is one.
func startTime(f string) (int, bool) {
	const open = "%START_TIME("
	if !strings.HasPrefix(f, open) {
		return 0, false
	}
	end := strings.Index(f, ")%")
	if end < 0 || !startTimeArgRE.MatchString(f[len(open):end]) {
		return 0, false
	}
	return end + 2, true
}
