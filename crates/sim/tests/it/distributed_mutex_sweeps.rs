//! Safety, liveness and no starvation of Lamport, Ricart-Agrawala, Roucairol-Carvalho, Maekawa,
//! Suzuki-Kasami and Raymond over many seeded runs: `saturated` and `poisson` workloads, random
//! latencies, 3 to 6 nodes, random id arrangements.
//!
//! Every algorithm runs [`RUNS`] = 10,000 seeds (half saturated, half poisson), one test per
//! algorithm so that they run in parallel; the test profile is optimized, and the six sweeps
//! take about 8 s of CPU together on the reference machine.
//!
//! No crash plan is swept: none of these algorithms claims to tolerate crashes (their essays
//! say so).

use ringleader_sim::notation::Latency;
use ringleader_sim::scenario::{IdArrangement, WorkloadKind};
use ringleader_sim::{RunConfig, RunOptions, run};

/// The algorithms under test.
const ALGORITHMS: &[&str] =
    &["lamport", "ricart-agrawala", "roucairol-carvalho", "maekawa", "suzuki-kasami", "raymond"];

/// Seeded runs per algorithm.
const RUNS: u64 = 10_000;

/// The configuration of run `seed` of `algo`: size, ids, latency and workload all vary with
/// the seed.
fn config(algo: &str, seed: u64) -> RunConfig {
    let nodes = 3 + (seed % 4) as u32;
    let mut cfg = RunConfig::new(algo, nodes).unwrap();
    cfg.seed = seed;
    cfg.ids = if seed.is_multiple_of(3) { IdArrangement::Random } else { IdArrangement::Ascending };
    cfg.latency = match seed % 3 {
        0 => Latency::Uniform(100_000, 3_000_000),
        1 => Latency::Exponential(1_000_000),
        _ => Latency::LogNormal(1_000_000, 1.0),
    };
    // Lamport's algorithm assumes FIFO channels (its essay says so); the others do not.
    cfg.fifo = algo == "lamport";
    cfg.entries = 2 * nodes as u64;
    if seed.is_multiple_of(2) {
        cfg.workload = Some(WorkloadKind::Saturated);
        cfg.hold = 500_000;
    } else {
        cfg.workload = Some(WorkloadKind::Poisson);
        cfg.hold = 1_000_000;
        cfg.rate = 200.0;
    }
    cfg
}

/// Runs [`RUNS`] seeds of `algo`; every run must hold every property, end quiescent and serve
/// every request. Returns the messages sent over all runs, by kind.
fn sweep(algo: &str) -> std::collections::BTreeMap<String, u64> {
    let mut sent = std::collections::BTreeMap::new();
    for seed in 0..RUNS {
        let cfg = config(algo, seed);
        let r = run(&cfg, RunOptions::default()).unwrap().report;
        assert!(r.violations.is_empty(), "{algo}, seed {seed}: {:?}\nrepro: {}", r.violations, r.repro);
        for p in ["safety", "liveness", "no_starvation", "fencing"] {
            assert!(r.properties.iter().any(|x| x.name == p && x.holds), "{algo}, seed {seed}: {p}");
        }
        assert_eq!(r.outcome.mutex().unwrap().entries, cfg.entries, "{algo}, seed {seed}: {}", r.repro);
        assert_eq!(r.outcome.mutex().unwrap().max_concurrent_holders, 1, "{algo}, seed {seed}");
        assert_eq!(r.stopped, "quiescent", "{algo}, seed {seed}");
        for (kind, n) in r.messages.by_kind {
            *sent.entry(kind).or_insert(0) += n;
        }
    }
    sent
}

#[test]
fn lamport_holds_over_ten_thousand_runs() {
    sweep("lamport");
}

#[test]
fn ricart_agrawala_holds_over_ten_thousand_runs() {
    sweep("ricart-agrawala");
}

#[test]
fn roucairol_carvalho_holds_over_ten_thousand_runs() {
    sweep("roucairol-carvalho");
}

#[test]
fn maekawa_holds_over_ten_thousand_runs_and_uses_its_deadlock_handling() {
    let sent = sweep("maekawa");
    for kind in ["inquire", "yield", "failed"] {
        assert!(sent[kind] > 0, "the sweep never sent {kind}: {sent:?}");
    }
}

#[test]
fn suzuki_kasami_holds_over_ten_thousand_runs() {
    sweep("suzuki-kasami");
}

#[test]
fn raymond_holds_over_ten_thousand_runs() {
    sweep("raymond");
}

#[test]
fn timestamp_order_is_judged_for_lamport_and_ricart_agrawala_only() {
    for algo in ALGORITHMS {
        let r = run(&config(algo, 2), RunOptions::default()).unwrap().report;
        let judged = r.properties.iter().any(|p| p.name == "timestamp_order");
        assert_eq!(judged, matches!(*algo, "lamport" | "ricart-agrawala"), "{algo}");
        assert!(r.properties.iter().all(|p| p.holds), "{algo}: {:?}", r.violations);
    }
}

/// Lamport's algorithm over non-FIFO links: searches seeds for runs where two processes enter
/// together (scenarios/lamport-non-fifo.toml is seed 24 of this search), and checks that the
/// same runs over FIFO links are safe.
#[test]
fn lamport_is_unsafe_without_fifo_links_and_safe_with_them() {
    let mut unsafe_seeds = Vec::new();
    for seed in 0..500 {
        let mut cfg = RunConfig::new("lamport", 3).unwrap();
        cfg.seed = seed;
        cfg.latency = Latency::Exponential(1_000_000);
        cfg.workload = Some(WorkloadKind::Saturated);
        cfg.entries = 3;
        let r = run(&cfg, RunOptions::default()).unwrap().report;
        if r.violations.iter().any(|v| v.property.name() == "safety") {
            unsafe_seeds.push(seed);
        }
        cfg.fifo = true;
        let r = run(&cfg, RunOptions::default()).unwrap().report;
        assert!(r.violations.is_empty(), "seed {seed} with FIFO links: {:?}", r.violations);
    }
    assert!(unsafe_seeds.contains(&24), "{unsafe_seeds:?}");
    // Seed 24, the scenario: the entry out of stamp order is caught by all three properties.
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scenarios/lamport-non-fifo.toml"
    ))
    .unwrap();
    let cfg = ringleader_sim::Scenario::parse(&text, "lamport-non-fifo").unwrap().resolve(None).unwrap();
    let r = run(&cfg, RunOptions::default()).unwrap().report;
    let found: Vec<&str> = r.violations.iter().map(|v| v.property.name()).collect();
    assert_eq!(found, ["timestamp_order", "fencing", "safety"]);
    assert_eq!(r.outcome.mutex().unwrap().max_concurrent_holders, 2);
    println!("lamport without FIFO: {} of 500 seeds unsafe: {unsafe_seeds:?}", unsafe_seeds.len());
    assert_eq!(unsafe_seeds.len(), 118, "24 % of the seeds put two processes in the section");
}
