package status

// The status writer: it receives the desired status of every object after
// each translation, and writes to the API server only the objects whose live
// status differs, several objects at a time (Options.Workers; never one
// object twice at once), rate-limited, and only while this replica leads.
//
// How each kind is written, and why:
//
//   - GatewayClass, Gateway and ListenerSet: server-side apply on the status subresource
//     with field manager "xds-controller" and force. Their status belongs to
//     the controller of their class, which is us, so taking ownership of
//     every field we set is right, and fields we set before but no longer
//     send (a listener that was removed) are dropped by the apply.
//   - Ingress (ingress.go): status.loadBalancer only, by merge patch; its
//     desired status comes apart from the others' (UpdateIngresses).
//   - Routes (every route kind; routes.go): status.parents is
//     `x-kubernetes-list-type: atomic` in the v1.6.3 CRDs (several controllers share one route, and the list is
//     atomic only because parentRef cannot serve as a map key). An apply
//     would replace the whole list, and so the entries of other controllers.
//     We therefore write a JSON merge patch of status.parents computed from
//     the live object (foreign entries kept in their order, our entries
//     replaced), guarded by the live resourceVersion (optimistic
//     concurrency): if another controller wrote in between, the patch fails
//     with a conflict and is retried from a fresh read.
//
// No write happens when the desired status equals the live one (compared
// semantically, ignoring lastTransitionTime). Objects are queued by key, so
// many updates of one object before the worker reaches it cost one write.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/ingress"
	"github.com/xds-controller/xds-controller/pkg/memo"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

// FieldManager is the field manager of every status write.
const FieldManager = "xds-controller"

// Writes says whether the writer writes the status of the objects of kind
// (a name of the snapshot's registry, resources.Kind Name): GatewayClass,
// Gateway and ListenerSet (server-side apply), the route kinds
// (gatewayapi.RouteKinds) and the policy kinds (gatewayapi.PolicyKinds:
// their parents or ancestors, routes.go), Ingress (its load balancer,
// ingress.go).
func Writes(kind string) bool {
	switch kind {
	case resources.GatewayClassKind.Name(), resources.GatewayKind.Name(), resources.ListenerSetKind.Name(), resources.IngressKind.Name():
		return true
	}
	return gatewayapi.RouteKindNamed(kind) != nil || gatewayapi.PolicyKindNamed(kind) != nil
}

// Key names one object.
type Key struct {
	// Kind is the object's kind, its name in the snapshot's registry
	// (resources.Kind Name; for a route, gatewayapi.RouteKey Kind).
	Kind      string
	Namespace string
	Name      string
}

func (k Key) String() string {
	if k.Namespace == "" {
		return k.Kind + " " + k.Name
	}
	return k.Kind + " " + k.Namespace + "/" + k.Name
}

func (k Key) nn() types.NamespacedName {
	return types.NamespacedName{Namespace: k.Namespace, Name: k.Name}
}

// Defaults of Options.
const (
	DefaultQPS     = 200
	DefaultBurst   = 400
	DefaultWorkers = 8
)

// Options tune a Writer. The zero value is valid.
type Options struct {
	// ControllerName is ours; default gatewayapi.ControllerName.
	ControllerName gwapiv1.GatewayController
	// Leading reports whether this replica may write now. It is called
	// right before every write; nil means always.
	Leading func() bool
	// QPS and Burst limit the writes (default 200 per second, burst 400:
	// 1000 routes applied at once get their status in a few seconds;
	// the API server's priority and fairness shields it beyond that).
	QPS   float32
	Burst int
	// Workers is how many objects are written at once (default 8); one
	// object is never written by two workers at a time (the workqueue
	// hands a key to one worker until it is done).
	Workers int
	// ResyncPeriod re-checks every desired object against its live status
	// this often (default 10 minutes), in case a change was missed.
	ResyncPeriod time.Duration
	// Log receives write failures; default slog.Default().
	Log *slog.Logger
	// Now is the clock for lastTransitionTime; default time.Now.
	Now func() time.Time
}

