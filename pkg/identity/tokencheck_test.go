package identity

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
)

func TestCheckToken(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	iat := now.Add(-time.Minute).Unix()
	claims := func(extra map[string]any) string {
		c := map[string]any{"sub": saUser("ns1/web"), "aud": []string{"other", DefaultAudience}, "iat": iat, "nbf": iat, "exp": iat + 600}
		for k, v := range extra {
			if v == nil {
				delete(c, k)
			} else {
				c[k] = v
			}
		}
		return jwt(c)
	}
	for name, tok := range map[string]string{
		"audience list":         claims(nil),
		"audience string":       claims(map[string]any{"aud": DefaultAudience}),
		"nbf within leeway":     claims(map[string]any{"nbf": now.Unix() + 50}),
		"iat within leeway":     claims(map[string]any{"iat": now.Unix() + 50, "nbf": nil}),
		"no nbf (optional)":     claims(map[string]any{"nbf": nil}),
		"an ES256 signed token": strings.Replace(claims(nil), base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"RS256"}`)), base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"ES256","kid":"k"}`)), 1),
	} {
		sa, err := CheckToken(tok, DefaultAudience, now, MaxTokenLifetime)
		if err != nil || sa != (ServiceAccount{Namespace: "ns1", Name: "web"}) {
			t.Errorf("%s: %+v %v, want ns1/web", name, sa, err)
		}
	}
	header := func(h string) string {
		tok := claims(nil)
		return base64.RawURLEncoding.EncodeToString([]byte(h)) + tok[strings.Index(tok, "."):]
	}
	for name, tc := range map[string]struct {
		token, msg string
	}{
		"expired":            {claims(map[string]any{"iat": iat - 700, "nbf": iat - 700, "exp": iat - 100}), "token expired"},
		"expires now":        {claims(map[string]any{"iat": now.Unix() - 600, "nbf": now.Unix() - 600, "exp": now.Unix()}), "token expired"},
		"too long":           {claims(map[string]any{"exp": iat + 2*3600}), "exceeds 1h0m0s"},
		"no expiry":          {claims(map[string]any{"exp": nil}), "no expiry"},
		"no iat":             {claims(map[string]any{"iat": nil}), "no expiry"},
		"legacy secret":      {jwt(map[string]any{"sub": saUser("a/b")}), "no expiry"},
		"not yet valid":      {claims(map[string]any{"nbf": now.Unix() + 120}), "not valid before"},
		"issued in future":   {claims(map[string]any{"iat": now.Unix() + 120, "nbf": nil, "exp": now.Unix() + 700}), "issued in the future"},
		"other audience":     {claims(map[string]any{"aud": []string{"https://kubernetes.default.svc"}}), "not valid for audience"},
		"no audience":        {claims(map[string]any{"aud": nil}), "not valid for audience"},
		"a user":             {claims(map[string]any{"sub": "alice"}), "is not a ServiceAccount"},
		"no subject":         {claims(map[string]any{"sub": nil}), "is not a ServiceAccount"},
		"not a JWT":          {"abc", "not a JWT"},
		"four parts":         {claims(nil) + ".x", "not a JWT"},
		"payload not base64": {"eyJhbGciOiJSUzI1NiJ9.!!!.c2ln", "not a JWT"},
		"payload not JSON":   {"eyJhbGciOiJSUzI1NiJ9." + base64.RawURLEncoding.EncodeToString([]byte("hello")) + ".c2ln", "token claims"},
		"alg none":           {header(`{"alg":"none"}`), "not a JWT"},
		"alg HS256":          {header(`{"alg":"HS256"}`), "not a JWT"},
		"JSON serialization": {`{"payload":"e30","signatures":[]}`, "not a JWT"},
	} {
		_, err := CheckToken(tc.token, DefaultAudience, now, MaxTokenLifetime)
		if !errors.Is(err, ErrUnauthenticated) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: error %v, want ErrUnauthenticated with %q", name, err, tc.msg)
		}
	}
}

// countReviews wraps s's Reviewer and counts its TokenReviews.
func countReviews(s *Server) *atomic.Int32 {
	var n atomic.Int32
	inner := s.Reviewer
	s.Reviewer = ReviewerFunc(func(ctx context.Context, token string, audiences []string) (authv1.TokenReviewStatus, error) {
		n.Add(1)
		return inner.Review(ctx, token, audiences)
	})
	return &n
}

