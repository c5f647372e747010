package translate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/provider/file"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

const holdInput = `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: xds}
spec: {controllerName: xds-controller.dev/gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: web, namespace: default}
spec:
  gatewayClassName: xds
  listeners:
  - {name: http, protocol: HTTP, port: 80, allowedRoutes: {namespaces: {from: All}}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: good, namespace: team-a}
spec:
  parentRefs: [{name: web, namespace: default}]
  rules:
  - matches: [{path: {type: PathPrefix, value: /good}}]
    filters: [{type: RequestRedirect, requestRedirect: {hostname: good.example.com}}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: bad, namespace: team-b, generation: 3}
spec:
  parentRefs: [{name: web, namespace: default}]
  rules:
  - matches: [{path: {type: PathPrefix, value: /bad}}]
    filters: [{type: RequestRedirect, requestRedirect: {hostname: bad.example.com}}]
`

func holdResources(t *testing.T) *resources.Resources {
	t.Helper()
	p := filepath.Join(t.TempDir(), "in.yaml")
	if err := os.WriteFile(p, []byte(holdInput), 0o644); err != nil {
		t.Fatal(err)
	}
	res, problems, err := file.Load(p)
	if err != nil || len(problems) > 0 {
		t.Fatal(err, problems)
	}
	return res
}

// TestHolds: a held route leaves its scope's xDS at the generation the
// hold names; a culprit's parents say why; the other routes are untouched.
func TestHolds(t *testing.T) {
	res := holdResources(t)
	bad := gatewayapi.RouteKey{Kind: gatewayapi.KindHTTPRoute, Namespace: "team-b", Name: "bad"}
	good := gatewayapi.RouteKey{Kind: gatewayapi.KindHTTPRoute, Namespace: "team-a", Name: "good"}
	if g, ok := Generation(res, bad); !ok || g != 3 {
		t.Fatalf("Generation(bad) = %d, %v", g, ok)
	}
	c := NewCache()
	plain, err := c.Run(res, gatewayapi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	scope := plain.Result.IR.Gateways[0].Scope
	served := func(out *Output) (string, bool, bool) {
		y, err := MarshalXDS(out.XDS, false)
		if err != nil {
			t.Fatal(err)
		}
		return string(y), strings.Contains(string(y), "httproute/team-a/good/"), strings.Contains(string(y), "httproute/team-b/bad/")
	}
	accepted := func(out *Output, k gatewayapi.RouteKey) *metav1.Condition {
		return meta.FindStatusCondition(out.Result.Status.Routes[k].Parents[0].Conditions, "Accepted")
	}
	if _, g, b := served(plain); !g || !b {
		t.Fatalf("without holds: good served %v, bad served %v", g, b)
	}

	for _, tc := range []struct {
		name            string
		holds           Holds
		badServed       bool
		badAccepted     metav1.ConditionStatus
		badReason, note string
	}{
		{"culprit", Holds{scope: {bad: {Generation: 3, Culprit: true, Message: "Envoy said no"}}}, false, metav1.ConditionFalse, ReasonRejected, "Envoy said no"},
		{"suspect", Holds{scope: {bad: {Generation: 3}}}, false, metav1.ConditionTrue, "Accepted", ""},
		{"another generation", Holds{scope: {bad: {Generation: 2, Culprit: true, Message: "old"}}}, true, metav1.ConditionTrue, "Accepted", ""},
		{"another scope", Holds{"gateway/x/y": {bad: {Generation: 3, Culprit: true, Message: "elsewhere"}}}, true, metav1.ConditionTrue, "Accepted", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := c.Run(res, gatewayapi.Options{}, WithHolds(tc.holds))
			if err != nil {
				t.Fatal(err)
			}
			y, g, b := served(out)
			if !g || b != tc.badServed {
				t.Errorf("good served %v (want true), bad served %v (want %v):\n%s", g, b, tc.badServed, y)
			}
			a := accepted(out, bad)
			if a.Status != tc.badAccepted || a.Reason != tc.badReason || !strings.Contains(a.Message, tc.note) || a.ObservedGeneration != 3 {
				t.Errorf("bad's Accepted: %+v", a)
			}
			if a := accepted(out, good); a.Status != metav1.ConditionTrue {
				t.Errorf("good's Accepted: %+v", a)
			}
			// The incremental run equals a full one with the same holds.
			full, err := Run(res, gatewayapi.Options{}, WithHolds(tc.holds))
			if err != nil {
				t.Fatal(err)
			}
			if d := diffOutputs(out, full, nil, nil); d != "" {
				t.Errorf("incremental run differs from a full one: %s", d)
			}
		})
	}
	// What a hold changed was copied: the first run's output is intact.
	if a := accepted(plain, bad); a.Status != metav1.ConditionTrue {
		t.Errorf("a later run with holds changed an earlier output: %+v", a)
	}
	if _, g, b := served(plain); !g || !b {
		t.Errorf("a later run with holds changed an earlier output's xDS")
	}
}

// TestHoldsIngress: a held Ingress leaves its class's scope; a culprit
// gets a problem of reason Rejected.
func TestHoldsIngress(t *testing.T) {
	res, problems, err := file.Load("testdata/83-ingress-precedence.in.yaml")
	if err != nil || len(problems) > 0 {
		t.Fatal(err, problems)
	}
	plain, err := Run(res, gatewayapi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	shop := gatewayapi.RouteKey{Kind: gatewayapi.KindIngress, Namespace: "default", Name: "shop"}
	var scope string
	for _, g := range plain.Result.IR.Gateways {
		scope = g.Scope
	}
	out, err := Run(res, gatewayapi.Options{}, WithHolds(Holds{scope: {shop: {Generation: 1, Culprit: true, Message: "Envoy said no"}}}))
	if err != nil {
		t.Fatal(err)
	}
	before, _ := MarshalXDS(plain.XDS, false)
	after, _ := MarshalXDS(out.XDS, false)
	if !strings.Contains(string(before), "ingress/default/shop/") || strings.Contains(string(after), "ingress/default/shop/") {
		t.Errorf("the held Ingress's routes: before %v, after %v", strings.Contains(string(before), "ingress/default/shop/"), strings.Contains(string(after), "ingress/default/shop/"))
	}
	st := out.Result.Ingresses[shop.NamespacedName()]
	found := false
	for _, p := range st.Problems {
		found = found || (p.Reason == ReasonRejected && p.Message == "Envoy said no")
	}
	if !found {
		t.Errorf("the held Ingress's problems: %+v", st.Problems)
	}
}
