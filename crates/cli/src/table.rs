//! `ringleader table`: every algorithm under the workload its textbook cost is stated for,
//! measured by the simulator and printed beside the formula.
//!
//! Each [`Case`] names an algorithm, the textbook workload (an id arrangement and initiators, a
//! request pattern, a number of rounds), the formula as text, and a `judge` that turns one
//! finished run into the numbers of a row: how many operations completed, how many messages the
//! formula counts, and the formula's total over the same operations. Totals are compared as
//! integers; per-operation values are only for display. A row's verdict is `exact` when the
//! measured total equals the formula's, `within` when the formula is an upper bound and the
//! measured total is below it, and `off` otherwise — a bug in an algorithm, in the simulator or
//! in this table, which makes the command exit with status 2.
//!
//! Runs use the simulator's defaults unless a case says otherwise: constant 1 ms latency, seed 1,
//! no faults. Nothing here reads a clock or iterates a hash map, so the output is the same bytes
//! on every run.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use anyhow::bail;
use clap::Args;
use ringleader_core::trace::{RecordKind, TraceRecord};
use ringleader_core::{Event, NodeId, Request};
use ringleader_sim::notation::At;
use ringleader_sim::scenario::{IdArrangement, Initiators, WorkloadKind};
use ringleader_sim::{Report, RunConfig, RunOptions};
use serde::Serialize;

/// `ringleader table --help`: what the table is, what each column means, what is left out.
pub const LONG_ABOUT: &str = "\
Measured messages per operation beside the textbook formula, for every algorithm.

Runs every election and mutual-exclusion algorithm of `ringleader list`, and the clock,
deadlock and failure-detector algorithms that the textbooks give a message cost per
operation (cristian, berkeley, ntp, chandy-misra-haas, heartbeat, phi-accrual), each under
the workload its textbook cost is stated for, for a few N. Every run is the simulator's,
with its defaults unless the workload says otherwise: seed 1, constant 1 ms latency, no
faults, ids 1..N ascending. The output is the same bytes on every run.

Columns:
  algorithm  the --algo name
  workload   the textbook case: id arrangement, initiators, crashes, request pattern
             (sequential: one request at a time, requesters 1, 2, ... in turn, node 0
             the coordinator, token holder or tree root)
  N          number of processes
  per        what the cost is per: election, entry (critical-section entry), sync,
             round, poll, detection, period, normal node
  measured   messages the formula counts, per operation: sends over the network (a
             send to a crashed process counts; a message to oneself does not);
             `(gossip)` or `(probe)` when the formula counts one kind only
  by kind    the measured run's messages split by kind, per operation
  formula    the textbook cost: `=` an exact count, `≤` an upper bound
  value      the formula's value for this N (and this run's operations), per operation
  verdict    exact: measured = formula; within: measured < bound; off: a bug (a count,
             a kind's count or a checked property disagrees), exit status 2

Counts exclude detection traffic, which runs report apart: heartbeats, the ring
election's and the token ring's ACKs, the central coordinator's PROBE/ALIVE. The
failure-detector rows are the exception: there the heartbeats are the algorithm.

Left out, because the textbooks give them no message cost per operation:
lamport-clock and vector-clock (their timestamps ride on the application's messages),
make (seed 004's two-node story), wait-die and wound-wait (their messages depend on the
workload's conflicts).

With --json, each row also has its operation count, totals, the kind it counts, and
`repro`: the `ringleader sim` command that reproduces its run. docs/COSTS.md holds the
default table and says where the measured shape and the textbook's differ.

Exit status: 0 when every row is exact or within, 2 when a row is off, 1 for bad input.

Examples:
  ringleader table
  ringleader table --family mutex --nodes 9
  ringleader table --algo bully --nodes 10 --json
  ringleader table --markdown";

/// The flags of `ringleader table` (the long help is [`LONG_ABOUT`]).
#[derive(Args, Debug)]
pub struct TableArgs {
    /// Only this family's algorithms.
    #[arg(long, value_name = "F", value_parser = ["election", "mutex", "clock", "deadlock", "detector"])]
    family: Option<String>,
    /// Only this algorithm (see `ringleader list`).
    #[arg(long, value_name = "NAME")]
    algo: Option<String>,
    /// Sizes to run, e.g. 4,8,16 (1..=256) [default: a few sizes suited to each algorithm];
    /// sizes an algorithm's textbook case cannot take (maekawa needs a perfect square) are
    /// skipped and listed.
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = parse_size)]
    nodes: Vec<u32>,
    /// Print one JSON object: {"rows": [...], "skipped": [...]}.
    #[arg(long, conflicts_with = "markdown")]
    json: bool,
    /// Print a Markdown table (what docs/COSTS.md holds).
    #[arg(long)]
    markdown: bool,
}

/// The largest size `--nodes` takes: beyond it the quadratic cases (the ring's N concurrent
/// elections carrying lists of N ids, N(N−1) heartbeats per period) take minutes in a debug
/// build; `ringleader sim` runs larger ones.
const MAX_NODES: u32 = 256;

/// One `--nodes` size.
fn parse_size(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(n) if (1..=MAX_NODES).contains(&n) => Ok(n),
        _ => Err(format!(
            "a size must be a whole number from 1 to {MAX_NODES}, e.g. --nodes 4,8,16 (`ringleader sim` runs larger ones)"
        )),
    }
}

/// Critical-section entries per mutual-exclusion row.
const ENTRIES: u64 = 10;
/// Synchronization rounds per clock row (period 1 s).
const CLOCK_ROUNDS: u64 = 5;
/// Heartbeat periods per detector row (period 10 ms).
const DETECTOR_PERIODS: u64 = 10;
/// Seeds per Chandy-Misra-Haas row (each run finds only a deadlock or two).
const CMH_SEEDS: u64 = 20;
/// Chord's identifier bits in the DHT row.
const DHT_BITS: u64 = 32;
/// Gossip fan-out in the geometric super-peer row.
const GOSSIP_FANOUT: u64 = 2;
/// Gossip round period of the geometric super-peer row, in ns (its default, 10 ms).
const GOSSIP_PERIOD: u64 = 10_000_000;

