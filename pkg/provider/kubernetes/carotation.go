package kubernetes

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/xds-controller/xds-controller/pkg/pki"
)

// CA rotation without a restart (docs/identity.md). Every replica watches
// the CA Secret; when its content changes to another CA, the replica makes
// it the current CA (new SVIDs, and after the handover its server
// certificate, come from it) and keeps the old one in the bundle
// (pki.Trust). The retired CAs and when they retired are recorded in the
// ConfigMap TrustConfigMapName, which every replica merges with what it
// saw itself and writes back when that adds something (server-side apply):
// a replica that starts during the overlap trusts the old CA as well, and
// all agree on the times. A bundle change re-runs the provisioner, which
// writes it into the fleets' bootstrap ConfigMaps (for pods that start
// later; running pods get it with their next SVID).

// TrustConfigMapName is the ConfigMap, in the controller's namespace, that
// records the retired CAs still trusted: key retired.crt (PEM, each block
// with a Retired-At header) and ca.crt (the whole bundle, for reading).
const TrustConfigMapName = "xds-controller-ca-trust"

const (
	trustRetiredKey = "retired.crt"
	trustBundleKey  = "ca.crt"
)

// caWatchInterval is how often a replica re-checks the rotation without an
// event (the handover and drop times pass without one).
var caWatchInterval = 10 * time.Second

// caWatch follows the CA Secret and the trust record (runs on every
// replica).
type caWatch struct {
	ident *Identity
	cache cache.Cache // watches the CA Secret and the trust ConfigMap only
	// read reads them (the API server); c writes.
	read client.Reader
	c    client.Client
	ns   string
	// create: a missing Secret is created with a new CA (CACreate), which
	// makes deleting it a rotation.
	create bool
	log    *slog.Logger
	// changed is called after the bundle changed (re-provision).
	changed func()
}

// caCacheOptions select the CA Secret and the trust ConfigMap of ns.
func caCacheOptions(ns string) cache.Options {
	byName := func(name string) cache.ByObject {
		return cache.ByObject{
			Namespaces: map[string]cache.Config{ns: {}},
			Field:      fields.OneTermEqualSelector("metadata.name", name),
		}
	}
	return cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.Secret{}:    byName(CASecretName),
		&corev1.ConfigMap{}: byName(TrustConfigMapName),
	}}
}

func (w *caWatch) NeedLeaderElection() bool { return false }

// Start syncs at once, at every change of the Secret or the record, and
// every caWatchInterval, until ctx ends. The watch only hastens a sync:
// the reads go to the API server, and the interval alone keeps a replica
// in step if its watch does not start.
func (w *caWatch) Start(ctx context.Context) error {
	kick := make(chan struct{}, 1)
	poke := func() {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
	go func() {
		for _, obj := range []client.Object{&corev1.Secret{}, &corev1.ConfigMap{}} {
			inf, err := w.cache.GetInformer(ctx, obj)
			if err == nil {
				_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
					AddFunc:    func(any) { poke() },
					UpdateFunc: func(any, any) { poke() },
					DeleteFunc: func(any) { poke() },
				})
			}
			if err != nil && ctx.Err() == nil {
				w.log.Warn("CA rotation: no watch of the CA Secret; checking it every interval", "interval", caWatchInterval, "error", err)
			}
		}
	}()
	tick := time.NewTicker(caWatchInterval)
	defer tick.Stop()
	for {
		if err := w.sync(ctx); err != nil && ctx.Err() == nil {
			w.log.Error("CA rotation: keeping the current CA", "error", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-kick:
		case <-tick.C:
		}
	}
}

// sync makes the Authority follow the Secret and the record: rotate to the
// Secret's CA, merge the record, prune what the overlap drops; then write
// the record when it lacks something. A Secret that is missing or does not
// hold a valid CA keeps the current CA (the error says why).
func (w *caWatch) sync(ctx context.Context) error {
	now := w.ident.now()
	var current *pki.CA
	var secretErr error
	var s corev1.Secret
	switch err := w.read.Get(ctx, types.NamespacedName{Namespace: w.ns, Name: CASecretName}, &s); {
	case err == nil:
		current, secretErr = parseCASecret(&s)
	case apierrors.IsNotFound(err) && w.create:
		current, secretErr = loadOrCreateCA(ctx, w.c, w.ns, w.ident.TrustDomain)
	case apierrors.IsNotFound(err):
		secretErr = fmt.Errorf("CA Secret %s/%s is missing (written by cert-manager?)", w.ns, CASecretName)
	default:
		secretErr = err
	}
	if secretErr != nil {
		current = nil
	}
	var cm corev1.ConfigMap
	var retired []pki.Retired
	recorded := ""
	switch err := w.read.Get(ctx, types.NamespacedName{Namespace: w.ns, Name: TrustConfigMapName}, &cm); {
	case err == nil:
		recorded = cm.Data[trustRetiredKey]
		var err error
		if retired, err = pki.ParseRetired([]byte(recorded)); err != nil {
			w.log.Warn("CA rotation: ignoring the record of retired CAs", "configMap", TrustConfigMapName, "error", err)
			retired = nil
		}
	case !apierrors.IsNotFound(err):
		return err
	}
	t, changed := w.ident.Authority.Follow(current, retired, now, w.ident.Overlap)
	if changed {
		w.log.Info("CA rotation: trust bundle changed", "signingCA", serialOf(t.Current), "trusted", len(t.Authorities()),
			"handoverIn", w.handoverIn(t, now).String(), "serverCA", serialOf(w.ident.Authority.ServerCA(now, w.ident.Overlap)))
		if w.changed != nil {
			w.changed()
		}
	}
	want := string(pki.MarshalRetired(t.Retired))
	if want != recorded && (len(t.Retired) > 0 || recorded != "") {
		cmAC := corev1ac.ConfigMap(TrustConfigMapName, w.ns).
			WithLabels(map[string]string{"app.kubernetes.io/managed-by": "xds-controller"}).
			WithData(map[string]string{trustRetiredKey: want, trustBundleKey: string(t.BundlePEM())})
		if err := w.c.Apply(ctx, cmAC, client.FieldOwner(fieldManager), client.ForceOwnership); err != nil {
			return fmt.Errorf("writing the record of retired CAs %s: %w", TrustConfigMapName, err)
		}
	}
	return secretErr
}

// handoverIn is how long until the last handover of t's retired CAs (0
// when none is pending).
func (w *caWatch) handoverIn(t pki.Trust, now time.Time) time.Duration {
	var d time.Duration
	for _, r := range t.Retired {
		d = max(d, r.At.Add(w.ident.Overlap.Handover).Sub(now))
	}
	return d.Round(time.Second)
}

func serialOf(ca *pki.CA) string {
	if ca == nil {
		return ""
	}
	return ca.Cert.SerialNumber.Text(16)
}
