package file

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
)

func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadFolder(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "b.yaml", `
# a comment-only document is skipped
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r2}
---
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: {name: g, namespace: other}
spec:
  from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: default}]
  to: [{group: "", kind: Service}]
`)
	write(t, dir, "a/a.yml", `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: c, namespace: ignored}
spec: {controllerName: x/y}
---
apiVersion: v1
kind: Secret
metadata: {name: s}
type: kubernetes.io/tls
stringData: {tls.crt: CERT, tls.key: KEY}
`)
	write(t, dir, "notes.txt", "not yaml at all: [")
	write(t, dir, ".hidden/x.yaml", "kind: Nope")
	res, problems, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) != 0 {
		t.Fatalf("problems = %v, want none", problems)
	}
	if len(res.GatewayClasses) != 1 || res.GatewayClasses[0].Namespace != "" {
		t.Errorf("GatewayClass must be cluster-scoped: %+v", res.GatewayClasses)
	}
	if len(res.HTTPRoutes) != 1 || res.HTTPRoutes[0].Namespace != "default" || res.HTTPRoutes[0].Generation != 1 {
		t.Errorf("route without namespace: got %+v, want namespace default, generation 1", res.HTTPRoutes)
	}
	if len(res.ReferenceGrants) != 1 || res.ReferenceGrants[0].Namespace != "other" {
		t.Errorf("v1beta1 ReferenceGrant not loaded as v1: %+v", res.ReferenceGrants)
	}
	if len(res.Secrets) != 1 || string(res.Secrets[0].Data["tls.crt"]) != "CERT" || res.Secrets[0].StringData != nil {
		t.Errorf("Secret stringData not folded into data: %+v", res.Secrets)
	}
}

func TestLoadReportsEachBadDocument(t *testing.T) {
	dir := t.TempDir()
	p := write(t, dir, "mixed.yaml", `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: typo, namespace: ns}
spec:
  rulez: []
---
apiVersion: v1
kind: ConfigMap
metadata: {name: fine}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: unread}
---
apiVersion: v1
kind: Service
metadata: {}
---
kind: Wat
`)
	res, problems, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.ConfigMaps) != 1 {
		t.Errorf("the good document between bad ones was not loaded")
	}
	want := []string{"HTTPRoute ns/typo", "Deployment unread", "Service", "Wat"}
	if len(problems) != len(want) {
		t.Fatalf("problems = %v, want %d", problems, len(want))
	}
	for i, w := range want {
		if problems[i].File != p || problems[i].Object != w {
			t.Errorf("problem %d = %s %q, want %s %q", i, problems[i].File, problems[i].Object, p, w)
		}
	}
	if !strings.Contains(problems[0].Error(), "rulez") {
		t.Errorf("unknown field not named in %q", problems[0].Error())
	}
}

func TestLoadMissingPath(t *testing.T) {
	if _, _, err := Load(filepath.Join(t.TempDir(), "nope")); err == nil {
		t.Error("a missing path loaded without error")
	}
}

func TestLoadReportsDuplicates(t *testing.T) {
	dir := t.TempDir()
	route := "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: r, namespace: default}\nspec: {hostnames: [%s]}\n"
	write(t, dir, "a.yaml", fmt.Sprintf(route, "a.example.com"))
	b := write(t, dir, "b.yaml", fmt.Sprintf(route, "b.example.com"))
	res, problems, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.HTTPRoutes) != 1 || res.HTTPRoutes[0].Spec.Hostnames[0] != "a.example.com" {
		t.Errorf("the first definition (file order) must win: %+v", res.HTTPRoutes)
	}
	if len(problems) != 1 || problems[0].File != b || !strings.Contains(problems[0].Error(), "also defined in") {
		t.Errorf("problems = %v, want one naming the second file", problems)
	}
}

