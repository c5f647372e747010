package kubernetes

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/rand"
	authv1client "k8s.io/client-go/kubernetes/typed/authentication/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/identity"
	"github.com/xds-controller/xds-controller/pkg/ingress"
	"github.com/xds-controller/xds-controller/pkg/quarantine"
	"github.com/xds-controller/xds-controller/pkg/resources"
	"github.com/xds-controller/xds-controller/pkg/status"
	"github.com/xds-controller/xds-controller/pkg/xdsserver"
)

// Defaults.
const (
	DefaultNamespace        = "xds-controller-system"
	DefaultServiceAccount   = "xds-controller"
	DefaultLeaderElectionID = "xds-controller.dev"
	DefaultXDSAddress       = ":18000"
	DefaultIdentityAddress  = ":18443"
	DefaultTrustDomain      = "cluster.local"
	DefaultDebounce         = 100 * time.Millisecond
	DefaultMaxDebounce      = time.Second
	DefaultKubeAPIQPS       = 300
	DefaultKubeAPIBurst     = 600
)

// Config is what `xds-controller serve controller` takes.
type Config struct {
	// RestConfig reaches the API server.
	RestConfig *rest.Config
	// Namespace is the controller's own namespace: the CA Secret, the
	// leader election Lease and the shared fleets live there.
	Namespace string
	// WatchNamespaces, when not empty, are the only namespaces whose
	// objects the controller reads, translates, writes status on and
	// provisions fleets in (the chart's watchNamespaces, which grants it
	// Roles there instead of a ClusterRole); Default adds Namespace. The
	// informer caches watch these namespaces only
	// (cache.Options.DefaultNamespaces), so the objects of any other
	// namespace are not seen: a reference into one resolves as missing.
	// Cluster-scoped objects (GatewayClasses, IngressClasses, Namespaces)
	// are still read cluster-wide. Empty: every namespace.
	WatchNamespaces []string
	// ServiceAccount is the controller's; it names the xDS server's SPIFFE
	// ID and DNS names. Default "xds-controller".
	ServiceAccount string
	// XDSAddress is where the xDS server listens (default ":18000").
	XDSAddress string
	// IdentityAddress is where the identity service listens (default
	// ":18443").
	IdentityAddress string
	// Audience the proxies' tokens must be bound to (default
	// identity.DefaultAudience).
	Audience string
	// SVIDLifetime is the validity of the proxies' SVIDs (default
	// identity.DefaultSVIDLifetime).
	SVIDLifetime time.Duration
	// MetricsAddress and HealthAddress serve /metrics and /healthz,
	// /readyz; "0" or "" disables them.
	MetricsAddress string
	HealthAddress  string
	// PprofAddress, when set, serves Go's /debug/pprof/ profiles
	// (controller-runtime's manager.Options.PprofBindAddress); "" or "0"
	// disables it. Off by default: profiles reveal internals.
	PprofAddress string
	// LeaderElect enables leader election; without it this replica always
	// leads (one replica only!).
	LeaderElect bool
	// LeaderElectionID names the Lease (default "xds-controller.dev").
	LeaderElectionID string
	// LeaderIdentity is this replica's name in the Lease (default
	// hostname_random).
	LeaderIdentity string
	// LeaseDuration, RenewDeadline, RetryPeriod: controller-runtime's
	// defaults (15s, 10s, 2s) when zero.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// ReplicaName names this replica's data-plane report, the ConfigMap
	// ReportName(ReplicaName) in Namespace (peers.go), and the Pod that
	// owns it when one of that name exists in Namespace. Default: the
	// environment's POD_NAME, else LeaderIdentity.
	ReplicaName string
	// ReportInterval is the least time between two writes of the report
	// (default DefaultReportInterval, 500ms).
	ReportInterval time.Duration
	// TrustDomain of the xDS channel's SPIFFE IDs (default cluster.local).
	TrustDomain string
	// CASource says whether the controller creates its CA Secret or waits
	// for cert-manager to write it (CASecretName).
	CASource CASource
	// Debounce is the quiet time after a change before a translation;
	// MaxDebounce bounds the wait while changes keep coming.
	Debounce, MaxDebounce time.Duration
	// ControllerName is ours (default gatewayapi.ControllerName).
	ControllerName gwapiv1.GatewayController
	// StatusQPS and StatusBurst limit status writes, StatusWorkers says
	// how many objects are written at once (defaults status.DefaultQPS,
	// DefaultBurst, DefaultWorkers: 200 per second, 400, 8).
	StatusQPS     float32
	StatusBurst   int
	StatusWorkers int
	// KubeAPIQPS and KubeAPIBurst are the client's rate limit towards the
	// API server for every request of this replica (rest.Config QPS and
	// Burst; defaults DefaultKubeAPIQPS and DefaultKubeAPIBurst, replacing
	// client-go's 5 and 10). Status writes are limited further by
	// StatusQPS.
	KubeAPIQPS   float32
	KubeAPIBurst int
	// GracefulShutdownTimeout bounds the shutdown (default 30s).
	GracefulShutdownTimeout time.Duration
	// AddToScheme registers the types of Hooks.Watches.
	AddToScheme func(*runtime.Scheme) error
	// Hooks plug in pkg/infra.
	Hooks Hooks
	// Ingress places the Ingresses of our IngressClasses (pkg/ingress) on
	// the fleets: Default sets its Namespace to Namespace (where the Service
	// of a class without GatewayParameters lives), its GatewayClass to
	// ingress.DefaultGatewayClass when unset, and RequireGatewayClass.
	Ingress ingress.Config
	// DNSResolvers are the DNS servers ("ip:port") the Envoy fleets
	// resolve the host names of XBackends of type ExternalHostname with
	// (gatewayapi.Options.DNSResolvers). Empty: Envoy's default resolver
	// (the pod's /etc/resolv.conf, the cluster's DNS).
	DNSResolvers []string
	// RateLimitService is the global rate-limit service's gRPC address,
	// "host:port" (gatewayapi.Options.RateLimitService), that the
	// TrafficPolicies' global limits go through. Empty: none, and such
	// policies are Accepted=False.
	RateLimitService string
	// Log receives operational messages (default slog.Default()).
	Log *slog.Logger
}

