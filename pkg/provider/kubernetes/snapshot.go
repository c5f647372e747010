package kubernetes

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwapixv1a1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/ingress"
	"github.com/xds-controller/xds-controller/pkg/resources"
	"github.com/xds-controller/xds-controller/pkg/status"
)

// metadataOf returns an empty PartialObjectMetadata of a core v1 kind, for
// metadata-only watches and reads.
func metadataOf(kind string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: kind}}
}

func metadataListOf(kind string) *metav1.PartialObjectMetadataList {
	return &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: kind + "List"}}
}

// liveStatus is the newest status of the objects whose stale entries of
// ours the pipeline removes: the object index may hand out an older copy
// of an object whose status alone changed.
type liveStatus struct {
	routes   []status.RouteObject
	policies []status.PolicyObject
}

// snapshot is the object index's sorted resource snapshot (objectIndex:
// the informers' objects, read-only; an object unchanged since the last
// snapshot, or changed in its status only, is the very object of that
// snapshot), with the referenced Secrets (read through p.secrets) and
// ConfigMaps.
func (p *pipeline) snapshot(ctx context.Context) (*resources.Resources, error) {
	res := p.objects.snapshot()
	// A reference into a namespace the controller does not watch is
	// missing: its objects are neither cached nor readable.
	secretRefs := watchedOnly(p.cfg, ReferencedSecrets(res, p.cfg.ControllerName))
	configMapRefs := watchedOnly(p.cfg, ReferencedConfigMaps(res))
	p.setReferences(secretRefs, configMapRefs)
	secrets, err := p.secrets.fetch(ctx, secretRefs)
	if err != nil {
		return nil, err
	}
	res.Secrets = secrets
	configMaps, err := p.configMaps.fetch(ctx, configMapRefs)
	if err != nil {
		return nil, err
	}
	res.ConfigMaps = configMaps
	byKey := func(a, b metav1.Object) int {
		return compareNN(types.NamespacedName{Namespace: a.GetNamespace(), Name: a.GetName()}, types.NamespacedName{Namespace: b.GetNamespace(), Name: b.GetName()})
	}
	slices.SortFunc(res.Secrets, func(a, b *corev1.Secret) int { return byKey(a, b) })
	slices.SortFunc(res.ConfigMaps, func(a, b *corev1.ConfigMap) int { return byKey(a, b) })
	return res, nil
}

// watchedOnly are the refs in the namespaces cfg watches.
func watchedOnly(cfg *Config, refs []types.NamespacedName) []types.NamespacedName {
	return slices.DeleteFunc(refs, func(r types.NamespacedName) bool { return !cfg.Watches(r.Namespace) })
}

// ListResources lists, from r, every kind of the snapshot's registry
// (resources.Kinds) except Secrets and ConfigMaps (which only their
// references bring in: ReferencedSecrets, ReferencedConfigMaps):
// Namespaces as metadata, the other kinds whole; a kind of ours whose CRD
// is not installed has no objects (optionalKind). opts apply to every
// List. The result is not sorted. `xds-controller config-dump --diff`
// lists the API server with it; the pipeline's object index (index.go),
// fed by the informers of the same kinds (pipeline watch), holds what it
// lists.
func ListResources(ctx context.Context, r client.Reader, opts ...client.ListOption) (*resources.Resources, error) {
	scheme, err := Scheme()
	if err != nil {
		return nil, err
	}
	res := &resources.Resources{}
	for _, k := range resources.Kinds() {
		var objs []resources.Object
		switch k {
		case resources.SecretKind, resources.ConfigMapKind:
			continue
		case resources.NamespaceKind:
			list := metadataListOf(k.Name())
			if err := r.List(ctx, list, opts...); err != nil {
				return nil, err
			}
			for i := range list.Items {
				objs = append(objs, &corev1.Namespace{ObjectMeta: list.Items[i].ObjectMeta})
			}
		default:
			list, err := newList(scheme, k)
			if err != nil {
				return nil, err
			}
			if err := r.List(ctx, list, opts...); err != nil {
				if optionalKind(k) && meta.IsNoMatchError(err) {
					continue
				}
				return nil, err
			}
			items, err := meta.ExtractList(list)
			if err != nil {
				return nil, err
			}
			for _, o := range items {
				objs = append(objs, o.(resources.Object))
			}
		}
		if len(objs) > 0 {
			k.SetObjects(res, objs)
		}
	}
	return res, nil
}

