package e2ecluster

// BackendPolicy (gateway.xds-controller.dev/v1alpha1,
// docs/traffic-policy.md) on the local cluster, in both modes: two echo
// replicas behind four Services, one per policy (none, outlier detection,
// active health checks, ring hash), one replica's container killed under
// load.

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"text/template"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestBackendPolicyOnTheLocalCluster installs the chart in Shared and in
// Dedicated mode with the Deployment pool (two echo-basic replicas) and
// the Services and BackendPolicies of backendYAML: ring hash on x-user
// keeps a user on one replica over 20 requests (on fresh connections,
// whichever Envoy replica takes them) while users spread over both; then
// one replica's container is killed (SIGKILL, as a crash) 2 s into 8 s of
// load (50 requests a second on each of /plain, /passive and /active),
// and killed again each time the kubelet restarts it until the load
// ends. The Services publish not-ready addresses, so the dead replica
// stays in their endpoints: only a policy keeps requests away from it.
// The Service without a policy must lose at least 50 requests (else the
// outage did not happen), and those with outlier detection and with
// active health checks less than a quarter of that. The kill reaches the
// container's process from the node (the test runs as root on it, as
// make e2e does).
func TestBackendPolicyOnTheLocalCluster(t *testing.T) {
	inBothModes(t, func(e *env, mode string) { e.backendPolicy(e.installExamples(mode)) })
}

// backendYAML: Deployment pool (2 replicas of echo-basic; a readiness
// probe every 2 s) behind the Services (each with
// publishNotReadyAddresses, so that a crashed replica keeps its endpoint)
// pool-plain (no policy),
// pool-passive (outlier detection: 3 failures in a row eject), pool-active
// (HTTP probes of /health every 200 ms, one failure makes unhealthy) and
// pool-hash (RingHash on header x-user), routed from pool.example.com on
// Gateway web by path: /plain, /passive, /active, /hash.
const backendYAML = `apiVersion: apps/v1
kind: Deployment
metadata: {name: pool, namespace: xds-example, labels: {app: pool}}
spec:
  replicas: 2
  selector: {matchLabels: {app: pool}}
  template:
    metadata: {labels: {app: pool}}
    spec:
      containers:
      - name: echo
        image: registry.k8s.io/gateway-api/echo-basic:v1.6.0-dev.3
        imagePullPolicy: IfNotPresent
        env:
        - name: POD_NAME
          valueFrom: {fieldRef: {fieldPath: metadata.name}}
        - name: NAMESPACE
          valueFrom: {fieldRef: {fieldPath: metadata.namespace}}
        ports: [{name: http, containerPort: 3000}]
        readinessProbe: {httpGet: {path: /health, port: 3000}, periodSeconds: 2}
        resources: {requests: {cpu: 10m, memory: 16Mi}}
{{range .}}---
apiVersion: v1
kind: Service
metadata: {name: pool-{{.}}, namespace: xds-example}
spec:
  selector: {app: pool}
  publishNotReadyAddresses: true
  ports: [{name: http, port: 80, targetPort: http}]
{{end}}---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: pool, namespace: xds-example}
spec:
  parentRefs: [{name: web}]
  hostnames: [pool.example.com]
  rules:
{{range .}}  - matches: [{path: {type: PathPrefix, value: /{{.}}}}]
    backendRefs: [{name: pool-{{.}}, port: 80}]
{{end}}---
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: BackendPolicy
metadata: {name: passive, namespace: xds-example}
spec:
  targetRefs: [{group: "", kind: Service, name: pool-passive}]
  healthCheck:
    passive: {consecutive5xxErrors: 3, interval: 1s, baseEjectionTime: 30s}
---
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: BackendPolicy
metadata: {name: active, namespace: xds-example}
spec:
  targetRefs: [{group: "", kind: Service, name: pool-active}]
  healthCheck:
    active:
      type: HTTP
      interval: 200ms
      timeout: 150ms
      unhealthyThreshold: 1
      http: {path: /health}
---
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: BackendPolicy
metadata: {name: hash, namespace: xds-example}
spec:
  targetRefs: [{group: "", kind: Service, name: pool-hash}]
  loadBalancer:
    type: RingHash
    hashKey: {type: Header, header: {name: x-user}}
`

