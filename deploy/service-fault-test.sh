#!/usr/bin/env bash
# Fault test of the coordination service (`ringleader serve`, Raft) in Docker, judged by
# `ringleader verify --history`, bounded in time.
#
#   RINGLEADER_BIN=target/debug/ringleader deploy/service-fault-test.sh   # no build (CI)
#   LOAD_SECONDS=60 CLIENTS=6 deploy/service-fault-test.sh                 # a longer run
#   LOAD_SECONDS=600 deploy/service-fault-test.sh     # the long run: the faults repeat until the end
#
# ETCD_NEMESIS_BIN (default: built here, as the binary) is the etcd-client program
# (crates/cli/examples/etcd_nemesis.rs); ETCD_CLIENTS of them (default 2, 0: none) run beside
# the HTTP clients.
#
# 1. builds a FROM-scratch image of the glibc binary and the exact libraries it links
#    (deploy/Dockerfile.rootfs; nothing is pulled);
# 2. starts three service nodes (deploy/service-compose.yml), each with its Raft log on a
#    data-dir volume, APIs published on 127.0.0.1:18201..18203. The nodes prove a fresh cluster
#    secret to each other, and their APIs (bound on the containers' 0.0.0.0) ask every client
#    for a fresh bearer token;
# 3. on the host, starts `ringleader fenced-resource` (a resource that rejects writes with a
#    fencing token below the highest it accepted for that lock) and `ringleader service-load`
#    (CLIENTS clients taking and releasing LOCKS with TTL leases, failing over between the
#    three endpoints, writing through each fencing token to the resource, recording every
#    operation -- unknown outcomes as such -- in a JSON-lines history), plus one stale writer:
#    a client that takes a lock, pauses past its lease without renewing it and then writes
#    through its old token, which the resource must refuse once a later holder wrote; and beside
#    them ETCD_CLIENTS etcd-client clients (`etcd_nemesis`) on the same locks through the nodes'
#    etcd gRPC APIs (published on 127.0.0.1:18211..18213; they authenticate as root with the
#    API token), failing over between them, writing through each Lock answer's header revision
#    to the same resource and recording the same history format;
# 4. while the clients run: kills the Raft leader's container (`docker kill`, SIGKILL), waits for
#    the other two to elect a new leader, starts it again (it recovers from its log) and waits
#    until it follows; `docker pause`s a follower, then unpauses it; disconnects the leader from
#    the network (`docker network disconnect`: both directions, and its published API goes
#    too) and reconnects it; then, where the host has nsenter and iptables, a one-way
#    partition: the host's iptables run inside one node's network namespace drops what that node
#    receives from its peers' addresses on the connections they opened, while what it sends
#    still goes out, measured by packet counters in both directions (nothing is installed in the
#    image). Without them the one-way partition is skipped and the log says so; then leader
#    churn (the leader killed and started again three times in a row, each time as soon as a
#    new leader is elected) and a restart of the whole cluster from its durable state (all
#    three killed with SIGKILL, then started again). The schedule repeats while the clients
#    run (once in CI's 40 s; a long run gets many rounds);
# 5. when the clients are done: `ringleader verify --history` on both kinds of client's history
#    together (undecided fails: nothing was proved), then `fenced-resource --check` on the
#    resource's log judged against that history (accepted tokens never went backwards, one writer
#    per token, every accepted write carries a token the history granted its writer and was not
#    accepted after the lock provably moved on). Exit status: 0 when both pass, 2 when either
#    found an anomaly (or the history is undecided), 1 when the workload failed.
# Every wait is bounded; everything started is removed on exit, whatever happens (trap).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PROJECT=${PROJECT:-rlsvc$$}
IMAGE=${IMAGE:-ringleader:svcfault$$}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ringleader-svcfault.XXXXXX")
DATA_DIR=$WORK/data
LOAD_SECONDS=${LOAD_SECONDS:-40}
CLIENTS=${CLIENTS:-4}
LOCKS=${LOCKS:-orders,stock}
RESOURCE_PORT=${RESOURCE_PORT:-18300}
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
ETCD_CLIENTS=${ETCD_CLIENTS:-2}
SECRET_FILE=$WORK/cluster.secret
API_TOKEN_FILE=$WORK/api.token
export PROJECT IMAGE DATA_DIR SECRET_FILE API_TOKEN_FILE
COMPOSE=(docker-compose -p "$PROJECT" -f "$ROOT/deploy/service-compose.yml")
NET="${PROJECT}_raft"
PARTITIONED_PID=""
PEER_PIDS=()

log() { printf '[service-fault %s] %s\n' "$(date +%T)" "$*"; }

