{{/* dict "value" VALUES-PATH "duration" D: a Go duration ("30s", "1m30s",
"1.5h", "500ms", "0") in seconds, as a float. Fails the render, naming the
value, on anything time.ParseDuration would refuse or that is negative. */}}
{{- define "llmgw.durationSeconds" -}}
{{- $d := toString .duration -}}
{{- if eq $d "0" -}}
0
{{- else -}}
{{- if not (regexMatch "^([0-9]*\\.?[0-9]+(ns|us|µs|ms|s|m|h))+$" $d) -}}
{{- fail (printf "%s: %q is not a duration (a Go duration such as 30s, 1m30s or 2m)" .value $d) -}}
{{- end -}}
{{- $unit := dict "ns" 0.000000001 "us" 0.000001 "µs" 0.000001 "ms" 0.001 "s" 1.0 "m" 60.0 "h" 3600.0 -}}
{{- $sum := 0.0 -}}
{{- range $part := regexFindAll "[0-9]*\\.?[0-9]+(ns|us|µs|ms|s|m|h)" $d -1 -}}
{{- $n := regexFind "^[0-9]*\\.?[0-9]+" $part -}}
{{- $u := trimPrefix $n $part -}}
{{- $sum = addf $sum (mulf (float64 $n) (get $unit $u)) -}}
{{- end -}}
{{- $sum -}}
{{- end -}}
{{- end }}

{{/* "true" when the HorizontalPodAutoscaler owns the gateway StatefulSet's
replicas; its bounds checked as the API server would (1 <= minReplicas <=
maxReplicas), so a bad value fails the render, not the install. */}}
{{- define "llmgw.gatewayAutoscaling" -}}
{{- $a := .Values.gateway.autoscaling -}}
{{- if $a.enabled -}}
{{- if lt (int $a.minReplicas) 1 -}}
{{- fail (printf "gateway.autoscaling.minReplicas: %v: want at least 1" $a.minReplicas) -}}
{{- end -}}
{{- if lt (int $a.maxReplicas) (int $a.minReplicas) -}}
{{- fail (printf "gateway.autoscaling.maxReplicas: %v is less than minReplicas %v" $a.maxReplicas $a.minReplicas) -}}
{{- end -}}
{{- if and (not (int $a.targetCPUUtilizationPercentage)) (not $a.metrics) -}}
{{- fail "gateway.autoscaling: no targetCPUUtilizationPercentage and no metrics: the autoscaler would have nothing to scale on" -}}
{{- end -}}
true
{{- else -}}
false
{{- end -}}
{{- end }}

{{/* The fewest and the most gateway replicas that may run, as "MIN MAX":
autoscaling.minReplicas and maxReplicas with the autoscaler, else replicas
twice. The PodDisruptionBudget follows the fewest, the quota store the most. */}}
{{- define "llmgw.gatewayReplicaRange" -}}
{{- if eq (include "llmgw.gatewayAutoscaling" .) "true" -}}
{{- printf "%d %d" (int .Values.gateway.autoscaling.minReplicas) (int .Values.gateway.autoscaling.maxReplicas) -}}
{{- else -}}
{{- printf "%d %d" (int .Values.gateway.replicas) (int .Values.gateway.replicas) -}}
{{- end -}}
{{- end }}

{{/* terminationGracePeriodSeconds, checked: a replica scaled away drains
(drainTimeout) and then hands its records off (handoffTimeout) before it
exits, and SIGKILL must not cut that short. */}}
{{- define "llmgw.gatewayGracePeriod" -}}
{{- $g := .Values.gateway -}}
{{- $grace := $g.terminationGracePeriodSeconds -}}
{{- if not (regexMatch "^[0-9]+$" (toString $grace)) -}}
{{- fail (printf "gateway.terminationGracePeriodSeconds: %v: want a whole number of seconds" $grace) -}}
{{- end -}}
{{- $drain := include "llmgw.durationSeconds" (dict "value" "gateway.drainTimeout" "duration" $g.drainTimeout) | float64 -}}
{{- $handoff := include "llmgw.durationSeconds" (dict "value" "gateway.handoffTimeout" "duration" $g.handoffTimeout) | float64 -}}
{{- $need := addf $drain $handoff -}}
{{- if lt (float64 $grace) $need -}}
{{- fail (printf "gateway.terminationGracePeriodSeconds: %v is less than drainTimeout (%s) + handoffTimeout (%s) = %ss: a replica scaled away would be killed before it has drained and handed its usage records off; give it about %d (a margin to close the ledger included)" $grace $g.drainTimeout $g.handoffTimeout (toString $need) (add (int (ceil $need)) 10)) -}}
{{- end -}}
{{- $grace -}}
{{- end }}

