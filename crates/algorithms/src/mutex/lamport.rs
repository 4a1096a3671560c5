//! # Lamport's mutual exclusion (1978)
//!
//! *Lamport, "Time, Clocks, and the Ordering of Events in a Distributed System", CACM 21(7),
//! 1978 (the mutual-exclusion example of §3); the textbook treatment is Coulouris et al.,
//! Distributed Systems: Concepts and Design, §15.2.*
//!
//! ## The idea
//! Every process keeps a replica of one request queue, ordered by (Lamport timestamp, id). If
//! every process sees the same requests in the same order, they all agree on who is first —
//! and a process knows it has seen every earlier request once it has heard something *later*
//! from everybody, because channels are FIFO.
//!
//! ## The rules
//! 1. Request: tick the clock; put REQUEST(ts, i) in your own queue and send it to all others.
//! 2. On REQUEST(ts, j): queue it; answer with a timestamped REPLY.
//! 3. Enter when your request heads your queue *and* you have received from every other process
//!    a message stamped later than your request (in the (timestamp, id) order).
//! 4. Exit: remove your request; send a timestamped RELEASE to all; receivers remove j's request.
//!
//! ```text
//!   idle ──Acquire / REQUEST to all──▶ waiting ──head of queue ∧ later message from all──▶ holding
//!   holding ──Release / RELEASE to all──▶ idle
//! ```
//!
//! ## Costs
//! 3(N−1) messages per entry (REQUEST, REPLY, RELEASE with each other process). Synchronization
//! delay one message (the RELEASE); response time under light load two one-way delays.
//!
//! ## Fairness and fencing tokens
//! Entries happen in (timestamp, id) order of the requests — the checker's `timestamp_order`
//! property judges it from the `Requested { ts }` event emitted with every request. The fencing
//! token is the request's stamp packed as `ts · 2^20 + rank(uid)` ([`super::stamp`]).
//!
//! ## Forged messages
//! A real node refuses (`Algorithm::admits`) a message stamped 0 or beyond 2^62: every
//! message is stamped with a fresh tick of its sender's clock, and none ticks that often. Which
//! REPLY or RELEASE answers what cannot be proved from the receiver's state (its queue is
//! volatile, and a late RELEASE after a crash is honest), so nothing else is refused.
//!
//! ## Assumptions and known flaws
//! **FIFO channels are required.** The simulator's links are FIFO under constant latency (the
//! default `constant:1ms`: equal delays keep send order), so the default scenario needs no
//! flag; with random latencies run it with `--fifo` (`[network] fifo = true`). Without FIFO a
//! REPLY may overtake the REQUEST sent before it: the receiver counts the REPLY as "a later
//! message from j" without having queued j's earlier request, and two processes enter —
//! `scenarios/lamport-non-fifo.toml` shows it (safety violated, declared expected).
//! No crash is tolerated: a crashed process never replies, so nobody enters again. A recovered
//! process has forgotten its queue and rejoins as a newcomer (its clock is kept).

use std::collections::BTreeSet;

use ringleader_core::{Context, Event, Message, NodeId, Outbox, Process, Request};
use serde::{Deserialize, Serialize};

use super::stamp::{self, ScalarClock, Stamp};
use crate::{Algorithm, Family, ParamError, Setup};

/// Messages of Lamport's algorithm; each carries the sender's Lamport timestamp.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// Ask for the critical section; `ts` is the request's timestamp.
    Request {
        /// Timestamp.
        ts: u64,
    },
    /// Acknowledge a REQUEST.
    Reply {
        /// Timestamp.
        ts: u64,
    },
    /// The sender left the critical section: remove its request.
    Release {
        /// Timestamp.
        ts: u64,
    },
}

impl Msg {
    fn ts(&self) -> u64 {
        match *self {
            Msg::Request { ts } | Msg::Reply { ts } | Msg::Release { ts } => ts,
        }
    }
}

impl Message for Msg {
    const KINDS: &'static [&'static str] = &["request", "reply", "release"];
    fn kind_index(&self) -> usize {
        match self {
            Msg::Request { .. } => 0,
            Msg::Reply { .. } => 1,
            Msg::Release { .. } => 2,
        }
    }
}

/// Lamport's algorithm sets no timers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
pub enum Timer {}

