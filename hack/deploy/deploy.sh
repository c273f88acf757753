#!/usr/bin/env bash
# make deploy: the whole llmgw system (config/default) into the kind cluster.
#   1. build the image (hack/deploy/image.sh, cached by content) and the
#      quota store's (hack/kind/images/redis-image.sh, cached)
#   2. load them into the kind cluster ${KIND_CLUSTER_NAME:-llmgw}
#   3. create the generated Secrets if they do not exist yet
#   4. render config/default with the image tags from step 1 and apply it
#      (server-side apply; CRDs first, waiting until they are Established)
#   5. restart pods still running another llmgw image that are not Ready (a
#      rolling update would wait on them forever)
#   6. wait until every Deployment and StatefulSet is rolled out and Ready
# Every step prints its elapsed time. Knobs: KIND_CLUSTER_NAME, DEPLOY_TIMEOUT
# (seconds per workload, default 300), IMAGE_REPO.
#
# deploy.sh --delete: delete everything config/default installs.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DEPLOY_TIMEOUT=${DEPLOY_TIMEOUT:-300}
WORK=$REPO/bin/deploy
NS=$DEPLOY_NAMESPACE

# Secrets generated at install time, never committed: name key.
GENERATED_SECRETS=(
  "mock-beta-upstream apiKey"
  "llmgw-gateway-peer token"
)

step_t0=
begin() { step_t0=$(date +%s.%N); log "step $*"; }
done_step() { log "  done in $(since "$step_t0")${1:+ ($1)}"; }

ensure_cluster() {
  begin "cluster: kind cluster $KIND_CLUSTER_NAME reachable through $KIND_KUBECONFIG"
  ensure_kubectl
  [[ -s $KIND_KUBECONFIG ]] || die "no kubeconfig at $KIND_KUBECONFIG: run 'make kind-up' first"
  kc get nodes -o name >/dev/null 2>&1 ||
    die "cluster $KIND_CLUSTER_NAME does not answer (hack/kind/kubectl.sh get nodes): run 'make kind-up' first"
  done_step
}

