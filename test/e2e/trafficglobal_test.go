package e2e

// TrafficPolicy rateLimit.global through the real controller (standalone
// mode, file input), real Envoys, the real envoyproxy/ratelimit service
// and a real redis-server, all on loopback: two controllers, each with
// its Envoy, serve the same files and write the same domain into the
// service's folder (--ratelimit-config-dir, --ratelimit-grpc-address);
// the limits hold over the total of two clients through both Envoys; with
// the service stopped a fail-closed policy refuses (500) and a fail-open
// one passes; a controller without a service reports the policy
// RateLimitServiceMissing and serves its route without limits. The
// service, Redis and the binaries are ratelimit_test.go's.

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/xds-controller/xds-controller/pkg/standalone"
)

// globalYAML: an HTTPRoute per entry of Routes (host <route>.example.com,
// backend app) and the policies: closed (10 an hour, fail closed) on
// route closed, open (10 an hour, failOpen) on route open, client (4 an
// hour per client address) on route client. Route ready has none.
// {{.Prefix}} is the prefix of the route names the policies target (""
// normally).
const globalYAML = routeEachYAML + `apiVersion: gateway.xds-controller.dev/v1alpha1
kind: TrafficPolicy
metadata: {name: closed, namespace: default}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: {{.Prefix}}closed}]
  rateLimit:
    global:
      rules:
      - {requests: 10, unit: Hour}
---
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: TrafficPolicy
metadata: {name: open, namespace: default}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: {{.Prefix}}open}]
  rateLimit:
    global:
      failOpen: true
      rules:
      - {requests: 10, unit: Hour}
---
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: TrafficPolicy
metadata: {name: client, namespace: default}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: {{.Prefix}}client}]
  rateLimit:
    global:
      rules:
      - {requests: 4, unit: Hour, by: ClientIP}
`

