#!/usr/bin/env bash
# The coordination service beside etcd, in one run, on this machine, measured by the same client
# (`ringleader bench-service`: lock+unlock loops; etcd through its v3 JSON gateway).
#
#   docs/service-bench.sh                 # perf build (opt-level 3 everywhere); 5 s per measurement
#   SECONDS_EACH=2 RINGLEADER_BIN=target/debug/ringleader docs/service-bench.sh
#   MEASURE=failover FAILOVER_TRIALS=40 docs/service-bench.sh    # only the leader-kill trials
#   MEASURE=handover HANDOVER_TRIALS=20 docs/service-bench.sh    # only holder death -> next holder
#   MEASURE=tls docs/service-bench.sh     # 3 nodes with and without TLS, ours then etcd's
#
# Installs Debian's etcd-server if etcd is missing. Both services fsync every commit (etcd by
# default; ours with one fsync per batch of proposals). Prints one line per measurement.
set -euo pipefail
cd "$(dirname "$0")/.."
# The perf profile: the release profile builds the service and its dependencies at opt-level 1
# (for a fresh clone's first build), which costs it 10-20 % of uncontended throughput.
BIN=${RINGLEADER_BIN:-target/perf/ringleader}
EACH=${SECONDS_EACH:-5}
[ -x "$BIN" ] || cargo build --profile perf --locked
if ! command -v etcd >/dev/null; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server >/dev/null
fi
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

wait_http() { # URL: wait (bounded) until it answers
  for _ in $(seq 1 300); do curl -sf -o /dev/null "$1" && return 0; sleep 0.1; done
  echo "no answer from $1" >&2; return 1
}

bench() { # LABEL ARGS...
  local label=$1; shift
  printf '%-34s ' "$label"
  "$BIN" bench-service --duration "${EACH}s" "$@"
}

etcd_cluster() { # N
  local n=$1 init="" i
  for i in $(seq 1 "$n"); do init+="e$i=http://127.0.0.1:$((12380 + i)),"; done
  for i in $(seq 1 "$n"); do
    etcd --name "e$i" --data-dir "$work/etcd-$n-$i" \
      --listen-client-urls "http://127.0.0.1:$((12370 + i))" --advertise-client-urls "http://127.0.0.1:$((12370 + i))" \
      --listen-peer-urls "http://127.0.0.1:$((12380 + i))" --initial-advertise-peer-urls "http://127.0.0.1:$((12380 + i))" \
      --initial-cluster "${init%,}" --initial-cluster-state new >"$work/etcd-$n-$i.log" 2>&1 &
    pids+=($!)
  done
  for i in $(seq 1 "$n"); do wait_http "http://127.0.0.1:$((12370 + i))/health"; done
}

ours_cluster() { # N [--tls]: with --tls, $scheme and $client_tls are set for the clients
  local n=$1; shift
  "$BIN" cluster --service --nodes "$n" --api-base-port 14100 --peer-base-port 14200 \
    --data-dir "$work/ours-$n$*" --secret-file "$work/secret-$n" "$@" >"$work/ours-$n.log" 2>&1 &
  pids+=($!)
  scheme=http client_tls=() curl_tls=()
  if [ "$*" = --tls ]; then
    local t="$work/ours-$n--tls/tls"
    for _ in $(seq 1 300); do [ -s "$t/client-key.pem" ] && break; sleep 0.1; done
    scheme=https client_tls=(--cacert "$t/ca.pem" --cert "$t/client.pem" --key "$t/client-key.pem")
    curl_tls=(--cacert "$t/ca.pem" --cert "$t/client.pem" --key "$t/client-key.pem")
  fi
  for i in $(seq 1 "$n"); do
    for _ in $(seq 1 300); do curl -s "${curl_tls[@]}" "$scheme://127.0.0.1:$((14100 + i))/status" | grep -q '"leader":[0-9]' && break; sleep 0.1; done
  done
}

