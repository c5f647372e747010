package translate

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/provider/file"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

// benchInput returns the shared benchmark input for n HTTPRoutes: one
// Gateway, n Services and n HTTPRoutes with one hostname each, written by
// the workspace's shared/bench/gen-routes.py so figures compare with other
// implementations. Set BENCH_GEN_ROUTES to the script's path when the
// workspace is laid out differently.
func benchInput(b *testing.B, n int, endpointSlices bool) *resources.Resources {
	b.Helper()
	script := os.Getenv("BENCH_GEN_ROUTES")
	if script == "" {
		script = filepath.Join("..", "..", "..", "shared", "bench", "gen-routes.py")
	}
	if _, err := os.Stat(script); err != nil {
		b.Skipf("benchmark input generator not found at %s (set BENCH_GEN_ROUTES)", script)
	}
	args := []string{script, fmt.Sprint(n)}
	if endpointSlices {
		args = append(args, "--endpointslices")
	}
	out, err := exec.Command("python3", args...).Output()
	if err != nil {
		b.Fatal(err)
	}
	res := &resources.Resources{}
	if problems := file.Decode("bench.yaml", out, res); len(problems) > 0 {
		b.Fatalf("benchmark input: %v", problems[0])
	}
	res.Sort()
	return res
}

// BenchmarkTranslate measures the whole pure pipeline (Gateway API -> IR ->
// validation -> xDS) on the shared benchmark input.
func BenchmarkTranslate(b *testing.B) {
	for _, n := range []int{100, 1000, 5000} {
		b.Run(fmt.Sprintf("routes=%d", n), func(b *testing.B) {
			res := benchInput(b, n, true)
			b.ReportAllocs()
			for b.Loop() {
				out, err := Run(res, gatewayapi.Options{})
				if err != nil {
					b.Fatal(err)
				}
				if got := len(out.Result.IR.Gateways); got != 1 {
					b.Fatalf("gateways = %d, want 1", got)
				}
			}
		})
	}
}
