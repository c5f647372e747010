package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/xds-controller/xds-controller/pkg/identity"
)

// tokenReviews is how many TokenReviews the API server has answered
// (apiserver_request_total for POST tokenreviews, every code summed).
func tokenReviews(t *testing.T, kube kubernetes.Interface) int {
	t.Helper()
	raw, err := kube.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") || !strings.Contains(line, `resource="tokenreviews"`) || !strings.Contains(line, `verb="POST"`) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		n += int(v)
	}
	return n
}

// withClaims is tok with its payload's claims changed (the signature no
// longer matches: only the API server could tell).
func withClaims(t *testing.T, tok string, change map[string]any) string {
	t.Helper()
	parts := strings.Split(tok, ".")
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	for k, v := range change {
		c[k] = v
	}
	b, _ = json.Marshal(c)
	return parts[0] + "." + base64.RawURLEncoding.EncodeToString(b) + "." + parts[2]
}

// TestIdentityServiceSparesTheAPIServer counts the real API server's
// TokenReviews: tokens that are malformed, expired, for another audience,
// over-long or of a ServiceAccount that is no fleet's are refused without
// one; a good token costs exactly one. Then one client's requests beyond
// identity.DefaultClientBurst are refused with 429 and Retry-After.
func TestIdentityServiceSparesTheAPIServer(t *testing.T) {
	requireAPIServer(t)
	ctx := context.Background()
	f := newIdentityFixture(t, "identity-limits")
	kube, fleetPod, strangerPod, client, csr := f.kube, f.fleetPod, f.strangerPod, f.client, f.csr

	good := token(t, kube, controllerNamespace, "envoy-xds", identity.DefaultAudience, fleetPod)
	now := time.Now().Unix()
	refusals := []struct {
		name, token string
		code        int
		msg         string
	}{
		{"not a JWT", "abc", http.StatusUnauthorized, "not a JWT"},
		{"expired", withClaims(t, good, map[string]any{"iat": now - 900, "nbf": now - 900, "exp": now - 300}), http.StatusUnauthorized, "token expired"},
		{"another audience", token(t, kube, controllerNamespace, "envoy-xds", "https://kubernetes.default.svc", fleetPod), http.StatusUnauthorized, "not valid for audience"},
		{"over-long", withClaims(t, good, map[string]any{"exp": now + 48*3600}), http.StatusUnauthorized, "exceeds"},
		{"not a fleet's", token(t, kube, "default", "web-xds", identity.DefaultAudience, strangerPod), http.StatusForbidden, "is not the ServiceAccount of an Envoy fleet"},
	}
	before := tokenReviews(t, kube)
	for _, tc := range refusals {
		_, err := client.Sign(ctx, tc.token, csr)
		var refused *identity.RefusedError
		if !errors.As(err, &refused) || refused.StatusCode != tc.code || !strings.Contains(refused.Message, tc.msg) {
			t.Errorf("%s: %v, want %d with %q", tc.name, err, tc.code, tc.msg)
		}
	}
	if after := tokenReviews(t, kube); after != before {
		t.Errorf("%d TokenReviews for %d tokens refused locally, want 0", after-before, len(refusals))
	}
	resp, err := client.Sign(ctx, good, csr)
	if err != nil {
		t.Fatalf("good token: %v", err)
	}
	after := tokenReviews(t, kube)
	t.Logf("%d refusals, then an SVID for %s: TokenReviews %d -> %d", len(refusals), resp.SPIFFEID, before, after)
	if after != before+1 {
		t.Errorf("%d TokenReviews for one good token, want 1", after-before)
	}

	// The limit: this client (127.0.0.1) sent len(refusals)+1 requests.
	sent := len(refusals) + 1
	var refused *identity.RefusedError
	for ; sent < identity.DefaultClientBurst; sent++ {
		if _, err := client.Sign(ctx, "abc", csr); !errors.As(err, &refused) || refused.StatusCode != http.StatusUnauthorized {
			t.Fatalf("request %d: %v, want 401", sent+1, err)
		}
	}
	_, err = client.Sign(ctx, good, csr)
	if !errors.As(err, &refused) || refused.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("request %d: %v, want 429", sent+1, err)
	}
	t.Logf("request %d: %v", sent+1, err)
	if n := tokenReviews(t, kube); n != after {
		t.Errorf("%d TokenReviews for refused requests", n-after)
	}
}
