#!/bin/sh
# The lock service's seeded fault sweep (docs/SERVICE.md): 10,000 runs of `--algo lock-service`
# on 5 nodes under four fault plans, 2,500 seeds each, on every core. Any violation prints its
# repro line and makes the script exit non-zero. The test suite runs a short version
# (crates/sim/tests/lock_service.rs); this is the long version.
# Usage: docs/service-sweep.sh [path/to/ringleader] [SEEDS]   (defaults: cargo run --release -q --, 2500)
set -eu
RL=${1:-"cargo run --release -q --"}
SEEDS=${2:-2500}
common="--algo lock-service --nodes 5 --workload poisson --entries 20 --seeds 1..$SEEDS"
status=0
plan() {
  name=$1; shift
  echo "== $name"
  out=$($RL sweep $common "$@") || status=1
  printf '%s\n' "$out" | sed -n '/^  violations\|violated in\|ringleader sim\|^verdict/p'
}
plan "crash and recover" --crash 1@200ms --crash 3@500ms --recover 1@400ms --recover 3@800ms
plan "partition" --partition '1,2|3,4,5@300ms..900ms'
plan "loss and duplication on slow links" --loss 0.1 --dup 0.1 --latency uniform:1ms..20ms
plan "a minority cut off, drifting clocks" --param ttl=300ms --partition '1|2,3,4,5@200ms..1200ms' --drift-ppm 20000
exit $status