/// A process of Lamport's algorithm.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Lamport {
    me: NodeId,
    clock: ScalarClock,
    /// The replicated request queue, ordered by (timestamp, uid).
    queue: BTreeSet<Stamp>,
    /// Latest (timestamp, uid) received from each process.
    latest: Vec<Option<Stamp>>,
    /// Our outstanding request.
    mine: Option<Stamp>,
    holding: bool,
}

type Out = Outbox<Msg, Timer>;

impl Lamport {
    fn enter_if_ready(&mut self, cx: &Context, out: &mut Out) {
        let Some(mine) = self.mine else { return };
        if self.holding || self.queue.first() != Some(&mine) {
            return;
        }
        let heard_later = self
            .latest
            .iter()
            .enumerate()
            .all(|(j, l)| j as NodeId == self.me || l.is_some_and(|s| s > mine));
        if heard_later {
            self.holding = true;
            out.emit(Event::Entered { fencing: mine.fencing(cx.uids) });
        }
    }
}

impl Process for Lamport {
    type Msg = Msg;
    type Timer = Timer;

    fn on_message(&mut self, cx: &Context, from: NodeId, msg: Msg, out: &mut Out) {
        let ts = msg.ts();
        self.clock.observe(ts);
        let stamp = Stamp { ts, uid: cx.uid_of(from), node: from };
        let latest = &mut self.latest[from as usize];
        if latest.is_none_or(|l| l < stamp) {
            *latest = Some(stamp);
        }
        match msg {
            Msg::Request { .. } => {
                self.queue.insert(stamp);
                out.send(from, Msg::Reply { ts: self.clock.tick() });
            }
            Msg::Reply { .. } => {}
            Msg::Release { .. } => self.queue.retain(|s| s.node != from),
        }
        self.enter_if_ready(cx, out);
    }

    fn on_timer(&mut self, _cx: &Context, timer: Timer, _out: &mut Out) {
        match timer {}
    }

    fn on_request(&mut self, cx: &Context, req: Request, out: &mut Out) {
        match req {
            Request::Acquire if self.mine.is_none() => {
                let s = Stamp { ts: self.clock.tick(), uid: cx.uid(), node: self.me };
                self.mine = Some(s);
                self.queue.insert(s);
                out.emit(Event::Requested { ts: s.ts });
                out.send_all((0..cx.n()).filter(|&j| j != self.me), &Msg::Request { ts: s.ts });
                self.enter_if_ready(cx, out);
            }
            Request::Release if self.holding => {
                self.holding = false;
                if let Some(s) = self.mine.take() {
                    self.queue.remove(&s);
                }
                out.emit(Event::Exited);
                let ts = self.clock.tick();
                out.send_all((0..cx.n()).filter(|&j| j != self.me), &Msg::Release { ts });
            }
            _ => {}
        }
    }

    /// The queue and what was heard are volatile; the clock is kept.
    fn on_recover(&mut self, _cx: &Context, _out: &mut Out) {
        self.queue.clear();
        self.latest.iter_mut().for_each(|l| *l = None);
        self.mine = None;
        self.holding = false;
    }

    fn in_critical_section(&self) -> bool {
        self.holding
    }
}

impl Algorithm for Lamport {
    const NAME: &'static str = "lamport";
    const FAMILY: Family = Family::Mutex;
    const SUMMARY: &'static str =
        "replicated (ts, id) request queue; REQUEST, REPLY, RELEASE to all: 3(N−1) per entry; FIFO links";
    /// The last timestamp seen from every peer: ≈ 40 bytes per pair of nodes (measured 35–43).
    const FOOTPRINT: crate::Footprint = crate::Footprint::quadratic(40);
    type Config = ();

