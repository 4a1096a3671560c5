//! The textbook cases: each algorithm under the workload its textbook cost is stated for.
//!
//! Each [`Case`] names an algorithm, the textbook workload (an id arrangement and initiators, a
//! request pattern, a number of rounds), the formula as text, and a `judge` that turns one
//! finished run into the numbers of a row with the [`formulas`](super::formulas).

use ringleader_sim::RunConfig;
use ringleader_sim::notation::At;
use ringleader_sim::scenario::{IdArrangement, Initiators, WorkloadKind};

use super::formulas as f;
use super::measure::{Judged, Measured, cmh_detections};

/// Critical-section entries per mutual-exclusion row.
pub const ENTRIES: u64 = 10;
/// Synchronization rounds per clock row (period 1 s).
pub const CLOCK_ROUNDS: u64 = 5;
/// Heartbeat periods per detector row (period 10 ms).
pub const DETECTOR_PERIODS: u64 = 10;
/// Seeds per Chandy-Misra-Haas row (each run finds only a deadlock or two).
pub const CMH_SEEDS: u64 = 20;
/// Chord's identifier bits in the DHT row.
pub const DHT_BITS: u64 = 32;
/// Gossip fan-out in the geometric super-peer row.
pub const GOSSIP_FANOUT: u64 = 2;
/// Gossip round period of the geometric super-peer row, in ns (its default, 10 ms).
pub const GOSSIP_PERIOD: u64 = 10_000_000;

/// One textbook case of one algorithm.
pub struct Case {
    /// The `--algo` name.
    pub algorithm: &'static str,
    /// The workload, as the row shows it.
    pub workload: &'static str,
    /// The operation the cost is per.
    pub per: &'static str,
    /// The formula, as text.
    pub formula: &'static str,
    /// True when the formula is an upper bound, false when it is the exact cost.
    pub bound: bool,
    /// The default sizes.
    pub sizes: &'static [u32],
    /// `Err(why)` for a size the case cannot take.
    pub domain: fn(u32) -> Result<(), &'static str>,
    /// Seeded runs per row (their numbers add up).
    pub runs: u64,
    /// Whether the judge needs the trace.
    pub trace: bool,
    /// True when the table derives the operation count itself rather than reads it from the
    /// run's `per_operation`: the gossip rounds are bounded from the run's length (each node's
    /// rounds are `period` apart), which is what the formula is stated over.
    pub ops_counted_apart: bool,
    /// Sets the run up (the configuration arrives with `nodes` and every default).
    pub configure: fn(&mut RunConfig),
    /// Turns the finished run into numbers.
    pub judge: fn(&Measured) -> Judged,
}

/// The domain of most cases: a single process sends nothing.
pub fn at_least_2(n: u32) -> Result<(), &'static str> {
    if n >= 2 { Ok(()) } else { Err("needs N ≥ 2") }
}

/// Cases with a crashed process and two live ones, or a requester besides the token holder.
pub fn at_least_3(n: u32) -> Result<(), &'static str> {
    if n >= 3 { Ok(()) } else { Err("needs N ≥ 3") }
}

/// Maekawa's formula is for square grids.
pub fn square(n: u32) -> Result<(), &'static str> {
    let s = n.isqrt();
    if s >= 2 && s * s == n { Ok(()) } else { Err("needs a perfect square N ≥ 4 for its grid quorums") }
}

/// `--crash UID@0`.
fn crash(uid: u64) -> Vec<At> {
    vec![At { uid, time: 0 }]
}

/// The mutual-exclusion workload: `sequential`, [`ENTRIES`] entries.
pub fn sequential(cfg: &mut RunConfig) {
    cfg.workload = Some(WorkloadKind::Sequential);
    cfg.entries = ENTRIES;
}

