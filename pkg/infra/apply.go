package infra

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// PrunedKinds are the kinds the provisioner creates, and so the kinds
// Prune looks at (and deletes).
//
// No Secret: the fleets have none (their identities are SVIDs), and the
// controller may not write Secrets outside its own namespace (the chart's
// ClusterRole only reads them). The client certificate Secrets
// <fleet>-xds-client that releases before SVIDs wrote are owned by their
// Gateway or GatewayClass: the garbage collector removes them with it.
var PrunedKinds = []schema.GroupVersionKind{
	appsv1.SchemeGroupVersion.WithKind("Deployment"),
	corev1.SchemeGroupVersion.WithKind("Service"),
	corev1.SchemeGroupVersion.WithKind("ServiceAccount"),
	corev1.SchemeGroupVersion.WithKind("ConfigMap"),
	discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice"),
}

// Applier writes rendered objects with server-side apply (field manager
// FieldManager, ownership forced) and deletes the provisioner's objects
// that are no longer desired.
//
// Reads are metadata-only (PartialObjectMetadata): with a cached client,
// they start metadata informers for the kinds in PrunedKinds; restrict
// them to LabelManagedBy=xds-controller in the manager's cache options, or
// pass the manager's APIReader as Reader.
type Applier struct {
	// Client writes (and reads when Reader is nil).
	Client client.Client
	// Reader reads the live objects' metadata (default: Client).
	Reader client.Reader
	// FieldManager default: FieldManager.
	FieldManager string
	// BeforeWrite, when set, runs right before every write; an error stops
	// the Apply or Prune and is returned. The controller checks that it is
	// still the leader here.
	BeforeWrite func(ctx context.Context) error
	// Force applies every object even when the live copy's applied hash
	// matches (a periodic resync repairs objects edited by hand).
	Force bool
}

// ApplyResult counts what Apply did.
type ApplyResult struct {
	Applied, Unchanged int
}

