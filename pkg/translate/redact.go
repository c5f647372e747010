package translate

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"google.golang.org/protobuf/proto"
)

// Redact returns a copy of an SDS secret whose private keys read
// "[redacted]"; other resources are returned as they are.
func Redact(r types.Resource) types.Resource {
	s, ok := r.(*tlsv3.Secret)
	if !ok {
		return r
	}
	c := proto.Clone(s).(*tlsv3.Secret)
	if tc := c.GetTlsCertificate(); tc != nil && tc.PrivateKey != nil {
		tc.PrivateKey = &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: "[redacted]"}}
	}
	return c
}
