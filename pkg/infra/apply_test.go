package infra

import (
	"context"
	"errors"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
)

// countingClient builds a fake client that counts apply and delete calls.
func countingClient(t *testing.T, objs ...client.Object) (client.WithWatch, *int, *int) {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, gwapiv1.Install, v1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	applies, deletes := new(int), new(int)
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			*applies++
			return c.Apply(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			*deletes++
			return c.Delete(ctx, obj, opts...)
		},
	}).Build()
	return c, applies, deletes
}

func renderDedicated(t *testing.T, gw *gwapiv1.Gateway, replicas int32) []client.Object {
	t.Helper()
	objs, err := testRenderer().Dedicated(DedicatedInput{
		Gateway:     gw,
		Params:      Effective(&v1alpha1.GatewayParametersSpec{Mode: ptr.To(v1alpha1.ModeDedicated), Replicas: ptr.To(replicas)}, nil),
		TrustBundle: testBundle,
	})
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func TestApplierApplySkipsUnchanged(t *testing.T) {
	ctx := context.Background()
	c, applies, _ := countingClient(t)
	a := &Applier{Client: c}
	gw := gateway("apps", "web", 0, 80)
	objs := renderDedicated(t, gw, 1)

	res, err := a.Apply(ctx, objs)
	if err != nil {
		t.Fatal(err)
	}
	if res.Applied != 4 || *applies != 4 {
		t.Fatalf("first apply: %+v, %d calls", res, *applies)
	}
	dep := &appsv1.Deployment{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "apps", Name: "web-xds"}, dep); err != nil {
		t.Fatal(err)
	}
	if *dep.Spec.Replicas != 1 || dep.Annotations[AnnotationAppliedHash] == "" || dep.Spec.Template.Annotations[AnnotationPodTemplateHash] == "" {
		t.Errorf("live deployment: %s", toJSON(t, dep.ObjectMeta))
	}
	if dep.OwnerReferences[0].UID != gw.UID {
		t.Errorf("owner: %v", dep.OwnerReferences)
	}
	// The renderer's objects are not modified by Apply.
	if objs[2].GetAnnotations()[AnnotationAppliedHash] != "" {
		t.Error("Apply modified its input")
	}

	// Same objects again: no write.
	res, err = a.Apply(ctx, renderDedicated(t, gw, 1))
	if err != nil || res.Applied != 0 || res.Unchanged != 4 || *applies != 4 {
		t.Fatalf("second apply: %+v %v, %d calls", res, err, *applies)
	}
	// One field changes: one write.
	res, err = a.Apply(ctx, renderDedicated(t, gw, 3))
	if err != nil || res.Applied != 1 || *applies != 5 {
		t.Fatalf("third apply: %+v %v, %d calls", res, err, *applies)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "apps", Name: "web-xds"}, dep); err != nil || *dep.Spec.Replicas != 3 {
		t.Fatalf("replicas not applied: %v", err)
	}
	// Force writes everything.
	a.Force = true
	if res, _ := a.Apply(ctx, renderDedicated(t, gw, 3)); res.Applied != 4 {
		t.Errorf("forced: %+v", res)
	}
}

func TestApplierBeforeWrite(t *testing.T) {
	c, applies, _ := countingClient(t)
	lost := errors.New("not the leader")
	a := &Applier{Client: c, BeforeWrite: func(context.Context) error { return lost }}
	if _, err := a.Apply(context.Background(), renderDedicated(t, gateway("apps", "web", 0, 80), 1)); !errors.Is(err, lost) || *applies != 0 {
		t.Errorf("err %v, %d applies", err, *applies)
	}
}

