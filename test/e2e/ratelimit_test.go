package e2e

// Global rate limits through the real envoyproxy/ratelimit service, a real
// redis-server and two real Envoys, all on loopback. This test builds the
// IR rules itself (ir.GlobalRateLimits) and runs on them what production
// runs, without a controller (trafficglobal_test.go goes through a
// TrafficPolicy and the controller): the translation functions
// (pkg/xdstranslator/ratelimit.go) for the service's configuration and for
// Envoy's filters, cluster and route actions, and standalone mode's
// serving path (standalone.RateLimitService: the service as a child
// process, its configuration files). The Envoys load those pieces from a
// static bootstrap.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xds-controller/xds-controller/internal/testenvoy"
	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/standalone"
	"github.com/xds-controller/xds-controller/pkg/xdstranslator"
)

// rateLimitBinaries returns the rate-limit service and redis-server that
// `make test` installs ($RATELIMIT, else hack/install-ratelimit.sh's cache;
// $REDIS_SERVER, else redis-server on PATH), or skips the test without
// them (fails it under CI, which must run every test).
func rateLimitBinaries(t *testing.T) (service, redis string) {
	t.Helper()
	service = os.Getenv("RATELIMIT")
	if service == "" {
		_, self, _, _ := runtime.Caller(0)
		if m, _ := filepath.Glob(filepath.Join(filepath.Dir(self), "..", "..", ".cache", "bin", "ratelimit-*")); len(m) > 0 {
			service = m[len(m)-1]
		}
	}
	redis = os.Getenv("REDIS_SERVER")
	if redis == "" {
		redis, _ = exec.LookPath("redis-server")
	}
	if service == "" || redis == "" {
		msg := fmt.Sprintf("no rate-limit service (%q) or redis-server (%q): run hack/install-ratelimit.sh and hack/install-redis.sh (make test does)", service, redis)
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return service, redis
}

// startRedis runs redis-server on a free loopback port, without
// persistence, until the test ends; it returns the address.
func startRedis(t *testing.T, path string) string {
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	host, port, _ := net.SplitHostPort(addr)
	dir := t.TempDir()
	cmd := exec.Command(path, "--bind", host, "--port", port, "--dir", dir, "--save", "", "--appendonly", "no")
	logf, err := os.Create(filepath.Join(dir, "redis.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); logf.Close() })
	waitFor(t, "redis-server answering", 10*time.Second, func() error {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(time.Second))
		if _, err := c.Write([]byte("PING\r\n")); err != nil {
			return err
		}
		b := make([]byte, 7)
		if _, err := io.ReadFull(c, b); err != nil || string(b) != "+PONG\r\n" {
			return fmt.Errorf("PING: %q %v", b, err)
		}
		return nil
	})
	return addr
}

// rateLimitService runs svc (standalone's serving path) until the
// returned stop is called (or the test ends), and waits until the service
// answers its health check and has loaded domain's rule want.
func runRateLimitService(t *testing.T, svc *standalone.RateLimitService, want string) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := svc.Run(ctx, slog.Default()); err != nil {
			t.Errorf("rate-limit service: %v", err)
		}
	}()
	stop = func() { cancel(); <-done }
	t.Cleanup(stop)
	c := &http.Client{Timeout: time.Second}
	waitFor(t, "the rate-limit service healthy with its configuration", 30*time.Second, func() error {
		for _, u := range []string{"http://" + svc.HTTPAddress + "/healthcheck", "http://" + svc.DebugAddress + "/rlconfig"} {
			resp, err := c.Get(u)
			if err != nil {
				return err
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				return fmt.Errorf("%s: %d %s", u, resp.StatusCode, b)
			}
			if strings.HasSuffix(u, "/rlconfig") && !strings.Contains(string(b), want) {
				return fmt.Errorf("%s lacks %q:\n%s", u, want, b)
			}
		}
		return nil
	})
	return stop
}

