package integration

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
)

// TestSecurityPolicyCRDValidation: the SecurityPolicy CRD's schema and CEL
// rules, as the API server applies them: each spec is created, and is
// either accepted or refused with a message holding want.
func TestSecurityPolicyCRDValidation(t *testing.T) {
	requireAPIServer(t)
	ctx := context.Background()
	route := func(name string) gwapiv1.LocalPolicyTargetReferenceWithSectionName {
		return gwapiv1.LocalPolicyTargetReferenceWithSectionName{LocalPolicyTargetReference: gwapiv1.LocalPolicyTargetReference{
			Group: gwapiv1.GroupName, Kind: "HTTPRoute", Name: gwapiv1.ObjectName(name)}}
	}
	basic := &v1alpha1.BasicAuth{Users: gwapiv1.SecretObjectReference{Name: "users"}}
	header := gwapiv1.HTTPHeaderName("x-api-key")
	keys := &v1alpha1.APIKeyAuth{CredentialRefs: []gwapiv1.SecretObjectReference{{Name: "keys"}}, ExtractFrom: []v1alpha1.APIKeySource{{Header: &header}}}
	str := func(s string) *string { return &s }
	for i, tc := range []struct {
		name string
		spec v1alpha1.SecurityPolicySpec
		want string // "" when accepted
	}{
		{"basic auth", v1alpha1.SecurityPolicySpec{TargetRefs: []gwapiv1.LocalPolicyTargetReferenceWithSectionName{route("a")}, BasicAuth: basic}, ""},
		{"api keys and a rule", v1alpha1.SecurityPolicySpec{TargetRefs: []gwapiv1.LocalPolicyTargetReferenceWithSectionName{
			{LocalPolicyTargetReference: route("a").LocalPolicyTargetReference, SectionName: new(gwapiv1.SectionName("r"))}, route("a")}, APIKeyAuth: keys}, ""},
		{"no method", v1alpha1.SecurityPolicySpec{TargetRefs: []gwapiv1.LocalPolicyTargetReferenceWithSectionName{route("a")}}, "at least one of jwt, oidc"},
		{"no target", v1alpha1.SecurityPolicySpec{BasicAuth: basic}, "targetRefs"},
		{"a Service target", v1alpha1.SecurityPolicySpec{TargetRefs: []gwapiv1.LocalPolicyTargetReferenceWithSectionName{{LocalPolicyTargetReference: gwapiv1.LocalPolicyTargetReference{
			Kind: "Service", Name: "s"}}}, BasicAuth: basic}, "targetRefs must be Gateways, ListenerSets, HTTPRoutes or GRPCRoutes"},
		{"a target twice", v1alpha1.SecurityPolicySpec{TargetRefs: []gwapiv1.LocalPolicyTargetReferenceWithSectionName{route("a"), route("a")}, BasicAuth: basic}, "targetRefs must be distinct"},
		{"a realm with a quote", v1alpha1.SecurityPolicySpec{TargetRefs: []gwapiv1.LocalPolicyTargetReferenceWithSectionName{route("a")},
			BasicAuth: &v1alpha1.BasicAuth{Users: basic.Users, Realm: str(`a"b`)}}, "realm"},
		{"a key source of two kinds", v1alpha1.SecurityPolicySpec{TargetRefs: []gwapiv1.LocalPolicyTargetReferenceWithSectionName{route("a")},
			APIKeyAuth: &v1alpha1.APIKeyAuth{CredentialRefs: keys.CredentialRefs, ExtractFrom: []v1alpha1.APIKeySource{{Header: &header, Cookie: str("c")}}}},
			"exactly one of header, queryParameter and cookie"},
		{"no key source", v1alpha1.SecurityPolicySpec{TargetRefs: []gwapiv1.LocalPolicyTargetReferenceWithSectionName{route("a")},
			APIKeyAuth: &v1alpha1.APIKeyAuth{CredentialRefs: keys.CredentialRefs}}, "extractFrom"},
		{"a JWT provider without keys", v1alpha1.SecurityPolicySpec{TargetRefs: []gwapiv1.LocalPolicyTargetReferenceWithSectionName{route("a")},
			JWT: &v1alpha1.JWT{Providers: []v1alpha1.JWTProvider{{Name: "p"}}}}, "exactly one of remoteJWKS and localJWKS"},
		{"a JWKS over http", v1alpha1.SecurityPolicySpec{TargetRefs: []gwapiv1.LocalPolicyTargetReferenceWithSectionName{route("a")},
			JWT: &v1alpha1.JWT{Providers: []v1alpha1.JWTProvider{{Name: "p", RemoteJWKS: &v1alpha1.RemoteJWKS{URI: "http://issuer/jwks"}}}}}, "uri"},
		{"jwt and authorization", v1alpha1.SecurityPolicySpec{TargetRefs: []gwapiv1.LocalPolicyTargetReferenceWithSectionName{route("a")},
			JWT: &v1alpha1.JWT{Providers: []v1alpha1.JWTProvider{
				{Name: "p", RemoteJWKS: &v1alpha1.RemoteJWKS{URI: "https://issuer/jwks", CACertificateRefs: []gwapiv1.LocalObjectReference{{Kind: "ConfigMap", Name: "ca"}}}},
				{Name: "q", LocalJWKS: &v1alpha1.LocalJWKS{Kind: "ConfigMap", Name: "jwks"}, RequiredScopes: []string{"read"}}}},
			Authorization: &v1alpha1.Authorization{Rules: []v1alpha1.AuthorizationRule{{Action: v1alpha1.AuthorizationAllow, ClientCIDRs: []string{"10.0.0.0/8"},
				JWT: &v1alpha1.JWTPrincipal{Provider: "q", Claims: []v1alpha1.JWTClaim{{Name: "roles", Values: []string{"admin"}}}}}}}}, ""},
		{"a JWT provider name not a DNS label", v1alpha1.SecurityPolicySpec{TargetRefs: []gwapiv1.LocalPolicyTargetReferenceWithSectionName{route("a")},
			JWT: &v1alpha1.JWT{Providers: []v1alpha1.JWTProvider{{Name: "P_1", LocalJWKS: &v1alpha1.LocalJWKS{Kind: "Secret", Name: "jwks"}}}}}, "name"},
		{"an authorization rule without an action", v1alpha1.SecurityPolicySpec{TargetRefs: []gwapiv1.LocalPolicyTargetReferenceWithSectionName{route("a")},
			Authorization: &v1alpha1.Authorization{Rules: []v1alpha1.AuthorizationRule{{Methods: []gwapiv1.HTTPMethod{"GET"}}}}}, "action"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &v1alpha1.SecurityPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "crd-" + string(rune('a'+i))}, Spec: tc.spec}
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
