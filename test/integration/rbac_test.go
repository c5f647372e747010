package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spiffe/go-spiffe/v2/spiffeid"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/infra"
	"github.com/xds-controller/xds-controller/pkg/pki"
)

// TestWatchNamespacesRBAC runs the controller with --watch-namespaces
// rbac-watched as the chart's ServiceAccount, impersonated, holding only
// the RBAC the chart renders for watchNamespaces: [rbac-watched]
// (testdata/chart-rbac-scoped.yaml, which test/chart keeps equal to the
// chart: a small ClusterRole, a Role per watched namespace). The
// controller writes status, provisions a Shared and a Dedicated Gateway
// there, and no request of it is refused (403). The objects of the
// unwatched namespace rbac-other are ignored: its Gateway gets no status
// and no Service, its route no status, and a reference into it (a
// backend allowed by a ReferenceGrant there) resolves as if the grant did
// not exist. Only Secrets of type kubernetes.io/tls of the watched
// namespaces are in the controller's cache: a listener that references an
// Opaque Secret finds none.
func TestWatchNamespacesRBAC(t *testing.T) {
	requireAPIServer(t)
	ctx := context.Background()
	const release, watched, other, class = "xds-system", "rbac-watched", "rbac-other", "rbac-scoped"
	for _, ns := range []string{release, watched, other} {
		if err := ensureNamespace(ctx, ns); err != nil {
			t.Fatal(err)
		}
	}
	a := &infra.Applier{Client: k8sClient}
	for _, s := range []infra.PruneScope{
		{Namespace: release, Selector: labels.SelectorFromSet(labels.Set{infra.LabelGatewayClassName: class})},
		{Namespace: watched}, {Namespace: other},
	} {
		if _, err := a.Prune(ctx, s, nil); err != nil {
			t.Fatal(err)
		}
	}
	applyFile(t, filepath.Join("testdata", "chart-rbac-scoped.yaml"))

	sa := rest.CopyConfig(restConfig)
	sa.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + release + ":xds-controller",
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + release, "system:authenticated"},
	}
	// The harness: the impersonated controller reads Secrets of the
	// watched namespace only.
	saClient, err := client.New(sa, client.Options{Scheme: k8sClient.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the chart's RBAC in force", func() error {
		if err := saClient.List(ctx, &corev1.SecretList{}, client.InNamespace(watched)); err != nil {
			return err
		}
		if err := saClient.List(ctx, &corev1.SecretList{}, client.InNamespace(other)); !apierrors.IsForbidden(err) {
			return fmt.Errorf("listing Secrets of %s: %v, want forbidden", other, err)
		}
		return nil
	})

	cert, key := selfSigned(t)
	tlsData := fmt.Sprintf("{tls.crt: %q, tls.key: %q}", cert, key)
	applyYAML(t, `
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: `+class+`}
spec: {controllerName: xds-controller.dev/gateway-controller}
---
apiVersion: v1
kind: Secret
metadata: {name: cert, namespace: `+watched+`}
type: kubernetes.io/tls
stringData: `+tlsData+`
---
apiVersion: v1
kind: Secret
metadata: {name: opaque, namespace: `+watched+`}
type: Opaque
stringData: `+tlsData+`
---
apiVersion: v1
kind: Secret
metadata: {name: cert, namespace: `+other+`}
type: kubernetes.io/tls
stringData: `+tlsData+`
---
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: GatewayParameters
metadata: {name: dedicated, namespace: `+watched+`}
spec: {mode: Dedicated, service: {type: ClusterIP}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: shared, namespace: `+watched+`}
spec:
  gatewayClassName: `+class+`
  listeners:
  - {name: http, protocol: HTTP, port: 80, allowedRoutes: {namespaces: {from: All}}}
  - {name: https, protocol: HTTPS, port: 443, tls: {certificateRefs: [{name: cert}]}}
  - {name: opaque, protocol: HTTPS, port: 8443, tls: {certificateRefs: [{name: opaque}]}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: dedicated, namespace: `+watched+`}
spec:
  gatewayClassName: `+class+`
  infrastructure: {parametersRef: {group: gateway.xds-controller.dev, kind: GatewayParameters, name: dedicated}}
  listeners: [{name: http, protocol: HTTP, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: app, namespace: `+watched+`}
spec:
  parentRefs: [{name: shared, sectionName: http}]
  rules: [{backendRefs: [{name: backend, namespace: `+other+`, port: 80}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: outside, namespace: `+other+`}
spec:
  gatewayClassName: `+class+`
  listeners: [{name: http, protocol: HTTP, port: 80}]
---
apiVersion: v1
kind: Service
metadata: {name: backend, namespace: `+other+`}
spec: {ports: [{port: 80}]}
---
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: {name: backend, namespace: `+other+`}
spec:
  from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: `+watched+`}]
  to: [{group: "", kind: Service}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: stray, namespace: `+other+`}
spec:
  parentRefs: [{name: shared, namespace: `+watched+`}]
  rules: [{backendRefs: [{name: backend, port: 80}]}]
`)

	r := startReplica(t, replicaOptions{identity: "scoped", provision: true, leaderElect: true,
		rest: sa, namespace: release, watchNamespaces: []string{watched}})

	// Status of the cluster-scoped class (the ClusterRole) and of the
	// watched namespace's objects (its Role).
	eventually(t, 20*time.Second, "GatewayClass accepted", func() error {
		var gc gwapiv1.GatewayClass
		get(t, "", class, &gc)
		if c := meta.FindStatusCondition(gc.Status.Conditions, "Accepted"); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("Accepted %+v", c)
		}
		return nil
	})
	eventually(t, 20*time.Second, "listener conditions of "+watched+"/shared", func() error {
		var gw gwapiv1.Gateway
		get(t, watched, "shared", &gw)
		want := map[gwapiv1.SectionName]string{"http": "True", "https": "True", "opaque": "False"}
		for _, l := range gw.Status.Listeners {
			c := meta.FindStatusCondition(l.Conditions, "ResolvedRefs")
			if c == nil || string(c.Status) != want[l.Name] {
				return fmt.Errorf("listener %s ResolvedRefs %+v, want %s", l.Name, c, want[l.Name])
			}
			if l.Name == "opaque" && (c.Reason != "InvalidCertificateRef" || !strings.Contains(c.Message, `Secret type is "Opaque", not "kubernetes.io/tls"`)) {
				return fmt.Errorf("listener opaque: %s %q, want InvalidCertificateRef, Secret type is Opaque", c.Reason, c.Message)
			}
		}
		if len(gw.Status.Listeners) != 3 {
			return fmt.Errorf("%d listeners in status", len(gw.Status.Listeners))
		}
		return nil
	})
	eventually(t, 20*time.Second, "route "+watched+"/app: the grant of "+other+" is not seen", func() error {
		var rt gwapiv1.HTTPRoute
		get(t, watched, "app", &rt)
		if len(rt.Status.Parents) != 1 {
			return fmt.Errorf("parents %+v", rt.Status.Parents)
		}
		c := meta.FindStatusCondition(rt.Status.Parents[0].Conditions, "ResolvedRefs")
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != string(gwapiv1.RouteReasonRefNotPermitted) {
			return fmt.Errorf("ResolvedRefs %+v, want False RefNotPermitted", c)
		}
		return nil
	})
	// Provisioned: the shared fleet (release namespace), the Shared
	// Gateway's Service and EndpointSlice, the Dedicated Gateway's fleet.
	waitFor(t, release, "envoy-"+class, &appsv1.Deployment{}, nil)
	waitFor(t, watched, "shared-"+class, &corev1.Service{}, nil)
	waitFor(t, watched, "shared-"+class+"-ipv4", &discoveryv1.EndpointSlice{}, nil)
	for _, obj := range []client.Object{&appsv1.Deployment{}, &corev1.ServiceAccount{}, &corev1.ConfigMap{}, &corev1.Service{}} {
		waitFor(t, watched, "dedicated-"+class, obj, nil)
	}
	var lease coordinationv1.Lease
	waitFor(t, release, "xds-controller.dev", &lease, nil)

	// The unwatched namespace: nothing read, nothing written. The runs
	// above translated it if the controller saw it.
	var gw gwapiv1.Gateway
	get(t, other, "outside", &gw)
	for _, c := range gw.Status.Conditions {
		if c.Reason != "Pending" { // the CRD's default
			t.Errorf("Gateway %s/outside got status %+v", other, gw.Status.Conditions)
		}
	}
	var rt gwapiv1.HTTPRoute
	get(t, other, "stray", &rt)
	if len(rt.Status.Parents) != 0 {
		t.Errorf("HTTPRoute %s/stray got status %+v", other, rt.Status.Parents)
	}
	if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: other, Name: "outside-" + class}, &corev1.Service{}); !apierrors.IsNotFound(err) {
		t.Errorf("Service %s/outside-%s: %v, want not found", other, class, err)
	}
	s := r.Stats()
	// The Secrets of the watched namespaces of type kubernetes.io/tls and
	// Opaque (the credential cache): cert and opaque, and the CA Secret
	// of the release namespace (Opaque), not those of the other
	// namespace. cert and opaque are referenced, so both are held (opaque
	// to be refused); the CA is not a reference.
	if s.WatchedSecrets != 3 || s.CachedSecrets != 2 {
		t.Errorf("%d Secrets watched, %d held, want 3 and 2 (%s/cert, %s/opaque, the CA Secret; the first two held)", s.WatchedSecrets, s.CachedSecrets, watched, watched)
	}
	if n, first := r.writes.forbiddenCount(); n != 0 {
		t.Errorf("%d requests of the controller were forbidden, the first %s", n, first)
	}
	if s.Failed != 0 {
		t.Errorf("%d pipeline runs failed", s.Failed)
	}
}

// selfSigned is a certificate and its key (PEM) for a TLS Secret.
func selfSigned(t *testing.T) (cert, key string) {
	t.Helper()
	ca, keyPEM, err := pki.NewCA(spiffeid.RequireTrustDomainFromString("example.org"), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return string(ca.CertPEM), string(keyPEM)
}
