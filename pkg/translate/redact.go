package translate

import (
	"encoding/json"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	apikeyauthv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/api_key_auth/v3"
	basicauthv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/basic_auth/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

// Redacted is what a private key reads in every output that hides it:
// `translate --output ir|xds` without --show-secrets, and config dumps.
const Redacted = "[redacted]"

// Redact returns a copy of an SDS secret whose private keys and generic
// secrets read Redacted, or of a route configuration whose routes' credentials
// (SecurityPolicy: api_key_auth per-route keys, basic_auth per-route
// users) read Redacted; other resources are returned as they are.
func Redact(r types.Resource) types.Resource {
	switch s := r.(type) {
	case *tlsv3.Secret:
		c := proto.Clone(s).(*tlsv3.Secret)
		if tc := c.GetTlsCertificate(); tc != nil && tc.PrivateKey != nil {
			tc.PrivateKey = &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: Redacted}}
		}
		if g := c.GetGenericSecret(); g != nil {
			// A filter's credential (SecurityPolicy oidc: the client
			// secret, the cookies' HMAC key).
			g.Secret = &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: Redacted}}
			for k := range g.Secrets {
				g.Secrets[k] = &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: Redacted}}
			}
		}
		return c
	case *routev3.RouteConfiguration:
		var c *routev3.RouteConfiguration
		for i, vh := range s.VirtualHosts {
			for j, rt := range vh.Routes {
				for name, a := range rt.TypedPerFilterConfig {
					red := redactPerRoute(a)
					if red == nil {
						continue
					}
					if c == nil {
						c = proto.Clone(s).(*routev3.RouteConfiguration)
					}
					c.VirtualHosts[i].Routes[j].TypedPerFilterConfig[name] = red
				}
			}
		}
		if c != nil {
			return c
		}
	}
	return r
}

// redactPerRoute returns a per-route configuration that holds credentials
// with them reading Redacted, or nil when a holds none.
func redactPerRoute(a *anypb.Any) *anypb.Any {
	var m proto.Message
	switch {
	case a.MessageIs((*apikeyauthv3.ApiKeyAuthPerRoute)(nil)):
		p := &apikeyauthv3.ApiKeyAuthPerRoute{}
		if a.UnmarshalTo(p) != nil {
			return nil
		}
		for _, c := range p.Credentials {
			c.Key = Redacted
		}
		m = p
	case a.MessageIs((*basicauthv3.BasicAuthPerRoute)(nil)):
		p := &basicauthv3.BasicAuthPerRoute{}
		if a.UnmarshalTo(p) != nil {
			return nil
		}
		p.Users = &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: Redacted}}
		m = p
	default:
		return nil
	}
	out, err := anypb.New(m)
	if err != nil {
		return nil
	}
	return out
}

// irSecrets are the JSON names of the IR's fields that hold secrets:
// ir.Certificate.PrivateKey (a listener's serving key or the client key
// Envoy presents to TLS backends, which reaches Envoy as the
// TlsCertificate.PrivateKey of an SDS secret), ir.APIKeyCredential.Key
// and ir.BasicAuthUser.SHA (which reach Envoy in route configurations),
// ir.OIDC.ClientSecret and HMACKey (which reach Envoy as SDS generic
// secrets).
var irSecrets = map[string]bool{"privateKey": true, "apiKey": true, "passwordSHA": true, "clientSecret": true, "hmacKey": true}

// redactIR returns the IR as generic JSON data (what MarshalIR renders)
// with every secret of irSecrets reading Redacted, leaving x
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

// redactKeys replaces, in place, the value of every irSecrets field of
// the generic JSON data v.
func redactKeys(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if irSecrets[k] {
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
