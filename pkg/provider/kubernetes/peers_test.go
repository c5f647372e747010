package kubernetes

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/xds-controller/xds-controller/pkg/xdsserver"
)

func TestReportName(t *testing.T) {
	for in, want := range map[string]string{
		"xds-controller-7d9f-abcde": "xds-controller-dataplane-xds-controller-7d9f-abcde",
		"Host_Name_x1":              "xds-controller-dataplane-host-name-x1",
		strings.Repeat("a", 300):    ("xds-controller-dataplane-" + strings.Repeat("a", 300))[:253],
	} {
		got := ReportName(in)
		if got != want {
			t.Errorf("ReportName(%q) = %q, want %q", in, got, want)
		}
		if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
			t.Errorf("ReportName(%q) = %q: %v", in, got, errs)
		}
	}
}

func TestPeerReports(t *testing.T) {
	cm := func(name, data string) corev1.ConfigMap {
		return corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{ReportKey: data}}
	}
	gone := cm(ReportPrefix+"c", `{}`)
	gone.DeletionTimestamp = &metav1.Time{}
	got := PeerReports([]corev1.ConfigMap{
		cm(ReportPrefix+"a", `{"proxies":[{"scope":"s","node":"e1","types":{"L":{"acked":"v1"}}}],"nacks":[{"scope":"s","node":"e1","type":"L","version":"v2","detail":"bad"}]}`),
		cm(ReportPrefix+"self", `{}`),
		cm(ReportPrefix+"broken", `{`),
		cm("unrelated", `{}`),
		gone,
	}, ReportPrefix+"self", nil)
	want := map[string]xdsserver.Report{"a": {
		Proxies: []xdsserver.ReportedProxy{{Scope: "s", NodeID: "e1", Types: map[string]xdsserver.TypeStatus{"L": {Acked: "v1"}}}},
		Nacks:   []xdsserver.ReportedNack{{Scope: "s", NodeID: "e1", TypeURL: "L", Version: "v2", Detail: "bad"}},
	}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("PeerReports (-want +got):\n%s", d)
	}
}