etcd_tls_cluster() { # N, with the CA and node certificates of the last `ours_cluster N --tls`
  local n=$1 init="" i t="$work/ours-$1--tls/tls"
  for i in $(seq 1 "$n"); do init+="e$i=https://127.0.0.1:$((12380 + i)),"; done
  for i in $(seq 1 "$n"); do
    etcd --name "e$i" --data-dir "$work/etcd-tls-$n-$i" \
      --cert-file "$t/node-$i.pem" --key-file "$t/node-$i-key.pem" --trusted-ca-file "$t/ca.pem" --client-cert-auth \
      --peer-cert-file "$t/node-$i.pem" --peer-key-file "$t/node-$i-key.pem" --peer-trusted-ca-file "$t/ca.pem" \
      --peer-client-cert-auth \
      --listen-client-urls "https://127.0.0.1:$((12370 + i))" --advertise-client-urls "https://127.0.0.1:$((12370 + i))" \
      --listen-peer-urls "https://127.0.0.1:$((12380 + i))" --initial-advertise-peer-urls "https://127.0.0.1:$((12380 + i))" \
      --initial-cluster "${init%,}" --initial-cluster-state new >"$work/etcd-tls-$n-$i.log" 2>&1 &
    pids+=($!)
  done
  for i in $(seq 1 "$n"); do
    for _ in $(seq 1 300); do curl -sf -o /dev/null --cacert "$t/ca.pem" --cert "$t/client.pem" --key "$t/client-key.pem" \
      "https://127.0.0.1:$((12370 + i))/health" && break; sleep 0.1; done
  done
}

tls_side_by_side() { # 3 nodes, plain then TLS (mutual TLS between peers, client certificates)
  local mode leader ep
  for mode in plain tls; do
    if [ $mode = plain ]; then ours_cluster 3; else ours_cluster 3 --tls; fi
    leader=$(curl -s "${curl_tls[@]}" "$scheme://127.0.0.1:14101/status" | sed -n 's/.*"leader":\([0-9]*\).*/\1/p')
    ep="$scheme://127.0.0.1:$((14100 + leader))"
    bench "ringleader 3 nodes $mode, 1 client" --endpoints "$ep" --clients 1 "${client_tls[@]}"
    bench "ringleader 3 nodes $mode, 8 clients 8 names" --endpoints "$ep" --clients 8 --names 8 "${client_tls[@]}"
    stop_all
  done
  [ "${ETCD_TLS:-1}" = 1 ] || return 0
  etcd_cluster 3
  bench "etcd 3 nodes plain, 1 client" --target etcd --endpoints http://127.0.0.1:12371 --clients 1
  bench "etcd 3 nodes plain, 8 clients 8 names" --target etcd --endpoints http://127.0.0.1:12371 --clients 8 --names 8
  stop_all
  ours_cluster 3 --tls  # only for its certificates
  stop_all
  etcd_tls_cluster 3
  bench "etcd 3 nodes tls, 1 client" --target etcd --endpoints https://127.0.0.1:12371 --clients 1 "${client_tls[@]}"
  bench "etcd 3 nodes tls, 8 clients 8 names" --target etcd --endpoints https://127.0.0.1:12371 --clients 8 --names 8 "${client_tls[@]}"
  stop_all
}

stop_all() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; pids=(); }

ms() { echo $(( $(date +%s%N) / 1000000 )); }
post() { curl -s --max-time 1 -o /dev/null -w '%{http_code}' -H 'content-type: application/json' -d "$2" "$1"; }

