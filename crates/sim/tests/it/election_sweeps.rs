//! Seeded sweeps: 10,000 runs per election with random sizes, random latencies and random
//! crash/recover plans, a third of them with a pause or a partition on top.
//!
//! What each algorithm's essay promises is what is asserted:
//! - `bully`, `ring`: inside their assumptions (crash-recovery only, latency within
//!   `max_delay`) agreement, validity and termination always hold, and uniqueness can only
//!   fail at the takeover instant of a recovered process — so never in a run without a
//!   recovery. Outside them (a pause, a partition) the only violation is uniqueness: the two
//!   coordinators merge again once the fault is over.
//! - `majority`: uniqueness holds in every run; whenever a majority is alive at the end,
//!   nothing at all is violated.
//!
//! The same promises are swept again, 2,000 runs each, with `detector=phi-accrual`.
//!
//! Each failure prints the `ringleader sim` command that reproduces it.

use std::collections::{BTreeMap, BTreeSet};

use rand::{RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use ringleader_sim::scenario::Initiators;
use ringleader_sim::{Report, RunConfig, RunOptions, run};

const MS: u64 = 1_000_000;
const RUNS: u64 = 10_000;

/// One random run and what its plan implies.
struct Plan {
    cfg: RunConfig,
    /// A pause or a partition: outside the bully's and the ring's assumptions.
    outside: bool,
    /// Some process recovers from a crash.
    recovers: bool,
    /// Processes alive at the end.
    alive_at_end: u32,
}

fn plan(algo: &str, seed: u64, sizes: std::ops::RangeInclusive<u32>) -> Plan {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let n: u32 = rng.random_range(sizes);
    let mut cfg = RunConfig::new(algo, n).unwrap();
    cfg.seed = seed;
    let lo = rng.random_range(0..=500u64);
    let hi = rng.random_range(lo..=1000u64);
    cfg.latency = format!("uniform:{lo}us..{hi}us").parse().unwrap();
    cfg.max_delay = MS;
    cfg.max_delay_given = true;
    cfg.duration = 400 * MS;
    if algo != "majority" {
        cfg.params.insert("heartbeat".into(), "5ms".into());
    }
    cfg.initiators = match rng.random_range(0..4) {
        0 => Initiators::Lowest,
        1 => Initiators::All,
        2 => Initiators::None,
        _ => Initiators::Ids(vec![rng.random_range(1..=n as u64)]),
    };
    let mut recovers = false;
    let mut alive_at_end = n;
    for uid in 1..=n as u64 {
        let p = if uid == n as u64 { 0.5 } else { 0.25 };
        if rng.random_bool(p) {
            let at = rng.random_range(0..=80 * MS);
            cfg.crash.push(format!("{uid}@{at}ns").parse().unwrap());
            if rng.random_bool(0.5) {
                let back = at + rng.random_range(MS..=60 * MS);
                cfg.recover.push(format!("{uid}@{back}ns").parse().unwrap());
                recovers = true;
            } else {
                alive_at_end -= 1;
            }
        }
    }
    let outside = rng.random_bool(1.0 / 3.0);
    if outside {
        let from = rng.random_range(0..=80 * MS);
        let to = from + rng.random_range(MS..=60 * MS);
        if rng.random_bool(0.5) {
            let uid = rng.random_range(1..=n as u64);
            cfg.pause.push(format!("{uid}@{from}ns..{to}ns").parse().unwrap());
        } else {
            let (mut left, mut right) = (Vec::new(), Vec::new());
            for uid in 1..=n as u64 {
                if rng.random_bool(0.5) { left.push(uid) } else { right.push(uid) }
            }
            if left.is_empty() {
                left.push(right.pop().unwrap());
            } else if right.is_empty() {
                right.push(left.pop().unwrap());
            }
            let side = |v: &[u64]| v.iter().map(|u| u.to_string()).collect::<Vec<_>>().join(",");
            let text = format!("{}|{}@{from}ns..{to}ns", side(&left), side(&right));
            cfg.partition.push(text.parse().unwrap());
        }
    }
    Plan { cfg, outside, recovers, alive_at_end }
}

fn violated(r: &Report) -> BTreeSet<&'static str> {
    r.violations.iter().map(|v| v.property.name()).collect()
}

