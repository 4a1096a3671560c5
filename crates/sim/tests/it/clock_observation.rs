//! A crashed Berkeley master leaves nothing to happen, but the clocks keep drifting: the
//! observation runs to `--duration`, not to the last event.

use ringleader_sim::notation::{At, Latency};
use ringleader_sim::{RunConfig, RunOptions, run};

#[test]
fn a_crashed_berkeley_master_does_not_end_the_observation_early() {
    let mut cfg = RunConfig::new("berkeley", 5).unwrap();
    cfg.duration = 60_000_000_000;
    cfg.latency = Latency::Uniform(800_000, 1_200_000);
    cfg.max_delay = 1_200_000;
    cfg.clock_offset = 10_000_000;
    cfg.clock_drift_ppm = 20;
    cfg.entries = 0;
    cfg.crash = vec!["1@30s".parse::<At>().unwrap()];
    let r = run(&cfg, RunOptions::default()).unwrap().report;
    assert_eq!(r.sim_time, 60_000.0, "observed to the end: {}", r.repro);
    let clock = r.outcome.physical_clock().unwrap();
    let timeline = clock.skew_timeline.as_ref().unwrap();
    let last = timeline.last().unwrap();
    assert_eq!(last.0, 60.0, "{timeline:?}");
    // Unsynchronized for 30 s at up to ±20 ppm, the clocks drift apart again.
    let at_crash = timeline.iter().find(|p| p.0 >= 30.0).unwrap().1;
    assert!(clock.max_skew_after > at_crash, "{timeline:?}");
}
