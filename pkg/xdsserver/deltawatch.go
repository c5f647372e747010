package xdsserver

// Delta watches, encoded once. go-control-plane's snapshot cache answers a
// delta watch with a response of its own per stream, which encodes every
// resource it carries again and hashes that encoding for the resource's
// version (cachedResource, made anew for each stream and response): at
// 1000 proxies a one-route change encoded and hashed the changed route
// configuration (450 KB at 3000 virtual hosts) a thousand times. Here a
// part (typecaches.go) holds each resource's DeltaDiscoveryResponse entry
// (discoveryv3.Resource: name, version, encoding) made once, from the
// encoding the digester already made (digest.go), and every stream's
// response refers to those same entries; gRPC copies their bytes into
// each stream's frames, which is all the per-stream work left.
//
// What a watch is answered follows the delta xDS protocol (the xDS
// protocol's "Incremental xDS") as go-control-plane's snapshot cache
// answers it (createDeltaResponse), so that its delta server drives these
// watches unchanged: a wildcard subscription receives every resource of
// the type whose version differs from what the stream returned last, a
// subscription by name those of its names, and both the names the stream
// holds that are gone, as removed_resources; an empty response is sent
// only to the first request of a wildcard subscription (Envoy waits for it
// to finish initializing). A resource's version is its version in the
// snapshot's VersionMap, so the initial_resource_versions of a proxy that
// reconnects name exactly what it holds.

import (
	"context"
	"errors"
	"maps"
	"sync"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
)

// deltaWatches are the open delta watches of the types of typeURLs, by
// scope, and the part each scope is served of each type. It is the
// go-control-plane cache (cachev3.Cache) that the MuxCache of typeCaches
// hands the delta requests of those types; state-of-the-world requests
// never reach it. Safe for concurrent use.
type deltaWatches struct {
	mu     sync.Mutex
	scopes map[string]*watchedScope
	nextID uint64
}

// watchedScope is one scope's parts (nil until set) and open watches, by
// index of typeURLs.
type watchedScope struct {
	parts   [5]*part
	watches [5]map[uint64]openWatch
}

// openWatch is a delta watch waiting for a change: the latest request of
// its type on its stream, the stream's subscription, and the stream's
// channel of responses.
type openWatch struct {
	req *cachev3.DeltaRequest
	sub cachev3.Subscription
	out chan cachev3.DeltaResponse
}

var _ cachev3.Cache = (*deltaWatches)(nil)

func newDeltaWatches() *deltaWatches {
	return &deltaWatches{scopes: map[string]*watchedScope{}}
}

// typeIndex is the index of typeURL in typeURLs, or -1.
func typeIndex(typeURL string) int {
	for i, typ := range typeURLs {
		if typ == typeURL {
			return i
		}
	}
	return -1
}

func (w *deltaWatches) scope(name string) *watchedScope {
	s := w.scopes[name]
	if s == nil {
		s = &watchedScope{}
		w.scopes[name] = s
	}
	return s
}

// set makes p the part of type index i that scope is served, and answers
// every open watch of that scope and type that p gives something new
// (those watches close; the stream opens another with its next request).
func (w *deltaWatches) set(scope string, i int, p *part) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.scope(scope)
	s.parts[i] = p
	for id, ow := range s.watches[i] {
		if deltaAnswer(p, ow) {
			delete(s.watches[i], id)
		}
	}
}

// parts returns the parts scope is served, by index of typeURLs (nil: none
// yet).
func (w *deltaWatches) parts(scope string) [5]*part {
	w.mu.Lock()
	defer w.mu.Unlock()
	if s := w.scopes[scope]; s != nil {
		return s.parts
	}
	return [5]*part{}
}

// clear forgets scope's parts; its open watches stay open, for the
// scope's next parts.
func (w *deltaWatches) clear(scope string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if s := w.scopes[scope]; s != nil {
		s.parts = [5]*part{}
	}
}

// CreateDeltaWatch answers req at once when the scope's part of req's
// type has something new for the subscription sub (then the returned
// cancel function is nil), and otherwise keeps the watch open until a
// part that has (cancel closes it). The scope is the node's cluster
// (ScopeHash). It fails for a type outside typeURLs.
func (w *deltaWatches) CreateDeltaWatch(req *cachev3.DeltaRequest, sub cachev3.Subscription, out chan cachev3.DeltaResponse) (func(), error) {
	i := typeIndex(req.GetTypeUrl())
	if i < 0 {
		return nil, errors.New("xds: no delta cache for type " + req.GetTypeUrl())
	}
	scope := ScopeHash{}.ID(req.GetNode())
	ow := openWatch{req: req, sub: sub, out: out}
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.scope(scope)
	if p := s.parts[i]; p != nil && deltaAnswer(p, ow) {
		return nil, nil
	}
	if s.watches[i] == nil {
		s.watches[i] = map[uint64]openWatch{}
	}
	w.nextID++
	id := w.nextID
	s.watches[i][id] = ow
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(s.watches[i], id)
	}, nil
}

// CreateWatch refuses: state-of-the-world watches go to the cache of whole
// snapshots (typeCaches' MuxCache never classifies one here).
func (w *deltaWatches) CreateWatch(*cachev3.Request, cachev3.Subscription, chan cachev3.Response) (func(), error) {
	return nil, errors.New("xds: state-of-the-world watches are served from whole snapshots")
}

// Fetch refuses, as CreateWatch.
func (w *deltaWatches) Fetch(context.Context, *cachev3.Request) (cachev3.Response, error) {
	return nil, errors.New("xds: fetch is not served")
}

// deltaAnswer sends ow the response that part p gives its subscription, if any
// (see the file comment), and says whether it sent one. The channel has
// room: go-control-plane's delta server keeps at most one open watch per
// type on a stream, and its buffer holds two per type.
func deltaAnswer(p *part, ow openWatch) bool {
	sub := ow.sub
	held := sub.ReturnedResources()
	wildcard := sub.IsWildcard()
	var resources []*discoveryv3.Resource
	var removed []string
	if wildcard {
		for name, version := range p.versions {
			if v, ok := held[name]; !ok || v != version {
				resources = append(resources, p.wire[name])
			}
		}
		for name := range held {
			if _, ok := p.versions[name]; !ok {
				removed = append(removed, name)
			}
		}
	} else {
		for name := range sub.SubscribedResources() {
			v, had := held[name]
			if version, ok := p.versions[name]; ok {
				if !had || v != version {
					resources = append(resources, p.wire[name])
				}
			} else if had {
				removed = append(removed, name)
			}
		}
	}
	if len(resources) == 0 && len(removed) == 0 && !(wildcard && ow.req.GetResponseNonce() == "") {
		// Nothing to send (most requests are ACKs): no map is made.
		return false
	}
	// What the stream holds once it has the response, in a map of its
	// own: the stream's subscription changes the map it is given (an
	// unsubscribed name is deleted).
	var next map[string]string
	if wildcard {
		next = maps.Clone(p.versions)
	} else {
		next = make(map[string]string, len(sub.SubscribedResources()))
		for name := range sub.SubscribedResources() {
			if version, ok := p.versions[name]; ok {
				next[name] = version
			}
		}
	}
	ow.out <- &cachev3.DeltaPassthroughResponse{
		DeltaRequest:   ow.req,
		NextVersionMap: next,
		DeltaDiscoveryResponse: &discoveryv3.DeltaDiscoveryResponse{
			TypeUrl:           p.typeURL,
			SystemVersionInfo: *p.label.Load(),
			Resources:         resources,
			RemovedResources:  removed,
		},
	}
	return true
}
