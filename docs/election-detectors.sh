#!/bin/sh
# Measures the detector comparison of docs/ELECTIONS.md ("Which failure detector") and prints
# the table. Usage: docs/election-detectors.sh [path/to/ringleader]
#   (default: cargo run --release -q --)
# Bully, 5 processes, heartbeats every 5 ms, latency log-normal (median 1 ms, σ = 0.5; bound
# 6.4 ms, so T = 12.9 ms and suspect_after defaults to 17.9 ms). Coordinator 5 is paused from
# 500 to 520 ms and crashes at 1500 ms; 3 s; seeds 1..20. Per setting, summed or averaged
# over the seeds:
# - false suspicions: LeaderLost reported by a follower whose coordinator was alive, during the
#   pause (500..540 ms) and elsewhere (network jitter alone);
# - split brain: runs where the uniqueness checker fires;
# - silence before suspecting: for the first follower to report LeaderLost after the crash,
#   ms from its last heartbeat's arrival to that report (the detector's deadline);
# - crash → new leader: ms from the crash to the first "I lead" claim after it. The crash falls
#   on one of the coordinator's beat instants, so the silence starts 5 ms before it.
set -eu
RL=${1:-"cargo run --release -q --"}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
CRASH=1500000000
measure() { # reads a trace on stdin; prints: pause_fs other_fs ms_silent ms_to_claim
  jq -rs --argjson crash $CRASH '
    reduce .[] as $r ({crashed: [], leader: {}, beat: {}, fp: 0, fo: 0, first: null, claim: null};
      ($r.uid | tostring) as $me
      | if $r.kind == "crash" then .crashed += [$r.uid]
        elif $r.kind == "deliver" and $r.msg_kind == "heartbeat" then .beat[$me] = $r.time_ns
        elif $r.kind == "recover" then .crashed -= [$r.uid]
        elif $r.kind == "emit" and $r.event.event == "leader" then
          .leader[$me] = $r.event.leader
          | if $r.time_ns > $crash and .claim == null and $r.event.leader == $r.uid
            then .claim = $r.time_ns else . end
        elif $r.kind == "emit" and $r.event.event == "leader_lost" then
          .leader[$me] as $l
          | del(.leader[$me])
          | if $l == null then .
            elif (.crashed | index($l)) == null then
              if $r.time_ns >= 500000000 and $r.time_ns <= 540000000 then .fp += 1 else .fo += 1 end
            elif $r.time_ns > $crash and .first == null then .first = $r.time_ns - .beat[$me]
            else . end
        else . end)
    | "\(.fp) \(.fo) \(.first / 1e6) \((.claim - $crash) / 1e6)"'
}
row() { # label -- extra sim args
  label=$1; shift 2
  for seed in $(seq 1 20); do
    split=$($RL sim --algo bully --nodes 5 --latency lognormal:1ms,0.5 --param heartbeat=5ms \
      --pause 5@500ms..520ms --crash 5@1500ms --duration 3s --seed "$seed" "$@" \
      --json --trace "$TMP/t.jsonl" | jq '[.violations[] | select(.property == "uniqueness")] | length')
    echo "$split $(measure < "$TMP/t.jsonl")"
  done | awk -v label="$label" '
    { split_runs += ($1 > 0); fp += $2; fo += $3; s += $4; c += $5
      if (NR == 1 || $5 < cmin) cmin = $5; if (NR == 1 || $5 > cmax) cmax = $5 }
    END { printf "| %s | %d | %d | %d/20 | %.1f | %.1f (%.1f–%.1f) |\n", label, fp, fo, split_runs, s / NR, c / NR, cmin, cmax }'
}
echo '| detector | false suspicions in the pause | elsewhere | split brain | silence before suspecting, ms | crash → new leader, ms (min–max) |'
echo '|---|---:|---:|---:|---:|---:|'
row "heartbeat, suspect_after = 17.9 ms (default)" -- --param detector=heartbeat
row "heartbeat, suspect_after = 10 ms" -- --param detector=heartbeat --param suspect_after=10ms
row "phi-accrual, Φ = 3" -- --param detector=phi-accrual --param phi=3
row "phi-accrual, Φ = 8 (default)" -- --param detector=phi-accrual
row "phi-accrual, Φ = 16" -- --param detector=phi-accrual --param phi=16
