package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
	"github.com/xds-controller/xds-controller/pkg/infra"
)

// applyYAML applies a YAML document set like applyFile (deleted when the
// test ends).
func applyYAML(t testing.TB, doc string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "objects.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	applyFile(t, path)
}

// get reads obj (key ns/name) from the API server, or fails the test.
func get[T client.Object](t *testing.T, ns, name string, obj T) T {
	t.Helper()
	if err := k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, obj); err != nil {
		t.Fatalf("get %T %s/%s: %v", obj, ns, name, err)
	}
	return obj
}

// exists polls until obj exists (and check, when set, passes).
func waitFor(t *testing.T, ns, name string, obj client.Object, check func() error) {
	t.Helper()
	eventually(t, 20*time.Second, fmt.Sprintf("%T %s/%s", obj, ns, name), func() error {
		if err := k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, obj); err != nil {
			return err
		}
		if check != nil {
			return check()
		}
		return nil
	})
}

// waitGone polls until obj does not exist.
func waitGone(t *testing.T, ns, name string, obj client.Object) {
	t.Helper()
	eventually(t, 20*time.Second, fmt.Sprintf("%T %s/%s to be deleted", obj, ns, name), func() error {
		err := k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, obj)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err == nil {
			if obj.GetDeletionTimestamp() != nil {
				return nil
			}
			return errors.New("still there")
		}
		return err
	})
}

// cleanInfra deletes what the provisioner wrote for class (its shared
// fleet) and in the namespaces, left over by an earlier run of the test:
// envtest runs no garbage collector, so owned objects outlive their owner
// (the applier's Prune does the deleting).
func cleanInfra(t *testing.T, class string, namespaces ...string) {
	t.Helper()
	a := &infra.Applier{Client: k8sClient}
	scopes := []infra.PruneScope{{Namespace: controllerNamespace, Selector: labels.SelectorFromSet(labels.Set{infra.LabelGatewayClassName: class})}}
	for _, ns := range namespaces {
		scopes = append(scopes, infra.PruneScope{Namespace: ns})
	}
	for _, s := range scopes {
		if _, err := a.Prune(context.Background(), s, nil); err != nil {
			t.Fatal(err)
		}
	}
}

func ownedBy(obj client.Object, kind, name string, uid types.UID) error {
	for _, o := range obj.GetOwnerReferences() {
		if o.Kind == kind && o.Name == name && o.UID == uid && ptr.Deref(o.Controller, false) {
			return nil
		}
	}
	return fmt.Errorf("%s not owned by %s %s (%s): %+v", obj.GetName(), kind, name, uid, obj.GetOwnerReferences())
}

func gatewayAccepted(t *testing.T, ns, name string) *metav1.Condition {
	t.Helper()
	var gw gwapiv1.Gateway
	get(t, ns, name, &gw)
	return meta.FindStatusCondition(gw.Status.Conditions, "Accepted")
}

func updateParams(t *testing.T, ns, name string, mutate func(*v1alpha1.GatewayParametersSpec)) {
	t.Helper()
	var p v1alpha1.GatewayParameters
	get(t, ns, name, &p)
	mutate(&p.Spec)
	if err := update(context.Background(), &p); err != nil {
		t.Fatal(err)
	}
}

