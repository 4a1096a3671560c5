//! # Ricart-Agrawala (1981)
//!
//! *Ricart and Agrawala, "An optimal algorithm for mutual exclusion in computer networks",
//! CACM 24(1), 1981; the textbook treatment is Tanenbaum & van Steen, Distributed Systems
//! (mutual exclusion: a distributed algorithm).*
//!
//! ## The idea
//! Lamport's algorithm without the RELEASE broadcast: a process that must wait for you simply
//! does not answer yet. Every request is stamped (Lamport timestamp, uid); of two competing
//! requests the smaller stamp wins, and the loser's REPLY is *deferred* until the winner leaves.
//!
//! ## The rules
//! 1. Request: state := WANTED; stamp the request (ts, id) with the Lamport clock; send
//!    REQUEST(ts, id) to the N−1 others.
//! 2. On REQUEST(ts_j, j): defer it if HELD, or if WANTED and (ts_i, i) < (ts_j, j); otherwise
//!    send REPLY at once.
//! 3. Enter after a REPLY from each of the N−1 others (state := HELD). The requester records
//!    *who* replied, not how many replies came: a duplicated REPLY (the network may deliver one
//!    twice) must not count as another process's permission. A REPLY names the request it
//!    answers (its timestamp), so a late duplicate of an earlier round's REPLY is ignored too.
//! 4. Exit: state := RELEASED; REPLY to every deferred request.
//!
//! ```text
//!   RELEASED ──Acquire / REQUEST to all──▶ WANTED ──N−1 REPLYs──▶ HELD ──Release / REPLY to deferred──▶ RELEASED
//! ```
//!
//! Ids are uids; the Lamport clock ticks at every request and jumps past every REQUEST received.
//!
//! ## Costs
//! 2(N−1) messages per entry (N−1 REQUEST, N−1 REPLY), under any load. Synchronization delay one
//! message (the deferred REPLY); response time under light load two one-way delays.
//!
//! ## Fairness and fencing tokens
//! Entries happen in (timestamp, id) order of the requests: the checker's `timestamp_order`
//! property judges it from the `Requested { ts }` event emitted with every request. The fencing
//! token is the request's stamp packed as `ts · 2^20 + rank(uid)` ([`super::stamp`]), strictly
//! increasing because entries follow stamp order.
//!
//! ## Forged messages
//! A real node refuses (`Algorithm::admits`) a message stamped 0 or beyond 2^62 (no clock
//! ticks that often), and a REPLY naming a timestamp above this node's clock: a request it
//! never made (its clock, on stable storage, only grows). It admits a REPLY when no request is
//! outstanding: a late or duplicated REPLY is honest.
//!
//! ## Assumptions and known flaws
//! Reliable channels; FIFO is *not* needed (a REPLY names the one request it answers); duplicated
//! messages are harmless (permissions are a set of repliers). Safe,
//! deadlock- and starvation-free while nobody fails. It tolerates no crash at all: a crashed
//! process never replies, so every later requester waits forever — N points of failure instead
//! of the centralized algorithm's one. A recovered process has forgotten whom it deferred.

use std::collections::BTreeSet;

use ringleader_core::{Context, Event, Message, NodeId, Outbox, Process, Request};
use serde::{Deserialize, Serialize};

use super::stamp::{self, ScalarClock, Stamp};
use crate::{Algorithm, Family, ParamError, Setup};

/// Messages of Ricart-Agrawala.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// Ask for permission, stamped with the request's Lamport timestamp.
    Request {
        /// The request's timestamp.
        ts: u64,
    },
    /// Grant permission to the request stamped `ts`.
    Reply {
        /// The timestamp of the request this answers.
        ts: u64,
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

/// Ricart-Agrawala sets no timers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
pub enum Timer {}

/// Where a process is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
enum State {
    Released,
    Wanted(Stamp),
    Held(Stamp),
}

/// A process of Ricart-Agrawala.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct RicartAgrawala {
    me: NodeId,
    clock: ScalarClock,
    state: State,
    /// The processes whose REPLY the current request still lacks.
    awaiting: BTreeSet<NodeId>,
    /// Requests deferred until we leave: who asked, and the stamp its REPLY must name.
    deferred: Vec<(NodeId, u64)>,
}

type Out = Outbox<Msg, Timer>;

impl RicartAgrawala {
    fn enter_if_ready(&mut self, cx: &Context, out: &mut Out) {
        if let State::Wanted(s) = self.state
            && self.awaiting.is_empty()
        {
            self.state = State::Held(s);
            out.emit(Event::Entered { fencing: s.fencing(cx.uids) });
        }
    }
}

impl Process for RicartAgrawala {
    type Msg = Msg;
    type Timer = Timer;

