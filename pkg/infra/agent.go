package infra

import (
	"cmp"
	"net"
	"path"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	bootstrap "github.com/xds-controller/xds-controller/envoy-bootstrap"
)

// agentContainer is the SVID agent of an Envoy pod: `xds-controller serve
// agent` from the controller's image, as a native sidecar (an init
// container with restartPolicy Always). It alone mounts the projected
// token; it writes the SVID into the in-memory folder that Envoy reads
// through file-based SDS, and answers its startup probe once the first
// SVID is there, so that Envoy starts with one. Before that it copies its
// own executable into the drain folder, for the Envoy container's preStop
// hook (drainHook).
func (r *Renderer) agentContainer() corev1.Container {
	return corev1.Container{
		Name:            agentContainer,
		Image:           r.Identity.AgentImage,
		ImagePullPolicy: cmp.Or(r.Identity.ImagePullPolicy, corev1.PullIfNotPresent),
		Command:         []string{agentBinary},
		Args: []string{
			"serve", "agent",
			"--identity-address=" + net.JoinHostPort(r.Identity.Host, strconv.FormatUint(uint64(r.Identity.Port), 10)),
			"--server-id=" + r.XDS.ServerID,
			"--bundle-file=" + path.Join(bootstrapDir, bootstrap.BundleFile),
			"--token-file=" + path.Join(tokenDir, tokenFile),
			"--dir=" + svidDir,
			"--probe-address=:" + strconv.Itoa(AgentProbePort),
			// For the Envoy container's preStop hook (drainHook).
			"--install-drain=" + drainBinary,
		},
		RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
		Ports:         []corev1.ContainerPort{{Name: "agent-probe", ContainerPort: AgentProbePort, Protocol: corev1.ProtocolTCP}},
		StartupProbe: &corev1.Probe{
			ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
				Path: "/ready", Port: intstr.FromInt32(AgentProbePort), Scheme: corev1.URISchemeHTTP,
			}},
			PeriodSeconds:    1,
			TimeoutSeconds:   1,
			FailureThreshold: 300,
		},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("5m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
		},
		SecurityContext: restrictedSecurityContext(),
		VolumeMounts: []corev1.VolumeMount{
			{Name: bootstrapVolume, MountPath: bootstrapDir, ReadOnly: true},
			{Name: svidVolume, MountPath: svidDir},
			{Name: tokenVolume, MountPath: tokenDir, ReadOnly: true},
			{Name: drainVolume, MountPath: drainDir},
		},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
}
