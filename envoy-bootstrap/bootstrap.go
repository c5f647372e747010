// Package bootstrap renders the Envoy bootstrap that xds-controller's
// proxies start with: ADS to the controller over mutual TLS, the node id and
// cluster naming the proxy scope, the admin interface on loopback, and a
// readiness listener. The template, bootstrap.yaml.tmpl, is embedded.
package bootstrap

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"net"
	"text/template"
)

//go:embed bootstrap.yaml.tmpl
var templateText string

var tmpl = template.Must(template.New("bootstrap").Funcs(template.FuncMap{
	"json": func(v any) (string, error) {
		b, err := json.Marshal(v)
		return string(b), err
	},
}).Parse(templateText))

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
	// CertFile, KeyFile and CAFile are paths of this proxy's SVID, its key
	// and the trust bundle, PEM.
	CertFile, KeyFile, CAFile string
	// AdminAddress and AdminPort: default 127.0.0.1:9901.
	AdminAddress string
	AdminPort    uint32
	// ReadinessAddress and ReadinessPort: default 0.0.0.0:19001.
	ReadinessAddress string
	ReadinessPort    uint32
	// Delta selects incremental xDS (DELTA_GRPC) instead of
	// state-of-the-world (GRPC).
	Delta bool
}

// Render returns the bootstrap YAML for p, with defaults applied. It fails
// when a required field is empty.
func Render(p Params) ([]byte, error) {
	if p.NodeID == "" || p.Scope == "" || p.XDSHost == "" || p.XDSPort == 0 || p.CertFile == "" || p.KeyFile == "" || p.CAFile == "" || p.XDSServerID == "" {
		return nil, errors.New("bootstrap: NodeID, Scope, XDSHost, XDSPort, XDSServerID, CertFile, KeyFile and CAFile are required")
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
	if p.XDSServerName == "" {
		p.XDSServerName = p.XDSHost
	}
	var buf bytes.Buffer
	err := tmpl.Execute(&buf, struct {
		Params
		XDSHostIsIP bool
	}{p, net.ParseIP(p.XDSHost) != nil})
	return buf.Bytes(), err
}
