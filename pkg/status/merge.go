package status

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// This file holds the pure decisions of the status writer: which
// lastTransitionTime a condition gets, whether a desired status differs from
// the live one, and how our HTTPRoute parents entries merge with those of
// other controllers. No I/O, the clock is a parameter.

// KeepTransitionTimes sets every condition of desired's LastTransitionTime:
// the live condition's time when one of the same type exists with the same
// status, else now. desired is changed in place.
func KeepTransitionTimes(desired []metav1.Condition, live []metav1.Condition, now metav1.Time) {
	for i := range desired {
		d := &desired[i]
		d.LastTransitionTime = now
		for _, l := range live {
			if l.Type == d.Type {
				if l.Status == d.Status && !l.LastTransitionTime.IsZero() {
					d.LastTransitionTime = l.LastTransitionTime
				}
				break
			}
		}
	}
}

// GatewayClassStatus returns the status to write for a GatewayClass: the
// desired status with transition times kept from live.
func GatewayClassStatus(desired *gwapiv1.GatewayClassStatus, live *gwapiv1.GatewayClassStatus, now time.Time) *gwapiv1.GatewayClassStatus {
	out := desired.DeepCopy()
	KeepTransitionTimes(out.Conditions, live.Conditions, metav1.NewTime(now))
	return out
}

// GatewayStatus returns the status to write for a Gateway: the desired
// status with transition times kept from live, per Gateway and per listener
// (matched by name).
func GatewayStatus(desired *gwapiv1.GatewayStatus, live *gwapiv1.GatewayStatus, now time.Time) *gwapiv1.GatewayStatus {
	out := desired.DeepCopy()
	t := metav1.NewTime(now)
	KeepTransitionTimes(out.Conditions, live.Conditions, t)
	keepListenerTimes(out.Listeners, live.Listeners, func(l *gwapiv1.ListenerStatus) (gwapiv1.SectionName, *[]metav1.Condition) {
		return l.Name, &l.Conditions
	}, t)
	return out
}

// ListenerSetStatus returns the status to write for a ListenerSet: the
// desired status with transition times kept from live, per ListenerSet and
// per listener (matched by name).
func ListenerSetStatus(desired *gwapiv1.ListenerSetStatus, live *gwapiv1.ListenerSetStatus, now time.Time) *gwapiv1.ListenerSetStatus {
	out := desired.DeepCopy()
	t := metav1.NewTime(now)
	KeepTransitionTimes(out.Conditions, live.Conditions, t)
	keepListenerTimes(out.Listeners, live.Listeners, func(l *gwapiv1.ListenerEntryStatus) (gwapiv1.SectionName, *[]metav1.Condition) {
		return l.Name, &l.Conditions
	}, t)
	return out
}

// keepListenerTimes applies KeepTransitionTimes to the conditions of every
// listener status in out, against those of the live listener status of
// the same name (a Gateway's ListenerStatus, a ListenerSet's
// ListenerEntryStatus). of returns a listener status's name and conditions.
func keepListenerTimes[L any](out, live []L, of func(*L) (gwapiv1.SectionName, *[]metav1.Condition), t metav1.Time) {
	for i := range out {
		name, conds := of(&out[i])
		var liveConds []metav1.Condition
		for j := range live {
			if n, c := of(&live[j]); n == name {
				liveConds = *c
				break
			}
		}
		KeepTransitionTimes(*conds, liveConds, t)
	}
}

// RouteParents returns the parents list to write for a route: every live
// entry of another controller, in its live order, followed by our desired
// entries (transition times kept from our live entry for the same
// parentRef). Live entries of ours that are not desired any more (the route
// detached from that parent) are dropped.
func RouteParents(desired []gwapiv1.RouteParentStatus, live []gwapiv1.RouteParentStatus, controller gwapiv1.GatewayController, routeNamespace string, now time.Time) []gwapiv1.RouteParentStatus {
	t := metav1.NewTime(now)
	out := make([]gwapiv1.RouteParentStatus, 0, len(live)+len(desired))
	for _, l := range live {
		if l.ControllerName != controller {
			out = append(out, *l.DeepCopy())
		}
	}
	for _, d := range desired {
		d := *d.DeepCopy()
		d.ControllerName = controller
		var liveConds []metav1.Condition
		key := ParentKey(d.ParentRef, routeNamespace)
		for _, l := range live {
			if l.ControllerName == controller && ParentKey(l.ParentRef, routeNamespace) == key {
				liveConds = l.Conditions
				break
			}
		}
		KeepTransitionTimes(d.Conditions, liveConds, t)
		out = append(out, d)
	}
	return out
}

