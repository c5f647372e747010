// Package extauthz holds real external authorization servers for tests:
// a gRPC server of Envoy's envoy.service.auth.v3.Authorization service
// (StartGRPC) and an HTTP server speaking the protocol of Envoy's ext_authz
// HTTP service (StartHTTP). Both listen on 127.0.0.1:0, answer each check
// with the Decision of the first Rule that matches it (Allow when none
// does), and record every check they saw.
//
// A test sets behaviours with Server.On (per path prefix or header value):
// allow (optionally adding headers to the upstream request), deny with a
// status, body and headers, slow (Decision.Delay) and down (Server.Stop:
// the port is closed, so the client gets connection refused).
package extauthz

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// Decision is the answer to one check.
type Decision struct {
	// Status is the HTTP status of a denial; 0 or 200 allows.
	Status int
	// Body is the body sent back to the client on denial.
	Body string
	// Headers are, on allow, added to the upstream request (Envoy's
	// OkHttpResponse.headers for gRPC; the auth response headers that the
	// filter's allowed_upstream_headers lets through for HTTP) and, on
	// denial, sent to the client (DeniedHttpResponse.headers; the auth
	// response headers for HTTP).
	Headers map[string]string
	// Delay is waited before answering (a slow server); the wait ends
	// early when the client gives up or the server stops.
	Delay time.Duration
}

// Allowed reports whether d allows the request.
func (d Decision) Allowed() bool { return d.Status == 0 || d.Status == http.StatusOK }

// Allow returns a Decision that allows and adds headers (may be nil) to
// the upstream request.
func Allow(headers map[string]string) Decision { return Decision{Headers: headers} }

// Deny returns a Decision that denies with status, body and headers sent
// back to the client.
func Deny(status int, body string, headers map[string]string) Decision {
	return Decision{Status: status, Body: body, Headers: headers}
}

// Match selects checks. Empty fields match anything; set fields must all
// match.
type Match struct {
	// PathPrefix matches the original request's path (for the HTTP
	// server, with the configured path prefix removed).
	PathPrefix string
	// Header and Value match a request header (name case-insensitive,
	// value exact) as the auth server received it.
	Header, Value string
}

func (m Match) matches(c Check) bool {
	if m.PathPrefix != "" && !strings.HasPrefix(c.Path, m.PathPrefix) {
		return false
	}
	if m.Header != "" && c.Headers[strings.ToLower(m.Header)] != m.Value {
		return false
	}
	return true
}

// Check is one authorization request as the server received it.
type Check struct {
	// Method, Path and Host are the original request's (Path without the
	// HTTP server's configured prefix).
	Method, Path, Host string
	// AuthPath is the path the HTTP auth server was asked for (configured
	// prefix included); empty for gRPC.
	AuthPath string
	// Headers are the request headers sent to the auth server, lower-case
	// names (gRPC: AttributeContext.Request.Http.headers or header_map).
	Headers map[string]string
	// Body is the request body when the filter forwards it
	// (with_request_body).
	Body string
	// Decision is what the server answered.
	Decision Decision
}

type rule struct {
	m Match
	d Decision
}

// Server is a running ext_authz server of either protocol.
type Server struct {
	// Addr is host:port on 127.0.0.1.
	Addr string

	mu      sync.Mutex
	rules   []rule
	checks  []Check
	stop    func()
	once    sync.Once
	stopped chan struct{}
}

func newServer(addr string, stop func()) *Server {
	return &Server{Addr: addr, stop: stop, stopped: make(chan struct{})}
}

// On adds a rule: checks that m matches get d. Rules are tried in the
// order they were added; the first match wins; no match allows.
func (s *Server) On(m Match, d Decision) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = append(s.rules, rule{m, d})
}

// Reset drops every rule: later checks are allowed until On adds rules
// again. The record of checks is kept.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = nil
}

// Checks returns a copy of the checks seen so far, oldest first.
func (s *Server) Checks() []Check {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Check(nil), s.checks...)
}

// Stop closes the listener and ends open calls; later connections are
// refused. It is safe to call more than once (t.Cleanup calls it too).
func (s *Server) Stop() {
	s.once.Do(func() {
		close(s.stopped)
		s.stop()
	})
}

// decide finds c's Decision, records c, and waits the Decision's delay
// (ending early with ctx or Stop). It returns false when the wait was cut
// short.
func (s *Server) decide(ctx context.Context, c Check) (Decision, bool) {
	s.mu.Lock()
	d := Decision{}
	for _, r := range s.rules {
		if r.m.matches(c) {
			d = r.d
			break
		}
	}
	c.Decision = d
	s.checks = append(s.checks, c)
	s.mu.Unlock()
	if d.Delay > 0 {
		timer := time.NewTimer(d.Delay)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-ctx.Done():
			return d, false
		case <-s.stopped:
			return d, false
		}
	}
	return d, true
}

func cleanup(t testing.TB, s *Server) *Server {
	t.Cleanup(s.Stop)
	return s
}
