package kubernetes

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/provider/file"
	"github.com/xds-controller/xds-controller/pkg/resources"
	"github.com/xds-controller/xds-controller/pkg/translate"
)

// TestSlimServicesTranslateTheSame: every golden input whose Services and
// EndpointSlices are first given the fields a cluster adds (a selector,
// IP families, session affinity; target Pods, nodes, zones, the other
// conditions, the endpoint controller's annotation) and then cached as
// stripService and stripEndpointSlice keep them translates to the same IR,
// status and xDS as the input itself.
func TestSlimServicesTranslateTheSame(t *testing.T) {
	inputs, err := filepath.Glob("../../translate/testdata/*.in.yaml")
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no golden inputs: %v", err)
	}
	checked := 0
	for _, in := range inputs {
		data, err := os.ReadFile(in)
		if err != nil {
			t.Fatal(err)
		}
		opts := translate.GoldenOptions(data)
		res, _, err := file.Load(in)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Services)+len(res.EndpointSlices) == 0 {
			continue
		}
		checked++
		want := translated(t, in, res, opts)
		for _, svc := range res.Services {
			svc.Spec.Selector = map[string]string{"app": svc.Name}
			svc.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
			svc.Spec.SessionAffinity = corev1.ServiceAffinityNone
			svc.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
		}
		for _, es := range res.EndpointSlices {
			es.Annotations = map[string]string{"endpoints.kubernetes.io/last-change-trigger-time": "2026-01-01T00:00:00Z"}
			for i := range es.Endpoints {
				ep := &es.Endpoints[i]
				ep.NodeName, ep.Zone = new("node-1"), new("zone-a")
				ep.TargetRef = &corev1.ObjectReference{Kind: "Pod", Namespace: es.Namespace, Name: "pod"}
				ep.Conditions.Serving, ep.Conditions.Terminating = new(true), new(false)
			}
		}
		for i, svc := range res.Services {
			o, err := stripService(svc)
			if err != nil {
				t.Fatal(err)
			}
			res.Services[i] = o.(*corev1.Service)
		}
		for i, es := range res.EndpointSlices {
			o, err := stripEndpointSlice(es)
			if err != nil {
				t.Fatal(err)
			}
			res.EndpointSlices[i] = o.(*discoveryv1.EndpointSlice)
		}
		if got := translated(t, in, res, opts); !bytes.Equal(got, want) {
			t.Errorf("%s: the slimmed Services and EndpointSlices translate differently:\n%s\nwant\n%s", in, got, want)
		}
	}
	if checked == 0 {
		t.Fatal("no golden input has Services or EndpointSlices")
	}
}

// translated is in's IR (with status) and xDS, or the translation's error.
func translated(t *testing.T, in string, res *resources.Resources, opts gatewayapi.Options) []byte {
	t.Helper()
	out, err := translate.Run(res, opts)
	if err != nil {
		return []byte("error: " + err.Error())
	}
	ir, err := translate.MarshalIR(out.Result, true)
	if err != nil {
		t.Fatalf("%s: %v", in, err)
	}
	x, err := translate.MarshalXDS(out.XDS, true)
	if err != nil {
		t.Fatalf("%s: %v", in, err)
	}
	return append(ir, x...)
}
