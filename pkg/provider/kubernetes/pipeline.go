package kubernetes

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/ingress"
	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/oidcdiscovery"
	"github.com/xds-controller/xds-controller/pkg/quarantine"
	"github.com/xds-controller/xds-controller/pkg/ratelimitconfig"
	"github.com/xds-controller/xds-controller/pkg/resources"
	"github.com/xds-controller/xds-controller/pkg/status"
	"github.com/xds-controller/xds-controller/pkg/translate"
	"github.com/xds-controller/xds-controller/pkg/translate/testhook"
	"github.com/xds-controller/xds-controller/pkg/xdsserver"
	"github.com/xds-controller/xds-controller/pkg/xdstranslator"
	"github.com/xds-controller/xds-controller/pkg/xdsvalidate"
)

// pipeline is the runnable that runs on every replica: watch, debounce,
// snapshot, translate, publish, then hand status and infrastructure to the
// leader-only writers.
type pipeline struct {
	cfg   *Config
	log   *slog.Logger
	cache cache.Cache
	// pods is the cache of the Pods EndpointSelector XBackends select
	// (pods.go); nil: they are read from cache.
	pods cache.Cache
	// credentials is the cache of Opaque Secrets, as metadata
	// (credentials.go); nil: none are read.
	credentials cache.Cache
	client      client.Client // the manager's: writes (provisioner)
	api         client.Reader // uncached reads (provisioner)
	srv         *xdsserver.Server
	writer      *status.Writer
	leader      *leadership
	ident       *Identity
	secrets     *secretCache
	configMaps  *refCache[*corev1.ConfigMap]
	// rateLimits writes the rate-limit service's ConfigMap while this
	// replica leads (writeRateLimits); nil otherwise.
	rateLimits *ratelimitconfig.Writer

	kick chan struct{}

	refMu         sync.Mutex
	secretRefs    map[types.NamespacedName]bool
	configMapRefs map[types.NamespacedName]bool

	synced atomic.Bool  // one run completed
	runs   atomic.Int64 // completed runs
	failed atomic.Int64 // runs that kept the previous configuration

	prov *provisionLoop

	// objects and translations carry each run to the next, so that a run
	// reads and translates what changed (translate.Cache).
	objects      *objectIndex
	translations *translate.Cache

	metrics *pipelineMetrics

	// changes tells of data-plane changes (ACKs, NACKs, proxies coming and
	// going); events records the NACK Events (leader only).
	changes <-chan struct{}
	events  recorder.EventRecorder
	// quarantine holds back the route objects behind a route
	// configuration Envoy refused (pkg/quarantine).
	quarantine *quarantine.Quarantine
	// oidc fetches the discovery documents of SecurityPolicy oidc
	// issuers (oidcOptions; the run goroutine only).
	oidc *oidcdiscovery.Cache
	// The last translation, for status refreshes without translating
	// again: its status (with addresses and stale routes), IR, xDS and
	// Gateways; and the last NACK handled. Used by the Start goroutine
	// only.
	last    *lastRun
	nackSeq uint64
	// ingressReports are the Ingress problems reported so far
	// (reportIngresses; the run goroutine only).
	ingressReports map[types.NamespacedName]reportedIngress
}

// lastRun is what a status refresh needs from the last translation.
type lastRun struct {
	status   *gatewayapi.Status
	ir       *ir.IR
	xds      map[string]*xdstranslator.Resources
	gateways map[types.NamespacedName]*gwapiv1.Gateway
}

func (p *pipeline) NeedLeaderElection() bool { return false }