/// Runs `RUNS` plans of `algo` on 3 to 6 processes, calls `judge` on each, and returns how
/// often each property was violated.
fn sweep(algo: &str, judge: impl Fn(&Plan, &Report)) -> BTreeMap<&'static str, u64> {
    sweep_sizes(algo, 3..=6, RUNS, judge)
}

fn sweep_sizes(
    algo: &str,
    sizes: std::ops::RangeInclusive<u32>,
    runs: u64,
    judge: impl Fn(&Plan, &Report),
) -> BTreeMap<&'static str, u64> {
    sweep_params(algo, sizes, runs, &[], judge)
}

/// As [`sweep_sizes`], with `params` added to every run.
fn sweep_params(
    algo: &str,
    sizes: std::ops::RangeInclusive<u32>,
    runs: u64,
    params: &[(&str, &str)],
    judge: impl Fn(&Plan, &Report),
) -> BTreeMap<&'static str, u64> {
    let mut tally = BTreeMap::new();
    for seed in 0..runs {
        let mut p = plan(algo, seed, sizes.clone());
        for &(k, v) in params {
            p.cfg.params.insert(k.into(), v.into());
        }
        let r = run(&p.cfg, RunOptions::default()).unwrap().report;
        judge(&p, &r);
        for v in violated(&r) {
            *tally.entry(v).or_default() += 1;
        }
    }
    eprintln!("{algo}: {runs} runs, violations by property: {tally:?}");
    tally
}

fn judge_bully_or_ring(p: &Plan, r: &Report) {
    let v = violated(r);
    let repro = &r.repro;
    if p.outside {
        assert!(v.iter().all(|&x| x == "uniqueness"), "{v:?} outside assumptions: {repro}");
    } else if p.recovers {
        assert!(v.iter().all(|&x| x == "uniqueness"), "{v:?} with recoveries: {repro}");
    } else {
        assert!(v.is_empty(), "{v:?} inside assumptions: {repro}");
    }
}

fn judge_majority(p: &Plan, r: &Report) {
    let v = violated(r);
    assert!(!v.contains("uniqueness"), "two leaders in one term: {}", r.repro);
    if 2 * p.alive_at_end > p.cfg.nodes {
        assert!(v.is_empty(), "{v:?} with a live majority: {}", r.repro);
    }
}

#[test]
fn bully_keeps_its_promises() {
    let tally = sweep("bully", judge_bully_or_ring);
    assert!(tally.get("uniqueness").is_some_and(|&k| k > 0), "the flaws must show up in a sweep");
}

#[test]
fn ring_keeps_its_promises() {
    let tally = sweep("ring", judge_bully_or_ring);
    assert!(tally.get("uniqueness").is_some_and(|&k| k > 0), "the flaws must show up in a sweep");
}

#[test]
fn majority_never_has_two_leaders_in_a_term() {
    let tally = sweep("majority", judge_majority);
    assert!(!tally.contains_key("uniqueness"));
}

#[test]
fn ring_min_keeps_its_promises() {
    let tally = sweep("ring-min", judge_bully_or_ring);
    assert!(tally.get("uniqueness").is_some_and(|&k| k > 0), "the flaws must show up in a sweep");
}

/// The same promises when the elections watch their coordinator through φ-accrual (Φ = 8):
/// inside the assumptions its deadline μ + 5.6·σ (σ ≥ 0.5 ms) stays above the 1 ms jitter of
/// the inter-arrival times, so it never suspects a live coordinator either.
#[test]
fn phi_accrual_detection_keeps_the_same_promises() {
    const PHI: &[(&str, &str)] = &[("detector", "phi-accrual")];
    for algo in ["bully", "ring", "ring-min"] {
        let tally = sweep_params(algo, 3..=6, 2_000, PHI, judge_bully_or_ring);
        assert!(tally.get("uniqueness").is_some_and(|&k| k > 0), "{algo}: the flaws must show up");
    }
    let tally = sweep_params("majority", 3..=6, 2_000, PHI, judge_majority);
    assert!(!tally.contains_key("uniqueness"));
}

/// The same promises on 7 to 16 processes (slower: about a minute in the debug profile).
/// Run with `cargo test -p ringleader-sim --test it -- --ignored --nocapture election_sweeps::`.
#[test]
#[ignore]
fn larger_rings_keep_their_promises() {
    for algo in ["bully", "ring", "ring-min"] {
        sweep_sizes(algo, 7..=16, 2_000, judge_bully_or_ring);
    }
    sweep_sizes("majority", 7..=16, 2_000, judge_majority);
}
