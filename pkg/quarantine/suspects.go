package quarantine

import (
	"hash/fnv"
	"maps"
	"slices"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/proto"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/xdstranslator"
)

// Fingerprints maps every route object with Envoy routes in r (those
// whose origin r.Origins knows: HTTPRoutes, GRPCRoutes, Ingresses) to a
// digest of them: each route's deterministic protobuf encoding with the
// names of its RouteConfiguration and virtual host and the virtual host's
// domains, combined regardless of order. Two versions of a scope give an
// object the same fingerprint when its Envoy routes are the same in both.
// Routes without an origin ("misdirected/<host>") are not counted.
func Fingerprints(r *xdstranslator.Resources) map[gatewayapi.RouteKey]uint64 {
	out := map[gatewayapi.RouteKey]uint64{}
	if r == nil {
		return out
	}
	enc := proto.MarshalOptions{Deterministic: true}
	for _, res := range r.Routes {
		rc, ok := res.(*routev3.RouteConfiguration)
		if !ok {
			continue
		}
		for _, vh := range rc.GetVirtualHosts() {
			for _, rt := range vh.GetRoutes() {
				o, ok := r.Origins.Of(rt.GetName())
				if !ok {
					continue
				}
				key := o.Object
				b, err := enc.Marshal(rt)
				if err != nil {
					// Unreachable for a route that was published; it
					// still differs from any other version.
					b = []byte(err.Error())
				}
				h := fnv.New64a()
				for _, s := range append([]string{rc.GetName(), vh.GetName()}, vh.GetDomains()...) {
					h.Write([]byte(s))
					h.Write([]byte{0})
				}
				h.Write(b)
				// A sum: the order of an object's routes among others'
				// does not make Envoy refuse anything.
				out[key] += h.Sum64()
			}
		}
	}
	return out
}

// Suspects returns the objects whose Envoy routes differ between good, a
// version Envoy accepted, and rejected, the version it refused right
// after (Fingerprints): those rejected has and good has not, or has
// otherwise, sorted. An object only good has cannot have been refused.
// nil when they do not differ so (the refusal is not a route's).
func Suspects(good, rejected map[gatewayapi.RouteKey]uint64) []gatewayapi.RouteKey {
	var out []gatewayapi.RouteKey
	for _, k := range slices.SortedFunc(maps.Keys(rejected), compareKeys) {
		if g, ok := good[k]; !ok || g != rejected[k] {
			out = append(out, k)
		}
	}
	return out
}
