package gatewayapi

// External URLs: the endpoints Envoy itself calls on a policy's behalf
// (a JWT provider's JWKS URI, an OpenID provider's token endpoint, an
// ingress-nginx auth-url), each a cluster of its own built as an
// ExternalHostname XBackend's is (xbackend.go): one host-name endpoint
// resolved by DNS without search domains, or an IP address; TLS verified
// as BackendTLSPolicy's validation says (backendtls.go).

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

// externalURLBackend resolves rawURL, an absolute http or https URL that
// Envoy calls on behalf of an object in namespace ns, to the backend of
// its host and port (default 80 for http, 443 for https) and the parsed
// URL.
//
// The host is a precise host name (Envoy resolves it by DNS as an
// absolute name, with the resolvers of TranslateOptions.DNSResolvers:
// a STRICT_DNS cluster) or an IP address (a static endpoint). https
// verifies the server's certificate for the host name (SNI and the name
// checked; an IP address cannot be verified, so https needs a name)
// against caRefs (ConfigMaps with "ca.crt" in ns, or ClusterTrustBundles:
// BackendTLSPolicy's caCertificateRefs, resolved by backendTLSValidation)
// or, with no caRefs, the system trust store
// (wellKnownCACertificates: System).
//
// The backend is named "url/<scheme>/<host>/<port>", with
// "/ca/<namespace>/<hash>" appended when caRefs are set, so two objects
// that call the same host with the same trust share one cluster.
//
// It fails (a problem of reason Invalid, or the CA references' reason)
// when the URL is not absolute http(s), carries user information or a
// fragment, names no host, a port outside 1-65535 or one the proxy itself
// listens on (TranslateOptions.ProxyPorts: its admin and metrics ports,
// which a name resolving to the loopback would reach), or when the CA
// references cannot be used.
func (t *translator) externalURLBackend(ns, rawURL string, caRefs []gwapiv1.LocalObjectReference) (*ir.Backend, *url.URL, *problem) {
	bad := func(format string, a ...any) (*ir.Backend, *url.URL, *problem) {
		return nil, nil, &problem{string(gwapiv1.PolicyReasonInvalid), fmt.Sprintf("URL %s: ", q(rawURL)) + fmt.Sprintf(format, a...)}
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return bad("%v", err)
	}
	var port uint64 = 443
	switch u.Scheme {
	case "https":
	case "http":
		port = 80
		if len(caRefs) > 0 {
			return bad("caCertificateRefs need an https URL")
		}
	default:
		return bad("the scheme must be http or https")
	}
	switch {
	case u.User != nil:
		return bad("user information is not allowed (put credentials in a Secret)")
	case u.Fragment != "" || u.RawFragment != "":
		return bad("a fragment is not allowed")
	case u.Opaque != "" || u.Host == "":
		return bad("it names no host")
	}
	host := u.Hostname()
	if p := u.Port(); p != "" {
		if port, err = strconv.ParseUint(p, 10, 16); err != nil || port == 0 {
			return bad("port %s is outside 1-65535", q(p))
		}
	}
	if slices.Contains(t.opts.ProxyPorts, uint32(port)) {
		return bad("port %d is one the proxy itself listens on (its admin, readiness or metrics)", port)
	}
	ip, ipErr := netip.ParseAddr(host)
	if ipErr != nil {
		if msg := checkPreciseHostname(host); msg != "" {
			return bad("host %s %s", q(host), msg)
		}
	}
	name := fmt.Sprintf("url/%s/%s/%d", u.Scheme, host, port)
	b := &ir.Backend{Name: name, Weight: 1, Protocol: appProtocol(nil)}
	if ipErr == nil {
		b.Endpoints = []ir.Endpoint{{Address: ip.Unmap().String(), Port: uint32(port)}}
	} else {
		b.Endpoints = []ir.Endpoint{{Address: host, Port: uint32(port)}}
		b.DNSResolvers, b.DNSNoSearch = slices.Clone(t.opts.DNSResolvers), true
	}
	if u.Scheme == "https" {
		if ipErr == nil {
			return bad("https needs a host name to verify, not the address %s", host)
		}
		v := gwapiv1.BackendTLSPolicyValidation{CACertificateRefs: caRefs}
		if len(caRefs) == 0 {
			v.WellKnownCACertificates = new(gwapiv1.WellKnownCACertificatesSystem)
		}
		tls, invalid, refs := t.backendTLSValidation(ns, v, host)
		switch {
		case invalid != nil:
			return nil, nil, &problem{invalid.reason, fmt.Sprintf("URL %s: %s", q(rawURL), invalid.msg)}
		case refs != nil:
			return nil, nil, &problem{refs.reason, fmt.Sprintf("URL %s: %s", q(rawURL), refs.msg)}
		}
		b.TLS = tls
		if len(caRefs) > 0 {
			sum := sha256.Sum256(tls.CACertificates)
			b.Name += "/ca/" + ns + "/" + hex.EncodeToString(sum[:6])
		}
	}
	u.Host = net.JoinHostPort(host, strconv.FormatUint(port, 10))
	return b, u, nil
}
