package integration

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// routeYAML is an HTTPRoute of the default namespace on Gateway web of
// 01-basic-http for host, to Service app.
func routeYAML(name, host string) string {
	return fmt.Sprintf(`apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: %s, namespace: default}
spec:
  parentRefs: [{name: web}]
  hostnames: [%s]
  rules:
  - backendRefs: [{name: app, port: 80}]
`, name, host)
}

// routeAccepted is our Accepted condition of HTTPRoute default/name.
func routeAccepted(t *testing.T, name string) (*metav1.Condition, error) {
	return ourAccepted(get(t, "default", name, &gwapiv1.HTTPRoute{}))
}

// TestNackHeldAcrossReplicas (issue 25): two replicas, the only proxy on
// the follower; it refuses the route configurations of one route (as
// Envoy refuses a configuration with one bad route). The replicas hold
// that route back alone: the leader marks it Accepted=False reason
// Rejected with the proxy's message, the Gateway stays Programmed, a
// route created afterwards is served (the proxy ACKs a version with it),
// and both replicas serve the same version.
func TestNackHeldAcrossReplicas(t *testing.T) {
	requireAPIServer(t)
	a := startReplica(t, replicaOptions{leaderElect: true, identity: "held-a"})
	eventually(t, 15*time.Second, "held-a to lead", func() error {
		if a.Leading() {
			return nil
		}
		return errors.New("not leading")
	})
	b := startReplica(t, replicaOptions{leaderElect: true, identity: "held-b"})
	applyFile(t, filepath.Join(testdata, "01-basic-http.in.yaml"))
	const scope = "gatewayclass/xds"
	eventually(t, 20*time.Second, "the follower to publish the scope", func() error {
		if b.XDS().Scopes()[scope] == "" {
			return errors.New("not published")
		}
		return nil
	})
	p := fakeProxy(t, b, "envoy-on-follower", scope)
	eventually(t, 20*time.Second, "Programmed=True from the follower's proxy", func() error {
		if c := programmed(t); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("Programmed %+v", c)
		}
		return nil
	})

	const msg = "Invalid regex '(': missing )"
	p.RejectDomain("nack.example.com", msg)
	began := time.Now()
	applyYAML(t, routeYAML("nack-me", "nack.example.com"))
	eventually(t, 20*time.Second, "the refused route Accepted=False reason Rejected", func() error {
		c, err := routeAccepted(t, "nack-me")
		if err != nil {
			return err
		}
		if c.Status != metav1.ConditionFalse || c.Reason != "Rejected" || !strings.Contains(c.Message, msg) || !strings.Contains(c.Message, "envoy-on-follower") {
			return fmt.Errorf("Accepted %+v", c)
		}
		return nil
	})
	c, _ := routeAccepted(t, "nack-me")
	t.Logf("the refused route marked by the leader %s after it was created: %s", time.Since(began).Round(time.Millisecond), c.Message)

	began = time.Now()
	applyYAML(t, routeYAML("later", "later.example.com"))
	eventually(t, 20*time.Second, "a version with the later route ACKed, the same on both replicas", func() error {
		va, vb := a.XDS().Served(scope), b.XDS().Served(scope)
		if va != vb {
			return fmt.Errorf("leader serves %s, follower %s", va, vb)
		}
		if got := p.Accepted(resource.RouteType); got != vb {
			return fmt.Errorf("the proxy accepted %s, the follower serves %s", got, vb)
		}
		if d := p.Domains(); !slices.Contains(d, "later.example.com") || slices.Contains(d, "nack.example.com") {
			return fmt.Errorf("the proxy routes %v", d)
		}
		if c, err := routeAccepted(t, "later"); err != nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("later: Accepted %+v %v", c, err)
		}
		return nil
	})
	t.Logf("a route created afterwards was ACKed by the proxy %s after it was created", time.Since(began).Round(time.Millisecond))
	if c := programmed(t); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("the Gateway while the refused route is held: Programmed %+v", c)
	}
	if c, _ := routeAccepted(t, "nack-me"); c == nil || c.Reason != "Rejected" {
		t.Errorf("the refused route after the later one: %+v", c)
	}
}
