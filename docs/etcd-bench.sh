#!/usr/bin/env bash
# The coordination service's etcd gRPC API beside etcd itself, in one run, on this machine,
# measured by the same client: the `etcd_bench` example (the `etcd-client` crate, over gRPC).
#
#   docs/etcd-bench.sh                      # release build; 5 s per throughput measurement
#   SECONDS_EACH=2 FAILOVER_TRIALS=5 HANDOVER_TRIALS=3 docs/etcd-bench.sh     # a quick run
#   MEASURE=failover docs/etcd-bench.sh     # only leader kill -> next lock (also throughput, handover)
#   SERVE_ARGS="--serve-arg=--tick=5ms" docs/etcd-bench.sh   # extra `serve` flags for ringleader
#
# Installs Debian's etcd-server if etcd is missing; building the example runs `protoc`
# (Debian's protobuf-compiler). Ports: ringleader 19501.. (gRPC), 19601.. (HTTP API, control),
# 19701.. (Raft); etcd 12371.. (clients), 12381.. (peers). Both fsync every commit. Prints one
# line per measurement.
set -euo pipefail
cd "$(dirname "$0")/.."
PROFILE=${PROFILE:-release}
BIN=${RINGLEADER_BIN:-target/$PROFILE/ringleader}
BENCH=${ETCD_BENCH_BIN:-target/$PROFILE/examples/etcd_bench}
EACH=${SECONDS_EACH:-5}
if [ ! -x "$BIN" ] || [ ! -x "$BENCH" ]; then
  flag="--profile $PROFILE"; [ "$PROFILE" = debug ] && flag=""
  # shellcheck disable=SC2086
  cargo build $flag --locked -p ringleader --bin ringleader --example etcd_bench
