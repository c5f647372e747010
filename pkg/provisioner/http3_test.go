package provisioner

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

// http3Ports reads each Gateway's HTTP/3 ports from the translation, for
// its Service (both modes); Gateways without any are absent.
func TestHTTP3PortsOfIR(t *testing.T) {
	h3 := &ir.ClientSettings{HTTP3: &ir.HTTP3{}}
	x := &ir.IR{Gateways: []*ir.Gateway{
		{Namespace: "apps", Name: "web", Listeners: []*ir.Listener{{GatewayPort: 80}, {GatewayPort: 443, Client: h3}}},
		{Namespace: "apps", Name: "plain", Listeners: []*ir.Listener{{GatewayPort: 443}}},
	}}
	want := map[types.NamespacedName][]gwapiv1.PortNumber{{Namespace: "apps", Name: "web"}: {443}}
	if d := cmp.Diff(want, http3Ports(x)); d != "" {
		t.Error(d)
	}
	if len(http3Ports(nil)) != 0 {
		t.Error("http3Ports(nil)")
	}
}
