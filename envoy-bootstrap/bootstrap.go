// Package bootstrap renders the Envoy bootstrap that xds-controller's
// proxies start with: ADS to the controller over mutual TLS (the proxy's
// SVID and trust bundle through file-based SDS, SDSFiles), the node id and
// cluster naming the proxy scope, the admin interface on loopback, and a
// readiness listener. The templates, bootstrap.yaml.tmpl and
// sds.yaml.tmpl, are embedded.
package bootstrap

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"net"
	"path"
	"text/template"
)

//go:embed bootstrap.yaml.tmpl
var templateText string

//go:embed sds.yaml.tmpl
var sdsTemplateText string

var funcs = template.FuncMap{
	"json": func(v any) (string, error) {
		b, err := json.Marshal(v)
		return string(b), err
	},
}

var (
	tmpl    = template.Must(template.New("bootstrap").Funcs(funcs).Parse(templateText))
	sdsTmpl = template.Must(template.New("sds").Funcs(funcs).Parse(sdsTemplateText))
)

// ConfigArgs returns the Envoy command-line flags that every proxy we
// start (a fleet's pods, standalone mode's Envoy) runs with for the
// configuration it receives over xDS:
//
//   - --ignore-unknown-dynamic-fields: Envoy skips the walk over every
//     field of each dynamic resource that looks for unknown and deprecated
//     fields. That walk only warns and counts (Envoy ignores an unknown
//     dynamic field either way); the API's validation rules
//     (protoc-gen-validate) still run on every resource. Our resources are
//     built from the same API version as the Envoy we ship
//     (go-control-plane's envoy module), and pre-validation checks them
//     with that Envoy. At 3000 virtual hosts a route configuration update
//     takes 11 instead of 17 ms from receipt to the new routes
//     (docs/performance.md).
func ConfigArgs() []string {
	return []string{"--ignore-unknown-dynamic-fields"}
}

// The xDS channel's credentials on disk: the SVID agent (pkg/agent) keeps
// these files in the SDS folder, and Envoy reads them through the SDS
// resource files that SDSFiles renders.
const (
	// SVIDCertFile, SVIDKeyFile and BundleFile are the names, in the SDS
	// folder, of the SVID (PEM certificate chain), its key (PEM PKCS#8)
	// and the trust bundle (PEM CA certificates).
	SVIDCertFile = "tls.crt"
	SVIDKeyFile  = "tls.key"
	BundleFile   = "ca.crt"
	// SVIDConfigFile and BundleConfigFile are the SDS resource files.
	SVIDConfigFile   = "sds-svid.yaml"
	BundleConfigFile = "sds-bundle.yaml"
	// SVIDSecretName and BundleSecretName name the SDS secrets.
	SVIDSecretName   = "xds_client_svid"
	BundleSecretName = "xds_trust_bundle"
)

// SDSFiles renders the two SDS resource files (SVIDConfigFile,
// BundleConfigFile) for the credentials in sdsDir, an absolute path: put
// them in the folder given as Params.SDSConfigDir. Envoy re-reads the
// credentials whenever an entry of sdsDir is moved to (the TlsCertificate
// and CertificateValidationContext watched_directory).
func SDSFiles(sdsDir string) (map[string][]byte, error) {
	if sdsDir == "" {
		return nil, errors.New("bootstrap: SDS folder required")
	}
	data := map[string]string{
		"Dir":              sdsDir,
		"CertFile":         path.Join(sdsDir, SVIDCertFile),
		"KeyFile":          path.Join(sdsDir, SVIDKeyFile),
		"BundleFile":       path.Join(sdsDir, BundleFile),
		"SVIDSecretName":   SVIDSecretName,
		"BundleSecretName": BundleSecretName,
	}
	out := map[string][]byte{}
	for name, def := range map[string]string{SVIDConfigFile: "svid", BundleConfigFile: "bundle"} {
		var buf bytes.Buffer
		if err := sdsTmpl.ExecuteTemplate(&buf, def, data); err != nil {
			return nil, err
		}
		out[name] = buf.Bytes()
	}
	return out, nil
}

