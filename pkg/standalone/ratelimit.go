package standalone

// The global rate-limit service of standalone mode: the envoyproxy/ratelimit
// service (hack/install-ratelimit.sh builds it), run as a child process or
// run by someone else, configured through files.
//
// Why files and not xDS. The service can subscribe to its configuration
// (CONFIG_TYPE=GRPC_XDS_SOTW, type ratelimit.config.ratelimit.v3.
// RateLimitConfig), but our xDS server is not a fit for it as it is:
//   - the service reads its client certificate once, at start
//     (settings.NewSettings: utils.TlsConfigFromFiles), while our SVIDs
//     live an hour (--svid-lifetime) and are renewed in place: after the
//     first renewal, a reconnection presents an expired certificate until
//     the service restarts;
//   - its xDS node carries an id and metadata only, and our server keys a
//     client's scope, and authorizes its SPIFFE ID, by node.cluster;
//   - it checks the server's certificate by a DNS name
//     (CONFIG_GRPC_XDS_SERVER_TLS_SAN) and trusts the system's roots along
//     with the given CA, where our clients check a SPIFFE ID against our
//     bundle only.
//
// With CONFIG_TYPE=FILE it watches a folder (RUNTIME_ROOT, with
// RUNTIME_WATCH_ROOT=false: every write, creation or removal in
// RUNTIME_ROOT/config reloads it) and needs no credential at all: the
// limits are not secret. WriteConfigs puts each domain's configuration
// there, one file per domain, replaced atomically (written next to the
// folder, then renamed into it), and removes the files of domains that
// went away.

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	rlsconfv3 "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"

	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/xdstranslator"
)

// RateLimitService is the global rate-limit service standalone mode runs
// (Path set) or points to (Path empty: a service someone else runs, whose
// RUNTIME_ROOT is Dir and CONFIG_TYPE FILE).
type RateLimitService struct {
	// Path is the envoyproxy/ratelimit service binary (service_cmd); ""
	// runs none.
	Path string
	// GRPCAddress is the service's gRPC address (Envoy's rate-limit
	// service protocol), an IP literal and a port: where the service
	// listens, and where Envoy reaches it.
	GRPCAddress string
	// HTTPAddress and DebugAddress are where the service run by Path
	// serves GET /healthcheck (PORT) and its debug pages, /rlconfig among
	// them (DEBUG_PORT); both must be free ports.
	HTTPAddress, DebugAddress string
	// Redis is the store's address, host:port (REDIS_URL, over TCP). Our
	// environment's other REDIS_* variables (REDIS_AUTH, REDIS_TLS, ...)
	// reach the service unchanged.
	Redis string
	// RedisServerPath, when set, is a redis-server that Run starts on
	// Redis (an IP literal then: it binds that address only), without
	// persistence and without a password (REDIS_AUTH stays for a Redis run
	// by someone else), in Dir/redis; "": Redis is run by someone else.
	RedisServerPath string
	// Dir is the service's runtime folder (RUNTIME_ROOT): its
	// configuration files are in Dir/config.
	Dir string
	// LogDir receives ratelimit.log and redis.log (default Dir).
	LogDir string
}

// Check returns an error for a service that cannot run: no address, no
// folder, an address that is not an IP and port; with Path, no Redis or
// a binary that is not executable.
func (s *RateLimitService) Check() error {
	if s.Dir == "" {
		return fmt.Errorf("rate-limit service: no configuration folder")
	}
	if _, err := netip.ParseAddrPort(s.GRPCAddress); err != nil {
		return fmt.Errorf("rate-limit service gRPC address %q: %w", s.GRPCAddress, err)
	}
	if s.Path == "" {
		return nil
	}
	for _, e := range []string{s.Path, s.RedisServerPath} {
		if e == "" {
			continue
		}
		if st, err := os.Stat(e); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			return fmt.Errorf("rate-limit service: %s is not an executable file", e)
		}
	}
	for name, a := range map[string]string{"HTTP": s.HTTPAddress, "debug": s.DebugAddress} {
		if _, err := netip.ParseAddrPort(a); err != nil {
			return fmt.Errorf("rate-limit service %s address %q: %w", name, a, err)
		}
	}
	if s.Redis == "" {
		return fmt.Errorf("rate-limit service: no Redis address")
	}
	if s.RedisServerPath != "" {
		if _, err := netip.ParseAddrPort(s.Redis); err != nil {
			return fmt.Errorf("Redis address %q (redis-server started here): %w", s.Redis, err)
		}
	}
	return nil
}