// trigger asks for a run (when runAt says) for a change of an object of
// kind (a Kubernetes kind, or "start" and "retry" for the pipeline's own),
// counted by xds_controller_pipeline_triggers_total.
func (p *pipeline) trigger(kind string) {
	if p.metrics != nil {
		p.metrics.triggers.WithLabelValues(kind).Inc()
	}
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// Start registers the event handlers (each GetInformer waits for its
// informer's initial sync), then runs the pipeline until ctx ends, when
// runAt says (the first change after a quiet period at once).
func (p *pipeline) Start(ctx context.Context) error {
	if err := p.watch(ctx); err != nil {
		return err
	}
	if p.prov != nil {
		go p.prov.run(ctx)
	}
	p.trigger("start")
	// lastRun is when the last run ended; early is when the last run
	// that began inside the previous run's debounce window began (runAt).
	var lastRun, early time.Time
	timer := time.NewTimer(0)
	<-timer.C
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-p.changes:
			p.refresh()
			continue
		case <-p.kick:
		}
		first := time.Now()
		last, kicks := first, 1
	wait:
		for {
			d := time.Until(runAt(lastRun, early, first, last, kicks, p.cfg.Debounce, p.cfg.MaxDebounce))
			if d <= 0 {
				break
			}
			timer.Reset(d)
			select {
			case <-ctx.Done():
				timer.Stop()
				return nil
			case <-p.kick:
				timer.Stop()
				last, kicks = time.Now(), kicks+1
			case <-timer.C:
				break wait
			}
		}
		if now := time.Now(); now.Before(lastRun.Add(p.cfg.Debounce)) {
			early = now
		}
		p.run(ctx)
		lastRun = time.Now()
	}
}

// runAt is when the pipeline runs for the kicks (changes) pending since
// first, the latest at last, after a run that ended at lastRun (zero: none
// yet); early is when a run last began inside the debounce window of the
// run before it (zero: never). One kick runs once debounce has passed since
// lastRun: at once after a quiet period. Inside that window it runs at once
// too if no run began early in the last maxDebounce, so that a run for an
// unrelated event (an EndpointSlice elsewhere) does not delay the next
// change; else at the window's end. Lone changes thus run at most once per
// debounce, and once more per maxDebounce. Two or more kicks are a burst,
// coalesced until debounce passes without a kick, and run at the latest
// maxDebounce after the first.
func runAt(lastRun, early, first, last time.Time, kicks int, debounce, maxDebounce time.Duration) time.Time {
	if kicks <= 1 {
		due := lastRun.Add(debounce)
		if first.Before(due) && first.Sub(early) >= maxDebounce {
			return first
		}
		return due
	}
	quiet := last.Add(debounce)
	if limit := first.Add(maxDebounce); limit.Before(quiet) {
		return limit
	}
	return quiet
}

