//! # NTP-style synchronization (offset and delay from four timestamps)
//!
//! *Mills, Martin, Burbank and Kasch, "Network Time Protocol Version 4", RFC 5905, 2010 (the
//! on-wire protocol and the clock filter); Mills, "Internet time synchronization: the Network
//! Time Protocol", IEEE Transactions on Communications 39(10), 1991.*
//!
//! ## The idea
//! Cristian's client trusts the server to answer instantly and takes RTT/2 on faith. NTP
//! records four timestamps — T1 the client's send, T2 the server's receive, T3 the server's
//! send, T4 the client's receive — from which it separates the clock *offset* from the network
//! *delay*, whatever the server's processing time:
//!
//! ```text
//!   offset θ = ((T2 − T1) + (T3 − T4)) / 2        delay δ = (T4 − T1) − (T3 − T2)
//! ```
//!
//! θ is exact when both directions take equally long, and off by half the asymmetry otherwise
//! (at most δ/2). A sample with a small delay therefore has a small possible error: the *clock
//! filter* keeps the last 8 samples and trusts the one with the minimum delay.
//!
//! ## The rules
//! 1. Every `period` (parameter, default 1 s) each client sends REQUEST(T1) to the server
//!    (parameter `server`, a position, default 0).
//! 2. The server answers REPLY(T1, T2, T3).
//! 3. On REPLY the client computes (θ, δ), appends it to its window of the last `window`
//!    samples (default 8), and picks the window's minimum-delay sample.
//! 4. As in RFC 5905 a sample is used at most once, and never one older than the last sample
//!    used: if the chosen sample is newer than the last one used, the client corrects its clock
//!    by its θ (slewed, never stepping back) and marks it used; otherwise it waits for a better
//!    sample.
//!
//! ```text
//!   client: ──period: REQUEST(T1)──▶ ──REPLY(T1,T2,T3) at T4──▶ window += (θ, δ) ──min-δ sample newer than last used?──▶ adjust(θ)
//!   server: REQUEST(T1) at T2 ──▶ REPLY(T1, T2, T3)
//! ```
//!
//! ## Costs
//! 2 messages per client per poll: 2(N−1) per period in all.
//!
//! ## Accuracy
//! A used sample is off by at most (δ − 2·dmin)/2 ≤ (dmax − dmin)/2; the filter picks small δ,
//! so the typical error is far below that bound. A sample is used at most 8 polls after the
//! previous one, so clocks drift for at most 8 periods between corrections
//! (docs/CLOCKS.md).
//!
//! ## Assumptions and known flaws
//! One server, fixed for the run, with no strata, no selection among several servers and no
//! frequency discipline (real NTP also learns each clock's drift rate and corrects it
//! continuously; here drift is only corrected by offsets). A stored sample's θ was measured
//! against the clock as it was then: if a previous correction was still being slewed in since,
//! θ is stale by the part absorbed meanwhile — the reason the window only matters in the steady
//! state, where each correction is absorbed within one period.

use std::collections::VecDeque;

use ringleader_core::{Context, Event, Message, NodeId, Outbox, Process, Request, Time};
use serde::{Deserialize, Serialize};

use super::cristian::{period_param, position_param};
use super::diff;
use crate::{Algorithm, Family, ParamError, Setup};

/// Messages of the NTP-style protocol.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// A client's poll, with its send time T1.
    Request {
        /// The client's clock at the send.
        t1: Time,
    },
    /// The server's answer: T1 echoed, T2 its receive time, T3 its send time.
    Reply {
        /// The request's T1.
        t1: Time,
        /// The server's clock at the receive.
        t2: Time,
        /// The server's clock at the send.
        t3: Time,
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

/// Timers of the NTP client.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
pub enum Timer {
    /// Time for the next poll.
    Poll,
}

/// Validated configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Config {
    /// The server's position.
    pub server: NodeId,
    /// Time between polls (local time).
    pub period: Time,
    /// Samples kept by the clock filter.
    pub window: usize,
}

/// One (offset, delay) sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Sample {
    /// Arrival order.
    pub seq: u64,
    /// θ, in ns: how far the server's clock is ahead of ours.
    pub offset: i64,
    /// δ, in ns: the round trip minus the server's processing time.
    pub delay: i64,
}