cleanup() {
  local rc=$?
  log "cleaning up"
  if [[ -n $PARTITIONED_PID ]]; then
    nsenter -t "$PARTITIONED_PID" -n iptables -F INPUT >/dev/null 2>&1 || true
  fi
  for pid in "${PEER_PIDS[@]}"; do nsenter -t "$pid" -n iptables -F INPUT >/dev/null 2>&1 || true; done
  jobs -p | xargs -r kill 2>/dev/null || true
  for i in 1 2 3; do docker unpause "$PROJECT-node$i" >/dev/null 2>&1 || true; done
  timeout 60 "${COMPOSE[@]}" down -v --remove-orphans >/dev/null 2>&1 || true
  docker rmi "$IMAGE" >/dev/null 2>&1 || true
  rm -rf "$WORK"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The cluster secret the nodes prove to each other (32 random bytes, hex, mode 0600), and the
# bearer token of their APIs.
(umask 077 && od -An -N32 -tx1 /dev/urandom | tr -d ' \n' >"$SECRET_FILE")
(umask 077 && od -An -N24 -tx1 /dev/urandom | tr -d ' \n' >"$API_TOKEN_FILE")

api() { echo $((18200 + $1)); }
grpc() { echo $((18210 + $1)); }
status() { curl -s -m 2 -H "Authorization: Bearer $(cat "$API_TOKEN_FILE")" "http://127.0.0.1:$(api "$1")/status" || true; }
field() { grep -o "\"$2\":[^,}]*" <<<"$1" | head -1 | cut -d: -f2; }

# wait_for SECONDS DESCRIPTION COMMAND...: polls COMMAND every 0.2 s until it succeeds.
wait_for() {
  local limit=$1 what=$2; shift 2
  local end=$((SECONDS + limit))
  until "$@"; do
    if ((SECONDS >= end)); then log "TIMEOUT after ${limit}s waiting for: $what"; return 1; fi
    sleep 0.2
  done
}

# agreed NODE...: every NODE answers and names the same leader, itself one of NODE; prints it.
agreed() {
  local i l want=""
  for i in "$@"; do
    l=$(field "$(status "$i")" leader)
    [[ $l =~ ^[0-9]+$ ]] || return 1
    [[ -z $want || $l == "$want" ]] || return 1
    want=$l
  done
  [[ " $* " == *" $want "* ]] || return 1
  echo "$want" >"$WORK/leader"
}
leader() { cat "$WORK/leader"; }
others() { local i; for i in 1 2 3; do [[ $i == "$1" ]] || echo "$i"; done; }

mkdir -p "$WORK/ctx"
for i in 1 2 3; do mkdir -p "$DATA_DIR/node-$i"; done
if [[ -n ${RINGLEADER_BIN:-} ]]; then
  BIN=$(cd "$(dirname "$RINGLEADER_BIN")" && pwd)/$(basename "$RINGLEADER_BIN")
else
  log "building the binary (release)"
  (cd "$ROOT" && CARGO_TARGET_DIR=$TARGET_DIR timeout 1800 cargo build -q --release -p ringleader)
  BIN=$TARGET_DIR/release/ringleader
fi
if ((ETCD_CLIENTS > 0)); then
  if [[ -n ${ETCD_NEMESIS_BIN:-} ]]; then
    NEMESIS=$ETCD_NEMESIS_BIN
  else
    log "building the etcd-client nemesis client (release; its build runs protoc)"
    (cd "$ROOT" && CARGO_TARGET_DIR=$TARGET_DIR timeout 1800 cargo build -q --release -p ringleader --example etcd_nemesis)
    NEMESIS=$TARGET_DIR/release/examples/etcd_nemesis
  fi
fi
log "image $IMAGE: the glibc binary and its libraries as a root file system (FROM scratch)"
cp "$BIN" "$WORK/ctx/ringleader"
for lib in $(ldd "$BIN" | grep -o '/[^ ]*'); do
  mkdir -p "$WORK/ctx$(dirname "$lib")"
  cp -L "$lib" "$WORK/ctx$lib"
done
timeout 300 docker build -q -t "$IMAGE" -f "$ROOT/deploy/Dockerfile.rootfs" "$WORK/ctx" >/dev/null

log "starting three service nodes"
timeout 120 "${COMPOSE[@]}" up -d node1 node2 node3 >/dev/null 2>&1
wait_for 60 "the three nodes agree on a leader" agreed 1 2 3
log "cluster up; leader node$(leader)"

"$BIN" fenced-resource --listen "127.0.0.1:$RESOURCE_PORT" --log "$WORK/writes.jsonl" 2>"$WORK/resource.err" &
RESOURCE=$!
wait_for 10 "the fenced resource" curl -s -m 1 -o /dev/null "http://127.0.0.1:$RESOURCE_PORT/stats"

ENDPOINTS=$(for i in 1 2 3; do printf 'http://127.0.0.1:%s,' "$(api "$i")"; done)
log "service-load: $CLIENTS clients on locks $LOCKS for ${LOAD_SECONDS}s"
"$BIN" service-load --endpoints "${ENDPOINTS%,}" --clients "$CLIENTS" --locks "$LOCKS" \
  --duration "${LOAD_SECONDS}s" --ttl 3s --acquire-timeout 2s --request-timeout 2s --settle 30s \
  --resource "http://127.0.0.1:$RESOURCE_PORT" --stale-writers 1 --history "$WORK/history.jsonl" \
  --api-token-file "$API_TOKEN_FILE" \
  >"$WORK/load.out" 2>&1 &
LOAD=$!
ETCD_LOAD=""
if ((ETCD_CLIENTS > 0)); then
  GRPC_ENDPOINTS=$(for i in 1 2 3; do printf 'http://127.0.0.1:%s,' "$(grpc "$i")"; done)
  log "etcd_nemesis: $ETCD_CLIENTS etcd-client clients on locks $LOCKS through the gRPC APIs"
  "$NEMESIS" --endpoints "${GRPC_ENDPOINTS%,}" --clients "$ETCD_CLIENTS" --locks "$LOCKS" \
    --seconds "$LOAD_SECONDS" --ttl 3 --acquire-timeout-ms 2000 --request-timeout-ms 2000 --settle 30 \
    --resource "http://127.0.0.1:$RESOURCE_PORT" --history "$WORK/etcd-history.jsonl" \
    --password-file "$API_TOKEN_FILE" >"$WORK/etcd-load.out" 2>&1 &
  ETCD_LOAD=$!
fi
sleep 3

running() { kill -0 "$LOAD" 2>/dev/null || { [[ -n $ETCD_LOAD ]] && kill -0 "$ETCD_LOAD" 2>/dev/null; }; }

round=0
while ((round == 0)) || running; do
round=$((round + 1))
log "fault round $round"

L=$(leader)
log "docker kill (SIGKILL) the leader node$L while the clients run"
docker kill "$PROJECT-node$L" >/dev/null
mapfile -t LIVE < <(others "$L")
wait_for 30 "the survivors elect a new leader" agreed "${LIVE[@]}"
log "new leader node$(leader); starting node$L again (it recovers from $DATA_DIR/node-$L)"
sleep 2
docker start "$PROJECT-node$L" >/dev/null
wait_for 30 "node$L back, following the same leader" agreed 1 2 3
log "node$L rejoined; leader node$(leader)"
sleep 2

mapfile -t FOLLOWERS < <(others "$(leader)")
F=${FOLLOWERS[0]}
log "docker pause follower node$F"
docker pause "$PROJECT-node$F" >/dev/null
sleep 4
docker unpause "$PROJECT-node$F" >/dev/null
wait_for 30 "node$F caught up" agreed 1 2 3
log "node$F unpaused"
sleep 2

L=$(leader)
log "disconnecting the leader node$L from $NET (both directions)"
docker network disconnect "$NET" "$PROJECT-node$L"
mapfile -t LIVE < <(others "$L")
wait_for 30 "the other two elect a new leader" agreed "${LIVE[@]}" || true
sleep 3
docker network connect --alias "node$L" "$NET" "$PROJECT-node$L"
wait_for 30 "node$L reconnected, following the same leader" agreed 1 2 3
log "node$L reconnected; leader node$(leader)"
sleep 2

L=$(leader)
if command -v nsenter >/dev/null && command -v iptables >/dev/null; then
  # One-way by address and connection direction, not by port: each node sends on the
  # connections it dials and reads on the ones its peers dial (crates/net/src/transport.rs), so
  # dropping, in node L's namespace, what comes from the peers' addresses on connections the
  # peers opened (conntrack's ORIGINAL direction) stops every message to L, while L's own
  # connections keep their acknowledgements (REPLY direction) and L's messages still arrive.
  # Counting rules measure it: packets dropped on their way to L, and packets the peers
  # received on L's connections.
  PARTITIONED_PID=$(docker inspect -f '{{.State.Pid}}' "$PROJECT-node$L")
  mapfile -t PEERS < <(others "$L")
  ip_of() { docker inspect -f "{{(index .NetworkSettings.Networks \"$NET\").IPAddress}}" "$PROJECT-node$1"; }
  PEER_IPS=$(for i in "${PEERS[@]}"; do ip_of "$i"; done | paste -sd,)
  L_IP=$(ip_of "$L")
  PEER_PIDS=()
  for i in "${PEERS[@]}"; do PEER_PIDS+=("$(docker inspect -f '{{.State.Pid}}' "$PROJECT-node$i")"); done
  log "one-way partition: node$L ($L_IP) receives nothing from its peers ($PEER_IPS); its own messages still go out"
  if nsenter -t "$PARTITIONED_PID" -n iptables -A INPUT -p tcp -s "$PEER_IPS" -m conntrack --ctdir ORIGINAL -j DROP; then
    for pid in "${PEER_PIDS[@]}"; do
      nsenter -t "$pid" -n iptables -I INPUT 1 -p tcp -s "$L_IP" -m conntrack --ctdir ORIGINAL -j ACCEPT || true
    done
    sleep 5
    dropped=$(nsenter -t "$PARTITIONED_PID" -n iptables -L INPUT -v -x -n | awk '$3 == "DROP" {s += $1} END {print s + 0}')
    arrived=0
    for pid in "${PEER_PIDS[@]}"; do
      n=$(nsenter -t "$pid" -n iptables -L INPUT -v -x -n | awk -v ip="$L_IP" '$3 == "ACCEPT" && $8 == ip {s += $1} END {print s + 0}')
      arrived=$((arrived + n))
      nsenter -t "$pid" -n iptables -F INPUT || true
    done
    nsenter -t "$PARTITIONED_PID" -n iptables -F INPUT
    PARTITIONED_PID=""
    log "one-way partition measured: $dropped packets to node$L dropped, $arrived packets from node$L received by its peers"
    if ((dropped == 0 || arrived == 0)); then
      log "FAIL: the partition was not one-way (both counts must be above 0)"
      exit 1
    fi
    wait_for 30 "node$L healed, the three agree on a leader" agreed 1 2 3
    log "one-way partition healed; leader node$(leader)"
  else
    log "one-way partition NOT done: iptables (with conntrack) in node$L's network namespace failed"
    PARTITIONED_PID=""
  fi
else
  log "one-way partition NOT done: the host has no nsenter or iptables (the image has neither)"
fi

log "leader churn: kill the leader and start it again, three times in a row"
for _ in 1 2 3; do
  L=$(leader)
  docker kill "$PROJECT-node$L" >/dev/null
  mapfile -t LIVE < <(others "$L")
  wait_for 30 "the survivors elect a new leader" agreed "${LIVE[@]}"
  docker start "$PROJECT-node$L" >/dev/null
  log "churn: killed node$L, new leader node$(leader), node$L started again"
done
wait_for 30 "the churned nodes rejoin" agreed 1 2 3

log "restart of the whole cluster from its durable state: all three killed (SIGKILL), started again"
docker kill "$PROJECT-node1" "$PROJECT-node2" "$PROJECT-node3" >/dev/null
sleep 1
docker start "$PROJECT-node1" "$PROJECT-node2" "$PROJECT-node3" >/dev/null
wait_for 60 "the restarted cluster agrees on a leader" agreed 1 2 3
log "cluster restarted; leader node$(leader)"
sleep 2
done

log "waiting for the clients (bounded)"
wait_for $((LOAD_SECONDS + 90)) "service-load to finish" bash -c "! kill -0 $LOAD 2>/dev/null"
set +e
wait "$LOAD"
load_rc=$?
set -e
cat "$WORK/load.out"
etcd_rc=0
if [[ -n $ETCD_LOAD ]]; then
  wait_for 90 "etcd_nemesis to finish" bash -c "! kill -0 $ETCD_LOAD 2>/dev/null"
  set +e
  wait "$ETCD_LOAD"
  etcd_rc=$?
  set -e
  cat "$WORK/etcd-load.out"
  cat "$WORK/etcd-history.jsonl" >>"$WORK/history.jsonl"
fi
kill "$RESOURCE" 2>/dev/null || true
wait "$RESOURCE" 2>/dev/null || true

set +e
log "ringleader verify --history (the HTTP and etcd clients' history, together)"
"$BIN" verify --history "$WORK/history.jsonl"
rc=$?
log "verify exit status $rc"
log "ringleader fenced-resource --check, against the clients' history"
"$BIN" fenced-resource --check "$WORK/writes.jsonl" --history "$WORK/history.jsonl"
check_rc=$?
set -e
log "fenced-resource --check exit status $check_rc"
if ((rc == 0 && check_rc != 0)); then log "FAIL: the fenced resource's log has an anomaly"; rc=$check_rc; fi
if ((rc == 0 && load_rc != 0)); then log "FAIL: service-load exited $load_rc"; rc=1; fi
if ((rc == 0 && etcd_rc != 0)); then log "FAIL: etcd_nemesis exited $etcd_rc"; rc=1; fi
exit $rc
