//! # φ-accrual failure detector (Hayashibara, Défago, Yared, Katayama 2004)
//!
//! *Hayashibara, Défago, Yared and Katayama, "The φ accrual failure detector", 23rd IEEE
//! Symposium on Reliable Distributed Systems (SRDS), 2004. It answers the classic question
//! "what is a reasonable timeout?" by letting the timeout follow the network.*
//!
//! ## The idea
//! Instead of a yes/no verdict after a fixed silence, a monitor outputs a *suspicion level*
//! φ that grows continuously with the silence, scaled by how regular the peer's heartbeats have
//! been. With F the CDF of a normal distribution fitted (mean μ, standard deviation σ) to a
//! sliding window of the last W inter-arrival times, and Δt the time since the last heartbeat:
//!
//! ```text
//!   φ(Δt) = −log10(1 − F(Δt))
//! ```
//!
//! φ = 1 means a 10 % chance that a heartbeat this late would still come, φ = 3 a 0.1 % chance.
//! The application picks a threshold **Φ** (`phi`) and suspects when φ ≥ Φ: a jittery link
//! widens σ and the detector waits longer by itself; a regular one lets it suspect sooner.
//!
//! ## The rules
//! 1. Every T (`period`): send HEARTBEAT to every peer.
//! 2. On HEARTBEAT from p: push the inter-arrival time into p's window (drop the oldest beyond
//!    W, `window`); if p was suspected, emit `Trust{p}`; compute the silence Δt* at which φ
//!    reaches Φ and arm p's timer for it (φ only grows with silence, so this is exact).
//! 3. When p's timer fires: emit `Suspect{p}`.
//!
//! ```text
//!   trusted ──φ(now − last) ≥ Φ──▶ suspected ──HEARTBEAT──▶ trusted
//! ```
//!
//! ## Details
//! State holds integers only (arrival times and intervals in ns), so it stays `Eq + Hash`; μ, σ
//! and φ are computed in floating point inside the handler. σ is floored at `min_std` (default
//! T/10): with perfectly regular heartbeats σ would be 0 and any jitter would be fatal. Until
//! the first interval is measured the window holds one interval equal to T. 1 − F is computed
//! with a complementary error function accurate in relative terms far into the tail, so Φ up to
//! about 15 is meaningful.
//!
//! ## Costs and flaws
//! Same traffic as the heartbeat detector. Its assumption — inter-arrival times are roughly
//! normal — fails under heavy tails and long pauses, where it is as fallible as any timeout; the
//! curves in docs/DETECTORS.md compare the two.
//!
//! The detector logic is [`PhiAccrualDetector`], a plain struct. The elections embed it to watch
//! their coordinator (`detector = phi-accrual`, `crate::election::watch`), with two additions
//! this algorithm does not use: [`PhiAccrualDetector::restart`] (start the silence clock without
//! a sample) and [`PhiAccrualDetector::with_min_mean`] (μ floored at the heartbeat period).

use std::collections::VecDeque;

use ringleader_core::time::MILLISECOND;
use ringleader_core::{Context, Event, NodeId, Outbox, Process, Time};

use super::heartbeat::Msg;
use crate::{Algorithm, Family, ParamError, Setup};

/// 1 − Φ(z) for the standard normal, with small *relative* error in the upper tail.
///
/// Uses the Chebyshev fit of erfc from Numerical Recipes (`erfcc`, fractional error below
/// 1.2e-7 everywhere): 1 − Φ(z) = erfc(z/√2)/2.
pub fn normal_tail(z: f64) -> f64 {
    let x = z / std::f64::consts::SQRT_2;
    let a = x.abs();
    let t = 1.0 / (1.0 + 0.5 * a);
    let poly = -a * a - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let erfc = t * poly.exp();
    let erfc = if x >= 0.0 { erfc } else { 2.0 - erfc };
    erfc / 2.0
}

