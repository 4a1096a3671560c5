#!/usr/bin/env bash
# The seeded nemesis (docs/NEMESIS.md): three `ringleader serve` nodes in FROM-scratch
# containers, clients taking locks through the HTTP and the etcd gRPC APIs and writing through
# their fencing tokens to a fenced resource, and two lanes of overlapping faults drawn from a
# seed for the whole load; then the history (the clients' operations and the faults, one file)
# is judged.
#
#   deploy/nemesis.sh --seed 3 --seconds 40                       # the real build must pass
#   deploy/nemesis.sh --seed 3 --seconds 40 --planted fast-clock  # a planted bug must be caught
#   deploy/nemesis.sh --list-planted                              # the planted bugs, one a line
#
# Flags: --seed N (0..2147483647, default 1), --seconds S (10..86400, default 40), --planted NAME,
# --target ringleader|etcd (etcd: three etcd 3.4 members from Debian's etcd-server package under
# the same schedule and the same etcd-client clients; docs/NEMESIS.md "etcd side by side"),
# --allow-undecided (an undecided linearizability search passes), --list-planted.
# Environment: RINGLEADER_BIN and ETCD_NEMESIS_BIN (default: the test build's, built here with
# `cargo test --workspace --no-run`: only the test build has planted bugs), CLIENTS (4; 0 runs
# no service-load; always 0 for etcd), ETCD_CLIENTS (2; 4 for etcd), LOCKS (orders,stock),
# ETCD_WRITERS (2) and ETCD_WATCHERS (2): etcd-client writers putting values and reading them
# back and watchers watching them, judged by verify for linearizable reads and writes and for
# etcd's watch guarantees (with ETCD_CLIENTS > 0),
# ETCD_BIN (--target etcd: the etcd binary; default /usr/bin/etcd, else the one in Debian's
# etcd-server package, fetched with apt-get download), NEMESIS_OUT (where the history and logs
# are kept, default target/nemesis/seed-N-LABEL).
#
# Exit status: 0 no anomaly, 2 an anomaly found (named, with the checker's excerpt), 1 the run
# could not be made (bad input, no cluster, a client that failed).
#
# The schedule: each lane draws from its own linear congruential generator (glibc's constants,
# x' = (1103515245 x + 12345) mod 2^31; a draw in [0, n) is (x' >> 16) mod n), seeded from
# --seed (node lane 2N+1, network lane 2N+2). A lane draws a gap, a fault, its target (by role:
# leader, follower, a node by number) and its duration, runs it, and draws again until --seconds
# are over (the fault under way finishes first); the two lanes run at once, so their faults overlap. The seed fixes the sequence; the
# node that holds a role at the time (which node leads) is the run's.
#   node lane: kill -9 (docker kill) of the leader, a follower or a node by number, restarted
#     after the drawn time; all three killed at once and restarted from their logs; a pause (docker pause: the cgroup freezer, as SIGSTOP) and unpause; and
#     once per run, at a drawn time in the run's second quarter, a lost data directory: the node
#     is killed, its directory emptied, it is started without --bootstrap and must refuse to
#     start, then the operator path restores it (member remove, start empty with --join, member
#     add; docs/SERVICE.md "Replacing a lost disk"); and once per run, at a time drawn in the
#     run's third quarter from a generator of its own (2N+3), a full disk: the leader's data file
#     system (a tmpfs of DISK_MB MiB, 256 by default, mounted per node; a drawn node when none
#     leads) filled to the last byte for 3..6 s, then freed, and the node started again if it
#     stopped.
#   network lane (host iptables run in the nodes' network namespaces with nsenter, matched on
#     addresses): a one-way partition (node X receives nothing from its peers on the connections
#     they opened, while its own messages still arrive; both directions counted), a two-way
#     partition of one link (X and Y cannot talk, both still talk to the third), a
#     majority/minority split (X cut from both others, both directions), and a disconnection
#     (docker network disconnect: X loses its peers and its clients, its published APIs too).
# Every fault's start and end is a JSON line with a `fault` field in the history file, which
# `ringleader verify --history` and `fenced-resource --check` skip.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
say() { printf '[nemesis %s] %s\n' "$(date +%T)" "$*"; }
usage_error() { echo "nemesis.sh: $*" >&2; exit 1; }

