//! Clocks under the simulator: logical clocks against happens-before over 10,000 seeded runs
//! each, a broken Lamport clock caught by the checker, and Cristian, Berkeley and NTP keeping
//! 20 drifting clocks within the bound docs/CLOCKS.md derives from the latency model.

use ringleader_algorithms::{Algorithm, Family, ParamError, Setup};
use ringleader_core::trace::RecordKind;
use ringleader_core::{Context, Event, Message, NodeId, Outbox, Process, Request};
use ringleader_sim::report::{LogicalClockOutcome, PhysicalClockOutcome};
use ringleader_sim::{RunConfig, RunOptions, run, run_algorithm};
use serde::{Deserialize, Serialize};

/// A small logical-clock run: 2–5 nodes, 8–27 workload events, fan-out 1 or 2, latencies
/// spread from 0.1 ms to 3 ms (so messages overtake each other), and on some seeds duplicates.
fn small_run(algorithm: &str, seed: u64) -> RunConfig {
    let n = 2 + (seed % 4) as u32;
    let mut cfg = RunConfig::new(algorithm, n).unwrap();
    cfg.seed = seed;
    cfg.entries = 8 + seed % 20;
    cfg.rate = 500.0;
    cfg.fanout = if n > 2 && seed.is_multiple_of(3) { 2 } else { 1 };
    cfg.latency = "uniform:0.1ms..3ms".parse().unwrap();
    if seed.is_multiple_of(7) {
        cfg.dup = 0.1;
    }
    cfg
}

fn logical_of(r: &ringleader_sim::Report) -> &LogicalClockOutcome {
    r.outcome.logical_clock().unwrap_or_else(|| panic!("a logical clock's outcome: {:?}", r.outcome))
}

fn physical_of(r: &ringleader_sim::Report) -> &PhysicalClockOutcome {
    r.outcome.physical_clock().unwrap_or_else(|| panic!("a physical clock's outcome: {:?}", r.outcome))
}

/// Runs `algorithm` over 10,000 seeds; every run must hold `property` on every checked pair.
fn sweep(algorithm: &str, property: &str) -> (u64, u64) {
    let (mut events, mut pairs) = (0, 0);
    for seed in 0..10_000 {
        let cfg = small_run(algorithm, seed);
        let r = run(&cfg, RunOptions::default()).unwrap().report;
        assert!(r.violations.is_empty(), "seed {seed}: {:?}\nrepro: {}", r.violations, r.repro);
        assert!(
            r.properties.iter().any(|p| p.name == property && p.holds),
            "seed {seed}: {:?}",
            r.properties
        );
        let stamped = logical_of(&r).stamped_events;
        // Every local event, every send and every delivery is stamped, once; a send event of
        // fan-out k is k sends.
        let sends = r.messages.sent;
        let local = cfg.entries - sends / cfg.fanout as u64;
        assert_eq!(stamped, local + sends + r.messages.delivered, "seed {seed}");
        events += stamped;
        pairs += logical_of(&r).pairs_checked;
    }
    (events, pairs)
}

#[test]
fn lamport_clock_condition_holds_on_every_pair_of_10_000_runs() {
    let (events, pairs) = sweep("lamport-clock", "clock_condition");
    assert!(events > 200_000, "{events}");
    assert!(pairs > 10_000_000, "{pairs}");
}

#[test]
fn vector_clocks_characterize_happens_before_on_every_pair_of_10_000_runs() {
    let (events, pairs) = sweep("vector-clock", "strong_clock_condition");
    assert!(events > 200_000, "{events}");
    assert!(pairs > 10_000_000, "{pairs}");
}

/// A Lamport clock that forgets the max on receive: it just increments.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
struct ForgetfulLamport {
    me: NodeId,
    clock: u64,
    sent: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
struct Stamp {
    id: u64,
    lamport: u64,
}

impl Message for Stamp {
    const KINDS: &'static [&'static str] = &["message"];
    fn kind_index(&self) -> usize {
        0
    }
}