/// θ and δ from the four timestamps.
pub fn offset_and_delay(t1: Time, t2: Time, t3: Time, t4: Time) -> (i64, i64) {
    let offset = (diff(t2, t1) + diff(t3, t4)) / 2;
    let delay = diff(t4, t1) - diff(t3, t2);
    (offset, delay)
}

/// A node of the NTP-style protocol (the server or a client).
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Ntp {
    me: NodeId,
    config: Config,
    /// The clock filter's window, oldest first.
    samples: VecDeque<Sample>,
    /// Samples received so far.
    received: u64,
    /// The last sample used for a correction.
    last_used: Option<u64>,
}

type Out = Outbox<Msg, Timer>;

impl Ntp {
    fn poll(&mut self, cx: &Context, out: &mut Out) {
        out.send(self.config.server, Msg::Request { t1: cx.now });
        out.set_timer(Timer::Poll, self.config.period);
    }

    /// The clock filter: adds a sample and returns the one to use now, if any.
    pub fn filter(&mut self, offset: i64, delay: i64) -> Option<Sample> {
        self.samples.push_back(Sample { seq: self.received, offset, delay });
        self.received += 1;
        while self.samples.len() > self.config.window {
            self.samples.pop_front();
        }
        // The minimum delay; among equals the newest.
        let best = *self.samples.iter().rev().min_by_key(|s| s.delay)?;
        if self.last_used.is_some_and(|used| best.seq <= used) {
            return None;
        }
        self.last_used = Some(best.seq);
        Some(best)
    }
}

impl Process for Ntp {
    type Msg = Msg;
    type Timer = Timer;

    fn on_start(&mut self, cx: &Context, out: &mut Out) {
        if self.me != self.config.server {
            self.poll(cx, out);
        }
    }

    fn on_message(&mut self, cx: &Context, from: NodeId, msg: Msg, out: &mut Out) {
        match msg {
            Msg::Request { t1 } if self.me == self.config.server => {
                out.send(from, Msg::Reply { t1, t2: cx.now, t3: cx.now });
            }
            Msg::Reply { t1, t2, t3 } if self.me != self.config.server => {
                let (offset, delay) = offset_and_delay(t1, t2, t3, cx.now);
                if let Some(best) = self.filter(offset, delay) {
                    out.adjust_clock(best.offset);
                    out.emit(Event::ClockAdjusted { delta: best.offset });
                }
            }
            _ => {}
        }
    }

    fn on_timer(&mut self, cx: &Context, timer: Timer, out: &mut Out) {
        match timer {
            Timer::Poll => self.poll(cx, out),
        }
    }

    fn on_request(&mut self, cx: &Context, req: Request, out: &mut Out) {
        if req == Request::Synchronize && self.me != self.config.server {
            self.poll(cx, out);
        }
    }

    /// The window is volatile: a recovered client starts it afresh.
    fn on_recover(&mut self, cx: &Context, out: &mut Out) {
        self.samples.clear();
        self.last_used = None;
        self.on_start(cx, out);
    }
}

impl Algorithm for Ntp {
    const NAME: &'static str = "ntp";
    const FAMILY: Family = Family::Clock;
    const SUMMARY: &'static str =
        "four timestamps give offset and delay; the minimum-delay sample of the last 8 is used";
    /// One operation is one poll of the server: one REQUEST.
    const OPERATION: crate::OperationUnit =
        crate::OperationUnit { name: "poll", count: crate::OperationCount::Sends("request") };
    type Config = Config;

    fn configure(setup: &Setup) -> Result<Config, ParamError> {
        let server = position_param(setup, "server")?;
        let period = period_param(setup)?;
        let window: usize = setup.params.get("window", 8)?;
        if !(1..=10_000).contains(&window) {
            return Err(ParamError::OutOfRange {
                key: "window".into(),
                reason: format!("{window} samples: the clock filter keeps 1..10000 samples"),
            });
        }
        Ok(Config { server, period, window })
    }

