// Package ratelimitconfig delivers the global rate-limit service's
// configuration in a cluster: the controller writes every domain's
// configuration into one ConfigMap of its release namespace, and the
// service's pods (the chart's rateLimit.enabled) mount that ConfigMap as
// the folder the service reads (RUNTIME_ROOT/config, CONFIG_TYPE=FILE).
// It is the cluster's counterpart of standalone mode's files
// (standalone.RateLimitService.WriteConfigs), with the same names and
// bytes: xdstranslator.RateLimitConfigFiles renders both, "<domain>.yaml"
// each. Why files rather than the service's xDS subscription:
// pkg/standalone/ratelimit.go.
//
// How a change reaches the service: the kubelet refreshes a ConfigMap
// volume on its pod sync (about a minute, plus its cache of the object),
// by writing a new timestamped folder and swapping the "..data" symlink
// (the kubelet's atomic writer); the service watches the folder
// (RUNTIME_WATCH_ROOT=false) and reloads on each creation, write, chmod
// or removal in it (the rename of "..data_tmp" over "..data" is a
// creation of "..data" there), and skips the swap's dot-named entries
// (RUNTIME_IGNOREDOTFILES=true: the files are read through the per-key
// symlinks only). The service's own reload takes
// milliseconds (test/e2e TestRateLimitServiceReloadsConfigMapVolume); the
// kubelet's refresh is what a change waits for.
//
// This package is the I/O at the edge: the rendering is pure
// (pkg/xdstranslator); the Writer only applies its result.
package ratelimitconfig

import (
	"context"
	"fmt"
	"maps"
	"sync"

	rlsconfv3 "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/xdstranslator"
)

const (
	// FieldManager owns the ConfigMap's data (server-side apply). The
	// chart's Helm release owns its metadata only: a helm upgrade leaves
	// the data alone, and the Writer leaves the labels alone.
	FieldManager = "xds-controller"
	// MaxBytes bounds the data of one ConfigMap: the API server refuses
	// more (1 MiB, its validation of ConfigMaps); Write checks it first
	// to say which ConfigMap and why.
	MaxBytes = 1 << 20
)

// ConfigMapName is the name of the ConfigMap in the release namespace:
// the controller's name (its ServiceAccount's, the chart's fullname)
// and "-ratelimit". The chart renders it under the same name (templates/
// ratelimit.yaml) and mounts it into the service's pods.
func ConfigMapName(controller string) string {
	return controller + "-ratelimit"
}

// Writer keeps one ConfigMap's data equal to the service's files of the
// domains it was last given. Safe for concurrent use.
type Writer struct {
	c               client.Client
	namespace, name string

	mu sync.Mutex
	// last is the data of the last successful apply; nil before the first.
	last map[string]string
}

// NewWriter returns a Writer of ConfigMap namespace/name through c. Its
// RBAC: patch (and create, when the ConfigMap does not exist yet) on
// configmaps in namespace: the chart's Role of the release namespace.
func NewWriter(c client.Client, namespace, name string) *Writer {
	return &Writer{c: c, namespace: namespace, name: name}
}

// Write makes the ConfigMap's data the service's configuration of limits:
// one key per domain ("<domain>.yaml", xdstranslator.RateLimitConfigFiles),
// and no other key the Writer wrote before (a domain that went away is
// removed: server-side apply drops the fields its manager no longer
// applies). Nil entries are skipped; each other must be valid
// (ir.GlobalRateLimits.Validate), domains distinct. Nothing is sent when
// the data equals the last successful Write's (each change reloads the
// service); a ConfigMap changed behind the Writer's back is therefore
// repaired at the next change of the limits or by a new Writer (a
// restarted controller). The ConfigMap is created when it does not
// exist. Errors: a domain that makes no ConfigMap key, the total over
// MaxBytes, or the API server's (nothing is remembered then, so the next
// Write tries again).
func (w *Writer) Write(ctx context.Context, limits []*ir.GlobalRateLimits) error {
	configs := make([]*rlsconfv3.RateLimitConfig, 0, len(limits))
	for _, l := range limits {
		if l != nil {
			configs = append(configs, xdstranslator.RateLimitConfig(l))
		}
	}
	files, err := xdstranslator.RateLimitConfigFiles(configs...)
	if err != nil {
		return err
	}
	data, size := make(map[string]string, len(files)), 0
	for k, v := range files {
		data[k] = string(v)
		size += len(k) + len(v)
	}
	if size > MaxBytes {
		return fmt.Errorf("rate-limit configuration: %d bytes in ConfigMap %s/%s, over the %d a ConfigMap holds", size, w.namespace, w.name, MaxBytes)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.last != nil && maps.Equal(w.last, data) {
		return nil
	}
	cm := corev1ac.ConfigMap(w.name, w.namespace).WithData(data)
	if err := w.c.Apply(ctx, cm, client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("rate-limit configuration: applying ConfigMap %s/%s: %w", w.namespace, w.name, err)
	}
	w.last = data
	return nil
}
