#!/usr/bin/env bash
# The seeded nemesis on ringleader and on etcd 3.4 side by side (docs/NEMESIS.md, "etcd side by
# side"): for each seed, deploy/nemesis.sh on each target with the same clients (ETCD_CLIENTS
# etcd-client clients, 4 by default, and no service-load: etcd does not speak the service's HTTP
# API), then one Markdown table row per run: exit, operations, faults started, anomalies named,
# and the unavailability windows (the gaps of 1 s or more between consecutive successful Locks,
# any client, any lock: how many, their p50, p99 and longest, and their sum, in ms).
#
#   deploy/nemesis-compare.sh --seeds 1..5 --seconds 60
#
# Environment: as deploy/nemesis.sh (RINGLEADER_BIN, ETCD_NEMESIS_BIN, ETCD_BIN), and
# COMPARE_OUT (default target/nemesis-compare: each run's history and log, and table.md).
# Exit status: 0 every run was made (whatever it found: the table says), 1 a run could not be made.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
die() { echo "nemesis-compare.sh: $*" >&2; exit 1; }
SEEDS=1..5
RUN_SECONDS=60
while (($#)); do
  case $1 in
    --seeds) [[ $# -ge 2 ]] || die "--seeds needs a value: A..B or N"; SEEDS=$2; shift 2 ;;
    --seconds) [[ $# -ge 2 ]] || die "--seconds needs a value: an integer 10..86400"; RUN_SECONDS=$2; shift 2 ;;
    -h | --help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument $1; allowed: --seeds A..B, --seconds S" ;;
  esac
done
if [[ $SEEDS =~ ^([0-9]{1,9})\.\.([0-9]{1,9})$ ]]; then
  FIRST=$((10#${BASH_REMATCH[1]})) LAST=$((10#${BASH_REMATCH[2]}))
elif [[ $SEEDS =~ ^[0-9]{1,9}$ ]]; then
  FIRST=$((10#$SEEDS)) LAST=$FIRST
else
  die "--seeds $SEEDS: give A..B (A <= B) or one seed N"
fi
((FIRST <= LAST)) || die "--seeds $SEEDS: give A..B with A <= B"
command -v jq >/dev/null || die "needs jq on the host"

OUT=${COMPARE_OUT:-$ROOT/target/nemesis-compare}
mkdir -p "$OUT"
export ETCD_CLIENTS=${ETCD_CLIENTS:-4} CLIENTS=0

# windows HISTORY: the unavailability windows, the gaps of 1 s or more between consecutive
# successful Locks (any client, any lock; normal gaps are tens of ms): "count, p50 / p99 /
# longest, total" in ms.
windows() {
  jq -r 'select(.op == "acquire" and (.result | type) == "object") | .return_ns' "$1" | sort -n |
    awk 'NR > 1 && $1 - prev >= 1e9 { print int(($1 - prev) / 1e6) } { prev = $1 }' | sort -n |
    awk '{ g[NR] = $1; t += $1 } END {
      if (NR == 0) { print "0 | — | 0"; exit }
      p50 = g[int((NR - 1) * 0.50) + 1]; p99 = g[int((NR - 1) * 0.99) + 1]
      printf "%d | %d / %d / %d | %d\n", NR, p50, p99, g[NR], t }'
}

TABLE=$OUT/table.md
{
  echo "| seed | target | exit | operations | faults started | anomalies named | windows ≥ 1 s without a successful Lock | their p50 / p99 / longest, ms | in all, ms |"
  echo "|---|---|---|---|---|---|---|---|---|"
} >"$TABLE"
failed=0
for ((seed = FIRST; seed <= LAST; seed++)); do
  for target in ringleader etcd; do
    dir=$OUT/seed-$seed-$target
    rc=0
    NEMESIS_OUT=$dir "$ROOT/deploy/nemesis.sh" --seed "$seed" --seconds "$RUN_SECONDS" --target "$target" >"$OUT/seed-$seed-$target.log" 2>&1 || rc=$?
    if ((rc == 1)) || [[ ! -s $dir/history.jsonl ]]; then
      echo "nemesis-compare.sh: seed $seed on $target could not be run (exit $rc): $(tail -1 "$OUT/seed-$seed-$target.log")" >&2
      failed=1
      echo "| $seed | $target | $rc | not run | | | | | |" >>"$TABLE"
      continue
    fi
    ops=$(grep -c '"op"' "$dir/history.jsonl" || true)
    faults=$(grep -o '"fault":"[^"]*","phase":"start"' "$dir/history.jsonl" | cut -d'"' -f4 | sort | uniq -c | awk '{printf "%s%s %s", sep, $2, $1; sep=", "}')
    named=$({ grep -o 'ANOMALY [a-z-]*' "$OUT/seed-$seed-$target.log" || true; } | cut -d' ' -f2 | sort -u | paste -sd, - | sed 's/,/, /g')
    echo "| $seed | $target | $rc | $ops | ${faults:-none} | ${named:-none} | $(windows "$dir/history.jsonl") |" >>"$TABLE"
    echo "seed $seed, $target: exit $rc" >&2
  done
done
cat "$TABLE"
exit "$failed"
