package provisioner

import (
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/infra"
	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

const sys = "xds-system"

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func class(name string, ref *gwapiv1.ParametersReference) *gwapiv1.GatewayClass {
	return &gwapiv1.GatewayClass{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
		Spec:       gwapiv1.GatewayClassSpec{ControllerName: gatewayapi.ControllerName, ParametersRef: ref},
	}
}

func classRef(name string) *gwapiv1.ParametersReference {
	return &gwapiv1.ParametersReference{Group: "gateway.xds-controller.dev", Kind: "GatewayParameters", Name: name, Namespace: ptr.To(gwapiv1.Namespace(sys))}
}

func gw(ns, name, className string, age int, ref *gwapiv1.LocalParametersReference) *gwapiv1.Gateway {
	g := &gwapiv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name), CreationTimestamp: metav1.NewTime(epoch.Add(time.Duration(age) * time.Second))},
		Spec: gwapiv1.GatewaySpec{GatewayClassName: gwapiv1.ObjectName(className), Listeners: []gwapiv1.Listener{
			{Name: "http", Protocol: gwapiv1.HTTPProtocolType, Port: 80},
		}},
	}
	if ref != nil {
		g.Spec.Infrastructure = &gwapiv1.GatewayInfrastructure{ParametersRef: ref}
	}
	return g
}

func gwRef(name string) *gwapiv1.LocalParametersReference {
	return &gwapiv1.LocalParametersReference{Group: "gateway.xds-controller.dev", Kind: "GatewayParameters", Name: name}
}

