// Command xds-testservers runs the test servers of internal/testservers as
// one program, for end-to-end tests on the local cluster (an image built by
// hack/cluster/cluster go-image): an ext_authz gRPC server, an ext_authz
// HTTP server and an OTLP/gRPC trace receiver, plus an HTTP port that
// reports what they saw.
//
// Both auth servers decide alike: a request with the header
// "x-e2e-auth: allow" is allowed, and "x-auth-user: e2e" is added to it
// upstream; any other is denied with 403, the body "denied by
// xds-testservers" and the header "x-denied-by: xds-testservers".
//
// The report port answers GET /checks (the auth checks seen, JSON array of
// extauthz.Check) and GET /spans (the spans received, JSON array of
// otlp.Span).
//
// With -oidc set it also runs an OpenID provider (internal/testservers/oidc)
// over HTTPS on that address: issuer -oidc-issuer, certificate and key
// from -oidc-tls-dir (tls.crt, tls.key), one confidential client
// (-oidc-client id:secret, redirect URIs -oidc-redirect-uris) and one user
// (-oidc-user name:password), signing with a fresh RSA key. Without -oidc
// nothing of it runs.
package main

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"encoding/json"
	"flag"
	"log"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/xds-controller/xds-controller/internal/testservers/extauthz"
	"github.com/xds-controller/xds-controller/internal/testservers/jwt"
	"github.com/xds-controller/xds-controller/internal/testservers/oidc"
	"github.com/xds-controller/xds-controller/internal/testservers/otlp"
)

func main() {
	grpcAddr := flag.String("authz-grpc", ":9000", "listen address of the ext_authz gRPC server")
	httpAddr := flag.String("authz-http", ":9001", "listen address of the ext_authz HTTP server")
	otlpAddr := flag.String("otlp", ":4317", "listen address of the OTLP/gRPC trace receiver")
	reportAddr := flag.String("report", ":8080", "listen address of the report port (GET /checks, /spans)")
	var op oidcFlags
	flag.StringVar(&op.addr, "oidc", "", "listen address of the OpenID provider (HTTPS); empty: none")
	flag.StringVar(&op.issuer, "oidc-issuer", "", "the provider's issuer URL (https://host:port, what clients reach it at)")
	flag.StringVar(&op.tlsDir, "oidc-tls-dir", "", "folder of the provider's serving certificate and key (tls.crt, tls.key)")
	flag.StringVar(&op.client, "oidc-client", "", "the provider's client, id:secret")
	flag.StringVar(&op.redirectURIs, "oidc-redirect-uris", "", "the client's redirect URIs, comma-separated")
	flag.StringVar(&op.user, "oidc-user", "", "the provider's user, name:password")
	flag.Parse()
	if op.addr != "" {
		serveOIDC(op)
	}

	grpcAuth := extauthz.ServeGRPC(listen(*grpcAddr))
	httpAuth := extauthz.ServeHTTP(listen(*httpAddr), "")
	for _, s := range []*extauthz.Server{grpcAuth, httpAuth} {
		s.On(extauthz.Match{Header: "x-e2e-auth", Value: "allow"}, extauthz.Allow(map[string]string{"x-auth-user": "e2e"}))
		s.On(extauthz.Match{}, extauthz.Deny(http.StatusForbidden, "denied by xds-testservers", map[string]string{"x-denied-by": "xds-testservers"}))
	}
	receiver := otlp.Serve(listen(*otlpAddr))

	mux := http.NewServeMux()
	mux.HandleFunc("GET /checks", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, append(grpcAuth.Checks(), httpAuth.Checks()...))
	})
	mux.HandleFunc("GET /spans", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, receiver.Spans())
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {})
	log.Printf("xds-testservers: ext_authz gRPC %s, HTTP %s, OTLP %s, report %s", *grpcAddr, *httpAddr, *otlpAddr, *reportAddr)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	log.Fatal(srv.Serve(listen(*reportAddr)))
}

// oidcFlags are the OpenID provider's flags.
type oidcFlags struct{ addr, issuer, tlsDir, client, redirectURIs, user string }

// serveOIDC starts the OpenID provider of f in the background; it exits
// the program on a bad flag or certificate.
func serveOIDC(f oidcFlags) {
	id, secret, ok1 := strings.Cut(f.client, ":")
	name, password, ok2 := strings.Cut(f.user, ":")
	if !ok1 || !ok2 || id == "" || secret == "" || name == "" || password == "" || f.issuer == "" || f.redirectURIs == "" {
		log.Fatal("-oidc needs -oidc-issuer, -oidc-client id:secret, -oidc-user name:password and -oidc-redirect-uris")
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(f.tlsDir, "tls.crt"), filepath.Join(f.tlsDir, "tls.key"))
	if err != nil {
		log.Fatalf("oidc: %v", err)
	}
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		log.Fatalf("oidc: %v", err)
	}
	l := tls.NewListener(listen(f.addr), &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	p, err := oidc.Serve(l, f.issuer, jwt.NewKeySet(&jwt.Key{ID: "key-1", Algorithm: jose.RS256, Private: rsaKey}))
	if err != nil {
		log.Fatal(err)
	}
	p.AddClient(oidc.Client{ID: id, Secret: secret, RedirectURIs: strings.Split(f.redirectURIs, ",")})
	p.AddUser(oidc.User{Username: name, Password: password, Email: name + "@example.test"})
	log.Printf("xds-testservers: OpenID provider %s on %s, client %s, user %s", f.issuer, f.addr, id, name)
}

func listen(addr string) net.Listener {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		log.Fatal(err)
	}
	return lis
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(v); err != nil {
		log.Printf("report: %v", err)
	}
}
