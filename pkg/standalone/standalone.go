// Package standalone runs xds-controller without Kubernetes: it reads
// Gateway API objects (and Ingresses) from YAML files, translates them with the same pure
// pipeline as the controller, serves the result over ADS on mutual TLS, runs
// Envoy as a child process, and prints every object's status conditions as
// they change.
//
// All Gateways of our GatewayClasses, and the Ingresses of our
// IngressClasses (on Config.IngressHTTPAddress and IngressHTTPSAddress),
// are served by one Envoy, the scope named by Scope. Files are re-read on change; an object that fails to load
// is reported with its file and name and the others keep serving.
package standalone

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
	bootstrap "github.com/xds-controller/xds-controller/envoy-bootstrap"
	"github.com/xds-controller/xds-controller/pkg/agent"
	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/identity"
	"github.com/xds-controller/xds-controller/pkg/infra"
	"github.com/xds-controller/xds-controller/pkg/ingress"
	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/oidcdiscovery"
	"github.com/xds-controller/xds-controller/pkg/pki"
	"github.com/xds-controller/xds-controller/pkg/provider/file"
	"github.com/xds-controller/xds-controller/pkg/quarantine"
	"github.com/xds-controller/xds-controller/pkg/status"
	"github.com/xds-controller/xds-controller/pkg/translate"
	"github.com/xds-controller/xds-controller/pkg/translate/testhook"
	"github.com/xds-controller/xds-controller/pkg/xdsserver"
	"github.com/xds-controller/xds-controller/pkg/xdstranslator"
)

// Scope is the proxy scope of the one Envoy standalone mode runs.
const Scope = "standalone"

// Defaults of Config.IngressHTTPAddress and IngressHTTPSAddress: the
// Ingress ports 80 and 443 plus 10000, as the Envoy pods of a dedicated
// fleet bind them (a standalone Envoy usually runs without the privilege
// to bind ports below 1024).
const (
	DefaultIngressHTTPAddress  = "0.0.0.0:10080"
	DefaultIngressHTTPSAddress = "0.0.0.0:10443"
)

// Config is what `xds-controller serve standalone` takes.
type Config struct {
	// ConfigPath is a YAML file or a folder of them.
	ConfigPath string
	// StateDir holds the CA, the certificates, the Envoy bootstrap and
	// Envoy's log. Created when missing.
	StateDir string
	// EnvoyPath is the Envoy binary; "" runs no Envoy (xDS only).
	EnvoyPath string
	// XDSAddress is where the xDS server listens, host:port.
	XDSAddress string
	// AdminPort is Envoy's admin port on 127.0.0.1.
	AdminPort uint32
	// ReadinessPort is Envoy's readiness listener port (/ready).
	ReadinessPort uint32
	// EnvoyMetricsPort, when not 0, is where Envoy serves GET
	// /stats/prometheus (and nothing else of its admin) on 127.0.0.1.
	EnvoyMetricsPort uint32
	// RouteStats makes Envoy keep per-route statistics for the routes of
	// every Gateway (gatewayapi.Options.RouteStats), as GatewayParameters
	// spec.metrics.routeStats does in a cluster.
	RouteStats bool
	// Edge are the limits on the clients of every Gateway's HTTP and HTTPS
	// listeners and the Envoy's overload manager, as GatewayParameters
	// spec.edge sets them in a cluster (nil: the defaults). Run refuses
	// values that infra.Validate refuses.
	Edge *v1alpha1.EdgeSpec
	// DNSResolvers are the DNS servers ("ip:port") Envoy resolves the host
	// names of XBackends of type ExternalHostname with
	// (gatewayapi.Options.DNSResolvers; gatewayapi.ParseDNSResolvers
	// checks them). Empty: Envoy's default resolver.
	DNSResolvers []string
	// TrustDomain of the SPIFFE IDs on the xDS channel.
	TrustDomain string
	// SVIDLifetime is the validity of Envoy's SVIDs, renewed at half of it
	// (default identity.DefaultSVIDLifetime).
	SVIDLifetime time.Duration
	// Debounce is how long to wait after a file change for more changes
	// before re-reading.
	Debounce time.Duration
	// Out receives status lines and load errors.
	Out io.Writer
	// Log receives operational messages.
	Log *slog.Logger
	// IngressHTTPAddress and IngressHTTPSAddress (host:port) are where the
	// Ingresses of our IngressClasses are served (pkg/ingress; HTTPS only
	// when one of them has a usable spec.tls). Default
	// DefaultIngressHTTPAddress and DefaultIngressHTTPSAddress.
	IngressHTTPAddress, IngressHTTPSAddress string
	// MetricsAddress, when set, is where /metrics (Prometheus) is served:
	// xds_controller_xds_acks_total and xds_controller_xds_nacks_total.
	MetricsAddress string
	// RateLimit, when set, is the global rate-limit service (ratelimit.go):
	// Run starts it when its Path is set, and writes the scope's domain
	// (Scope) into its configuration folder (Dir, default
	// StateDir/ratelimit), with the TrafficPolicies' global limits at
	// every translation. Nil: such policies are Accepted=False.
	RateLimit *RateLimitService
}

