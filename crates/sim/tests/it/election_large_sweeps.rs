//! Seeded sweeps of the failure-free elections (Hirschberg-Sinclair, YoYo, super-peers): every
//! property holds under their assumption (no failures) across random arrangements, sizes,
//! graphs and latencies — and the flaw their essays predict (one crash stalls them) is caught.

use ringleader_sim::notation::Latency;
use ringleader_sim::scenario::{IdArrangement, Initiators};
use ringleader_sim::{RunConfig, RunOptions, run};

fn latency(seed: u64) -> Latency {
    match seed % 4 {
        0 => Latency::Constant(1_000_000),
        1 => Latency::Uniform(500_000, 3_000_000),
        2 => Latency::Exponential(1_000_000),
        _ => Latency::LogNormal(1_000_000, 0.7),
    }
}

fn sweep(algo: &str, runs: u64, size: impl Fn(u64) -> (u32, Option<u64>)) {
    for seed in 0..runs {
        let (n, edges) = size(seed);
        let mut cfg = RunConfig::new(algo, n).unwrap();
        cfg.seed = seed;
        cfg.ids = if seed % 3 == 0 { IdArrangement::Descending } else { IdArrangement::Random };
        cfg.initiators = if seed % 2 == 0 { Initiators::All } else { Initiators::Lowest };
        cfg.latency = latency(seed);
        cfg.max_delay = cfg.latency.bound();
        cfg.edges = edges;
        let r = run(&cfg, RunOptions::default()).unwrap().report;
        assert!(r.properties.iter().all(|p| p.holds), "{algo}: {:?}\nrepro: {}", r.violations, r.repro);
        assert_eq!(r.stopped, "quiescent", "{}", r.repro);
    }
}

#[test]
fn hirschberg_sinclair_10000_seeded_runs() {
    sweep("hirschberg-sinclair", 10_000, |s| (2 + (s % 11) as u32, None));
}

#[test]
fn yoyo_10000_seeded_runs_on_random_connected_graphs() {
    sweep("yoyo", 10_000, |s| {
        let n = 2 + (s % 11) as u32;
        let max = n as u64 * (n as u64 - 1) / 2;
        let m = (n as u64 - 1) + (s / 11) % (max - (n as u64 - 1) + 1);
        (n, Some(m))
    });
}

#[test]
fn one_crash_stalls_the_failure_free_elections() {
    for algo in ["hirschberg-sinclair", "yoyo"] {
        for seed in 0..50 {
            let mut cfg = RunConfig::new(algo, 8).unwrap();
            cfg.seed = seed;
            cfg.ids = IdArrangement::Random;
            cfg.initiators = Initiators::All;
            cfg.crash = vec![format!("{}@0", 1 + seed % 8).parse().unwrap()];
            let r = run(&cfg, RunOptions::default()).unwrap().report;
            assert!(!r.violations.is_empty(), "{algo} survived a crash? {}", r.repro);
        }
    }
}

#[test]
fn super_peer_elections_10000_seeded_runs() {
    for algo in ["superpeer-dht", "superpeer-geometric"] {
        for seed in 0..10_000u64 {
            let n = 16 + (seed % 49) as u32;
            let mut cfg = RunConfig::new(algo, n).unwrap();
            cfg.seed = seed;
            cfg.latency = latency(seed);
            cfg.max_delay = cfg.latency.bound();
            cfg.params.insert("salt".into(), seed.to_string());
            let r = run(&cfg, RunOptions::default()).unwrap().report;
            assert!(r.properties.iter().all(|p| p.holds), "{algo}: {:?}\nrepro: {}", r.violations, r.repro);
        }
    }
}
