package infra

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"maps"
	"net"
	"path"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
	bootstrap "github.com/xds-controller/xds-controller/envoy-bootstrap"
	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/identity"
)

// Renderer renders the Envoy fleets. Its methods are pure: the same input
// gives the same objects.
type Renderer struct {
	// Namespace is the controller's namespace, where shared fleets live.
	Namespace string
	// EnvoyImage is the Envoy image when the parameters set none. Default:
	// DefaultEnvoyImage.
	EnvoyImage string
	// ImagePullPolicy of the Envoy container. Default: IfNotPresent.
	ImagePullPolicy corev1.PullPolicy
	// XDS locates the controller's xDS server, written into every
	// bootstrap.
	XDS XDSServer
	// LogLevel is Envoy's --log-level. Default: info.
	LogLevel string
	// Identity configures the SVID agent of every Envoy pod.
	Identity IdentityService
}

// IdentityService is where the SVID agent (`xds-controller serve agent`,
// a native sidecar of every Envoy pod) gets the pod's SVID.
type IdentityService struct {
	// Host and Port of the controller's identity service (the same
	// Service, and the same server identity XDSServer.ServerID, as xDS).
	Host string
	Port uint32
	// AgentImage is the controller's image: the agent is its binary.
	AgentImage string
	// ImagePullPolicy of the agent (default IfNotPresent).
	ImagePullPolicy corev1.PullPolicy
	// Audience of the agent's projected token (default
	// identity.DefaultAudience).
	Audience string
	// TokenExpirationSeconds of the projected token (default
	// DefaultTokenExpirationSeconds; the API server's minimum is 600).
	TokenExpirationSeconds int64
}

// XDSServer is where Envoy finds the controller (bootstrap.Params).
type XDSServer struct {
	// Host is the xDS Service's DNS name, e.g.
	// xds-controller.xds-system.svc.cluster.local, or an IP address.
	Host string
	Port uint32
	// ServerName is the SNI Envoy sends (default: Host).
	ServerName string
	// ServerID is the SPIFFE ID the controller's certificate carries.
	ServerID string
	// Delta selects incremental xDS.
	Delta bool
}

// SharedFleetInput is what SharedFleet renders from.
type SharedFleetInput struct {
	// Class is the GatewayClass (it owns the fleet's objects; its UID must
	// be set).
	Class *gwapiv1.GatewayClass
	// Params are the class's effective parameters: Effective(classParams, nil).
	Params v1alpha1.GatewayParametersSpec
	// TrustBundle is the CA bundle (PEM) that the agent authenticates the
	// identity service with before it has an SVID (the bootstrap
	// ConfigMap's ca.crt).
	TrustBundle []byte
}

// SharedGatewayInput is what SharedGateway renders from.
type SharedGatewayInput struct {
	// Gateway owns its Service and EndpointSlices (its UID must be set).
	Gateway *gwapiv1.Gateway
	// Params are the Gateway's effective parameters: Effective(classParams,
	// gatewayParams); only the service settings are used.
	Params v1alpha1.GatewayParametersSpec
	// BindPort maps a listener port to its bind port: BindPorts.BindPort
	// from AssignBindPorts, the same function the translation used.
	BindPort func(gw *gwapiv1.Gateway, port gwapiv1.PortNumber) uint32
	// Endpoints are the shared fleet's pods (EndpointsFromPods).
	Endpoints []Endpoint
	// HTTP3Ports are the listener ports served over HTTP/3 too: the
	// Service gets each in UDP (HTTP3Ports).
	HTTP3Ports []gwapiv1.PortNumber
}

// DedicatedInput is what Dedicated renders from.
type DedicatedInput struct {
	// Gateway owns every object (its UID must be set).
	Gateway *gwapiv1.Gateway
	// Params are the Gateway's effective parameters: Effective(classParams,
	// gatewayParams).
	Params v1alpha1.GatewayParametersSpec
	// BindPort maps a listener port to its bind port (default:
	// DedicatedBindPorts).
	BindPort func(gw *gwapiv1.Gateway, port gwapiv1.PortNumber) uint32
	// TrustBundle: see SharedFleetInput.
	TrustBundle []byte
	// HTTP3Ports: see SharedGatewayInput.
	HTTP3Ports []gwapiv1.PortNumber
}

