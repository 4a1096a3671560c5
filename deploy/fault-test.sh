#!/usr/bin/env bash
# Fault test of a five-node Docker cluster (deploy/docker-compose.yml), bounded in time.
#
#   deploy/fault-test.sh            # ALGO=central by default; ALGO=ricart-agrawala, bully …
#   IMAGE_LIBC=glibc deploy/fault-test.sh   # image of the glibc binary + its libraries, no musl
#   IMAGE_LIBC=glibc RINGLEADER_BIN=target/debug/ringleader deploy/fault-test.sh   # no build (CI)
#
# 1. builds the static (musl) binary and a FROM-scratch image of it;
# 2. starts five nodes on a Docker-internal bridge network (APIs on 127.0.0.1:18101..18105);
# 3. while clients on nodes 2, 3 and 4 take and release locks (mutex algorithms, with lock
#    handles and 5 s leases): `docker pause`s node 3 (it may hold the lock: everybody waits for
#    it, nobody overlaps), disconnects node 5 from the network and reconnects it, and
#    4. kills the leader's container (the elected leader, or the coordinator, id 1, for
#    coordinator-based mutual exclusion) while the clients still run; for elections, waits
#    until the live nodes agree on a new one; for mutual exclusion, starts the killed
#    coordinator again while the clients still run: it recovers from its data directory
#    (every node keeps its stable storage in $WORK/data/node-i) and serves again;
# 5. stops the cluster, collects the traces and runs `ringleader verify` on them (with
#    `--down LEADER` for an election leader killed for good); for mutual exclusion also checks
#    that no fencing token was handed out twice, across the restart; prints the report and
#    exits with verify's status (0: no violation, 2: violation).
#
# FAULT=holder (mutual exclusion only) shows instead the known failure of the algorithm when the
# node holding the lock fails, declared beforehand and required to be found, as the simulator's
# scenarios declare theirs (scenarios/*.toml, [expect]): node 3 takes the lock and holds it
# while clients on nodes 2 and 4 ask for it; then node 3 is killed for good (`central`,
# `ricart-agrawala` and the other permission algorithms: nobody enters again, `liveness` and
# `no_starvation`) or paused for 4 s (`central-timeout`: the coordinator times the silent holder
# out and grants while it still holds, `safety`; `token-ring`: the token is regenerated while
# its holder still holds it, `safety`, and when two nodes regenerate it, `fencing` may follow).
# Exit 0 when verify finds every declared violation and nothing undeclared, 1 when a declared
# one is missing (the failure was not shown), 2 when an undeclared one is found. EXPECT="p1 p2"
# overrides the declaration (MAY="p3" what may come with it), HOW=kill|pause the fault.
# Everything it started is removed on exit, whatever happens (trap).
set -euo pipefail

ALGO=${ALGO:-central}
FAULT=${FAULT:-standard}
[[ $FAULT == standard || $FAULT == holder ]] || { echo "FAULT=$FAULT: give standard (default) or holder" >&2; exit 1; }
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PROJECT=${PROJECT:-rlfault$$}
IMAGE=${IMAGE:-ringleader:fault}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ringleader-fault.XXXXXX")
TRACE_DIR=$WORK/traces
DATA_DIR=$WORK/data
CLIENT_SECONDS=${CLIENT_SECONDS:-16}
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
BIN=$TARGET_DIR/x86_64-unknown-linux-musl/release/ringleader
SECRET_FILE=$WORK/cluster.secret
API_TOKEN_FILE=$WORK/api.token
export ALGO PROJECT IMAGE TRACE_DIR DATA_DIR SECRET_FILE API_TOKEN_FILE
COMPOSE=(docker-compose -p "$PROJECT" -f "$ROOT/deploy/docker-compose.yml")

log() { printf '[fault-test %s] %s\n' "$(date +%T)" "$*"; }

