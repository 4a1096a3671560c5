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

/// A paused process's application pauses with it: the lock table used to run transactions in
/// its name during the pause, and their requests reached it behind an abort of the transaction
/// it had when it paused — the abort withdrew the new transaction's waits, a request was never
/// granted, and the run ended with a process waiting forever (reported as starvation), or a
/// wait was judged against the wrong transaction (a cycle). Seeds and pauses other than the
/// ones that found it (`--nodes 5 --pause 2@2ms..40ms`, seeds 1..300).
#[test]
fn a_paused_process_neither_starves_nor_closes_a_cycle() {
    for algo in ["wait-die", "wound-wait"] {
        for (nodes, pauses) in [(5, vec!["3@1ms..35ms"]), (6, vec!["2@3ms..50ms", "5@60ms..80ms"])] {
            for seed in 301..=420 {
                let mut cfg = RunConfig::new(algo, nodes).unwrap();
                cfg.seed = seed;
                cfg.entries = 30;
                cfg.duration = 2_000_000_000;
                cfg.pause = pauses.iter().map(|p| p.parse::<Pause>().unwrap()).collect();
                let r = run(&cfg, RunOptions::default()).unwrap().report;
                assert!(r.violations.is_empty(), "{}: {:?}", r.repro, r.violations);
                assert!(r.undecided.is_empty(), "{}: {:?}", r.repro, r.undecided);
            }
        }
    }
}
