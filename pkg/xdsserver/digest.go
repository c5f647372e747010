package xdsserver

// Resource digests: what versions a scope's snapshot and each of its
// resources. A digest is the SHA-256 of the resource's deterministic
// protobuf encoding; a route configuration's is that of its encoding
// without virtual hosts followed by each virtual host's digest, so that a
// route configuration whose virtual hosts are mostly unchanged costs only
// the changed ones. The snapshot's version combines the digests of all
// resources (Version); each resource's digest, in hex, is its version in
// the snapshot's VersionMap, which delta xDS compares per resource, but
// for a ClusterLoadAssignment, whose version there also names its
// cluster's (claVersion).
//
// A scope's digester keeps the digests (and protoc-gen-validate verdicts)
// of the last publish, found again by identity and place (memo.List): the
// translation hands over the same objects for what did not change.

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/xds-controller/xds-controller/pkg/memo"
	"github.com/xds-controller/xds-controller/pkg/xdstranslator"
)

// typeURLs are the type URLs of the lists of xdstranslator.Resources, in
// their order (lists).
var typeURLs = [5]string{resource.ListenerType, resource.RouteType, resource.ClusterType, resource.EndpointType, resource.SecretType}

func lists(r *xdstranslator.Resources) [5][]types.Resource {
	return [5][]types.Resource{r.Listeners, r.Routes, r.Clusters, r.Endpoints, r.Secrets}
}

// digest is a resource's digest, in hex too, and, when its digester
// validates, its protoc-gen-validate verdict. A virtual host's digest also
// keeps its deterministic encoding (wire), and a route configuration's the
// digests of its virtual hosts, in order (parts), and, once made, the
// form of it that snapshots serve (served: wireForm). enc is the encoding
// delta responses carry (encoding): the deterministic encoding the digest
// was computed from, or a route configuration's served form's; entry is
// the last delta entry made of it (deltaEntry).
type digest struct {
	sum     [32]byte
	version string
	invalid error
	wire    []byte
	enc     []byte
	entry   *discoveryv3.Resource
	parts   []*digest
	served  *routev3.RouteConfiguration
	// cluster is the version of the cluster a ClusterLoadAssignment's
	// digest was last combined with, withCluster the result (claVersion).
	cluster, withCluster string
}

// claVersion is the version in snapshots of a ClusterLoadAssignment whose
// digest is dg, given the version of its cluster (the cluster of the
// same name; "" when there is none): the first halves of both, so that a
// new cluster means a new ClusterLoadAssignment too. Envoy warms a
// modified EDS cluster anew, and the new cluster takes no endpoints until
// a ClusterLoadAssignment arrives (Envoy's eds.cc; the xDS protocol's
// "Eventual consistency considerations": the management server sends it
// after the cluster): in delta xDS, which sends only resources of a new
// version, the same endpoints under the same version would never be
// sent, and the cluster, and with it every later cluster change (Envoy
// withholds its CDS ACK while a cluster warms), waited for the
// subscription's initial fetch timeout (15 s) and Envoy's cached copy.
// State-of-the-world xDS sends every ClusterLoadAssignment at each
// publish anyway (a type's version is the snapshot's). The result is kept
// in dg for the next publish of the same cluster.
func (dg *digest) claVersion(cluster string) string {
	if cluster == "" {
		return dg.version
	}
	if dg.cluster != cluster {
		dg.cluster, dg.withCluster = cluster, dg.version[:32]+cluster[:min(32, len(cluster))]
	}
	return dg.withCluster
}

// digester computes the digests of one scope's resources. Not safe for
// concurrent use; the zero value is usable.
type digester struct {
	// validate makes it run each new resource's ValidateAll too.
	validate bool
	lists    [5]memo.List[types.Resource, *digest]
	vhosts   map[string]*memo.List[*routev3.VirtualHost, *digest]
	// kept is what the last publish derived from each list (version,
	// snapshot).
	kept [5]keptList
	// checked says that listeners, clusters and ClusterLoadAssignments
	// whose lists have the sums checkedSums, with route configurations
	// named checkedRoutes, passed the consistency check (consistent).
	checked       bool
	checkedSums   [3][32]byte
	checkedRoutes []string
}

