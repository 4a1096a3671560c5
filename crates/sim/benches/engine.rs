//! Simulator throughput: `cargo bench -p ringleader-sim --bench engine`.
//!
//! Each benchmark runs one whole simulation; divan reports the time per run, and the number of
//! delivered messages is printed once per benchmark so that messages per second can be read
//! off (docs/PERFORMANCE.md records both).

use ringleader_sim::notation::Latency;
use ringleader_sim::scenario::{IdArrangement, Initiators, WorkloadKind};
use ringleader_sim::{RunConfig, RunOptions, run};

fn main() {
    divan::main();
}

fn ring(n: u32, ids: IdArrangement, latency: Latency) -> RunConfig {
    let mut cfg = RunConfig::new("chang-roberts", n).unwrap();
    cfg.ids = ids;
    cfg.initiators = Initiators::All;
    cfg.latency = latency;
    cfg
}

/// The hot path with every node's state in cache: Chang-Roberts, ids descending, 2,000 nodes
/// (2,001,000 ELECTION messages + 2,000 ELECTED).
#[divan::bench(sample_count = 5)]
fn hot_path_dense_ring() -> u64 {
    let cfg = ring(2_000, IdArrangement::Descending, Latency::Constant(1_000_000));
    run(&cfg, RunOptions::default()).unwrap().report.messages.delivered
}

/// A large ring, random ids: 100,000 nodes (about 1.3 million messages).
#[divan::bench(args = ["constant:1ms", "uniform:1ms..2ms"], sample_count = 5)]
fn random_ring_100k(latency: &str) -> u64 {
    let cfg = ring(100_000, IdArrangement::Random, latency.parse().unwrap());
    run(&cfg, RunOptions::default()).unwrap().report.messages.delivered
}

/// Mutual exclusion with the checker busy: central, 50 nodes, 20,000 saturated entries.
#[divan::bench(sample_count = 5)]
fn central_saturated() -> u64 {
    let mut cfg = RunConfig::new("central", 50).unwrap();
    cfg.workload = Some(WorkloadKind::Saturated);
    cfg.entries = 20_000;
    cfg.latency = Latency::Uniform(500_000, 1_500_000);
    run(&cfg, RunOptions::default()).unwrap().report.messages.delivered
}