impl Process for ForgetfulLamport {
    type Msg = Stamp;
    type Timer = u8;
    fn on_start(&mut self, _: &Context, _: &mut Outbox<Stamp, u8>) {}
    fn on_message(&mut self, _: &Context, _: NodeId, msg: Stamp, out: &mut Outbox<Stamp, u8>) {
        self.clock += 1; // the bug: no max(L, t)
        out.emit(Event::StampedMessage {
            message: msg.id,
            receive: true,
            lamport: self.clock,
            vector: vec![],
        });
    }
    fn on_timer(&mut self, _: &Context, _: u8, _: &mut Outbox<Stamp, u8>) {}
    fn on_request(&mut self, _: &Context, req: Request, out: &mut Outbox<Stamp, u8>) {
        self.clock += 1;
        match req {
            Request::Local => out.emit(Event::Stamped { lamport: self.clock, vector: vec![] }),
            Request::SendTo { to } => {
                let id = ringleader_algorithms::clocks::message_id(self.me, self.sent);
                self.sent += 1;
                out.send(to, Stamp { id, lamport: self.clock });
                out.emit(Event::StampedMessage {
                    message: id,
                    receive: false,
                    lamport: self.clock,
                    vector: vec![],
                });
            }
            _ => {}
        }
    }
    fn on_recover(&mut self, _: &Context, _: &mut Outbox<Stamp, u8>) {}
}

impl Algorithm for ForgetfulLamport {
    const NAME: &'static str = "forgetful-lamport";
    const FAMILY: Family = Family::Clock;
    const SUMMARY: &'static str = "a broken Lamport clock (no max on receive)";
    type Config = ();
    fn configure(_: &Setup) -> Result<(), ParamError> {
        Ok(())
    }
    fn new(me: NodeId, _: &(), _: &Setup) -> Self {
        ForgetfulLamport { me, clock: 0, sent: 0 }
    }
}

/// The broken clock is caught exactly in the runs where some receive is stamped no higher than
/// its send (the only place it can go wrong: program order still increments), which the test
/// finds from the trace on its own, and that is most runs.
#[test]
fn a_lamport_clock_without_the_max_is_caught() {
    let mut caught = 0;
    for seed in 0..1_000 {
        let mut cfg = small_run("lamport-clock", seed);
        cfg.entries = 30;
        let result =
            run_algorithm::<ForgetfulLamport>(&cfg, RunOptions { keep_trace: true, ..Default::default() })
                .unwrap();
        let mut sent = std::collections::BTreeMap::new();
        let mut inverted = false;
        for r in result.records.iter().filter(|r| r.kind == RecordKind::Emit) {
            if let Some(Event::StampedMessage { message, receive, lamport, .. }) = &r.event {
                if *receive {
                    inverted |= lamport <= &sent[message];
                } else {
                    sent.insert(*message, *lamport);
                }
            }
        }
        let violated = result.report.violations.iter().any(|v| v.property.name() == "clock_condition");
        assert_eq!(violated, inverted, "seed {seed}: {:?}", result.report.violations);
        caught += violated as u32;
    }
    assert!(caught > 900, "caught in only {caught} of 1000 runs");
}

/// The skew bounds of docs/CLOCKS.md, in ns, for one-way delays uniform in [a, b], drift at
/// most ρ (ppm), period P and the 500 ppm slew rate σ.
struct Model {
    a: f64,
    b: f64,
    rho: f64,
    period: f64,
}

impl Model {
    /// ε: one estimate's error — half the delay asymmetry, plus drift during the round trip.
    fn epsilon(&self) -> f64 {
        (self.b - self.a) / 2.0 + 2.0 * self.rho * 2.0 * self.b
    }
    /// Cristian: each client within ε + 2ρ(P + 2b) of the server, two clients twice that.
    fn cristian(&self) -> f64 {
        2.0 * (self.epsilon() + 2.0 * self.rho * (self.period + 2.0 * self.b))
    }
    /// Berkeley: all corrected at once to within 2ε of each other, then drifting apart at 2ρ
    /// until the next round's deltas land (P + deadline + b, deadline = 2b + 1 ms).
    fn berkeley(&self) -> f64 {
        2.0 * self.epsilon() + 2.0 * self.rho * (self.period + 3.0 * self.b + 1e6)
    }
    /// NTP: a used sample is at most W − 1 polls old and the next use at most W polls away;
    /// a stored sample may be stale by the unabsorbed part of the previous correction.
    fn ntp(&self) -> f64 {
        let w = 8.0;
        let drift = 2.0 * self.rho * ((2.0 * w - 1.0) * self.period + 4.0 * self.b);
        let largest = self.epsilon() + drift;
        let stale = (largest - 500e-6 * self.period).max(0.0);
        2.0 * (self.epsilon() + drift + stale)
    }
}

