package translate

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/internal/envoyvalidate"
	"github.com/xds-controller/xds-controller/internal/testenvoy"
	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

// headerEdit is one edit of a header modifier: action "set", "add" or
// "remove" of name (with value), in a request or a response, on the rule
// or on its first backendRef.
type headerEdit struct {
	backend, response bool
	action            string
	name, value       string
}

// headerCase is a one-rule route whose rule (and first backendRef) carry
// edits, and maybe a URLRewrite hostname (HTTPRoute only) and a second
// backendRef.
type headerCase struct {
	grpc        bool
	edits       []headerEdit
	rewriteHost string
	twoBackends bool
}

// TestNoHeaderEditIsLost translates routes with every kind of header edit
// (set, add, remove; of Host, a pseudo-header or a plain header; in a
// request or a response; on a rule or a backendRef; of an HTTPRoute or a
// GRPCRoute; alone or with a URLRewrite hostname, another Host rewrite or
// plain edits) through the whole pipeline, and checks that no accepted
// rule loses an edit on the way to Envoy: either the rule is refused
// (PartiallyInvalid=True: the route's other rule is valid) and its Envoy route answers
// the failure status, or every edit is in its Envoy route: a header in
// *_headers_to_add with the action's append mode or in *_headers_to_remove,
// and a request's `set` of Host as host_rewrite_literal (RouteAction for a
// rule, WeightedCluster ClusterWeight for a backendRef). With an Envoy
// binary (testenvoy), Envoy also loads the result.
func TestNoHeaderEditIsLost(t *testing.T) {
	var cases []headerCase
	names := []string{"Host", "host", ":authority", ":path", ":method", ":scheme", ":status", ":protocol", "x-plain"}
	for _, grpc := range []bool{false, true} {
		for _, backend := range []bool{false, true} {
			for _, response := range []bool{false, true} {
				for _, action := range []string{"set", "add", "remove"} {
					for _, n := range names {
						cases = append(cases, headerCase{grpc: grpc, edits: []headerEdit{{backend, response, action, n, "v.internal"}}})
					}
				}
			}
		}
		mixed := []headerEdit{{action: "set", name: "x-a", value: "1"}, {action: "set", name: "Host", value: "api.internal:8443"},
			{action: "add", name: "x-b", value: "2"}, {action: "remove", name: "x-c"}, {response: true, action: "set", name: "x-d", value: "3"}}
		cases = append(cases,
			headerCase{grpc: grpc, edits: mixed},
			headerCase{grpc: grpc, edits: mixed, twoBackends: true},
			headerCase{grpc: grpc, edits: []headerEdit{{backend: true, action: "set", name: "HOST", value: "[2001:db8::1]"}}, twoBackends: true},
			headerCase{grpc: grpc, edits: []headerEdit{{action: "set", name: "Host", value: "a.internal"}, {backend: true, action: "set", name: "Host", value: "b.internal"}}},
			headerCase{grpc: grpc, edits: []headerEdit{{action: "set", name: "Host", value: "not a host"}}},
			headerCase{grpc: grpc, edits: []headerEdit{{action: "set", name: "Host", value: "a.internal"}, {action: "set", name: "host", value: "b.internal"}}},
		)
	}
	cases = append(cases,
		headerCase{edits: []headerEdit{{action: "set", name: "Host", value: "a.internal"}}, rewriteHost: "b.internal"},
		headerCase{edits: []headerEdit{{backend: true, action: "set", name: "Host", value: "a.internal"}}, rewriteHost: "b.internal"},
		headerCase{edits: []headerEdit{{backend: true, action: "set", name: "x-plain", value: "1"}}, rewriteHost: "b.internal"},
	)

	res := headerResources(cases)
	out, err := Run(res, gatewayapi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Refused) > 0 {
		t.Fatalf("pre-validation refused scopes: %v", out.Refused)
	}
	routes := map[string]*routev3.Route{}
	for _, scope := range ScopeNames(out.XDS) {
		for _, r := range out.XDS[scope].Routes {
			for _, vh := range r.(*routev3.RouteConfiguration).VirtualHosts {
				for _, rt := range vh.Routes {
					routes[rt.Name] = rt
				}
			}
		}
	}
	accepted, refused := 0, 0
	for i, c := range cases {
		kind, failure := gatewayapi.KindHTTPRoute, uint32(500)
		if c.grpc {
			kind, failure = gatewayapi.KindGRPCRoute, 503
		}
		name := fmt.Sprintf("c%d", i)
		st := out.Result.Status.Routes[gatewayapi.RouteKey{Kind: kind, Namespace: "default", Name: name}]
		rt := routes[fmt.Sprintf("%s/default/%s/rule/0/match/0", strings.ToLower(kind), name)]
		if st == nil || len(st.Parents) != 1 || rt == nil {
			t.Fatalf("case %d %+v: status %+v, Envoy route %v", i, c, st, rt)
		}
		conds := st.Parents[0].Conditions
		if !meta.IsStatusConditionTrue(conds, "Accepted") {
			t.Fatalf("case %d %+v: not Accepted (its other rule is valid): %v", i, c, conds)
		}
		if meta.IsStatusConditionTrue(conds, "PartiallyInvalid") {
			refused++
			if rt.GetDirectResponse().GetStatus() != failure {
				t.Errorf("case %d %+v is refused (%v) but its Envoy route does not answer %d: %v", i, c, conds, failure, rt)
			}
			continue
		}
		accepted++
		for _, e := range c.edits {
			if p := lost(rt, e); p != "" {
				t.Errorf("case %d %+v is accepted, but %+v: %s; Envoy route %v", i, c, e, p, rt)
			}
		}
	}
	if accepted == 0 || refused == 0 {
		t.Errorf("%d cases accepted, %d refused; the test expects both", accepted, refused)
	}
	if bin := testenvoy.Find(); bin != "" {
		for _, scope := range ScopeNames(out.XDS) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			err := envoyvalidate.Validate(ctx, bin, out.XDS[scope])
			cancel()
			if err != nil {
				t.Errorf("scope %s: %v", scope, err)
			}
		}
	}
}

