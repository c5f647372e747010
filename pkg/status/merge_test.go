package status

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

const ours gwapiv1.GatewayController = "xds-controller.dev/gateway-controller"

var (
	t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 = t0.Add(time.Hour)
)

func cond(typ string, st metav1.ConditionStatus, reason string, gen int64, at time.Time) metav1.Condition {
	c := metav1.Condition{Type: typ, Status: st, Reason: reason, Message: reason, ObservedGeneration: gen}
	if !at.IsZero() {
		c.LastTransitionTime = metav1.NewTime(at)
	}
	return c
}

func TestKeepTransitionTimes(t *testing.T) {
	live := []metav1.Condition{
		cond("Accepted", "True", "Accepted", 1, t0),
		cond("ResolvedRefs", "True", "ResolvedRefs", 1, t0),
	}
	desired := []metav1.Condition{
		cond("Accepted", "True", "Accepted", 2, time.Time{}),             // same status, new generation: time kept
		cond("ResolvedRefs", "False", "BackendNotFound", 2, time.Time{}), // status changed: now
		cond("Programmed", "True", "Programmed", 2, time.Time{}),         // new: now
	}
	KeepTransitionTimes(desired, live, metav1.NewTime(t1))
	want := []time.Time{t0, t1, t1}
	for i, c := range desired {
		if !c.LastTransitionTime.Time.Equal(want[i]) {
			t.Errorf("%s: lastTransitionTime %v, want %v", c.Type, c.LastTransitionTime, want[i])
		}
	}
}

func TestGatewayStatusKeepsListenerTimes(t *testing.T) {
	live := &gwapiv1.GatewayStatus{
		Conditions: []metav1.Condition{cond("Accepted", "True", "Accepted", 1, t0)},
		Listeners: []gwapiv1.ListenerStatus{
			{Name: "http", Conditions: []metav1.Condition{cond("Accepted", "True", "Accepted", 1, t0)}},
			{Name: "https", Conditions: []metav1.Condition{cond("Accepted", "True", "Accepted", 1, t0)}},
		},
	}
	desired := &gwapiv1.GatewayStatus{
		Conditions: []metav1.Condition{cond("Accepted", "True", "Accepted", 1, time.Time{})},
		Listeners: []gwapiv1.ListenerStatus{
			{Name: "https", Conditions: []metav1.Condition{cond("Accepted", "False", "Invalid", 1, time.Time{})}},
			{Name: "http", Conditions: []metav1.Condition{cond("Accepted", "True", "Accepted", 1, time.Time{})}},
		},
	}
	got := GatewayStatus(desired, live, t1)
	if !got.Conditions[0].LastTransitionTime.Time.Equal(t0) {
		t.Errorf("gateway Accepted time changed")
	}
	if !got.Listeners[0].Conditions[0].LastTransitionTime.Time.Equal(t1) {
		t.Errorf("https listener: changed condition kept its old time")
	}
	if !got.Listeners[1].Conditions[0].LastTransitionTime.Time.Equal(t0) {
		t.Errorf("http listener: unchanged condition got a new time")
	}
	if !desired.Conditions[0].LastTransitionTime.IsZero() {
		t.Errorf("desired was modified")
	}
}

func TestEqualIgnoresTransitionTime(t *testing.T) {
	a := &gwapiv1.GatewayStatus{
		Conditions: []metav1.Condition{cond("Accepted", "True", "Accepted", 1, t0)},
		Listeners:  []gwapiv1.ListenerStatus{{Name: "http", Conditions: []metav1.Condition{cond("Programmed", "True", "Programmed", 1, t0)}}},
	}
	b := a.DeepCopy()
	b.Conditions[0].LastTransitionTime = metav1.NewTime(t1)
	b.Listeners[0].Conditions[0].LastTransitionTime = metav1.NewTime(t1)
	if !EqualGatewayStatus(a, b) {
		t.Error("statuses differing only in lastTransitionTime compare unequal")
	}
	b.Conditions[0].ObservedGeneration = 2
	if EqualGatewayStatus(a, b) {
		t.Error("a new observedGeneration compares equal")
	}
	c := a.DeepCopy()
	c.Listeners[0].AttachedRoutes = 3
	if EqualGatewayStatus(a, c) {
		t.Error("attachedRoutes change compares equal")
	}
	// nil and empty lists are the same status.
	if !EqualGatewayClassStatus(&gwapiv1.GatewayClassStatus{}, &gwapiv1.GatewayClassStatus{Conditions: []metav1.Condition{}}) {
		t.Error("nil and empty conditions compare unequal")
	}
}

