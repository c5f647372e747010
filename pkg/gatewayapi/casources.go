package gatewayapi

// CA certificate sources: the objects a caCertificateRef may name
// (BackendTLSPolicy validation.caCertificateRefs, Gateway
// spec.tls.frontend validation caCertificateRefs) and how their PEM
// certificates are read, one way for every kind.

import (
	"crypto/x509"
	"encoding/pem"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The kinds a caCertificateRef may name: a core ConfigMap (its "ca.crt";
// Core support) and a certificates.k8s.io ClusterTrustBundle (its
// spec.trustBundle; Extended support, feature ClusterTrustBundle, GEP-5075).
const (
	kindConfigMap          = "ConfigMap"
	kindClusterTrustBundle = "ClusterTrustBundle"
)

// caSource is one object a caCertificateRef names: a ConfigMap
// (namespaced) or a ClusterTrustBundle (cluster-scoped: namespace "").
type caSource struct {
	kind string
	nn   types.NamespacedName
}

// String is "ConfigMap ns/name" or "ClusterTrustBundle name", for
// messages.
func (s caSource) String() string {
	if s.nn.Namespace == "" {
		return s.kind + " " + s.nn.Name
	}
	return s.kind + " " + s.nn.String()
}

// caSourceOf is the object a caCertificateRef of group and kind names,
// resolved from namespace ns (the referrer's, or the ref's own for a
// namespaced kind); false when the kind is neither a core ConfigMap nor a
// certificates.k8s.io ClusterTrustBundle. A ClusterTrustBundle is found by
// name alone: the API says the implementation resolves the scope by kind.
func caSourceOf[G, K ~string](group G, kind K, ns, name string) (caSource, bool) {
	switch {
	case group == "" && kind == kindConfigMap:
		return caSource{kind: kindConfigMap, nn: nn(ns, name)}, true
	case string(group) == certificatesv1.GroupName && kind == kindClusterTrustBundle:
		return caSource{kind: kindClusterTrustBundle, nn: nn("", name)}, true
	}
	return caSource{}, false
}

// caBundle reads the PEM certificates of src (a ConfigMap's "ca.crt", a
// ClusterTrustBundle's spec.trustBundle; blocks that are not certificates
// are skipped), or says why there are none: the object is missing (it
// reads as missing when it cannot be read at all, as for a ClusterTrustBundle
// on a cluster that does not serve the kind), has no ca.crt, or holds no
// certificate.
func (t *translator) caBundle(src caSource) ([]byte, string) {
	var data string
	switch src.kind {
	case kindConfigMap:
		cm := t.configMaps[src.nn]
		if cm == nil {
			return nil, "not found"
		}
		d, ok := cm.Data["ca.crt"]
		if !ok {
			return nil, "has no ca.crt"
		}
		data = d
	case kindClusterTrustBundle:
		b := t.trustBundles[src.nn.Name]
		if b == nil {
			return nil, "not found"
		}
		data = b.Spec.TrustBundle
	}
	out := pemCertificates(data)
	if len(out) == 0 {
		if src.kind == kindConfigMap {
			return nil, "ca.crt holds no PEM certificate"
		}
		return nil, "spec.trustBundle holds no PEM certificate"
	}
	return out, ""
}

// pemCertificates are the PEM blocks of data that are X.509 certificates,
// re-encoded; everything else is skipped.
func pemCertificates(data string) []byte {
	var out []byte
	rest := []byte(data)
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return out
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		if _, err := x509.ParseCertificate(b.Bytes); err != nil {
			continue
		}
		out = append(out, pem.EncodeToMemory(b)...)
	}
}

// indexTrustBundles indexes the snapshot's ClusterTrustBundles by name
// (the first of duplicates wins, as for every kind).
func (t *translator) indexTrustBundles() {
	t.trustBundles = make(map[string]*certificatesv1.ClusterTrustBundle, len(t.res.ClusterTrustBundles))
	for _, b := range t.res.ClusterTrustBundles {
		if b != nil {
			if _, ok := t.trustBundles[b.Name]; !ok {
				t.trustBundles[b.Name] = b
			}
		}
	}
}
