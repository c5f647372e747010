package main

import (
	"fmt"
	"os"
	"runtime/debug"
	"runtime/pprof"

	"github.com/spf13/cobra"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/provider/file"
	"github.com/xds-controller/xds-controller/pkg/translate"
)

func newTranslateCommand() *cobra.Command {
	var path, output, cpuProfile string
	var showSecrets, routeStats bool
	cmd := &cobra.Command{
		Use:   "translate -f PATH [--output ir|xds]",
		Short: "Translate Gateway API YAML offline and print the IR and status, or the xDS resources",
		Long: `Reads the same YAML as standalone mode and prints, as YAML, either the IR and
the status of every object (--output ir) or the Envoy xDS resources per proxy
scope (--output xds). Ingresses of our IngressClasses are translated as the
controller serves them (ports 80 and 443; status.ingresses lists each one's
class, listeners and problems). Documents that cannot be loaded are reported on stderr;
the rest is translated. Exits non-zero when any document failed to load.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if os.Getenv("GOGC") == "" {
				// A run that ends when its output is printed: the
				// collector runs a quarter as often (the heap may grow to
				// five times the live data), a third of the command's CPU
				// at 5000 routes otherwise. GOGC, when set, decides.
				debug.SetGCPercent(400)
			}
			if cpuProfile != "" {
				stop, err := startCPUProfile(cpuProfile)
				if err != nil {
					return err
				}
				defer stop()
			}
			res, problems, err := file.Load(path)
			if err != nil {
				return err
			}
			for _, p := range problems {
				fmt.Fprintln(cmd.ErrOrStderr(), "error:", p)
			}
			out, err := translate.Run(res, gatewayapi.Options{RouteStats: func(*gwapiv1.Gateway) bool { return routeStats }})
			if err != nil {
				return err
			}
			var b []byte
			switch output {
			case "ir":
				b, err = translate.MarshalIR(out.Result, showSecrets)
			case "xds":
				b, err = translate.MarshalXDS(out.XDS, showSecrets)
			default:
				return fmt.Errorf("--output must be ir or xds, not %q", output)
			}
			if err != nil {
				return err
			}
			if _, err := cmd.OutOrStdout().Write(b); err != nil {
				return err
			}
			if len(problems) > 0 {
				return fmt.Errorf("%d document(s) could not be loaded", len(problems))
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&path, "file", "f", "", "YAML file or folder (required)")
	cmd.Flags().StringVarP(&output, "output", "o", "ir", "ir or xds")
	cmd.Flags().BoolVar(&showSecrets, "show-secrets", false, "print private keys (IR certificates, xDS secrets) instead of [redacted]")
	cmd.Flags().BoolVar(&routeStats, "route-stats", false, "per-route Envoy statistics for every Gateway (GatewayParameters spec.metrics.routeStats)")
	// Hidden: where the offline translation's time goes (go tool pprof).
	cmd.Flags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the command to this file")
	_ = cmd.Flags().MarkHidden("cpuprofile")
	_ = cmd.MarkFlagRequired("file")
	return cmd
}

// startCPUProfile writes Go's CPU profile (runtime/pprof) to path until the
// returned function is called.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
