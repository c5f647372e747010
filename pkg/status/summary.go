// Package status turns the status the translator computed into what people
// and the API server see. This file renders one line per object for
// standalone mode's terminal output.
package status

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
)

// Summary renders st as one line per object (and per Gateway or
// ListenerSet listener and per route parent), keyed by a stable object key such as
// "Gateway default/web" or "HTTPRoute default/app -> default/web". A line
// lists the object's conditions as Type=Status(Reason), followed by the
// message of every condition that is not in its normal state. The
// Ingresses' lines are IngressSummary's.
func Summary(st *gatewayapi.Status) map[string]string {
	out := map[string]string{}
	eachObject(st, func(any) bool { return true }, func(_ any, ls []line) {
		for _, l := range ls {
			out[l.key] = l.text
		}
	})
	return out
}

// line is one line of Summary: its key and its text.
type line struct{ key, text string }

// eachObject calls lines with the lines of Summary of every object status
// of st for which render says yes. An object is its status (a pointer,
// the object's identity: the translate.Cache hands an unchanged object's
// status on as the same pointer).
func eachObject(st *gatewayapi.Status, render func(obj any) bool, lines func(obj any, ls []line)) {
	if st == nil {
		return
	}
	for name, s := range st.GatewayClasses {
		if render(s) {
			lines(s, []line{{"GatewayClass " + name, conditions(s.Conditions)}})
		}
	}
	for nn, s := range st.Gateways {
		if render(s) {
			key := "Gateway " + nn.String()
			ls := []line{{key, conditions(s.Conditions)}}
			for _, l := range s.Listeners {
				ls = append(ls, listenerLine(key, string(l.Name), l.AttachedRoutes, l.Conditions))
			}
			lines(s, ls)
		}
	}
	for nn, s := range st.ListenerSets {
		if render(s) {
			key := "ListenerSet " + nn.String()
			ls := []line{{key, conditions(s.Conditions)}}
			for _, l := range s.Listeners {
				ls = append(ls, listenerLine(key, string(l.Name), l.AttachedRoutes, l.Conditions))
			}
			lines(s, ls)
		}
	}
	for k, s := range st.Routes {
		if render(s) {
			ls := make([]line, 0, len(s.Parents))
			for _, p := range s.Parents {
				ls = append(ls, line{k.String() + " -> " + parentName(p.ParentRef, k.Namespace), conditions(p.Conditions)})
			}
			lines(s, ls)
		}
	}
	for k, s := range st.Policies {
		if render(s) {
			ls := make([]line, 0, len(s.Ancestors))
			for _, a := range s.Ancestors {
				ls = append(ls, line{k.String() + " -> " + parentName(a.AncestorRef, k.Namespace), conditions(a.Conditions)})
			}
			lines(s, ls)
		}
	}
}

// listenerLine is the line of listener name of the Gateway or ListenerSet
// whose line's key is key.
func listenerLine(key, name string, attached int32, conds []metav1.Condition) line {
	return line{key + " listener " + name, fmt.Sprintf("attachedRoutes=%d %s", attached, conditions(conds))}
}

// Keys returns the keys of a summary, sorted.
func Keys(summary map[string]string) []string {
	keys := make([]string, 0, len(summary))
	for k := range summary {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func parentName(ref gwapiv1.ParentReference, routeNamespace string) string {
	ns := routeNamespace
	if ref.Namespace != nil {
		ns = string(*ref.Namespace)
	}
	s := ns + "/" + string(ref.Name)
	if ref.Kind != nil && *ref.Kind != "Gateway" {
		s = string(*ref.Kind) + " " + s
	}
	if ref.SectionName != nil {
		s += "/" + string(*ref.SectionName)
	}
	if ref.Port != nil {
		s += fmt.Sprintf(":%d", *ref.Port)
	}
	return s
}

// abnormal says whether a condition is in the state that needs attention.
// The Gateway API's "abnormal-true" types (Conflicted, PartiallyInvalid)
// are normal when False, every other type when True.
func abnormal(c metav1.Condition) bool {
	switch c.Type {
	case string(gwapiv1.ListenerConditionConflicted), string(gwapiv1.RouteConditionPartiallyInvalid),
		string(gwapiv1.GatewayConditionInsecureFrontendValidationMode):
		return c.Status != metav1.ConditionFalse
	}
	return c.Status != metav1.ConditionTrue
}

func conditions(cs []metav1.Condition) string {
	parts := make([]string, 0, len(cs))
	var notes []string
	for _, c := range cs {
		parts = append(parts, fmt.Sprintf("%s=%s(%s)", c.Type, c.Status, c.Reason))
		if abnormal(c) && c.Message != "" {
			notes = append(notes, c.Type+": "+c.Message)
		}
	}
	s := strings.Join(parts, " ")
	if len(notes) > 0 {
		s += " — " + strings.Join(notes, "; ")
	}
	return s
}
