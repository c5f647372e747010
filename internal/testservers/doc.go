// Package testservers groups real servers that end-to-end tests put
// behind Envoy where no Debian package serves: extauthz (Envoy's ext_authz
// gRPC and HTTP protocols) and otlp (an OTLP/gRPC trace receiver). This
// package itself only holds the test that proves them against a real
// Envoy with a static bootstrap.
package testservers
