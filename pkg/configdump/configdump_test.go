package configdump

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	apikeyauthv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/api_key_auth/v3"
	basicauthv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/basic_auth/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/xds-controller/xds-controller/pkg/xdstranslator"
)

const privateKey = "-----BEGIN PRIVATE KEY-----\nsecret-key-material\n-----END PRIVATE KEY-----\n"

// snapshot is a small scope: one of each type.
func snapshot() *xdstranslator.Resources {
	return &xdstranslator.Resources{
		Listeners: []types.Resource{&listenerv3.Listener{Name: "http-8080", Address: &corev3.Address{Address: &corev3.Address_SocketAddress{
			SocketAddress: &corev3.SocketAddress{Address: "0.0.0.0", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 8080}}}}}},
		Routes: []types.Resource{&routev3.RouteConfiguration{Name: "http-8080", VirtualHosts: []*routev3.VirtualHost{{
			Name: "foo.example.com", Domains: []string{"foo.example.com"},
			Routes: []*routev3.Route{{Name: "httproute/apps/foo/rule/0/match/0",
				Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
				Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "apps/foo/80"}}}}},
		}}}},
		Clusters: []types.Resource{&clusterv3.Cluster{Name: "apps/foo/80", ConnectTimeout: durationpb.New(5 * time.Second),
			ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS}}},
		Endpoints: []types.Resource{&endpointv3.ClusterLoadAssignment{ClusterName: "apps/foo/80", Endpoints: []*endpointv3.LocalityLbEndpoints{{
			LbEndpoints: []*endpointv3.LbEndpoint{lbEndpoint("10.244.0.7")}}}}},
		Secrets: []types.Resource{&tlsv3.Secret{Name: "apps/cert", Type: &tlsv3.Secret_TlsCertificate{TlsCertificate: &tlsv3.TlsCertificate{
			CertificateChain: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: "CERT"}},
			PrivateKey:       &corev3.DataSource{Specifier: &corev3.DataSource_InlineBytes{InlineBytes: []byte(privateKey)}},
		}}}},
	}
}

func lbEndpoint(ip string) *endpointv3.LbEndpoint {
	return &endpointv3.LbEndpoint{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{Address: &corev3.Address{
		Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{Address: ip, PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 3000}}}}}}}
}

func mustAny(t *testing.T, m proto.Message) *anypb.Any {
	t.Helper()
	a, err := anypb.New(m)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// dumpOf renders r the way Envoy's admin does: one *ConfigDump section
// per type behind the bootstrap's, dynamic entries with version_info.
func dumpOf(t *testing.T, r *xdstranslator.Resources, version string) []byte {
	t.Helper()
	cd := &adminv3.ConfigDump{}
	cd.Configs = append(cd.Configs, mustAny(t, &adminv3.BootstrapConfigDump{Bootstrap: &bootstrapv3.Bootstrap{
		Node: &corev3.Node{Id: "envoy-xds-1", Cluster: "gatewayclass/xds"}}}))
	var cl adminv3.ClustersConfigDump
	for _, c := range r.Clusters {
		cl.DynamicActiveClusters = append(cl.DynamicActiveClusters, &adminv3.ClustersConfigDump_DynamicCluster{VersionInfo: version, Cluster: mustAny(t, c)})
	}
	cl.StaticClusters = []*adminv3.ClustersConfigDump_StaticCluster{{Cluster: mustAny(t, &clusterv3.Cluster{Name: "xds"})}}
	var ls adminv3.ListenersConfigDump
	for _, l := range r.Listeners {
		ls.DynamicListeners = append(ls.DynamicListeners, &adminv3.ListenersConfigDump_DynamicListener{Name: cacheName(l),
			ActiveState: &adminv3.ListenersConfigDump_DynamicListenerState{VersionInfo: version, Listener: mustAny(t, l)}})
	}
	var rs adminv3.RoutesConfigDump
	for _, rc := range r.Routes {
		rs.DynamicRouteConfigs = append(rs.DynamicRouteConfigs, &adminv3.RoutesConfigDump_DynamicRouteConfig{VersionInfo: version, RouteConfig: mustAny(t, rc)})
	}
	// The bootstrap's file SDS secret is listed among the dynamic ones.
	ss := adminv3.SecretsConfigDump{DynamicActiveSecrets: []*adminv3.SecretsConfigDump_DynamicSecret{{Name: "xds_client_svid", VersionInfo: "file",
		Secret: mustAny(t, &tlsv3.Secret{Name: "xds_client_svid", Type: &tlsv3.Secret_TlsCertificate{TlsCertificate: &tlsv3.TlsCertificate{
			PrivateKey: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: privateKey}}}}})}}}
	for _, s := range r.Secrets {
		ss.DynamicActiveSecrets = append(ss.DynamicActiveSecrets, &adminv3.SecretsConfigDump_DynamicSecret{Name: cacheName(s), VersionInfo: version, Secret: mustAny(t, s)})
	}
	var es adminv3.EndpointsConfigDump
	for _, e := range r.Endpoints {
		es.DynamicEndpointConfigs = append(es.DynamicEndpointConfigs, &adminv3.EndpointsConfigDump_DynamicEndpointConfig{VersionInfo: version, EndpointConfig: mustAny(t, e)})
	}
	cd.Configs = append(cd.Configs, mustAny(t, &cl), mustAny(t, &ls), mustAny(t, &rs), mustAny(t, &ss), mustAny(t, &es))
	b, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(cd)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func cacheName(r types.Resource) string {
	switch m := r.(type) {
	case *listenerv3.Listener:
		return m.Name
	case *tlsv3.Secret:
		return m.Name
	}
	return ""
}

