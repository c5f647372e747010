package integration

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spiffe/go-spiffe/v2/spiffeid"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/internal/xdsclient"
	"github.com/xds-controller/xds-controller/pkg/infra"
	"github.com/xds-controller/xds-controller/pkg/pki"
	"github.com/xds-controller/xds-controller/pkg/provider/kubernetes"
	"github.com/xds-controller/xds-controller/pkg/status"
)

// fakeProxy connects an ADS client that ACKs (internal/xdsclient.Proxy) to
// the replica as node nodeID of scope, with the SVID of the fleet that
// serves scope (as the identity service would issue it), signed by the
// controller's CA.
func fakeProxy(t *testing.T, r *replica, nodeID, scope string) *xdsclient.Proxy {
	t.Helper()
	svid, err := r.Identity().Authority.Current().Issue(fleetIDForScope(t, r, scope), time.Hour, pki.ClientAuth, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(svid.CertPEM, svid.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	p, err := xdsclient.Connect(r.XDSAddr().String(), &tls.Config{
		RootCAs:      r.Identity().Authority.Current().Pool(),
		ServerName:   kubernetes.DefaultServiceAccount + "." + controllerNamespace + ".svc",
		Certificates: []tls.Certificate{pair},
	}, nodeID, scope)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// expectNoProxy is the status a Gateway has while no proxy of its scope is
// connected: what the translator programmed is Programmed=False reason
// Pending (status.WithDataPlane).
func expectNoProxy(w *gwapiv1.GatewayStatus, scope string) *gwapiv1.GatewayStatus {
	w = w.DeepCopy()
	pending(w.Conditions, scope)
	for i := range w.Listeners {
		pending(w.Listeners[i].Conditions, scope)
	}
	return w
}

// expectNoProxySet is expectNoProxy for a ListenerSet's status.
func expectNoProxySet(w *gwapiv1.ListenerSetStatus, scope string) *gwapiv1.ListenerSetStatus {
	w = w.DeepCopy()
	pending(w.Conditions, scope)
	for i := range w.Listeners {
		pending(w.Listeners[i].Conditions, scope)
	}
	return w
}

// pending turns a Programmed=True condition of cs into what a scope
// without proxies reports.
func pending(cs []metav1.Condition, scope string) {
	if c := meta.FindStatusCondition(cs, "Programmed"); c != nil && c.Status == metav1.ConditionTrue {
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, "Pending", "no Envoy proxy of scope "+scope+" is connected"
	}
}

func programmed(t *testing.T) *metav1.Condition {
	t.Helper()
	return meta.FindStatusCondition(getGateway(t).Status.Conditions, "Programmed")
}

// TestProgrammedFollowsEnvoy: Programmed waits for a proxy's ACK, a NACK
// turns it False with Envoy's message and a Warning Event, and the
// rejected snapshot is withdrawn.
func TestProgrammedFollowsEnvoy(t *testing.T) {
	requireAPIServer(t)
	ctx := context.Background()
	r := startReplica(t, replicaOptions{identity: "dataplane"})
	applyFile(t, filepath.Join(testdata, "01-basic-http.in.yaml"))
	const scope = "gatewayclass/xds"

	eventually(t, 20*time.Second, "Programmed=False without proxies", func() error {
		if c := programmed(t); c == nil || c.Reason != "Pending" || !strings.Contains(c.Message, "no Envoy proxy") {
			return fmt.Errorf("Programmed %+v", c)
		}
		return nil
	})

	p := fakeProxy(t, r, "envoy-1", scope)
	began := time.Now()
	eventually(t, 20*time.Second, "Programmed=True after the ACK", func() error {
		if c := programmed(t); c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "1/1 Envoy proxies serve generation") {
			return fmt.Errorf("Programmed %+v", c)
		}
		return nil
	})
	t.Logf("Programmed=True %s after the proxy connected: %s", time.Since(began).Round(time.Millisecond), programmed(t).Message)
	good := r.XDS().Served(scope)

	// The proxy rejects the next configuration.
	p.Reject("Invalid regex '(': missing )")
	hr := getRoute(t)
	hr.Spec.Hostnames = append(hr.Spec.Hostnames, "nack.example.com")
	if err := update(ctx, hr); err != nil {
		t.Fatal(err)
	}
	began = time.Now()
	eventually(t, 20*time.Second, "Programmed=False reason Rejected", func() error {
		if c := programmed(t); c == nil || c.Reason != status.ReasonRejected || !strings.Contains(c.Message, "Invalid regex '(': missing )") {
			return fmt.Errorf("Programmed %+v", c)
		}
		return nil
	})
	gw := getGateway(t)
	t.Logf("NACK in the Gateway's status %s after the edit:\n%s", time.Since(began).Round(time.Millisecond), toYAML(gw.Status.Conditions))
	if got := r.XDS().Served(scope); got != good {
		t.Errorf("served version %s after the NACK, want the last accepted %s", got, good)
	}
	eventually(t, 20*time.Second, "a Warning Event on the Gateway", func() error {
		var evs eventsv1.EventList
		if err := k8sClient.List(ctx, &evs, client.InNamespace("default")); err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.Regarding.Kind == "Gateway" && e.Regarding.Name == gw.Name && e.Reason == status.ReasonRejected && e.Type == "Warning" {
				t.Logf("Event: %s %s: %s", e.Type, e.Reason, e.Note)
				return nil
			}
		}
		return fmt.Errorf("no Rejected Event among %d", len(evs.Items))
	})

	// A new input that the proxy accepts makes the Gateway Programmed again.
	p.Reject("")
	hr = getRoute(t)
	hr.Spec.Hostnames = append(hr.Spec.Hostnames, "fixed.example.com")
	if err := update(ctx, hr); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "Programmed=True again", func() error {
		if c := programmed(t); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("Programmed %+v", c)
		}
		return nil
	})
}

