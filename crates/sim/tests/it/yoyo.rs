//! YoYo on random connected graphs: the minimum id is elected and known by everyone, setup costs
//! exactly 2m, the announcement exactly 2m − n + 1, the YO-/-YO iterations stay within
//! ⌈log2 n⌉ + 1 and the whole of YoYo proper within 2m + 2m(⌈log2 n⌉ + 1).

use crate::common;

use ringleader_algorithms::election::yoyo::YoYo;
use ringleader_sim::scenario::{IdArrangement, Initiators};
use ringleader_sim::{RunConfig, Simulation};

/// Runs YoYo on a random connected graph; returns (messages of YoYo proper, iterations).
fn check(n: u32, m: u64, seed: u64, initiators: Initiators, latency: Option<&str>) -> (u64, u64) {
    let mut cfg = RunConfig::new("yoyo", n).unwrap();
    cfg.edges = Some(m);
    cfg.seed = seed;
    cfg.ids = IdArrangement::Random;
    cfg.initiators = initiators;
    if let Some(l) = latency {
        cfg.latency = l.parse().unwrap();
    }
    let mut sim = Simulation::<YoYo>::new(&cfg, None).unwrap();
    sim.run(&mut |_| {});
    common::check_yoyo(&sim, m, &format!("n={n} m={m} seed={seed} {latency:?}"))
}

#[test]
fn the_minimum_wins_within_the_bound_on_many_random_graphs() {
    for seed in 0..150u64 {
        let n = 2 + (seed * 7919 % 120) as u32;
        let max = n as u64 * (n as u64 - 1) / 2;
        let m = ((n as u64 - 1) + seed * 31 % (3 * n as u64)).min(max);
        check(n, m, seed, Initiators::Lowest, None);
        check(n, m, seed, Initiators::All, Some("uniform:1ms..9ms"));
    }
}

#[test]
fn trees_and_dense_graphs_and_larger_sizes() {
    for (n, m) in
        [(1, 0), (2, 1), (3, 3), (10, 9), (10, 45), (30, 435), (500, 499), (500, 2000), (2000, 8000)]
    {
        for seed in 0..3 {
            check(n, m, seed, Initiators::Lowest, None);
        }
    }
}
