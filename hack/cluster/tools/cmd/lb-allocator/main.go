// Command lb-allocator gives Services of type LoadBalancer addresses from a
// pool routed to the local cluster's own bridge, and writes them into the
// Service's status; kube-proxy then programs them. It handles Services whose
// spec.loadBalancerClass is unset, and clears the addresses of Services that
// stop being of type LoadBalancer.
//
// A Service that requests addresses (the annotation metallb.io/loadBalancerIPs,
// comma-separated, as MetalLB reads it, and spec.loadBalancerIP) gets exactly
// those that are in the pool and not in use by another Service, also when the
// request changes later; the others are refused, and the Service's condition
// xds-controller.dev/AddressesRefused (status True) names each one and why,
// for the Gateway controller to report them as AddressNotUsable. When the
// request no longer refuses anything the condition is removed. A Service that
// requests nothing keeps the address it has, else gets the lowest free
// address below -static-start: the addresses from -static-start to
// -pool-end are given only on request (like a MetalLB pool with
// autoAssign: false), so tests can count on them being free.
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

const (
	// annotationIPs requests addresses, comma-separated (MetalLB's key;
	// pkg/infra.AnnotationLoadBalancerIPs).
	annotationIPs = "metallb.io/loadBalancerIPs"
	// conditionRefused names the requested addresses that were refused
	// (pkg/status.ServiceConditionAddressesRefused).
	conditionRefused = "xds-controller.dev/AddressesRefused"
)

type allocator struct {
	client kubernetes.Interface
	lister listersv1.ServiceLister
	queue  workqueue.TypedRateLimitingInterface[string]
	first  netip.Addr
	last   netip.Addr
	// static is the first address given only on request (invalid: none).
	static   netip.Addr
	mu       sync.Mutex
	reserved map[netip.Addr]string // address -> namespace/name, for addresses written but maybe not yet in the cache
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file")
	start := flag.String("pool-start", "", "first address of the pool")
	end := flag.String("pool-end", "", "last address of the pool")
	staticStart := flag.String("static-start", "", "first address of the pool's end that is given only on request (default: none)")
	flag.Parse()
	first, err1 := netip.ParseAddr(*start)
	last, err2 := netip.ParseAddr(*end)
	var static netip.Addr
	var err3 error
	if *staticStart != "" {
		static, err3 = netip.ParseAddr(*staticStart)
		if err3 == nil && (static.Less(first) || last.Less(static)) {
			err3 = fmt.Errorf("-static-start %s is outside the pool", static)
		}
	}
	if err1 != nil || err2 != nil || err3 != nil || last.Less(first) {
		fmt.Fprintln(os.Stderr, "usage: lb-allocator -kubeconfig FILE -pool-start IP -pool-end IP [-static-start IP]")
		os.Exit(2)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		klog.Fatal(err)
	}
	cfg.UserAgent = "lb-allocator"
	client := kubernetes.NewForConfigOrDie(cfg)
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()

	factory := informers.NewSharedInformerFactory(client, 10*time.Minute)
	inf := factory.Core().V1().Services()
	a := &allocator{
		client: client, lister: inf.Lister(), first: first, last: last, static: static,
		queue:    workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		reserved: map[netip.Addr]string{},
	}
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			a.queue.Add(key)
		}
	}
	_, _ = inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, o any) { enqueue(o) }, DeleteFunc: func(o any) { a.forget(o); enqueue(o) },
	})
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.Informer().HasSynced) {
		klog.Fatal("cache did not sync")
	}
	klog.Infof("lb-allocator: pool %s-%s, given only on request from %v", first, last, static)
	go func() { <-ctx.Done(); a.queue.ShutDown() }()
	for a.next(ctx) {
	}
}

func (a *allocator) forget(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	key := svc.Namespace + "/" + svc.Name
	for ip, k := range a.reserved {
		if k == key {
			delete(a.reserved, ip)
		}
	}
}

func (a *allocator) next(ctx context.Context) bool {
	key, quit := a.queue.Get()
	if quit {
		return false
	}
	defer a.queue.Done(key)
	if err := a.sync(ctx, key); err != nil {
		klog.Errorf("sync %s: %v", key, err)
		a.queue.AddRateLimited(key)
		return true
	}
	a.queue.Forget(key)
	return true
}

func (a *allocator) inPool(ip netip.Addr) bool {
	return ip.IsValid() && !ip.Less(a.first) && !a.last.Less(ip)
}

