package e2e

// Gateway API v1.7.0 experimental fields of the Gateway itself, end to
// end in standalone mode: a ClusterTrustBundle as the CA of a
// BackendTLSPolicy (GEP-5075), and default Gateways (GEP-3793).

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// trustBundleRoutesYAML: an HTTPRoute for bundle.example.test with one
// rule per TLS backend, each targeted by a BackendTLSPolicy whose CA is a
// ClusterTrustBundle: trusted's bundle backend-ca holds .CA (which signed
// the backends' certificate), wrong-ca's bundle other-ca holds .Other (which
// did not), and late's bundle late-ca does not exist yet.
const trustBundleRoutesYAML = `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: bundle-backends, namespace: default}
spec:
  parentRefs: [{name: gw}]
  hostnames: [bundle.example.test]
  rules:
  - matches: [{path: {type: PathPrefix, value: /trusted}}]
    backendRefs: [{name: trusted, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /wrong-ca}}]
    backendRefs: [{name: wrong-ca, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /late}}]
    backendRefs: [{name: late, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: {name: trusted, namespace: default}
spec:
  targetRefs: [{group: "", kind: Service, name: trusted}]
  validation:
    caCertificateRefs: [{group: certificates.k8s.io, kind: ClusterTrustBundle, name: backend-ca}]
    hostname: secure.example.test
---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: {name: wrong-ca, namespace: default}
spec:
  targetRefs: [{group: "", kind: Service, name: wrong-ca}]
  validation:
    caCertificateRefs: [{group: certificates.k8s.io, kind: ClusterTrustBundle, name: other-ca}]
    hostname: secure.example.test
---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: {name: late, namespace: default}
spec:
  targetRefs: [{group: "", kind: Service, name: late}]
  validation:
    caCertificateRefs: [{group: certificates.k8s.io, kind: ClusterTrustBundle, name: late-ca}]
    hostname: secure.example.test
---
apiVersion: certificates.k8s.io/v1
kind: ClusterTrustBundle
metadata: {name: backend-ca}
spec:
  trustBundle: {{printf "%q" .CA}}
---
apiVersion: certificates.k8s.io/v1
kind: ClusterTrustBundle
metadata: {name: other-ca}
spec:
  trustBundle: {{printf "%q" .Other}}
`

// trustBundleYAML is the ClusterTrustBundle .Name with the PEM .CA.
const trustBundleYAML = `apiVersion: certificates.k8s.io/v1
kind: ClusterTrustBundle
metadata: {name: {{.Name}}}
spec:
  trustBundle: {{printf "%q" .CA}}
`

