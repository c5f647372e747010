package xdstranslator

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

// genericSecret is the SDS generic secret name holding value (a
// filter's credential: the OAuth2 filter's client secret and HMAC key).
func genericSecret(name string, value []byte) *tlsv3.Secret {
	return &tlsv3.Secret{
		Name: name,
		Type: &tlsv3.Secret_GenericSecret{GenericSecret: &tlsv3.GenericSecret{
			Secret: &corev3.DataSource{Specifier: &corev3.DataSource_InlineBytes{InlineBytes: value}},
		}},
	}
}

// secret renders a serving certificate as the SDS secret named after it.
func secret(c *ir.Certificate) *tlsv3.Secret {
	return &tlsv3.Secret{
		Name: c.Name,
		Type: &tlsv3.Secret_TlsCertificate{TlsCertificate: &tlsv3.TlsCertificate{
			CertificateChain: &corev3.DataSource{Specifier: &corev3.DataSource_InlineBytes{InlineBytes: c.CertificateChain}},
			PrivateKey:       &corev3.DataSource{Specifier: &corev3.DataSource_InlineBytes{InlineBytes: c.PrivateKey}},
		}},
	}
}
