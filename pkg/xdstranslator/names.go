package xdstranslator

import (
	"strconv"
	"strings"
)

// Reserved names. Nothing in the IR can produce them: IR backend names
// start with a kind ("service/...").
const (
	// InvalidBackendCluster is the cluster that the share of an invalid
	// backendRef is sent to. It never exists, so Envoy answers that share
	// with the route's cluster_not_found_response_code (500); a TCP or TLS
	// connection that picks it is closed.
	InvalidBackendCluster = "xds-controller/invalid-backend"

	// Envoy extension names (the names are free-form labels; the typed
	// config's type URL selects the extension).
	filterHCM         = "envoy.filters.network.http_connection_manager"
	filterTCPProxy    = "envoy.filters.network.tcp_proxy"
	filterUDPProxy    = "envoy.filters.udp_listener.udp_proxy"
	filterTLSInspect  = "envoy.filters.listener.tls_inspector"
	filterRouter      = "envoy.filters.http.router"
	filterCORS        = "envoy.filters.http.cors"
	transportTLS      = "envoy.transport_sockets.tls"
	accessLogStdout   = "envoy.access_loggers.stdout"
	httpProtocolOpts  = "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"
	udpRouteAction    = "route"
	wellKnownCABundle = "/etc/ssl/certs/ca-certificates.crt"
)

// ListenerName is the Envoy listener (and, for HTTP, route configuration)
// that serves address:port: "listener/<address>/<port>", with "/udp"
// appended for a UDP listener.
func ListenerName(address string, port uint32, udp bool) string {
	n := "listener/" + address + "/" + strconv.FormatUint(uint64(port), 10)
	if udp {
		n += "/udp"
	}
	return n
}

// HTTPSRouteConfigName is the route configuration of the HTTPS IR listener
// irListener on the Envoy listener envoyListener:
// "<envoy listener>/<ir listener>", e.g.
// "listener/0.0.0.0/443/default/gw/https".
func HTTPSRouteConfigName(envoyListener, irListener string) string {
	return envoyListener + "/" + irListener
}

// statPrefix turns a name into a stat prefix without the characters that
// Envoy's stat tag extraction splits on.
func statPrefix(parts ...string) string {
	s := strings.Join(parts, "_")
	return strings.NewReplacer(".", "_", ":", "_", "/", "_").Replace(s)
}

// listenerStatPrefix names a listener in stats: "port_<port>" for the
// wildcard addresses, "<address>_<port>" otherwise, with "_udp" for UDP.
func listenerStatPrefix(k bindKey) string {
	p := "port_" + strconv.FormatUint(uint64(k.port), 10)
	if k.address != "0.0.0.0" && k.address != "::" {
		p = statPrefix(k.address, strconv.FormatUint(uint64(k.port), 10))
	}
	if k.udp {
		p += "_udp"
	}
	return p
}

// WeightedClusterName names the cluster that weighs the backends of the
// route routeName (an IR L4 route name, "udproute/<ns>/<name>") as
// localities: "weighted/<routeName>".
func WeightedClusterName(routeName string) string { return "weighted/" + routeName }
