//! Planted bugs prove the checkers (crates/lock-service/src/planted.rs): each bug planted
//! in the lock service's state machine is caught by the simulator's checkers on at least 4 of 5
//! seeds, naming the property it breaks, while the same runs without it pass.

use ringleader_lock_service::planted::Planted;
use ringleader_sim::scenario::{RunConfig, WorkloadKind};
use ringleader_sim::{RunOptions, run};

const MS: u64 = 1_000_000;

/// The run every bug is tried on: five nodes, saturated clients that hold the lock 30 ms under
/// 100 ms leases, 5 % message loss and a snapshot every 20 entries.
fn plan(bug: Option<Planted>, seed: u64) -> RunConfig {
    let mut c = RunConfig::new("lock-service", 5).unwrap();
    c.seed = seed;
    c.workload = Some(WorkloadKind::Saturated);
    c.entries = 200;
    c.hold = 30 * MS;
    c.loss = 0.05;
    c.duration = 30_000 * MS;
    c.params.insert("snapshot_every".into(), "20".into());
    c.params.insert("ttl".into(), "100ms".into());
    if let Some(bug) = bug {
        c.params.insert("planted".into(), bug.name().into());
    }
    c
}

/// The properties violated on each of seeds 1..=5, and whether every property was decided.
fn judged(bug: Option<Planted>) -> Vec<(Vec<String>, bool)> {
    (1..=5)
        .map(|seed| {
            let r = run(&plan(bug, seed), RunOptions::default()).unwrap();
            let mut v: Vec<String> = r.report.violations.iter().map(|v| v.property.to_string()).collect();
            v.sort();
            v.dedup();
            (v, r.report.undecided.is_empty())
        })
        .collect()
}

#[test]
fn without_a_planted_bug_the_plan_passes_on_every_seed() {
    for (seed, (violated, decided)) in (1..).zip(judged(None)) {
        assert!(violated.is_empty() && decided, "seed {seed}: {violated:?}, decided {decided}");
    }
}

/// Each bug is caught by the property it breaks on at least 4 of the 5 seeds.
#[test]
fn every_planted_bug_is_caught_by_the_property_it_breaks() {
    for (bug, property) in [
        (Planted::FencingReused, "fencing"),
        (Planted::GrantWhileHeld, "safety"),
        (Planted::FastClock, "safety"),
    ] {
        let caught = judged(Some(bug)).iter().filter(|(v, _)| v.iter().any(|p| p == property)).count();
        assert!(caught >= 4, "{}: {property} violated on {caught} of 5 seeds", bug.name());
    }
}

/// Every planted bug is tried: the simulator's three above; `watch-skips`, which breaks only
/// what watchers see, and `stale-read`, which breaks only reads (the simulator has neither): a
/// real cluster and an etcd client catch them (`etcd_grpc::a_watch_that_misses_a_change_is_caught_by_the_watch_checker`
/// and `etcd_grpc::a_stale_read_is_caught_by_the_key_value_checker` in the CLI's tests).
#[test]
fn every_planted_bug_is_tried() {
    assert_eq!(Planted::ALL.len(), 5, "a new planted bug needs its line in the test above");
    assert_eq!(&Planted::ALL[3..], [Planted::WatchSkips, Planted::StaleRead]);
}
