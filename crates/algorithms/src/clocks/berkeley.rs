//! # The Berkeley algorithm
//!
//! *Gusella and Zatti, "The accuracy of the clock synchronization achieved by TEMPO in Berkeley
//! UNIX 4.3BSD", IEEE Transactions on Software Engineering 15(7), 1989; Tanenbaum & van Steen,
//! Distributed Systems, clock synchronization.*
//!
//! ## The idea
//! No clock is the reference: the machines agree on their *average*. A master polls every
//! clock, estimates each one's offset from its own with Cristian's RTT/2 rule, averages the
//! offsets while ignoring outliers (a clock far from the others is faulty, not informative),
//! and sends every node the correction it needs — a **delta**, not an absolute time, so the
//! delay of that last message does not matter.
//!
//! ## The rules
//! 1. Master, every `period` (parameter, default 1 s): send POLL(t0) to every other node, t0
//!    its local time; its own offset is 0.
//! 2. A node answers POLL(t0) with TIME(t0, T), T its clock.
//! 3. On TIME the master estimates the node's offset as T + RTT/2 − now.
//! 4. When every node answered, or when the collection deadline (2·Ttrans + 1 ms of local time)
//!    expires, the master takes the *fault-tolerant average*: the mean of the offsets within
//!    `tolerance` (parameter, default 10 ms) of their median — outliers are left out of the
//!    mean but are still corrected.
//! 5. Each node i gets ADJUST(avg − offsetᵢ); the master applies its own delta, avg, locally. A
//!    node applies a delta by slewing (`adjust_clock`), never stepping back.
//! 6. Answers from an earlier round are ignored.
//!
//! ```text
//!   master: idle ──period: POLL(t0) to all──▶ collecting ──all TIME in, or deadline──▶ ADJUST(avg − offsetᵢ) to each ──▶ idle
//!   node:   POLL(t0) ──▶ TIME(t0, clock);   ADJUST(δ) ──▶ slew by δ
//! ```
//!
//! ## Costs
//! 3(N−1) messages per round (POLL, TIME, ADJUST).
//!
//! ## Accuracy
//! Each estimate is off by at most half the delay asymmetry, ε ≤ (dmax − dmin)/2; a node
//! corrected with an estimate off by eᵢ ends at avg − eᵢ, so two nodes end within 2ε, and
//! drift apart by at most 2ρ·period until the next round (docs/CLOCKS.md derives the bound
//! the tests check).
//!
//! ## Assumptions and known flaws
//! The master is fixed for the run (parameter `master`, a position, default 0); in TEMPO it is
//! chosen by an election, and if it crashes nobody synchronizes until a new one is elected. The
//! average follows the majority, not real time: all clocks may agree and all be wrong.

use ringleader_core::time::MILLISECOND;
use ringleader_core::{Context, Event, Message, NodeId, Outbox, Process, Request, Time};
use serde::{Deserialize, Serialize};

use super::cristian::{period_param, position_param};
use super::remote_offset;
use crate::{Algorithm, Family, ParamError, Setup};

/// Messages of the Berkeley algorithm.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// The master asks for a node's clock; `t0` is the master's send time, echoed back.
    Poll {
        /// The master's clock at the send.
        t0: Time,
    },
    /// A node's clock reading.
    Time {
        /// The poll's `t0`.
        t0: Time,
        /// The node's clock when answering.
        time: Time,
    },
    /// The correction a node must apply, relative to its current reading.
    Adjust {
        /// Signed correction in ns.
        delta: i64,
    },
}

impl Message for Msg {
    const KINDS: &'static [&'static str] = &["poll", "time", "adjust"];
    fn kind_index(&self) -> usize {
        match self {
            Msg::Poll { .. } => 0,
            Msg::Time { .. } => 1,
            Msg::Adjust { .. } => 2,
        }
    }
}