/// Whether `kind` is detection traffic for `algorithm` (what `Message::is_detection` says of
/// its messages): heartbeats and ACKs everywhere, PROBE and ALIVE in the centralized
/// coordinator only (Chandy-Misra-Haas' PROBE is the algorithm). A kind missed here would make
/// the kinds shown disagree with the report's own count, and the row `off`.
fn is_detection(algorithm: &str, kind: &str) -> bool {
    match kind {
        "heartbeat" | "ack" => true,
        "probe" | "alive" => algorithm.starts_with("central"),
        _ => false,
    }
}

/// One finished run, as a case's judge sees it.
struct Measured<'a> {
    cfg: &'a RunConfig,
    report: &'a Report,
    records: &'a [TraceRecord],
}

impl Measured<'_> {
    /// N.
    fn n(&self) -> u64 {
        u64::from(self.cfg.nodes)
    }

    /// Sends of kind `k` (0 when the algorithm has no such kind).
    fn kind(&self, k: &str) -> u64 {
        self.report.messages.by_kind.get(k).copied().unwrap_or(0)
    }

    /// Every message but detection counts; `ops` operations, formula total `value`.
    fn all(&self, ops: u64, value: u64) -> Judged {
        let by_kind: BTreeMap<String, u64> = self
            .report
            .messages
            .by_kind
            .iter()
            .filter(|&(k, &v)| v > 0 && !is_detection(&self.cfg.algorithm, k))
            .map(|(k, &v)| (k.clone(), v))
            .collect();
        let measured = self.report.messages.sent - self.report.messages.detection;
        let mut j = Judged { ops, measured, value, by_kind, counted: None, problems: Vec::new() };
        let sum: u64 = j.by_kind.values().sum();
        if sum != measured {
            j.problems.push(format!(
                "the kinds shown add up to {sum}, the report says {measured} non-detection sends"
            ));
        }
        j
    }

    /// Only the kind `counted` counts (the formula is about it alone); every kind is shown.
    fn only(&self, counted: &'static str, ops: u64, value: u64) -> Judged {
        let by_kind: BTreeMap<String, u64> = self
            .report
            .messages
            .by_kind
            .iter()
            .filter(|&(_, &v)| v > 0)
            .map(|(k, &v)| (k.clone(), v))
            .collect();
        Judged {
            ops,
            measured: self.kind(counted),
            value,
            by_kind,
            counted: Some(counted),
            problems: Vec::new(),
        }
    }
}

/// A run's numbers, before they become a row.
struct Judged {
    /// Operations completed.
    ops: u64,
    /// Messages the formula counts, over all operations.
    measured: u64,
    /// The formula's total over the same operations.
    value: u64,
    /// Messages by kind (totals).
    by_kind: BTreeMap<String, u64>,
    /// The one kind the formula counts, if not all non-detection messages.
    counted: Option<&'static str>,
    /// Checks beyond the total that failed (a kind's exact count, a detection's probes …).
    problems: Vec<String>,
}

impl Judged {
    /// Also requires `kind` to total exactly `want`.
    fn kind(mut self, kind: &str, want: u64) -> Judged {
        let got = self.by_kind.get(kind).copied().unwrap_or(0);
        if got != want {
            self.problems.push(format!("{kind}: {got} sent, the textbook says {want}"));
        }
        self
    }

    /// Adds another seed's numbers to these.
    fn add(&mut self, other: Judged) {
        self.ops += other.ops;
        self.measured += other.measured;
        self.value += other.value;
        for (k, v) in other.by_kind {
            *self.by_kind.entry(k).or_default() += v;
        }
        self.problems.extend(other.problems);
    }
}

/// Rows whose operation count the table derives itself rather than reads from the run's
/// `per_operation`: the gossip rounds are bounded from the run's length (each node's rounds are
/// `period` apart), which is what the formula is stated over.
const OPS_COUNTED_APART: &[&str] = &["superpeer-geometric"];

/// One textbook case of one algorithm.
struct Case {
    /// The `--algo` name.
    algorithm: &'static str,
    /// The workload, as the row shows it.
    workload: &'static str,
    /// The operation the cost is per.
    per: &'static str,
    /// The formula, as text.
    formula: &'static str,
    /// True when the formula is an upper bound, false when it is the exact cost.
    bound: bool,
    /// The default sizes.
    sizes: &'static [u32],
    /// `Err(why)` for a size the case cannot take.
    domain: fn(u32) -> Result<(), &'static str>,
    /// Seeded runs per row (their numbers add up).
    runs: u64,
    /// Whether the judge needs the trace.
    trace: bool,
    /// Sets the run up (the configuration arrives with `nodes` and every default).
    configure: fn(&mut RunConfig),
    /// Turns the finished run into numbers.
    judge: fn(&Measured) -> Judged,
}

/// The domain of most cases: a single process sends nothing.
fn at_least_2(n: u32) -> Result<(), &'static str> {
    if n >= 2 { Ok(()) } else { Err("needs N ≥ 2") }
}

/// Cases with a crashed process and two live ones, or a requester besides the token holder.
fn at_least_3(n: u32) -> Result<(), &'static str> {
    if n >= 3 { Ok(()) } else { Err("needs N ≥ 3") }
}

/// Maekawa's formula is for square grids.
fn square(n: u32) -> Result<(), &'static str> {
    let s = n.isqrt();
    if s >= 2 && s * s == n { Ok(()) } else { Err("needs a perfect square N ≥ 4 for its grid quorums") }
}

/// ⌈log2 n⌉ (0 for n ≤ 1).
fn ceil_log2(n: u64) -> u64 {
    u64::from(n.max(1).next_power_of_two().trailing_zeros())
}

/// `--crash UID@0`.
fn crash(uid: u64) -> Vec<At> {
    vec![At { uid, time: 0 }]
}

/// The mutual-exclusion workload: `sequential`, [`ENTRIES`] entries.
fn sequential(cfg: &mut RunConfig) {
    cfg.workload = Some(WorkloadKind::Sequential);
    cfg.entries = ENTRIES;
}