// TestClusterTrustBundleBackendTLS shows a ClusterTrustBundle serving as
// the CA of BackendTLSPolicies, read like a ConfigMap's ca.crt. Three
// HTTPS backends of the test's own present a certificate for
// secure.example.test signed by the test's CA:
//   - trusted (bundle backend-ca holds that CA): 200 over verified TLS;
//   - wrong-ca (bundle other-ca holds another CA): Envoy refuses the
//     certificate (ssl.fail_verify_error) and answers 503; the backend
//     serves nothing;
//   - late (bundle late-ca missing): 500 from Envoy, the policy
//     Accepted=False(NoValidCACertificate) and
//     ResolvedRefs=False(InvalidCACertificateRef), as for a missing
//     ConfigMap; once the bundle is written, 200 over verified TLS.
func TestClusterTrustBundleBackendTLS(t *testing.T) {
	ca, other := newCA(t, "e2e bundle CA"), newCA(t, "e2e other CA")
	cert := ca.issue(t, "secure.example.test")
	trusted := startTLSBackend(t, "trusted", cert)
	wrong := startTLSBackend(t, "wrong-ca", cert)
	late := startTLSBackend(t, "late", cert)
	f := startWith(t, func(f *fixture) {
		l4Config(t, f, nil, []gatewayBackend{
			{Name: "trusted", Port: trusted.port}, {Name: "wrong-ca", Port: wrong.port}, {Name: "late", Port: late.port},
		}, trustBundleRoutesYAML, map[string]string{"CA": string(ca.pem), "Other": string(other.pem)})
	})
	const host = "bundle.example.test"

	var code int
	var body string
	took := poll(t, "/trusted through the ClusterTrustBundle", func() error {
		code, body = f.get(host, "/trusted")
		if code != 200 {
			return fmt.Errorf("%d %q", code, body)
		}
		return nil
	})
	if want := "trusted /trusted sni=secure.example.test"; body != want {
		t.Errorf("/trusted: body %q, want %q", body, want)
	}
	if n := trusted.plaintext.Load(); n != 0 {
		t.Errorf("trusted backend: %d plaintext connections", n)
	}
	t.Logf("/trusted answered after %s: %d %q", took.Round(time.Millisecond), code, body)

	// wrong-ca: the certificate does not chain to other-ca's CA.
	poll(t, "/wrong-ca refused", func() error {
		code, body = f.get(host, "/wrong-ca")
		if code != 503 {
			return fmt.Errorf("%d %q", code, body)
		}
		return nil
	})
	if !strings.HasPrefix(body, "upstream connect error") {
		t.Errorf("/wrong-ca: %d %q; want Envoy's 503 upstream connect error", code, body)
	}
	const verifyFailures = "cluster.service/default/wrong-ca/80.ssl.fail_verify_error"
	var failures int
	poll(t, "Envoy's verification failures for wrong-ca", func() error {
		var err error
		if failures, err = envoyCounter(f.admin, verifyFailures); err != nil {
			return err
		}
		if failures == 0 {
			return fmt.Errorf("%s 0", verifyFailures)
		}
		return nil
	})
	if _, requests, _ := wrong.seen(); len(requests) != 0 {
		t.Errorf("wrong-ca backend served %d requests; want none", len(requests))
	}
	t.Logf("/wrong-ca: %d %q; %s %d", code, body, verifyFailures, failures)

	// late: its bundle is missing.
	poll(t, "/late answers 500", func() error {
		code, body = f.get(host, "/late")
		if code != 500 {
			return fmt.Errorf("%d %q", code, body)
		}
		return nil
	})
	if hellos, requests, _ := late.seen(); len(hellos) != 0 || len(requests) != 0 {
		t.Errorf("late backend: ClientHellos %q, requests %q; want nothing", hellos, requests)
	}
	const lateStatus = `BackendTLSPolicy default/late -> default/gw: `
	line, _ := f.waitOutput("late policy status", 0, regexp.MustCompile(regexp.QuoteMeta(lateStatus)+`[^\n]*`), l4Deadline)
	if !strings.Contains(line, "Accepted=False(NoValidCACertificate)") || !strings.Contains(line, "ResolvedRefs=False(InvalidCACertificateRef)") {
		t.Errorf("late policy status: %s; want Accepted=False(NoValidCACertificate) ResolvedRefs=False(InvalidCACertificateRef)", line)
	} else {
		t.Logf("status: %s", line)
	}
	from := f.mark()
	render(t, filepath.Join(f.dir, "late-ca.yaml"), trustBundleYAML, map[string]string{"Name": "late-ca", "CA": string(ca.pem)})
	took = poll(t, "/late once its ClusterTrustBundle exists", func() error {
		code, body = f.get(host, "/late")
		if code != 200 {
			return fmt.Errorf("%d %q", code, body)
		}
		return nil
	})
	t.Logf("/late answered %d %q %s after its ClusterTrustBundle was written", code, body, took.Round(time.Millisecond))
	f.waitOutput("late policy accepted", from, regexp.MustCompile(regexp.QuoteMeta(
		lateStatus+"Accepted=True(Accepted) ResolvedRefs=True(ResolvedRefs)")), l4Deadline)
}

// defaultGatewayYAML is the Gateway edge on port .Port, a default Gateway
// of scope .Scope (none when empty), admitting routes of every namespace.
const defaultGatewayYAML = `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: edge, namespace: default}
spec:
  gatewayClassName: e2e
  addresses: [{type: IPAddress, value: 127.0.0.1}]
{{with .Scope}}  defaultScope: {{.}}
{{end}}  listeners:
  - {name: http, protocol: HTTP, port: {{.Port}}, allowedRoutes: {namespaces: {from: All}}}
`

