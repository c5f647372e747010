package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/configdump"
	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/infra"
	"github.com/xds-controller/xds-controller/pkg/xdsserver"
)

func newConfigDumpCommand() *cobra.Command {
	var kf kubeFlags
	var namespace, pod, controllerNamespace, controllerName string
	var types []string
	var diff bool
	cmd := &cobra.Command{
		Use:   "config-dump GATEWAY|POD [-n NAMESPACE] [--type listeners,routes,clusters,endpoints,secrets] [--diff]",
		Short: "Print the configuration an Envoy pod of a Gateway holds (its admin's /config_dump), or its drift from the controller's",
		Long: `Reads /config_dump from the Envoy admin of one pod of the Gateway's fleet (the
first Ready pod by name; --pod picks one; or the Envoy pod named instead of a
Gateway) through the API server's port-forward, as kubectl port-forward does:
the admin listens on 127.0.0.1 inside the pod and is never exposed. Prints it
as YAML, only the sections of --type (default: all, the bootstrap included),
with secrets' private keys redacted.

--diff compares the dynamic resources the Envoy holds with the controller's
snapshot for the pod's proxy scope, computed locally by the controller's own
translation of the objects the API server holds, and prints a unified diff
(exit status 1 when they differ). Its version is checked against the scope's
newest version in the replicas' data-plane reports.

The controller's namespace (--controller-namespace) is, by default, the
namespace of the pods labelled app.kubernetes.io/name=xds-controller,
app.kubernetes.io/component=controller (as the Helm chart labels them), found
in every namespace.

Needs: get gateways and list pods (the fleet's namespace: the Gateway's for a
Dedicated fleet, the controller's for a Shared one), create pods/portforward
there; --diff also reads what the controller reads (docs/operating.md);
without --controller-namespace, list pods cluster-wide.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			typs, err := configdump.ParseTypes(types)
			if err != nil {
				return err
			}
			rc, c, err := kf.connect()
			if err != nil {
				return err
			}
			if namespace == "" {
				namespace = kf.namespace()
			}
			ctx := cmd.Context()
			if controllerNamespace, err = resolveControllerNamespace(ctx, c, controllerNamespace, "--controller-namespace"); err != nil {
				return err
			}
			target, err := configdump.Find(ctx, c, namespace, args[0], pod, controllerNamespace)
			if err != nil {
				return err
			}
			p := target.Pod
			body, err := configdump.Fetch(ctx, rc, p.Namespace, p.Name, infra.AdminPort, configdump.Query(typs))
			if err != nil {
				return err
			}
			dump, err := configdump.Parse(body)
			if err != nil {
				return err
			}
			scope := dump.Scope()
			stderr := cmd.ErrOrStderr()
			if !diff {
				b, err := dump.Filter(typs).YAML()
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "# Envoy pod %s/%s, proxy scope %s\n", p.Namespace, p.Name, scope)
				_, err = cmd.OutOrStdout().Write(b)
				return err
			}
			x, err := configdump.LocalSnapshot(ctx, c, gwapiv1.GatewayController(controllerName), controllerNamespace)
			if err != nil {
				return err
			}
			local := x[scope]
			version := ""
			if local != nil {
				if version, err = xdsserver.Version(local); err != nil {
					return err
				}
			}
			switch newest, err := configdump.NewestVersion(ctx, c, controllerNamespace, scope); {
			case err != nil:
				fmt.Fprintf(stderr, "warning: the replicas' reports could not be read (%v): the local translation is not checked against the controller's\n", err)
			case newest == "":
				fmt.Fprintf(stderr, "warning: no controller replica in %s reports scope %s\n", controllerNamespace, scope)
			case newest != version:
				fmt.Fprintf(stderr, "warning: the local translation of scope %s is version %s, the controller's newest is %s: objects changed since, or this CLI's release differs from the controller's\n", scope, version, newest)
			}
			want, err := configdump.SnapshotSet(local, typs)
			if err != nil {
				return err
			}
			got, versions := dump.Resources(typs)
			var held []string
			for _, t := range configdump.TypeNames {
				if v, ok := versions[t]; ok && v != "" {
					held = append(held, t+" "+v)
				}
			}
			d, err := configdump.Compare(want, got,
				fmt.Sprintf("controller snapshot of scope %s (version %s)", scope, version),
				fmt.Sprintf("Envoy pod %s/%s (%s)", p.Namespace, p.Name, strings.Join(held, ", ")))
			if err != nil {
				return err
			}
			if len(d.Differ) == 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "Envoy pod %s/%s holds the controller's snapshot of scope %s (version %s).\n", p.Namespace, p.Name, scope, version)
				return nil
			}
			fmt.Fprint(cmd.OutOrStdout(), d.Unified)
			return fmt.Errorf("%d resource(s) differ between the controller's snapshot and Envoy pod %s/%s: %s", len(d.Differ), p.Namespace, p.Name, strings.Join(d.Differ, ", "))
		},
	}
	kf.add(cmd.Flags())
	f := cmd.Flags()
	f.StringVarP(&namespace, "namespace", "n", "", "namespace of the Gateway or pod (default: the kubeconfig context's)")
	f.StringVar(&pod, "pod", "", "the pod of the Gateway's fleet to dump (default: the first Ready one)")
	f.StringSliceVar(&types, "type", nil, "resource types to print: listeners, routes, clusters, endpoints, secrets (comma-separated or repeated; default all)")
	f.BoolVar(&diff, "diff", false, "print the drift between the controller's snapshot for the pod's scope and what the pod holds")
	f.StringVar(&controllerNamespace, "controller-namespace", "", "the controller's namespace: shared fleets, data-plane reports (default: the one of its pods, found by their labels)")
	f.StringVar(&controllerName, "controller-name", string(gatewayapi.ControllerName), "the controller's GatewayClass controllerName (what --diff translates)")
	return cmd
}
