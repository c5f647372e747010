package integration

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/status"
)

var (
	routeKey   = types.NamespacedName{Namespace: "default", Name: "app"}
	gatewayKey = types.NamespacedName{Namespace: "default", Name: "web"}
)

func getRoute(t *testing.T) *gwapiv1.HTTPRoute {
	t.Helper()
	var hr gwapiv1.HTTPRoute
	if err := k8sClient.Get(context.Background(), routeKey, &hr); err != nil {
		t.Fatal(err)
	}
	return &hr
}

func getGateway(t *testing.T) *gwapiv1.Gateway {
	t.Helper()
	var gw gwapiv1.Gateway
	if err := k8sClient.Get(context.Background(), gatewayKey, &gw); err != nil {
		t.Fatal(err)
	}
	return &gw
}

// ourAccepted is our Accepted condition of the route's first parent of
// ours, or an error.
func ourAccepted(hr *gwapiv1.HTTPRoute) (*metav1.Condition, error) {
	for _, p := range hr.Status.Parents {
		if p.ControllerName == gatewayapi.ControllerName {
			if c := meta.FindStatusCondition(p.Conditions, "Accepted"); c != nil {
				return c, nil
			}
		}
	}
	return nil, errors.New("no Accepted condition of ours")
}

// waitRuns waits until the replica completed more pipeline runs than n.
func waitRuns(t *testing.T, r *replica, n int64) {
	t.Helper()
	eventually(t, 10*time.Second, "a pipeline run", func() error {
		if r.Stats().Runs > n {
			return nil
		}
		return errors.New("no run yet")
	})
}

// TestStatusLifecycle: observedGeneration follows the spec, nothing is
// rewritten when nothing changed, lastTransitionTime stays put, other
// controllers' parents entries survive, a detached route loses our entry,
// and the Gateway's addresses come from its Service.
func TestStatusLifecycle(t *testing.T) {
	requireAPIServer(t)
	ctx := context.Background()
	r := startReplica(t, replicaOptions{identity: "lifecycle"})
	applyFile(t, filepath.Join(testdata, "01-basic-http.in.yaml"))

	eventually(t, 20*time.Second, "route Accepted", func() error {
		_, err := ourAccepted(getRoute(t))
		return err
	})
	gwAccepted := meta.FindStatusCondition(getGateway(t).Status.Conditions, "Accepted").LastTransitionTime

	// Nothing changed: more pipeline runs (triggered by an unrelated
	// Service) write nothing, and no resourceVersion moves.
	time.Sleep(300 * time.Millisecond) // let the first writes' events settle
	writes := r.writes.n.Load()
	routeRV, gwRV := getRoute(t).ResourceVersion, getGateway(t).ResourceVersion
	for i := range 3 {
		runs := r.Stats().Runs
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("unrelated-%d", i)},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}},
		}
		if err := k8sClient.Create(ctx, svc); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = k8sClient.Delete(ctx, svc) })
		waitRuns(t, r, runs)
	}
	time.Sleep(200 * time.Millisecond)
	if got := r.writes.n.Load(); got != writes {
		t.Errorf("status writes went from %d to %d with nothing changed", writes, got)
	}
	if getRoute(t).ResourceVersion != routeRV || getGateway(t).ResourceVersion != gwRV {
		t.Errorf("a resourceVersion moved with nothing changed")
	}

	// Another controller's parents entry is kept.
	hr := getRoute(t)
	foreign := gwapiv1.RouteParentStatus{
		ParentRef:      gwapiv1.ParentReference{Name: "their-gateway"},
		ControllerName: "example.com/other-controller",
		Conditions: []metav1.Condition{{Type: "Accepted", Status: "True", Reason: "Accepted", Message: "theirs",
			ObservedGeneration: hr.Generation, LastTransitionTime: metav1.Now()}},
	}
	hr.Status.Parents = append([]gwapiv1.RouteParentStatus{foreign}, hr.Status.Parents...)
	if err := k8sClient.Status().Update(ctx, hr); err != nil {
		t.Fatal(err)
	}

	// A spec change: observedGeneration follows, the foreign entry stays,
	// the Gateway's unchanged Accepted condition keeps its time.
	hr = getRoute(t)
	hr.Spec.Hostnames = []gwapiv1.Hostname{"app.example.com"}
	if err := update(ctx, hr); err != nil {
		t.Fatal(err)
	}
	gen := getRoute(t).Generation
	if gen < 2 {
		t.Fatalf("generation %d after a spec change", gen)
	}
	eventually(t, 10*time.Second, "observedGeneration to follow", func() error {
		c, err := ourAccepted(getRoute(t))
		if err != nil {
			return err
		}
		if c.ObservedGeneration != gen {
			return fmt.Errorf("observedGeneration %d, want %d", c.ObservedGeneration, gen)
		}
		return nil
	})
	hr = getRoute(t)
	if len(hr.Status.Parents) != 2 || hr.Status.Parents[0].ControllerName != foreign.ControllerName {
		t.Errorf("foreign parents entry lost: %+v", hr.Status.Parents)
	}
	if got := meta.FindStatusCondition(getGateway(t).Status.Conditions, "Accepted").LastTransitionTime; !got.Equal(&gwAccepted) {
		t.Errorf("Gateway Accepted lastTransitionTime moved from %v to %v", gwAccepted, got)
	}

	// Gateway addresses: none without the Gateway's Service, its ClusterIP
	// once `<gateway>-<class>` exists.
	if a := getGateway(t).Status.Addresses; len(a) != 0 {
		t.Errorf("addresses without a Service: %+v", a)
	}
	gwSvc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-xds"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}},
	}
	if err := k8sClient.Create(ctx, gwSvc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8sClient.Delete(ctx, gwSvc) })
	eventually(t, 10*time.Second, "Gateway addresses from its Service", func() error {
		a := getGateway(t).Status.Addresses
		if len(a) != 1 || a[0].Value != gwSvc.Spec.ClusterIP || a[0].Value == "" {
			return fmt.Errorf("addresses %+v, want [%s]", a, gwSvc.Spec.ClusterIP)
		}
		return nil
	})

	// The route detaches from our Gateway: our entry goes, theirs stays.
	hr = getRoute(t)
	hr.Spec.ParentRefs = []gwapiv1.ParentReference{{Name: "not-ours"}}
	if err := update(ctx, hr); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "our stale parents entry to go", func() error {
		ps := getRoute(t).Status.Parents
		if status.HasOwnParents(ps, gatewayapi.ControllerName) {
			return errors.New("our entry is still there")
		}
		if len(ps) != 1 || ps[0].ControllerName != foreign.ControllerName {
			return fmt.Errorf("parents %+v, want only the foreign one", ps)
		}
		return nil
	})

	// xDS: the scope of the class was published.
	if _, ok := r.XDS().Scopes()["gatewayclass/xds"]; !ok {
		t.Errorf("scope gatewayclass/xds not published: %v", r.XDS().Scopes())
	}
}