const MODEL: Model = Model { a: 0.8e6, b: 1.2e6, rho: 20e-6, period: 1e9 };

fn physical(algorithm: &str, seed: u64, seconds: u64) -> ringleader_sim::Report {
    let mut cfg = RunConfig::new(algorithm, 20).unwrap();
    cfg.seed = seed;
    cfg.latency = "uniform:0.8ms..1.2ms".parse().unwrap();
    cfg.clock_offset = 10_000_000;
    cfg.clock_drift_ppm = 20;
    cfg.duration = seconds * 1_000_000_000;
    cfg.workload = None;
    run(&cfg, RunOptions::default()).unwrap().report
}

fn check_skew(algorithm: &str, bound_ns: f64) {
    // Two 5-minute runs and one of an hour.
    for (seed, seconds) in [(1, 300), (2, 300), (3, 3_600)] {
        let r = physical(algorithm, seed, seconds);
        let clock = physical_of(&r);
        assert!(r.violations.is_empty(), "{algorithm} seed {seed}: {:?}", r.violations);
        assert_eq!(physical_of(&r).backward_steps, 0);
        assert!(
            clock.max_skew_before > 10.0,
            "{algorithm}: clocks started {} ms apart",
            clock.max_skew_before
        );
        let bound = bound_ns / 1e6;
        assert!(
            clock.max_skew_after <= bound,
            "{algorithm} seed {seed}: {} ms > {bound} ms",
            clock.max_skew_after
        );
        // Over the long run: every slice of the timeline that starts at 60 s or later stays
        // under the bound.
        let mut start = 0.0;
        for &(end, skew) in clock.skew_timeline.as_ref().unwrap() {
            if start >= 60.0 {
                assert!(skew <= bound, "{algorithm} seed {seed}: {skew} ms in {start}..{end} s > {bound} ms");
            }
            start = end;
        }
        assert!(start >= seconds as f64, "the timeline covers the run");
    }
}

#[test]
fn the_skew_bounds_of_the_docs() {
    assert_eq!((MODEL.epsilon() / 1e3).round(), 200.0);
    assert_eq!((MODEL.cristian() / 1e3).round(), 480.0);
    assert_eq!((MODEL.berkeley() / 1e3).round(), 440.0);
    assert_eq!((MODEL.ntp() / 1e3).round(), 2201.0);
}

#[test]
fn berkeley_keeps_twenty_drifting_clocks_within_the_bound() {
    check_skew("berkeley", MODEL.berkeley());
}

#[test]
fn ntp_keeps_twenty_drifting_clocks_within_the_bound() {
    check_skew("ntp", MODEL.ntp());
}

#[test]
fn cristian_keeps_twenty_drifting_clocks_within_the_bound() {
    check_skew("cristian", MODEL.cristian());
}