// watch registers an event handler on every informer we read.
func (p *pipeline) watch(ctx context.Context) error {
	type watch struct {
		obj     client.Object
		handler toolscache.ResourceEventHandler
		// optional: the kind's CRD may be missing (optionalKind).
		optional bool
		// from is the cache to watch in (nil: p.cache).
		from cache.Cache
	}
	// Each kind of the snapshot is recorded by the object index before
	// its handler may trigger a run, in one handler: the informer calls
	// the handlers of one registration in order, others concurrently.
	indexed := func(k resources.Kind, h toolscache.ResourceEventHandler) toolscache.ResourceEventHandler {
		return both(p.objects.handler(k), h)
	}
	// Every kind of the snapshot's registry: Secrets and ConfigMaps as
	// metadata, their referenced objects read apart (refCache);
	// Namespaces as metadata (labels are all the translation reads); the
	// other kinds whole, with ownedHandler for those whose status we write.
	var watches []watch
	for _, k := range resources.Kinds() {
		name := k.Name()
		switch k {
		case resources.SecretKind:
			refs := func() map[types.NamespacedName]bool { return p.secretRefs }
			watches = append(watches, watch{obj: metadataOf(name), handler: p.referencedHandler(name, refs)})
			if p.credentials != nil {
				watches = append(watches, watch{obj: metadataOf(name), handler: p.referencedHandler(name, refs), from: p.credentials})
			}
		case resources.ConfigMapKind:
			watches = append(watches, watch{obj: metadataOf(name), handler: p.referencedHandler(name, func() map[types.NamespacedName]bool { return p.configMapRefs })})
		case resources.NamespaceKind:
			watches = append(watches, watch{obj: metadataOf(name), handler: indexed(k, p.namespaceHandler())})
		case resources.PodKind:
			watches = append(watches, watch{obj: k.New(), handler: indexed(k, p.podHandler()), from: p.pods})
		default:
			h := p.anyHandler(name)
			if status.Writes(name) {
				h = p.ownedHandler(name)
			}
			watches = append(watches, watch{obj: k.New(), handler: indexed(k, h), optional: optionalKind(k)})
		}
	}
	for _, obj := range p.cfg.Hooks.Watches {
		watches = append(watches, watch{obj: obj, handler: p.anyHandler(kindOf(obj))})
	}
	for _, obj := range p.cfg.Hooks.InfraWatches {
		watches = append(watches, watch{obj: obj, handler: p.infraHandler()})
	}
	var synced []toolscache.InformerSynced
	for _, w := range watches {
		from := w.from
		if from == nil {
			from = p.cache
		}
		inf, err := from.GetInformer(ctx, w.obj)
		if err != nil && w.optional && meta.IsNoMatchError(err) {
			p.log.Warn("a CRD is not installed, so its objects are not read (ours: install the chart's crds/, which helm upgrade does not; the Gateway API experimental channel's: gatewayAPI.channel=experimental)", "kind", fmt.Sprintf("%T", w.obj), "error", err)
			continue
		}
		if err != nil {
			return fmt.Errorf("watching %T: %w", w.obj, err)
		}
		reg, err := inf.AddEventHandler(w.handler)
		if err != nil {
			return fmt.Errorf("watching %T: %w", w.obj, err)
		}
		synced = append(synced, reg.HasSynced)
	}
	// Every handler has seen its informer's initial objects (the object
	// index is complete) before the first run.
	if !p.cache.WaitForCacheSync(ctx) || !toolscache.WaitForCacheSync(ctx.Done(), synced...) {
		return ctx.Err()
	}
	return nil
}

// both calls a, then b, for every event.
func both(a, b toolscache.ResourceEventHandler) toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { a.OnAdd(obj, false); b.OnAdd(obj, false) },
		UpdateFunc: func(o, n any) { a.OnUpdate(o, n); b.OnUpdate(o, n) },
		DeleteFunc: func(obj any) { a.OnDelete(obj); b.OnDelete(obj) },
	}
}

func objectOf(obj any) resources.Object {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	o, _ := obj.(resources.Object)
	return o
}

// kindOf is the kind of obj for the triggers metric: a metadata-only
// object's TypeMeta kind, else its Go type's name (as its kind is named).
func kindOf(obj client.Object) string {
	if m, ok := obj.(*metav1.PartialObjectMetadata); ok && m.Kind != "" {
		return m.Kind
	}
	t := reflect.TypeOf(obj)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}

// anyHandler re-runs the pipeline on every event of an object of kind.
func (p *pipeline) anyHandler(kind string) toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { p.trigger(kind) },
		UpdateFunc: func(any, any) { p.trigger(kind) },
		DeleteFunc: func(any) { p.trigger(kind) },
	}
}

// infraHandler re-runs only the provisioner, with the last translation
// (a change of the Envoy pods does not change what is translated).
func (p *pipeline) infraHandler() toolscache.ResourceEventHandler {
	again := func() {
		if p.prov != nil {
			p.prov.again()
		}
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { again() },
		UpdateFunc: func(any, any) { again() },
		DeleteFunc: func(any) { again() },
	}
}

