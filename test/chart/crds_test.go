package chart

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	sigsyaml "sigs.k8s.io/yaml"
)

// gatewayAPIFiles is where `make chart-crds` copies the Gateway API CRDs of
// each channel: the files of the chart's gateway-api-crds subchart.
const gatewayAPIFiles = chartDir + "/charts/gateway-api-crds/files"

// The Gateway API CRDs of both channels (config/crd/<channel> of the
// module): the experimental channel has the same gateway.networking.k8s.io
// kinds plus four gateway.networking.x-k8s.io ones.
var (
	standardCRDs = []string{"backendtlspolicies", "gatewayclasses", "gateways", "grpcroutes", "httproutes", "listenersets", "referencegrants", "tcproutes", "tlsroutes", "udproutes"}
	xK8sIOCRDs   = []string{"xbackends.gateway.networking.x-k8s.io", "xbackendtrafficpolicies.gateway.networking.x-k8s.io", "xmeshes.gateway.networking.x-k8s.io", "xtelemetrypolicies.gateway.networking.x-k8s.io"}
)

// gatewayAPICRDNames lists the names of the rendered CRDs of the Gateway
// API groups (gateway.networking.k8s.io, gateway.networking.x-k8s.io),
// sorted.
func gatewayAPICRDNames(objs []object) []string {
	var out []string
	for _, o := range objs {
		if n := str(o, "metadata", "name"); o["kind"] == "CustomResourceDefinition" && strings.Contains(n, ".gateway.networking.") {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// TestGatewayAPICRDsPerChannel: installCRDs renders the CRDs of
// gatewayAPI.channel, each annotated with v1.7.0, that channel and Helm's
// keep policy, and that channel's safe-upgrades policy; the standard
// channel (the default) renders no gateway.networking.x-k8s.io CRD, the
// experimental one its four; without installCRDs, none at all.
func TestGatewayAPICRDsPerChannel(t *testing.T) {
	var std []string
	for _, p := range standardCRDs {
		std = append(std, p+".gateway.networking.k8s.io")
	}
	for _, c := range []struct {
		values  map[string]any
		channel string
		want    []string
	}{
		{map[string]any{"installCRDs": true}, "standard", std},
		{map[string]any{"installCRDs": true, "channel": "standard"}, "standard", std},
		{map[string]any{"installCRDs": true, "channel": "experimental"}, "experimental", append(slices.Clone(std), xK8sIOCRDs...)},
	} {
		objs := render(t, map[string]any{"gatewayAPI": c.values})
		want := slices.Sorted(slices.Values(c.want))
		if got := gatewayAPICRDNames(objs); !slices.Equal(got, want) {
			t.Errorf("%v: CRDs\n%v\nwant\n%v", c.values, got, want)
		}
		for _, o := range objs {
			if !strings.Contains(str(o, "metadata", "name"), "gateway.networking.") || o["kind"] == "GatewayClass" {
				continue
			}
			ann, _ := get(o, "metadata", "annotations").(object)
			if ann["gateway.networking.k8s.io/bundle-version"] != "v1.7.0" || ann["helm.sh/resource-policy"] != "keep" {
				t.Errorf("%v: %s %s annotations %v", c.values, o["kind"], str(o, "metadata", "name"), ann)
			}
			// Upstream's experimental safe-upgrades policy says channel
			// standard too; its CRDs say experimental.
			if o["kind"] == "CustomResourceDefinition" && ann["gateway.networking.k8s.io/channel"] != c.channel {
				t.Errorf("%v: %s channel annotation %v, want %s", c.values, str(o, "metadata", "name"), ann["gateway.networking.k8s.io/channel"], c.channel)
			}
		}
		k := kinds(objs)
		if k["ValidatingAdmissionPolicy"] != 1 || k["ValidatingAdmissionPolicyBinding"] != 1 {
			t.Errorf("%v: kinds %v", c.values, k)
		}
		// The two channels' policies differ in their version rule: the
		// standard one refuses bundles before v1.7.0, the experimental one
		// those before v1.5.
		vap := find(objs, "ValidatingAdmissionPolicy", "safe-upgrades.gateway.networking.k8s.io")
		msg, _ := json.Marshal(get(vap, "spec", "validations"))
		if wantMsg := map[string]string{"standard": "version before v1.7.0", "experimental": "v1.5+"}[c.channel]; !bytes.Contains(msg, []byte(wantMsg)) {
			t.Errorf("%v: safe-upgrades policy of another channel: %s", c.values, msg)
		}
		// The GatewayClass is a post-install hook then (its CRD must exist
		// first), with Helm's ownership marks so that the first upgrade
		// adopts it.
		gc := find(objs, "GatewayClass", "xds-controller")
		if str(gc, "metadata", "annotations", "helm.sh/hook") != "post-install" || !helmOwned(gc) {
			t.Errorf("%v: GatewayClass %v", c.values, gc["metadata"])
		}
	}
	for _, ch := range []string{"standard", "experimental"} {
		objs := render(t, map[string]any{"gatewayAPI": map[string]any{"channel": ch}})
		if got := gatewayAPICRDNames(objs); len(got) != 0 || kinds(objs)["ValidatingAdmissionPolicy"] != 0 {
			t.Errorf("channel %s without installCRDs: %v %v", ch, got, kinds(objs))
		}
	}
}

// TestGatewayAPIChannelRefused: a channel other than standard or
// experimental fails the render with a message naming the value, with or
// without installCRDs.
func TestGatewayAPIChannelRefused(t *testing.T) {
	for _, vals := range []map[string]any{
		{"installCRDs": true, "channel": "Experimental"},
		{"channel": "beta"},
		{"installCRDs": true, "channel": ""},
	} {
		_, err := renderFor(map[string]any{"gatewayAPI": vals})
		if err == nil || !strings.Contains(err.Error(), "gatewayAPI.channel must be standard or experimental") ||
			!strings.Contains(err.Error(), `"`+vals["channel"].(string)+`"`) {
			t.Errorf("%v: %v, want the channel refused", vals, err)
		}
	}
}

// TestReleaseFitsInASecret: Helm stores a release (its chart, values and
// manifest: JSON, gzip at best compression, base64) in a Secret of at most
// 1 MiB (Kubernetes' MaxSecretSize). With the CRDs of both channels in the
// chart's own files it would not fit; the gateway-api-crds subchart's files
// are not stored. Each channel's release must fit with room to spare.
func TestReleaseFitsInASecret(t *testing.T) {
	const maxSecret = 1 << 20
	for _, ch := range []string{"standard", "experimental"} {
		rel, err := runTemplate(templateAction("xds-controller", "xds-system"), map[string]any{"gatewayAPI": map[string]any{"installCRDs": true, "channel": ch}})
		if err != nil {
			t.Fatal(err)
		}
		raw, err := json.Marshal(rel)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		w, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		if _, err := w.Write(raw); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		size := base64.StdEncoding.EncodedLen(buf.Len())
		t.Logf("channel %s: release record %d bytes of %d", ch, size, maxSecret)
		if size > maxSecret*3/4 {
			t.Errorf("channel %s: release record %d bytes, over 3/4 of a Secret's %d", ch, size, maxSecret)
		}
	}
}

// TestCRDCopies: the chart ships exactly the CRD that controller-gen
// writes, and the Gateway API v1.7.0 CRDs of both channels (make
// chart-crds): 10 gateway.networking.k8s.io CRDs and the safe-upgrades
// policy per channel, and the experimental channel's four x-k8s.io CRDs.
func TestCRDCopies(t *testing.T) {
	ours, err := filepath.Glob("../../config/crd/*.yaml")
	if err != nil || len(ours) == 0 {
		t.Fatalf("config/crd: %v %v", ours, err)
	}
	for _, src := range ours {
		a, _ := os.ReadFile(src)
		b, err := os.ReadFile(filepath.Join(chartDir, "crds", filepath.Base(src)))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs from the chart's copy (run make generate-api): %v", src, err)
		}
	}
	copies, _ := filepath.Glob(filepath.Join(chartDir, "crds", "*.yaml"))
	if len(copies) != len(ours) {
		t.Errorf("chart crds/ has %d files, config/crd %d", len(copies), len(ours))
	}
	for ch, n := range map[string]int{"standard": 11, "experimental": 15} {
		files, _ := filepath.Glob(filepath.Join(gatewayAPIFiles, ch, "*.yaml"))
		if len(files) != n {
			t.Errorf("%s: %d Gateway API files, want %d", ch, len(files), n)
		}
		for _, f := range files {
			b, _ := os.ReadFile(f)
			var o object
			if err := sigsyaml.Unmarshal(b, &o); err != nil {
				t.Errorf("%s: %v", f, err)
			}
			if !bytes.Contains(b, []byte("bundle-version: v1.7.0")) {
				t.Errorf("%s is not v1.7.0", f)
			}
		}
	}
}
