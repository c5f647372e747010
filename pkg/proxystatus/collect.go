package proxystatus

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/provider/kubernetes"
)

// Collect reads Build's input from the API server through c: the
// data-plane report ConfigMaps (label kubernetes.ReportLabel) of
// controllerNamespace, decoded as the replicas decode each other's
// (kubernetes.PeerReports; an undecodable one is left out), and the
// Gateways of every namespace. It fails when the reports cannot be listed
// (the error names the RBAC it needs); Gateways that cannot be listed
// only add a warning, and the proxies then name no Gateway. Now is the
// current time.
func Collect(ctx context.Context, c client.Reader, controllerNamespace string) (Input, []string, error) {
	in := Input{ControllerNamespace: controllerNamespace, Now: time.Now()}
	var cms corev1.ConfigMapList
	if err := c.List(ctx, &cms, client.InNamespace(controllerNamespace), client.MatchingLabels{kubernetes.ReportLabel: "true"}); err != nil {
		return in, nil, fmt.Errorf("listing the data-plane reports (ConfigMaps labelled %s=true in namespace %s; needs list on configmaps there): %w",
			kubernetes.ReportLabel, controllerNamespace, err)
	}
	in.Reports = kubernetes.PeerReports(cms.Items, "", nil)
	var warnings []string
	if len(cms.Items) == 0 {
		warnings = append(warnings, fmt.Sprintf("no data-plane report in namespace %s: is the controller running there (--namespace)?", controllerNamespace))
	}
	var gws gwapiv1.GatewayList
	if err := c.List(ctx, &gws); err != nil {
		warnings = append(warnings, fmt.Sprintf("listing Gateways failed, so no proxy names its Gateways: %v", err))
		return in, warnings, nil
	}
	for i := range gws.Items {
		in.Gateways = append(in.Gateways, &gws.Items[i])
	}
	return in, warnings, nil
}
