package gatewayapi

import (
	"slices"
	"testing"
)

// ParseDNSResolvers accepts IPv4 and IPv6 addresses with or without a
// port (53 by default) and refuses names, zones and port 0.
func TestParseDNSResolvers(t *testing.T) {
	got, err := ParseDNSResolvers([]string{"10.0.0.10", "127.0.0.1:5353", "::1", "[fd00::53]:5353"})
	if want := []string{"10.0.0.10:53", "127.0.0.1:5353", "[::1]:53", "[fd00::53]:5353"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("got %v, %v; want %v", got, err, want)
	}
	for _, bad := range []string{"dns.example.com", "10.0.0.1:0", "fe80::1%eth0", "10.0.0.1:99999", ""} {
		if got, err := ParseDNSResolvers([]string{bad}); err == nil {
			t.Errorf("%q: got %v, want an error", bad, got)
		}
	}
}