func params(ns, name string, spec v1alpha1.GatewayParametersSpec) *v1alpha1.GatewayParameters {
	return &v1alpha1.GatewayParameters{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
}

func nn(ns, name string) types.NamespacedName { return types.NamespacedName{Namespace: ns, Name: name} }

// TestResolveModesAndPorts: the class's mode applies unless the Gateway's
// parameters override it; scopes and Services follow; two Shared Gateways
// on port 80 get distinct bind ports in the shared range; a Dedicated one
// binds 10080; Gateways of other controllers are not looked at.
func TestResolveModesAndPorts(t *testing.T) {
	res := &resources.Resources{
		GatewayClasses: []*gwapiv1.GatewayClass{
			class("xds", classRef("defaults")),
			{ObjectMeta: metav1.ObjectMeta{Name: "theirs"}, Spec: gwapiv1.GatewayClassSpec{ControllerName: "example.com/x", ParametersRef: classRef("missing")}},
		},
		Gateways: []*gwapiv1.Gateway{
			gw("apps", "a", "xds", 0, nil),
			gw("apps", "b", "xds", 1, nil),
			gw("apps", "d", "xds", 2, gwRef("dedicated")),
			gw("apps", "other", "theirs", 3, gwRef("missing")),
		},
	}
	ps := []*v1alpha1.GatewayParameters{
		params(sys, "defaults", v1alpha1.GatewayParametersSpec{Mode: ptr.To(v1alpha1.ModeShared), Replicas: ptr.To[int32](3)}),
		params("apps", "dedicated", v1alpha1.GatewayParametersSpec{Mode: ptr.To(v1alpha1.ModeDedicated)}),
	}
	r := Resolve(res, ps, gatewayapi.ControllerName)
	if r.InvalidParameters() != nil {
		t.Fatalf("refusals: %+v", r.InvalidParameters())
	}
	a, b, d := res.Gateways[0], res.Gateways[1], res.Gateways[2]
	if r.ScopeFor(a) != "gatewayclass/xds" || r.ScopeFor(d) != "gateway/apps/d" {
		t.Errorf("scopes %s, %s", r.ScopeFor(a), r.ScopeFor(d))
	}
	if r.ServiceFor(a) != nn("apps", "a-xds") || r.ServiceFor(d) != nn("apps", "d-xds") {
		t.Errorf("services %s, %s", r.ServiceFor(a), r.ServiceFor(d))
	}
	pa, pb := r.BindPortFor(a, 80), r.BindPortFor(b, 80)
	if pa == pb || pa < infra.SharedPortMin || pa > infra.SharedPortMax || pb < infra.SharedPortMin || pb > infra.SharedPortMax {
		t.Errorf("shared bind ports %d, %d", pa, pb)
	}
	if p := r.BindPortFor(d, 80); p != 10080 {
		t.Errorf("dedicated bind port %d", p)
	}
	// Per-field effective parameters: d inherits the class's replicas.
	if e, ok := r.Effective(d); !ok || *e.Mode != v1alpha1.ModeDedicated || *e.Replicas != 3 {
		t.Errorf("effective of d: %+v %v", e, ok)
	}
	if _, ok := r.Effective(res.Gateways[3]); ok {
		t.Error("a Gateway of another controller has effective parameters")
	}
}

// TestResolveRouteStats: metrics.routeStats of the class's parameters
// applies to its Gateways, Shared and Dedicated alike, unless a Gateway's
// own parameters say otherwise; unset, there are none.
func TestResolveRouteStats(t *testing.T) {
	res := &resources.Resources{
		GatewayClasses: []*gwapiv1.GatewayClass{class("xds", classRef("defaults")), class("plain", nil)},
		Gateways: []*gwapiv1.Gateway{
			gw("apps", "a", "xds", 0, nil),
			gw("apps", "d", "xds", 1, gwRef("dedicated")),
			gw("apps", "off", "xds", 2, gwRef("off")),
			gw("apps", "p", "plain", 3, nil),
		},
	}
	ps := []*v1alpha1.GatewayParameters{
		params(sys, "defaults", v1alpha1.GatewayParametersSpec{Metrics: &v1alpha1.MetricsSpec{RouteStats: ptr.To(true)}}),
		params("apps", "dedicated", v1alpha1.GatewayParametersSpec{Mode: ptr.To(v1alpha1.ModeDedicated)}),
		params("apps", "off", v1alpha1.GatewayParametersSpec{Metrics: &v1alpha1.MetricsSpec{RouteStats: ptr.To(false)}}),
	}
	r := Resolve(res, ps, gatewayapi.ControllerName)
	for i, want := range []bool{true, true, false, false} {
		if got := r.RouteStatsFor(res.Gateways[i]); got != want {
			t.Errorf("RouteStatsFor(%s) = %v, want %v", res.Gateways[i].Name, got, want)
		}
	}
}

// TestResolveEdge: edge of the class's parameters applies to its Gateways,
// a Gateway's own fields win one by one; without any, nil (the defaults).
func TestResolveEdge(t *testing.T) {
	res := &resources.Resources{
		GatewayClasses: []*gwapiv1.GatewayClass{class("xds", classRef("defaults")), class("plain", nil)},
		Gateways: []*gwapiv1.Gateway{
			gw("apps", "a", "xds", 0, nil),
			gw("apps", "own", "xds", 1, gwRef("own")),
			gw("apps", "p", "plain", 2, nil),
		},
	}
	ps := []*v1alpha1.GatewayParameters{
		params(sys, "defaults", v1alpha1.GatewayParametersSpec{Edge: &v1alpha1.EdgeSpec{RequestHeadersTimeout: ptr.To[v1alpha1.Duration]("5s")}}),
		params("apps", "own", v1alpha1.GatewayParametersSpec{Edge: &v1alpha1.EdgeSpec{MaxRequestHeadersKB: ptr.To[int32](32)}}),
	}
	r := Resolve(res, ps, gatewayapi.ControllerName)
	for i, want := range []*ir.HTTPEdge{
		{RequestHeadersTimeout: ir.NewDuration(5 * time.Second)},
		{RequestHeadersTimeout: ir.NewDuration(5 * time.Second), MaxRequestHeadersKB: 32},
		nil,
	} {
		if got := r.EdgeFor(res.Gateways[i]); !reflect.DeepEqual(got, want) {
			t.Errorf("EdgeFor(%s) = %+v, want %+v", res.Gateways[i].Name, got, want)
		}
	}
}

// TestResolveKeepsLiveBindPorts: the bind ports on our live Services win
// over fresh assignment (a Gateway keeps its port when an older one
// appears); Services of others are ignored.
func TestResolveKeepsLiveBindPorts(t *testing.T) {
	res := &resources.Resources{
		GatewayClasses: []*gwapiv1.GatewayClass{class("xds", nil)},
		Gateways:       []*gwapiv1.Gateway{gw("apps", "old", "xds", 0, nil), gw("apps", "new", "xds", 5, nil)},
		Services: []*corev1.Service{
			{
				ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "new-xds",
					Labels:      map[string]string{infra.LabelManagedBy: infra.ManagedByValue},
					Annotations: map[string]string{infra.AnnotationGatewayName: "new"}},
				Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(25000)}}},
			},
			{
				ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "old-xds", Annotations: map[string]string{infra.AnnotationGatewayName: "old"}},
				Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(25001)}}},
			},
		},
	}
	r := Resolve(res, nil, gatewayapi.ControllerName)
	if p := r.BindPortFor(res.Gateways[1], 80); p != 25000 {
		t.Errorf("new kept %d, want its live 25000", p)
	}
	if p := r.BindPortFor(res.Gateways[0], 80); p == 25001 || p == 25000 {
		t.Errorf("old took %d from a Service that is not ours or from new", p)
	}
}