/// Reusable φ-accrual logic for one monitor watching `n` peers.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct PhiAccrualDetector {
    /// Suspicion threshold Φ, in thousandths (integer state).
    threshold_milli: u64,
    /// The standard score where φ reaches Φ (1 − F(z) = 10^−Φ), in millionths.
    z_micro: i64,
    /// Window size W.
    window: usize,
    /// Floor for σ, in ns.
    min_std: Time,
    /// The interval assumed before any is measured (the heartbeat period).
    expected: Time,
    /// Floor for μ, in ns (0: none; see [`Self::with_min_mean`]).
    min_mean: Time,
    /// Per peer: last arrival (local time), if any.
    last: Vec<Option<Time>>,
    /// Per peer: the last W inter-arrival times.
    intervals: Vec<VecDeque<Time>>,
    /// Per peer: suspected now.
    suspected: Vec<bool>,
    /// Per peer: the silence clock was restarted without a heartbeat ([`Self::restart`]), so
    /// the next arrival ends no interval.
    restarted: Vec<bool>,
}

impl PhiAccrualDetector {
    /// A detector for `n` peers with threshold `phi`, window `window`, σ floor `min_std` and
    /// heartbeat period `expected`.
    pub fn new(n: usize, phi: f64, window: usize, min_std: Time, expected: Time) -> Self {
        let threshold_milli = (phi * 1000.0).round().max(1.0) as u64;
        let target = 10f64.powf(-(threshold_milli as f64) / 1000.0);
        // normal_tail decreases in z: bisect once, here, not on every heartbeat.
        let (mut lo, mut hi) = (-10.0f64, 40.0f64);
        for _ in 0..100 {
            let mid = (lo + hi) / 2.0;
            if normal_tail(mid) > target { lo = mid } else { hi = mid }
        }
        PhiAccrualDetector {
            threshold_milli,
            z_micro: (hi * 1e6).round() as i64,
            window: window.max(1),
            min_std,
            expected,
            min_mean: 0,
            last: vec![None; n],
            intervals: vec![VecDeque::new(); n],
            suspected: vec![false; n],
            restarted: vec![false; n],
        }
    }

    /// The same detector with μ floored at `floor`: for a sender known to beat no faster than
    /// every `floor` (the long-run mean of its inter-arrival times is then at least `floor`).
    /// Intervals shorter than that — a burst of heartbeats deferred while the monitor itself
    /// was paused, duplicates — then widen σ instead of dragging the deadline below the period,
    /// where every heartbeat would come too late.
    pub fn with_min_mean(mut self, floor: Time) -> Self {
        self.min_mean = floor;
        self
    }

    /// The threshold Φ.
    pub fn threshold(&self) -> f64 {
        self.threshold_milli as f64 / 1000.0
    }

    /// (μ, σ) of `peer`'s window, in ns (σ floored at `min_std`, μ at the floor given to
    /// [`Self::with_min_mean`], if any).
    pub fn fit(&self, peer: NodeId) -> (f64, f64) {
        let w = &self.intervals[peer as usize];
        if w.is_empty() {
            return (self.expected as f64, self.min_std.max(1) as f64);
        }
        let n = w.len() as f64;
        let mean = w.iter().map(|&x| x as f64).sum::<f64>() / n;
        let var = w.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / n;
        (mean.max(self.min_mean as f64), var.sqrt().max(self.min_std.max(1) as f64))
    }

    /// φ for `peer` after `silence` ns without a heartbeat.
    pub fn phi(&self, peer: NodeId, silence: Time) -> f64 {
        let (mean, std) = self.fit(peer);
        let tail = normal_tail((silence as f64 - mean) / std).max(f64::MIN_POSITIVE);
        -tail.log10()
    }

    /// The silence after which φ reaches Φ for `peer`: μ + z·σ, z the standard score where
    /// 1 − F = 10^−Φ (φ grows with silence, so this is exact).
    pub fn suspicion_after(&self, peer: NodeId) -> Time {
        let (mean, std) = self.fit(peer);
        (mean + self.z_micro as f64 / 1e6 * std).max(0.0).ceil() as Time
    }

    /// A heartbeat from `peer` arrived at local time `now`. Returns (whether `peer` was suspected
    /// and is trusted again, the silence after which to suspect it).
    pub fn heard(&mut self, peer: NodeId, now: Time) -> (bool, Time) {
        let p = peer as usize;
        if let Some(prev) = self.last[p]
            && !std::mem::replace(&mut self.restarted[p], false)
        {
            let w = &mut self.intervals[p];
            w.push_back(now.saturating_sub(prev));
            if w.len() > self.window {
                w.pop_front();
            }
        }
        self.last[p] = Some(now);
        let trusted = std::mem::replace(&mut self.suspected[p], false);
        (trusted, self.suspicion_after(peer))
    }

