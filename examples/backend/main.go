// Command backend is the quickstart's sample backend: an HTTP server that
// answers every request with a JSON description of it and the backend's own
// name, so that a curl through Envoy shows which backend answered.
package main

import (
	"encoding/json"
	"flag"
	"log"
	"net/http"
	"os"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:9001", "address to listen on")
	name := flag.String("name", "backend", "name to report in answers")
	flag.Parse()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(map[string]any{
			"backend": *name,
			"method":  r.Method,
			"host":    r.Host,
			"path":    r.URL.RequestURI(),
			"headers": r.Header,
		})
	})
	log.SetOutput(os.Stderr)
	log.Printf("backend %s listening on %s", *name, *listen)
	log.Fatal(http.ListenAndServe(*listen, h))
}
