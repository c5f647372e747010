package extauthz

import (
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"testing"
)

// StartHTTP starts an HTTP/1.1 auth server on 127.0.0.1:0 speaking the
// protocol of Envoy's ext_authz http_service: the check request carries
// the original method, pathPrefix (the filter's http_service.path_prefix)
// followed by the original path, the headers the filter allows, and the
// body when forwarded. It answers 200 to allow (Decision.Headers become
// response headers, which the filter adds upstream when
// allowed_upstream_headers lets them), else Decision.Status with Body and
// Headers (which the filter sends to the client). Stopped at t's cleanup.
func StartHTTP(t testing.TB, pathPrefix string) *Server {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return cleanup(t, ServeHTTP(lis, pathPrefix))
}

// ServeHTTP is StartHTTP on a listener of the caller's (a program that is
// not a test: cmd/xds-testservers); Server.Stop closes it.
func ServeHTTP(lis net.Listener, pathPrefix string) *Server {
	hs := &http.Server{ErrorLog: log.New(io.Discard, "", 0)}
	s := newServer(lis.Addr().String(), func() { _ = hs.Close() })
	hs.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		c := Check{Method: r.Method, AuthPath: r.URL.RequestURI(), Host: r.Host, Headers: map[string]string{}, Body: string(body)}
		c.Path = strings.TrimPrefix(c.AuthPath, pathPrefix)
		for k, v := range r.Header {
			c.Headers[strings.ToLower(k)] = strings.Join(v, ",")
		}
		d, ok := s.decide(r.Context(), c)
		if !ok {
			// The client gave up or the server stops: abort the
			// connection rather than answer (an empty 200 would allow).
			panic(http.ErrAbortHandler)
		}
		for k, v := range d.Headers {
			w.Header().Set(k, v)
		}
		if d.Allowed() {
			w.WriteHeader(http.StatusOK)
			return
		}
		w.WriteHeader(d.Status)
		_, _ = io.WriteString(w, d.Body)
	})
	go func() { _ = hs.Serve(lis) }()
	return s
}