    fn new(me: NodeId, c: &Config, _setup: &Setup) -> Self {
        Ntp { me, config: *c, samples: VecDeque::new(), received: 0, last_used: None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testing::TestSystem;
    use ringleader_core::harness::Harness;
    use ringleader_core::time::MILLISECOND as MS;

    /// Position `me` of three; the server is position 0.
    fn node(me: NodeId) -> Harness<Ntp> {
        TestSystem::new(3).node(me)
    }

    /// Rule 1: every period a client sends REQUEST(T1) to the server.
    #[test]
    fn rule_1_a_client_polls_the_server_every_period() {
        let mut c = node(1);
        c.at(10 * MS);
        let step = c.start();
        assert_eq!(step.sent(), vec![(0, Msg::Request { t1: 10 * MS })]);
        assert_eq!(step.set(), vec![(Timer::Poll, 1_000 * MS)]);
        c.at(1_010 * MS);
        assert_eq!(c.fire(Timer::Poll).sent(), vec![(0, Msg::Request { t1: 1_010 * MS })]);
        assert!(node(0).start().is_empty());
    }

    /// Rule 2: the server answers with T1 and its receive and send times.
    #[test]
    fn rule_2_the_server_answers_with_three_timestamps() {
        let mut s = node(0);
        s.at(40 * MS);
        assert_eq!(
            s.deliver(2, Msg::Request { t1: 33 }).sent(),
            vec![(2, Msg::Reply { t1: 33, t2: 40 * MS, t3: 40 * MS })]
        );
    }

    /// Rule 3: the reply gives θ = ((T2 − T1) + (T3 − T4))/2 and δ = (T4 − T1) − (T3 − T2), and the
    /// minimum-delay sample of the window is chosen.
    #[test]
    fn rule_3_the_reply_gives_offset_and_delay_and_the_filter_picks_the_minimum_delay() {
        let mut c = node(1);
        c.at(110 * MS);
        let step = c.deliver(0, Msg::Reply { t1: 100 * MS, t2: 106 * MS, t3: 108 * MS });
        let theta = 2 * MS as i64;
        assert_eq!(step.adjustments(), vec![theta]);
        assert_eq!(step.emitted(), vec![Event::ClockAdjusted { delta: theta }]);
        assert_eq!(c.process.samples[0], Sample { seq: 0, offset: theta, delay: 8 * MS as i64 });
        c.at(220 * MS);
        assert!(
            c.deliver(0, Msg::Reply { t1: 200 * MS, t2: 201 * MS, t3: 201 * MS }).is_empty(),
            "δ 20 ms > 8 ms"
        );
    }

    /// Rule 4: a sample is used once and never one older than the last used.
    #[test]
    fn rule_4_a_sample_is_used_once_and_never_an_older_one() {
        let mut c = node(1);
        c.at(110 * MS);
        assert_eq!(
            c.deliver(0, Msg::Reply { t1: 100 * MS, t2: 106 * MS, t3: 108 * MS }).adjustments().len(),
            1
        );
        c.at(204 * MS);
        let step = c.deliver(0, Msg::Reply { t1: 200 * MS, t2: 202 * MS, t3: 202 * MS });
        assert_eq!(step.adjustments(), vec![0], "δ 4 ms beats 8 ms and is newer; θ = (2 − 2)/2");
        c.at(310 * MS);
        assert!(
            c.deliver(0, Msg::Reply { t1: 300 * MS, t2: 301 * MS, t3: 301 * MS }).is_empty(),
            "the best is used"
        );
    }

    #[test]
    fn four_timestamps_separate_offset_from_delay() {
        // Server 5 ms ahead; 1 ms out, 3 ms back, 2 ms of processing.
        let (t1, t2, t3, t4) = (100, 100 + 5 + 1, 100 + 5 + 1 + 2, 100 + 1 + 2 + 3);
        assert_eq!(offset_and_delay(t1, t2, t3, t4), (5 - 1, 4));
    }

    #[test]
    fn the_filter_uses_the_minimum_delay_sample_once_and_never_an_older_one() {
        let setup_config = Config { server: 0, period: 1, window: 3 };
        let mut p =
            Ntp { me: 1, config: setup_config, samples: VecDeque::new(), received: 0, last_used: None };
        assert_eq!(p.filter(10, 5).map(|s| s.offset), Some(10));
        assert_eq!(p.filter(20, 7), None); // the 5 is still the best, and used
        assert_eq!(p.filter(30, 4).map(|s| s.offset), Some(30));
        assert_eq!(p.filter(40, 6), None);
        assert_eq!(p.filter(50, 9), None); // window (4, 6, 9): 4 used
        assert_eq!(p.filter(60, 8).map(|s| s.offset), Some(40)); // 4 left; 6 is newer than it
    }
}