cleanup() {
  local rc=$?
  log "cleaning up"
  jobs -p | xargs -r kill 2>/dev/null || true
  timeout 60 "${COMPOSE[@]}" down -v --remove-orphans >/dev/null 2>&1 || true
  docker rmi "$IMAGE" >/dev/null 2>&1 || true
  rm -rf "$WORK"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

api() { echo $((18100 + $1)); }
# curl with the API's bearer token.
acurl() { curl -H "Authorization: Bearer $(cat "$API_TOKEN_FILE")" -H "X-Ringleader: 1" "$@"; }
status() { acurl -s -m 2 "http://127.0.0.1:$(api "$1")/status" || true; }
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

log "building the static binary (x86_64-unknown-linux-musl)"
mkdir -p "$WORK/ctx" "$TRACE_DIR"
for i in 1 2 3 4 5; do mkdir -p "$DATA_DIR/node-$i"; done
# The cluster secret the nodes prove to each other (32 random bytes, hex, mode 0600).
(umask 077 && od -An -N32 -tx1 /dev/urandom | tr -d ' \n' >"$SECRET_FILE")
# The bearer token of the nodes' HTTP APIs (they listen on the containers' 0.0.0.0).
(umask 077 && od -An -N24 -tx1 /dev/urandom | tr -d ' \n' >"$API_TOKEN_FILE")
if [[ -z ${RINGLEADER_BIN:-} && ${IMAGE_LIBC:-auto} != glibc ]] && { rustup target list --installed 2>/dev/null | grep -q x86_64-unknown-linux-musl ||
  timeout 300 rustup target add x86_64-unknown-linux-musl >/dev/null 2>&1; }; then
  (cd "$ROOT" && CARGO_TARGET_DIR=$TARGET_DIR timeout 1800 cargo build -q --release --target x86_64-unknown-linux-musl -p ringleader)
  cp "$BIN" "$WORK/ctx/ringleader"
  DOCKERFILE=$ROOT/deploy/Dockerfile
else
  # No musl target on this machine (it cannot always be downloaded): ship the glibc binary with
  # exactly the shared libraries it links, laid out as a root file system.
  log "image of the glibc binary and its libraries, laid out as a root file system"
  if [[ -n ${RINGLEADER_BIN:-} ]]; then
    BIN=$RINGLEADER_BIN # an already built binary (CI passes the one the test suite built)
  else
    (cd "$ROOT" && CARGO_TARGET_DIR=$TARGET_DIR timeout 1800 cargo build -q --release -p ringleader)
    BIN=$TARGET_DIR/release/ringleader
  fi
  cp "$BIN" "$WORK/ctx/ringleader"
  for lib in $(ldd "$BIN" | grep -o '/[^ ]*'); do
    mkdir -p "$WORK/ctx$(dirname "$lib")"
    cp -L "$lib" "$WORK/ctx$lib"
  done
  DOCKERFILE=$ROOT/deploy/Dockerfile.rootfs
fi
log "building image $IMAGE (FROM scratch)"
timeout 300 docker build -q -t "$IMAGE" -f "$DOCKERFILE" "$WORK/ctx" >/dev/null

FAMILY=$("$BIN" list | awk -v a="$ALGO" '$1 == a { print $2 }')
[[ -n $FAMILY ]] || { log "unknown algorithm $ALGO"; exit 1; }
log "starting five $ALGO nodes ($FAMILY)"
timeout 120 "${COMPOSE[@]}" up -d >/dev/null 2>&1

all_connected() {
  local i s
  for i in 1 2 3 4 5; do
    s=$(status "$i")
    [[ -n $s ]] && ! grep -q '"connected":false' <<<"$s" || return 1
  done
}
wait_for 60 "all five nodes up and connected" all_connected
log "cluster up"

# client PORT SECONDS: lock/unlock cycles until the time is up; prints its tally and appends
# "NANOSECONDS FENCING" for every grant to $WORK/grants-PORT.txt. A refusal that names a gone
# peer (503) ends a cycle at once; the client waits 0.2 s before the next.
client() {
  local port=$1 end=$((SECONDS + $2)) ok=0 gone=0 failed=0 out
  while ((SECONDS < end)); do
    out=$(acurl -s -m 5 -X POST "http://127.0.0.1:$port/lock?timeout=3s&ttl=5s" || true)
    if [[ $out == *handle* ]]; then
      ok=$((ok + 1))
      echo "$(date +%s%N) $(grep -o '"fencing":[0-9]*' <<<"$out" | cut -d: -f2)" >>"$WORK/grants-$port.txt"
      handle=$(grep -o '"handle":"[0-9a-f]*"' <<<"$out" | cut -d'"' -f4)
      acurl -s -m 10 -X DELETE "http://127.0.0.1:$port/lock/$handle" >/dev/null || true
    elif [[ $out == *'"peer":'* ]]; then
      gone=$((gone + 1))
      sleep 0.2
    else
      failed=$((failed + 1))
    fi
  done
  echo "client on 127.0.0.1:$port: $ok locks taken and released, $gone refused naming a gone peer, $failed failed or timed out"
}

# holder_fault: FAULT=holder (see the top of this file); exits.
holder_fault() {
  local how expect may="" handle
  [[ $FAMILY == mutex ]] || { log "FAULT=holder needs a mutual-exclusion algorithm; $ALGO is $FAMILY"; exit 1; }
  case $ALGO in
    central-timeout) how=pause expect="safety" ;;
    token-ring) how=pause expect="safety" may="fencing" ;;
    *) how=kill expect="liveness no_starvation" ;;
  esac
  how=${HOW:-$how}
  expect=${EXPECT:-$expect}
  may=${MAY:-$may}
  [[ $how == kill || $how == pause ]] || { log "HOW=$how: give kill or pause"; exit 1; }
  log "declared: $how the holder's node, node3; verify must find: $expect${may:+ (and may find: $may)}"
  handle=$(acurl -s -m 15 -X POST "http://127.0.0.1:$(api 3)/lock?timeout=10s&ttl=60s" | grep -o '"handle":"[0-9a-f]*"' | cut -d'"' -f4 || true)
  [[ -n $handle ]] || { log "node3 could not take the lock"; exit 1; }
  log "node3 holds the lock (handle $handle); clients on nodes 2 and 4 ask for it"
  for i in 2 4; do client "$(api "$i")" "$CLIENT_SECONDS" >"$WORK/client-$i.txt" & done
  sleep 2
  local down=()
  if [[ $how == kill ]]; then
    log "kill -9 node3 while it holds the lock (not restarted)"
    docker kill "$PROJECT-node3" >/dev/null
    down=(--down 3)
  else
    log "docker pause node3 for 4 s while it holds the lock (slow, not dead)"
    docker pause "$PROJECT-node3" >/dev/null
    sleep 4
    docker unpause "$PROJECT-node3" >/dev/null
    acurl -s -m 10 -X DELETE "http://127.0.0.1:$(api 3)/lock/$handle" >/dev/null || true
  fi
  wait
  for f in "$WORK"/client-*.txt; do [[ -e $f ]] && cat "$f"; done
  log "stopping the cluster"
  timeout 60 "${COMPOSE[@]}" stop -t 5 >/dev/null 2>&1
  set +e
  local report
  report=$("$BIN" verify "${down[@]}" "$TRACE_DIR"/node-*.jsonl)
  set -e
  echo "$report"
  # The report's violation lines: "  PROPERTY at T ms: ...".
  local found
  found=$(grep -oE '^  [a-z_]+ at [0-9.]+ ms' <<<"$report" | awk '{ print $1 }' | sort -u | tr '\n' ' ')
  found=${found% }
  local want
  want=$(tr ' ' '\n' <<<"$expect" | sort | tr '\n' ' ')
  want=${want% }
  log "violations found: ${found:-none}; declared: $want${may:+ (may: $may)}"
  for p in $want; do
    [[ " $found " == *" $p "* ]] || { log "FAIL: the declared violation $p was not found"; exit 1; }
  done
  for p in $found; do
    [[ " $want $may " == *" $p "* ]] || { log "a violation that was not declared was found: $p"; exit 2; }
  done
  log "the declared failure of $ALGO when its holder's node fails was found"
  exit 0
}

