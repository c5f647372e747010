package drain

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeAdmin records the requests it gets ("METHOD /path?query") and
// answers failOn's path with 500.
type fakeAdmin struct {
	mu     sync.Mutex
	calls  []string
	failOn string
}

func (f *fakeAdmin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.calls = append(f.calls, r.Method+" "+r.URL.RequestURI())
	f.mu.Unlock()
	if r.URL.Path == f.failOn {
		http.Error(w, "envoy says no", http.StatusInternalServerError)
		return
	}
	_, _ = w.Write([]byte("OK\n"))
}

func (f *fakeAdmin) got() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func TestDrainCallsTheAdminInOrderThenWaits(t *testing.T) {
	admin := &fakeAdmin{}
	srv := httptest.NewServer(admin)
	defer srv.Close()
	var waited []time.Duration
	var callsBeforeWait []string
	d := &Drainer{
		Admin:     strings.TrimPrefix(srv.URL, "http://"),
		DrainTime: 15 * time.Second,
		Wait: func(_ context.Context, d time.Duration) error {
			waited = append(waited, d)
			callsBeforeWait = admin.got()
			return nil
		},
	}
	if err := d.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []string{"POST /healthcheck/fail", "POST /drain_listeners?graceful"}
	if got := admin.got(); !slices.Equal(got, want) {
		t.Errorf("admin calls %q, want %q", got, want)
	}
	if !slices.Equal(callsBeforeWait, want) {
		t.Errorf("calls made before the wait %q, want both %q", callsBeforeWait, want)
	}
	if !slices.Equal(waited, []time.Duration{15 * time.Second}) {
		t.Errorf("waited %v, want once the drain time 15s", waited)
	}
}

func TestDrainStopsAtTheFirstAdminError(t *testing.T) {
	admin := &fakeAdmin{failOn: "/healthcheck/fail"}
	srv := httptest.NewServer(admin)
	defer srv.Close()
	d := &Drainer{
		Admin:     strings.TrimPrefix(srv.URL, "http://"),
		DrainTime: time.Hour,
		Wait: func(context.Context, time.Duration) error {
			t.Error("waited after a failed admin call")
			return nil
		},
	}
	err := d.Drain(context.Background())
	if err == nil || !strings.Contains(err.Error(), "500") || !strings.Contains(err.Error(), "envoy says no") {
		t.Errorf("error %v, want the admin's 500 and its body", err)
	}
	if got := admin.got(); !slices.Equal(got, []string{"POST /healthcheck/fail"}) {
		t.Errorf("admin calls %q: nothing after the failed one", got)
	}
}

func TestDrainWithoutEnvoy(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := strings.TrimPrefix(srv.URL, "http://")
	srv.Close() // nothing listens there any more
	d := &Drainer{Admin: addr, DrainTime: time.Hour, Wait: func(context.Context, time.Duration) error {
		t.Error("waited without an Envoy")
		return nil
	}}
	if err := d.Drain(context.Background()); err == nil || !strings.Contains(err.Error(), "/healthcheck/fail") {
		t.Errorf("error %v, want the failed POST /healthcheck/fail", err)
	}
	if err := (&Drainer{}).Drain(context.Background()); err == nil {
		t.Error("no error without an admin address")
	}
}

func TestSleepEndsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := sleep(ctx, time.Hour); err != context.Canceled {
		t.Errorf("sleep after cancel: %v", err)
	}
	if err := sleep(context.Background(), 0); err != nil {
		t.Errorf("sleep 0: %v", err)
	}
}

func TestInstallCopiesAnExecutable(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.WriteFile(src, []byte("binary v1"), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(bin, "xds-controller")
	for _, content := range []string{"binary v1", "binary v2"} {
		if err := os.WriteFile(src, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		// Twice: a restarted agent replaces its earlier copy.
		if err := install(src, dst); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(dst)
		if err != nil || string(b) != content {
			t.Errorf("copy holds %q (%v), want %q", b, err, content)
		}
		st, err := os.Stat(dst)
		if err != nil || st.Mode().Perm() != 0o555 {
			t.Errorf("copy mode %v (%v), want r-xr-xr-x", st.Mode(), err)
		}
		entries, _ := os.ReadDir(bin)
		if len(entries) != 1 {
			t.Errorf("folder holds %d files, want only the copy (no temporary file left)", len(entries))
		}
	}
	if err := install(filepath.Join(dir, "missing"), dst); err == nil {
		t.Error("no error for a missing source")
	}
	if err := InstallSelf(filepath.Join(dir, "no-such-folder", "x")); err == nil {
		t.Error("no error for a missing folder")
	}
}