// keptList is what a digester derived from one list of digests, kept
// while the list is the very same: memo.List hands out the same slice of
// digests for the very same list of resources, a new one otherwise.
type keptList struct {
	digests []*digest
	ok      bool
	// sum is the SHA-256 of the digests, in order (version).
	sum [32]byte
	// items are the list's resources by name as a snapshot holds them,
	// versions their VersionMap, wire their delta entries (wireEntry) and
	// typeSum its typeSum (snapshot; nil until made).
	items    map[string]types.ResourceWithTTL
	versions map[string]string
	wire     map[string]*discoveryv3.Resource
	typeSum  uint64
}

// digests returns the digests of r's resources, list by list. It fails
// when a resource cannot be encoded.
func (d *digester) digests(r *xdstranslator.Resources) ([5][]*digest, error) {
	var out [5][]*digest
	var err error
	live := map[string]bool{}
	for i, l := range lists(r) {
		out[i] = d.lists[i].Update(l, nil, func(j int) *digest {
			dg, e := d.resource(l[j])
			if e != nil && err == nil {
				err = e
			}
			return dg
		}, nil)
		if i == 1 {
			for _, rc := range l {
				live[cachev3.GetResourceName(rc)] = true
			}
		}
	}
	for name := range d.vhosts {
		if !live[name] {
			delete(d.vhosts, name)
		}
	}
	return out, err
}

