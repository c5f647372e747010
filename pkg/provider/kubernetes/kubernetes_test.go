package kubernetes

import (
	"context"
	"crypto/tls"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spiffe/go-spiffe/v2/spiffeid"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/pki"
	"github.com/xds-controller/xds-controller/pkg/resources"
	"github.com/xds-controller/xds-controller/pkg/xdsserver"
)

func TestReferencedSecrets(t *testing.T) {
	ns := gwapiv1.Namespace("certs")
	core, secret, other := gwapiv1.Group(""), gwapiv1.Kind("Secret"), gwapiv1.Kind("ConfigMap")
	tls := func(refs ...gwapiv1.SecretObjectReference) gwapiv1.Listener {
		return gwapiv1.Listener{Name: "https", Protocol: gwapiv1.HTTPSProtocolType, Port: 443, TLS: &gwapiv1.ListenerTLSConfig{CertificateRefs: refs}}
	}
	res := &resources.Resources{
		GatewayClasses: []*gwapiv1.GatewayClass{
			{ObjectMeta: metav1.ObjectMeta{Name: "xds"}, Spec: gwapiv1.GatewayClassSpec{ControllerName: gatewayapi.ControllerName}},
			{ObjectMeta: metav1.ObjectMeta{Name: "theirs"}, Spec: gwapiv1.GatewayClassSpec{ControllerName: "example.com/other"}},
		},
		Gateways: []*gwapiv1.Gateway{
			{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a"}, Spec: gwapiv1.GatewaySpec{GatewayClassName: "xds", Listeners: []gwapiv1.Listener{
				tls(gwapiv1.SecretObjectReference{Name: "b"}, gwapiv1.SecretObjectReference{Name: "a", Group: &core, Kind: &secret}),
				{Name: "http", Protocol: gwapiv1.HTTPProtocolType, Port: 80},
			}}},
			{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "b"}, Spec: gwapiv1.GatewaySpec{GatewayClassName: "xds", Listeners: []gwapiv1.Listener{
				tls(gwapiv1.SecretObjectReference{Name: "x", Namespace: &ns}, gwapiv1.SecretObjectReference{Name: "a"}, gwapiv1.SecretObjectReference{Name: "cm", Kind: &other}),
			}}},
			{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "c"}, Spec: gwapiv1.GatewaySpec{GatewayClassName: "theirs", Listeners: []gwapiv1.Listener{
				tls(gwapiv1.SecretObjectReference{Name: "not-ours"}),
			}, TLS: &gwapiv1.GatewayTLSConfig{Backend: &gwapiv1.GatewayBackendTLS{ClientCertificateRef: &gwapiv1.SecretObjectReference{Name: "not-ours-client"}}}}},
			// spec.tls.backend clientCertificateRef, in the Gateway's
			// namespace and in another one.
			{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "d"}, Spec: gwapiv1.GatewaySpec{GatewayClassName: "xds",
				TLS: &gwapiv1.GatewayTLSConfig{Backend: &gwapiv1.GatewayBackendTLS{ClientCertificateRef: &gwapiv1.SecretObjectReference{Name: "client"}}}}},
			{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "e"}, Spec: gwapiv1.GatewaySpec{GatewayClassName: "xds",
				TLS: &gwapiv1.GatewayTLSConfig{Backend: &gwapiv1.GatewayBackendTLS{ClientCertificateRef: &gwapiv1.SecretObjectReference{Name: "client", Namespace: &ns}}}}},
		},
	}
	// ListenerSets: one of Gateway default/a (its refs default to its own
	// namespace), one of the other controller's Gateway default/c.
	entry := func(name gwapiv1.ObjectName) gwapiv1.ListenerEntry {
		return gwapiv1.ListenerEntry{Name: "https", Protocol: gwapiv1.HTTPSProtocolType, Port: 443,
			TLS: &gwapiv1.ListenerTLSConfig{CertificateRefs: []gwapiv1.SecretObjectReference{{Name: name}}}}
	}
	gwNS := gwapiv1.Namespace("default")
	res.ListenerSets = []*gwapiv1.ListenerSet{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "set"}, Spec: gwapiv1.ListenerSetSpec{
			ParentRef: gwapiv1.ParentGatewayReference{Name: "a", Namespace: &gwNS}, Listeners: []gwapiv1.ListenerEntry{entry("set-cert")}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "theirs"}, Spec: gwapiv1.ListenerSetSpec{
			ParentRef: gwapiv1.ParentGatewayReference{Name: "c"}, Listeners: []gwapiv1.ListenerEntry{entry("not-ours-either")}}},
	}
	got := ReferencedSecrets(res, gatewayapi.ControllerName)
	want := []types.NamespacedName{{Namespace: "apps", Name: "set-cert"}, {Namespace: "certs", Name: "client"}, {Namespace: "certs", Name: "x"}, {Namespace: "default", Name: "a"}, {Namespace: "default", Name: "b"}, {Namespace: "default", Name: "client"}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}