// Run serves until ctx ends. It fails early when the state folder, the
// certificates or the xDS listener cannot be set up; later problems (bad
// files, Envoy crashes) are reported and served around.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Out == nil {
		cfg.Out = os.Stdout
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Debounce == 0 {
		cfg.Debounce = 50 * time.Millisecond
	}
	if _, err := os.Stat(cfg.ConfigPath); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if err := infra.Validate(&v1alpha1.GatewayParametersSpec{Edge: cfg.Edge}); err != nil {
		return err
	}
	cfg.IngressHTTPAddress = cmp.Or(cfg.IngressHTTPAddress, DefaultIngressHTTPAddress)
	cfg.IngressHTTPSAddress = cmp.Or(cfg.IngressHTTPSAddress, DefaultIngressHTTPSAddress)
	for flag, a := range map[string]string{"ingress HTTP address": cfg.IngressHTTPAddress, "ingress HTTPS address": cfg.IngressHTTPSAddress} {
		if err := ingress.CheckAddress(a); err != nil {
			return fmt.Errorf("%s %q: %w", flag, a, err)
		}
	}
	if cfg.EnvoyPath != "" {
		if st, err := os.Stat(cfg.EnvoyPath); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			return fmt.Errorf("envoy: %s is not an executable file", cfg.EnvoyPath)
		}
	}
	if cfg.RateLimit != nil {
		if cfg.RateLimit.Dir == "" {
			cfg.RateLimit.Dir = filepath.Join(cfg.StateDir, "ratelimit")
		}
		if err := cfg.RateLimit.Check(); err != nil {
			return err
		}
		// The scope's domain, with no rule yet: the TrafficPolicy's global
		// limits will fill it (ir.GlobalRateLimits).
		if err := cfg.RateLimit.WriteConfigs(xdstranslator.RateLimitConfig(&ir.GlobalRateLimits{Domain: ir.RateLimitDomain(Scope)})); err != nil {
			return fmt.Errorf("rate-limit service configuration: %w", err)
		}
	}
	creds, err := issueCredentials(cfg)
	if err != nil {
		return err
	}
	lis, err := net.Listen("tcp", cfg.XDSAddress)
	if err != nil {
		return fmt.Errorf("xDS listener: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	srv := xdsserver.New(cfg.Log)
	srv.Authorizer().Set(xdsserver.ScopeTable{creds.envoyID: {Scope}})
	var metricsLis net.Listener
	if cfg.MetricsAddress != "" {
		if metricsLis, err = net.Listen("tcp", cfg.MetricsAddress); err != nil {
			lis.Close()
			return fmt.Errorf("metrics listener: %w", err)
		}
	}
	r := &runner{cfg: cfg, srv: srv, lastLines: map[string]string{}, loader: &file.Loader{}, cache: translate.NewCache(),
		quarantine: quarantine.New(cfg.Log), authority: creds.authority}
	r.discovery = oidcdiscovery.New(oidcdiscovery.Config{OnChange: func() { r.reload(ctx) }})
	changes := srv.Subscribe()
	r.reload(ctx)

	// The xDS server stops after Envoy, so that Envoy never sees its
	// control plane vanish while it is still running.
	srvCtx, stopServer := context.WithCancel(context.WithoutCancel(ctx))
	defer stopServer()
	var wg, envoyDone sync.WaitGroup
	errc := make(chan error, 1)
	wg.Go(func() {
		if err := srv.Serve(srvCtx, lis, creds.serverTLS); err != nil {
			errc <- err
			cancel()
		}
	})
	wg.Go(func() {
		<-ctx.Done()
		envoyDone.Wait()
		stopServer()
	})
	if metricsLis != nil {
		wg.Go(func() { serveMetrics(ctx, cfg.Log, metricsLis, srv) })
	}
	wg.Go(func() { r.discovery.Run(ctx) })
	if rl := cfg.RateLimit; rl != nil && rl.Path != "" {
		fmt.Fprintf(cfg.Out, "Rate-limit service: %s (gRPC %s, Redis %s, configuration %s)\n", rl.Path, rl.GRPCAddress, rl.Redis, filepath.Join(rl.Dir, "config"))
		wg.Go(func() {
			if err := rl.Run(ctx, cfg.Log); err != nil {
				cfg.Log.Error("the rate-limit service cannot run", "error", err)
			}
		})
	}
	wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-changes:
				if r.refresh() {
					r.reload(ctx)
				}
			}
		}
	})
	// Envoy's SVID first: Envoy starts with it, and it is renewed at half
	// its lifetime while we run (with --no-envoy too, for an Envoy started
	// by hand or by a test).
	first := make(chan struct{})
	var once sync.Once
	svids := &agent.Agent{
		Dir:      creds.sdsDir,
		Signer:   localSigner(creds.authority, creds.envoyID, cmp.Or(cfg.SVIDLifetime, identity.DefaultSVIDLifetime)),
		Log:      cfg.Log,
		OnRotate: func(time.Time) { once.Do(func() { close(first) }) },
	}
	wg.Go(func() { _ = svids.Run(ctx) })
	// A CA replaced in StateDir/pki is rotated to without a restart.
	wg.Go(func() { creds.followCA(ctx, cfg.Log, caPollInterval) })
	select {
	case <-first:
	case <-ctx.Done():
	}
	// The bootstrap is written with --no-envoy too: an Envoy started by
	// hand (or by a test) connects with it.
	bootPath, err := r.writeBootstrap(creds, lis.Addr().(*net.TCPAddr))
	if err != nil {
		cancel()
		wg.Wait()
		return err
	}
	if cfg.EnvoyPath == "" {
		fmt.Fprintf(cfg.Out, "Envoy bootstrap: %s\n", bootPath)
	} else {
		args := append([]string{"-c", bootPath, "--disable-hot-restart", "--drain-time-s", "1", "--log-level", "warn"}, bootstrap.ConfigArgs()...)
		logPath := filepath.Join(cfg.StateDir, "envoy.log")
		fmt.Fprintf(cfg.Out, "Envoy: %s (admin http://127.0.0.1:%d, log %s)\n", cfg.EnvoyPath, cfg.AdminPort, logPath)
		envoyDone.Go(func() {
			supervise(ctx, cfg.Log, process{name: "Envoy", path: cfg.EnvoyPath, args: args, logPath: logPath})
		})
	}
	wg.Go(func() {
		if err := r.watch(ctx); err != nil {
			cfg.Log.Error("watching the config stopped; changes are no longer picked up", "error", err)
		}
	})
	wg.Wait()
	select {
	case err := <-errc:
		return err
	default:
		return nil
	}
}

