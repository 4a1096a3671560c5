//! Failure detectors under the detector checker: exact detection bounds in a synchronous
//! system, counted mistakes for paused processes, and strong completeness over seeds.

use ringleader_core::time::MILLISECOND;
use ringleader_sim::notation::Latency;
use ringleader_sim::report::DetectorOutcome;
use ringleader_sim::{RunConfig, RunOptions, run};

fn config(algo: &str, n: u32, seed: u64) -> RunConfig {
    let mut cfg = RunConfig::new(algo, n).unwrap();
    cfg.seed = seed;
    cfg.duration = 2_000 * MILLISECOND;
    cfg.latency = Latency::Uniform(MILLISECOND, 3 * MILLISECOND);
    cfg.max_delay = 3 * MILLISECOND;
    cfg
}

fn outcome(r: &ringleader_sim::Report) -> &DetectorOutcome {
    r.outcome.detector().unwrap()
}

#[test]
fn synchronous_heartbeats_detect_every_crash_within_t_plus_d_and_never_lie() {
    for seed in 0..20 {
        for n in [2u32, 5, 8] {
            let mut cfg = config("heartbeat", n, seed);
            cfg.crash = vec![format!("{n}@700ms").parse().unwrap()];
            let r = run(&cfg, RunOptions::default()).unwrap().report;
            assert!(r.violations.is_empty(), "n {n} seed {seed}: {:?}", r.violations);
            assert_eq!(outcome(&r).false_suspicions, 0);
            assert_eq!(outcome(&r).detections, u64::from(n - 1));
            // T + D = 10 ms + 2·3 ms; the last heartbeat left at most one period before.
            assert!(r.latency["detection_time"].max <= 16.0, "{:?}", r.latency["detection_time"]);
        }
    }
}

/// No fault, no jitter: nobody may be suspected, not even during the first period. (φ-accrual
/// once counted the network delay before the first heartbeat as an inter-arrival time and had
/// every pair suspect each other at start-up: n(n − 1) false suspicions per run.)
#[test]
fn a_quiet_system_is_never_suspected() {
    for algo in ["heartbeat", "phi-accrual"] {
        for n in [2u32, 5, 16] {
            for seed in 0..5 {
                let mut cfg = config(algo, n, seed);
                cfg.latency = Latency::Constant(MILLISECOND);
                cfg.max_delay = MILLISECOND;
                let r = run(&cfg, RunOptions::default()).unwrap().report;
                assert!(r.violations.is_empty(), "{algo} n {n} seed {seed}: {:?}", r.violations);
                assert_eq!(outcome(&r).false_suspicions, 0, "{algo} n {n} seed {seed}");
            }
        }
    }
}

#[test]
fn a_paused_process_is_wrongly_suspected_by_every_monitor_then_trusted_again() {
    for algo in ["heartbeat", "phi-accrual"] {
        let mut cfg = config(algo, 5, 3);
        cfg.pause = vec!["2@500ms..800ms".parse().unwrap()];
        let r = run(&cfg, RunOptions::default()).unwrap().report;
        assert!(r.violations.is_empty(), "{algo}: {:?}", r.violations);
        if algo == "heartbeat" {
            assert_eq!(outcome(&r).false_suspicions, 4, "{algo}");
            // Each of the four monitors was wrong for most of the 300 ms pause.
            let mistake = outcome(&r).mistake_ms;
            assert!((4.0 * 250.0..4.0 * 300.0).contains(&mistake), "{algo}: {mistake}");
        } else {
            // φ-accrual also misleads the paused process itself: the heartbeats it receives in
            // one burst when it resumes enter its windows as zero-length intervals.
            assert!(outcome(&r).false_suspicions >= 4, "{algo}");
        }
        assert_eq!(outcome(&r).detections, 0);
    }
}

#[test]
fn every_crash_is_eventually_suspected_by_every_live_process() {
    for algo in ["heartbeat", "phi-accrual"] {
        for seed in 0..15 {
            let mut cfg = config(algo, 6, seed);
            cfg.latency = Latency::LogNormal(2 * MILLISECOND, 1.0);
            cfg.crash = vec!["1@300ms".parse().unwrap(), "4@900ms".parse().unwrap()];
            let r = run(&cfg, RunOptions::default()).unwrap().report;
            assert!(r.properties.iter().any(|p| p.name == "completeness" && p.holds), "{algo} seed {seed}");
            // Two crashes, four live monitors after both: 5 + 4 detections.
            assert_eq!(outcome(&r).detections, 9, "{algo} seed {seed}");
            assert_eq!(outcome(&r).missed, 0);
        }
    }
}
