package integration

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// TestLeaderHandOver: two replicas with leader election; both serve xDS,
// only the leader writes status; when the leader stops, the other takes
// over and writes.
func TestLeaderHandOver(t *testing.T) {
	requireAPIServer(t)
	ctx := context.Background()
	a := startReplica(t, replicaOptions{leaderElect: true, identity: "replica-a"})
	eventually(t, 15*time.Second, "replica-a to lead", func() error {
		if a.Leading() {
			return nil
		}
		return errors.New("not leading")
	})
	b := startReplica(t, replicaOptions{leaderElect: true, identity: "replica-b"})

	applyFile(t, filepath.Join(testdata, "01-basic-http.in.yaml"))
	eventually(t, 20*time.Second, "status written by the leader", func() error {
		_, err := ourAccepted(getRoute(t))
		return err
	})
	// Both replicas serve the same configuration.
	eventually(t, 10*time.Second, "both replicas to publish", func() error {
		va, vb := a.XDS().Scopes()["gatewayclass/xds"], b.XDS().Scopes()["gatewayclass/xds"]
		if va == "" || va != vb {
			return fmt.Errorf("versions %q and %q", va, vb)
		}
		return nil
	})
	if b.Leading() {
		t.Fatal("both replicas lead")
	}
	if n := b.writes.n.Load(); n != 0 {
		t.Errorf("the follower wrote status %d times", n)
	}
	if a.writes.n.Load() == 0 {
		t.Errorf("the leader wrote no status")
	}

	// The leader stops (releasing the Lease); b takes over.
	start := time.Now()
	a.stop()
	eventually(t, 15*time.Second, "replica-b to lead", func() error {
		if b.Leading() {
			return nil
		}
		return errors.New("not leading")
	})
	t.Logf("hand-over took %s", time.Since(start).Round(time.Millisecond))

	hr := getRoute(t)
	hr.Spec.Hostnames = []gwapiv1.Hostname{"after.example.com"}
	if err := update(ctx, hr); err != nil {
		t.Fatal(err)
	}
	gen := getRoute(t).Generation
	eventually(t, 15*time.Second, "the new leader to write observedGeneration", func() error {
		c, err := ourAccepted(getRoute(t))
		if err != nil {
			return err
		}
		if c.ObservedGeneration != gen {
			return fmt.Errorf("observedGeneration %d, want %d", c.ObservedGeneration, gen)
		}
		return nil
	})
	if b.writes.n.Load() == 0 {
		t.Error("the new leader wrote nothing")
	}
}