// TestSharedMode: a class in Shared mode gets one fleet in the controller's
// namespace, owned by the class; every Gateway gets its own selectorless
// Service and EndpointSlice in its namespace, two Gateways on port 80 bind
// different ports, and the EndpointSlices follow the fleet's pods. A route
// edit leaves the fleet alone; a parameters change does not.
func TestSharedMode(t *testing.T) {
	requireAPIServer(t)
	ctx := context.Background()
	const ns, class = "prov-shared", "shared"
	cleanInfra(t, class, ns)
	r := startReplica(t, replicaOptions{identity: "shared", provision: true})
	applyYAML(t, `
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: GatewayParameters
metadata: {name: shared-params, namespace: `+controllerNamespace+`}
spec: {mode: Shared, replicas: 2, service: {type: ClusterIP}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: shared}
spec:
  controllerName: xds-controller.dev/gateway-controller
  parametersRef: {group: gateway.xds-controller.dev, kind: GatewayParameters, name: shared-params, namespace: `+controllerNamespace+`}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: a, namespace: prov-shared}
spec:
  gatewayClassName: shared
  listeners: [{name: http, protocol: HTTP, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: b, namespace: prov-shared}
spec:
  gatewayClassName: shared
  listeners: [{name: http, protocol: HTTP, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: app, namespace: prov-shared}
spec:
  parentRefs: [{name: a}]
  hostnames: [a.example.com]
  rules: [{backendRefs: [{name: backend, port: 80}]}]
`)
	var gc gwapiv1.GatewayClass
	get(t, "", class, &gc)
	fleet := "envoy-" + class

	// The class's fleet, in the controller's namespace, owned by the class.
	var dep appsv1.Deployment
	waitFor(t, controllerNamespace, fleet, &dep, nil)
	for _, obj := range []client.Object{&dep, get(t, controllerNamespace, fleet, &corev1.ServiceAccount{}),
		get(t, controllerNamespace, fleet, &corev1.ConfigMap{})} {
		if err := ownedBy(obj, "GatewayClass", class, gc.UID); err != nil {
			t.Error(err)
		}
	}
	if got := ptr.Deref(dep.Spec.Replicas, 0); got != 2 {
		t.Errorf("replicas %d, want 2", got)
	}
	// The fleet subscribes with delta ADS (provisioner.Options.StateOfTheWorld
	// is false): a route change sends Envoy only what changed.
	boot := get(t, controllerNamespace, fleet, &corev1.ConfigMap{})
	if !strings.Contains(fmt.Sprint(boot.Data), "api_type: DELTA_GRPC") {
		t.Errorf("the fleet's bootstrap does not subscribe with delta ADS: %v", boot.Data)
	}

	// Per Gateway: a selectorless Service, targetPort the bind port, and an
	// EndpointSlice on the same port; the two Gateways' ports differ.
	bind := map[string]int32{}
	for _, name := range []string{"a", "b"} {
		var gw gwapiv1.Gateway
		get(t, ns, name, &gw)
		var svc corev1.Service
		waitFor(t, ns, name+"-"+class, &svc, nil)
		if err := ownedBy(&svc, "Gateway", name, gw.UID); err != nil {
			t.Error(err)
		}
		if len(svc.Spec.Selector) != 0 || svc.Spec.Type != corev1.ServiceTypeClusterIP || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 80 {
			t.Fatalf("Service %s: %+v", svc.Name, svc.Spec)
		}
		tp := int32(svc.Spec.Ports[0].TargetPort.IntValue())
		if tp < infra.SharedPortMin || tp > infra.SharedPortMax {
			t.Errorf("Service %s targetPort %d outside the shared range", svc.Name, tp)
		}
		bind[name] = tp
		var es discoveryv1.EndpointSlice
		waitFor(t, ns, name+"-"+class+"-ipv4", &es, nil)
		if err := ownedBy(&es, "Gateway", name, gw.UID); err != nil {
			t.Error(err)
		}
		if es.Labels[discoveryv1.LabelServiceName] != svc.Name || len(es.Ports) != 1 || ptr.Deref(es.Ports[0].Port, 0) != tp {
			t.Errorf("EndpointSlice %s: labels %v ports %+v, want service %s port %d", es.Name, es.Labels, es.Ports, svc.Name, tp)
		}
		if len(es.Endpoints) != 0 {
			t.Errorf("EndpointSlice %s has endpoints without pods: %+v", es.Name, es.Endpoints)
		}
		// status.addresses come from the Service.
		eventually(t, 10*time.Second, "Gateway address", func() error {
			get(t, ns, name, &gw)
			if len(gw.Status.Addresses) != 1 || gw.Status.Addresses[0].Value != svc.Spec.ClusterIP {
				return fmt.Errorf("addresses %+v, want %s", gw.Status.Addresses, svc.Spec.ClusterIP)
			}
			return nil
		})
	}
	if bind["a"] == bind["b"] {
		t.Errorf("Gateways a and b share bind port %d", bind["a"])
	}
	// The translation binds the same ports the Services target: both
	// Gateways are accepted in one scope without a port conflict, and
	// are Programmed once a proxy of the scope ACKs.
	fakeProxy(t, r, "fleet-pod-1", "gatewayclass/"+class)
	for _, name := range []string{"a", "b"} {
		eventually(t, 10*time.Second, "Gateway "+name+" Programmed", func() error {
			var gw gwapiv1.Gateway
			get(t, ns, name, &gw)
			if c := meta.FindStatusCondition(gw.Status.Conditions, "Programmed"); c == nil || c.Status != metav1.ConditionTrue {
				return fmt.Errorf("Programmed %+v", c)
			}
			return nil
		})
	}
	if _, ok := r.XDS().Scopes()["gatewayclass/"+class]; !ok {
		t.Errorf("scope gatewayclass/%s not published: %v", class, r.XDS().Scopes())
	}

	// A fleet pod becomes ready: the EndpointSlices list it (a pod event
	// re-runs the provisioner).
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: controllerNamespace, Name: fleet + "-pod", Labels: infra.FleetSelector(infra.SharedFleet(controllerNamespace, class))},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "envoy", Image: "envoy"}}, NodeName: "node-1"},
	}
	if err := k8sClient.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8sClient.Delete(ctx, pod, client.GracePeriodSeconds(0)) })
	pod.Status = corev1.PodStatus{
		Phase: corev1.PodRunning, PodIP: "10.1.2.3", PodIPs: []corev1.PodIP{{IP: "10.1.2.3"}},
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
	}
	if err := k8sClient.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} {
		var es discoveryv1.EndpointSlice
		waitFor(t, ns, name+"-"+class+"-ipv4", &es, func() error {
			if len(es.Endpoints) != 1 || es.Endpoints[0].Addresses[0] != "10.1.2.3" || !ptr.Deref(es.Endpoints[0].Conditions.Ready, false) {
				return fmt.Errorf("endpoints %+v", es.Endpoints)
			}
			return nil
		})
	}

	// A route edit changes the xDS configuration, not the fleet.
	get(t, controllerNamespace, fleet, &dep)
	depGen, hash := dep.Generation, dep.Spec.Template.Annotations[infra.AnnotationPodTemplateHash]
	cmRV := get(t, controllerNamespace, fleet, &corev1.ConfigMap{}).ResourceVersion
	version := r.XDS().Scopes()["gatewayclass/"+class]
	var hr gwapiv1.HTTPRoute
	get(t, ns, "app", &hr)
	hr.Spec.Hostnames = []gwapiv1.Hostname{"edited.example.com"}
	if err := update(ctx, &hr); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the edited route to be published", func() error {
		if v := r.XDS().Scopes()["gatewayclass/"+class]; v == version {
			return errors.New("same version")
		}
		return nil
	})
	// Give the provisioner its pass after that run (it is asynchronous).
	time.Sleep(500 * time.Millisecond)
	get(t, controllerNamespace, fleet, &dep)
	if dep.Generation != depGen || dep.Spec.Template.Annotations[infra.AnnotationPodTemplateHash] != hash {
		t.Errorf("a route edit changed the Deployment: generation %d -> %d, template hash %s -> %s",
			depGen, dep.Generation, hash, dep.Spec.Template.Annotations[infra.AnnotationPodTemplateHash])
	}
	if rv := get(t, controllerNamespace, fleet, &corev1.ConfigMap{}).ResourceVersion; rv != cmRV {
		t.Error("a route edit rewrote the bootstrap ConfigMap")
	}

	// The class's parameters change: replicas scale the Deployment without
	// a new pod template; resources give a new template.
	updateParams(t, controllerNamespace, "shared-params", func(s *v1alpha1.GatewayParametersSpec) { s.Replicas = ptr.To[int32](3) })
	waitFor(t, controllerNamespace, fleet, &dep, func() error {
		if got := ptr.Deref(dep.Spec.Replicas, 0); got != 3 {
			return fmt.Errorf("replicas %d", got)
		}
		return nil
	})
	if dep.Spec.Template.Annotations[infra.AnnotationPodTemplateHash] != hash {
		t.Error("scaling changed the pod template")
	}
	updateParams(t, controllerNamespace, "shared-params", func(s *v1alpha1.GatewayParametersSpec) {
		s.Envoy = &v1alpha1.EnvoySpec{Resources: &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}
	})
	waitFor(t, controllerNamespace, fleet, &dep, func() error {
		if dep.Spec.Template.Annotations[infra.AnnotationPodTemplateHash] == hash {
			return errors.New("same pod template hash")
		}
		if got := dep.Spec.Template.Spec.Containers[0].Resources.Requests.Cpu().String(); got != "100m" {
			return fmt.Errorf("cpu request %s", got)
		}
		return nil
	})
	if dep.Generation == depGen {
		t.Error("the Deployment's generation did not move")
	}

	// Gateway b leaves the class: its Service and EndpointSlice go (the
	// applier prunes them; envtest runs no garbage collector).
	var b gwapiv1.Gateway
	get(t, ns, "b", &b)
	applyYAML(t, `
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: not-ours}
spec: {controllerName: example.com/other}
`)
	b.Spec.GatewayClassName = "not-ours"
	if err := update(ctx, &b); err != nil {
		// gatewayClassName may be immutable in some versions; then skip.
		t.Logf("moving Gateway b to another class: %v", err)
		return
	}
	waitGone(t, ns, "b-"+class, &corev1.Service{})
	waitGone(t, ns, "b-"+class+"-ipv4", &discoveryv1.EndpointSlice{})
	get(t, ns, "a-"+class, &corev1.Service{})
}

