package translate

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwapixv1a1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/provider/file"
	"github.com/xds-controller/xds-controller/pkg/resources"
	"github.com/xds-controller/xds-controller/pkg/xdstranslator"
)

// object is what a resource snapshot holds: any Kubernetes object.
type object interface {
	metav1.Object
	runtime.Object
}

// objKey names an object of a world: its Go type's name and
// namespace/name.
type objKey struct{ kind, ns, name string }

func keyOf(o object) objKey {
	return objKey{reflect.TypeOf(o).Elem().Name(), o.GetNamespace(), o.GetName()}
}

// world is the set of objects a sequence of changes works on: the live
// ones and those removed (which a later change may bring back), with the
// values edits pick from.
type world struct {
	rng   *rand.Rand
	live  map[objKey]object
	dead  map[objKey]object
	hosts []string
	// services are the Services' namespace/name and ports seen.
	services []gwapiv1.BackendObjectReference
	sections []string
	clones   int
	log      []string
}

func newWorld(rng *rand.Rand, objs []object) *world {
	w := &world{rng: rng, live: map[objKey]object{}, dead: map[objKey]object{}}
	w.hosts = []string{"a.example.com", "*.example.com", "b.example.com", "*.b.example.com", "other.org", "UPPER.example.com"}
	w.sections = []string{"http", "https"}
	for _, o := range objs {
		if _, dup := w.live[keyOf(o)]; dup {
			continue
		}
		w.live[keyOf(o)] = o
		for _, h := range find[gwapiv1.Hostname](o) {
			w.hosts = append(w.hosts, string(*h))
		}
		switch v := o.(type) {
		case *corev1.Service:
			for _, p := range v.Spec.Ports {
				ns := gwapiv1.Namespace(v.Namespace)
				w.services = append(w.services, gwapiv1.BackendObjectReference{Name: gwapiv1.ObjectName(v.Name), Namespace: &ns, Port: ptrTo(p.Port)})
			}
		case *gwapiv1.Gateway:
			for _, l := range v.Spec.Listeners {
				w.sections = append(w.sections, string(l.Name))
			}
		case *gwapixv1a1.XBackend:
			ns := gwapiv1.Namespace(v.Namespace)
			w.services = append(w.services, gwapiv1.BackendObjectReference{Group: ptrTo(gwapiv1.Group(gwapixv1a1.GroupName)),
				Kind: ptrTo(gwapiv1.Kind("XBackend")), Name: gwapiv1.ObjectName(v.Name), Namespace: &ns})
		}
	}
	w.services = append(w.services, gwapiv1.BackendObjectReference{Name: "missing", Port: ptrTo[int32](80)})
	return w
}

// find returns a pointer to every value of type T under o's exported
// fields (o itself excluded), so that edits reach a route kind's
// hostnames, backendRefs and parentRefs without knowing the kind.
func find[T any](o any) []*T {
	var out []*T
	var walk func(v reflect.Value, depth int)
	walk = func(v reflect.Value, depth int) {
		if depth > 12 {
			return
		}
		if v.CanAddr() && v.Type() == reflect.TypeFor[T]() {
			out = append(out, v.Addr().Interface().(*T))
		}
		switch v.Kind() {
		case reflect.Pointer:
			if !v.IsNil() {
				walk(v.Elem(), depth+1)
			}
		case reflect.Struct:
			if v.Type() == reflect.TypeFor[metav1.ObjectMeta]() {
				return
			}
			for i := 0; i < v.NumField(); i++ {
				if v.Type().Field(i).IsExported() {
					walk(v.Field(i), depth+1)
				}
			}
		case reflect.Slice:
			for i := 0; i < v.Len(); i++ {
				walk(v.Index(i), depth+1)
			}
		}
	}
	walk(reflect.ValueOf(o), 0)
	return out
}

func (w *world) keys(m map[objKey]object) []objKey {
	ks := make([]objKey, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, func(a, b objKey) int { return strings.Compare(a.kind+"/"+a.ns+"/"+a.name, b.kind+"/"+b.ns+"/"+b.name) })
	return ks
}

