package kubernetes

// The Pods that EndpointSelector XBackends select (pkg/gatewayapi
// xbackend.go): the snapshot's Pods (resources.PodKind) come from a cache
// of their own, in every watched namespace, because the manager's cache
// holds only the Envoy pods of the controller's namespace (the
// provisioner's cache.ByObject). Each Pod is cached stripped to what the
// translation reads (stripPod), and only a change of that re-runs the
// pipeline (podHandler), so the churn of Pods' other status fields costs
// nothing.

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/xds-controller/xds-controller/pkg/resources"
)

// podCacheOptions are the options of the Pod cache: Pods only (every
// other kind is the manager's), stripped (stripPod), in namespaces (every
// namespace when empty; Config.WatchNamespaces with the controller's).
func podCacheOptions(namespaces []string) cache.Options {
	return cache.Options{
		ByObject:          map[client.Object]cache.ByObject{&corev1.Pod{}: {Transform: stripPod}},
		DefaultNamespaces: namespaceConfigs(namespaces),
	}
}

// stripPod keeps of a Pod what an EndpointSelector reads: its name,
// namespace, labels, deletion timestamp, IPs and Ready condition (without
// its times and message). Other objects pass unchanged.
func stripPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	out := &corev1.Pod{
		TypeMeta: pod.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID, ResourceVersion: pod.ResourceVersion,
			Generation: pod.Generation, Labels: pod.Labels, DeletionTimestamp: pod.DeletionTimestamp,
		},
		Status: corev1.PodStatus{PodIP: pod.Status.PodIP, PodIPs: pod.Status.PodIPs},
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			out.Status.Conditions = []corev1.PodCondition{{Type: c.Type, Status: c.Status}}
		}
	}
	return out, nil
}

// podHandler re-runs the pipeline when a Pod appears, goes, or changes
// what stripPod keeps (labels, deletion, IPs, readiness).
func (p *pipeline) podHandler() toolscache.ResourceEventHandler {
	kind := resources.PodKind.Name()
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { p.trigger(kind) },
		UpdateFunc: func(oldObj, newObj any) {
			o, _ := objectOf(oldObj).(*corev1.Pod)
			n, _ := objectOf(newObj).(*corev1.Pod)
			if o == nil || n == nil || !samePodView(o, n) {
				p.trigger(kind)
			}
		},
		DeleteFunc: func(any) { p.trigger(kind) },
	}
}

func samePodView(a, b *corev1.Pod) bool {
	return equality.Semantic.DeepEqual(a.Labels, b.Labels) && equality.Semantic.DeepEqual(a.DeletionTimestamp, b.DeletionTimestamp) &&
		a.Status.PodIP == b.Status.PodIP && slices.Equal(a.Status.PodIPs, b.Status.PodIPs) &&
		equality.Semantic.DeepEqual(a.Status.Conditions, b.Status.Conditions)
}
