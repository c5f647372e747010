package e2ecluster

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestGatewayFieldsOnTheLocalCluster installs the chart with the
// experimental channel's CRDs in Shared and in Dedicated mode and shows
// three experimental Gateway fields on a real cluster:
//   - address routability Cluster (GEP-5093): the Gateway cluster-only
//     gets a ClusterIP Service, reports that cluster IP with routability
//     Cluster and AddressesAssigned=True, and answers HTTP on it;
//   - default Gateways (GEP-3793): cluster-only has defaultScope All, and
//     the route defaulted, which names no parent and asks for the default
//     Gateways, is served through it;
//   - ClusterTrustBundle (GEP-5075): a BackendTLSPolicy on bar naming a
//     bundle that does not exist is NoValidCACertificate; once the bundle
//     is created, the controller (watching bundles with the chart's RBAC)
//     accepts the policy.
func TestGatewayFieldsOnTheLocalCluster(t *testing.T) {
	inBothModes(t, (*env).gatewayFields)
}

func (e *env) gatewayFields(mode string) {
	ctx := context.Background()
	e.cleanup()
	// As in TestExperimentalChannelOnTheLocalCluster: the v1.7.0
	// safe-upgrades policy refuses experimental CRDs over standard ones.
	e.mustKubectl("", "delete", "--ignore-not-found",
		"validatingadmissionpolicybinding,validatingadmissionpolicy", "safe-upgrades.gateway.networking.k8s.io")
	e.helmInstallWith(mode, map[string]any{
		"gatewayAPI": map[string]any{"installCRDs": true, "channel": "experimental"},
	})
	e.applyExamples()
	e.t.Cleanup(func() {
		_, _ = e.kubectl("", "delete", "--ignore-not-found", "clustertrustbundle", "xds-e2e-backends-ca")
	})
	e.mustKubectl(`apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: cluster-only, namespace: `+exampleNamespace+`}
spec:
  gatewayClassName: `+className+`
  defaultScope: All
  addresses: [{type: IPAddress, routability: Cluster}]
  listeners: [{name: http, protocol: HTTP, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: defaulted, namespace: `+exampleNamespace+`}
spec:
  useDefaultGateways: All
  hostnames: [defaulted.example.com]
  rules: [{backendRefs: [{name: foo, port: 80}]}]
`, "apply", "-f", "-")

	svcName := "cluster-only-" + className
	var svc *corev1.Service
	e.eventually("Service "+svcName+" of type ClusterIP", 2*time.Minute, func() error {
		s, err := e.kube.CoreV1().Services(exampleNamespace).Get(ctx, svcName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if s.Spec.Type != corev1.ServiceTypeClusterIP || s.Spec.ClusterIP == "" || len(s.Spec.ExternalIPs) > 0 {
			return fmt.Errorf("type %s clusterIP %q externalIPs %v", s.Spec.Type, s.Spec.ClusterIP, s.Spec.ExternalIPs)
		}
		svc = s
		return nil
	})
	e.eventually("Gateway cluster-only reports its cluster IP with routability Cluster", 3*time.Minute, func() error {
		gw, err := e.dyn.Resource(gatewayGVR).Namespace(exampleNamespace).Get(ctx, "cluster-only", metav1.GetOptions{})
		if err != nil {
			return err
		}
		for typ, want := range map[string]string{"Programmed": "True", "AddressesAssigned": "True", "DefaultGateway": "True"} {
			if c := condition(gw, typ); c == nil || c["status"] != want {
				return fmt.Errorf("%s: %v", typ, c)
			}
		}
		addrs, _, _ := unstructured.NestedSlice(gw.Object, "status", "addresses")
		if len(addrs) != 1 {
			return fmt.Errorf("status.addresses %v", addrs)
		}
		a, _ := addrs[0].(map[string]any)
		if a["value"] != svc.Spec.ClusterIP || a["routability"] != "Cluster" {
			return fmt.Errorf("status.addresses %v, want %s with routability Cluster", addrs, svc.Spec.ClusterIP)
		}
		e.t.Logf("Gateway cluster-only: status.addresses %v; Service %s type %s", addrs, svcName, svc.Spec.Type)
		return nil
	})
	e.expectBackend(svc.Spec.ClusterIP, "defaulted.example.com", "/", "foo", 2*time.Minute)
	e.eventually("HTTPRoute defaulted Accepted by its default Gateway", time.Minute, func() error {
		out, err := e.kubectl("", "-n", exampleNamespace, "get", "httproute", "defaulted", "-o",
			`jsonpath={range .status.parents[*]}{.parentRef.name}={.conditions[?(@.type=="Accepted")].status}{" "}{end}`)
		if err == nil && strings.TrimSpace(out) != "cluster-only=True" {
			err = fmt.Errorf("status.parents: %q", out)
		}
		return err
	})

	// A BackendTLSPolicy whose ClusterTrustBundle is missing, then created.
	e.mustKubectl(`apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: {name: bar-tls, namespace: `+exampleNamespace+`}
spec:
  targetRefs: [{group: "", kind: Service, name: bar}]
  validation:
    hostname: bar.example.com
    caCertificateRefs: [{group: certificates.k8s.io, kind: ClusterTrustBundle, name: xds-e2e-backends-ca}]
`, "apply", "-f", "-")
	policy := func(want string) func() error {
		return func() error {
			out, err := e.kubectl("", "-n", exampleNamespace, "get", "backendtlspolicy", "bar-tls", "-o",
				`jsonpath={range .status.ancestors[*]}{.ancestorRef.name}:{.conditions[?(@.type=="Accepted")].reason}/{.conditions[?(@.type=="ResolvedRefs")].reason}{" "}{end}`)
			if err == nil && !strings.Contains(out, want) {
				err = fmt.Errorf("status.ancestors: %q, want %q", out, want)
			}
			return err
		}
	}
	e.eventually("BackendTLSPolicy bar-tls without its ClusterTrustBundle", time.Minute, policy("web:NoValidCACertificate/InvalidCACertificateRef"))
	e.mustKubectl(`apiVersion: certificates.k8s.io/v1
kind: ClusterTrustBundle
metadata: {name: xds-e2e-backends-ca}
spec:
  trustBundle: |
`+indent(selfSignedPEM(e.t), "    "), "apply", "-f", "-")
	e.eventually("BackendTLSPolicy bar-tls with its ClusterTrustBundle", time.Minute, policy("web:Accepted/ResolvedRefs"))
}

// selfSignedPEM is a new self-signed CA certificate, PEM.
func selfSignedPEM(t *testing.T) string {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "xds e2e backends CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// indent prefixes every line of s with p.
func indent(s, p string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := range lines {
		lines[i] = p + lines[i]
	}
	return strings.Join(lines, "\n") + "\n"
}