    fn on_message(&mut self, cx: &Context, from: NodeId, msg: Msg, out: &mut Out) {
        match msg {
            Msg::Request { ts } => {
                self.clock.observe(ts);
                let theirs = Stamp { ts, uid: cx.uid_of(from), node: from };
                let defer = match self.state {
                    State::Held(_) => true,
                    State::Wanted(mine) => mine < theirs,
                    State::Released => false,
                };
                if defer {
                    if !self.deferred.contains(&(from, ts)) {
                        self.deferred.push((from, ts));
                    }
                } else {
                    out.send(from, Msg::Reply { ts });
                }
            }
            Msg::Reply { ts } => {
                if let State::Wanted(mine) = self.state
                    && mine.ts == ts
                    && self.awaiting.remove(&from)
                {
                    self.enter_if_ready(cx, out);
                }
            }
        }
    }

    fn on_timer(&mut self, _cx: &Context, timer: Timer, _out: &mut Out) {
        match timer {}
    }

    fn on_request(&mut self, cx: &Context, req: Request, out: &mut Out) {
        match req {
            Request::Acquire if self.state == State::Released => {
                let s = Stamp { ts: self.clock.tick(), uid: cx.uid(), node: self.me };
                self.state = State::Wanted(s);
                self.awaiting = (0..cx.n()).filter(|&j| j != self.me).collect();
                out.emit(Event::Requested { ts: s.ts });
                out.send_all((0..cx.n()).filter(|&j| j != self.me), &Msg::Request { ts: s.ts });
                self.enter_if_ready(cx, out);
            }
            Request::Release if matches!(self.state, State::Held(_)) => {
                self.state = State::Released;
                out.emit(Event::Exited);
                for (j, ts) in std::mem::take(&mut self.deferred) {
                    out.send(j, Msg::Reply { ts });
                }
            }
            _ => {}
        }
    }

    /// Everything is volatile except the Lamport clock; the deferred requesters are lost and
    /// will wait forever (the algorithm does not tolerate crashes).
    fn on_recover(&mut self, _cx: &Context, _out: &mut Out) {
        self.state = State::Released;
        self.awaiting.clear();
        self.deferred.clear();
    }

    fn in_critical_section(&self) -> bool {
        matches!(self.state, State::Held(_))
    }
}

impl Algorithm for RicartAgrawala {
    const NAME: &'static str = "ricart-agrawala";
    const FAMILY: Family = Family::Mutex;
    const SUMMARY: &'static str =
        "REQUEST(ts, id) to all, enter after N−1 REPLYs, defer younger requests; 2(N−1) per entry";
    type Config = ();