// defaultRoutesYAML: defaulted asks for the default Gateways and names no
// parent; plain names none and asks for none.
const defaultRoutesYAML = `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: defaulted, namespace: default}
spec:
  useDefaultGateways: All
  hostnames: [default.example.test]
  rules: [{backendRefs: [{name: app, port: 80}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: plain, namespace: default}
spec:
  hostnames: [plain.example.test]
  rules: [{backendRefs: [{name: app, port: 80}]}]
`

// TestDefaultGateway shows a route without parentRefs served through the
// default Gateway (GEP-3793): the route defaulted (useDefaultGateways All)
// answers through Gateway edge (defaultScope All) and has a status.parents
// entry for it, Accepted; it is not served by the fixture's Gateway gw,
// which is not a default Gateway, nor is the route plain (no
// useDefaultGateways) by either. Once edge's defaultScope is removed,
// defaulted is no longer served there.
func TestDefaultGateway(t *testing.T) {
	app, _ := countingBackend(t, "app")
	edgePort := freePort(t)
	f := startWith(t, func(f *fixture) {
		l4Config(t, f, nil, []gatewayBackend{{Name: "app", Port: portOf(app)}}, defaultRoutesYAML, nil)
		render(t, filepath.Join(f.dir, "edge.yaml"), defaultGatewayYAML, map[string]any{"Port": edgePort, "Scope": "All"})
	})
	var code int
	var body string
	took := poll(t, "defaulted through the default Gateway", func() error {
		code, body = f.getOn(edgePort, "default.example.test", "/x")
		if code != 200 {
			return fmt.Errorf("%d %q", code, body)
		}
		return nil
	})
	if body != "app /x" {
		t.Errorf("defaulted through edge: %q, want %q", body, "app /x")
	}
	t.Logf("defaulted through edge after %s: %d %q", took.Round(time.Millisecond), code, body)
	line, _ := f.waitOutput("defaulted's status", 0, regexp.MustCompile(`HTTPRoute default/defaulted -> default/edge: [^\n]*`), l4Deadline)
	if !strings.Contains(line, "Accepted=True") {
		t.Errorf("defaulted's status: %s; want Accepted=True on default/edge", line)
	}
	t.Logf("status: %s", line)
	gwLine, _ := f.waitOutput("edge's status", 0, regexp.MustCompile(`Gateway default/edge: [^\n]*DefaultGateway=True[^\n]*`), l4Deadline)
	t.Logf("status: %s", gwLine)
	for _, c := range []struct {
		port int
		host string
	}{{f.gwPort, "default.example.test"}, {f.gwPort, "plain.example.test"}, {edgePort, "plain.example.test"}} {
		if code, body := f.getOn(c.port, c.host, "/x"); code != 404 {
			t.Errorf("%s on port %d: %d %q; want 404 (not attached there)", c.host, c.port, code, body)
		}
	}
	if l := f.lastLine("HTTPRoute default/defaulted -> default/gw:"); l != "" {
		t.Errorf("defaulted has a status entry for gw, which is not a default Gateway: %s", l)
	}

	// edge is no longer a default Gateway: defaulted leaves it.
	render(t, filepath.Join(f.dir, "edge.yaml"), defaultGatewayYAML, map[string]any{"Port": edgePort})
	took = poll(t, "defaulted gone from edge", func() error {
		code, body = f.getOn(edgePort, "default.example.test", "/x")
		if code != 404 {
			return fmt.Errorf("%d %q", code, body)
		}
		return nil
	})
	t.Logf("without defaultScope, edge answers %d for defaulted %s after the change", code, took.Round(time.Millisecond))
}

