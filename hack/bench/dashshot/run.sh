#!/usr/bin/env bash
# Draws docs/images/dashboard.png: charts/llmgw/dashboards/llmgw.json over a
# few minutes of real traffic on the kind cluster of the e2e suites.
# `make dashboard-image` runs it (after building bin/llmgw and bin/dashshot);
# the cluster must be up and deployed (`make kind-up deploy`). What it does:
#
#  1. waits until the gateways are Ready and no kind e2e run is using the
#     cluster (its GatewayKeys are named e2e-* and hot-*; its test processes
#     show on this machine before that), and at the end refuses to draw when
#     the gateway or controller pods were replaced meanwhile;
#  2. unpacks the prometheus binary from Debian's prometheus package into
#     bin/ (as hack/promtool/promtool.mk does for promtool; no daemon is
#     installed) unless it is there;
#  3. port-forwards each gateway pod's management port (19090+N) and data
#     port (18080+N), the controller's metrics port (18443, scraped with a
#     token of a temporary ServiceAccount bound to llmgw-metrics-reader) and
#     svc/llmgw-gateway (18000), and runs Prometheus on 127.0.0.1:19190,
#     scraping every 5 s with the labels namespace and pod the dashboard
#     filters on;
#  4. applies config/samples, creates a throwaway key (llmgw keys create ...
#     | kubectl apply) and drives DASHSHOT_TRAFFIC seconds of mixed traffic
#     through the Service and the pods: chat JSON and SSE on chat-alpha and
#     chat-beta, Messages and Responses, embeddings on embed-alpha, provider
#     errors and fallbacks from mock directives, a burst of alpha 503s that
#     opens alpha's circuit breakers, and one snapshot change;
#  5. renders with dashshot from Prometheus's start to the end of the traffic
#     into DASHSHOT_OUT.
#
# Everything it started or created (forwards, Prometheus, traffic, the key,
# the ServiceAccount and its binding) is removed on exit, also on failure or
# Ctrl-C. The cluster's deployment is not changed.
#
# Environment (defaults in brackets):
#   KIND_KUBECONFIG     kubeconfig of the kind cluster [bin/kind/kubeconfig]
#   DASHSHOT_NAMESPACE  llmgw's namespace [llmgw-system]
#   DASHSHOT_TRAFFIC    seconds of traffic [240]
#   DASHSHOT_WORKERS    concurrent clients [6]
#   DASHSHOT_OUT        the picture [docs/images/dashboard.png]
#   DASHSHOT_WIDTH      its width in pixels [1800]
#   DASHSHOT_SCALE      picture pixels per dashboard pixel (2: a retina-like picture) [1]
#   DASHSHOT_WAIT       seconds to wait for a busy or unready cluster [900]
#   DASHSHOT_CONTROLLER 0 skips the controller's metrics (no ServiceAccount) [1]
#   DASHSHOT_KEEP       1 keeps the work directory (Prometheus data, logs) [0]
#   LLMGW, DASHSHOT, PROMETHEUS  the binaries [bin/llmgw, bin/dashshot, bin/prometheus]
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
cd "$REPO"
export KIND_KUBECONFIG=${KIND_KUBECONFIG:-$REPO/bin/kind/kubeconfig}
NS=${DASHSHOT_NAMESPACE:-llmgw-system}
TRAFFIC=${DASHSHOT_TRAFFIC:-240}
WORKERS=${DASHSHOT_WORKERS:-6}
OUT=${DASHSHOT_OUT:-$REPO/docs/images/dashboard.png}
WIDTH=${DASHSHOT_WIDTH:-1800}
SCALE=${DASHSHOT_SCALE:-1}
WAIT=${DASHSHOT_WAIT:-900}
CONTROLLER=${DASHSHOT_CONTROLLER:-1}
LLMGW=${LLMGW:-$REPO/bin/llmgw}
DASHSHOT=${DASHSHOT:-$REPO/bin/dashshot}
PROMETHEUS=${PROMETHEUS:-$REPO/bin/prometheus}
KUBECTL=$REPO/hack/kind/kubectl.sh
PROM_PORT=19190
SCRAPE=5s
RUN=$(printf '%x' $(($(date +%s) & 0xffffff)))
KEY_ID=dashshot-$RUN
SA=dashshot-$RUN

