#!/bin/sh
# The lock service's seeded fault sweeps (docs/SERVICE.md), run with --expect-decided: any
# violation or any property left undecided prints its repro line and makes the script exit
# non-zero. The test suite runs short versions (crates/sim/tests/it/lock_service.rs).
#
#   1. 10,000 runs of `--algo lock-service` on 5 nodes, Poisson workload, under four fault plans,
#      2,500 seeds each (SEEDS);
#   2. 10,000 runs under a saturated workload, loss 0.01-0.05 and snapshots every 10 to 1000
#      entries, with pauses, crashes and partitions: ten plans, 1,000 seeds each (SEEDS / 2.5).
#
# Usage: docs/service-sweep.sh [path/to/ringleader] [SEEDS] [SHARD]
#   (defaults: cargo run --release -q --, 2500, the whole range; SHARD is I/K, e.g. 0/4, to run
#   a quarter of the seeds of every plan)
set -eu
RL=${1:-"cargo run --release -q --"}
SEEDS=${2:-2500}
SHARD=${3:-}
shard=${SHARD:+--shard $SHARD}
status=0
plan() {
  name=$1; shift
  echo "== $name"
  out=$($RL sweep --expect-decided $shard "$@") || status=1
  printf '%s\n' "$out" | sed -n '/^sweep\|^  violations\|violated in\|undecided in\|no progress\|ringleader sim\|^verdict/p'
}
poisson="--algo lock-service --nodes 5 --workload poisson --entries 20 --seeds 1..$SEEDS"
plan "crash and recover" $poisson --crash 1@200ms --crash 3@500ms --recover 1@400ms --recover 3@800ms
plan "partition" $poisson --partition '1,2|3,4,5@300ms..900ms'
plan "loss and duplication on slow links" $poisson --loss 0.1 --dup 0.1 --latency uniform:1ms..20ms
plan "a minority cut off, drifting clocks" $poisson --param ttl=300ms --partition '1|2,3,4,5@200ms..1200ms' --drift-ppm 20000

LIVE=$((SEEDS * 2 / 5))
saturated="--algo lock-service --nodes 5 --workload saturated --entries 200 --duration 60s --seeds 1..$LIVE"
plan "saturated: loss and snapshots, with pauses, crashes and partitions" $saturated \
  --variant "--loss 0.01 --param snapshot_every=10" \
  --variant "--loss 0.05 --param snapshot_every=20" \
  --variant "--loss 0.03 --param snapshot_every=100" \
  --variant "--loss 0.02 --param snapshot_every=1000" \
  --variant "--loss 0.05 --param snapshot_every=10 --pause 2@200ms..700ms" \
  --variant "--loss 0.03 --param snapshot_every=20 --pause 1@300ms..650ms" \
  --variant "--loss 0.02 --param snapshot_every=10 --crash 5@200ms --recover 5@1200ms" \
  --variant "--loss 0.04 --param snapshot_every=50 --crash 1@300ms --crash 2@600ms --recover 1@900ms --recover 2@1500ms" \
  --variant "--loss 0.03 --param snapshot_every=10 --partition 1,2|3,4,5@300ms..900ms" \
  --variant "--loss 0.05 --param snapshot_every=200 --partition 1|2,3,4,5@200ms..1200ms"
exit $status