/// Timers of the Berkeley master.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
pub enum Timer {
    /// Time for the next round.
    Round,
    /// Stop waiting for answers to the current round.
    Deadline,
}

/// Validated configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Config {
    /// The master's position.
    pub master: NodeId,
    /// Time between rounds (local time).
    pub period: Time,
    /// Offsets farther than this from the median are left out of the average.
    pub tolerance: Time,
    /// How long the master waits for answers.
    pub deadline: Time,
}

/// A node of the Berkeley algorithm (the master or a polled node).
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Berkeley {
    me: NodeId,
    n: u32,
    config: Config,
    /// Master: local time the current round started.
    round_start: Time,
    /// Master: each node's estimated offset from the master's clock, this round.
    offsets: Vec<Option<i64>>,
    /// Master: waiting for answers.
    collecting: bool,
}

type Out = Outbox<Msg, Timer>;

/// The fault-tolerant average of `offsets`: the mean of those within `tolerance` of the median
/// (the median itself always qualifies, so the mean is defined).
pub fn fault_tolerant_average(offsets: &[i64], tolerance: Time) -> i64 {
    let mut sorted = offsets.to_vec();
    sorted.sort_unstable();
    let median = sorted[sorted.len() / 2];
    let kept: Vec<i64> = sorted
        .into_iter()
        .filter(|&o| (o as i128 - median as i128).unsigned_abs() <= tolerance as u128)
        .collect();
    (kept.iter().map(|&o| o as i128).sum::<i128>() / kept.len() as i128) as i64
}

impl Berkeley {
    fn is_master(&self) -> bool {
        self.me == self.config.master
    }

    fn round(&mut self, cx: &Context, out: &mut Out) {
        self.round_start = cx.now;
        self.offsets = vec![None; self.n as usize];
        self.offsets[self.me as usize] = Some(0);
        self.collecting = true;
        for node in (0..self.n).filter(|&i| i != self.me) {
            out.send(node, Msg::Poll { t0: cx.now });
        }
        out.set_timer(Timer::Deadline, self.config.deadline);
        out.set_timer(Timer::Round, self.config.period);
        if self.n == 1 {
            self.correct(out);
        }
    }

    /// Averages what was collected and sends every node its delta.
    fn correct(&mut self, out: &mut Out) {
        if !self.collecting {
            return;
        }
        self.collecting = false;
        out.cancel_timer(Timer::Deadline);
        let known: Vec<i64> = self.offsets.iter().flatten().copied().collect();
        let avg = fault_tolerant_average(&known, self.config.tolerance);
        for (node, offset) in self.offsets.iter().enumerate() {
            let Some(offset) = offset else { continue };
            let delta = avg - offset;
            if node as NodeId == self.me {
                out.adjust_clock(delta);
                out.emit(Event::ClockAdjusted { delta });
            } else {
                out.send(node as NodeId, Msg::Adjust { delta });
            }
        }
    }
}

impl Process for Berkeley {
    type Msg = Msg;
    type Timer = Timer;

    fn on_start(&mut self, cx: &Context, out: &mut Out) {
        if self.is_master() {
            self.round(cx, out);
        }
    }

    fn on_message(&mut self, cx: &Context, from: NodeId, msg: Msg, out: &mut Out) {
        match msg {
            Msg::Poll { t0 } => out.send(from, Msg::Time { t0, time: cx.now }),
            Msg::Time { t0, time } if self.is_master() && self.collecting && t0 == self.round_start => {
                self.offsets[from as usize] = Some(remote_offset(t0, time, cx.now));
                if self.offsets.iter().all(Option::is_some) {
                    self.correct(out);
                }
            }
            Msg::Adjust { delta } => {
                out.adjust_clock(delta);
                out.emit(Event::ClockAdjusted { delta });
            }
            Msg::Time { .. } => {}
        }
    }

