// Command xds-controller is the Gateway API controller whose data plane is
// stock Envoy. Subcommands: `serve controller` (Kubernetes), `serve standalone`
// (files instead of a cluster), `translate` (offline translation to IR or
// xDS), `proxy-status` and `config-dump` (what the Envoys hold, for
// operators), `version`.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRootCommand().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
