//! Exact textbook message counts of the bully, ring and majority elections (Garcia-Molina's bully,
//! the ring election, majority voting), for several N: ids 1..N, constant latency, detection off
//! unless said. The counts are the formulas `ringleader table` prints.

use ringleader_analysis::table::formulas::{self, Count};
use ringleader_sim::scenario::Initiators;
use ringleader_sim::{Report, RunConfig, RunOptions, run};

fn config(algo: &str, n: u32, initiators: Initiators, crash: &[&str]) -> RunConfig {
    let mut cfg = RunConfig::new(algo, n).unwrap();
    cfg.initiators = initiators;
    cfg.crash = crash.iter().map(|c| c.parse().unwrap()).collect();
    cfg
}

fn go(cfg: &RunConfig) -> Report {
    let r = run(cfg, RunOptions::default()).unwrap().report;
    assert!(r.violations.is_empty(), "{}: {:?}", cfg.repro(), r.violations);
    r
}

fn kind(r: &Report, k: &str) -> u64 {
    r.messages.by_kind[k]
}

/// Every kind the textbook count names has exactly its count, and the non-detection sends add
/// up to its total.
fn assert_count(r: &Report, want: &Count, what: &str) {
    for &(k, v) in &want.kinds {
        assert_eq!(kind(r, k), v, "{what}: {k}");
    }
    assert_eq!(r.messages.sent - r.messages.detection, want.total, "{what}");
}

#[test]
fn bully_worst_case_is_n_squared_minus_n_minus_one() {
    for n in 3..=12u64 {
        let crash = format!("{n}@0");
        let r = go(&config("bully", n as u32, Initiators::Lowest, &[&crash]));
        assert_count(&r, &formulas::bully_worst(n), &format!("N = {n}"));
        assert_eq!(r.messages.sent, n * n - n - 1, "N = {n}");
        assert_eq!(r.messages.detection, 0);
        assert_eq!(r.outcome.election().unwrap().leader, Some(n - 1));
        assert_eq!(r.stopped, "quiescent");
    }
    let r = go(&config("bully", 10, Initiators::Lowest, &["10@0"]));
    assert_eq!((kind(&r, "election"), kind(&r, "answer"), kind(&r, "coordinator")), (45, 36, 8));
    assert_eq!(r.messages.sent, 89);
}

#[test]
fn bully_best_case_is_n_minus_one() {
    for n in 3..=12u64 {
        let crash = format!("{n}@0");
        let r = go(&config("bully", n as u32, Initiators::Ids(vec![n - 1]), &[&crash]));
        // One ELECTION, to the dead coordinator; no ANSWER.
        assert_count(&r, &formulas::bully_best(n), &format!("N = {n}"));
        assert_eq!(r.messages.sent, n - 1);
        assert_eq!(r.outcome.election().unwrap().leader, Some(n - 1));
    }
}

#[test]
fn bully_with_everyone_alive_and_the_highest_starting() {
    for n in 2..=10u64 {
        // Without a crash the lowest id's election reaches N too, and every process answers
        // every lower ELECTION. N is never *in* an election (rule 1 makes its election
        // instantaneous), so each of the N − 1 ELECTIONs it receives makes it announce again:
        // (N − 1)² COORDINATOR.
        let r = go(&config("bully", n as u32, Initiators::Lowest, &[]));
        assert_eq!(kind(&r, "election"), n * (n - 1) / 2, "N = {n}");
        assert_eq!(kind(&r, "answer"), n * (n - 1) / 2, "N = {n}");
        assert_eq!(kind(&r, "coordinator"), (n - 1) * (n - 1), "N = {n}");
        assert_eq!(r.outcome.election().unwrap().leader, Some(n));
        // Rule 1: the highest id needs no election at all.
        let r = go(&config("bully", n as u32, Initiators::Highest, &[]));
        assert_eq!((kind(&r, "election"), kind(&r, "coordinator")), (0, n - 1));
    }
}

#[test]
fn bully_timer_is_derived_from_max_delay_and_overridable() {
    // T = 2·Ttrans + Tprocess: with 1 ms latency and 0.1 ms processing, id 9 wins at 1 + 2.1 ms
    // after id 1's ELECTION reached it — the worst case ends when COORDINATOR lands, at 4.1 ms.
    let r = go(&config("bully", 10, Initiators::Lowest, &["10@0"]));
    assert_eq!(r.outcome.election().unwrap().election_ms, Some(4.1));
    let mut cfg = config("bully", 10, Initiators::Lowest, &["10@0"]);
    cfg.params.insert("timeout".into(), "5ms".into());
    assert_eq!(go(&cfg).outcome.election().unwrap().election_ms, Some(7.0));
    cfg.params.insert("timeout".into(), "0".into());
    let err = run(&cfg, RunOptions::default()).unwrap_err().to_string();
    assert!(err.contains("timeout"), "{err}");
}

