package integration

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/provider/kubernetes"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

// panickyResolver panics in ScopeFor while broken is set: a bug inside the
// translation, as far as the pipeline can tell.
type panickyResolver struct {
	kubernetes.SharedResolver
	broken *atomic.Bool
}

func (r panickyResolver) ScopeFor(gw *gwapiv1.Gateway) string {
	if r.broken.Load() {
		panic("injected translator bug")
	}
	return r.SharedResolver.ScopeFor(gw)
}

// TestTranslationFailureKeepsServing: a translation that fails (here a
// panic inside it) neither crashes the controller nor removes or changes
// the published configuration or the status; the next good translation
// goes through.
func TestTranslationFailureKeepsServing(t *testing.T) {
	requireAPIServer(t)
	ctx := context.Background()
	var broken atomic.Bool
	r := startReplica(t, replicaOptions{identity: "failure", hooks: kubernetes.Hooks{
		Resolve: func(context.Context, client.Reader, *resources.Resources) (kubernetes.Resolver, error) {
			return panickyResolver{broken: &broken}, nil
		},
	}})
	applyFile(t, filepath.Join(testdata, "01-basic-http.in.yaml"))
	eventually(t, 20*time.Second, "route Accepted", func() error {
		_, err := ourAccepted(getRoute(t))
		return err
	})
	version := r.XDS().Scopes()["gatewayclass/xds"]
	if version == "" {
		t.Fatal("nothing published")
	}

	broken.Store(true)
	hr := getRoute(t)
	hr.Spec.Hostnames = []gwapiv1.Hostname{"broken.example.com"}
	if err := update(ctx, hr); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the failed run", func() error {
		if r.Stats().Failed > 0 {
			return nil
		}
		return errors.New("no failed run yet")
	})
	if got := r.XDS().Scopes()["gatewayclass/xds"]; got != version {
		t.Errorf("published version changed from %q to %q by a failed translation", version, got)
	}
	if c, _ := ourAccepted(getRoute(t)); c == nil || c.ObservedGeneration != 1 {
		t.Errorf("status changed by a failed translation: %+v", c)
	}

	broken.Store(false)
	hr = getRoute(t)
	hr.Spec.Hostnames = []gwapiv1.Hostname{"fixed.example.com"}
	if err := update(ctx, hr); err != nil {
		t.Fatal(err)
	}
	gen := getRoute(t).Generation
	eventually(t, 10*time.Second, "recovery", func() error {
		c, err := ourAccepted(getRoute(t))
		if err != nil {
			return err
		}
		if c.ObservedGeneration != gen {
			return fmt.Errorf("observedGeneration %d, want %d", c.ObservedGeneration, gen)
		}
		if r.XDS().Scopes()["gatewayclass/xds"] == version {
			return errors.New("new configuration not published")
		}
		return nil
	})
}
