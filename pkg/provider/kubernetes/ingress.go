package kubernetes

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/xds-controller/xds-controller/pkg/ingress"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

// reportedIngress is what was last reported of one Ingress: its
// generation and problems.
type reportedIngress struct {
	generation int64
	problems   []ingress.Problem
}

// reportIngresses reports the problems of the Ingresses of ours (st,
// their status from the translation of res), which the Ingress API has no
// status field for: each problem that is new for the Ingress (or comes
// with a new generation of it) is logged, and, on the leader, recorded as
// a Warning Event on the Ingress with the problem's reason. Problems reported
// before and still there are not repeated; an Ingress whose problems are
// all gone gets a Normal Event reason Served, once.
func (p *pipeline) reportIngresses(res *resources.Resources, st map[types.NamespacedName]*ingress.Status) {
	objs := make(map[types.NamespacedName]*networkingv1.Ingress, len(res.Ingresses))
	for _, ing := range res.Ingresses {
		objs[types.NamespacedName{Namespace: ing.Namespace, Name: ing.Name}] = ing
	}
	next := make(map[types.NamespacedName]reportedIngress, len(st))
	leading := p.events != nil && p.leader.Leading()
	keys := slices.Collect(maps.Keys(st))
	sortNames(keys)
	for _, k := range keys {
		is := st[k]
		prev, seen := p.ingressReports[k]
		next[k] = reportedIngress{generation: is.Generation, problems: is.Problems}
		obj := objs[k]
		for _, pr := range is.Problems {
			if seen && prev.generation == is.Generation && slices.Contains(prev.problems, pr) {
				continue
			}
			p.log.Warn("Ingress problem", "ingress", k, "class", is.Class, "reason", pr.Reason, "problem", pr.Message)
			if leading && obj != nil {
				p.events.Eventf(obj, nil, corev1.EventTypeWarning, pr.Reason, "Translating", "%s", pr.Message)
			}
		}
		if len(is.Problems) == 0 && seen && len(prev.problems) > 0 {
			p.log.Info("Ingress served without problems", "ingress", k, "class", is.Class)
			if leading && obj != nil {
				p.events.Eventf(obj, nil, corev1.EventTypeNormal, "Served", "Translating", "served by IngressClass %s without problems", is.Class)
			}
		}
	}
	p.ingressReports = next
}