// Apply server-side applies desired, in order, skipping every object whose
// live copy carries the same AnnotationAppliedHash. The objects must have
// apiVersion and kind set (the renderers set them); they are not modified.
func (a *Applier) Apply(ctx context.Context, desired []client.Object) (ApplyResult, error) {
	var res ApplyResult
	for _, obj := range desired {
		u, hash, err := applyObject(obj)
		if err != nil {
			return res, err
		}
		if !a.Force {
			live := &metav1.PartialObjectMetadata{}
			live.SetGroupVersionKind(u.GroupVersionKind())
			err := a.reader().Get(ctx, client.ObjectKey{Namespace: u.GetNamespace(), Name: u.GetName()}, live)
			switch {
			case err == nil && live.DeletionTimestamp == nil && live.Annotations[AnnotationAppliedHash] == hash:
				res.Unchanged++
				continue
			case err != nil && !apierrors.IsNotFound(err):
				return res, fmt.Errorf("infra: get %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
			}
		}
		if err := a.beforeWrite(ctx); err != nil {
			return res, err
		}
		if err := a.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
			client.FieldOwner(cmp.Or(a.FieldManager, FieldManager)), client.ForceOwnership); err != nil {
			return res, fmt.Errorf("infra: apply %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
		}
		res.Applied++
	}
	return res, nil
}

// PruneScope is the set of objects one Prune may delete: the provisioner's
// objects (LabelManagedBy=xds-controller always applies) of PrunedKinds in
// Namespace that match Selector.
type PruneScope struct {
	Namespace string
	Selector  labels.Selector
}

// GatewayPruneScope holds every per-Gateway object of gw: its Service and
// EndpointSlices (both modes) and its dedicated fleet.
func GatewayPruneScope(gw *gwapiv1.Gateway) PruneScope {
	return PruneScope{
		Namespace: gw.Namespace,
		Selector: labels.SelectorFromSet(labels.Set{
			LabelManagedBy:   ManagedByValue,
			LabelGatewayName: LabelValue(gw.Name),
		}),
	}
}

// ClassPruneScope holds the shared fleet of class in the controller's
// namespace (and no per-Gateway object: those carry LabelGatewayName).
func ClassPruneScope(controllerNamespace, class string) PruneScope {
	sel := labels.SelectorFromSet(labels.Set{
		LabelManagedBy:        ManagedByValue,
		LabelGatewayClassName: LabelValue(class),
	})
	req, err := labels.NewRequirement(LabelGatewayName, selection.DoesNotExist, nil)
	if err != nil {
		panic(err)
	}
	return PruneScope{Namespace: controllerNamespace, Selector: sel.Add(*req)}
}

// Prune deletes the objects of scope that are not in desired (compared by
// kind, namespace and name) and returns how many it deleted. Prune with an
// empty desired deletes the whole scope (a Gateway that left our classes,
// a class without shared Gateways).
func (a *Applier) Prune(ctx context.Context, scope PruneScope, desired []client.Object) (int, error) {
	type key struct {
		gk              schema.GroupKind
		namespace, name string
	}
	keep := map[key]bool{}
	for _, obj := range desired {
		gvk := obj.GetObjectKind().GroupVersionKind()
		keep[key{gvk.GroupKind(), obj.GetNamespace(), obj.GetName()}] = true
	}
	sel := scope.Selector
	if sel == nil {
		sel = labels.Everything()
	}
	managed, err := labels.NewRequirement(LabelManagedBy, selection.Equals, []string{ManagedByValue})
	if err != nil {
		return 0, err
	}
	sel = sel.Add(*managed)
	// Kubernetes' EndpointSlice controller copies a Service's labels onto
	// the slices it writes for it: a Dedicated-mode Gateway Service's slices
	// carry our managed-by and gateway-name labels, yet they are not ours.
	// Only the slices we write (shared mode) may be pruned.
	ourSlices, err := labels.NewRequirement(discoveryv1.LabelManagedBy, selection.Equals, []string{EndpointSliceManagedBy})
	if err != nil {
		return 0, err
	}
	deleted := 0
	for _, gvk := range PrunedKinds {
		kindSel := sel
		if gvk.GroupKind() == discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice").GroupKind() {
			kindSel = sel.Add(*ourSlices)
		}
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := a.reader().List(ctx, list, client.InNamespace(scope.Namespace), client.MatchingLabelsSelector{Selector: kindSel}); err != nil {
			return deleted, fmt.Errorf("infra: list %s: %w", gvk.Kind, err)
		}
		for i := range list.Items {
			item := &list.Items[i]
			if keep[key{gvk.GroupKind(), item.Namespace, item.Name}] || item.DeletionTimestamp != nil {
				continue
			}
			if err := a.beforeWrite(ctx); err != nil {
				return deleted, err
			}
			item.SetGroupVersionKind(gvk)
			err := a.Client.Delete(ctx, item, client.Preconditions{UID: &item.UID}, client.PropagationPolicy(metav1.DeletePropagationBackground))
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return deleted, fmt.Errorf("infra: delete %s %s/%s: %w", gvk.Kind, item.Namespace, item.Name, err)
			}
			if err == nil {
				deleted++
			}
		}
	}
	return deleted, nil
}

// KubernetesEndpointSliceManager is the endpointslice.kubernetes.io/managed-by
// value of the slices that Kubernetes' EndpointSlice controller writes for
// a Service with a selector; KubernetesEndpointsManager the
// endpoints.kubernetes.io/managed-by value of the Endpoints that its
// Endpoints controller writes for one.
const (
	KubernetesEndpointSliceManager = "endpointslice-controller.k8s.io"
	KubernetesEndpointsManager     = "endpoint-controller"
)