// TestDedicatedMode: a Dedicated Gateway gets Deployment, Service,
// ServiceAccount and ConfigMap <gateway>-<class> in its namespace, owned by
// it, the Service selecting the fleet's pods on bind port listener+10000.
// Switching it to Shared prunes the dedicated fleet and creates the
// class's shared fleet and the Gateway's EndpointSlice.
func TestDedicatedMode(t *testing.T) {
	requireAPIServer(t)
	ctx := context.Background()
	const ns, class, name = "prov-dedicated", "dedicated", "d"
	cleanInfra(t, class, ns)
	startReplica(t, replicaOptions{identity: "dedicated", provision: true})
	applyYAML(t, `
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: GatewayParameters
metadata: {name: dedicated-params, namespace: `+controllerNamespace+`}
spec: {mode: Dedicated}
---
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: GatewayParameters
metadata: {name: make-shared, namespace: prov-dedicated}
spec: {mode: Shared}
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: dedicated}
spec:
  controllerName: xds-controller.dev/gateway-controller
  parametersRef: {group: gateway.xds-controller.dev, kind: GatewayParameters, name: dedicated-params, namespace: `+controllerNamespace+`}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: d, namespace: prov-dedicated}
spec:
  gatewayClassName: dedicated
  infrastructure:
    labels: {team: blue}
  listeners: [{name: http, protocol: HTTP, port: 80}]
`)
	var gw gwapiv1.Gateway
	get(t, ns, name, &gw)
	obj := name + "-" + class
	var dep appsv1.Deployment
	waitFor(t, ns, obj, &dep, nil)
	var svc corev1.Service
	waitFor(t, ns, obj, &svc, nil)
	for _, o := range []client.Object{&dep, &svc, get(t, ns, obj, &corev1.ServiceAccount{}), get(t, ns, obj, &corev1.ConfigMap{})} {
		if err := ownedBy(o, "Gateway", name, gw.UID); err != nil {
			t.Error(err)
		}
		if o.GetLabels()[infra.LabelGatewayName] != name || o.GetLabels()["team"] != "blue" {
			t.Errorf("%T %s labels %v", o, o.GetName(), o.GetLabels())
		}
	}
	if ptr.Deref(dep.Spec.Replicas, 0) != infra.DefaultDedicatedReplicas {
		t.Errorf("replicas %v", dep.Spec.Replicas)
	}
	if dep.Spec.Template.Spec.ServiceAccountName != obj || ptr.Deref(dep.Spec.Template.Spec.AutomountServiceAccountToken, true) {
		t.Errorf("pod ServiceAccount %q automount %v", dep.Spec.Template.Spec.ServiceAccountName, dep.Spec.Template.Spec.AutomountServiceAccountToken)
	}
	if svc.Spec.Selector[infra.LabelInstance] != obj || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort.IntValue() != 10080 {
		t.Errorf("Service selector %v ports %+v", svc.Spec.Selector, svc.Spec.Ports)
	}
	if c := gatewayAccepted(t, ns, name); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Accepted %+v", c)
	}

	// Dedicated -> Shared (the Gateway's own parameters): the dedicated
	// fleet is pruned, the Service stays (now selectorless) with an
	// EndpointSlice, and the class gets its shared fleet.
	get(t, ns, name, &gw)
	gw.Spec.Infrastructure.ParametersRef = &gwapiv1.LocalParametersReference{Group: "gateway.xds-controller.dev", Kind: "GatewayParameters", Name: "make-shared"}
	if err := update(ctx, &gw); err != nil {
		t.Fatal(err)
	}
	waitGone(t, ns, obj, &appsv1.Deployment{})
	waitGone(t, ns, obj, &corev1.ServiceAccount{})
	waitGone(t, ns, obj, &corev1.ConfigMap{})
	waitFor(t, ns, obj, &svc, func() error {
		if len(svc.Spec.Selector) != 0 {
			return fmt.Errorf("selector %v", svc.Spec.Selector)
		}
		return nil
	})
	waitFor(t, ns, obj+"-ipv4", &discoveryv1.EndpointSlice{}, nil)
	waitFor(t, controllerNamespace, "envoy-"+class, &appsv1.Deployment{}, nil)
}

