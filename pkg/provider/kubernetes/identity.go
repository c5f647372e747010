package kubernetes

import (
	"context"
	"crypto/tls"
	"fmt"
	"time"

	"github.com/spiffe/go-spiffe/v2/spiffeid"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/xds-controller/xds-controller/pkg/pki"
)

// The xDS channel's certificates: a CA kept in the Secret CASecretName of
// the controller's namespace (created by the first replica that finds it
// missing; every replica reads it and follows its changes: carotation.go),
// and a server certificate issued in memory and renewed before it
// expires, presented by the xDS server and the identity service. The proxies' SVIDs come from the identity service
// (pkg/identity, served by every replica), which signs them with this CA.

// CASecretName is the Secret, in the controller's namespace, that holds the
// xDS CA: keys ca.crt and ca.key when the controller created it, or tls.crt
// and tls.key when cert-manager did (a Certificate with isCA: true whose
// secretName is this; see the chart's identity.certManager value).
const CASecretName = "xds-controller-ca"

// CASource says where the CA Secret comes from.
type CASource int

const (
	// CACreate: the first replica that finds the Secret missing creates it.
	CACreate CASource = iota
	// CAExternal: something else (cert-manager) writes the Secret; replicas
	// wait for it and never create one.
	CAExternal
)

// Validities.
const (
	caValidity     = 10 * 365 * 24 * time.Hour
	serverValidity = 30 * 24 * time.Hour
)

// Identity is the controller's CA state (the Authority: the CA that signs,
// the CAs still trusted during a rotation) and its xDS server certificate.
type Identity struct {
	Authority   *pki.Authority
	TrustDomain spiffeid.TrustDomain
	// ServerID is the xDS server's SPIFFE ID,
	// spiffe://<trust-domain>/ns/<namespace>/sa/<serviceAccount>.
	ServerID spiffeid.ID
	// Overlap times a rotation (pki.OverlapFor the SVID lifetime).
	Overlap pki.Overlap
	server  *pki.ServerCert
	now     func() time.Time
}

// LoadOrCreateIdentity reads the CA from the Secret CASecretName in
// namespace. With CACreate it creates the Secret when missing (when several
// replicas race, the loser of the Create reads the winner's); with
// CAExternal it waits, polling every waitCAInterval until ctx ends, for
// another writer (cert-manager) to create it. The CAs that a rotation
// retired and that are still trusted come from the ConfigMap
// TrustConfigMapName (a record it cannot read or parse is left out: the
// rotation watch reports it). It then issues the server certificate for
// serviceAccount: SANs DNS <serviceAccount>.<ns>.svc and
// <serviceAccount>.<ns>.svc.cluster.local, URI the SPIFFE ID. c must read
// Secrets from the API server, not from a cache. svidLifetime sets the
// rotation's Overlap.
func LoadOrCreateIdentity(ctx context.Context, c client.Client, namespace, serviceAccount, trustDomain string, source CASource, svidLifetime time.Duration) (*Identity, error) {
	td, err := spiffeid.TrustDomainFromString(trustDomain)
	if err != nil {
		return nil, fmt.Errorf("trust domain: %w", err)
	}
	var ca *pki.CA
	if source == CAExternal {
		ca, err = waitForCA(ctx, c, namespace)
	} else {
		ca, err = loadOrCreateCA(ctx, c, namespace, td)
	}
	if err != nil {
		return nil, err
	}
	id, err := spiffeid.FromSegments(td, "ns", namespace, "sa", serviceAccount)
	if err != nil {
		return nil, err
	}
	auth := pki.NewAuthority(td, ca)
	overlap := pki.OverlapFor(svidLifetime)
	ident := &Identity{
		Authority:   auth,
		TrustDomain: td,
		ServerID:    id,
		Overlap:     overlap,
		server: &pki.ServerCert{
			Authority: auth,
			ID:        id,
			DNSNames:  []string{serviceAccount + "." + namespace + ".svc", serviceAccount + "." + namespace + ".svc.cluster.local"},
			Validity:  serverValidity,
			Overlap:   overlap,
		},
		now: time.Now,
	}
	var cm corev1.ConfigMap
	if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: TrustConfigMapName}, &cm); err == nil {
		if retired, err := pki.ParseRetired([]byte(cm.Data[trustRetiredKey])); err == nil {
			ident.Authority.Set(ident.Authority.Trust().Merge(retired).Prune(time.Now(), ident.Overlap))
		}
	}
	if _, err := ident.server.Certificate(); err != nil {
		return nil, err
	}
	return ident, nil
}