// Default fills the unset fields with their defaults, as New does (it is
// idempotent): hooks that derive settings from the Config call it first.
func (c *Config) Default() error { return c.defaults() }

func (c *Config) defaults() error {
	if c.RestConfig == nil {
		return errors.New("no Kubernetes client configuration")
	}
	c.Namespace = cmp.Or(c.Namespace, os.Getenv("POD_NAMESPACE"), DefaultNamespace)
	c.ServiceAccount = cmp.Or(c.ServiceAccount, DefaultServiceAccount)
	c.XDSAddress = cmp.Or(c.XDSAddress, DefaultXDSAddress)
	c.IdentityAddress = cmp.Or(c.IdentityAddress, DefaultIdentityAddress)
	c.Audience = cmp.Or(c.Audience, identity.DefaultAudience)
	c.SVIDLifetime = cmp.Or(c.SVIDLifetime, identity.DefaultSVIDLifetime)
	c.LeaderElectionID = cmp.Or(c.LeaderElectionID, DefaultLeaderElectionID)
	if c.LeaderIdentity == "" {
		host, _ := os.Hostname()
		c.LeaderIdentity = cmp.Or(host, "xds-controller") + "_" + rand.String(8)
	}
	c.ReplicaName = cmp.Or(c.ReplicaName, os.Getenv("POD_NAME"), c.LeaderIdentity)
	c.ReportInterval = cmp.Or(c.ReportInterval, DefaultReportInterval)
	c.LeaseDuration = cmp.Or(c.LeaseDuration, 15*time.Second)
	c.RenewDeadline = cmp.Or(c.RenewDeadline, 10*time.Second)
	c.RetryPeriod = cmp.Or(c.RetryPeriod, 2*time.Second)
	c.TrustDomain = cmp.Or(c.TrustDomain, DefaultTrustDomain)
	c.Debounce = cmp.Or(c.Debounce, DefaultDebounce)
	c.MaxDebounce = max(cmp.Or(c.MaxDebounce, DefaultMaxDebounce), c.Debounce)
	c.ControllerName = cmp.Or(c.ControllerName, gatewayapi.ControllerName)
	c.KubeAPIQPS = cmp.Or(c.KubeAPIQPS, DefaultKubeAPIQPS)
	c.KubeAPIBurst = cmp.Or(c.KubeAPIBurst, DefaultKubeAPIBurst)
	if c.RestConfig.QPS != c.KubeAPIQPS || c.RestConfig.Burst != c.KubeAPIBurst {
		rc := rest.CopyConfig(c.RestConfig)
		rc.QPS, rc.Burst = c.KubeAPIQPS, c.KubeAPIBurst
		c.RestConfig = rc
	}
	c.GracefulShutdownTimeout = cmp.Or(c.GracefulShutdownTimeout, 30*time.Second)
	c.Ingress = IngressConfig(c.Namespace, c.Ingress)
	if len(c.WatchNamespaces) > 0 {
		c.WatchNamespaces = append(slices.Clone(c.WatchNamespaces), c.Namespace)
		slices.Sort(c.WatchNamespaces)
		c.WatchNamespaces = slices.Compact(c.WatchNamespaces)
		if i := slices.Index(c.WatchNamespaces, ""); i >= 0 {
			return errors.New("an empty name among the namespaces to watch")
		}
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
	return nil
}

// Watches reports whether the controller reads the objects of namespace ns
// (every namespace when WatchNamespaces is empty).
func (c *Config) Watches(ns string) bool {
	return len(c.WatchNamespaces) == 0 || slices.Contains(c.WatchNamespaces, ns)
}

// registerAll returns a function that registers cs with a Registerer,
// stopping at the first error.
func registerAll(cs []prometheus.Collector) func(prometheus.Registerer) error {
	return func(reg prometheus.Registerer) error {
		for _, c := range cs {
			if err := reg.Register(c); err != nil {
				return err
			}
		}
		return nil
	}
}

// setLoggerOnce sets controller-runtime's global logger (client-go's
// reflectors log through it) from the first replica's logger.
var setLoggerOnce sync.Once

// Controller is one replica of the controller.
type Controller struct {
	cfg    Config
	mgr    manager.Manager
	srv    *xdsserver.Server
	writer *status.Writer
	leader *leadership
	ident  *Identity
	pipe   *pipeline
	xdsLis net.Listener
	idLis  net.Listener
}

// Scheme returns the scheme the controller reads with: client-go's types,
// Gateway API v1 and v1beta1, and our parameters CRDs.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := resources.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}

// New sets up a replica: it reads (or creates) the CA Secret, issues the
// xDS server certificate, binds the xDS listener and builds the manager.
// Nothing runs until Start.
func New(ctx context.Context, cfg Config) (*Controller, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	scheme, err := Scheme()
	if err != nil {
		return nil, err
	}
	if cfg.AddToScheme != nil {
		if err := cfg.AddToScheme(scheme); err != nil {
			return nil, err
		}
	}
	direct, err := client.New(cfg.RestConfig, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	ident, err := LoadOrCreateIdentity(ctx, direct, cfg.Namespace, cfg.ServiceAccount, cfg.TrustDomain, cfg.CASource, cfg.SVIDLifetime)
	if err != nil {
		return nil, err
	}

	setLoggerOnce.Do(func() { ctrllog.SetLogger(logr.FromSlogHandler(cfg.Log.Handler())) })
	leader := &leadership{}
	opts := manager.Options{
		Scheme:                  scheme,
		Logger:                  logr.FromSlogHandler(cfg.Log.Handler()),
		Metrics:                 metricsserver.Options{BindAddress: cmp.Or(cfg.MetricsAddress, "0")},
		HealthProbeBindAddress:  cmp.Or(cfg.HealthAddress, "0"),
		PprofBindAddress:        cmp.Or(cfg.PprofAddress, "0"),
		GracefulShutdownTimeout: &cfg.GracefulShutdownTimeout,
		Cache:                   cacheOptions(cfg.Hooks.Cache, cfg.WatchNamespaces),
		Client: client.Options{Cache: &client.CacheOptions{
			// Never cache full Secrets or ConfigMaps, whoever reads them.
			DisableFor: []client.Object{&corev1.Secret{}, &corev1.ConfigMap{}},
		}},
	}
	if cfg.LeaderElect {
		lock, err := resourcelock.NewFromKubeconfig(resourcelock.LeasesResourceLock, cfg.Namespace, cfg.LeaderElectionID,
			resourcelock.ResourceLockConfig{Identity: cfg.LeaderIdentity}, cfg.RestConfig, cfg.RenewDeadline)
		if err != nil {
			return nil, fmt.Errorf("leader election lock: %w", err)
		}
		leader.guard = &leaseGuard{Interface: lock, valid: cfg.RenewDeadline}
		opts.LeaderElection = true
		opts.LeaderElectionID = cfg.LeaderElectionID
		opts.LeaderElectionNamespace = cfg.Namespace
		opts.LeaderElectionResourceLockInterface = leader.guard
		opts.LeaderElectionReleaseOnCancel = true
		opts.LeaseDuration, opts.RenewDeadline, opts.RetryPeriod = &cfg.LeaseDuration, &cfg.RenewDeadline, &cfg.RetryPeriod
	}
	mgr, err := manager.New(cfg.RestConfig, opts)
	if err != nil {
		return nil, err
	}

	srv := xdsserver.New(cfg.Log)
	writer := status.NewWriter(mgr.GetClient(), mgr.GetAPIReader(), status.Options{
		ControllerName: cfg.ControllerName,
		Leading:        leader.Leading,
		QPS:            cfg.StatusQPS,
		Burst:          cfg.StatusBurst,
		Workers:        cfg.StatusWorkers,
		Log:            cfg.Log,
	})
	c := &Controller{cfg: cfg, mgr: mgr, srv: srv, writer: writer, leader: leader, ident: ident}
	c.pipe = &pipeline{
		cfg:        &c.cfg,
		log:        cfg.Log,
		cache:      mgr.GetCache(),
		client:     mgr.GetClient(),
		api:        mgr.GetAPIReader(),
		srv:        srv,
		writer:     writer,
		leader:     leader,
		ident:      ident,
		secrets:    newSecretCache(mgr.GetAPIReader(), mgr.GetCache()),
		configMaps: newConfigMapCache(mgr.GetAPIReader(), mgr.GetCache()),
		kick:       make(chan struct{}, 1),
		objects:    newObjectIndex(),
		changes:    srv.Subscribe(),
		events:     mgr.GetEventRecorder("xds-controller"),
		quarantine: quarantine.New(cfg.Log),
	}
	// Our metrics (docs/metrics.md) on the manager's /metrics. A second
	// controller in one process (tests) finds them registered already and
	// keeps its own unexported.
	c.pipe.metrics = newPipelineMetrics()
	for what, register := range map[string]func(prometheus.Registerer) error{
		"xDS":      srv.Register,
		"status":   writer.Register,
		"pipeline": registerAll(c.pipe.metrics.collectors()),
	} {
		if err := register(ctrlmetrics.Registry); err != nil {
			cfg.Log.Debug("metrics not registered", "which", what, "error", err)
		}
	}
	if cfg.Hooks.Provisioner != nil {
		c.pipe.prov = newProvisionLoop(cfg.Hooks.Provisioner, leader, cfg.Log)
	}

	// The Pods of EndpointSelector XBackends, from a cache of their own
	// (pods.go), on every replica.
	podOpts := podCacheOptions(cfg.WatchNamespaces)
	podOpts.Scheme, podOpts.Mapper = mgr.GetScheme(), mgr.GetRESTMapper()
	if c.pipe.pods, err = cache.New(cfg.RestConfig, podOpts); err != nil {
		return nil, fmt.Errorf("pod cache: %w", err)
	}
	if err := mgr.Add(everywhere(c.pipe.pods.Start)); err != nil {
		return nil, err
	}

	// The Opaque Secrets of SecurityPolicies, from a cache of their own
	// (credentials.go), on every replica; the Secret cache reads the
	// referenced ones in full.
	credOpts := credentialCacheOptions(cfg.WatchNamespaces)
	credOpts.Scheme, credOpts.Mapper = mgr.GetScheme(), mgr.GetRESTMapper()
	if c.pipe.credentials, err = cache.New(cfg.RestConfig, credOpts); err != nil {
		return nil, fmt.Errorf("credential Secret cache: %w", err)
	}
	if err := mgr.Add(everywhere(c.pipe.credentials.Start)); err != nil {
		return nil, err
	}
	c.pipe.secrets.meta = append(c.pipe.secrets.meta, c.pipe.credentials)

	// The other replicas' data-plane reports, from a cache of their
	// ConfigMaps only (the manager's caches ConfigMaps as metadata).
	peerOpts := peerCacheOptions(cfg.Namespace)
	peerOpts.Scheme, peerOpts.Mapper = mgr.GetScheme(), mgr.GetRESTMapper()
	peerCache, err := cache.New(cfg.RestConfig, peerOpts)
	if err != nil {
		return nil, fmt.Errorf("data-plane report cache: %w", err)
	}
	// Every replica reads its peers' reports (a NACK seen by one replica's
	// proxy is withdrawn by all): a cache with DefaultNamespaces is
	// controller-runtime's multi-namespace cache, which does not say
	// NeedLeaderElection false, so mgr.Add alone would start it on the
	// leader only, as it did the CA cache's.
	if err := mgr.Add(everywhere(peerCache.Start)); err != nil {
		return nil, err
	}
	reportName := ReportName(cfg.ReplicaName)

	// The CA Secret and the record of retired CAs (carotation.go).
	caOpts := caCacheOptions(cfg.Namespace)
	caOpts.Scheme, caOpts.Mapper = mgr.GetScheme(), mgr.GetRESTMapper()
	caCache, err := cache.New(cfg.RestConfig, caOpts)
	if err != nil {
		return nil, fmt.Errorf("CA cache: %w", err)
	}
	// On every replica: a cache with per-object namespaces (controller-
	// runtime's delegating cache) does not say NeedLeaderElection false,
	// so mgr.Add would start it on the leader only.
	if err := mgr.Add(everywhere(caCache.Start)); err != nil {
		return nil, err
	}
	caW := &caWatch{ident: ident, cache: caCache, read: mgr.GetAPIReader(), c: mgr.GetClient(), ns: cfg.Namespace, create: cfg.CASource == CACreate, log: cfg.Log,
		changed: func() {
			if c.pipe.prov != nil {
				c.pipe.prov.again()
			}
		}}

	c.xdsLis, err = net.Listen("tcp", cfg.XDSAddress)
	if err != nil {
		return nil, fmt.Errorf("xDS listener: %w", err)
	}
	c.idLis, err = net.Listen("tcp", cfg.IdentityAddress)
	if err != nil {
		c.xdsLis.Close()
		return nil, fmt.Errorf("identity service listener: %w", err)
	}
	reviews, err := authv1client.NewForConfig(cfg.RestConfig)
	if err != nil {
		c.closeListeners()
		return nil, err
	}
	idSvc := &identity.Server{
		Authority:    ident.Authority,
		TrustDomain:  ident.TrustDomain,
		Reviewer:     identity.TokenReviewer(reviews),
		Fleets:       srv.Authorizer(),
		Audience:     cfg.Audience,
		SVIDLifetime: cfg.SVIDLifetime,
		Log:          cfg.Log,
		Issued:       srv.RecordSVID,
	}
	runnables := []manager.Runnable{
		c.pipe,
		// Every replica serves xDS (see the package comment). A bare
		// RunnableFunc would run on the leader only.
		everywhere(func(ctx context.Context) error {
			return srv.Serve(ctx, c.xdsLis, ident.ServerTLS())
		}),
		// And the identity service (on every replica as well).
		everywhere(func(ctx context.Context) error {
			return c.serveIdentity(ctx, c.idLis, idSvc)
		}),
		// Every replica reports its proxies to the others and reads theirs.
		&reporter{srv: srv, c: mgr.GetClient(), api: mgr.GetAPIReader(), ns: cfg.Namespace, name: reportName,
			pod: cfg.ReplicaName, interval: cfg.ReportInterval, log: cfg.Log},
		&peerWatch{srv: srv, cache: peerCache, self: reportName, log: cfg.Log},
		caW,
		// The status writer runs on the leader (a RunnableFunc needs the
		// lead), and writes only while the Lease is fresh.
		manager.RunnableFunc(writer.Run),
		&leaderRunnable{l: leader, onStart: func() {
			cfg.Log.Info("leading: writing status and infrastructure", "identity", cfg.LeaderIdentity)
			writer.Resync()
			if c.pipe.prov != nil {
				c.pipe.prov.again()
			}
		}},
	}
	for _, r := range runnables {
		if err := mgr.Add(r); err != nil {
			c.closeListeners()
			return nil, err
		}
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("translated", func(*http.Request) error {
		if !c.pipe.synced.Load() {
			return errors.New("no translation yet")
		}
		return nil
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// everywhere is a runnable that runs on every replica, leader or not
// (controller-runtime starts a runnable that does not say so only on the
// leader).
type everywhere func(context.Context) error

func (f everywhere) Start(ctx context.Context) error { return f(ctx) }
func (everywhere) NeedLeaderElection() bool          { return false }

// cacheOptions limit the informer caches to what we act on (see the
// package comment), plus the hooks' own restrictions (extra), to the
// namespaces (none: every namespace; cluster-scoped kinds are not
// affected).
//
// Secrets are watched here only of type kubernetes.io/tls (field selector
// type=kubernetes.io/tls, which the API server applies): the type of
// listener certificateRefs, a Gateway's clientCertificateRef, an
// Ingress's spec.tls. Opaque Secrets (the credentials of SecurityPolicies)
// are watched by a cache of their own (credentials.go). A reference to a
// Secret of any other type (a ServiceAccount token, Helm's release
// records) reads as missing and the controller never fetches its data. A
// Secret's type is immutable.
func cacheOptions(extra map[client.Object]cache.ByObject, namespaces []string) cache.Options {
	hasService, _ := labels.NewRequirement(discoveryv1.LabelServiceName, selection.Exists, nil)
	byObject := map[client.Object]cache.ByObject{
		&corev1.Service{}:            {Transform: stripService},
		&discoveryv1.EndpointSlice{}: {Label: labels.NewSelector().Add(*hasService), Transform: stripEndpointSlice},
		&corev1.Secret{}:             {Transform: stripToIdentity, Field: fields.OneTermEqualSelector(secretTypeField, string(corev1.SecretTypeTLS))},
		&corev1.ConfigMap{}:          {Transform: stripToIdentity},
	}
	maps.Copy(byObject, extra)
	return cache.Options{DefaultTransform: stripObject, ByObject: byObject, DefaultNamespaces: namespaceConfigs(namespaces)}
}

// secretTypeField is the Secret field selector on its type (the API
// server's fields of Secrets: metadata.name, metadata.namespace, type).
const secretTypeField = "type"

// lastApplied is kubectl's annotation, often the size of the object itself.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// stripObject drops what no one reads from cached objects: managed fields
// and kubectl's last-applied annotation.
func stripObject(obj any) (any, error) {
	if m, ok := obj.(metav1.Object); ok {
		m.SetManagedFields(nil)
		if a := m.GetAnnotations(); a[lastApplied] != "" {
			a = maps.Clone(a)
			delete(a, lastApplied)
			m.SetAnnotations(a)
		}
	}
	return obj, nil
}

// stripToIdentity keeps only what identifies an object and its version
// (Secrets and ConfigMaps are cached as metadata only).
func stripToIdentity(obj any) (any, error) {
	if m, ok := obj.(metav1.Object); ok {
		m.SetManagedFields(nil)
		m.SetAnnotations(nil)
		m.SetLabels(nil)
		m.SetOwnerReferences(nil)
		m.SetFinalizers(nil)
	}
	return obj, nil
}

// Start runs the replica until ctx ends (or it loses the lead, which ends
// the process's manager with an error, as controller-runtime does).
func (c *Controller) Start(ctx context.Context) error {
	c.cfg.Log.Info("controller starting", "namespace", c.cfg.Namespace, "xds", c.xdsLis.Addr().String(), "identityService", c.idLis.Addr().String(),
		"leaderElection", c.cfg.LeaderElect, "identity", c.cfg.LeaderIdentity, "serverID", c.ident.ServerID.String())
	return c.mgr.Start(ctx)
}

// XDSAddr is the xDS listener's address.
func (c *Controller) XDSAddr() net.Addr { return c.xdsLis.Addr() }

// IdentityAddr is the identity service's address.
func (c *Controller) IdentityAddr() net.Addr { return c.idLis.Addr() }

func (c *Controller) closeListeners() {
	c.xdsLis.Close()
	c.idLis.Close()
}

// XDS is the replica's xDS server.
func (c *Controller) XDS() *xdsserver.Server { return c.srv }

// Identity is the replica's CA and server certificate.
func (c *Controller) Identity() *Identity { return c.ident }

// Leading reports whether this replica leads now.
func (c *Controller) Leading() bool { return c.leader.Leading() }

// Stats are counters for tests and debugging.
type Stats struct {
	// Runs is the number of completed pipeline runs; Failed those that
	// kept the previous configuration.
	Runs, Failed int64
	// StatusWrites is the number of status writes sent.
	StatusWrites int64
	// CachedSecrets is the number of referenced Secrets held in full;
	// SecretGets the uncached Secret reads so far.
	CachedSecrets int
	SecretGets    int64
	// WatchedSecrets is the number of Secrets in the metadata-only
	// informer caches (those of type kubernetes.io/tls or Opaque in the
	// watched namespaces); -1 when they cannot be listed within a second
	// (a cache has not started).
	WatchedSecrets int
}

// Stats returns the replica's counters.
func (c *Controller) Stats() Stats {
	n, gets := c.pipe.secrets.stats()
	watched := 0
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	for _, r := range c.pipe.secrets.meta {
		list := metadataListOf("Secret")
		if err := r.List(ctx, list); err != nil {
			watched = -1
			break
		}
		watched += len(list.Items)
	}
	return Stats{
		Runs: c.pipe.runs.Load(), Failed: c.pipe.failed.Load(),
		StatusWrites:  c.writer.Writes(),
		CachedSecrets: n, SecretGets: gets,
		WatchedSecrets: watched,
	}
}