// Endpoint is one address of a fleet pod.
type Endpoint struct {
	IP string
	// Ready: the pod is ready and not terminating; Serving: ready, even if
	// terminating.
	Ready, Serving, Terminating bool
	NodeName                    string
	PodName, PodNamespace       string
}

// SharedFleet renders the fleet of a GatewayClass in the controller's
// namespace: ServiceAccount, bootstrap ConfigMap and Deployment, all named after SharedFleet(...) and owned by
// the class. In this order: apply them in it.
func (r *Renderer) SharedFleet(in SharedFleetInput) ([]client.Object, error) {
	if in.Class == nil || in.Class.Name == "" {
		return nil, errors.New("infra: SharedFleet needs a GatewayClass")
	}
	if r.Namespace == "" {
		return nil, errors.New("infra: Renderer.Namespace is required")
	}
	f := SharedFleet(r.Namespace, in.Class.Name)
	owner := ownerRef(gwapiv1.GroupVersion.String(), "GatewayClass", in.Class.Name, string(in.Class.UID))
	return r.fleet(f, in.Params, in.TrustBundle, owner, nil, nil)
}

// Dedicated renders the fleet of one Gateway in its namespace:
// ServiceAccount, bootstrap ConfigMap, Deployment and the Service selecting the fleet's pods, all named
// <gateway>-<class> and owned by the Gateway.
func (r *Renderer) Dedicated(in DedicatedInput) ([]client.Object, error) {
	gw := in.Gateway
	if gw == nil || gw.Name == "" {
		return nil, errors.New("infra: Dedicated needs a Gateway")
	}
	f := DedicatedFleet(gw)
	owner := gatewayOwner(gw)
	labels, annotations := infraMeta(gw)
	objs, err := r.fleet(f, in.Params, in.TrustBundle, owner, labels, annotations)
	if err != nil {
		return nil, err
	}
	bind := in.BindPort
	if bind == nil {
		ports := DedicatedBindPorts(gw)
		bind = func(_ *gwapiv1.Gateway, p gwapiv1.PortNumber) uint32 { return ports[int32(p)] }
	}
	svc := r.service(gw, in.Params, bind, in.HTTP3Ports)
	svc.Spec.Selector = selectorLabels(f)
	return append(objs, svc), nil
}

// SharedGateway renders a Shared-mode Gateway's own objects in its
// namespace: a selectorless Service <gateway>-<class> and the
// EndpointSlices (one per IP family present, IPv4 always) that point it at
// the shared fleet's pods on the Gateway's bind ports.
func (r *Renderer) SharedGateway(in SharedGatewayInput) ([]client.Object, error) {
	gw := in.Gateway
	if gw == nil || gw.Name == "" {
		return nil, errors.New("infra: SharedGateway needs a Gateway")
	}
	if in.BindPort == nil {
		return nil, errors.New("infra: SharedGateway needs BindPort (BindPorts.BindPort)")
	}
	svc := r.service(gw, in.Params, in.BindPort, in.HTTP3Ports)
	objs := []client.Object{svc}
	return append(objs, endpointSlices(gw, svc, in.Endpoints)...), nil
}