/// Textbook message counts over 11 rounds (t = 0, 1, …, 10 s) on 5 nodes with perfect clocks
/// and constant delays: Berkeley 3(N−1) per round, Cristian 2·probes·(N−1), NTP 2(N−1).
#[test]
fn synchronization_rounds_cost_the_textbook_messages() {
    let count = |algorithm: &str| {
        let mut cfg = RunConfig::new(algorithm, 5).unwrap();
        cfg.duration = 10_500_000_000;
        cfg.workload = None;
        let r = run(&cfg, RunOptions::default()).unwrap().report;
        assert!(r.violations.is_empty(), "{algorithm}: {:?}", r.violations);
        (r.messages.by_kind.clone(), physical_of(&r).adjustments)
    };
    let (berkeley, adjusted) = count("berkeley");
    assert_eq!((berkeley["poll"], berkeley["time"], berkeley["adjust"]), (44, 44, 44));
    assert_eq!(adjusted, 55, "every node, the master included, once per round");
    let (cristian, adjusted) = count("cristian");
    assert_eq!((cristian["request"], cristian["reply"]), (176, 176));
    assert_eq!(adjusted, 44, "equal round trips: only the first reply of a round is the minimum");
    let (ntp, adjusted) = count("ntp");
    assert_eq!((ntp["request"], ntp["reply"]), (44, 44));
    assert_eq!(adjusted, 44, "equal delays: the newest sample is a minimum, newer than the last used");
}

/// The three `make` scenarios: the rebuild is skipped only with unsynchronized physical stamps.
#[test]
fn make_skips_the_rebuild_only_with_skewed_physical_timestamps() {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let story = |file: &str| {
        let path = dir.join(file);
        let cfg = ringleader_sim::Scenario::load(&path).unwrap().resolve(Some(path)).unwrap();
        let r = run(&cfg, RunOptions::default()).unwrap().report;
        let violated: Vec<&str> = r.violations.iter().map(|v| v.property.name()).collect();
        (physical_of(&r).rebuilds.unwrap_or(0), physical_of(&r).skips.unwrap_or(0), violated, r.as_expected())
    };
    assert_eq!(story("make-skewed-clocks.toml"), (1, 1, vec!["make_rebuilds"], true));
    assert_eq!(story("make-lamport.toml"), (2, 0, vec![], true));
    assert_eq!(story("make-synchronized.toml"), (2, 0, vec![], true));
}

/// Above 1,500 stamped events the checker judges every edge and a seeded sample of 200,000
/// pairs; the sample is the same for the same run.
#[test]
fn large_runs_are_checked_on_a_seeded_sample_of_pairs() {
    for algorithm in ["lamport-clock", "vector-clock"] {
        let mut cfg = RunConfig::new(algorithm, 8).unwrap();
        cfg.entries = 2_000;
        cfg.rate = 1_000.0;
        cfg.latency = "uniform:0.1ms..3ms".parse().unwrap();
        let r = run(&cfg, RunOptions::default()).unwrap().report;
        assert!(r.violations.is_empty(), "{algorithm}: {:?}", r.violations);
        let (stamped, pairs) = (logical_of(&r).stamped_events, logical_of(&r).pairs_checked);
        assert!(stamped > 1_500, "{stamped}");
        let edges = stamped - 8 + r.messages.delivered;
        assert!(
            (199_000 + edges..=200_000 + edges).contains(&pairs),
            "{algorithm}: {pairs} pairs, {edges} edges"
        );
        let again = run(&cfg, RunOptions::default()).unwrap().report;
        assert_eq!(logical_of(&again).pairs_checked, pairs);
    }
}

/// A "vector clock" that is a Lamport clock copied into every component: e → f still gives
/// V(e) < V(f), but concurrent events get comparable vectors too, which only the "⇐" half of
/// the characterization can catch.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
struct ScalarVector {
    me: NodeId,
    n: usize,
    clock: u64,
    sent: u64,
}

impl ScalarVector {
    fn vector(&self) -> Vec<u64> {
        vec![self.clock; self.n]
    }
}

