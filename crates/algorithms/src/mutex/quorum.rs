//! # Quorum voting with forgetful coordinators
//!
//! Quorum-based voting as in Tanenbaum & van Steen, *Distributed Systems* (mutual exclusion: a
//! decentralized algorithm, with its analysis of coordinators that reset), after Lin, Lian,
//! Chen and Zhang, "A practical distributed mutual exclusion protocol in dynamic peer-to-peer
//! systems" (IJAHUC 2004); majority voting itself is Thomas, "A majority consensus approach to
//! concurrency control for multiple copy databases" (ACM TODS 1979).
//!
//! ## The idea
//! Replace the single coordinator by `n` of them, each running the centralized protocol, and
//! let a participant enter once a *quorum* of `m > n/2` of them granted it: two quorums always
//! intersect, so two participants cannot both hold a quorum — as long as the coordinators
//! remember. The twist: grants live in memory only, and a coordinator that crashes and
//! recovers *forgets* the grants it gave. Mutual exclusion becomes probabilistic.
//!
//! ## The rules
//! Coordinators are the positions `0 .. n` (`coordinators` = n, default every node); the quorum
//! is `quorum` = m (default ⌊n/2⌋ + 1). Every node is a participant.
//! 1. Coordinator (the centralized protocol): queue every REQUEST; whenever free and the queue
//!    is not empty, GRANT the head and mark busy; on RELEASE by the holder mark free. A RELEASE
//!    also withdraws the sender's queued requests, and REQUESTs of an attempt already released
//!    are ignored (links need not be FIFO).
//! 2. Participant: send REQUEST(attempt) to all n coordinators; on the m-th GRANT of this
//!    attempt, enter; on leaving, send RELEASE to all n. Its own vote, when it is a coordinator,
//!    is a local step.
//! 3. **Liveness fix** (the course notes leave it open): queueing coordinators can deadlock — two
//!    participants each holding some grants and queued behind each other elsewhere, neither
//!    reaching m. A participant that has not gathered m grants within `patience` (default
//!    100 ms) gives every vote back (RELEASE to all n, which also withdraws its queued requests),
//!    waits a random back-off uniform in [0, `backoff`) (default 10 ms), and tries again with a
//!    new attempt number. Grants of an old attempt are ignored (the RELEASE frees them).
//! 4. **Forgetting.** A coordinator keeps its grants and its queue in memory only: one that
//!    crashes and recovers is free with an empty queue (its grant counter, on stable storage,
//!    survives).
//!
//! ```text
//!   coordinator:  free ──queue non-empty / GRANT(head)──▶ busy(holder) ──RELEASE(holder)──▶ free
//!                 any ──crash+recover──▶ free, queue empty   (grants forgotten)
//!   participant:  idle ──Acquire / REQUEST×n──▶ gathering ──m-th GRANT──▶ holding ──Release / RELEASE×n──▶ idle
//!                 gathering ──patience / RELEASE×n──▶ backing-off ──backoff / REQUEST×n──▶ gathering
//! ```
//!
//! ## Costs
//! With queueing coordinators every coordinator eventually grants, so an entry
//! without conflict costs 3n messages (REQUEST, GRANT, RELEASE with every coordinator), or
//! 3(n − 1) when the participant is itself a coordinator (its own vote is local). Each failed
//! attempt adds 2n (REQUEST and RELEASE to all) plus the grants it received. Synchronization
//! delay: two one-way delays (RELEASE, then GRANT from the intersection).
//!
//! ## Fencing tokens
//! Each coordinator's grant counter is on stable storage (it survives a crash, the grants do
//! not); a RELEASE carries the holder's fencing token and raises every coordinator's counter to
//! it. An entry's fencing token is the largest counter among its grants; since the next quorum
//! intersects this one in a coordinator that saw the RELEASE, tokens increase.
//!
//! ## Forged messages
//! A real node refuses (`Algorithm::admits`) a GRANT from a node that is not a coordinator,
//! for attempt 0 or an attempt above its own (the attempt number is on stable storage: it never
//! made that one), or with fencing token 0 (a coordinator counts from 1); and a REQUEST or
//! RELEASE sent to a node that is not a coordinator, or for attempt 0. It admits a GRANT for an
//! attempt it gave up: that one is honest, and ignored.
//!
//! ## Assumptions and known flaws
//! Safe while coordinators do not forget. If every coordinator of the intersection of two
//! quorums crashes and recovers while the first participant holds the section, the second
//! gathers a quorum too: `scenarios/quorum-forgetful-coordinator.toml` replays an n = 7,
//! m = 4 story and the checker finds the safety violation. The probability of that is what
//! `ringleader quorum-risk` computes (docs/MUTEX.md). A coordinator that crashes for good is
//! tolerated as long as m coordinators stay up; a participant that crashes while holding keeps
//! its grants for ever (as in the centralized algorithm). Waiting is not bounded: aborts can
//! repeat. No order is promised (a participant may overtake others by withdrawing and
//! re-asking), so coordinators do not report `Queued`/`Granted` and the checker does not judge
//! FIFO order here.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use ringleader_core::time::MILLISECOND;
use ringleader_core::{Context, Event, Message, NodeId, Outbox, Process, Request, Time};
use serde::{Deserialize, Serialize};

