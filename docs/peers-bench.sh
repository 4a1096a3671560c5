#!/bin/bash
# Measures ringleader's simulator beside two peers on the same Chang-Roberts ring and prints the
# table of docs/PERFORMANCE.md ("Beside other simulators"): SimPy (bench/peers/simpy_ring.py) and
# NeXosim (bench/peers/nexosim-ring). Every run: ids 1..N in a seeded random order, every node
# initiating at time 0, each message delayed by U[1 ms, 2 ms], no FIFO per link.
#
# Usage: docs/peers-bench.sh            (from the repository root)
# Environment: RINGLEADER_BIN  ringleader binary (default: cargo build --profile perf, target/perf)
#              SIZES           ring sizes (default "1000 100000")
#              REPS            runs per framework and size; the table takes the median CPU time
#                              (default 3)
# Needs python3 (with venv), jq and cargo; installs SimPy into target/peers-venv.
set -euo pipefail
cd "$(dirname "$0")/.."
SIZES=${SIZES:-"1000 100000"}
REPS=${REPS:-3}

venv=target/peers-venv
if [ ! -x "$venv/bin/python" ]; then python3 -m venv "$venv"; fi
"$venv/bin/pip" install -q --disable-pip-version-check simpy==4.1.2

cargo build -q --release --locked --manifest-path bench/peers/nexosim-ring/Cargo.toml \
  --target-dir target/peers-nexosim
nexosim_version=$(grep -A1 '^name = "nexosim"$' bench/peers/nexosim-ring/Cargo.lock | sed -n 's/^version = "\(.*\)"/\1/p')

if [ -z "${RINGLEADER_BIN:-}" ]; then
  cargo build -q --profile perf -p ringleader
  RINGLEADER_BIN=target/perf/ringleader
fi

runs=$(mktemp)
trap 'rm -f "$runs"' EXIT
for n in $SIZES; do
  for r in $(seq "$REPS"); do
    # Each reports the CPU time (getrusage; process_time for SimPy) of building the ring and
    # running the election, not the start of the process or of the interpreter.
    "$RINGLEADER_BIN" bench --nodes "$n" --latency uniform:1ms..2ms --json |
      jq -c '.[0] | {framework: "ringleader", nodes, delivered: .messages_delivered, leader,
                     cpu_seconds, peak_rss_mib}' >> "$runs"
    "$venv/bin/python" bench/peers/simpy_ring.py "$n" >> "$runs"
    target/peers-nexosim/release/nexosim-ring "$n" |
      jq -c --arg v "$nexosim_version" '.framework = "NeXosim \($v) (1 thread)"' >> "$runs"
    echo "n=$n run $r/$REPS done" >&2
  done
done

"$venv/bin/python" - "$runs" <<'PY'
import json, statistics, sys
runs = [json.loads(line) for line in open(sys.argv[1])]
groups = {}
for r in runs:
    groups.setdefault((r["nodes"], r["framework"]), []).append(r)
print("| framework | n | delivered messages | implied by the ids | leader | CPU s (median; all runs) | delivered / CPU s | peak RSS MiB | CPU × ringleader |")
print("|---|---|---|---|---|---|---|---|---|")
for n in sorted({k[0] for k in groups}):
    base = statistics.median(r["cpu_seconds"] for r in groups[(n, "ringleader")])
    names = sorted((k[1] for k in groups if k[0] == n), key=lambda f: (f != "ringleader", f))
    for f in names:
        rs = groups[(n, f)]
        cpu = statistics.median(r["cpu_seconds"] for r in rs)
        delivered = sorted({r["delivered"] for r in rs})
        implied = ", ".join(sorted({f"{r['implied']:,}" for r in rs if "implied" in r})) or "—"
        leaders = sorted({str(r["leader"]) for r in rs})
        rss = max(r["peak_rss_mib"] for r in rs)
        ratio = f"{cpu / base:.1f}"
        rate = f"{delivered[0] / cpu / 1e6:.2f} M" if cpu > 0 else "—"
        counts = ", ".join(f"{d:,}" for d in delivered)
        every = " ".join(f"{r['cpu_seconds']:.3f}" for r in rs)
        print(f"| {f} | {n:,} | {counts} | {implied} | {', '.join(leaders)} | {cpu:.3f}; {every} | {rate} "
              f"| {rss:.0f} | {ratio} |")
PY
