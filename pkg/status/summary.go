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
	if st == nil {
		return out
	}
	for name, s := range st.GatewayClasses {
		out["GatewayClass "+name] = conditions(s.Conditions)
	}
	for nn, s := range st.Gateways {
		key := "Gateway " + nn.String()
		out[key] = conditions(s.Conditions)
		for _, l := range s.Listeners {
			out[key+" listener "+string(l.Name)] = fmt.Sprintf("attachedRoutes=%d %s", l.AttachedRoutes, conditions(l.Conditions))
		}
	}
	for nn, s := range st.ListenerSets {
		key := "ListenerSet " + nn.String()
		out[key] = conditions(s.Conditions)
		for _, l := range s.Listeners {
			out[key+" listener "+string(l.Name)] = fmt.Sprintf("attachedRoutes=%d %s", l.AttachedRoutes, conditions(l.Conditions))
		}
	}
	for k, s := range st.Routes {
		for _, p := range s.Parents {
			out[k.String()+" -> "+parentName(p.ParentRef, k.Namespace)] = conditions(p.Conditions)
		}
	}
	for k, s := range st.Policies {
		for _, a := range s.Ancestors {
			out[k.String()+" -> "+parentName(a.AncestorRef, k.Namespace)] = conditions(a.Conditions)
		}
	}
	return out
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
