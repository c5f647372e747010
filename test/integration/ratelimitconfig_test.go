package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
	"github.com/xds-controller/xds-controller/pkg/provider/kubernetes"
	"github.com/xds-controller/xds-controller/pkg/ratelimitconfig"
)

// TestGlobalRateLimitsReachTheServiceConfigMap: the leading controller
// (configured with a rate-limit service) writes the global rules of the
// TrafficPolicies into the service's ConfigMap in its namespace: golden
// case 150's policy default/limits lands as its scope's domain
// (gatewayclass_xds.yaml, the rules named by the policy), and a change of
// the policy's rules, then its deletion, reach the ConfigMap too.
func TestGlobalRateLimitsReachTheServiceConfigMap(t *testing.T) {
	requireAPIServer(t)
	startReplica(t, replicaOptions{identity: "ratelimit"})
	ctx := context.Background()
	applyFile(t, filepath.Join(testdata, "150-traffic-global-ratelimit.in.yaml"))
	key := types.NamespacedName{Namespace: controllerNamespace, Name: ratelimitconfig.ConfigMapName(kubernetes.DefaultServiceAccount)}
	domain := func(want ...string) func() error {
		return func() error {
			var cm corev1.ConfigMap
			if err := k8sClient.Get(ctx, key, &cm); err != nil {
				return err
			}
			got, ok := cm.Data["gatewayclass_xds.yaml"]
			if !ok {
				return fmt.Errorf("ConfigMap %s has keys %v, want gatewayclass_xds.yaml", key, keys(cm.Data))
			}
			for _, w := range want {
				if !strings.Contains(got, w) {
					return fmt.Errorf("domain gatewayclass_xds:\n%s\nhas no %q", got, w)
				}
			}
			return nil
		}
	}
	eventually(t, 20*time.Second, "the policy's rules in the ConfigMap", domain("default/limits/0", "default/limits/2", "requests_per_unit: 100"))

	var p v1alpha1.TrafficPolicy
	if err := k8sClient.Get(ctx, types.NamespacedName{Namespace: "default", Name: "limits"}, &p); err != nil {
		t.Fatal(err)
	}
	p.Spec.RateLimit.Global.Rules[0].Requests = 7
	if err := k8sClient.Update(ctx, &p); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "the changed rule in the ConfigMap", domain("requests_per_unit: 7"))

	if err := k8sClient.Delete(ctx, &p); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "the deleted policy's rules gone", func() error {
		var cm corev1.ConfigMap
		if err := k8sClient.Get(ctx, key, &cm); err != nil {
			return err
		}
		if strings.Contains(cm.Data["gatewayclass_xds.yaml"], "default/limits/") {
			return fmt.Errorf("ConfigMap %s still has the deleted policy's rules:\n%s", key, cm.Data["gatewayclass_xds.yaml"])
		}
		return nil
	})
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