    fn on_timer(&mut self, cx: &Context, timer: Timer, out: &mut Out) {
        match timer {
            Timer::Round => self.round(cx, out),
            Timer::Deadline => self.correct(out),
        }
    }

    fn on_request(&mut self, cx: &Context, req: Request, out: &mut Out) {
        if req == Request::Synchronize && self.is_master() {
            self.round(cx, out);
        }
    }

    /// A recovered master has lost its round and starts a new one; others have nothing to lose.
    fn on_recover(&mut self, cx: &Context, out: &mut Out) {
        self.collecting = false;
        self.on_start(cx, out);
    }
}

impl Algorithm for Berkeley {
    const NAME: &'static str = "berkeley";
    const FAMILY: Family = Family::Clock;
    const SUMMARY: &'static str =
        "a master polls every clock, averages the offsets without outliers and sends each node its delta";
    /// One operation is one round of the master: one POLL broadcast.
    const OPERATION: crate::OperationUnit =
        crate::OperationUnit { name: "round", count: crate::OperationCount::Bursts("poll") };
    type Config = Config;

    fn configure(setup: &Setup) -> Result<Config, ParamError> {
        let master = position_param(setup, "master")?;
        let period = period_param(setup)?;
        let tolerance = setup.params.duration("tolerance", 10 * MILLISECOND)?;
        let deadline = (2 * setup.max_delay + MILLISECOND).min(period / 2).max(1);
        Ok(Config { master, period, tolerance, deadline })
    }