func TestLoadSkipsNonRegularFiles(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe.yaml"), 0o644); err != nil {
		t.Skip("no mkfifo here:", err)
	}
	write(t, dir, "ok.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: ns}\n")
	done := make(chan struct{})
	go func() {
		defer close(done)
		res, problems, err := Load(dir)
		if err != nil || len(problems) != 0 || len(res.Namespaces) != 1 {
			t.Errorf("Load = %v, %v, %v; want the one namespace and no problem", res, problems, err)
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Load blocked on a named pipe")
	}
}

func TestErrorNamesDocumentLine(t *testing.T) {
	dir := t.TempDir()
	p := write(t, dir, "x.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\n# broken\nkind: [\n")
	_, problems, _ := Load(p)
	if len(problems) != 1 || problems[0].Object != "document 2 (line 5)" {
		t.Errorf("problems = %v, want document 2 (line 5)", problems)
	}
}

func TestLoaderKeepsLastGoodAndFirstSeen(t *testing.T) {
	dir := t.TempDir()
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := &Loader{Now: func() time.Time { return clock }}
	two := "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: b}\n"
	p := write(t, dir, "ns.yaml", two)
	r, err := l.Load(dir)
	if err != nil || len(r.Resources.Namespaces) != 2 {
		t.Fatalf("first load: %v %v", r, err)
	}
	// b breaks: it is kept from the last clean read; a new object c gets
	// a later first-seen time than a.
	clock = clock.Add(time.Hour)
	write(t, dir, "ns.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\nkind: [\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: c}\n")
	r, err = l.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]time.Time{}
	for _, ns := range r.Resources.Namespaces {
		names[ns.Name] = ns.CreationTimestamp.Time
	}
	if _, ok := names["b"]; !ok || len(r.Kept[p]) != 1 || r.Kept[p][0] != "Namespace b" {
		t.Errorf("b was not kept from the last good read: %v, kept %v", names, r.Kept)
	}
	if !names["c"].After(names["a"]) {
		t.Errorf("first-seen times: a %s, c %s; c must be later", names["a"], names["c"])
	}
	// Fixed file: b is gone for real now.
	write(t, dir, "ns.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n")
	r, _ = l.Load(dir)
	if len(r.Resources.Namespaces) != 1 || len(r.Kept) != 0 {
		t.Errorf("after a clean read only a remains: %+v", r.Resources.Namespaces)
	}
}

// TestLoaderDecodesOnlyChangedFiles: a file whose bytes did not change
// gives the very objects of the last read (it was not decoded again); a
// changed file gives new ones; a file that is removed and written again
// with the same bytes gives new objects with a new first-seen time.
func TestLoaderDecodesOnlyChangedFiles(t *testing.T) {
	dir := t.TempDir()
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := &Loader{Now: func() time.Time { return clock }}
	a := "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n"
	write(t, dir, "a.yaml", a)
	pb := write(t, dir, "b.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: b}\n")
	byName := func() map[string]*corev1.Namespace {
		t.Helper()
		r, err := l.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]*corev1.Namespace{}
		for _, ns := range r.Resources.Namespaces {
			m[ns.Name] = ns
		}
		return m
	}
	first := byName()
	write(t, dir, "b.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: b, labels: {x: z}}\n")
	second := byName()
	if first["a"] != second["a"] {
		t.Error("the unchanged file a.yaml was decoded again")
	}
	if first["b"] == second["b"] || second["b"].Labels["x"] != "z" {
		t.Errorf("the changed file b.yaml was not decoded again: %+v", second["b"])
	}
	if err := os.Remove(pb); err != nil {
		t.Fatal(err)
	}
	if third := byName(); len(third) != 1 {
		t.Fatalf("after removing b.yaml: %v", third)
	}
	clock = clock.Add(time.Hour)
	write(t, dir, "b.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: b, labels: {x: z}}\n")
	fourth := byName()
	if fourth["b"] == second["b"] || !fourth["b"].CreationTimestamp.Time.Equal(clock) {
		t.Errorf("b.yaml written again: object reused or first-seen %s, want %s", fourth["b"].CreationTimestamp, clock)
	}
}