/// YoYo's edge count: 2N, or the complete graph when that is fewer.
fn yoyo_edges(n: u64) -> u64 {
    (2 * n).min(n * (n - 1) / 2)
}

/// Quorum's coordinators in its row: a majority-sized set, ⌊N/2⌋ + 1.
fn quorum_coordinators(n: u64) -> u64 {
    n / 2 + 1
}

/// Token-ring messages under `sequential` from its parking rule (docs/MUTEX.md): a requester
/// `j` with the token parked at `p ≠ j` sends one REQUEST, the token travels `d(p, j)` hops to
/// it and then an idle lap of `N` hops back to `j`, where it parks; with the token parked at `j`
/// itself the entry costs only the lap.
fn token_ring_total(n: u64, entries: u64) -> u64 {
    let (mut total, mut parked) = (0, 0);
    for e in 0..entries {
        let j = 1 + e % (n - 1);
        if j != parked {
            total += 1 + (j + n - parked) % n;
        }
        total += n;
        parked = j;
    }
    total
}

/// Raymond's messages under `sequential` on its balanced binary tree (parent of i is (i−1)/2,
/// the token at the root): an entry by requester j costs 2·d(previous holder, j) — d REQUESTs
/// along the tree path to the holder, d PRIVILEGE hops back.
fn raymond_total(n: u64, entries: u64) -> u64 {
    let depth = |mut i: u64| {
        let mut d = 0;
        while i > 0 {
            i = (i - 1) / 2;
            d += 1;
        }
        d
    };
    let distance = |mut a: u64, mut b: u64| {
        let mut d = 0;
        while a != b {
            if depth(a) >= depth(b) {
                a = (a - 1) / 2;
            } else {
                b = (b - 1) / 2;
            }
            d += 1;
        }
        d
    };
    let (mut total, mut holder) = (0, 0);
    for e in 0..entries {
        let j = 1 + e % (n - 1);
        total += 2 * distance(holder, j);
        holder = j;
    }
    total
}

/// Chandy-Misra-Haas from the trace: for every `DeadlockDetected` (report only: the initiator
/// reports), the probes its initiation sent against the length of the cycle it found.
fn cmh_detections(m: &Measured) -> Judged {
    let n = m.cfg.nodes as usize;
    let mut wait = vec![0u64; n];
    let mut probes: BTreeMap<(NodeId, u64), u64> = BTreeMap::new();
    let mut found: Vec<((NodeId, u64), u64)> = Vec::new();
    for r in m.records {
        let node = r.node.unwrap_or(0);
        match r.kind {
            RecordKind::Request => {
                if let Some(Request::WaitFor { holders }) = &r.request
                    && !holders.is_empty()
                {
                    wait[node as usize] += 1;
                }
            }
            RecordKind::Emit => {
                if let Some(Event::DeadlockDetected { cycle }) = &r.event {
                    found.push(((node, wait[node as usize]), cycle.len() as u64));
                }
            }
            RecordKind::Send if r.msg_kind.as_deref() == Some("probe") => {
                let p = r.msg.as_ref().map(|v| &v["Probe"]);
                let key =
                    p.and_then(|p| Some((p["initiator"].as_u64()? as NodeId, p["path"][0][1].as_u64()?)));
                if let Some(key) = key {
                    *probes.entry(key).or_default() += 1;
                }
            }
            _ => {}
        }
    }
    let mut j = Judged {
        ops: found.len() as u64,
        measured: 0,
        value: 0,
        by_kind: BTreeMap::new(),
        counted: Some("probe"),
        problems: Vec::new(),
    };
    for (key, len) in found {
        let sent = probes.get(&key).copied().unwrap_or(0);
        j.measured += sent;
        j.value += len;
        if sent != len {
            j.problems.push(format!(
                "seed {}: the detection by node {} sent {sent} probes for a cycle of {len}",
                m.cfg.seed, key.0
            ));
        }
    }
    j.by_kind.insert("probe".into(), j.measured);
    j
}