// pick picks an object of m: a kind at random, then an object of it, so
// that the few objects of rare kinds get their share of changes.
func (w *world) pick(m map[objKey]object) (objKey, object, bool) {
	ks := w.keys(m)
	if len(ks) == 0 {
		return objKey{}, nil, false
	}
	var kinds []string
	for _, k := range ks {
		if !slices.Contains(kinds, k.kind) {
			kinds = append(kinds, k.kind)
		}
	}
	kind := kinds[w.rng.IntN(len(kinds))]
	ks = slices.DeleteFunc(ks, func(k objKey) bool { return k.kind != kind })
	k := ks[w.rng.IntN(len(ks))]
	return k, m[k], true
}

func (w *world) oneOf(s []string) string { return s[w.rng.IntN(len(s))] }

// change applies one random change: remove an object, bring a removed one
// back, replace one by an identical copy, edit one, or add a copy of a
// route under a new name and creation time.
func (w *world) change() {
	switch n := w.rng.IntN(10); {
	case n < 2:
		if k, o, ok := w.pick(w.live); ok {
			delete(w.live, k)
			w.dead[k] = o
			w.log = append(w.log, fmt.Sprintf("delete %v", k))
		}
	case n < 3:
		if k, o, ok := w.pick(w.dead); ok {
			delete(w.dead, k)
			w.live[k] = o
			w.log = append(w.log, fmt.Sprintf("restore %v", k))
		}
	case n < 4:
		if k, o, ok := w.pick(w.live); ok {
			w.live[k] = o.DeepCopyObject().(object)
			w.log = append(w.log, fmt.Sprintf("touch %v", k))
		}
	case n < 9:
		if k, o, ok := w.pick(w.live); ok {
			c := o.DeepCopyObject().(object)
			c.SetGeneration(c.GetGeneration() + 1)
			what := w.edit(c)
			w.live[k] = c
			w.log = append(w.log, fmt.Sprintf("edit %v: %s", k, what))
		}
	default:
		var routes []objKey
		for _, k := range w.keys(w.live) {
			if strings.HasSuffix(k.kind, "Route") {
				routes = append(routes, k)
			}
		}
		if len(routes) == 0 {
			return
		}
		k := routes[w.rng.IntN(len(routes))]
		c := w.live[k].DeepCopyObject().(object)
		w.clones++
		c.SetName(fmt.Sprintf("%s-c%d", k.name, w.clones))
		c.SetCreationTimestamp(metav1.NewTime(time.Date(2026, 1, 1, 0, 0, w.rng.IntN(3), 0, time.UTC)))
		if w.rng.IntN(2) == 0 {
			w.edit(c)
		}
		w.live[keyOf(c)] = c
		w.log = append(w.log, fmt.Sprintf("clone %v as %s", k, c.GetName()))
	}
}