// poolServices are the Services of backendYAML, by the path that reaches each.
var poolServices = []string{"plain", "passive", "active", "hash"}

// backendYAMLText is backendYAML with its four Services.
func backendYAMLText() string {
	var b strings.Builder
	if err := template.Must(template.New("backend").Parse(backendYAML)).Execute(&b, poolServices); err != nil {
		panic(err)
	}
	return b.String()
}

// backendPolicy is the scenario of TestBackendPolicyOnTheLocalCluster,
// through Gateway web at address web.
func (e *env) backendPolicy(web string) {
	e.mustKubectl(backendYAMLText(), "apply", "-f", "-")
	e.mustKubectl("", "-n", exampleNamespace, "rollout", "status", "deploy/pool", "--timeout=120s")
	for _, p := range []string{"passive", "active", "hash"} {
		e.policyAccepted("backendpolicy", p, "web")
	}
	const host = "pool.example.com"
	// Every path reaches both replicas (Envoy has both endpoints of each
	// Service; the hash path with users of their own).
	for _, s := range poolServices {
		e.eventually("/"+s+" reaches both pool replicas", 2*time.Minute, func() error {
			seen := map[string]bool{}
			for i := range 16 {
				pod, err := e.poolGet(web, host, "/"+s, "spread-"+strconv.Itoa(i))
				if err != nil {
					return err
				}
				seen[pod] = true
			}
			if len(seen) != 2 {
				return fmt.Errorf("16 requests reached %v", seen)
			}
			return nil
		})
	}
	e.ringHash(web, host)
	e.failover(web, host)
}

// poolGet sends GET path to host with x-user user and returns the pool
// pod that answered.
func (e *env) poolGet(web, host, path, user string) (string, error) {
	status, body, _, err := e.do(e.http, http.MethodGet, web, host, path, http.Header{"X-User": {user}}, nil)
	if err != nil {
		return "", err
	}
	if status != http.StatusOK {
		return "", fmt.Errorf("status %d %.100q", status, body)
	}
	r, err := decodeEcho(body)
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(r.Pod, "pool-") {
		return "", fmt.Errorf("answered by %s", r.Pod)
	}
	return r.Pod, nil
}

// ringHash checks pool-hash's RingHash: 20 requests of one user, each on a
// new connection (either Envoy replica), reach one pool replica; 16 users
// reach both.
func (e *env) ringHash(web, host string) {
	t := e.t
	for _, u := range []string{"alice", "bob"} {
		seen := map[string]int{}
		for range 20 {
			pod, err := e.poolGet(web, host, "/hash", u)
			if err != nil {
				t.Fatalf("ring hash, user %s: %v", u, err)
			}
			seen[pod]++
		}
		if len(seen) != 1 {
			t.Fatalf("ring hash: user %s's 20 requests reached %v, want one replica", u, seen)
		}
		t.Logf("ring hash on x-user: %s's 20 requests all reached %v", u, seen)
	}
	users := map[string]int{}
	for i := range 16 {
		pod, err := e.poolGet(web, host, "/hash", "user-"+strconv.Itoa(i))
		if err != nil {
			t.Fatal(err)
		}
		users[pod]++
	}
	if len(users) != 2 {
		t.Fatalf("ring hash: 16 users reached %v, want both replicas", users)
	}
	t.Logf("ring hash on x-user: 16 users spread %v", users)
}