// ownedHandler is for the objects whose status we write. A change that
// leaves the generation alone is a status (or metadata) change: it does not
// change the translation, so it only asks the status writer to compare that
// object again (which puts back our status if someone else changed it).
// kind is the registry's name of the objects' kind (status.Key Kind).
func (p *pipeline) ownedHandler(kind string) toolscache.ResourceEventHandler {
	enqueue := func(o metav1.Object) {
		p.writer.Enqueue(status.Key{Kind: kind, Namespace: o.GetNamespace(), Name: o.GetName()})
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			p.trigger(kind)
			// A re-created object may get the very status its predecessor
			// had, which the writer would not queue as a change.
			if o := objectOf(obj); o != nil {
				enqueue(o)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, n := objectOf(oldObj), objectOf(newObj)
			if o == nil || n == nil || o.GetGeneration() != n.GetGeneration() ||
				!equality.Semantic.DeepEqual(o.GetDeletionTimestamp(), n.GetDeletionTimestamp()) {
				p.trigger(kind)
				return
			}
			enqueue(n)
		},
		DeleteFunc: func(any) { p.trigger(kind) },
	}
}

// namespaceHandler re-runs the pipeline when a namespace appears, goes, or
// changes its labels (listener allowedRoutes selectors read them).
func (p *pipeline) namespaceHandler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { p.trigger(resources.NamespaceKind.Name()) },
		UpdateFunc: func(oldObj, newObj any) {
			o, n := objectOf(oldObj), objectOf(newObj)
			if o == nil || n == nil || !equality.Semantic.DeepEqual(o.GetLabels(), n.GetLabels()) {
				p.trigger(resources.NamespaceKind.Name())
			}
		},
		DeleteFunc: func(any) { p.trigger(resources.NamespaceKind.Name()) },
	}
}

// referencedHandler re-runs the pipeline only for objects (of kind) that
// a Gateway of ours references.
func (p *pipeline) referencedHandler(kind string, refs func() map[types.NamespacedName]bool) toolscache.ResourceEventHandler {
	check := func(obj any) {
		o := objectOf(obj)
		if o == nil {
			p.trigger(kind)
			return
		}
		p.refMu.Lock()
		hit := refs()[types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}]
		p.refMu.Unlock()
		if hit {
			p.trigger(kind)
		}
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    check,
		UpdateFunc: func(_, n any) { check(n) },
		DeleteFunc: check,
	}
}

func (p *pipeline) setReferences(secrets, configMaps []types.NamespacedName) {
	s := make(map[types.NamespacedName]bool, len(secrets))
	for _, k := range secrets {
		s[k] = true
	}
	c := make(map[types.NamespacedName]bool, len(configMaps))
	for _, k := range configMaps {
		c[k] = true
	}
	p.refMu.Lock()
	p.secretRefs, p.configMapRefs = s, c
	p.refMu.Unlock()
}

// writeRateLimits puts the global rate limits of every scope of x (the
// TrafficPolicies' rateLimit.global, one domain per scope) into the
// rate-limit service's ConfigMap, ConfigMapName of our ServiceAccount in
// our namespace (pkg/ratelimitconfig), when the service is configured
// (--ratelimit-service-address) and this replica leads. A replica that
// stops leading forgets what it wrote, so that it writes again when it
// leads (leading triggers a run: the provisioner's again). A failure is
// logged and tried again at the next run (the service meanwhile answers
// with the limits it had).
func (p *pipeline) writeRateLimits(ctx context.Context, x *ir.IR) {
	if p.cfg.RateLimitService == "" {
		return
	}
	if p.leader == nil || !p.leader.Leading() {
		p.rateLimits = nil
		return
	}
	if p.rateLimits == nil {
		p.rateLimits = ratelimitconfig.NewWriter(p.client, p.cfg.Namespace, ratelimitconfig.ConfigMapName(p.cfg.ServiceAccount))
	}
	byScope, err := x.GlobalRateLimitsByScope()
	if err == nil {
		err = p.rateLimits.Write(ctx, slices.Collect(maps.Values(byScope)))
	}
	if err != nil {
		p.log.Error("writing the global rate limits failed; the service keeps its previous ones", "error", err)
	}
}

// retryAfter is the wait before a run that failed to read its inputs is
// tried again.
const retryAfter = time.Second

