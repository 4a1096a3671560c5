//! # Roucairol-Carvalho (1983)
//!
//! *Carvalho and Roucairol, "On mutual exclusion in computer networks", CACM 26(2), 1983 (a
//! technical correspondence on Ricart and Agrawala, CACM 1981).*
//!
//! ## The idea
//! Ricart-Agrawala asks everybody every time. But a permission P_j gave me stays good until I
//! give P_j mine: as long as P_j has not asked since, P_j cannot be in the critical section. So
//! keep the permissions you received, and ask only the processes that asked you since.
//!
//! ## The rules
//! Ricart-Agrawala's, plus a set `authorized` of the processes whose permission we hold
//! (initially empty: nobody holds anything, so the first entry of each process asks everybody).
//! 1. Request: state := WANTED; stamp (ts, id); send REQUEST(ts, id) to every process *not* in
//!    `authorized`. Enter at once if that is nobody.
//! 2. On REPLY from j: add j to `authorized`; enter when everybody is in it.
//! 3. On REQUEST(ts_j, j): defer it if HELD, or if WANTED and (ts_i, i) < (ts_j, j). Otherwise
//!    REPLY and remove j from `authorized` — and if we are WANTED and had counted on j's old
//!    permission (we did not ask j), ask j now with our request's stamp.
//! 4. Exit: state := RELEASED; REPLY to every deferred request (removing each from `authorized`).
//!
//! ```text
//!   RELEASED ──Acquire / REQUEST to the unauthorized──▶ WANTED ──authorized = all──▶ HELD
//!   HELD ──Release / REPLY to deferred──▶ RELEASED
//! ```
//!
//! ## Costs
//! Between 0 and 2(N−1) messages per entry: 0 when the same process re-enters and nobody asked
//! in between, 2(N−1) when everybody asked since its last entry. Under `sequential` with N = 9
//! and requesters 1..8 in turn: 16 per entry in the first round, 14 afterwards (node 0 never
//! asks, so its permission is kept forever); 156 for 10 entries. Synchronization delay one
//! message; response time 0 (re-entry) to two one-way delays.
//!
//! ## Fencing tokens
//! Re-entry without asking breaks the stamp order of entries: P_i may re-enter with a newer
//! stamp while P_j's older REQUEST is still in flight to it, and P_j enters next with the older
//! stamp. So this algorithm does **not** promise (timestamp, id) order (no `Requested` event)
//! and its fencing token is the Lamport clock *at entry*, packed as `clock · 2^20 + rank(uid)`:
//! the clock ticks at entry and travels on every message (REPLYs carry it too), and in a safe
//! run every hand-over of the section is a causal chain exit → … → entry, along which Lamport
//! clocks strictly increase.
//!
//! ## Forged messages
//! A real node refuses (`Algorithm::admits`) a message stamped 0 or beyond 2^62: every
//! REQUEST and REPLY carries a tick of its sender's clock, and none ticks that often. A REPLY
//! while no request is outstanding is admitted: a late or duplicated one is honest, and it
//! grants nothing then.
//!
//! ## Assumptions and known flaws
//! Reliable channels; FIFO is not needed. Safe and starvation-free while nobody fails. It
//! tolerates no crash: a crashed process never replies (and a crash erases the permissions
//! it held, which the others cannot know).

use std::collections::BTreeSet;

use ringleader_core::{Context, Event, Message, NodeId, Outbox, Process, Request};
use serde::{Deserialize, Serialize};

use super::stamp::{self, ScalarClock, Stamp};
use crate::{Algorithm, Family, ParamError, Setup};

/// Messages of Roucairol-Carvalho; each carries the sender's Lamport clock.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// Ask for permission; `ts` is the request's timestamp.
    Request {
        /// The request's timestamp.
        ts: u64,
    },
    /// Grant permission, valid until the receiver next replies to the sender.
    Reply {
        /// The sender's clock.
        clock: u64,
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

/// Roucairol-Carvalho sets no timers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
pub enum Timer {}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
enum State {
    Released,
    Wanted(Stamp),
    Held,
}

/// A process of Roucairol-Carvalho.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct RoucairolCarvalho {
    me: NodeId,
    clock: ScalarClock,
    state: State,
    /// Processes whose permission we hold.
    authorized: BTreeSet<NodeId>,
    /// Requests deferred until we leave.
    deferred: Vec<NodeId>,
}