/// Every case of the table, in `ringleader list` order.
fn cases() -> Vec<Case> {
    const ELECTION: &[u32] = &[4, 8, 16];
    const MUTEX: &[u32] = &[4, 9, 16];
    const CLOCK: &[u32] = &[4, 8, 16];
    vec![
        // ---------------------------------------------------------------- elections
        Case {
            algorithm: "chang-roberts",
            workload: "worst case: ids descending, all initiate",
            per: "election",
            formula: "N(N+1)/2 + N",
            bound: false,
            sizes: ELECTION,
            domain: at_least_2,
            runs: 1,
            trace: false,
            configure: |c| {
                c.ids = IdArrangement::Descending;
                c.initiators = Initiators::All;
            },
            judge: |m| {
                let n = m.n();
                m.all(1, n * (n + 1) / 2 + n).kind("election", n * (n + 1) / 2).kind("elected", n)
            },
        },
        Case {
            algorithm: "chang-roberts",
            workload: "best case: ids ascending, all initiate",
            per: "election",
            formula: "2N−1 + N",
            bound: false,
            sizes: ELECTION,
            domain: at_least_2,
            runs: 1,
            trace: false,
            configure: |c| c.initiators = Initiators::All,
            judge: |m| {
                let n = m.n();
                m.all(1, 3 * n - 1).kind("election", 2 * n - 1).kind("elected", n)
            },
        },
        Case {
            algorithm: "chang-roberts",
            workload: "one initiator (id 1), its predecessor holds the max",
            per: "election",
            formula: "3N−1",
            bound: false,
            sizes: ELECTION,
            domain: at_least_2,
            runs: 1,
            trace: false,
            configure: |c| c.initiators = Initiators::Lowest,
            judge: |m| {
                let n = m.n();
                m.all(1, 3 * n - 1).kind("election", 2 * n - 1).kind("elected", n)
            },
        },
        Case {
            algorithm: "chang-roberts",
            workload: "one initiator holding the max (id N)",
            per: "election",
            formula: "2N",
            bound: false,
            sizes: ELECTION,
            domain: at_least_2,
            runs: 1,
            trace: false,
            configure: |c| c.initiators = Initiators::Highest,
            judge: |m| {
                let n = m.n();
                m.all(1, 2 * n).kind("election", n).kind("elected", n)
            },
        },
        Case {
            algorithm: "bully",
            workload: "worst case: N crashed, id 1 detects",
            per: "election",
            formula: "N²−N−1",
            bound: false,
            sizes: ELECTION,
            domain: at_least_2,
            runs: 1,
            trace: false,
            configure: |c| {
                c.crash = crash(u64::from(c.nodes));
                c.initiators = Initiators::Lowest;
            },
            judge: |m| {
                let n = m.n();
                m.all(1, n * n - n - 1)
                    .kind("election", n * (n - 1) / 2)
                    .kind("answer", (n - 1) * (n - 2) / 2)
                    .kind("coordinator", n - 2)
            },
        },
        Case {
            algorithm: "bully",
            workload: "best case: N crashed, id N−1 detects",
            per: "election",
            formula: "N−1",
            bound: false,
            sizes: ELECTION,
            domain: at_least_2,
            runs: 1,
            trace: false,
            configure: |c| {
                let n = u64::from(c.nodes);
                c.crash = crash(n);
                c.initiators = Initiators::Ids(vec![n - 1]);
            },
            judge: |m| {
                let n = m.n();
                m.all(1, n - 1).kind("election", 1).kind("answer", 0).kind("coordinator", n - 2)
            },
        },
        Case {
            algorithm: "ring",
            workload: "one initiator (id 1)",
            per: "election",
            formula: "2N",
            bound: false,
            sizes: ELECTION,
            domain: at_least_2,
            runs: 1,
            trace: false,
            configure: |c| c.initiators = Initiators::Lowest,
            judge: |m| {
                let n = m.n();
                m.all(1, 2 * n).kind("election", n).kind("coordinator", n)
            },
        },
        Case {
            algorithm: "ring",
            workload: "one initiator (id 1), N crashed: one dead successor",
            per: "election",
            formula: "2(N−1) + 1",
            bound: false,
            sizes: ELECTION,
            domain: at_least_3,
            runs: 1,
            trace: false,
            configure: |c| {
                c.crash = crash(u64::from(c.nodes));
                c.initiators = Initiators::Lowest;
            },
            judge: |m| {
                let n = m.n();
                m.all(1, 2 * (n - 1) + 1).kind("election", n).kind("coordinator", n - 1)
            },
        },
        Case {
            algorithm: "ring",
            workload: "all initiate (k = N concurrent elections)",
            per: "election",
            formula: "2kN = 2N²",
            bound: false,
            sizes: ELECTION,
            domain: at_least_2,
            runs: 1,
            trace: false,
            configure: |c| c.initiators = Initiators::All,
            judge: |m| {
                let n = m.n();
                m.all(1, 2 * n * n).kind("election", n * n).kind("coordinator", n * n)
            },
        },
        Case {
            algorithm: "ring-min",
            workload: "one initiator (id N)",
            per: "election",
            formula: "2N",
            bound: false,
            sizes: ELECTION,
            domain: at_least_2,
            runs: 1,
            trace: false,
            configure: |c| c.initiators = Initiators::Highest,
            judge: |m| {
                let n = m.n();
                m.all(1, 2 * n).kind("election", n).kind("coordinator", n)
            },
        },
        Case {
            algorithm: "ring-min",
            workload: "one initiator (id N), id 1 crashed: one dead successor",
            per: "election",
            formula: "2(N−1) + 1",
            bound: false,
            sizes: ELECTION,
            domain: at_least_3,
            runs: 1,
            trace: false,
            configure: |c| {
                c.crash = crash(1);
                c.initiators = Initiators::Highest;
            },
            judge: |m| {
                let n = m.n();
                m.all(1, 2 * (n - 1) + 1).kind("election", n).kind("coordinator", n - 1)
            },
        },
        Case {
            algorithm: "majority",
            workload: "uncontested: id 1 stands, 10 ms",
            per: "election",
            formula: "2(N−1)",
            bound: false,
            sizes: ELECTION,
            domain: at_least_2,
            runs: 1,
            trace: false,
            configure: |c| {
                c.initiators = Initiators::Lowest;
                c.duration = 10_000_000;
            },
            judge: |m| {
                let n = m.n();
                m.all(1, 2 * (n - 1)).kind("request_vote", n - 1).kind("vote", n - 1)
            },
        },
        Case {
            algorithm: "hirschberg-sinclair",
            workload: "all initiate, random ids",
            per: "election",
            formula: "8N(1+⌈log2 N⌉) + N",
            bound: true,
            sizes: &[8, 16, 64],
            domain: at_least_2,
            runs: 1,
            trace: false,
            configure: |c| {
                c.ids = IdArrangement::Random;
                c.initiators = Initiators::All;
            },
            judge: |m| {
                let n = m.n();
                m.all(1, 8 * n * (1 + ceil_log2(n)) + n).kind("elected", n)
            },
        },
        Case {
            algorithm: "yoyo",
            workload: "random connected graph, m = 2N edges, random ids, one initiator",
            per: "election",
            formula: "2m + 2m(⌈log2 N⌉+1) + (2m−N+1)",
            bound: true,
            sizes: &[8, 16, 64],
            domain: at_least_2,
            runs: 1,
            trace: false,
            configure: |c| {
                c.ids = IdArrangement::Random;
                c.initiators = Initiators::Lowest;
                c.edges = Some(yoyo_edges(u64::from(c.nodes)));
            },
            judge: |m| {
                let (n, e) = (m.n(), yoyo_edges(m.n()));
                m.all(1, 2 * e + 2 * e * (ceil_log2(n) + 1) + (2 * e - n + 1))
                    .kind("setup", 2 * e)
                    .kind("coordinator", 2 * e - n + 1)
            },
        },
        Case {
            algorithm: "superpeer-dht",
            workload: "Chord, 32-bit ids, fraction 0.01",
            per: "normal node",
            formula: "m + 2 (≤ m LOOKUP hops, FOUND, JOIN), m = 32",
            bound: true,
            sizes: &[64, 128, 256],
            domain: at_least_2,
            runs: 1,
            trace: false,
            configure: |c| {
                c.params.insert("bits".into(), DHT_BITS.to_string());
            },
            judge: |m| {
                let super_peers = m.report.outcome.get("super_peers").and_then(|v| v.as_u64()).unwrap_or(0);
                let normal = m.n() - super_peers;
                let mut j = m.all(normal, (DHT_BITS + 2) * normal).kind("join", normal);
                if m.kind("found") > normal {
                    j.problems.push(format!("{} FOUND for {normal} normal nodes", m.kind("found")));
                }
                j
            },
        },
        Case {
            algorithm: "superpeer-geometric",
            workload: "unit torus, fraction 0.02, gossip to f = 2 neighbours",
            per: "round",
            formula: "f·N + PULL (pushes, PULL answers)",
            bound: true,
            sizes: &[64, 128, 256],
            domain: at_least_2,
            runs: 1,
            trace: false,
            configure: |c| {
                c.params.insert("fanout".into(), GOSSIP_FANOUT.to_string());
            },
            judge: |m| {
                // A node pushes at most f GOSSIP per round of its own; its rounds are `period`
                // apart, so it has at most ⌊end / period⌋ + 1 of them. Each PULL is answered
                // with one GOSSIP.
                let end_ns = (m.report.sim_time * 1e6).round() as u64;
                let rounds = end_ns / GOSSIP_PERIOD + 1;
                m.only("gossip", rounds, GOSSIP_FANOUT * m.n() * rounds + m.kind("pull"))
            },
        },
        // ---------------------------------------------------------------- mutual exclusion
        Case {
            algorithm: "central",
            workload: "sequential, 10 entries",
            per: "entry",
            formula: "3 (REQUEST, GRANT, RELEASE)",
            bound: false,
            sizes: MUTEX,
            domain: at_least_2,
            runs: 1,
            trace: false,
            configure: sequential,
            judge: |m| {
                m.all(ENTRIES, 3 * ENTRIES)
                    .kind("request", ENTRIES)
                    .kind("grant", ENTRIES)
                    .kind("release", ENTRIES)
            },
        },
        Case {
            algorithm: "central-timeout",
            workload: "sequential, 10 entries",
            per: "entry",
            formula: "3 (REQUEST, GRANT, RELEASE)",
            bound: false,
            sizes: MUTEX,
            domain: at_least_2,
            runs: 1,
            trace: false,
            configure: sequential,
            judge: |m| {
                m.all(ENTRIES, 3 * ENTRIES)
                    .kind("request", ENTRIES)
                    .kind("grant", ENTRIES)
                    .kind("release", ENTRIES)
            },
        },
        Case {
            algorithm: "token-ring",
            workload: "sequential, 10 entries; the token parks after an idle lap",
            per: "entry",
            formula: "N + d + 1 (REQUEST, d hops, idle lap of N)",
            bound: false,
            sizes: MUTEX,
            domain: at_least_2,
            runs: 1,
            trace: false,
            configure: sequential,
            judge: |m| m.all(ENTRIES, token_ring_total(m.n(), ENTRIES)),
        },
        Case {
            algorithm: "quorum",
            workload: "sequential, 10 entries; n = ⌊N/2⌋+1 coordinators, requesters outside them",
            per: "entry",
            formula: "3n (REQUEST, GRANT, RELEASE to each coordinator)",
            bound: false,
            sizes: MUTEX,
            domain: at_least_3,
            runs: 1,
            trace: false,
            configure: |c| {
                sequential(c);
                let n = u64::from(c.nodes);
                let k = quorum_coordinators(n);
                c.params.insert("coordinators".into(), k.to_string());
                c.requesters = Some((k + 1..=n).collect());
            },
            judge: |m| {
                let k = quorum_coordinators(m.n());
                m.all(ENTRIES, 3 * k * ENTRIES)
                    .kind("request", k * ENTRIES)
                    .kind("grant", k * ENTRIES)
                    .kind("release", k * ENTRIES)
            },
        },
        Case {
            algorithm: "lamport",
            workload: "sequential, 10 entries",
            per: "entry",
            formula: "3(N−1)",
            bound: false,
            sizes: MUTEX,
            domain: at_least_2,
            runs: 1,
            trace: false,
            configure: sequential,
            judge: |m| {
                let k = m.n() - 1;
                m.all(ENTRIES, 3 * k * ENTRIES)
                    .kind("request", k * ENTRIES)
                    .kind("reply", k * ENTRIES)
                    .kind("release", k * ENTRIES)
            },
        },
        Case {
            algorithm: "ricart-agrawala",
            workload: "sequential, 10 entries",
            per: "entry",
            formula: "2(N−1)",
            bound: false,
            sizes: MUTEX,
            domain: at_least_2,
            runs: 1,
            trace: false,
            configure: sequential,
            judge: |m| {
                let k = m.n() - 1;
                m.all(ENTRIES, 2 * k * ENTRIES).kind("request", k * ENTRIES).kind("reply", k * ENTRIES)
            },
        },
        Case {
            algorithm: "roucairol-carvalho",
            workload: "sequential, 10 entries",
            per: "entry",
            formula: "2(N−1); less while permissions are held",
            bound: true,
            sizes: MUTEX,
            domain: at_least_2,
            runs: 1,
            trace: false,
            configure: sequential,
            judge: |m| m.all(ENTRIES, 2 * (m.n() - 1) * ENTRIES),
        },
        Case {
            algorithm: "maekawa",
            workload: "sequential, 10 entries; √N × √N grid quorums",
            per: "entry",
            formula: "3(K−1), K = 2√N−1",
            bound: false,
            sizes: MUTEX,
            domain: square,
            runs: 1,
            trace: false,
            configure: sequential,
            judge: |m| {
                let k = 2 * m.n().isqrt() - 1;
                m.all(ENTRIES, 3 * (k - 1) * ENTRIES)
                    .kind("request", (k - 1) * ENTRIES)
                    .kind("reply", (k - 1) * ENTRIES)
                    .kind("release", (k - 1) * ENTRIES)
                    .kind("inquire", 0)
                    .kind("yield", 0)
                    .kind("failed", 0)
            },
        },
        Case {
            algorithm: "suzuki-kasami",
            workload: "sequential, 10 entries",
            per: "entry",
            formula: "N (N−1 REQUEST + 1 TOKEN)",
            bound: false,
            sizes: MUTEX,
            domain: at_least_3,
            runs: 1,
            trace: false,
            configure: sequential,
            judge: |m| {
                let n = m.n();
                m.all(ENTRIES, n * ENTRIES).kind("request", (n - 1) * ENTRIES).kind("token", ENTRIES)
            },
        },
        Case {
            algorithm: "raymond",
            workload: "sequential, 10 entries; balanced binary tree, token at the root",
            per: "entry",
            formula: "2d, d = tree distance to the token (≤ 2·diameter)",
            bound: false,
            sizes: MUTEX,
            domain: at_least_2,
            runs: 1,
            trace: false,
            configure: sequential,
            judge: |m| m.all(ENTRIES, raymond_total(m.n(), ENTRIES)),
        },
        // ---------------------------------------------------------------- clocks
        Case {
            algorithm: "cristian",
            workload: "one probe per sync, period 1 s, 5 rounds",
            per: "sync",
            formula: "2 (REQUEST, REPLY)",
            bound: false,
            sizes: CLOCK,
            domain: at_least_2,
            runs: 1,
            trace: false,
            configure: |c| {
                c.params.insert("probes".into(), "1".into());
                clock_rounds(c);
            },
            judge: |m| {
                let syncs = (m.n() - 1) * CLOCK_ROUNDS;
                m.all(syncs, 2 * syncs).kind("request", syncs).kind("reply", syncs)
            },
        },
        Case {
            algorithm: "berkeley",
            workload: "period 1 s, 5 rounds",
            per: "round",
            formula: "3(N−1) (POLL, TIME, ADJUST)",
            bound: false,
            sizes: CLOCK,
            domain: at_least_2,
            runs: 1,
            trace: false,
            configure: clock_rounds,
            judge: |m| {
                let k = (m.n() - 1) * CLOCK_ROUNDS;
                m.all(CLOCK_ROUNDS, 3 * k).kind("poll", k).kind("time", k).kind("adjust", k)
            },
        },
        Case {
            algorithm: "ntp",
            workload: "period 1 s, 5 rounds",
            per: "poll",
            formula: "2 (REQUEST with T1; REPLY with T2, T3)",
            bound: false,
            sizes: CLOCK,
            domain: at_least_2,
            runs: 1,
            trace: false,
            configure: clock_rounds,
            judge: |m| {
                let polls = (m.n() - 1) * CLOCK_ROUNDS;
                m.all(polls, 2 * polls).kind("request", polls).kind("reply", polls)
            },
        },
        // ---------------------------------------------------------------- deadlock
        Case {
            algorithm: "chandy-misra-haas",
            workload: "fanout 1 (one holder per wait), report only, seeds 1–20",
            per: "detection",
            formula: "L probes, L = the cycle's length",
            bound: false,
            sizes: &[4, 6, 8],
            domain: at_least_3,
            runs: CMH_SEEDS,
            trace: true,
            configure: |c| {
                c.fanout = 1;
                c.cycles = 0.5;
                c.entries = 30;
                c.params.insert("resolve".into(), "false".into());
            },
            judge: cmh_detections,
        },
        // ---------------------------------------------------------------- failure detectors
        Case {
            algorithm: "heartbeat",
            workload: "period 10 ms, 10 periods, no faults",
            per: "period",
            formula: "N(N−1) (everyone to everyone)",
            bound: false,
            sizes: CLOCK,
            domain: at_least_2,
            runs: 1,
            trace: false,
            configure: detector_periods,
            judge: |m| {
                let n = m.n();
                m.only("heartbeat", DETECTOR_PERIODS, n * (n - 1) * DETECTOR_PERIODS)
            },
        },
        Case {
            algorithm: "phi-accrual",
            workload: "period 10 ms, 10 periods, no faults",
            per: "period",
            formula: "N(N−1) (everyone to everyone)",
            bound: false,
            sizes: CLOCK,
            domain: at_least_2,
            runs: 1,
            trace: false,
            configure: detector_periods,
            judge: |m| {
                let n = m.n();
                m.only("heartbeat", DETECTOR_PERIODS, n * (n - 1) * DETECTOR_PERIODS)
            },
        },
    ]
}