func parent(name string, controller gwapiv1.GatewayController, c ...metav1.Condition) gwapiv1.RouteParentStatus {
	return gwapiv1.RouteParentStatus{ParentRef: gwapiv1.ParentReference{Name: gwapiv1.ObjectName(name)}, ControllerName: controller, Conditions: c}
}

func TestRouteParentsKeepsForeignAndDropsStaleOurs(t *testing.T) {
	other := gwapiv1.GatewayController("example.com/other")
	live := []gwapiv1.RouteParentStatus{
		parent("theirs", other, cond("Accepted", "True", "Accepted", 1, t0)),
		parent("web", ours, cond("Accepted", "True", "Accepted", 1, t0)),
		parent("gone", ours, cond("Accepted", "True", "Accepted", 1, t0)),
	}
	desired := []gwapiv1.RouteParentStatus{parent("web", "", cond("Accepted", "True", "Accepted", 1, time.Time{}))}
	got := RouteParents(desired, live, ours, "default", t1)
	if len(got) != 2 {
		t.Fatalf("got %d parents, want 2 (theirs, web): %+v", len(got), got)
	}
	if got[0].ControllerName != other || got[0].ParentRef.Name != "theirs" {
		t.Errorf("foreign entry not kept first: %+v", got[0])
	}
	if got[1].ParentRef.Name != "web" || got[1].ControllerName != ours {
		t.Errorf("our entry wrong: %+v", got[1])
	}
	if !got[1].Conditions[0].LastTransitionTime.Time.Equal(t0) {
		t.Errorf("unchanged condition got a new time")
	}
	if EqualOwnParents(got, live, ours, "default") {
		t.Error("dropping a stale entry of ours compares equal")
	}
	// Foreign entries are not compared.
	changedForeign := append([]gwapiv1.RouteParentStatus{parent("theirs", other)}, got[1:]...)
	if !EqualOwnParents(got, changedForeign, ours, "default") {
		t.Error("a change of a foreign entry made our entries unequal")
	}
	// Removing all of ours keeps theirs.
	got = RouteParents(nil, live, ours, "default", t1)
	if len(got) != 1 || got[0].ControllerName != other {
		t.Errorf("removing ours: got %+v", got)
	}
	if got == nil {
		t.Error("parents must be an empty list, never nil (the CRD requires it)")
	}
}

func TestEqualOwnParentsIgnoresOrderNotSpelling(t *testing.T) {
	a := []gwapiv1.RouteParentStatus{parent("a", ours), parent("b", ours)}
	b := []gwapiv1.RouteParentStatus{parent("b", ours), parent("a", ours)}
	if !EqualOwnParents(a, b, ours, "default") {
		t.Error("order made parents unequal")
	}
	// The parentRef must read as the route's spec spells it: an explicit
	// default is a different entry to write (but the same parent for
	// keeping transition times).
	ns := gwapiv1.Namespace("default")
	b[0].ParentRef.Namespace = &ns
	if EqualOwnParents(a, b, ours, "default") {
		t.Error("a respelled parentRef compares equal")
	}
	if ParentKey(a[1].ParentRef, "default") != ParentKey(b[0].ParentRef, "default") {
		t.Error("an explicit default namespace names another parent")
	}
}