type Out = Outbox<Msg, Timer>;

impl RoucairolCarvalho {
    fn enter_if_ready(&mut self, cx: &Context, out: &mut Out) {
        if matches!(self.state, State::Wanted(_)) && self.authorized.len() + 1 == cx.uids.len() {
            self.state = State::Held;
            let at_entry = Stamp { ts: self.clock.tick(), uid: cx.uid(), node: self.me };
            out.emit(Event::Entered { fencing: at_entry.fencing(cx.uids) });
        }
    }

    fn reply(&mut self, to: NodeId, out: &mut Out) {
        self.authorized.remove(&to);
        out.send(to, Msg::Reply { clock: self.clock.tick() });
    }
}

impl Process for RoucairolCarvalho {
    type Msg = Msg;
    type Timer = Timer;

    fn on_message(&mut self, cx: &Context, from: NodeId, msg: Msg, out: &mut Out) {
        match msg {
            Msg::Request { ts } => {
                self.clock.observe(ts);
                let theirs = Stamp { ts, uid: cx.uid_of(from), node: from };
                match self.state {
                    State::Held => self.deferred.push(from),
                    State::Wanted(mine) if mine < theirs => self.deferred.push(from),
                    State::Wanted(mine) => {
                        let counted_on_it = self.authorized.contains(&from);
                        self.reply(from, out);
                        if counted_on_it {
                            out.send(from, Msg::Request { ts: mine.ts });
                        }
                    }
                    State::Released => self.reply(from, out),
                }
            }
            Msg::Reply { clock } => {
                self.clock.observe(clock);
                if matches!(self.state, State::Wanted(_)) {
                    self.authorized.insert(from);
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
                let ask: Vec<NodeId> =
                    (0..cx.n()).filter(|&j| j != self.me && !self.authorized.contains(&j)).collect();
                out.send_all(ask, &Msg::Request { ts: s.ts });
                self.enter_if_ready(cx, out);
            }
            Request::Release if self.state == State::Held => {
                self.state = State::Released;
                out.emit(Event::Exited);
                for j in std::mem::take(&mut self.deferred) {
                    self.reply(j, out);
                }
            }
            _ => {}
        }
    }

    /// Everything but the clock is volatile: the permissions held are forgotten (so the next
    /// request asks everybody), the deferred requesters wait forever.
    fn on_recover(&mut self, _cx: &Context, _out: &mut Out) {
        self.state = State::Released;
        self.authorized.clear();
        self.deferred.clear();
    }

    fn in_critical_section(&self) -> bool {
        self.state == State::Held
    }
}

impl Algorithm for RoucairolCarvalho {
    const NAME: &'static str = "roucairol-carvalho";
    const FAMILY: Family = Family::Mutex;
    const SUMMARY: &'static str =
        "Ricart-Agrawala keeping permissions until asked back; 0 … 2(N−1) messages per entry";
    type Config = ();

    /// Every message carries a tick of its sender's clock: at least 1, below
    /// [`stamp::CLOCK_LIMIT`].
    fn admits(&self, _from: NodeId, msg: &Msg) -> Result<(), &'static str> {
        match *msg {
            Msg::Request { ts } => stamp::admits_clock(ts),
            Msg::Reply { clock } => stamp::admits_clock(clock),
        }
    }

    fn configure(setup: &Setup) -> Result<(), ParamError> {
        stamp::check_size(setup)
    }