#[test]
fn ring_one_initiator_is_two_n_plus_one_per_dead_successor() {
    for n in 3..=12u64 {
        let r = go(&config("ring", n as u32, Initiators::Lowest, &[]));
        assert_count(&r, &formulas::ring(n, 0, 1), &format!("N = {n}"));
        assert_eq!(r.messages.sent - r.messages.detection, 2 * n);
        assert_eq!(kind(&r, "ack"), 2 * n);
        assert_eq!(r.outcome.election().unwrap().leader, Some(n));

        // The coordinator N crashed: L = N - 1 live, one dead successor skipped once.
        let crash = format!("{n}@0");
        let r = go(&config("ring", n as u32, Initiators::Lowest, &[&crash]));
        assert_count(&r, &formulas::ring(n - 1, 1, 1), &format!("N = {n}, N crashed"));
        assert_eq!(r.messages.sent - r.messages.detection, 2 * (n - 1) + 1);
        assert_eq!(r.outcome.election().unwrap().leader, Some(n - 1));
    }
    // Two adjacent dead processes and one more elsewhere: d = 3.
    let r = go(&config("ring", 10, Initiators::Lowest, &["3@0", "4@0", "8@0"]));
    assert_count(&r, &formulas::ring(7, 3, 1), "three dead");
    assert_eq!((kind(&r, "election"), kind(&r, "coordinator")), (7 + 3, 7));
    assert_eq!(r.outcome.election().unwrap().leader, Some(10));
}

#[test]
fn ring_concurrent_initiators_cost_two_k_n_and_agree() {
    for n in 3..=10u64 {
        for k in 1..=n {
            let ids: Vec<u64> = (1..=k).collect();
            let r = go(&config("ring", n as u32, Initiators::Ids(ids), &[]));
            assert_count(&r, &formulas::ring(n, 0, k), &format!("N = {n}, k = {k}"));
            assert_eq!(kind(&r, "election"), k * n, "N = {n}, k = {k}");
            assert_eq!(r.outcome.election().unwrap().leader, Some(n));
        }
    }
    // k initiators and d dead: k(2L + d).
    let r = go(&config("ring", 8, Initiators::All, &["2@0", "5@0"]));
    assert_count(&r, &formulas::ring(6, 2, 6), "k = 6, two dead");
    assert_eq!(kind(&r, "election"), 6 * (6 + 2));
    assert_eq!(kind(&r, "coordinator"), 6 * 6);
}

#[test]
fn ring_min_elects_the_lowest_live_id() {
    let mut cfg = config("ring-min", 7, Initiators::Highest, &["1@0"]);
    cfg.params.insert("choose".into(), "min".into());
    let r = go(&cfg);
    assert_eq!(r.outcome.election().unwrap().leader, Some(2));
    assert_eq!((kind(&r, "election"), kind(&r, "coordinator")), (7, 6));
    let mut cfg = config("ring", 7, Initiators::Highest, &[]);
    cfg.params.insert("choose".into(), "min".into());
    let err = run(&cfg, RunOptions::default()).unwrap_err().to_string();
    assert!(err.contains("ring-min"), "{err}");
    cfg.params.insert("choose".into(), "median".into());
    let err = run(&cfg, RunOptions::default()).unwrap_err().to_string();
    assert!(err.contains("expected max or min"), "{err}");
}

#[test]
fn majority_uncontested_election_is_two_n_minus_two() {
    for n in 1..=9u64 {
        let mut cfg = config("majority", n as u32, Initiators::Lowest, &[]);
        cfg.duration = 100_000_000;
        let r = go(&cfg);
        assert_count(&r, &formulas::majority(n), &format!("N = {n}"));
        assert_eq!(r.outcome.election().unwrap().leader, Some(1));
        assert!(r.outcome.election().unwrap().agreed);
        // Heartbeats only: N − 1 at once, then N − 1 every 5 ms until 100 ms.
        assert_eq!(kind(&r, "heartbeat"), (n - 1) * (1 + (100 - 2) / 5));
        assert_eq!(r.messages.detection, kind(&r, "heartbeat"));
    }
}

#[test]
fn majority_needs_heartbeats_and_sane_timeouts() {
    let mut cfg = config("majority", 3, Initiators::Lowest, &[]);
    cfg.params.insert("heartbeat".into(), "0".into());
    let err = run(&cfg, RunOptions::default()).unwrap_err().to_string();
    assert!(err.contains("heartbeat"), "{err}");
    let mut cfg = config("bully", 3, Initiators::Lowest, &[]);
    cfg.params.insert("heartbeat".into(), "5ms".into());
    cfg.params.insert("suspect_after".into(), "2ms".into());
    let err = run(&cfg, RunOptions::default()).unwrap_err().to_string();
    assert!(err.contains("suspect_after"), "{err}");
}

#[test]
fn detection_starts_elections_without_initiators() {
    // Nobody is told to start; the heartbeat detector notices there is no coordinator, and later
    // that the coordinator crashed.
    for algo in ["bully", "ring", "majority"] {
        let mut cfg = config(algo, 5, Initiators::None, &["5@60ms"]);
        cfg.params.insert("heartbeat".into(), "5ms".into());
        cfg.duration = 300_000_000;
        let r = go(&cfg);
        assert!(r.outcome.election().unwrap().agreed, "{algo}");
        if algo != "majority" {
            assert_eq!(r.outcome.election().unwrap().leader, Some(4), "{algo}");
        }
        assert!(r.messages.detection > 0);
    }
}