// Writer writes the desired status of our objects. Create it with
// NewWriter and run Run in one goroutine.
type Writer struct {
	c      client.Client // reads (usually the informer cache) and writes
	direct client.Reader // reads after a conflict, bypassing the cache
	opts   Options

	queue   workqueue.TypedRateLimitingInterface[Key]
	limiter flowcontrol.RateLimiter

	mu      sync.Mutex
	desired map[Key]any // *GatewayClassStatus, *GatewayStatus, *RouteStatus, *ingress.Status...
	// others are the keys of desired that are neither routes nor
	// Ingresses (UpdateIngresses: ingresses); routesFrom is the
	// Status.Routes map the route entries came from (Update).
	others     []Key
	ingresses  []Key
	routesFrom map[gatewayapi.RouteKey]*gwapiv1.RouteStatus
	written    map[Key]writtenState // what we last wrote, to recognise a stale cache
	fresh      map[Key]bool         // read with direct next time

	writes  atomic.Int64
	metrics *writerMetrics
	// noRoutability is when the API server last refused a Gateway status
	// address's routability (a standard-channel CRD does not declare it:
	// routabilityUndeclared); zero when it has not. Gateway statuses are
	// written without it for routabilityRetry after that.
	noRoutability atomic.Int64
}

type writtenState struct {
	hash            string
	resourceVersion string
}

// NewWriter returns a Writer that reads live objects with c (normally the
// manager's cached client) and, after a write conflict, with direct (an
// uncached reader; nil uses c), and writes with c.
func NewWriter(c client.Client, direct client.Reader, opts Options) *Writer {
	if opts.ControllerName == "" {
		opts.ControllerName = gatewayapi.ControllerName
	}
	if opts.QPS <= 0 {
		opts.QPS = DefaultQPS
	}
	if opts.Burst <= 0 {
		opts.Burst = DefaultBurst
	}
	if opts.Workers <= 0 {
		opts.Workers = DefaultWorkers
	}
	if opts.ResyncPeriod <= 0 {
		opts.ResyncPeriod = 10 * time.Minute
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if direct == nil {
		direct = c
	}
	m := newWriterMetrics()
	return &Writer{
		c:       c,
		direct:  direct,
		opts:    opts,
		metrics: m,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[Key](100*time.Millisecond, 30*time.Second),
			workqueue.TypedRateLimitingQueueConfig[Key]{Name: "status", MetricsProvider: queueMetrics{m}}),
		limiter: flowcontrol.NewTokenBucketRateLimiter(opts.QPS, opts.Burst),
		desired: map[Key]any{},
		written: map[Key]writtenState{},
		fresh:   map[Key]bool{},
	}
}

// Writes returns how many status writes the Writer has sent.
func (w *Writer) Writes() int64 { return w.writes.Load() }

func (w *Writer) leading() bool { return w.opts.Leading == nil || w.opts.Leading() }

// Update replaces the desired status with st (nil: nothing desired): the
// status of every object the translation owns. A route entry with no
// parents removes all of our parents entries from that route (see
// WithStaleRoutes). Objects absent from st are left alone. st is not
// modified and must not be modified afterwards. The desired status is
// updated in place; handed the very Routes map of the last call again (a
// data-plane refresh between two translations: only Programmed on
// Gateways and ListenerSets can differ), it costs O(objects other than
// routes).
//
// Only objects whose desired status changed are queued: the others were
// compared (and written if needed) already, and a change made by someone
// else arrives through Enqueue (the provider calls it on status-only
// events), the periodic resync, or Resync on a new lead.
func (w *Writer) Update(st *gatewayapi.Status) {
	if st == nil {
		st = &gatewayapi.Status{}
	}
	w.mu.Lock()
	changed := w.updateGroup(&w.others, func(desired map[Key]any) []Key { return addOthers(desired, st) })
	if !memo.SameMap(st.Routes, w.routesFrom) {
		changed = append(changed, w.updateRoutes(st.Routes)...)
	}
	w.mu.Unlock()
	w.enqueue(changed)
}

