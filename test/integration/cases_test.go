package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/status"
)

const testdata = "../../pkg/translate/testdata"

// goldenCases are the golden suite's inputs applied to the API server;
// their expected status is the golden IR file's status section.
var goldenCases = []string{
	"01-basic-http",
	"04-https-terminate",
	"05-https-cross-namespace-secret-granted",
	"06-https-cross-namespace-secret-no-grant",
	"07-https-missing-secret",
	"11-listener-protocol-conflict",
	// 12-listener-hostname-conflict is refused by the CRD's own validation.
	"16-allowed-routes-same-refuses",
	"18-allowed-routes-selector",
	"20-hostname-no-match",
	"21-section-name-no-match",
	"23-missing-service",
	"24-backend-cross-namespace-no-grant",
	"25-backend-cross-namespace-granted",
	"38-multiple-gateways",
	"53-route-to-missing-gateway",
	"63-grpcroute-matches-filters",
	// 64-grpcroute-invalid holds values the CRD's validation refuses.
	"65-grpcroute-httproute-hostnames",
	"67-tcproute-udproute",
	"68-backendtlspolicy",
	"75-listenerset-merge",
	"76-listenerset-not-allowed",
	// 77-listenerset-conflicts orders ListenerSets by the creationTimestamp
	// its input sets, which the API server replaces.
	"78-listenerset-certificate-grant",
	// SecurityPolicies: their Opaque Secrets come from the credential
	// cache (pkg/provider/kubernetes credentials.go).
	"108-security-basic-auth",
	"109-security-api-keys",
	"110-security-conflict",
	"111-security-jwt",
	"112-security-jwt-invalid",
	"113-security-authorization",
	"114-security-authorization-gateway",
	// 115 and 117 need their issuers' discovery documents (or their
	// failures), which the golden options hold and no server serves here.
	"116-security-oidc-explicit",
	// 118-security-ext-auth has HTTPRoute ExternalAuth rule filters, which
	// the standard channel's CRDs (the integration API server's) refuse.
	"119-security-ext-auth-invalid",
	// TrafficPolicies (127-traffic-invalid holds values the CRD's
	// validation refuses).
	"121-traffic-ratelimit",
	"122-traffic-ratelimit-shadow",
	"123-traffic-compression",
	"124-traffic-body-limit",
	"125-traffic-precedence",
	"126-traffic-conflict",
	"128-traffic-listener",
	"129-traffic-jwt-claim",
	// Global rate limits: the replicas have a rate-limit service (its
	// address is not in the status); 153 needs none.
	"150-traffic-global-ratelimit",
	"151-traffic-global-failopen",
	"152-traffic-global-jwt-claim",
	"154-traffic-global-conflict",
	// BackendPolicies (131 has an XBackendTrafficPolicy, 135 a TCPRoute
	// and 139 a TLSRoute of the experimental channel; 137 orders by the
	// creationTimestamps its input sets; 138 holds values the CRD's
	// validation refuses).
	"130-backend-policy-health-check",
	"132-backend-policy-load-balancer",
	"133-backend-policy-hash-key",
	"134-backend-policy-connection",
	"136-backend-policy-precedence",
	// ListenerPolicies (143 orders two policies by the creationTimestamps
	// its input sets; 145's are refused by the CRD's validation).
	"140-listener-tls",
	"141-listener-proxy-protocol-client-ip",
	"142-listener-http1-access-log",
	"144-listener-shared-port",
	"155-listener-http3",
	"156-listener-http3-shared-port",
	"157-listener-http3-not-https",
}

// TestGoldenCaseStatus applies golden cases one after the other and checks
// that every status the translator computed for them lands on the objects,
// as the golden files have it.
func TestGoldenCaseStatus(t *testing.T) {
	requireAPIServer(t)
	r := startReplica(t, replicaOptions{identity: "golden"})
	for _, name := range goldenCases {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			applyFile(t, filepath.Join(testdata, name+".in.yaml"))
			want := readGoldenStatus(t, filepath.Join(testdata, name+".ir.yaml"))
			eventually(t, 20*time.Second, "status as in the golden file", func() error {
				return checkStatus(context.Background(), want)
			})
			t.Logf("%s: status landed in %s", name, time.Since(start).Round(time.Millisecond))
		})
	}
	if s := r.Stats(); s.Failed != 0 {
		t.Errorf("%d pipeline runs failed", s.Failed)
	}
}

