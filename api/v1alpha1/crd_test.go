package v1alpha1

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// The chart ships the CRDs that controller-gen writes to config/crd (make
// generate-api refreshes both).
func TestChartCRDIsTheGeneratedOne(t *testing.T) {
	crd := generatedCRD(t, "gateway.xds-controller.dev_gatewayparameters.yaml", Kind)
	props := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties
	if got := props["mode"].Enum; len(got) != 2 {
		t.Errorf("mode enum %v", got)
	}
	if pt := props["podTemplate"]; pt.XPreserveUnknownFields == nil || !*pt.XPreserveUnknownFields || pt.Type != "object" {
		t.Errorf("podTemplate schema %+v", pt)
	}
	if st := props["service"].Properties["type"].Enum; len(st) != 3 {
		t.Errorf("service.type enum %v", st)
	}
}

func TestIngressClassParametersCRD(t *testing.T) {
	crd := generatedCRD(t, "gateway.xds-controller.dev_ingressclassparameters.yaml", IngressClassParametersKind)
	props := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties
	if got := props["accessLog"].Enum; len(got) != 2 {
		t.Errorf("accessLog enum %v, want On and Off", got)
	}
	if da := props["defaultAnnotations"]; da.Type != "object" || da.AdditionalProperties == nil {
		t.Errorf("defaultAnnotations schema %+v, want a string map", da)
	}
	if ref := props["gatewayParametersRef"]; len(ref.Required) != 1 || ref.Required[0] != "name" {
		t.Errorf("gatewayParametersRef schema %+v, want name required", ref)
	}
}

func TestSecurityPolicyCRD(t *testing.T) {
	crd := generatedCRD(t, "gateway.xds-controller.dev_securitypolicies.yaml", SecurityPolicyKind)
	v := crd.Spec.Versions[0]
	if v.Subresources == nil || v.Subresources.Status == nil {
		t.Error("no status subresource")
	}
	spec := v.Schema.OpenAPIV3Schema.Properties["spec"]
	if len(spec.XValidations) != 1 || len(spec.Required) != 1 || spec.Required[0] != "targetRefs" {
		t.Errorf("spec: rules %v, required %v; want the at-least-one-method rule and targetRefs required", spec.XValidations, spec.Required)
	}
	for _, f := range []string{"targetRefs", "jwt", "oidc", "basicAuth", "apiKeyAuth", "authorization", "extAuth"} {
		if _, ok := spec.Properties[f]; !ok {
			t.Errorf("spec.%s missing", f)
		}
	}
	if tr := spec.Properties["targetRefs"]; len(tr.XValidations) != 2 || tr.MaxItems == nil || *tr.MaxItems != 16 {
		t.Errorf("targetRefs: %d rules, maxItems %v", len(tr.XValidations), tr.MaxItems)
	}
}

func TestListenerPolicyCRD(t *testing.T) {
	crd := generatedCRD(t, "gateway.xds-controller.dev_listenerpolicies.yaml", ListenerPolicyKind)
	v := crd.Spec.Versions[0]
	if v.Subresources == nil || v.Subresources.Status == nil {
		t.Error("no status subresource")
	}
	spec := v.Schema.OpenAPIV3Schema.Properties["spec"]
	if len(spec.XValidations) != 1 || len(spec.Required) != 1 || spec.Required[0] != "targetRefs" {
		t.Errorf("spec: rules %v, required %v; want the at-least-one-field rule and targetRefs required", spec.XValidations, spec.Required)
	}
	for _, f := range []string{"targetRefs", "tls", "proxyProtocol", "clientIP", "http1", "accessLog"} {
		if _, ok := spec.Properties[f]; !ok {
			t.Errorf("spec.%s missing", f)
		}
	}
	if tr := spec.Properties["targetRefs"]; len(tr.XValidations) != 2 || tr.MaxItems == nil || *tr.MaxItems != 16 {
		t.Errorf("targetRefs: %d rules, maxItems %v", len(tr.XValidations), tr.MaxItems)
	}
	tls := spec.Properties["tls"]
	if len(tls.XValidations) != 1 || len(tls.Properties["minVersion"].Enum) != 2 || len(tls.Properties["alpnProtocols"].Items.Schema.Enum) != 2 {
		t.Errorf("tls schema: rules %v, minVersion enum %v", tls.XValidations, tls.Properties["minVersion"].Enum)
	}
	if c := spec.Properties["clientIP"]; len(c.XValidations) != 1 || c.Properties["xffNumTrustedHops"].Maximum == nil {
		t.Errorf("clientIP schema: rules %v", c.XValidations)
	}
	if a := spec.Properties["accessLog"]; len(a.XValidations) != 1 || a.Properties["json"].AdditionalProperties == nil {
		t.Errorf("accessLog schema: rules %v", a.XValidations)
	}
}