failover_trials() { # TRIALS: kill -9 the leader of 3 nodes; time until a lock+unlock succeeds again
  ours_cluster 3
  local ctl="--ctl 127.0.0.1:14100 --secret-file $work/secret-3" times=()
  for _ in $(seq 1 "$1"); do
    leader=$(curl -s http://127.0.0.1:14101/status | sed -n 's/.*"leader":\([0-9]*\).*/\1/p')
    other=$(( leader % 3 + 1 ))
    ep="http://127.0.0.1:$((14100 + other))"
    granted=$(curl -s -H 'content-type: application/json' -d '{"ttl_ms":10000}' "$ep/v1/lease/grant")
    lease=$(echo "$granted" | sed -n 's/.*"lease":\([0-9]*\).*/\1/p')
    key=$(echo "$granted" | sed -n 's/.*"key":"\([0-9a-f]*\)".*/\1/p')
    t0=$(ms)
    "$BIN" cluster ctl kill "$leader" $ctl >/dev/null
    until [ "$(post "$ep/v1/lock/acquire" "{\"name\":\"f\",\"lease\":$lease,\"key\":\"$key\"}")" = 200 ] &&
          [ "$(post "$ep/v1/lock/release" "{\"name\":\"f\",\"lease\":$lease,\"key\":\"$key\"}")" = 200 ]; do :; done
    times+=($(( $(ms) - t0 )))
    "$BIN" cluster ctl restart "$leader" $ctl >/dev/null
    for _ in $(seq 1 300); do curl -s "http://127.0.0.1:$((14100 + leader))/status" | grep -q '"leader":[0-9]' && break; sleep 0.1; done
  done
  stop_all
  printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {printf "ringleader 3 nodes, leader kill -9 -> lock+unlock again: %d trials, p50 %d ms, p99 %d ms, max %d ms\n", NR, a[int((NR+1)/2)], a[int(NR*0.99+0.999)], a[NR]}'
}

handover_trials() { # TRIALS: a holder dies (stops talking) just after a keep-alive; time to the next grant
  local trials=$1 ttl
  ours_cluster 3
  for ttl in 2s 1s 500ms 300ms; do
    bench "ringleader 3 nodes, TTL $ttl" --measure handover --ttl "$ttl" --trials "$trials" \
      --endpoints http://127.0.0.1:14101,http://127.0.0.1:14102
  done
  stop_all
  etcd_cluster 3
  # etcd's minimum lease TTL is about 2 s with its default election timeout.
  bench "etcd 3 nodes, TTL 2s" --target etcd --measure handover --ttl 2s --trials "$trials" \
    --endpoints http://127.0.0.1:12371,http://127.0.0.1:12372
  stop_all
}

MEASURE=${MEASURE:-all}
case $MEASURE in
  all | throughput | failover | handover | tls) ;;
  *) echo "MEASURE=$MEASURE: give all, throughput, failover, handover or tls" >&2; exit 2 ;;
esac
if [ "$MEASURE" = tls ]; then tls_side_by_side; exit 0; fi
if [ "$MEASURE" = all ] || [ "$MEASURE" = failover ]; then failover_trials "${FAILOVER_TRIALS:-20}"; fi
if [ "$MEASURE" = all ] || [ "$MEASURE" = handover ]; then handover_trials "${HANDOVER_TRIALS:-10}"; fi
[ "$MEASURE" = all ] || [ "$MEASURE" = throughput ] || exit 0

for n in 1 3; do
  ours_cluster "$n"
  # The leader's endpoint first: a follower forwards to it.
  leader=$(curl -s http://127.0.0.1:14101/status | sed -n 's/.*"leader":\([0-9]*\).*/\1/p')
  ep="http://127.0.0.1:$((14100 + leader))"
  bench "ringleader $n node(s), 1 client" --endpoints "$ep" --clients 1
  bench "ringleader $n node(s), 8 clients 1 name" --endpoints "$ep" --clients 8 --names 1
  bench "ringleader $n node(s), 8 clients 8 names" --endpoints "$ep" --clients 8 --names 8
  stop_all
  etcd_cluster "$n"
  ep="http://127.0.0.1:12371"
  bench "etcd $n node(s), 1 client" --target etcd --endpoints "$ep" --clients 1
  bench "etcd $n node(s), 8 clients 1 name" --target etcd --endpoints "$ep" --clients 8 --names 1
  bench "etcd $n node(s), 8 clients 8 names" --target etcd --endpoints "$ep" --clients 8 --names 8
  stop_all
done
