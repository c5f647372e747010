package configdump

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/infra"
)

// Target is the Envoy pod whose configuration is dumped.
type Target struct {
	Pod *corev1.Pod
	// Gateway is the Gateway it was found by ("namespace/name"), "" when
	// the pod was named.
	Gateway string
}

// Find resolves the command's argument: name in namespace is a Gateway
// (its fleet's pods: the dedicated fleet in the Gateway's namespace, else
// its class's shared fleet in controllerNamespace; infra.FleetSelector),
// else an Envoy pod. pod, when set, picks that pod of the Gateway's fleet;
// otherwise the first Ready one by name. Errors: nothing of that name, no
// Ready pod, a pod that is not an Envoy of ours, or the API server's
// (RBAC: get gateways and list pods).
func Find(ctx context.Context, c client.Reader, namespace, name, pod, controllerNamespace string) (Target, error) {
	var gw gwapiv1.Gateway
	err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &gw)
	switch {
	case err == nil:
		var searched []string
		for _, f := range []infra.Fleet{infra.DedicatedFleet(&gw), infra.SharedFleet(controllerNamespace, string(gw.Spec.GatewayClassName))} {
			var pods corev1.PodList
			if err := c.List(ctx, &pods, client.InNamespace(f.Namespace), client.MatchingLabels(infra.FleetSelector(f))); err != nil {
				return Target{}, fmt.Errorf("listing the pods of fleet %s/%s: %w", f.Namespace, f.Name, err)
			}
			searched = append(searched, f.Namespace+"/"+f.Name)
			if len(pods.Items) == 0 {
				continue
			}
			p, err := Pick(pods.Items, pod)
			if err != nil {
				return Target{}, fmt.Errorf("Gateway %s/%s (fleet %s/%s): %w", namespace, name, f.Namespace, f.Name, err)
			}
			return Target{Pod: p, Gateway: namespace + "/" + name}, nil
		}
		return Target{}, fmt.Errorf("Gateway %s/%s has no Envoy pod (fleets searched: %s; is %s the controller's namespace? --controller-namespace)",
			namespace, name, strings.Join(searched, ", "), controllerNamespace)
	case !apierrors.IsNotFound(err):
		return Target{}, fmt.Errorf("reading Gateway %s/%s: %w", namespace, name, err)
	}
	if pod != "" && pod != name {
		return Target{}, fmt.Errorf("no Gateway %s/%s (--pod picks a pod of a Gateway's fleet)", namespace, name)
	}
	var p corev1.Pod
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &p); err != nil {
		if apierrors.IsNotFound(err) {
			return Target{}, fmt.Errorf("neither a Gateway nor a pod %s/%s", namespace, name)
		}
		return Target{}, fmt.Errorf("reading pod %s/%s: %w", namespace, name, err)
	}
	if p.Labels[infra.LabelName] != "envoy" {
		return Target{}, fmt.Errorf("pod %s/%s is not an Envoy pod of xds-controller (label %s=envoy)", namespace, name, infra.LabelName)
	}
	return Target{Pod: &p}, nil
}

// Pick returns the pod named want of pods, or, when want is "", the first
// by name that is Ready and not being deleted. It is pure.
func Pick(pods []corev1.Pod, want string) (*corev1.Pod, error) {
	sorted := slices.Clone(pods)
	slices.SortFunc(sorted, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	var names []string
	for i := range sorted {
		p := &sorted[i]
		names = append(names, p.Name)
		if want != "" {
			if p.Name == want {
				return p, nil
			}
			continue
		}
		if p.DeletionTimestamp == nil && ready(p) {
			return p, nil
		}
	}
	if want != "" {
		return nil, fmt.Errorf("no pod %s among %s", want, strings.Join(names, ", "))
	}
	return nil, fmt.Errorf("none of its pods is Ready (%s)", strings.Join(names, ", "))
}

func ready(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
