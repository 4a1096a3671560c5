//! # Cristian's algorithm
//!
//! *Cristian, "Probabilistic clock synchronization", Distributed Computing 3(3), 1989;
//! Tanenbaum & van Steen, Distributed Systems, clock synchronization.*
//!
//! ## The idea
//! One node, the *time server*, has the reference clock. A client asks it for the time; the
//! answer is already old when it arrives, by the reply's one-way delay, which the client cannot
//! measure — but it can measure the round trip. Assuming the two directions take about as long,
//! the server's clock read T half a round trip ago, so the client sets its clock to T + RTT/2.
//!
//! ## The rules
//! 1. Every `period` (parameter, default 1 s) each client starts a round: it sends `probes`
//!    (default 4) REQUEST(t0) messages at once, t0 being its local send time.
//! 2. The server answers each with REPLY(t0, T), T its clock when answering.
//! 3. On REPLY the client measures RTT = now − t0 and, if this is the smallest RTT of the round
//!    so far (*keep the minimum-RTT sample*), corrects its clock by θ = T + RTT/2 − now. A
//!    correction is slewed (the clock runs faster or slower for a while) and replaces any part
//!    of the previous one not yet absorbed, so the clock never goes back.
//! 4. A reply from an earlier round (t0 before the round started) is ignored.
//!
//! ```text
//!   client: ──round: REQUEST(t0)×probes──▶ awaiting replies ──REPLY(t0,T), RTT minimal──▶ adjust(T + RTT/2 − now)
//!   server: REQUEST(t0) ──▶ REPLY(t0, its clock)
//! ```
//!
//! ## Costs
//! 2·probes messages per client per round: 2·probes·(N−1) per round in all.
//!
//! ## Accuracy
//! With one-way delays in [dmin, dmax] the error of a sample is half the difference between the
//! two directions, at most ±(RTT/2 − dmin) ≤ (dmax − dmin)/2; the smallest RTT gives the
//! tightest interval. Between rounds clocks drift apart again (see docs/CLOCKS.md).
//!
//! ## Assumptions and known flaws
//! The server is a single point of failure and everybody follows its clock, right or wrong; it
//! is fixed for the run (parameter `server`, a position, default 0). Asymmetric delays bias the
//! estimate by half the asymmetry, and no amount of probing can detect that.

use ringleader_core::time::{MILLISECOND, SECOND};
use ringleader_core::{Context, Event, Message, NodeId, Outbox, Process, Request, Time};
use serde::{Deserialize, Serialize};

use super::remote_offset;
use crate::{Algorithm, Family, ParamError, Setup};

/// Messages of Cristian's algorithm.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// A client asks the time; `t0` is its local send time, echoed back.
    Request {
        /// The client's clock at the send.
        t0: Time,
    },
    /// The server answers with its clock.
    Reply {
        /// The request's `t0`.
        t0: Time,
        /// The server's clock when answering.
        time: Time,
    },
}

impl Message for Msg {
    const KINDS: &'static [&'static str] = &["request", "reply"];
    fn kind_index(&self) -> usize {
        match self {
            Msg::Request { .. } => 0,
            Msg::Reply { .. } => 1,
        }
    }
}

/// Timers of Cristian's algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
pub enum Timer {
    /// Time for the next round of probes.
    Round,
}

/// Validated configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Config {
    /// The time server's position.
    pub server: NodeId,
    /// Time between rounds (local time).
    pub period: Time,
    /// Requests per round.
    pub probes: u32,
}

/// A node running Cristian's algorithm (the server or a client).
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Cristian {
    me: NodeId,
    config: Config,
    /// Local time the current round started.
    round_start: Time,
    /// Smallest RTT seen in the current round.
    best_rtt: Option<Time>,
}

type Out = Outbox<Msg, Timer>;

impl Cristian {
    fn round(&mut self, cx: &Context, out: &mut Out) {
        self.round_start = cx.now;
        self.best_rtt = None;
        for _ in 0..self.config.probes {
            out.send(self.config.server, Msg::Request { t0: cx.now });
        }
        out.set_timer(Timer::Round, self.config.period);
    }
}

impl Process for Cristian {
    type Msg = Msg;
    type Timer = Timer;

    fn on_start(&mut self, cx: &Context, out: &mut Out) {
        if self.me != self.config.server {
            self.round(cx, out);
        }
    }

    fn on_message(&mut self, cx: &Context, from: NodeId, msg: Msg, out: &mut Out) {
        match msg {
            Msg::Request { t0 } if self.me == self.config.server => {
                out.send(from, Msg::Reply { t0, time: cx.now });
            }
            Msg::Reply { t0, time } if self.me != self.config.server && t0 >= self.round_start => {
                let rtt = cx.now.saturating_sub(t0);
                if self.best_rtt.is_none_or(|best| rtt < best) {
                    self.best_rtt = Some(rtt);
                    let delta = remote_offset(t0, time, cx.now);
                    out.adjust_clock(delta);
                    out.emit(Event::ClockAdjusted { delta });
                }
            }
            _ => {}
        }
    }

    fn on_timer(&mut self, cx: &Context, timer: Timer, out: &mut Out) {
        match timer {
            Timer::Round => self.round(cx, out),
        }
    }

    fn on_request(&mut self, cx: &Context, req: Request, out: &mut Out) {
        if req == Request::Synchronize && self.me != self.config.server {
            self.round(cx, out);
        }
    }

    /// Nothing worth keeping: a recovered client starts a new round.
    fn on_recover(&mut self, cx: &Context, out: &mut Out) {
        self.best_rtt = None;
        self.on_start(cx, out);
    }
}

