//! The elections' failure detector (`crates/algorithms/src/election/watch.rs`): `bully`, `ring`
//! and `majority` notice a silent coordinator through `HeartbeatDetector` (default) or
//! `PhiAccrualDetector` (`detector=phi-accrual`).
//!
//! Constant 1 ms latency and heartbeats every 5 ms make every inter-arrival time exactly 5 ms,
//! so φ-accrual's σ is its floor `min_std` = 0.5 ms and its deadline is 5 ms + z(Φ)·0.5 ms
//! (7.806001 ms at Φ = 8), against the heartbeat detector's `suspect_after` = period + T =
//! 5 ms + 2.1 ms.

use ringleader_algorithms::detectors::phi_accrual::PhiAccrualDetector;
use ringleader_core::Event;
use ringleader_core::trace::{RecordKind, TraceRecord};
use ringleader_sim::scenario::Initiators;
use ringleader_sim::{RunConfig, RunOptions, RunResult, Scenario, run};

const MS: u64 = 1_000_000;

fn config(algo: &str, detector: &str, initiators: Initiators, crash: &[&str]) -> RunConfig {
    let mut cfg = RunConfig::new(algo, 5).unwrap();
    cfg.initiators = initiators;
    cfg.crash = crash.iter().map(|c| c.parse().unwrap()).collect();
    cfg.params.insert("heartbeat".into(), "5ms".into());
    cfg.params.insert("detector".into(), detector.into());
    cfg.duration = 300 * MS;
    cfg
}

fn go(cfg: &RunConfig) -> RunResult {
    run(cfg, RunOptions { keep_trace: true, ..RunOptions::default() }).unwrap()
}

/// φ-accrual's deadline when every interval is exactly the period: μ + z·min_std.
fn phi_deadline(phi: f64) -> u64 {
    PhiAccrualDetector::new(1, phi, 100, MS / 2, 5 * MS).suspicion_after(0)
}

/// For each node that reports `LeaderLost` after `crash_at`: the silence between the last
/// heartbeat it received from `coordinator` (a position) and that report.
fn silences(records: &[TraceRecord], coordinator: u32, crash_at: u64) -> Vec<(u32, u64)> {
    let mut out = Vec::new();
    for node in 0..5u32 {
        let last_beat = records
            .iter()
            .filter(|r| r.kind == RecordKind::Deliver && r.node == Some(node) && r.peer == Some(coordinator))
            .filter(|r| r.msg_kind.as_deref() == Some("heartbeat") && r.time_ns <= crash_at + 2 * MS)
            .map(|r| r.time_ns)
            .max();
        let lost = records
            .iter()
            .filter(|r| r.kind == RecordKind::Emit && r.node == Some(node) && r.time_ns > crash_at)
            .find(|r| r.event == Some(Event::LeaderLost))
            .map(|r| r.time_ns);
        if let (Some(beat), Some(lost)) = (last_beat, lost) {
            out.push((node, lost - beat));
        }
    }
    out
}

#[test]
fn phi_deadline_with_regular_heartbeats_is_the_period_plus_z_times_the_floor() {
    // z(8) = 5.612: 1 − F(z) = 1e-8.
    assert_eq!(phi_deadline(8.0), 7_806_001);
    assert_eq!(phi_deadline(1.0), 5_640_776);
}