// TestInvalidParameters: a class whose parametersRef names a missing
// object, and a Gateway whose parametersRef names another kind, get
// Accepted=False reason InvalidParameters and no infrastructure; creating
// the missing object accepts the class and provisions its Gateways.
func TestInvalidParameters(t *testing.T) {
	requireAPIServer(t)
	const ns = "prov-invalid"
	cleanInfra(t, "broken", ns)
	startReplica(t, replicaOptions{identity: "invalid", provision: true})
	applyYAML(t, `
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: broken}
spec:
  controllerName: xds-controller.dev/gateway-controller
  parametersRef: {group: gateway.xds-controller.dev, kind: GatewayParameters, name: later, namespace: `+controllerNamespace+`}
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: fine}
spec:
  controllerName: xds-controller.dev/gateway-controller
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: of-broken, namespace: prov-invalid}
spec:
  gatewayClassName: broken
  listeners: [{name: http, protocol: HTTP, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: wrong-kind, namespace: prov-invalid}
spec:
  gatewayClassName: fine
  infrastructure:
    parametersRef: {group: "", kind: ConfigMap, name: cm}
  listeners: [{name: http, protocol: HTTP, port: 80}]
`)
	eventually(t, 20*time.Second, "InvalidParameters conditions", func() error {
		var gc gwapiv1.GatewayClass
		get(t, "", "broken", &gc)
		c := meta.FindStatusCondition(gc.Status.Conditions, "Accepted")
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != string(gwapiv1.GatewayClassReasonInvalidParameters) {
			return fmt.Errorf("class broken Accepted %+v", c)
		}
		for _, name := range []string{"of-broken", "wrong-kind"} {
			c := gatewayAccepted(t, ns, name)
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != string(gwapiv1.GatewayReasonInvalidParameters) {
				return fmt.Errorf("Gateway %s Accepted %+v", name, c)
			}
		}
		return nil
	})
	for _, svc := range []string{"of-broken-broken", "wrong-kind-fine"} {
		if err := k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: svc}, &corev1.Service{}); !apierrors.IsNotFound(err) {
			t.Errorf("Service %s of a refused Gateway: %v", svc, err)
		}
	}

	applyYAML(t, `
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: GatewayParameters
metadata: {name: later, namespace: `+controllerNamespace+`}
spec: {service: {type: ClusterIP}}
`)
	eventually(t, 20*time.Second, "the class accepted", func() error {
		var gc gwapiv1.GatewayClass
		get(t, "", "broken", &gc)
		if c := meta.FindStatusCondition(gc.Status.Conditions, "Accepted"); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("class Accepted %+v", c)
		}
		if c := gatewayAccepted(t, ns, "of-broken"); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("Gateway Accepted %+v", c)
		}
		return nil
	})
	waitFor(t, ns, "of-broken-broken", &corev1.Service{}, nil)
	waitFor(t, controllerNamespace, "envoy-broken", &appsv1.Deployment{}, nil)
}

