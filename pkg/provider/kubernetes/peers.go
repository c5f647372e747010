package kubernetes

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/xds-controller/xds-controller/pkg/xdsserver"
)

// How the data-plane state of every replica reaches the others. Every
// replica serves xDS (a proxy connects to whichever replica the
// controller's Service picks) but only the leader writes status, so each
// replica publishes what its proxies ACKed and NACKed (xdsserver.Report)
// into a ConfigMap of the controller's namespace, and every replica
// watches those ConfigMaps and hands the others' reports to its xDS server
// (xdsserver.SetPeers): the leader's Programmed counts every proxy of the
// fleet and its NACK Events cover NACKs seen anywhere, and a version
// rejected on one replica is withdrawn on all of them.
const (
	// ReportLabel (value "true") marks the report ConfigMaps; the watch
	// selects on it.
	ReportLabel = "xds-controller.dev/dataplane-report"
	// ReportPrefix starts a report ConfigMap's name; the replica's name
	// follows.
	ReportPrefix = "xds-controller-dataplane-"
	// ReportKey is the data key holding the JSON of the xdsserver.Report.
	ReportKey = "report.json"
	// DefaultReportInterval is the least time between two writes of a
	// replica's report.
	DefaultReportInterval = 500 * time.Millisecond
)

// ReportName is the name of the report ConfigMap of replica: ReportPrefix
// and the replica's name, lower-cased, with characters a DNS subdomain does
// not allow replaced by '-', and cut to 253 characters.
func ReportName(replica string) string {
	b := []byte(strings.ToLower(ReportPrefix + replica))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			b[i] = '-'
		}
	}
	if len(b) > validation.DNS1123SubdomainMaxLength {
		b = b[:validation.DNS1123SubdomainMaxLength]
	}
	return strings.TrimRight(string(b), "-.")
}

// reporter writes this replica's report whenever it changes, at most once
// per interval, and deletes it when the replica stops (its proxies then
// reconnect to the others). Inside a pod (a Pod of the replica's name in
// the namespace) the ConfigMap is owned by the Pod, so that the garbage
// collector removes it with a replica that died without cleaning up.
type reporter struct {
	srv      *xdsserver.Server
	c        client.Client
	api      client.Reader
	ns, name string // namespace, ConfigMap name
	pod      string // the Pod that owns the report, if it exists
	interval time.Duration
	log      *slog.Logger
}

func (r *reporter) NeedLeaderElection() bool { return false }

func (r *reporter) Start(ctx context.Context) error {
	changes := r.srv.Subscribe()
	owner := r.owner(ctx)
	var written []byte
	for {
		b, err := json.Marshal(r.srv.Report())
		failed := err != nil
		if err == nil && !bytes.Equal(b, written) {
			if err = r.write(ctx, b, owner); err != nil {
				failed = true
				r.log.Error("writing this replica's data-plane report failed; retrying", "configMap", r.name, "error", err)
			} else {
				written = b
			}
		}
		select {
		case <-ctx.Done():
			r.remove()
			return nil
		case <-time.After(r.interval):
		}
		if failed {
			continue
		}
		select {
		case <-ctx.Done():
			r.remove()
			return nil
		case <-changes:
		}
	}
}

// owner is the owner reference to this replica's Pod, nil outside a pod
// (or when it cannot be read).
func (r *reporter) owner(ctx context.Context) *metav1ac.OwnerReferenceApplyConfiguration {
	if r.pod == "" {
		return nil
	}
	var pod corev1.Pod
	if err := r.api.Get(ctx, client.ObjectKey{Namespace: r.ns, Name: r.pod}, &pod); err != nil {
		if !apierrors.IsNotFound(err) {
			r.log.Warn("reading this replica's Pod failed; its data-plane report has no owner", "pod", r.pod, "error", err)
		}
		return nil
	}
	return metav1ac.OwnerReference().WithAPIVersion("v1").WithKind("Pod").WithName(pod.Name).WithUID(pod.UID)
}

func (r *reporter) write(ctx context.Context, report []byte, owner *metav1ac.OwnerReferenceApplyConfiguration) error {
	cm := corev1ac.ConfigMap(r.name, r.ns).
		WithLabels(map[string]string{ReportLabel: "true"}).
		WithData(map[string]string{ReportKey: string(report)})
	if owner != nil {
		cm.WithOwnerReferences(owner)
	}
	return r.c.Apply(ctx, cm, client.FieldOwner(fieldManager), client.ForceOwnership)
}

func (r *reporter) remove() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := r.c.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: r.ns, Name: r.name}})
	if err != nil && !apierrors.IsNotFound(err) {
		r.log.Warn("deleting this replica's data-plane report failed", "configMap", r.name, "error", err)
	}
}

// fieldManager is ours in server-side apply.
const fieldManager = "xds-controller"

// peerWatch hands the other replicas' reports, read from a cache that
// holds only the report ConfigMaps of the namespace, to the xDS server.
type peerWatch struct {
	srv   *xdsserver.Server
	cache cache.Cache
	self  string // this replica's ConfigMap
	log   *slog.Logger
}

// peerCacheOptions select the report ConfigMaps of namespace ns.
func peerCacheOptions(ns string) cache.Options {
	return cache.Options{
		DefaultNamespaces:    map[string]cache.Config{ns: {}},
		DefaultLabelSelector: labels.SelectorFromSet(labels.Set{ReportLabel: "true"}),
	}
}

func (w *peerWatch) NeedLeaderElection() bool { return false }

func (w *peerWatch) Start(ctx context.Context) error {
	kick := make(chan struct{}, 1)
	poke := func() {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
	inf, err := w.cache.GetInformer(ctx, &corev1.ConfigMap{})
	if err != nil {
		return fmt.Errorf("watching the data-plane reports: %w", err)
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { poke() },
		UpdateFunc: func(any, any) { poke() },
		DeleteFunc: func(any) { poke() },
	}); err != nil {
		return fmt.Errorf("watching the data-plane reports: %w", err)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-kick:
		}
		var list corev1.ConfigMapList
		if err := w.cache.List(ctx, &list); err != nil {
			w.log.Error("listing the data-plane reports failed", "error", err)
			continue
		}
		w.srv.SetPeers(PeerReports(list.Items, w.self, w.log))
	}
}

// PeerReports decodes the report ConfigMaps in cms, except self (this
// replica's), into reports keyed by ConfigMap name. A ConfigMap being
// deleted or whose report does not decode is left out (and logged to log
// when not nil).
func PeerReports(cms []corev1.ConfigMap, self string, log *slog.Logger) map[string]xdsserver.Report {
	out := map[string]xdsserver.Report{}
	for _, cm := range cms {
		if cm.Name == self || cm.DeletionTimestamp != nil || !strings.HasPrefix(cm.Name, ReportPrefix) {
			continue
		}
		var r xdsserver.Report
		if err := json.Unmarshal([]byte(cm.Data[ReportKey]), &r); err != nil {
			if log != nil {
				log.Warn("ignoring an undecodable data-plane report", "configMap", cm.Name, "error", err)
			}
			continue
		}
		out[strings.TrimPrefix(cm.Name, ReportPrefix)] = r
	}
	return out
}