// TestIssueChecksLocallyBeforeTheTokenReview: malformed, expired, foreign
// or over-long tokens, and tokens claiming a ServiceAccount that is no
// fleet's, are refused without a TokenReview; a good token costs one.
func TestIssueChecksLocallyBeforeTheTokenReview(t *testing.T) {
	now := time.Now()
	s, _ := testServer(t, now)
	reviews := countReviews(s)
	csr := []byte("not even a CSR")
	fleet := "xds-system/envoy-xds"
	for name, tc := range map[string]struct {
		token  string
		target error
	}{
		"not a JWT":              {"abc", ErrUnauthenticated},
		"alg none":               {base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none"}`)) + token(now, fleet, DefaultAudience)[strings.Index(token(now, fleet, DefaultAudience), "."):], ErrUnauthenticated},
		"expired":                {jwt(map[string]any{"sub": saUser(fleet), "aud": DefaultAudience, "iat": now.Unix() - 900, "exp": now.Unix() - 300}), ErrUnauthenticated},
		"not yet valid":          {jwt(map[string]any{"sub": saUser(fleet), "aud": DefaultAudience, "iat": now.Unix(), "nbf": now.Unix() + 300, "exp": now.Unix() + 600}), ErrUnauthenticated},
		"too long-lived":         {jwt(map[string]any{"sub": saUser(fleet), "aud": DefaultAudience, "iat": now.Unix(), "exp": now.Unix() + 48*3600}), ErrUnauthenticated},
		"other audience":         {token(now, fleet, "https://kubernetes.default.svc"), ErrUnauthenticated},
		"not a ServiceAccount":   {jwt(map[string]any{"sub": "alice", "aud": DefaultAudience, "iat": now.Unix(), "exp": now.Unix() + 600}), ErrUnauthenticated},
		"unknown ServiceAccount": {token(now, "xds-example/web-xds", DefaultAudience), ErrForbidden},
	} {
		if _, err := s.Issue(context.Background(), tc.token, csr); !errors.Is(err, tc.target) {
			t.Errorf("%s: error %v, want %v", name, err, tc.target)
		}
		if n := reviews.Load(); n != 0 {
			t.Fatalf("%s: %d TokenReview(s) sent, want none", name, n)
		}
	}
	// A good token is reviewed (once), then the CSR is refused.
	if _, err := s.Issue(context.Background(), token(now, fleet, DefaultAudience), csr); !errors.Is(err, ErrBadRequest) {
		t.Errorf("good token, bad CSR: %v, want ErrBadRequest", err)
	}
	if n := reviews.Load(); n != 1 {
		t.Errorf("%d TokenReviews for one good token, want 1", n)
	}
}

// TestRateLimitPerClient: a client (source IP; IPv6 by /64) gets
// DefaultClientBurst requests, then 429 with Retry-After and no
// TokenReview, until its bucket refills; other clients are not affected.
func TestRateLimitPerClient(t *testing.T) {
	now := time.Now()
	s, _ := testServer(t, now)
	clock := now
	s.Now = func() time.Time { return clock }
	s.Log = slog.New(slog.DiscardHandler)
	reviews := countReviews(s)
	tok := token(now, "xds-system/envoy-xds", DefaultAudience)
	post := func(remote string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, Path, strings.NewReader(`{"csr":""}`))
		r.RemoteAddr = remote
		r.Header.Set("Authorization", "Bearer "+tok)
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		return w
	}
	for i := range DefaultClientBurst {
		if w := post("10.0.0.1:40000"); w.Code != http.StatusBadRequest {
			t.Fatalf("request %d: %d %s, want 400 (empty CSR)", i+1, w.Code, w.Body)
		}
	}
	w := post("10.0.0.1:40001")
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "6" || !strings.Contains(w.Body.String(), "too many requests") {
		t.Fatalf("request %d: %d Retry-After %q %s, want 429 after 6 s", DefaultClientBurst+1, w.Code, w.Header().Get("Retry-After"), w.Body)
	}
	t.Logf("request %d: %d Retry-After %s %s", DefaultClientBurst+1, w.Code, w.Header().Get("Retry-After"), strings.TrimSpace(w.Body.String()))
	if n := reviews.Load(); n != DefaultClientBurst {
		t.Errorf("%d TokenReviews, want %d (none for the refused request)", n, DefaultClientBurst)
	}
	if w := post("10.0.0.2:40000"); w.Code != http.StatusBadRequest {
		t.Errorf("another client: %d, want 400", w.Code)
	}
	// IPv6: one /64 is one client.
	for i := range DefaultClientBurst {
		post(fmt.Sprintf("[2001:db8:0:1::%x]:443", i+1))
	}
	if w := post("[2001:db8:0:1::ffff]:443"); w.Code != http.StatusTooManyRequests {
		t.Errorf("same IPv6 /64: %d, want 429", w.Code)
	}
	if w := post("[2001:db8:0:2::1]:443"); w.Code != http.StatusBadRequest {
		t.Errorf("another IPv6 /64: %d, want 400", w.Code)
	}
	// One request back every 6 s.
	clock = clock.Add(6 * time.Second)
	if w := post("10.0.0.1:40002"); w.Code != http.StatusBadRequest {
		t.Errorf("6 s later: %d, want 400", w.Code)
	}
	if w := post("10.0.0.1:40003"); w.Code != http.StatusTooManyRequests {
		t.Errorf("6 s later, second request: %d, want 429", w.Code)
	}
}

// TestClientLimiterForgetsIdleClients: clients whose bucket is full again
// are dropped at the next sweep, so the map does not grow with every
// address ever seen.
func TestClientLimiterForgetsIdleClients(t *testing.T) {
	l := NewClientLimiter(DefaultClientRate, DefaultClientBurst)
	now := time.Now()
	for i := range 100 {
		l.Allow(fmt.Sprintf("10.1.0.%d:1", i), now)
	}
	if len(l.clients) != 100 {
		t.Fatalf("%d clients tracked, want 100", len(l.clients))
	}
	l.Allow("10.2.0.1:1", now.Add(sweepEvery+time.Duration(DefaultClientBurst)*6*time.Second))
	if len(l.clients) != 1 {
		t.Errorf("%d clients tracked after they were idle, want 1", len(l.clients))
	}
}