// rateLimitEnvoy runs an Envoy whose static configuration holds g's
// pieces as the translator renders them: the two ratelimit filters before
// the router, the service's cluster (made STATIC: a bootstrap has no EDS),
// and one route per path of routes to the backend on backendPort, whose
// requests the named rules count. (A route must have a cluster: Envoy's
// ratelimit filter skips direct responses and redirects.) It returns the
// listener's port.
func rateLimitEnvoy(t *testing.T, envoy string, backendPort int, g *ir.GlobalRateLimits, routes map[string][]string) int {
	port, admin := freePort(t), freePort(t)
	vh := &routev3.VirtualHost{Name: "all", Domains: []string{"*"}}
	for path, rules := range routes {
		per, err := xdstranslator.RouteRateLimits(g, rules)
		if err != nil {
			t.Fatal(err)
		}
		vh.Routes = append(vh.Routes, &routev3.Route{
			Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Path{Path: path}},
			Action: &routev3.Route_Route{Route: &routev3.RouteAction{
				ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "backend"},
			}},
			TypedPerFilterConfig: per,
		})
	}
	router, _ := anypb.New(&routerv3.Router{})
	hcm := &hcmv3.HttpConnectionManager{
		StatPrefix:     "e2e",
		RouteSpecifier: &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: &routev3.RouteConfiguration{Name: "e2e", VirtualHosts: []*routev3.VirtualHost{vh}}},
		HttpFilters: []*hcmv3.HttpFilter{
			xdstranslator.RateLimitFilter(g, false), xdstranslator.RateLimitFilter(g, true),
			{Name: "envoy.filters.http.router", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: router}},
		},
	}
	hcmAny, _ := anypb.New(hcm)
	rls, cla := xdstranslator.RateLimitCluster(g)
	rls.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC}
	rls.EdsClusterConfig, rls.LoadAssignment = nil, cla
	addr := func(p int) *corev3.Address {
		return &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
			Address: "127.0.0.1", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: uint32(p)},
		}}}
	}
	be := &clusterv3.Cluster{
		Name: "backend", ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC},
		LoadAssignment: &endpointv3.ClusterLoadAssignment{ClusterName: "backend", Endpoints: []*endpointv3.LocalityLbEndpoints{{
			LbEndpoints: []*endpointv3.LbEndpoint{{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{Address: addr(backendPort)}}}},
		}}},
	}
	bs := &bootstrapv3.Bootstrap{
		Admin: &bootstrapv3.Admin{Address: addr(admin)},
		StaticResources: &bootstrapv3.Bootstrap_StaticResources{
			Clusters: []*clusterv3.Cluster{rls, be},
			Listeners: []*listenerv3.Listener{{
				Name: "e2e", Address: addr(port),
				FilterChains: []*listenerv3.FilterChain{{Filters: []*listenerv3.Filter{{
					Name: "envoy.filters.network.http_connection_manager", ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: hcmAny},
				}}}},
			}},
		},
	}
	b, err := protojson.Marshal(bs)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	boot := filepath.Join(dir, "bootstrap.json")
	if err := os.WriteFile(boot, b, 0o644); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "envoy.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(envoy, "-c", boot, "--disable-hot-restart", "--log-level", "warn")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logf.Close()
		if t.Failed() {
			out, _ := os.ReadFile(logf.Name())
			t.Logf("Envoy on %d:\n%s", port, out)
		}
	})
	waitFor(t, fmt.Sprintf("Envoy on port %d ready", port), 30*time.Second, func() error {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/ready", admin))
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("/ready: %d", resp.StatusCode)
		}
		return nil
	})
	return port
}

// rlGet sends GET path through the Envoy on port with extra headers as
// name, value pairs.
func rlGet(c *http.Client, port int, path string, headers ...string) reply {
	req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d%s", port, path), nil)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return exchange(c, req)
}

