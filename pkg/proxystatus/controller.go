package proxystatus

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ControllerPodLabels are the labels of the controller's pods that
// FindControllerNamespace selects: the Helm chart's selector labels
// (charts/xds-controller/templates/_helpers.tpl, xds-controller.selectorLabels)
// without app.kubernetes.io/instance, so that any release name matches.
var ControllerPodLabels = map[string]string{
	"app.kubernetes.io/name":      "xds-controller",
	"app.kubernetes.io/component": "controller",
}

// FindControllerNamespace returns the namespace of the controller, for the
// operator commands run without a namespace (proxy-status -n, config-dump
// --controller-namespace): it lists the pods labelled ControllerPodLabels
// in every namespace through c. Errors: listing failed (the error names the
// RBAC it needs: list pods cluster-wide), no such pod anywhere, or pods in
// several namespaces (each listed with its pods); each error says to name
// the namespace with flag, the caller's flag for it.
func FindControllerNamespace(ctx context.Context, c client.Reader, flag string) (string, error) {
	var pods corev1.PodList
	sel := labels.SelectorFromSet(ControllerPodLabels)
	if err := c.List(ctx, &pods, client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return "", fmt.Errorf("finding the controller: listing pods labelled %s in every namespace (needs list on pods cluster-wide; or name its namespace with %s): %w", sel, flag, err)
	}
	byNamespace := map[string][]string{}
	for _, p := range pods.Items {
		byNamespace[p.Namespace] = append(byNamespace[p.Namespace], p.Name)
	}
	switch len(byNamespace) {
	case 0:
		return "", fmt.Errorf("no controller pod (labels %s) in any namespace: is xds-controller installed (charts/xds-controller)? Name its namespace with %s", sel, flag)
	case 1:
		for ns := range byNamespace {
			return ns, nil
		}
	}
	var found []string
	for _, ns := range slices.Sorted(maps.Keys(byNamespace)) {
		names := byNamespace[ns]
		slices.Sort(names)
		found = append(found, fmt.Sprintf("%s (%s)", ns, strings.Join(names, ", ")))
	}
	return "", fmt.Errorf("controller pods (labels %s) in %d namespaces: %s; name one with %s", sel, len(found), strings.Join(found, "; "), flag)
}
