package gatewayapi

import (
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
	"github.com/xds-controller/xds-controller/pkg/ir"
)

// listenerPolicyOn is ListenerPolicy "lp" on Gateway web with spec.
func listenerPolicyOn(spec v1alpha1.ListenerPolicySpec) *v1alpha1.ListenerPolicy {
	if spec.TargetRefs == nil {
		spec.TargetRefs = []gwapiv1.LocalPolicyTargetReferenceWithSectionName{{LocalPolicyTargetReference: gwapiv1.LocalPolicyTargetReference{
			Group: gwapiv1.GroupName, Kind: "Gateway", Name: "web"}}}
	}
	return &v1alpha1.ListenerPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "lp"}, Spec: spec}
}

// TestListenerPolicyValidation is the validation table of ListenerPolicy:
// each spec gives its effect, or the message (a part of it) of
// Accepted=False reason Invalid.
func TestListenerPolicyValidation(t *testing.T) {
	v := func(s v1alpha1.TLSVersion) *v1alpha1.TLSVersion { return &s }
	hops := func(n int32) *int32 { return &n }
	header := func(h string) *gwapiv1.HTTPHeaderName { n := gwapiv1.HTTPHeaderName(h); return &n }
	host := func(h string) *gwapiv1.PreciseHostname { n := gwapiv1.PreciseHostname(h); return &n }
	text := func(s string) *string { return &s }
	for _, c := range []struct {
		name string
		spec v1alpha1.ListenerPolicySpec
		want *listenerEffect // nil: invalid
		msg  string
	}{
		{"tls versions, ciphers, alpn", v1alpha1.ListenerPolicySpec{TLS: &v1alpha1.ListenerTLSSettings{
			MinVersion: v("1.2"), MaxVersion: v("1.2"), CipherSuites: []string{"ECDHE-RSA-AES128-GCM-SHA256"}, ALPNProtocols: []string{"http/1.1"}}},
			&listenerEffect{client: ir.ClientSettings{TLS: &ir.ClientTLS{MinVersion: ir.TLS12, MaxVersion: ir.TLS12,
				CipherSuites: []string{"ECDHE-RSA-AES128-GCM-SHA256"}, ALPN: []string{"http/1.1"}}}}, ""},
		{"tls 1.3 only", v1alpha1.ListenerPolicySpec{TLS: &v1alpha1.ListenerTLSSettings{MinVersion: v("1.3")}},
			&listenerEffect{client: ir.ClientSettings{TLS: &ir.ClientTLS{MinVersion: ir.TLS13}}}, ""},
		{"min above max", v1alpha1.ListenerPolicySpec{TLS: &v1alpha1.ListenerTLSSettings{MinVersion: v("1.3"), MaxVersion: v("1.2")}},
			nil, "tls.minVersion must not be above maxVersion"},
		{"unknown version", v1alpha1.ListenerPolicySpec{TLS: &v1alpha1.ListenerTLSSettings{MaxVersion: v("1.4")}},
			nil, `tls.maxVersion "1.4" is not a TLS version`},
		{"unknown cipher", v1alpha1.ListenerPolicySpec{TLS: &v1alpha1.ListenerTLSSettings{CipherSuites: []string{"RC4-MD5"}}},
			nil, `tls.cipherSuites[0] "RC4-MD5" is not a TLS 1.2 cipher suite Envoy knows`},
		{"cipher twice", v1alpha1.ListenerPolicySpec{TLS: &v1alpha1.ListenerTLSSettings{CipherSuites: []string{"AES128-SHA", "AES128-SHA"}}},
			nil, "tls.cipherSuites[1] \"AES128-SHA\" is listed twice"},
		{"ciphers with 1.3", v1alpha1.ListenerPolicySpec{TLS: &v1alpha1.ListenerTLSSettings{MinVersion: v("1.3"), CipherSuites: []string{"AES128-SHA"}}},
			nil, "cipherSuites apply to TLS 1.2"},
		{"empty cipher list", v1alpha1.ListenerPolicySpec{TLS: &v1alpha1.ListenerTLSSettings{CipherSuites: []string{}}},
			nil, "tls.cipherSuites: 0 entries"},
		{"alpn h3", v1alpha1.ListenerPolicySpec{TLS: &v1alpha1.ListenerTLSSettings{ALPNProtocols: []string{"h2", "h3"}}},
			nil, `tls.alpnProtocols[1] "h3" is not h2 or http/1.1`},
		{"proxy protocol optional", v1alpha1.ListenerPolicySpec{ProxyProtocol: &v1alpha1.ProxyProtocolSettings{Optional: true}},
			&listenerEffect{client: ir.ClientSettings{ProxyProtocol: &ir.ProxyProtocol{Optional: true}}}, ""},
		{"xff hops", v1alpha1.ListenerPolicySpec{ClientIP: &v1alpha1.ClientIPSettings{XFFNumTrustedHops: hops(2)}},
			&listenerEffect{client: ir.ClientSettings{ClientIP: &ir.ClientIPDetection{XFFNumTrustedHops: 2}}}, ""},
		{"xff hops too many", v1alpha1.ListenerPolicySpec{ClientIP: &v1alpha1.ClientIPSettings{XFFNumTrustedHops: hops(17)}},
			nil, "clientIP.xffNumTrustedHops 17 is not in 0-16"},
		{"custom header lower-cased", v1alpha1.ListenerPolicySpec{ClientIP: &v1alpha1.ClientIPSettings{CustomHeader: header("CF-Connecting-IP")}},
			&listenerEffect{client: ir.ClientSettings{ClientIP: &ir.ClientIPDetection{CustomHeader: "cf-connecting-ip"}}}, ""},
		{"custom header XFF", v1alpha1.ListenerPolicySpec{ClientIP: &v1alpha1.ClientIPSettings{CustomHeader: header("x-forwarded-for")}},
			nil, "use xffNumTrustedHops"},
		{"custom header bad", v1alpha1.ListenerPolicySpec{ClientIP: &v1alpha1.ClientIPSettings{CustomHeader: header("a b")}},
			nil, "clientIP.customHeader is not a valid name"},
		{"both client IP sources", v1alpha1.ListenerPolicySpec{ClientIP: &v1alpha1.ClientIPSettings{XFFNumTrustedHops: hops(1), CustomHeader: header("x-real-ip")}},
			nil, "exactly one of xffNumTrustedHops and customHeader"},
		{"neither client IP source", v1alpha1.ListenerPolicySpec{ClientIP: &v1alpha1.ClientIPSettings{}},
			nil, "exactly one of xffNumTrustedHops and customHeader"},
		{"http 1.0 with a host", v1alpha1.ListenerPolicySpec{HTTP1: &v1alpha1.HTTP1Settings{AcceptHTTP10: true, DefaultHostForHTTP10: host("old.example.com")}},
			&listenerEffect{client: ir.ClientSettings{HTTP1: &ir.HTTP1Options{AcceptHTTP10: true, DefaultHost: "old.example.com"}}}, ""},
		{"default host without 1.0", v1alpha1.ListenerPolicySpec{HTTP1: &v1alpha1.HTTP1Settings{DefaultHostForHTTP10: host("old.example.com")}},
			nil, "needs acceptHTTP10"},
		{"default host wildcard", v1alpha1.ListenerPolicySpec{HTTP1: &v1alpha1.HTTP1Settings{AcceptHTTP10: true, DefaultHostForHTTP10: host("*.example.com")}},
			nil, "is not a host name"},
		{"access log off", v1alpha1.ListenerPolicySpec{AccessLog: &v1alpha1.AccessLogSettings{Disabled: true}},
			&listenerEffect{logOff: true}, ""},
		{"access log text gets a line feed", v1alpha1.ListenerPolicySpec{AccessLog: &v1alpha1.AccessLogSettings{Text: text("%RESPONSE_CODE%")}},
			&listenerEffect{client: ir.ClientSettings{AccessLog: &ir.AccessLogFormat{Text: "%RESPONSE_CODE%\n"}}}, ""},
		{"access log json sorted", v1alpha1.ListenerPolicySpec{AccessLog: &v1alpha1.AccessLogSettings{JSON: map[string]string{"z": "%PROTOCOL%", "a": "%REQ(:PATH)%"}}},
			&listenerEffect{client: ir.ClientSettings{AccessLog: &ir.AccessLogFormat{JSON: []ir.AccessLogField{{Name: "a", Format: "%REQ(:PATH)%"}, {Name: "z", Format: "%PROTOCOL%"}}}}}, ""},
		{"access log json bad", v1alpha1.ListenerPolicySpec{AccessLog: &v1alpha1.AccessLogSettings{JSON: map[string]string{"x": "%DYNAMIC_METADATA(a)%"}}},
			nil, `accessLog.json["x"]: %DYNAMIC_METADATA% is not a command operator`},
		{"access log two formats", v1alpha1.ListenerPolicySpec{AccessLog: &v1alpha1.AccessLogSettings{Text: text("%PROTOCOL%"), JSON: map[string]string{"a": "b"}}},
			nil, "at most one of disabled, text and json"},
		{"empty access log", v1alpha1.ListenerPolicySpec{AccessLog: &v1alpha1.AccessLogSettings{}},
			&listenerEffect{}, ""},
		{"http3", v1alpha1.ListenerPolicySpec{HTTP3: &v1alpha1.HTTP3Settings{}},
			&listenerEffect{client: ir.ClientSettings{HTTP3: &ir.HTTP3{}}}, ""},
		{"http3 with tls 1.3", v1alpha1.ListenerPolicySpec{HTTP3: &v1alpha1.HTTP3Settings{}, TLS: &v1alpha1.ListenerTLSSettings{MinVersion: v("1.3")}},
			&listenerEffect{client: ir.ClientSettings{HTTP3: &ir.HTTP3{}, TLS: &ir.ClientTLS{MinVersion: ir.TLS13}}}, ""},
		{"http3 with tls 1.2 at most", v1alpha1.ListenerPolicySpec{HTTP3: &v1alpha1.HTTP3Settings{}, TLS: &v1alpha1.ListenerTLSSettings{MaxVersion: v("1.2")}},
			nil, "http3: QUIC is TLS 1.3, which tls.maxVersion 1.2 refuses"},
		{"nothing", v1alpha1.ListenerPolicySpec{}, nil, "at least one of"},
		{"no targets", v1alpha1.ListenerPolicySpec{TargetRefs: []gwapiv1.LocalPolicyTargetReferenceWithSectionName{}, ProxyProtocol: &v1alpha1.ProxyProtocolSettings{}},
			nil, "targetRefs: 0 entries"},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := &policyState{}
			listenerPolicy(listenerPolicyOn(c.spec), st)
			if c.want == nil {
				if st.notAccepted == nil || st.notAccepted.reason != string(gwapiv1.PolicyReasonInvalid) || !strings.Contains(st.notAccepted.msg, c.msg) {
					t.Fatalf("got %+v effect %+v; want Invalid %q", st.notAccepted, st.effect, c.msg)
				}
				if st.effect != nil {
					t.Fatalf("an invalid policy has an effect: %+v", st.effect)
				}
				return
			}
			if st.notAccepted != nil {
				t.Fatalf("not accepted: %+v", st.notAccepted)
			}
			if got := st.effect.(*listenerEffect); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("effect %+v; want %+v", got, c.want)
			}
		})
	}
}

