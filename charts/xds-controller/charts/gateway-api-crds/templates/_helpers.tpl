{{- /*
gateway-api-crds.install is "true" when this release renders the Gateway API
CRDs, else "". Its context is this subchart's: .Values is the parent chart's
gatewayAPI section; the parent passes .Subcharts.gatewayAPI. One decision
for the CRDs (templates/crds.yaml) and the parent's GatewayClass (a
post-install hook when the CRDs come with the install).

  installCRDs true:  always (Helm refuses CRDs another owner holds);
  installCRDs false: never;
  installCRDs auto (the default): when Helm reads the cluster (lookup) and
    every CRD of the channel is absent or this release's (Helm's ownership
    annotations meta.helm.sh/release-name and -namespace): a bare cluster
    gets them, the release that installed them keeps them up to date, and
    CRDs anyone else owns (another Gateway API implementation, a platform)
    are left alone, all of them, never some. Offline (helm template,
    helm lint, --dry-run=client) lookup finds nothing at all, not even
    namespace kube-system, and auto renders none: an offline render cannot
    tell a bare cluster from one whose CRDs are someone else's.

A CRD's name comes from its file's: files/<channel>/<group>_<plural>.yaml is
<plural>.<group>; <group>_vap_safeupgrades.yaml, the safe-upgrades policy,
is not a CRD.
*/ -}}
{{- define "gateway-api-crds.install" -}}
{{- $mode := toString .Values.installCRDs -}}
{{- if eq $mode "true" -}}
true
{{- else if and (eq $mode "auto") (lookup "v1" "Namespace" "" "kube-system") -}}
{{- $ours := true -}}
{{- range $path, $_ := .Files.Glob (printf "files/%s/*.yaml" .Values.channel) -}}
{{- $parts := splitList "_" (base $path | trimSuffix ".yaml") -}}
{{- if eq (len $parts) 2 -}}
{{- $crd := lookup "apiextensions.k8s.io/v1" "CustomResourceDefinition" "" (printf "%s.%s" (index $parts 1) (index $parts 0)) -}}
{{- $ann := dig "metadata" "annotations" dict $crd -}}
{{- if and $crd (or (ne (get $ann "meta.helm.sh/release-name") $.Release.Name) (ne (get $ann "meta.helm.sh/release-namespace") $.Release.Namespace)) -}}
{{- $ours = false -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if $ours -}}
true
{{- end -}}
{{- end -}}
{{- end -}}
