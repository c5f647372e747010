package conformance

import (
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/kube"
	"helm.sh/helm/v4/pkg/strvals"
	"k8s.io/cli-runtime/pkg/genericclioptions"
)

const (
	releaseName      = "xds-controller"
	releaseNamespace = "xds-system"
)

// chartValues are the values of a conformance install: the mode's
// GatewayParameters on the default GatewayClass (xds-controller), the
// Gateway API v1.7.0 CRDs of channel (standard or experimental) from the
// chart, and the comma-separated key=value pairs of CHART_SET on top (like
// `helm --set`, e.g. envoy.image=docker.io/envoyproxy/envoy:v1.40.0 on kind).
func chartValues(mode, channel, set string) (map[string]any, error) {
	vals := map[string]any{
		"mode":       map[string]string{"shared": "Shared", "dedicated": "Dedicated"}[mode],
		"gatewayAPI": map[string]any{"installCRDs": true, "channel": channel},
	}
	if set != "" {
		if err := strvals.ParseInto(set, vals); err != nil {
			return nil, err
		}
	}
	return vals, nil
}

// installChart installs the chart at dir as release xds-controller in
// xds-system, or upgrades the release when it exists, like
// `helm upgrade --install xds-controller DIR -n xds-system --create-namespace
// --wait --set mode=Shared|Dedicated --set gatewayAPI.installCRDs=true
// --set gatewayAPI.channel=standard|experimental`, after
// prepareGatewayAPICRDs has readied the cluster for that channel.
func installChart(t *testing.T, dir, mode, channel string) {
	t.Helper()
	vals, err := chartValues(mode, channel, os.Getenv("CHART_SET"))
	if err != nil {
		t.Fatalf("CHART_SET: %v", err)
	}
	ch, err := loader.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	ns := releaseNamespace
	kc := os.Getenv("KUBECONFIG")
	gw, _ := vals["gatewayAPI"].(map[string]any)
	if gw["installCRDs"] == true {
		prepareGatewayAPICRDs(t, kc, dir, fmt.Sprint(gw["channel"]))
	}
	getter := &genericclioptions.ConfigFlags{KubeConfig: &kc, Namespace: &ns}
	// Helm 4 applies server-side, as field manager "helm" like its CLI
	// and the cluster e2e (by default a Go program's binary name, which
	// differs between the two runners and made their installs conflict).
	kube.ManagedFieldsManager = "helm"
	cfg := action.NewConfiguration(action.ConfigurationSetLogger(helmLog(t)))
	if err := cfg.Init(getter, releaseNamespace, "secret"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := action.NewHistory(cfg).Run(releaseName); err == nil {
		up := action.NewUpgrade(cfg)
		up.Namespace = releaseNamespace
		up.WaitStrategy = kube.StatusWatcherStrategy
		up.Timeout = 3 * time.Minute
		up.ForceConflicts = true // the release owns what the chart renders, whoever applied it last
		if _, err := up.Run(releaseName, ch, vals); err != nil {
			t.Fatalf("helm upgrade (mode %s): %v", mode, err)
		}
	} else {
		in := action.NewInstall(cfg)
		in.ReleaseName = releaseName
		in.Namespace = releaseNamespace
		in.CreateNamespace = true
		in.WaitStrategy = kube.StatusWatcherStrategy
		in.Timeout = 3 * time.Minute
		in.ForceConflicts = true // the release owns what the chart renders, whoever applied it last
		if _, err := in.Run(ch, vals); err != nil {
			t.Fatalf("helm install (mode %s): %v", mode, err)
		}
	}
	set := os.Getenv("CHART_SET")
	if set != "" {
		set = " (" + set + ")"
	}
	t.Logf("chart %s installed with mode %s, Gateway API channel %v%s in %s", dir, vals["mode"], gw["channel"], set, time.Since(start).Round(100*time.Millisecond))
}

// helmLog is the log of Helm's actions, in the test's output: warnings,
// and with HELM_DEBUG set its debug lines too.
func helmLog(t *testing.T) slog.Handler {
	level := slog.LevelWarn
	if os.Getenv("HELM_DEBUG") != "" {
		level = slog.LevelDebug
	}
	return slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: level})
}
