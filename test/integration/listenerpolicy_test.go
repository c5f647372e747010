package integration

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
)

// TestListenerPolicyCRDValidation: the ListenerPolicy CRD's schema and CEL
// rules, as the API server applies them: each spec is created, and is
// either accepted or refused with a message holding want.
func TestListenerPolicyCRDValidation(t *testing.T) {
	requireAPIServer(t)
	ctx := context.Background()
	gw := []gwapiv1.LocalPolicyTargetReferenceWithSectionName{{LocalPolicyTargetReference: gwapiv1.LocalPolicyTargetReference{
		Group: gwapiv1.GroupName, Kind: "Gateway", Name: "web"}}}
	v := func(s v1alpha1.TLSVersion) *v1alpha1.TLSVersion { return &s }
	hops := func(n int32) *int32 { return &n }
	header := gwapiv1.HTTPHeaderName("CF-Connecting-IP")
	text := "%RESPONSE_CODE%"
	for i, tc := range []struct {
		name string
		spec v1alpha1.ListenerPolicySpec
		want string // "" when accepted
	}{
		{"every field", v1alpha1.ListenerPolicySpec{TargetRefs: gw,
			TLS:           &v1alpha1.ListenerTLSSettings{MinVersion: v("1.2"), MaxVersion: v("1.3"), CipherSuites: []string{"AES128-SHA"}, ALPNProtocols: []string{"h2"}},
			ProxyProtocol: &v1alpha1.ProxyProtocolSettings{Optional: true}, ClientIP: &v1alpha1.ClientIPSettings{XFFNumTrustedHops: hops(2)},
			HTTP1:     &v1alpha1.HTTP1Settings{AcceptHTTP10: true},
			AccessLog: &v1alpha1.AccessLogSettings{JSON: map[string]string{"s": "%RESPONSE_CODE%"}}}, ""},
		{"a ListenerSet's listener", v1alpha1.ListenerPolicySpec{TargetRefs: []gwapiv1.LocalPolicyTargetReferenceWithSectionName{{
			LocalPolicyTargetReference: gwapiv1.LocalPolicyTargetReference{Group: gwapiv1.GroupName, Kind: "ListenerSet", Name: "s"}, SectionName: new(gwapiv1.SectionName("l"))}},
			ClientIP: &v1alpha1.ClientIPSettings{CustomHeader: &header}}, ""},
		{"http3 alone", v1alpha1.ListenerPolicySpec{TargetRefs: gw, HTTP3: &v1alpha1.HTTP3Settings{}}, ""},
		{"nothing", v1alpha1.ListenerPolicySpec{TargetRefs: gw}, "at least one of tls, proxyProtocol"},
		{"a route target", v1alpha1.ListenerPolicySpec{TargetRefs: []gwapiv1.LocalPolicyTargetReferenceWithSectionName{{LocalPolicyTargetReference: gwapiv1.LocalPolicyTargetReference{
			Group: gwapiv1.GroupName, Kind: "HTTPRoute", Name: "r"}}}, ProxyProtocol: &v1alpha1.ProxyProtocolSettings{}}, "targetRefs must be Gateways or ListenerSets"},
		{"min above max", v1alpha1.ListenerPolicySpec{TargetRefs: gw, TLS: &v1alpha1.ListenerTLSSettings{MinVersion: v("1.3"), MaxVersion: v("1.2")}}, "minVersion must not be above maxVersion"},
		{"TLS 1.1", v1alpha1.ListenerPolicySpec{TargetRefs: gw, TLS: &v1alpha1.ListenerTLSSettings{MinVersion: v("1.1")}}, "minVersion"},
		{"ALPN h3", v1alpha1.ListenerPolicySpec{TargetRefs: gw, TLS: &v1alpha1.ListenerTLSSettings{ALPNProtocols: []string{"h3"}}}, "alpnProtocols"},
		{"two client IP sources", v1alpha1.ListenerPolicySpec{TargetRefs: gw, ClientIP: &v1alpha1.ClientIPSettings{XFFNumTrustedHops: hops(1), CustomHeader: &header}},
			"exactly one of xffNumTrustedHops and customHeader"},
		{"too many hops", v1alpha1.ListenerPolicySpec{TargetRefs: gw, ClientIP: &v1alpha1.ClientIPSettings{XFFNumTrustedHops: hops(17)}}, "xffNumTrustedHops"},
		{"two log formats", v1alpha1.ListenerPolicySpec{TargetRefs: gw, AccessLog: &v1alpha1.AccessLogSettings{Disabled: true, Text: &text}}, "at most one of disabled, text and json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &v1alpha1.ListenerPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "crd-" + string(rune('a'+i))}, Spec: tc.spec}
			err := k8sClient.Create(ctx, p)
			if err == nil {
				t.Cleanup(func() { _ = k8sClient.Delete(ctx, p) })
			}
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want a refusal with %q", err, tc.want)
			}
			if err != nil {
				t.Logf("refused: %v", err)
				return
			}
			// http3 is an empty object: the API server keeps it.
			got := &v1alpha1.ListenerPolicy{}
			if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil || (tc.spec.HTTP3 != nil) != (got.Spec.HTTP3 != nil) {
				t.Fatalf("read back: http3 %v, %v", got.Spec.HTTP3, err)
			}
		})
	}
}