func TestApplierPrune(t *testing.T) {
	ctx := context.Background()
	unmanaged := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "mine", Labels: map[string]string{LabelGatewayName: "web"}}}
	c, _, deletes := countingClient(t, unmanaged)
	a := &Applier{Client: c}
	web, api := gateway("apps", "web", 0, 80), gateway("apps", "api", 0, 80)

	// Dedicated fleets of two Gateways and the shared fleet of the class.
	for _, gw := range []*gwapiv1.Gateway{web, api} {
		if err := a.Sync(ctx, GatewayPruneScope(gw), renderDedicated(t, gw, 1)); err != nil {
			t.Fatal(err)
		}
	}
	fleet, err := testRenderer().SharedFleet(SharedFleetInput{Class: testClass(), Params: SharedFleetParams(nil), TrustBundle: testBundle})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Sync(ctx, ClassPruneScope("xds-system", "xds"), fleet); err != nil {
		t.Fatal(err)
	}
	if *deletes != 0 {
		t.Fatalf("%d deletes while syncing", *deletes)
	}

	// web switches to Shared mode: its fleet goes, its Service and
	// EndpointSlice stay (same Service name, now selectorless).
	bp := AssignBindPorts([]*gwapiv1.Gateway{web}, shared, nil)
	sharedObjs, err := testRenderer().SharedGateway(SharedGatewayInput{Gateway: web, Params: Effective(nil, nil), BindPort: bp.BindPort,
		Endpoints: []Endpoint{{IP: "10.1.0.1", Ready: true, Serving: true}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Sync(ctx, GatewayPruneScope(web), sharedObjs); err != nil {
		t.Fatal(err)
	}
	if *deletes != 3 {
		t.Errorf("%d deletes, want 3 (SA, ConfigMap, Deployment)", *deletes)
	}
	exists := func(obj client.Object, ns, name string) bool {
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj)
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		return err == nil
	}
	if exists(&appsv1.Deployment{}, "apps", "web-xds") || exists(&corev1.ServiceAccount{}, "apps", "web-xds") {
		t.Error("web's dedicated fleet is still there")
	}
	svc := &corev1.Service{}
	if !exists(svc, "apps", "web-xds") || !exists(&discoveryv1.EndpointSlice{}, "apps", "web-xds-ipv4") {
		t.Error("web's Service or EndpointSlice is gone")
	}
	// The fake client's apply is a real structured merge: fields we stop
	// sending are removed.
	if svc.Spec.Selector != nil {
		t.Errorf("the shared-mode Service still selects %v", svc.Spec.Selector)
	}
	if !exists(&appsv1.Deployment{}, "apps", "api-xds") || !exists(&appsv1.Deployment{}, "xds-system", "envoy-xds") {
		t.Error("pruning web touched api's or the shared fleet")
	}
	if !exists(&corev1.ConfigMap{}, "apps", "mine") {
		t.Error("an object without our managed-by label was pruned")
	}

	// Deleting api: its whole scope goes. Removing the class's fleet: the
	// shared fleet goes, the per-Gateway objects of the class stay.
	if n, err := a.Prune(ctx, GatewayPruneScope(api), nil); err != nil || n != 4 {
		t.Errorf("prune api: %d %v", n, err)
	}
	if n, err := a.Prune(ctx, ClassPruneScope("xds-system", "xds"), nil); err != nil || n != 3 {
		t.Errorf("prune class: %d %v", n, err)
	}
	if !exists(&corev1.Service{}, "apps", "web-xds") {
		t.Error("class pruning removed a Gateway's Service")
	}
}

// Pruning never deletes a Secret, even one with our labels (the client
// certificate Secrets of releases before SVIDs): the chart grants no Secret
// write outside the controller's namespace, where it only creates the CA
// Secret. Such Secrets go with their owner (garbage collection).
func TestApplierPruneWritesNoSecret(t *testing.T) {
	ctx := context.Background()
	web := gateway("apps", "web", 0, 80)
	legacy := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web-xds-xds-client", Labels: map[string]string{
		LabelManagedBy: ManagedByValue, LabelGatewayName: LabelValue(web.Name), LabelGatewayClassName: LabelValue(string(web.Spec.GatewayClassName)),
	}}}
	sharedLegacy := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "xds-system", Name: "envoy-xds-xds-client", Labels: map[string]string{
		LabelManagedBy: ManagedByValue, LabelGatewayClassName: "xds",
	}}}
	c, _, deletes := countingClient(t, legacy, sharedLegacy)
	forbidden := interceptor.NewClient(c, interceptor.Funcs{
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			if _, ok := obj.(*corev1.Secret); ok || obj.GetObjectKind().GroupVersionKind().Kind == "Secret" {
				return apierrors.NewForbidden(corev1.Resource("secrets"), obj.GetName(), errors.New("no Secret writes"))
			}
			return c.Delete(ctx, obj, opts...)
		},
	})
	a := &Applier{Client: forbidden}
	if err := a.Sync(ctx, GatewayPruneScope(web), renderDedicated(t, web, 1)); err != nil {
		t.Fatal(err)
	}
	if n, err := a.Prune(ctx, GatewayPruneScope(web), nil); err != nil || n != 4 {
		t.Errorf("prune web: %d %v", n, err)
	}
	if n, err := a.Prune(ctx, ClassPruneScope("xds-system", "xds"), nil); err != nil || n != 0 {
		t.Errorf("prune class: %d %v", n, err)
	}
	for _, s := range []*corev1.Secret{legacy, sharedLegacy} {
		if err := c.Get(ctx, client.ObjectKeyFromObject(s), &corev1.Secret{}); err != nil {
			t.Errorf("Secret %s/%s: %v", s.Namespace, s.Name, err)
		}
	}
	if *deletes != 4 {
		t.Errorf("%d deletes, want 4 (the fleet's SA, ConfigMap, Deployment, Service)", *deletes)
	}
}