// newList returns an empty list of k's objects, of the type scheme
// registers for k's kind and group ("<Kind>List").
func newList(scheme *runtime.Scheme, k resources.Kind) (client.ObjectList, error) {
	gvks, _, err := scheme.ObjectKinds(k.New())
	if err != nil {
		return nil, err
	}
	for _, gvk := range gvks {
		if gvk.Group != k.Group() || gvk.Kind != k.Name() {
			continue
		}
		gvk.Kind += "List"
		o, err := scheme.New(gvk)
		if err != nil {
			return nil, err
		}
		if list, ok := o.(client.ObjectList); ok {
			return list, nil
		}
	}
	return nil, fmt.Errorf("no list type of %s in the scheme", k.Name())
}

// optionalKind says whether the API of k may be missing: our own CRDs
// (group of api/v1alpha1), which a `helm upgrade` does not install when
// they are new; the Gateway API's experimental-channel kinds
// (gateway.networking.x-k8s.io), which a cluster with the standard
// channel's CRDs does not have; and ClusterTrustBundles, which the API
// server serves as certificates.k8s.io/v1 from Kubernetes 1.37 (before,
// v1beta1 behind a feature gate, which we do not read). Such a kind is then
// not watched and has no objects; the translation reports what needed them
// (an IngressClass whose parameters are missing, a caCertificateRef to a
// ClusterTrustBundle: not found).
func optionalKind(k resources.Kind) bool {
	return k.Group() == v1alpha1.GroupVersion.Group || k.Group() == gwapixv1a1.GroupName || k == resources.ClusterTrustBundleKind
}

// ReferencedSecrets are the Secrets that Gateways of our classes reference
// in their TLS listeners' certificateRefs and their spec.tls.backend
// clientCertificateRef, that Ingresses of our IngressClasses name in
// spec.tls, and that the TLS listeners of ListenerSets whose
// parentRef names one of those Gateways reference (core Secrets only;
// whether a ReferenceGrant allows a cross-namespace one, and whether the
// Gateway admits the ListenerSet, are the translator's decisions), sorted.
func ReferencedSecrets(res *resources.Resources, controller gwapiv1.GatewayController) []types.NamespacedName {
	ours := map[string]bool{}
	for _, gc := range res.GatewayClasses {
		if gc.Spec.ControllerName == controller {
			ours[gc.Name] = true
		}
	}
	seen := map[types.NamespacedName]bool{}
	var out []types.NamespacedName
	add := func(ns string, ref gwapiv1.SecretObjectReference) {
		if (ref.Group != nil && *ref.Group != "") || (ref.Kind != nil && *ref.Kind != "Secret") {
			return
		}
		k := types.NamespacedName{Namespace: ns, Name: string(ref.Name)}
		if ref.Namespace != nil {
			k.Namespace = string(*ref.Namespace)
		}
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	addListener := func(ns string, tls *gwapiv1.ListenerTLSConfig) {
		if tls == nil {
			return
		}
		for _, ref := range tls.CertificateRefs {
			add(ns, ref)
		}
	}
	ourGateways := map[types.NamespacedName]bool{}
	for _, gw := range res.Gateways {
		if !ours[string(gw.Spec.GatewayClassName)] {
			continue
		}
		ourGateways[types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}] = true
		for _, l := range gw.Spec.Listeners {
			addListener(gw.Namespace, l.TLS)
		}
		if t := gw.Spec.TLS; t != nil && t.Backend != nil && t.Backend.ClientCertificateRef != nil {
			add(gw.Namespace, *t.Backend.ClientCertificateRef)
		}
	}
	for _, ref := range ingress.ReferencedSecrets(res) {
		add(ref.Namespace, gwapiv1.SecretObjectReference{Name: gwapiv1.ObjectName(ref.Name)})
	}
	for _, pk := range gatewayapi.PolicyKinds() {
		for _, p := range pk.Objects(res) {
			secrets, _ := pk.References(p)
			for _, ref := range secrets {
				add(ref.Namespace, gwapiv1.SecretObjectReference{Name: gwapiv1.ObjectName(ref.Name)})
			}
		}
	}
	for _, ls := range res.ListenerSets {
		parent := types.NamespacedName{Namespace: ls.Namespace, Name: string(ls.Spec.ParentRef.Name)}
		if ls.Spec.ParentRef.Namespace != nil {
			parent.Namespace = string(*ls.Spec.ParentRef.Namespace)
		}
		if !ourGateways[parent] {
			continue
		}
		for _, l := range ls.Spec.Listeners {
			addListener(ls.Namespace, l.TLS)
		}
	}
	sortNames(out)
	return out
}

