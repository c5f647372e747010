package file

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkLoaderOneFileChanged is standalone mode's read of a large world
// after one small file changed (issue 30 item 4): a folder with a file of
// 20,000 HTTPRoutes over 10,000 Services (and their EndpointSlices), in
// the shape of hack/gen-world.py's, and a file of one HTTPRoute whose path
// changes at each iteration. Reported per Load: time, bytes and
// allocations.
func BenchmarkLoaderOneFileChanged(b *testing.B) {
	dir := b.TempDir()
	var w strings.Builder
	const routes, services = 20000, 10000
	for i := range services {
		fmt.Fprintf(&w, `---
apiVersion: v1
kind: Service
metadata: {name: svc-%d, namespace: default}
spec:
  clusterIP: 10.96.%d.%d
  ports: [{name: http, port: 8080, protocol: TCP}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: svc-%d-1, namespace: default, labels: {kubernetes.io/service-name: svc-%d}}
addressType: IPv4
endpoints: [{addresses: [10.244.%d.%d], conditions: {ready: true}}]
ports: [{name: http, port: 8080, protocol: TCP}]
`, i, i/250, i%250+1, i, i, i/250, i%250+1)
	}
	for i := range routes {
		fmt.Fprintf(&w, `---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: route-%d, namespace: default}
spec:
  parentRefs: [{name: bench}]
  hostnames: [svc-%d.example.com]
  rules:
  - backendRefs: [{name: svc-%d, port: 8080}]
`, i, i, i%services)
	}
	if err := os.WriteFile(filepath.Join(dir, "world.yaml"), []byte(w.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	change := func(i int) {
		route := fmt.Sprintf(`apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: world-change, namespace: default}
spec:
  parentRefs: [{name: bench}]
  rules:
  - matches: [{path: {type: PathPrefix, value: /change-%d}}]
`, i)
		if err := os.WriteFile(filepath.Join(dir, "world-change.yaml"), []byte(route), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	var l Loader
	change(0)
	if _, err := l.Load(dir); err != nil {
		b.Fatal(err)
	}
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		i++
		b.StopTimer()
		change(i)
		b.StartTimer()
		res, err := l.Load(dir)
		if err != nil || len(res.Problems) > 0 {
			b.Fatal(err, res.Problems)
		}
	}
}
