package status

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

func ancestor(gw string, controller gwapiv1.GatewayController, cs ...metav1.Condition) gwapiv1.PolicyAncestorStatus {
	p := parent(gw, controller, cs...)
	return gwapiv1.PolicyAncestorStatus{AncestorRef: p.ParentRef, ControllerName: p.ControllerName, Conditions: p.Conditions}
}

// TestWriterPolicy: a policy's status.ancestors are written through the
// policy registry (gatewayapi.PolicyKinds) like a route's parents: other
// controllers' entries kept, ours replaced, and removed when no route of
// ours reaches the policy any more (WithStalePolicies).
func TestWriterPolicy(t *testing.T) {
	other := gwapiv1.GatewayController("example.com/other")
	pol := &gwapiv1.BackendTLSPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "tls", Generation: 2},
		Status: gwapiv1.PolicyStatus{Ancestors: []gwapiv1.PolicyAncestorStatus{
			ancestor("theirs", other, cond("Accepted", "True", "Accepted", 1, t0)),
			ancestor("old", ours, cond("Accepted", "True", "Accepted", 1, t0)),
		}},
	}
	var leading atomic.Bool
	leading.Store(true)
	w, c := newRouteWriter(t, &leading, pol)
	key := gatewayapi.PolicyKey{Kind: "BackendTLSPolicy", Namespace: "default", Name: "tls"}
	w.Update(&gatewayapi.Status{Policies: map[gatewayapi.PolicyKey]*gwapiv1.PolicyStatus{key: {Ancestors: []gwapiv1.PolicyAncestorStatus{
		ancestor("web", ours, cond("Accepted", "True", "Accepted", 2, time.Time{})),
	}}}})
	waitFor(t, "the status write", func() bool { return w.Writes() == 1 })
	settle(w)
	var got gwapiv1.BackendTLSPolicy
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: "tls"}, &got); err != nil {
		t.Fatal(err)
	}
	as := got.Status.Ancestors
	if len(as) != 2 || as[0].ControllerName != other || as[1].AncestorRef.Name != "web" || as[1].ControllerName != ours {
		t.Fatalf("ancestors after write: %+v", as)
	}

	// No route reaches the policy any more: our entry goes, theirs stays.
	live := Policies(gatewayapi.PolicyKindNamed("BackendTLSPolicy"), []resources.Object{&got})
	w.Update(WithStalePolicies(&gatewayapi.Status{}, live, ours))
	waitFor(t, "the removal", func() bool { return w.Writes() == 2 })
	settle(w)
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: "tls"}, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Status.Ancestors) != 1 || got.Status.Ancestors[0].ControllerName != other {
		t.Errorf("ancestors after the last route left: %+v", got.Status.Ancestors)
	}
}
