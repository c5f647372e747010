// Package xdstranslator renders the IR into Envoy xDS resources, one set per
// proxy scope, ready for go-control-plane's snapshot cache. Translate is
// pure: the same IR gives byte-identical resources, with deterministic names
// and order. It does not run the resources' protoc-gen-validate rules:
// pkg/xdsvalidate does, before anything is published.
//
// # Names: following one HTTPRoute into Envoy
//
//	IR                                     xDS
//	Gateway.Scope                          the key of the returned map (one snapshot)
//	Listener{Address, Port} (TCP-based)    Listener "listener/<address>/<port>"
//	Listener{Address, Port} (UDP)          Listener "listener/<address>/<port>/udp"
//	  HTTP listeners on that port          one filter chain "http", one HCM, RDS
//	                                       RouteConfiguration "listener/<address>/<port>"
//	  HTTPS listener <ns>/<gw>/<l>         filter chain "https/<ns>/<gw>/<l>" (SNI = hostname),
//	                                       RouteConfiguration "listener/<address>/<port>/<ns>/<gw>/<l>"
//	  TLS listener, route SNI <host>       filter chain "tls/<ns>/<gw>/<l>/<host>" ("*" without SNI),
//	                                       tcp_proxy; in mode Terminate with the listener's
//	                                       certificates (SDS) and no ALPN
//	  TCP listener                         filter chain "tcp/<ns>/<gw>/<l>"
//	HTTPRoute.Hostname                     VirtualHost "<ns>/<gw>/<l>/<hostname>" (dots as "_"),
//	                                       domains [hostname] ("*" for every host); the route
//	                                       configuration sets ignore_port_in_host_matching, so
//	                                       "Host: a.com:8080" matches domain "a.com" while the
//	                                       header is kept
//	HTTPRoute.Name                         Route.name "httproute/<ns>/<name>/rule/<i>/match/<j>"
//	HTTPRoute.Origin                       Resources.Origins: Route.name -> the object, rule and match
//	HTTPRoute.StatName                     Route.stat_prefix "httproute/<ns>/<name>/rule/<i>" (dots as "_")
//	Backend.Name                           Cluster and ClusterLoadAssignment "service/<ns>/<name>/<port>"
//	invalid Backend                        weighted cluster InvalidBackendCluster (never defined)
//	Certificate.Name                       Secret "<ns>/<secret>" (SDS over ADS), for listener
//	                                       certificates and backend client certificates alike
//
// So HTTPRoute default/web, rule 0, match 0, hostname a.com, attached to an
// HTTP listener on port 8080 is: Listener "listener/0.0.0.0/8080" -> HCM ->
// RouteConfiguration "listener/0.0.0.0/8080" -> VirtualHost
// "default/gw/http/a_com" ->
// Route "httproute/default/web/rule/0/match/0" -> Cluster
// "service/default/web/80" -> ClusterLoadAssignment of the same name.
//
// # Choices
//
//   - Virtual hosts: a route configuration holds one virtual host per
//     hostname. When several HTTP listeners share a port, a hostname's routes
//     come only from the most specific listener whose hostname covers it
//     (Gateway API listener precedence), and every listener hostname gets a
//     virtual host, empty if need be, so a request for it never falls
//     through to a less specific listener's routes. Virtual hosts are sorted
//     exact names first, then wildcards longest first, then "*".
//   - HTTP connection manager: use_remote_address, normalize_path,
//     merge_slashes, path_with_escaped_slashes_action UNESCAPE_AND_REDIRECT
//     (a path with %2F is redirected to its unescaped form, so routing and
//     backends see the same path), codec AUTO (HTTP/1.1 and HTTP/2 incl.
//     h2c), WebSocket upgrades allowed (for appProtocol kubernetes.io/ws
//     backends, GEP-1911), access log to stdout (unless every listener of
//     the chain has NoAccessLog), router last. The RBAC and CORS filters
//     are added only when a route of the chain uses them (httpfilters.go,
//     where a new HTTP filter goes).
//   - Stat names (names.go; docs/metrics.md maps each to the Gateway API):
//     a filter chain that serves one Gateway listener (the HCM of one HTTP
//     listener or of an HTTPS listener, a TLS chain's and a TCP listener's
//     tcp_proxy, udp_proxy) has the listener's name as stat_prefix,
//     "<ns>/<gw>/<listener>" (ListenerSet listeners
//     "<ns>/<gw>/<set ns>/<set>/<listener>"); the HCM that several HTTP
//     listeners share, and every Envoy listener, are named after their
//     Gateway and Gateway port, "<ns>/<gw>/port=<port>" ("/udp" appended
//     for UDP), or after the bind port ("port=<port>") when several
//     Gateways share it. Dots become "_" (Envoy's tag extraction splits at
//     "."). Route stat_prefix only where the IR asks (HTTPRoute.StatName)
//     and the route forwards.
//   - Listeners: per_connection_buffer_limit_bytes 32 KiB (Envoy's edge
//     recommendation), "::" with ipv4_compat so one listener serves both
//     families. HTTPS and TLS chains
//     match transport_protocol "tls" (tls_inspector), so plain text on a
//     TLS port is closed. The IR's ClientSettings (client.go) add the
//     PROXY protocol listener filter first, TLS parameters and ALPN per
//     chain, and connection manager options. When two TLS listeners or passthrough routes claim
//     one server name, the most specific listener wins, then IR order.
//   - PathPrefix "/foo" or "/foo/" is path_separated_prefix "/foo" (the
//     Gateway API ignores a trailing slash); "/" is prefix "/".
//   - Backends: one valid backend with weight is RouteAction.cluster;
//     otherwise weighted_clusters, zero weights dropped, invalid backends
//     pointing at InvalidBackendCluster with cluster_not_found_response_code
//     500, so exactly their share gets 500. All weights zero, or only invalid
//     backends: direct_response 500.
//   - Timeouts: RouteAction.timeout is the Request timeout (0 disables);
//     unset, Envoy's default (15s) applies unless BackendRequest is set, in
//     which case the route timeout is BackendRequest x (retries + 1). A
//     BackendRequest timeout is retry_policy.per_try_timeout.
//   - Retries: retry_on "connect-failure,refused-stream" plus
//     "retriable-status-codes" for the codes listed.
//   - Clusters: EDS over ADS with a ClusterLoadAssignment when every endpoint
//     is an IP address; STRICT_DNS with the endpoints inline (and no
//     ClusterLoadAssignment) when one is a host name. Connect timeout 10s,
//     round robin. HTTP/2 and h2c backends get explicit HTTP/2 protocol
//     options. Backend TLS verifies the SNI (or the SubjectAltNames) against
//     the inline CA bundle, or the system bundle at
//     /etc/ssl/certs/ca-certificates.crt for well-known CAs, and presents the
//     backend's client certificate, if any, from SDS (the cluster's name
//     carries the certificate's: ".../client-certificate/<ns>/<secret>").
//   - L4 backends are clusters of their own: "service/<ns>/<name>/<port>/tcp"
//     (TLSRoute, TCPRoute) and ".../udp" (UDPRoute, UDP endpoints).
//   - Idle timeouts of L4 routes are Envoy's defaults: tcp_proxy closes a
//     connection after 1 hour without bytes either way; udp_proxy ends a
//     client's session after 60 s without datagrams (the next one may pick
//     another backend). A TLS, TCP or UDP route (or the share of it) without
//     a valid backend goes to InvalidBackendCluster: Envoy closes the
//     connection (stat tcp.<prefix>.downstream_cx_no_route) or drops the
//     datagram (udp.<prefix>.downstream_sess_no_route); the listener and
//     other routes are untouched.
//   - UDP: udp_proxy with a matcher whose on_no_match routes to one cluster;
//     udp_proxy cannot split by weight, so the first valid backend with a
//     non-zero weight takes all datagrams.
//   - An IR listener that yields no filter chain (a TCP, TLS or UDP listener
//     without routes) yields nothing; when no chain is left for an address
//     and port, there is no Envoy listener there.
//   - Request header modifiers cannot touch pseudo-headers (":authority")
//     or "host"; Envoy rejects such configuration, so they are dropped here
//     (the Gateway API translator should refuse them with a status).
package xdstranslator