use crate::{Algorithm, Family, ParamError, Setup};

/// Messages of quorum voting.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// A participant asks a coordinator for its vote.
    Request {
        /// The participant's attempt number.
        attempt: u64,
    },
    /// A coordinator gives its vote.
    Grant {
        /// The attempt granted.
        attempt: u64,
        /// The coordinator's grant counter.
        fencing: u64,
    },
    /// A participant gives back its vote (after the section, or when it gives up an attempt).
    Release {
        /// Every attempt up to this one is withdrawn.
        attempt: u64,
        /// The fencing token of the entry that ended (0 when the attempt failed).
        fencing: u64,
    },
}

impl Message for Msg {
    const KINDS: &'static [&'static str] = &["request", "grant", "release"];
    fn kind_index(&self) -> usize {
        match self {
            Msg::Request { .. } => 0,
            Msg::Grant { .. } => 1,
            Msg::Release { .. } => 2,
        }
    }
}

/// Timers of quorum voting.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
pub enum Timer {
    /// Attempt `attempt` did not gather a quorum in time.
    Patience {
        /// The attempt.
        attempt: u64,
    },
    /// The back-off is over: try again.
    Retry,
}

/// Validated parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Config {
    /// Number of coordinators n (positions 0..n).
    pub coordinators: u32,
    /// Votes needed, m > n/2.
    pub quorum: u32,
    /// How long to wait for a quorum before giving the votes back.
    pub patience: Time,
    /// Upper bound of the random back-off.
    pub backoff: Time,
}

/// A coordinator's memory: volatile, except the grant counter.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize)]
struct Votes {
    holder: Option<(NodeId, u64)>,
    queue: VecDeque<(NodeId, u64)>,
    released: BTreeMap<NodeId, u64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
enum Phase {
    Idle,
    Gathering,
    BackingOff,
    Holding,
}

/// A node of quorum voting: a participant, and a coordinator when its position is below n.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Quorum {
    me: NodeId,
    config: Config,
    phase: Phase,
    /// Attempt number — on stable storage, so that a recovered participant never reuses one.
    attempt: u64,
    grants: BTreeSet<NodeId>,
    fencing: u64,
    /// Present at coordinators.
    votes: Option<Votes>,
    /// Grant counter — on stable storage.
    counter: u64,
}

type Out = Outbox<Msg, Timer>;

impl Quorum {
    fn coordinators(&self) -> impl Iterator<Item = NodeId> + use<> {
        0..self.config.coordinators
    }

    /// Sends `msg` to every coordinator; to ourselves it is a local step.
    fn send_to_coordinators(&mut self, cx: &Context, msg: Msg, out: &mut Out) {
        for c in self.coordinators() {
            if c == self.me {
                self.coordinator_receives(cx, self.me, msg.clone(), out);
            } else {
                out.send(c, msg.clone());
            }
        }
    }

    fn coordinator_receives(&mut self, cx: &Context, from: NodeId, msg: Msg, out: &mut Out) {
        let Some(v) = self.votes.as_mut() else { return };
        match msg {
            Msg::Request { attempt } => {
                if v.released.get(&from).is_some_and(|&r| attempt <= r) {
                    return; // overtaken by its own RELEASE
                }
                v.queue.push_back((from, attempt));
            }
            Msg::Release { attempt, fencing } => {
                self.counter = self.counter.max(fencing);
                let r = v.released.entry(from).or_insert(0);
                *r = (*r).max(attempt);
                v.queue.retain(|&(p, a)| !(p == from && a <= attempt));
                if v.holder.is_some_and(|(p, a)| p == from && a <= attempt) {
                    v.holder = None;
                }
            }
            Msg::Grant { .. } => return,
        }
        self.grant_if_free(cx, out);
    }

