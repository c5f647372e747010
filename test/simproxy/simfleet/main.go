// Command simfleet connects simulated Envoy proxies (package simproxy) to
// an xDS server and reports, as JSON lines on standard output, when they
// are synced and when each change reached them all. The cluster benchmark
// (test/e2e-cluster, make bench-cluster PROXIES=N) runs it on the local
// cluster's node, as a fleet's ServiceAccount: it trades a token for an
// SVID at the controller's identity service, as the SVID agent of an
// Envoy pod does (pkg/agent), then connects the proxies with it.
//
// Output, one JSON object per line:
//
//	{"event":"synced","proxies":N,"seconds":S,"reconnects":R,"failures":{"message":K}}
//	    at the start, and after the line "grow N" on standard input (N
//	    proxies in all): every proxy has had a response of every type it
//	    subscribed to, S seconds after the start or the command;
//	    R streams were opened again after a failure, K proxies last
//	    failed with each message;
//	{"event":"armed"}
//	    after the line "arm" on standard input: the proxies' route
//	    configuration counts are noted, the caller makes its change now;
//	{"event":"arrived","first_ns":F,"last_ns":L,"bytes":B}
//	    every proxy has ACKed a new route configuration: F is the first
//	    receipt, L the last ACK (Unix ns), B the bytes received meanwhile;
//	{"event":"error","error":"..."}
//	    then it exits with status 1.
//
// It stops when standard input ends.
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spiffe/go-spiffe/v2/bundle/x509bundle"
	"github.com/spiffe/go-spiffe/v2/spiffeid"

	"github.com/xds-controller/xds-controller/pkg/agent"
	"github.com/xds-controller/xds-controller/pkg/identity"
	"github.com/xds-controller/xds-controller/test/simproxy"
)

// options are the command's flags.
type options struct {
	xds, scope, serverID, prefix    string
	identityAddr, bundleFile, token string
	n                               int
	timeout                         time.Duration
}

func main() {
	var o options
	flag.StringVar(&o.xds, "xds", "", "host:port of the xDS server (required)")
	flag.StringVar(&o.scope, "scope", "", "the fleet's scope, the node's cluster in Envoy's bootstrap (required)")
	flag.StringVar(&o.serverID, "server-id", "", "SPIFFE ID of the controller, for the identity service and the xDS server (required)")
	flag.StringVar(&o.identityAddr, "identity-address", "", "host:port of the controller's identity service (required)")
	flag.StringVar(&o.bundleFile, "bundle-file", "", "PEM trust bundle that authenticates the identity service (required)")
	flag.StringVar(&o.token, "token-file", "", "a token of the fleet's ServiceAccount with the identity service's audience (required)")
	flag.StringVar(&o.prefix, "prefix", "sim-", "node ids are this and a number")
	flag.IntVar(&o.n, "n", 10, "how many proxies at the start")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Minute, "how long syncing, and each change, may take")
	flag.Parse()
	out := json.NewEncoder(os.Stdout)
	if err := run(out, o); err != nil {
		_ = out.Encode(map[string]any{"event": "error", "error": err.Error()})
		os.Exit(1)
	}
}

// run gets an SVID, connects the fleet and serves the commands of
// standard input (see the package comment) until it ends.
func run(out *json.Encoder, o options) error {
	if o.xds == "" || o.scope == "" || o.serverID == "" || o.identityAddr == "" || o.bundleFile == "" || o.token == "" {
		return errors.New("--xds, --scope, --server-id, --identity-address, --bundle-file and --token-file are required")
	}
	id, err := spiffeid.FromString(o.serverID)
	if err != nil {
		return fmt.Errorf("--server-id: %w", err)
	}
	pemBundle, err := os.ReadFile(o.bundleFile)
	if err != nil {
		return err
	}
	bundle, err := x509bundle.Parse(id.TrustDomain(), pemBundle)
	if err != nil {
		return fmt.Errorf("--bundle-file: %w", err)
	}
	roots := bundle.X509Authorities()
	dir, err := os.MkdirTemp("", "simfleet-svid-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := identity.NewClient(o.identityAddr, id, roots)
	a := &agent.Agent{Dir: dir, Signer: agent.TokenSigner(client, o.token), Log: slog.New(slog.NewTextHandler(os.Stderr, nil)), Trust: client.Trust}
	failed := make(chan error, 1)
	go func() { failed <- a.Run(ctx) }()
	for began := time.Now(); !a.Ready(); time.Sleep(50 * time.Millisecond) {
		select {
		case err := <-failed:
			return fmt.Errorf("SVID agent: %w", err)
		default:
		}
		if time.Since(began) > time.Minute {
			return errors.New("no SVID from the identity service within a minute (its log is on standard error)")
		}
	}

	fleet := simproxy.NewFleet(o.xds, o.scope, func() (*tls.Config, error) { return simproxy.Credentials(dir, id.Path()) })
	defer fleet.Close()
	grow := func(n int) error {
		began := time.Now()
		if err := fleet.Grow(n, o.prefix, o.timeout); err != nil {
			return err
		}
		reconnects, failures := fleet.Failures()
		return out.Encode(map[string]any{"event": "synced", "proxies": len(fleet.Proxies), "seconds": time.Since(began).Seconds(), "reconnects": reconnects, "failures": failures})
	}
	if err := grow(o.n); err != nil {
		return err
	}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		cmd, arg, _ := strings.Cut(in.Text(), " ")
		switch cmd {
		case "grow":
			more, err := strconv.Atoi(arg)
			if err != nil {
				return fmt.Errorf("grow %q: %w", arg, err)
			}
			if err := grow(more); err != nil {
				return err
			}
		case "arm":
			arrival, err := fleet.AwaitRoutes(func() error { return out.Encode(map[string]any{"event": "armed"}) }, o.timeout)
			if err != nil {
				return err
			}
			if err := out.Encode(map[string]any{"event": "arrived", "first_ns": arrival.First.UnixNano(), "last_ns": arrival.Last.UnixNano(), "bytes": arrival.Bytes}); err != nil {
				return err
			}
		default:
			return fmt.Errorf("unknown command %q on standard input (want arm, or grow N)", in.Text())
		}
	}
	return in.Err()
}
