package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/exec"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/identity"
	"github.com/xds-controller/xds-controller/pkg/standalone"
)

func newStandaloneCommand() *cobra.Command {
	cfg := standalone.Config{}
	var noEnvoy bool
	var edgeFile, pprofAddress string
	rl := standalone.RateLimitService{}
	cmd := &cobra.Command{
		Use:   "standalone --config PATH",
		Short: "Serve Gateway API YAML from files to a local Envoy, without Kubernetes",
		Long: `Reads GatewayClass, Gateway, ListenerSet, HTTPRoute, GRPCRoute, TLSRoute, TCPRoute,
UDPRoute, ReferenceGrant, IngressClass, Ingress, IngressClassParameters, Service,
EndpointSlice, Secret, XBackend and Pod objects from a YAML file or a folder, re-reads them on
change, serves the translated configuration over xDS (mutual TLS; the CA in the
state folder, Envoy's SVID renewed at half its lifetime through file-based SDS) and runs Envoy as a child process, restarting it if it
dies. Status conditions are printed as they change.

Services without EndpointSlices are reached at their spec.clusterIP, so a
local backend can be described as a Service with clusterIP 127.0.0.1.

The Ingresses of IngressClasses whose spec.controller is
xds-controller.dev/ingress-controller are served by the same Envoy on
--ingress-http-address, and on --ingress-https-address when one of them has
a usable spec.tls (docs/ingress.md).

Global rate limits go through the envoyproxy/ratelimit service
(docs/traffic-policy.md): --ratelimit-path runs it (hack/install-ratelimit.sh
builds one) against the Redis at --ratelimit-redis (--ratelimit-redis-server-path
starts a redis-server there too); or --ratelimit-config-dir points to the
RUNTIME_ROOT of a service run by someone else (CONFIG_TYPE=FILE,
RUNTIME_WATCH_ROOT=false), listening on --ratelimit-grpc-address. The
scope's limits (TrafficPolicy rateLimit.global) are written there, one file
per domain, at every change; without these flags such a policy is
Accepted=False (RateLimitServiceMissing).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !noEnvoy && cfg.EnvoyPath == "" {
				p, err := exec.LookPath("envoy")
				if err != nil {
					return fmt.Errorf("no envoy on PATH: install it (hack/install-envoy.sh prints one) and pass --envoy-path, or run with --no-envoy")
				}
				cfg.EnvoyPath = p
			}
			if noEnvoy {
				cfg.EnvoyPath = ""
			}
			if edgeFile != "" {
				b, err := os.ReadFile(edgeFile)
				if err != nil {
					return fmt.Errorf("--edge: %w", err)
				}
				cfg.Edge = &v1alpha1.EdgeSpec{}
				if err := yaml.UnmarshalStrict(b, cfg.Edge); err != nil {
					return fmt.Errorf("--edge %s: %w", edgeFile, err)
				}
			}
			var err error
			if cfg.DNSResolvers, err = gatewayapi.ParseDNSResolvers(cfg.DNSResolvers); err != nil {
				return fmt.Errorf("--dns-resolvers: %w", err)
			}
			if rl.Path != "" || rl.Dir != "" {
				cfg.RateLimit = &rl
			}
			cfg.Out = cmd.OutOrStdout()
			cfg.Log = slog.Default()
			if pprofAddress != "" {
				if err := servePprof(cmd.Context(), pprofAddress); err != nil {
					return fmt.Errorf("--pprof-address: %w", err)
				}
			}
			return standalone.Run(cmd.Context(), cfg)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&cfg.ConfigPath, "config", "c", "", "YAML file or folder of Gateway API objects (required)")
	f.StringVar(&cfg.StateDir, "state-dir", ".state/standalone", "folder for the CA, certificates, Envoy bootstrap and log")
	f.StringVar(&cfg.EnvoyPath, "envoy-path", "", "Envoy binary (default: envoy on PATH)")
	f.BoolVar(&noEnvoy, "no-envoy", false, "serve xDS only; run no Envoy")
	f.StringVar(&cfg.XDSAddress, "xds-address", "127.0.0.1:18000", "address of the xDS server")
	f.Uint32Var(&cfg.AdminPort, "admin-port", 9901, "Envoy admin port on 127.0.0.1")
	f.Uint32Var(&cfg.ReadinessPort, "readiness-port", 19001, "Envoy readiness port (GET /ready)")
	f.Uint32Var(&cfg.EnvoyMetricsPort, "envoy-metrics-port", 0, "Envoy's Prometheus metrics port on 127.0.0.1 (GET /stats/prometheus only; 0: none)")
	f.BoolVar(&cfg.RouteStats, "route-stats", false, "Envoy keeps statistics per route rule of every Gateway (GatewayParameters spec.metrics.routeStats in a cluster; docs/metrics.md)")
	f.StringVar(&edgeFile, "edge", "", "YAML file of a GatewayParameters spec.edge (timeouts, header and HTTP/2 limits, overload manager) for every Gateway and the Envoy (default: the hardened defaults; docs/edge.md)")
	f.StringSliceVar(&cfg.DNSResolvers, "dns-resolvers", nil, dnsResolversUsage)
	f.StringVar(&cfg.TrustDomain, "trust-domain", "xds-controller.local", "SPIFFE trust domain of the xDS channel")
	f.DurationVar(&cfg.SVIDLifetime, "svid-lifetime", identity.DefaultSVIDLifetime, "validity of Envoy's SVIDs (renewed at half of it, without restarting Envoy)")
	f.DurationVar(&cfg.Debounce, "debounce", 0, "wait this long after a file change before re-reading (default 50ms)")
	f.StringVar(&cfg.IngressHTTPAddress, "ingress-http-address", standalone.DefaultIngressHTTPAddress, "host:port where Envoy serves the Ingresses of our IngressClasses over HTTP")
	f.StringVar(&cfg.IngressHTTPSAddress, "ingress-https-address", standalone.DefaultIngressHTTPSAddress, "host:port where Envoy serves them over HTTPS (when an Ingress has spec.tls)")
	f.StringVar(&cfg.MetricsAddress, "metrics-address", "", `address of /metrics (Prometheus), e.g. 127.0.0.1:9090 ("" disables)`)
	f.StringVar(&rl.Path, "ratelimit-path", "", "run this envoyproxy/ratelimit service binary for global rate limits (hack/install-ratelimit.sh prints one; default: run none)")
	f.StringVar(&rl.GRPCAddress, "ratelimit-grpc-address", "127.0.0.1:18081", "ip:port of the rate-limit service's gRPC, where Envoy reaches it (and where --ratelimit-path listens)")
	f.StringVar(&rl.HTTPAddress, "ratelimit-http-address", "127.0.0.1:18082", "ip:port of the service's GET /healthcheck (--ratelimit-path)")
	f.StringVar(&rl.DebugAddress, "ratelimit-debug-address", "127.0.0.1:18083", "ip:port of the service's debug pages, GET /rlconfig among them (--ratelimit-path)")
	f.StringVar(&rl.Redis, "ratelimit-redis", "127.0.0.1:16379", "host:port of the Redis the service keeps its counters in (REDIS_URL; other REDIS_* variables of our environment reach the service)")
	f.StringVar(&rl.RedisServerPath, "ratelimit-redis-server-path", "", "start this redis-server on --ratelimit-redis, without persistence (hack/install-redis.sh prints one; default: Redis is run by someone else)")
	f.StringVar(&rl.Dir, "ratelimit-config-dir", "", "the service's RUNTIME_ROOT: the scope's limits are written in its config/ folder, one file per domain (default: <state-dir>/ratelimit)")
	f.StringVar(&pprofAddress, "pprof-address", "", `address of Go's /debug/pprof/ profiles, e.g. 127.0.0.1:6060 ("" disables; profiles reveal internals)`)
	_ = cmd.MarkFlagRequired("config")
	return cmd
}

// servePprof serves Go's /debug/pprof/ profiles (net/http/pprof) on
// address until ctx ends. It returns the listener's error at once, and
// nil when it listens.
func servePprof(ctx context.Context, address string) error {
	lis, err := net.Listen("tcp", address)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(lis) }()
	context.AfterFunc(ctx, func() { _ = srv.Close() })
	return nil
}

// dnsResolversUsage is the --dns-resolvers flag's help, the same in both
// modes.
const dnsResolversUsage = "DNS servers (ip or ip:port, comma-separated; port 53 by default) Envoy resolves the externalHostname of XBackends with, through its c-ares resolver (default: Envoy's default resolver, the host's /etc/resolv.conf)"