func TestFilterAndRedact(t *testing.T) {
	d, err := Parse(dumpOf(t, snapshot(), "v1"))
	if err != nil {
		t.Fatal(err)
	}
	if d.Scope() != "gatewayclass/xds" {
		t.Errorf("scope %q", d.Scope())
	}
	routes, err := d.Filter([]string{"routes"}).YAML()
	if err != nil {
		t.Fatal(err)
	}
	s := string(routes)
	if !strings.Contains(s, "RoutesConfigDump") || !strings.Contains(s, "httproute/apps/foo/rule/0/match/0") ||
		strings.Contains(s, "ListenersConfigDump") || strings.Contains(s, "BootstrapConfigDump") {
		t.Errorf("--type routes printed:\n%s", s)
	}
	all, _ := d.Filter(nil).YAML()
	if !strings.Contains(string(all), "BootstrapConfigDump") || strings.Count(string(all), "ConfigDump") != 6 {
		t.Errorf("no --type: want every section:\n%s", all)
	}
	for _, typs := range [][]string{nil, {"secrets"}} {
		b, _ := d.Filter(typs).YAML()
		if strings.Contains(string(b), "secret-key-material") || strings.Contains(string(b), "c2VjcmV0LWtleS1tYXRlcmlhbC") || !strings.Contains(string(b), "'[redacted]'") {
			t.Errorf("types %v: the private key is not redacted:\n%s", typs, b)
		}
		if !strings.Contains(string(b), "CERT") {
			t.Errorf("types %v: the certificate chain is gone:\n%s", typs, b)
		}
	}
	// The dump itself is not modified.
	if raw, _ := d.YAML(); !strings.Contains(string(raw), "LS0tLS1CRUdJTi") {
		t.Error("Filter modified the dump")
	}
	if got := Redact(map[string]any{"@type": "type.googleapis.com/not.a.Type", "name": "x", "private": "k"}); got["private"] != nil || got["name"] != "x" || got["withheld"] == nil {
		t.Errorf("an undecodable secret: %v, want only its name", got)
	}
}

