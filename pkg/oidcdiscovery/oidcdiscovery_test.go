package oidcdiscovery

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xds-controller/xds-controller/internal/testservers/oidc"
	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
)

// TestProvidersRealProvider fetches the document of a real OpenID
// provider (internal/testservers/oidc over TLS): with its CA the
// endpoints are read; without it (the system trust store) the
// certificate is refused.
func TestProvidersRealProvider(t *testing.T) {
	op := oidc.StartTLS(t)
	c := New(Config{})
	withCA := gatewayapi.OIDCDiscovery{Issuer: op.Issuer, CA: op.CA}
	system := gatewayapi.OIDCDiscovery{Issuer: op.Issuer}
	got := c.Fetch(context.Background(), []gatewayapi.OIDCDiscovery{withCA, system})
	p := got[gatewayapi.OIDCDiscoveryKey(op.Issuer, op.CA)]
	if p.Error != "" || p.AuthorizationEndpoint != op.Issuer+"/authorize" || p.TokenEndpoint != op.Issuer+oidc.TokenPath || p.EndSessionEndpoint != op.Issuer+"/end_session" {
		t.Errorf("with the CA: %+v", p)
	}
	if p := got[gatewayapi.OIDCDiscoveryKey(op.Issuer, nil)]; !strings.Contains(p.Error, "certificate") || p.TokenEndpoint != "" {
		t.Errorf("with the system trust store: %+v, want a certificate error", p)
	}
}

