// Package testenvoy finds the Envoy binary that tests run: $ENVOY, else
// `envoy` on PATH, else the one hack/install-envoy.sh installed into the
// project's .cache/venv. `make test` installs it first and exports ENVOY.
package testenvoy

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// Path returns the Envoy binary, or skips the test when there is none.
// Under CI (CI set) a missing Envoy fails the test instead: CI must run
// every test.
func Path(t testing.TB) string {
	t.Helper()
	if p := Find(); p != "" {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no Envoy binary: set ENVOY or run hack/install-envoy.sh (make test does)")
	}
	t.Skip("no Envoy binary: set ENVOY or run hack/install-envoy.sh (make test does)")
	return ""
}

// Find returns the Envoy binary or "".
func Find() string {
	if p := os.Getenv("ENVOY"); p != "" {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
	}
	if p, err := exec.LookPath("envoy"); err == nil {
		return p
	}
	_, self, _, _ := runtime.Caller(0)
	matches, _ := filepath.Glob(filepath.Join(filepath.Dir(self), "..", "..", ".cache", "venv", "lib", "python3*", "site-packages", "envoy", "_bin", "envoy"))
	if len(matches) > 0 {
		return matches[0]
	}
	return ""
}