// TestFollowerWritesNoInfrastructure: with two replicas, only the leader
// provisions; after a hand-over the new leader does.
func TestFollowerWritesNoInfrastructure(t *testing.T) {
	requireAPIServer(t)
	const ns, class = "prov-follower", "follower"
	cleanInfra(t, class, ns)
	a := startReplica(t, replicaOptions{leaderElect: true, identity: "prov-a", provision: true})
	eventually(t, 15*time.Second, "prov-a to lead", func() error {
		if a.Leading() {
			return nil
		}
		return errors.New("not leading")
	})
	b := startReplica(t, replicaOptions{leaderElect: true, identity: "prov-b", provision: true})
	applyYAML(t, `
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: GatewayParameters
metadata: {name: follower-params, namespace: `+controllerNamespace+`}
spec: {replicas: 1}
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: follower}
spec:
  controllerName: xds-controller.dev/gateway-controller
  parametersRef: {group: gateway.xds-controller.dev, kind: GatewayParameters, name: follower-params, namespace: `+controllerNamespace+`}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: g, namespace: prov-follower}
spec:
  gatewayClassName: follower
  listeners: [{name: http, protocol: HTTP, port: 80}]
`)
	var dep appsv1.Deployment
	waitFor(t, controllerNamespace, "envoy-"+class, &dep, nil)
	waitFor(t, ns, "g-"+class+"-ipv4", &discoveryv1.EndpointSlice{}, nil)
	time.Sleep(500 * time.Millisecond) // the follower's runs after the leader's writes
	if b.Leading() {
		t.Fatal("both replicas lead")
	}
	if n := b.writes.infra.Load(); n != 0 {
		t.Errorf("the follower wrote infrastructure %d times", n)
	}
	if a.writes.infra.Load() == 0 {
		t.Error("the leader wrote no infrastructure")
	}

	a.stop()
	eventually(t, 15*time.Second, "prov-b to lead", func() error {
		if b.Leading() {
			return nil
		}
		return errors.New("not leading")
	})
	updateParams(t, controllerNamespace, "follower-params", func(s *v1alpha1.GatewayParametersSpec) { s.Replicas = ptr.To[int32](2) })
	waitFor(t, controllerNamespace, "envoy-"+class, &dep, func() error {
		if ptr.Deref(dep.Spec.Replicas, 0) != 2 {
			return fmt.Errorf("replicas %v", dep.Spec.Replicas)
		}
		return nil
	})
	if b.writes.infra.Load() == 0 {
		t.Error("the new leader wrote no infrastructure")
	}
}
