package main

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/client/config"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/identity"
	"github.com/xds-controller/xds-controller/pkg/infra"
	"github.com/xds-controller/xds-controller/pkg/ingress"
	"github.com/xds-controller/xds-controller/pkg/provider/kubernetes"
	"github.com/xds-controller/xds-controller/pkg/provisioner"
	"github.com/xds-controller/xds-controller/pkg/proxystatus"
	"github.com/xds-controller/xds-controller/pkg/status"
)

func newControllerCommand() *cobra.Command {
	cfg := kubernetes.Config{}
	var kubeconfig string
	var createCA bool
	prov := provisioner.Options{}
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Run the Kubernetes controller: watch Gateway API objects, serve xDS, write status",
		Long: `Watches GatewayClasses of controllerName xds-controller.dev/gateway-controller,
their Gateways, their routes (HTTP, gRPC, TLS, TCP, UDP) and what they reference, translates them, serves
the result over xDS (mutual TLS; the CA is kept in the Secret xds-controller-ca
of --namespace, created when missing unless --create-ca=false), issues short-lived SVIDs to the Envoy
pods' agents (identity service: projected ServiceAccount token checked with
TokenReview, CSR), writes status conditions and
provisions the Envoy fleets that serve the Gateways (GatewayParameters mode
Shared: one fleet per GatewayClass in --namespace; Dedicated: one per
Gateway in its namespace). Envoy reaches the xDS server at
<--service-account>.<--namespace>.svc on the port of --xds-address.

With --watch-namespaces it reads and writes namespaced objects only in the
listed namespaces (and --namespace).

Every replica serves xDS; with --leader-elect only the elected leader writes
status and infrastructure (Lease xds-controller.dev in --namespace).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var rc *rest.Config
			var err error
			if kubeconfig != "" {
				rc, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
			} else {
				rc, err = ctrlconfig.GetConfig()
			}
			if err != nil {
				return fmt.Errorf("kubernetes client configuration: %w", err)
			}
			cfg.RestConfig = rc
			if cfg.DNSResolvers, err = gatewayapi.ParseDNSResolvers(cfg.DNSResolvers); err != nil {
				return fmt.Errorf("--dns-resolvers: %w", err)
			}
			if cfg.RateLimitService != "" {
				if _, err := gatewayapi.RateLimitServiceBackend(cfg.RateLimitService); err != nil {
					return fmt.Errorf("--ratelimit-service-address: %w", err)
				}
			}
			if !createCA {
				cfg.CASource = kubernetes.CAExternal
			}
			cfg.Log = slog.Default()
			if err := provisioner.Install(&cfg, prov); err != nil {
				return err
			}
			c, err := kubernetes.New(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			// xds_controller_proxies on /metrics, decided like proxy-status.
			if err := ctrlmetrics.Registry.Register(proxystatus.NewCollector(c.XDS().Report)); err != nil {
				return fmt.Errorf("registering xds_controller_proxies: %w", err)
			}
			// The process's and the Go runtime's own metrics (process_*,
			// go_*), which controller-runtime's registry does not carry.
			for _, col := range []prometheus.Collector{
				collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
				collectors.NewGoCollector(),
			} {
				if err := ctrlmetrics.Registry.Register(col); err != nil && !errors.As(err, new(prometheus.AlreadyRegisteredError)) {
					return fmt.Errorf("registering the process metrics: %w", err)
				}
			}
			return c.Start(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or in-cluster)")
	f.StringVar(&cfg.Namespace, "namespace", cmp.Or(os.Getenv("POD_NAMESPACE"), kubernetes.DefaultNamespace), "the controller's namespace (CA Secret, leader Lease, shared fleets)")
	f.StringSliceVar(&cfg.WatchNamespaces, "watch-namespaces", nil, "watch and provision only in these namespaces (comma-separated; --namespace is always added): objects elsewhere are ignored and references to them resolve as missing; RBAC then needs Roles in these namespaces only (the chart's watchNamespaces). Empty: every namespace")
	f.StringVar(&cfg.XDSAddress, "xds-address", kubernetes.DefaultXDSAddress, "address of the xDS server (mutual TLS)")
	f.StringVar(&cfg.IdentityAddress, "identity-address", kubernetes.DefaultIdentityAddress, "address of the identity service (TLS; Envoy pods trade their projected token and a CSR for an SVID)")
	f.DurationVar(&cfg.SVIDLifetime, "svid-lifetime", identity.DefaultSVIDLifetime, "validity of the SVIDs issued to Envoy pods (their agents renew them at half of it)")
	f.StringVar(&cfg.Audience, "token-audience", identity.DefaultAudience, "audience of the Envoy pods' projected ServiceAccount tokens")
	f.StringVar(&prov.AgentImage, "agent-image", infra.DefaultAgentImage, "image of the Envoy pods' SVID agent (this controller's image)")
	f.StringVar(&cfg.MetricsAddress, "metrics-address", ":8080", `address of /metrics ("0" disables)`)
	f.StringVar(&cfg.HealthAddress, "health-address", ":8081", `address of /healthz and /readyz ("0" disables)`)
	f.StringVar(&cfg.PprofAddress, "pprof-address", "", `address of Go's /debug/pprof/ profiles, e.g. 127.0.0.1:6060 ("" disables)`)
	f.BoolVar(&cfg.LeaderElect, "leader-elect", false, "elect a leader among replicas; only the leader writes status and infrastructure")
	f.BoolVar(&createCA, "create-ca", true, "create the CA Secret xds-controller-ca when missing; false waits for another writer (cert-manager) to create it")
	f.StringSliceVar(&cfg.DNSResolvers, "dns-resolvers", nil, dnsResolversUsage)
	f.StringVar(&cfg.RateLimitService, "ratelimit-service-address", "", "host:port of the global rate-limit service's gRPC (envoyproxy/ratelimit), which TrafficPolicy rateLimit.global goes through; empty: none, and such policies are Accepted=False (RateLimitServiceMissing)")
	f.StringVar(&cfg.TrustDomain, "trust-domain", kubernetes.DefaultTrustDomain, "SPIFFE trust domain of the xDS channel")
	f.DurationVar(&cfg.Debounce, "debounce", kubernetes.DefaultDebounce, "quiet time after a change before translating")
	f.DurationVar(&cfg.MaxDebounce, "max-debounce", kubernetes.DefaultMaxDebounce, "longest wait before translating while changes keep coming")
	f.Float32Var(&cfg.KubeAPIQPS, "kube-api-qps", kubernetes.DefaultKubeAPIQPS, "requests per second to the API server (client-side rate limit of every request)")
	f.IntVar(&cfg.KubeAPIBurst, "kube-api-burst", kubernetes.DefaultKubeAPIBurst, "burst of requests to the API server above --kube-api-qps")
	f.Float32Var(&cfg.StatusQPS, "status-qps", status.DefaultQPS, "status writes per second (within --kube-api-qps)")
	f.IntVar(&cfg.StatusBurst, "status-burst", status.DefaultBurst, "burst of status writes above --status-qps")
	f.IntVar(&cfg.StatusWorkers, "status-workers", status.DefaultWorkers, "objects whose status is written at once")
	f.StringVar(&cfg.ServiceAccount, "service-account", kubernetes.DefaultServiceAccount, "the controller's ServiceAccount (names the xDS server identity)")
	f.BoolVar(&prov.StateOfTheWorld, "sotw", false, "Envoy fleets subscribe with state-of-the-world ADS instead of delta ADS (which sends only the resources that changed)")
	f.StringVar(&prov.EnvoyImage, "envoy-image", infra.DefaultEnvoyImage, "Envoy image of the fleets whose GatewayParameters name none")
	f.StringVar(&cfg.Ingress.GatewayClass, "ingress-gateway-class", ingress.DefaultGatewayClass, "GatewayClass whose Envoy fleet serves the Ingresses of IngressClasses with controller "+ingress.ControllerName+" (their GatewayParameters overlay its parameters)")
	return cmd
}