    /// `peer`'s timer fired at local time `now`: true when `peer` becomes suspected.
    pub fn check(&mut self, peer: NodeId, now: Time) -> bool {
        let p = peer as usize;
        let silence = now.saturating_sub(self.last[p].unwrap_or(0));
        if self.suspected[p] || silence < self.suspicion_after(peer) {
            return false;
        }
        self.suspected[p] = true;
        true
    }

    /// Whether `peer` is suspected now.
    pub fn is_suspected(&self, peer: NodeId) -> bool {
        self.suspected[peer as usize]
    }

    /// Restarts `peer`'s silence clock at `now` without a heartbeat (a new coordinator was
    /// announced, an election began): `peer` is trusted, its window is kept, and the next
    /// heartbeat starts a new interval without ending one — the time since the restart is not
    /// an inter-arrival time. Returns the silence after which to suspect `peer`.
    pub fn restart(&mut self, peer: NodeId, now: Time) -> Time {
        let p = peer as usize;
        self.last[p] = Some(now);
        self.suspected[p] = false;
        self.restarted[p] = true;
        self.suspicion_after(peer)
    }

    /// Forgets everything but the parameters; the silence clock of every peer starts at `now`.
    ///
    /// As after [`Self::restart`], the first heartbeat after a reset ends no interval: the time
    /// from the reset to it is one network delay, not an inter-arrival time. (Counting it made
    /// every monitor's first window a single ~1 ms sample, and every pair suspected each other
    /// once in the first period of every run.)
    pub fn reset(&mut self, now: Time) {
        self.last.iter_mut().for_each(|t| *t = Some(now));
        self.intervals.iter_mut().for_each(VecDeque::clear);
        self.suspected.iter_mut().for_each(|s| *s = false);
        self.restarted.iter_mut().for_each(|r| *r = true);
    }
}

/// The φ knobs — threshold Φ (`phi`, default 8), window W (`window`, default 100) and σ floor
/// (`min_std`, default period/10) — read and checked once for every user: the `phi-accrual`
/// algorithm and the elections watching their coordinator with `detector=phi-accrual`.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Knobs {
    /// Φ: suspicion threshold.
    pub phi: f64,
    /// W: window of inter-arrival times.
    pub window: usize,
    /// σ floor, in ns.
    pub min_std: Time,
}

impl Knobs {
    /// Reads `phi`, `window` and `min_std` for heartbeats every `period`.
    pub fn configure(setup: &Setup, period: Time) -> Result<Knobs, ParamError> {
        let phi: f64 = setup.params.get("phi", 8.0)?;
        if !(phi.is_finite() && phi > 0.0 && phi <= 300.0) {
            return Err(ParamError::OutOfRange {
                key: "phi".into(),
                reason: format!("{phi}: Φ must be in (0, 300]"),
            });
        }
        let window: usize = setup.params.get("window", 100)?;
        if !(1..=100_000).contains(&window) {
            return Err(ParamError::OutOfRange {
                key: "window".into(),
                reason: format!("{window} samples: the window holds 1..100000 inter-arrival times"),
            });
        }
        let min_std = setup.params.duration("min_std", period / 10)?;
        Ok(Knobs { phi, window, min_std })
    }

    /// A detector with these knobs for `n` peers heartbeating every `period`.
    pub fn detector(&self, n: usize, period: Time) -> PhiAccrualDetector {
        PhiAccrualDetector::new(n, self.phi, self.window, self.min_std, period)
    }
}

/// φ-accrual timers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
pub enum Timer {
    /// Time to send the next round of heartbeats.
    Beat,
    /// φ of `peer` reaches Φ now.
    Suspicion(NodeId),
}

/// Validated parameters.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Config {
    /// T: heartbeat period.
    pub period: Time,
    /// Φ: suspicion threshold.
    pub phi: f64,
    /// W: window of inter-arrival times.
    pub window: usize,
    /// σ floor.
    pub min_std: Time,
}

/// A process that sends heartbeats and runs a φ-accrual detector on every peer.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct PhiAccrual {
    me: NodeId,
    period: Time,
    detector: PhiAccrualDetector,
}

type Out = Outbox<Msg, Timer>;