    fn grant_if_free(&mut self, cx: &Context, out: &mut Out) {
        let Some(v) = self.votes.as_mut() else { return };
        if v.holder.is_some() {
            return;
        }
        let Some((next, attempt)) = v.queue.pop_front() else { return };
        v.holder = Some((next, attempt));
        self.counter += 1;
        let fencing = self.counter;
        if next == self.me {
            self.participant_receives_grant(cx, self.me, attempt, fencing, out);
        } else {
            out.send(next, Msg::Grant { attempt, fencing });
        }
    }

    fn participant_receives_grant(
        &mut self,
        _cx: &Context,
        from: NodeId,
        attempt: u64,
        fencing: u64,
        out: &mut Out,
    ) {
        if self.phase != Phase::Gathering || attempt != self.attempt {
            return; // a vote for an attempt already given up: its RELEASE frees it
        }
        self.grants.insert(from);
        self.fencing = self.fencing.max(fencing);
        if self.grants.len() as u32 >= self.config.quorum {
            self.phase = Phase::Holding;
            out.cancel_timer(Timer::Patience { attempt });
            out.emit(Event::Entered { fencing: self.fencing });
        }
    }

    fn start_attempt(&mut self, cx: &Context, out: &mut Out) {
        self.attempt += 1;
        self.phase = Phase::Gathering;
        self.grants.clear();
        self.fencing = 0;
        let attempt = self.attempt;
        out.set_timer(Timer::Patience { attempt }, self.config.patience);
        self.send_to_coordinators(cx, Msg::Request { attempt }, out);
    }
}

impl Process for Quorum {
    type Msg = Msg;
    type Timer = Timer;

    fn on_message(&mut self, cx: &Context, from: NodeId, msg: Msg, out: &mut Out) {
        match msg {
            Msg::Grant { attempt, fencing } => {
                self.participant_receives_grant(cx, from, attempt, fencing, out)
            }
            other => self.coordinator_receives(cx, from, other, out),
        }
    }

    fn on_timer(&mut self, cx: &Context, timer: Timer, out: &mut Out) {
        match timer {
            Timer::Patience { attempt } if self.phase == Phase::Gathering && attempt == self.attempt => {
                // No quorum in time: give every vote back, back off, try again.
                self.phase = Phase::BackingOff;
                self.send_to_coordinators(cx, Msg::Release { attempt, fencing: 0 }, out);
                let wait = if self.config.backoff == 0 { 0 } else { cx.random % self.config.backoff };
                out.set_timer(Timer::Retry, wait);
            }
            Timer::Retry if self.phase == Phase::BackingOff => self.start_attempt(cx, out),
            _ => {}
        }
    }

    fn on_request(&mut self, cx: &Context, req: Request, out: &mut Out) {
        match req {
            Request::Acquire if self.phase == Phase::Idle => self.start_attempt(cx, out),
            Request::Release if self.phase == Phase::Holding => {
                self.phase = Phase::Idle;
                out.emit(Event::Exited);
                let msg = Msg::Release { attempt: self.attempt, fencing: self.fencing };
                self.send_to_coordinators(cx, msg, out);
            }
            _ => {}
        }
    }

    /// Rule 4, the forgetful coordinator: a recovered coordinator has forgotten its holder, its
    /// queue and what was released (only its grant counter survives); a recovered participant
    /// has forgotten its request (only its attempt number survives).
    fn on_recover(&mut self, _cx: &Context, _out: &mut Out) {
        self.phase = Phase::Idle;
        self.grants.clear();
        if self.votes.is_some() {
            self.votes = Some(Votes::default());
        }
    }

    fn in_critical_section(&self) -> bool {
        self.phase == Phase::Holding
    }
}

impl Algorithm for Quorum {
    const NAME: &'static str = "quorum";
    const FAMILY: Family = Family::Mutex;
    const SUMMARY: &'static str = "n queueing coordinators, enter with m > n/2 GRANTs; recovered coordinators forget (Tanenbaum & van Steen)";
    type Config = Config;

