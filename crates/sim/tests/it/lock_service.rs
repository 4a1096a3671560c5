//! The lock service (`--algo lock-service`, leases and locks on raft-rs) judged by the simulator:
//! the rules of its essay (crates/lock-service/src/process.rs), one test each where a
//! run can show them, and a seeded fault sweep. The long sweep is a documented command
//! (docs/SERVICE.md); this one is its short version.

use std::collections::BTreeMap;

use ringleader_core::trace::{RecordKind, TraceRecord};
use ringleader_core::{Event, Uid};
use ringleader_sim::report::PropertyStatus;
use ringleader_sim::scenario::{RunConfig, WorkloadKind};
use ringleader_sim::{RunOptions, RunResult, run};

const MS: u64 = 1_000_000;

fn cfg(n: u32, seed: u64) -> RunConfig {
    let mut c = RunConfig::new("lock-service", n).unwrap();
    c.seed = seed;
    c.workload = Some(WorkloadKind::Poisson);
    c.entries = 20;
    c
}

fn go(c: &RunConfig) -> RunResult {
    run(c, RunOptions { keep_trace: true, ..RunOptions::default() }).unwrap()
}

/// (time, uid, fencing) of every entry, in trace order.
fn entries(r: &RunResult) -> Vec<(u64, Uid, u64)> {
    r.records
        .iter()
        .filter_map(|rec| match (&rec.kind, &rec.event) {
            (RecordKind::Emit, Some(Event::Entered { fencing })) => Some((rec.time_ns, rec.uid?, *fencing)),
            _ => None,
        })
        .collect()
}

fn status(r: &RunResult, property: &str) -> PropertyStatus {
    r.report.properties.iter().find(|p| p.name == property).unwrap().status
}

/// Raft's election safety, read from the trace: at most one leader per term.
fn leaders_per_term(records: &[TraceRecord]) -> BTreeMap<u64, Vec<Uid>> {
    let mut by_term: BTreeMap<u64, Vec<Uid>> = BTreeMap::new();
    for rec in records {
        if let Some(Event::Leader { leader, term }) = &rec.event {
            let v = by_term.entry(*term).or_default();
            if !v.contains(leader) {
                v.push(*leader);
            }
        }
    }
    by_term
}

#[test]
fn a_fault_free_run_serves_every_request_and_ends_by_itself() {
    let r = go(&cfg(5, 1));
    assert!(r.report.violations.is_empty(), "{:?}", r.report.violations);
    assert_eq!(r.report.outcome.mutex().unwrap().entries, 20);
    assert_eq!(r.report.stopped, "steady", "only lease upkeep is left once every request is served");
    for p in ["safety", "liveness", "no_starvation", "fencing", "linearizable"] {
        assert_eq!(status(&r, p), PropertyStatus::Holds, "{p}");
    }
}

/// Rule 2: the library's randomness is replaced by the run's seed.
#[test]
fn rule_2_the_same_seed_gives_the_same_trace_and_another_seed_another() {
    let trace = |seed| serde_json::to_string(&go(&cfg(5, seed)).records).unwrap();
    assert_eq!(trace(7), trace(7));
    assert_ne!(trace(7), trace(8));
}

/// Rule 1 (Raft §5.2, election safety): one leader per term, across leader crashes.
#[test]
fn rule_1_at_most_one_leader_per_term_across_leader_crashes() {
    for seed in 1..=20 {
        let mut c = cfg(5, seed);
        c.crash = vec!["1@300ms".parse().unwrap(), "2@600ms".parse().unwrap()];
        c.recover = vec!["1@900ms".parse().unwrap()];
        let r = go(&c);
        for (term, leaders) in leaders_per_term(&r.records) {
            assert!(leaders.len() <= 1, "seed {seed}: term {term} has leaders {leaders:?}");
        }
        assert!(r.report.violations.is_empty(), "seed {seed}: {:?}", r.report.violations);
    }
}

/// Rule 7: fencing tokens increase across leader changes and restarts.
#[test]
fn rule_7_fencing_tokens_strictly_increase_across_crashes_and_recoveries() {
    for seed in 1..=20 {
        let mut c = cfg(5, seed);
        c.crash = vec!["1@250ms".parse().unwrap(), "2@500ms".parse().unwrap(), "3@750ms".parse().unwrap()];
        c.recover = vec!["1@450ms".parse().unwrap(), "2@700ms".parse().unwrap()];
        let r = go(&c);
        let tokens: Vec<u64> = entries(&r).iter().map(|e| e.2).collect();
        assert!(tokens.windows(2).all(|w| w[0] < w[1]), "seed {seed}: {tokens:?}");
        assert_eq!(status(&r, "fencing"), PropertyStatus::Holds, "seed {seed}");
        assert_eq!(status(&r, "safety"), PropertyStatus::Holds, "seed {seed}");
        assert_eq!(status(&r, "linearizable"), PropertyStatus::Holds, "seed {seed}");
    }
}