/// Every case of the table, in `ringleader list` order.
pub fn cases() -> Vec<Case> {
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
            ops_counted_apart: false,
            configure: |c| {
                c.ids = IdArrangement::Descending;
                c.initiators = Initiators::All;
            },
            judge: |m| m.count(1, &f::chang_roberts_worst(m.n())),
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
            ops_counted_apart: false,
            configure: |c| c.initiators = Initiators::All,
            judge: |m| m.count(1, &f::chang_roberts_best(m.n())),
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
            ops_counted_apart: false,
            configure: |c| c.initiators = Initiators::Lowest,
            judge: |m| m.count(1, &f::chang_roberts_best(m.n())),
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
            ops_counted_apart: false,
            configure: |c| c.initiators = Initiators::Highest,
            judge: |m| m.count(1, &f::chang_roberts_from_max(m.n())),
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
            ops_counted_apart: false,
            configure: |c| {
                c.crash = crash(u64::from(c.nodes));
                c.initiators = Initiators::Lowest;
            },
            judge: |m| m.count(1, &f::bully_worst(m.n())),
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
            ops_counted_apart: false,
            configure: |c| {
                let n = u64::from(c.nodes);
                c.crash = crash(n);
                c.initiators = Initiators::Ids(vec![n - 1]);
            },
            judge: |m| m.count(1, &f::bully_best(m.n())),
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
            ops_counted_apart: false,
            configure: |c| c.initiators = Initiators::Lowest,
            judge: |m| m.count(1, &f::ring(m.n(), 0, 1)),
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
            ops_counted_apart: false,
            configure: |c| {
                c.crash = crash(u64::from(c.nodes));
                c.initiators = Initiators::Lowest;
            },
            judge: |m| m.count(1, &f::ring(m.n() - 1, 1, 1)),
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
            ops_counted_apart: false,
            configure: |c| c.initiators = Initiators::All,
            judge: |m| {
                let n = m.n();
                m.count(1, &f::ring(n, 0, n))
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
            ops_counted_apart: false,
            configure: |c| c.initiators = Initiators::Highest,
            judge: |m| m.count(1, &f::ring(m.n(), 0, 1)),
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
            ops_counted_apart: false,
            configure: |c| {
                c.crash = crash(1);
                c.initiators = Initiators::Highest;
            },
            judge: |m| m.count(1, &f::ring(m.n() - 1, 1, 1)),
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
            ops_counted_apart: false,
            configure: |c| {
                c.initiators = Initiators::Lowest;
                c.duration = 10_000_000;
            },
            judge: |m| m.count(1, &f::majority(m.n())),
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
            ops_counted_apart: false,
            configure: |c| {
                c.ids = IdArrangement::Random;
                c.initiators = Initiators::All;
            },
            judge: |m| m.count(1, &f::hirschberg_sinclair_bound(m.n())),
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
            ops_counted_apart: false,
            configure: |c| {
                c.ids = IdArrangement::Random;
                c.initiators = Initiators::Lowest;
                c.edges = Some(f::yoyo_edges(u64::from(c.nodes)));
            },
            judge: |m| m.count(1, &f::yoyo_bound(m.n(), f::yoyo_edges(m.n()))),
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
            ops_counted_apart: false,
            configure: |c| {
                c.params.insert("bits".into(), DHT_BITS.to_string());
            },
            judge: |m| {
                let super_peers = m.report.outcome.super_peers().map_or(0, |o| o.super_peers);
                let normal = m.n() - super_peers;
                let mut j = m.count(normal, &f::superpeer_dht_bound(DHT_BITS, normal));
                if m.kind("found") > normal {
                    j.problems.push(format!("{} FOUND for {normal} normal nodes", m.kind("found")));
                }
                j
            },
        },
        Case {
            algorithm: "superpeer-geometric",
            workload: "unit torus, fraction 0.02, gossip to f = 2 neighbours",
            per: "gossip period",
            formula: "f·N + PULL (pushes, PULL answers)",
            bound: true,
            sizes: &[64, 128, 256],
            domain: at_least_2,
            runs: 1,
            trace: false,
            ops_counted_apart: true,
            configure: |c| {
                c.params.insert("fanout".into(), GOSSIP_FANOUT.to_string());
            },
            judge: |m| {
                // A node pushes at most f GOSSIP per round of its own; its rounds are `period`
                // apart, so it has at most ⌊end / period⌋ + 1 of them. Each PULL is answered
                // with one GOSSIP.
                let end_ns = (m.report.sim_time * 1e6).round() as u64;
                let rounds = end_ns / GOSSIP_PERIOD + 1;
                let bound = f::superpeer_gossip_bound(GOSSIP_FANOUT, m.n(), rounds, m.kind("pull"));
                m.only("gossip", rounds, bound.total)
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
            ops_counted_apart: false,
            configure: sequential,
            judge: |m| m.count(ENTRIES, &f::central(ENTRIES)),
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
            ops_counted_apart: false,
            configure: sequential,
            judge: |m| m.count(ENTRIES, &f::central(ENTRIES)),
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
            ops_counted_apart: false,
            configure: sequential,
            judge: |m| m.count(ENTRIES, &f::token_ring(m.n(), ENTRIES)),
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
            ops_counted_apart: false,
            configure: |c| {
                sequential(c);
                let n = u64::from(c.nodes);
                let k = f::quorum_coordinators(n);
                c.params.insert("coordinators".into(), k.to_string());
                c.requesters = Some((k + 1..=n).collect());
            },
            judge: |m| {
                let k = f::quorum_coordinators(m.n());
                m.count(ENTRIES, &f::quorum(k, ENTRIES))
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
            ops_counted_apart: false,
            configure: sequential,
            judge: |m| m.count(ENTRIES, &f::lamport(m.n(), ENTRIES)),
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
            ops_counted_apart: false,
            configure: sequential,
            judge: |m| m.count(ENTRIES, &f::ricart_agrawala(m.n(), ENTRIES)),
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
            ops_counted_apart: false,
            configure: sequential,
            judge: |m| m.count(ENTRIES, &f::roucairol_carvalho_bound(m.n(), ENTRIES)),
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
            ops_counted_apart: false,
            configure: sequential,
            judge: |m| m.count(ENTRIES, &f::maekawa(m.n(), ENTRIES)),
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
            ops_counted_apart: false,
            configure: sequential,
            judge: |m| m.count(ENTRIES, &f::suzuki_kasami(m.n(), ENTRIES)),
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
            ops_counted_apart: false,
            configure: sequential,
            judge: |m| m.count(ENTRIES, &f::raymond(m.n(), ENTRIES)),
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
            ops_counted_apart: false,
            configure: |c| {
                c.params.insert("probes".into(), "1".into());
                clock_rounds(c);
            },
            judge: |m| {
                let syncs = (m.n() - 1) * CLOCK_ROUNDS;
                m.count(syncs, &f::request_reply(syncs))
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
            ops_counted_apart: false,
            configure: clock_rounds,
            judge: |m| m.count(CLOCK_ROUNDS, &f::berkeley(m.n(), CLOCK_ROUNDS)),
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
            ops_counted_apart: false,
            configure: clock_rounds,
            judge: |m| {
                let polls = (m.n() - 1) * CLOCK_ROUNDS;
                m.count(polls, &f::request_reply(polls))
            },
        },
        // ---------------------------------------------------------------- deadlock
        Case {
            algorithm: "chandy-misra-haas",
            workload: "one holder per wait (--holders 1), report only, seeds 1–20",
            per: "detection",
            formula: "L probes, L = the cycle's length",
            bound: false,
            sizes: &[4, 6, 8],
            domain: at_least_3,
            runs: CMH_SEEDS,
            trace: true,
            ops_counted_apart: false,
            configure: |c| {
                c.holders = 1;
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
            ops_counted_apart: false,
            configure: detector_periods,
            judge: |m| m.only("heartbeat", DETECTOR_PERIODS, f::heartbeats(m.n(), DETECTOR_PERIODS).total),
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
            ops_counted_apart: false,
            configure: detector_periods,
            judge: |m| m.only("heartbeat", DETECTOR_PERIODS, f::heartbeats(m.n(), DETECTOR_PERIODS).total),
        },
    ]
}

/// Clock rows: period 1 s; rounds start at 0 s, so 5 rounds end by 4.5 s with nothing in flight.
pub fn clock_rounds(c: &mut RunConfig) {
    c.params.insert("period".into(), "1s".into());
    c.duration = (CLOCK_ROUNDS - 1) * 1_000_000_000 + 500_000_000;
}

/// Detector rows: period 10 ms; heartbeats start at 0, so 10 periods end by 95 ms.
pub fn detector_periods(c: &mut RunConfig) {
    c.params.insert("period".into(), "10ms".into());
    c.duration = (DETECTOR_PERIODS - 1) * 10_000_000 + 5_000_000;
}

/// The algorithms `ringleader list` names that have no row, and why.
pub const LEFT_OUT: [(&str, &str); 5] = [
    ("lamport-clock", "its timestamps ride on the application's messages: it sends none of its own"),
    ("vector-clock", "its vectors ride on the application's messages: it sends none of its own"),
    ("make", "it is seed 004's two-node story, not an algorithm with a cost"),
    ("wait-die", "the textbooks give no message cost: it depends on the workload's conflicts"),
    ("wound-wait", "the textbooks give no message cost: it depends on the workload's conflicts"),
];
