package gatewayapi

import (
	"math/rand/v2"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/resources"
)

// TestMalformedInputNeverPanics feeds nil and empty objects and fields:
// translation must not panic and must give a valid IR.
func TestMalformedInputNeverPanics(t *testing.T) {
	cases := map[string]*resources.Resources{
		"nil snapshot":   nil,
		"empty snapshot": {},
		"nil objects": {
			GatewayClasses: []*gwapiv1.GatewayClass{nil}, Gateways: []*gwapiv1.Gateway{nil}, HTTPRoutes: []*gwapiv1.HTTPRoute{nil},
			ReferenceGrants: []*gwapiv1.ReferenceGrant{nil}, Services: []*corev1.Service{nil}, EndpointSlices: []*discoveryv1.EndpointSlice{nil},
			Secrets: []*corev1.Secret{nil}, Namespaces: []*corev1.Namespace{nil}, ListenerSets: []*gwapiv1.ListenerSet{nil},
		},
		"empty objects": {
			GatewayClasses: []*gwapiv1.GatewayClass{{Spec: gwapiv1.GatewayClassSpec{ControllerName: ControllerName}}},
			Gateways:       []*gwapiv1.Gateway{{}},
			ListenerSets:   []*gwapiv1.ListenerSet{{}, {Spec: gwapiv1.ListenerSetSpec{Listeners: []gwapiv1.ListenerEntry{{}}}}},
			HTTPRoutes:     []*gwapiv1.HTTPRoute{{Spec: gwapiv1.HTTPRouteSpec{CommonRouteSpec: gwapiv1.CommonRouteSpec{ParentRefs: []gwapiv1.ParentReference{{}}}}}},
			Services:       []*corev1.Service{{}},
			EndpointSlices: []*discoveryv1.EndpointSlice{{}},
		},
	}
	full := fixture()
	full.Gateways = []*gwapiv1.Gateway{gateway("web",
		gwapiv1.Listener{},
		gwapiv1.Listener{Name: "h", Protocol: gwapiv1.HTTPSProtocolType, Port: 443, TLS: &gwapiv1.ListenerTLSConfig{}},
		gwapiv1.Listener{Name: "p", Protocol: gwapiv1.HTTPSProtocolType, Port: 444, TLS: &gwapiv1.ListenerTLSConfig{Mode: ptr(gwapiv1.TLSModePassthrough), CertificateRefs: []gwapiv1.SecretObjectReference{{}}}},
		gwapiv1.Listener{Name: "s", Protocol: gwapiv1.HTTPProtocolType, Port: 81, AllowedRoutes: &gwapiv1.AllowedRoutes{
			Namespaces: &gwapiv1.RouteNamespaces{From: ptr(gwapiv1.NamespacesFromSelector), Selector: &metav1.LabelSelector{
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Bogus"}}}},
			Kinds: []gwapiv1.RouteGroupKind{{}}}},
		gwapiv1.Listener{Name: "big", Protocol: gwapiv1.HTTPProtocolType, Port: 70000},
		gwapiv1.Listener{Name: "h", Protocol: gwapiv1.HTTPProtocolType, Port: 82},
	)}
	full.Gateways[0].Spec.Addresses = []gwapiv1.GatewaySpecAddress{{}}
	full.HTTPRoutes = []*gwapiv1.HTTPRoute{httpRoute("app",
		gwapiv1.HTTPRouteRule{},
		gwapiv1.HTTPRouteRule{Matches: []gwapiv1.HTTPRouteMatch{{Path: &gwapiv1.HTTPPathMatch{}, Headers: []gwapiv1.HTTPHeaderMatch{{}}, QueryParams: []gwapiv1.HTTPQueryParamMatch{{}}, Method: ptr(gwapiv1.HTTPMethod(""))}}},
		gwapiv1.HTTPRouteRule{Filters: []gwapiv1.HTTPRouteFilter{{}, {Type: gwapiv1.HTTPRouteFilterRequestRedirect}, {Type: gwapiv1.HTTPRouteFilterRequestMirror, RequestMirror: &gwapiv1.HTTPRequestMirrorFilter{Fraction: &gwapiv1.Fraction{Denominator: ptr(int32(0))}}}, {Type: gwapiv1.HTTPRouteFilterExtensionRef}}},
		gwapiv1.HTTPRouteRule{Filters: []gwapiv1.HTTPRouteFilter{{Type: gwapiv1.HTTPRouteFilterURLRewrite, URLRewrite: &gwapiv1.HTTPURLRewriteFilter{Path: &gwapiv1.HTTPPathModifier{}}}},
			BackendRefs: []gwapiv1.HTTPBackendRef{{}, {BackendRef: gwapiv1.BackendRef{Weight: ptr(int32(-5))}, Filters: []gwapiv1.HTTPRouteFilter{{}}}},
			Timeouts:    &gwapiv1.HTTPRouteTimeouts{Request: ptr(gwapiv1.Duration("soon"))}, Retry: &gwapiv1.HTTPRouteRetry{Attempts: ptr(-1), Codes: []gwapiv1.HTTPRouteRetryStatusCode{42}}},
		gwapiv1.HTTPRouteRule{Filters: []gwapiv1.HTTPRouteFilter{{Type: gwapiv1.HTTPRouteFilterRequestRedirect, RequestRedirect: &gwapiv1.HTTPRequestRedirectFilter{StatusCode: ptr(999), Port: ptr(int32(0)), Scheme: ptr("")}}}},
	)}
	full.EndpointSlices = append(full.EndpointSlices, &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Labels: map[string]string{discoveryv1.LabelServiceName: "app"}},
		Ports:      []discoveryv1.EndpointPort{{}}, Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"not-an-ip", ""}}},
	})
	cases["empty fields everywhere"] = full
	for name, res := range cases {
		t.Run(name, func(t *testing.T) {
			r := Translate(res, Options{})
			if err := r.IR.Validate(); err != nil {
				t.Fatalf("invalid IR: %v", err)
			}
		})
	}
}

