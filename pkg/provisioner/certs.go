package provisioner

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"sync"
	"time"

	"github.com/spiffe/go-spiffe/v2/spiffeid"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/xds-controller/xds-controller/pkg/infra"
	"github.com/xds-controller/xds-controller/pkg/provider/kubernetes"
)

// fleetCerts hands out the fleets' xDS client certificates. A certificate
// is issued only when the fleet has none that is still good (see
// reusable): the one issued before by this replica, else the one in the
// live <fleet>-xds-client Secret (written by an earlier leader). So a
// provisioning pass does not write the Secret again, and the pods are not
// disturbed.
type fleetCerts struct {
	mu     sync.Mutex
	issued map[types.NamespacedName]infra.ClientCert // by the Secret
}

func (c *fleetCerts) get(ctx context.Context, live client.Reader, ident *kubernetes.Identity, f infra.Fleet, now time.Time) (infra.ClientCert, error) {
	key := types.NamespacedName{Namespace: f.Namespace, Name: f.ClientSecret}
	c.mu.Lock()
	cached, ok := c.issued[key]
	c.mu.Unlock()
	if ok && reusable(cached, ident, f, now) {
		return cached, nil
	}
	var s corev1.Secret
	switch err := live.Get(ctx, key, &s); {
	case err == nil:
		cc := infra.ClientCert{CertPEM: s.Data[corev1.TLSCertKey], KeyPEM: s.Data[corev1.TLSPrivateKeyKey], CAPEM: s.Data[corev1.ServiceAccountRootCAKey]}
		if reusable(cc, ident, f, now) {
			c.store(key, cc)
			return cc, nil
		}
	case !apierrors.IsNotFound(err):
		return infra.ClientCert{}, err
	}
	certPEM, keyPEM, caPEM, err := ident.IssueFleetCertificate(f.Namespace, f.ServiceAccount)
	if err != nil {
		return infra.ClientCert{}, err
	}
	cc := infra.ClientCert{CertPEM: certPEM, KeyPEM: keyPEM, CAPEM: caPEM}
	c.store(key, cc)
	return cc, nil
}

func (c *fleetCerts) store(key types.NamespacedName, cc infra.ClientCert) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.issued == nil {
		c.issued = map[types.NamespacedName]infra.ClientCert{}
	}
	c.issued[key] = cc
}

// reusable reports whether cc can stay the fleet's credential at now: the
// key matches the certificate, the CA bundle is the controller's current
// CA and signed it, it names the fleet's SPIFFE ID, and more than a third
// of its lifetime is left.
func reusable(cc infra.ClientCert, ident *kubernetes.Identity, f infra.Fleet, now time.Time) bool {
	if len(cc.CertPEM) == 0 || !bytes.Equal(cc.CAPEM, ident.CA.CertPEM) {
		return false
	}
	pair, err := tls.X509KeyPair(cc.CertPEM, cc.KeyPEM)
	if err != nil {
		return false
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return false
	}
	want, err := spiffeid.FromSegments(ident.TrustDomain, "ns", f.Namespace, "sa", f.ServiceAccount)
	if err != nil || len(leaf.URIs) != 1 || leaf.URIs[0].String() != want.String() {
		return false
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: ident.CA.Pool(), CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return false
	}
	return now.Before(leaf.NotAfter.Add(-leaf.NotAfter.Sub(leaf.NotBefore) / 3))
}