/// Clock rows: period 1 s; rounds start at 0 s, so 5 rounds end by 4.5 s with nothing in flight.
fn clock_rounds(c: &mut RunConfig) {
    c.params.insert("period".into(), "1s".into());
    c.duration = (CLOCK_ROUNDS - 1) * 1_000_000_000 + 500_000_000;
}

/// Detector rows: period 10 ms; heartbeats start at 0, so 10 periods end by 95 ms.
fn detector_periods(c: &mut RunConfig) {
    c.params.insert("period".into(), "10ms".into());
    c.duration = (DETECTOR_PERIODS - 1) * 10_000_000 + 5_000_000;
}

/// The algorithms `ringleader list` names that have no row, and why.
const LEFT_OUT: [(&str, &str); 5] = [
    ("lamport-clock", "its timestamps ride on the application's messages: it sends none of its own"),
    ("vector-clock", "its vectors ride on the application's messages: it sends none of its own"),
    ("make", "it is seed 004's two-node story, not an algorithm with a cost"),
    ("wait-die", "the textbooks give no message cost: it depends on the workload's conflicts"),
    ("wound-wait", "the textbooks give no message cost: it depends on the workload's conflicts"),
];

/// One line of the table.
#[derive(Debug, Serialize)]
pub struct Row {
    /// The `--algo` name.
    pub algorithm: &'static str,
    /// Its family.
    pub family: &'static str,
    /// The textbook workload.
    pub workload: &'static str,
    /// N.
    pub nodes: u32,
    /// The operation the cost is per.
    pub per: &'static str,
    /// Operations completed (over all runs of the row).
    pub operations: u64,
    /// Seeded runs whose numbers were added up.
    pub runs: u64,
    /// The message kind the formula counts, or `all` (every non-detection message).
    pub counted: &'static str,
    /// Measured messages per operation.
    pub measured: f64,
    /// Measured messages over all operations.
    pub measured_total: u64,
    /// Messages by kind, per operation.
    pub by_kind: BTreeMap<String, f64>,
    /// Detection sends of the runs (heartbeats, ACKs …): never counted, except that the
    /// detector rows count their heartbeats.
    pub detection_total: u64,
    /// The formula, as text.
    pub formula: &'static str,
    /// `=` for an exact cost, `≤` for an upper bound.
    pub relation: &'static str,
    /// The formula's value per operation.
    pub formula_value: f64,
    /// The formula's value over all operations.
    pub formula_total: u64,
    /// `exact`, `within` or `off`.
    pub verdict: &'static str,
    /// What made the row `off` (empty otherwise).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
    /// The `ringleader sim` command that reproduces the (first) run.
    pub repro: String,
}