func (a *allocator) sync(ctx context.Context, key string) error {
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	svc, err := a.lister.Services(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	wants := svc.Spec.Type == corev1.ServiceTypeLoadBalancer && svc.Spec.LoadBalancerClass == nil
	current := poolAddrs(svc, a)
	if !wants {
		if len(current) == 0 && meta.FindStatusCondition(svc.Status.Conditions, conditionRefused) == nil {
			a.forget(svc) // the apiserver cleared the status itself
			return nil
		}
		s := svc.DeepCopy()
		s.Status.LoadBalancer = corev1.LoadBalancerStatus{}
		meta.RemoveStatusCondition(&s.Status.Conditions, conditionRefused)
		_, err := a.client.CoreV1().Services(ns).UpdateStatus(ctx, s, metav1.UpdateOptions{})
		if err == nil {
			klog.Infof("%s: released %v", key, current)
			a.forget(svc)
		}
		return err
	}
	ips, refusals, err := a.choose(svc, current)
	if err != nil {
		return err
	}
	s := svc.DeepCopy()
	vip := corev1.LoadBalancerIPModeVIP
	s.Status.LoadBalancer.Ingress = nil
	for _, ip := range ips {
		s.Status.LoadBalancer.Ingress = append(s.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: ip.String(), IPMode: &vip})
	}
	if len(refusals) > 0 {
		meta.SetStatusCondition(&s.Status.Conditions, metav1.Condition{
			Type: conditionRefused, Status: metav1.ConditionTrue, Reason: "AddressesRefused",
			Message: strings.Join(refusals, "; "), ObservedGeneration: svc.Generation,
		})
	} else {
		meta.RemoveStatusCondition(&s.Status.Conditions, conditionRefused)
	}
	if sameIngress(svc.Status.LoadBalancer.Ingress, s.Status.LoadBalancer.Ingress) &&
		sameCondition(svc.Status.Conditions, s.Status.Conditions) {
		a.release(key, ips)
		return nil
	}
	if _, err := a.client.CoreV1().Services(ns).UpdateStatus(ctx, s, metav1.UpdateOptions{}); err != nil {
		a.release(key, current)
		return err
	}
	a.release(key, ips)
	klog.Infof("%s: assigned %v, refused %q", key, ips, refusals)
	return nil
}

// release drops the reservations of key except those of keep.
func (a *allocator) release(key string, keep []netip.Addr) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for ip, k := range a.reserved {
		if k == key && !slices.Contains(keep, ip) {
			delete(a.reserved, ip)
		}
	}
}

func sameIngress(a, b []corev1.LoadBalancerIngress) bool {
	return slices.EqualFunc(a, b, func(x, y corev1.LoadBalancerIngress) bool {
		return x.IP == y.IP && x.Hostname == y.Hostname && (x.IPMode == nil) == (y.IPMode == nil) && (x.IPMode == nil || *x.IPMode == *y.IPMode)
	})
}

func sameCondition(a, b []metav1.Condition) bool {
	x, y := meta.FindStatusCondition(a, conditionRefused), meta.FindStatusCondition(b, conditionRefused)
	if x == nil || y == nil {
		return x == y
	}
	return x.Status == y.Status && x.Message == y.Message && x.ObservedGeneration == y.ObservedGeneration
}

func poolAddrs(svc *corev1.Service, a *allocator) []netip.Addr {
	var out []netip.Addr
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if ip, err := netip.ParseAddr(in.IP); err == nil && a.inPool(ip) {
			out = append(out, ip)
		}
	}
	return out
}

// requested are the addresses svc asks for, in order and without
// duplicates: the annotation metallb.io/loadBalancerIPs, then
// spec.loadBalancerIP; the values that are not IP addresses come back
// apart.
func requested(svc *corev1.Service) (ips []netip.Addr, bad []string) {
	var values []string
	if v, ok := svc.Annotations[annotationIPs]; ok {
		values = strings.Split(v, ",")
	}
	values = append(values, svc.Spec.LoadBalancerIP)
	for _, v := range values {
		if v = strings.TrimSpace(v); v == "" {
			continue
		}
		ip, err := netip.ParseAddr(v)
		switch {
		case err != nil:
			bad = append(bad, v)
		case !slices.Contains(ips, ip):
			ips = append(ips, ip)
		}
	}
	return ips, bad
}

// choose reserves the addresses svc gets and says why requested ones were
// refused. A Service that requests addresses gets those of them that are
// in the pool and free (its own current ones are free for it); one that
// requests none keeps its current addresses, else gets the lowest free
// address below a.static. The error is an exhausted pool.
func (a *allocator) choose(svc *corev1.Service, current []netip.Addr) ([]netip.Addr, []string, error) {
	all, err := a.lister.List(labels.Everything())
	if err != nil {
		return nil, nil, err
	}
	key := svc.Namespace + "/" + svc.Name
	a.mu.Lock()
	defer a.mu.Unlock()
	usedBy := map[netip.Addr]string{}
	for ip, k := range a.reserved {
		if k != key {
			usedBy[ip] = k
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
	for _, s := range all {
		if k := s.Namespace + "/" + s.Name; k != key {
			for _, ip := range poolAddrs(s, a) {
				usedBy[ip] = k
			}
		}
	}
	want, bad := requested(svc)
	var refusals []string
	for _, v := range bad {
		refusals = append(refusals, fmt.Sprintf("%q is not an IP address", v))
	}
	if len(want) > 0 || len(bad) > 0 {
		var got []netip.Addr
		for _, ip := range want {
			switch {
			case !a.inPool(ip):
				refusals = append(refusals, fmt.Sprintf("%s is outside the pool %s-%s", ip, a.first, a.last))
			case usedBy[ip] != "":
				refusals = append(refusals, fmt.Sprintf("%s is in use by Service %s", ip, usedBy[ip]))
			default:
				a.reserved[ip] = key
				got = append(got, ip)
			}
		}
		return got, refusals, nil
	}
	if len(current) > 0 {
		return current, nil, nil
	}
	for ip := a.first; !a.last.Less(ip) && (!a.static.IsValid() || ip.Less(a.static)); ip = ip.Next() {
		if usedBy[ip] == "" {
			a.reserved[ip] = key
			return []netip.Addr{ip}, nil, nil
		}
	}
	return nil, nil, fmt.Errorf("pool %s-%s is exhausted", a.first, cmp.Or(a.static.Prev(), a.last))
}