if [[ $FAULT == holder ]]; then
  holder_fault
fi

if [[ $FAMILY == mutex ]]; then
  for i in 2 3 4; do client "$(api "$i")" "$CLIENT_SECONDS" >"$WORK/client-$i.txt" & done
else
  acurl -s -m 5 -X POST "http://127.0.0.1:$(api 1)/election" >/dev/null
fi

sleep 2
log "docker pause node3"
docker pause "$PROJECT-node3" >/dev/null
sleep 2
log "docker unpause node3"
docker unpause "$PROJECT-node3" >/dev/null
sleep 1
NET="${PROJECT}_ring"
log "disconnecting node5 from $NET"
docker network disconnect "$NET" "$PROJECT-node5"
sleep 2
log "reconnecting node5"
docker network connect --alias node5 "$NET" "$PROJECT-node5"
wait_for 30 "node5 reconnected to every peer" bash -c "! curl -s -m 2 -H 'Authorization: Bearer $(cat "$API_TOKEN_FILE")' http://127.0.0.1:$(api 5)/status | grep -q '\"connected\":false'"

if [[ $FAMILY == election ]]; then
  wait_for 30 "a leader known to node 1" bash -c "curl -s -m 2 -H 'Authorization: Bearer $(cat "$API_TOKEN_FILE")' http://127.0.0.1:$(api 1)/status | grep -q '\"leader\":[0-9]'"
  LEADER=$(field "$(status 1)" leader)