type runner struct {
	loader *file.Loader
	cfg    Config
	srv    *xdsserver.Server
	// cache carries each translation to the next: a reload translates
	// what changed (translate.Cache).
	cache *translate.Cache
	// quarantine holds back the route objects behind a route
	// configuration Envoy refused (pkg/quarantine).
	quarantine *quarantine.Quarantine
	// discovery fetches the OpenID providers' discovery documents
	// SecurityPolicy oidc needs; authority's current CA derives the keys
	// of gatewayapi.Options.SecretKey.
	discovery *oidcdiscovery.Cache
	authority *pki.Authority

	// mu guards what follows: reload runs on the file watcher's goroutine,
	// refresh on the xDS server's notifications.
	mu        sync.Mutex
	lastLines map[string]string
	// summaries are the objects' status lines last printed; otherLines
	// the other lines of the last printStatus (load problems, warnings,
	// refusals, Ingresses).
	summaries  status.Summaries
	otherLines map[string]string
	// loadLines are the last reload's load problems and warnings; out its
	// translation (nil when it failed).
	loadLines map[string]string
	out       *translate.Output
	// nackSeq is the last NACK printed.
	nackSeq uint64
}

// reload reads the config, translates it and publishes the result. Status
// lines and load errors that changed since the last reload are printed.
func (r *runner) reload(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	began := time.Now()
	loaded, err := r.loader.Load(r.cfg.ConfigPath)
	readTook := time.Since(began)
	if err != nil {
		r.print("config", "error: "+err.Error()+" (the last configuration keeps serving)")
		return
	}
	if n := len(loaded.Problems) + len(loaded.Kept); n > 0 {
		r.print("config", fmt.Sprintf("%d load problem(s), printed below; everything else is served", n))
	} else {
		r.print("config", "ok")
	}
	lines := map[string]string{}
	for _, p := range loaded.Problems {
		lines["load "+p.File+" "+p.Object] = "error: " + p.Err.Error()
	}
	for f, keys := range loaded.Kept {
		lines["load "+f] = "has errors; serving the last good version of " + strings.Join(keys, ", ")
	}
	out, err := r.cache.Run(loaded.Resources, gatewayapi.Options{
		Scope:        func(*gwapiv1.Gateway) string { return Scope },
		RouteStats:   func(*gwapiv1.Gateway) bool { return r.cfg.RouteStats },
		Edge:         func(*gwapiv1.Gateway) *ir.HTTPEdge { return infra.HTTPEdge(r.cfg.Edge) },
		DNSResolvers: r.cfg.DNSResolvers,
		ProxyPorts:   r.cfg.proxyPorts(),
		// SecurityPolicy oidc: the discovery documents (a new one is
		// fetched in the background, pkg/oidcdiscovery, and its arrival
		// reloads), and the key of the session cookies' HMAC keys, the
		// CA's.
		OIDCProviders: r.discovery.Providers(gatewayapi.OIDCDiscoveries(loaded.Resources)),
		SecretKey:     r.authority.Current().DerivationKey(gatewayapi.SecretKeyPurpose),
		// TrafficPolicy rateLimit.global: the service of the --ratelimit-*
		// flags, none without them.
		RateLimitService: r.cfg.rateLimitAddress(),
	}, translate.WithIngress(ingress.Config{HTTPAddress: r.cfg.IngressHTTPAddress, HTTPSAddress: r.cfg.IngressHTTPSAddress}),
		translate.WithHolds(r.quarantine.Holds()))
	translated := time.Now()
	if out != nil && out.Result != nil {
		for _, w := range out.Result.Status.Warnings {
			lines["warning: "+w] = ""
		}
	}
	r.loadLines, r.out = lines, out
	if err != nil {
		r.printStatus()
		// A translator bug: keep serving the last good configuration.
		r.cfg.Log.Error("translation failed; the previous configuration keeps serving", "error", err)
		return
	}
	if ps := out.Refused[Scope]; len(ps) > 0 {
		for _, p := range ps {
			r.loadLines["refused: "+p.String()] = ""
		}
		r.printStatus()
		r.cfg.Log.Error("the configuration fails pre-validation and no object can be blamed; the previous configuration keeps serving", "problems", len(ps))
		return
	}
	xds := testhook.Apply(out.XDS)[Scope]
	if xds == nil {
		xds = &xdstranslator.Resources{}
	}
	defer r.printStatus()
	r.writeRateLimits(out.Result.IR) // before Envoy asks about the rules
	v, changed, err := r.srv.Publish(ctx, Scope, xds)
	if err == nil || changed {
		res := loaded.Resources
		r.quarantine.Published(Scope, v, xds, func(k gatewayapi.RouteKey) (int64, bool) { return translate.Generation(res, k) })
	}
	r.cfg.Log.Debug("reload", "read", readTook, "translate", translated.Sub(began)-readTook, "publish", time.Since(translated), "changed", changed)
	if err != nil {
		r.cfg.Log.Error("publishing failed; the previous configuration keeps serving", "error", err)
	} else if changed {
		r.cfg.Log.Info("configuration published", "scope", Scope, "version", v,
			"listeners", len(xds.Listeners), "routes", len(xds.Routes), "clusters", len(xds.Clusters))
	}
}