// Backend is the service as the h2c backend Envoy reaches it through
// (ir.GlobalRateLimits Service), its cluster named name.
func (s *RateLimitService) Backend(name string) *ir.Backend {
	ap := netip.MustParseAddrPort(s.GRPCAddress)
	return &ir.Backend{Name: name, Weight: 1, Protocol: ir.AppProtocolH2C,
		Endpoints: []ir.Endpoint{{Address: ap.Addr().String(), Port: uint32(ap.Port())}}}
}

// env is the service's environment: ours, then its settings
// (envoyproxy/ratelimit src/settings/settings.go), which win.
func (s *RateLimitService) env() []string {
	split := func(a string) (string, string) {
		ap := netip.MustParseAddrPort(a)
		return ap.Addr().String(), strconv.Itoa(int(ap.Port()))
	}
	gh, gp := split(s.GRPCAddress)
	hh, hp := split(s.HTTPAddress)
	dh, dp := split(s.DebugAddress)
	return append(os.Environ(),
		"GRPC_HOST="+gh, "GRPC_PORT="+gp, "HOST="+hh, "PORT="+hp, "DEBUG_HOST="+dh, "DEBUG_PORT="+dp,
		"CONFIG_TYPE=FILE", "RUNTIME_ROOT="+s.Dir, "RUNTIME_SUBDIRECTORY=", "RUNTIME_APPDIRECTORY=config",
		"RUNTIME_WATCH_ROOT=false", "RUNTIME_IGNOREDOTFILES=true",
		"BACKEND_TYPE=redis", "REDIS_SOCKET_TYPE=tcp", "REDIS_TYPE=SINGLE", "REDIS_URL="+s.Redis,
		"USE_STATSD=false", "LOG_LEVEL=warn", "LOG_FORMAT=json",
	)
}

// Run runs the service (and redis-server when RedisServerPath is set) until
// ctx ends, restarting them when they exit (supervise). Nothing runs
// without Path. The configuration folder is created first, so that the
// service starts with whatever WriteConfigs put there.
func (s *RateLimitService) Run(ctx context.Context, log *slog.Logger) error {
	if s.Path == "" {
		return nil
	}
	if err := s.Check(); err != nil {
		return err
	}
	logDir := s.LogDir
	if logDir == "" {
		logDir = s.Dir
	}
	if err := os.MkdirAll(filepath.Join(s.Dir, "config"), 0o755); err != nil {
		return err
	}
	var wg sync.WaitGroup
	if s.RedisServerPath != "" {
		data := filepath.Join(s.Dir, "redis")
		if err := os.MkdirAll(data, 0o700); err != nil {
			return err
		}
		ap := netip.MustParseAddrPort(s.Redis)
		args := []string{"--bind", ap.Addr().String(), "--port", strconv.Itoa(int(ap.Port())), "--dir", data,
			"--save", "", "--appendonly", "no"}
		wg.Go(func() {
			supervise(ctx, log, process{name: "redis-server", path: s.RedisServerPath, args: args, logPath: filepath.Join(logDir, "redis.log")})
		})
	}
	wg.Go(func() {
		supervise(ctx, log, process{name: "the rate-limit service", path: s.Path, env: s.env(), logPath: filepath.Join(logDir, "ratelimit.log")})
	})
	wg.Wait()
	return nil
}

// WriteConfigs makes Dir/config hold exactly configs: one file per domain,
// as xdstranslator.RateLimitConfigFiles names and renders them (the
// cluster's ConfigMap holds the same), each written only when its content
// changed (each write reloads the service), through a rename; other .yaml
// files are removed. Domains must be distinct and make valid names
// (RateLimitConfigFiles' error otherwise, and nothing is written).
func (s *RateLimitService) WriteConfigs(configs ...*rlsconfv3.RateLimitConfig) error {
	files, err := xdstranslator.RateLimitConfigFiles(configs...)
	if err != nil {
		return err
	}
	dir := filepath.Join(s.Dir, "config")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		b := files[name]
		path := filepath.Join(dir, name)
		if old, err := os.ReadFile(path); err == nil && slices.Equal(old, b) {
			continue
		}
		tmp, err := os.CreateTemp(s.Dir, ".config-*")
		if err != nil {
			return err
		}
		_, err = tmp.Write(b)
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Chmod(tmp.Name(), 0o644)
		}
		if err == nil {
			err = os.Rename(tmp.Name(), path)
		}
		if err != nil {
			os.Remove(tmp.Name())
			return err
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if _, keep := files[e.Name()]; strings.HasSuffix(e.Name(), ".yaml") && !keep {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}