// failover kills one pool replica's container 2 s into 8 s of load of 50
// requests a second on each of /plain, /passive and /active, kills it
// again whenever the kubelet restarts it until the load ends, and prints
// each path's failed requests (an error or a status other than 200) and
// when they happened after the first kill. The Services publish not-ready
// addresses, so the replica's endpoint stays through the outage: /plain
// keeps sending it about half its requests, outlier detection ejects it
// after 3 failures in a row on each Envoy, and active health checks after
// one failed probe (every 200 ms).
func (e *env) failover(web, host string) {
	t := e.t
	ctx := context.Background()
	pods, err := e.kube.CoreV1().Pods(exampleNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=pool"})
	if err != nil || len(pods.Items) != 2 {
		t.Fatalf("pool pods: %v (%d)", err, len(pods.Items))
	}
	victim := pods.Items[0].Name
	const rate, length, killAt = 50, 8 * time.Second, 2 * time.Second
	type result struct {
		sent, failed int
		at           []time.Time // each failure's time
		first        string
	}
	results := make([]*result, 3)
	start := time.Now()
	var wg sync.WaitGroup
	for i, s := range []string{"plain", "passive", "active"} {
		res := &result{}
		results[i] = res
		var mu sync.Mutex
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(time.Second / rate)
			defer tick.Stop()
			var reqs sync.WaitGroup
			for n := 0; n < int(length.Seconds())*rate; n++ {
				<-tick.C
				reqs.Add(1)
				go func() {
					defer reqs.Done()
					_, err := e.poolGet(web, host, "/"+s, "")
					mu.Lock()
					defer mu.Unlock()
					res.sent++
					if err != nil {
						res.failed++
						res.at = append(res.at, time.Now())
						if res.first == "" {
							res.first = err.Error()
						}
					}
				}()
			}
			reqs.Wait()
		}()
	}
	time.Sleep(killAt)
	killed := time.Now()
	kills, err := killPodUntil(victim, start.Add(length))
	if err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	t.Logf("failover: pool replica %s's container killed %s into %s of %d requests a second per path, %d times (each restart by the kubelet)", victim, killed.Sub(start).Round(time.Millisecond), length, rate, kills)
	for i, s := range []string{"plain", "passive", "active"} {
		r := results[i]
		span := ""
		if len(r.at) > 0 {
			sort.Slice(r.at, func(a, b int) bool { return r.at[a].Before(r.at[b]) })
			span = fmt.Sprintf(", from %s to %s after the kill (first: %.100s)", r.at[0].Sub(killed).Round(time.Millisecond), r.at[len(r.at)-1].Sub(killed).Round(time.Millisecond), r.first)
		}
		t.Logf("  /%s (%s): failed %d of %d%s", s, map[string]string{"plain": "no policy", "passive": "outlier detection", "active": "active health checks"}[s], r.failed, r.sent, span)
	}
	plain, passive, active := results[0].failed, results[1].failed, results[2].failed
	if plain < 50 {
		t.Fatalf("failover: /plain lost %d requests, want at least 50 (half of 6 s at 50 a second reach the dead replica): the outage did not happen", plain)
	}
	if 4*passive >= plain || 4*active >= plain {
		t.Errorf("failed requests: outlier detection %d, active health checks %d, without a policy %d: want each policy's under a quarter of that without", passive, active, plain)
	}
	e.mustKubectl("", "-n", exampleNamespace, "rollout", "status", "deploy/pool", "--timeout=120s")
}

// killPodUntil kills pod's container process (killPodProcess), then
// watches this node's processes every 20 ms until deadline and kills each
// new process of the pod (the kubelet's restart of the container) as it
// appears. It returns how many processes it killed, and an error when
// the first kill failed.
func killPodUntil(pod string, deadline time.Time) (int, error) {
	pid, err := killPodProcess(pod)
	if err != nil {
		return 0, err
	}
	kills := 1
	for time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		if next, err := killPodProcess(pod); err == nil && next != pid {
			pid = next
			kills++
		}
	}
	return kills, nil
}

// killPodProcess sends SIGKILL to the process of this node whose
// environment holds POD_NAME=pod (backendYAML's container sets it) and
// returns its pid: the container dies as in a crash, and the kubelet
// restarts it. It needs root, as the local cluster does; it fails when
// not exactly one such process runs.
func killPodProcess(pod string) (int, error) {
	want := []byte("POD_NAME=" + pod + "\x00")
	envs, _ := filepath.Glob("/proc/[0-9]*/environ")
	var found []int
	for _, f := range envs {
		b, err := os.ReadFile(f)
		if err != nil || !bytes.Contains(b, want) {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(f)))
		if err == nil {
			found = append(found, pid)
		}
	}
	if len(found) != 1 {
		return 0, fmt.Errorf("the process of pod %s: found %v (the test must run as root on the cluster's node)", pod, found)
	}
	return found[0], syscall.Kill(found[0], syscall.SIGKILL)
}