// TestApplyListenerPolicy: each field lands on the listeners whose
// protocol has it.
func TestApplyListenerPolicy(t *testing.T) {
	e := &listenerEffect{logOff: true, client: ir.ClientSettings{
		TLS: &ir.ClientTLS{MinVersion: ir.TLS13}, ProxyProtocol: &ir.ProxyProtocol{},
		ClientIP: &ir.ClientIPDetection{XFFNumTrustedHops: 1}, HTTP1: &ir.HTTP1Options{AcceptHTTP10: true},
		HTTP3: &ir.HTTP3{},
	}}
	st := &policyState{effect: e}
	term := &ir.ListenerTLS{Mode: ir.TLSTerminate}
	for _, c := range []struct {
		l     *ir.Listener
		want  ir.ClientSettings
		noLog bool
	}{
		{&ir.Listener{Protocol: ir.ProtocolHTTP}, ir.ClientSettings{ProxyProtocol: e.client.ProxyProtocol, ClientIP: e.client.ClientIP, HTTP1: e.client.HTTP1}, true},
		{&ir.Listener{Protocol: ir.ProtocolHTTPS, TLS: term}, e.client, true},
		{&ir.Listener{Protocol: ir.ProtocolTLS, TLS: term}, ir.ClientSettings{TLS: e.client.TLS, ProxyProtocol: e.client.ProxyProtocol}, false},
		{&ir.Listener{Protocol: ir.ProtocolTLS, TLS: &ir.ListenerTLS{Mode: ir.TLSPassthrough}}, ir.ClientSettings{ProxyProtocol: e.client.ProxyProtocol}, false},
		{&ir.Listener{Protocol: ir.ProtocolTCP}, ir.ClientSettings{ProxyProtocol: e.client.ProxyProtocol}, false},
		{&ir.Listener{Protocol: ir.ProtocolUDP}, ir.ClientSettings{}, false},
	} {
		applyListenerPolicy(st, nil, c.l)
		got := ir.ClientSettings{}
		if c.l.Client != nil {
			got = *c.l.Client
		}
		if !reflect.DeepEqual(got, c.want) || c.l.NoAccessLog != c.noLog {
			t.Errorf("%s: %+v noAccessLog %v; want %+v %v", c.l.Protocol, got, c.l.NoAccessLog, c.want, c.noLog)
		}
		if c.want == (ir.ClientSettings{}) && c.l.Client != nil {
			t.Errorf("%s: an empty Client is set", c.l.Protocol)
		}
	}
}

