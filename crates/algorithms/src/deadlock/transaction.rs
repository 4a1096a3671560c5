//! Timestamped transactions: what wait-die and wound-wait share.
//!
//! Each process runs one transaction at a time. A transaction gets a **timestamp** when it
//! starts — (local start time, uid), smaller is *older* — and keeps it when it is aborted and
//! restarted: that is what makes both schemes free of starvation, since a transaction that keeps
//! restarting eventually becomes the oldest in the system and is never sacrificed again.
//!
//! A transaction starts with the workload's `WaitFor{[]}` (it holds its own resource and needs
//! nothing yet; after an abort this is the restart, and emits `Restarted`). When it must wait
//! (request `WaitFor{holders}`), it sends REQUEST(ts) to each
//! holder; the *holder* compares the requester's timestamp with its own and applies the
//! scheme's [`Rule`]: let the requester wait (`Queued{node}`, the edge enters the wait-for
//! graph), make it die (DIE(ts): the requester aborts, it restarts later with the same
//! timestamp), or be wounded itself (the holder aborts and releases what it holds). Because
//! every wait that is allowed goes the same way in timestamp order, the wait-for graph can never
//! close a cycle: deadlock is *prevented* by breaking circular wait.
//!
//! Every REQUEST carries the requester's transaction timestamp, and the holder's `Queued`
//! names it: a REQUEST can arrive long after its transaction ended (a paused holder reads its
//! inbox late), and the holder cannot know. Judged against the requester's transaction of the
//! moment, that REQUEST's older timestamp would allow a wait the current, younger transaction
//! would not get — an edge against the timestamp order, and an apparent cycle. The requester
//! announces each wait with `Requested{ts}`, so observers take `Queued` as an edge only when it
//! names the transaction that waits now.
//!
//! The process is generic over the rule; `wait_die.rs` and `wound_wait.rs` hold the two rules
//! and their essays.

use std::fmt::Debug;
use std::hash::Hash;

use ringleader_core::{Context, Event, Message, NodeId, Outbox, Process, Request, Time, Uid};
use serde::{Deserialize, Serialize};

use crate::{Algorithm, Family, ParamError, Setup};

/// A transaction's timestamp: (local start time, uid). Smaller is older.
pub type Timestamp = (Time, Uid);

/// What the holder decides when a requester asks for what it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Decision {
    /// The requester waits for the holder.
    Wait,
    /// The requester aborts (and restarts later with the same timestamp).
    Die,
    /// The holder aborts, releasing what it holds; the requester waits for that release.
    Wound,
}

/// A prevention scheme: who waits, who aborts.
pub trait Rule: Clone + Copy + Debug + PartialEq + Eq + Hash + Send + Sync + 'static {
    /// The `--algo` name.
    const NAME: &'static str;
    /// One-line summary.
    const SUMMARY: &'static str;
    /// The holder's decision; `requester_older` compares timestamps, `holder_committing` says
    /// whether the holder already has everything it needs and is only finishing.
    fn decide(requester_older: bool, holder_committing: bool) -> Decision;
}

/// Messages of the timestamp schemes.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// REQUEST(ts): the sender's transaction `ts` waits for what the receiver holds.
    Request {
        /// The requester's timestamp.
        ts: Timestamp,
    },
    /// DIE(ts): the requester's transaction `ts` may not wait; it must abort.
    Die {
        /// The requester's timestamp, echoed.
        ts: Timestamp,
    },
}

impl Message for Msg {
    const KINDS: &'static [&'static str] = &["request", "die"];
    fn kind_index(&self) -> usize {
        match self {
            Msg::Request { .. } => 0,
            Msg::Die { .. } => 1,
        }
    }
}

/// Where the current transaction is, as the process sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
enum Stage {
    /// No transaction (before the first, after an abort).
    Idle,
    /// Started (`WaitFor{[]}`), holding its resource, nothing requested yet.
    Holding,
    /// Waiting for holders.
    Blocked,
    /// Every holder granted: finishing, about to commit.
    Committing,
}