/// Rules 5 and 6: when the holder's node dies, the lock passes to the next waiter once its
/// lease has run out at the server — not before (that would be two holders), and not much
/// later: within the TTL plus the replicated clock's step and a commit.
#[test]
fn rules_5_and_6_a_dead_holders_lock_passes_on_within_its_ttl() {
    let ttl = 500 * MS;
    let mut c = cfg(3, 3);
    c.workload = Some(WorkloadKind::Saturated);
    c.requesters = Some(vec![1, 2]);
    c.entries = 2;
    c.hold = 400 * MS;
    // Where the first holder enters without faults; the run with the crash is the same up to it.
    let first = entries(&go(&c))[0];
    let crash_at = first.0 + 100 * MS;
    c.crash = vec![format!("{}@{}ns", first.1, crash_at).parse().unwrap()];
    let r = go(&c);
    let next = entries(&r).into_iter().find(|e| e.0 > crash_at).expect("the other requester enters");
    assert_ne!(next.1, first.1);
    let handover = next.0 - crash_at;
    assert!(handover <= ttl + 100 * MS, "handed over {handover} ns after the crash");
    assert!(next.2 > first.2);
    assert!(r.report.violations.is_empty(), "{:?}", r.report.violations);
}

/// Rule 6's limit, shown rather than hidden: a holder paused for longer than its lease (a
/// garbage-collection pause, SIGSTOP) cannot notice that its lease ran out, so in time its
/// critical section overlaps the next holder's — the checker reports it (`safety`). What keeps
/// a resource safe is rule 7: the next holder's fencing token is larger, so a resource that
/// refuses stale tokens refuses the paused one (`fencing` holds).
#[test]
fn rule_7_a_holder_paused_past_its_lease_overlaps_in_time_but_its_token_is_stale() {
    let mut c = cfg(3, 5);
    c.workload = Some(WorkloadKind::Saturated);
    c.requesters = Some(vec![1, 2]);
    c.entries = 2;
    c.hold = 100 * MS;
    let first = entries(&go(&c))[0];
    let from = first.0 + 10 * MS;
    c.pause = vec![format!("{}@{}ns..{}ns", first.1, from, from + 1_500 * MS).parse().unwrap()];
    let r = go(&c);
    assert_eq!(status(&r, "safety"), PropertyStatus::Violated);
    assert_eq!(status(&r, "fencing"), PropertyStatus::Holds);
    // The overlap is in time, not in order: the paused holder's lease may have ended during the
    // pause, before the next grant.
    assert_eq!(status(&r, "linearizable"), PropertyStatus::Holds);
    let overlap = entries(&r).into_iter().find(|e| e.1 != first.1).unwrap();
    assert!(overlap.2 > first.2, "the newer holder's token is the larger");
}

