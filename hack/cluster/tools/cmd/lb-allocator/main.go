// Command lb-allocator gives Services of type LoadBalancer an address from a
// pool routed to the local cluster's own bridge, and writes it into the
// Service's status; kube-proxy then programs the address. It handles Services
// whose spec.loadBalancerClass is unset, honours spec.loadBalancerIP when that
// address is in the pool and free (also when it changes later), and clears addresses of Services that stop
// being of type LoadBalancer.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"slices"
	"sort"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

type allocator struct {
	client   kubernetes.Interface
	lister   listersv1.ServiceLister
	queue    workqueue.TypedRateLimitingInterface[string]
	first    netip.Addr
	last     netip.Addr
	mu       sync.Mutex
	reserved map[netip.Addr]string // address -> namespace/name, for addresses written but maybe not yet in the cache
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file")
	start := flag.String("pool-start", "", "first address of the pool")
	end := flag.String("pool-end", "", "last address of the pool")
	flag.Parse()
	first, err1 := netip.ParseAddr(*start)
	last, err2 := netip.ParseAddr(*end)
	if err1 != nil || err2 != nil || last.Less(first) {
		fmt.Fprintln(os.Stderr, "usage: lb-allocator -kubeconfig FILE -pool-start IP -pool-end IP")
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
		client: client, lister: inf.Lister(), first: first, last: last,
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
	klog.Infof("lb-allocator: pool %s-%s", first, last)
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
		if len(current) == 0 {
			a.forget(svc) // the apiserver cleared the status itself
			return nil
		}
		s := svc.DeepCopy()
		s.Status.LoadBalancer = corev1.LoadBalancerStatus{}
		_, err := a.client.CoreV1().Services(ns).UpdateStatus(ctx, s, metav1.UpdateOptions{})
		if err == nil {
			klog.Infof("%s: released %v", key, current)
			a.forget(svc)
		}
		return err
	}
	moving := len(current) > 0
	if moving {
		// An address is kept unless spec.loadBalancerIP now asks for
		// another pool address; the Service then moves there when it is
		// free (as MetalLB does), and stays where it is when it is not.
		want, err := netip.ParseAddr(svc.Spec.LoadBalancerIP)
		if err != nil || slices.Contains(current, want) || !a.inPool(want) {
			return nil
		}
	}
	ip, err := a.pick(svc)
	if err != nil {
		return err
	}
	if moving && ip.String() != svc.Spec.LoadBalancerIP {
		a.mu.Lock()
		delete(a.reserved, ip)
		a.mu.Unlock()
		return nil
	}
	s := svc.DeepCopy()
	vip := corev1.LoadBalancerIPModeVIP
	s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip.String(), IPMode: &vip}}
	if _, err := a.client.CoreV1().Services(ns).UpdateStatus(ctx, s, metav1.UpdateOptions{}); err != nil {
		a.mu.Lock()
		delete(a.reserved, ip)
		a.mu.Unlock()
		return err
	}
	a.mu.Lock()
	for _, old := range current {
		if a.reserved[old] == key {
			delete(a.reserved, old)
		}
	}
	a.mu.Unlock()
	klog.Infof("%s: assigned %s", key, ip)
	return nil
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

// pick reserves a free address for svc: its spec.loadBalancerIP when that is
// in the pool and free, else the lowest free one.
func (a *allocator) pick(svc *corev1.Service) (netip.Addr, error) {
	all, err := a.lister.List(labels.Everything())
	if err != nil {
		return netip.Addr{}, err
	}
	key := svc.Namespace + "/" + svc.Name
	a.mu.Lock()
	defer a.mu.Unlock()
	used := map[netip.Addr]bool{}
	for ip, k := range a.reserved {
		if k != key {
			used[ip] = true
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
	for _, s := range all {
		if s.Namespace+"/"+s.Name == key {
			continue
		}
		for _, ip := range poolAddrs(s, a) {
			used[ip] = true
		}
	}
	if want, err := netip.ParseAddr(svc.Spec.LoadBalancerIP); err == nil && a.inPool(want) && !used[want] {
		a.reserved[want] = key
		return want, nil
	}
	for ip := a.first; !a.last.Less(ip); ip = ip.Next() {
		if !used[ip] {
			a.reserved[ip] = key
			return ip, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("pool %s-%s is exhausted", a.first, a.last)
}