// applyFile creates every object of a YAML file (namespaced objects without
// a namespace go to "default"; namespaces are created as needed and never
// deleted, since envtest runs no namespace controller). The objects are
// deleted when the test ends.
func applyFile(t testing.TB, path string) []*unstructured.Unstructured {
	t.Helper()
	ctx := context.Background()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var created []*unstructured.Unstructured
	t.Cleanup(func() { deleteAll(t, created) })
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatalf("%s: %v", path, err)
		}
		if len(m) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		delete(u.Object, "status")
		switch u.GetKind() {
		case "Namespace":
			var ns unstructured.Unstructured
			ns.SetGroupVersionKind(u.GroupVersionKind())
			err := k8sClient.Get(ctx, types.NamespacedName{Name: u.GetName()}, &ns)
			if apierrors.IsNotFound(err) {
				if err := k8sClient.Create(ctx, u); err != nil {
					t.Fatalf("create %s: %v", u.GetName(), err)
				}
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			ns.SetLabels(u.GetLabels())
			if err := update(ctx, &ns); err != nil {
				t.Fatal(err)
			}
			continue
		case "GatewayClass", "ClusterRole", "ClusterRoleBinding":
		default:
			if u.GetNamespace() == "" {
				u.SetNamespace("default")
			}
			if err := ensureNamespace(ctx, u.GetNamespace()); err != nil {
				t.Fatal(err)
			}
		}
		if err := k8sClient.Create(ctx, u); err != nil {
			t.Fatalf("create %s %s/%s: %v", u.GetKind(), u.GetNamespace(), u.GetName(), err)
		}
		created = append(created, u)
	}
	return created
}

