package translate

import (
	"testing"

	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"google.golang.org/protobuf/proto"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/provider/file"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

const edsInput = `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: c}
spec: {controllerName: xds-controller.dev/gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: default}
spec:
  gatewayClassName: c
  listeners: [{name: http, protocol: HTTP, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: web, namespace: default}
spec:
  parentRefs: [{name: gw}]
  hostnames: [web.example.com]
  rules: [{backendRefs: [{name: web, port: 80}]}]
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec: {ports: [{name: http, port: 80}]}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web-1, namespace: default, labels: {kubernetes.io/service-name: web}}
addressType: IPv4
ports: [{name: http, port: 8080}]
endpoints: [{addresses: [10.0.0.1]}]
`

// TestEndpointChangeIsEDSOnly: when only a Service's endpoints change,
// a Cache's run changes only that Service's ClusterLoadAssignment;
// listeners, route configurations and clusters are equal to the last
// run's (so Envoy is sent only EDS: xdsserver versions resources by
// content).
func TestEndpointChangeIsEDSOnly(t *testing.T) {
	res := &resources.Resources{}
	if problems := file.Decode("eds.yaml", []byte(edsInput), res); len(problems) > 0 {
		t.Fatal(problems[0])
	}
	res.Sort()
	c := NewCache()
	before, err := c.Run(res, gatewayapi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	next := *res
	es := res.EndpointSlices[0].DeepCopy()
	es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.0.0.2"}})
	next.EndpointSlices = []*discoveryv1.EndpointSlice{es}
	after, err := c.Run(&next, gatewayapi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, a := before.XDS["gatewayclass/c"], after.XDS["gatewayclass/c"]
	if a == nil || b == nil || len(a.Endpoints) != 1 {
		t.Fatalf("xDS before %+v, after %+v", b, a)
	}
	for name, pair := range map[string][2][]types.Resource{"listeners": {b.Listeners, a.Listeners}, "routes": {b.Routes, a.Routes}, "clusters": {b.Clusters, a.Clusters}} {
		if len(pair[0]) != len(pair[1]) {
			t.Fatalf("%s: %d, then %d", name, len(pair[0]), len(pair[1]))
		}
		for i := range pair[0] {
			if !proto.Equal(pair[0][i], pair[1][i]) {
				t.Errorf("%s %d changed with the endpoints only", name, i)
			}
		}
	}
	if proto.Equal(b.Endpoints[0], a.Endpoints[0]) {
		t.Error("the ClusterLoadAssignment did not change with the endpoints")
	}
}