type fakeLock struct {
	resourcelock.Interface
	id  string
	err error
}

func (f *fakeLock) Identity() string { return f.id }
func (f *fakeLock) Create(context.Context, resourcelock.LeaderElectionRecord) error {
	return f.err
}
func (f *fakeLock) Update(context.Context, resourcelock.LeaderElectionRecord) error {
	return f.err
}

func TestLeadership(t *testing.T) {
	lock := &fakeLock{id: "me"}
	g := &leaseGuard{Interface: lock, valid: 50 * time.Millisecond}
	l := &leadership{guard: g}
	if l.Leading() {
		t.Fatal("leading before election")
	}
	_ = g.Create(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "me"})
	l.running.Store(true)
	if !l.Leading() {
		t.Fatal("not leading after acquiring the Lease")
	}
	// Renewals fail: the lead expires on our side after the renew deadline.
	lock.err = errors.New("apiserver unreachable")
	_ = g.Update(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "me"})
	time.Sleep(60 * time.Millisecond)
	if l.Leading() {
		t.Fatal("still leading after renewals failed past the deadline")
	}
	// Renewed again; then released.
	lock.err = nil
	_ = g.Update(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "me"})
	if !l.Leading() {
		t.Fatal("not leading after a renewal")
	}
	_ = g.Update(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: ""})
	if l.Leading() {
		t.Fatal("leading after releasing the Lease")
	}
	// Without leader election the runnable alone decides.
	solo := &leadership{}
	solo.running.Store(true)
	if !solo.Leading() {
		t.Fatal("a replica without leader election does not lead")
	}
}