#[test]
fn phi_accrual_elects_a_new_coordinator_after_a_crash() {
    // Nobody is told to start: the detector notices there is no coordinator, elects 5, and
    // after 5 crashes at 60 ms suspects it and elects 4.
    for algo in ["bully", "ring"] {
        let r = go(&config(algo, "phi-accrual", Initiators::None, &["5@60ms"]));
        let rep = &r.report;
        assert!(rep.violations.is_empty(), "{algo}: {:?}", rep.violations);
        assert!(rep.outcome.election().unwrap().agreed, "{algo}");
        assert_eq!(rep.outcome.election().unwrap().leader, Some(4), "{algo}");
        // Heartbeats are detection traffic, counted apart (the ring's ACKs too).
        // The run stops after a steady state of heartbeats once 4 is elected (not at 300 ms).
        assert_eq!(rep.stopped, "steady", "{algo}");
        let beats = rep.messages.by_kind["heartbeat"];
        assert!(beats > 50, "{algo}: {beats}");
        let acks = rep.messages.by_kind.get("ack").copied().unwrap_or(0);
        assert_eq!(rep.messages.detection, beats + acks, "{algo}");
        // Every live follower suspects exactly one φ deadline after the last heartbeat.
        let s = silences(&r.records, 4, 60 * MS);
        assert_eq!(s.len(), 4, "{algo}: {s:?}");
        assert!(s.iter().all(|&(_, d)| d == phi_deadline(8.0)), "{algo}: {s:?}");
    }
    // Majority: id 1 stands at 0 and leads term 1; it crashes; someone else leads a later term.
    let r = go(&config("majority", "phi-accrual", Initiators::Lowest, &["1@60ms"]));
    let rep = &r.report;
    assert!(rep.violations.is_empty(), "majority: {:?}", rep.violations);
    assert!(rep.outcome.election().unwrap().agreed);
    assert_ne!(rep.outcome.election().unwrap().leader, Some(1));
    assert_eq!(rep.messages.detection, rep.messages.by_kind["heartbeat"]);
    // Randomized: the first follower to suspect does so within [S, 2S) of the last heartbeat
    // (its deadline S drawn in [S, 2S)); nobody gives up on the leader sooner.
    let s = silences(&r.records, 0, 60 * MS);
    let d = phi_deadline(8.0);
    let first = s.iter().map(|&(_, x)| x).min().unwrap();
    assert!((d..2 * d).contains(&first), "{s:?}");
    assert!(s.iter().all(|&(_, x)| x >= d), "{s:?}");
}

#[test]
fn the_heartbeat_detector_suspects_after_suspect_after_as_before() {
    for algo in ["bully", "ring"] {
        let r = go(&config(algo, "heartbeat", Initiators::None, &["5@60ms"]));
        assert!(r.report.violations.is_empty(), "{algo}: {:?}", r.report.violations);
        assert_eq!(r.report.outcome.election().unwrap().leader, Some(4), "{algo}");
        let s = silences(&r.records, 4, 60 * MS);
        assert_eq!(s.len(), 4, "{algo}: {s:?}");
        assert!(s.iter().all(|&(_, d)| d == 7_100_000), "{algo}: {s:?}");
    }
}

#[test]
fn a_small_threshold_suspects_a_briefly_paused_coordinator_and_splits_the_brain() {
    // 5 leads from 2 ms and beats at 2 + 5k ms; its heartbeats arrive at 3 + 5k ms. Paused from
    // 40 to 45 ms, its beat of 42 ms leaves at 45 ms: followers hear nothing from 38 to 46 ms.
    // At Φ = 1 they suspect after 5.64 ms (43.64 ms); id 4 sends ELECTION to the paused 5, hears
    // no ANSWER within T = 2.1 ms and claims the role at 45.74 ms, while 5 still leads: split
    // brain, found by the uniqueness checker. The heartbeat detector (7.1 ms) and Φ = 8
    // (7.81 ms) suspect only after 5 has resumed; its ANSWER comes in time and nobody usurps.
    let run_with = |detector: &str, phi: Option<&str>| {
        let mut cfg = config("bully", detector, Initiators::Lowest, &[]);
        if let Some(phi) = phi {
            cfg.params.insert("phi".into(), phi.into());
        }
        cfg.pause = vec!["5@40ms..45ms".parse().unwrap()];
        cfg.duration = 200 * MS;
        go(&cfg)
    };
    let r = run_with("phi-accrual", Some("1"));
    let v: Vec<_> = r.report.violations.iter().map(|v| (v.property.name(), v.time)).collect();
    assert_eq!(v, vec![("uniqueness", 45.740776)]);
    let lost: Vec<u64> = r
        .records
        .iter()
        .filter(|x| x.kind == RecordKind::Emit && x.event == Some(Event::LeaderLost))
        .map(|x| x.time_ns)
        .collect();
    assert_eq!(lost, vec![38 * MS + phi_deadline(1.0); 4], "every follower suspects the live coordinator");
    assert_eq!(r.report.outcome.election().unwrap().leader, Some(5), "the resumed 5 bullies everyone back");
    for (detector, phi) in [("heartbeat", None), ("phi-accrual", None)] {
        let r = run_with(detector, phi);
        assert!(r.report.violations.is_empty(), "{detector}: {:?}", r.report.violations);
    }
}

/// (first `LeaderLost` after `after`, first claim of `uid` to lead after `after`), in ns.
fn failover(records: &[TraceRecord], after: u64, uid: u64) -> (u64, u64) {
    let emits = || records.iter().filter(|r| r.kind == RecordKind::Emit && r.time_ns > after);
    let lost = emits().find(|r| r.event == Some(Event::LeaderLost)).unwrap().time_ns;
    let leads = emits()
        .find(|r| {
            r.uid == Some(uid) && matches!(r.event, Some(Event::Leader { leader, .. }) if leader == uid)
        })
        .unwrap()
        .time_ns;
    (lost, leads)
}