// lost says how the Envoy route rt misses the edit e, or "".
func lost(rt *routev3.Route, e headerEdit) string {
	type edits interface {
		GetRequestHeadersToAdd() []*corev3.HeaderValueOption
		GetRequestHeadersToRemove() []string
		GetResponseHeadersToAdd() []*corev3.HeaderValueOption
		GetResponseHeadersToRemove() []string
	}
	var at edits = rt
	var cw *routev3.WeightedCluster_ClusterWeight
	if e.backend {
		cs := rt.GetRoute().GetWeightedClusters().GetClusters()
		if len(cs) == 0 {
			return "the route has no weighted clusters"
		}
		cw, at = cs[0], cs[0]
	}
	if !e.response && e.action == "set" && strings.EqualFold(e.name, "host") {
		got := rt.GetRoute().GetHostRewriteLiteral()
		if cw != nil {
			got = cw.GetHostRewriteLiteral()
		}
		if got != e.value {
			return fmt.Sprintf("host_rewrite_literal is %q", got)
		}
		return ""
	}
	add, remove := at.GetRequestHeadersToAdd(), at.GetRequestHeadersToRemove()
	if e.response {
		add, remove = at.GetResponseHeadersToAdd(), at.GetResponseHeadersToRemove()
	}
	if e.action == "remove" {
		if !slices.Contains(remove, e.name) {
			return fmt.Sprintf("not in headers_to_remove %v", remove)
		}
		return ""
	}
	mode := corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD
	if e.action == "add" {
		mode = corev3.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD
	}
	for _, o := range add {
		if o.GetHeader().GetKey() == e.name && o.GetHeader().GetValue() == e.value && o.GetAppendAction() == mode {
			return ""
		}
	}
	return fmt.Sprintf("not in headers_to_add %v", add)
}

