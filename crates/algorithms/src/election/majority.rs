//! # Majority election with terms (the classic fix for split brain; Raft's election)
//!
//! *The textbook remedy for split brain — elect a leader only with a majority of votes — in the
//! shape of Raft's leader election without the log: Ongaro and Ousterhout, "In search of an
//! understandable consensus algorithm", USENIX ATC 2014.*
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Role {
    /// Follows a leader, or waits for one.
    Follower,
    /// Asks for votes.
    Candidate,
    /// Leads its term.
    Leader,
}

/// One process of the majority election.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
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
        "terms, one vote per term, a majority to lead, randomized timeouts (the split-brain fix; Raft 2014)";
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestSystem;
    use ringleader_core::Time;
    use ringleader_core::harness::Harness;

    /// The default heartbeat period under a 1 ms delay bound: 5 ms.
    const PERIOD: Time = 5_000_000;
    /// The default election timeout E = 3·heartbeat.
    const E: Time = 15_000_000;

    /// `n` processes with uids 1..=n.
    fn node(n: u32, me: NodeId) -> Harness<Majority> {
        TestSystem::new(n).node(me)
    }

    /// Rule 1: silence for the randomized timeout in [E, 2E) makes a follower a candidate of
    /// the next term that votes for itself and asks everyone else.
    #[test]
    fn rule_1_a_silent_timeout_makes_a_candidate_of_the_next_term() {
        let mut p = node(3, 0);
        p.random = 4_000_000;
        assert_eq!(p.start().set(), vec![(Timer::Watch(WatchTimer::Silence), E + 4_000_000)]);
        p.at(E + 4_000_000);
        let step = p.fire(Timer::Watch(WatchTimer::Silence));
        assert_eq!(step.emitted(), vec![Event::ElectionStarted]);
        assert_eq!(step.sent(), vec![(1, Msg::RequestVote { term: 1 }), (2, Msg::RequestVote { term: 1 })]);
        assert_eq!(p.process.term(), 1);
        assert_eq!(p.process.role(), Role::Candidate);
        assert_eq!(p.process.voted_for, Some(0));
    }

    /// Rule 2: one vote per term: the first candidate of a term gets it, another does not, a
    /// stale term is refused with the voter's term, and a larger term is adopted.
    #[test]
    fn rule_2_one_vote_per_term() {
        let mut p = node(3, 1);
        let step = p.deliver(0, Msg::RequestVote { term: 1 });
        assert_eq!(step.sent(), vec![(0, Msg::Vote { term: 1, granted: true })]);
        assert_eq!(step.set(), vec![(Timer::Watch(WatchTimer::Silence), E)], "granting resets the timeout");
        assert_eq!(
            p.deliver(2, Msg::RequestVote { term: 1 }).sent(),
            vec![(2, Msg::Vote { term: 1, granted: false })]
        );
        assert_eq!(
            p.deliver(0, Msg::RequestVote { term: 1 }).sent(),
            vec![(0, Msg::Vote { term: 1, granted: true })]
        );
        let step = p.deliver(2, Msg::RequestVote { term: 2 });
        assert_eq!(step.sent(), vec![(2, Msg::Vote { term: 2, granted: true })]);
        assert_eq!(p.process.term(), 2);
        assert_eq!(
            p.deliver(0, Msg::RequestVote { term: 1 }).sent(),
            vec![(0, Msg::Vote { term: 2, granted: false })]
        );
    }

    /// Rule 3: a strict majority of distinct voters (itself included) makes the candidate
    /// leader, which sends HEARTBEAT at once and arms its period.
    #[test]
    fn rule_3_a_strict_majority_of_votes_makes_the_leader() {
        let mut p = node(5, 0);
        p.request(Request::StartElection);
        assert!(p.deliver(1, Msg::Vote { term: 1, granted: true }).is_empty());
        assert!(p.deliver(1, Msg::Vote { term: 1, granted: true }).is_empty(), "a duplicate counts once");
        assert!(p.deliver(2, Msg::Vote { term: 1, granted: false }).is_empty());
        let step = p.deliver(3, Msg::Vote { term: 1, granted: true });
        assert_eq!(step.emitted(), vec![Event::Leader { leader: 1, term: 1 }]);
        let beat = Msg::Heartbeat { term: 1 };
        assert_eq!(step.sent(), vec![(1, beat.clone()), (2, beat.clone()), (3, beat.clone()), (4, beat)]);
        assert_eq!(step.set(), vec![(Timer::Watch(WatchTimer::Beat), PERIOD)]);
        assert_eq!(p.process.role(), Role::Leader);
    }

    /// Rule 4: a heartbeat of the current or a larger term makes the receiver a follower of its
    /// sender; an older one is ignored; a larger term makes a leader step down.
    #[test]
    fn rule_4_heartbeats_make_followers_and_larger_terms_depose_leaders() {
        let mut p = node(3, 1);
        let step = p.deliver(0, Msg::Heartbeat { term: 2 });
        assert_eq!(step.emitted(), vec![Event::Leader { leader: 1, term: 2 }]);
        assert_eq!(p.process.term(), 2);
        assert!(p.deliver(2, Msg::Heartbeat { term: 1 }).is_empty(), "an older term is ignored");

        let mut leader = node(3, 0);
        leader.request(Request::StartElection);
        leader.deliver(1, Msg::Vote { term: 1, granted: true });
        assert_eq!(leader.process.role(), Role::Leader);
        let step = leader.deliver(2, Msg::RequestVote { term: 3 });
        assert_eq!(step.emitted(), vec![Event::LeaderLost]);
        assert_eq!(step.sent(), vec![(2, Msg::Vote { term: 3, granted: true })]);
        assert_eq!(leader.process.role(), Role::Follower);
    }

    /// Term and vote are stable: a recovered process keeps them and cannot vote twice.
    #[test]
    fn term_and_vote_survive_a_crash() {
        let mut p = node(3, 1);
        p.deliver(0, Msg::RequestVote { term: 4 });
        p.crash();
        p.recover();
        assert_eq!(p.process.term(), 4);
        assert_eq!(
            p.deliver(2, Msg::RequestVote { term: 4 }).sent(),
            vec![(2, Msg::Vote { term: 4, granted: false })]
        );
    }
}