// edit changes o (a copy) the way users do: hostnames, backendRefs,
// parentRefs, paths, ports, endpoints, labels, Secret data, or the whole
// spec of another object of its kind. It says what it did.
func (w *world) edit(o object) string {
	switch v := o.(type) {
	case *discoveryv1.EndpointSlice:
		switch w.rng.IntN(4) {
		case 0:
			if len(v.Endpoints) > 0 {
				v.Endpoints = v.Endpoints[1:]
				return "drop an endpoint"
			}
		case 1:
			if len(v.Endpoints) > 0 {
				e := &v.Endpoints[w.rng.IntN(len(v.Endpoints))]
				e.Conditions.Ready = ptrTo(e.Conditions.Ready != nil && !*e.Conditions.Ready)
				return "toggle ready"
			}
		case 2:
			if len(w.services) > 0 {
				s := w.services[w.rng.IntN(len(w.services))]
				if v.Labels == nil {
					v.Labels = map[string]string{}
				}
				v.Labels[discoveryv1.LabelServiceName] = string(s.Name)
				return "service-name " + string(s.Name)
			}
		}
		v.Endpoints = append(v.Endpoints, discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("10.9.%d.%d", w.rng.IntN(3), 1+w.rng.IntN(3))}})
		return "add an endpoint"
	case *corev1.Service:
		if len(v.Spec.Ports) > 0 {
			switch w.rng.IntN(3) {
			case 0:
				v.Spec.Ports[0].Port = []int32{80, 8080, 9000}[w.rng.IntN(3)]
				return "port"
			case 1:
				v.Spec.Ports[0].AppProtocol = []*string{nil, ptrTo("kubernetes.io/h2c"), ptrTo("http")}[w.rng.IntN(3)]
				return "appProtocol"
			}
		}
		v.Spec.ClusterIP = fmt.Sprintf("10.96.%d.%d", w.rng.IntN(3), 1+w.rng.IntN(3))
		return "clusterIP"
	case *corev1.Namespace:
		if w.rng.IntN(2) == 0 {
			v.Labels = nil
			return "no labels"
		}
		v.Labels = map[string]string{"shared": "true", "env": w.oneOf([]string{"prod", "dev"}), "gateway-access": w.oneOf([]string{"true", "false"})}
		return "labels"
	case *corev1.Secret:
		return w.editSecret(v) // incremental_ingress_test.go
	case *corev1.ConfigMap:
		return w.swap(o, "Data")
	case *gwapiv1.Gateway:
		if len(v.Spec.Listeners) > 0 && w.rng.IntN(3) > 0 {
			l := &v.Spec.Listeners[w.rng.IntN(len(v.Spec.Listeners))]
			switch w.rng.IntN(4) {
			case 0:
				l.Hostname = []*gwapiv1.Hostname{nil, ptrTo(gwapiv1.Hostname(w.oneOf(w.hosts)))}[w.rng.IntN(2)]
				return "listener hostname"
			case 1:
				from := []gwapiv1.FromNamespaces{gwapiv1.NamespacesFromAll, gwapiv1.NamespacesFromSame}[w.rng.IntN(2)]
				l.AllowedRoutes = &gwapiv1.AllowedRoutes{Namespaces: &gwapiv1.RouteNamespaces{From: &from}}
				return "allowedRoutes"
			case 2:
				l.Port = []gwapiv1.PortNumber{80, 8080, 443}[w.rng.IntN(3)]
				return "listener port"
			}
			v.Spec.Listeners = slices.Delete(v.Spec.Listeners, 0, 1)
			return "drop a listener"
		}
	case *gwapixv1a1.XBackendTrafficPolicy:
		switch w.rng.IntN(3) {
		case 0:
			if len(v.Spec.TargetRefs) > 0 && len(w.services) > 0 {
				s := w.services[w.rng.IntN(len(w.services))]
				v.Spec.TargetRefs[0].Name = s.Name
				return "targetRef " + string(s.Name)
			}
		case 1:
			v.Spec.SessionPersistence = nil
			return "no sessionPersistence"
		default:
			v.Spec.RetryConstraint = &gwapixv1a1.RetryConstraint{Budget: &gwapixv1a1.BudgetDetails{Percent: ptrTo(w.rng.IntN(120))}}
			return "retry budget percent"
		}
	case *v1alpha1.BackendPolicy:
		switch w.rng.IntN(7) {
		case 0:
			// Another Service of the world, or a port of it.
			var svcs []gwapiv1.BackendObjectReference
			for _, s := range w.services {
				if s.Group == nil {
					svcs = append(svcs, s)
				}
			}
			if len(v.Spec.TargetRefs) > 0 && len(svcs) > 0 {
				s := svcs[w.rng.IntN(len(svcs))]
				v.Spec.TargetRefs[0].Name = s.Name
				return "targetRef " + string(s.Name)
			}
		case 1:
			if len(v.Spec.TargetRefs) > 0 {
				v.Spec.TargetRefs[0].SectionName = []*gwapiv1.SectionName{nil, ptrTo(gwapiv1.SectionName("http")), ptrTo(gwapiv1.SectionName("admin"))}[w.rng.IntN(3)]
				return "targetRef sectionName"
			}
		case 2:
			lb := &v1alpha1.LoadBalancer{Type: []v1alpha1.LoadBalancerType{v1alpha1.LoadBalancerRandom, v1alpha1.LoadBalancerRingHash, v1alpha1.LoadBalancerMaglev}[w.rng.IntN(3)]}
			if lb.Type != v1alpha1.LoadBalancerRandom {
				lb.HashKey = []*v1alpha1.HashKey{
					{Type: v1alpha1.HashKeyHeader, Header: &v1alpha1.HashHeader{Name: "x-user"}},
					{Type: v1alpha1.HashKeyCookie, Cookie: &v1alpha1.HashCookie{Name: "lb"}},
					{Type: v1alpha1.HashKeyClientIP},
				}[w.rng.IntN(3)]
			}
			v.Spec.LoadBalancer = lb
			return "loadBalancer " + string(lb.Type)
		case 3:
			v.Spec.HealthCheck = []*v1alpha1.HealthCheck{nil, {Passive: &v1alpha1.PassiveHealthCheck{}}, {Active: &v1alpha1.ActiveHealthCheck{Type: v1alpha1.ActiveHealthCheckGRPC}}}[w.rng.IntN(3)]
			return "healthCheck"
		case 4:
			v.Spec.CircuitBreaker = &v1alpha1.CircuitBreaker{MaxRequests: ptrTo(int32(w.rng.IntN(3)))}
			return "circuitBreaker maxRequests (0 is invalid)"
		case 5:
			v.Spec.ProxyProtocol = []*v1alpha1.BackendProxyProtocol{nil, {Version: v1alpha1.ProxyProtocolV1}, {Version: v1alpha1.ProxyProtocolV2}}[w.rng.IntN(3)]
			return "proxyProtocol"
		default:
			v.Spec.Connection = &v1alpha1.BackendConnection{ConnectTimeout: ptrTo(gwapiv1.Duration(w.oneOf([]string{"1s", "250ms", "0s"})))}
			return "connectTimeout"
		}
	case *v1alpha1.SecurityPolicy:
		switch w.rng.IntN(8) {
		case 0:
			// Another target: a route of the world (or one of its rules),
			// or a Gateway's listener.
			var routes []objKey
			for _, k := range w.keys(w.live) {
				if k.kind == "HTTPRoute" || k.kind == "GRPCRoute" {
					routes = append(routes, k)
				}
			}
			if len(v.Spec.TargetRefs) > 0 && len(routes) > 0 {
				k := routes[w.rng.IntN(len(routes))]
				v.Spec.TargetRefs[0] = gwapiv1.LocalPolicyTargetReferenceWithSectionName{LocalPolicyTargetReference: gwapiv1.LocalPolicyTargetReference{
					Group: gwapiv1.GroupName, Kind: gwapiv1.Kind(k.kind), Name: gwapiv1.ObjectName(k.name)}}
				return "targetRef " + k.kind + " " + k.name
			}
		case 1:
			if len(v.Spec.TargetRefs) > 0 {
				v.Spec.TargetRefs[0].SectionName = []*gwapiv1.SectionName{nil, ptrTo(gwapiv1.SectionName(w.oneOf(w.sections)))}[w.rng.IntN(2)]
				return "targetRef sectionName"
			}
		case 2:
			v.Spec.BasicAuth = nil
			return "no basicAuth"
		case 3:
			if o := v.Spec.OIDC; o != nil {
				o.RedirectPath = w.oneOf([]string{"", "/cb", "/logout"})
				return "oidc redirectPath"
			}
		case 4: // jwt: a provider's requirements, claim headers, or none
			if j := v.Spec.JWT; j != nil && len(j.Providers) > 0 {
				p := &j.Providers[w.rng.IntN(len(j.Providers))]
				switch w.rng.IntN(3) {
				case 0:
					p.RequiredScopes = [][]string{nil, {"read"}, {"write", "read"}}[w.rng.IntN(3)]
					return "jwt requiredScopes"
				case 1:
					p.ClaimToHeaders = [][]v1alpha1.ClaimToHeader{nil, {{Header: "x-sub", Claim: "sub"}}}[w.rng.IntN(2)]
					return "jwt claimToHeaders"
				}
				v.Spec.JWT = nil
				return "no jwt"
			}
		case 5: // authorization: the default action, a rule more or less, or none
			if a := v.Spec.Authorization; a != nil {
				switch w.rng.IntN(3) {
				case 0:
					a.DefaultAction = ptrTo([]v1alpha1.AuthorizationAction{v1alpha1.AuthorizationAllow, v1alpha1.AuthorizationDeny}[w.rng.IntN(2)])
					return "authorization defaultAction"
				case 1:
					a.Rules = append([]v1alpha1.AuthorizationRule{{Action: v1alpha1.AuthorizationDeny, ClientCIDRs: []string{w.oneOf([]string{"10.0.0.0/8", "192.0.2.1", "bad"})}}}, a.Rules...)
					return "authorization rule added"
				}
				v.Spec.Authorization = nil
				return "no authorization"
			}
			v.Spec.Authorization = &v1alpha1.Authorization{DefaultAction: ptrTo(v1alpha1.AuthorizationAllow),
				Rules: []v1alpha1.AuthorizationRule{{Action: v1alpha1.AuthorizationDeny, Methods: []gwapiv1.HTTPMethod{"DELETE"}}}}
			return "authorization set"
		case 6, 7: // extAuth: a check on a Service of the world (or a missing one), or none
			if v.Spec.ExtAuth != nil && w.rng.IntN(3) == 0 {
				v.Spec.ExtAuth = nil
				return "no extAuth"
			}
			var svcs []string
			for _, k := range w.keys(w.live) {
				if k.kind == "Service" && k.ns == v.Namespace {
					svcs = append(svcs, k.name)
				}
			}
			name := "missing"
			if len(svcs) > 0 && w.rng.IntN(4) > 0 {
				name = svcs[w.rng.IntN(len(svcs))]
			}
			f := &gwapiv1.HTTPExternalAuthFilter{ExternalAuthProtocol: gwapiv1.HTTPRouteExternalAuthHTTPProtocol,
				BackendRef: gwapiv1.BackendObjectReference{Name: gwapiv1.ObjectName(name), Port: ptrTo(gwapiv1.PortNumber(80))}, HTTPAuthConfig: &gwapiv1.HTTPAuthConfig{}}
			if w.rng.IntN(2) == 0 {
				f.ExternalAuthProtocol, f.GRPCAuthConfig, f.HTTPAuthConfig = gwapiv1.HTTPRouteExternalAuthGRPCProtocol, &gwapiv1.GRPCAuthConfig{}, nil
			}
			v.Spec.ExtAuth = f
			return "extAuth on Service " + name
		}
		return w.swap(o, "Spec")
	case *v1alpha1.TrafficPolicy:
		return w.editTrafficPolicy(v)
	case *v1alpha1.ListenerPolicy:
		return w.editListenerPolicy(o, v)
	case *gwapixv1a1.XBackend:
		switch w.rng.IntN(4) {
		case 0:
			v.Spec.Port.Number = []gwapixv1a1.PortNumber{443, 8080, 0}[w.rng.IntN(3)]
			return "port"
		case 1:
			if v.Spec.EndpointSelector != nil {
				v.Spec.EndpointSelector.MatchLabels = map[gwapiv1.LabelKey]gwapiv1.LabelValue{"app": gwapiv1.LabelValue(w.oneOf([]string{"web", "other"}))}
				return "selector"
			}
			if v.Spec.ExternalHostname != nil {
				v.Spec.ExternalHostname.Hostname = gwapiv1.PreciseHostname(w.oneOf([]string{"a.example.org", "b.example.org", "x.cluster.local"}))
				return "hostname"
			}
		case 2:
			v.Spec.TLS = nil
			return "no tls"
		}
		return w.swap(o, "Spec")
	case *corev1.Pod:
		switch w.rng.IntN(4) {
		case 0:
			st := []corev1.ConditionStatus{corev1.ConditionTrue, corev1.ConditionFalse}[w.rng.IntN(2)]
			v.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}
			return "ready " + string(st)
		case 1:
			v.Labels = map[string]string{"app": w.oneOf([]string{"web", "other"})}
			return "labels"
		case 2:
			v.Status.PodIP, v.Status.PodIPs = fmt.Sprintf("10.1.%d.%d", w.rng.IntN(3), 1+w.rng.IntN(3)), nil
			return "IP"
		}
		v.DeletionTimestamp = ptrTo(metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
		return "terminating"
	case *gwapiv1.ReferenceGrant:
		if len(v.Spec.To) > 0 {
			v.Spec.To[0].Name = []*gwapiv1.ObjectName{nil, ptrTo(gwapiv1.ObjectName("missing"))}[w.rng.IntN(2)]
			return "grant to name"
		}
	}
	if strings.HasSuffix(keyOf(o).kind, "Route") {
		switch w.rng.IntN(5) {
		case 0:
			if hs := find[[]gwapiv1.Hostname](o); len(hs) > 0 {
				var out []gwapiv1.Hostname
				for range w.rng.IntN(3) {
					out = append(out, gwapiv1.Hostname(w.oneOf(w.hosts)))
				}
				*hs[0] = out
				return fmt.Sprintf("hostnames %v", out)
			}
		case 1:
			if refs := find[gwapiv1.BackendObjectReference](o); len(refs) > 0 {
				s := w.services[w.rng.IntN(len(w.services))]
				r := refs[w.rng.IntN(len(refs))]
				r.Group, r.Kind, r.Name, r.Port = s.Group, s.Kind, s.Name, s.Port
				if w.rng.IntN(2) == 0 {
					r.Namespace = s.Namespace
				}
				return fmt.Sprintf("backendRef %s", s.Name)
			}
		case 2:
			if refs := find[gwapiv1.ParentReference](o); len(refs) > 0 {
				r := refs[w.rng.IntN(len(refs))]
				r.SectionName = []*gwapiv1.SectionName{nil, ptrTo(gwapiv1.SectionName(w.oneOf(w.sections)))}[w.rng.IntN(2)]
				return "sectionName"
			}
		case 3:
			if ps := find[gwapiv1.HTTPPathMatch](o); len(ps) > 0 {
				ps[w.rng.IntN(len(ps))].Value = ptrTo(w.oneOf([]string{"/", "/a", "/a/b", "/x/"}))
				return "path"
			}
		}
	}
	return w.swap(o, "Spec")
}

