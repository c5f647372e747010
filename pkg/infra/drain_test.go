package infra

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
)

// renderedPod renders the Envoy pod template of a fleet in mode with
// the class parameters class.
func renderedPod(t *testing.T, mode v1alpha1.Mode, class *v1alpha1.GatewayParametersSpec) corev1.PodTemplateSpec {
	t.Helper()
	var objs []any
	switch mode {
	case v1alpha1.ModeShared:
		out, err := testRenderer().SharedFleet(SharedFleetInput{Class: testClass(), Params: SharedFleetParams(class), TrustBundle: testBundle})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range out {
			objs = append(objs, o)
		}
	default:
		c := class.DeepCopy()
		if c == nil {
			c = &v1alpha1.GatewayParametersSpec{}
		}
		c.Mode = ptr.To(v1alpha1.ModeDedicated)
		out, err := testRenderer().Dedicated(DedicatedInput{Gateway: gateway("apps", "web", 0, 80), Params: Effective(c, nil), TrustBundle: testBundle})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range out {
			objs = append(objs, o)
		}
	}
	for _, o := range objs {
		if d, ok := o.(*appsv1.Deployment); ok {
			return d.Spec.Template
		}
	}
	t.Fatal("no Deployment")
	return corev1.PodTemplateSpec{}
}

func mounts(c corev1.Container) map[string]corev1.VolumeMount {
	m := map[string]corev1.VolumeMount{}
	for _, vm := range c.VolumeMounts {
		m[vm.Name] = vm
	}
	return m
}

// TestEnvoyDrainsBeforeItStops: in both modes the Envoy container is
// started with the drain time and the immediate strategy, its preStop hook
// runs the agent's copy of the controller binary (envoy-drain against the
// admin interface on loopback), the grace period covers the drain, and the
// copy lives in a disk-backed emptyDir that the agent writes and Envoy only
// reads.
func TestEnvoyDrainsBeforeItStops(t *testing.T) {
	for _, mode := range []v1alpha1.Mode{v1alpha1.ModeShared, v1alpha1.ModeDedicated} {
		t.Run(string(mode), func(t *testing.T) {
			pod := renderedPod(t, mode, nil)
			envoy, agent := pod.Spec.Containers[0], pod.Spec.InitContainers[0]
			args := strings.Join(envoy.Args, " ")
			if !strings.Contains(args, "--drain-time-s 15 --drain-strategy immediate") {
				t.Errorf("Envoy args %q: want --drain-time-s 15 --drain-strategy immediate", args)
			}
			want := []string{"/var/run/xds-controller/drain/xds-controller", "envoy-drain", "--admin=127.0.0.1:9901", "--drain-time=15s"}
			if envoy.Lifecycle == nil || envoy.Lifecycle.PreStop == nil || envoy.Lifecycle.PreStop.Exec == nil {
				t.Fatalf("no preStop exec hook: %s", toJSON(t, envoy.Lifecycle))
			}
			if d := cmp.Diff(want, envoy.Lifecycle.PreStop.Exec.Command); d != "" {
				t.Errorf("preStop command (-want +got):\n%s", d)
			}
			if envoy.Lifecycle.PostStart != nil || envoy.Lifecycle.StopSignal != nil {
				t.Errorf("lifecycle: %s", toJSON(t, envoy.Lifecycle))
			}
			if g := pod.Spec.TerminationGracePeriodSeconds; g == nil || *g != 15+ShutdownMarginSeconds {
				t.Errorf("terminationGracePeriodSeconds %v, want %d", g, 15+ShutdownMarginSeconds)
			}
			// The agent installs the binary where the hook runs it.
			if !slices.Contains(agent.Args, "--install-drain="+want[0]) {
				t.Errorf("agent args %q: want --install-drain=%s", agent.Args, want[0])
			}
			em, am := mounts(envoy), mounts(agent)
			if m := em[drainVolume]; m.MountPath != "/var/run/xds-controller/drain" || !m.ReadOnly {
				t.Errorf("Envoy's drain mount: %+v, want read-only at the hook's folder", m)
			}
			if m := am[drainVolume]; m.MountPath != "/var/run/xds-controller/drain" || m.ReadOnly {
				t.Errorf("agent's drain mount: %+v, want read-write at the same folder", m)
			}
			var vol *corev1.Volume
			for i := range pod.Spec.Volumes {
				if pod.Spec.Volumes[i].Name == drainVolume {
					vol = &pod.Spec.Volumes[i]
				}
			}
			if vol == nil || vol.EmptyDir == nil || vol.EmptyDir.Medium != corev1.StorageMediumDefault || vol.EmptyDir.SizeLimit == nil || vol.EmptyDir.SizeLimit.String() != "256Mi" {
				t.Errorf("drain volume %s: want a disk-backed emptyDir of at most 256Mi", toJSON(t, vol))
			}
			// The drain opens no port: the pod's ports are the
			// readiness and agent probe ports only.
			var ports []int32
			for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
				for _, p := range c.Ports {
					ports = append(ports, p.ContainerPort)
				}
			}
			slices.Sort(ports)
			if !slices.Equal(ports, []int32{ReadinessPort, AgentProbePort}) {
				t.Errorf("pod ports %v", ports)
			}
			// The pod still meets the restricted profile.
			assertSecurePod(t, pod)
		})
	}
}

// TestDrainSecondsFromTheParameters: the class's drainSeconds sets Envoy's
// drain time, the hook's wait and the grace period; 0 removes the hook.
func TestDrainSecondsFromTheParameters(t *testing.T) {
	for _, mode := range []v1alpha1.Mode{v1alpha1.ModeShared, v1alpha1.ModeDedicated} {
		t.Run(string(mode), func(t *testing.T) {
			pod := renderedPod(t, mode, &v1alpha1.GatewayParametersSpec{Envoy: &v1alpha1.EnvoySpec{DrainSeconds: ptr.To[int32](60)}})
			envoy := pod.Spec.Containers[0]
			if !strings.Contains(strings.Join(envoy.Args, " "), "--drain-time-s 60 ") {
				t.Errorf("Envoy args %q", envoy.Args)
			}
			if cmd := envoy.Lifecycle.PreStop.Exec.Command; cmd[len(cmd)-1] != "--drain-time=60s" {
				t.Errorf("preStop %q", cmd)
			}
			if g := *pod.Spec.TerminationGracePeriodSeconds; g != 70 {
				t.Errorf("terminationGracePeriodSeconds %d, want 70", g)
			}

			pod = renderedPod(t, mode, &v1alpha1.GatewayParametersSpec{Envoy: &v1alpha1.EnvoySpec{DrainSeconds: ptr.To[int32](0)}})
			envoy = pod.Spec.Containers[0]
			if envoy.Lifecycle != nil {
				t.Errorf("drainSeconds 0: lifecycle %s, want none", toJSON(t, envoy.Lifecycle))
			}
			if g := *pod.Spec.TerminationGracePeriodSeconds; g != ShutdownMarginSeconds {
				t.Errorf("drainSeconds 0: terminationGracePeriodSeconds %d, want %d", g, ShutdownMarginSeconds)
			}
		})
	}
}