// run is one pass of the pipeline. Nothing in it can remove serving
// configuration on failure: a snapshot that cannot be read or a
// translation that fails keeps every scope's last published snapshot.
func (p *pipeline) run(ctx context.Context) {
	start := time.Now()
	ok := false
	defer func() {
		result := "failed"
		if ok {
			result = "ok"
		}
		p.metrics.runs.WithLabelValues(result).Observe(time.Since(start).Seconds())
	}()
	res, err := p.snapshot(ctx)
	if err != nil {
		p.failed.Add(1)
		p.log.Error("reading the watched objects failed; the previous configuration keeps serving", "error", err)
		time.AfterFunc(retryAfter, func() { p.trigger("retry") })
		return
	}
	var resolver Resolver = SharedResolver{}
	if p.cfg.Hooks.Resolve != nil {
		if resolver, err = p.cfg.Hooks.Resolve(ctx, p.cache, res); err != nil {
			p.failed.Add(1)
			p.log.Error("resolving Gateway parameters failed; the previous configuration keeps serving", "error", err)
			time.AfterFunc(retryAfter, func() { p.trigger("retry") })
			return
		}
	}
	if p.translations == nil {
		p.translations = translate.NewCache()
	}
	opts := TranslateOptions(p.cfg.ControllerName, resolver)
	opts.DNSResolvers = p.cfg.DNSResolvers
	opts.RateLimitService = p.cfg.RateLimitService
	p.oidcOptions(ctx, res, &opts)
	out, err := p.translations.Run(res, opts, translate.WithIngress(p.cfg.Ingress),
		translate.WithHolds(p.quarantine.Holds()))
	if err != nil {
		p.failed.Add(1)
		p.log.Error("translation failed (a bug); the previous configuration keeps serving", "error", err)
		return
	}
	// The rate-limit service learns a new rule before Envoy asks it.
	p.writeRateLimits(ctx, out.Result.IR)
	p.publish(ctx, testhook.Apply(out.XDS), out.Refused, func(k gatewayapi.RouteKey) (int64, bool) { return translate.Generation(res, k) })
	p.metrics.observe(res, out.XDS)
	// Who may subscribe to what, and who may get an SVID: the fleets of
	// this translation.
	p.srv.Authorizer().Set(FleetScopes(p.ident.TrustDomain, p.cfg.Namespace, out.Result.IR))

	live := p.objects.liveStatus(res)
	st := status.WithStaleRoutes(out.Result.Status, live.routes, p.cfg.ControllerName)
	st = status.WithStalePolicies(st, live.policies, p.cfg.ControllerName)
	setAddresses(st, out.Result.Ingresses, res, resolver)
	p.reportIngresses(res, out.Result.Ingresses)
	p.writer.UpdateIngresses(out.Result.Ingresses)
	gws := make(map[types.NamespacedName]*gwapiv1.Gateway, len(res.Gateways))
	for _, g := range res.Gateways {
		gws[types.NamespacedName{Namespace: g.Namespace, Name: g.Name}] = g
	}
	p.last = &lastRun{status: st, ir: out.Result.IR, xds: out.XDS, gateways: gws}
	p.refresh()

	if p.prov != nil {
		p.prov.offer(&ProvisionInput{
			Resources: res,
			IR:        out.Result.IR,
			Resolver:  resolver,
			Leading:   p.leader.Leading,
			Identity:  p.ident,
			Client:    p.client,
			Cache:     p.cache,
			APIReader: p.api,
		})
	}
	p.runs.Add(1)
	p.synced.Store(true)
	ok = true
	routes := 0
	for _, k := range gatewayapi.RouteKinds() {
		routes += k.Kind.Len(res)
	}
	p.log.Debug("pipeline run", "took", time.Since(start), "gateways", len(res.Gateways), "routes", routes, "scopes", len(out.XDS))
}