// TestSecretsAreNotCached: Secrets nobody references are watched as
// metadata only; only the referenced one is read in full, once, and read
// again only when it changes.
func TestSecretsAreNotCached(t *testing.T) {
	requireAPIServer(t)
	ctx := context.Background()
	var unrelated []client.Object
	for i := range 50 {
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("unrelated-%d", i)},
			StringData: map[string]string{"password": "x"},
		}
		if err := k8sClient.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
		unrelated = append(unrelated, s)
	}
	t.Cleanup(func() {
		for _, s := range unrelated {
			_ = k8sClient.Delete(ctx, s)
		}
	})
	r := startReplica(t, replicaOptions{identity: "secrets"})
	applyFile(t, filepath.Join(testdata, "04-https-terminate.in.yaml"))
	want := readGoldenStatus(t, filepath.Join(testdata, "04-https-terminate.ir.yaml"))
	eventually(t, 20*time.Second, "status of the HTTPS case", func() error { return checkStatus(ctx, want) })

	s := r.Stats()
	if s.CachedSecrets != 1 {
		t.Errorf("%d Secrets held in full, want 1 (the referenced one)", s.CachedSecrets)
	}
	gets := s.SecretGets
	// Changing unrelated Secrets reads nothing in full.
	for _, o := range unrelated[:5] {
		sec := o.(*corev1.Secret)
		sec.StringData = map[string]string{"password": "y"}
		if err := update(ctx, sec); err != nil {
			t.Fatal(err)
		}
	}
	runs := r.Stats().Runs
	// A Service event forces a run, which must reuse the held Secret.
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "poke"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 1}}}}
	if err := k8sClient.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8sClient.Delete(ctx, svc) })
	waitRuns(t, r, runs)
	if got := r.Stats().SecretGets; got != gets {
		t.Errorf("uncached Secret reads went from %d to %d without a change of the referenced Secret", gets, got)
	}
}