    fn new(me: NodeId, c: &Config, setup: &Setup) -> Self {
        Berkeley {
            me,
            n: setup.uids.len() as u32,
            config: *c,
            round_start: 0,
            offsets: Vec::new(),
            collecting: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use ringleader_core::Command;

    use super::*;

    use crate::testing::TestSystem;
    use ringleader_core::harness::Harness;

    const MS: Time = MILLISECOND;

    /// Position `me` of three; the master is position 0; the collection deadline is 3 ms.
    fn node(me: NodeId) -> Harness<Berkeley> {
        TestSystem::new(3).node(me)
    }

    /// The master at local time 100 ms, its round started.
    fn master() -> Harness<Berkeley> {
        let mut m = node(0);
        m.at(100 * MS).start();
        m
    }

    /// Rule 1: every period the master polls every other node with its local time.
    #[test]
    fn rule_1_the_master_polls_everyone_each_period() {
        let mut m = node(0);
        m.at(100 * MS);
        let step = m.start();
        assert_eq!(step.sent(), vec![(1, Msg::Poll { t0: 100 * MS }), (2, Msg::Poll { t0: 100 * MS })]);
        assert_eq!(step.set(), vec![(Timer::Deadline, 3 * MS), (Timer::Round, 1_000 * MS)]);
        assert!(node(1).start().is_empty(), "only the master polls");
    }

    /// Rule 2: a node answers POLL(t0) with TIME(t0, its clock).
    #[test]
    fn rule_2_a_node_answers_a_poll_with_its_clock() {
        let mut p = node(1);
        p.at(50 * MS);
        assert_eq!(p.deliver(0, Msg::Poll { t0: 7 }).sent(), vec![(0, Msg::Time { t0: 7, time: 50 * MS })]);
    }

    /// Rule 3: the master estimates an offset as T + RTT/2 − now.
    #[test]
    fn rule_3_the_offset_is_t_plus_half_the_round_trip_minus_now() {
        let mut m = master();
        m.at(102 * MS);
        assert!(m.deliver(1, Msg::Time { t0: 100 * MS, time: 105 * MS }).is_empty(), "2 has not answered");
        assert_eq!(m.process.offsets, vec![Some(0), Some(4 * MS as i64), None]);
    }

    /// Rule 4: at the deadline the master averages what it has, leaving outliers out.
    #[test]
    fn rule_4_the_deadline_averages_the_offsets_known_without_outliers() {
        let mut m = master();
        m.at(102 * MS);
        m.deliver(1, Msg::Time { t0: 100 * MS, time: 105 * MS });
        let step = m.fire(Timer::Deadline);
        let ms = MS as i64;
        assert_eq!(step.adjustments(), vec![2 * ms]);
        assert_eq!(step.sent(), vec![(1, Msg::Adjust { delta: -2 * ms })], "no answer from 2: no delta");
        assert_eq!(fault_tolerant_average(&[0, ms, 2 * ms, 500 * ms], 10 * MS), ms, "500 ms is left out");
    }

    /// Rule 5: every node gets avg − its offset; a node slews by the delta it receives.
    #[test]
    fn rule_5_each_node_slews_by_its_delta() {
        let mut m = master();
        m.at(102 * MS);
        m.deliver(1, Msg::Time { t0: 100 * MS, time: 107 * MS });
        let step = m.deliver(2, Msg::Time { t0: 100 * MS, time: 101 * MS });
        let ms = MS as i64;
        assert_eq!(
            step.sent(),
            vec![(1, Msg::Adjust { delta: -4 * ms }), (2, Msg::Adjust { delta: 2 * ms })]
        );
        assert_eq!(step.emitted(), vec![Event::ClockAdjusted { delta: 2 * ms }]);
        assert_eq!(step.cancelled(), vec![Timer::Deadline]);
        let step = node(1).deliver(0, Msg::Adjust { delta: -5 });
        assert_eq!(step.adjustments(), vec![-5]);
        assert_eq!(step.emitted(), vec![Event::ClockAdjusted { delta: -5 }]);
    }

    /// Rule 6: a TIME answering an earlier round's POLL is ignored.
    #[test]
    fn rule_6_answers_from_an_earlier_round_are_ignored() {
        let mut m = master();
        m.at(1_100 * MS);
        m.fire(Timer::Round);
        assert!(m.deliver(1, Msg::Time { t0: 100 * MS, time: 105 * MS }).is_empty());
        assert_eq!(m.process.offsets, vec![Some(0), None, None]);
    }

    /// One round driven by hand on 5 nodes: node 4's clock is 900 ms ahead, the others 0, 1, 3
    /// and 4 ms (the master is node 0, at 0). The average leaves node 4 out — (0 + 1 + 3 + 4)/4
    /// = 2 ms — and every node, node 4 included, is sent the delta to that average.
    #[test]
    fn a_round_sends_deltas_to_the_fault_tolerant_average() {
        let mut master = TestSystem::new(5).node::<Berkeley>(0);
        assert_eq!(master.at(1_000 * MS).start().sent().len(), 4);
        // Each answer comes back after a 2 ms round trip, the reading taken halfway.
        let ahead = [0, 1, 3, 4, 900];
        let mut actions = Vec::new();
        for node in 1..5u32 {
            let remote = 1_001 * MS + ahead[node as usize] * MS;
            let msg = Msg::Time { t0: 1_000 * MS, time: remote };
            actions.extend(master.at(1_002 * MS).deliver(node, msg).commands);
        }
        let mut deltas = vec![None; 5];
        for action in actions {
            match action {
                Command::Send { to, msg: Msg::Adjust { delta } } => deltas[to as usize] = Some(delta),
                Command::AdjustClock(delta) => deltas[0] = Some(delta),
                _ => {}
            }
        }
        let ms = MS as i64;
        assert_eq!(deltas, vec![Some(2 * ms), Some(ms), Some(-ms), Some(-2 * ms), Some(-898 * ms)]);
    }

    #[test]
    fn the_average_leaves_outliers_out() {
        // The 900 ms clock is faulty: the mean of the other four is 2 ms.
        assert_eq!(
            fault_tolerant_average(&[0, 1_000_000, 3_000_000, 4_000_000, 900_000_000], 10_000_000),
            2_000_000
        );
        assert_eq!(fault_tolerant_average(&[5], 0), 5);
    }
}
