package translate

import (
	"strconv"
	"strings"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
)

// GoldenOptions are the translation options of a golden case (the input
// YAML of testdata/NN-*.in.yaml), for the tests that translate the golden
// cases (this package's, and Envoy's validation of their output): none,
// but for a comment line "# dnsResolvers: ip:port,..."
// (gatewayapi.Options.DNSResolvers), "# proxyPorts: port,..."
// (gatewayapi.Options.ProxyPorts), "# secretKey: text"
// (gatewayapi.Options.SecretKey), "# rateLimitService: host:port"
// (gatewayapi.Options.RateLimitService) or "# oidcProvider: issuer
// authorization-URL token-URL [end-session-URL]" or "# oidcProvider:
// issuer error message..." (gatewayapi.Options.OIDCProviders, CA none).
func GoldenOptions(input []byte) gatewayapi.Options {
	var opts gatewayapi.Options
	for _, line := range strings.Split(string(input), "\n") {
		if v, ok := strings.CutPrefix(line, "# dnsResolvers: "); ok {
			opts.DNSResolvers = strings.Split(strings.TrimSpace(v), ",")
		}
		if v, ok := strings.CutPrefix(line, "# rateLimitService: "); ok {
			opts.RateLimitService = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(line, "# secretKey: "); ok {
			opts.SecretKey = []byte(strings.TrimSpace(v))
		}
		if v, ok := strings.CutPrefix(line, "# oidcProvider: "); ok {
			// issuer authorization-URL token-URL [end-session-URL], or
			// issuer "error" message...
			f := strings.Fields(v)
			if len(f) >= 3 {
				if opts.OIDCProviders == nil {
					opts.OIDCProviders = map[string]gatewayapi.OIDCProvider{}
				}
				p := gatewayapi.OIDCProvider{AuthorizationEndpoint: f[1], TokenEndpoint: f[2]}
				if len(f) > 3 {
					p.EndSessionEndpoint = f[3]
				}
				if f[1] == "error" {
					p = gatewayapi.OIDCProvider{Error: strings.Join(f[2:], " ")}
				}
				opts.OIDCProviders[gatewayapi.OIDCDiscoveryKey(f[0], nil)] = p
			}
		}
		if v, ok := strings.CutPrefix(line, "# proxyPorts: "); ok {
			for _, p := range strings.Split(strings.TrimSpace(v), ",") {
				if n, err := strconv.ParseUint(p, 10, 32); err == nil {
					opts.ProxyPorts = append(opts.ProxyPorts, uint32(n))
				}
			}
		}
	}
	return opts
}