#[test]
fn the_phi_accrual_failover_scenario_is_faster_than_the_heartbeat_default() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios/bully-phi-accrual-failover.toml");
    let mut cfg = Scenario::load(&path).unwrap().resolve(None).unwrap();
    let phi = go(&cfg);
    assert!(phi.report.violations.is_empty(), "{:?}", phi.report.violations);
    assert_eq!(phi.report.outcome.election().unwrap().leader, Some(4));
    assert_eq!(phi.report.messages.detection, phi.report.messages.by_kind["heartbeat"]);
    cfg.params.insert("detector".into(), "heartbeat".into());
    let hb = go(&cfg);
    assert!(hb.report.violations.is_empty(), "{:?}", hb.report.violations);
    // The numbers the scenario's description quotes.
    let (phi_lost, phi_leads) = failover(&phi.records, 300 * MS, 4);
    let (hb_lost, hb_leads) = failover(&hb.records, 300 * MS, 4);
    assert_eq!(
        [phi_lost / 100_000, phi_leads / 100_000, hb_lost / 100_000, hb_leads / 100_000],
        [3079, 3212, 3171, 3303],
        "{phi_lost} {phi_leads} {hb_lost} {hb_leads} ns"
    );
}

#[test]
fn same_seed_same_run_under_a_heavy_tail() {
    for algo in ["bully", "ring", "majority"] {
        let mut cfg = config(algo, "phi-accrual", Initiators::None, &["5@100ms"]);
        cfg.seed = 11;
        cfg.latency = "lognormal:1ms,1".parse().unwrap();
        cfg.pause = vec!["4@150ms..190ms".parse().unwrap()];
        let (a, b) = (go(&cfg), go(&cfg));
        assert_eq!(a.records, b.records, "{algo}");
        let json = |r: &RunResult| {
            let mut rep = r.report.clone();
            rep.wall_seconds = 0.0;
            serde_json::to_string(&rep).unwrap()
        };
        assert_eq!(json(&a), json(&b), "{algo}");
        assert!(a.report.messages.by_kind["heartbeat"] > 0, "{algo}");
    }
}

#[test]
fn detector_parameters_are_checked() {
    let err = |algo: &str, params: &[(&str, &str)]| {
        let mut cfg = config(algo, "heartbeat", Initiators::Lowest, &[]);
        for &(k, v) in params {
            cfg.params.insert(k.into(), v.into());
        }
        run(&cfg, RunOptions::default()).unwrap_err().to_string()
    };
    let e = err("bully", &[("detector", "gossip")]);
    assert!(e.contains("`detector`") && e.contains("heartbeat, phi-accrual or none"), "{e}");
    let e = err("ring", &[("phi", "3")]);
    assert!(e.contains("`phi`") && e.contains("detector=phi-accrual"), "{e}");
    let e = err("bully", &[("detector", "phi-accrual"), ("suspect_after", "9ms")]);
    assert!(e.contains("`suspect_after`") && e.contains("detector=heartbeat"), "{e}");
    let e = err("majority", &[("detector", "phi-accrual"), ("election_timeout", "20ms")]);
    assert!(e.contains("`election_timeout`"), "{e}");
    let e = err("majority", &[("detector", "phi-accrual"), ("phi", "0")]);
    assert!(e.contains("`phi`") && e.contains("(0, 300]"), "{e}");
    let e = err("ring", &[("detector", "phi-accrual"), ("window", "0")]);
    assert!(e.contains("`window`"), "{e}");
    let e = err("bully", &[("detector", "phi-accrual"), ("heartbeat", "0")]);
    assert!(e.contains("`heartbeat`") && e.contains("contradicts detector=phi-accrual"), "{e}");
    let e = err("bully", &[("detector", "none"), ("heartbeat", "5ms")]);
    assert!(e.contains("`heartbeat`") && e.contains("contradicts detector=none"), "{e}");
    // The knobs are accepted with the detector they belong to.
    let mut cfg = config("bully", "phi-accrual", Initiators::Lowest, &[]);
    for (k, v) in [("phi", "3"), ("window", "20"), ("min_std", "1ms")] {
        cfg.params.insert(k.into(), v.into());
    }
    assert!(run(&cfg, RunOptions::default()).is_ok());
}
