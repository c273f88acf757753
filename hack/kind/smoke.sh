#!/usr/bin/env bash
# make kind-smoke: checks the running kind cluster end to end:
#  1. kind load docker-image of a FROM scratch image (a tiny static Go program)
#  2. a pod from that image runs and is Ready
#  3. a Service name resolves from a pod (short and full name) and answers
#  4. a PVC binds and keeps its data across a pod restart
#  5. kubectl port-forward reaches the pod from loopback
# Runs in namespace llmgw-smoke, removed at the end.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
export DOCKER_BUILDKIT=0
T0=$(now)
NS=llmgw-smoke
SMOKE_DIR=$KIND_DIR/smoke
passed=0 failed=0
ensure_kubectl
cluster_exists || die "cluster $KIND_CLUSTER_NAME does not exist: run make kind-up first"
kind_cmd export kubeconfig --name "$KIND_CLUSTER_NAME" --kubeconfig "$KIND_KUBECONFIG" >/dev/null 2>&1

pass() { passed=$((passed + 1)); log "PASS $1 ($(since "$2"))"; }
fail() {
  failed=$((failed + 1))
  log "FAIL $1"
  kc -n "$NS" get pods,pvc,svc -o wide >&2 2>&1 || true
  kc -n "$NS" get events --sort-by=.lastTimestamp 2>&1 | tail -15 >&2 || true
}
apply() { sed -e "s#__IMAGE__#$IMAGE#g" -e "s#__TOKEN__#${TOKEN:-}#g" "$SMOKE_DIR/$1" | kc apply -f - >/dev/null; }
# pod_done POD SECONDS: waits until the pod Succeeded (0) or Failed (1).
pod_done() {
  local deadline=$((SECONDS + $2)) phase
  while ((SECONDS < deadline)); do
    phase=$(kc -n "$NS" get pod "$1" -o jsonpath='{.status.phase}' 2>/dev/null || true)
    [[ $phase == Succeeded ]] && return 0
    [[ $phase == Failed ]] && return 1
    sleep 2
  done
  return 1
}

if kc get ns "$NS" >/dev/null 2>&1; then
  log "deleting namespace $NS left from an earlier run"
  kc delete ns "$NS" --wait=true --timeout=120s >/dev/null
fi
kc create ns "$NS" >/dev/null

# 1. kind load docker-image (FROM scratch, static Go binary)
t=$(now)
IMAGE=llmgw-kind/smoke:$(key "$SMOKE_DIR/main.go" "$SMOKE_DIR/Dockerfile")
SMOKE_BIN=$KIND_CACHE/smoke/${IMAGE##*:}/smoke
if [[ ! -x $SMOKE_BIN ]]; then
  mkdir -p "$(dirname "$SMOKE_BIN")"
  (cd "$REPO" && CGO_ENABLED=0 $GO build -trimpath -o "$SMOKE_BIN" ./hack/kind/smoke)
fi
if ! docker_has "$IMAGE"; then
  cp "$SMOKE_DIR/Dockerfile" "$(dirname "$SMOKE_BIN")/Dockerfile"
  dbuild -t "$IMAGE" "$(dirname "$SMOKE_BIN")"
fi
if kind_cmd load docker-image "$IMAGE" --name "$KIND_CLUSTER_NAME" >&2 &&
  docker exec "$NODE_CONTAINER" crictl inspecti "docker.io/$IMAGE" >/dev/null 2>&1; then
  pass "kind load docker-image $IMAGE (FROM scratch) is in the node" "$t"
else
  fail "kind load docker-image $IMAGE"
fi

# 2. a pod runs
t=$(now)
apply web.yaml
if kc -n "$NS" wait --for=condition=Ready pod/smoke-web --timeout=120s >/dev/null; then
  pass "pod smoke-web from the loaded image is Running and Ready" "$t"
else
  fail "pod smoke-web did not become Ready"
fi

# 3. a Service name resolves from a pod (CoreDNS) and answers (kube-proxy)
t=$(now)
apply dns.yaml
if pod_done smoke-dns 150 &&
  kc -n "$NS" logs smoke-dns -c probe | grep -q 'llmgw-smoke ok' &&
  kc -n "$NS" logs smoke-dns -c probe-fqdn | grep -q 'llmgw-smoke ok'; then
  pass "Service smoke-web resolves from a pod (smoke-web, smoke-web.$NS.svc.cluster.local) and answers" "$t"
else
  kc -n "$NS" logs smoke-dns --all-containers >&2 2>&1 || true
  fail "Service name smoke-web did not resolve/answer from a pod"
fi

# 4. a PVC binds and keeps data across a pod restart
t=$(now)
TOKEN=token-$RANDOM-$RANDOM
apply pvc.yaml
if pod_done smoke-writer 150 &&
  [[ $(kc -n "$NS" get pvc smoke-data -o jsonpath='{.status.phase}') == Bound ]] &&
  kc -n "$NS" delete pod smoke-writer --wait=true >/dev/null &&
  apply pvc-reader.yaml && pod_done smoke-reader 120 &&
  [[ $(kc -n "$NS" logs smoke-reader) == "$TOKEN" ]]; then
  pass "PVC smoke-data Bound (local-path) and kept its data across a pod restart" "$t"
else
  kc -n "$NS" logs smoke-reader >&2 2>&1 || true
  fail "PVC did not bind or lost its data"
fi

# 5. kubectl port-forward from loopback
t=$(now)
PF_LOG=$(mktemp)
kc -n "$NS" port-forward --address 127.0.0.1 pod/smoke-web :8080 >"$PF_LOG" 2>&1 &
PF_PID=$!
port=""
for _ in $(seq 1 30); do
  port=$(sed -n 's/^Forwarding from 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$PF_LOG" | head -1)
  [[ -n $port ]] && break
  kill -0 "$PF_PID" 2>/dev/null || break
  sleep 1
done
if [[ -n $port ]] && "$SMOKE_BIN" probe "http://127.0.0.1:$port/" 5 | grep -q 'llmgw-smoke ok smoke-web'; then
  pass "kubectl port-forward reaches pod smoke-web from 127.0.0.1:$port" "$t"
else
  cat "$PF_LOG" >&2
  fail "kubectl port-forward did not reach the pod"
fi
kill "$PF_PID" 2>/dev/null || true
wait "$PF_PID" 2>/dev/null || true
rm -f "$PF_LOG"

kc delete ns "$NS" --wait=false >/dev/null 2>&1 || true
log "kind-smoke finished in $(since "$T0")"
echo "kind-smoke: $passed passed, $failed failed"
((failed == 0))
