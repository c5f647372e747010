package kubernetes

import (
	"context"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/resources"
)

// metadataOf returns an empty PartialObjectMetadata of a core v1 kind, for
// metadata-only watches and reads.
func metadataOf(kind string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: kind}}
}

func metadataListOf(kind string) *metav1.PartialObjectMetadataList {
	return &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: kind + "List"}}
}

// snapshot lists the cache into a sorted resource snapshot. The objects are
// the cache's own (no deep copy): nothing downstream may modify them.
// Referenced Secrets are read through s.secrets.
func (p *pipeline) snapshot(ctx context.Context) (*resources.Resources, error) {
	r := p.cache
	noCopy := client.UnsafeDisableDeepCopy
	res := &resources.Resources{}

	var gcs gwapiv1.GatewayClassList
	if err := r.List(ctx, &gcs, noCopy); err != nil {
		return nil, err
	}
	for i := range gcs.Items {
		res.GatewayClasses = append(res.GatewayClasses, &gcs.Items[i])
	}
	var gws gwapiv1.GatewayList
	if err := r.List(ctx, &gws, noCopy); err != nil {
		return nil, err
	}
	for i := range gws.Items {
		res.Gateways = append(res.Gateways, &gws.Items[i])
	}
	var hrs gwapiv1.HTTPRouteList
	if err := r.List(ctx, &hrs, noCopy); err != nil {
		return nil, err
	}
	for i := range hrs.Items {
		res.HTTPRoutes = append(res.HTTPRoutes, &hrs.Items[i])
	}
	var grs gwapiv1.GRPCRouteList
	if err := r.List(ctx, &grs, noCopy); err != nil {
		return nil, err
	}
	for i := range grs.Items {
		res.GRPCRoutes = append(res.GRPCRoutes, &grs.Items[i])
	}
	var tlss gwapiv1.TLSRouteList
	if err := r.List(ctx, &tlss, noCopy); err != nil {
		return nil, err
	}
	for i := range tlss.Items {
		res.TLSRoutes = append(res.TLSRoutes, &tlss.Items[i])
	}
	var tcps gwapiv1.TCPRouteList
	if err := r.List(ctx, &tcps, noCopy); err != nil {
		return nil, err
	}
	for i := range tcps.Items {
		res.TCPRoutes = append(res.TCPRoutes, &tcps.Items[i])
	}
	var udps gwapiv1.UDPRouteList
	if err := r.List(ctx, &udps, noCopy); err != nil {
		return nil, err
	}
	for i := range udps.Items {
		res.UDPRoutes = append(res.UDPRoutes, &udps.Items[i])
	}
	var rgs gwapiv1.ReferenceGrantList
	if err := r.List(ctx, &rgs, noCopy); err != nil {
		return nil, err
	}
	for i := range rgs.Items {
		res.ReferenceGrants = append(res.ReferenceGrants, &rgs.Items[i])
	}
	var svcs corev1.ServiceList
	if err := r.List(ctx, &svcs, noCopy); err != nil {
		return nil, err
	}
	for i := range svcs.Items {
		res.Services = append(res.Services, &svcs.Items[i])
	}
	var eps discoveryv1.EndpointSliceList
	if err := r.List(ctx, &eps, noCopy); err != nil {
		return nil, err
	}
	for i := range eps.Items {
		res.EndpointSlices = append(res.EndpointSlices, &eps.Items[i])
	}
	nsList := metadataListOf("Namespace")
	if err := r.List(ctx, nsList, noCopy); err != nil {
		return nil, err
	}
	for i := range nsList.Items {
		res.Namespaces = append(res.Namespaces, &corev1.Namespace{ObjectMeta: nsList.Items[i].ObjectMeta})
	}

	secretRefs := referencedSecrets(res, p.cfg.ControllerName)
	p.setReferences(secretRefs, nil)
	secrets, err := p.secrets.fetch(ctx, secretRefs)
	if err != nil {
		return nil, err
	}
	res.Secrets = secrets
	res.Sort()
	return res, nil
}

// referencedSecrets are the Secrets that the TLS listeners of Gateways of
// our classes reference (core Secrets only; whether a ReferenceGrant allows
// a cross-namespace one is the translator's decision), sorted.
func referencedSecrets(res *resources.Resources, controller gwapiv1.GatewayController) []types.NamespacedName {
	ours := map[string]bool{}
	for _, gc := range res.GatewayClasses {
		if gc.Spec.ControllerName == controller {
			ours[gc.Name] = true
		}
	}
	seen := map[types.NamespacedName]bool{}
	var out []types.NamespacedName
	for _, gw := range res.Gateways {
		if !ours[string(gw.Spec.GatewayClassName)] {
			continue
		}
		for _, l := range gw.Spec.Listeners {
			if l.TLS == nil {
				continue
			}
			for _, ref := range l.TLS.CertificateRefs {
				if (ref.Group != nil && *ref.Group != "") || (ref.Kind != nil && *ref.Kind != "Secret") {
					continue
				}
				k := types.NamespacedName{Namespace: gw.Namespace, Name: string(ref.Name)}
				if ref.Namespace != nil {
					k.Namespace = string(*ref.Namespace)
				}
				if !seen[k] {
					seen[k] = true
					out = append(out, k)
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b types.NamespacedName) int {
		if a.Namespace != b.Namespace {
			return strings.Compare(a.Namespace, b.Namespace)
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// secretCache holds the referenced Secrets, read from the API server (the
// informer cache holds only their metadata). An entry is read again only
// when the metadata cache shows a newer resourceVersion; entries that are
// no longer referenced are dropped, so memory follows the references, not
// the cluster's Secrets.
type secretCache struct {
	meta   client.Reader // the informer cache (metadata-only Secrets)
	direct client.Reader // the API server

	mu      sync.Mutex
	entries map[types.NamespacedName]*corev1.Secret

	// Gets counts the uncached Secret reads (for tests and metrics).
	gets int64
}

func newSecretCache(meta, direct client.Reader) *secretCache {
	return &secretCache{meta: meta, direct: direct, entries: map[types.NamespacedName]*corev1.Secret{}}
}

// fetch returns the referenced Secrets that exist. A Secret missing from
// the metadata cache or the API server is left out (the translator reports
// it); any other error fails the fetch, so that a transient error never
// removes a certificate that is being served.
func (s *secretCache) fetch(ctx context.Context, refs []types.NamespacedName) ([]*corev1.Secret, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := make(map[types.NamespacedName]*corev1.Secret, len(refs))
	out := make([]*corev1.Secret, 0, len(refs))
	for _, ref := range refs {
		m := metadataOf("Secret")
		if err := s.meta.Get(ctx, ref, m); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, err
		}
		if old := s.entries[ref]; old != nil && !newer(m.ResourceVersion, old.ResourceVersion) {
			next[ref] = old
			out = append(out, old)
			continue
		}
		var sec corev1.Secret
		s.gets++
		if err := s.direct.Get(ctx, ref, &sec); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, err
		}
		sec.ManagedFields = nil
		next[ref] = &sec
		out = append(out, &sec)
	}
	s.entries = next
	return out, nil
}

func (s *secretCache) stats() (entries int, gets int64) {
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