// generatedCRD reads config/crd/<file>, checks that the chart ships the
// same bytes, and that it is the namespaced CRD of kind in our group and
// version.
func generatedCRD(t *testing.T, file, kind string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	a, err := os.ReadFile(filepath.Join("../../config/crd", file))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join("../../charts/xds-controller/crds", file))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("charts/xds-controller/crds differs from config/crd: run make generate-api")
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(a, &crd); err != nil {
		t.Fatal(err)
	}
	if crd.Spec.Group != GroupVersion.Group || crd.Spec.Names.Kind != kind || crd.Spec.Scope != apiextensionsv1.NamespaceScoped ||
		len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Name != GroupVersion.Version {
		t.Fatalf("CRD %s %s %s %v", crd.Spec.Group, crd.Spec.Names.Kind, crd.Spec.Scope, crd.Spec.Versions)
	}
	return &crd
}

// policySpec reads a policy kind's generated CRD and checks what every
// policy kind of ours has: a status subresource, targetRefs required, the
// spec's at-least-one-field rule and each of fields. It returns the spec's
// schema for the kind's own checks.
func policySpec(t *testing.T, file, kind string, fields ...string) apiextensionsv1.JSONSchemaProps {
	t.Helper()
	crd := generatedCRD(t, file, kind)
	v := crd.Spec.Versions[0]
	if v.Subresources == nil || v.Subresources.Status == nil {
		t.Error("no status subresource")
	}
	spec := v.Schema.OpenAPIV3Schema.Properties["spec"]
	if len(spec.XValidations) != 1 || len(spec.Required) != 1 || spec.Required[0] != "targetRefs" {
		t.Errorf("spec: rules %v, required %v; want the at-least-one-field rule and targetRefs required", spec.XValidations, spec.Required)
	}
	for _, f := range append([]string{"targetRefs"}, fields...) {
		if _, ok := spec.Properties[f]; !ok {
			t.Errorf("spec.%s missing", f)
		}
	}
	return spec
}

func TestTrafficPolicyCRD(t *testing.T) {
	spec := policySpec(t, "gateway.xds-controller.dev_trafficpolicies.yaml", TrafficPolicyKind, "rateLimit", "compression", "requestBody")
	rule := spec.Properties["rateLimit"].Properties["local"].Properties["rules"].Items.Schema
	if len(rule.XValidations) != 2 || len(rule.Properties["unit"].Enum) != 3 || len(rule.Properties["by"].Enum) != 3 {
		t.Errorf("rateLimit.local.rules: %d rules, unit enum %v, by enum %v", len(rule.XValidations), rule.Properties["unit"].Enum, rule.Properties["by"].Enum)
	}
	if a := spec.Properties["compression"].Properties["algorithms"]; a.MaxItems == nil || *a.MaxItems != 3 || len(a.Items.Schema.Enum) != 3 {
		t.Errorf("compression.algorithms: maxItems %v, enum %v", a.MaxItems, a.Items.Schema.Enum)
	}
}

func TestBackendPolicyCRD(t *testing.T) {
	spec := policySpec(t, "gateway.xds-controller.dev_backendpolicies.yaml", BackendPolicyKind, "healthCheck", "circuitBreaker", "loadBalancer", "connection", "proxyProtocol")
	if tr := spec.Properties["targetRefs"]; len(tr.XValidations) != 2 || tr.MaxItems == nil || *tr.MaxItems != 16 {
		t.Errorf("targetRefs: %d rules, maxItems %v", len(tr.XValidations), tr.MaxItems)
	}
	lb := spec.Properties["loadBalancer"]
	if len(lb.XValidations) != 2 || len(lb.Properties["type"].Enum) != 5 || len(lb.Properties["hashKey"].XValidations) != 2 {
		t.Errorf("loadBalancer: %d rules, type enum %v, hashKey %d rules", len(lb.XValidations), lb.Properties["type"].Enum, len(lb.Properties["hashKey"].XValidations))
	}
	if a := spec.Properties["healthCheck"].Properties["active"]; len(a.XValidations) != 2 || len(a.Properties["type"].Enum) != 3 {
		t.Errorf("healthCheck.active: %d rules, type enum %v", len(a.XValidations), a.Properties["type"].Enum)
	}
}