impl PhiAccrual {
    fn start(&mut self, cx: &Context, out: &mut Out) {
        self.detector.reset(cx.now);
        let me = self.me;
        out.send_all((0..cx.n()).filter(|&p| p != me), &Msg::Heartbeat);
        out.set_timer(Timer::Beat, self.period);
        for p in (0..cx.n()).filter(|&p| p != me) {
            out.set_timer(Timer::Suspicion(p), self.detector.suspicion_after(p));
        }
    }
}

impl Process for PhiAccrual {
    type Msg = Msg;
    type Timer = Timer;

    fn on_start(&mut self, cx: &Context, out: &mut Out) {
        self.start(cx, out);
    }

    fn on_message(&mut self, cx: &Context, from: NodeId, _msg: Msg, out: &mut Out) {
        let (trusted, after) = self.detector.heard(from, cx.now);
        if trusted {
            out.emit(Event::Trust { node: from });
        }
        out.set_timer(Timer::Suspicion(from), after);
    }

    fn on_timer(&mut self, cx: &Context, timer: Timer, out: &mut Out) {
        match timer {
            Timer::Beat => {
                let me = self.me;
                out.send_all((0..cx.n()).filter(|&p| p != me), &Msg::Heartbeat);
                out.set_timer(Timer::Beat, self.period);
            }
            Timer::Suspicion(p) => {
                if self.detector.check(p, cx.now) {
                    out.emit(Event::Suspect { node: p });
                }
            }
        }
    }

    /// A recovered monitor has lost its windows: it trusts everyone and starts over.
    fn on_recover(&mut self, cx: &Context, out: &mut Out) {
        self.start(cx, out);
    }
}

impl Algorithm for PhiAccrual {
    const NAME: &'static str = "phi-accrual";
    const FAMILY: Family = Family::Detector;
    const SUMMARY: &'static str =
        "HEARTBEAT every T; suspect when φ = −log10(1 − F(Δt)) ≥ Φ, F a normal fitted to recent intervals";
    /// A window of 100 inter-arrival times per peer: ≈ 900 bytes per pair of nodes.
    const FOOTPRINT: crate::Footprint = crate::Footprint::quadratic(900);
    type Config = Config;

    fn configure(setup: &Setup) -> Result<Config, ParamError> {
        let period = setup.params.duration("period", 10 * MILLISECOND)?;
        if period == 0 {
            return Err(ParamError::OutOfRange { key: "period".into(), reason: "must be above zero".into() });
        }
        let Knobs { phi, window, min_std } = Knobs::configure(setup, period)?;
        Ok(Config { period, phi, window, min_std })
    }

