package status

import (
	"maps"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/ingress"
)

func TestSummary(t *testing.T) {
	section := gwapiv1.SectionName("http")
	st := &gatewayapi.Status{
		Gateways: map[types.NamespacedName]*gwapiv1.GatewayStatus{
			{Namespace: "default", Name: "gw"}: {
				Conditions: []metav1.Condition{{Type: "Accepted", Status: "True", Reason: "Accepted", Message: "fine"}},
				Listeners: []gwapiv1.ListenerStatus{{
					Name:           "http",
					AttachedRoutes: 2,
					Conditions: []metav1.Condition{
						{Type: "Conflicted", Status: "False", Reason: "NoConflicts", Message: "no conflicts"},
						{Type: "ResolvedRefs", Status: "False", Reason: "InvalidCertificateRef", Message: "secret missing"},
					},
				}},
			},
		},
		Routes: map[gatewayapi.RouteKey]*gwapiv1.RouteStatus{
			{Kind: "HTTPRoute", Namespace: "apps", Name: "r"}: {Parents: []gwapiv1.RouteParentStatus{{
				ParentRef:  gwapiv1.ParentReference{Name: "gw", SectionName: &section},
				Conditions: []metav1.Condition{{Type: "Accepted", Status: "False", Reason: "NotAllowedByListeners", Message: "namespace not allowed"}},
			}}},
			{Kind: "GRPCRoute", Namespace: "apps", Name: "bad-regex"}: {Parents: []gwapiv1.RouteParentStatus{{
				ParentRef: gwapiv1.ParentReference{Name: "gw"},
				Conditions: []metav1.Condition{
					{Type: "Accepted", Status: "True", Reason: "Accepted", Message: "fine"},
					{Type: "PartiallyInvalid", Status: "True", Reason: "UnsupportedValue", Message: "rule 0: bad regex"},
				},
			}}},
		},
	}
	ings := map[types.NamespacedName]*ingress.Status{
		{Namespace: "apps", Name: "shop"}: {Class: "web", Listeners: []string{"http 0.0.0.0:10080", "https 0.0.0.0:10443"},
			LoadBalancer: networkingv1.IngressLoadBalancerStatus{Ingress: []networkingv1.IngressLoadBalancerIngress{{IP: "192.0.2.7"}}}},
		{Namespace: "apps", Name: "orphan"}: {Class: "broken", Problems: []ingress.Problem{{Reason: "NotServed", Message: "not served: no parameters"}}},
	}
	got := Summary(st)
	maps.Copy(got, IngressSummary(ings))
	want := map[string]string{
		"Ingress apps/shop":                "class=web on http 0.0.0.0:10080, https 0.0.0.0:10443 address=192.0.2.7",
		"Ingress apps/orphan":              "class=broken not served; 1 problem(s): NotServed: not served: no parameters",
		"Gateway default/gw":               "Accepted=True(Accepted)",
		"Gateway default/gw listener http": "attachedRoutes=2 Conflicted=False(NoConflicts) ResolvedRefs=False(InvalidCertificateRef) — ResolvedRefs: secret missing",
		"HTTPRoute apps/r -> apps/gw/http": "Accepted=False(NotAllowedByListeners) — Accepted: namespace not allowed",
		// PartiallyInvalid is abnormal when True: its message is shown.
		"GRPCRoute apps/bad-regex -> apps/gw": "Accepted=True(Accepted) PartiallyInvalid=True(UnsupportedValue) — PartiallyInvalid: rule 0: bad regex",
	}
	if len(got) != len(want) {
		t.Errorf("got %d lines, want %d: %v", len(got), len(want), got)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s:\n got %q\nwant %q", k, got[k], w)
		}
	}
}
