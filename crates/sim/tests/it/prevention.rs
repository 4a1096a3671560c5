//! Deadlock prevention is judged as prevention: a stale REQUEST is no new wait, and a run in
//! which nobody waits is still judged by `no_deadlock` and `no_starvation`.

use ringleader_sim::notation::Pause;
use ringleader_sim::{RunConfig, RunOptions, run};

fn properties(r: &ringleader_sim::Report) -> Vec<&str> {
    r.properties.iter().map(|p| p.name.as_str()).collect()
}

/// A paused holder reads REQUESTs of transactions that have since committed; judged against
/// the requesters' new, younger transactions they looked like waits against the timestamp
/// order, and the checker saw a cycle that wait-die cannot form.
#[test]
fn a_stale_request_from_a_finished_transaction_is_no_new_wait() {
    for algo in ["wait-die", "wound-wait"] {
        for seed in 1..=6 {
            let mut cfg = RunConfig::new(algo, 5).unwrap();
            cfg.seed = seed;
            cfg.entries = 30;
            cfg.duration = 2_000_000_000;
            cfg.pause = vec!["2@2ms..60ms".parse::<Pause>().unwrap()];
            let r = run(&cfg, RunOptions::default()).unwrap().report;
            assert!(r.violations.is_empty(), "{}: {:?}", r.repro, r.violations);
            assert_eq!(r.outcome.prevention().unwrap().deadlocks_real, 0, "{}", r.repro);
            assert!(r.outcome.prevention().unwrap().aborts > 0, "{}: the pause made nobody die", r.repro);
        }
    }
}

#[test]
fn a_prevention_run_without_waits_is_judged_by_prevention() {
    for algo in ["wait-die", "wound-wait"] {
        let r = run(&RunConfig::new(algo, 1).unwrap(), RunOptions::default()).unwrap().report;
        assert_eq!(properties(&r), ["no_deadlock", "no_starvation"], "{algo}");
    }
    let r = run(&RunConfig::new("chandy-misra-haas", 1).unwrap(), RunOptions::default()).unwrap().report;
    assert_eq!(properties(&r), ["soundness", "completeness", "single_victim"]);
}