// resource computes the digest of res (and validates it).
func (d *digester) resource(res types.Resource) (*digest, error) {
	if rc, ok := res.(*routev3.RouteConfiguration); ok {
		return d.config(rc)
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(res)
	if err != nil {
		return &digest{}, err
	}
	dg := newDigest(sha256.Sum256(b))
	dg.enc = b
	if d.validate {
		dg.invalid = validate(res, "")
	}
	return dg, nil
}

// encoding returns the encoding of served, the resource of digest dg as
// snapshots serve it, made once per digest: the one the digest was
// computed from, or for a route configuration that of its served form
// (wireForm; a copy of its virtual hosts' encodings).
func (dg *digest) encoding(served types.Resource) ([]byte, error) {
	if dg.enc == nil {
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(served)
		if err != nil {
			return nil, err
		}
		dg.enc = b
	}
	return dg.enc, nil
}

// deltaEntry returns the delta entry (wireEntry) of served, the resource
// name of type typeURL whose digest is dg, at version: the one made last
// time when the version is the same (a ClusterLoadAssignment's changes
// with its cluster's), so that every list that holds the resource holds
// the same entry.
func (dg *digest) deltaEntry(typeURL, name, version string, served types.Resource) (*discoveryv3.Resource, error) {
	if e := dg.entry; e != nil && e.GetVersion() == version && e.GetName() == name {
		return e, nil
	}
	enc, err := dg.encoding(served)
	if err != nil {
		return nil, err
	}
	dg.entry = wireEntry(typeURL, name, version, enc)
	return dg.entry, nil
}

// config computes the digest of a route configuration from that of its
// encoding without virtual hosts and those of its virtual hosts (kept
// from the last digests of the configuration of that name).
func (d *digester) config(rc *routev3.RouteConfiguration) (*digest, error) {
	shell := withoutVirtualHosts(rc)
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(shell)
	if err != nil {
		return &digest{}, err
	}
	if d.vhosts == nil {
		d.vhosts = map[string]*memo.List[*routev3.VirtualHost, *digest]{}
	}
	list := d.vhosts[rc.Name]
	if list == nil {
		list = &memo.List[*routev3.VirtualHost, *digest]{}
		d.vhosts[rc.Name] = list
	}
	vhosts := list.Update(rc.VirtualHosts, nil, func(j int) *digest {
		vh := rc.VirtualHosts[j]
		vb, e := proto.MarshalOptions{Deterministic: true}.Marshal(vh)
		if e != nil {
			err = e
		}
		dg := newDigest(sha256.Sum256(vb))
		dg.wire = vb
		if d.validate {
			dg.invalid = validate(vh, "virtual host "+vh.GetName()+": ")
		}
		return dg
	}, nil)
	h := sha256.New()
	fmt.Fprintf(h, "%d:", len(b))
	h.Write(b)
	var invalid error
	if d.validate {
		invalid = validate(shell, "")
	}
	for _, v := range vhosts {
		h.Write(v.sum[:])
		if invalid == nil {
			invalid = v.invalid
		}
	}
	var sum [32]byte
	h.Sum(sum[:0])
	dg := newDigest(sum)
	dg.invalid = invalid
	dg.parts = vhosts
	return dg, err
}

// wireForm returns the route configuration a snapshot serves for rc, whose
// digest is dg (from config): rc's fields but its virtual hosts, which are
// carried, already encoded, as unknown fields of field number 2
// (RouteConfiguration.virtual_hosts) after the others. Its encoding is a
// valid encoding of rc (a protobuf parser takes fields in any order and
// appends repeated ones), and costs a copy of the virtual hosts' encodings
// kept since their digests instead of encoding all of them again: at 3000
// virtual hosts go-control-plane's encoding of each new route
// configuration took about 5 ms, on the way to every proxy. The form is
// made once per digest; only the snapshot's copy of the configuration
// has it (Publish), nobody reads its fields.
func wireForm(rc *routev3.RouteConfiguration, dg *digest) *routev3.RouteConfiguration {
	if dg.served != nil {
		return dg.served
	}
	if len(dg.parts) != len(rc.GetVirtualHosts()) {
		return rc // not a digest of rc's (config makes one part per virtual host)
	}
	n := 0
	for _, p := range dg.parts {
		n += protowire.SizeTag(2) + protowire.SizeBytes(len(p.wire))
	}
	raw := make([]byte, 0, n)
	for _, p := range dg.parts {
		raw = protowire.AppendTag(raw, 2, protowire.BytesType)
		raw = protowire.AppendBytes(raw, p.wire)
	}
	shell := withoutVirtualHosts(rc)
	shell.ProtoReflect().SetUnknown(append(shell.ProtoReflect().GetUnknown(), raw...))
	dg.served = shell
	return shell
}

// servedRoutes returns routes with each route configuration in the form
// snapshots serve it (wireForm), given the digests ds of routes.
func servedRoutes(routes []types.Resource, ds []*digest) []types.Resource {
	out := make([]types.Resource, len(routes))
	for i, res := range routes {
		out[i] = res
		if rc, ok := res.(*routev3.RouteConfiguration); ok {
			out[i] = wireForm(rc, ds[i])
		}
	}
	return out
}

func newDigest(sum [32]byte) *digest {
	return &digest{sum: sum, version: hex.EncodeToString(sum[:])}
}

// validate runs m's protoc-gen-validate rules (the generated ValidateAll
// of Envoy's API, the rules Envoy checks on load); what names the part of
// the resource that fails them.
func validate(m proto.Message, what string) error {
	v, ok := m.(interface{ ValidateAll() error })
	if !ok {
		return nil
	}
	if err := v.ValidateAll(); err != nil {
		if what != "" {
			return fmt.Errorf("%s%w", what, err)
		}
		return err
	}
	return nil
}

// withoutVirtualHosts is a route configuration with rc's fields but its
// virtual hosts; it shares their values with rc (rc is not modified).
func withoutVirtualHosts(rc *routev3.RouteConfiguration) *routev3.RouteConfiguration {
	shell := &routev3.RouteConfiguration{}
	dst := shell.ProtoReflect()
	rc.ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Name() != "virtual_hosts" {
			dst.Set(fd, v)
		}
		return true
	})
	return shell
}

