package ir

import (
	"strings"
	"testing"
)

// TestValidateClient: ClientSettings that Envoy could not take, or that
// do not apply to the listener, are refused; a complete valid one passes.
func TestValidateClient(t *testing.T) {
	ok := valid()
	ok.Gateways[0].Listeners[0].Client = &ClientSettings{
		ProxyProtocol: &ProxyProtocol{Optional: true}, ClientIP: &ClientIPDetection{XFFNumTrustedHops: 1},
		HTTP1:     &HTTP1Options{AcceptHTTP10: true, DefaultHost: "a.example.com"},
		AccessLog: &AccessLogFormat{JSON: []AccessLogField{{Name: "a", Format: "%PROTOCOL%"}}},
	}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid client settings refused: %v", err)
	}
	for _, c := range []struct {
		name string
		c    ClientSettings
		want string
	}{
		{"TLS on HTTP", ClientSettings{TLS: &ClientTLS{MinVersion: TLS13}}, "only to a listener that terminates TLS"},
		{"TLS version", ClientSettings{TLS: &ClientTLS{MinVersion: "1.1"}}, "unknown TLS version"},
		{"TLS order", ClientSettings{TLS: &ClientTLS{MinVersion: TLS13, MaxVersion: TLS12}}, "minVersion above maxVersion"},
		{"two client IP sources", ClientSettings{ClientIP: &ClientIPDetection{XFFNumTrustedHops: 1, CustomHeader: "x-real-ip"}}, "exclusive"},
		{"default host without 1.0", ClientSettings{HTTP1: &HTTP1Options{DefaultHost: "a.example.com"}}, "needs acceptHTTP10"},
		{"no format", ClientSettings{AccessLog: &AccessLogFormat{}}, "exactly one of text and json"},
		{"two formats", ClientSettings{AccessLog: &AccessLogFormat{Text: "x\n", JSON: []AccessLogField{{Name: "a", Format: "b"}}}}, "exactly one"},
		{"HTTP/3 on HTTP", ClientSettings{HTTP3: &HTTP3{}}, "HTTP/3 applies only to HTTPS listeners"},
		{"HTTP/3 with TLS 1.2 at most", ClientSettings{HTTP3: &HTTP3{}, TLS: &ClientTLS{MaxVersion: TLS12}}, "maxVersion 1.2 refuses"},
		{"field twice", ClientSettings{AccessLog: &AccessLogFormat{JSON: []AccessLogField{{Name: "a", Format: "b"}, {Name: "a", Format: "c"}}}}, "distinct"},
	} {
		x := valid()
		x.Gateways[0].Listeners[0].Client = &c.c
		if err := x.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want %q", c.name, err, c.want)
		}
	}
}
