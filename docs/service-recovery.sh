#!/bin/sh
# Recovery time of a replaced member (docs/SERVICE.md): three `ringleader serve` nodes with the
# etcd API, KEYS keys written in transactions of 128 puts (16-byte values),
# then node 3 is stopped, removed, its data directory deleted, started empty with --join and
# added back; the time from `member add` until its applied index reaches the leader's is the
# catch-up from a snapshot (the leader compacts every 1,000 entries and sends one).
#
# Usage: docs/service-recovery.sh [path/to/ringleader] [KEYS]   (needs python3; the keys are
# written by the etcd_bench example beside the binary, `cargo build --release -p ringleader
# --example etcd_bench`, or else by etcdctl, one process a transaction)
set -eu
RL=${1:-target/release/ringleader}
KEYS=${2:-10000}
DIR=$(mktemp -d)
API=24700; PEER=24800; GRPC=24900
PIDS=""
trap 'for p in $PIDS; do kill $p 2>/dev/null; done; wait; rm -rf "$DIR"' EXIT
peers() { for j in 1 2 3; do [ "$j" = "$1" ] || printf ' --peer %s=127.0.0.1:%s' "$j" $((PEER + j)); done; }
start() { # id, extra flags
  id=$1; shift
  $RL serve --id "$id" --listen 127.0.0.1:$((PEER + id)) --api 127.0.0.1:$((API + id)) \
    --grpc 127.0.0.1:$((GRPC + id)) $(peers "$id") --insecure --data-dir "$DIR/node-$id" \
    --snapshot-every 1000 "$@" >>"$DIR/node-$id.log" 2>&1 &
  PIDS="$PIDS $!"; eval "PID_$id=$!"
}
status() { python3 -c "import json,urllib.request,sys;print(json.load(urllib.request.urlopen('http://127.0.0.1:$1/status',timeout=2))[sys.argv[1]])" "$2" 2>/dev/null || echo 0; }
for id in 1 2 3; do start $id --bootstrap --cluster-id recovery; done
until [ "$(status $((API + 1)) leader)" != "None" ] && [ "$(status $((API + 1)) leader)" != "0" ]; do sleep 0.1; done
t0=$(date +%s.%N)
BENCH=${ETCD_BENCH:-$(dirname "$RL")/examples/etcd_bench}
if [ -x "$BENCH" ]; then
  # One process, 8 connections, transactions of 128 puts in flight at once (group commit).
  "$BENCH" --endpoints http://127.0.0.1:$((GRPC + 1)),http://127.0.0.1:$((GRPC + 2)) --measure load \
    --keys "$KEYS" --clients 8
else
  # Without the example: one etcdctl process a transaction (slow: about 0.3 s each).
  E=--endpoints=127.0.0.1:$((GRPC + 1)),127.0.0.1:$((GRPC + 2))
  python3 - "$KEYS" >"$DIR/txns" <<'PY'
import sys
n = int(sys.argv[1])
for b in range(0, n, 128):
    print("\n" + "".join(f"put key-{i:08d} value-{i:010d}\n" for i in range(b, min(n, b + 128))) + "\n")
PY
  python3 - "$DIR/txns" "$E" <<'PY'
import subprocess, sys
batches = open(sys.argv[1]).read().split("\n\n\n")
for b in batches:
    if b.strip():
        subprocess.run(["etcdctl", sys.argv[2], "txn"], input=b + "\n\n\n", text=True, check=True, stdout=subprocess.DEVNULL)
PY
fi
t1=$(date +%s.%N)
echo "wrote $KEYS keys in $(echo "$t1 - $t0" | bc) s"
kill "$PID_3"; wait "$PID_3" 2>/dev/null || true
# (Node 3 may have led: the removal is asked again until the others have elected a leader.)
until $RL member remove 3 --endpoints http://127.0.0.1:$((API + 1)) >/dev/null 2>&1; do sleep 0.2; done
rm -rf "$DIR/node-3"
start 3 --join --cluster-id recovery
sleep 0.5
target=$(status $((API + 1)) applied)
t0=$(date +%s.%N)
$RL member add 3 127.0.0.1:$((PEER + 3)) --endpoints http://127.0.0.1:$((API + 1)) >/dev/null
until [ "$(status $((API + 3)) applied)" -ge "$target" ]; do
  sleep 0.02
  if [ "$(echo "$(date +%s.%N) - $t0 > ${CATCH_UP_LIMIT:-1800}" | bc)" = 1 ]; then
    echo "node 3 did not catch up within ${CATCH_UP_LIMIT:-1800} s (applied $(status $((API + 3)) applied) of $target)" >&2
    tail -n 5 "$DIR/node-1.log" "$DIR/node-3.log" >&2
    exit 1
  fi
done
t1=$(date +%s.%N)
echo "node 3, replaced, caught up to applied index $target ($KEYS keys) in $(echo "$t1 - $t0" | bc) s after member add"
rss() { awk '/VmRSS/ {print $2 / 1024 " MiB"}' /proc/$1/status; }
snap=$(python3 -c "import urllib.request;print([l for l in urllib.request.urlopen('http://127.0.0.1:$((API + 3))/metrics').read().decode().splitlines() if l.startswith('ringleader_service_snapshots_received_total')][0])")
echo "node 3: $snap"
echo "resident memory: node 1 $(rss "$PID_1"), node 3 $(rss "$PID_3")"
echo "data directories: node 1 $(du -sk "$DIR/node-1" | cut -f1) KiB, node 3 $(du -sk "$DIR/node-3" | cut -f1) KiB"