    fn new(me: NodeId, c: &Config, setup: &Setup) -> Self {
        PhiAccrual {
            me,
            period: c.period,
            detector: PhiAccrualDetector::new(setup.uids.len(), c.phi, c.window, c.min_std, c.period),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testing::TestSystem;
    use ringleader_core::harness::Harness;

    const MS: Time = MILLISECOND;

    /// Position 1 of three, Φ = 8 (z ≈ 5.612), T = 10 ms, σ floor 1 ms, window `w`.
    fn node(w: &str) -> Harness<PhiAccrual> {
        TestSystem::new(3).param("window", w).node(1)
    }

    /// μ + 5.612·σ (ns), to within the bisection's and the z table's rounding.
    fn near(after: Time, mean: f64, std: f64) -> bool {
        (after as f64 - (mean + 5.612 * std)).abs() < 2_000.0
    }

    /// Rule 1: every T a process sends HEARTBEAT to every peer; before any interval is measured
    /// the deadline assumes one of T.
    #[test]
    fn rule_1_heartbeat_to_every_peer_every_period() {
        let mut p = node("100");
        let step = p.start();
        assert_eq!(step.sent(), vec![(0, Msg::Heartbeat), (2, Msg::Heartbeat)]);
        let set = step.set();
        assert_eq!(set[0], (Timer::Beat, 10 * MS));
        assert_eq!((set[1].0, set[2].0), (Timer::Suspicion(0), Timer::Suspicion(2)));
        assert!(near(set[1].1, 10e6, 1e6), "{set:?}");
        assert_eq!(p.at(10 * MS).fire(Timer::Beat).sent(), vec![(0, Msg::Heartbeat), (2, Msg::Heartbeat)]);
    }

    /// Rule 2: a heartbeat pushes its inter-arrival time into a window of W, re-arms the timer
    /// where φ reaches Φ, and trusts a suspected sender again.
    #[test]
    fn rule_2_heartbeats_fill_the_window_and_move_the_deadline() {
        let mut p = node("2");
        p.start();
        for at in [10, 20, 32] {
            p.at(at * MS).deliver(0, Msg::Heartbeat);
        }
        let step = p.at(48 * MS).deliver(0, Msg::Heartbeat);
        assert_eq!(p.process.detector.intervals[0], VecDeque::from([12 * MS, 16 * MS]), "W = 2");
        let [(Timer::Suspicion(0), after)] = step.set()[..] else { panic!("{step:?}") };
        assert!(near(after, 14e6, 2e6), "μ = 14 ms, σ = 2 ms: {after}");
        assert!(step.emitted().is_empty());
        p.at(48 * MS + after).fire(Timer::Suspicion(0));
        assert_eq!(p.at(100 * MS).deliver(0, Msg::Heartbeat).emitted(), vec![Event::Trust { node: 0 }]);
    }

    /// Rule 3: the timer firing at the deadline suspects the peer.
    #[test]
    fn rule_3_the_deadline_suspects_the_peer() {
        let mut p = node("100");
        let step = p.start();
        let after = step.set()[2].1;
        assert_eq!(p.at(after).fire(Timer::Suspicion(2)).emitted(), vec![Event::Suspect { node: 2 }]);
        assert!(p.process.detector.is_suspected(2));
    }

    #[test]
    fn normal_tail_matches_known_values() {
        for (z, want) in [(0.0, 0.5), (1.0, 0.158_655_25), (3.0, 1.349_898e-3), (6.0, 9.865_876e-10)] {
            let got = normal_tail(z);
            assert!((got - want).abs() / want < 1e-6, "z = {z}: {got} vs {want}");
        }
        assert!((normal_tail(-1.0) - 0.841_344_75).abs() < 1e-7);
    }

    #[test]
    fn phi_grows_with_silence_and_suspicion_time_is_where_it_reaches_the_threshold() {
        let mut d = PhiAccrualDetector::new(2, 3.0, 10, MILLISECOND, 10 * MILLISECOND);
        for k in 1..=10 {
            d.heard(1, k * 10 * MILLISECOND);
        }
        let (mean, std) = d.fit(1);
        assert_eq!((mean, std), (10e6, 1e6));
        assert!(d.phi(1, 10 * MILLISECOND) < d.phi(1, 12 * MILLISECOND));
        let after = d.suspicion_after(1);
        // φ = 3 ⇔ 1 − F = 1e-3 ⇔ z = 3.0902: 10 ms + 3.0902 · 1 ms.
        assert!((after as f64 - 13.0902e6).abs() < 2e3, "{after}");
        assert!((d.phi(1, after) - 3.0).abs() < 1e-3);
        assert!(!d.check(1, 100 * MILLISECOND + after - 5_000));
        assert!(d.check(1, 100 * MILLISECOND + after));
        assert!(d.is_suspected(1));
        assert!(d.heard(1, 120 * MILLISECOND).0);
    }

    #[test]
    fn a_restart_measures_no_interval_and_a_mean_floor_resists_bursts() {
        let ms = MILLISECOND;
        let mut d = PhiAccrualDetector::new(1, 3.0, 10, ms, 10 * ms);
        d.heard(0, 0);
        d.heard(0, 10 * ms);
        assert_eq!(d.fit(0), (10e6, 1e6));
        // Restarted at 12 ms, heard at 13 ms: the 1 ms (and the 3 ms since 10 ms) are no sample.
        d.restart(0, 12 * ms);
        d.heard(0, 13 * ms);
        assert_eq!(d.fit(0), (10e6, 1e6));
        d.heard(0, 23 * ms);
        assert_eq!(d.fit(0), (10e6, 1e6));
        // A burst: two more arrivals at 23 ms. Unfloored, μ falls to 5 ms; floored, it stays.
        let mut floored = d.clone().with_min_mean(10 * ms);
        for x in [&mut d, &mut floored] {
            x.heard(0, 23 * ms);
            x.heard(0, 23 * ms);
        }
        assert_eq!(d.fit(0), (5e6, 5e6));
        assert_eq!(floored.fit(0), (10e6, 5e6));
    }
}