// fleet renders the ServiceAccount, ConfigMap and Deployment of f.
// labels and annotations are a Gateway's infrastructure metadata (Dedicated
// mode), nil for a shared fleet.
//
// The ServiceAccount is bound to no role and its token is never mounted
// as such: only the SVID agent gets a projected token, audience-bound to
// the identity service, which it trades for the pod's SVID.
func (r *Renderer) fleet(f Fleet, params v1alpha1.GatewayParametersSpec, bundle []byte, owner metav1.OwnerReference, infraLabels, infraAnnotations map[string]string) ([]client.Object, error) {
	if len(bundle) == 0 {
		return nil, errors.New("infra: the fleet's trust bundle is required")
	}
	if r.XDS.Host == "" || r.XDS.Port == 0 || r.XDS.ServerID == "" {
		return nil, errors.New("infra: Renderer.XDS Host, Port and ServerID are required")
	}
	if r.Identity.Host == "" || r.Identity.Port == 0 || r.Identity.AgentImage == "" {
		return nil, errors.New("infra: Renderer.Identity Host, Port and AgentImage are required")
	}
	// The pod template first: the overload manager's heap size follows
	// the memory limit of the Envoy container, overlay included.
	tmpl, err := r.podTemplate(f, params, infraLabels, infraAnnotations)
	if err != nil {
		return nil, err
	}
	var envoy *corev1.Container
	for i := range tmpl.Spec.Containers {
		if tmpl.Spec.Containers[i].Name == containerName {
			envoy = &tmpl.Spec.Containers[i]
		}
	}
	boot, err := bootstrap.Render(bootstrap.Params{
		// Overridden by --service-node $(POD_NAME): every pod has its own node id.
		NodeID:        f.Name,
		Scope:         f.Scope,
		XDSHost:       r.XDS.Host,
		XDSPort:       r.XDS.Port,
		XDSServerName: r.XDS.ServerName,
		XDSServerID:   r.XDS.ServerID,
		SDSConfigDir:  bootstrapDir,
		AdminAddress:  "127.0.0.1",
		AdminPort:     AdminPort,
		ReadinessPort: ReadinessPort,
		MetricsPort:   MetricsPort,
		Delta:         r.XDS.Delta,
		Overload:      Overload(params.Edge, envoy),
	})
	if err != nil {
		return nil, err
	}
	sds, err := bootstrap.SDSFiles(svidDir)
	if err != nil {
		return nil, err
	}
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{
			Name:            name,
			Namespace:       f.Namespace,
			Labels:          fleetLabels(f, infraLabels),
			Annotations:     copyOrNil(infraAnnotations),
			OwnerReferences: []metav1.OwnerReference{owner},
		}
	}
	sa := &corev1.ServiceAccount{
		TypeMeta:                     metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta:                   meta(f.ServiceAccount),
		AutomountServiceAccountToken: ptr.To(false),
	}
	data := map[string]string{
		bootstrapFile:        string(boot),
		bootstrap.BundleFile: string(bundle),
	}
	for name, b := range sds {
		data[name] = string(b)
	}
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: meta(f.Name),
		Data:       data,
	}
	// The pod template hash covers everything the pods start from: the
	// template itself and the ConfigMap (bootstrap, SDS files), but not the
	// trust bundle: the agent reads it once at start, then takes the bundle
	// that comes with every SVID, so a CA rotation reaches running pods
	// without a roll (docs/identity.md). SVIDs are the agent's business:
	// they never re-roll pods.
	hashed := maps.Clone(data)
	delete(hashed, bootstrap.BundleFile)
	tmpl.Annotations[AnnotationPodTemplateHash] = podTemplateHash(tmpl, hashed)
	dep := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: meta(f.Name),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(ptr.Deref(params.Replicas, defaultReplicas(f.Mode))),
			Selector: &metav1.LabelSelector{MatchLabels: selectorLabels(f)},
			Strategy: appsv1.DeploymentStrategy{
				Type: appsv1.RollingUpdateDeploymentStrategyType,
				// Surge first: a rollout never lowers the ready pods.
				RollingUpdate: &appsv1.RollingUpdateDeployment{
					MaxUnavailable: ptr.To(intstr.FromInt32(0)),
					MaxSurge:       ptr.To(intstr.FromInt32(1)),
				},
			},
			Template: *tmpl,
		},
	}
	return []client.Object{sa, cm, dep}, nil
}