// rateLimitAddress is the rate-limit service's gRPC address, "" without
// one (gatewayapi.Options RateLimitService).
func (c *Config) rateLimitAddress() string {
	if c.RateLimit == nil {
		return ""
	}
	return c.RateLimit.GRPCAddress
}

// writeRateLimits gives the rate-limit service the scope's global limits
// of x (its domain, with no rule when no route has one), when there is a
// service: a file written only when its content changed (WriteConfigs).
func (r *runner) writeRateLimits(x *ir.IR) {
	rl := r.cfg.RateLimit
	if rl == nil {
		return
	}
	g, err := x.GlobalRateLimits(Scope)
	if g == nil {
		g = &ir.GlobalRateLimits{Domain: ir.RateLimitDomain(Scope)}
	}
	if err == nil {
		err = rl.WriteConfigs(xdstranslator.RateLimitConfig(g))
	}
	if err != nil {
		r.cfg.Log.Error("the rate-limit service's configuration cannot be written", "error", err)
	}
}

// refresh hands the data plane's verdicts to the quarantine and prints
// the status again after the data plane changed (an ACK, a NACK, a proxy
// that came or went), without translating again. It reports whether the
// quarantine's holds changed: the config must then be translated again
// (reload).
func (r *runner) refresh() (again bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	again = r.quarantine.Update(r.srv)
	r.printStatus()
	return again
}

