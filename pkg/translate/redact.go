package translate

import (
	"encoding/json"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"google.golang.org/protobuf/proto"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

// Redacted is what a private key reads in every output that hides it:
// `translate --output ir|xds` without --show-secrets, and config dumps.
const Redacted = "[redacted]"

// Redact returns a copy of an SDS secret whose private keys read
// Redacted; other resources are returned as they are.
func Redact(r types.Resource) types.Resource {
	s, ok := r.(*tlsv3.Secret)
	if !ok {
		return r
	}
	c := proto.Clone(s).(*tlsv3.Secret)
	if tc := c.GetTlsCertificate(); tc != nil && tc.PrivateKey != nil {
		tc.PrivateKey = &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: Redacted}}
	}
	return c
}

// irPrivateKey is the JSON name of ir.Certificate.PrivateKey, the only
// field of the IR that holds a secret: a listener's serving key or the
// client key Envoy presents to TLS backends. Every such key reaches Envoy
// as the TlsCertificate.PrivateKey of an SDS secret, which Redact hides.
const irPrivateKey = "privateKey"

// redactIR returns the IR as generic JSON data (what MarshalIR renders)
// with every certificate's private key reading Redacted, leaving x
// unchanged. It fails only if x does not marshal to JSON.
func redactIR(x *ir.IR) (any, error) {
	b, err := json.Marshal(x)
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	redactKeys(v)
	return v, nil
}

// redactKeys replaces, in place, the value of every irPrivateKey field of
// the generic JSON data v.
func redactKeys(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if k == irPrivateKey {
				v[k] = Redacted
				continue
			}
			redactKeys(e)
		}
	case []any:
		for _, e := range v {
			redactKeys(e)
		}
	}
}
