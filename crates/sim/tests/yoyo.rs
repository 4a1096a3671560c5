//! YoYo on random connected graphs: the minimum id is elected and known by everyone, setup costs
//! exactly 2m, the announcement exactly 2m − n + 1, the YO-/-YO iterations stay within
//! ⌈log2 n⌉ + 1 and the whole of YoYo proper within 2m + 2m(⌈log2 n⌉ + 1).

use ringleader_algorithms::election::yoyo::YoYo;
use ringleader_core::{Message, Process};
use ringleader_sim::scenario::{IdArrangement, Initiators};
use ringleader_sim::{RunConfig, Simulation};

fn log2_ceil(n: u64) -> u64 {
    n.next_power_of_two().trailing_zeros() as u64
}

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
    let what = format!("n={n} m={m} seed={seed} {latency:?}");
    assert!(sim.violations().is_empty(), "{what}: {:?}", sim.violations().list());
    let min = *sim.uids().iter().min().unwrap();
    assert!(sim.states().iter().all(|s| s.leader() == Some(min)), "{what}: not everyone names {min}");
    let sent = |kind: &str| {
        let i = <YoYo as Process>::Msg::KINDS.iter().position(|k| *k == kind).unwrap();
        sim.counters().sent_by_kind[i]
    };
    assert_eq!(sent("setup"), 2 * m, "{what}");
    assert_eq!(sent("coordinator"), 2 * m - (n as u64 - 1), "{what}");
    let proper = sent("setup") + sent("yo") + sent("yes") + sent("no");
    let leader = sim.uids().iter().position(|&u| u == min).unwrap();
    assert!(!sim.states()[leader].has_left(), "{what}: the leader was pruned");
    let iterations = sim.states()[leader].iterations() as u64;
    if n > 1 {
        assert!(iterations <= log2_ceil(n as u64) + 1, "{what}: {iterations} iterations");
        let bound = 2 * m + 2 * m * (log2_ceil(n as u64) + 1);
        assert!(proper <= bound, "{what}: {proper} > {bound}");
    }
    (proper, iterations)
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