// refresh hands the verdicts of the data plane to the quarantine (a
// change of its holds asks for a run), hands the last translation's status,
// with Programmed decided by the data plane (status.WithDataPlane, without
// the NACKs the quarantine traced to objects: those objects' status says
// it), to the status writer (which writes only what changed), and records
// a Warning Event reason Rejected on every Gateway of a scope whose proxy
// NACKed what the quarantine could not trace, once per NACK, on the
// leader. The server's View and NACKs include those of the other
// replicas' proxies (peers.go).
func (p *pipeline) refresh() {
	nacks := p.srv.NacksSince(p.nackSeq)
	if len(nacks) > 0 {
		p.nackSeq = nacks[len(nacks)-1].Seq
	}
	if p.quarantine.Update(p.srv) {
		p.trigger("quarantine")
	}
	if p.last == nil {
		return
	}
	p.writer.Update(status.WithDataPlane(p.last.status, p.last.ir, p.last.xds, p.quarantine.View(p.srv.View())))
	if p.events == nil || !p.leader.Leading() {
		return
	}
	for _, n := range nacks {
		if p.quarantine.Attributed(n.Scope, n.Version) {
			continue
		}
		for _, g := range p.last.ir.Gateways {
			obj := p.last.gateways[types.NamespacedName{Namespace: g.Namespace, Name: g.Name}]
			if g.Scope != n.Scope || obj == nil {
				continue
			}
			via := ""
			if n.Replica != "" {
				via = " via controller replica " + n.Replica
			}
			p.events.Eventf(obj, nil, corev1.EventTypeWarning, status.ReasonRejected, "Programming",
				"Envoy proxy %s%s rejected generation %d of scope %s (%s): %s", n.NodeID, via, n.Generation, n.Scope, n.TypeURL, n.Detail)
		}
	}
}

// publish publishes every scope of x (the server skips unchanged ones),
// tells the quarantine what it published (gen: the translated objects'
// generations), and removes the scopes that vanished. A scope that fails
// to publish, or that pre-validation refused, keeps its previous snapshot.
func (p *pipeline) publish(ctx context.Context, x map[string]*xdstranslator.Resources, refused map[string][]xdsvalidate.Problem, gen quarantine.Generations) {
	for _, scope := range translate.ScopeNames(x) {
		if ps := refused[scope]; len(ps) > 0 {
			p.log.Error("the scope's configuration fails pre-validation and no object can be blamed; its previous configuration keeps serving",
				"scope", scope, "problems", fmt.Sprint(ps))
			continue
		}
		v, changed, err := p.srv.Publish(ctx, scope, x[scope])
		if err == nil || changed {
			// Published, or refused as rejected before: either way the
			// version has (or will have) a verdict.
			p.quarantine.Published(scope, v, x[scope], gen)
		}
		switch {
		case err != nil:
			p.log.Error("publishing failed; the scope's previous configuration keeps serving", "scope", scope, "error", err)
		case changed:
			p.metrics.published.WithLabelValues(scope).Inc()
			p.log.Info("configuration published", "scope", scope, "version", v,
				"listeners", len(x[scope].Listeners), "routes", len(x[scope].Routes), "clusters", len(x[scope].Clusters))
		}
	}
	for scope := range p.srv.Scopes() {
		if _, ok := x[scope]; !ok {
			p.srv.Remove(scope)
			p.quarantine.Forget(scope)
			p.log.Info("scope removed", "scope", scope)
		}
	}
}