func loadOrCreateCA(ctx context.Context, c client.Client, namespace string, td spiffeid.TrustDomain) (*pki.CA, error) {
	key := types.NamespacedName{Namespace: namespace, Name: CASecretName}
	for range 5 {
		var s corev1.Secret
		err := c.Get(ctx, key, &s)
		if err == nil {
			return parseCASecret(&s)
		}
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("reading CA Secret %s: %w", key, err)
		}
		ca, keyPEM, err := pki.NewCA(td, caValidity)
		if err != nil {
			return nil, err
		}
		s = corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: namespace,
				Name:      CASecretName,
				Labels:    map[string]string{"app.kubernetes.io/managed-by": "xds-controller"},
			},
			Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{pki.CACertFile: ca.CertPEM, pki.CAKeyFile: keyPEM},
		}
		err = c.Create(ctx, &s)
		if err == nil {
			return ca, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("creating CA Secret %s: %w", key, err)
		}
		// Another replica created it first: read theirs.
	}
	return nil, fmt.Errorf("CA Secret %s: could not read or create it", key)
}

// waitCAInterval is how often waitForCA looks for the CA Secret.
var waitCAInterval = 2 * time.Second

// waitForCA polls for the CA Secret that another writer creates, until ctx
// ends. Errors: ctx's, or the Secret's content (parseCASecret).
func waitForCA(ctx context.Context, c client.Client, namespace string) (*pki.CA, error) {
	key := types.NamespacedName{Namespace: namespace, Name: CASecretName}
	for {
		var s corev1.Secret
		err := c.Get(ctx, key, &s)
		switch {
		case err == nil:
			return parseCASecret(&s)
		case !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("reading CA Secret %s: %w", key, err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for CA Secret %s (written by cert-manager?): %w", key, ctx.Err())
		case <-time.After(waitCAInterval):
		}
	}
}

// parseCASecret reads the CA from s: ca.crt and ca.key as the controller
// writes them, else tls.crt and tls.key as cert-manager writes them for a
// CA Certificate. Errors: neither pair present, a certificate that is not a
// CA or does not match its key, or an expired CA.
func parseCASecret(s *corev1.Secret) (*pki.CA, error) {
	key := s.Namespace + "/" + s.Name
	certPEM, keyPEM := s.Data[pki.CACertFile], s.Data[pki.CAKeyFile]
	if len(keyPEM) == 0 {
		certPEM, keyPEM = s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey]
	}
	if len(keyPEM) == 0 {
		return nil, fmt.Errorf("CA Secret %s has neither %s/%s nor %s/%s", key, pki.CACertFile, pki.CAKeyFile, corev1.TLSCertKey, corev1.TLSPrivateKeyKey)
	}
	ca, err := pki.ParseCA(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("CA Secret %s: %w", key, err)
	}
	if time.Now().After(ca.Cert.NotAfter) {
		return nil, fmt.Errorf("CA Secret %s expired at %s; replace its content with a valid CA (docs/identity.md)", key, ca.Cert.NotAfter.Format(time.RFC3339))
	}
	return ca, nil
}

// ServerTLS is the xDS server's TLS configuration: TLS 1.3, ALPN h2, a
// client certificate required that chains to a CA of the bundle as it is
// at the handshake (pki.ServerCert.MTLSConfig).
func (i *Identity) ServerTLS() *tls.Config { return i.server.MTLSConfig("h2") }

// IdentityTLS is the identity service's TLS configuration: the same server
// certificate as xDS (the agents check its SPIFFE ID), TLS 1.3, no client
// certificate (the proxies have none yet: they authenticate with their
// token).
func (i *Identity) IdentityTLS() *tls.Config { return i.server.TLSConfig("h2", "http/1.1") }