fi
if ! command -v etcd >/dev/null; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server >/dev/null
fi
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for f in "$work"/*.pid; do [ -e "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# etcd node I of N, in the background, its pid in $work/etcd-I.pid (a script file, so that the
# failover measurement's --restart can run it too).
cat >"$work/etcd-start.sh" <<EOF
#!/bin/sh
n=\$1 i=\$2 init=""
for j in \$(seq 1 "\$n"); do init="\${init}e\$j=http://127.0.0.1:\$((12380 + j)),"; done
etcd --name "e\$i" --data-dir "$work/etcd-\$n-\$i" \\
  --listen-client-urls "http://127.0.0.1:\$((12370 + i))" --advertise-client-urls "http://127.0.0.1:\$((12370 + i))" \\
  --listen-peer-urls "http://127.0.0.1:\$((12380 + i))" --initial-advertise-peer-urls "http://127.0.0.1:\$((12380 + i))" \\
  --initial-cluster "\${init%,}" --initial-cluster-state new \$ETCD_TIMING >>"$work/etcd-\$n-\$i.log" 2>&1 &
echo \$! >"$work/etcd-\$i.pid"
EOF
chmod +x "$work/etcd-start.sh"

wait_http() { # URL: wait (bounded) until it answers
  for _ in $(seq 1 300); do curl -sf -o /dev/null "$1" && return 0; sleep 0.1; done
  echo "no answer from $1" >&2; return 1
}

endpoints() { # BASE N: http://127.0.0.1:BASE+1,...
  local i out=""
  for i in $(seq 1 "$2"); do out+="http://127.0.0.1:$(($1 + i)),"; done
  echo "${out%,}"
}

etcd_cluster() { # N
  local i
  for i in $(seq 1 "$1"); do "$work/etcd-start.sh" "$1" "$i"; done
  for i in $(seq 1 "$1"); do wait_http "http://127.0.0.1:$((12370 + i))/health"; done
}

ours_cluster() { # N
  # shellcheck disable=SC2086
  "$BIN" cluster --service --nodes "$1" --api-base-port 19600 --peer-base-port 19700 --grpc-base-port 19500 \
    --data-dir "$work/ours-$1" --secret-file "$work/secret-$1" ${SERVE_ARGS:-} >"$work/ours-$1.log" 2>&1 &
  pids+=($!)
  for i in $(seq 1 "$1"); do
    for _ in $(seq 1 300); do curl -s "http://127.0.0.1:$((19600 + i))/status" | grep -q '"leader":[0-9]' && break; sleep 0.1; done
  done
}

stop_all() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for f in "$work"/*.pid; do [ -e "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null || true; rm -f "$f"; done
  wait 2>/dev/null || true
  pids=()
}

bench() { "$BENCH" --label "$1" "${@:2}"; }

terms() { # SYSTEM N: the highest Raft term any node reports (elections show as its growth)
  local i t best=0
  for i in $(seq 1 "$2"); do
    if [ "$1" = ringleader ]; then
      t=$(curl -s "http://127.0.0.1:$((19600 + i))/status" | grep -o '"term":[0-9]*' | head -1 | cut -d: -f2)
    else
      t=$(curl -s -X POST -d '{}' "http://127.0.0.1:$((12370 + i))/v3/maintenance/status" | grep -o '"raftTerm":"[0-9]*"' | grep -o '[0-9]*')
    fi
    [ -n "$t" ] && [ "$t" -gt "$best" ] && best=$t
  done
  echo "$best"
}

MEASURE=${MEASURE:-all}
case $MEASURE in
  all | throughput | failover | handover) ;;
  *) echo "MEASURE=$MEASURE: give all, throughput, failover or handover" >&2; exit 2 ;;
esac
want() { [ "$MEASURE" = all ] || [ "$MEASURE" = "$1" ]; }

if want throughput; then
  # The floor under both: a durable append on the file system the data directories are on, a
  # loopback round trip, and the least an uncontended lock+unlock can take from them.
  "$BIN" bench-service --measure floor --data-dir "$work" --samples 1000
  # Every client is given every endpoint, as etcd-client is normally used (a follower forwards
  # to the leader); 64 clients on 64 names load the commit path with independent operations.
  for n in 1 3; do
    for system in ringleader etcd; do
      if [ "$system" = ringleader ]; then ours_cluster "$n"; ep=$(endpoints 19500 "$n")
      else etcd_cluster "$n"; ep=$(endpoints 12370 "$n"); fi
      before=$(terms "$system" "$n")
      bench "$system $n node(s), 1 client" --endpoints "$ep" --clients 1 --seconds "$EACH"
      bench "$system $n node(s), 8 clients 1 name" --endpoints "$ep" --clients 8 --names 1 --seconds "$EACH"
      bench "$system $n node(s), 8 clients 8 names" --endpoints "$ep" --clients 8 --names 8 --seconds "$EACH"
      bench "$system $n node(s), 64 clients 64 names" --endpoints "$ep" --clients 64 --names 64 --seconds "$EACH"
      # A leader change under this load is a false election: no node failed.
      echo "$system $n node(s): elections during the load (false ones): $(($(terms "$system" "$n") - before))"
      stop_all
    done
  done
fi

if want failover; then
  trials=${FAILOVER_TRIALS:-20}
  ours_cluster 3
  ctl="--ctl 127.0.0.1:19600 --secret-file $work/secret-3"
  bench "ringleader 3 nodes" --endpoints "$(endpoints 19500 3)" --measure failover --trials "$trials" \
    --kill "$BIN cluster ctl kill {leader} $ctl" --restart "$BIN cluster ctl restart {leader} $ctl"
  stop_all
  # etcd at its defaults (heartbeat 100 ms, election timeout 1 s), then at ringleader's default
  # timing (10 ms ticks: heartbeat 20 ms, election timeout 100 ms, both randomized the same way).
  for timing in "" "--heartbeat-interval 20 --election-timeout 100"; do
    export ETCD_TIMING="$timing"
    etcd_cluster 3
    bench "etcd 3 nodes ${timing:-(defaults)}" --endpoints "$(endpoints 12370 3)" --measure failover --trials "$trials" \
      --kill "kill -9 \$(cat $work/etcd-{leader}.pid)" --restart "$work/etcd-start.sh 3 {leader}"
    stop_all
    rm -rf "$work"/etcd-3-*
  done
  unset ETCD_TIMING
fi

if want handover; then
  trials=${HANDOVER_TRIALS:-10}
  ours_cluster 3
  for ttl in 2 1; do
    bench "ringleader 3 nodes, TTL ${ttl}s" --endpoints "$(endpoints 19500 3)" --measure handover --ttl "$ttl" --trials "$trials"
  done
  stop_all
  etcd_cluster 3
  # etcd's minimum lease TTL is about 2 s with its default election timeout.
  bench "etcd 3 nodes, TTL 2s" --endpoints "$(endpoints 12370 3)" --measure handover --ttl 2 --trials "$trials"
  stop_all
fi