// version is the version of a snapshot whose resources have the digests
// ds: the first 16 hex digits of SHA-256 over the SHA-256 of each list's
// digests (in order), list by list. A list's sum, and what snapshot
// derives from it, is kept while its digests are the very same list.
func (d *digester) version(ds [5][]*digest) string {
	h := sha256.New()
	for i, l := range ds {
		k := &d.kept[i]
		if !k.ok || !memo.Same(l, k.digests) {
			*k = keptList{digests: l, ok: true}
			lh := sha256.New()
			for _, dg := range l {
				lh.Write(dg.sum[:])
			}
			lh.Sum(k.sum[:0])
		}
		h.Write(k.sum[:])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// consistent returns snap.Consistent() (go-control-plane's check that
// every route configuration a listener names and every
// ClusterLoadAssignment an EDS cluster names is in the snapshot, and
// nothing else of those types), skipped when what it reads has not
// changed since it last passed: listeners, clusters and
// ClusterLoadAssignments of the same digests (their list sums, which
// version computed for this publish: call it after version), and route
// configurations of the same names, in order (their contents do not
// matter to it). The digests, not the lists' identity, decide: the
// translation rebuilds an HTTP listener equal to the last one whenever a
// route of it changes. At 3000 clusters the check takes about 2 ms.
func (d *digester) consistent(r *xdstranslator.Resources, snap *cachev3.Snapshot) error {
	names := make([]string, len(r.Routes))
	for i, rc := range r.Routes {
		names[i] = cachev3.GetResourceName(rc)
	}
	sums := [3][32]byte{d.kept[0].sum, d.kept[2].sum, d.kept[3].sum}
	if d.checked && sums == d.checkedSums && slices.Equal(names, d.checkedRoutes) {
		return nil
	}
	d.checked = false
	if err := snap.Consistent(); err != nil {
		return err
	}
	d.checked, d.checkedSums, d.checkedRoutes = true, sums, names
	return nil
}

// invalid returns the first protoc-gen-validate failure among r's
// resources, naming the resource.
func invalid(r *xdstranslator.Resources, ds [5][]*digest) error {
	for i, l := range lists(r) {
		for j, res := range l {
			if err := ds[i][j].invalid; err != nil {
				return fmt.Errorf("%s %s: %w", typeName(string(res.ProtoReflect().Descriptor().FullName())), cachev3.GetResourceName(res), err)
			}
		}
	}
	return nil
}

// snapshot is the snapshot of r (whose digests are ds) at version: what
// cachev3.NewSnapshot makes of r's lists, with route configurations in
// their served form (servedRoutes), and its VersionMap (type URL -> name
// -> version, which delta xDS compares), with the delta entries of its
// resources by type index and name (wire: typeCaches.set). Call it after
// version with the same digests: a list that is the very same as in the
// last publish keeps its resources by name, its versions and its entries
// (the snapshots share those maps; nobody modifies them): at 3000
// clusters and ClusterLoadAssignments, indexing them again took about a
// third of a publish's time and most of its allocations. It fails when a
// resource cannot be encoded.
func (d *digester) snapshot(version string, r *xdstranslator.Resources, ds [5][]*digest) (*cachev3.Snapshot, *[5]map[string]*discoveryv3.Resource, error) {
	var wire [5]map[string]*discoveryv3.Resource
	snap := &cachev3.Snapshot{VersionMap: make(map[string]map[string]string, len(typeURLs))}
	// newClusters: the clusters' versions were made anew, and with them
	// those of the ClusterLoadAssignments (claVersion).
	newClusters := false
	for i, l := range lists(r) {
		k := &d.kept[i]
		if k.items == nil || i == 3 && newClusters {
			newClusters = newClusters || i == 2
			served := l
			if i == 1 {
				served = servedRoutes(l, ds[i])
			}
			items := make(map[string]types.ResourceWithTTL, len(l))
			versions := make(map[string]string, len(l))
			entries := make(map[string]*discoveryv3.Resource, len(l))
			for j, res := range served {
				name := cachev3.GetResourceName(res)
				items[name] = types.ResourceWithTTL{Resource: res}
				v := ds[i][j].version
				if i == 3 {
					v = ds[i][j].claVersion(d.kept[2].versions[name])
				}
				versions[name] = v
				entry, err := ds[i][j].deltaEntry(typeURLs[i], name, v, res)
				if err != nil {
					k.items = nil
					return nil, nil, fmt.Errorf("encoding %s %s: %w", typeName(typeURLs[i]), name, err)
				}
				entries[name] = entry
			}
			k.items, k.versions, k.wire = items, versions, entries
			k.typeSum = typeSum(k.versions)
		}
		snap.Resources[cachev3.GetResponseType(typeURLs[i])] = cachev3.Resources{Version: version, Items: k.items}
		snap.VersionMap[typeURLs[i]] = k.versions
		wire[i] = k.wire
	}
	return snap, &wire, nil
}

// typeSums are the typeSum of each VersionMap of the last snapshot, by
// type URL.
func (d *digester) typeSums() map[string]uint64 {
	out := make(map[string]uint64, len(typeURLs))
	for i, typ := range typeURLs {
		out[typ] = d.kept[i].typeSum
	}
	return out
}