/// A process running timestamped transactions under rule `R`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Transactions<R: Rule> {
    me: NodeId,
    /// The current transaction's timestamp (kept across restarts).
    ts: Timestamp,
    /// Holders the current transaction waits for (non-empty = blocked).
    waiting: Vec<NodeId>,
    stage: Stage,
    /// The last transaction aborted; its next `WaitFor` is a restart with the same timestamp.
    aborted: bool,
    rule: R,
}

type Out = Outbox<Msg, ()>;

impl<R: Rule> Transactions<R> {
    /// The current transaction's timestamp.
    pub fn timestamp(&self) -> Timestamp {
        self.ts
    }

    fn abort(&mut self, out: &mut Out) {
        self.waiting.clear();
        self.stage = Stage::Idle;
        self.aborted = true;
        out.emit(Event::Aborted);
    }
}

impl<R: Rule> Process for Transactions<R> {
    type Msg = Msg;
    type Timer = ();

    fn on_message(&mut self, _cx: &Context, from: NodeId, msg: Msg, out: &mut Out) {
        match msg {
            Msg::Request { ts } => match R::decide(ts < self.ts, self.stage == Stage::Committing) {
                Decision::Wait => out.emit(Event::Queued { node: from, transaction: Some(ts.0) }),
                Decision::Die => out.send(from, Msg::Die { ts }),
                Decision::Wound => {
                    if matches!(self.stage, Stage::Holding | Stage::Blocked) {
                        self.abort(out);
                    }
                    out.emit(Event::Queued { node: from, transaction: Some(ts.0) });
                }
            },
            Msg::Die { ts } => {
                if ts == self.ts && self.waiting.contains(&from) {
                    self.abort(out);
                }
            }
        }
    }

    fn on_timer(&mut self, _cx: &Context, _timer: (), _out: &mut Out) {}

    fn on_request(&mut self, cx: &Context, req: Request, out: &mut Out) {
        match req {
            Request::WaitFor { holders } if holders.is_empty() => {
                // A transaction begins; a restart keeps its timestamp.
                if self.aborted {
                    self.aborted = false;
                    out.emit(Event::Restarted);
                } else {
                    self.ts = (cx.now, cx.uid());
                }
                self.waiting.clear();
                self.stage = Stage::Holding;
            }
            Request::WaitFor { holders } if self.stage == Stage::Holding => {
                let mut holders: Vec<NodeId> = holders.into_iter().filter(|&h| h != self.me).collect();
                holders.sort_unstable();
                holders.dedup();
                if holders.is_empty() {
                    return;
                }
                self.waiting = holders;
                self.stage = Stage::Blocked;
                // Names the transaction that now waits: a holder's `Queued` carries the same
                // timestamp, so an observer can tell a wait of this transaction from a stale
                // REQUEST of an earlier one.
                out.emit(Event::Requested { ts: self.ts.0 });
                for &h in &self.waiting {
                    out.send(h, Msg::Request { ts: self.ts });
                }
            }
            Request::StopWaiting { holder } => {
                self.waiting.retain(|&h| h != holder);
                if self.waiting.is_empty() && self.stage == Stage::Blocked {
                    self.stage = Stage::Committing;
                }
            }
            _ => {}
        }
    }

    /// A recovered process forgets its waits; its timestamp is on stable storage, and the
    /// transaction restarts with it.
    fn on_recover(&mut self, _cx: &Context, _out: &mut Out) {
        if matches!(self.stage, Stage::Holding | Stage::Blocked) {
            self.aborted = true;
        }
        self.waiting.clear();
        self.stage = Stage::Idle;
    }
}

impl<R: Rule + Default + serde::Serialize + serde::de::DeserializeOwned> Algorithm for Transactions<R> {
    const NAME: &'static str = R::NAME;
    const FAMILY: Family = Family::Deadlock;
    const SUMMARY: &'static str = R::SUMMARY;
    const PREVENTION: bool = true;
    type Config = ();

    fn configure(_setup: &Setup) -> Result<(), ParamError> {
        Ok(())
    }

    fn new(me: NodeId, _config: &(), setup: &Setup) -> Self {
        Transactions {
            me,
            ts: (0, setup.uids[me as usize]),
            waiting: Vec::new(),
            stage: Stage::Idle,
            aborted: false,
            rule: R::default(),
        }
    }
}