    /// Every message is stamped with a fresh tick: at least 1, below [`stamp::CLOCK_LIMIT`].
    fn admits(&self, _from: NodeId, msg: &Msg) -> Result<(), &'static str> {
        stamp::admits_clock(msg.ts())
    }

    fn configure(setup: &Setup) -> Result<(), ParamError> {
        stamp::check_size(setup)
    }

    fn new(me: NodeId, _config: &(), setup: &Setup) -> Self {
        Lamport {
            me,
            clock: ScalarClock::default(),
            queue: BTreeSet::new(),
            latest: vec![None; setup.uids.len()],
            mine: None,
            holding: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestSystem;
    use ringleader_core::harness::Harness;

    /// Position `me` of three, uids 1, 2, 3 (ranks 0, 1, 2).
    fn node(me: NodeId) -> Harness<Lamport> {
        TestSystem::new(3).node(me)
    }

    /// Rule 1: a request ticks the clock, is queued locally and sent to all others.
    #[test]
    fn rule_1_a_request_is_stamped_queued_and_sent_to_all() {
        let mut p = node(0);
        let step = p.request(Request::Acquire);
        assert_eq!(step.emitted(), vec![Event::Requested { ts: 1 }]);
        assert_eq!(step.sent(), vec![(1, Msg::Request { ts: 1 }), (2, Msg::Request { ts: 1 })]);
        assert_eq!(p.process.queue.len(), 1);
    }

    /// Rule 2: a REQUEST is queued and answered with a REPLY stamped after it.
    #[test]
    fn rule_2_a_request_is_queued_and_answered() {
        let mut p = node(1);
        assert_eq!(p.deliver(0, Msg::Request { ts: 1 }).sent(), vec![(0, Msg::Reply { ts: 3 })]);
        assert!(p.process.queue.contains(&Stamp { ts: 1, uid: 1, node: 0 }));
    }

    /// Rule 3: enter only at the head of the queue and after a later message from everyone.
    #[test]
    fn rule_3_enter_at_the_head_after_a_later_message_from_everyone() {
        let mut p = node(0);
        p.request(Request::Acquire);
        assert!(p.deliver(1, Msg::Reply { ts: 3 }).is_empty(), "nothing later from position 2 yet");
        assert_eq!(p.deliver(2, Msg::Reply { ts: 2 }).emitted(), vec![Event::Entered { fencing: 1 << 20 }]);

        let mut q = node(1);
        q.request(Request::Acquire);
        q.deliver(0, Msg::Request { ts: 1 });
        q.deliver(2, Msg::Reply { ts: 9 });
        assert!(
            q.deliver(0, Msg::Reply { ts: 9 }).is_empty(),
            "(1, uid 1) precedes (1, uid 2): not the head"
        );
    }

    /// Rule 4: leaving removes the request and sends RELEASE to all; a receiver removes the
    /// releaser's request, which may put its own at the head.
    #[test]
    fn rule_4_release_removes_the_request_everywhere() {
        let mut p = node(0);
        p.request(Request::Acquire);
        p.deliver(1, Msg::Reply { ts: 3 });
        p.deliver(2, Msg::Reply { ts: 2 });
        let step = p.request(Request::Release);
        assert_eq!(step.emitted(), vec![Event::Exited]);
        assert_eq!(step.sent(), vec![(1, Msg::Release { ts: 6 }), (2, Msg::Release { ts: 6 })]);
        assert!(p.process.queue.is_empty());

        let mut q = node(2);
        q.deliver(0, Msg::Request { ts: 1 });
        assert_eq!(q.request(Request::Acquire).emitted(), vec![Event::Requested { ts: 4 }]);
        assert!(q.deliver(1, Msg::Reply { ts: 5 }).is_empty());
        assert_eq!(
            q.deliver(0, Msg::Release { ts: 6 }).emitted(),
            vec![Event::Entered { fencing: (4 << 20) | 2 }]
        );
    }

    /// Forged messages: a REQUEST, REPLY or RELEASE stamped 0 or beyond 2^62 is refused; one
    /// stamped with any clock value in between is admitted.
    #[test]
    fn admits_only_timestamps_a_clock_could_reach() {
        let p = node(0);
        for msg in [Msg::Request { ts: 0 }, Msg::Reply { ts: 0 }, Msg::Release { ts: 0 }] {
            assert_eq!(
                p.process.admits(1, &msg),
                Err("a timestamp of 0: every stamp follows a tick of the sender's clock")
            );
        }
        assert_eq!(
            p.process.admits(1, &Msg::Release { ts: stamp::CLOCK_LIMIT }),
            Err(
                "a timestamp beyond 2^62: no clock ticks that often, and it would overflow this node's clock"
            )
        );
        for msg in [Msg::Request { ts: 1 }, Msg::Reply { ts: 7 }, Msg::Release { ts: stamp::CLOCK_LIMIT - 1 }]
        {
            assert_eq!(p.process.admits(1, &msg), Ok(()));
        }
    }
}
