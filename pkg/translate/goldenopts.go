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
// (gatewayapi.Options.DNSResolvers) or "# proxyPorts: port,..."
// (gatewayapi.Options.ProxyPorts).
func GoldenOptions(input []byte) gatewayapi.Options {
	var opts gatewayapi.Options
	for _, line := range strings.Split(string(input), "\n") {
		if v, ok := strings.CutPrefix(line, "# dnsResolvers: "); ok {
			opts.DNSResolvers = strings.Split(strings.TrimSpace(v), ",")
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
