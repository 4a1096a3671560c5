//! Helpers shared by the integration tests: a test file that needs them declares `mod common;`.

use ringleader_algorithms::election::yoyo::YoYo;
use ringleader_core::{Message, Process};
use ringleader_sim::Simulation;

/// ⌈log2 n⌉ (0 for n ≤ 1).
pub fn log2_ceil(n: u64) -> u64 {
    n.next_power_of_two().trailing_zeros() as u64
}

/// YoYo's invariants after a finished run on a graph with `m` edges (the costs and bounds of its
/// essay): no property violated; every node names the minimum id; setup cost exactly 2m and the
/// announcement exactly 2m − n + 1; the leader was not pruned; YoYo proper took at most
/// ⌈log2 n⌉ + 1 iterations and 2m + 2m(⌈log2 n⌉ + 1) messages. `what` names the run in failure
/// messages. Returns (messages of YoYo proper, iterations).
pub fn check_yoyo(sim: &Simulation<YoYo>, m: u64, what: &str) -> (u64, u64) {
    assert!(sim.violations().is_empty(), "{what}: {:?}", sim.violations().list());
    let n = sim.uids().len() as u64;
    let min = *sim.uids().iter().min().unwrap();
    assert!(sim.states().iter().all(|s| s.leader() == Some(min)), "{what}: not everyone names {min}");
    let sent = |kind: &str| {
        let i = <YoYo as Process>::Msg::KINDS.iter().position(|k| *k == kind).unwrap();
        sim.counters().sent_by_kind[i]
    };
    assert_eq!(sent("setup"), 2 * m, "{what}");
    assert_eq!(sent("coordinator"), 2 * m - (n - 1), "{what}");
    let proper = sent("setup") + sent("yo") + sent("yes") + sent("no");
    let leader = sim.uids().iter().position(|&u| u == min).unwrap();
    assert!(!sim.states()[leader].has_left(), "{what}: the leader was pruned");
    let iterations = sim.states()[leader].iterations() as u64;
    if n > 1 {
        let log = log2_ceil(n);
        assert!(iterations <= log + 1, "{what}: {iterations} iterations");
        assert!(proper <= 2 * m + 2 * m * (log + 1), "{what}: {proper} messages");
    }
    (proper, iterations)
}
