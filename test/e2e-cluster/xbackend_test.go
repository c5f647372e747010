package e2ecluster

import (
	"fmt"
	"strings"
	"time"
)

// xBackend is the part of TestExperimentalChannelOnTheLocalCluster that
// routes through an EndpointSelector XBackend: the ready Pods labelled
// app: bar (its two replicas, scaled by experimental), reached at their
// container port without any Service, which the controller finds through
// its Pod cache (the chart's RBAC to list and watch Pods); and XBackend
// status.ancestors names Gateway web, Accepted.
func (e *env) xBackend(web string) {
	t := e.t
	const host = "xbackend.example.com"
	e.mustKubectl(`apiVersion: gateway.networking.x-k8s.io/v1alpha1
kind: XBackend
metadata: {name: bar-pods, namespace: xds-example}
spec:
  type: EndpointSelector
  port: {number: 3000}
  endpointSelector:
    matchLabels: {app: bar}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: xbackend, namespace: xds-example}
spec:
  parentRefs: [{name: web}]
  hostnames: [`+host+`]
  rules:
  - backendRefs: [{group: gateway.networking.x-k8s.io, kind: XBackend, name: bar-pods}]
`, "apply", "-f", "-")
	e.expectBackend(web, host, "/", "bar", 2*time.Minute)
	seen := map[string]int{}
	for i := 0; i < 20; i++ {
		r, err := e.get(web, host, "/")
		if err != nil {
			t.Fatalf("request %d through the XBackend: %v", i+1, err)
		}
		seen[r.Pod]++
	}
	if len(seen) != 2 {
		t.Fatalf("20 requests through the EndpointSelector XBackend reached %v, want both bar Pods", seen)
	}
	e.eventually("XBackend bar-pods Accepted by Gateway web", time.Minute, func() error {
		out, err := e.kubectl("", "-n", exampleNamespace, "get", "xbackend", "bar-pods", "-o",
			`jsonpath={range .status.ancestors[*]}{.ancestorRef.name}={.conditions[?(@.type=="Accepted")].status}{" "}{end}`)
		if err == nil && !strings.Contains(out, "web=True") {
			err = fmt.Errorf("status.ancestors: %q", out)
		}
		return err
	})
	t.Logf("XBackend EndpointSelector app=bar: 20 requests reached %v", seen)
}