// headerResources is a Gateway with an HTTP listener and, for each case i,
// a route "c<i>" with the case's rule (path /edit, or gRPC method
// pkg.Echo/Edit), to Service app (and Service web with twoBackends), and a
// plain rule (/good, pkg.Echo/Good) to app, so that the route stays
// Accepted when the case's rule is refused.
func headerResources(cases []headerCase) *resources.Resources {
	res := &resources.Resources{
		GatewayClasses: []*gwapiv1.GatewayClass{{ObjectMeta: metav1.ObjectMeta{Name: "xds"},
			Spec: gwapiv1.GatewayClassSpec{ControllerName: gatewayapi.ControllerName}}},
		Gateways: []*gwapiv1.Gateway{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
			Spec: gwapiv1.GatewaySpec{GatewayClassName: "xds", Listeners: []gwapiv1.Listener{{Name: "http", Protocol: gwapiv1.HTTPProtocolType, Port: 80}}}}},
	}
	for i, svc := range []string{"app", "web"} {
		res.Services = append(res.Services, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: svc},
			Spec: corev1.ServiceSpec{ClusterIP: fmt.Sprintf("10.96.0.%d", i+1), Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}})
	}
	for i, c := range cases {
		var ruleFilters, backendFilters []gwapiv1.HTTPRouteFilter
		for _, e := range c.edits {
			fs := &ruleFilters
			if e.backend {
				fs = &backendFilters
			}
			typ := gwapiv1.HTTPRouteFilterRequestHeaderModifier
			if e.response {
				typ = gwapiv1.HTTPRouteFilterResponseHeaderModifier
			}
			k := slices.IndexFunc(*fs, func(f gwapiv1.HTTPRouteFilter) bool { return f.Type == typ })
			if k < 0 {
				f := gwapiv1.HTTPRouteFilter{Type: typ}
				if e.response {
					f.ResponseHeaderModifier = &gwapiv1.HTTPHeaderFilter{}
				} else {
					f.RequestHeaderModifier = &gwapiv1.HTTPHeaderFilter{}
				}
				*fs, k = append(*fs, f), len(*fs)
			}
			h := (*fs)[k].RequestHeaderModifier
			if e.response {
				h = (*fs)[k].ResponseHeaderModifier
			}
			kv := gwapiv1.HTTPHeader{Name: gwapiv1.HTTPHeaderName(e.name), Value: e.value}
			switch e.action {
			case "set":
				h.Set = append(h.Set, kv)
			case "add":
				h.Add = append(h.Add, kv)
			default:
				h.Remove = append(h.Remove, e.name)
			}
		}
		if c.rewriteHost != "" {
			ruleFilters = append(ruleFilters, gwapiv1.HTTPRouteFilter{Type: gwapiv1.HTTPRouteFilterURLRewrite,
				URLRewrite: &gwapiv1.HTTPURLRewriteFilter{Hostname: ptrTo(gwapiv1.PreciseHostname(c.rewriteHost))}})
		}
		refs := []gwapiv1.BackendRef{{BackendObjectReference: gwapiv1.BackendObjectReference{Name: "app", Port: ptrTo(gwapiv1.PortNumber(80))}}}
		if c.twoBackends {
			refs = append(refs, gwapiv1.BackendRef{BackendObjectReference: gwapiv1.BackendObjectReference{Name: "web", Port: ptrTo(gwapiv1.PortNumber(80))}})
		}
		meta := metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("c%d", i)}
		common := gwapiv1.CommonRouteSpec{ParentRefs: []gwapiv1.ParentReference{{Name: "web"}}}
		good := refs[:1]
		if !c.grpc {
			rule := gwapiv1.HTTPRouteRule{Matches: pathMatch("/edit"), Filters: ruleFilters}
			for k, r := range refs {
				hr := gwapiv1.HTTPBackendRef{BackendRef: r}
				if k == 0 {
					hr.Filters = backendFilters
				}
				rule.BackendRefs = append(rule.BackendRefs, hr)
			}
			res.HTTPRoutes = append(res.HTTPRoutes, &gwapiv1.HTTPRoute{ObjectMeta: meta, Spec: gwapiv1.HTTPRouteSpec{
				CommonRouteSpec: common, Hostnames: []gwapiv1.Hostname{gwapiv1.Hostname(meta.Name + ".example.com")}, Rules: []gwapiv1.HTTPRouteRule{
					rule, {Matches: pathMatch("/good"), BackendRefs: []gwapiv1.HTTPBackendRef{{BackendRef: good[0]}}}}}})
			continue
		}
		rule := gwapiv1.GRPCRouteRule{Matches: methodMatch("Edit"), Filters: grpcFilters(ruleFilters)}
		for k, r := range refs {
			gr := gwapiv1.GRPCBackendRef{BackendRef: r}
			if k == 0 {
				gr.Filters = grpcFilters(backendFilters)
			}
			rule.BackendRefs = append(rule.BackendRefs, gr)
		}
		res.GRPCRoutes = append(res.GRPCRoutes, &gwapiv1.GRPCRoute{ObjectMeta: meta, Spec: gwapiv1.GRPCRouteSpec{
			CommonRouteSpec: common, Hostnames: []gwapiv1.Hostname{gwapiv1.Hostname(meta.Name + ".example.com")}, Rules: []gwapiv1.GRPCRouteRule{
				rule, {Matches: methodMatch("Good"), BackendRefs: []gwapiv1.GRPCBackendRef{{BackendRef: good[0]}}}}}})
	}
	res.Sort()
	return res
}

func pathMatch(p string) []gwapiv1.HTTPRouteMatch {
	return []gwapiv1.HTTPRouteMatch{{Path: &gwapiv1.HTTPPathMatch{Type: ptrTo(gwapiv1.PathMatchPathPrefix), Value: ptrTo(p)}}}
}

func methodMatch(m string) []gwapiv1.GRPCRouteMatch {
	return []gwapiv1.GRPCRouteMatch{{Method: &gwapiv1.GRPCMethodMatch{Type: ptrTo(gwapiv1.GRPCMethodMatchExact), Service: ptrTo("pkg.Echo"), Method: ptrTo(m)}}}
}

func grpcFilters(fs []gwapiv1.HTTPRouteFilter) []gwapiv1.GRPCRouteFilter {
	var out []gwapiv1.GRPCRouteFilter
	for _, f := range fs {
		out = append(out, gwapiv1.GRPCRouteFilter{Type: gwapiv1.GRPCRouteFilterType(f.Type),
			RequestHeaderModifier: f.RequestHeaderModifier, ResponseHeaderModifier: f.ResponseHeaderModifier})
	}
	return out
}

func ptrTo[T any](v T) *T { return &v }