// PruneKubernetesEndpoints deletes what Kubernetes' controllers wrote for
// the Service namespace/service while it had a selector: the EndpointSlices
// of the EndpointSlice controller and the Endpoints of the Endpoints
// controller (the EndpointSlice mirroring controller then deletes the
// slices it mirrored from them). It returns how many objects it deleted.
// Call it for a selectorless Service: those controllers leave their
// objects behind when the selector goes (a Gateway moved from Dedicated to
// Shared mode), and they keep pointing at the dedicated fleet's deleted
// pods next to the slices we write.
func (a *Applier) PruneKubernetesEndpoints(ctx context.Context, namespace, service string) (int, error) {
	deleted := 0
	del := func(obj client.Object, uid types.UID) error {
		if err := a.beforeWrite(ctx); err != nil {
			return err
		}
		err := a.Client.Delete(ctx, obj, client.Preconditions{UID: &uid})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("infra: delete %s %s/%s: %w", obj.GetObjectKind().GroupVersionKind().Kind, namespace, obj.GetName(), err)
		}
		if err == nil {
			deleted++
		}
		return nil
	}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(discoveryv1.SchemeGroupVersion.WithKind("EndpointSliceList"))
	if err := a.reader().List(ctx, list, client.InNamespace(namespace), client.MatchingLabels{discoveryv1.LabelServiceName: service}); err != nil {
		return 0, fmt.Errorf("infra: list EndpointSlices of Service %s/%s: %w", namespace, service, err)
	}
	// Stale Endpoints show as mirrored slices (or come with the EndpointSlice
	// controller's): only then is the Endpoints object read, which keeps
	// the deprecated v1 Endpoints API (and its warning) out of every pass.
	staleEndpoints := false
	for i := range list.Items {
		item := &list.Items[i]
		switch item.Labels[discoveryv1.LabelManagedBy] {
		case KubernetesEndpointSliceManager:
			staleEndpoints = true
			if item.DeletionTimestamp != nil {
				continue
			}
			item.SetGroupVersionKind(discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice"))
			if err := del(item, item.UID); err != nil {
				return deleted, err
			}
		case KubernetesEndpointSliceMirroringManager:
			staleEndpoints = true
		}
	}
	if !staleEndpoints {
		return deleted, nil
	}
	ep := &metav1.PartialObjectMetadata{}
	ep.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Endpoints"))
	switch err := a.reader().Get(ctx, client.ObjectKey{Namespace: namespace, Name: service}, ep); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return deleted, fmt.Errorf("infra: get Endpoints %s/%s: %w", namespace, service, err)
	case ep.DeletionTimestamp == nil && ep.Labels[KubernetesEndpointsLabel] == KubernetesEndpointsManager:
		ep.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Endpoints"))
		if err := del(ep, ep.UID); err != nil {
			return deleted, err
		}
	}
	return deleted, nil
}

// KubernetesEndpointsLabel names the manager of an Endpoints object;
// KubernetesEndpointSliceMirroringManager is the managed-by value of the
// slices mirrored from Endpoints.
const (
	KubernetesEndpointsLabel                = "endpoints.kubernetes.io/managed-by"
	KubernetesEndpointSliceMirroringManager = "endpointslicemirroring-controller.k8s.io"
)

// Sync applies desired and then prunes the rest of scope.
func (a *Applier) Sync(ctx context.Context, scope PruneScope, desired []client.Object) error {
	if _, err := a.Apply(ctx, desired); err != nil {
		return err
	}
	_, err := a.Prune(ctx, scope, desired)
	return err
}

func (a *Applier) reader() client.Reader {
	if a.Reader != nil {
		return a.Reader
	}
	return a.Client
}

func (a *Applier) beforeWrite(ctx context.Context) error {
	if a.BeforeWrite == nil {
		return nil
	}
	return a.BeforeWrite(ctx)
}

// applyObject converts obj to the unstructured apply configuration that
// Apply sends, without the zero values a typed object always carries
// (creationTimestamp, status), with AnnotationAppliedHash set to the hash
// of the rest.
// AppliedHash is the AnnotationAppliedHash Apply gives obj: a digest of
// everything it applies. It fails like Apply on an object without
// apiVersion and kind.
func AppliedHash(obj client.Object) (string, error) {
	_, hash, err := applyObject(obj)
	return hash, err
}

func applyObject(obj client.Object) (*unstructured.Unstructured, string, error) {
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Kind == "" || gvk.Version == "" {
		return nil, "", fmt.Errorf("infra: %T %s/%s has no apiVersion/kind", obj, obj.GetNamespace(), obj.GetName())
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, "", err
	}
	delete(m, "status")
	dropCreationTimestamps(m)
	u := &unstructured.Unstructured{Object: m}
	ann := u.GetAnnotations()
	delete(ann, AnnotationAppliedHash)
	if len(ann) == 0 {
		ann = nil
	}
	u.SetAnnotations(ann)
	b, err := json.Marshal(m)
	if err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(b)
	hash := hex.EncodeToString(sum[:])[:16]
	if ann == nil {
		ann = map[string]string{}
	}
	ann[AnnotationAppliedHash] = hash
	u.SetAnnotations(ann)
	return u, hash, nil
}

// dropCreationTimestamps removes metadata.creationTimestamp: null, at the
// top and in embedded templates.
func dropCreationTimestamps(v any) {
	switch t := v.(type) {
	case map[string]any:
		if md, ok := t["metadata"].(map[string]any); ok {
			if ts, ok := md["creationTimestamp"]; ok && ts == nil {
				delete(md, "creationTimestamp")
			}
			if len(md) == 0 {
				delete(t, "metadata")
			}
		}
		for _, val := range t {
			dropCreationTimestamps(val)
		}
	case []any:
		for _, val := range t {
			dropCreationTimestamps(val)
		}
	}
}
