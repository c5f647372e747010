package e2e

// ListenerSet end to end: the listeners of a ListenerSet that its Gateway
// admits are served by the Gateway's Envoy, on a port of their own and on
// the Gateway's port beside the Gateway's own listener, and routes reach
// them through a ListenerSet parentRef.

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// listenerSetYAML: Gateway gw (127.0.0.1) with an HTTP listener for
// gw.example.com on GatewayPort that admits ListenerSets of its namespace;
// ListenerSet "extra" adds an HTTP listener for set.example.com on the
// same port and one on SetPort. HTTPRoute gw-route (parentRef the Gateway)
// goes to alpha, set-route (parentRef the ListenerSet) to beta.
const listenerSetYAML = `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: e2e}
spec: {controllerName: xds-controller.dev/gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: default}
spec:
  gatewayClassName: e2e
  addresses: [{type: IPAddress, value: 127.0.0.1}]
  allowedListeners: {namespaces: {from: Same}}
  listeners:
  - {name: http, protocol: HTTP, port: {{.GatewayPort}}, hostname: gw.example.com}
---
apiVersion: gateway.networking.k8s.io/v1
kind: ListenerSet
metadata: {name: extra, namespace: default}
spec:
  parentRef: {name: gw}
  listeners:
  - {name: http, protocol: HTTP, port: {{.GatewayPort}}, hostname: set.example.com}
  - {name: own-port, protocol: HTTP, port: {{.SetPort}}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: gw-route, namespace: default}
spec:
  parentRefs: [{name: gw}]
  rules: [{backendRefs: [{name: alpha, port: 80}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: set-route, namespace: default}
spec:
  parentRefs: [{group: gateway.networking.k8s.io, kind: ListenerSet, name: extra}]
  rules: [{backendRefs: [{name: beta, port: 80}]}]
{{range .Backends}}---
apiVersion: v1
kind: Service
metadata: {name: {{.Name}}, namespace: default}
spec:
  ports: [{name: http, port: 80, targetPort: {{.Port}}}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: {{.Name}}-1
  namespace: default
  labels: {kubernetes.io/service-name: {{.Name}}}
addressType: IPv4
ports: [{name: http, port: {{.Port}}}]
endpoints: [{addresses: ["127.0.0.1"]}]
{{end}}`

func TestListenerSetTraffic(t *testing.T) {
	setPort := freePort(t)
	f := startWith(t, func(f *fixture) {
		alpha, beta := backend(t, "alpha"), backend(t, "beta")
		render(t, filepath.Join(f.dir, "gateway.yaml"), listenerSetYAML, map[string]any{
			"GatewayPort": f.gwPort,
			"SetPort":     setPort,
			"Backends":    []gatewayBackend{{Name: "alpha", Port: portOf(alpha)}, {Name: "beta", Port: portOf(beta)}},
		})
	})
	get := func(port int, host, path string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d%s", port, path), nil)
		req.Host = host
		resp, err := f.client.Do(req)
		if err != nil {
			return -1, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	took := poll(t, "the ListenerSet's own port", func() error {
		if code, body := get(setPort, "any.example.com", "/own"); code != 200 || !strings.HasPrefix(body, "beta /own") {
			return fmt.Errorf("%d %q", code, body)
		}
		return nil
	})
	t.Logf("the ListenerSet's listener answered %s after start", took.Round(time.Millisecond))

	for _, c := range []struct {
		name       string
		port       int
		host, path string
		status     int
		body       string
	}{
		{"the Gateway's listener serves the Gateway's route", f.gwPort, "gw.example.com", "/g", 200, "alpha /g"},
		{"the set's listener on the Gateway's port serves the set's route", f.gwPort, "set.example.com", "/s", 200, "beta /s"},
		{"no listener for another host", f.gwPort, "other.example.com", "/", 404, ""},
		{"the set's own port serves the set's route only", setPort, "gw.example.com", "/o", 200, "beta /o"},
	} {
		if code, body := get(c.port, c.host, c.path); code != c.status || !strings.HasPrefix(body, c.body) {
			t.Errorf("%s: %s:%d%s = %d %q, want %d %q...", c.name, c.host, c.port, c.path, code, body, c.status, c.body)
		}
	}
	out := f.out.String()
	for _, want := range []string{
		"ListenerSet default/extra: Accepted=True(Accepted)",
		"HTTPRoute default/set-route -> ListenerSet default/extra: Accepted=True(Accepted)",
		"HTTPRoute default/gw-route -> default/gw: Accepted=True(Accepted)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status output lacks %q", want)
		}
	}
}