/// A size a case could not take.
#[derive(Debug, Serialize)]
struct Skipped {
    /// The `--algo` name.
    algorithm: &'static str,
    /// The size asked for.
    nodes: u32,
    /// What the case needs.
    reason: &'static str,
}

/// What `--json` prints.
#[derive(Serialize)]
struct Output<'a> {
    rows: &'a [Row],
    skipped: &'a [Skipped],
}

/// `total / ops`, 0 when nothing completed.
fn per_op(total: u64, ops: u64) -> f64 {
    if ops == 0 { 0.0 } else { total as f64 / ops as f64 }
}

/// Runs one case on `n` nodes.
fn run_case(case: &Case, n: u32) -> anyhow::Result<Row> {
    let family = ringleader_algorithms::find(case.algorithm).map(|i| i.family.name()).unwrap_or("?");
    let mut total: Option<Judged> = None;
    let mut repro = String::new();
    let mut problems = Vec::new();
    let mut detection = 0;
    let mut reported_ops = 0;
    for seed in 1..=case.runs {
        let mut cfg = RunConfig::new(case.algorithm, n)?;
        cfg.seed = seed;
        (case.configure)(&mut cfg);
        let opts = RunOptions { keep_trace: case.trace, ..RunOptions::default() };
        let result = ringleader_sim::run(&cfg, opts)?;
        let report = &result.report;
        detection += report.messages.detection;
        reported_ops += report.per_operation.operations;
        if report.per_operation.unit != case.per {
            problems.push(format!(
                "seed {seed}: the run reports its cost per {}, the formula is per {}",
                report.per_operation.unit, case.per
            ));
        }
        if !report.as_expected() {
            let names: Vec<&str> = report.violations.iter().map(|v| v.property).collect();
            problems.push(format!("seed {seed}: properties violated: {}", names.join(", ")));
        }
        let judged = (case.judge)(&Measured { cfg: &cfg, report, records: &result.records });
        if seed == 1 {
            repro = report.repro.clone();
        }
        match &mut total {
            None => total = Some(judged),
            Some(t) => t.add(judged),
        }
    }
    let j = total.expect("every case runs at least once");
    problems.extend(j.problems);
    if reported_ops != j.ops && !OPS_COUNTED_APART.contains(&case.algorithm) {
        problems.push(format!("the runs report {reported_ops} operations, the table counts {}", j.ops));
    }
    if j.ops == 0 {
        problems.push("no operation completed".into());
    }
    let verdict = if !problems.is_empty() {
        "off"
    } else if j.measured == j.value {
        "exact"
    } else if case.bound && j.measured < j.value {
        "within"
    } else {
        problems.push(format!(
            "measured {} {} the formula's {}",
            j.measured,
            if j.measured < j.value { "is below" } else { "exceeds" },
            j.value
        ));
        "off"
    };
    Ok(Row {
        algorithm: case.algorithm,
        family,
        workload: case.workload,
        nodes: n,
        per: case.per,
        operations: j.ops,
        runs: case.runs,
        counted: j.counted.unwrap_or("all"),
        measured: per_op(j.measured, j.ops),
        measured_total: j.measured,
        by_kind: j.by_kind.iter().map(|(k, &v)| (k.clone(), per_op(v, j.ops))).collect(),
        detection_total: detection,
        formula: case.formula,
        relation: if case.bound { "≤" } else { "=" },
        formula_value: per_op(j.value, j.ops),
        formula_total: j.value,
        verdict,
        problems,
        repro,
    })
}

