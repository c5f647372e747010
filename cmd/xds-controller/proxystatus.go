package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
xds-controller-dataplane-<replica> in the controller's namespace (--namespace;
default: the namespace of the pods labelled app.kubernetes.io/name=xds-controller,
app.kubernetes.io/component=controller, as the Helm chart labels them, found in
every namespace). Needs: list configmaps in that namespace, list gateways
(cluster-wide; without it the Gateways column stays empty); without
--namespace, list pods cluster-wide.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "table" && output != "json" && output != "yaml" {
				return fmt.Errorf("-o must be table, json or yaml, not %q", output)
			}
			_, c, err := kf.connect()
			if err != nil {
				return err
			}
			ns, err := resolveControllerNamespace(cmd.Context(), c, namespace, "-n")
			if err != nil {
				return err
			}
			in, warnings, err := proxystatus.Collect(cmd.Context(), c, ns)
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
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "", "the controller's namespace, where the replicas publish their data-plane reports (default: the one of its pods, found by their labels)")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "table, json or yaml")
	return cmd
}

// resolveControllerNamespace is the controller's namespace for an operator
// command: flagValue when given, else the namespace of its pods
// (proxystatus.FindControllerNamespace, whose errors name flagName).
func resolveControllerNamespace(ctx context.Context, c client.Reader, flagValue, flagName string) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	return proxystatus.FindControllerNamespace(ctx, c, flagName)
}