    /// Timestamps follow a tick and stay below [`stamp::CLOCK_LIMIT`]; a REPLY names one of
    /// this node's requests, stamped no later than its clock.
    fn admits(&self, _from: NodeId, msg: &Msg) -> Result<(), &'static str> {
        match *msg {
            Msg::Request { ts } => stamp::admits_clock(ts),
            Msg::Reply { ts } => {
                stamp::admits_clock(ts)?;
                if ts > self.clock.0 {
                    return Err(
                        "a REPLY to a request stamped later than this node's clock: one it never made",
                    );
                }
                Ok(())
            }
        }
    }

    fn configure(setup: &Setup) -> Result<(), ParamError> {
        stamp::check_size(setup)
    }

    fn new(me: NodeId, _config: &(), _setup: &Setup) -> Self {
        RicartAgrawala {
            me,
            clock: ScalarClock::default(),
            state: State::Released,
            awaiting: BTreeSet::new(),
            deferred: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testing::TestSystem;
    use ringleader_core::harness::Harness;

    /// Position `me` of three, uids 1, 2, 3 (ranks 0, 1, 2).
    fn node(me: NodeId) -> Harness<RicartAgrawala> {
        TestSystem::new(3).node(me)
    }

    /// Rule 1: a request is stamped with the ticked clock and sent to the N − 1 others.
    #[test]
    fn rule_1_a_request_is_stamped_and_sent_to_all_others() {
        let mut p = node(1);
        let step = p.request(Request::Acquire);
        assert_eq!(step.emitted(), vec![Event::Requested { ts: 1 }]);
        assert_eq!(step.sent(), vec![(0, Msg::Request { ts: 1 }), (2, Msg::Request { ts: 1 })]);
    }

    /// Rule 2: a REQUEST is answered at once unless this process holds the section or wants it
    /// with a smaller stamp, in which case the REPLY is deferred.
    #[test]
    fn rule_2_reply_at_once_unless_holding_or_wanting_with_priority() {
        let mut idle = node(1);
        assert_eq!(idle.deliver(0, Msg::Request { ts: 4 }).sent(), vec![(0, Msg::Reply { ts: 4 })]);
        let mut p = node(1);
        p.request(Request::Acquire);
        assert!(p.deliver(2, Msg::Request { ts: 1 }).is_empty(), "(1, uid 2) < (1, uid 3): deferred");
        assert_eq!(
            p.deliver(0, Msg::Request { ts: 1 }).sent(),
            vec![(0, Msg::Reply { ts: 1 })],
            "(1, uid 1) wins"
        );
        p.deliver(0, Msg::Reply { ts: 1 });
        p.deliver(2, Msg::Reply { ts: 1 });
        assert!(p.process.in_critical_section());
        assert!(p.deliver(0, Msg::Request { ts: 9 }).is_empty(), "held: deferred");
    }

    /// Rule 3: enter after a REPLY from each other process, counted by sender.
    #[test]
    fn rule_3_enter_after_a_reply_from_each_other_process() {
        let mut p = node(1);
        p.request(Request::Acquire);
        assert!(p.deliver(0, Msg::Reply { ts: 1 }).is_empty());
        assert!(p.deliver(0, Msg::Reply { ts: 1 }).is_empty(), "a duplicate is the same permission");
        assert_eq!(
            p.deliver(2, Msg::Reply { ts: 1 }).emitted(),
            vec![Event::Entered { fencing: (1 << 20) | 1 }]
        );
    }

    /// Rule 4: leaving replies to every deferred request.
    #[test]
    fn rule_4_leaving_replies_to_every_deferred_request() {
        let mut p = node(1);
        p.request(Request::Acquire);
        p.deliver(2, Msg::Request { ts: 1 });
        p.deliver(0, Msg::Reply { ts: 1 });
        p.deliver(2, Msg::Reply { ts: 1 });
        p.deliver(0, Msg::Request { ts: 5 });
        let step = p.request(Request::Release);
        assert_eq!(step.emitted(), vec![Event::Exited]);
        assert_eq!(step.sent(), vec![(2, Msg::Reply { ts: 1 }), (0, Msg::Reply { ts: 5 })]);
        assert_eq!(p.deliver(2, Msg::Request { ts: 7 }).sent(), vec![(2, Msg::Reply { ts: 7 })], "released");
    }

    /// Three processes: P0 asks; P1's REPLY arrives twice. The duplicate is not P2's
    /// permission, and neither is a stale REPLY naming an earlier request.
    #[test]
    fn a_duplicated_reply_does_not_let_a_process_in_early() {
        let mut p = node(0);
        p.request(Request::Acquire);
        let State::Wanted(mine) = p.process.state else { panic!("{:?}", p.process.state) };
        assert!(p.deliver(1, Msg::Reply { ts: mine.ts }).is_empty());
        assert!(p.deliver(1, Msg::Reply { ts: mine.ts }).is_empty(), "two REPLYs from P1 are one permission");
        assert!(!p.process.in_critical_section());
        assert!(
            p.deliver(2, Msg::Reply { ts: mine.ts - 1 }).is_empty(),
            "a REPLY to an earlier request is no permission"
        );
        assert_eq!(
            p.deliver(2, Msg::Reply { ts: mine.ts }).emitted(),
            vec![Event::Entered { fencing: mine.fencing(&p.uids) }]
        );
        assert!(p.process.in_critical_section());
    }

    /// Forged messages: a REPLY to a request this node never made (stamped above its clock)
    /// and timestamps 0 or beyond 2^62 are refused; a REPLY to its request, a late one when
    /// nothing is outstanding, and an ordinary REQUEST are admitted.
    #[test]
    fn admits_a_reply_only_to_a_request_this_node_made() {
        let mut p = node(1);
        assert_eq!(p.request(Request::Acquire).sent()[0], (0, Msg::Request { ts: 1 }));
        let admits = |p: &Harness<RicartAgrawala>, msg: Msg| p.process.admits(0, &msg);
        assert_eq!(admits(&p, Msg::Reply { ts: 1 }), Ok(()));
        assert_eq!(
            admits(&p, Msg::Reply { ts: 2 }),
            Err("a REPLY to a request stamped later than this node's clock: one it never made")
        );
        assert_eq!(
            admits(&p, Msg::Reply { ts: 0 }),
            Err("a timestamp of 0: every stamp follows a tick of the sender's clock")
        );
        assert_eq!(admits(&p, Msg::Request { ts: 40 }), Ok(()));
        assert_eq!(
            admits(&p, Msg::Request { ts: u64::MAX }),
            Err(
                "a timestamp beyond 2^62: no clock ticks that often, and it would overflow this node's clock"
            )
        );
        p.deliver(0, Msg::Reply { ts: 1 });
        p.deliver(2, Msg::Reply { ts: 1 });
        p.request(Request::Release);
        assert_eq!(admits(&p, Msg::Reply { ts: 1 }), Ok(()), "a late copy after the exit");
    }
}