/// A number as the table prints it: whole numbers bare, others with at most two decimals.
fn num(x: f64) -> String {
    if (x - x.round()).abs() < 1e-9 {
        format!("{}", x.round() as i64)
    } else {
        let s = format!("{x:.2}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// A row as the text and Markdown tables show it, one string per column of [`HEADER`].
fn cells(r: &Row) -> Vec<String> {
    let kinds: Vec<String> = r.by_kind.iter().map(|(k, &v)| format!("{k} {}", num(v))).collect();
    let measured =
        if r.counted == "all" { num(r.measured) } else { format!("{} ({})", num(r.measured), r.counted) };
    vec![
        r.algorithm.to_string(),
        r.workload.to_string(),
        r.nodes.to_string(),
        r.per.to_string(),
        measured,
        kinds.join(", "),
        format!("{} {}", r.relation, r.formula),
        num(r.formula_value),
        r.verdict.to_string(),
    ]
}

/// The columns of the text and Markdown tables.
const HEADER: [&str; 9] =
    ["algorithm", "workload", "N", "per", "measured", "by kind", "formula", "value", "verdict"];

/// The Markdown table (`--markdown`, docs/COSTS.md).
fn markdown(rows: &[Row]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "| {} |", HEADER.join(" | "));
    let align: Vec<&str> = HEADER
        .iter()
        .map(|h| if matches!(*h, "N" | "measured" | "value") { "---:" } else { "---" })
        .collect();
    let _ = writeln!(s, "|{}|", align.join("|"));
    for r in rows {
        let mut c = cells(r);
        c[0] = format!("`{}`", c[0]);
        let _ = writeln!(s, "| {} |", c.join(" | "));
    }
    s
}

/// The plain table: columns padded with spaces, numbers right-aligned.
fn text(rows: &[Row]) -> String {
    let all: Vec<Vec<String>> = std::iter::once(HEADER.iter().map(|h| h.to_string()).collect())
        .chain(rows.iter().map(cells))
        .collect();
    let widths: Vec<usize> =
        (0..HEADER.len()).map(|i| all.iter().map(|c| c[i].chars().count()).max().unwrap_or(0)).collect();
    let mut s = String::new();
    for c in &all {
        let line: Vec<String> = c
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let pad = widths[i] - v.chars().count();
                if matches!(i, 2 | 4 | 7) {
                    format!("{}{v}", " ".repeat(pad))
                } else {
                    format!("{v}{}", " ".repeat(pad))
                }
            })
            .collect();
        let _ = writeln!(s, "{}", line.join("  ").trim_end());
    }
    s
}

