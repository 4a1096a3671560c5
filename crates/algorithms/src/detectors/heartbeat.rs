//! # Heartbeat failure detector: suspect after T + D of silence
//!
//! *The timeout-based detector of the textbooks: Tanenbaum & van Steen, Distributed Systems
//! (failure detection), and the bully algorithm's timeout T = 2·Ttrans + Tprocess
//! (Garcia-Molina, "Elections in a distributed computing system", IEEE TC C-31(1), 1982);
//! Chandra and Toueg, "Unreliable failure detectors for reliable distributed systems", JACM
//! 43(2), 1996, for what such a detector can and cannot promise.*
//!
//! ## The idea
//! Every process sends HEARTBEAT to every other process every **T** (`period`). A monitor that
//! has heard nothing from a peer for **T + D** (`margin` D, the allowance for delay and jitter)
//! *suspects* it; a heartbeat from a suspected peer makes the monitor *trust* it again. In a
//! synchronous system with one-way delay at most Ttrans the margin D = Ttrans is enough and the
//! detector is perfect — the bully algorithm's T = 2·Ttrans + Tprocess is the same reasoning for
//! a request/reply round trip. In an asynchronous system no finite D is safe: a slow (paused)
//! process and a crashed one look alike, and D only trades detection time for false suspicions.
//!
//! ## The rules
//! 1. Every T: send HEARTBEAT to every peer.
//! 2. On HEARTBEAT from p: remember its arrival; if p was suspected, emit `Trust{p}`; re-arm
//!    p's silence timer to T + D.
//! 3. When p's silence timer fires: emit `Suspect{p}`.
//!
//! ```text
//!   trusted ──no HEARTBEAT for T + D──▶ suspected ──HEARTBEAT──▶ trusted
//! ```
//!
//! ## Costs
//! N − 1 HEARTBEAT messages per process per period (N(N − 1)/T in total, counted as detection
//! traffic). Detection time after a crash: between D and T + D, plus the last heartbeat's delay.
//!
//! ## Assumptions and known flaws
//! Eventually accurate only if delays and pauses are eventually shorter than D; under a
//! heavy-tailed latency or a GC-like pause it wrongly suspects live processes. `ringleader
//! detector-curve` measures both sides of the trade-off and picks the D that minimises the
//! expected cost of waiting and of mistakes (docs/DETECTORS.md). Defaults: T = 10 ms,
//! D = 2·max_delay (the network's Ttrans bound) — the bully's rule with Tprocess = 0.
//!
//! The detector logic is [`HeartbeatDetector`], a plain struct. The elections embed it to watch
//! their coordinator (the default `detector = heartbeat`, `crate::election::watch`), with T + D
//! = their `suspect_after` or `election_timeout`.

use ringleader_core::time::MILLISECOND;
use ringleader_core::{Context, Event, Message, NodeId, Outbox, Process, Time};
use serde::{Deserialize, Serialize};

use crate::{Algorithm, Family, ParamError, Setup};

/// Reusable heartbeat-timeout logic for one monitor watching `n` peers.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct HeartbeatDetector {
    /// Silence allowed before suspecting: T + D.
    timeout: Time,
    /// Local arrival time of the last heartbeat from each peer.
    last: Vec<Time>,
    /// Whether each peer is suspected now.
    suspected: Vec<bool>,
}

impl HeartbeatDetector {
    /// A detector for `n` peers that suspects after `timeout` (T + D) of silence.
    pub fn new(n: usize, timeout: Time) -> Self {
        HeartbeatDetector { timeout, last: vec![0; n], suspected: vec![false; n] }
    }

    /// The silence (T + D) after which a peer is suspected.
    pub fn timeout(&self) -> Time {
        self.timeout
    }

    /// A heartbeat from `peer` arrived at local time `now`. Returns true when `peer` was
    /// suspected and is trusted again. Re-arm `peer`'s silence timer to [`Self::timeout`].
    pub fn heard(&mut self, peer: NodeId, now: Time) -> bool {
        self.last[peer as usize] = now;
        std::mem::replace(&mut self.suspected[peer as usize], false)
    }

    /// `peer`'s silence timer fired at local time `now`. Returns true when `peer` becomes
    /// suspected (it was trusted and has been silent for at least the timeout).
    pub fn silent(&mut self, peer: NodeId, now: Time) -> bool {
        let p = peer as usize;
        if self.suspected[p] || now.saturating_sub(self.last[p]) < self.timeout {
            return false;
        }
        self.suspected[p] = true;
        true
    }

    /// Whether `peer` is suspected now.
    pub fn is_suspected(&self, peer: NodeId) -> bool {
        self.suspected[peer as usize]
    }

    /// Forgets everything (a monitor that recovers starts trusting everyone, as of `now`).
    pub fn reset(&mut self, now: Time) {
        self.last.iter_mut().for_each(|t| *t = now);
        self.suspected.iter_mut().for_each(|s| *s = false);
    }
}

/// Heartbeat messages.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// HEARTBEAT: "I am alive".
    Heartbeat,
}

impl Message for Msg {
    const KINDS: &'static [&'static str] = &["heartbeat"];
    fn kind_index(&self) -> usize {
        0
    }
    fn is_detection(&self) -> bool {
        true
    }
}

/// Heartbeat timers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
pub enum Timer {
    /// Time to send the next round of heartbeats.
    Beat,
    /// `peer` has been silent for T + D.
    Silence(NodeId),
}

