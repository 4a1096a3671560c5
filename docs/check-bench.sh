#!/usr/bin/env bash
# The model checker beside stateright's own Single Decree Paxos example, on this machine, in one
# run, and the 4-node, 2-acquire mutual-exclusion proofs. Prints one markdown table
# (docs/VERIFICATION.md, "Speed and memory").
#
#   docs/check-bench.sh                    # release build; every case, 1 and 2 threads
#   THREADS="1" docs/check-bench.sh        # one thread only
#   LIMIT=120 MEMORY=4GiB docs/check-bench.sh   # the time and memory allowed to each search
#
# Every mutex case runs breadth-first (shortest paths, the frontier in memory), depth-first
# (a fingerprint per state: the proofs) and depth-first with sleep sets (por: the same states,
# fewer generated); the last two rows measure symmetry reduction.
#
# Per row: states generated, unique states, seconds of wall time, unique states per second, the
# peak resident memory of the process (GNU time's %M) and that memory divided by the unique
# states (every byte the process holds, so an upper bound of the bytes per stored state). A row
# whose search did not end within LIMIT seconds or MEMORY says so.
#
# The peer: the script copies examples/paxos.rs out of the stateright crate that cargo downloads
# (the version ringleader runs on) into target/check-peer and builds it with
# bench/peers/stateright-paxos/Cargo.toml. `paxos check-bfs 3` explores 3 servers and 3 clients
# with `threads(num_cpus::get())`; its thread count is set here with taskset. Its report line
# gives whole seconds, so its row takes the wall time of the process.
set -euo pipefail
cd "$(dirname "$0")/.."
PROFILE=${PROFILE:-release}
BIN=${RINGLEADER_BIN:-target/$PROFILE/ringleader}
THREADS=${THREADS:-"1 2"}
LIMIT=${LIMIT:-60}
MEMORY=${MEMORY:-2GiB}
command -v /usr/bin/time >/dev/null || { echo "needs GNU time (/usr/bin/time, Debian package time)" >&2; exit 1; }

if [ ! -x "$BIN" ]; then
  flag="--profile $PROFILE"; [ "$PROFILE" = debug ] && flag=""
  # shellcheck disable=SC2086
  cargo build -q $flag --locked -p ringleader --bin ringleader
fi

peer=target/check-peer
mkdir -p "$peer/src"
cp bench/peers/stateright-paxos/Cargo.toml "$peer/Cargo.toml"
[ -e bench/peers/stateright-paxos/Cargo.lock ] && cp bench/peers/stateright-paxos/Cargo.lock "$peer/Cargo.lock"
[ -e "$peer/src/main.rs" ] || echo 'fn main() {}' >"$peer/src/main.rs"
crate_dir=$(cargo metadata -q --format-version 1 --manifest-path "$peer/Cargo.toml" |
  python3 -c 'import json,sys,os; m=json.load(sys.stdin); print(os.path.dirname(next(p["manifest_path"] for p in m["packages"] if p["name"]=="stateright")))')
cp "$crate_dir/examples/paxos.rs" "$peer/src/main.rs"
cargo build -q --release --manifest-path "$peer/Cargo.toml" --target-dir "$peer/target"
[ -e bench/peers/stateright-paxos/Cargo.lock ] || cp "$peer/Cargo.lock" bench/peers/stateright-paxos/Cargo.lock
PAXOS=$peer/target/release/stateright-paxos

out=$(mktemp)
trap 'rm -f "$out"' EXIT
row() { # LABEL THREADS: reads "$out" (the program's stdout, then GNU time's line: wall s, RSS KiB, exit status)
  python3 - "$1" "$2" "$out" "$LIMIT" <<'PY'
import json, re, sys
label, threads, path, limit = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
text = open(path).read().strip().splitlines()
wall, rss_kib, status = text[-1].split()
wall, rss_kib, status = float(wall), int(rss_kib), int(status)
body = "\n".join(text[:-1])
rss = rss_kib * 1024
states = unique = secs = None
done = "yes"
if body.lstrip().startswith("{"):                       # ringleader check --json
    v = json.loads(body[body.index("{"):])
    states, unique, secs = v["states"], v["unique_states"], round(v["seconds"], 2)
    if not v["complete"]:
        done = "no: " + (v.get("bounded_by") or "decided early")
else:                                                   # stateright's WriteReporter
    m = re.findall(r"Done\. states=(\d+), unique=(\d+), depth=\d+, sec=(\d+)", body)
    if m:
        states, unique, secs = int(m[-1][0]), int(m[-1][1]), wall  # it prints whole seconds
    else:
        m = re.findall(r"states=(\d+), unique=(\d+)", body)
        if m:
            states, unique = int(m[-1][0]), int(m[-1][1])
if status == 124:
    done = f"no: over {limit} s"
    secs = wall
elif status not in (0, 2) and done == "yes":
    done = f"no: exit {status}"
fmt = lambda x: f"{x:,}" if isinstance(x, int) else "—"
rate = f"{unique / secs:,.0f}" if unique and secs else "—"
per = f"{rss / unique:,.0f}" if unique else "—"
print(f"| {label} | {threads} | {fmt(states)} | {fmt(unique)} | {secs if secs is not None else '—'} | {rate} | {rss / 2**20:,.0f} | {per} | {done} |")
PY
}

measure() { # LABEL THREADS COMMAND...: runs COMMAND under timeout and GNU time into "$out"
  local label=$1 threads=$2
  shift 2
  local cpus=0
  [ "$threads" -gt 1 ] && cpus="0-$((threads - 1))"
  set +e
  # ringleader stops itself at --max-time and reports; the peer is stopped by timeout (a little
  # later, so that ours is never the one killed).
  taskset -c "$cpus" /usr/bin/time -f "%e %M %x" -o "$out.time" timeout "$((LIMIT + 5))" "$@" >"$out" 2>/dev/null
  set -e
  tail -n1 "$out.time" >>"$out"
  row "$label" "$threads"
}

echo "| search | threads | states | unique | seconds | unique states / s | peak RSS MiB | bytes / unique state | finished |"
echo "|---|---|---|---|---|---|---|---|---|"
for t in $THREADS; do
  measure "stateright's paxos example, 3 servers, 3 clients (check-bfs)" "$t" "$PAXOS" check-bfs 3
done
check() { # LABEL ARGS...
  local label=$1
  shift
  for t in $THREADS; do
    measure "$label" "$t" "$BIN" check "$@" --threads "$t" --exhaustive --max-memory "$MEMORY" \
      --max-time "${LIMIT}s" --json
  done
}
for search in bfs dfs por; do
  check "suzuki-kasami, 4 nodes, 2 acquires, $search" --algo suzuki-kasami --nodes 4 --acquires 2 --search $search
  check "ricart-agrawala, 4 nodes, 2 acquires, $search" --algo ricart-agrawala --nodes 4 --acquires 2 --search $search
  check "lamport (FIFO links), 4 nodes, 2 acquires, $search" --algo lamport --nodes 4 --acquires 2 --network ordered --search $search
  check "central, 1 crash, 4 nodes, 2 acquires, $search" --algo central --nodes 4 --acquires 2 --crashes 1 --search $search
done
# Symmetry reduction (depth-first): Suzuki-Kasami under rotations, beside the same search without it.
check "suzuki-kasami, 4 nodes, all ask twice, dfs" --algo suzuki-kasami --nodes 4 --requesters all --acquires 2 --search dfs
check "suzuki-kasami, 4 nodes, all ask twice, dfs + symmetry" --algo suzuki-kasami --nodes 4 --requesters all --acquires 2 --symmetry
rm -f "$out.time"