// TestResolveRefusals: every kind of bad reference is refused with a
// message that says why, and the Gateways of a refused class are refused
// too; refused Gateways get no effective parameters and no bind ports.
func TestResolveRefusals(t *testing.T) {
	badOverlay := params("apps", "bad-overlay", v1alpha1.GatewayParametersSpec{PodTemplate: &runtime.RawExtension{Raw: []byte(`{"spec":{"containers":"nope"}}`)}})
	noNS := classRef("defaults")
	noNS.Namespace = nil
	wrongKind := classRef("defaults")
	wrongKind.Kind = "ConfigMap"
	res := &resources.Resources{
		GatewayClasses: []*gwapiv1.GatewayClass{
			class("missing", classRef("nope")),
			class("no-namespace", noNS),
			class("wrong-kind", wrongKind),
			class("good", classRef("defaults")),
		},
		Gateways: []*gwapiv1.Gateway{
			gw("apps", "of-missing", "missing", 0, nil),
			gw("apps", "wrong-group", "good", 0, &gwapiv1.LocalParametersReference{Group: "example.com", Kind: "GatewayParameters", Name: "x"}),
			gw("apps", "not-found", "good", 0, gwRef("absent")),
			gw("apps", "other-namespace", "good", 0, gwRef("defaults")), // exists only in xds-system
			gw("apps", "bad-overlay", "good", 0, gwRef("bad-overlay")),
			gw("apps", "fine", "good", 0, nil),
		},
	}
	ps := []*v1alpha1.GatewayParameters{params(sys, "defaults", v1alpha1.GatewayParametersSpec{}), badOverlay}
	r := Resolve(res, ps, gatewayapi.ControllerName)
	inv := r.InvalidParameters()
	if inv == nil {
		t.Fatal("no refusals")
	}
	wantClasses := map[string]string{"missing": "not found", "no-namespace": "no namespace", "wrong-kind": `kind "ConfigMap"`}
	for name, frag := range wantClasses {
		if msg, ok := inv.GatewayClasses[name]; !ok || !strings.Contains(msg, frag) {
			t.Errorf("class %s: %q, want it to mention %q", name, msg, frag)
		}
	}
	if _, bad := inv.GatewayClasses["good"]; bad {
		t.Error("class good refused")
	}
	wantGateways := map[string]string{
		"of-missing":      "GatewayClass missing",
		"wrong-group":     `group "example.com"`,
		"not-found":       "apps/absent not found",
		"other-namespace": "apps/defaults not found",
		"bad-overlay":     "podTemplate",
	}
	for name, frag := range wantGateways {
		if msg, ok := inv.Gateways[nn("apps", name)]; !ok || !strings.Contains(msg, frag) {
			t.Errorf("Gateway %s: %q, want it to mention %q", name, msg, frag)
		}
		for _, g := range res.Gateways {
			if g.Name == name {
				if _, ok := r.Effective(g); ok {
					t.Errorf("refused Gateway %s has effective parameters", name)
				}
			}
		}
	}
	if len(inv.Gateways) != len(wantGateways) {
		t.Errorf("refused Gateways %v", inv.Gateways)
	}
	if _, ok := r.Effective(res.Gateways[5]); !ok {
		t.Error("Gateway fine has no effective parameters")
	}
}

// TestPlan: which fleets are synced, kept or pruned.
func TestPlan(t *testing.T) {
	leaving := gw("apps", "leaving", "theirs", 0, nil)
	res := &resources.Resources{
		GatewayClasses: []*gwapiv1.GatewayClass{
			class("with-shared", nil),
			class("only-dedicated", classRef("dedicated")),
			class("empty", nil),
			class("only-refused", nil),
			class("refused", classRef("absent")),
			{ObjectMeta: metav1.ObjectMeta{Name: "theirs"}, Spec: gwapiv1.GatewayClassSpec{ControllerName: "example.com/x"}},
		},
		Gateways: []*gwapiv1.Gateway{
			gw("apps", "s", "with-shared", 0, nil),
			gw("apps", "d", "only-dedicated", 0, nil),
			gw("apps", "r", "only-refused", 0, gwRef("absent")),
			gw("apps", "x", "refused", 0, nil),
			leaving,
			gw("apps", "never-ours", "theirs", 0, nil),
		},
		Services: []*corev1.Service{{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "leaving-with-shared",
			Labels:      map[string]string{infra.LabelManagedBy: infra.ManagedByValue},
			Annotations: map[string]string{infra.AnnotationGatewayName: "leaving"}}}},
	}
	ps := []*v1alpha1.GatewayParameters{params(sys, "dedicated", v1alpha1.GatewayParametersSpec{Mode: ptr.To(v1alpha1.ModeDedicated)})}
	p := makePlan(res, Resolve(res, ps, gatewayapi.ControllerName))
	names := func(gws []*gwapiv1.Gateway) (out []string) {
		for _, g := range gws {
			out = append(out, g.Name)
		}
		return out
	}
	var fleets []string
	for _, c := range p.sharedFleets {
		fleets = append(fleets, c.Name)
	}
	check := func(what string, got, want []string) {
		t.Helper()
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s: %v, want %v", what, got, want)
		}
	}
	check("shared fleets", fleets, []string{"with-shared"})
	// only-refused keeps its fleet (its Gateway's mode is unknown), refused
	// (the class) too; empty and only-dedicated lose theirs.
	check("pruned classes", p.prunedClasses, []string{"only-dedicated", "empty"})
	check("shared", names(p.shared), []string{"s"})
	check("dedicated", names(p.dedicated), []string{"d"})
	check("departed", names(p.departed), []string{"leaving"})
}