func TestParseTypesAndQuery(t *testing.T) {
	got, err := ParseTypes([]string{"secrets", "routes", "routes"})
	if err != nil || !cmp.Equal(got, []string{"routes", "secrets"}) {
		t.Errorf("ParseTypes = %v %v", got, err)
	}
	if _, err := ParseTypes([]string{"route"}); err == nil || !strings.Contains(err.Error(), "listeners, routes, clusters, endpoints, secrets") {
		t.Errorf("a bad type: %v", err)
	}
	for typs, want := range map[string]string{"": "/config_dump?include_eds", "routes": "/config_dump", "endpoints": "/config_dump?include_eds"} {
		var ts []string
		if typs != "" {
			ts = []string{typs}
		}
		if q := Query(ts); q != want {
			t.Errorf("Query(%v) = %s, want %s", ts, q, want)
		}
	}
}

func TestDiff(t *testing.T) {
	snap := snapshot()
	want, err := SnapshotSet(snap, nil)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := Parse(dumpOf(t, snap, "v1"))
	got, versions := d.Resources(nil)
	if versions["routes"] != "v1" || versions["secrets"] != "v1" || len(got["clusters"]) != 1 || len(got["secrets"]) != 1 {
		t.Errorf("versions %v; clusters %v, secrets %v (the static cluster and the file SDS secret must not count)", versions, got["clusters"], got["secrets"])
	}
	drift, err := Compare(want, got, "controller", "envoy")
	if err != nil || len(drift.Differ) != 0 || drift.Unified != "" {
		t.Fatalf("the same resources differ: %+v %v", drift, err)
	}

	// Envoy holds an older route (another prefix) and lacks a listener.
	older := snapshot()
	rc := proto.Clone(older.Routes[0].(*routev3.RouteConfiguration)).(*routev3.RouteConfiguration)
	rc.VirtualHosts[0].Routes[0].Match.PathSpecifier = &routev3.RouteMatch_Prefix{Prefix: "/old"}
	older.Routes = []types.Resource{rc}
	older.Listeners = nil
	d, _ = Parse(dumpOf(t, older, "v0"))
	got, _ = d.Resources([]string{"listeners", "routes"})
	want, _ = SnapshotSet(snap, []string{"listeners", "routes"})
	drift, err = Compare(want, got, "controller", "envoy")
	if err != nil {
		t.Fatal(err)
	}
	if !cmp.Equal(drift.Differ, []string{"listeners/http-8080", "routes/http-8080"}) {
		t.Errorf("differ = %v", drift.Differ)
	}
	for _, line := range []string{"--- controller", "+++ envoy", "-          prefix: /", "+          prefix: /old"} {
		if !strings.Contains(drift.Unified, line+"\n") {
			t.Errorf("the diff lacks %q:\n%s", line, drift.Unified)
		}
	}
}

// TestDiffEndpoints: Envoy dumps EDS rebuilt from its hosts, with
// defaults filled in (health, weights, overprovisioning): not drift; an
// address that differs is.
func TestDiffEndpoints(t *testing.T) {
	snap := snapshot()
	want, _ := SnapshotSet(snap, []string{"endpoints"})
	envoy := snapshot()
	cla := proto.Clone(envoy.Endpoints[0].(*endpointv3.ClusterLoadAssignment)).(*endpointv3.ClusterLoadAssignment)
	cla.Policy = &endpointv3.ClusterLoadAssignment_Policy{OverprovisioningFactor: wrapperspb.UInt32(140)}
	cla.Endpoints[0].Locality = &corev3.Locality{}
	cla.Endpoints[0].LoadBalancingWeight = wrapperspb.UInt32(0)
	ep := cla.Endpoints[0].LbEndpoints[0]
	ep.HealthStatus = corev3.HealthStatus_HEALTHY
	ep.LoadBalancingWeight = wrapperspb.UInt32(1)
	ep.GetEndpoint().HealthCheckConfig = &endpointv3.Endpoint_HealthCheckConfig{}
	envoy.Endpoints = []types.Resource{cla}
	d, _ := Parse(dumpOf(t, envoy, ""))
	got, _ := d.Resources([]string{"endpoints"})
	if drift, err := Compare(want, got, "controller", "envoy"); err != nil || len(drift.Differ) != 0 {
		t.Errorf("Envoy's defaults count as drift: %v %v\n%s", drift.Differ, err, drift.Unified)
	}
	cla.Endpoints[0].LbEndpoints = append(cla.Endpoints[0].LbEndpoints, lbEndpoint("10.244.0.8"))
	ep.HealthStatus = corev3.HealthStatus_DRAINING
	d, _ = Parse(dumpOf(t, envoy, ""))
	got, _ = d.Resources([]string{"endpoints"})
	drift, _ := Compare(want, got, "controller", "envoy")
	if !cmp.Equal(drift.Differ, []string{"endpoints/apps/foo/80"}) || !strings.Contains(drift.Unified, "+        health_status: DRAINING") || !strings.Contains(drift.Unified, "10.244.0.8") {
		t.Errorf("an extra endpoint and a draining one: %v\n%s", drift.Differ, drift.Unified)
	}
}