// setAddresses fills status.addresses of every Gateway in st from the
// Service the resolver names for it (left empty while it does not exist),
// each with its routability, and sets Programmed=False when an address the
// Gateway requests in spec.addresses is not the Service's, and, on an
// accepted Gateway, AddressesAssigned (status.RoutableAddresses); likewise
// the status.loadBalancer of every Ingress of ours in ings
// (status.IngressLoadBalancer). res.Services are sorted by namespace/name
// (objectIndex).
func setAddresses(st *gatewayapi.Status, ings map[types.NamespacedName]*ingress.Status, res *resources.Resources, r Resolver) {
	svc := func(k types.NamespacedName) *corev1.Service {
		i, ok := slices.BinarySearchFunc(res.Services, k, func(s *corev1.Service, k types.NamespacedName) int {
			return compareNN(types.NamespacedName{Namespace: s.Namespace, Name: s.Name}, k)
		})
		if !ok {
			return nil
		}
		return res.Services[i]
	}
	for _, gw := range res.Gateways {
		gs := st.Gateways[types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}]
		if gs == nil {
			continue
		}
		var problem *status.AddressProblem
		var assigned *metav1.Condition
		gs.Addresses, problem, assigned = status.RoutableAddresses(gatewayapi.AddressRequests(gw), svc(r.ServiceFor(gw)), r.ExternalIPsAllowed(gw), gw.Generation)
		problem.Apply(gs)
		if assigned != nil && meta.IsStatusConditionTrue(gs.Conditions, string(gwapiv1.GatewayConditionAccepted)) {
			meta.SetStatusCondition(&gs.Conditions, *assigned)
		}
	}
	// An Ingress's status.loadBalancer is the address of the Service of
	// its class's Gateway (left empty while the class is not served).
	// The statuses may be shared with earlier results (ingress.Cache):
	// copied, the map is this run's own.
	for k, is := range ings {
		if is.Gateway != nil {
			cp := *is
			cp.LoadBalancer = status.IngressLoadBalancer(svc(r.ServiceFor(is.Gateway)))
			ings[k] = &cp
		}
	}
}

// provisionLoop runs the provisioner with the latest input, on the leader
// only; inputs offered while it works are coalesced into the newest.
type provisionLoop struct {
	p      Provisioner
	leader *leadership
	log    *slog.Logger

	mu   sync.Mutex
	next *ProvisionInput
	last *ProvisionInput
	kick chan struct{}
}

func newProvisionLoop(p Provisioner, l *leadership, log *slog.Logger) *provisionLoop {
	return &provisionLoop{p: p, leader: l, log: log, kick: make(chan struct{}, 1)}
}

func (l *provisionLoop) offer(in *ProvisionInput) {
	l.mu.Lock()
	l.next = in
	l.mu.Unlock()
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// again offers the last input again (after becoming leader).
func (l *provisionLoop) again() {
	l.mu.Lock()
	in := l.next
	if in == nil {
		in = l.last
	}
	l.mu.Unlock()
	if in != nil {
		l.offer(in)
	}
}

func (l *provisionLoop) run(ctx context.Context) {
	backoff := time.Second
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.kick:
		}
		l.mu.Lock()
		in := l.next
		l.next = nil
		if in != nil {
			l.last = in
		}
		l.mu.Unlock()
		if in == nil || !l.leader.Leading() {
			continue
		}
		if err := l.p.Provision(ctx, *in); err != nil && ctx.Err() == nil {
			l.log.Error("provisioning failed; retrying", "error", err, "in", backoff)
			time.AfterFunc(backoff, l.again)
			backoff = min(2*backoff, time.Minute)
			continue
		}
		backoff = time.Second
	}
}

// oidcOptions sets what SecurityPolicy oidc reads in opts: the discovery
// documents of res's issuers (a new one is fetched in the background and
// asks for a run when it arrives; all are kept fresh by a goroutine
// started on the first run, which asks for a run when one changes) and the key the session cookies' HMAC keys derive from, the
// controller's current CA's (the same on every replica and across
// restarts; a CA rotation changes it, and users log in again).
func (p *pipeline) oidcOptions(ctx context.Context, res *resources.Resources, opts *gatewayapi.Options) {
	if p.oidc == nil {
		p.oidc = oidcdiscovery.New(oidcdiscovery.Config{OnChange: func() { p.trigger("oidc-discovery") }})
		go p.oidc.Run(ctx)
	}
	opts.OIDCProviders = p.oidc.Providers(gatewayapi.OIDCDiscoveries(res))
	if p.ident != nil && p.ident.Authority != nil {
		if ca := p.ident.Authority.Current(); ca != nil {
			opts.SecretKey = ca.DerivationKey(gatewayapi.SecretKeyPurpose)
		}
	}
}
