// Package testservers groups real servers that end-to-end tests put
// behind Envoy where no Debian package serves: extauthz (Envoy's ext_authz
// gRPC and HTTP protocols), otlp (an OTLP/gRPC trace receiver), jwt
// (signing keys, tokens and a rotating JWKS server) and oidc (an OpenID
// provider with a login form). This package itself only holds the tests
// that prove them against a real Envoy with a static bootstrap.
package testservers
