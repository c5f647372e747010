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
