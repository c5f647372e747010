package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// churnSteadyYAML is the Gateway's steady part: 20 HTTPRoutes
// steady-<i>.example.com to the Service steady, and the Services a and b
// the churned routes use.
const churnSteadyYAML = `{{range .Steady}}---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: steady-{{.}}, namespace: default}
spec:
  parentRefs: [{name: gw}]
  hostnames: [steady-{{.}}.example.com]
  rules:
  - backendRefs: [{name: steady, port: 80}]
{{end}}`

// churnRouteYAML is one churned HTTPRoute: hostname churn-<N>.example.com,
// a path match and a backend that edits change.
const churnRouteYAML = `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: churn-{{.N}}, namespace: default}
spec:
  parentRefs: [{name: gw}]
  hostnames: [churn-{{.N}}.example.com]
  rules:
  - matches: [{path: {type: PathPrefix, value: {{.Path}}}}]
    backendRefs: [{name: {{.Backend}}, port: 80}]
`

// TestStandaloneChurnLosesNothing: while HTTPRoutes are added, edited
// (path and backend, so clusters come and go) and deleted ten times a
// second, two keep-alive clients sending requests to 20 unchanged routes
// get 200 from the right backend for every request: no 404 or 503 from a
// route, cluster or endpoint that churn made disappear for a moment.
func TestStandaloneChurnLosesNothing(t *testing.T) {
	steady, a, b := backend(t, "steady"), backend(t, "a"), backend(t, "b")
	var steadyHosts []int
	for i := range 20 {
		steadyHosts = append(steadyHosts, i)
	}
	f := startWith(t, func(f *fixture) {
		render(t, filepath.Join(f.dir, "gateway.yaml"), gatewayYAML, map[string]any{
			"GatewayPort": f.gwPort,
			"Backends":    []gatewayBackend{{Name: "steady", Port: portOf(steady)}, {Name: "a", Port: portOf(a)}, {Name: "b", Port: portOf(b)}},
		})
		render(t, filepath.Join(f.dir, "steady.yaml"), churnSteadyYAML, map[string]any{"Steady": steadyHosts})
	})
	f.await("steady-19.example.com", "/", 200, "steady /")

	const churnFor = 8 * time.Second
	stop := make(chan struct{})
	var sent, failed atomic.Int64
	var firstFailure atomic.Value
	var wg sync.WaitGroup
	for c := range 2 {
		wg.Go(func() {
			client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			defer client.CloseIdleConnections()
			for i := c; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				host := fmt.Sprintf("steady-%d.example.com", i%len(steadyHosts))
				req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/r%d", f.gwPort, i), nil)
				req.Host = host
				sent.Add(1)
				resp, err := client.Do(req)
				if err != nil {
					failed.Add(1)
					firstFailure.CompareAndSwap(nil, fmt.Sprintf("%s: %v", host, err))
					continue
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || !strings.HasPrefix(string(body), "steady ") {
					failed.Add(1)
					firstFailure.CompareAndSwap(nil, fmt.Sprintf("%s: %d %q", host, resp.StatusCode, body))
				}
				time.Sleep(2 * time.Millisecond)
			}
		})
	}

	// Churn: add, edit, delete, ten changes a second.
	changes := 0
	live := map[int]bool{}
	deadline := time.Now().Add(churnFor)
	for n := 0; time.Now().Before(deadline); n++ {
		k := n % 7
		path := filepath.Join(f.dir, fmt.Sprintf("churn-%d.yaml", k))
		switch {
		case !live[k]:
			render(t, path, churnRouteYAML, map[string]any{"N": k, "Path": "/", "Backend": "a"})
			live[k] = true
		case n%3 == 0:
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			live[k] = false
		default:
			backend := []string{"a", "b"}[n%2]
			render(t, path, churnRouteYAML, map[string]any{"N": k, "Path": fmt.Sprintf("/v%d", n), "Backend": backend})
		}
		changes++
		time.Sleep(100 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	t.Logf("%d route changes in %s; steady routes: %d requests sent, %d failed", changes, churnFor, sent.Load(), failed.Load())
	if failed.Load() > 0 {
		t.Errorf("%d of %d requests to unchanged routes failed during churn; first: %v", failed.Load(), sent.Load(), firstFailure.Load())
	}
	if sent.Load() < 100 {
		t.Errorf("only %d requests were sent; the test proves nothing", sent.Load())
	}
}