// updateRoutes replaces the desired status of the routes, those of the
// last Update's st.Routes (w.routesFrom), with routes, and returns the
// keys whose status changed; a route gone is forgotten. w.mu is held.
func (w *Writer) updateRoutes(routes map[gatewayapi.RouteKey]*gwapiv1.RouteStatus) []Key {
	keyOf := func(k gatewayapi.RouteKey) Key { return Key{Kind: k.Kind, Namespace: k.Namespace, Name: k.Name} }
	var changed []Key
	for k, s := range routes {
		key := keyOf(k)
		prev, ok := w.desired[key]
		if ok && prev == any(s) {
			continue // a translation cache hands out the very status of a route it did not translate again
		}
		if !ok || !equality.Semantic.DeepEqual(prev, s) {
			changed = append(changed, key)
		}
		w.desired[key] = s
	}
	for k := range w.routesFrom {
		if _, ok := routes[k]; !ok {
			w.forget(keyOf(k))
		}
	}
	w.routesFrom = routes
	return changed
}

// updateGroup replaces the desired status of the objects of one group
// (*group, their keys: the others, the Ingresses) with what add adds to
// desired (it returns their keys), and returns the keys whose status
// changed; an object gone is forgotten. w.mu is held.
func (w *Writer) updateGroup(group *[]Key, add func(desired map[Key]any) []Key) []Key {
	prev := make(map[Key]any, len(*group))
	for _, k := range *group {
		prev[k] = w.desired[k]
		delete(w.desired, k)
	}
	others := add(w.desired)
	var changed []Key
	for _, k := range others {
		if p, ok := prev[k]; !ok || p != w.desired[k] && !equality.Semantic.DeepEqual(p, w.desired[k]) {
			changed = append(changed, k)
		}
		delete(prev, k)
	}
	for k := range prev {
		w.forget(k)
	}
	*group = others
	return changed
}

// forget drops k, no longer desired, and what the writer knew of it.
// w.mu is held.
func (w *Writer) forget(k Key) {
	delete(w.desired, k)
	delete(w.written, k)
	delete(w.fresh, k)
}

// enqueue queues keys, sorted, when this replica leads.
func (w *Writer) enqueue(keys []Key) {
	if w.leading() {
		sortKeys(keys)
		for _, k := range keys {
			w.queue.Add(k)
		}
	}
}

// addOthers adds the desired status of st's objects other than routes
// (GatewayClasses, Gateways, ListenerSets, policies) to desired and
// returns their keys.
func addOthers(desired map[Key]any, st *gatewayapi.Status) []Key {
	keys := make([]Key, 0, len(st.GatewayClasses)+len(st.Gateways)+len(st.ListenerSets)+len(st.Policies))
	add := func(k Key, s any) {
		desired[k] = s
		keys = append(keys, k)
	}
	for name, s := range st.GatewayClasses {
		add(Key{Kind: resources.GatewayClassKind.Name(), Name: name}, s)
	}
	for nn, s := range st.Gateways {
		add(Key{Kind: resources.GatewayKind.Name(), Namespace: nn.Namespace, Name: nn.Name}, s)
	}
	for nn, s := range st.ListenerSets {
		add(Key{Kind: resources.ListenerSetKind.Name(), Namespace: nn.Namespace, Name: nn.Name}, s)
	}
	for k, s := range st.Policies {
		add(Key{Kind: k.Kind, Namespace: k.Namespace, Name: k.Name}, s)
	}
	return keys
}

// Resync queues every desired object for a comparison with its live
// status. Call it when this replica becomes the leader.
func (w *Writer) Resync() {
	w.mu.Lock()
	keys := make([]Key, 0, len(w.desired))
	for k := range w.desired {
		keys = append(keys, k)
	}
	w.mu.Unlock()
	sortKeys(keys)
	for _, k := range keys {
		w.queue.Add(k)
	}
}

