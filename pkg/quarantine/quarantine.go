// Package quarantine keeps a NACK from holding a scope hostage: when Envoy
// refuses (NACKs) a route configuration of a scope, it finds the route
// objects (HTTPRoutes, GRPCRoutes, Ingresses) whose Envoy routes Envoy
// refused and holds only those back, so that everything else of the scope,
// later changes of every other tenant included, keeps being served at the
// newest generation.
//
// How. On a NACK of version V after accepted version A, the suspects are
// the objects whose Envoy routes differ between A and V (Suspects). They
// are held (translate.Holds, an input of translation: the translators stay
// pure) and the scope is translated and published again. A lone suspect is
// the culprit. Several are told apart by halves (bisection): one half is
// let in; if Envoy accepts that version, the half is innocent and the
// other half holds a culprit; if it refuses, the half holds one and the
// other half is tried on its own later. Culprits stay held, with
// Accepted=False reason Rejected and Envoy's message on their parents in
// the scope, until the object changes (a new metadata.generation is
// translated again, and judged by Envoy again).
//
// Where from. The verdicts are the xDS server's (xdsserver.Server.Verdict):
// a version some proxy ACKed and none NACKed is accepted, one a proxy
// NACKed is rejected, the proxies of the other controller replicas
// included (their reports, pkg/provider/kubernetes/peers.go). Replicas
// translate the same input with the same holds into the same versions,
// and each reaches the same holds from the same verdicts.
//
// Limits. Only RouteConfiguration NACKs are attributed; a NACK of another
// type (a listener, a cluster, a secret), or one without a version
// accepted since the process started to compare with, leaves the scope as
// xdsserver leaves it (the last accepted version served, the scope frozen
// until the input changes). Suspects that are held while they are told
// apart keep their status (seconds).
package quarantine

import (
	"cmp"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/translate"
	"github.com/xds-controller/xds-controller/pkg/xdsserver"
	"github.com/xds-controller/xds-controller/pkg/xdstranslator"
)

// Verdicts answer what Envoy made of a published version's resources of
// a type: xdsserver.Server.Verdict.
type Verdicts interface {
	Verdict(scope, version, typeURL string) (accepted bool, nack *xdsserver.Nack)
}

// Generations looks up an object's metadata.generation in the input of a
// translation (translate.Generation on its resources).
type Generations func(gatewayapi.RouteKey) (int64, bool)

// pubLimit bounds the undecided publications remembered per scope.
const pubLimit = 16

// attributedLimit bounds the rejected versions remembered as attributed
// per scope.
const attributedLimit = 64

// maxDetail bounds the part of a message that quotes Envoy's error.
const maxDetail = 2048

// Quarantine holds the culprits and suspects of every scope. It is safe
// for concurrent use; the zero value is not usable (New).
type Quarantine struct {
	log *slog.Logger

	mu     sync.Mutex
	scopes map[string]*scopeState
}

// New returns an empty Quarantine; log receives what it finds.
func New(log *slog.Logger) *Quarantine {
	return &Quarantine{log: log, scopes: map[string]*scopeState{}}
}

type publication struct {
	version string
	res     *xdstranslator.Resources
	gen     Generations
}

type scopeState struct {
	// pubs are the publications without a verdict yet, oldest first;
	// last is the version last recorded.
	pubs []publication
	last string
	// good is the newest accepted version (nil while none is known),
	// goodPrints its Envoy routes (Fingerprints), computed when first
	// needed: most accepted versions never are compared.
	good       *xdstranslator.Resources
	goodPrints map[gatewayapi.RouteKey]uint64
	// culprits are held for good (until they change).
	culprits map[gatewayapi.RouteKey]translate.Hold
	// groups are the suspects, held unless testing.
	groups  []*group
	testing *group
	// attributed are rejected versions whose refusal was traced to
	// objects, oldest first.
	attributed []string
}

// group is a set of suspects told apart together.
type group struct {
	members map[gatewayapi.RouteKey]int64 // -> generation
	// bad: a culprit is among the members (a refused version differed
	// from an accepted one by them alone).
	bad  bool
	nack xdsserver.Nack
	// sibling is the other half of the bad group this one was split
	// from: bad once this half is found innocent.
	sibling *group
}

func (q *Quarantine) scope(name string) *scopeState {
	st := q.scopes[name]
	if st == nil {
		st = &scopeState{culprits: map[gatewayapi.RouteKey]translate.Hold{}}
		q.scopes[name] = st
	}
	return st
}

// Holds returns what to translate with (translate.WithHolds): every
// scope's culprits, and its suspects except the half being tried.
func (q *Quarantine) Holds() translate.Holds {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.holds()
}