func TestValidateAccessLogFormat(t *testing.T) {
	for f, want := range map[string]string{
		"%REQ(:METHOD)% %REQ(X-ENVOY-ORIGINAL-PATH?:PATH):256% %PROTOCOL%\n": "",
		"[%START_TIME(%Y-%m-%dT%H:%M:%S.%3fZ)%] %RESPONSE_CODE%":             "",
		"%START_TIME%\t%BYTES_SENT%":                                         "",
		"plain text":                                                         "",
		"%RESP(content-type)% %TRAILER(grpc-status)%":                        "",
		"50%":                      "opens no command operator",
		"%%":                       "is not a command operator",
		"%REQ%":                    "REQ needs a header name",
		"%PROTOCOL(x)%":            "PROTOCOL takes no argument",
		"%FILTER_STATE(k)%":        "%FILTER_STATE% is not a command operator",
		"%REQ(a b)%":               `header "a b"`,
		"%RESPONSE_CODE%\n\n":      "a control character (0x0a)",
		"a\x00b":                   "a control character (0x00)",
		"%START_TIME(%Y)(x)%":      "is not a command operator",
		"%REQ(:PATH):999999%":      "is not a command operator",
		"%lower%":                  "is not a command operator",
		"%DOWNSTREAM_TLS_VERSION%": "",
	} {
		got := ValidateAccessLogFormat(f)
		if (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("%q: %q; want %q", f, got, want)
		}
	}
}