// TestLoaderKeepsV1beta1ObjectsToo: an unchanged file of v1beta1 objects
// (stored as v1) gives the very same objects on the next read, as v1
// files do, so that translate.Cache sees them unchanged.
func TestLoaderKeepsV1beta1ObjectsToo(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "grant.yaml", "apiVersion: gateway.networking.k8s.io/v1beta1\nkind: ReferenceGrant\nmetadata: {name: g, namespace: backends}\n"+
		"spec: {from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: default}], to: [{group: '', kind: Service}]}\n")
	l := &Loader{}
	var got []*gwapiv1.ReferenceGrant
	for range 2 {
		r, err := l.Load(dir)
		if err != nil || len(r.Resources.ReferenceGrants) != 1 {
			t.Fatalf("Load = %+v, %v; want one ReferenceGrant", r, err)
		}
		got = append(got, r.Resources.ReferenceGrants[0])
	}
	if got[0] != got[1] {
		t.Error("the unchanged v1beta1 ReferenceGrant is a new object on the second read")
	}
}

// TestLoaderNumbersGenerations: like the API server, a Loader gives an
// object generation 1 and one more for every change outside its metadata
// and status; a generation the document sets is kept.
func TestLoaderNumbersGenerations(t *testing.T) {
	dir := t.TempDir()
	l := &Loader{}
	route := func(path, labels string) string {
		return "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: r, namespace: default" + labels + "}\n" +
			"spec:\n  parentRefs: [{name: gw}]\n  rules: [{matches: [{path: {type: PathPrefix, value: " + path + "}}]}]\n"
	}
	gen := func() int64 {
		t.Helper()
		r, err := l.Load(dir)
		if err != nil || len(r.Resources.HTTPRoutes) != 1 {
			t.Fatalf("load: %v %v", r, err)
		}
		return r.Resources.HTTPRoutes[0].Generation
	}
	for _, step := range []struct {
		what, doc string
		want      int64
	}{
		{"new", route("/a", ""), 1},
		{"the same again", route("/a", ""), 1},
		{"spec changed", route("/b", ""), 2},
		{"labels changed", route("/b", ", labels: {team: blue}"), 2},
		{"spec changed again", route("/c", ", labels: {team: blue}"), 3},
		{"generation set", route("/c", ", generation: 7"), 7},
	} {
		write(t, dir, "r.yaml", step.doc)
		if got := gen(); got != step.want {
			t.Errorf("%s: generation %d, want %d", step.what, got, step.want)
		}
	}
	// Gone, then back: a new object.
	if err := os.Remove(filepath.Join(dir, "r.yaml")); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Load(dir); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "r.yaml", route("/c", ""))
	if got := gen(); got != 1 {
		t.Errorf("re-created: generation %d, want 1", got)
	}
}

// The loader reads XBackends (gateway.networking.x-k8s.io) and Pods, the
// inputs of XBackend backendRefs.
func TestLoadXBackendAndPod(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "x.yaml", `apiVersion: gateway.networking.x-k8s.io/v1alpha1
kind: XBackend
metadata: {name: ext}
spec:
  type: ExternalHostname
  port: {number: 443}
  externalHostname: {hostname: api.example.com}
  tls:
    mode: ServerOnly
    validation: {hostname: api.example.com, wellKnownCACertificates: System}
---
apiVersion: v1
kind: Pod
metadata: {name: p, labels: {app: a}}
status: {podIP: 10.0.0.7}
`)
	res, problems, err := Load(dir)
	if err != nil || len(problems) != 0 {
		t.Fatalf("Load: %v %v", err, problems)
	}
	if len(res.XBackends) != 1 || res.XBackends[0].Namespace != "default" || res.XBackends[0].Spec.ExternalHostname == nil ||
		res.XBackends[0].Spec.ExternalHostname.Hostname != "api.example.com" || res.XBackends[0].Spec.TLS.Mode != "ServerOnly" {
		t.Errorf("XBackends = %+v", res.XBackends)
	}
	if len(res.Pods) != 1 || res.Pods[0].Status.PodIP != "10.0.0.7" || res.Pods[0].Labels["app"] != "a" {
		t.Errorf("Pods = %+v", res.Pods)
	}
}