// Enqueue queues one object for a comparison with its live status, for
// instance after its status changed without a change to its spec.
func (w *Writer) Enqueue(k Key) {
	w.mu.Lock()
	_, ok := w.desired[k]
	w.mu.Unlock()
	if ok && w.leading() {
		w.queue.Add(k)
	}
}

// sortKeys orders keys GatewayClasses first, then Gateways, then
// ListenerSets, then routes,
// each by namespace/name.
func sortKeys(keys []Key) {
	slices.SortFunc(keys, func(a, b Key) int {
		if a.Kind != b.Kind {
			return kindOrder(a.Kind) - kindOrder(b.Kind)
		}
		if a.Namespace != b.Namespace {
			return strings.Compare(a.Namespace, b.Namespace)
		}
		return strings.Compare(a.Name, b.Name)
	})
}

func kindOrder(k string) int {
	switch k {
	case resources.GatewayClassKind.Name():
		return 0
	case resources.GatewayKind.Name():
		return 1
	case resources.ListenerSetKind.Name():
		return 2
	default:
		return 3
	}
}

// Run writes queued objects until ctx ends.
func (w *Writer) Run(ctx context.Context) error {
	go func() {
		<-ctx.Done()
		w.queue.ShutDown()
	}()
	go func() {
		t := time.NewTicker(w.opts.ResyncPeriod)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if w.leading() {
					w.Resync()
				}
			}
		}
	}()
	var wg sync.WaitGroup
	for range w.opts.Workers {
		wg.Go(func() { w.work(ctx) })
	}
	wg.Wait()
	return nil
}

// work writes queued objects until the queue shuts down.
func (w *Writer) work(ctx context.Context) {
	for {
		k, shutdown := w.queue.Get()
		if shutdown {
			return
		}
		err := w.process(ctx, k)
		switch {
		case err == nil:
			w.queue.Forget(k)
		case ctx.Err() != nil:
			w.queue.Forget(k)
		default:
			result := "error"
			if apierrors.IsConflict(err) {
				result = "conflict"
			}
			w.metrics.writes.WithLabelValues(k.Kind, result).Inc()
			if apierrors.IsConflict(err) {
				w.mu.Lock()
				w.fresh[k] = true
				w.mu.Unlock()
				w.opts.Log.Debug("status write conflict; retrying from a fresh read", "object", k.String())
			} else {
				w.opts.Log.Warn("status write failed; retrying", "object", k.String(), "error", err)
			}
			w.queue.AddRateLimited(k)
		}
		w.queue.Done(k)
	}
}

// errNotLeading stops a write when this replica lost the lead.
var errNotLeading = errors.New("not the leader")

func (w *Writer) process(ctx context.Context, k Key) error {
	if !w.leading() {
		return nil // Resync runs when we lead again
	}
	w.mu.Lock()
	d, ok := w.desired[k]
	var reader client.Reader = w.c
	if w.fresh[k] {
		reader = w.direct
	}
	w.mu.Unlock()
	if !ok {
		return nil
	}
	var err error
	switch writtenAs(k.Kind) {
	case resources.GatewayClassKind.Name():
		err = w.gatewayClass(ctx, reader, k, d.(*gwapiv1.GatewayClassStatus))
	case resources.GatewayKind.Name():
		err = w.gateway(ctx, reader, k, d.(*gwapiv1.GatewayStatus))
	case resources.ListenerSetKind.Name():
		err = w.listenerSet(ctx, reader, k, d.(*gwapiv1.ListenerSetStatus))
	case kindPolicy:
		err = w.parents(ctx, reader, k, ancestorsAsParents(d.(*gwapiv1.PolicyStatus).Ancestors))
	case resources.IngressKind.Name():
		err = w.ingress(ctx, reader, k, d.(*ingress.Status))
	default:
		err = w.parents(ctx, reader, k, d.(*gwapiv1.RouteStatus).Parents)
	}
	if apierrors.IsNotFound(err) || errors.Is(err, errNotLeading) {
		return nil
	}
	if err == nil {
		w.mu.Lock()
		delete(w.fresh, k)
		w.mu.Unlock()
	}
	return err
}