log() { echo "[dashshot] $(date +%T) $*" >&2; }
die() { log "$*"; exit 1; }
k() { "$KUBECTL" -n "$NS" "$@"; }

for b in "$LLMGW" "$DASHSHOT"; do
  [[ -x $b ]] || die "$b is missing: run make dashboard-image (it builds bin/llmgw and bin/dashshot)"
done
[[ -s $KIND_KUBECONFIG ]] || die "no kubeconfig at $KIND_KUBECONFIG: make kind-up deploy first"

# ---- 1. a Ready, quiet cluster ------------------------------------------------

# A kind e2e run redeploys and creates objects named e2e-*/hot-*; on this
# machine its go test and kind.test processes show it before any object.
cluster_busy() {
  k get gatewaykeys -o name 2>/dev/null | grep -E '/(e2e|hot)-' | head -3 | tr '\n' ' ' || true
  pgrep -f 'test/e2e/kind|/kind\.test( |$)' >/dev/null && echo "a kind e2e test process"
  return 0
}
# pods_now names the gateway and controller pods with their uids: a
# different answer later means they were replaced (a deploy, an e2e run).
pods_now() {
  k get pods -l 'app.kubernetes.io/component in (gateway,controller)' \
    -o jsonpath='{range .items[*]}{.metadata.name}/{.metadata.uid} {end}'
}
wait_cluster() {
  local deadline=$(($(date +%s) + WAIT)) busy
  while :; do
    busy=$(cluster_busy)
    if [[ -z $busy ]] &&
      k rollout status statefulset/llmgw-gateway --timeout=10s >/dev/null 2>&1 &&
      k rollout status deployment/llmgw-controller --timeout=10s >/dev/null 2>&1 &&
      k rollout status deployment/mock-alpha --timeout=10s >/dev/null 2>&1 &&
      k rollout status deployment/mock-beta --timeout=10s >/dev/null 2>&1; then
      return 0
    fi
    (($(date +%s) < deadline)) || die "the cluster is not Ready or is in use (${busy:-rollout not complete}) after ${WAIT}s; make kind-up deploy, or wait for the e2e run"
    log "waiting: ${busy:+the cluster is in use: $busy}${busy:-the gateways, controller or mocks are not Ready}"
    sleep 20
  done
}
log "checking the cluster (namespace $NS)"
wait_cluster
PODS_AT_START=$(pods_now)

# ---- 2. prometheus ----------------------------------------------------------

if [[ ! -x $PROMETHEUS ]]; then
  log "unpacking prometheus from Debian's prometheus package into $PROMETHEUS"
  d=$(mktemp -d)
  ( cd "$d" && { apt-get download prometheus >/dev/null 2>&1 || { apt-get update -qq >/dev/null && apt-get download prometheus >/dev/null; }; } ) ||
    { rm -rf "$d"; die "could not download Debian's prometheus package (set PROMETHEUS to a prometheus binary)"; }
  dpkg-deb -x "$d"/prometheus_*.deb "$d/x" && mkdir -p "$(dirname "$PROMETHEUS")" && cp "$d/x/usr/bin/prometheus" "$PROMETHEUS"
  rm -rf "$d"
fi
"$PROMETHEUS" --version 2>&1 | head -1 >&2

# ---- cleanup ------------------------------------------------------------------

