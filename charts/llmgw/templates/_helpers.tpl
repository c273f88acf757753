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

{{/* The objects the binaries and the Roles name, by their names.* value: the
names config/rbac pins and the binaries' flags default to. */}}
{{- define "llmgw.defaultNames" -}}
snapshotConfigMap: llmgw-snapshot
gatewayStatusConfigMap: llmgw-gateway-status
leaderElectionLease: llmgw-controller-leader
{{- end }}

{{/* The configured names (names.*), validated, as YAML by names.* value. Each
must be a DNS-1123 subdomain (what the API server accepts as a ConfigMap or
Lease name); the snapshot ConfigMap's is also the value of the label
llmgw.dev/snapshot its parts carry, so at most 63 characters. The two
ConfigMaps must differ: the controller would write the snapshot over the
gateways' reports. */}}
{{- define "llmgw.names" -}}
{{- $set := .Values.names | default dict -}}
{{- $names := dict -}}
{{- range $value, $default := include "llmgw.defaultNames" . | fromYaml -}}
{{- $name := ternary (get $set $value) $default (hasKey $set $value) | toString -}}
{{- $max := 253 -}}
{{- $why := "" -}}
{{- if eq $value "snapshotConfigMap" -}}
{{- $max = 63 -}}
{{- $why = ", the limit of the label llmgw.dev/snapshot it is the value of" -}}
{{- end -}}
{{- if or (gt (len $name) $max) (not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$" $name)) -}}
{{- fail (printf "names.%s: %q is not a valid name: want a DNS-1123 subdomain (lower-case letters, digits, '-' and '.', starting and ending with a letter or digit) of at most %d characters%s" $value $name $max $why) -}}
{{- end -}}
{{- $_ := set $names $value $name -}}
{{- end -}}
{{- if eq $names.snapshotConfigMap $names.gatewayStatusConfigMap -}}
{{- fail (printf "names.snapshotConfigMap and names.gatewayStatusConfigMap are both %q: they name two different ConfigMaps" $names.snapshotConfigMap) -}}
{{- end -}}
{{- toYaml $names -}}
{{- end }}

{{/* dict "root" $ "flags" (dict VALUE FLAG ...) "extraArgs" LIST "where" VALUES-PATH
["off" (list FLAG ...)]: the component's "- --FLAG=NAME" arguments, one per
names.VALUE that differs from its default (none with the defaults, so the
workloads render as config/ has them). The Roles follow names.* only, so
extraArgs may not set these flags; only "--FLAG=" of a flag in "off", whose
empty value turns its use off, is let through. */}}
{{- define "llmgw.nameArgs" -}}
{{- $names := include "llmgw.names" .root | fromYaml -}}
{{- $defaults := include "llmgw.defaultNames" .root | fromYaml -}}
{{- range $arg := .extraArgs -}}
{{- range $value, $flag := $.flags -}}
{{- $off := and (has $flag ($.off | default list)) (regexMatch (printf "^--?%s=$" $flag) (toString $arg)) -}}
{{- if and (not $off) (regexMatch (printf "^--?%s(=.*)?$" $flag) (toString $arg)) -}}
{{- fail (printf "%s: %q renames an object the Roles name: set names.%s instead, which the flag and the Roles follow" $.where $arg $value) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- range $value, $flag := .flags }}
{{- if ne (get $names $value) (get $defaults $value) }}
- --{{ $flag }}={{ get $names $value }}
{{- end }}
{{- end }}
{{- end }}

{{/* The namespaces the controller compiles, as a YAML list: the release
namespace first, then controller.watchNamespaces (each a namespace name, once).
The controller's --watch-namespaces, the Roles of the watched namespaces and
the llmgw-watched-namespaces policy all follow it, so extraArgs may not set
the flag. */}}
{{- define "llmgw.watchedNamespaces" -}}
{{- $list := list .Release.Namespace -}}
{{- range $ns := .Values.controller.watchNamespaces | default list -}}
{{- if or (gt (len (toString $ns)) 63) (not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" (toString $ns))) -}}
{{- fail (printf "controller.watchNamespaces: %q is not a namespace name (an RFC 1123 label: lower-case letters, digits and '-', at most 63 characters)" $ns) -}}
{{- end -}}
{{- if not (has $ns $list) -}}
{{- $list = append $list $ns -}}
{{- end -}}
{{- end -}}
{{- range $arg := .Values.controller.extraArgs -}}
{{- if regexMatch "^--?watch-namespaces(=.*)?$" (toString $arg) -}}
{{- fail (printf "controller.extraArgs: %q: set controller.watchNamespaces instead, which the Roles and the admission policy follow" $arg) -}}
{{- end -}}
{{- end -}}
{{- toYaml $list -}}
{{- end }}

{{/* controller.ownerLabels as a YAML list, each once, each checked as the
controller checks --owner-labels (a Kubernetes label key: [prefix/]name, name
at most 63 characters of [A-Za-z0-9-_.] starting and ending with a letter or
digit, prefix a DNS subdomain), at most 16: a bad one fails the render rather
than the controller's start. */}}
{{- define "llmgw.ownerLabels" -}}
{{- $list := list -}}
{{- range $l := .Values.controller.ownerLabels | default list -}}
{{- $l = toString $l -}}
{{- $name := $l -}}
{{- $prefix := "" -}}
{{- if contains "/" $l -}}
{{- $prefix = regexReplaceAll "/.*$" $l "" -}}
{{- $name = regexReplaceAll "^[^/]*/" $l "" -}}
{{- end -}}
{{- $badPrefix := and (contains "/" $l) (or (gt (len $prefix) 253) (not (regexMatch "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$" $prefix))) -}}
{{- if or $badPrefix (gt (len $name) 63) (not (regexMatch "^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$" $name)) -}}
{{- fail (printf "controller.ownerLabels: %q is not a Kubernetes label key ([prefix/]name: name at most 63 characters of letters, digits, '-', '_' and '.', starting and ending with a letter or digit; prefix a DNS subdomain)" $l) -}}
{{- end -}}
{{- if not (has $l $list) -}}
{{- $list = append $list $l -}}
{{- end -}}
{{- end -}}
{{- if gt (len $list) 16 -}}
{{- fail (printf "controller.ownerLabels: %d label keys, at most 16 (a usage record carries at most 16 owner labels)" (len $list)) -}}
{{- end -}}
{{- toYaml $list -}}
{{- end }}
