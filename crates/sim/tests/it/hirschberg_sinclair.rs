//! Hirschberg-Sinclair on bidirectional rings: the highest id wins everywhere, and PROBE + REPLY
//! never exceed 8N(1 + ⌈log2 N⌉), on ascending, descending and random arrangements, for
//! powers of two and other sizes, with one or all initiators, constant or random latencies.

use ringleader_sim::scenario::{IdArrangement, Initiators};
use ringleader_sim::{RunConfig, RunOptions, run};

fn bound(n: u64) -> u64 {
    8 * n * (1 + n.next_power_of_two().trailing_zeros() as u64)
}

fn check(n: u32, ids: IdArrangement, initiators: Initiators, seed: u64, latency: Option<&str>) {
    let mut cfg = RunConfig::new("hirschberg-sinclair", n).unwrap();
    cfg.ids = ids;
    cfg.initiators = initiators.clone();
    cfg.seed = seed;
    if let Some(l) = latency {
        cfg.latency = l.parse().unwrap();
    }
    let r = run(&cfg, RunOptions::default()).unwrap().report;
    let what = format!("n={n} {ids:?} {initiators:?} seed={seed} {latency:?}");
    assert!(r.violations.is_empty(), "{what}: {:?}", r.violations);
    assert_eq!(r.outcome.election().unwrap().leader, Some(n as u64), "{what}");
    assert!(r.outcome.election().unwrap().agreed, "{what}");
    let k = &r.messages.by_kind;
    let election = k["probe"] + k["reply"];
    assert!(election <= bound(n as u64), "{what}: {election} > {}", bound(n as u64));
    assert_eq!(k["elected"], if n == 1 { 0 } else { n as u64 }, "{what}");
    assert_eq!(r.stopped, "quiescent", "{what}");
}

#[test]
fn the_maximum_wins_within_8n_log_n_on_every_arrangement() {
    let sizes = [1, 2, 3, 4, 5, 7, 8, 9, 16, 31, 33, 64, 100, 127, 128, 255, 256, 500, 1000];
    for &n in &sizes {
        for ids in [IdArrangement::Ascending, IdArrangement::Descending, IdArrangement::Random] {
            for init in [Initiators::All, Initiators::Lowest, Initiators::Highest] {
                check(n, ids, init, 1, None);
            }
        }
    }
}

#[test]
fn random_arrangements_and_random_latencies_over_many_seeds() {
    for seed in 0..60 {
        let n = 2 + (seed as u32 * 37) % 150;
        check(n, IdArrangement::Random, Initiators::All, seed, None);
        check(n, IdArrangement::Random, Initiators::Lowest, seed, Some("uniform:1ms..5ms"));
    }
}

#[test]
fn bound_formula_is_8n_times_one_plus_ceil_log2() {
    assert_eq!(bound(1), 8);
    assert_eq!(bound(8), 8 * 8 * 4);
    assert_eq!(bound(9), 8 * 9 * 5);
    assert_eq!(bound(1000), 8 * 1000 * 11);
}
