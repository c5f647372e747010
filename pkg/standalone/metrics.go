package standalone

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/xds-controller/xds-controller/pkg/xdsserver"
)

// serveMetrics serves /metrics on lis (the xDS server's collectors plus
// the Go runtime's and the process's: go_*, process_*) until ctx ends.
func serveMetrics(ctx context.Context, log *slog.Logger, lis net.Listener, srv *xdsserver.Server) {
	reg := prometheus.NewRegistry()
	if err := srv.Register(reg); err != nil {
		log.Error("metrics", "error", err)
	}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = hs.Shutdown(shut)
	}()
	if err := hs.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Error("metrics server stopped", "error", err)
	}
}