/// A named change to a run's configuration.
type FaultPlan = (&'static str, fn(&mut RunConfig));

/// The short version of the seeded fault sweep (docs/SERVICE.md has the long command): crashes
/// with recovery, partitions (a minority cut off, the leader's side cut off, one-way cuts), loss
/// with duplication over slow links, and drifting clocks; every property holds in every run.
#[test]
fn seeded_fault_runs_find_no_violation() {
    let plans: [FaultPlan; 5] = [
        ("crash and recover", |c| {
            c.crash = vec!["1@200ms".parse().unwrap(), "3@500ms".parse().unwrap()];
            c.recover = vec!["1@400ms".parse().unwrap(), "3@800ms".parse().unwrap()];
        }),
        ("partition", |c| {
            c.partition = vec!["1,2|3,4,5@300ms..900ms".parse().unwrap()];
        }),
        ("one-way partitions", |c| {
            c.partition =
                vec!["1>2,3,4,5@300ms..900ms".parse().unwrap(), "3,4,5>2@1s..1.4s".parse().unwrap()];
        }),
        ("loss and duplication", |c| {
            c.loss = 0.1;
            c.dup = 0.1;
            c.latency = "uniform:1ms..20ms".parse().unwrap();
        }),
        ("drift", |c| {
            c.params.insert("ttl".into(), "300ms".into());
            c.partition = vec!["1|2,3,4,5@200ms..1200ms".parse().unwrap()];
            c.clock_drift_ppm = 20_000;
        }),
    ];
    for (name, plan) in plans {
        for seed in 1..=25 {
            let mut c = cfg(5, seed);
            plan(&mut c);
            let r = go(&c);
            assert!(r.report.violations.is_empty(), "{name}, seed {seed}: {:?}", r.report.violations);
            assert!(r.report.undecided.is_empty(), "{name}, seed {seed}: {:?}", r.report.undecided);
        }
    }
}

#[test]
fn contradictory_parameters_are_refused_with_one_line() {
    for (key, value, words) in [
        ("heartbeat_ticks", "10", "below election_ticks"),
        ("deadlock", "youngest", "allowed: report, wait-die, wound-wait"),
        ("margin", "600ms", "below ttl"),
        ("clock_every", "400ms", "quarter of ttl"),
    ] {
        let mut c = cfg(3, 1);
        c.params.insert(key.into(), value.into());
        let Err(err) = run(&c, RunOptions::default()) else { panic!("{key}={value} was accepted") };
        let err = err.to_string();
        assert!(err.contains(words), "{key}={value}: {err}");
        assert!(!err.contains('\n'), "{err}");
    }
}

/// Rule 9: with frequent snapshots, a node that was down while the log was compacted past it
/// catches up from a snapshot (the leader no longer has the entries it missed) and then follows
/// the log again.
#[test]
fn rule_9_a_node_behind_a_compaction_catches_up_from_a_snapshot() {
    let mut c = cfg(3, 2);
    c.entries = 40;
    c.rate = 5.0;
    c.params.insert("snapshot_every".into(), "10".into());
    c.crash = vec!["3@200ms".parse().unwrap()];
    c.recover = vec!["3@1500ms".parse().unwrap()];
    let r = go(&c);
    assert!(r.report.violations.is_empty(), "{:?}", r.report.violations);
    let to_3 = |rec: &&TraceRecord, kind: &str| {
        rec.kind == RecordKind::Deliver && rec.uid == Some(3) && rec.msg_kind.as_deref() == Some(kind)
    };
    let snapshot = r.records.iter().find(|rec| to_3(rec, "snapshot")).expect("a snapshot reaches id 3");
    assert!(snapshot.time_ns > 1500 * MS);
    let followed =
        r.records.iter().filter(|rec| rec.time_ns > snapshot.time_ns && to_3(rec, "append")).count();
    assert!(followed >= 1, "id 3 got no append after the snapshot");
}

/// A follower's answer to a snapshot can be lost: raft-rs then keeps replication to it paused
/// until its host reports the snapshot's fate. The replica reports a sent snapshot finished, so
/// the leader probes the follower again and every request is served. (Without the report, a
/// follower waits forever in this run: with `report_snapshot` left out of the replica, seed 130
/// ends with a request undecided, as do 161, 299, 313 and 349 of the first 400 seeds; the
/// sweep that found the flaw is in docs/SERVICE.md.)
#[test]
fn a_lost_answer_to_a_snapshot_does_not_leave_a_follower_behind() {
    let mut c = RunConfig::new("lock-service", 7).unwrap();
    c.seed = 130;
    c.workload = Some(WorkloadKind::Saturated);
    c.entries = 1000;
    c.loss = 0.02;
    c.pause = vec!["2@500ms..1500ms".parse().unwrap()];
    c.crash = vec!["5@2s".parse().unwrap()];
    c.recover = vec!["5@3s".parse().unwrap()];
    let r = run(&c, RunOptions::default()).unwrap();
    assert!(r.report.messages.by_kind["snapshot"] > 0, "the run sends no snapshot: it tests nothing");
    assert!(r.report.violations.is_empty(), "{:?}", r.report.violations);
    assert!(r.report.undecided.is_empty(), "{:?}\n{}", r.report.undecided, r.report.repro);
    assert_eq!(status(&r, "no_starvation"), PropertyStatus::Holds);
}

/// Rule 4 with frequent snapshots and loss: a node misses replies and notices that came inside
/// a snapshot, and proposals are retried. Retries are deduplicated by the state machine (a
/// retried release cannot drop the client's next acquire from the queue), a duplicate answers
/// with the first reply, and a grant answers the acquires still waiting for theirs: every
/// request is served. (Before, seed 1 starved id 1.)
#[test]
fn rule_4_retried_requests_under_loss_and_frequent_snapshots_are_all_served() {
    for seed in 1..=10 {
        let mut c = RunConfig::new("lock-service", 5).unwrap();
        c.seed = seed;
        c.workload = Some(WorkloadKind::Saturated);
        c.entries = 800;
        c.loss = 0.05;
        c.duration = 60_000 * MS;
        c.params.insert("snapshot_every".into(), "20".into());
        let r = run(&c, RunOptions::default()).unwrap();
        assert!(r.report.messages.by_kind["snapshot"] > 0, "seed {seed}: no snapshot sent");
        assert!(r.report.violations.is_empty(), "seed {seed}: {:?}", r.report.violations);
        assert!(r.report.undecided.is_empty(), "seed {seed}: {:?}", r.report.undecided);
        assert_eq!(r.report.outcome.mutex().unwrap().entries, 800, "seed {seed}");
    }
}
