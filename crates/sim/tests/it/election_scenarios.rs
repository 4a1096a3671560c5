//! What the election scenarios claim in their descriptions, checked on their traces: who
//! claims to lead, in which term, and when.

use std::path::Path;

use ringleader_core::Event;
use ringleader_core::trace::{RecordKind, TraceRecord};
use ringleader_sim::scenario::Initiators;
use ringleader_sim::{RunConfig, RunOptions, RunResult, Scenario, run};

const MS: u64 = 1_000_000;

fn scenario(file: &str) -> RunResult {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios").join(file);
    let cfg = Scenario::load(&path).unwrap().resolve(None).unwrap();
    run(&cfg, RunOptions { keep_trace: true, ..RunOptions::default() }).unwrap()
}

/// Every `(time, uid, leader, term)` claim "I am the coordinator" in the trace.
fn claims(records: &[TraceRecord]) -> Vec<(u64, u64, u64)> {
    records
        .iter()
        .filter(|r| r.kind == RecordKind::Emit)
        .filter_map(|r| match r.event {
            Some(Event::Leader { leader, term }) if Some(leader) == r.uid => Some((r.time_ns, leader, term)),
            _ => None,
        })
        .collect()
}

#[test]
fn majority_partition_elects_on_the_majority_side_only() {
    let r = scenario("majority-partition.toml");
    assert!(r.report.violations.is_empty(), "{:?}", r.report.violations);
    let c = claims(&r.records);
    // Id 1 leads term 1 before the cut; during the cut (20..100 ms) only {3,4,5} elect, for a
    // later term; nobody on {1,2} wins anything after the cut starts.
    assert_eq!((c[0].1, c[0].2), (1, 1));
    let during: Vec<_> = c.iter().filter(|&&(t, _, _)| (20 * MS..100 * MS).contains(&t)).collect();
    assert!(!during.is_empty(), "the majority side elects during the partition");
    assert!(during.iter().all(|&&(_, id, term)| id >= 3 && term >= 2), "{during:?}");
    assert!(c.iter().all(|&(t, id, _)| t < 20 * MS || id >= 3), "{c:?}");
    assert!(r.report.outcome.election().unwrap().agreed);
}

#[test]
fn bully_paused_coordinator_has_two_coordinators_during_the_pause() {
    let r = scenario("bully-paused-coordinator.toml");
    let v: Vec<_> = r.report.violations.iter().map(|v| (v.property.name(), v.time)).collect();
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(v[0].0, "uniqueness");
    // Suspected after period + T = 7.1 ms of silence, then elected: inside the 20..100 ms pause.
    assert!(v[0].1 > 27.0 && v[0].1 < 100.0, "{v:?}");
    let c = claims(&r.records);
    assert!(c.iter().any(|&(t, id, _)| id == 4 && t < 100 * MS), "{c:?}");
    assert_eq!(r.report.outcome.election().unwrap().leader, Some(5));
}

#[test]
fn bully_recovery_takes_over_with_n_minus_one_coordinator_messages() {
    // No heartbeats: id 1 elects 4 (5 is down), then 5 recovers and, rule 7 with rule 1, sends
    // COORDINATOR to the four lower ids without any election. For one delay both 4 and 5 lead.
    let mut cfg = RunConfig::new("bully", 5).unwrap();
    cfg.initiators = Initiators::Lowest;
    cfg.crash = vec!["5@0".parse().unwrap()];
    cfg.recover = vec!["5@50ms".parse().unwrap()];
    let r = run(&cfg, RunOptions::default()).unwrap().report;
    assert_eq!(r.messages.by_kind["election"], 10);
    assert_eq!(r.messages.by_kind["answer"], 6);
    assert_eq!(r.messages.by_kind["coordinator"], 3 + 4);
    assert_eq!(r.outcome.election().unwrap().leader, Some(5));
    let v: Vec<_> = r.violations.iter().map(|v| (v.property.name(), v.time)).collect();
    assert_eq!(v, vec![("uniqueness", 50.0)]);
}

#[test]
fn split_brain_scenarios_elect_two_and_merge_after_the_heal() {
    for file in ["bully-partition-split-brain.toml", "ring-partition-split-brain.toml"] {
        let r = scenario(file);
        let c = claims(&r.records);
        assert!(c.iter().any(|&(t, id, _)| id == 2 && (20 * MS..100 * MS).contains(&t)), "{file}: {c:?}");
        let v: Vec<_> = r.report.violations.iter().map(|v| v.property.name()).collect();
        assert_eq!(v, vec!["uniqueness"], "{file}");
        assert_eq!(r.report.outcome.election().unwrap().leader, Some(5), "{file}");
    }
}
