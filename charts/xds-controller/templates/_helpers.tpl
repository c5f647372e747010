{{/* The name of the controller's objects. */}}
{{- define "xds-controller.fullname" -}}
{{- default "xds-controller" .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "xds-controller.labels" -}}
app.kubernetes.io/name: xds-controller
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: xds-controller
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "xds-controller.selectorLabels" -}}
app.kubernetes.io/name: xds-controller
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: controller
{{- end -}}

{{/* Whether the default GatewayParameters are rendered. */}}
{{- define "xds-controller.defaultParameters" -}}
{{- if or .Values.mode .Values.envoy.image (not (kindIs "invalid" .Values.envoy.replicas)) (not (kindIs "invalid" .Values.envoy.drainSeconds)) .Values.envoy.serviceType .Values.envoy.resources .Values.envoy.podTemplate .Values.monitoring.routeStats .Values.gatewayClass.allow .Values.edge -}}
true
{{- end -}}
{{- end -}}

{{/*
The namespaces the controller watches and provisions in (watchNamespaces
plus the release namespace, sorted), or nothing when watchNamespaces is
empty (every namespace). One name per line.
*/}}
{{- define "xds-controller.watchNamespaces" -}}
{{- if not (kindIs "slice" .Values.watchNamespaces) -}}
{{- fail "watchNamespaces must be a list of namespace names (empty: every namespace)" -}}
{{- end -}}
{{- if .Values.watchNamespaces -}}
{{- range (append .Values.watchNamespaces .Release.Namespace | uniq | sortAlpha) }}
{{- if not (regexMatch "^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$" (toString .)) }}
{{- fail (printf "watchNamespaces: %q is not a namespace name" (toString .)) }}
{{- end }}
{{ . }}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
The rules on namespaced objects: in the ClusterRole (every namespace), or,
with watchNamespaces, in a Role in each watched namespace. Each starts
with a newline.
*/}}
{{- define "xds-controller.namespacedRules" }}
# Gateway API objects: read, and write their status.
- apiGroups: [gateway.networking.k8s.io]
  resources: [gateways, httproutes, grpcroutes, tlsroutes, tcproutes, udproutes, referencegrants, backendtlspolicies, listenersets]
  verbs: [get, list, watch]
- apiGroups: [gateway.networking.k8s.io]
  resources: [gateways/status, httproutes/status, grpcroutes/status, tlsroutes/status, tcproutes/status, udproutes/status, backendtlspolicies/status, listenersets/status]
  verbs: [patch, update]
# Owner references with blockOwnerDeletion on Gateways (garbage
# collection of their fleets and Services).
- apiGroups: [gateway.networking.k8s.io]
  resources: [gateways/finalizers]
  verbs: [update]
# Our parameters CRDs.
- apiGroups: [gateway.xds-controller.dev]
  resources: [gatewayparameters, ingressclassparameters]
  verbs: [get, list, watch]
# SecurityPolicies (ours): read, and write their status.ancestors.
- apiGroups: [gateway.xds-controller.dev]
  resources: [securitypolicies]
  verbs: [get, list, watch]
- apiGroups: [gateway.xds-controller.dev]
  resources: [securitypolicies/status]
  verbs: [patch, update]
# TrafficPolicies (ours): read, and write their status.ancestors.
- apiGroups: [gateway.xds-controller.dev]
  resources: [trafficpolicies]
  verbs: [get, list, watch]
- apiGroups: [gateway.xds-controller.dev]
  resources: [trafficpolicies/status]
  verbs: [patch, update]
# BackendPolicies (ours): read, and write their status.ancestors.
- apiGroups: [gateway.xds-controller.dev]
  resources: [backendpolicies]
  verbs: [get, list, watch]
- apiGroups: [gateway.xds-controller.dev]
  resources: [backendpolicies/status]
  verbs: [patch, update]
