package kubernetes

import (
	"context"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwapixv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

// TestListResourcesListsEveryKind: with one object of every kind of the
// snapshot's registry in the API server, ListResources returns each of
// them in its list of the snapshot, Namespaces with their labels (read as
// metadata), and no Secret or ConfigMap (only references bring those in).
func TestListResourcesListsEveryKind(t *testing.T) {
	s, err := Scheme()
	if err != nil {
		t.Fatal(err)
	}
	clusterScoped := map[resources.Kind]bool{resources.GatewayClassKind: true, resources.NamespaceKind: true, resources.IngressClassKind: true}
	var objs []client.Object
	for _, k := range resources.Kinds() {
		o := k.New()
		o.SetName("one-" + k.Name())
		if !clusterScoped[k] {
			o.SetNamespace("default")
		}
		o.SetLabels(map[string]string{"kind": k.Name()})
		objs = append(objs, o)
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
	res, err := ListResources(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range resources.Kinds() {
		got := k.Objects(res)
		if k == resources.SecretKind || k == resources.ConfigMapKind {
			if len(got) != 0 {
				t.Errorf("%s: listed %d objects, want none", k.Name(), len(got))
			}
			continue
		}
		if len(got) != 1 || got[0].GetName() != "one-"+k.Name() || got[0].GetLabels()["kind"] != k.Name() {
			t.Errorf("%s: listed %v, want one-%s with its labels", k.Name(), got, k.Name())
		}
	}
}

// An XBackend's tls names a client certificate Secret and CA ConfigMaps:
// the provider fetches them as it does a policy's references (the
// translation reads them; without the fetch they would read as missing).
func TestXBackendReferencesAreFetched(t *testing.T) {
	res := &resources.Resources{XBackends: []*gwapixv1alpha1.XBackend{{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "pay"},
		Spec: gwapixv1alpha1.BackendSpec{
			Type:             gwapixv1alpha1.BackendTypeExternalHostname,
			ExternalHostname: &gwapixv1alpha1.ExternalHostnameBackend{Hostname: "api.example.org"},
			TLS: &gwapixv1alpha1.BackendTLS{
				Mode:                 gwapixv1alpha1.BackendTLSModeClientAndServer,
				ClientCertificateRef: &gwapiv1.SecretObjectReference{Name: "client"},
				Validation:           &gwapiv1.BackendTLSPolicyValidation{CACertificateRefs: []gwapiv1.LocalObjectReference{{Kind: "ConfigMap", Name: "ca"}}},
			},
		},
	}}}
	if got := ReferencedSecrets(res, gatewayapi.ControllerName); !slices.Contains(got, types.NamespacedName{Namespace: "shop", Name: "client"}) {
		t.Errorf("ReferencedSecrets = %v, want shop/client", got)
	}
	if got := ReferencedConfigMaps(res); !slices.Contains(got, types.NamespacedName{Namespace: "shop", Name: "ca"}) {
		t.Errorf("ReferencedConfigMaps = %v, want shop/ca", got)
	}
}
