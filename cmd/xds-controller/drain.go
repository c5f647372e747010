package main

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/xds-controller/xds-controller/pkg/drain"
)

func newEnvoyDrainCommand() *cobra.Command {
	var admin string
	var drainTime time.Duration
	cmd := &cobra.Command{
		Use:   "envoy-drain",
		Short: "Drain the Envoy of this pod before it stops (the Envoy container's preStop hook)",
		Long: `Tells the Envoy whose admin interface is at --admin (the pod's loopback) to
fail its health checks (POST /healthcheck/fail) and to drain its listeners
gracefully (POST /drain_listeners?graceful): HTTP/1.1 responses carry
"Connection: close", HTTP/2 connections get a GOAWAY, and the listeners close
--drain-time later (Envoy's --drain-time-s, with --drain-strategy immediate).
Returns after --drain-time, so that the kubelet's SIGTERM comes after the
drain. Fails at once if the admin interface does not answer.

The SVID agent copies the controller's binary into the pod (serve agent
--install-drain), where the Envoy image, which has no shell, can run it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if drainTime < 0 {
				return fmt.Errorf("--drain-time %s is negative", drainTime)
			}
			began := time.Now()
			d := &drain.Drainer{Admin: admin, DrainTime: drainTime}
			if err := d.Drain(cmd.Context()); err != nil {
				return err
			}
			slog.Info("Envoy drained", "admin", admin, "took", time.Since(began).Round(time.Millisecond))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&admin, "admin", "127.0.0.1:9901", "host:port of Envoy's admin interface")
	f.DurationVar(&drainTime, "drain-time", 15*time.Second, "Envoy's --drain-time-s: how long to wait after the drain started")
	return cmd
}
