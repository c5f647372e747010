package infra

import (
	"slices"
	"testing"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
)

// TestFleetEnvoyProcessesConfigLikeStandalone: in both modes the fleet's
// Envoy runs with the flags that decide how it processes the xDS
// configuration (bootstrap.ConfigArgs, which standalone mode's Envoy gets
// too): today, no walk for unknown fields in dynamic resources.
func TestFleetEnvoyProcessesConfigLikeStandalone(t *testing.T) {
	for _, mode := range []v1alpha1.Mode{v1alpha1.ModeShared, v1alpha1.ModeDedicated} {
		t.Run(string(mode), func(t *testing.T) {
			envoy := renderedPod(t, mode, nil).Spec.Containers[0]
			if !slices.Contains(envoy.Args, "--ignore-unknown-dynamic-fields") {
				t.Errorf("Envoy args %q: want --ignore-unknown-dynamic-fields", envoy.Args)
			}
		})
	}
}