// bundleClientCertYAML: the listener's Secret listener-cert (.Cert, .Key:
// base64 PEM), the ClusterTrustBundle clients-ca with the CA client
// certificates must chain to (.CA), and an HTTPRoute to echo.
const bundleClientCertYAML = `apiVersion: v1
kind: Secret
metadata: {name: listener-cert, namespace: default}
type: kubernetes.io/tls
data:
  tls.crt: {{.Cert}}
  tls.key: {{.Key}}
---
apiVersion: certificates.k8s.io/v1
kind: ClusterTrustBundle
metadata: {name: clients-ca}
spec:
  trustBundle: {{printf "%q" .CA}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: echo, namespace: default}
spec:
  parentRefs: [{name: gw}]
  rules: [{backendRefs: [{name: echo, port: 80}]}]
`

// TestClusterTrustBundleClientCert shows Gateway spec.tls.frontend
// validating client certificates against a ClusterTrustBundle: on the
// HTTPS listener strict, a client whose certificate the bundle's CA signed
// gets 200 from the backend; a client without a certificate and one with a
// certificate of another CA are refused by Envoy (TLS 1.2 and 1.3), and
// the backend sees none of their requests.
func TestClusterTrustBundleClientCert(t *testing.T) {
	serverCA, clientCA, otherCA := newCA(t, "e2e listener CA"), newCA(t, "e2e bundle client CA"), newCA(t, "e2e other CA")
	listenerCert := serverCA.issue(t, clientCertSNI)
	valid, foreign := clientCA.issueClient(t, "valid client"), otherCA.issueClient(t, "foreign client")
	roots := x509.NewCertPool()
	roots.AddCert(serverCA.cert)
	echo := startPathBackend(t, "echo")
	strict := freePort(t)
	startWith(t, func(f *fixture) {
		render(t, filepath.Join(f.dir, "gateway.yaml"), gatewayYAML, map[string]any{
			"GatewayPort": f.gwPort,
			"Listeners":   []string{fmt.Sprintf("{name: strict, protocol: HTTPS, port: %d, tls: {certificateRefs: [{name: listener-cert}]}}", strict)},
			"TLS":         `{frontend: {default: {validation: {caCertificateRefs: [{group: certificates.k8s.io, kind: ClusterTrustBundle, name: clients-ca}]}}}}`,
			"Backends":    []gatewayBackend{{Name: "echo", Port: portOf(echo.srv)}},
		})
		render(t, filepath.Join(f.dir, "routes.yaml"), bundleClientCertYAML, map[string]string{
			"Cert": base64.StdEncoding.EncodeToString(listenerCert.certPEM),
			"Key":  base64.StdEncoding.EncodeToString(listenerCert.keyPEM),
			"CA":   string(clientCA.pem),
		})
	})
	clients := []certClient{{"valid", &valid}, {"none", nil}, {"foreign", &foreign}}
	took := poll(t, "listener strict with a valid client certificate", func() error {
		if r := clients[0].get(strict, "/poll", roots, tls.VersionTLS13); r.err != nil || r.status != 200 {
			return fmt.Errorf("%s", r)
		}
		return nil
	})
	t.Logf("listener strict served after %s", took.Round(time.Millisecond))
	var wantSeen []string
	for _, v := range clientCertVersions {
		for _, c := range clients {
			path := "/" + c.name + "/" + v.name
			r := c.get(strict, path, roots, v.version)
			what := fmt.Sprintf("%s, client certificate %s", tls.VersionName(v.version), c.name)
			if c.name == "valid" {
				wantSeen = append(wantSeen, path)
				if r.err != nil || r.status != 200 || r.body != "echo "+path {
					t.Errorf("%s: %s; want 200 %q", what, r, "echo "+path)
				}
			} else if e := refusedByEnvoy(r.err); e != nil {
				t.Errorf("%s: %s: %v; want refused by Envoy", what, r, e)
			}
			t.Logf("%s: %s, CAs named in the request %q", what, r, r.caNames)
		}
	}
	seen := slices.DeleteFunc(echo.seen(), func(p string) bool { return p == "/poll" })
	if !slices.Equal(seen, wantSeen) {
		t.Errorf("the backend served %q; want %q (and nothing of the refused clients)", seen, wantSeen)
	}
}
