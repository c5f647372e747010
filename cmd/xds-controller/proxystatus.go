package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/xds-controller/xds-controller/pkg/proxystatus"
)

func newProxyStatusCommand() *cobra.Command {
	var kf kubeFlags
	var namespace, output string
	cmd := &cobra.Command{
		Use:   "proxy-status [-o table|json|yaml]",
		Short: "List every Envoy connected to the controller and whether it serves the newest configuration",
		Long: `Prints one line per Envoy connected to any controller replica: its pod and
namespace, its proxy scope and that scope's Gateways, the controller replica it
is connected to, per resource type (listeners, routes, clusters, endpoints,
secrets) whether it serves the scope's newest snapshot (SYNCED), an older one
(STALE, with how long), or rejected the newest (NACKED; Envoy's message is
printed below the table), and when its SVID expires.

The source is the data-plane reports the replicas publish: ConfigMaps
xds-controller-dataplane-<replica> in the controller's namespace (--namespace).
Needs: list configmaps in that namespace, list gateways (cluster-wide; without
it the Gateways column stays empty).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "table" && output != "json" && output != "yaml" {
				return fmt.Errorf("-o must be table, json or yaml, not %q", output)
			}
			_, c, err := kf.connect()
			if err != nil {
				return err
			}
			in, warnings, err := proxystatus.Collect(cmd.Context(), c, namespace)
			if err != nil {
				return err
			}
			for _, w := range warnings {
				fmt.Fprintln(cmd.ErrOrStderr(), "warning:", w)
			}
			proxies := proxystatus.Build(in)
			switch output {
			case "json":
				return proxystatus.JSON(cmd.OutOrStdout(), proxies)
			case "yaml":
				return proxystatus.YAML(cmd.OutOrStdout(), proxies)
			}
			return proxystatus.Table(cmd.OutOrStdout(), proxies, in.Now)
		},
	}
	kf.add(cmd.Flags())
	cmd.Flags().StringVarP(&namespace, "namespace", "n", defaultControllerNamespace(), "the controller's namespace (where the replicas publish their data-plane reports)")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "table, json or yaml")
	return cmd
}