/// Runs `ringleader table`; returns the exit status.
pub fn run(args: TableArgs) -> anyhow::Result<i32> {
    let all = cases();
    if let Some(name) = &args.algo {
        if let Some((_, why)) = LEFT_OUT.iter().find(|(n, _)| n == name) {
            bail!("{name} has no row: {why} (see `ringleader table --help`)");
        }
        if !all.iter().any(|c| c.algorithm == name) {
            let mut names: Vec<&str> = all.iter().map(|c| c.algorithm).collect();
            names.dedup();
            bail!("unknown algorithm {name:?}; the table covers: {}", names.join(", "));
        }
    }
    let selected: Vec<&Case> = all
        .iter()
        .filter(|c| args.algo.as_deref().is_none_or(|a| a == c.algorithm))
        .filter(|c| {
            args.family.as_deref().is_none_or(|f| {
                ringleader_algorithms::find(c.algorithm).is_some_and(|i| i.family.name() == f)
            })
        })
        .collect();
    if selected.is_empty() {
        let (algo, family) = (args.algo.unwrap_or_default(), args.family.unwrap_or_default());
        let is = ringleader_algorithms::find(&algo).map(|i| i.family.name()).unwrap_or("?");
        bail!("--algo {algo} belongs to the {is} family, not to --family {family}");
    }
    let mut rows = Vec::new();
    let mut skipped = Vec::new();
    for case in selected {
        let sizes: &[u32] = if args.nodes.is_empty() { case.sizes } else { &args.nodes };
        for &n in sizes {
            match (case.domain)(n) {
                Ok(()) => rows.push(run_case(case, n)?),
                Err(reason) => skipped.push(Skipped { algorithm: case.algorithm, nodes: n, reason }),
            }
        }
    }
    if rows.is_empty() {
        let s = &skipped[0];
        let list: Vec<String> = args.nodes.iter().map(u32::to_string).collect();
        bail!(
            "--nodes {}: no selected case runs on these sizes ({} {})",
            list.join(","),
            s.algorithm,
            s.reason
        );
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&Output { rows: &rows, skipped: &skipped })?);
    } else {
        print!("{}", if args.markdown { markdown(&rows) } else { text(&rows) });
        for s in &skipped {
            println!("skipped: {} on {} nodes ({})", s.algorithm, s.nodes, s.reason);
        }
        if !args.markdown {
            let count = |v: &str| rows.iter().filter(|r| r.verdict == v).count();
            println!(
                "{} rows: {} exact, {} within, {} off; counts exclude detection traffic except in the detector rows",
                rows.len(),
                count("exact"),
                count("within"),
                count("off")
            );
        }
    }
    for r in rows.iter().filter(|r| r.verdict == "off") {
        eprintln!("off: {} on {} nodes ({}): {}", r.algorithm, r.nodes, r.workload, r.problems.join("; "));
    }
    Ok(if rows.iter().any(|r| r.verdict == "off") { 2 } else { 0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule_totals_match_the_per_entry_costs_of_the_sim_tests() {
        // crates/sim/tests: token ring 101 TOKEN + 10 REQUEST; Raymond 2, 4, 6, 4, 8, 4, 10, 4, 4, 4.
        assert_eq!(token_ring_total(9, 10), 111);
        assert_eq!(raymond_total(9, 10), 50);
        assert_eq!(raymond_total(9, 3), 2 + 4 + 6);
        assert_eq!((ceil_log2(1), ceil_log2(8), ceil_log2(9), ceil_log2(64)), (0, 3, 4, 6));
        assert_eq!((yoyo_edges(3), yoyo_edges(4), yoyo_edges(8)), (3, 6, 16));
        assert!(square(9).is_ok() && square(10).is_err() && square(1).is_err());
    }

    #[test]
    fn a_wrong_count_makes_the_row_off() {
        let mut case = cases().into_iter().find(|c| c.algorithm == "ricart-agrawala").unwrap();
        assert_eq!(run_case(&case, 5).unwrap().verdict, "exact");
        // One message fewer than the run sends: an exact formula that disagrees is a bug …
        case.judge = |m| m.all(ENTRIES, 2 * (m.n() - 1) * ENTRIES - 1);
        let row = run_case(&case, 5).unwrap();
        assert_eq!(row.verdict, "off");
        assert!(row.problems[0].contains("exceeds"), "{:?}", row.problems);
        // … and so is a bound the run exceeds, or a kind that disagrees with the textbook.
        case.bound = true;
        assert_eq!(run_case(&case, 5).unwrap().verdict, "off");
        case.bound = false;
        case.judge = |m| m.all(ENTRIES, 2 * (m.n() - 1) * ENTRIES).kind("reply", 0);
        let row = run_case(&case, 5).unwrap();
        assert_eq!(row.verdict, "off");
        assert!(row.problems[0].starts_with("reply: 40 sent"), "{:?}", row.problems);
        // A bound the run stays below is `within`.
        case.bound = true;
        case.judge = |m| m.all(ENTRIES, 2 * (m.n() - 1) * ENTRIES + 1);
        assert_eq!(run_case(&case, 5).unwrap().verdict, "within");
    }
}
