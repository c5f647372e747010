package infra

import (
	"encoding/json"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// gateway builds a Gateway of class "xds" created at epoch+age seconds with
// one HTTP listener per port (UDP for ports given as negative numbers).
func gateway(ns, name string, age int, ports ...int) *gwapiv1.Gateway {
	gw := &gwapiv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:         ns,
			Name:              name,
			UID:               types.UID("uid-" + ns + "-" + name),
			CreationTimestamp: metav1.NewTime(epoch.Add(time.Duration(age) * time.Second)),
		},
		Spec: gwapiv1.GatewaySpec{GatewayClassName: "xds"},
	}
	for i, p := range ports {
		proto := gwapiv1.HTTPProtocolType
		if p < 0 {
			p, proto = -p, gwapiv1.UDPProtocolType
		}
		gw.Spec.Listeners = append(gw.Spec.Listeners, gwapiv1.Listener{
			Name:     gwapiv1.SectionName("l" + string(rune('a'+i))),
			Port:     gwapiv1.PortNumber(p),
			Protocol: proto,
		})
	}
	return gw
}

// raw turns YAML into a RawExtension (JSON).
func raw(t *testing.T, y string) *runtime.RawExtension {
	t.Helper()
	b, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return &runtime.RawExtension{Raw: b}
}

func toJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