// TestProvidersRefused: what makes a document unusable is an Error.
func TestProvidersRefused(t *testing.T) {
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		issuer := srv.URL + strings.TrimSuffix(r.URL.Path, WellKnownPath)
		switch {
		case strings.HasPrefix(r.URL.Path, "/other"):
			_, _ = w.Write([]byte(`{"issuer":"https://evil.example","authorization_endpoint":"a","token_endpoint":"t"}`))
		case strings.HasPrefix(r.URL.Path, "/big"):
			_, _ = w.Write([]byte(`{"issuer":"` + issuer + `","x":"` + strings.Repeat("x", 2000) + `"}`))
		case strings.HasPrefix(r.URL.Path, "/redirect"):
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
		case strings.HasPrefix(r.URL.Path, "/partial"):
			_, _ = w.Write([]byte(`{"issuer":"` + issuer + `","authorization_endpoint":"a"}`))
		case strings.HasPrefix(r.URL.Path, "/slow"):
			time.Sleep(2 * time.Second)
		default:
			http.Error(w, "down", http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	c := New(Config{Timeout: 500 * time.Millisecond, MaxBytes: 1024})
	want := map[string]string{
		"/other": "not \"" + srv.URL + "/other\"", "/big": "larger than 1024 bytes", "/redirect": "302 Found",
		"/partial": "no authorization_endpoint or token_endpoint", "/slow": "Timeout", "/down": "503 Service Unavailable",
	}
	var reqs []gatewayapi.OIDCDiscovery
	for p := range want {
		reqs = append(reqs, gatewayapi.OIDCDiscovery{Issuer: srv.URL + p})
	}
	got := c.Fetch(context.Background(), reqs)
	for p, msg := range want {
		if r := got[srv.URL+p]; !strings.Contains(r.Error, msg) || r.TokenEndpoint != "" {
			t.Errorf("%s: %+v, want an error with %q", p, r, msg)
		}
	}
}

// TestRunRefreshes: a document that changes at the provider is fetched
// again after Refresh and OnChange is called; one that failed is tried
// again after Retry; a document no longer asked for is forgotten.
func TestRunRefreshes(t *testing.T) {
	var mu sync.Mutex
	token, fail := "/token-1", true
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if strings.HasPrefix(r.URL.Path, "/flaky") && fail {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		issuer := srv.URL + strings.TrimSuffix(r.URL.Path, WellKnownPath)
		_, _ = w.Write([]byte(`{"issuer":"` + issuer + `","authorization_endpoint":"` + issuer + `/auth","token_endpoint":"` + issuer + token + `"}`))
	}))
	defer srv.Close()
	changed := make(chan struct{}, 10)
	c := New(Config{Refresh: 300 * time.Millisecond, Retry: 200 * time.Millisecond, OnChange: func() { changed <- struct{}{} }})
	reqs := []gatewayapi.OIDCDiscovery{{Issuer: srv.URL + "/a"}, {Issuer: srv.URL + "/flaky"}}
	got := c.Fetch(context.Background(), reqs)
	if got[srv.URL+"/a"].TokenEndpoint != srv.URL+"/a/token-1" || got[srv.URL+"/flaky"].Error == "" {
		t.Fatalf("first fetch: %+v", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go c.Run(ctx)
	mu.Lock()
	token, fail = "/token-2", false
	mu.Unlock()
	deadline := time.After(5 * time.Second)
	for {
		got = c.Providers(reqs)
		if got[srv.URL+"/a"].TokenEndpoint == srv.URL+"/a/token-2" && got[srv.URL+"/flaky"].TokenEndpoint == srv.URL+"/flaky/token-2" {
			break
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("after the provider changed: %+v", got)
		}
	}
	c.Providers(reqs[:1])
	c.mu.Lock()
	n := len(c.entries)
	c.mu.Unlock()
	if n != 1 {
		t.Errorf("%d entries after one issuer was dropped, want 1", n)
	}
}

// TestProvidersDoesNotWait: a new issuer reads Pending at once, however
// slowly its provider answers, and OnChange is called when its document
// is there; an issuer already known is answered beside it.
func TestProvidersDoesNotWait(t *testing.T) {
	release := make(chan struct{})
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/slow") {
			<-release
		}
		issuer := srv.URL + strings.TrimSuffix(r.URL.Path, WellKnownPath)
		_, _ = w.Write([]byte(`{"issuer":"` + issuer + `","authorization_endpoint":"` + issuer + `/auth","token_endpoint":"` + issuer + `/token"}`))
	}))
	defer srv.Close()
	defer close(release)
	changed := make(chan struct{}, 10)
	c := New(Config{Timeout: time.Minute, OnChange: func() { changed <- struct{}{} }})
	fast := gatewayapi.OIDCDiscovery{Issuer: srv.URL + "/fast"}
	slow := gatewayapi.OIDCDiscovery{Issuer: srv.URL + "/slow"}
	if got := c.Fetch(context.Background(), []gatewayapi.OIDCDiscovery{fast}); got[fast.Issuer].TokenEndpoint != fast.Issuer+"/token" {
		t.Fatalf("the fast issuer: %+v", got)
	}
	got := c.Providers([]gatewayapi.OIDCDiscovery{fast, slow})
	if !got[slow.Issuer].Pending || got[slow.Issuer].TokenEndpoint != "" {
		t.Errorf("a new issuer whose provider has not answered: %+v, want Pending", got[slow.Issuer])
	}
	if got[fast.Issuer].TokenEndpoint != fast.Issuer+"/token" {
		t.Errorf("the known issuer beside it: %+v", got[fast.Issuer])
	}
	if again := c.Providers([]gatewayapi.OIDCDiscovery{fast, slow}); !again[slow.Issuer].Pending {
		t.Errorf("asked again while it is fetched: %+v", again[slow.Issuer])
	}
	select {
	case <-changed:
		t.Fatal("OnChange before the provider answered")
	default:
	}
	release <- struct{}{}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no OnChange after the provider answered")
	}
	if got := c.Providers([]gatewayapi.OIDCDiscovery{fast, slow}); got[slow.Issuer].Pending || got[slow.Issuer].TokenEndpoint != slow.Issuer+"/token" {
		t.Errorf("after the provider answered: %+v", got[slow.Issuer])
	}
}