// TestTrafficPolicyGlobalRateLimit: see the file's comment. With
// XDS_E2E_PROTECTION_REMOVED=1 the policies target no route, and the test
// must fail.
func TestTrafficPolicyGlobalRateLimit(t *testing.T) {
	rlsPath, redisPath := rateLimitBinaries(t)
	redis := startRedis(t, redisPath)
	at := func() string { return fmt.Sprintf("127.0.0.1:%d", freePort(t)) }
	svc := &standalone.RateLimitService{Path: rlsPath, GRPCAddress: at(), HTTPAddress: at(), DebugAddress: at(), Redis: redis, Dir: t.TempDir()}
	app := backend(t, "app")
	prefix := ""
	removed := os.Getenv("XDS_E2E_PROTECTION_REMOVED") == "1"
	if removed {
		prefix = "elsewhere-"
	}
	controller := func(flags ...string) *fixture {
		return startWith(t, func(f *fixture) {
			render(t, filepath.Join(f.dir, "gateway.yaml"), gatewayYAML, map[string]any{
				"GatewayPort": f.gwPort, "Backends": []gatewayBackend{{Name: "app", Port: portOf(app)}},
			})
			render(t, filepath.Join(f.dir, "global.yaml"), globalYAML, map[string]any{
				"Routes": []string{"ready", "closed", "open", "client"}, "Prefix": prefix,
			})
		}, func(f *fixture) { f.args = append(f.args, flags...) })
	}
	began := time.Now()
	withService := []string{"--ratelimit-config-dir", svc.Dir, "--ratelimit-grpc-address", svc.GRPCAddress}
	envoys := []*fixture{controller(withService...), controller(withService...)}
	none := controller()
	t.Logf("three controllers started (the binary built first) after %s", time.Since(began).Round(time.Millisecond))
	status := func(f *fixture, policy, cond string) {
		if !removed {
			f.waitOutput(policy+" status", 0, regexp.MustCompile(regexp.QuoteMeta("TrafficPolicy default/"+policy+" -> default/gw: "+cond)), 30*time.Second)
		}
	}
	for _, f := range envoys {
		for _, p := range []string{"closed", "open", "client"} {
			status(f, p, "Accepted=True(Accepted)")
		}
	}
	status(none, "closed", "Accepted=False(RateLimitServiceMissing)")
	t.Logf("statuses after %s", time.Since(began).Round(time.Millisecond))
	loaded := "standalone.rule_default/client/0.remote_address" // the deepest entry of the last rule
	if removed {
		loaded = "" // no route, no rule
	}
	stop := runRateLimitService(t, svc, loaded)
	t.Logf("service after %s", time.Since(began).Round(time.Millisecond))
	from := func(ip string) *http.Client {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
		return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: d.DialContext}}
	}
	c1, c2 := from("127.0.0.1"), from("127.0.0.2")
	get := func(c *http.Client, f *fixture, host string) reply {
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/", f.gwPort), nil)
		req.Host = host + ".example.com"
		return exchange(c, req)
	}
	for _, f := range append([]*fixture{none}, envoys...) {
		poll(t, "route ready served", func() error {
			if r := get(c1, f, "ready"); r.status != 200 {
				return fmt.Errorf("ready.example.com on %d: %d %q", f.gwPort, r.status, r.body)
			}
			return nil
		})
	}
	t.Logf("three controllers, their Envoys and the service ready in %s", time.Since(began).Round(time.Millisecond))

	// n requests of each client through each Envoy, all at once: the
	// answers by status, and a 429.
	const n = 8
	burst := func(host string, clients ...*http.Client) (map[int]int, reply) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		got, limited := map[int]int{}, reply{}
		for _, f := range envoys {
			for _, c := range clients {
				wg.Go(func() {
					for range n {
						r := get(c, f, host)
						mu.Lock()
						if got[r.status]++; r.status == 429 {
							limited = r
						}
						mu.Unlock()
					}
				})
			}
		}
		wg.Wait()
		return got, limited
	}
	for _, host := range []string{"closed", "open"} {
		got, limited := burst(host, c1, c2)
		t.Logf("%s, 10 an hour: %d requests (2 clients x 2 Envoys x %d): %v; a 429's x-ratelimit-limit %q, x-ratelimit-remaining %q, retry-after %q",
			host, 4*n, n, got, limited.header.Get("x-ratelimit-limit"), limited.header.Get("x-ratelimit-remaining"), limited.header.Get("retry-after"))
		if got[200] != 10 || got[429] != 4*n-10 {
			t.Errorf("%s: %v; want 10 × 200 over both clients and both Envoys, the rest 429", host, got)
		}
		if got[429] > 0 && (limited.header.Get("x-ratelimit-limit") == "" || limited.header.Get("retry-after") == "") {
			t.Errorf("%s: a 429 without the rate-limit headers: %v", host, limited.header)
		}
	}
	// A counter per client address: each gets its 4 through both Envoys.
	for _, c := range []struct {
		ip     string
		client *http.Client
	}{{"127.0.0.1", c1}, {"127.0.0.2", c2}} {
		got, _ := burst("client", c.client)
		t.Logf("client, 4 an hour per client address, from %s: %d requests through 2 Envoys: %v", c.ip, 2*n, got)
		if got[200] != 4 || got[429] != 2*n-4 {
			t.Errorf("client from %s: %v; want 4 × 200, the rest 429", c.ip, got)
		}
	}
	// The controller without a service serves the route without limits.
	unlimited := map[int]int{}
	for range 4 * n {
		unlimited[get(c1, none, "closed").status]++
	}
	t.Logf("closed through the controller without a service (RateLimitServiceMissing): %d requests: %v", 4*n, unlimited)
	if unlimited[200] != 4*n {
		t.Errorf("closed without a service: %v; want every request served", unlimited)
	}

	// The service stopped: fail closed refuses every request with 500,
	// fail open lets through the requests it refused a moment ago.
	stop()
	closed, _ := burst("closed", c1)
	open, _ := burst("open", c1)
	t.Logf("service stopped, %d requests each: closed (fail closed) %v, open (fail open) %v", 2*n, closed, open)
	if closed[500] != 2*n {
		t.Errorf("closed with the service stopped: %v; want %d × 500", closed, 2*n)
	}
	if open[200] != 2*n {
		t.Errorf("open with the service stopped: %v; want %d × 200", open, 2*n)
	}
}