func TestPick(t *testing.T) {
	pod := func(name string, ready, deleting bool) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}}
		st := corev1.ConditionFalse
		if ready {
			st = corev1.ConditionTrue
		}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}
		if deleting {
			p.DeletionTimestamp = &metav1.Time{}
		}
		return p
	}
	pods := []corev1.Pod{pod("c", true, false), pod("a", true, true), pod("b", false, false), pod("d", true, false)}
	if p, err := Pick(pods, ""); err != nil || p.Name != "c" {
		t.Errorf("Pick = %v %v, want c (a is being deleted, b not Ready)", p, err)
	}
	if p, err := Pick(pods, "b"); err != nil || p.Name != "b" {
		t.Errorf("Pick(b) = %v %v", p, err)
	}
	if _, err := Pick(pods, "z"); err == nil || !strings.Contains(err.Error(), "a, b, c, d") {
		t.Errorf("Pick(z): %v", err)
	}
	if _, err := Pick([]corev1.Pod{pod("b", false, false)}, ""); err == nil || !strings.Contains(err.Error(), "Ready") {
		t.Errorf("no Ready pod: %v", err)
	}
}

// TestRedactRouteCredentials: a route configuration's API keys and
// htpasswd users (SecurityPolicy) read "[redacted]" in a filtered dump
// and on both sides of a diff, which still finds the two the same.
func TestRedactRouteCredentials(t *testing.T) {
	r := snapshot()
	rc := r.Routes[0].(*routev3.RouteConfiguration)
	rc.VirtualHosts[0].Routes[0].TypedPerFilterConfig = map[string]*anypb.Any{
		"envoy.filters.http.api_key_auth": mustAny(t, &apikeyauthv3.ApiKeyAuthPerRoute{Credentials: []*apikeyauthv3.Credential{{Key: "api-key-material", Client: "acme"}}}),
		"envoy.filters.http.basic_auth/x": mustAny(t, &basicauthv3.BasicAuthPerRoute{Users: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: "bob:{SHA}htpasswd-material"}}}),
	}
	d, err := Parse(dumpOf(t, r, "v1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, typs := range [][]string{nil, {"routes"}} {
		b, _ := d.Filter(typs).YAML()
		if strings.Contains(string(b), "api-key-material") || strings.Contains(string(b), "htpasswd-material") || !strings.Contains(string(b), "acme") ||
			strings.Count(string(b), "'[redacted]'") < 2 {
			t.Errorf("types %v: the route credentials are not redacted:\n%s", typs, b)
		}
	}
	if raw, _ := d.YAML(); !strings.Contains(string(raw), "api-key-material") {
		t.Error("Filter modified the dump")
	}
	ours, err := SnapshotSet(r, []string{"routes"})
	if err != nil {
		t.Fatal(err)
	}
	theirs, _ := d.Resources([]string{"routes"})
	if b, _ := json.Marshal(ours); strings.Contains(string(b), "api-key-material") {
		t.Errorf("our routes print the key: %s", b)
	}
	if !reflect.DeepEqual(ours, theirs) {
		t.Errorf("the same routes differ once redacted:\nours %v\ntheirs %v", ours, theirs)
	}
}
