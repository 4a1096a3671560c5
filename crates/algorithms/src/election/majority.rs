//! # Majority election with terms (the seeds' fix for split brain; Raft's election)
//!
//! *Seed 003, "Questões importantes → Split Brain": "Use primeiro algoritmo e só eleja líder
//! após maioria de votos." The shape below is the leader election of Raft (Ongaro and
//! Ousterhout, 2014) without the log.*
//!
//! ## The idea
//! Bully and ring elect whoever they can reach, so two sides of a partition elect two leaders.
//! Demand instead a *majority* of votes, and let each process give at most one vote per
//! *term* (an epoch number): two majorities always share a process, that process voted once,
//! so no term can have two leaders — whatever the network does. Terms only grow; a process that
//! sees a larger term than its own adopts it and steps down.
//!
//! ## The rules
//! State: `term` and `voted_for` (on stable storage: they survive a crash), the role
//! (follower, candidate or leader) and the leader it believes in.
//! 1. A follower (or candidate) that hears no heartbeat for its *election timeout* — randomized
//!    in [E, 2E) so that candidates rarely collide — becomes candidate: term += 1, votes for
//!    itself, sends REQUEST_VOTE(term) to all.
//! 2. On REQUEST_VOTE(t) from j: if t > term, adopt t (and forget the vote and the leader). Grant
//!    VOTE(t, yes) if t = term and no vote was given this term (or it was given to j); else
//!    VOTE(term, no). Granting resets the election timeout.
//! 3. A candidate with votes from a strict majority (itself included) becomes leader of its term
//!    and sends HEARTBEAT(term) to all at once and then every `heartbeat` period.
//! 4. On HEARTBEAT(t) with t ≥ term: adopt t, become follower of the sender, reset the timeout.
//!    A heartbeat of an older term is ignored. Any message with a larger term makes a leader or
//!    candidate step down.
//!
//! ```text
//!   follower ──timeout──▶ candidate ──majority of VOTEs──▶ leader
//!      ▲  ▲                  │ │ timeout (split vote): term += 1, again     │
//!      │  └──HEARTBEAT(t ≥ term)──┘                                          │
//!      └──────────────────── any message with a larger term ─────────────────┘
//! ```
//!
//! ## Parameters
//! `heartbeat` (default 5·Ttrans, at least 500 µs; it cannot be 0 here: the leader's heartbeats
//! are what keeps followers from starting elections) and `election_timeout` E (default
//! 3·heartbeat; the timeout is drawn in [E, 2E) with `cx.random`). The election timeout is the
//! deadline of the follower's failure detector on its leader ([`super::watch`]): with
//! `detector = phi-accrual` E is instead φ-accrual's own deadline μ + z·σ over the leader's
//! heartbeat arrivals (knobs `phi`, `window`, `min_std`), still drawn in [E, 2E).
//!
//! ## Costs
//! One uncontested election among N: N − 1 REQUEST_VOTE and N − 1 VOTE; split votes repeat it
//! with a larger term. Heartbeats, N − 1 per period, are detection messages counted apart.
//!
//! ## Guarantees and assumptions
//! *Uniqueness* — at most one leader per term — holds in every run: crashes, recoveries,
//! pauses, partitions, loss and duplication included (`term` and `voted_for` are stable; a
//! duplicated VOTE is counted once because votes are a set of voters). An old leader cut off in
//! a minority may still believe it leads *its* term while the majority elects a leader for a
//! larger one — two processes that believe they lead, but of different terms; a client that
//! checks the term (a fencing token) tells them apart. *Liveness* needs a connected majority and
//! delays well below E: the minority side of a partition never elects (its candidates keep
//! raising their terms and disturb the majority when the partition heals — Raft's known
//! disruption, which pre-vote removes). Validity: any live process may lead.
//!
//! Scenarios: `scenarios/majority-partition.toml` (the partition that splits the bully's and
//! the ring's brain, here without split brain) and `scenarios/majority-paused-leader.toml` (the
//! bully's slow coordinator, here harmless: the old leader's term is over).

