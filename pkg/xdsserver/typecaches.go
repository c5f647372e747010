package xdsserver

import (
	"context"
	"fmt"
	"maps"
	"sync/atomic"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xds-controller/xds-controller/pkg/memo"
)

// Per-type caches. go-control-plane's snapshot cache answers every delta
// watch of a scope at each new snapshot: for each watch it walks every
// resource of the watch's type, comparing versions, and builds a map of
// all of them, even when nothing of that type changed. At 3000 clusters
// and ClusterLoadAssignments with two proxies, that was about half of a
// publish's time and a good share of its garbage. So delta watches of the
// five types we publish are served per type (deltawatch.go): each scope
// has a part per type, and a publish sets only the parts whose resources
// changed, which answers only the watches of those types. State-of-the-
// world watches, and delta watches of types we do not serve, go to
// go-control-plane's snapshot cache of whole snapshots, set at every
// publish as before (go-control-plane's MuxCache sends each request to
// one or the other by type URL).
//
// Versions stay what they were: a response carries the scope's snapshot
// version (system_version_info), and every part is labelled with the
// served version once a publish is done. A part that did not change keeps
// its maps and only takes the new label, which is true of it (that
// version has these very resources of its type).

// adsOrder is the order in which parts are set, so that a proxy receives
// clusters before their ClusterLoadAssignments and before the listeners
// and route configurations that use them (the ADS order of the xDS
// protocol, and of go-control-plane's snapshot cache), secrets last as
// there. Indexes of typeURLs.
var adsOrder = [5]int{2, 3, 0, 1, 4}

// wholeKey is the MuxCache key of the cache of whole snapshots.
const wholeKey = "whole"

// typeCaches are the caches the ADS server reads: a snapshot cache of
// whole snapshots, and the parts and delta watches of the types of
// typeURLs. Not safe for concurrent use (Server's mutex guards it); the
// caches themselves are.
type typeCaches struct {
	whole cachev3.SnapshotCache
	delta *deltaWatches
	mux   *cachev3.MuxCache
}

func newTypeCaches() *typeCaches {
	t := &typeCaches{whole: cachev3.NewSnapshotCache(true, ScopeHash{}, nil), delta: newDeltaWatches()}
	caches := map[string]cachev3.Cache{wholeKey: t.whole}
	for _, typ := range typeURLs {
		caches[typ] = t.delta
	}
	t.mux = &cachev3.MuxCache{
		Classify: func(*cachev3.Request) string { return wholeKey },
		ClassifyDelta: func(req *cachev3.DeltaRequest) string {
			if typeIndex(req.GetTypeUrl()) >= 0 {
				return req.GetTypeUrl()
			}
			return wholeKey
		},
		Caches: caches,
	}
	return t
}

// set makes snap (of version) what scope's proxies are served: the whole
// snapshot for state-of-the-world, and for delta the parts whose
// resources differ from those served so far (their VersionMap), in ADS
// order; the other parts take version as their label. wire, when not
// nil, holds the delta entries of snap's resources by type index and name
// (the digester's, made once per resource); without it a new part encodes
// its resources itself. It returns the error of the whole snapshot's
// cache (a cancelled ctx), or of encoding a resource, having set what it
// could.
func (t *typeCaches) set(ctx context.Context, scope, version string, snap *cachev3.Snapshot, wire *[5]map[string]*discoveryv3.Resource) error {
	if err := t.whole.SetSnapshot(ctx, scope, snap); err != nil {
		return err
	}
	held := t.delta.parts(scope)
	var unchanged []*part
	for _, i := range adsOrder {
		typ := typeURLs[i]
		items := snap.Resources[cachev3.GetResponseType(typ)].Items
		versions := snap.VersionMap[typ]
		if p := held[i]; p != nil && sameVersions(p.versions, versions) {
			unchanged = append(unchanged, p)
			continue
		}
		var w map[string]*discoveryv3.Resource
		if wire != nil {
			w = wire[i]
		}
		p, err := newPart(typ, version, items, versions, w)
		if err != nil {
			return err
		}
		t.delta.set(scope, i, p)
	}
	for _, p := range unchanged {
		p.label.Store(&version)
	}
	return nil
}

// clear drops scope from every cache.
func (t *typeCaches) clear(scope string) {
	t.whole.ClearSnapshot(scope)
	t.delta.clear(scope)
}

// snapshot is the whole snapshot scope is served, or nil.
func (t *typeCaches) snapshot(scope string) *cachev3.Snapshot {
	s, err := t.whole.GetSnapshot(scope)
	if err != nil {
		return nil
	}
	snap, _ := s.(*cachev3.Snapshot)
	return snap
}

// sameVersions says whether two VersionMaps of one type name the same
// resources at the same versions: the very same map (a list the
// translation handed over unchanged), or equal ones.
func sameVersions(a, b map[string]string) bool {
	return memo.SameMap(a, b) || maps.Equal(a, b)
}

// part is one type of a scope's snapshot as delta watches are served it
// (deltawatch.go): the resources' versions by name, their delta entries
// by name, and the label, the snapshot version responses carry. Its maps
// are never modified; the label changes to a newer version of the same
// resources.
type part struct {
	typeURL  string
	versions map[string]string
	wire     map[string]*discoveryv3.Resource
	label    atomic.Pointer[string]
}

// newPart is the part of type typeURL with the resources items (by name)
// at versions, labelled version. wire holds their delta entries (as
// wireEntry makes them); when nil, newPart makes them, and fails when a
// resource cannot be encoded.
func newPart(typeURL, version string, items map[string]types.ResourceWithTTL, versions map[string]string, wire map[string]*discoveryv3.Resource) (*part, error) {
	if wire == nil {
		wire = make(map[string]*discoveryv3.Resource, len(items))
		for name, r := range items {
			b, err := proto.MarshalOptions{Deterministic: true}.Marshal(r.Resource)
			if err != nil {
				return nil, fmt.Errorf("encoding %s %s: %w", typeName(typeURL), name, err)
			}
			wire[name] = wireEntry(typeURL, name, versions[name], b)
		}
	}
	p := &part{typeURL: typeURL, versions: versions, wire: wire}
	p.label.Store(&version)
	return p, nil
}

// wireEntry is the entry of a delta response (DeltaDiscoveryResponse's
// resources) for the resource name of type typeURL at version, encoded
// as enc. Entries are shared by every response that carries them, and
// never modified.
func wireEntry(typeURL, name, version string, enc []byte) *discoveryv3.Resource {
	return &discoveryv3.Resource{Name: name, Version: version, Resource: &anypb.Any{TypeUrl: typeURL, Value: enc}}
}