SEED=1
RUN_SECONDS=40
PLANTED=""
TARGET=ringleader
LIST=0
ALLOW_UNDECIDED=0
while (($#)); do
  case $1 in
    --seed) [[ $# -ge 2 ]] || usage_error "--seed needs a value: an integer 0..2147483647"; SEED=$2; shift 2 ;;
    --seconds) [[ $# -ge 2 ]] || usage_error "--seconds needs a value: an integer 10..86400"; RUN_SECONDS=$2; shift 2 ;;
    --planted) [[ $# -ge 2 ]] || usage_error "--planted needs a name (--list-planted prints them)"; PLANTED=$2; shift 2 ;;
    --target) [[ $# -ge 2 ]] || usage_error "--target needs a value: ringleader or etcd"; TARGET=$2; shift 2 ;;
    --list-planted) LIST=1; shift ;;
    --allow-undecided) ALLOW_UNDECIDED=1; shift ;;
    -h | --help) sed -n '2,45p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) usage_error "unknown argument $1; allowed: --seed N, --seconds S, --planted NAME, --target ringleader|etcd, --allow-undecided, --list-planted" ;;
  esac
done
[[ $SEED =~ ^[0-9]{1,10}$ ]] && ((10#$SEED <= 2147483647)) || usage_error "--seed $SEED: give an integer 0..2147483647"
SEED=$((10#$SEED))
[[ $RUN_SECONDS =~ ^[0-9]{1,5}$ ]] && ((10#$RUN_SECONDS >= 10 && 10#$RUN_SECONDS <= 86400)) ||
  usage_error "--seconds $RUN_SECONDS: give an integer 10..86400"
RUN_SECONDS=$((10#$RUN_SECONDS))
case $TARGET in
  ringleader) ;;
  etcd) [[ -z $PLANTED ]] || usage_error "--planted $PLANTED: planted bugs exist only in ringleader's test build, not with --target etcd" ;;
  *) usage_error "--target $TARGET: allowed: ringleader, etcd" ;;
esac

TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
if [[ -z ${RINGLEADER_BIN:-} || -z ${ETCD_NEMESIS_BIN:-} ]]; then
  say "building the test build (only it has planted bugs; the etcd-client example comes with it)" >&2
  (cd "$ROOT" && CARGO_TARGET_DIR=$TARGET_DIR timeout 3600 cargo test --workspace --locked --no-run -q) >&2 ||
    { echo "nemesis.sh: the test build failed" >&2; exit 1; }
fi
BIN=${RINGLEADER_BIN:-$TARGET_DIR/debug/ringleader}
NEMESIS=${ETCD_NEMESIS_BIN:-$TARGET_DIR/debug/examples/etcd_nemesis}
[[ -x $BIN ]] || usage_error "RINGLEADER_BIN $BIN: not an executable"
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")

# The planted bugs are the binary's to name.
if ((LIST)); then exec "$BIN" serve --list-planted; fi
if [[ -n $PLANTED ]]; then
  set +e
  names=$("$BIN" serve --list-planted 2>&1)
  list_rc=$?
  set -e
  ((list_rc == 0)) || usage_error "--planted $PLANTED: $BIN has no planted bugs (give the test build's binary)"
  grep -qx -- "$PLANTED" <<<"$names" || usage_error "--planted $PLANTED is not a planted bug; allowed: $(paste -sd, <<<"$names" | sed 's/,/, /g')"
fi
[[ -x $NEMESIS ]] || usage_error "ETCD_NEMESIS_BIN $NEMESIS: not an executable"
TOOLS=(docker docker-compose curl nsenter iptables ldd)
[[ $TARGET == etcd ]] && TOOLS+=(jq)
for tool in "${TOOLS[@]}"; do
  command -v "$tool" >/dev/null || usage_error "needs $tool on the host (docs/NEMESIS.md)"
done

LABEL=${PLANTED:-clean}
[[ $TARGET == etcd ]] && LABEL=etcd
OUT=${NEMESIS_OUT:-$ROOT/target/nemesis/seed-$SEED-$LABEL}
PROJECT=${PROJECT:-rlnem$$}
IMAGE=${IMAGE:-ringleader:nemesis$$}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ringleader-nemesis.XXXXXX")
DATA_DIR=$WORK/data
if [[ $TARGET == etcd ]]; then
  CLIENTS=0 # service-load speaks the service's own HTTP API, which etcd has not
  ETCD_CLIENTS=${ETCD_CLIENTS:-4}
else
  CLIENTS=${CLIENTS:-4}
  ETCD_CLIENTS=${ETCD_CLIENTS:-2}
fi
if ! [[ $CLIENTS =~ ^[0-9]{1,2}$ && $ETCD_CLIENTS =~ ^[0-9]{1,2}$ ]] || ((10#$CLIENTS + 10#$ETCD_CLIENTS == 0)); then
  usage_error "CLIENTS=$CLIENTS ETCD_CLIENTS=$ETCD_CLIENTS: give 0..99 each, not both 0"
fi
ETCD_WRITERS=${ETCD_WRITERS:-2}
ETCD_WATCHERS=${ETCD_WATCHERS:-2}
if ! [[ $ETCD_WRITERS =~ ^[0-9]{1,2}$ && $ETCD_WATCHERS =~ ^[0-9]{1,2}$ ]] || ((10#$ETCD_WRITERS > 16 || 10#$ETCD_WATCHERS > 16)); then
  usage_error "ETCD_WRITERS=$ETCD_WRITERS ETCD_WATCHERS=$ETCD_WATCHERS: give 0..16 each"
fi
LOCKS=${LOCKS:-orders,stock}
RESOURCE_PORT=${RESOURCE_PORT:-18300}
SECRET_FILE=$WORK/cluster.secret
API_TOKEN_FILE=$WORK/api.token
FAULTS=$WORK/faults.jsonl
SERVE_EXTRA=${PLANTED:+--planted $PLANTED}
export PROJECT IMAGE DATA_DIR SECRET_FILE API_TOKEN_FILE SERVE_EXTRA
COMPOSE=(docker-compose -p "$PROJECT" -f "$ROOT/deploy/service-compose.yml")
[[ $TARGET == etcd ]] && COMPOSE=(docker-compose -p "$PROJECT" -f "$ROOT/deploy/etcd-compose.yml")
NET="${PROJECT}_raft"
LANES=()
MOUNTED=()
DISK_MB=${DISK_MB:-256}
[[ $DISK_MB =~ ^[0-9]{2,5}$ ]] || usage_error "DISK_MB=$DISK_MB: give the size of each node's data file system in MiB, 10..99999"

# Every node's iptables rules go (the nemesis adds rules only in the nodes' namespaces).
heal_network() {
  local i pid
  for i in 1 2 3; do
    pid=$(docker inspect -f '{{.State.Pid}}' "$PROJECT-node$i" 2>/dev/null || echo 0)
    if [[ $pid =~ ^[1-9][0-9]*$ ]]; then
      nsenter -t "$pid" -n iptables -F INPUT >/dev/null 2>&1 || true
      nsenter -t "$pid" -n iptables -F OUTPUT >/dev/null 2>&1 || true
    fi
  done
}

cleanup() {
  local rc=$?
  say "cleaning up"
  for pid in "${LANES[@]}"; do kill "$pid" 2>/dev/null || true; done
  heal_network
  jobs -p | xargs -r kill 2>/dev/null || true
  for i in 1 2 3; do docker unpause "$PROJECT-node$i" >/dev/null 2>&1 || true; done
  timeout 60 "${COMPOSE[@]}" down -v --remove-orphans >/dev/null 2>&1 || true
  docker rmi "$IMAGE" >/dev/null 2>&1 || true
  for m in "${MOUNTED[@]}"; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done
  rm -rf "$WORK"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

(umask 077 && od -An -N32 -tx1 /dev/urandom | tr -d ' \n' >"$SECRET_FILE")
(umask 077 && od -An -N24 -tx1 /dev/urandom | tr -d ' \n' >"$API_TOKEN_FILE")

api() { echo $((18200 + $1)); }
grpc() { echo $((18210 + $1)); }
status() { curl -s -m 2 -H "Authorization: Bearer $(cat "$API_TOKEN_FILE")" "http://127.0.0.1:$(api "$1")/status" || true; }
field() { grep -o "\"$2\":[^,}]*" <<<"$1" | head -1 | cut -d: -f2 | tr -d '"'; }
# etcd: the member's status through its gRPC gateway (member_id in the header, leader's id).
etcd_status() { curl -s -m 2 -X POST -d '{}' "http://127.0.0.1:$(grpc "$1")/v3/maintenance/status" || true; }
# lead I: the leader node I names, as a node number (empty when it names none or does not answer).
lead() {
  if [[ $TARGET == ringleader ]]; then
    local l; l=$(field "$(status "$1")" leader)
    [[ $l =~ ^[1-4]$ ]] && echo "$l"
    return 0
  fi
  local s l j
  s=$(etcd_status "$1"); l=$(field "$s" leader)
  [[ $l =~ ^[1-9][0-9]*$ ]] || return 0
  if [[ $(field "$s" member_id) == "$l" ]]; then echo "$1"; return 0; fi
  for j in $(others "$1") 4; do
    [[ $j == "$1" ]] && continue
    if [[ $(field "$(etcd_status "$j")" member_id) == "$l" ]]; then echo "$j"; return 0; fi
  done
}
now_ns() { date +%s%N; }
others() { local i; for i in 1 2 3; do [[ $i == "$1" ]] || echo "$i"; done; }
running() { [[ $(docker inspect -f '{{.State.Running}}' "$PROJECT-node$1" 2>/dev/null) == true ]]; }
pid_of() { docker inspect -f '{{.State.Pid}}' "$PROJECT-node$1" 2>/dev/null || echo 0; }
ip_of() { docker inspect -f "{{(index .NetworkSettings.Networks \"$NET\").IPAddress}}" "$PROJECT-node$1" 2>/dev/null || true; }

# wait_for SECONDS DESCRIPTION COMMAND...: polls COMMAND every 0.2 s until it succeeds.
wait_for() {
  local limit=$1 what=$2; shift 2
  local end=$((SECONDS + limit))
  until "$@"; do
    if ((SECONDS >= end)); then say "TIMEOUT after ${limit}s waiting for: $what"; return 1; fi
    sleep 0.2
  done
}

# agreed NODE...: every NODE answers and names the same leader, itself one of NODE (or the
# fourth node, while the member lane has it in the cluster).
agreed() {
  local i l want=""
  for i in "$@"; do
    l=$(lead "$i")
    [[ $l =~ ^[0-9]+$ ]] || return 1
    [[ -z $want || $l == "$want" ]] || return 1
    want=$l
  done
  [[ " $* 4 " == *" $want "* ]]
}
# The node that some node names as leader and that names itself; empty when there is none.
leader_now() {
  local i l
  for i in 1 2 3; do
    l=$(lead "$i")
    if [[ $l =~ ^[1-4]$ && $(lead "$l") == "$l" ]]; then echo "$l"; return; fi
  done
}
answers() {
  if [[ $TARGET == etcd ]]; then [[ -n $(field "$(etcd_status "$1")" member_id) ]]; else [[ -n $(field "$(status "$1")" leader) ]]; fi
}

# record KIND PHASE NODE [EXTRA JSON FIELDS]: one fault line (one write, O_APPEND).
record() {
  local extra=${4:+,$4}
  printf '{"fault":"%s","phase":"%s","node":%s,"time_ns":%s,"seed":%s%s}\n' "$1" "$2" "$3" "$(now_ns)" "$SEED" "$extra" >>"$FAULTS"
}

# The lanes' generator (glibc's constants): lcg N sets DRAW to a number in [0, N).
LCG=0
DRAW=0
lcg() { LCG=$(((1103515245 * LCG + 12345) & 0x7fffffff)); DRAW=$(((LCG >> 16) % $1)); }

# pick ROLE: a node for a role drawn by the lane (leader, follower, or a node by number);
# prints nothing when the role has no node now (no leader).
pick() {
  local L
  case $1 in
    leader) leader_now ;;
    follower) L=$(leader_now); [[ -n $L ]] && others "$L" | sed -n "$((FOLLOWER_DRAW + 1))p" ;;
    *) echo "$1" ;;
  esac
}

# The node that answered the latest grant in the etcd clients' history (it holds the holder's
# lock session; the holder's next call goes to it); empty when none was recorded yet.
holder_node() {
  [[ -s $WORK/etcd-history.jsonl ]] || return 0
  tail -n 4000 "$WORK/etcd-history.jsonl" | grep '"op":"acquire"' | grep -o '"node":[1-3]' | tail -1 | cut -d: -f2
}

restart_node() {
  docker start "$PROJECT-node$1" >/dev/null 2>&1 || true
  wait_for 30 "node$1 answers again" answers "$1" || true
}

# The lost data directory, then the operator path that replaces it.
lost_directory() {
  local X=$1 survivors
  survivors=$(for i in $(others "$X"); do printf 'http://127.0.0.1:%s,' "$(api "$i")"; done)
  survivors=${survivors%,}
  record lost-directory start "$X"
  say "node lane: node$X loses its data directory (killed, emptied, started without --bootstrap)"
  docker kill "$PROJECT-node$X" >/dev/null 2>&1 || true
  wait_for 15 "node$X stopped" bash -c "[[ \$(docker inspect -f '{{.State.Running}}' $PROJECT-node$X) == false ]]" || true
  find "$DATA_DIR/node-$X" -mindepth 1 -delete
  local refused=false
  if ! env "START_$X=" "STATE_$X=existing" timeout 120 "${COMPOSE[@]}" up -d --no-deps "node$X" >"$WORK/compose.out" 2>&1; then
    echo "node$X could not be recreated without --bootstrap: $(tail -1 "$WORK/compose.out")" >>"$WORK/broken"
  elif wait_for 30 "node$X exits (refusing its empty directory)" bash -c "[[ \$(docker inspect -f '{{.State.Running}}' $PROJECT-node$X) == false ]]"; then
    local code
    code=$(docker inspect -f '{{.State.ExitCode}}' "$PROJECT-node$X")
    # etcd has no such message: a member started with --initial-cluster-state existing over an
    # empty directory stops when the leader's log does not fit its own (any nonzero exit).
    if [[ $code != 0 ]] && { [[ $TARGET == etcd ]] || docker logs "$PROJECT-node$X" 2>&1 | grep -q "holds no Raft log"; }; then refused=true; fi
    say "node lane: node$X exited $code: $(docker logs "$PROJECT-node$X" 2>&1 | tail -1 | cut -c1-160)"
    [[ $refused == true ]] || echo "lost-directory-not-refused: node$X, started over an emptied data directory without --bootstrap, exited $code without refusing it" >>"$WORK/anomalies"
  else
    say "node lane: ANOMALY: node$X started over its lost data directory instead of refusing"
    echo "lost-directory-accepted: node$X started over an emptied data directory without --bootstrap and ran" >>"$WORK/anomalies"
  fi
  record lost-directory refused "$X" "\"refused\":$refused"
  if [[ $TARGET == etcd ]]; then
    etcd_replace "$X"
    return
  fi
  say "node lane: operator path: member remove $X, start node$X empty with --join, member add $X"
  local end=$((SECONDS + 90)) removed=false added=false
  while ((SECONDS < end)); do
    if "$BIN" member remove "$X" --endpoints "$survivors" --api-token-file "$API_TOKEN_FILE" >/dev/null 2>>"$WORK/member.err"; then removed=true; break; fi
    sleep 1
  done
  find "$DATA_DIR/node-$X" -mindepth 1 -delete
  env "START_$X=--join" timeout 120 "${COMPOSE[@]}" up -d --no-deps "node$X" >/dev/null 2>&1 || true
  while [[ $removed == true ]] && ((SECONDS < end)); do
    if "$BIN" member add "$X" "node$X:7000" --endpoints "$survivors" --api-token-file "$API_TOKEN_FILE" >/dev/null 2>>"$WORK/member.err"; then added=true; break; fi
    sleep 1
  done
  local back=false
  if [[ $added == true ]] && wait_for 60 "node$X replaced, following the leader" agreed 1 2 3; then back=true; fi
  say "node lane: node$X replaced: removed $removed, added $added, back $back"
  [[ $back == true ]] || echo "node$X could not be replaced (removed $removed, added $added)" >>"$WORK/unavailable"
  record lost-directory end "$X" "\"removed\":$removed,\"added\":$added,\"back\":$back"
}

# etcd_member_id X: member nodeX's id in the member list of a survivor (empty if none answers).
etcd_member_id() {
  local i
  for i in $(others "$1"); do
    curl -s -m 2 -X POST -d '{}' "http://127.0.0.1:$(grpc "$i")/v3/cluster/member/list" 2>/dev/null |
      jq -r --arg n "node$1" --arg u "http://node$1:2380" '.members[]? | select(.name == $n or (.peerURLs // [] | index($u))) | .ID' 2>/dev/null |
      head -1 | grep . && return 0
  done
  return 0
}

# etcd's operator path for a lost directory (its documented order): member remove, member add,
# then the member started empty with --initial-cluster-state existing.
etcd_replace() {
  local X=$1 end=$((SECONDS + 90)) removed=false added=false id i
  say "node lane: operator path (etcd): member remove node$X, member add node$X, start it empty with --initial-cluster-state existing"
  while ((SECONDS < end)); do
    id=$(etcd_member_id "$X")
    if [[ -z $id ]]; then removed=true; break; fi
    for i in $(others "$X"); do
      curl -s -m 3 -X POST -d "{\"ID\":\"$id\"}" "http://127.0.0.1:$(grpc "$i")/v3/cluster/member/remove" >>"$WORK/member.err" 2>&1 || true
    done
    sleep 1
  done
  while [[ $removed == true ]] && ((SECONDS < end)); do
    for i in $(others "$X"); do
      if curl -s -m 3 -X POST -d "{\"peerURLs\":[\"http://node$X:2380\"]}" "http://127.0.0.1:$(grpc "$i")/v3/cluster/member/add" 2>>"$WORK/member.err" | grep -q '"member"'; then
        added=true
        break 2
      fi
    done
    sleep 1
  done
  find "$DATA_DIR/node-$X" -mindepth 1 -delete
  env "STATE_$X=existing" timeout 120 "${COMPOSE[@]}" up -d --no-deps "node$X" >/dev/null 2>&1 || true
  local back=false
  if [[ $added == true ]] && wait_for 60 "node$X replaced, following the leader" agreed 1 2 3; then back=true; fi
  say "node lane: node$X replaced: removed $removed, added $added, back $back"
  [[ $back == true ]] || echo "node$X could not be replaced (removed $removed, added $added)" >>"$WORK/unavailable"
  record lost-directory end "$X" "\"removed\":$removed,\"added\":$added,\"back\":$back"
}

# The membership lane: a fourth node added to the cluster as a voter and removed again, cycle
# after cycle, while the other lanes fault nodes 1-3 (partitions cut nodes 1-3 from one another,
# not from node 4). Its own generator (seeded 2N+7): a gap of 5..15 s, then node 4 joins, stays a
# member for 5..15 s, and is removed; a cycle starts only when it can end within the run.
member_lane() {
  set +e
  LCG=$(((SEED * 2 + 7) & 0x7fffffff))
  local t0=$SECONDS gap hold
  while true; do
    lcg 11; gap=$((DRAW + 5))
    lcg 11; hold=$((DRAW + 5))
    ((SECONDS - t0 + gap + hold + 10 < RUN_SECONDS)) || break
    sleep "$gap"
    member_add_fourth && sleep "$hold"
    member_remove_fourth
  done
  say "member lane: done"
}

# Node 4 started empty and added (the operator path of docs/SERVICE.md: start it with --join,
# then member add; etcd's: member add, then start it with --initial-cluster-state existing).
# True once it is a voter.
member_add_fourth() {
  local eps end=$((SECONDS + 60)) added=false i
  eps=$(for i in 1 2 3; do printf 'http://127.0.0.1:%s,' "$(api "$i")"; done)
  record member-add start 4
  say "member lane: node4 added to the cluster"
  mkdir -p "$DATA_DIR/node-4"
  find "$DATA_DIR/node-4" -mindepth 1 -delete
  if [[ $TARGET == etcd ]]; then
    while ((SECONDS < end)); do
      for i in 1 2 3; do
        if curl -s -m 3 -X POST -d '{"peerURLs":["http://node4:2380"]}' "http://127.0.0.1:$(grpc "$i")/v3/cluster/member/add" 2>>"$WORK/member.err" | grep -q '"member"'; then
          added=true
          break 2
        fi
      done
      sleep 1
    done
    [[ $added == true ]] && { timeout 120 "${COMPOSE[@]}" up -d --no-deps node4 >/dev/null 2>&1 || added=false; }
  else
    timeout 120 "${COMPOSE[@]}" up -d --no-deps node4 >/dev/null 2>&1
    while ((SECONDS < end)); do
      if "$BIN" member add 4 node4:7000 --endpoints "${eps%,}" --api-token-file "$API_TOKEN_FILE" >/dev/null 2>>"$WORK/member.err"; then added=true; break; fi
      sleep 1
    done
  fi
  say "member lane: node4 added: $added"
  [[ $added == true ]] || echo "node4 could not be added within 60 s" >>"$WORK/unavailable"
  record member-add end 4 "\"added\":$added"
  [[ $added == true ]]
}

# Node 4 removed from the configuration (retried until done or no longer a member), then its
# container and directory.
member_remove_fourth() {
  local eps end=$((SECONDS + 60)) removed=false i id err
  eps=$(for i in 1 2 3; do printf 'http://127.0.0.1:%s,' "$(api "$i")"; done)
  record member-remove start 4
  say "member lane: node4 removed from the cluster"
  while ((SECONDS < end)); do
    if [[ $TARGET == etcd ]]; then
      id=$(etcd_member_id 4)
      if [[ -z $id ]]; then removed=true; break; fi
      for i in 1 2 3; do
        curl -s -m 3 -X POST -d "{\"ID\":\"$id\"}" "http://127.0.0.1:$(grpc "$i")/v3/cluster/member/remove" >>"$WORK/member.err" 2>&1 || true
      done
    else
      if err=$("$BIN" member remove 4 --endpoints "${eps%,}" --api-token-file "$API_TOKEN_FILE" 2>&1 >/dev/null); then removed=true; break; fi
      # A retry of a removal that was applied: node 4 is no longer a member.
      if grep -q "not a member" <<<"$err"; then removed=true; break; fi
      echo "$err" >>"$WORK/member.err"
    fi
    sleep 1
  done
  docker rm -f "$PROJECT-node4" >/dev/null 2>&1 || true
  find "$DATA_DIR/node-4" -mindepth 1 -delete 2>/dev/null || true
  say "member lane: node4 removed: $removed"
  [[ $removed == true ]] || echo "node4 could not be removed within 60 s" >>"$WORK/unavailable"
  record member-remove end 4 "\"removed\":$removed"
}

# The disk-full fault: node X's data file system filled to the last byte for HOLD seconds while
# the clients go on. A node must stop rather than acknowledge what it cannot write (the service
# stops with "the disk is full"), or go on acknowledging only what it wrote; either way nothing
# acknowledged may be lost, which the history's checkers judge. Then the space is freed and the
# node started again, from its log.
disk_full() {
  local X=$1 hold=$2 dir="$DATA_DIR/node-$1" avail stopped=false
  avail=$(df --output=avail -B1 "$dir" | tail -1 | tr -d ' ')
  record disk-full start "$X" "\"hold_s\":$hold,\"filled_bytes\":$avail"
  say "node lane: node$X's disk filled ($((avail / 1048576)) MiB taken) for ${hold}s"
  fallocate -l "$avail" "$dir/nemesis-fill" 2>/dev/null || head -c "$avail" /dev/zero >"$dir/nemesis-fill" 2>/dev/null || true
  sleep "$hold"
  running "$X" || stopped=true
  local said
  said=$(docker logs "$PROJECT-node$X" 2>&1 | tail -1 | cut -c1-200)
  rm -f "$dir/nemesis-fill"
  if [[ $stopped == true ]]; then
    say "node lane: node$X stopped on the full disk: $said"
    restart_node "$X"
  else
    say "node lane: node$X kept running on the full disk"
  fi
  record disk-full end "$X" "\"stopped\":$stopped"
}

node_lane() {
  set +e
  LCG=$(((SEED * 2 + 1) & 0x7fffffff))
  local t0=$SECONDS kinds=(kill-leader kill-follower kill-node pause kill-all) lost_at lost_done=0
  lcg $((RUN_SECONDS / 4 + 1)); lost_at=$((RUN_SECONDS / 4 + DRAW))
  # The disk-full fault's time, node and hold come from a generator of their own (seeded 2N+3),
  # so that adding it moved no other draw of the seed.
  local lane=$LCG full_at full_node full_hold full_done=$((1 - DISK_FULL))
  LCG=$(((SEED * 2 + 3) & 0x7fffffff))
  lcg $((RUN_SECONDS / 4 + 1)); full_at=$((RUN_SECONDS / 2 + DRAW))
  lcg 3; full_node=$((DRAW + 1))
  lcg 4; full_hold=$((DRAW + 3))            # 3..6 s
  # Two kills of a lock holder's node (the node that answered the latest grant), one in each
  # half of the run, from a generator of their own too (seeded 2N+5).
  local holder_at=() holder_hold=() holder_done=0
  LCG=$(((SEED * 2 + 5) & 0x7fffffff))
  lcg $((RUN_SECONDS / 4 + 1)); holder_at+=($((RUN_SECONDS / 8 + DRAW)))
  lcg 5; holder_hold+=($((DRAW + 1)))        # 1..5 s
  lcg $((RUN_SECONDS / 4 + 1)); holder_at+=($((RUN_SECONDS * 5 / 8 + DRAW)))
  lcg 5; holder_hold+=($((DRAW + 1)))
  ((10#$ETCD_CLIENTS > 0)) || holder_done=2
  LCG=$lane
  while ((SECONDS - t0 < RUN_SECONDS)); do
    lcg 3; sleep "$((DRAW + 1))"           # gap 1..3 s
    lcg 5; local kind=${kinds[DRAW]}
    lcg 2; FOLLOWER_DRAW=$DRAW
    lcg 3; local nth=$((DRAW + 1))
    lcg 5; local hold=$((DRAW + 1))         # 1..5 s
    ((SECONDS - t0 < RUN_SECONDS)) || break
    # The once-a-run faults come before the drawn fault, not instead of it: the kinds drawn stay
    # the seed's whatever the timing.
    if ((holder_done < 2 && SECONDS - t0 >= holder_at[holder_done])); then
      local H; H=$(holder_node)
      if [[ -n $H ]]; then
        record kill start "$H" "\"role\":\"holder\",\"hold_s\":${holder_hold[holder_done]}"
        say "node lane: kill -9 node$H (it answered the latest grant: a holder's node), restarted after ${holder_hold[holder_done]}s"
        docker kill "$PROJECT-node$H" >/dev/null 2>&1
        sleep "${holder_hold[holder_done]}"
        restart_node "$H"
        record kill end "$H"
      else
        say "node lane: no grant recorded yet: the holder's-node kill is left out"
      fi
      holder_done=$((holder_done + 1))
      ((SECONDS - t0 < RUN_SECONDS)) || break
    fi
    if ((!lost_done && SECONDS - t0 >= lost_at)); then
      lost_done=1
      local X; X=$(pick follower); X=${X:-$nth}
      lost_directory "$X"
      ((SECONDS - t0 < RUN_SECONDS)) || break
    fi
    if ((!full_done && SECONDS - t0 >= full_at)); then
      full_done=1
      # The leader's disk (it writes every entry first), or the drawn node when none leads.
      local F; F=$(pick leader); F=${F:-$full_node}
      disk_full "$F" "$full_hold"
      ((SECONDS - t0 < RUN_SECONDS)) || break
    fi
    if [[ $kind == kill-all ]]; then
      record kill-all start 0 "\"hold_s\":$hold"
      say "node lane: kill -9 all three nodes, restarted after ${hold}s (from their durable logs)"
      docker kill "$PROJECT-node1" "$PROJECT-node2" "$PROJECT-node3" >/dev/null 2>&1
      sleep "$hold"
      docker start "$PROJECT-node1" "$PROJECT-node2" "$PROJECT-node3" >/dev/null 2>&1
      wait_for 60 "the restarted cluster answers" answers 1 || true
      record kill-all end 0
      continue
    fi
    local role X
    case $kind in kill-leader) role=leader ;; kill-follower) role=follower ;; *) role=$nth ;; esac
    local as=$role
    [[ $role == [0-9] ]] && as="by number"
    X=$(pick "$role"); X=${X:-$nth}
    if [[ $kind == pause ]]; then
      record pause start "$X" "\"hold_s\":$hold"
      say "node lane: docker pause node$X for ${hold}s"
      docker pause "$PROJECT-node$X" >/dev/null 2>&1
      sleep "$hold"
      docker unpause "$PROJECT-node$X" >/dev/null 2>&1
      record pause end "$X"
    else
      record kill start "$X" "\"role\":\"$role\",\"hold_s\":$hold"
      say "node lane: kill -9 node$X ($as), restarted after ${hold}s"
      docker kill "$PROJECT-node$X" >/dev/null 2>&1
      sleep "$hold"
      restart_node "$X"
      record kill end "$X"
    fi
  done
  say "node lane: done"
}

# reconnect X: node X back on the nodes' network, under its name, if it is off it.
reconnect() {
  [[ -n $(ip_of "$1") ]] || docker network connect --alias "node$1" "$NET" "$PROJECT-node$1" >/dev/null 2>&1 || true
}

# drop_between A B: in A's namespace, nothing to or from B's address.
drop_between() {
  local pa ipb
  pa=$(pid_of "$1"); ipb=$(ip_of "$2")
  [[ $pa =~ ^[1-9][0-9]*$ && -n $ipb ]] || return 1
  nsenter -t "$pa" -n iptables -I INPUT 1 -s "$ipb" -j DROP &&
    nsenter -t "$pa" -n iptables -I OUTPUT 1 -d "$ipb" -j DROP
}

# count PID CHAIN TARGET: packets the rules with that target counted in that chain.
count() {
  nsenter -t "$1" -n iptables -L "$2" -v -x -n 2>/dev/null | awk -v t="$3" '$3 == t {s += $1} END {print s + 0}'
}

# etcd's peer transport is the other way round: a member's messages to a peer go on the streams
# the peer dials (the peer reads the response body), so for etcd the rules match the reply
# direction: X gets nothing back on the connections it opened (its streams from the peers) and
# its own messages, written on the connections the peers opened, still arrive. etcd also sends by
# pipeline (POSTs the sender dials) when a stream is down: those still reach X.
CTDIR=ORIGINAL
[[ $TARGET == etcd ]] && CTDIR=REPLY
one_way() {
  # One-way by address and connection direction: each node sends on the connections it dials
  # and reads on the ones its peers dial (crates/net/src/transport.rs), so dropping, in X's
  # namespace, what comes from the peers' addresses on connections the peers opened
  # (conntrack's ORIGINAL direction) stops every message to X, while X's own connections keep
  # their acknowledgements and X's messages still arrive. Counting rules in the peers measure it.
  local X=$1 hold=$2 px ipx ip ips="" i p pids="" dropped arrived=0
  px=$(pid_of "$X"); ipx=$(ip_of "$X")
  [[ $px =~ ^[1-9][0-9]*$ && -n $ipx ]] || return 1
  for i in $(others "$X"); do
    ip=$(ip_of "$i")
    [[ -n $ip ]] && ips+=$ip,
  done
  ips=${ips%,}
  [[ -n $ips ]] || return 1
  nsenter -t "$px" -n iptables -I INPUT 1 -p tcp -s "$ips" -m conntrack --ctdir "$CTDIR" -j DROP || return 1
  for i in $(others "$X"); do
    p=$(pid_of "$i")
    pids+="$p "
    [[ $p =~ ^[1-9][0-9]*$ ]] && nsenter -t "$p" -n iptables -I INPUT 1 -p tcp -s "$ipx" -m conntrack --ctdir "$CTDIR" -j ACCEPT
  done
  sleep "$hold"
  dropped=$(count "$px" INPUT DROP)
  for i in $(others "$X"); do
    p=$(pid_of "$i")
    [[ $p =~ ^[1-9][0-9]*$ ]] && arrived=$((arrived + $(count "$p" INPUT ACCEPT)))
  done
  # Measured only when no node restarted meanwhile (a restart makes a new namespace, without
  # the rules); then both counts must be above zero, or the partition was not one-way.
  local now_pids=""
  for i in $(others "$X"); do now_pids+="$(pid_of "$i") "; done
  if [[ $(pid_of "$X") == "$px" && $now_pids == "$pids" ]]; then
    ONE_WAY="\"dropped_to_node\":$dropped,\"arrived_from_node\":$arrived"
    if ((dropped == 0 || arrived == 0)); then
      echo "the one-way partition of node$X was not one-way: $dropped packets to it dropped, $arrived from it received (both must be above 0)" >>"$WORK/broken"
    fi
  else
    ONE_WAY="\"dropped_to_node\":$dropped,\"arrived_from_node\":$arrived,\"measured\":false"
  fi
  say "network lane: one-way partition of node$X: $dropped packets to it dropped, $arrived from it received"
  return 0
}

net_lane() {
  set +e
  LCG=$(((SEED * 2 + 2) & 0x7fffffff))
  local t0=$SECONDS kinds=(one-way link split disconnect)
  while ((SECONDS - t0 < RUN_SECONDS)); do
    lcg 4; sleep "$((DRAW + 1))"           # gap 1..4 s
    lcg 4; local kind=${kinds[DRAW]}
    lcg 2; local role=""; ((DRAW)) && role=leader
    lcg 3; local nth=$((DRAW + 1))
    lcg 2; local other=$((DRAW + 1))        # the other end of a cut link: the n-th other node
    lcg 5; local hold=$((DRAW + 2))         # 2..6 s
    ((SECONDS - t0 < RUN_SECONDS)) || break
    local X; X=$([[ $role == leader ]] && leader_now); X=${X:-$nth}
    local Y; Y=$(others "$X" | sed -n "${other}p")
    case $kind in
      one-way)
        record partition-one-way start "$X" "\"hold_s\":$hold"
        say "network lane: one-way partition: node$X hears nothing from its peers for ${hold}s; its messages still arrive"
        ONE_WAY="\"skipped\":true"
        one_way "$X" "$hold" || say "network lane: one-way partition of node$X not made (node not running)"
        heal_network
        record partition-one-way end "$X" "$ONE_WAY"
        ;;
      link)
        record partition-link start "$X" "\"peer\":$Y,\"hold_s\":$hold"
        say "network lane: two-way partition of the link node$X-node$Y for ${hold}s"
        drop_between "$X" "$Y" || say "network lane: link partition not made (node$X or node$Y not running)"
        sleep "$hold"
        heal_network
        record partition-link end "$X" "\"peer\":$Y"
        ;;
      split)
        record partition-split start "$X" "\"hold_s\":$hold"
        say "network lane: majority/minority split: node$X alone for ${hold}s"
        for i in $(others "$X"); do drop_between "$X" "$i" || say "network lane: node$X not cut from node$i (one is not running)"; done
        sleep "$hold"
        heal_network
        record partition-split end "$X"
        ;;
      disconnect)
        # Both directions and the node's published APIs too: its clients lose it as well.
        record disconnect start "$X" "\"hold_s\":$hold"
        say "network lane: docker network disconnect node$X for ${hold}s (peers and clients)"
        docker network disconnect "$NET" "$PROJECT-node$X" >/dev/null 2>&1 || say "network lane: node$X not disconnected"
        sleep "$hold"
        reconnect "$X"
        record disconnect end "$X"
        ;;
    esac
  done
  say "network lane: done"
}

# ---- the cluster
mkdir -p "$WORK/ctx" "$OUT"
rm -f "$OUT"/*
for i in 1 2 3; do mkdir -p "$DATA_DIR/node-$i"; done
# Each node's data directory is a small file system of its own, so that the disk-full fault fills
# one node's disk and nothing else (a tmpfs: RAM only as it is used). Without the right to mount,
# the fault is left out and the run says so.
DISK_FULL=1
for i in 1 2 3; do
  if ! mount -t tmpfs -o "size=${DISK_MB}m,mode=0700" tmpfs "$DATA_DIR/node-$i" 2>/dev/null; then
    DISK_FULL=0
    say "note: cannot mount a file system for node$i's data directory (not root?): the disk-full fault is left out"
    break
  fi
  MOUNTED+=("$DATA_DIR/node-$i")
done
touch "$FAULTS"
say "seed $SEED, ${RUN_SECONDS}s, target $TARGET, ${PLANTED:+planted bug $PLANTED}${PLANTED:-the real build}; history and logs kept in $OUT"
# The image: the node's binary and the exact shared libraries it links, at their paths.
if [[ $TARGET == etcd ]]; then
  NODE_BIN=${ETCD_BIN:-/usr/bin/etcd}
  if [[ -z ${ETCD_BIN:-} && ! -x $NODE_BIN ]]; then
    # Debian's etcd-server package, unpacked here (not installed: no service is started).
    mkdir -p "$WORK/deb"
    (cd "$WORK/deb" && apt-get download etcd-server >/dev/null 2>&1 && dpkg -x etcd-server_*.deb x) ||
      { say "--target etcd: no /usr/bin/etcd and apt-get download etcd-server failed (set ETCD_BIN)"; exit 1; }
    NODE_BIN=$WORK/deb/x/usr/bin/etcd
  fi
  [[ -x $NODE_BIN ]] || { say "--target etcd: ETCD_BIN $NODE_BIN is not an executable"; exit 1; }
  say "etcd: $("$NODE_BIN" --version 2>/dev/null | head -1)"
  mkdir -p "$WORK/ctx/usr/bin" "$WORK/ctx/tmp"
  cp "$NODE_BIN" "$WORK/ctx/usr/bin/etcd"
  DOCKERFILE=$ROOT/deploy/Dockerfile.etcd
else
  NODE_BIN=$BIN
  cp "$BIN" "$WORK/ctx/ringleader"
  DOCKERFILE=$ROOT/deploy/Dockerfile.rootfs
fi
for lib in $(ldd "$NODE_BIN" | grep -o '/[^ ]*'); do
  mkdir -p "$WORK/ctx$(dirname "$lib")"
  cp -L "$lib" "$WORK/ctx$lib"
done
timeout 300 docker build -q -t "$IMAGE" -f "$DOCKERFILE" "$WORK/ctx" >/dev/null 2>"$WORK/build.err" ||
  { cat "$WORK/build.err"; say "could not build the image"; exit 1; }
timeout 120 "${COMPOSE[@]}" up -d node1 node2 node3 >/dev/null 2>&1 || { say "could not start the nodes"; exit 1; }
wait_for 60 "the three nodes agree on a leader" agreed 1 2 3 || exit 1
# Drop --bootstrap now that every directory holds its log, as an operator must (docs/SERVICE.md);
# etcd's members likewise get --initial-cluster-state existing. The nodes are recreated one at a
# time with the same directories.
for i in 1 2 3; do
  env "START_$i=" "STATE_$i=existing" timeout 120 "${COMPOSE[@]}" up -d --no-deps "node$i" >/dev/null 2>&1 || { say "could not recreate node$i"; exit 1; }
done
# (the others keep --bootstrap in their compose command until recreated; it changes nothing
# over a directory that holds a log)
wait_for 60 "the recreated nodes agree on a leader" agreed 1 2 3 || exit 1
say "cluster up; leader node$(leader_now)"

"$BIN" fenced-resource --listen "127.0.0.1:$RESOURCE_PORT" --log "$WORK/writes.jsonl" 2>"$WORK/resource.err" &
RESOURCE=$!
wait_for 10 "the fenced resource" curl -s -m 1 -o /dev/null "http://127.0.0.1:$RESOURCE_PORT/stats" || exit 1

ENDPOINTS=$(for i in 1 2 3; do printf 'http://127.0.0.1:%s,' "$(api "$i")"; done)
GRPC_ENDPOINTS=$(for i in 1 2 3; do printf 'http://127.0.0.1:%s,' "$(grpc "$i")"; done)
say "clients: $CLIENTS service-load and $ETCD_CLIENTS etcd-client on locks $LOCKS for ${RUN_SECONDS}s"
LOAD=""
: >"$WORK/http-history.jsonl"
: >"$WORK/load.out"
if ((CLIENTS > 0)); then
  "$BIN" service-load --endpoints "${ENDPOINTS%,}" --clients "$CLIENTS" --locks "$LOCKS" \
    --duration "${RUN_SECONDS}s" --ttl 3s --acquire-timeout 2s --request-timeout 2s --settle 30s \
    --resource "http://127.0.0.1:$RESOURCE_PORT" --stale-writers 1 --history "$WORK/http-history.jsonl" \
    --api-token-file "$API_TOKEN_FILE" >"$WORK/load.out" 2>&1 &
  LOAD=$!
fi
# etcd runs without authentication here; the service asks for user root with its API token.
PASSWORD=(--password-file "$API_TOKEN_FILE")
[[ $TARGET == etcd ]] && PASSWORD=()
ETCD_LOAD=""
if ((ETCD_CLIENTS > 0)); then
  "$NEMESIS" --endpoints "${GRPC_ENDPOINTS%,}" --clients "$ETCD_CLIENTS" --locks "$LOCKS" \
    --seconds "$RUN_SECONDS" --ttl 3 --acquire-timeout-ms 2000 --request-timeout-ms 2000 --settle 30 \
    --resource "http://127.0.0.1:$RESOURCE_PORT" --history "$WORK/etcd-history.jsonl" \
    --writers "$ETCD_WRITERS" --watchers "$ETCD_WATCHERS" \
    "${PASSWORD[@]}" >"$WORK/etcd-load.out" 2>&1 &
  ETCD_LOAD=$!
fi

node_lane &
LANES+=($!)
net_lane &
LANES+=($!)
member_lane &
LANES+=($!)
for pid in "${LANES[@]}"; do wait "$pid" || true; done
LANES=()
say "faults over: healing (network rules flushed, nodes unpaused and started)"
heal_network
for i in 1 2 3; do
  docker unpause "$PROJECT-node$i" >/dev/null 2>&1 || true
  reconnect "$i"
  running "$i" || docker start "$PROJECT-node$i" >/dev/null 2>&1 || true
done
wait_for 60 "the healed cluster agrees on a leader" agreed 1 2 3 || say "the cluster did not heal within 60 s"

set +e
load_rc=0
if [[ -n $LOAD ]]; then
  wait_for $((RUN_SECONDS + 120)) "service-load to finish" bash -c "! kill -0 $LOAD 2>/dev/null" || exit 1
  wait "$LOAD"
  load_rc=$?
fi
etcd_rc=0
if [[ -n $ETCD_LOAD ]]; then
  wait_for $((RUN_SECONDS + 120)) "etcd_nemesis to finish" bash -c "! kill -0 $ETCD_LOAD 2>/dev/null" || exit 1
  wait "$ETCD_LOAD"
  etcd_rc=$?
fi
set -e
kill "$RESOURCE" 2>/dev/null || true
wait "$RESOURCE" 2>/dev/null || true
cat "$WORK/load.out"
[[ -n $ETCD_LOAD ]] && cat "$WORK/etcd-load.out"

# One history: the clients' operations and the faults.
cat "$WORK/http-history.jsonl" ${ETCD_LOAD:+"$WORK/etcd-history.jsonl"} "$FAULTS" >"$WORK/history.jsonl"
cp "$WORK/history.jsonl" "$WORK/writes.jsonl" "$WORK/load.out" "$OUT/" 2>/dev/null || true
[[ -n $ETCD_LOAD ]] && cp "$WORK/etcd-load.out" "$OUT/"
for i in 1 2 3; do docker logs "$PROJECT-node$i" >"$OUT/node$i.log" 2>&1 || true; done

# ---- judging: exit statuses captured explicitly (a checker's 2 stays 2)
anomalies=()
undecided=()
((ALLOW_UNDECIDED)) && undecided=(--allow-undecided)
say "ringleader verify --history (every client's operations; the fault records are skipped)"
set +e
"$BIN" verify --history "$WORK/history.jsonl" "${undecided[@]}" | tee "$WORK/verify.out"
verify_rc=${PIPESTATUS[0]}
say "ringleader fenced-resource --check, against the history"
"$BIN" fenced-resource --check "$WORK/writes.jsonl" --history "$WORK/history.jsonl" | tee "$WORK/fence.out"
fence_rc=${PIPESTATUS[0]}
set -e
cp "$WORK/verify.out" "$WORK/fence.out" "$OUT/"
case $verify_rc in
  0) ;;
  2)
    if grep -q '^verdict .*UNDECIDED' "$WORK/verify.out"; then
      anomalies+=("undecided: the linearizability search ran out of its budget (nothing was proved; --allow-undecided to pass)")
    elif grep -q '^verdict .*VIOLATED' "$WORK/verify.out"; then
      anomalies+=("linearizability: $(grep -m1 '^verdict' "$WORK/verify.out" | sed 's/^verdict *//')")
    fi
    if grep -q '^leases .*VIOLATED' "$WORK/verify.out"; then
      anomalies+=("lease: $(grep -m1 '^leases ' "$WORK/verify.out" | sed 's/^.*VIOLATED: //')")
    fi
    if grep -q '^kv .*UNDECIDED' "$WORK/verify.out"; then
      anomalies+=("undecided: the key-value linearizability search ran out of its budget (nothing was proved; --allow-undecided to pass)")
    elif grep -q '^kv .*VIOLATED' "$WORK/verify.out"; then
      anomalies+=("kv: $(grep -m1 '^kv ' "$WORK/verify.out" | sed 's/^.*VIOLATED: //')")
    fi
    if grep -q '^watch .*VIOLATED' "$WORK/verify.out"; then
      anomalies+=("watch: $(grep -m1 '^watch ' "$WORK/verify.out" | sed 's/^.*VIOLATED: //')")
    fi
    ;;
  *) say "verify could not run (exit $verify_rc)"; exit 1 ;;
esac
case $fence_rc in
  0) ;;
  2) anomalies+=("fencing: $(grep -m1 'VIOLATED' "$WORK/fence.out" | sed 's/^fenced resource: //')") ;;
  *) say "fenced-resource --check could not run (exit $fence_rc)"; exit 1 ;;
esac
if [[ -s $WORK/anomalies ]]; then
  while IFS= read -r a; do anomalies+=("$a"); done <"$WORK/anomalies"
fi

faults=$(grep -o '"fault":"[^"]*","phase":"start"' "$FAULTS" | cut -d'"' -f4 | sort | uniq -c | awk '{printf "%s%s %s", sep, $2, $1; sep=", "}')
ops=$(grep -c '"op":"\(acquire\|release\|lease_ended\|put\|get\)"' "$WORK/history.jsonl" || true)
events=$(grep -c '"op":"watch_event"' "$WORK/history.jsonl" || true)
say "seed $SEED, $LABEL: $ops operations and $events watch events; faults started: ${faults:-none}"
# One line per one-way partition: its counts, or that a node restarted during it (its rules
# went with its namespace), so that the counts prove nothing either way.
grep '"partition-one-way","phase":"end"' "$FAULTS" | while IFS= read -r line; do
  counts=$(grep -o '"dropped_to_node":[0-9]*,"arrived_from_node":[0-9]*' <<<"$line" || true)
  if [[ -z $counts ]]; then
    echo "[nemesis] one-way not made (its node was not running)"
  elif [[ $line == *'"measured":false'* ]]; then
    echo "[nemesis] one-way not measured (a node restarted during it): $counts"
  else
    echo "[nemesis] one-way measured: $counts"
  fi
done || true
if [[ -s $WORK/unavailable ]]; then sed 's/^/[nemesis] note: /' "$WORK/unavailable"; fi
if ((${#anomalies[@]})); then
  for a in "${anomalies[@]}"; do say "ANOMALY $a"; done
  say "exit 2: anomaly found (seed $SEED, $LABEL); history in $OUT/history.jsonl"
  exit 2
fi
if [[ -s $WORK/broken ]]; then
  sed 's/^/[nemesis] FAIL: /' "$WORK/broken"
  say "exit 1: a fault was not made as planned"
  exit 1
fi
if ((load_rc != 0 || etcd_rc != 0)); then
  say "exit 1: the clients failed (service-load $load_rc, etcd_nemesis $etcd_rc)"
  exit 1
fi
say "exit 0: no anomaly (seed $SEED, $LABEL)"
exit 0