use std::collections::BTreeSet;

use ringleader_core::{Context, Event, Message, NodeId, Outbox, Process, Request, Uid};
use serde::{Deserialize, Serialize};

use super::watch::{Watch, WatchTimer};
use crate::{Algorithm, Family, LeaderRule, ParamError, Setup};

/// Majority election messages.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// REQUEST_VOTE(term): a candidate asks for this term's vote.
    RequestVote {
        /// The candidate's term.
        term: u64,
    },
    /// VOTE(term, granted): the answer.
    Vote {
        /// The voter's term.
        term: u64,
        /// Whether the vote was given.
        granted: bool,
    },
    /// HEARTBEAT(term): the leader of `term` is alive (failure detection).
    Heartbeat {
        /// The leader's term.
        term: u64,
    },
}

impl Message for Msg {
    const KINDS: &'static [&'static str] = &["request_vote", "vote", "heartbeat"];
    fn kind_index(&self) -> usize {
        match self {
            Msg::RequestVote { .. } => 0,
            Msg::Vote { .. } => 1,
            Msg::Heartbeat { .. } => 2,
        }
    }
    fn is_detection(&self) -> bool {
        matches!(self, Msg::Heartbeat { .. })
    }
}

/// Majority election timers: only the heartbeat detector's (the election timeout is its
/// randomized silence deadline).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Timer {
    /// The heartbeat detector.
    Watch(WatchTimer),
}

impl From<WatchTimer> for Timer {
    fn from(t: WatchTimer) -> Timer {
        Timer::Watch(t)
    }
}

/// A process's role in its current term.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// Follows a leader, or waits for one.
    Follower,
    /// Asks for votes.
    Candidate,
    /// Leads its term.
    Leader,
}

/// One process of the majority election.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Majority {
    uid: Uid,
    /// Stable: the current term.
    term: u64,
    /// Stable: whom this process voted for in `term`.
    voted_for: Option<NodeId>,
    role: Role,
    leader: Option<Uid>,
    votes: BTreeSet<NodeId>,
    watch: Watch,
}

type Out = Outbox<Msg, Timer>;

impl Majority {
    /// The current term.
    pub fn term(&self) -> u64 {
        self.term
    }

    /// The current role.
    pub fn role(&self) -> Role {
        self.role
    }

    fn others<'a>(cx: &'a Context) -> impl Iterator<Item = NodeId> + 'a {
        (0..cx.n()).filter(move |&p| p != cx.me)
    }

    fn forget_leader(&mut self, out: &mut Out) {
        if self.leader.take().is_some() {
            out.emit(Event::LeaderLost);
        }
    }

    /// A larger term was seen: adopt it and step down.
    fn observe_term(&mut self, cx: &Context, term: u64, out: &mut Out) {
        if term > self.term {
            self.term = term;
            self.voted_for = None;
            self.votes.clear();
            let was_leader = self.role == Role::Leader;
            self.role = Role::Follower;
            self.forget_leader(out);
            if was_leader {
                self.watch.follow(cx, out);
            }
        }
    }

    /// Rule 1.
    fn stand(&mut self, cx: &Context, out: &mut Out) {
        if self.role == Role::Leader {
            return;
        }
        self.forget_leader(out);
        self.term += 1;
        self.role = Role::Candidate;
        self.voted_for = Some(cx.me);
        self.votes = BTreeSet::from([cx.me]);
        out.emit(Event::ElectionStarted);
        self.watch.follow(cx, out);
        out.send_all(Self::others(cx), &Msg::RequestVote { term: self.term });
        self.count_votes(cx, out);
    }

    /// Rule 3.
    fn count_votes(&mut self, cx: &Context, out: &mut Out) {
        if self.role == Role::Candidate && 2 * self.votes.len() > cx.n() as usize {
            self.role = Role::Leader;
            self.leader = Some(self.uid);
            out.emit(Event::Leader { leader: self.uid, term: self.term });
            out.send_all(Self::others(cx), &Msg::Heartbeat { term: self.term });
            self.watch.lead(out);
        }
    }
}