{{/* "true" when the gateways serve /debug/pprof (gateway.pprof.enabled).
The flag is said once, by this value: --pprof in gateway.extraArgs is
refused, and so are the block and mutex profile rates without it (the
gateway would refuse to start). */}}
{{- define "llmgw.gatewayPprof" -}}
{{- $on := .Values.gateway.pprof.enabled | default false -}}
{{- range $arg := .Values.gateway.extraArgs -}}
{{- if regexMatch "^--?pprof(=.*)?$" (toString $arg) -}}
{{- fail (printf "gateway.extraArgs: %q: set gateway.pprof.enabled instead" $arg) -}}
{{- end -}}
{{- if and (not $on) (regexMatch "^--?profile-(block-rate|mutex-fraction)(=.*)?$" (toString $arg)) -}}
{{- fail (printf "gateway.extraArgs: %q needs /debug/pprof: set gateway.pprof.enabled=true" $arg) -}}
{{- end -}}
{{- end -}}
{{- ternary "true" "false" (eq (toString $on) "true") -}}
{{- end }}

{{/* The gateway container's OpenTelemetry variables (gateway.tracing), as
env entries; nothing while tracing.endpoint is empty. POD_NAMESPACE and
POD_NAME are declared before them, so $(...) expands. */}}
{{- define "llmgw.gatewayTracingEnv" -}}
{{- $t := .Values.gateway.tracing | default dict -}}
{{- with $t.endpoint }}
{{- if not (regexMatch "^https?://[^/\\s]+" (toString .)) -}}
{{- fail (printf "gateway.tracing.endpoint: %q: want a URL, http://host:port or https://host:port" .) -}}
{{- end -}}
{{- $protocols := list "grpc" "http/protobuf" -}}
{{- if not (has (toString $t.protocol) $protocols) -}}
{{- fail (printf "gateway.tracing.protocol: %q: want one of %s" (toString $t.protocol) (join ", " $protocols)) -}}
{{- end -}}
{{- $samplers := list "always_on" "always_off" "traceidratio" "parentbased_always_on" "parentbased_always_off" "parentbased_traceidratio" -}}
{{- if not (has (toString $t.sampler) $samplers) -}}
{{- fail (printf "gateway.tracing.sampler: %q: want one of %s" (toString $t.sampler) (join ", " $samplers)) -}}
{{- end }}
# OpenTelemetry traces (gateway.tracing).
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ . | quote }}
- name: OTEL_EXPORTER_OTLP_PROTOCOL
  value: {{ $t.protocol | quote }}
- name: OTEL_TRACES_SAMPLER
  value: {{ $t.sampler | quote }}
{{- with $t.samplerArg | toString | trim }}
- name: OTEL_TRACES_SAMPLER_ARG
  value: {{ . | quote }}
{{- end }}
- name: OTEL_SERVICE_NAME
  value: {{ $t.serviceName | default "llmgw-gateway" | quote }}
- name: OTEL_RESOURCE_ATTRIBUTES
  value: {{ list "k8s.namespace.name=$(POD_NAMESPACE)" "k8s.pod.name=$(POD_NAME)" (toString ($t.resourceAttributes | default "")) | compact | join "," | quote }}
{{- with $t.headersSecret }}{{ with .name }}
- name: OTEL_EXPORTER_OTLP_HEADERS
  valueFrom:
    secretKeyRef:
      name: {{ . | quote }}
      key: {{ $t.headersSecret.key | default "headers" | quote }}
{{- end }}{{ end }}
{{- end }}
{{- end }}
