//! The windowed engine (`--threads`): the same run on any number of threads, true verdicts,
//! exact textbook counts, and a clear refusal for what it does not model.

use ringleader_sim::notation::{At, Latency};
use ringleader_sim::scenario::{IdArrangement, Initiators, WorkloadKind};
use ringleader_sim::{RunConfig, RunOptions, RunResult, SimError, run};

fn windowed(cfg: &RunConfig, threads: usize) -> Result<RunResult, SimError> {
    run(cfg, RunOptions { keep_trace: true, threads: Some(threads), ..RunOptions::default() })
}

/// The trace as text and the report without its two run-time fields.
fn fingerprint(r: &RunResult) -> (Vec<String>, String) {
    let records = r.records.iter().map(|x| serde_json::to_string(x).unwrap()).collect();
    let mut report = r.report.clone();
    report.wall_seconds = 0.0;
    let threads = report.threads.take().expect("a windowed run says so");
    let flag = format!(" --threads {threads}");
    assert!(report.repro.ends_with(&flag), "the repro line asks for the windowed engine: {}", report.repro);
    report.repro.truncate(report.repro.len() - flag.len());
    (records, serde_json::to_string(&report).unwrap())
}

fn ring(n: u32, seed: u64, latency: Latency) -> RunConfig {
    let mut cfg = RunConfig::new("chang-roberts", n).unwrap();
    cfg.ids = IdArrangement::Random;
    cfg.initiators = Initiators::All;
    cfg.seed = seed;
    cfg.latency = latency;
    cfg
}

fn mutex(algo: &str, n: u32, seed: u64, kind: WorkloadKind, entries: u64) -> RunConfig {
    let mut cfg = RunConfig::new(algo, n).unwrap();
    cfg.seed = seed;
    cfg.workload = Some(kind);
    cfg.entries = entries;
    cfg.latency = Latency::Uniform(1_000_000, 3_000_000);
    cfg
}

/// Byte for byte the same trace and report on 1, 2, 3 and 5 threads (one thread has no
/// lookahead to get wrong), for elections on a ring and on a random graph and for request
/// patterns on complete graphs and a tree, with random latencies, loss, duplication and FIFO
/// links.
#[test]
fn the_same_run_on_any_number_of_threads() {
    let mut cases =
        vec![ring(40, 7, Latency::Uniform(1_000_000, 2_000_000)), ring(33, 8, Latency::Constant(1_000_000))];
    let mut lossy = mutex("ricart-agrawala", 9, 3, WorkloadKind::Poisson, 20);
    lossy.dup = 0.1;
    lossy.fifo = true;
    cases.push(lossy);
    cases.push(mutex("suzuki-kasami", 12, 4, WorkloadKind::Saturated, 30));
    // Graph topologies: lookahead counts the links to the nearest other shard.
    cases.push(mutex("raymond", 15, 6, WorkloadKind::Poisson, 30));
    let mut yoyo = RunConfig::new("yoyo", 30).unwrap();
    yoyo.ids = IdArrangement::Random;
    yoyo.seed = 9;
    yoyo.latency = Latency::Uniform(1_000_000, 2_000_000);
    cases.push(yoyo);
    let mut lost = mutex("maekawa", 9, 5, WorkloadKind::Saturated, 40);
    lost.loss = 0.01;
    lost.duration = 2_000_000_000;
    cases.push(lost);
    for cfg in cases {
        let one = fingerprint(&windowed(&cfg, 1).unwrap());
        assert!(one.0.len() > 50, "{}: a trace worth comparing ({} records)", cfg.algorithm, one.0.len());
        for threads in [2, 3, 5] {
            let many = fingerprint(&windowed(&cfg, threads).unwrap());
            assert_eq!(one.1, many.1, "{} on {threads} threads: another report", cfg.algorithm);
            assert!(one.0 == many.0, "{} on {threads} threads: another trace", cfg.algorithm);
        }
    }
}

/// Steps are numbered 1, 2, 3 … in the merged order, and time never goes backwards in it.
#[test]
fn the_merged_trace_is_in_time_order_with_consecutive_steps() {
    let r = windowed(&ring(64, 2, Latency::Uniform(1_000_000, 4_000_000)), 3).unwrap();
    let mut last = (0, 0);
    for rec in &r.records {
        assert!((rec.time_ns, rec.step) >= last, "record at {:?} after {:?}", (rec.time_ns, rec.step), last);
        assert!(rec.step <= last.1 + 1, "step {} after {}: a step was skipped", rec.step, last.1);
        last = (rec.time_ns, rec.step);
    }
    assert_eq!(last.1, r.report.events, "the last record is the last event");
}

