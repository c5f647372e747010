package main

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/xds-controller/xds-controller/pkg/version"
)

func newRootCommand() *cobra.Command {
	var verbose bool
	root := &cobra.Command{
		Use:           "xds-controller",
		Short:         "A Gateway API implementation whose data plane is stock Envoy",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRun: func(*cobra.Command, []string) {
			level := slog.LevelInfo
			if verbose {
				level = slog.LevelDebug
			}
			slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})))
		},
	}
	root.PersistentFlags().BoolVarP(&verbose, "verbose", "v", false, "log debug messages")
	serve := &cobra.Command{Use: "serve", Short: "Run the controller (controller, standalone) or the SVID agent of an Envoy pod (agent)"}
	serve.AddCommand(newControllerCommand(), newStandaloneCommand(), newAgentCommand())
	root.AddCommand(serve, newTranslateCommand(), newEnvoyDrainCommand(), newProxyStatusCommand(), newConfigDumpCommand(), &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Run:   func(cmd *cobra.Command, _ []string) { fmt.Fprintln(cmd.OutOrStdout(), version.Get()) },
	})
	return root
}
