package integration

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
)

// TestSecurityPolicyOIDCCRDValidation: the schema of spec.oidc on a real
// API server: a login with explicit endpoints and a CA is accepted; an
// issuer or an endpoint over http is refused (the token endpoint
// receives the client secret).
func TestSecurityPolicyOIDCCRDValidation(t *testing.T) {
	requireAPIServer(t)
	ctx := context.Background()
	str := func(s string) *string { return &s }
	login := func(edit func(*v1alpha1.OIDC)) v1alpha1.SecurityPolicySpec {
		o := &v1alpha1.OIDC{Issuer: "https://id.example.com", ClientID: "web", ClientSecret: gwapiv1.SecretObjectReference{Name: "client"}}
		edit(o)
		return v1alpha1.SecurityPolicySpec{TargetRefs: []gwapiv1.LocalPolicyTargetReferenceWithSectionName{{LocalPolicyTargetReference: gwapiv1.LocalPolicyTargetReference{
			Group: gwapiv1.GroupName, Kind: "HTTPRoute", Name: "a"}}}, OIDC: o}
	}
	for i, tc := range []struct {
		name string
		spec v1alpha1.SecurityPolicySpec
		want string // "" when accepted
	}{
		{"explicit endpoints and a CA", login(func(o *v1alpha1.OIDC) {
			o.AuthorizationEndpoint, o.TokenEndpoint, o.EndSessionEndpoint = str("https://id.example.com/a"), str("https://id.example.com/t"), str("https://id.example.com/l")
			o.CACertificateRefs = []gwapiv1.LocalObjectReference{{Kind: "ConfigMap", Name: "ca"}}
		}), ""},
		{"issuer over http", login(func(o *v1alpha1.OIDC) { o.Issuer = "http://id.example.com" }), "issuer"},
		{"token endpoint over http", login(func(o *v1alpha1.OIDC) { o.TokenEndpoint = str("http://id.example.com/t") }), "tokenEndpoint"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &v1alpha1.SecurityPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "crd-oidc-" + string(rune('a'+i))}, Spec: tc.spec}
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
			}
		})
	}
}