    fn new(me: NodeId, _config: &(), _setup: &Setup) -> Self {
        RoucairolCarvalho {
            me,
            clock: ScalarClock::default(),
            state: State::Released,
            authorized: BTreeSet::new(),
            deferred: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestSystem;
    use ringleader_core::harness::Harness;

    /// Position 1 (uid 2, rank 1) of three.
    fn node() -> Harness<RoucairolCarvalho> {
        TestSystem::new(3).node(1)
    }

    /// Entered with clock value `clock` at position 1 (rank 1).
    fn entered(clock: u64) -> Event {
        Event::Entered { fencing: (clock << 20) | 1 }
    }

    /// Enters once (clock 8 at entry: REPLYs stamped 5 and 2) and leaves, holding both
    /// permissions.
    fn after_one_entry() -> Harness<RoucairolCarvalho> {
        let mut p = node();
        p.request(Request::Acquire);
        p.deliver(0, Msg::Reply { clock: 5 });
        p.deliver(2, Msg::Reply { clock: 2 });
        p.request(Request::Release);
        p
    }

    /// Rule 1: a request goes only to the processes whose permission is not held; with every
    /// permission held, the process enters at once without a message.
    #[test]
    fn rule_1_ask_only_the_unauthorized_and_re_enter_for_free() {
        let mut p = node();
        assert_eq!(
            p.request(Request::Acquire).sent(),
            vec![(0, Msg::Request { ts: 1 }), (2, Msg::Request { ts: 1 })]
        );
        let mut q = after_one_entry();
        let step = q.request(Request::Acquire);
        assert!(step.sent().is_empty());
        assert_eq!(step.emitted(), vec![entered(10)]);
    }

    /// Rule 2: every REPLY adds a permission; the last one lets the process in, with the clock
    /// ticked at entry as its fencing token.
    #[test]
    fn rule_2_replies_collect_permissions_until_all_are_held() {
        let mut p = node();
        p.request(Request::Acquire);
        assert!(p.deliver(0, Msg::Reply { clock: 5 }).is_empty());
        assert_eq!(p.deliver(2, Msg::Reply { clock: 2 }).emitted(), vec![entered(8)]);
    }

    /// Rule 3: a REQUEST is deferred when held or outranked; otherwise answered, which gives
    /// the permission away — and a waiting process that had counted on it asks again.
    #[test]
    fn rule_3_answering_a_request_gives_the_permission_away() {
        let mut p = after_one_entry();
        assert_eq!(p.deliver(0, Msg::Request { ts: 3 }).sent(), vec![(0, Msg::Reply { clock: 10 })]);
        assert_eq!(
            p.request(Request::Acquire).sent(),
            vec![(0, Msg::Request { ts: 11 })],
            "only 0 was given back"
        );
        let step = p.deliver(2, Msg::Request { ts: 1 });
        assert_eq!(step.sent(), vec![(2, Msg::Reply { clock: 13 }), (2, Msg::Request { ts: 11 })]);
        assert!(p.deliver(0, Msg::Request { ts: 20 }).is_empty(), "(20, uid 1) is outranked: deferred");
    }

    /// Rule 4: leaving answers every deferred request.
    #[test]
    fn rule_4_leaving_answers_the_deferred_requests() {
        let mut p = node();
        p.request(Request::Acquire);
        p.deliver(0, Msg::Reply { clock: 5 });
        p.deliver(2, Msg::Reply { clock: 2 });
        assert!(p.deliver(0, Msg::Request { ts: 9 }).is_empty(), "held: deferred");
        let step = p.request(Request::Release);
        assert_eq!(step.emitted(), vec![Event::Exited]);
        assert_eq!(step.sent(), vec![(0, Msg::Reply { clock: 11 })]);
        assert_eq!(p.request(Request::Acquire).sent(), vec![(0, Msg::Request { ts: 12 })]);
    }

    /// Forged messages: a REQUEST or REPLY stamped 0 or beyond 2^62 is refused; a REPLY with
    /// an ordinary clock is admitted, even with no request outstanding.
    #[test]
    fn admits_only_timestamps_a_clock_could_reach() {
        let p = node();
        assert_eq!(
            p.process.admits(0, &Msg::Reply { clock: 0 }),
            Err("a timestamp of 0: every stamp follows a tick of the sender's clock")
        );
        assert_eq!(
            p.process.admits(2, &Msg::Request { ts: u64::MAX - 1 }),
            Err(
                "a timestamp beyond 2^62: no clock ticks that often, and it would overflow this node's clock"
            )
        );
        assert_eq!(p.process.admits(0, &Msg::Reply { clock: 5 }), Ok(()));
        assert_eq!(p.process.admits(2, &Msg::Request { ts: 3 }), Ok(()));
    }
}