# render IMAGE [REDIS_IMAGE]: config/default with the llmgw (and quota store)
# image replaced, into $WORK/rendered.yaml.
render() {
  local image=$1 redis=${2:-} overlay=$WORK/overlay
  mkdir -p "$overlay"
  cat >"$overlay/kustomization.yaml" <<YAML
# Written by hack/deploy/deploy.sh: config/default with the image make image built.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- ../../../config/default
images:
- name: llmgw
  newName: ${image%:*}
  newTag: ${image##*:}
YAML
  [[ -z $redis ]] || printf -- '- name: llmgw-redis\n  newName: %s\n  newTag: %s\n' "${redis%:*}" "${redis##*:}" >>"$overlay/kustomization.yaml"
  kc kustomize "$overlay" >"$WORK/rendered.yaml"
}

# random_hex: 32 bytes from /dev/urandom as 64 hex digits.
random_hex() { head -c 32 /dev/urandom | od -An -tx1 -v | tr -d ' \n'; }

ensure_secrets() {
  begin "secrets: generated Secrets in $NS (created only when missing, never changed)"
  local s name key tmp
  for s in "${GENERATED_SECRETS[@]}"; do
    read -r name key <<<"$s"
    if kc -n "$NS" get secret "$name" >/dev/null 2>&1; then
      kc -n "$NS" get secret "$name" -o go-template="{{if index .data \"$key\"}}ok{{end}}" | grep -q ok ||
        die "Secret $NS/$name exists without key $key: delete it and rerun to generate a new one"
      log "  Secret $name: exists, kept"
      continue
    fi
    # From a private temporary file: the value never appears on a command line.
    tmp=$(umask 077 && mktemp)
    random_hex >"$tmp"
    if ! kc -n "$NS" create secret generic "$name" --from-file="$key=$tmp" >/dev/null; then
      rm -f "$tmp"
      die "creating Secret $NS/$name failed"
    fi
    rm -f "$tmp"
    kc -n "$NS" label secret "$name" app.kubernetes.io/part-of=llmgw llmgw.dev/generated=true >/dev/null
    log "  Secret $name: created with a random $key"
  done
  ensure_quota_store_secret
  done_step
}

# ensure_quota_store_secret: Secret llmgw-quota-store, one random password
# under two keys: password (the gateways' --quota-store-password-file) and
# redis.conf ("requirepass <password>", included by the store's config).
ensure_quota_store_secret() {
  local name=llmgw-quota-store dir
  if kc -n "$NS" get secret "$name" >/dev/null 2>&1; then
    kc -n "$NS" get secret "$name" -o go-template='{{if and (index .data "password") (index .data "redis.conf")}}ok{{end}}' | grep -q ok ||
      die "Secret $NS/$name exists without keys password and redis.conf: delete it and rerun to generate a new one"
    log "  Secret $name: exists, kept"
    return
  fi
  dir=$(umask 077 && mktemp -d)
  random_hex >"$dir/password"
  { printf 'requirepass '; cat "$dir/password"; echo; } >"$dir/redis.conf"
  if ! kc -n "$NS" create secret generic "$name" --from-file="password=$dir/password" --from-file="redis.conf=$dir/redis.conf" >/dev/null; then
    rm -rf "$dir"
    die "creating Secret $NS/$name failed"
  fi
  rm -rf "$dir"
  kc -n "$NS" label secret "$name" app.kubernetes.io/part-of=llmgw llmgw.dev/generated=true >/dev/null
  log "  Secret $name: created with a random password"
}

# llmgw_workloads: "kind/name" of every Deployment and StatefulSet installed.
llmgw_workloads() {
  kc -n "$NS" get deployments,statefulsets -l app.kubernetes.io/part-of=llmgw -o name | sed 's/\.apps//'
}

restart_stale() {
  local image=$1 line pod ready images n=0
  begin "restart: pods of $NS still running another llmgw image and not Ready"
  while read -r line; do
    [[ -n $line ]] || continue
    read -r pod ready images <<<"$line"
    ready=${ready#ready=}
    # Only pods that run an image of this repository with another tag.
    [[ " $images " == *" $IMAGE_REPO:"* && " $images " != *" $image "* ]] || continue
    if [[ $ready == True ]]; then
      log "  $pod runs ${images% }: its controller rolls it"
      continue
    fi
    log "  deleting $pod (runs ${images% }, not Ready): recreated with $image"
    kc -n "$NS" delete pod "$pod" --wait=false >/dev/null
    n=$((n + 1))
  done < <(kc -n "$NS" get pods -l app.kubernetes.io/name=llmgw \
    -o go-template='{{range .items}}{{.metadata.name}} ready={{range .status.conditions}}{{if eq .type "Ready"}}{{.status}}{{end}}{{end}} {{range .spec.containers}}{{.image}} {{end}}{{"\n"}}{{end}}')
  done_step "$n deleted"
}

wait_ready() {
  local w failed=0 t
  for w in $(llmgw_workloads); do
    t=$(date +%s.%N)
    log "step wait: $w rolled out and Ready (timeout ${DEPLOY_TIMEOUT}s) ..."
    if kc -n "$NS" rollout status "$w" --timeout="${DEPLOY_TIMEOUT}s" >/dev/null; then
      log "  $w Ready in $(since "$t")"
    else
      log "  $w NOT Ready after $(since "$t")"
      failed=1
    fi
  done
  ((failed == 0)) || { deploy_diagnostics; die "some workloads did not become Ready"; }
}

deploy_diagnostics() {
  log "---- diagnostics for namespace $NS ----"
  kc -n "$NS" get pods,pvc,statefulsets,deployments -o wide >&2 2>&1 || true
  local pod
  for pod in $(kc -n "$NS" get pods -o name 2>/dev/null); do
    if ! kc -n "$NS" get "$pod" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null | grep -q True; then
      kc -n "$NS" describe "$pod" 2>&1 | tail -25 >&2 || true
      kc -n "$NS" logs "$pod" --all-containers --tail=30 >&2 2>&1 || true
      kc -n "$NS" logs "$pod" --all-containers --previous --tail=30 >&2 2>/dev/null || true
    fi
  done
  kc -n "$NS" get events --sort-by=.lastTimestamp 2>&1 | tail -25 >&2 || true
  log "---- end of diagnostics ----"
}

delete_all() {
  ensure_cluster
  mkdir -p "$WORK"
  begin "delete: everything config/default installs"
  local image
  image=$(cat "$IMAGE_TAG_FILE" 2>/dev/null || echo "$IMAGE_REPO:$(app_version)")
  render "$image"
  kc delete -f "$WORK/rendered.yaml" --ignore-not-found --wait=true --timeout=180s >&2 || true
  done_step
}

main() {
  [[ ${1:-} == --delete ]] && { delete_all; return; }
  [[ $# -eq 0 ]] || die "usage: deploy.sh [--delete]"
  mkdir -p "$WORK"
  log "deploying llmgw into kind cluster $KIND_CLUSTER_NAME, namespace $NS"

  begin "image: make image"
  local image
  image=$("$DEPLOY_DIR/image.sh")
  done_step "$image"

  ensure_cluster

  begin "quota store image: hack/kind/images/redis-image.sh"
  local redis_image
  redis_image=$("$REPO/hack/kind/images/redis-image.sh")
  done_step "$redis_image"

  begin "load: go tool kind load docker-image --name $KIND_CLUSTER_NAME $image $redis_image"
  kind_cmd load docker-image --name "$KIND_CLUSTER_NAME" "$image" "$redis_image" >&2
  done_step

  begin "render: kubectl kustomize config/default with images $image, $redis_image"
  render "$image" "$redis_image"
  done_step "$(grep -c '^kind:' "$WORK/rendered.yaml") objects -> bin/deploy/rendered.yaml"

  begin "namespace: $NS"
  kc apply --server-side --field-manager=llmgw-deploy -f "$REPO/config/default/namespace.yaml" >&2
  done_step

  ensure_secrets

  begin "apply: CRDs (server-side), then wait until Established"
  kc apply --server-side --force-conflicts --field-manager=llmgw-deploy -f "$REPO/config/crd/bases" >&2
  kc wait --for=condition=Established --timeout=60s -f "$REPO/config/crd/bases" >/dev/null
  done_step

  begin "apply: everything else (server-side)"
  kc apply --server-side --force-conflicts --field-manager=llmgw-deploy -f "$WORK/rendered.yaml" >&2
  done_step

  restart_stale "$image"
  wait_ready
  kc -n "$NS" get pods -o wide >&2
  log "llmgw is deployed: $image (client Service llmgw-gateway.$NS:80)"
}

main "$@"
