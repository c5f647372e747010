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
package main

import (
	"encoding/json"
	"flag"
	"log"
	"net"
	"net/http"
	"time"

	"github.com/xds-controller/xds-controller/internal/testservers/extauthz"
	"github.com/xds-controller/xds-controller/internal/testservers/otlp"
)

func main() {
	grpcAddr := flag.String("authz-grpc", ":9000", "listen address of the ext_authz gRPC server")
	httpAddr := flag.String("authz-http", ":9001", "listen address of the ext_authz HTTP server")
	otlpAddr := flag.String("otlp", ":4317", "listen address of the OTLP/gRPC trace receiver")
	reportAddr := flag.String("report", ":8080", "listen address of the report port (GET /checks, /spans)")
	flag.Parse()

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