    /// Only coordinators grant, and only attempts this node made, with a counter of at least 1;
    /// only coordinators are asked, for attempts numbered from 1.
    fn admits(&self, from: NodeId, msg: &Msg) -> Result<(), &'static str> {
        match *msg {
            Msg::Grant { attempt, fencing } => {
                if from >= self.config.coordinators {
                    Err("a GRANT from a node that is not a coordinator")
                } else if attempt == 0 || attempt > self.attempt {
                    Err("a GRANT for an attempt this node never made")
                } else if fencing == 0 {
                    Err("a GRANT with fencing token 0: a coordinator's counter starts at 1")
                } else {
                    Ok(())
                }
            }
            Msg::Request { attempt } | Msg::Release { attempt, .. } => {
                if self.votes.is_none() {
                    Err("a REQUEST or RELEASE sent to a node that is not a coordinator")
                } else if attempt == 0 {
                    Err("a REQUEST or RELEASE of attempt 0: attempts are numbered from 1")
                } else {
                    Ok(())
                }
            }
        }
    }

    fn configure(setup: &Setup) -> Result<Config, ParamError> {
        let nodes = setup.uids.len() as u32;
        let coordinators: u32 = setup.params.get("coordinators", nodes)?;
        if coordinators == 0 || coordinators > nodes {
            return Err(ParamError::OutOfRange {
                key: "coordinators".into(),
                reason: format!("{coordinators} coordinators: must be between 1 and the {nodes} nodes"),
            });
        }
        let quorum: u32 = setup.params.get("quorum", coordinators / 2 + 1)?;
        if 2 * quorum <= coordinators || quorum > coordinators {
            return Err(ParamError::OutOfRange {
                key: "quorum".into(),
                reason: format!(
                    "quorum {quorum} with {coordinators} coordinators: need n/2 < m <= n, i.e. {}..={coordinators}",
                    coordinators / 2 + 1
                ),
            });
        }
        let patience = setup.params.duration("patience", 100 * MILLISECOND)?;
        if patience == 0 {
            return Err(ParamError::OutOfRange { key: "patience".into(), reason: "must be positive".into() });
        }
        let backoff = setup.params.duration("backoff", 10 * MILLISECOND)?;
        Ok(Config { coordinators, quorum, patience, backoff })
    }

    fn new(me: NodeId, config: &Config, _setup: &Setup) -> Self {
        Quorum {
            me,
            config: *config,
            phase: Phase::Idle,
            attempt: 0,
            grants: BTreeSet::new(),
            fencing: 0,
            votes: (me < config.coordinators).then(Votes::default),
            counter: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestSystem;
    use ringleader_core::harness::Harness;

    /// Position `me` of five nodes, all coordinators, quorum 3.
    fn node(me: NodeId) -> Harness<Quorum> {
        TestSystem::new(5).node(me)
    }

    /// Rule 1: a coordinator grants the head when free, queues otherwise, frees on the
    /// holder's RELEASE (raising its counter to the RELEASE's fencing token) and ignores a
    /// REQUEST its sender already released.
    #[test]
    fn rule_1_a_coordinator_grants_one_at_a_time_in_queue_order() {
        let mut c = node(0);
        assert_eq!(
            c.deliver(1, Msg::Request { attempt: 1 }).sent(),
            vec![(1, Msg::Grant { attempt: 1, fencing: 1 })]
        );
        assert!(c.deliver(2, Msg::Request { attempt: 1 }).is_empty(), "busy: queued");
        let step = c.deliver(1, Msg::Release { attempt: 1, fencing: 7 });
        assert_eq!(step.sent(), vec![(2, Msg::Grant { attempt: 1, fencing: 8 })]);
        c.deliver(3, Msg::Release { attempt: 4, fencing: 0 });
        c.deliver(2, Msg::Release { attempt: 1, fencing: 8 });
        assert!(c.deliver(3, Msg::Request { attempt: 4 }).is_empty(), "overtaken by its own RELEASE");
        assert_eq!(
            c.deliver(3, Msg::Request { attempt: 5 }).sent(),
            vec![(3, Msg::Grant { attempt: 5, fencing: 9 })]
        );
    }

    /// Rule 2: a participant asks every coordinator (its own vote is local), enters on the m-th
    /// grant with the largest fencing token, and releases everyone.
    #[test]
    fn rule_2_a_participant_enters_with_a_quorum_and_releases_all() {
        let mut p = node(4);
        let step = p.request(Request::Acquire);
        let ask = Msg::Request { attempt: 1 };
        assert_eq!(step.sent(), vec![(0, ask.clone()), (1, ask.clone()), (2, ask.clone()), (3, ask)]);
        assert_eq!(step.set(), vec![(Timer::Patience { attempt: 1 }, 100 * MILLISECOND)]);
        assert!(p.deliver(0, Msg::Grant { attempt: 1, fencing: 3 }).is_empty(), "two grants of three");
        let step = p.deliver(1, Msg::Grant { attempt: 1, fencing: 2 });
        assert_eq!(step.emitted(), vec![Event::Entered { fencing: 3 }]);
        assert_eq!(step.cancelled(), vec![Timer::Patience { attempt: 1 }]);
        let step = p.request(Request::Release);
        assert_eq!(step.emitted(), vec![Event::Exited]);
        let release = Msg::Release { attempt: 1, fencing: 3 };
        assert_eq!(
            step.sent(),
            vec![(0, release.clone()), (1, release.clone()), (2, release.clone()), (3, release)]
        );
    }

    /// Rule 3: without a quorum in `patience` the participant gives every vote back, backs
    /// off a random time in [0, backoff) and retries with a new attempt; old grants are ignored.
    #[test]
    fn rule_3_no_quorum_in_time_releases_backs_off_and_retries() {
        let mut p = node(4);
        p.request(Request::Acquire);
        p.random = 7_000_000;
        let step = p.fire(Timer::Patience { attempt: 1 });
        let back = Msg::Release { attempt: 1, fencing: 0 };
        assert_eq!(step.sent(), vec![(0, back.clone()), (1, back.clone()), (2, back.clone()), (3, back)]);
        assert_eq!(step.set(), vec![(Timer::Retry, 7 * MILLISECOND)]);
        let step = p.fire(Timer::Retry);
        assert_eq!(step.sent().len(), 4);
        assert_eq!(step.sent()[0], (0, Msg::Request { attempt: 2 }));
        assert!(p.deliver(0, Msg::Grant { attempt: 1, fencing: 1 }).is_empty());
        assert!(p.deliver(1, Msg::Grant { attempt: 1, fencing: 1 }).is_empty(), "old grants do not count");
    }

    /// Rule 4: a recovered coordinator has forgotten its grant and grants again, with a larger
    /// fencing token (the counter is stable).
    #[test]
    fn rule_4_a_recovered_coordinator_forgets_its_grants() {
        let mut c = node(0);
        c.deliver(1, Msg::Request { attempt: 1 });
        c.crash();
        assert!(c.recover().is_empty());
        assert_eq!(
            c.deliver(2, Msg::Request { attempt: 1 }).sent(),
            vec![(2, Msg::Grant { attempt: 1, fencing: 2 })]
        );
    }

    /// Forged messages: a GRANT from a non-coordinator, for an attempt never made or with
    /// fencing token 0, and a REQUEST or RELEASE to a non-coordinator or of attempt 0 are
    /// refused; a coordinator's GRANT of this node's attempt (current or given up) and a
    /// participant's REQUEST are admitted.
    #[test]
    fn admits_grants_only_from_coordinators_for_attempts_made() {
        let world = TestSystem::new(5).param("coordinators", "3");
        let mut p = world.node::<Quorum>(4);
        p.request(Request::Acquire);
        let admits = |p: &Harness<Quorum>, from, msg: Msg| p.process.admits(from, &msg);
        assert_eq!(admits(&p, 2, Msg::Grant { attempt: 1, fencing: 1 }), Ok(()));
        assert_eq!(
            admits(&p, 3, Msg::Grant { attempt: 1, fencing: 1 }),
            Err("a GRANT from a node that is not a coordinator")
        );
        assert_eq!(
            admits(&p, 0, Msg::Grant { attempt: 2, fencing: 1 }),
            Err("a GRANT for an attempt this node never made")
        );
        assert_eq!(
            admits(&p, 0, Msg::Grant { attempt: 1, fencing: 0 }),
            Err("a GRANT with fencing token 0: a coordinator's counter starts at 1")
        );
        assert_eq!(
            admits(&p, 1, Msg::Request { attempt: 1 }),
            Err("a REQUEST or RELEASE sent to a node that is not a coordinator")
        );
        let c = TestSystem::new(5).param("coordinators", "3").node::<Quorum>(0);
        assert_eq!(admits(&c, 4, Msg::Request { attempt: 3 }), Ok(()));
        assert_eq!(admits(&c, 4, Msg::Release { attempt: 3, fencing: 0 }), Ok(()));
        assert_eq!(
            admits(&c, 4, Msg::Release { attempt: 0, fencing: 0 }),
            Err("a REQUEST or RELEASE of attempt 0: attempts are numbered from 1")
        );
    }
}
