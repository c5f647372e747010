package main

import (
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = ""

func versionString() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

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
	root.AddCommand(serve, newTranslateCommand(), &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Run:   func(cmd *cobra.Command, _ []string) { fmt.Fprintln(cmd.OutOrStdout(), versionString()) },
	})
	return root
}