func (q *Quarantine) holds() translate.Holds {
	out := translate.Holds{}
	for name, st := range q.scopes {
		if len(st.culprits) == 0 && len(st.groups) == 0 {
			continue
		}
		hs := maps.Clone(st.culprits)
		for _, g := range st.groups {
			if g == st.testing {
				continue
			}
			for k, gen := range g.members {
				if _, ok := hs[k]; !ok {
					hs[k] = translate.Hold{Generation: gen}
				}
			}
		}
		if len(hs) > 0 {
			out[name] = hs
		}
	}
	return out
}

// Published records that scope was published as version (what
// xdsserver.Server.Publish returned, also when it refused a version
// rejected before) from res, translated from objects whose generations
// gen looks up.
func (q *Quarantine) Published(scope, version string, res *xdstranslator.Resources, gen Generations) {
	if version == "" {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	st := q.scope(scope)
	for k := range st.culprits {
		if _, ok := gen(k); !ok {
			delete(st.culprits, k) // deleted
		}
	}
	// The same version again (a run that changed nothing here) needs no
	// new verdict, unless suspects wait for one.
	if version == st.last && (len(st.pubs) > 0 || len(st.groups) == 0) {
		return
	}
	st.last = version
	st.pubs = append(st.pubs, publication{version: version, res: res, gen: gen})
	if len(st.pubs) > pubLimit {
		st.pubs = st.pubs[len(st.pubs)-pubLimit:]
	}
}

// Forget drops what is known of scope (removed from the xDS server).
func (q *Quarantine) Forget(scope string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.scopes, scope)
}

// Update reads the verdicts of the publications that had none, in the
// order they were published (a publication without a verdict that a newer
// one with a verdict superseded is dropped), and acts on them: an
// accepted version clears the objects it serves; a rejected one holds its
// suspects and the bisection takes its next step. It reports whether the
// holds changed: the caller then translates and publishes again.
func (q *Quarantine) Update(v Verdicts) (changed bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	before := q.holds()
	for name, st := range q.scopes {
		last := -1
		type decided struct {
			accepted bool
			nack     *xdsserver.Nack
		}
		verdicts := make([]decided, len(st.pubs))
		for i, p := range st.pubs {
			// Accepted only once its route configurations are: Envoy
			// may ACK its clusters first and NACK its routes later.
			ok, nack := v.Verdict(name, p.version, resource.RouteType)
			if ok || nack != nil {
				verdicts[i], last = decided{ok, nack}, i
			}
		}
		pubs := st.pubs
		st.pubs = slices.Clone(st.pubs[last+1:])
		for i, p := range pubs[:last+1] {
			switch d := verdicts[i]; {
			case d.accepted:
				st.accepted(p)
			case d.nack != nil:
				q.rejected(name, st, p, *d.nack)
			}
		}
		q.step(name, st)
	}
	return !equalHolds(before, q.holds())
}

// goodFingerprints are the Envoy routes of the newest accepted version.
func (st *scopeState) goodFingerprints() map[gatewayapi.RouteKey]uint64 {
	if st.goodPrints == nil {
		st.goodPrints = Fingerprints(st.good)
	}
	return st.goodPrints
}

// accepted clears what p, an accepted version, serves.
func (st *scopeState) accepted(p publication) {
	if st.good != p.res {
		st.good, st.goodPrints = p.res, nil
	}
	if len(st.culprits) == 0 && len(st.groups) == 0 {
		return
	}
	served := st.goodFingerprints()
	for k := range served {
		delete(st.culprits, k)
	}
	st.groups = slices.DeleteFunc(st.groups, func(g *group) bool {
		n := len(g.members)
		for k := range served {
			delete(g.members, k)
		}
		if len(g.members) > 0 {
			return false
		}
		if g == st.testing {
			st.testing = nil
			if n > 0 && g.sibling != nil {
				g.sibling.bad, g.sibling.nack = true, g.nack
			}
		}
		return true
	})
}

// rejected holds the suspects of p, a rejected version.
func (q *Quarantine) rejected(scope string, st *scopeState, p publication, n xdsserver.Nack) {
	if n.TypeURL != resource.RouteType {
		q.log.Warn("Envoy refused a resource that no route object can be blamed for; the scope keeps its last accepted configuration until the input changes",
			"scope", scope, "version", p.version, "type", n.TypeURL)
		return
	}
	if st.good == nil {
		q.log.Warn("Envoy refused a route configuration and no accepted one is known to compare with; the scope keeps its last accepted configuration until the input changes",
			"scope", scope, "version", p.version)
		return
	}
	suspects := Suspects(st.goodFingerprints(), Fingerprints(p.res))
	if len(suspects) == 0 {
		q.log.Warn("Envoy refused a route configuration whose routes are those of the last accepted one; the scope keeps its last accepted configuration until the input changes",
			"scope", scope, "version", p.version)
		return
	}
	g := &group{members: map[gatewayapi.RouteKey]int64{}, bad: true, nack: n}
	for _, k := range suspects {
		gen, ok := p.gen(k)
		if !ok {
			continue // gone since
		}
		g.members[k] = gen
	}
	st.groups = slices.DeleteFunc(st.groups, func(o *group) bool {
		for k := range g.members {
			delete(o.members, k)
		}
		if len(o.members) == 0 && o == st.testing {
			st.testing = nil
		}
		return len(o.members) == 0
	})
	if st.testing != nil {
		for k := range g.members {
			if _, ok := st.testing.members[k]; ok {
				st.testing = nil
				break
			}
		}
	}
	if len(g.members) > 0 {
		st.groups = append(st.groups, g)
	}
	st.attributed = append(st.attributed, p.version)
	if len(st.attributed) > attributedLimit {
		st.attributed = st.attributed[len(st.attributed)-attributedLimit:]
	}
	q.log.Info("Envoy refused a route configuration; holding back the objects whose routes changed", "scope", scope,
		"version", p.version, "suspects", len(g.members), "objects", keyList(g.members))
}

