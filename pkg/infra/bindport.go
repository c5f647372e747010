package infra

import (
	"cmp"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
)

// The port range of shared-fleet bind ports: above the privileged ports and
// the dedicated-mode range (10000-11023), below Linux's default ephemeral
// range (32768-60999), so that Envoy's own upstream connections never take
// a port a listener is about to bind.
const (
	SharedPortMin = 20000
	SharedPortMax = 32767
	// dedicatedLowPortOffset is added to listener ports below 1024 in
	// Dedicated mode: Envoy runs as non-root.
	dedicatedLowPortOffset = 10000
)

// reservedPorts are the ports every Envoy pod binds besides its listeners:
// Envoy's admin (on the pod's loopback, which still takes the port from a
// listener on 0.0.0.0), readiness and metrics listeners from its bootstrap,
// and the SVID agent's startup probe (the containers of a pod share one
// network namespace). A listener port that would bind one of them is
// remapped (DedicatedBindPorts) instead of making Envoy refuse the listener
// ("Address already in use").
var reservedPorts = map[uint32]bool{AdminPort: true, ReadinessPort: true, AgentProbePort: true, MetricsPort: true}

// ReservedPorts are reservedPorts, sorted: the ports an Envoy pod listens
// on besides its Gateway listeners (gatewayapi.Options.ProxyPorts). The
// slice is shared: do not modify it.
func ReservedPorts() []uint32 { return reservedPortList }

// reservedPortList is ReservedPorts, sorted once.
var reservedPortList = slices.Sorted(maps.Keys(reservedPorts))

// ListenerKey identifies a listener port of a Gateway.
type ListenerKey struct {
	Gateway types.NamespacedName
	Port    int32
}

// BindPort is the port Envoy binds for gw's listener port in mode.
//
// Dedicated: the listener port, plus 10000 when it is below 1024 (80 ->
// 10080); should that collide with another listener port of the same
// Gateway or with a port the pod binds besides its listeners (9901, 19001,
// 19002, 19003: reservedPorts), the port comes from the shared range
// instead (see DedicatedBindPorts). Exact: this is what AssignBindPorts
// gives.
//
// Shared: the Gateway's home port for the listener port, a hash of
// <namespace>/<name>:<port> in [SharedPortMin, SharedPortMax]. Two
// Gateways of a class may hash to the same port: only AssignBindPorts,
// which sees all of the class's Gateways, is collision-free, and the
// controller must use it.
func BindPort(mode v1alpha1.Mode, gw *gwapiv1.Gateway, listenerPort int32) uint32 {
	if mode == v1alpha1.ModeDedicated {
		return DedicatedBindPorts(gw)[listenerPort]
	}
	return homePort(types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}, listenerPort)
}

func homePort(gw types.NamespacedName, port int32) uint32 {
	h := fnv.New64a()
	h.Write([]byte(gw.Namespace + "/" + gw.Name + ":" + strconv.Itoa(int(port))))
	return SharedPortMin + uint32(h.Sum64()%(SharedPortMax-SharedPortMin+1))
}

// listenerPorts are gw's distinct listener ports, ascending.
func listenerPorts(gw *gwapiv1.Gateway) []int32 {
	var ports []int32
	for _, l := range gw.Spec.Listeners {
		ports = append(ports, int32(l.Port))
	}
	slices.Sort(ports)
	return slices.Compact(ports)
}

// DedicatedBindPorts maps each listener port of gw to its bind port in
// Dedicated mode: ports from 1024 up bind as themselves, lower ports at
// +10000; a port that would collide (with a reserved port or a listener
// port already taken) gets the first free port after its home port in the
// shared range.
func DedicatedBindPorts(gw *gwapiv1.Gateway) map[int32]uint32 {
	ports := listenerPorts(gw)
	out := make(map[int32]uint32, len(ports))
	taken := map[uint32]bool{}
	// High ports first: a listener on 10080 keeps 10080 even when another
	// listener is on 80.
	for _, p := range ports {
		if p >= 1024 && !reservedPorts[uint32(p)] {
			out[p] = uint32(p)
			taken[uint32(p)] = true
		}
	}
	nn := types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}
	for _, p := range ports {
		if _, done := out[p]; done {
			continue
		}
		want := uint32(p)
		if p < 1024 {
			want = uint32(p) + dedicatedLowPortOffset
		}
		if taken[want] || reservedPorts[want] {
			want = probe(homePort(nn, p), taken)
		}
		out[p] = want
		taken[want] = true
	}
	return out
}

// probe returns the first port from start on (wrapping in the shared
// range) that is not taken, or 0 when the range is full.
func probe(start uint32, taken map[uint32]bool) uint32 {
	const size = SharedPortMax - SharedPortMin + 1
	for i := uint32(0); i < size; i++ {
		p := SharedPortMin + (start-SharedPortMin+i)%size
		if !taken[p] && !reservedPorts[p] {
			return p
		}
	}
	return 0
}

