package infra

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
)

// TestEnvoyPodServesMetrics: in both modes the Envoy container names its
// metrics port, and the pod carries the prometheus.io annotations that
// annotation-based scraping reads; a Gateway's infrastructure annotation
// of the same key wins.
func TestEnvoyPodServesMetrics(t *testing.T) {
	for _, mode := range []v1alpha1.Mode{v1alpha1.ModeShared, v1alpha1.ModeDedicated} {
		t.Run(string(mode), func(t *testing.T) {
			pod := renderedPod(t, mode, nil)
			var port *corev1.ContainerPort
			for i, p := range pod.Spec.Containers[0].Ports {
				if p.Name == "metrics" {
					port = &pod.Spec.Containers[0].Ports[i]
				}
			}
			if port == nil || port.ContainerPort != MetricsPort || port.Protocol != corev1.ProtocolTCP {
				t.Errorf("Envoy's metrics port: %+v, want TCP %d", port, MetricsPort)
			}
			for k, want := range map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "19003", "prometheus.io/path": "/stats/prometheus"} {
				if got := pod.Annotations[k]; got != want {
					t.Errorf("annotation %s = %q, want %q", k, got, want)
				}
			}
		})
	}
	// A Gateway that says where it is scraped keeps its annotation.
	gw := gateway("apps", "web", 0, 80)
	gw.Spec.Infrastructure = &gwapiv1.GatewayInfrastructure{Annotations: map[gwapiv1.AnnotationKey]gwapiv1.AnnotationValue{"prometheus.io/scrape": "false"}}
	objs, err := testRenderer().Dedicated(DedicatedInput{Gateway: gw, Params: Effective(&v1alpha1.GatewayParametersSpec{Mode: ptr.To(v1alpha1.ModeDedicated)}, nil), TrustBundle: testBundle})
	if err != nil {
		t.Fatal(err)
	}
	if got := find[*appsv1.Deployment](t, objs)[0].Spec.Template.Annotations["prometheus.io/scrape"]; got != "false" {
		t.Errorf("prometheus.io/scrape = %q with the Gateway's infrastructure annotation false", got)
	}
}