// step turns lone bad suspects into culprits and, when no half is being
// tried, picks the next one: the first half of a bad group (split), else
// an untried group.
func (q *Quarantine) step(scope string, st *scopeState) {
	st.groups = slices.DeleteFunc(st.groups, func(g *group) bool {
		if !g.bad || len(g.members) != 1 {
			return false
		}
		for k, gen := range g.members {
			st.culprits[k] = translate.Hold{Generation: gen, Culprit: true, Message: culpritMessage(scope, g.nack)}
			q.log.Warn("Envoy refused this object's routes; it is held back until it changes, the rest of the scope is served",
				"scope", scope, "object", k.String(), "generation", gen, "error", g.nack.Detail)
		}
		if g == st.testing {
			st.testing = nil
		}
		return true
	})
	if st.testing != nil {
		return
	}
	for i, g := range st.groups {
		if !g.bad {
			continue
		}
		keys := slices.SortedFunc(maps.Keys(g.members), compareKeys)
		a, b := &group{members: map[gatewayapi.RouteKey]int64{}, nack: g.nack}, &group{members: map[gatewayapi.RouteKey]int64{}, nack: g.nack}
		for j, k := range keys {
			if j < len(keys)/2 {
				a.members[k] = g.members[k]
			} else {
				b.members[k] = g.members[k]
			}
		}
		a.sibling = b
		st.groups = slices.Replace(st.groups, i, i+1, a, b)
		st.testing = a
		return
	}
	if len(st.groups) > 0 {
		st.testing = st.groups[0]
	}
}

// Attributed reports whether the refusal of version in scope was traced
// to objects (whose holds then carry it): its Gateways need not show it
// (View).
func (q *Quarantine) Attributed(scope, version string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	st := q.scopes[scope]
	return st != nil && slices.Contains(st.attributed, version)
}

// View returns views (xdsserver.Server.View) without the rejections that
// were traced to objects: a scope whose refused routes are held back is
// not Rejected as a whole (status.WithDataPlane), its culprits are. A
// rejection of a version published but not judged yet (the NACK arrived
// after the last Update: views are read apart from Update, and the NACK's
// own notification brings the Update) is hidden too, until Update says
// whether it can be traced; otherwise a status read in between would show
// the whole scope Rejected for a moment.
func (q *Quarantine) View(views map[string]xdsserver.ScopeView) map[string]xdsserver.ScopeView {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := maps.Clone(views)
	for scope, v := range out {
		st := q.scopes[scope]
		if v.Rejected == nil || st == nil {
			continue
		}
		judging := slices.ContainsFunc(st.pubs, func(p publication) bool { return p.version == v.Rejected.Version })
		if judging || slices.Contains(st.attributed, v.Rejected.Version) {
			v.Rejected = nil
			out[scope] = v
		}
	}
	return out
}

// culpritMessage is a culprit's condition message, from the NACK that
// found it.
func culpritMessage(scope string, n xdsserver.Nack) string {
	detail := n.Detail
	if len(detail) > maxDetail {
		detail = detail[:maxDetail] + "..."
	}
	via := ""
	if n.Replica != "" {
		via = " (via controller replica " + n.Replica + ")"
	}
	return fmt.Sprintf("Envoy proxy %s%s of scope %s rejected the route configuration with this route's routes: %s; "+
		"the route is held back (not served) until it changes, the rest of the scope is served", n.NodeID, via, scope, detail)
}

func compareKeys(a, b gatewayapi.RouteKey) int {
	return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}

func keyList(m map[gatewayapi.RouteKey]int64) string {
	keys := slices.SortedFunc(maps.Keys(m), compareKeys)
	s := make([]string, len(keys))
	for i, k := range keys {
		s[i] = k.String()
	}
	return strings.Join(s, ", ")
}

func equalHolds(a, b translate.Holds) bool {
	return maps.EqualFunc(a, b, func(x, y map[gatewayapi.RouteKey]translate.Hold) bool { return maps.Equal(x, y) })
}