WORK=$(mktemp -d -t dashshot.XXXXXX)
PIDS=()         # processes to stop: supervisors, Prometheus, traffic workers
CREATED=()      # namespaced objects to delete
CLUSTER_WIDE=() # cluster-scoped objects to delete
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  touch "$WORK/stop"
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for f in "$WORK"/*.kpid; do [[ -e $f ]] && kill "$(cat "$f")" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  if ((${#CREATED[@]})); then k delete --ignore-not-found --wait=false "${CREATED[@]}" >/dev/null 2>&1 || log "could not delete ${CREATED[*]}"; fi
  if ((${#CLUSTER_WIDE[@]})); then "$KUBECTL" delete --ignore-not-found --wait=false "${CLUSTER_WIDE[@]}" >/dev/null 2>&1 || log "could not delete ${CLUSTER_WIDE[*]}"; fi
  if [[ $rc != 0 ]]; then
    log "failed (exit $rc); the last lines of the logs in $WORK:"
    tail -n 5 "$WORK"/*.log >&2 2>/dev/null || true
  fi
  if [[ ${DASHSHOT_KEEP:-0} == 1 || $rc != 0 ]]; then log "work directory kept: $WORK"; else rm -rf "$WORK"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- 3. port-forwards and Prometheus -----------------------------------------

# forward NAME TARGET LOCAL:REMOTE... keeps `kubectl port-forward` running
# (restarted if a connection error ends it) until cleanup, and waits until
# it forwards.
forward() {
  local name=$1 target=$2
  shift 2
  (
    while [[ ! -e $WORK/stop ]]; do
      "$KUBECTL" -n "$NS" port-forward --address 127.0.0.1 "$target" "$@" >>"$WORK/pf-$name.log" 2>&1 &
      echo $! >"$WORK/pf-$name.kpid"
      wait $! || true
      sleep 1
    done
  ) &
  PIDS+=($!)
  local i
  for i in $(seq 1 150); do
    grep -q '^Forwarding from' "$WORK/pf-$name.log" 2>/dev/null && return 0
    sleep 0.2
  done
  die "port-forward $target $* did not start: $(tail -n 3 "$WORK/pf-$name.log" 2>/dev/null)"
}

mapfile -t PODS < <(k get pods -l app.kubernetes.io/component=gateway -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | sort -t- -k3 -n)
((${#PODS[@]})) || die "no gateway pods in $NS"
log "gateway pods: ${PODS[*]}"

TARGETS=""
DATA=()
for pod in "${PODS[@]}"; do
  n=${pod##*-}
  forward "$pod" "pod/$pod" "$((19090 + n)):9090" "$((18080 + n)):8080"
  DATA+=("http://127.0.0.1:$((18080 + n))")
  TARGETS+="
      - targets: ['127.0.0.1:$((19090 + n))']
        labels: {namespace: $NS, pod: $pod}"
done

CONTROLLER_JOB=""
if [[ $CONTROLLER == 1 ]]; then
  ctl=$(k get pods -l app.kubernetes.io/component=controller --field-selector=status.phase=Running -o jsonpath='{.items[0].metadata.name}')
  log "controller metrics: ServiceAccount $SA bound to llmgw-metrics-reader, port-forward $ctl 18443:8443"
  k create serviceaccount "$SA" >/dev/null
  CREATED+=("serviceaccount/$SA")
  "$KUBECTL" create clusterrolebinding "$SA" --clusterrole=llmgw-metrics-reader --serviceaccount="$NS:$SA" >/dev/null
  CLUSTER_WIDE+=("clusterrolebinding/$SA")
  k create token "$SA" --duration=2h >"$WORK/controller.token"
  forward controller "pod/$ctl" 18443:8443
  CONTROLLER_JOB="
  - job_name: llmgw-controller
    scheme: https
    tls_config: {insecure_skip_verify: true}
    authorization: {credentials_file: $WORK/controller.token}
    static_configs:
      - targets: ['127.0.0.1:18443']
        labels: {namespace: $NS, pod: $ctl}"
fi

cat >"$WORK/prometheus.yml" <<EOF
global:
  scrape_interval: $SCRAPE
  scrape_timeout: 4s
scrape_configs:
  - job_name: llmgw-gateway
    static_configs:$TARGETS$CONTROLLER_JOB
EOF
"$PROMETHEUS" --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/tsdb" \
  --web.listen-address="127.0.0.1:$PROM_PORT" --log.level=warn >"$WORK/prometheus.log" 2>&1 &
PIDS+=($!)
PROM=http://127.0.0.1:$PROM_PORT
want=$((${#PODS[@]} + (CONTROLLER == 1 ? 1 : 0)))
for i in $(seq 1 60); do
  # {"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[T,"N"]}]}}
  up=$(curl -fsS "$PROM/api/v1/query" --data-urlencode 'query=count(up == 1)' 2>/dev/null |
    sed -n 's/.*"value":\[[^,]*,"\([0-9]*\)"\].*/\1/p' || true)
  [[ $up == "$want" ]] && break
  ((i < 60)) || die "Prometheus scrapes ${up:-0} of $want targets after 60 s: $(curl -fsS "$PROM/api/v1/targets?state=active" | grep -o '"lastError":"[^"]*"' | sort -u)"
  sleep 1
done
log "Prometheus on $PROM scrapes $want targets every $SCRAPE"
START=$(date +%s)
sleep 15 # a quiet baseline before the traffic

# ---- 4. key, samples, traffic --------------------------------------------------

log "kubectl apply -f config/samples/"
"$KUBECTL" apply -f config/samples/ >/dev/null
log "creating key $KEY_ID (llmgw keys create ... | kubectl apply)"
"$LLMGW" keys create --id "$KEY_ID" --namespace "$NS" --models '*' --rpm 100000 --burst 10000 \
  --output yaml --entry-out "$WORK/key.yaml" --key-out "$WORK/key" 2>"$WORK/keys.log"
k apply -f "$WORK/key.yaml" >/dev/null
CREATED+=("gatewaykey/$KEY_ID")
k wait --for=condition=Ready --timeout=2m "gatewaykey/$KEY_ID" >/dev/null
printf 'Authorization: Bearer %s\n' "$(cat "$WORK/key")" >"$WORK/auth.hdr"
printf 'x-api-key: %s\n' "$(cat "$WORK/key")" >"$WORK/anthropic.hdr"

forward service svc/llmgw-gateway 18000:80
BASES=(http://127.0.0.1:18000 "${DATA[@]}")
for base in "${BASES[@]}"; do
  for i in $(seq 1 90); do
    code=$(curl -s -o /dev/null -w '%{http_code}' -H @"$WORK/auth.hdr" "$base/v1/models" || true)
    [[ $code == 200 ]] && break
    ((i < 90)) || die "$base/v1/models answers $code, not 200, to the new key after 90 s"
    sleep 1
  done
done
log "the key works through the Service and every pod"

# chat ALIAS STREAM PROMPT: a chat completion (SSE with usage when STREAM is true).
chat() {
  printf '{"model":"%s","stream":%s,%s"messages":[{"role":"user","content":"%s"}]}' \
    "$1" "$2" "$([[ $2 == true ]] && echo '"stream_options":{"include_usage":true},')" "$3"
}
# send BASE PATH HEADERFILE BODY: POST, print the status code.
send() {
  curl -s -N -o /dev/null -w '%{http_code}' --max-time 40 -H @"$3" -H 'content-type: application/json' \
    -H 'anthropic-version: 2023-06-01' -d "$4" "$1$2" || echo 000
}
# request I PHASE: the I-th request of the mix; PHASE burst sends alpha 503s.
request() {
  local i=$1 phase=$2 base=${BASES[$((RANDOM % ${#BASES[@]}))]}
  local q="Tell me about the rivers of the north, request $i."
  if [[ $phase == burst ]]; then
    case $((i % 3)) in
    0) send "$base" /v1/chat/completions "$WORK/auth.hdr" "$(chat chat-alpha false "$q\\n@mock alpha:status=503")" ;;
    1) send "$base" /v1/chat/completions "$WORK/auth.hdr" "$(chat chat-restricted false "$q\\n@mock alpha:status=503")" ;;
    2) send "$base" /v1/chat/completions "$WORK/auth.hdr" "$(chat chat-beta false "$q")" ;; # beta only: no alpha success resets the count
    esac
    return
  fi
  case $((i % 12)) in
  0) send "$base" /v1/chat/completions "$WORK/auth.hdr" "$(chat chat-alpha false "$q\\n@mock *:delay_ms=400")" ;;
  1) send "$base" /v1/chat/completions "$WORK/auth.hdr" "$(chat chat-beta true "$q\\n@mock beta:chunks=8 beta:chunk_delay_ms=150")" ;;
  2) send "$base" /v1/embeddings "$WORK/auth.hdr" '{"model":"embed-alpha","input":["rivers","lakes","seas"]}' ;;
  3) send "$base" /v1/chat/completions "$WORK/auth.hdr" "$(chat chat-beta false "$q\\n@mock beta:delay_ms=300")" ;;
  4) send "$base" /v1/chat/completions "$WORK/auth.hdr" "$(chat chat-alpha true "$q\\n@mock alpha:chunks=6 alpha:chunk_delay_ms=120")" ;;
  5) send "$base" /v1/chat/completions "$WORK/auth.hdr" "$(chat chat-alpha false "$q\\n@mock alpha:status=503")" ;;
  6) send "$base" /v1/messages "$WORK/anthropic.hdr" \
    "{\"model\":\"chat-beta\",\"max_tokens\":64,\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"$q\\n@mock beta:chunks=5 beta:chunk_delay_ms=150\"}]}" ;;
  7) send "$base" /v1/chat/completions "$WORK/auth.hdr" "$(chat chat-restricted false "$q\\n@mock alpha:status=503")" ;;
  8) send "$base" /v1/responses "$WORK/auth.hdr" "{\"model\":\"chat-alpha\",\"input\":\"$q\"}" ;;
  9) send "$base" /v1/chat/completions "$WORK/auth.hdr" "$(chat chat-restricted false "$q\\n@mock alpha:status=400")" ;;
  10) send "$base" /v1/chat/completions "$WORK/auth.hdr" "$(chat chat-beta false "$q\\n@mock beta:status=429")" ;;
  11) send "$base" /v1/chat/completions "$WORK/auth.hdr" "$(chat chat-alpha true "$q\\n@mock alpha:chunks=6 alpha:chunk_delay_ms=100 alpha:error_after=3")" ;;
  esac
}