// TestRandomlyZeroedFields zeroes random fields (pointers to nil, strings
// to "", slices to nil) of a rich snapshot many times over: translation
// must never panic nor produce an invalid IR.
func TestRandomlyZeroedFields(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 300; i++ {
		res := fixture()
		res.Gateways = append(res.Gateways, gateway("tls", gwapiv1.Listener{Name: "https", Protocol: gwapiv1.HTTPSProtocolType, Port: 443,
			Hostname: ptr(gwapiv1.Hostname("*.example.com")),
			TLS:      &gwapiv1.ListenerTLSConfig{CertificateRefs: []gwapiv1.SecretObjectReference{{Name: "s", Namespace: ptr(gwapiv1.Namespace("certs"))}}}}))
		route := httpRoute("app", gwapiv1.HTTPRouteRule{
			Matches: []gwapiv1.HTTPRouteMatch{{Path: &gwapiv1.HTTPPathMatch{Type: ptr(gwapiv1.PathMatchPathPrefix), Value: ptr("/x")},
				Headers: []gwapiv1.HTTPHeaderMatch{{Name: "h", Value: "v"}}, Method: ptr(gwapiv1.HTTPMethodGet)}},
			Filters: []gwapiv1.HTTPRouteFilter{
				{Type: gwapiv1.HTTPRouteFilterRequestHeaderModifier, RequestHeaderModifier: &gwapiv1.HTTPHeaderFilter{Set: []gwapiv1.HTTPHeader{{Name: "a", Value: "b"}}}},
				{Type: gwapiv1.HTTPRouteFilterURLRewrite, URLRewrite: &gwapiv1.HTTPURLRewriteFilter{Path: &gwapiv1.HTTPPathModifier{Type: gwapiv1.PrefixMatchHTTPPathModifier, ReplacePrefixMatch: ptr("/y")}}},
				{Type: gwapiv1.HTTPRouteFilterRequestMirror, RequestMirror: &gwapiv1.HTTPRequestMirrorFilter{BackendRef: gwapiv1.BackendObjectReference{Name: "app", Port: ptr(int32(80))}}},
			},
			BackendRefs: []gwapiv1.HTTPBackendRef{toApp(80), toApp(80)},
			Timeouts:    &gwapiv1.HTTPRouteTimeouts{Request: ptr(gwapiv1.Duration("1s"))},
		})
		route.Spec.ParentRefs = append(route.Spec.ParentRefs, gwapiv1.ParentReference{Name: "tls", SectionName: ptr(gwapiv1.SectionName("https"))})
		route.Spec.Hostnames = []gwapiv1.Hostname{"a.example.com"}
		res.HTTPRoutes = []*gwapiv1.HTTPRoute{route}
		for _, obj := range []any{res.Gateways[0], res.Gateways[1], route, res.Services[0], res.EndpointSlices[0]} {
			zeroRandomly(rng, reflect.ValueOf(obj).Elem(), 0.15)
		}
		r := Translate(res, Options{})
		if err := r.IR.Validate(); err != nil {
			t.Fatalf("iteration %d: invalid IR: %v", i, err)
		}
	}
}

func zeroRandomly(rng *rand.Rand, v reflect.Value, p float64) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return
		}
		if v.CanSet() && rng.Float64() < p {
			v.Set(reflect.Zero(v.Type()))
			return
		}
		zeroRandomly(rng, v.Elem(), p)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[metav1.ObjectMeta]() {
			return // keep names, namespaces and labels: they make objects meet
		}
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				zeroRandomly(rng, v.Field(i), p)
			}
		}
	case reflect.Slice:
		if v.CanSet() && rng.Float64() < p {
			v.Set(reflect.Zero(v.Type()))
			return
		}
		for i := 0; i < v.Len(); i++ {
			zeroRandomly(rng, v.Index(i), p)
		}
	case reflect.String, reflect.Int32, reflect.Int, reflect.Int64, reflect.Bool:
		if v.CanSet() && rng.Float64() < p {
			v.Set(reflect.Zero(v.Type()))
		}
	}
}