// deleteAll deletes objs and waits until they are gone.
func deleteAll(t testing.TB, objs []*unstructured.Unstructured) {
	t.Helper()
	ctx := context.Background()
	for _, o := range objs {
		if err := k8sClient.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("delete %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
	for _, o := range objs {
		eventually(t, 10*time.Second, "deletion of "+o.GetKind()+" "+o.GetName(), func() error {
			var u unstructured.Unstructured
			u.SetGroupVersionKind(o.GroupVersionKind())
			err := k8sClient.Get(ctx, client.ObjectKeyFromObject(o), &u)
			if apierrors.IsNotFound(err) {
				return nil
			}
			if err == nil {
				return errors.New("still there")
			}
			return err
		})
	}
}

type goldenStatus struct {
	GatewayClasses map[string]*gwapiv1.GatewayClassStatus `json:"gatewayClasses"`
	Gateways       map[string]*gwapiv1.GatewayStatus      `json:"gateways"`
	ListenerSets   map[string]*gwapiv1.ListenerSetStatus  `json:"listenerSets"`
	HTTPRoutes     map[string]*gwapiv1.RouteStatus        `json:"httpRoutes"`
	GRPCRoutes     map[string]*gwapiv1.RouteStatus        `json:"grpcRoutes"`
	TLSRoutes      map[string]*gwapiv1.RouteStatus        `json:"tlsRoutes"`
	TCPRoutes      map[string]*gwapiv1.RouteStatus        `json:"tcpRoutes"`
	UDPRoutes      map[string]*gwapiv1.RouteStatus        `json:"udpRoutes"`
	Policies       map[string]*gwapiv1.PolicyStatus       `json:"backendTLSPolicies"`
	Security       map[string]*gwapiv1.PolicyStatus       `json:"securityPolicies"`
}

func readGoldenStatus(t *testing.T, path string) *goldenStatus {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Status goldenStatus `json:"status"`
	}
	if err := yaml.Unmarshal(data, &f); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &f.Status
}

func splitKey(k string) types.NamespacedName {
	for i := range len(k) {
		if k[i] == '/' {
			return types.NamespacedName{Namespace: k[:i], Name: k[i+1:]}
		}
	}
	return types.NamespacedName{Name: k}
}

// checkStatus compares the live status of every object in want with it,
// ignoring lastTransitionTime (which must be set) and Gateway addresses
// (no Gateway Service exists here).
func checkStatus(ctx context.Context, want *goldenStatus) error {
	for name, w := range want.GatewayClasses {
		var gc gwapiv1.GatewayClass
		if err := k8sClient.Get(ctx, types.NamespacedName{Name: name}, &gc); err != nil {
			return err
		}
		if !status.EqualGatewayClassStatus(&gc.Status, w) {
			return fmt.Errorf("GatewayClass %s status:\n%s\nwant:\n%s", name, toYAML(gc.Status), toYAML(w))
		}
		if err := transitionTimesSet(gc.Status.Conditions); err != nil {
			return fmt.Errorf("GatewayClass %s: %w", name, err)
		}
	}
	for key, w := range want.Gateways {
		var gw gwapiv1.Gateway
		if err := k8sClient.Get(ctx, splitKey(key), &gw); err != nil {
			return err
		}
		live := gw.Status.DeepCopy()
		live.Addresses = nil
		// No Envoy runs here: what the translator programmed waits for one.
		w := expectNoProxy(w, "gatewayclass/"+string(gw.Spec.GatewayClassName))
		if !status.EqualGatewayStatus(live, w) {
			return fmt.Errorf("Gateway %s status:\n%s\nwant:\n%s", key, toYAML(live), toYAML(w))
		}
		if err := transitionTimesSet(gw.Status.Conditions); err != nil {
			return fmt.Errorf("Gateway %s: %w", key, err)
		}
	}
	for key, w := range want.ListenerSets {
		var ls gwapiv1.ListenerSet
		if err := k8sClient.Get(ctx, splitKey(key), &ls); err != nil {
			return err
		}
		parent, _ := gatewayapi.ListenerSetParent(&ls)
		var gw gwapiv1.Gateway
		if err := k8sClient.Get(ctx, parent, &gw); err != nil {
			return err
		}
		w := expectNoProxySet(w, "gatewayclass/"+string(gw.Spec.GatewayClassName))
		if !status.EqualListenerSetStatus(&ls.Status, w) {
			return fmt.Errorf("ListenerSet %s status:\n%s\nwant:\n%s", key, toYAML(ls.Status), toYAML(w))
		}
		if err := transitionTimesSet(ls.Status.Conditions); err != nil {
			return fmt.Errorf("ListenerSet %s: %w", key, err)
		}
	}
	for _, kind := range []struct {
		name   string
		want   map[string]*gwapiv1.RouteStatus
		object func() client.Object
	}{
		{"HTTPRoute", want.HTTPRoutes, func() client.Object { return &gwapiv1.HTTPRoute{} }},
		{"GRPCRoute", want.GRPCRoutes, func() client.Object { return &gwapiv1.GRPCRoute{} }},
		{"TLSRoute", want.TLSRoutes, func() client.Object { return &gwapiv1.TLSRoute{} }},
		{"TCPRoute", want.TCPRoutes, func() client.Object { return &gwapiv1.TCPRoute{} }},
		{"UDPRoute", want.UDPRoutes, func() client.Object { return &gwapiv1.UDPRoute{} }},
	} {
		for key, w := range kind.want {
			if err := checkRouteStatus(ctx, kind.name, key, kind.object(), w); err != nil {
				return err
			}
		}
	}
	for _, kind := range []struct {
		name   string
		want   map[string]*gwapiv1.PolicyStatus
		object func() client.Object
	}{
		{"BackendTLSPolicy", want.Policies, func() client.Object { return &gwapiv1.BackendTLSPolicy{} }},
		{"SecurityPolicy", want.Security, func() client.Object { return &v1alpha1.SecurityPolicy{} }},
	} {
		for key, w := range kind.want {
			// Ancestor entries have a route parent entry's shape.
			if err := checkRouteStatus(ctx, kind.name, key, kind.object(), &gwapiv1.RouteStatus{Parents: asParents(w.Ancestors)}); err != nil {
				return err
			}
		}
	}
	return nil
}

// asParents are policy ancestor entries in a route parent entry's shape.
func asParents(as []gwapiv1.PolicyAncestorStatus) []gwapiv1.RouteParentStatus {
	var out []gwapiv1.RouteParentStatus
	for _, a := range as {
		out = append(out, gwapiv1.RouteParentStatus{ParentRef: a.AncestorRef, ControllerName: a.ControllerName, Conditions: a.Conditions})
	}
	return out
}

// checkRouteStatus compares our parents entries of the live route key (of
// kind, read into obj) with w.
func checkRouteStatus(ctx context.Context, kind, key string, obj client.Object, w *gwapiv1.RouteStatus) error {
	nn := splitKey(key)
	if err := k8sClient.Get(ctx, nn, obj); err != nil {
		return err
	}
	var parents []gwapiv1.RouteParentStatus
	switch r := obj.(type) {
	case *gwapiv1.HTTPRoute:
		parents = r.Status.Parents
	case *gwapiv1.GRPCRoute:
		parents = r.Status.Parents
	case *gwapiv1.TLSRoute:
		parents = r.Status.Parents
	case *gwapiv1.TCPRoute:
		parents = r.Status.Parents
	case *gwapiv1.UDPRoute:
		parents = r.Status.Parents
	case *gwapiv1.BackendTLSPolicy:
		parents = asParents(r.Status.Ancestors)
	case *v1alpha1.SecurityPolicy:
		parents = asParents(r.Status.Ancestors)
	}
	// The API server defaults parentRef group and kind in the spec (the
	// golden files' input has no defaulting), and status repeats the
	// spec's parentRef.
	if !status.EqualOwnParents(parents, withDefaults(w.Parents), gatewayapi.ControllerName, nn.Namespace) {
		return fmt.Errorf("%s %s parents:\n%s\nwant:\n%s", kind, key, toYAML(parents), toYAML(w.Parents))
	}
	for _, p := range parents {
		if err := transitionTimesSet(p.Conditions); err != nil {
			return fmt.Errorf("%s %s: %w", kind, key, err)
		}
	}
	return nil
}

func withDefaults(ps []gwapiv1.RouteParentStatus) []gwapiv1.RouteParentStatus {
	out := make([]gwapiv1.RouteParentStatus, len(ps))
	for i, p := range ps {
		p = *p.DeepCopy()
		if p.ParentRef.Group == nil {
			g := gwapiv1.Group(gwapiv1.GroupName)
			p.ParentRef.Group = &g
		}
		if p.ParentRef.Kind == nil {
			k := gwapiv1.Kind("Gateway")
			p.ParentRef.Kind = &k
		}
		out[i] = p
	}
	return out
}

func transitionTimesSet(conds []metav1.Condition) error {
	for _, c := range conds {
		if c.LastTransitionTime.IsZero() {
			return fmt.Errorf("condition %s has no lastTransitionTime", c.Type)
		}
	}
	return nil
}

func toYAML(v any) string {
	b, err := yaml.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}