func defaultReplicas(m v1alpha1.Mode) int32 {
	if m == v1alpha1.ModeDedicated {
		return DefaultDedicatedReplicas
	}
	return DefaultSharedReplicas
}

// podTemplate renders the Envoy pod template of f, with the parameters'
// overlay applied. It contains nothing that depends on listeners or routes.
func (r *Renderer) podTemplate(f Fleet, params v1alpha1.GatewayParametersSpec, infraLabels, infraAnnotations map[string]string) (*corev1.PodTemplateSpec, error) {
	image := cmp.Or(r.EnvoyImage, DefaultEnvoyImage)
	resources := DefaultResources()
	if params.Envoy != nil {
		if params.Envoy.Image != nil && *params.Envoy.Image != "" {
			image = *params.Envoy.Image
		}
		if params.Envoy.Resources != nil {
			resources = *params.Envoy.Resources.DeepCopy()
		}
	}
	drainSeconds := DefaultDrainSeconds
	if params.Envoy != nil && params.Envoy.DrainSeconds != nil {
		drainSeconds = *params.Envoy.DrainSeconds
	}
	sel := selectorLabels(f)
	podLabels := fleetLabels(f, infraLabels)
	annotations := copyOrNil(infraAnnotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	// A Gateway's spec.infrastructure.annotations do not loosen its pods'
	// confinement, as its parameters' overlay may not
	// (CheckGatewayParameters), unless its class allows PodTemplate.
	if !params.GatewayPolicy.Allows(v1alpha1.PermissionPodTemplate) {
		maps.DeleteFunc(annotations, func(k, _ string) bool { return !allowedPodAnnotation(k) })
	}
	// Where Prometheus (annotation-based discovery) scrapes Envoy; a
	// Gateway's infrastructure annotations may say otherwise.
	for k, v := range map[string]string{
		"prometheus.io/scrape": "true",
		"prometheus.io/port":   strconv.Itoa(MetricsPort),
		"prometheus.io/path":   "/stats/prometheus",
	} {
		if _, set := annotations[k]; !set {
			annotations[k] = v
		}
	}
	tmpl := &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: podLabels, Annotations: annotations},
		Spec: corev1.PodSpec{
			ServiceAccountName:           f.ServiceAccount,
			AutomountServiceAccountToken: ptr.To(false),
			EnableServiceLinks:           ptr.To(false),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				RunAsUser:      ptr.To[int64](envoyUID),
				RunAsGroup:     ptr.To[int64](envoyUID),
				FSGroup:        ptr.To[int64](envoyUID),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
					Weight: 100,
					PodAffinityTerm: corev1.PodAffinityTerm{
						LabelSelector: &metav1.LabelSelector{MatchLabels: sel},
						TopologyKey:   corev1.LabelHostname,
					},
				}},
			}},
			Containers: []corev1.Container{{
				Name:            containerName,
				Image:           image,
				ImagePullPolicy: cmp.Or(r.ImagePullPolicy, corev1.PullIfNotPresent),
				Command:         []string{envoyBinary},
				Args: append([]string{
					"--config-path", path.Join(bootstrapDir, bootstrapFile),
					// The bootstrap's node id is the fleet's name; each pod
					// identifies itself by its own name.
					"--service-node", "$(POD_NAME)",
					"--log-level", cmp.Or(r.LogLevel, "info"),
					"--disable-hot-restart",
					// A drain (drainHook) tells every connection to close
					// at once, and closes the listeners drainSeconds later.
					"--drain-time-s", strconv.Itoa(int(drainSeconds)),
					"--drain-strategy", "immediate",
				}, bootstrap.ConfigArgs()...),
				Lifecycle: drainHook(drainSeconds),
				Env:       envoyEnv(),
				Ports: []corev1.ContainerPort{
					{Name: "readiness", ContainerPort: ReadinessPort, Protocol: corev1.ProtocolTCP},
					{Name: "metrics", ContainerPort: MetricsPort, Protocol: corev1.ProtocolTCP},
				},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
						Path: "/ready", Port: intstr.FromInt32(ReadinessPort), Scheme: corev1.URISchemeHTTP,
					}},
					PeriodSeconds:    5,
					TimeoutSeconds:   1,
					SuccessThreshold: 1,
					FailureThreshold: 3,
				},
				Resources:       resources,
				SecurityContext: restrictedSecurityContext(),
				VolumeMounts: []corev1.VolumeMount{
					{Name: bootstrapVolume, MountPath: bootstrapDir, ReadOnly: true},
					{Name: svidVolume, MountPath: svidDir, ReadOnly: true},
					{Name: tmpVolume, MountPath: "/tmp"},
					{Name: drainVolume, MountPath: drainDir, ReadOnly: true},
				},
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
			}},
			Volumes: []corev1.Volume{
				{Name: bootstrapVolume, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: f.Name},
				}}},
				// The SVID and its key: in memory, shared by the agent
				// (writes) and Envoy (reads).
				{Name: svidVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
					Medium: corev1.StorageMediumMemory, SizeLimit: ptr.To(resource.MustParse("1Mi")),
				}}},
				// The agent's token: audience-bound to the identity
				// service, short-lived, renewed by the kubelet.
				{Name: tokenVolume, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
					DefaultMode: ptr.To[int32](0o400),
					Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{
						Audience:          cmp.Or(r.Identity.Audience, identity.DefaultAudience),
						ExpirationSeconds: ptr.To(cmp.Or(r.Identity.TokenExpirationSeconds, DefaultTokenExpirationSeconds)),
						Path:              tokenFile,
					}}},
				}}},
				{Name: tmpVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				// The agent's executable for the preStop hook. On the
				// node's disk, not in memory: tmpfs pages would count
				// against the agent's memory limit, and the binary is
				// larger than it.
				{Name: drainVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
					SizeLimit: ptr.To(resource.MustParse("256Mi")),
				}}},
			},
			TerminationGracePeriodSeconds: ptr.To(int64(drainSeconds) + ShutdownMarginSeconds),
			// A native sidecar: it starts first, Envoy starts once its
			// startup probe sees an SVID, and it keeps renewing it.
			InitContainers: []corev1.Container{r.agentContainer()},
		},
	}
	out, err := applyOverlay(tmpl, params.PodTemplate)
	if err != nil {
		return nil, err
	}
	// What the overlay may not change: the selector labels (the
	// Deployment's selector is immutable) and the absence of a
	// ServiceAccount token.
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	maps.Copy(out.Labels, sel)
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Spec.ServiceAccountName = f.ServiceAccount
	out.Spec.AutomountServiceAccountToken = ptr.To(false)
	return out, nil
}

