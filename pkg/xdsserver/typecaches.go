package xdsserver

import (
	"context"
	"maps"
	"sync/atomic"

	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"

	"github.com/xds-controller/xds-controller/pkg/memo"
)

// Per-type caches. go-control-plane's snapshot cache answers every delta
// watch of a scope at each new snapshot: for each watch it walks every
// resource of the watch's type, comparing versions, and builds a map of
// all of them, even when nothing of that type changed. At 3000 clusters
// and ClusterLoadAssignments with two proxies, that was about half of a
// publish's time and a good share of its garbage. So delta watches are
// served by one snapshot cache per type (go-control-plane's MuxCache,
// keyed by type URL), each holding that type of the scope's snapshot (a
// part), and a publish sets only the parts whose resources changed.
// State-of-the-world watches, and delta watches of types we do not serve,
// go to a cache of whole snapshots, set at every publish as before.
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

// typeCaches are the snapshot caches the ADS server reads: one of whole
// snapshots and one per type of typeURLs. Not safe for concurrent use
// (Server's mutex guards it); the caches themselves are.
type typeCaches struct {
	whole cachev3.SnapshotCache
	types [5]cachev3.SnapshotCache
	mux   *cachev3.MuxCache
	parts map[string]*[5]*part // by scope
}

func newTypeCaches() *typeCaches {
	t := &typeCaches{whole: cachev3.NewSnapshotCache(true, ScopeHash{}, nil), parts: map[string]*[5]*part{}}
	caches := map[string]cachev3.Cache{wholeKey: t.whole}
	for i, typ := range typeURLs {
		t.types[i] = cachev3.NewSnapshotCache(true, ScopeHash{}, nil)
		caches[typ] = t.types[i]
	}
	t.mux = &cachev3.MuxCache{
		Classify: func(*cachev3.Request) string { return wholeKey },
		ClassifyDelta: func(req *cachev3.DeltaRequest) string {
			for _, typ := range typeURLs {
				if req.GetTypeUrl() == typ {
					return typ
				}
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
// order; the other parts take version as their label. It returns the
// first error of a cache (a cancelled ctx), having set what it could.
func (t *typeCaches) set(ctx context.Context, scope, version string, snap *cachev3.Snapshot) error {
	if err := t.whole.SetSnapshot(ctx, scope, snap); err != nil {
		return err
	}
	held := t.parts[scope]
	if held == nil {
		held = &[5]*part{}
		t.parts[scope] = held
	}
	var unchanged []*part
	for _, i := range adsOrder {
		typ := typeURLs[i]
		items := snap.Resources[cachev3.GetResponseType(typ)].Items
		versions := snap.VersionMap[typ]
		if p := held[i]; p != nil && sameVersions(p.versions, versions) {
			unchanged = append(unchanged, p)
			continue
		}
		p := newPart(typ, version, items, versions)
		if err := t.types[i].SetSnapshot(ctx, scope, p); err != nil {
			return err
		}
		held[i] = p
	}
	for _, p := range unchanged {
		p.label.Store(&version)
	}
	return nil
}

// clear drops scope from every cache.
func (t *typeCaches) clear(scope string) {
	t.whole.ClearSnapshot(scope)
	for _, c := range t.types {
		c.ClearSnapshot(scope)
	}
	delete(t.parts, scope)
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

// part is one type of a scope's snapshot as its type's cache serves it
// (a cachev3.ResourceSnapshot): the resources by name, their versions,
// and the label, the snapshot version responses carry. Its maps are never
// modified; the label changes to a newer version of the same resources.
type part struct {
	typeURL   string
	items     map[string]types.ResourceWithTTL
	resources map[string]types.Resource
	versions  map[string]string
	label     atomic.Pointer[string]
}

var _ cachev3.ResourceSnapshot = (*part)(nil)

func newPart(typeURL, version string, items map[string]types.ResourceWithTTL, versions map[string]string) *part {
	p := &part{typeURL: typeURL, items: items, versions: versions, resources: make(map[string]types.Resource, len(items))}
	for name, r := range items {
		p.resources[name] = r.Resource
	}
	p.label.Store(&version)
	return p
}

// GetVersion is the label for the part's type, "" for another.
func (p *part) GetVersion(typeURL string) string {
	if typeURL != p.typeURL {
		return ""
	}
	return *p.label.Load()
}

// GetResourcesAndTTL returns the part's resources for its type, nil for
// another.
func (p *part) GetResourcesAndTTL(typeURL string) map[string]types.ResourceWithTTL {
	if typeURL != p.typeURL {
		return nil
	}
	return p.items
}

// GetResources is GetResourcesAndTTL without TTLs (a map made once per
// part, where cachev3.Snapshot makes one per call).
func (p *part) GetResources(typeURL string) map[string]types.Resource {
	if typeURL != p.typeURL {
		return nil
	}
	return p.resources
}

// ConstructVersionMap does nothing: the versions are the digests, known
// before.
func (p *part) ConstructVersionMap() error { return nil }

// GetVersionMap returns the versions of the part's resources (name ->
// version) for its type, nil for another.
func (p *part) GetVersionMap(typeURL string) map[string]string {
	if typeURL != p.typeURL {
		return nil
	}
	return p.versions
}