// printStatus prints new NACKs and the status lines that changed: load
// problems, warnings, and every object's conditions with Programmed
// decided by the data plane (status.WithDataPlane).
func (r *runner) printStatus() {
	for _, n := range r.srv.NacksSince(r.nackSeq) {
		fmt.Fprintf(r.cfg.Out, "xDS: Envoy proxy %s of scope %s rejected generation %d (%s): %s\n",
			n.NodeID, n.Scope, n.Generation, n.TypeURL, n.Detail)
		r.nackSeq = n.Seq
	}
	var st *gatewayapi.Status
	other := maps.Clone(r.loadLines)
	if r.out != nil && r.out.Result != nil {
		st = r.out.Result.Status
		if r.out.XDS != nil {
			st = status.WithDataPlane(st, r.out.Result.IR, r.out.XDS, r.quarantine.View(r.srv.View()))
		}
		maps.Copy(other, status.IngressSummary(r.out.Result.Ingresses))
	}
	// The objects' lines: those of the objects whose status changed
	// (status.Summaries); the others' (load problems, warnings,
	// Ingresses: few) are compared whole.
	lines, gone := r.summaries.Update(st)
	for k := range r.otherLines {
		if _, ok := other[k]; !ok {
			gone = append(gone, k)
		}
	}
	maps.Copy(lines, other)
	r.otherLines = other
	r.printChanges(lines, gone)
}

func (r *runner) print(key, line string) {
	if prev, ok := r.lastLines[key]; !ok || prev != line {
		if line == "" {
			fmt.Fprintln(r.cfg.Out, key)
		} else {
			fmt.Fprintf(r.cfg.Out, "%s: %s\n", key, line)
		}
		r.lastLines[key] = line
	}
}

// printChanges prints the lines that differ from what was printed last, in
// the order of their keys, then the keys of the lines that went away (the
// keys of gone that were printed), in the order of their keys. lines need
// only hold the lines that may have changed, not every line.
func (r *runner) printChanges(lines map[string]string, gone []string) {
	for _, k := range status.Keys(lines) {
		r.print(k, lines[k])
	}
	slices.Sort(gone)
	for _, k := range slices.Compact(gone) {
		if _, ok := r.lastLines[k]; ok && k != "config" {
			if _, back := lines[k]; back {
				continue
			}
			// A load problem that went away was fixed; an object's line
			// that went away is the object gone.
			what := "gone"
			if strings.HasPrefix(k, "load ") {
				what = "resolved"
			}
			fmt.Fprintf(r.cfg.Out, "%s: %s\n", k, what)
			delete(r.lastLines, k)
		}
	}
}