else
  LEADER=1 # the coordinator (position 0) of coordinator-based algorithms
fi
# The leader dies while the clients are still taking and releasing locks: their requests that
# need it are answered 503 naming it (or time out), and nobody overlaps.
log "killing the leader's container while the clients run: node$LEADER"
KILLED_AT=$SECONDS
docker kill "$PROJECT-node$LEADER" >/dev/null
LIVE=$(for i in 1 2 3 4 5; do [[ $i == "$LEADER" ]] || echo "$i"; done)
DOWN=()
if [[ $FAMILY == election ]]; then
  DOWN=(--down "$LEADER")
  wait
  first=$(head -1 <<<"$LIVE")
  acurl -s -m 5 -X POST "http://127.0.0.1:$(api "$first")/election" >/dev/null || true
  agreed() {
    local i l want=""
    for i in $LIVE; do
      l=$(field "$(status "$i")" leader)
      [[ $l =~ ^[0-9]+$ && $l != "$LEADER" ]] || return 1
      [[ -z $want || $l == "$want" ]] || return 1
      want=$l
    done
  }
  wait_for 60 "the live nodes agree on a new leader" agreed
  log "new leader $(field "$(status "$first")" leader) known to every live node after $((SECONDS - KILLED_AT))s"
else
  survivors_notice() {
    local i
    for i in $LIVE; do status "$i" | grep -q "\"id\":$LEADER,[^}]*\"connected\":false" || return 1; done
  }
  wait_for 30 "the survivors see node$LEADER gone" survivors_notice
  log "the survivors keep serving and see node$LEADER disconnected"
  sleep 1
  # The coordinator comes back while the clients still run: it recovers from its data
  # directory (its fencing counter survives; it polls the others for the holder and the
  # waiting requests) and grants again.
  log "starting node$LEADER again (it recovers from $DATA_DIR/node-$LEADER)"
  RESTARTED_NS=$(date +%s%N)
  docker start "$PROJECT-node$LEADER" >/dev/null
  wait_for 30 "node$LEADER back and connected to every peer" all_connected
  log "node$LEADER is back after $((SECONDS - KILLED_AT))s; the clients go on"
  wait
fi
for f in "$WORK"/client-*.txt; do [[ -e $f ]] && cat "$f"; done

log "stopping the cluster"
timeout 60 "${COMPOSE[@]}" stop -t 5 >/dev/null 2>&1
log "ringleader verify ${DOWN[*]} $(ls "$TRACE_DIR" | tr '\n' ' ')"
set +e
report=$("$BIN" verify "${DOWN[@]}" "$TRACE_DIR"/node-*.jsonl)
rc=$?
set -e
echo "$report"
log "verify exit status $rc"
if [[ $FAMILY == mutex ]]; then
  # Fencing tokens never repeat, across the coordinator's restart, and grants go on after it.
  grants=$(cat "$WORK"/grants-*.txt 2>/dev/null | sort -n)
  dups=$(awk '{ print $2 }' <<<"$grants" | sort -n | uniq -d | tr '\n' ' ')
  before=$(awk -v t="$RESTARTED_NS" '$1 < t { print $2 }' <<<"$grants" | sort -n | tail -1)
  after=$(awk -v t="$RESTARTED_NS" '$1 >= t' <<<"$grants" | wc -l)
  first_after=$(awk -v t="$RESTARTED_NS" '$1 >= t { print $2 }' <<<"$grants" | sort -n | head -1)
  log "fencing tokens: $(wc -l <<<"$grants") grants; highest before the restart ${before:-none}; $after grants after it, lowest ${first_after:-none}"
  if [[ -n $dups ]]; then
    log "FAIL: fencing tokens handed out twice: $dups"
    rc=1
  elif ((after == 0)); then
    log "FAIL: no lock was granted after node$LEADER restarted"
    rc=1
  elif [[ -n $before && $first_after -le $before ]]; then
    log "FAIL: a token after the restart ($first_after) is not above the last one before it ($before)"
    rc=1
  fi
fi
exit $rc