// kindPolicy stands for every policy kind in process (writtenAs).
const kindPolicy = "<policy>"

// writtenAs is k, or kindPolicy for a policy kind (gatewayapi.PolicyKinds):
// how process writes an object of kind k.
func writtenAs(k string) string {
	if gatewayapi.PolicyKindNamed(k) != nil {
		return kindPolicy
	}
	return k
}

func (w *Writer) gatewayClass(ctx context.Context, r client.Reader, k Key, d *gwapiv1.GatewayClassStatus) error {
	var live gwapiv1.GatewayClass
	if err := r.Get(ctx, k.nn(), &live); err != nil {
		return err
	}
	if live.Spec.ControllerName != w.opts.ControllerName {
		return nil // never write another controller's class
	}
	target := GatewayClassStatus(d, &live.Status, w.opts.Now())
	if EqualGatewayClassStatus(target, &live.Status) {
		return nil
	}
	return w.apply(ctx, k, &live, target)
}

func (w *Writer) gateway(ctx context.Context, r client.Reader, k Key, d *gwapiv1.GatewayStatus) error {
	var live gwapiv1.Gateway
	if err := r.Get(ctx, k.nn(), &live); err != nil {
		return err
	}
	target := GatewayStatus(d, &live.Status, w.opts.Now())
	if t := w.noRoutability.Load(); t != 0 && w.opts.Now().Sub(time.Unix(0, t)) < routabilityRetry {
		withoutRoutability(target)
	}
	if EqualGatewayStatus(target, &live.Status) {
		return nil
	}
	err := w.apply(ctx, k, &live, target)
	if routabilityUndeclared(err) && hasRoutability(target) {
		w.noRoutability.Store(w.opts.Now().UnixNano())
		withoutRoutability(target)
		err = w.apply(ctx, k, &live, target)
	}
	return err
}

// routabilityRetry is how long Gateway statuses are written without
// address routability after the API server refused it, before it is tried
// again (the CRDs may have moved to the experimental channel meanwhile).
const routabilityRetry = 5 * time.Minute

// routabilityUndeclared says whether err is the API server's refusal of a
// server-side apply whose status.addresses[].routability its Gateway CRD
// does not declare (the standard channel's: "field not declared in
// schema"; server-side apply refuses unknown fields instead of pruning
// them).
func routabilityUndeclared(err error) bool {
	return err != nil && strings.Contains(err.Error(), "routability: field not declared in schema")
}

// hasRoutability says whether an address of st reports a routability.
func hasRoutability(st *gwapiv1.GatewayStatus) bool {
	return slices.ContainsFunc(st.Addresses, func(a gwapiv1.GatewayStatusAddress) bool { return a.Routability != nil })
}

// withoutRoutability drops the routability of every address of st.
func withoutRoutability(st *gwapiv1.GatewayStatus) {
	for i := range st.Addresses {
		st.Addresses[i].Routability = nil
	}
}

func (w *Writer) listenerSet(ctx context.Context, r client.Reader, k Key, d *gwapiv1.ListenerSetStatus) error {
	var live gwapiv1.ListenerSet
	if err := r.Get(ctx, k.nn(), &live); err != nil {
		return err
	}
	target := ListenerSetStatus(d, &live.Status, w.opts.Now())
	if EqualListenerSetStatus(target, &live.Status) {
		return nil
	}
	return w.apply(ctx, k, &live, target)
}