// watch re-reads the config whenever a file under it changes. A config
// file that appears whole (created, or renamed into place as editors and
// `kubectl`-style tools write) or goes away is acted on at once when
// nothing else is pending and no read happened within Debounce: one more
// route costs no wait. Everything else (writes in place, which may be
// half done, and bursts) is read after Debounce without further changes.
func (r *runner) watch(ctx context.Context) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer w.Close()
	// The parent folder is watched too, so that a config folder that is
	// deleted and created again is picked up.
	if err := w.Add(filepath.Dir(filepath.Clean(r.cfg.ConfigPath))); err != nil {
		return err
	}
	_ = addWatches(w, r.cfg.ConfigPath)
	var timer <-chan time.Time
	var lastRead time.Time
	// writing: a config file is being written in place; reading it now
	// could see half of it.
	writing := false
	read := func() {
		timer, writing = nil, false
		// Watches are idempotent: re-adding picks up folders that
		// were created or replaced since the last read.
		_ = addWatches(w, r.cfg.ConfigPath)
		r.reload(ctx)
		lastRead = time.Now()
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return errors.New("watcher closed")
			}
			if !within(ev.Name, r.cfg.ConfigPath) {
				continue // another file of the parent folder
			}
			if ev.Has(fsnotify.Create) {
				if st, err := os.Stat(ev.Name); err == nil && st.IsDir() {
					_ = addWatches(w, ev.Name)
				}
			}
			config := file.IsConfigName(ev.Name)
			if config && (ev.Has(fsnotify.Write) || ev.Has(fsnotify.Chmod)) {
				writing = true
			}
			if config && !writing && ev.Op&(fsnotify.Create|fsnotify.Remove|fsnotify.Rename) != 0 &&
				time.Since(lastRead) >= r.cfg.Debounce {
				read()
				continue
			}
			timer = time.After(r.cfg.Debounce)
		case err := <-w.Errors:
			r.cfg.Log.Warn("file watch", "error", err)
		case <-timer:
			read()
		}
	}
}

// within reports whether name is path or lies under it.
func within(name, path string) bool {
	name, path = filepath.Clean(name), filepath.Clean(path)
	return name == path || strings.HasPrefix(name, path+string(filepath.Separator))
}

// addWatches watches path: a folder and its subfolders, or a file's parent
// folder (editors replace files, which drops a watch on the file itself).
func addWatches(w *fsnotify.Watcher, path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return w.Add(filepath.Dir(path))
	}
	return filepath.WalkDir(path, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			return w.Add(p)
		}
		return err
	})
}

func (r *runner) writeBootstrap(c *credentials, addr *net.TCPAddr) (string, error) {
	host := addr.IP.String()
	if addr.IP.IsUnspecified() {
		host = "127.0.0.1"
	}
	b, err := bootstrap.Render(bootstrap.Params{
		NodeID:        "standalone-" + strconv.Itoa(os.Getpid()),
		Scope:         Scope,
		XDSHost:       host,
		XDSPort:       uint32(addr.Port),
		XDSServerName: "localhost",
		XDSServerID:   c.serverID.String(),
		SDSConfigDir:  c.sdsConfigDir,
		AdminPort:     r.cfg.AdminPort,
		// Standalone Envoy is a local process: readiness on loopback only.
		ReadinessAddress: "127.0.0.1",
		ReadinessPort:    r.cfg.ReadinessPort,
		MetricsPort:      r.cfg.EnvoyMetricsPort,
		Delta:            true,
		Overload:         infra.Overload(r.cfg.Edge, nil),
	})
	if err != nil {
		return "", err
	}
	p := filepath.Join(r.cfg.StateDir, "envoy-bootstrap.yaml")
	return p, os.WriteFile(p, b, 0o644)
}

// proxyPorts are the ports the local Envoy listens on besides its Gateway
// listeners (gatewayapi.Options.ProxyPorts): its admin, readiness and, when
// set, metrics ports.
func (c Config) proxyPorts() []uint32 {
	out := []uint32{c.AdminPort, c.ReadinessPort}
	if c.EnvoyMetricsPort != 0 {
		out = append(out, c.EnvoyMetricsPort)
	}
	return out
}
