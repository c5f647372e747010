package file

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