func TestIdentity(t *testing.T) {
	s, err := Scheme()
	if err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(s).Build()
	ctx := context.Background()
	a, err := LoadOrCreateIdentity(ctx, c, "system", "xds-controller", "cluster.local", CACreate, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	// A second replica reads the same CA.
	b, err := LoadOrCreateIdentity(ctx, c, "system", "xds-controller", "cluster.local", CACreate, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Authority.Current().Cert.Equal(b.Authority.Current().Cert) {
		t.Fatal("the second replica made its own CA")
	}
	var sec corev1.Secret
	if err := c.Get(ctx, types.NamespacedName{Namespace: "system", Name: CASecretName}, &sec); err != nil {
		t.Fatal(err)
	}
	cert, err := a.server.Certificate()
	if err != nil {
		t.Fatal(err)
	}
	leaf := cert.Leaf
	if leaf.URIs[0].String() != "spiffe://cluster.local/ns/system/sa/xds-controller" ||
		leaf.DNSNames[0] != "xds-controller.system.svc" || leaf.DNSNames[1] != "xds-controller.system.svc.cluster.local" {
		t.Errorf("server certificate: URIs %v DNS %v", leaf.URIs, leaf.DNSNames)
	}
	if a.ServerTLS().ClientAuth != tls.RequireAndVerifyClientCert {
		t.Error("the xDS server does not require client certificates")
	}

	if a.IdentityTLS().ClientAuth != tls.NoClientCert {
		t.Error("the identity service asks for a client certificate (proxies have none before their first SVID)")
	}
}

// TestIdentityFromCertManager: with CAExternal the controller never
// creates the CA Secret; it waits for it and reads the tls.crt/tls.key pair
// that cert-manager writes for a CA Certificate.
func TestIdentityFromCertManager(t *testing.T) {
	s, err := Scheme()
	if err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(s).Build()
	defer func(d time.Duration) { waitCAInterval = d }(waitCAInterval)
	waitCAInterval = 10 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := LoadOrCreateIdentity(ctx, c, "system", "xds-controller", "cluster.local", CAExternal, time.Hour); err == nil || !strings.Contains(err.Error(), "cert-manager") {
		t.Fatalf("without the Secret: %v, want an error naming cert-manager", err)
	}
	key := types.NamespacedName{Namespace: "system", Name: CASecretName}
	if err := c.Get(context.Background(), key, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the controller created the CA Secret itself: %v", err)
	}

	ca, keyPEM, err := pki.NewCA(spiffeid.RequireTrustDomainFromString("cluster.local"), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "system", Name: CASecretName},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{"tls.crt": ca.CertPEM, "tls.key": keyPEM, "ca.crt": ca.CertPEM},
	}); err != nil {
		t.Fatal(err)
	}
	got, err := LoadOrCreateIdentity(context.Background(), c, "system", "xds-controller", "cluster.local", CAExternal, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Authority.Current().Cert.Equal(ca.Cert) {
		t.Error("the identity does not use cert-manager's CA")
	}

	// A Secret without a key pair is refused with a clear error.
	bad := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "system", Name: CASecretName}, Data: map[string][]byte{"ca.crt": ca.CertPEM}}
	if _, err := parseCASecret(bad); err == nil || !strings.Contains(err.Error(), "neither") {
		t.Errorf("a Secret without a key: %v", err)
	}
}

// TestFleetScopes: the SVID of a shared fleet may subscribe to its class's
// scope, a dedicated fleet's to its Gateway's, and nothing else.
func TestFleetScopes(t *testing.T) {
	td := spiffeid.RequireTrustDomainFromString("cluster.local")
	x := &ir.IR{Gateways: []*ir.Gateway{
		{Namespace: "apps", Name: "web", Class: "xds", Scope: "gatewayclass/xds"},
		{Namespace: "apps", Name: "api", Class: "xds", Scope: "gatewayclass/xds"},
		{Namespace: "team", Name: "web", Class: "xds", Scope: "gateway/team/web"},
	}}
	table := FleetScopes(td, "xds-system", x)
	for id, scope := range map[string]string{
		"spiffe://cluster.local/ns/xds-system/sa/envoy-xds": "gatewayclass/xds",
		"spiffe://cluster.local/ns/team/sa/web-xds":         "gateway/team/web",
	} {
		if err := xdsserver.Authorize(table, spiffeid.RequireFromString(id), scope); err != nil {
			t.Error(err)
		}
	}
	for id, scope := range map[string]string{
		"spiffe://cluster.local/ns/xds-system/sa/envoy-xds": "gateway/team/web",
		"spiffe://cluster.local/ns/team/sa/web-xds":         "gatewayclass/xds",
		"spiffe://cluster.local/ns/apps/sa/web-xds":         "gatewayclass/xds",
	} {
		if err := xdsserver.Authorize(table, spiffeid.RequireFromString(id), scope); err == nil {
			t.Errorf("%s allowed %s", id, scope)
		}
	}
	if len(table) != 2 {
		t.Errorf("table %v", table)
	}
}

func TestSharedResolver(t *testing.T) {
	gw := &gwapiv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}, Spec: gwapiv1.GatewaySpec{GatewayClassName: "xds"}}
	var r SharedResolver
	if got := r.ScopeFor(gw); got != "gatewayclass/xds" {
		t.Errorf("scope: %s", got)
	}
	if got := r.ServiceFor(gw); got != (types.NamespacedName{Namespace: "ns", Name: "web-xds"}) {
		t.Errorf("service: %s", got)
	}
	if got := r.BindPortFor(gw, 80); got != 80 {
		t.Errorf("bind port: %d", got)
	}
	if r.InvalidParameters() != nil {
		t.Error("refusals without parameters")
	}
}
