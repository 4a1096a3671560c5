#!/bin/sh
# Measures the election costs of docs/ELECTIONS.md with the simulator and prints the table.
# Usage: docs/election-costs.sh [path/to/ringleader]   (default: cargo run --release -q --)
# Messages are sends excluding detection (heartbeats, ACKs); ids 1..N, constant 1 ms latency.
set -eu
RL=${1:-"cargo run --release -q --"}
sim() { $RL sim --json "$@"; }
cost() { jq -r '"\(.messages.sent - .messages.detection) | \(.messages.by_kind | to_entries | map(select(.key != "heartbeat" and .key != "ack")) | map("\(.key) \(.value)") | join(", ")) | \(.outcome.leader) | \(.outcome.election_ms)"'; }
row() { # name case N textbook -- sim args
  name=$1 case=$2 n=$3 book=$4; shift 5
  printf '| %s | %s | %s | %s | %s |\n' "$name" "$case" "$n" "$book" "$(sim "$@" | cost)"
}
echo '| algorithm | case | N | textbook | measured | by kind | leader | ms to the last leader event |'
echo '|---|---|---|---|---|---|---|---|'
for n in 4 8 16 32; do
  m=$((n - 1))
  row bully "worst: id 1 detects, N crashed" $n "N²−N−1 = $((n * n - n - 1))" -- --algo bully --nodes $n --crash $n@0 --initiators lowest
  row bully "best: id N−1 detects, N crashed" $n "N−1 = $m" -- --algo bully --nodes $n --crash $n@0 --initiators $m
  row ring "one initiator" $n "2N = $((2 * n))" -- --algo ring --nodes $n --initiators lowest
  row ring "one initiator, N crashed" $n "2(N−1)+1 = $((2 * m + 1))" -- --algo ring --nodes $n --crash $n@0 --initiators lowest
  row ring "all initiate" $n "2N² = $((2 * n * n))" -- --algo ring --nodes $n --initiators all
  row chang-roberts "all initiate, ascending" $n "2N−1 + N = $((3 * n - 1))" -- --algo chang-roberts --nodes $n --initiators all --ids ascending
  row chang-roberts "all initiate, descending" $n "N(N+1)/2 + N = $((n * (n + 1) / 2 + n))" -- --algo chang-roberts --nodes $n --initiators all --ids descending
  row chang-roberts "one initiator (id 1)" $n "3N−1 = $((3 * n - 1))" -- --algo chang-roberts --nodes $n --initiators lowest
  row majority "uncontested (id 1 stands)" $n "2(N−1) = $((2 * m))" -- --algo majority --nodes $n --initiators lowest --duration 10ms
done
