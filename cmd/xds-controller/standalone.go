package main

import (
	"fmt"
	"log/slog"
	"os/exec"

	"github.com/spf13/cobra"

	"github.com/xds-controller/xds-controller/pkg/identity"
	"github.com/xds-controller/xds-controller/pkg/standalone"
)

func newStandaloneCommand() *cobra.Command {
	cfg := standalone.Config{}
	var noEnvoy bool
	cmd := &cobra.Command{
		Use:   "standalone --config PATH",
		Short: "Serve Gateway API YAML from files to a local Envoy, without Kubernetes",
		Long: `Reads GatewayClass, Gateway, ListenerSet, HTTPRoute, GRPCRoute, TLSRoute, TCPRoute,
UDPRoute, ReferenceGrant, Service,
EndpointSlice and Secret objects from a YAML file or a folder, re-reads them on
change, serves the translated configuration over xDS (mutual TLS; the CA in the
state folder, Envoy's SVID renewed at half its lifetime through file-based SDS) and runs Envoy as a child process, restarting it if it
dies. Status conditions are printed as they change.

Services without EndpointSlices are reached at their spec.clusterIP, so a
local backend can be described as a Service with clusterIP 127.0.0.1.`,
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
			cfg.Out = cmd.OutOrStdout()
			cfg.Log = slog.Default()
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
	f.StringVar(&cfg.TrustDomain, "trust-domain", "xds-controller.local", "SPIFFE trust domain of the xDS channel")
	f.DurationVar(&cfg.SVIDLifetime, "svid-lifetime", identity.DefaultSVIDLifetime, "validity of Envoy's SVIDs (renewed at half of it, without restarting Envoy)")
	f.DurationVar(&cfg.Debounce, "debounce", 0, "wait this long after a file change before re-reading (default 50ms)")
	f.StringVar(&cfg.MetricsAddress, "metrics-address", "", `address of /metrics (Prometheus), e.g. 127.0.0.1:9090 ("" disables)`)
	_ = cmd.MarkFlagRequired("config")
	return cmd
}