TSTART=$(date +%s)
TEND=$((TSTART + TRAFFIC))
BURST_FROM=$((TSTART + TRAFFIC * 45 / 100)) # 20 s of alpha 503s open alpha's breakers
BURST_TO=$((BURST_FROM + 20))
log "traffic: $WORKERS clients for ${TRAFFIC}s through ${BASES[*]}; alpha 503 burst at +$((BURST_FROM - TSTART))s"
worker() {
  local w=$1 i=$1 now phase
  while now=$(date +%s) && ((now < TEND)) && [[ ! -e $WORK/stop ]]; do
    phase=mix
    ((now >= BURST_FROM && now < BURST_TO)) && phase=burst
    echo "$(request "$i" "$phase")" >>"$WORK/codes-$w"
    i=$((i + WORKERS))
    sleep "0.$((RANDOM % 3 + 1))"
  done
}
for w in $(seq 1 "$WORKERS"); do
  worker "$w" &
  PIDS+=($!)
done
sleep $((TRAFFIC / 2))
log "changing the key's rate limit: a new snapshot version for the hot-load panels"
k patch "gatewaykey/$KEY_ID" --type merge -p '{"spec":{"rateLimit":{"requestsPerMinute":99999,"burst":10000}}}' >/dev/null
while (($(date +%s) < TEND)); do sleep 5; done
for p in "${PIDS[@]: -$WORKERS}"; do wait "$p" 2>/dev/null || true; done
log "requests by status: $(cat "$WORK"/codes-* | sort | uniq -c | awk '{printf "%s×%s ", $2, $1}')"
# The picture ends one scrape after the last request started, so its stat
# panels (the last value) show the traffic, not the quiet after it.
END_AT=$((TEND + 5))
while (($(date +%s) < END_AT + 10)); do sleep 1; done

# ---- 5. render ------------------------------------------------------------------

# A picture half of one deployment and half of another shows neither.
[[ $(pods_now) == "$PODS_AT_START" ]] ||
  die "the gateway or controller pods were replaced during the run (a deploy or an e2e run?); $OUT is unchanged: run again"
busy=$(cluster_busy)
[[ -z $busy ]] || die "the cluster was in use during the run ($busy); $OUT is unchanged: run again"

END=$(date -u -d "@$END_AT" +%Y-%m-%dT%H:%M:%SZ)
RANGE=$((END_AT - START + 5))
mkdir -p "$(dirname "$OUT")"
log "rendering ${RANGE}s of charts/llmgw/dashboards/llmgw.json into $OUT"
"$DASHSHOT" -dashboard charts/llmgw/dashboards/llmgw.json -prometheus "$PROM" -out "$OUT" \
  -range "${RANGE}s" -end "$END" -scrape-interval "$SCRAPE" -width "$WIDTH" -scale "$SCALE" \
  -var "namespace=$NS" -var 'alias=.*'