// envoyEnv are the Envoy container's own variables (a Gateway's overlay
// may add others, never replace these: CheckGatewayParameters).
func envoyEnv() []corev1.EnvVar {
	return []corev1.EnvVar{
		{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
	}
}

// drainHook is the Envoy container's lifecycle: with drainSeconds > 0 its
// preStop hook runs `xds-controller envoy-drain` (package drain) from the
// copy the SVID agent installed in the drain folder. The hook talks to
// Envoy's admin interface on the pod's loopback (AdminPort): health checks
// fail, every listener drains gracefully, and the hook returns
// drainSeconds later, when the listeners have closed; only then does the
// kubelet send SIGTERM. Meanwhile the pod, terminating, leaves the
// Gateway's endpoints (EndpointsFromPods, or Kubernetes' EndpointSlice
// controller in Dedicated mode). No pod port offers the drain. 0: no hook,
// Envoy stops at SIGTERM.
func drainHook(drainSeconds int32) *corev1.Lifecycle {
	if drainSeconds <= 0 {
		return nil
	}
	return &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{
		drainBinary, "envoy-drain",
		"--admin=" + net.JoinHostPort("127.0.0.1", strconv.Itoa(AdminPort)),
		"--drain-time=" + strconv.Itoa(int(drainSeconds)) + "s",
	}}}}
}