impl Process for ScalarVector {
    type Msg = Stamp;
    type Timer = u8;
    fn on_start(&mut self, _: &Context, _: &mut Outbox<Stamp, u8>) {}
    fn on_message(&mut self, _: &Context, _: NodeId, msg: Stamp, out: &mut Outbox<Stamp, u8>) {
        self.clock = self.clock.max(msg.lamport) + 1;
        out.emit(Event::StampedMessage { message: msg.id, receive: true, lamport: 0, vector: self.vector() });
    }
    fn on_timer(&mut self, _: &Context, _: u8, _: &mut Outbox<Stamp, u8>) {}
    fn on_request(&mut self, _: &Context, req: Request, out: &mut Outbox<Stamp, u8>) {
        self.clock += 1;
        match req {
            Request::Local => out.emit(Event::Stamped { lamport: 0, vector: self.vector() }),
            Request::SendTo { to } => {
                let id = ringleader_algorithms::clocks::message_id(self.me, self.sent);
                self.sent += 1;
                out.send(to, Stamp { id, lamport: self.clock });
                out.emit(Event::StampedMessage {
                    message: id,
                    receive: false,
                    lamport: 0,
                    vector: self.vector(),
                });
            }
            _ => {}
        }
    }
    fn on_recover(&mut self, _: &Context, _: &mut Outbox<Stamp, u8>) {}
}

impl Algorithm for ScalarVector {
    const NAME: &'static str = "scalar-vector";
    const FAMILY: Family = Family::Clock;
    const SUMMARY: &'static str = "a Lamport clock posing as a vector clock";
    type Config = ();
    fn configure(_: &Setup) -> Result<(), ParamError> {
        Ok(())
    }
    fn new(me: NodeId, _: &(), setup: &Setup) -> Self {
        ScalarVector { me, n: setup.uids.len(), clock: 0, sent: 0 }
    }
}

/// The checker judges both directions: a clock that orders concurrent events is caught, and the
/// violation is always of the "does not happen before" kind.
#[test]
fn vectors_that_order_concurrent_events_are_caught() {
    let mut caught = 0;
    for seed in 0..1_000 {
        let mut cfg = small_run("vector-clock", seed);
        cfg.entries = 30;
        let r = run_algorithm::<ScalarVector>(&cfg, RunOptions::default()).unwrap().report;
        for v in &r.violations {
            assert_eq!(v.property.name(), "strong_clock_condition");
            assert!(v.detail.contains("does not happen before"), "seed {seed}: {}", v.detail);
        }
        caught += !r.violations.is_empty() as u32;
    }
    assert!(caught > 900, "caught in only {caught} of 1000 runs");
}

/// The skew at the first sample of the timeline after `at` seconds.
fn skew_at(r: &ringleader_sim::Report, at: f64) -> f64 {
    let timeline = physical_of(r).skew_timeline.as_ref().unwrap();
    timeline.iter().find(|p| p.0 >= at).unwrap().1
}

/// The slew rate is a run setting: at 5,000 ppm a 10 ms error is absorbed in 2 s, where the
/// default 500 ppm (`adjtime`) takes 20 s; stepping forward corrects a slow clock at once.
/// Neither ever steps a clock back.
#[test]
fn the_slew_rate_and_forward_steps_set_how_fast_clocks_converge() {
    let go = |slew: u32, step: bool| {
        let mut cfg = RunConfig::new("cristian", 20).unwrap();
        cfg.latency = "uniform:0.8ms..1.2ms".parse().unwrap();
        cfg.clock_offset = 10_000_000;
        cfg.clock_drift_ppm = 20;
        cfg.duration = 30_000_000_000;
        cfg.workload = None;
        cfg.clock_slew_ppm = slew;
        cfg.clock_step_forward = step;
        let r = run(&cfg, RunOptions::default()).unwrap().report;
        assert!(r.violations.is_empty(), "{:?}", r.violations);
        assert_eq!(physical_of(&r).backward_steps, 0);
        r
    };
    let (default, fast, step) = (go(500, false), go(5_000, false), go(500, true));
    // At 6 s the default slew has absorbed 3 ms of errors up to 20 ms; 5,000 ppm is done.
    assert!(skew_at(&default, 6.0) > 5.0, "default: {}", skew_at(&default, 6.0));
    assert!(skew_at(&fast, 6.0) < 1.0, "5,000 ppm: {}", skew_at(&fast, 6.0));
    // Stepping forward leaves only the backward corrections to slew (the fast clocks): still
    // better than slewing both ways.
    assert!(skew_at(&step, 6.0) < skew_at(&default, 6.0), "step: {}", skew_at(&step, 6.0));
}