impl Process for Majority {
    type Msg = Msg;
    type Timer = Timer;

    fn on_start(&mut self, cx: &Context, out: &mut Out) {
        self.watch.follow(cx, out);
    }

    fn on_message(&mut self, cx: &Context, from: NodeId, msg: Msg, out: &mut Out) {
        match msg {
            Msg::RequestVote { term } => {
                self.observe_term(cx, term, out);
                let granted = term == self.term && self.voted_for.is_none_or(|v| v == from);
                if granted {
                    self.voted_for = Some(from);
                    self.watch.follow(cx, out);
                }
                out.send(from, Msg::Vote { term: self.term, granted });
            }
            Msg::Vote { term, granted } => {
                self.observe_term(cx, term, out);
                if granted && term == self.term && self.role == Role::Candidate {
                    self.votes.insert(from);
                    self.count_votes(cx, out);
                }
            }
            Msg::Heartbeat { term } => {
                if term < self.term {
                    return;
                }
                self.observe_term(cx, term, out);
                self.role = Role::Follower;
                self.votes.clear();
                let leader = cx.uid_of(from);
                if self.leader != Some(leader) {
                    self.leader = Some(leader);
                    out.emit(Event::Leader { leader, term });
                    self.watch.follow(cx, out);
                } else {
                    self.watch.heard(cx, out);
                }
            }
        }
    }

    fn on_timer(&mut self, cx: &Context, timer: Timer, out: &mut Out) {
        match timer {
            Timer::Watch(WatchTimer::Beat) => {
                if self.role == Role::Leader {
                    self.watch.beat(Self::others(cx), &Msg::Heartbeat { term: self.term }, out);
                }
            }
            Timer::Watch(WatchTimer::Silence) => {
                if self.watch.suspects(cx) {
                    self.stand(cx, out);
                }
            }
        }
    }

    fn on_request(&mut self, cx: &Context, req: Request, out: &mut Out) {
        if req == Request::StartElection {
            self.stand(cx, out);
        }
    }

    /// `term` and `voted_for` are on stable storage and survive; the role, the leader and the
    /// votes collected are volatile. The process waits as a follower.
    fn on_recover(&mut self, cx: &Context, out: &mut Out) {
        self.role = Role::Follower;
        self.leader = None;
        self.votes.clear();
        self.watch.follow(cx, out);
    }

    fn leader(&self) -> Option<Uid> {
        self.leader
    }
}

impl Algorithm for Majority {
    const NAME: &'static str = "majority";
    const FAMILY: Family = Family::Election;
    const SUMMARY: &'static str =
        "terms, one vote per term, a majority to lead, randomized timeouts (seed 003's split-brain fix)";
    const LEADER_RULE: LeaderRule = LeaderRule::Any;
    type Config = Watch;

    fn configure(setup: &Setup) -> Result<Watch, ParamError> {
        let watch = Watch::configure(setup, "heartbeat", "election_timeout", |p| 3 * p, true)?;
        if !watch.enabled() {
            return Err(ParamError::OutOfRange {
                key: if setup.params.values().contains_key("detector") { "detector" } else { "heartbeat" }
                    .into(),
                reason: "majority needs heartbeats and a detector: give a positive period (default \
                         5·max_delay) and detector=heartbeat or phi-accrual"
                    .into(),
            });
        }
        Ok(watch)
    }

    fn new(me: NodeId, config: &Watch, setup: &Setup) -> Self {
        Majority {
            uid: setup.uids[me as usize],
            term: 0,
            voted_for: None,
            role: Role::Follower,
            leader: None,
            votes: BTreeSet::new(),
            watch: config.clone(),
        }
    }
}