func podTemplateHash(tmpl *corev1.PodTemplateSpec, configMap map[string]string) string {
	h := sha256.New()
	b, _ := json.Marshal(tmpl)
	h.Write(b)
	for _, k := range slices.Sorted(maps.Keys(configMap)) {
		h.Write([]byte{0})
		h.Write([]byte(k))
		h.Write([]byte{0})
		h.Write([]byte(configMap[k]))
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// FleetSelector are the labels that select f's pods (the Deployment's
// selector).
func FleetSelector(f Fleet) map[string]string { return selectorLabels(f) }

func selectorLabels(f Fleet) map[string]string {
	return map[string]string{LabelName: "envoy", LabelInstance: f.Name}
}

// fleetLabels: ours over the Gateway's infrastructure labels.
func fleetLabels(f Fleet, infraLabels map[string]string) map[string]string {
	l := map[string]string{}
	maps.Copy(l, infraLabels)
	maps.Copy(l, selectorLabels(f))
	l[LabelManagedBy] = ManagedByValue
	l[LabelComponent] = "proxy"
	l[LabelGatewayClassName] = LabelValue(f.ClassName)
	if f.Gateway != "" {
		l[LabelGatewayName] = LabelValue(f.Gateway)
	}
	return l
}

// gatewayLabels are the labels of a Gateway's own objects.
func gatewayLabels(gw *gwapiv1.Gateway, infraLabels map[string]string) map[string]string {
	l := map[string]string{}
	maps.Copy(l, infraLabels)
	l[LabelManagedBy] = ManagedByValue
	l[LabelGatewayClassName] = LabelValue(string(gw.Spec.GatewayClassName))
	l[LabelGatewayName] = LabelValue(gw.Name)
	return l
}

// infraMeta are gw's spec.infrastructure labels and annotations.
func infraMeta(gw *gwapiv1.Gateway) (labels, annotations map[string]string) {
	inf := gw.Spec.Infrastructure
	if inf == nil {
		return nil, nil
	}
	if len(inf.Labels) > 0 {
		labels = map[string]string{}
		for k, v := range inf.Labels {
			labels[string(k)] = string(v)
		}
	}
	if len(inf.Annotations) > 0 {
		annotations = map[string]string{}
		for k, v := range inf.Annotations {
			annotations[string(k)] = string(v)
		}
	}
	return labels, annotations
}

func copyOrNil(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}

// gatewayOwner owns the objects rendered for gw: gw itself, or, for a
// Gateway that stands for an IngressClass
// (gatewayapi.AnnotationStandsForIngressClass; its UID is the class's),
// that IngressClass, so that they go with it.
func gatewayOwner(gw *gwapiv1.Gateway) metav1.OwnerReference {
	if class := gw.Annotations[gatewayapi.AnnotationStandsForIngressClass]; class != "" {
		return ownerRef(networkingv1.SchemeGroupVersion.String(), "IngressClass", class, string(gw.UID))
	}
	return ownerRef(gwapiv1.GroupVersion.String(), "Gateway", gw.Name, string(gw.UID))
}

func ownerRef(apiVersion, kind, name, uid string) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion:         apiVersion,
		Kind:               kind,
		Name:               name,
		UID:                typesUID(uid),
		Controller:         ptr.To(true),
		BlockOwnerDeletion: ptr.To(true),
	}
}

// restrictedSecurityContext is the security context of every container of
// an Envoy pod (Envoy and its SVID agent): the Pod Security Standards'
// "restricted" profile, non-root as envoyUID, read-only root filesystem, no
// capabilities.
func restrictedSecurityContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		RunAsNonRoot:             ptr.To(true),
		RunAsUser:                ptr.To[int64](envoyUID),
		RunAsGroup:               ptr.To[int64](envoyUID),
		ReadOnlyRootFilesystem:   ptr.To(true),
		AllowPrivilegeEscalation: ptr.To(false),
		Privileged:               ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}
