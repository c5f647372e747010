package e2ecluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
)

// rlsAnswer is what the rate-limit service's HTTP /json (the gRPC
// ShouldRateLimit as JSON) answers for one descriptor.
type rlsAnswer struct {
	status int
	code   string
	limit  int
}

// askRateLimitService asks the service's pod at ip (port 8080, /json)
// about the descriptor (rule, value) of domain. Each call counts as a
// request of that descriptor.
func (e *env) askRateLimitService(ip, domain, value string) (rlsAnswer, error) {
	body := fmt.Sprintf(`{"domain":%q,"descriptors":[{"entries":[{"key":"rule","value":%q}]}]}`, domain, value)
	resp, err := e.http.Post("http://"+net.JoinHostPort(ip, "8080")+"/json", "application/json", strings.NewReader(body))
	if err != nil {
		return rlsAnswer{}, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var r struct {
		Statuses []struct {
			Code         string `json:"code"`
			CurrentLimit *struct {
				RequestsPerUnit int `json:"requestsPerUnit"`
			} `json:"currentLimit"`
		} `json:"statuses"`
	}
	if err := json.NewDecoder(bytes.NewReader(b)).Decode(&r); err != nil || len(r.Statuses) != 1 {
		return rlsAnswer{}, fmt.Errorf("/json: %d %s", resp.StatusCode, b)
	}
	a := rlsAnswer{status: resp.StatusCode, code: r.Statuses[0].Code}
	if r.Statuses[0].CurrentLimit != nil {
		a.limit = r.Statuses[0].CurrentLimit.RequestsPerUnit
	}
	return a, nil
}

// TestRateLimitServiceOnTheLocalCluster: the chart with rateLimit.enabled
// (images of make cluster-ratelimit-images) runs the service's two
// replicas and the chart's Redis, and gives the controller
// --ratelimit-service-address. A domain written into the service's
// ConfigMap (under a key and field manager of the test's own, which the
// controller's server-side apply of its own keys leaves alone) reaches
// both replicas through the kubelet's refresh of the volume (the delay is
// printed); its counter is shared by the replicas (Redis): 3 an hour
// allow 3 of 8 requests sent to both in turn; the key removed, the limit
// is gone.
func TestRateLimitServiceOnTheLocalCluster(t *testing.T) {
	e := setup(t)
	e.cleanup()
	if os.Getenv("E2E_KEEP") == "" {
		t.Cleanup(e.cleanup)
	}
	ctx := context.Background()
	e.helmInstallWith("Shared", map[string]any{"rateLimit": map[string]any{"enabled": true, "replicas": 2}})
	const name = releaseName + "-ratelimit"

	dep, err := e.kube.AppsV1().Deployments(releaseNamespace).Get(ctx, releaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := "--ratelimit-service-address=" + name + "." + releaseNamespace + ".svc:8081"
	if args := dep.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, want) {
		t.Errorf("controller args %v lack %s", args, want)
	}
	pods, err := e.kube.CoreV1().Pods(releaseNamespace).List(ctx, metav1.ListOptions{
		LabelSelector: "app.kubernetes.io/instance=" + releaseName + ",app.kubernetes.io/component=ratelimit"})
	if err != nil {
		t.Fatal(err)
	}
	var ips []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && podReady(&p) {
			if err := allowedAddress(p.Status.PodIP); err != nil {
				t.Fatal(err)
			}
			ips = append(ips, p.Status.PodIP)
		}
	}
	if len(ips) != 2 {
		e.dumpState()
		t.Fatalf("%d ready rate-limit service pods, want 2", len(ips))
	}

	domain := fmt.Sprintf("e2e-%d", time.Now().Unix())
	config := fmt.Sprintf(`domain: %s
descriptors:
- key: rule
  value: probe
  rate_limit: {unit: HOUR, requests_per_unit: 1000000}
- key: rule
  value: counted
  rate_limit: {unit: HOUR, requests_per_unit: 3}
`, domain)
	apply := func(data map[string]string) {
		t.Helper()
		cm := corev1ac.ConfigMap(name, releaseNamespace).WithData(data)
		if _, err := e.kube.CoreV1().ConfigMaps(releaseNamespace).Apply(ctx, cm, metav1.ApplyOptions{FieldManager: "xds-e2e", Force: true}); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	apply(map[string]string{domain + ".yaml": config})
	for _, ip := range ips {
		e.eventually("the service at "+ip+" has the test's domain", 3*time.Minute, func() error {
			a, err := e.askRateLimitService(ip, domain, "probe")
			if err == nil && a.limit != 1000000 {
				err = fmt.Errorf("no limit yet: %+v", a)
			}
			return err
		})
		t.Logf("service pod %s: the domain loaded %s after the ConfigMap was written (the kubelet's refresh of the volume, then the service's reload)", ip, time.Since(start).Round(time.Second))
	}

	allowed, refused := 0, 0
	for i := range 8 {
		a, err := e.askRateLimitService(ips[i%2], domain, "counted")
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case a.code == "OK" && a.status == 200:
			allowed++
		case a.code == "OVER_LIMIT" && a.status == 429:
			refused++
		default:
			t.Errorf("request %d: %+v", i, a)
		}
	}
	t.Logf("3 an hour, 8 requests to both replicas in turn: %d allowed, %d refused", allowed, refused)
	if allowed != 3 || refused != 5 {
		t.Errorf("%d allowed, %d refused: want 3 and 5 (one counter in Redis for both replicas)", allowed, refused)
	}

	start = time.Now()
	apply(nil)
	for _, ip := range ips {
		e.eventually("the service at "+ip+" without the test's domain", 3*time.Minute, func() error {
			a, err := e.askRateLimitService(ip, domain, "probe")
			if err == nil && a.limit != 0 {
				err = fmt.Errorf("limit still there: %+v", a)
			}
			return err
		})
	}
	t.Logf("the domain gone from both replicas %s after its key was removed", time.Since(start).Round(time.Second))
}