/// Chang-Roberts on the windowed engine elects the maximum, and every property holds.
#[test]
fn chang_roberts_elects_the_maximum() {
    for seed in 0..20 {
        let r = windowed(&ring(200, seed, Latency::Uniform(1_000_000, 2_000_000)), 2).unwrap();
        assert_eq!(r.report.outcome.election().unwrap().leader, Some(200), "seed {seed}");
        assert!(r.report.violations.is_empty(), "seed {seed}: {:?}", r.report.violations);
        assert_eq!(r.report.stopped, "quiescent");
    }
}

/// Ricart-Agrawala: 2(N−1) messages per entry, exactly, on any number of threads; each
/// requester's share of the entries is served.
#[test]
fn ricart_agrawala_sends_two_n_minus_one_per_entry() {
    for threads in [1, 2, 4] {
        let r = windowed(&mutex("ricart-agrawala", 20, 11, WorkloadKind::Saturated, 30), threads).unwrap();
        assert!(r.report.violations.is_empty(), "{:?}", r.report.violations);
        assert_eq!(r.report.messages.sent, 30 * 2 * 19, "{threads} threads");
        let w = r.report.workload.as_ref().unwrap();
        assert_eq!((w.asked, w.issued), (30, 30));
        assert_eq!(r.report.per_operation.operations, 30);
    }
}

/// A known flaw is found by the windowed engine too: Lamport's algorithm over links that reorder
/// lets two processes into the critical section for some seeds; with FIFO links it never does.
#[test]
fn lamport_without_fifo_is_caught_and_with_fifo_is_safe() {
    let safety = |fifo: bool, seed: u64| {
        let mut cfg = mutex("lamport", 3, seed, WorkloadKind::Saturated, 6);
        cfg.latency = Latency::Uniform(1_000_000, 5_000_000);
        cfg.fifo = fifo;
        let r = windowed(&cfg, 2).unwrap();
        r.report.violations.iter().any(|v| v.property.name() == "safety")
    };
    assert!((0..200).any(|seed| safety(false, seed)), "no seed of 200 showed the non-FIFO flaw");
    assert!(!(0..200).any(|seed| safety(true, seed)), "FIFO links must keep Lamport's algorithm safe");
}

/// A time limit cuts the run: it says so, and a liveness property it could not decide is
/// undecided, not violated.
#[test]
fn a_run_cut_short_says_so() {
    let mut cfg = ring(500, 1, Latency::Constant(1_000_000));
    cfg.duration = 20_000_000;
    let r = windowed(&cfg, 2).unwrap();
    assert_eq!(r.report.stopped, "duration");
    assert!(r.report.violations.is_empty(), "{:?}", r.report.violations);
    assert!(!r.report.undecided.is_empty(), "the election had not finished");
    assert_eq!(r.report.sim_time, 20.0);
}

/// What the engine does not model is refused with the reason, before anything runs.
#[test]
fn refuses_what_it_does_not_model() {
    let refused = |cfg: &RunConfig, needle: &str| match windowed(cfg, 2) {
        Err(SimError::Windowed(reason)) => assert!(reason.contains(needle), "{reason}"),
        other => panic!("expected a refusal naming {needle:?}, got {other:?}"),
    };
    let mut crash = ring(10, 1, Latency::Constant(1_000_000));
    crash.crash.push(At { uid: 3, time: 5_000_000 });
    refused(&crash, "fault plan");
    refused(&ring(10, 1, Latency::Exponential(1_000_000)), "no delay");
    refused(&ring(10, 1, Latency::Uniform(0, 1_000_000)), "no delay");
    refused(&mutex("ricart-agrawala", 5, 1, WorkloadKind::Sequential, 5), "sequential");
    refused(&RunConfig::new("lamport-clock", 4).unwrap(), "clock");
    refused(&RunConfig::new("heartbeat", 4).unwrap(), "clock and failure-detector");
    let message = SimError::Windowed("x".into()).to_string();
    assert!(message.contains("leave out --threads"), "{message}");
}