// ReferencedConfigMaps are the ConfigMaps that Gateways' spec.tls.frontend
// name as CA certificates, and those policies read
// (gatewayapi.PolicyKind References: a BackendTLSPolicy's core ConfigMaps
// in its namespace), sorted.
func ReferencedConfigMaps(res *resources.Resources) []types.NamespacedName {
	seen := map[types.NamespacedName]bool{}
	var out []types.NamespacedName
	for _, gw := range res.Gateways {
		if gw.Spec.TLS == nil || gw.Spec.TLS.Frontend == nil {
			continue
		}
		vs := []*gwapiv1.FrontendTLSValidation{gw.Spec.TLS.Frontend.Default.Validation}
		for _, pp := range gw.Spec.TLS.Frontend.PerPort {
			vs = append(vs, pp.TLS.Validation)
		}
		for _, v := range vs {
			if v == nil {
				continue
			}
			for _, ref := range v.CACertificateRefs {
				k := types.NamespacedName{Namespace: gw.Namespace, Name: string(ref.Name)}
				if ref.Namespace != nil {
					k.Namespace = string(*ref.Namespace)
				}
				if ref.Group == "" && ref.Kind == "ConfigMap" && !seen[k] {
					seen[k] = true
					out = append(out, k)
				}
			}
		}
	}
	for _, pk := range gatewayapi.PolicyKinds() {
		for _, p := range pk.Objects(res) {
			_, cms := pk.References(p)
			for _, k := range cms {
				if !seen[k] {
					seen[k] = true
					out = append(out, k)
				}
			}
		}
	}
	sortNames(out)
	return out
}

// refCache holds the referenced objects of one kind (Secrets, ConfigMaps),
// read from the API server (the informer cache holds only their metadata).
// An entry is read again only when the metadata cache shows a newer
// resourceVersion; entries that are no longer referenced are dropped, so
// memory follows the references, not the cluster's objects.
type refCache[T client.Object] struct {
	kind   string          // "Secret" or "ConfigMap"
	newObj func() T        // an empty object of the kind
	meta   []client.Reader // the informer caches (metadata-only objects), in order
	direct client.Reader   // the API server

	mu      sync.Mutex
	entries map[types.NamespacedName]T

	// gets counts the uncached reads (for tests and metrics).
	gets int64
}

// secretCache holds the referenced Secrets.
type secretCache = refCache[*corev1.Secret]

func newSecretCache(direct client.Reader, meta ...client.Reader) *secretCache {
	return &secretCache{kind: "Secret", newObj: func() *corev1.Secret { return &corev1.Secret{} }, meta: meta, direct: direct, entries: map[types.NamespacedName]*corev1.Secret{}}
}

func newConfigMapCache(direct client.Reader, meta ...client.Reader) *refCache[*corev1.ConfigMap] {
	return &refCache[*corev1.ConfigMap]{kind: "ConfigMap", newObj: func() *corev1.ConfigMap { return &corev1.ConfigMap{} }, meta: meta, direct: direct, entries: map[types.NamespacedName]*corev1.ConfigMap{}}
}

// fetch returns the referenced objects that exist. One missing from the
// metadata cache or the API server is left out (the translator reports
// it); any other error fails the fetch, so that a transient error never
// removes a certificate that is being served.
func (s *refCache[T]) fetch(ctx context.Context, refs []types.NamespacedName) ([]T, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := make(map[types.NamespacedName]T, len(refs))
	out := make([]T, 0, len(refs))
	for _, ref := range refs {
		m, err := s.metadata(ctx, ref)
		if err != nil {
			return nil, err
		}
		if m == nil {
			continue
		}
		if old, ok := s.entries[ref]; ok && !newer(m.ResourceVersion, old.GetResourceVersion()) {
			next[ref] = old
			out = append(out, old)
			continue
		}
		obj := s.newObj()
		s.gets++
		if err := s.direct.Get(ctx, ref, obj); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, err
		}
		obj.SetManagedFields(nil)
		next[ref] = obj
		out = append(out, obj)
	}
	s.entries = next
	return out, nil
}

// metadata is ref's metadata from the first cache that holds it, nil
// when none does.
func (s *refCache[T]) metadata(ctx context.Context, ref types.NamespacedName) (*metav1.PartialObjectMetadata, error) {
	for _, r := range s.meta {
		m := metadataOf(s.kind)
		err := r.Get(ctx, ref, m)
		if err == nil {
			return m, nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, err
		}
	}
	return nil, nil
}

func (s *refCache[T]) stats() (entries int, gets int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries), s.gets
}

// newer reports whether resourceVersion a is newer than b. Versions that
// cannot be compared count as newer when they differ.
func newer(a, b string) bool {
	c, err := resourceversion.CompareResourceVersion(a, b)
	if err != nil {
		return a != b
	}
	return c > 0
}

// sortNames sorts names by namespace, then name.
func sortNames(names []types.NamespacedName) {
	slices.SortFunc(names, func(a, b types.NamespacedName) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
}