// swap gives o the field (Spec, Data) of another live object of its kind.
func (w *world) swap(o object, field string) string {
	var same []object
	for _, k := range w.keys(w.live) {
		if k.kind == keyOf(o).kind && k != keyOf(o) {
			same = append(same, w.live[k])
		}
	}
	if len(same) == 0 {
		return "nothing"
	}
	other := same[w.rng.IntN(len(same))].DeepCopyObject()
	reflect.ValueOf(o).Elem().FieldByName(field).Set(reflect.ValueOf(other).Elem().FieldByName(field))
	return field + " of " + keyOf(other.(object)).name
}

// snapshot is the world as a sorted resource snapshot.
func (w *world) snapshot() *resources.Resources {
	res := &resources.Resources{}
	for _, k := range w.keys(w.live) {
		res.Add(w.live[k])
	}
	res.Sort()
	return res
}

// diffOutputs says how got (Cache.Run) differs from want (Run), or "".
func diffOutputs(got, want *Output, gotErr, wantErr error) string {
	if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
		return fmt.Sprintf("error %v, want %v", gotErr, wantErr)
	}
	if got == nil || want == nil || got.Result == nil || want.Result == nil {
		if (got == nil) != (want == nil) {
			return "one output is nil"
		}
		return ""
	}
	if !reflect.DeepEqual(got.Result, want.Result) {
		g, _ := MarshalIR(got.Result, true)
		wa, _ := MarshalIR(want.Result, true)
		if d := firstDiff(g, wa); d != "" {
			return "IR or status: " + d
		}
		return "IR or status: equal YAML, different values"
	}
	if !reflect.DeepEqual(got.Refused, want.Refused) {
		return fmt.Sprintf("refused %v, want %v", got.Refused, want.Refused)
	}
	if len(got.XDS) != len(want.XDS) {
		return fmt.Sprintf("scopes %v, want %v", ScopeNames(got.XDS), ScopeNames(want.XDS))
	}
	for scope, wr := range want.XDS {
		gr := got.XDS[scope]
		if gr == nil {
			return "scope " + scope + " missing"
		}
		for i, pair := range [][2][]types.Resource{{gr.Listeners, wr.Listeners}, {gr.Routes, wr.Routes}, {gr.Clusters, wr.Clusters}, {gr.Endpoints, wr.Endpoints}, {gr.Secrets, wr.Secrets}} {
			if len(pair[0]) != len(pair[1]) {
				return fmt.Sprintf("scope %s type %d: %d resources, want %d", scope, i, len(pair[0]), len(pair[1]))
			}
			for j := range pair[0] {
				if !proto.Equal(pair[0][j], pair[1][j]) {
					gy, _ := MarshalXDS(map[string]*xdstranslator.Resources{scope: {Listeners: pair[0][j : j+1]}}, true)
					wy, _ := MarshalXDS(map[string]*xdstranslator.Resources{scope: {Listeners: pair[1][j : j+1]}}, true)
					return fmt.Sprintf("scope %s type %d resource %d: %s", scope, i, j, firstDiff(gy, wy))
				}
			}
		}
	}
	return ""
}