// OwnParents returns the entries of parents written by controller.
func OwnParents(parents []gwapiv1.RouteParentStatus, controller gwapiv1.GatewayController) []gwapiv1.RouteParentStatus {
	var out []gwapiv1.RouteParentStatus
	for _, p := range parents {
		if p.ControllerName == controller {
			out = append(out, p)
		}
	}
	return out
}

// HasOwnParents reports whether parents holds an entry of controller.
func HasOwnParents(parents []gwapiv1.RouteParentStatus, controller gwapiv1.GatewayController) bool {
	for _, p := range parents {
		if p.ControllerName == controller {
			return true
		}
	}
	return false
}

// ParentKey identifies a parentRef with its defaults applied (group
// gateway.networking.k8s.io, kind Gateway, the route's namespace), so that
// an explicit default and an omitted field name the same parent.
func ParentKey(ref gwapiv1.ParentReference, routeNamespace string) string {
	group, kind, ns := gwapiv1.GroupName, "Gateway", routeNamespace
	if ref.Group != nil {
		group = string(*ref.Group)
	}
	if ref.Kind != nil {
		kind = string(*ref.Kind)
	}
	if ref.Namespace != nil {
		ns = string(*ref.Namespace)
	}
	section, port := "", ""
	if ref.SectionName != nil {
		section = string(*ref.SectionName)
	}
	if ref.Port != nil {
		port = fmt.Sprint(*ref.Port)
	}
	return group + "/" + kind + "/" + ns + "/" + string(ref.Name) + "#" + section + ":" + port
}

// EqualListenerSetStatus reports whether a and b are the same status,
// ignoring conditions' lastTransitionTime. Nil and empty lists are equal.
func EqualListenerSetStatus(a, b *gwapiv1.ListenerSetStatus) bool {
	return equality.Semantic.DeepEqual(normalized(a), normalized(b))
}

// EqualGatewayClassStatus reports whether a and b are the same status,
// ignoring conditions' lastTransitionTime. Nil and empty lists are equal.
func EqualGatewayClassStatus(a, b *gwapiv1.GatewayClassStatus) bool {
	a, b = a.DeepCopy(), b.DeepCopy()
	zeroTimes(a.Conditions)
	zeroTimes(b.Conditions)
	return equality.Semantic.DeepEqual(a, b)
}

// EqualGatewayStatus reports whether a and b are the same status, ignoring
// conditions' lastTransitionTime. Nil and empty lists are equal, and so
// are an address's unset and empty routability (GEP-5093: consumers read
// unset as empty; a standard-channel CRD prunes the field, so the live
// object never has it).
func EqualGatewayStatus(a, b *gwapiv1.GatewayStatus) bool {
	a, b = a.DeepCopy(), b.DeepCopy()
	for _, st := range []*gwapiv1.GatewayStatus{a, b} {
		for i := range st.Addresses {
			if r := st.Addresses[i].Routability; r != nil && *r == "" {
				st.Addresses[i].Routability = nil
			}
		}
	}
	zeroTimes(a.Conditions)
	zeroTimes(b.Conditions)
	for i := range a.Listeners {
		zeroTimes(a.Listeners[i].Conditions)
	}
	for i := range b.Listeners {
		zeroTimes(b.Listeners[i].Conditions)
	}
	return equality.Semantic.DeepEqual(a, b)
}

// EqualOwnParents reports whether the entries of controller in a and b are
// the same, as sets keyed by parentRef (order does not matter), ignoring
// conditions' lastTransitionTime. Entries of other controllers are not
// compared.
func EqualOwnParents(a, b []gwapiv1.RouteParentStatus, controller gwapiv1.GatewayController, routeNamespace string) bool {
	index := func(ps []gwapiv1.RouteParentStatus) map[string]gwapiv1.RouteParentStatus {
		m := map[string]gwapiv1.RouteParentStatus{}
		for _, p := range ps {
			if p.ControllerName != controller {
				continue
			}
			p = *p.DeepCopy()
			zeroTimes(p.Conditions)
			m[ParentKey(p.ParentRef, routeNamespace)] = p
		}
		return m
	}
	ma, mb := index(a), index(b)
	if len(ma) != len(mb) {
		return false
	}
	for k, va := range ma {
		vb, ok := mb[k]
		if !ok || !equality.Semantic.DeepEqual(va, vb) {
			return false
		}
	}
	return true
}

func zeroTimes(conds []metav1.Condition) {
	for i := range conds {
		conds[i].LastTransitionTime = metav1.Time{}
	}
}
