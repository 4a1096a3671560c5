//! # Ricart-Agrawala (1981)
//!
//! *Seed 003 "TODO" list ("melhora o algoritmo de Lamport"); seed 004; ALGORITHMS.md §2.5.*
//!
//! ## The idea
//! Lamport's algorithm without the RELEASE broadcast: a process that must wait for you simply
//! does not answer yet. Every request is stamped (Lamport timestamp, uid); of two competing
//! requests the smaller stamp wins, and the loser's REPLY is *deferred* until the winner leaves.
//!
//! ## The rules
//! - Request: state := WANTED; stamp the request (ts, id) with the Lamport clock; send
//!   REQUEST(ts, id) to the N−1 others.
//! - On REQUEST(ts_j, j): defer it if HELD, or if WANTED and (ts_i, i) < (ts_j, j); otherwise
//!   send REPLY at once.
//! - Enter after N−1 REPLYs (state := HELD).
//! - Exit: state := RELEASED; REPLY to every deferred request.
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
//! ## Assumptions and known flaws
//! Reliable channels; FIFO is *not* needed (a REPLY answers exactly one request). Safe,
//! deadlock- and starvation-free while nobody fails. It tolerates no crash at all: a crashed
//! process never replies, so every later requester waits forever — N points of failure instead
//! of the centralized algorithm's one. A recovered process has forgotten whom it deferred.

use ringleader_core::{Context, Event, Message, NodeId, Outbox, Process, Request};
use serde::{Deserialize, Serialize};

use super::stamp::{self, LamportClock, Stamp};
use crate::{Algorithm, Family, ParamError, Setup};

/// Messages of Ricart-Agrawala.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// Ask for permission, stamped with the request's Lamport timestamp.
    Request {
        /// The request's timestamp.
        ts: u64,
    },
    /// Grant permission.
    Reply,
}

impl Message for Msg {
    const KINDS: &'static [&'static str] = &["request", "reply"];
    fn kind_index(&self) -> usize {
        match self {
            Msg::Request { .. } => 0,
            Msg::Reply => 1,
        }
    }
}

/// Ricart-Agrawala sets no timers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Timer {}

/// Where a process is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum State {
    Released,
    Wanted(Stamp),
    Held(Stamp),
}

/// A process of Ricart-Agrawala.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RicartAgrawala {
    me: NodeId,
    clock: LamportClock,
    state: State,
    /// REPLYs still missing for the current request.
    awaiting: usize,
    /// Requests deferred until we leave.
    deferred: Vec<NodeId>,
}

type Out = Outbox<Msg, Timer>;

impl RicartAgrawala {
    fn enter_if_ready(&mut self, cx: &Context, out: &mut Out) {
        if let State::Wanted(s) = self.state
            && self.awaiting == 0
        {
            self.state = State::Held(s);
            out.emit(Event::Entered { fencing: s.fencing(cx.uids) });
        }
    }
}

impl Process for RicartAgrawala {
    type Msg = Msg;
    type Timer = Timer;

    fn on_start(&mut self, _cx: &Context, _out: &mut Out) {}

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
                    self.deferred.push(from);
                } else {
                    out.send(from, Msg::Reply);
                }
            }
            Msg::Reply => {
                if matches!(self.state, State::Wanted(_)) {
                    self.awaiting = self.awaiting.saturating_sub(1);
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
                self.awaiting = cx.uids.len() - 1;
                out.emit(Event::Requested { ts: s.ts });
                out.send_all((0..cx.n()).filter(|&j| j != self.me), &Msg::Request { ts: s.ts });
                self.enter_if_ready(cx, out);
            }
            Request::Release if matches!(self.state, State::Held(_)) => {
                self.state = State::Released;
                out.emit(Event::Exited);
                for j in std::mem::take(&mut self.deferred) {
                    out.send(j, Msg::Reply);
                }
            }
            _ => {}
        }
    }

    /// Everything is volatile except the Lamport clock; the deferred requesters are lost and
    /// will wait forever (the algorithm does not tolerate crashes).
    fn on_recover(&mut self, _cx: &Context, _out: &mut Out) {
        self.state = State::Released;
        self.awaiting = 0;
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

    fn configure(setup: &Setup) -> Result<(), ParamError> {
        stamp::check_size(setup)
    }

    fn new(me: NodeId, _config: &(), _setup: &Setup) -> Self {
        RicartAgrawala {
            me,
            clock: LamportClock::default(),
            state: State::Released,
            awaiting: 0,
            deferred: Vec::new(),
        }
    }
}
