package kubernetes

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/spiffe/go-spiffe/v2/spiffeid"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/xds-controller/xds-controller/pkg/pki"
)

// TestCARotationReplicasAgree: two replicas read the CA Secret; it is
// replaced (cert-manager's tls.crt/tls.key pair). The replica that held
// the old CA records it; a replica that starts after the rotation learns
// it from the record; both trust both CAs and issue from the new one; the
// first signs its server certificate with the old key until the handover;
// at the drop both trust the new CA only and the record is empty. A
// Secret that does not hold a CA changes nothing.
func TestCARotationReplicasAgree(t *testing.T) {
	s, err := Scheme()
	if err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(s).Build()
	ctx := context.Background()
	first, err := LoadOrCreateIdentity(ctx, c, "system", "xds-controller", "cluster.local", CACreate, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	old := first.Authority.Current()
	now := time.Now()
	clock := func() time.Time { return now }
	first.now, first.server.Now = clock, clock
	watch := func(i *Identity) *caWatch {
		return &caWatch{ident: i, read: c, c: c, ns: "system", create: true, log: slog.Default()}
	}

	next, keyPEM, err := pki.NewCA(spiffeid.RequireTrustDomainFromString("cluster.local"), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	var sec corev1.Secret
	key := types.NamespacedName{Namespace: "system", Name: CASecretName}
	if err := c.Get(ctx, key, &sec); err != nil {
		t.Fatal(err)
	}
	sec.Data = map[string][]byte{"tls.crt": next.CertPEM, "tls.key": keyPEM, "ca.crt": next.CertPEM}
	if err := c.Update(ctx, &sec); err != nil {
		t.Fatal(err)
	}
	if err := watch(first).sync(ctx); err != nil {
		t.Fatal(err)
	}
	if !first.Authority.Current().Cert.Equal(next.Cert) || len(first.Authority.Bundle().X509Authorities()) != 2 {
		t.Fatalf("after the rotation: signing %v, %d CAs trusted; want the new CA, 2", first.Authority.Current().Cert.Subject, len(first.Authority.Bundle().X509Authorities()))
	}
	var cm corev1.ConfigMap
	if err := c.Get(ctx, types.NamespacedName{Namespace: "system", Name: TrustConfigMapName}, &cm); err != nil {
		t.Fatalf("no record of the retired CA: %v", err)
	}
	if !strings.Contains(cm.Data["retired.crt"], "Retired-At") || strings.Count(cm.Data["ca.crt"], "BEGIN CERTIFICATE") != 2 {
		t.Errorf("record: %v", cm.Data)
	}
	cert, _ := first.server.Certificate()
	if cert.Leaf.CheckSignatureFrom(old.Cert) != nil {
		t.Error("before the handover the server certificate must come from the old CA")
	}

	late, err := LoadOrCreateIdentity(ctx, c, "system", "xds-controller", "cluster.local", CACreate, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(late.Authority.BundlePEM()), string(first.Authority.BundlePEM()); got != want {
		t.Errorf("the late replica's bundle differs:\n%s\nwant\n%s", got, want)
	}
	if cert, _ := late.server.Certificate(); cert.Leaf.CheckSignatureFrom(next.Cert) != nil {
		t.Error("a replica without the old key must sign with the new CA")
	}

	now = now.Add(first.Overlap.Handover)
	if cert, _ := first.server.Certificate(); cert.Leaf.CheckSignatureFrom(next.Cert) != nil {
		t.Error("after the handover the server certificate must come from the new CA")
	}
	now = now.Add(first.Overlap.Drop - first.Overlap.Handover)
	late.now = clock
	for _, i := range []*Identity{first, late} {
		if err := watch(i).sync(ctx); err != nil {
			t.Fatal(err)
		}
		if got := i.Authority.Bundle().X509Authorities(); len(got) != 1 || !got[0].Equal(next.Cert) {
			t.Errorf("after the drop %d CAs are trusted, want the new one only", len(got))
		}
	}
	if err := c.Get(ctx, types.NamespacedName{Namespace: "system", Name: TrustConfigMapName}, &cm); err != nil || cm.Data["retired.crt"] != "" {
		t.Errorf("record after the drop: %v %v", cm.Data, err)
	}

	sec.Data = map[string][]byte{"tls.crt": []byte("not a certificate"), "tls.key": keyPEM}
	if err := c.Update(ctx, &sec); err != nil {
		t.Fatal(err)
	}
	if err := watch(first).sync(ctx); err == nil {
		t.Error("a Secret without a valid CA was accepted silently")
	}
	if !first.Authority.Current().Cert.Equal(next.Cert) {
		t.Error("a bad Secret replaced the CA")
	}
}
