package e2e

// The rate-limit service reading a ConfigMap volume, as the chart mounts
// it (pkg/ratelimitconfig): the configuration folder laid out and updated
// the way the kubelet's atomic writer does (a timestamped dot-folder, the
// "..data" symlink swapped by a rename, one symlink per key), read by the
// real service with the settings the chart and standalone mode give it
// (RUNTIME_WATCH_ROOT=false, RUNTIME_IGNOREDOTFILES=true).

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	rlsconfv3 "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"

	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/standalone"
	"github.com/xds-controller/xds-controller/pkg/xdstranslator"
)

// kubeletVolumeWrite makes dir hold files the way the kubelet updates a
// ConfigMap volume (k8s.io/kubernetes pkg/volume/util AtomicWriter): the
// payload in a new folder "..<timestamp>.<random>", a symlink
// "..data_tmp" to it renamed over "..data" (the swap: one rename), a
// symlink "<key>" -> "..data/<key>" for each new key, the symlinks of
// keys that went away removed, the previous folder removed. It returns
// when the swap happened.
func kubeletVolumeWrite(t *testing.T, dir string, files map[string][]byte) time.Time {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	old, _ := os.Readlink(filepath.Join(dir, "..data"))
	ts, err := os.MkdirTemp(dir, time.Now().UTC().Format("..2006_01_02_15_04_05."))
	must(err)
	must(os.Chmod(ts, 0o755))
	for k, v := range files {
		must(os.WriteFile(filepath.Join(ts, k), v, 0o644))
	}
	must(os.Symlink(filepath.Base(ts), filepath.Join(dir, "..data_tmp")))
	must(os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")))
	swapped := time.Now()
	for k := range files {
		if _, err := os.Lstat(filepath.Join(dir, k)); os.IsNotExist(err) {
			must(os.Symlink(filepath.Join("..data", k), filepath.Join(dir, k)))
		}
	}
	entries, err := os.ReadDir(dir)
	must(err)
	for _, e := range entries {
		if _, keep := files[e.Name()]; !keep && !strings.HasPrefix(e.Name(), "..") {
			must(os.Remove(filepath.Join(dir, e.Name())))
		}
	}
	if old != "" {
		must(os.RemoveAll(filepath.Join(dir, old)))
	}
	return swapped
}

// The service loads every domain of the volume once (the dot-folders
// skipped), and reloads on each swap: a changed limit, a new domain (a new
// key), a domain gone (a key removed). The delay from the swap to the
// service's /rlconfig showing the change is printed: the service's own
// part of a change's way (the kubelet's refresh comes before it).
func TestRateLimitServiceReloadsConfigMapVolume(t *testing.T) {
	rlsPath, redisPath := rateLimitBinaries(t)
	redis := startRedis(t, redisPath)
	at := func() string { return fmt.Sprintf("127.0.0.1:%d", freePort(t)) }
	svc := &standalone.RateLimitService{Path: rlsPath, GRPCAddress: at(), HTTPAddress: at(), DebugAddress: at(), Redis: redis, Dir: t.TempDir()}
	volume := filepath.Join(svc.Dir, "config")
	if err := os.MkdirAll(volume, 0o755); err != nil {
		t.Fatal(err)
	}
	files := func(ls ...*ir.GlobalRateLimits) map[string][]byte {
		cs := make([]*rlsconfv3.RateLimitConfig, 0, len(ls))
		for _, l := range ls {
			cs = append(cs, xdstranslator.RateLimitConfig(l))
		}
		f, err := xdstranslator.RateLimitConfigFiles(cs...)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	limits := func(domain string, n uint32) *ir.GlobalRateLimits {
		return &ir.GlobalRateLimits{Domain: domain, Rules: []ir.GlobalRateLimitRule{{Name: "p/0", ClientIP: true, Requests: n, Unit: ir.RateLimitMinute}}}
	}
	line := func(domain string, n uint32) string {
		return fmt.Sprintf("%s.rule_p/0.remote_address: unit=MINUTE requests_per_unit=%d, shadow_mode: false, quota_mode: false", domain, n)
	}
	kubeletVolumeWrite(t, volume, files(limits("gatewayclass.web", 10)))
	runRateLimitService(t, svc, line("gatewayclass.web", 10))

	c := &http.Client{Timeout: time.Second}
	rlconfig := func() string {
		resp, err := c.Get("http://" + svc.DebugAddress + "/rlconfig")
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	// after waits until /rlconfig is want exactly (every domain once),
	// and returns how long after the swap that was.
	after := func(what string, swapped time.Time, want ...string) time.Duration {
		t.Helper()
		exact := strings.Join(want, "\n") + "\n"
		var got string
		for time.Since(swapped) < 10*time.Second {
			if got = rlconfig(); canonical(got) == canonical(exact) {
				d := time.Since(swapped)
				t.Logf("%s: the service shows it %s after the swap", what, d.Round(time.Millisecond))
				return d
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Fatalf("%s: /rlconfig after 10 s:\n%s\nwant:\n%s", what, got, exact)
		return 0
	}
	// Loaded once: the dot-folders skipped.
	if got := rlconfig(); canonical(got) != canonical(line("gatewayclass.web", 10)) {
		t.Fatalf("first load: /rlconfig:\n%s", got)
	}

	var worst time.Duration
	for _, step := range []struct {
		what string
		set  []*ir.GlobalRateLimits
		want []string
	}{
		{"a limit changed", []*ir.GlobalRateLimits{limits("gatewayclass.web", 20)}, []string{line("gatewayclass.web", 20)}},
		{"a domain added", []*ir.GlobalRateLimits{limits("gatewayclass.web", 20), limits("gateway.apps.api", 5)},
			[]string{line("gatewayclass.web", 20), line("gateway.apps.api", 5)}},
		{"a domain removed", []*ir.GlobalRateLimits{limits("gateway.apps.api", 5)}, []string{line("gateway.apps.api", 5)}},
		{"the last one changed", []*ir.GlobalRateLimits{limits("gateway.apps.api", 7)}, []string{line("gateway.apps.api", 7)}},
	} {
		d := after(step.what, kubeletVolumeWrite(t, volume, files(step.set...)), step.want...)
		worst = max(worst, d)
	}
	t.Logf("slowest reload after a swap: %s", worst.Round(time.Millisecond))
	// Nothing the service refused on the way (a domain loaded twice from
	// a dot-folder would be "duplicate domain").
	if b, _ := os.ReadFile(filepath.Join(svc.Dir, "ratelimit.log")); strings.Contains(string(b), "duplicate") || strings.Contains(string(b), "error loading") {
		t.Errorf("the service's log:\n%s", b)
	}
}

// canonical sorts /rlconfig's lines (its domains come out of a map).
func canonical(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}