// firstDiff shows the first lines where a and b differ, or "".
func firstDiff(a, b []byte) string {
	if bytes.Equal(a, b) {
		return ""
	}
	al, bl := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := 0; i < max(len(al), len(bl)); i++ {
		if i >= len(al) || i >= len(bl) || al[i] != bl[i] {
			from := max(0, i-6)
			return fmt.Sprintf("at line %d\n--- got:\n%s\n--- want:\n%s", i+1,
				strings.Join(al[from:min(len(al), i+4)], "\n"), strings.Join(bl[from:min(len(bl), i+4)], "\n"))
		}
	}
	return "same lines, different bytes"
}

// TestIncrementalEqualsFull is the property that makes Cache.Run safe:
// for random sequences of changes (objects of every kind removed, brought
// back, replaced by a copy, edited, routes copied under new names and
// creation times), every run of one Cache gives exactly what Run gives
// for the same snapshot from scratch: the same IR, status and warnings
// (byte-identical YAML), proto.Equal Envoy resources in the same order,
// the same refused scopes and errors. It also checks that a run leaves
// the previous run's output as it was (outputs share unchanged parts).
//
// The worlds are every golden input alone, and unions of three of them
// (whose objects meet: one case's routes attach to another's Gateway). It
// fails when a kind of object, or incremental runs (those that did not
// start over: gatewayapi.Cache.LastRun), were tried too few times.
// Seeds derive from the world's name (plus XDSC_INCREMENTAL_SEED, default
// 0, to try other sequences); XDSC_INCREMENTAL_STEPS sets the number of
// steps per world (default 20).
func TestIncrementalEqualsFull(t *testing.T) {
	inputs, err := filepath.Glob("testdata/*.in.yaml")
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no golden inputs: %v", err)
	}
	steps := 20
	if s := os.Getenv("XDSC_INCREMENTAL_STEPS"); s != "" {
		if steps, err = strconv.Atoi(s); err != nil {
			t.Fatal(err)
		}
	}
	if testing.Short() {
		steps = 4
	}
	var salt uint64
	if s := os.Getenv("XDSC_INCREMENTAL_SEED"); s != "" {
		if salt, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatal(err)
		}
	}
	loaded := map[string][]object{}
	for _, in := range inputs {
		res, _, err := file.Load(in)
		if err != nil {
			t.Fatal(err)
		}
		loaded[in] = objectsOf(res)
	}
	type worldSpec struct {
		name  string
		files []string
	}
	var specs []worldSpec
	for _, in := range inputs {
		specs = append(specs, worldSpec{filepath.Base(in), []string{in}})
	}
	// Unions of three inputs, one of which has routes of an L4 kind (few
	// inputs do), so that those get their share of changes.
	var l4 []string
	for _, in := range inputs {
		for _, o := range loaded[in] {
			if k := keyOf(o).kind; k == "TCPRoute" || k == "UDPRoute" || k == "TLSRoute" {
				l4 = append(l4, in)
				break
			}
		}
	}
	mix := rand.New(rand.NewPCG(1, 2))
	for i := range 25 {
		files := []string{inputs[mix.IntN(len(inputs))], inputs[mix.IntN(len(inputs))], l4[mix.IntN(len(l4))]}
		specs = append(specs, worldSpec{fmt.Sprintf("union-%d", i), files})
	}
	// What the sequences changed (kind -> changes), and how many runs
	// were incremental: the property must have been tried on each.
	changed := map[string]int{}
	incremental := 0
	for i, spec := range specs {
		// Every other world is translated as the controller in
		// Dedicated mode does: a scope per Gateway, ports bound above
		// 10000, addresses on the Service.
		var opts gatewayapi.Options
		if i%2 == 1 {
			opts = gatewayapi.Options{
				Scope:              func(gw *gwapiv1.Gateway) string { return "gateway/" + gw.Namespace + "/" + gw.Name },
				BindPort:           func(_ *gwapiv1.Gateway, p gwapiv1.PortNumber) uint32 { return uint32(p) + 10000 },
				AddressesOnService: true,
			}
		}
		withRateLimitService(i, &opts) // incremental_traffic_test.go
		// The inputs' SecurityPolicy oidc options (GoldenOptions: the
		// controller's key, the discovered providers).
		for _, f := range spec.files {
			in, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if g := GoldenOptions(in); len(g.SecretKey) > 0 || len(g.OIDCProviders) > 0 {
				opts.SecretKey = g.SecretKey
				if opts.OIDCProviders == nil {
					opts.OIDCProviders = map[string]gatewayapi.OIDCProvider{}
				}
				maps.Copy(opts.OIDCProviders, g.OIDCProviders)
			}
		}
		h := fnv.New64a()
		h.Write([]byte(spec.name))
		seed := h.Sum64() + salt
		var objs []object
		for _, f := range spec.files {
			for _, o := range loaded[f] {
				objs = append(objs, o.DeepCopyObject().(object))
			}
		}
		w := newWorld(rand.New(rand.NewPCG(seed, 3)), objs)
		c := NewCache()
		var prevOut *Output
		var prevResult *Result
		for step := 0; step <= steps; step++ {
			if step > 0 {
				for range 1 + w.rng.IntN(3) {
					w.change()
				}
			}
			res := w.snapshot()
			got, gotErr := c.Run(res, opts)
			if full, _ := c.gw.LastRun(); !full {
				incremental++
			}
			want, wantErr := Run(res, opts)
			if d := diffOutputs(got, want, gotErr, wantErr); d != "" {
				t.Fatalf("world %s (files %v, seed %d), step %d: incremental and full differ: %s\nchanges:\n  %s",
					spec.name, spec.files, seed, step, d, strings.Join(w.log, "\n  "))
			}
			if prevOut != nil && prevOut.Result != nil && !reflect.DeepEqual(prevOut.Result, prevResult) {
				again, _ := MarshalIR(prevOut.Result, true)
				before, _ := MarshalIR(prevResult, true)
				t.Fatalf("world %s (seed %d), step %d: the run changed the previous run's output: %s\nchanges:\n  %s",
					spec.name, seed, step, firstDiff(again, before), strings.Join(w.log, "\n  "))
			}
			prevOut, prevResult = got, nil
			if got != nil && got.Result != nil {
				prevResult = deepCopyResult(got.Result)
			}
		}
		for _, l := range w.log {
			if _, rest, ok := strings.Cut(l, "{"); ok {
				changed[strings.Fields(rest)[0]]++
			}
		}
	}
	t.Logf("changes by kind: %v; %d incremental runs", changed, incremental)
	for _, kind := range []string{"HTTPRoute", "GRPCRoute", "TLSRoute", "TCPRoute", "UDPRoute", "Service", "EndpointSlice", "Secret", "Gateway", "ReferenceGrant", "XBackendTrafficPolicy", "XTelemetryPolicy", "XBackend", "Pod", "SecurityPolicy", "TrafficPolicy", "BackendPolicy", "ListenerPolicy", "Ingress", "Namespace"} {
		if changed[kind] < 10 {
			t.Errorf("only %d changes of %ss were tried", changed[kind], kind)
		}
	}
	if incremental < 200 {
		t.Errorf("only %d runs were incremental", incremental)
	}
}