/// Validated parameters: heartbeat period T and margin D.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Config {
    /// T: heartbeat period.
    pub period: Time,
    /// D: margin beyond one period.
    pub margin: Time,
}

/// A process that sends heartbeats and monitors everyone else's.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Heartbeat {
    me: NodeId,
    period: Time,
    detector: HeartbeatDetector,
}

type Out = Outbox<Msg, Timer>;

impl Heartbeat {
    fn start(&mut self, cx: &Context, out: &mut Out) {
        self.detector.reset(cx.now);
        let me = self.me;
        out.send_all((0..cx.n()).filter(|&p| p != me), &Msg::Heartbeat);
        out.set_timer(Timer::Beat, self.period);
        for p in (0..cx.n()).filter(|&p| p != me) {
            out.set_timer(Timer::Silence(p), self.detector.timeout());
        }
    }
}

impl Process for Heartbeat {
    type Msg = Msg;
    type Timer = Timer;

    fn on_start(&mut self, cx: &Context, out: &mut Out) {
        self.start(cx, out);
    }

    fn on_message(&mut self, cx: &Context, from: NodeId, _msg: Msg, out: &mut Out) {
        if self.detector.heard(from, cx.now) {
            out.emit(Event::Trust { node: from });
        }
        out.set_timer(Timer::Silence(from), self.detector.timeout());
    }

    fn on_timer(&mut self, cx: &Context, timer: Timer, out: &mut Out) {
        match timer {
            Timer::Beat => {
                let me = self.me;
                out.send_all((0..cx.n()).filter(|&p| p != me), &Msg::Heartbeat);
                out.set_timer(Timer::Beat, self.period);
            }
            Timer::Silence(p) => {
                if self.detector.silent(p, cx.now) {
                    out.emit(Event::Suspect { node: p });
                }
            }
        }
    }

    /// A recovered monitor has lost its observations: it trusts everyone and starts over.
    fn on_recover(&mut self, cx: &Context, out: &mut Out) {
        self.start(cx, out);
    }
}

impl Algorithm for Heartbeat {
    const NAME: &'static str = "heartbeat";
    const FAMILY: Family = Family::Detector;
    const SUMMARY: &'static str = "HEARTBEAT every T to everyone; suspect a peer silent for T + D";
    /// The last heartbeat and suspicion per peer, N² heartbeats per period: ≈ 250 bytes per
    /// pair of nodes.
    const FOOTPRINT: crate::Footprint = crate::Footprint::quadratic(250);
    type Config = Config;

    fn configure(setup: &Setup) -> Result<Config, ParamError> {
        let period = setup.params.duration("period", 10 * MILLISECOND)?;
        if period == 0 {
            return Err(ParamError::OutOfRange { key: "period".into(), reason: "must be above zero".into() });
        }
        let margin = setup.params.duration("margin", 2 * setup.max_delay)?;
        Ok(Config { period, margin })
    }

    fn new(me: NodeId, config: &Config, setup: &Setup) -> Self {
        Heartbeat {
            me,
            period: config.period,
            detector: HeartbeatDetector::new(setup.uids.len(), config.period + config.margin),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestSystem;
    use ringleader_core::harness::Harness;

    const MS: Time = MILLISECOND;
    /// T + D with the defaults: 10 ms + 2 · 1 ms.
    const SILENCE: Time = 12 * MS;

    fn node(me: NodeId) -> Harness<Heartbeat> {
        TestSystem::new(3).node(me)
    }

    /// Rule 1: every T a process sends HEARTBEAT to every peer.
    #[test]
    fn rule_1_heartbeat_to_every_peer_every_period() {
        let mut p = node(1);
        let step = p.start();
        assert_eq!(step.sent(), vec![(0, Msg::Heartbeat), (2, Msg::Heartbeat)]);
        assert_eq!(
            step.set(),
            vec![(Timer::Beat, 10 * MS), (Timer::Silence(0), SILENCE), (Timer::Silence(2), SILENCE)]
        );
        let step = p.at(10 * MS).fire(Timer::Beat);
        assert_eq!(step.sent(), vec![(0, Msg::Heartbeat), (2, Msg::Heartbeat)]);
        assert_eq!(step.set(), vec![(Timer::Beat, 10 * MS)]);
    }

    /// Rule 2: a heartbeat re-arms its sender's silence timer, and trusts a suspected sender.
    #[test]
    fn rule_2_a_heartbeat_rearms_the_silence_timer_and_restores_trust() {
        let mut p = node(1);
        p.start();
        let step = p.at(5 * MS).deliver(0, Msg::Heartbeat);
        assert_eq!(step.set(), vec![(Timer::Silence(0), SILENCE)]);
        assert!(step.emitted().is_empty());
        p.at(17 * MS).fire(Timer::Silence(0));
        let step = p.at(30 * MS).deliver(0, Msg::Heartbeat);
        assert_eq!(step.emitted(), vec![Event::Trust { node: 0 }]);
    }

    /// Rule 3: the silence timer firing suspects the peer (once).
    #[test]
    fn rule_3_silence_for_t_plus_d_suspects_the_peer() {
        let mut p = node(1);
        p.start();
        assert_eq!(p.at(SILENCE).fire(Timer::Silence(2)).emitted(), vec![Event::Suspect { node: 2 }]);
        assert!(p.process.detector.is_suspected(2));
        assert!(!p.process.detector.is_suspected(0));
    }
}