// fleetIDForScope is the SPIFFE ID of the fleet that serves scope:
// gatewayclass/<class> is the class's shared fleet, gateway/<ns>/<name>
// the Gateway's dedicated fleet (its class read from the API server).
func fleetIDForScope(t *testing.T, r *replica, scope string) spiffeid.ID {
	t.Helper()
	var f infra.Fleet
	switch parts := strings.Split(scope, "/"); {
	case len(parts) == 2 && parts[0] == "gatewayclass":
		f = infra.SharedFleet(controllerNamespace, parts[1])
	case len(parts) == 3 && parts[0] == "gateway":
		var gw gwapiv1.Gateway
		if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: parts[1], Name: parts[2]}, &gw); err != nil {
			t.Fatalf("scope %s: %v", scope, err)
		}
		f = infra.DedicatedFleet(&gw)
	default:
		t.Fatalf("scope %q", scope)
	}
	id, err := infra.FleetID(r.Identity().TrustDomain, f)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestProgrammedAcrossReplicas: two replicas with leader election; the
// only proxy is connected to the replica that does not lead. Its ACK
// reaches the leader through the follower's data-plane report, so the
// Gateway becomes Programmed; its NACK gives Programmed=False reason
// Rejected with Envoy's message and a Warning Event written by the leader,
// and the leader withdraws the rejected version too.
func TestProgrammedAcrossReplicas(t *testing.T) {
	requireAPIServer(t)
	ctx := context.Background()
	a := startReplica(t, replicaOptions{leaderElect: true, identity: "peers-a"})
	eventually(t, 15*time.Second, "peers-a to lead", func() error {
		if a.Leading() {
			return nil
		}
		return errors.New("not leading")
	})
	b := startReplica(t, replicaOptions{leaderElect: true, identity: "peers-b"})
	applyFile(t, filepath.Join(testdata, "01-basic-http.in.yaml"))
	const scope = "gatewayclass/xds"
	eventually(t, 20*time.Second, "Programmed=False without proxies", func() error {
		if c := programmed(t); c == nil || c.Reason != "Pending" || !strings.Contains(c.Message, "no Envoy proxy") {
			return fmt.Errorf("Programmed %+v", c)
		}
		return nil
	})
	if b.Leading() {
		t.Fatal("both replicas lead")
	}

	// The follower admits the proxy once its translation names the scope's
	// fleet (xdsserver.Authorizer).
	eventually(t, 20*time.Second, "the follower to publish the scope", func() error {
		if b.XDS().Scopes()[scope] == "" {
			return errors.New("not published")
		}
		return nil
	})
	p := fakeProxy(t, b, "envoy-on-follower", scope)
	began := time.Now()
	eventually(t, 20*time.Second, "Programmed=True from the follower's proxy", func() error {
		if c := programmed(t); c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "1/1 Envoy proxies serve generation") {
			return fmt.Errorf("Programmed %+v", c)
		}
		return nil
	})
	t.Logf("Programmed=True %s after the proxy connected to the follower: %s", time.Since(began).Round(time.Millisecond), programmed(t).Message)
	if a.XDS().Report().Proxies != nil {
		t.Errorf("the leader reports proxies of its own: %+v", a.XDS().Report().Proxies)
	}
	good := a.XDS().Served(scope)

	p.Reject("Invalid regex '(': missing )")
	hr := getRoute(t)
	hr.Spec.Hostnames = append(hr.Spec.Hostnames, "nack-on-follower.example.com")
	if err := update(ctx, hr); err != nil {
		t.Fatal(err)
	}
	began = time.Now()
	eventually(t, 20*time.Second, "Programmed=False reason Rejected from the follower's NACK", func() error {
		if c := programmed(t); c == nil || c.Reason != status.ReasonRejected || !strings.Contains(c.Message, "Invalid regex '(': missing )") ||
			!strings.Contains(c.Message, "envoy-on-follower") {
			return fmt.Errorf("Programmed %+v", c)
		}
		return nil
	})
	t.Logf("the follower's NACK in the Gateway's status %s after the edit:\n%s", time.Since(began).Round(time.Millisecond), toYAML(getGateway(t).Status.Conditions))
	eventually(t, 10*time.Second, "both replicas to serve the last accepted version again", func() error {
		if va, vb := a.XDS().Served(scope), b.XDS().Served(scope); va != good || vb != good {
			return fmt.Errorf("leader serves %s, follower %s, want %s", va, vb, good)
		}
		return nil
	})
	eventually(t, 20*time.Second, "a Warning Event by the leader on the Gateway", func() error {
		var evs eventsv1.EventList
		if err := k8sClient.List(ctx, &evs, client.InNamespace("default")); err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.Regarding.Kind == "Gateway" && e.Regarding.Name == gatewayKey.Name && e.Reason == status.ReasonRejected &&
				strings.Contains(e.Note, "via controller replica peers-b") {
				t.Logf("Event: %s %s: %s", e.Type, e.Reason, e.Note)
				return nil
			}
		}
		return fmt.Errorf("no Rejected Event naming replica peers-b among %d", len(evs.Items))
	})
	if n := b.writes.n.Load(); n != 0 {
		t.Errorf("the follower wrote status %d times", n)
	}

	// The proxy leaves: the follower's report empties and the Gateway is
	// Pending again (the rejection stays until the input changes).
	p.Reject("")
	hr = getRoute(t)
	hr.Spec.Hostnames = append(hr.Spec.Hostnames, "fixed.example.com")
	if err := update(ctx, hr); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "Programmed=True again", func() error {
		if c := programmed(t); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("Programmed %+v", c)
		}
		return nil
	})
	p.Close()
	eventually(t, 20*time.Second, "Pending after the proxy left the follower", func() error {
		if c := programmed(t); c == nil || c.Reason != "Pending" || !strings.Contains(c.Message, "no Envoy proxy") {
			return fmt.Errorf("Programmed %+v", c)
		}
		return nil
	})
}