import (
	"cmp"
	"fmt"
	"slices"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

// Resources is the xDS configuration of one proxy scope, each list sorted
// by resource name.
type Resources struct {
	Listeners []types.Resource // *listenerv3.Listener
	Routes    []types.Resource // *routev3.RouteConfiguration
	Clusters  []types.Resource // *clusterv3.Cluster
	Endpoints []types.Resource // *endpointv3.ClusterLoadAssignment
	Secrets   []types.Resource // *tlsv3.Secret
	// Origins says what each route of Routes was made for (Origins.Of).
	Origins *Origins
}

// Translate renders x into xDS resources per scope (the IR Gateway Scope)
// from scratch (a translation of an empty Cache). x must have passed
// ir.IR.Validate. It fails when the IR holds what cannot be rendered,
// naming the resource.
func Translate(x *ir.IR) (map[string]*Resources, error) {
	return NewCache().Translate(x)
}

// bindKey is one address and port that Envoy binds.
type bindKey struct {
	address string
	port    uint32
	udp     bool
}

// scopeBuilder collects the IR listeners of one scope and the clusters and
// secrets they use, for one translation; cache is what the scope keeps
// from one translation to the next (cache.go).
type scopeBuilder struct {
	cache     *scopeCache
	binds     map[bindKey][]*ir.Listener
	bindOrder []bindKey
	// gateway is the Gateway of each IR listener, "<namespace>/<name>"
	// (stat names: sharedStatName).
	gateway map[*ir.Listener]string
	// weighted are the clusters that weigh several backends as localities
	// (UDP routes; udpProxyFilter), by name.
	weighted map[string][]*ir.Backend
	secrets  map[string]*ir.Certificate
	// generic are the SDS generic secrets of the chains' filters
	// (oauth2.go), by name.
	generic map[string]*tlsv3.Secret
	// configs are the route configurations rendered.
	configs map[string]bool
	// domain is the rate-limit service's domain of the scope
	// (ir.RateLimitDomain; ratelimit.go).
	domain string
}

func newScopeBuilder(cache *scopeCache) *scopeBuilder {
	return &scopeBuilder{
		cache:    cache,
		binds:    map[bindKey][]*ir.Listener{},
		gateway:  map[*ir.Listener]string{},
		weighted: map[string][]*ir.Backend{},
		secrets:  map[string]*ir.Certificate{},
		generic:  map[string]*tlsv3.Secret{},
		configs:  map[string]bool{},
	}
}

// addListener files IR listener l of Gateway gw under the address and port
// Envoy binds for it, and remembers gw for l's stat names.
func (s *scopeBuilder) addListener(gw *ir.Gateway, l *ir.Listener) {
	k := bindKey{address: l.Address, port: l.Port, udp: l.Protocol == ir.ProtocolUDP}
	s.gateway[l] = gw.Namespace + "/" + gw.Name
	if _, ok := s.binds[k]; !ok {
		s.bindOrder = append(s.bindOrder, k)
	}
	s.binds[k] = append(s.binds[k], l)
}

// useBackend records the cluster a valid backend of a listener (an L4
// route's) needs, and with it the SDS secret of the client certificate it
// presents. HTTP routes' backends are counted by their virtual hosts
// (cache.go).
func (s *scopeBuilder) useBackend(b *ir.Backend) {
	if b == nil || b.Invalid {
		return
	}
	s.cache.clusters.use(b)
}

// useSecret records the SDS secret of a certificate (names mean one
// content across the IR: ir.IR.Validate).
func (s *scopeBuilder) useSecret(c *ir.Certificate) {
	if _, ok := s.secrets[c.Name]; !ok {
		s.secrets[c.Name] = c
	}
}

func (s *scopeBuilder) build() (*Resources, error) {
	r := &Resources{Origins: &Origins{}}
	for _, k := range s.bindOrder {
		l, routes, err := s.listener(k, s.binds[k])
		if err != nil {
			return nil, fmt.Errorf("listener %s: %w", ListenerName(k.address, k.port, k.udp), err)
		}
		if l == nil {
			continue
		}
		r.Listeners = append(r.Listeners, l)
		for _, rc := range routes {
			r.Routes = append(r.Routes, rc)
			r.Origins.configs = append(r.Origins.configs, s.cache.configs[rc.Name].memos)
		}
	}
	s.sweep()
	clusters, endpoints, certs := s.cache.clusters.finish()
	for _, c := range certs {
		s.useSecret(c)
	}
	var weighted, weightedCLAs []types.Resource
	for _, name := range sortedKeys(s.weighted) {
		c, cla := weightedCluster(name, s.weighted[name])
		weighted = append(weighted, c)
		if cla != nil {
			weightedCLAs = append(weightedCLAs, cla)
		}
	}
	// The lists may be the cache's own (clusterStore.finish): copied
	// before anything is added.
	r.Clusters, r.Endpoints = mergeByName(clusters, weighted), mergeByName(endpoints, weightedCLAs)
	for _, name := range sortedKeys(s.secrets) {
		r.Secrets = append(r.Secrets, secret(s.secrets[name]))
	}
	for _, name := range sortedKeys(s.generic) {
		r.Secrets = append(r.Secrets, s.generic[name])
	}
	// protoc-gen-validate rules are checked once, by pkg/xdsvalidate, which
	// can trace a failure inside a route back to its HTTPRoute rule.
	// Clusters and endpoints are sorted already.
	for _, list := range [][]types.Resource{r.Listeners, r.Routes, r.Secrets} {
		slices.SortStableFunc(list, func(a, b types.Resource) int { return cmp.Compare(resourceName(a), resourceName(b)) })
	}
	return r, nil
}

func resourceName(r types.Resource) string {
	type named interface{ GetName() string }
	type clusterNamed interface{ GetClusterName() string }
	switch v := r.(type) {
	case named:
		return v.GetName()
	case clusterNamed:
		return v.GetClusterName()
	}
	return ""
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// toAny packs m deterministically.
func toAny(m proto.Message) *anypb.Any {
	a := &anypb.Any{}
	if err := anypb.MarshalFrom(a, m, proto.MarshalOptions{Deterministic: true}); err != nil {
		// Marshalling a well-formed generated message cannot fail.
		panic(fmt.Sprintf("xdstranslator: packing %T: %v", m, err))
	}
	return a
}
