#!/bin/sh
# The lab's overhead: messages routed per second and the time the harness adds per message.
#
#   sh lab/overhead.sh [ENTRIES]      (from the repository's root; ENTRIES per node, default 100)
#
# Five Python Ricart-Agrawala nodes (lab/examples/mutex_ra.py) enter the critical section
# ENTRIES times each, 8 messages per entry:
# - lockstep: the lab hands one input at a time to one node and waits for its lab_done, so the
#   wall time per step is the harness's round trip plus the node's own handling of the line;
# - real time, zero latency, no hold or think time: every node runs concurrently and the
#   lab routes as fast as the nodes write, so messages per second is the routing throughput.
# RINGLEADER=path/to/ringleader picks the binary (default: the debug build, built if missing).
set -eu
ENTRIES=${1:-100}
BIN=${RINGLEADER:-target/debug/ringleader}
[ -x "$BIN" ] || cargo build -q -p ringleader
run() {
  "$BIN" lab run --family mutex --bin 'python3 lab/examples/mutex_ra.py' --nodes 5 \
    --entries "$ENTRIES" --json "$@" |
    python3 -c 'import json,sys; r=json.load(sys.stdin); m=r["messages"]; s=r["steps"]; w=r["wall_ms"]/1e3; print("  %d messages, %d steps, %.3f s wall: %.0f messages/s, %.0f us per step" % (m, s, w, m/w, 1e6*w/s))'
}
echo "lockstep (one input at a time, waits for lab_done):"
run --lockstep
echo "real time, zero latency, no hold, no think:"
run --latency constant:0ms --hold 0ms --think 0ms
