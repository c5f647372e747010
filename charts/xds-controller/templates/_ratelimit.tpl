{{/* The rate-limit service's pods (templates/ratelimit.yaml). */}}
{{- define "xds-controller.rateLimitSelectorLabels" -}}
app.kubernetes.io/name: xds-controller
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: ratelimit
{{- end -}}

{{/* The chart's Redis pod (rateLimit.redis.enabled without a url). */}}
{{- define "xds-controller.rateLimitRedisSelectorLabels" -}}
app.kubernetes.io/name: xds-controller
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: ratelimit-redis
{{- end -}}

{{/* Node selector, tolerations and affinity of both. */}}
{{- define "xds-controller.rateLimitScheduling" -}}
{{- with .Values.rateLimit.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.rateLimit.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.rateLimit.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}