// parents writes our per-parent entries of k: a route's status.parents,
// or a policy's status.ancestors (entries of the same shape;
// routes.go), desired being ours.
func (w *Writer) parents(ctx context.Context, r client.Reader, k Key, desired []gwapiv1.RouteParentStatus) error {
	live := newObject(k.Kind)
	if live == nil {
		return fmt.Errorf("status: %s has no status.parents or status.ancestors", k.Kind)
	}
	if err := r.Get(ctx, k.nn(), live); err != nil {
		return err
	}
	liveParents := getParents(live)
	parents := RouteParents(desired, liveParents, w.opts.ControllerName, k.Namespace, w.opts.Now())
	if EqualOwnParents(parents, liveParents, w.opts.ControllerName, k.Namespace) {
		return nil
	}
	hash := hashOf(normalizedOwnParents(parents, w.opts.ControllerName, k.Namespace))
	if w.staleCache(k, hash, live.GetResourceVersion()) {
		return nil
	}
	if err := w.beforeWrite(ctx); err != nil {
		return err
	}
	modified := live.DeepCopyObject().(client.Object)
	setParents(modified, parents)
	patch := client.MergeFromWithOptions(live, client.MergeFromWithOptimisticLock{})
	if err := w.c.Status().Patch(ctx, modified, patch, client.FieldOwner(FieldManager)); err != nil {
		return err
	}
	w.wrote(k, hash, modified.GetResourceVersion())
	return nil
}

// apply writes target as the status of live (a GatewayClass, Gateway or
// ListenerSet)
// with server-side apply.
func (w *Writer) apply(ctx context.Context, k Key, live client.Object, target any) error {
	hash := hashOf(normalized(target))
	if w.staleCache(k, hash, live.GetResourceVersion()) {
		return nil
	}
	st, err := runtime.DefaultUnstructuredConverter.ToUnstructured(target)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: map[string]any{"status": st}}
	u.SetAPIVersion(gwapiv1.GroupVersion.String())
	u.SetKind(k.Kind)
	u.SetName(k.Name)
	u.SetNamespace(k.Namespace)
	if err := w.beforeWrite(ctx); err != nil {
		return err
	}
	if err := w.c.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return err
	}
	w.wrote(k, hash, u.GetResourceVersion())
	return nil
}

// beforeWrite waits for the rate limiter, then checks, as late as possible,
// that this replica still leads.
func (w *Writer) beforeWrite(ctx context.Context) error {
	if err := w.limiter.Wait(ctx); err != nil {
		return err
	}
	if !w.leading() {
		return errNotLeading
	}
	w.writes.Add(1)
	return nil
}

// staleCache reports whether the live object read is older than our last
// write of the same content: the cache has not caught up with our write
// yet, and writing again would only repeat it.
func (w *Writer) staleCache(k Key, hash, liveRV string) bool {
	w.mu.Lock()
	last, ok := w.written[k]
	w.mu.Unlock()
	if !ok || last.hash != hash || last.resourceVersion == "" {
		return false
	}
	c, err := resourceversion.CompareResourceVersion(liveRV, last.resourceVersion)
	return err == nil && c < 0
}

func (w *Writer) wrote(k Key, hash, rv string) {
	w.metrics.writes.WithLabelValues(k.Kind, "written").Inc()
	w.mu.Lock()
	w.written[k] = writtenState{hash: hash, resourceVersion: rv}
	w.mu.Unlock()
}

func normalized(st any) any {
	switch s := st.(type) {
	case *gwapiv1.GatewayClassStatus:
		s = s.DeepCopy()
		zeroTimes(s.Conditions)
		return s
	case *gwapiv1.GatewayStatus:
		s = s.DeepCopy()
		zeroTimes(s.Conditions)
		for i := range s.Listeners {
			zeroTimes(s.Listeners[i].Conditions)
		}
		return s
	case *gwapiv1.ListenerSetStatus:
		s = s.DeepCopy()
		zeroTimes(s.Conditions)
		for i := range s.Listeners {
			zeroTimes(s.Listeners[i].Conditions)
		}
		return s
	}
	return st
}

func normalizedOwnParents(parents []gwapiv1.RouteParentStatus, controller gwapiv1.GatewayController, ns string) any {
	own := map[string]gwapiv1.RouteParentStatus{}
	for _, p := range OwnParents(parents, controller) {
		p = *p.DeepCopy()
		zeroTimes(p.Conditions)
		own[ParentKey(p.ParentRef, ns)] = p
	}
	return own // encoding/json sorts map keys
}

func hashOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}
