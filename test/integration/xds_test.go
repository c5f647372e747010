package integration

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spiffe/go-spiffe/v2/spiffeid"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/xds-controller/xds-controller/internal/xdsclient"
	"github.com/xds-controller/xds-controller/pkg/identity"
)

// TestIdentityServiceAndXDS runs the identity service against the real
// API server's TokenReview: a pod-bound token of the shared fleet's
// ServiceAccount for our audience buys an SVID, which then gets the
// class's configuration over ADS and is refused another scope with
// PERMISSION_DENIED; a token for another audience, a token not bound to a
// pod, and a token of a ServiceAccount that is no fleet's are refused.
func TestIdentityServiceAndXDS(t *testing.T) {
	requireAPIServer(t)
	ctx := context.Background()
	f := newIdentityFixture(t, "identity")
	r, kube, fleetPod, strangerPod, client, key, csr := f.r, f.kube, f.fleetPod, f.strangerPod, f.client, f.key, f.csr

	var resp *identity.SignResponse
	eventually(t, 10*time.Second, "an SVID for the shared fleet", func() error {
		var err error
		resp, err = client.Sign(ctx, token(t, kube, controllerNamespace, "envoy-xds", identity.DefaultAudience, fleetPod), csr)
		return err
	})
	if want := "spiffe://cluster.local/ns/" + controllerNamespace + "/sa/envoy-xds"; resp.SPIFFEID != want {
		t.Errorf("SVID %s, want %s", resp.SPIFFEID, want)
	}

	refusals := map[string]struct {
		token string
		code  int
		msg   string
	}{
		"wrong audience":     {token(t, kube, controllerNamespace, "envoy-xds", "https://kubernetes.default.svc", fleetPod), http.StatusUnauthorized, "not valid for audience"},
		"not pod-bound":      {token(t, kube, controllerNamespace, "envoy-xds", identity.DefaultAudience, nil), http.StatusUnauthorized, "not bound to a pod"},
		"not a fleet's SA":   {token(t, kube, "default", "web-xds", identity.DefaultAudience, strangerPod), http.StatusForbidden, "is not the ServiceAccount of an Envoy fleet"},
		"not a token at all": {"abc", http.StatusUnauthorized, "not a JWT"},
	}
	for name, tc := range refusals {
		_, err := client.Sign(ctx, tc.token, csr)
		var refused *identity.RefusedError
		if !errors.As(err, &refused) || refused.StatusCode != tc.code || !strings.Contains(refused.Message, tc.msg) {
			t.Errorf("%s: %v, want %d with %q", name, err, tc.code, tc.msg)
			continue
		}
		t.Logf("%s: %v", name, err)
	}

	// The SVID on the xDS channel.
	keyDER, _ := x509.MarshalPKCS8PrivateKey(key)
	pair, err := tls.X509KeyPair([]byte(resp.CertChain), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM([]byte(resp.Bundle))
	clientTLS := &tls.Config{
		Certificates: []tls.Certificate{pair},
		RootCAs:      roots,
		ServerName:   "xds-controller." + controllerNamespace + ".svc",
		MinVersion:   tls.VersionTLS13,
	}
	names, err := xdsclient.FetchClustersDelta(r.XDSAddr().String(), clientTLS, "gatewayclass/xds")
	if err != nil || len(names) != 1 {
		t.Fatalf("ADS with the SVID: clusters %v, error %v", names, err)
	}
	_, err = xdsclient.FetchClusters(r.XDSAddr().String(), clientTLS, "gateway/default/other")
	if status.Code(err) != codes.PermissionDenied {
		t.Errorf("another scope: %v, want PERMISSION_DENIED", err)
	}
	t.Logf("another scope: %v", err)
	anonymous := clientTLS.Clone()
	anonymous.Certificates = nil
	if _, err := xdsclient.FetchClusters(r.XDSAddr().String(), anonymous, "gatewayclass/xds"); err == nil {
		t.Error("a client without a certificate was served")
	}
}

// podWithToken creates ServiceAccount sa and a pod running as it in ns
// (envtest has no kubelet: the pod only exists as an object, which is
// what a pod-bound token needs).
func podWithToken(t *testing.T, kube kubernetes.Interface, ns, sa string) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	if err := ensureNamespace(ctx, ns); err != nil {
		t.Fatal(err)
	}
	_, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	pod, err := kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: sa + "-"},
		Spec: corev1.PodSpec{
			ServiceAccountName:           sa,
			AutomountServiceAccountToken: ptr.To(false),
			Containers:                   []corev1.Container{{Name: "envoy", Image: "envoy"}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.CoreV1().Pods(ns).Delete(context.Background(), pod.Name, metav1.DeleteOptions{}) })
	return pod
}

// token requests a 10-minute token of ns/sa for audience, bound to pod
// when pod is not nil (what a projected volume gets from the kubelet).
func token(t *testing.T, kube kubernetes.Interface, ns, sa, audience string, pod *corev1.Pod) string {
	t.Helper()
	req := &authv1.TokenRequest{Spec: authv1.TokenRequestSpec{Audiences: []string{audience}, ExpirationSeconds: ptr.To[int64](600)}}
	if pod != nil {
		req.Spec.BoundObjectRef = &authv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}
	}
	tr, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), sa, req, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// identityFixture is a replica serving 01-basic-http.in.yaml with its
// identity service, pods with projected tokens of the shared fleet's
// ServiceAccount (fleetPod) and of a ServiceAccount that is no fleet's
// (strangerPod), a client of the identity service that trusts the
// replica's current CA, and a key with its CSR to sign.
type identityFixture struct {
	r                     *replica
	kube                  *kubernetes.Clientset
	fleetPod, strangerPod *corev1.Pod
	client                *identity.Client
	key                   *ecdsa.PrivateKey
	csr                   []byte
}

// newIdentityFixture starts the fixture; name is the replica's identity
// (replicaOptions.identity). It fails t when the scope is not published
// within 20 s.
func newIdentityFixture(t *testing.T, name string) identityFixture {
	t.Helper()
	r := startReplica(t, replicaOptions{identity: name})
	applyFile(t, filepath.Join(testdata, "01-basic-http.in.yaml"))
	eventually(t, 20*time.Second, "the scope to be published", func() error {
		if r.XDS().Scopes()["gatewayclass/xds"] == "" {
			return errors.New("not yet")
		}
		return nil
	})
	kube := kubernetes.NewForConfigOrDie(restConfig)
	f := identityFixture{r: r, kube: kube,
		fleetPod:    podWithToken(t, kube, controllerNamespace, "envoy-xds"),
		strangerPod: podWithToken(t, kube, "default", "web-xds")}
	serverID := spiffeid.RequireFromString("spiffe://cluster.local/ns/" + controllerNamespace + "/sa/xds-controller")
	f.client = identity.NewClient(r.IdentityAddr().String(), serverID, []*x509.Certificate{r.Identity().Authority.Current().Cert})
	f.key, _ = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	csrDER, _ := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, f.key)
	f.csr = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: csrDER})
	return f
}