// Kubernetes' EndpointSlice controller copies a Service's labels onto the
// slices it writes: the slices of a Dedicated Gateway's Service carry our
// managed-by and gateway-name labels. Pruning must leave them alone (the e2e
// test found every pass deleting them, which emptied the Service), while it
// still deletes the slices we wrote in Shared mode.
func TestApplierPruneKeepsKubernetesEndpointSlices(t *testing.T) {
	ctx := context.Background()
	web := gateway("apps", "web", 0, 80)
	kubeSlice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web-xds-abcde", Labels: map[string]string{
			LabelManagedBy:               ManagedByValue,
			LabelGatewayName:             "web",
			LabelGatewayClassName:        "xds",
			discoveryv1.LabelServiceName: "web-xds",
			discoveryv1.LabelManagedBy:   "endpointslice-controller.k8s.io",
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	c, _, deletes := countingClient(t, kubeSlice)
	a := &Applier{Client: c}

	// Shared first: our slice is written next to Kubernetes' one.
	bp := AssignBindPorts([]*gwapiv1.Gateway{web}, shared, nil)
	sharedObjs, err := testRenderer().SharedGateway(SharedGatewayInput{Gateway: web, Params: Effective(nil, nil), BindPort: bp.BindPort,
		Endpoints: []Endpoint{{IP: "10.1.0.1", Ready: true, Serving: true}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Sync(ctx, GatewayPruneScope(web), sharedObjs); err != nil {
		t.Fatal(err)
	}
	// Then Dedicated, twice: our slice goes, Kubernetes' stays.
	for range 2 {
		if err := a.Sync(ctx, GatewayPruneScope(web), renderDedicated(t, web, 1)); err != nil {
			t.Fatal(err)
		}
	}
	if *deletes != 1 {
		t.Errorf("%d deletes, want 1 (our web-xds-ipv4 slice)", *deletes)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "apps", Name: "web-xds-ipv4"}, &discoveryv1.EndpointSlice{}); !apierrors.IsNotFound(err) {
		t.Errorf("our shared-mode slice: %v, want NotFound", err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "apps", Name: kubeSlice.Name}, &discoveryv1.EndpointSlice{}); err != nil {
		t.Errorf("Kubernetes' slice of the dedicated Service was pruned: %v", err)
	}
	// Deleting the whole scope keeps it too.
	if _, err := a.Prune(ctx, GatewayPruneScope(web), nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "apps", Name: kubeSlice.Name}, &discoveryv1.EndpointSlice{}); err != nil {
		t.Errorf("Kubernetes' slice pruned with the scope: %v", err)
	}
}

// Kubernetes' Endpoints and EndpointSlice controllers leave their objects
// behind when a Service loses its selector (a Gateway moved from Dedicated
// to Shared); the EndpointSlice mirroring controller then mirrors the stale
// Endpoints. PruneKubernetesEndpoints deletes them, and only them (the e2e
// test found them still listing the deleted dedicated pod, failing
// requests).
func TestApplierPruneKubernetesEndpoints(t *testing.T) {
	ctx := context.Background()
	slice := func(name, service, manager string) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name, Labels: map[string]string{
				discoveryv1.LabelServiceName: service,
				discoveryv1.LabelManagedBy:   manager,
			}},
			AddressType: discoveryv1.AddressTypeIPv4,
		}
	}
	endpoints := func(name, manager string) *corev1.Endpoints {
		ep := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name}}
		if manager != "" {
			ep.Labels = map[string]string{KubernetesEndpointsLabel: manager}
		}
		return ep
	}
	stale := slice("web-xds-abcde", "web-xds", KubernetesEndpointSliceManager)
	staleEP := endpoints("web-xds", KubernetesEndpointsManager)
	ours := slice("web-xds-ipv4", "web-xds", EndpointSliceManagedBy)
	other := slice("api-xds-fghij", "api-xds", KubernetesEndpointSliceManager)
	otherEP := endpoints("api-xds", KubernetesEndpointsManager)
	handEP := endpoints("hand-xds", "")
	mirrored := slice("web-xds-mirror", "web-xds", KubernetesEndpointSliceMirroringManager)
	handMirrored := slice("hand-xds-mirror", "hand-xds", KubernetesEndpointSliceMirroringManager)
	// Endpoints without a slice of Kubernetes' are not even read.
	quietEP := endpoints("quiet-xds", KubernetesEndpointsManager)
	c, _, deletes := countingClient(t, stale, staleEP, ours, other, otherEP, handEP, mirrored, handMirrored, quietEP)
	a := &Applier{Client: c}
	n, err := a.PruneKubernetesEndpoints(ctx, "apps", "web-xds")
	if err != nil || n != 2 || *deletes != 2 {
		t.Fatalf("deleted %d (%d calls), %v; want 2", n, *deletes, err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "apps", Name: stale.Name}, &discoveryv1.EndpointSlice{}); !apierrors.IsNotFound(err) {
		t.Errorf("stale slice: %v", err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "apps", Name: staleEP.Name}, &corev1.Endpoints{}); !apierrors.IsNotFound(err) {
		t.Errorf("stale Endpoints: %v", err)
	}
	for _, keep := range []client.Object{ours, other, otherEP} {
		if err := c.Get(ctx, client.ObjectKey{Namespace: "apps", Name: keep.GetName()}, keep); err != nil {
			t.Errorf("%s: %v", keep.GetName(), err)
		}
	}
	if n, err := a.PruneKubernetesEndpoints(ctx, "apps", "quiet-xds"); err != nil || n != 0 {
		t.Errorf("Endpoints without Kubernetes' slices: deleted %d, %v", n, err)
	}
	// Endpoints written by someone else are left alone.
	if n, err := a.PruneKubernetesEndpoints(ctx, "apps", "hand-xds"); err != nil || n != 0 {
		t.Errorf("hand-written Endpoints: deleted %d, %v", n, err)
	}
	// Nothing left: nothing to do.
	if n, err := a.PruneKubernetesEndpoints(ctx, "apps", "web-xds"); err != nil || n != 0 {
		t.Errorf("second pass: deleted %d, %v", n, err)
	}
	// BeforeWrite (the lead check) stops it.
	c2, _, _ := countingClient(t, slice("web-xds-k", "web-xds", KubernetesEndpointSliceManager))
	lost := errors.New("not leading")
	a2 := &Applier{Client: c2, BeforeWrite: func(context.Context) error { return lost }}
	if _, err := a2.PruneKubernetesEndpoints(ctx, "apps", "web-xds"); !errors.Is(err, lost) {
		t.Errorf("err %v, want the BeforeWrite error", err)
	}
}