// TestGlobalRateLimitSharedByTwoEnvoys: two Envoys share the service's
// counters (N requests through each at once, the limit holds over their
// total), a counter per header value and per client address, and the failure modes with the service
// stopped: a fail-closed rule refuses (500), a fail-open one passes
// requests it would refuse; the counters outlive the service (Redis).
func TestGlobalRateLimitSharedByTwoEnvoys(t *testing.T) {
	envoy := testenvoy.Path(t)
	rlsPath, redisPath := rateLimitBinaries(t)
	redis := startRedis(t, redisPath)
	at := func() string { return fmt.Sprintf("127.0.0.1:%d", freePort(t)) }
	svc := &standalone.RateLimitService{Path: rlsPath, GRPCAddress: at(), HTTPAddress: at(), DebugAddress: at(), Redis: redis, Dir: t.TempDir()}
	// Hour windows: a test never spans two of them but at the full hour.
	const limit, perUser, perClient = 10, 3, 4
	g := &ir.GlobalRateLimits{
		Domain:  "e2e",
		Service: svc.Backend("ratelimit"),
		Rules: []ir.GlobalRateLimitRule{
			{Name: "shared/client", ClientIP: true, Requests: perClient, Unit: ir.RateLimitHour},
			{Name: "shared/closed", Requests: limit, Unit: ir.RateLimitHour},
			{Name: "shared/open", Requests: limit, Unit: ir.RateLimitHour, FailOpen: true},
			{Name: "shared/user", Header: "x-user", Requests: perUser, Unit: ir.RateLimitHour},
		},
	}
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := svc.WriteConfigs(xdstranslator.RateLimitConfig(g)); err != nil {
		t.Fatal(err)
	}
	stop := runRateLimitService(t, svc, "e2e.rule_shared/user.header")
	routes := map[string][]string{"/closed": {"shared/closed"}, "/open": {"shared/open"}, "/user": {"shared/user"}, "/client": {"shared/client"}}
	be := portOf(backend(t, "backend"))
	envoys := []int{rateLimitEnvoy(t, envoy, be, g, routes), rateLimitEnvoy(t, envoy, be, g, routes)}

	// N requests through each Envoy, both at once: the total allowed is
	// the limit (separate counters would allow it through each).
	const n = 15
	count := func(c *http.Client, path string, headers ...string) (ok, limited [2]int, other []string, last reply) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for e := range 2 {
			wg.Go(func() {
				for range n {
					r := rlGet(c, envoys[e], path, headers...)
					mu.Lock()
					switch r.status {
					case 200:
						ok[e]++
					case 429:
						limited[e]++
						last = r
					default:
						other = append(other, fmt.Sprintf("%d %s", r.status, firstLine(r.body)))
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		return ok, limited, other, last
	}
	// from is a client whose connections come from the loopback address
	// ip (the remote_address of a rule with ClientIP).
	from := func(ip string) *http.Client {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
		return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: d.DialContext}}
	}
	c := from("127.0.0.1")
	for _, path := range []string{"/closed", "/open"} {
		ok, limited, other, last := count(c, path)
		t.Logf("%s, limit %d per hour, %d requests through each Envoy: allowed %d+%d=%d, refused (429) %d+%d=%d, other %v",
			path, limit, n, ok[0], ok[1], ok[0]+ok[1], limited[0], limited[1], limited[0]+limited[1], other)
		if ok[0]+ok[1] != limit || len(other) > 0 {
			t.Errorf("%s: allowed %v, other %v: want %d in all", path, ok, other, limit)
		}
		t.Logf("%s: a 429's headers: x-ratelimit-limit %q, x-ratelimit-remaining %q, x-ratelimit-reset %q, retry-after %q", path,
			last.header.Get("x-ratelimit-limit"), last.header.Get("x-ratelimit-remaining"), last.header.Get("x-ratelimit-reset"), last.header.Get("retry-after"))
		if last.header.Get("x-ratelimit-limit") == "" || last.header.Get("x-ratelimit-remaining") != "0" || last.header.Get("retry-after") == "" {
			t.Errorf("%s: a 429 without the rate-limit headers: %v", path, last.header)
		}
	}
	// One counter per header value; requests without the header are not
	// counted.
	for _, user := range []string{"ann", "bob", ""} {
		var h []string
		want := perUser
		if user != "" {
			h = []string{"x-user", user}
		} else {
			want = 2 * n
		}
		ok, limited, other, _ := count(c, "/user", h...)
		t.Logf("/user, x-user %q, limit %d per value: allowed %d, refused %d, other %v", user, perUser, ok[0]+ok[1], limited[0]+limited[1], other)
		if ok[0]+ok[1] != want || len(other) > 0 {
			t.Errorf("/user x-user %q: allowed %v, other %v: want %d", user, ok, other, want)
		}
	}

	// One counter per client address: a client over its limit, another
	// one still passes.
	for _, ip := range []string{"127.0.0.1", "127.0.0.2"} {
		ok, limited, other, _ := count(from(ip), "/client")
		t.Logf("/client from %s, limit %d per client: allowed %d, refused %d, other %v", ip, perClient, ok[0]+ok[1], limited[0]+limited[1], other)
		if ok[0]+ok[1] != perClient || len(other) > 0 {
			t.Errorf("/client from %s: allowed %v, other %v: want %d", ip, ok, other, perClient)
		}
	}

	// The service stopped: the fail-closed rule refuses every request
	// (500), the fail-open one passes those it refused a moment ago.
	stop()
	status := func(path string) map[int]int {
		m := map[int]int{}
		for i := range 2 * n {
			m[rlGet(c, envoys[i%2], path).status]++
		}
		return m
	}
	closed, open := status("/closed"), status("/open")
	t.Logf("service stopped, %d requests each: /closed (fail closed) %v, /open (fail open) %v", 2*n, closed, open)
	if closed[500] != 2*n {
		t.Errorf("/closed with the service stopped: %v, want %d × 500", closed, 2*n)
	}
	if open[200] != 2*n {
		t.Errorf("/open with the service stopped: %v, want %d × 200", open, 2*n)
	}

	// Started again, the service finds the counters in Redis.
	runRateLimitService(t, svc, "e2e.rule_shared/user.header")
	again := status("/closed")
	t.Logf("service started again: /closed %v", again)
	if again[429] != 2*n {
		t.Errorf("/closed after a restart of the service: %v, want %d × 429 (counters kept in Redis)", again, 2*n)
	}
}

// TestStandaloneRunsTheRateLimitService: `serve standalone` with the
// --ratelimit-* flags runs the service and a redis-server, writes the
// scope's domain into the service's folder (which the service loads), and
// stops both when it stops.
func TestStandaloneRunsTheRateLimitService(t *testing.T) {
	rlsPath, redisPath := rateLimitBinaries(t)
	at := func() string { return fmt.Sprintf("127.0.0.1:%d", freePort(t)) }
	grpcAddr, httpAddr, redis := at(), at(), at()
	f := start(t, func(f *fixture) {
		f.noEnvoy = true
		f.args = append(f.args, "--ratelimit-path", rlsPath, "--ratelimit-redis-server-path", redisPath, "--ratelimit-redis", redis,
			"--ratelimit-grpc-address", grpcAddr, "--ratelimit-http-address", httpAddr, "--ratelimit-debug-address", at())
	})
	c := &http.Client{Timeout: time.Second}
	began := time.Now()
	waitFor(t, "the rate-limit service healthy", 30*time.Second, func() error {
		resp, err := c.Get("http://" + httpAddr + "/healthcheck")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("/healthcheck: %d", resp.StatusCode)
		}
		return nil
	})
	t.Logf("service healthy %s after the controller's start", time.Since(began))
	b, err := os.ReadFile(filepath.Join(f.state, "ratelimit", "config", "standalone.yaml"))
	if err != nil || !strings.Contains(string(b), "domain: standalone") {
		t.Fatalf("the scope's domain file: %q %v", b, err)
	}
	if !strings.Contains(f.out.String(), "Rate-limit service: "+rlsPath) {
		t.Errorf("no start line in the controller's output:\n%s", f.out.String())
	}
	began = time.Now()
	f.stop()
	t.Logf("controller stopped in %s", time.Since(began))
	for _, a := range []string{grpcAddr, redis} {
		waitFor(t, a+" closed after the controller stopped", 10*time.Second, func() error {
			if conn, err := net.DialTimeout("tcp", a, time.Second); err == nil {
				conn.Close()
				return fmt.Errorf("still open")
			}
			return nil
		})
	}
}