func TestWithStaleRoutes(t *testing.T) {
	routes := []*gwapiv1.HTTPRoute{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "detached"},
			Status: gwapiv1.HTTPRouteStatus{RouteStatus: gwapiv1.RouteStatus{Parents: []gwapiv1.RouteParentStatus{parent("web", ours)}}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "foreign"},
			Status: gwapiv1.HTTPRouteStatus{RouteStatus: gwapiv1.RouteStatus{Parents: []gwapiv1.RouteParentStatus{parent("x", "example.com/other")}}}},
	}
	grpc := &gwapiv1.GRPCRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "detached"},
		Status: gwapiv1.GRPCRouteStatus{RouteStatus: gwapiv1.RouteStatus{Parents: []gwapiv1.RouteParentStatus{parent("web", ours)}}}}
	st := WithStaleRoutes(nil, Routes(&resources.Resources{HTTPRoutes: routes, GRPCRoutes: []*gwapiv1.GRPCRoute{grpc}}), ours)
	if len(st.Routes) != 2 {
		t.Fatalf("got %d routes, want only the detached HTTPRoute and GRPCRoute", len(st.Routes))
	}
	for k, v := range st.Routes {
		if k.Name != "detached" || len(v.Parents) != 0 {
			t.Errorf("got %s with %d parents", k, len(v.Parents))
		}
	}
}

func TestListenerSetStatusKeepsListenerTimes(t *testing.T) {
	live := &gwapiv1.ListenerSetStatus{
		Conditions: []metav1.Condition{cond("Accepted", "True", "Accepted", 1, t0)},
		Listeners: []gwapiv1.ListenerEntryStatus{
			{Name: "http", Conditions: []metav1.Condition{cond("Accepted", "True", "Accepted", 1, t0)}},
			{Name: "https", Conditions: []metav1.Condition{cond("Accepted", "True", "Accepted", 1, t0)}},
		},
	}
	desired := &gwapiv1.ListenerSetStatus{
		Conditions: []metav1.Condition{cond("Accepted", "True", "Accepted", 2, time.Time{})},
		Listeners: []gwapiv1.ListenerEntryStatus{
			{Name: "https", Conditions: []metav1.Condition{cond("Accepted", "False", "HostnameConflict", 2, time.Time{})}},
			{Name: "http", Conditions: []metav1.Condition{cond("Accepted", "True", "Accepted", 2, time.Time{})}},
		},
	}
	got := ListenerSetStatus(desired, live, t1)
	if !got.Conditions[0].LastTransitionTime.Time.Equal(t0) {
		t.Errorf("ListenerSet Accepted time changed")
	}
	if !got.Listeners[0].Conditions[0].LastTransitionTime.Time.Equal(t1) {
		t.Errorf("https listener: changed condition kept its old time")
	}
	if !got.Listeners[1].Conditions[0].LastTransitionTime.Time.Equal(t0) {
		t.Errorf("http listener: unchanged condition got a new time")
	}
	if EqualListenerSetStatus(got, live) {
		t.Errorf("statuses that differ in a listener's condition compare equal")
	}
	again := got.DeepCopy()
	for i := range again.Listeners {
		again.Listeners[i].Conditions[0].LastTransitionTime = metav1.NewTime(t1.Add(time.Hour))
	}
	if !EqualListenerSetStatus(got, again) {
		t.Errorf("statuses that differ only in lastTransitionTime compare unequal")
	}
}

func TestWithStaleRoutesKeepsListenerSets(t *testing.T) {
	st := &gatewayapi.Status{ListenerSets: map[types.NamespacedName]*gwapiv1.ListenerSetStatus{{Namespace: "default", Name: "set"}: {}}}
	if got := WithStaleRoutes(st, nil, ours); len(got.ListenerSets) != 1 {
		t.Errorf("WithStaleRoutes dropped the ListenerSets' status: %d left", len(got.ListenerSets))
	}
}