// BindPorts holds the bind port of every listener port of a set of
// Gateways. Its BindPort method is the gatewayapi.Options.BindPort of a
// translation.
type BindPorts struct {
	ports map[ListenerKey]uint32
}

// BindPort returns the bind port of gw's listener port, or, for a Gateway
// or port that AssignBindPorts did not see, what the package-level BindPort
// gives in Shared mode (so a translation never gets 0).
func (b *BindPorts) BindPort(gw *gwapiv1.Gateway, port gwapiv1.PortNumber) uint32 {
	k := ListenerKey{Gateway: types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}, Port: int32(port)}
	if b != nil {
		if p, ok := b.ports[k]; ok {
			return p
		}
	}
	return homePort(k.Gateway, k.Port)
}

// Lookup returns the bind port of k and whether it was assigned.
func (b *BindPorts) Lookup(k ListenerKey) (uint32, bool) {
	p, ok := b.ports[k]
	return p, ok
}

// Len is the number of assigned listener ports.
func (b *BindPorts) Len() int { return len(b.ports) }

// AssignBindPorts assigns the bind ports of gateways (of any classes; mode
// gives each Gateway's effective mode). Dedicated Gateways get
// DedicatedBindPorts. The Shared Gateways of one class share one Envoy
// fleet, so their listener ports get distinct ports of [SharedPortMin,
// SharedPortMax]:
//
//  1. listener ports are ordered by their Gateway's creationTimestamp, then
//     namespace/name, then port;
//  2. in that order, each keeps its previous port (previous, read from the
//     live Services by PreviousBindPorts) when that is in the range and
//     still free;
//  3. then, in the same order, the others take their home port (FNV-1a of
//     "<namespace>/<name>:<port>") or, when it is taken, the next free port
//     (wrapping around the range).
//
// Stability: with previous from the live Services, a listener port keeps
// its bind port for as long as its Gateway keeps it, whatever other
// Gateways are created, changed or deleted. Without previous (the Services
// are gone or unreadable), an assignment depends only on the Gateways
// created before it (and on equal timestamps, on names): adding a Gateway
// never moves an older one's ports. A port that could not be assigned (more
// than 12,768 listener ports in one class) is 0.
func AssignBindPorts(gateways []*gwapiv1.Gateway, mode func(*gwapiv1.Gateway) v1alpha1.Mode, previous map[ListenerKey]uint32) *BindPorts {
	out := &BindPorts{ports: map[ListenerKey]uint32{}}
	byClass := map[string][]*gwapiv1.Gateway{}
	for _, gw := range gateways {
		nn := types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}
		if mode(gw) == v1alpha1.ModeDedicated {
			for p, bp := range DedicatedBindPorts(gw) {
				out.ports[ListenerKey{Gateway: nn, Port: p}] = bp
			}
			continue
		}
		c := string(gw.Spec.GatewayClassName)
		byClass[c] = append(byClass[c], gw)
	}
	for _, gws := range byClass {
		slices.SortFunc(gws, func(a, b *gwapiv1.Gateway) int {
			if c := a.CreationTimestamp.Time.Compare(b.CreationTimestamp.Time); c != 0 {
				return c
			}
			return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
		})
		var keys []ListenerKey
		for _, gw := range gws {
			nn := types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}
			for _, p := range listenerPorts(gw) {
				keys = append(keys, ListenerKey{Gateway: nn, Port: p})
			}
		}
		taken := map[uint32]bool{}
		for _, k := range keys {
			if p, ok := previous[k]; ok && p >= SharedPortMin && p <= SharedPortMax && !taken[p] {
				out.ports[k] = p
				taken[p] = true
			}
		}
		for _, k := range keys {
			if _, done := out.ports[k]; done {
				continue
			}
			p := probe(homePort(k.Gateway, k.Port), taken)
			out.ports[k] = p
			if p != 0 {
				taken[p] = true
			}
		}
	}
	return out
}

// PreviousBindPorts reads the bind ports in force from the live Gateway
// Services (ours: labelled LabelManagedBy=xds-controller and annotated
// with AnnotationGatewayName; others are ignored): each Service port's
// targetPort.
func PreviousBindPorts(services []corev1.Service) map[ListenerKey]uint32 {
	out := map[ListenerKey]uint32{}
	for i := range services {
		svc := &services[i]
		name := svc.Annotations[AnnotationGatewayName]
		if svc.Labels[LabelManagedBy] != ManagedByValue || name == "" {
			continue
		}
		for _, sp := range svc.Spec.Ports {
			if sp.TargetPort.IntValue() > 0 {
				out[ListenerKey{Gateway: types.NamespacedName{Namespace: svc.Namespace, Name: name}, Port: sp.Port}] = uint32(sp.TargetPort.IntValue())
			}
		}
	}
	return out
}