# ListenerPolicies (ours): read, and write their status.ancestors.
- apiGroups: [gateway.xds-controller.dev]
  resources: [listenerpolicies]
  verbs: [get, list, watch]
- apiGroups: [gateway.xds-controller.dev]
  resources: [listenerpolicies/status]
  verbs: [patch, update]
# Ingresses: read, and write the status.loadBalancer of the Ingresses of
# our classes (merge patch).
- apiGroups: [networking.k8s.io]
  resources: [ingresses]
  verbs: [get, list, watch]
- apiGroups: [networking.k8s.io]
  resources: [ingresses/status]
  verbs: [patch, update]
# Endpoints: delete the ones Kubernetes leaves behind when a Gateway's
# Service loses its selector (a Gateway moved from Dedicated to Shared),
# after reading that one by name. Never listed or watched.
- apiGroups: [""]
  resources: [endpoints]
  verbs: [get, delete]
# Secrets: read only. Those of type kubernetes.io/tls are watched as
# metadata (field selector type=kubernetes.io/tls), the ones listeners and
# Ingresses reference read by name; the CA Secret read at start. No
# write: reading more certificates must not mean writing more. RBAC
# cannot narrow this further (no rule by type, label or a changing set of
# names).
- apiGroups: [""]
  resources: [secrets]
  verbs: [get, list, watch]
# ConfigMaps: read (metadata watched; the CA certificates BackendTLSPolicies
# and Gateways reference, read by name; the replicas' data-plane reports),
# and written where a Dedicated Gateway's fleet lives: its bootstrap
# ConfigMap <gateway>-<class> (Envoy's bootstrap and the CA bundle) is
# server-side applied (patch, and create when it is new) and pruned
# (delete) when the Gateway leaves Dedicated mode or our classes. No
# update or deletecollection.
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get, list, watch, create, patch, delete]
# The Gateways' Services (both modes; watched: their addresses are the
# Gateways' status.addresses) and the EndpointSlices we write for Shared
# Gateways (watched with every Service's slices: backends): server-side
# apply (patch, create), read by name, pruned (delete).
- apiGroups: [""]
  resources: [services]
  verbs: [get, list, watch, create, patch, delete]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [get, list, watch, create, patch, delete]
# The fleets' ServiceAccounts and Deployments: in the Gateways' namespaces
# (Dedicated) and the release namespace (Shared). Server-side apply (patch,
# create), read by name and listed for pruning (delete); never watched. The
# ServiceAccounts are bound to no role: their only credential is a
# projected token for the identity service.
- apiGroups: [""]
  resources: [serviceaccounts]
  verbs: [get, list, create, patch, delete]
- apiGroups: [apps]
  resources: [deployments]
  verbs: [get, list, create, patch, delete]
# Events on Gateways (NACKs) and Ingresses (translation problems).
- apiGroups: ["", events.k8s.io]
  resources: [events]
  verbs: [create, patch]
# Experimental-channel policies: read, and write their status (not
# watched when their CRD is missing).
- apiGroups: [gateway.networking.x-k8s.io]
  resources: [xbackendtrafficpolicies, xtelemetrypolicies]
  verbs: [get, list, watch]
- apiGroups: [gateway.networking.x-k8s.io]
  resources: [xbackendtrafficpolicies/status, xtelemetrypolicies/status]
  verbs: [patch, update]
# XBackends (gateway.networking.x-k8s.io, experimental channel): the
# backendRefs that name them (watched when the CRD exists), and their
# status.ancestors.
- apiGroups: [gateway.networking.x-k8s.io]
  resources: [xbackends]
  verbs: [get, list, watch]
- apiGroups: [gateway.networking.x-k8s.io]
  resources: [xbackends/status]
  verbs: [patch, update]
# Pods: the endpoints of EndpointSelector XBackends (their labels, IPs and
# readiness only are cached). Never written.
- apiGroups: [""]
  resources: [pods]
  verbs: [list, watch]
{{- end }}