// Params fill the bootstrap template.
type Params struct {
	// NodeID names this Envoy (pod name, or "standalone").
	NodeID string
	// Scope is the proxy scope, sent as the node cluster.
	Scope string
	// XDSHost and XDSPort locate the controller's xDS server: an IP
	// address or a DNS name.
	XDSHost string
	XDSPort uint32
	// XDSServerName is the SNI sent to the controller; XDSServerID is the
	// SPIFFE ID its certificate must carry.
	XDSServerName string
	XDSServerID   string
	// SDSConfigDir is the folder holding the SDS resource files of
	// SDSFiles (absolute path).
	SDSConfigDir string
	// AdminAddress and AdminPort: default 127.0.0.1:9901.
	AdminAddress string
	AdminPort    uint32
	// ReadinessAddress and ReadinessPort: default 0.0.0.0:19001.
	ReadinessAddress string
	ReadinessPort    uint32
	// MetricsAddress and MetricsPort: where Envoy serves its statistics in
	// Prometheus format (the admin's /stats/prometheus, and no other admin
	// path); no such listener when MetricsPort is 0. MetricsAddress
	// defaults to ReadinessAddress.
	MetricsAddress string
	MetricsPort    uint32
	// Delta selects incremental xDS (DELTA_GRPC) instead of
	// state-of-the-world (GRPC).
	Delta bool
	// Overload configures the overload manager; zero fields take the
	// defaults.
	Overload Overload
}

// Overload is what the overload manager of the bootstrap acts on
// (GatewayParameters spec.edge.overload; Envoy's "Configuring Envoy as an
// edge proxy" best practices).
type Overload struct {
	// MaxHeapSizeBytes is the heap size at which Envoy counts its memory
	// fully used (fixed_heap resource monitor): at 95% of it Envoy returns
	// free memory to the system (shrink_heap), at 98% it stops accepting
	// connections and answers new requests with 503
	// (stop_accepting_connections, stop_accepting_requests). Default:
	// DefaultMaxHeapSizeBytes.
	MaxHeapSizeBytes uint64
	// MaxDownstreamConnections bounds the client connections of all
	// listeners together, the readiness and metrics listeners included
	// (global_downstream_max_connections resource monitor). Default:
	// DefaultMaxDownstreamConnections.
	MaxDownstreamConnections uint64
}

// Defaults of Overload.
const (
	// DefaultMaxHeapSizeBytes is Envoy's edge example's heap size, 2 GiB,
	// for an Envoy whose memory is not limited otherwise.
	DefaultMaxHeapSizeBytes uint64 = 2 << 30
	// DefaultMaxDownstreamConnections is the connection limit per Envoy.
	DefaultMaxDownstreamConnections uint64 = 50000
)

// Render returns the bootstrap YAML for p, with defaults applied. It fails
// when a required field is empty.
func Render(p Params) ([]byte, error) {
	if p.NodeID == "" || p.Scope == "" || p.XDSHost == "" || p.XDSPort == 0 || p.SDSConfigDir == "" || p.XDSServerID == "" {
		return nil, errors.New("bootstrap: NodeID, Scope, XDSHost, XDSPort, XDSServerID and SDSConfigDir are required")
	}
	if p.AdminAddress == "" {
		p.AdminAddress = "127.0.0.1"
	}
	if p.AdminPort == 0 {
		p.AdminPort = 9901
	}
	if p.ReadinessAddress == "" {
		p.ReadinessAddress = "0.0.0.0"
	}
	if p.ReadinessPort == 0 {
		p.ReadinessPort = 19001
	}
	if p.MetricsAddress == "" {
		p.MetricsAddress = p.ReadinessAddress
	}
	if p.XDSServerName == "" {
		p.XDSServerName = p.XDSHost
	}
	if p.Overload.MaxHeapSizeBytes == 0 {
		p.Overload.MaxHeapSizeBytes = DefaultMaxHeapSizeBytes
	}
	if p.Overload.MaxDownstreamConnections == 0 {
		p.Overload.MaxDownstreamConnections = DefaultMaxDownstreamConnections
	}
	var buf bytes.Buffer
	err := tmpl.Execute(&buf, struct {
		Params
		XDSHostIsIP                      bool
		SVIDSecretName, BundleSecretName string
		SVIDConfigPath, BundleConfigPath string
	}{
		p, net.ParseIP(p.XDSHost) != nil,
		SVIDSecretName, BundleSecretName,
		path.Join(p.SDSConfigDir, SVIDConfigFile), path.Join(p.SDSConfigDir, BundleConfigFile),
	})
	return buf.Bytes(), err
}
