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
	"maps"
	"math/big"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestCARotationOnTheLocalCluster: with 2-minute SVIDs and two controller
// replicas, the CA Secret's content is replaced by a new CA while a client
// sends requests through the Gateway the whole time. The replicas follow
// it without a restart: they trust both CAs (the record in the ConfigMap
// xds-controller-ca-trust), the agents get SVIDs of the new CA with the
// bundle of both, the old CA is dropped after the overlap; no Envoy pod is
// rolled. Then the controller restarts, so every Envoy reconnects with
// what it holds now (SVID and bundle of the new CA only), and a route edit
// is served. 0 failed requests, every proxy SYNCED at the end.
func TestCARotationOnTheLocalCluster(t *testing.T) {
	inBothModes(t, (*env).caRotation)
}

// newCAPEM is a self-signed ECDSA P-256 CA for the trust domain
// cluster.local, as the controller makes them: its certificate and key.
func newCAPEM(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	td, _ := url.Parse("spiffe://cluster.local")
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: "e2e rotated CA"}, URIs: []*url.URL{td},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})
}

func (e *env) caRotation(mode string) {
	t := e.t
	cli := buildCLI(t)
	e.cleanup()
	values := chartValues(mode)
	values["replicas"] = 2
	values["identity"] = map[string]any{"svidLifetime": "2m"}
	e.helmInstallValues(mode, values)
	e.applyExamples()
	web := e.gatewayAddress("web", 4*time.Minute)
	e.expectBackend(web, "foo.example.com", "/", "foo", 3*time.Minute)
	fleetNS, fleetName := webFleet(mode)
	podsBefore := e.fleetPodNames(fleetNS, fleetName)
	ctx := context.Background()
	secrets := e.kube.CoreV1().Secrets(releaseNamespace)
	configMaps := e.kube.CoreV1().ConfigMaps(releaseNamespace)

	load := e.startLoad(web, "foo.example.com", "/", "foo")
	// Some traffic before the rotation.
	time.Sleep(5 * time.Second)

	// Replace the Secret's content with a new CA.
	s, err := secrets.Get(ctx, "xds-controller-ca", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	oldCert := string(s.Data["ca.crt"])
	newCert, newKey := newCAPEM(t)
	s.Data = map[string][]byte{"ca.crt": newCert, "ca.key": newKey}
	if _, err := secrets.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	rotated := time.Now()
	t.Logf("CA Secret replaced at %s", rotated.Format(time.RFC3339))

	// The replicas record the old CA and trust both.
	e.eventually("the record of retired CAs holds the old CA, the bundle both", time.Minute, func() error {
		cm, err := configMaps.Get(ctx, "xds-controller-ca-trust", metav1.GetOptions{})
		if err != nil {
			return err
		}
		bundle := cm.Data["ca.crt"]
		if cm.Data["retired.crt"] == "" || !strings.Contains(bundle, strings.TrimSpace(string(newCert))) || !strings.Contains(bundle, strings.TrimSpace(oldCert)) {
			return fmt.Errorf("record: %v", cm.Data)
		}
		return nil
	})
	// The fleet's bootstrap ConfigMap gets the bundle of both (for pods
	// that start during the overlap).
	e.eventually("the fleet's bootstrap ConfigMap holds both CAs", time.Minute, func() error {
		cm, err := e.kube.CoreV1().ConfigMaps(fleetNS).Get(ctx, fleetName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if n := strings.Count(cm.Data["ca.crt"], "BEGIN CERTIFICATE"); n != 2 {
			return fmt.Errorf("%d CAs in ca.crt", n)
		}
		return nil
	})
	// Every replica follows the Secret (a replica that kept the old CA
	// would issue SVIDs and a bundle of it alone).
	e.eventually("every controller replica rotated", time.Minute, func() error {
		for pod := range e.controllerPods() {
			out, err := e.kubectl("", "-n", releaseNamespace, "logs", pod, "--tail=5000")
			if err != nil {
				return err
			}
			if !strings.Contains(out, "CA rotation: trust bundle changed") || !strings.Contains(out, "trusted=2") {
				return fmt.Errorf("replica %s has not rotated", pod)
			}
		}
		return nil
	})
	for _, l := range e.controllerLogLines("CA rotation") {
		t.Logf("controller: %s", l)
	}

	// The drop: 2m SVIDs -> handover at 1m30s, drop at 2m30s.
	e.eventually("the old CA dropped (record empty, bundle the new CA)", 4*time.Minute, func() error {
		cm, err := configMaps.Get(ctx, "xds-controller-ca-trust", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cm.Data["retired.crt"] != "" || strings.Count(cm.Data["ca.crt"], "BEGIN CERTIFICATE") != 1 {
			return fmt.Errorf("record still lists retired CAs (%s after the rotation)", time.Since(rotated).Round(time.Second))
		}
		return nil
	})
	t.Logf("old CA dropped %s after the rotation", time.Since(rotated).Round(time.Second))
	e.eventually("the fleet's bootstrap ConfigMap holds the new CA only", time.Minute, func() error {
		cm, err := e.kube.CoreV1().ConfigMaps(fleetNS).Get(ctx, fleetName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if strings.TrimSpace(cm.Data["ca.crt"]) != strings.TrimSpace(string(newCert)) {
			return fmt.Errorf("ca.crt is not the new CA:\n%s", cm.Data["ca.crt"])
		}
		return nil
	})
	if after := e.fleetPodNames(fleetNS, fleetName); !slices.Equal(after, podsBefore) {
		t.Errorf("the Envoy pods changed during the rotation: %v -> %v", podsBefore, after)
	}

	// Every Envoy reconnects with what it holds now: the replicas trust
	// the new CA only and present a certificate of it.
	e.restartControllerAndEdit(web)
	defer func() {
		if t.Failed() {
			for _, p := range e.fleetPods(fleetNS, fleetName) {
				out, _ := e.kubectl("", "-n", fleetNS, "logs", p.Name, "-c", "svid-agent", "--tail=20")
				t.Logf("svid-agent of %s:\n%s", p.Name, out)
			}
		}
	}()
	e.eventually("proxy-status: every Envoy pod listed and SYNCED", 3*time.Minute, func() error {
		st, err := e.proxyStatus(cli)
		if err != nil {
			return err
		}
		pods := e.envoyPods()
		if len(st.Proxies) != len(pods) || len(pods) == 0 {
			return fmt.Errorf("%d proxies listed, %d Envoy pods running", len(st.Proxies), len(pods))
		}
		for _, p := range st.Proxies {
			if err := allSynced(p.Types); err != nil {
				return fmt.Errorf("%s/%s: %w", p.Namespace, p.Pod, err)
			}
		}
		return nil
	})
	t.Logf("xds-controller proxy-status:\n%s", e.mustCLI(cli, "proxy-status", "-n", releaseNamespace))
	n, failed, _, errs := load.stop()
	t.Logf("load through the rotation: %d requests, %d failed %v (%s)", n, failed, errs, time.Since(rotated).Round(time.Second))
	if failed > 0 {
		t.Errorf("%d of %d requests failed during the CA rotation; first: %v", failed, n, errs)
	}
	if n == 0 {
		t.Error("no request was sent")
	}
}

// fleetPodNames are the sorted names of the fleet's pods.
func (e *env) fleetPodNames(ns, fleet string) []string {
	names := map[string]bool{}
	for _, p := range e.fleetPods(ns, fleet) {
		names[p.Name] = true
	}
	return slices.Sorted(maps.Keys(names))
}

// controllerLogLines are the lines of every controller replica's log that
// contain s.
func (e *env) controllerLogLines(s string) []string {
	out, _ := e.kubectl("", "-n", releaseNamespace, "logs", "-l", "app.kubernetes.io/name=xds-controller", "--tail=5000", "--prefix")
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, s) {
			lines = append(lines, strings.TrimSpace(l))
		}
	}
	return lines
}