/// Reads `server` (a position), checking that it exists.
pub(crate) fn position_param(setup: &Setup, key: &str) -> Result<NodeId, ParamError> {
    let p: NodeId = setup.params.get(key, 0)?;
    if p as usize >= setup.uids.len() {
        return Err(ParamError::OutOfRange {
            key: key.into(),
            reason: format!("position {p} does not exist (0..{})", setup.uids.len()),
        });
    }
    Ok(p)
}

/// Reads `period`, which must be positive.
pub(crate) fn period_param(setup: &Setup) -> Result<Time, ParamError> {
    let period = setup.params.duration("period", SECOND)?;
    if period < MILLISECOND {
        return Err(ParamError::OutOfRange { key: "period".into(), reason: "must be at least 1ms".into() });
    }
    Ok(period)
}

impl Algorithm for Cristian {
    const NAME: &'static str = "cristian";
    const FAMILY: Family = Family::Clock;
    const SUMMARY: &'static str =
        "clients ask a time server and set T + RTT/2, keeping the minimum-RTT sample";
    /// One operation is one synchronisation with the time server: one REQUEST.
    const OPERATION: crate::OperationUnit =
        crate::OperationUnit { name: "sync", count: crate::OperationCount::Sends("request") };
    type Config = Config;

    fn configure(setup: &Setup) -> Result<Config, ParamError> {
        let server = position_param(setup, "server")?;
        let period = period_param(setup)?;
        let probes: u32 = setup.params.get("probes", 4)?;
        if !(1..=1_000).contains(&probes) {
            return Err(ParamError::OutOfRange {
                key: "probes".into(),
                reason: format!("{probes} probes: a round sends 1..1000 (each is a message and a reply)"),
            });
        }
        Ok(Config { server, period, probes })
    }

    fn new(me: NodeId, c: &Config, _setup: &Setup) -> Self {
        Cristian { me, config: *c, round_start: 0, best_rtt: None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testing::TestSystem;
    use ringleader_core::harness::Harness;

    const MS: Time = MILLISECOND;

    /// Position `me` of three; the server is position 0.
    fn node(me: NodeId) -> Harness<Cristian> {
        TestSystem::new(3).node(me)
    }

    /// Rule 1: a client's round sends `probes` REQUEST(t0) to the server and arms the next
    /// round; the server itself does nothing.
    #[test]
    fn rule_1_each_round_sends_probes_requests_stamped_with_the_local_time() {
        let mut c = node(2);
        c.at(10 * MS);
        let step = c.start();
        assert_eq!(step.sent(), vec![(0, Msg::Request { t0: 10 * MS }); 4]);
        assert_eq!(step.set(), vec![(Timer::Round, 1_000 * MS)]);
        c.at(1_010 * MS);
        assert_eq!(c.fire(Timer::Round).sent(), vec![(0, Msg::Request { t0: 1_010 * MS }); 4]);
        assert!(node(0).start().is_empty());
    }

    /// Rule 2: the server answers every REQUEST with its clock.
    #[test]
    fn rule_2_the_server_answers_with_its_clock() {
        let mut s = node(0);
        s.at(55 * MS);
        assert_eq!(
            s.deliver(2, Msg::Request { t0: 7 }).sent(),
            vec![(2, Msg::Reply { t0: 7, time: 55 * MS })]
        );
        assert!(node(1).deliver(2, Msg::Request { t0: 7 }).is_empty(), "only the server answers");
    }

    /// Rule 3: the minimum-RTT reply corrects the clock by T + RTT/2 − now, slewed.
    #[test]
    fn rule_3_a_new_minimum_rtt_corrects_by_t_plus_half_the_round_trip() {
        let mut c = node(1);
        c.at(10 * MS).start();
        c.at(16 * MS);
        let step = c.deliver(0, Msg::Reply { t0: 10 * MS, time: 30 * MS });
        let delta = (30 + 3 - 16) * MS as i64;
        assert_eq!(step.adjustments(), vec![delta]);
        assert_eq!(step.emitted(), vec![Event::ClockAdjusted { delta }]);
        c.at(18 * MS);
        assert!(c.deliver(0, Msg::Reply { t0: 10 * MS, time: 30 * MS }).is_empty(), "a longer RTT");
    }

    /// Rule 4: replies to an earlier round are ignored.
    #[test]
    fn rule_4_replies_from_an_earlier_round_are_ignored() {
        let mut c = node(1);
        c.at(10 * MS).start();
        c.at(1_010 * MS);
        c.fire(Timer::Round);
        assert!(c.deliver(0, Msg::Reply { t0: 10 * MS, time: 5 }).is_empty());
    }

    /// A client's round: the first reply corrects, a slower one does not, a faster one does
    /// again, and a reply to an earlier round is ignored.
    #[test]
    fn only_a_new_minimum_round_trip_corrects_the_clock() {
        let mut client = TestSystem::new(2).node::<Cristian>(1);
        assert_eq!(client.at(10 * MS).start().sent().len(), 4);
        let mut reply = |now: Time, t0: Time, time: Time| {
            client.at(now).deliver(0, Msg::Reply { t0, time }).adjustments()
        };
        // RTT 4 ms, server read 20 ms: it is 20 + 2 − 14 = 8 ms ahead.
        assert_eq!(reply(14 * MS, 10 * MS, 20 * MS), vec![8 * MS as i64]);
        assert!(reply(16 * MS, 10 * MS, 21 * MS).is_empty());
        // RTT 2 ms, server read 19 ms: 19 + 1 − 12 = 8 ms, from a tighter sample.
        assert_eq!(reply(12 * MS, 10 * MS, 19 * MS), vec![8 * MS as i64]);
        assert!(reply(13 * MS, 5 * MS, 0).is_empty(), "a reply to an earlier round");
    }
}
