package main

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spiffe/go-spiffe/v2/spiffeid"

	"github.com/xds-controller/xds-controller/pkg/agent"
	"github.com/xds-controller/xds-controller/pkg/drain"
	"github.com/xds-controller/xds-controller/pkg/identity"
)

func newAgentCommand() *cobra.Command {
	var address, serverID, bundleFile, tokenFile, dir, probe, installDrain string
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Keep an Envoy pod's SVID fresh (the native sidecar of every Envoy pod)",
		Long: `Creates a key and a CSR, sends them with the pod's projected ServiceAccount
token to the controller's identity service (authenticated by --server-id and
the trust bundle in --bundle-file), and writes the SVID, its key and the trust
bundle into --dir for Envoy's file-based SDS (atomic ..data symlink swap).
Renews at half the SVID's lifetime, retries failures with back-off.
GET /ready on --probe-address answers 200 once a valid SVID is written (the
pod's startup probe: Envoy starts after it).
With --install-drain, it first copies its own executable to that path (mode
0555) for the Envoy container's preStop hook (xds-controller envoy-drain); a
failed copy is logged, and only the drain is lost.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if installDrain != "" {
				// Before the probe answers: Envoy starts, and may be
				// stopped, only once the copy is there.
				// A failed copy costs the graceful stop only (the hook
				// then fails, a FailedPreStopHook event on the pod), not
				// the SVID: the pod still starts.
				if err := drain.InstallSelf(installDrain); err != nil {
					slog.Error("Envoy's preStop hook will fail: cannot install the drain command", "path", installDrain, "error", err)
				}
			}
			id, err := spiffeid.FromString(serverID)
			if err != nil {
				return fmt.Errorf("--server-id: %w", err)
			}
			pemBundle, err := os.ReadFile(bundleFile)
			if err != nil {
				return fmt.Errorf("--bundle-file: %w", err)
			}
			var roots []*x509.Certificate
			for rest := pemBundle; ; {
				var c *x509.Certificate
				c, rest, err = nextCert(rest)
				if err != nil {
					return fmt.Errorf("--bundle-file %s: %w", bundleFile, err)
				}
				if c == nil {
					break
				}
				roots = append(roots, c)
			}
			if len(roots) == 0 {
				return fmt.Errorf("--bundle-file %s holds no certificate", bundleFile)
			}
			client := identity.NewClient(address, id, roots)
			a := &agent.Agent{
				Dir:    dir,
				Signer: agent.TokenSigner(client, tokenFile),
				Log:    slog.Default(),
				// The bundle file starts the trust; the bundles received
				// then carry it through CA rotations.
				Trust: client.Trust,
			}
			if probe != "" && probe != "0" {
				lis, err := net.Listen("tcp", probe)
				if err != nil {
					return fmt.Errorf("--probe-address: %w", err)
				}
				go serveProbe(cmd.Context(), lis, a)
			}
			slog.Info("SVID agent starting", "identityService", address, "serverID", id.String(), "dir", dir)
			return a.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&address, "identity-address", "", "host:port of the controller's identity service (required)")
	f.StringVar(&serverID, "server-id", "", "SPIFFE ID the identity service must present (required)")
	f.StringVar(&bundleFile, "bundle-file", "/etc/envoy/ca.crt", "PEM trust bundle that authenticates the identity service")
	f.StringVar(&tokenFile, "token-file", "/var/run/secrets/xds-controller/token", "projected ServiceAccount token (re-read at every request)")
	f.StringVar(&dir, "dir", "/var/run/xds-controller/svid", "folder Envoy reads the SVID, key and bundle from")
	f.StringVar(&probe, "probe-address", ":19002", `address of GET /ready ("0" disables)`)
	f.StringVar(&installDrain, "install-drain", "", "copy this executable to this path at start, for the Envoy container's preStop hook (envoy-drain)")
	_ = cmd.MarkFlagRequired("identity-address")
	_ = cmd.MarkFlagRequired("server-id")
	return cmd
}

// serveProbe answers GET /ready with 200 while the agent holds a valid
// SVID, 503 otherwise.
func serveProbe(ctx context.Context, lis net.Listener, a *agent.Agent) {
	mux := http.NewServeMux()
	mux.HandleFunc("/ready", func(w http.ResponseWriter, _ *http.Request) {
		if !a.Ready() {
			http.Error(w, "no valid SVID yet", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintf(w, "SVID valid until %s\n", a.Expiry().UTC().Format(time.RFC3339))
	})
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		_ = hs.Close()
	}()
	if err := hs.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
		slog.Error("probe server stopped", "error", err)
	}
}

// nextCert parses the first PEM CERTIFICATE of b; nil at the end.
func nextCert(b []byte) (*x509.Certificate, []byte, error) {
	for {
		block, rest := pem.Decode(b)
		if block == nil {
			return nil, nil, nil
		}
		if block.Type != "CERTIFICATE" {
			b = rest
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		return c, rest, err
	}
}