// objectsOf lists every object of res.
func objectsOf(res *resources.Resources) []object {
	var out []object
	add := func(v reflect.Value) {
		for i := 0; i < v.Len(); i++ {
			if o, ok := v.Index(i).Interface().(object); ok && !v.Index(i).IsNil() {
				out = append(out, o)
			}
		}
	}
	v := reflect.ValueOf(res).Elem()
	for i := 0; i < v.NumField(); i++ {
		add(v.Field(i))
	}
	return out
}

// deepCopyResult copies r so that a later change to r shows.
func deepCopyResult(r *Result) *Result {
	out := &Result{IR: r.IR.DeepCopy(), Ingresses: copyMap(r.Ingresses, copyIngressStatus)}
	if st := r.Status; st != nil {
		out.Status = &gatewayapi.Status{Warnings: slices.Clone(st.Warnings)}
		out.Status.GatewayClasses = copyMap(st.GatewayClasses, (*gwapiv1.GatewayClassStatus).DeepCopy)
		out.Status.Gateways = copyMap(st.Gateways, (*gwapiv1.GatewayStatus).DeepCopy)
		out.Status.ListenerSets = copyMap(st.ListenerSets, (*gwapiv1.ListenerSetStatus).DeepCopy)
		out.Status.Routes = copyMap(st.Routes, (*gwapiv1.RouteStatus).DeepCopy)
		out.Status.Policies = copyMap(st.Policies, (*gwapiv1.PolicyStatus).DeepCopy)
	}
	return out
}

func copyMap[K comparable, V any](m map[K]V, cp func(V) V) map[K]V {
	if m == nil {
		return nil
	}
	out := make(map[K]V, len(m))
	for k, v := range m {
		out[k] = cp(v)
	}
	return out
}
