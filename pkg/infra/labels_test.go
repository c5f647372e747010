package infra

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
)

// TestRenderedLabelsAreValid: every label of every rendered object (and of
// the pod templates) passes the API server's label validation; an invalid
// one makes the whole apply fail in a cluster (as the EndpointSlice
// managed-by value once did).
func TestRenderedLabelsAreValid(t *testing.T) {
	r := testRenderer()
	gw := withInfra(gateway("apps", "web", 0, 80, 8080))
	bp := AssignBindPorts([]*gwapiv1.Gateway{gw}, shared, nil)
	var all []client.Object
	add := func(objs []client.Object, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, objs...)
	}
	add(r.SharedFleet(SharedFleetInput{Class: testClass(), Params: SharedFleetParams(nil), TrustBundle: testBundle}))
	add(r.SharedGateway(SharedGatewayInput{Gateway: gw, Params: Effective(nil, nil), BindPort: bp.BindPort,
		Endpoints: EndpointsFromPods([]corev1.Pod{pod("p", "10.0.0.1", true, false), pod("q", "fd00::1", true, false)})}))
	add(r.Dedicated(DedicatedInput{Gateway: gw, Params: Effective(&v1alpha1.GatewayParametersSpec{Mode: ptr.To(v1alpha1.ModeDedicated)}, nil), TrustBundle: testBundle}))
	check := func(what string, labels map[string]string) {
		for k, v := range labels {
			for _, msg := range validation.IsQualifiedName(k) {
				t.Errorf("%s: label key %q: %s", what, k, msg)
			}
			for _, msg := range validation.IsValidLabelValue(v) {
				t.Errorf("%s: label %s value %q: %s", what, k, v, msg)
			}
		}
	}
	for _, o := range all {
		what := o.GetObjectKind().GroupVersionKind().Kind + " " + o.GetName()
		check(what, o.GetLabels())
	}
	for _, d := range find[*appsv1.Deployment](t, all) {
		check("pod template of "+d.Name, d.Spec.Template.Labels)
	}
}
