package version

import "testing"

func TestGetPrefersTheBuildTimeValue(t *testing.T) {
	old := version
	t.Cleanup(func() { version = old })
	version = "v9.8.7"
	if got := Get(); got != "v9.8.7" {
		t.Fatalf("Get() = %q, want the -X value v9.8.7", got)
	}
	version = ""
	if got := Get(); got == "" {
		t.Fatal("Get() is empty without a build-time value")
	}
}
