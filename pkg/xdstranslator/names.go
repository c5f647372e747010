package xdstranslator

import (
	"strconv"
	"strings"

	"github.com/xds-controller/xds-controller/pkg/ir"
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

// Stat names. Envoy splits a stat name into elements at "." and its tag
// extraction (the labels of /stats/prometheus) takes one element per
// label: "http.<prefix>.downstream_rq_xx" gives
// envoy_http_conn_manager_prefix="<prefix>". So every name below is one
// element: statSafe turns the dots of Kubernetes names into "_", which no
// Kubernetes name contains, so the mapping back is unambiguous. "/"
// separates the parts, as in the IR's names, and "=" marks a name that
// is not a Gateway listener's (no Kubernetes name contains either).
// Envoy 1.40 limits neither a stat name's length nor the length of an
// element (its old --max-obj-name-len is gone); the longest name here is
// that of a ListenerSet listener, under 900 characters.

// statSafe returns s with every character other than an ASCII letter or
// digit, "-", "_", "/", "*" and "=" replaced by "_": "." (Envoy's element
// separator) and ":" (which Envoy itself turns into "_" in listener stat
// prefixes) above all. Kubernetes names (namespaces, Gateways, listener
// section names, routes) differ only by their dots there, so two distinct
// valid names stay distinct.
func statSafe(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9',
			r == '-', r == '_', r == '/', r == '*', r == '=':
			return r
		}
		return '_'
	}, s)
}

// listenerStatName names one Gateway listener in stats: its IR name made
// stat-safe, "<namespace>/<gateway>/<listener>", or for a listener of a
// ListenerSet "<namespace>/<gateway>/<set namespace>/<set>/<listener>".
// It is the stat_prefix of every filter chain that serves that listener
// alone (HTTP connection manager, tcp_proxy, udp_proxy).
func listenerStatName(il *ir.Listener) string { return statSafe(il.Name) }

// sharedStatName names in stats what serves the IR listeners ls of the
// Envoy listener k together: the Envoy listener itself (Listener
// stat_prefix), and the HTTP connection manager of several HTTP listeners
// on one port. gateway maps an IR listener to its Gateway,
// "<namespace>/<name>". When every listener is of one Gateway and one
// Gateway port (always so with a provisioner: each Gateway port gets a
// bind port of its own) the name is "<namespace>/<gateway>/port=<gateway
// port>"; else, several Gateways sharing the bind port (standalone mode),
// it is the bind port's: "port=<port>", or "<address>/port=<port>" for a
// specific address. "/udp" is appended for a UDP listener, so that the
// TCP and UDP Envoy listeners of one port keep apart.
func sharedStatName(k bindKey, ls []*ir.Listener, gateway map[*ir.Listener]string) string {
	n := ""
	if len(ls) > 0 {
		gw, port := gateway[ls[0]], ls[0].GatewayPort
		for _, l := range ls[1:] {
			if gateway[l] != gw || l.GatewayPort != port {
				gw = ""
				break
			}
		}
		if gw != "" {
			n = gw + "/port=" + strconv.FormatUint(uint64(port), 10)
		}
	}
	if n == "" {
		n = "port=" + strconv.FormatUint(uint64(k.port), 10)
		if k.address != "0.0.0.0" && k.address != "::" {
			n = k.address + "/" + n
		}
	}
	if k.udp {
		n += "/udp"
	}
	return statSafe(n)
}

// httpStatName is the stat_prefix of the HTTP connection manager that
// serves the HTTP listeners ls of the Envoy listener k: the Gateway
// listener's name when there is one (listenerStatName), else their
// shared name (sharedStatName).
func httpStatName(k bindKey, ls []*ir.Listener, gateway map[*ir.Listener]string) string {
	if len(ls) == 1 {
		return listenerStatName(ls[0])
	}
	return sharedStatName(k, ls, gateway)
}

// virtualHostName names the virtual host of hostname host ("*" for every
// host) that the Gateway listener owner serves; Envoy roots route
// statistics there ("vhost.<name>.route.<route stat prefix>."; Prometheus
// label envoy_virtual_host): "<listener stat name>/<host>", e.g.
// "default/gw/http/a_example_com", "default/gw/http/*_example_com",
// "default/gw/http/*".
func virtualHostName(owner *ir.Listener, host string) string {
	return listenerStatName(owner) + "/" + statSafe(host)
}

// routeStatName is the Envoy Route stat_prefix of an IR route whose
// StatName is set: StatName made stat-safe,
// "<kind>/<namespace>/<name>/rule/<i>" (Prometheus label envoy_route).
func routeStatName(r *ir.HTTPRoute) string { return statSafe(r.StatName) }

// WeightedClusterName names the cluster that weighs the backends of the
// route routeName (an IR L4 route name, "udproute/<ns>/<name>") as
// localities: "weighted/<routeName>".
func WeightedClusterName(routeName string) string { return "weighted/" + routeName }
