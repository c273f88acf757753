{{/* Labels on every object (pod templates carry the selector labels only). */}}
{{- define "llmgw.labels" -}}
app.kubernetes.io/name: llmgw
app.kubernetes.io/part-of: llmgw
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{/* dict "root" $ "component" NAME: labels of one component's objects. */}}
{{- define "llmgw.componentLabels" -}}
{{ include "llmgw.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* dict "component" NAME: selector (and pod template) labels, the same as config/. */}}
{{- define "llmgw.selectorLabels" -}}
app.kubernetes.io/name: llmgw
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* The pinned llmgw image: repository@digest, or repository:tag (default appVersion). */}}
{{- define "llmgw.image" -}}
{{- $tag := .Values.image.tag | default .Chart.AppVersion | toString -}}
{{- if eq $tag "latest" -}}
{{- fail "image.tag: pin a version (or image.digest), not latest" -}}
{{- end -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository $tag -}}
{{- end -}}
{{- end }}

{{/* A Secret generated at install time: the existing value is kept on upgrade
(lookup), a new one is random (randAlphaNum). dict "root" $ "name" N "key" K "component" C */}}
{{- define "llmgw.generatedSecret" -}}
{{- $existing := lookup "v1" "Secret" .root.Release.Namespace .name -}}
{{- $value := "" -}}
{{- if and $existing $existing.data -}}
{{- $value = index $existing.data .key | default "" -}}
{{- end }}
apiVersion: v1
kind: Secret
metadata:
  name: {{ .name }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "llmgw.componentLabels" (dict "root" .root "component" .component) | nindent 4 }}
    llmgw.dev/generated: "true"
type: Opaque
data:
  {{ .key }}: {{ $value | default (randAlphaNum 64 | b64enc) }}
{{- end }}
