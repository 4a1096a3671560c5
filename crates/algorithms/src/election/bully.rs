//! # Bully: the highest id takes over (Garcia-Molina, 1982)
//!
//! *Garcia-Molina, "Elections in a distributed computing system", IEEE Transactions on Computers
//! C-31(1), 1982; Tanenbaum & van Steen, Distributed Systems (election algorithms: the bully
//! algorithm); Coulouris et al., Distributed Systems: Concepts and Design, §15.3.*
//!
//! ## The idea
//! Every process knows every id. The best candidate is the highest live id, and a process that
//! wants to lead only has to ask those above it whether any is alive: if none answers within a
//! timeout, it is the highest one left. Bigger processes "bully" smaller ones out of the race.
//!
//! ## The rules
//! 1. When P suspects the coordinator: if P has the highest id of all, it sends COORDINATOR to
//!    every lower id and is done.
//! 2. Otherwise P sends ELECTION to every higher id and arms timer T = 2·Ttrans + Tprocess.
//! 3. On ELECTION from a lower id: reply ANSWER, and start an election (step 2) unless already
//!    in one.
//! 4. T expires with no ANSWER: P is the coordinator; it sends COORDINATOR to every lower id.
//! 5. An ANSWER arrived: wait T' for a COORDINATOR; if none comes, start again at step 2.
//! 6. On COORDINATOR(j): coordinator := j.
//! 7. A process that recovers starts an election at once, and so takes over ("bullies") when it
//!    is the highest — even from a working coordinator. In the same spirit, a COORDINATOR or a
//!    heartbeat from a *lower* id makes P start an election: it bullies the lower coordinator.
//!
//! ```text
//!            suspect / recover / ELECTION from below
//!   idle ─────────────────────────────────────────▶ electing (ELECTION to all higher, timer T)
//!    ▲  ▲                                              │ ANSWER            │ T expires
//!    │  │ COORDINATOR(j > me)                          ▼                   ▼
//!    │  └──────────────────────────────────────── awaiting (timer T')   coordinator
//!    │                                                 │ T' expires        (COORDINATOR to
//!    │                                                 └──▶ electing         all lower ids)
//!    └── COORDINATOR(j > me) from any state
//! ```
//!
//! ## Timers
//! `Ttrans` is the deployment's delay bound (`setup.max_delay`, the scenario's `max_delay`,
//! default the latency's bound). `Tprocess` is parameter `process_time` (default 100 µs: the
//! simulator processes instantly, and T must be *strictly* greater than the round trip or an
//! ANSWER arriving at the same instant as the timer would lose the race). T can be set directly
//! with `timeout`. T' (`coordinator_timeout`) defaults to T + 2·Ttrans: the highest live process
//! got our ELECTION within Ttrans of our sending it, needs at most T to conclude, and its
//! COORDINATOR needs Ttrans more.
//!
//! ## Failure detection
//! With `heartbeat = PERIOD` (default 0: off) the coordinator sends HEARTBEAT to every lower id
//! each period and a process that hears nothing for `suspect_after` (default PERIOD + T) starts an
//! election (see [`super::watch`]). That is the default failure detector, `detector =
//! heartbeat`; with `detector = phi-accrual` a process starts an election when φ-accrual's
//! suspicion level over its coordinator's heartbeats reaches `phi` (knobs `phi`, `window`,
//! `min_std`, as for the `phi-accrual` algorithm; `suspect_after` then does not apply).
//! Heartbeats are detection messages, counted apart. A heartbeat
//! from a higher coordinator than the one a process follows is taken as its COORDINATOR message
//! (this is how two coordinators merge after a partition heals).
//!
//! ## Costs (coordinator N crashed, ids 1..N; messages are sends, a send to a dead process counts)
//! - best case, P_{N−1} detects: one ELECTION (to the dead N) and N − 2 COORDINATOR: N − 1;
//! - worst case, P_1 detects: every process answers every lower ELECTION and starts its own
//!   election once — ELECTION N(N−1)/2, ANSWER (N−1)(N−2)/2, COORDINATOR N − 2, in all N² − N − 1
//!   (89 for N = 10). `crates/sim/tests/it/election_counts.rs` reproduces both exactly.
//!
//! ## Assumptions
//! A synchronous system: one-way delay at most Ttrans, processing at most Tprocess, reliable
//! channels; crash failures only (crash-recovery allowed). Under those, agreement, validity (the
//! highest live id) and termination hold, and uniqueness holds except for the takeover instant
//! of rule 7: a recovered higher process claims the role while the old coordinator still
//! believes it holds it, until the COORDINATOR message reaches it (at most Ttrans).
//!
//! ## Known flaws
//! - *A slow process is not a dead one* (the asynchronous model's lesson): a coordinator paused longer than the
//!   detector's deadline is replaced, and when it resumes two processes believe they are
//!   coordinator — `scenarios/bully-paused-coordinator.toml`.
//! - *Split brain*: under a partition each side elects its own highest id —
//!   `scenarios/bully-partition-split-brain.toml`.
//! - O(N²) messages in the worst case; every recovery of a low process re-runs the election all
//!   the way up.

use ringleader_core::time::MILLISECOND;
use ringleader_core::{Context, Event, Message, NodeId, Outbox, Process, Request, Time, Uid};
use serde::{Deserialize, Serialize};

use super::watch::{Watch, WatchTimer};
use crate::{Algorithm, Family, ParamError, Setup};

/// Bully messages; each carries the sender's id, as in the textbook's ELECTION(p).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// ELECTION(p): p asks every higher id whether it is alive.
    Election(Uid),
    /// ANSWER(q) (the textbook's OK): q is alive and higher, and takes the election over.
    Answer(Uid),
    /// COORDINATOR(j): j is the new coordinator.
    Coordinator(Uid),
    /// HEARTBEAT(j): coordinator j is alive (failure detection only).
    Heartbeat(Uid),
}

impl Message for Msg {
    const KINDS: &'static [&'static str] = &["election", "answer", "coordinator", "heartbeat"];
    fn kind_index(&self) -> usize {
        match self {
            Msg::Election(_) => 0,
            Msg::Answer(_) => 1,
            Msg::Coordinator(_) => 2,
            Msg::Heartbeat(_) => 3,
        }
    }
    fn is_detection(&self) -> bool {
        matches!(self, Msg::Heartbeat(_))
    }
    /// Every bully message carries its sender's own uid.
    fn sender_uid(&self) -> Option<Uid> {
        match self {
            Msg::Election(j) | Msg::Answer(j) | Msg::Coordinator(j) | Msg::Heartbeat(j) => Some(*j),
        }
    }
}

/// Bully timers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
pub enum Timer {
    /// T: no ANSWER came from any higher id.
    Answer,
    /// T': an ANSWER came but no COORDINATOR followed.
    Coordinator,
    /// The heartbeat detector.
    Watch(WatchTimer),
}

impl From<WatchTimer> for Timer {
    fn from(t: WatchTimer) -> Timer {
        Timer::Watch(t)
    }
}

/// Where a process stands in the election.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Phase {
    /// Not in an election.
    Idle,
    /// ELECTION sent to every higher id; waiting T for an ANSWER.
    Electing,
    /// An ANSWER came; waiting T' for a COORDINATOR.
    Awaiting,
}

/// The validated timers of a run.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Config {
    /// T = 2·Ttrans + Tprocess (or the `timeout` parameter).
    pub t: Time,
    /// T', the wait for a COORDINATOR after an ANSWER.
    pub t_prime: Time,
    /// The coordinator's watch, as every process starts with it.
    pub watch: Watch,
}

/// One bully process.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Bully {
    uid: Uid,
    leader: Option<Uid>,
    phase: Phase,
    /// T.
    t: Time,
    /// T'.
    t_prime: Time,
    /// This process's failure detector on its coordinator.
    watch: Watch,
}

type Out = Outbox<Msg, Timer>;

impl Bully {
    /// Where this process stands in the election.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    fn higher<'a>(&self, cx: &'a Context) -> impl Iterator<Item = NodeId> + 'a {
        let me = self.uid;
        (0..cx.n()).filter(move |&p| cx.uid_of(p) > me)
    }

    fn lower<'a>(&self, cx: &'a Context) -> impl Iterator<Item = NodeId> + 'a {
        let me = self.uid;
        (0..cx.n()).filter(move |&p| cx.uid_of(p) < me)
    }

    /// Rules 1 and 2.
    fn start_election(&mut self, cx: &Context, out: &mut Out) {
        if self.phase != Phase::Idle {
            return;
        }
        out.emit(Event::ElectionStarted);
        if self.higher(cx).next().is_none() {
            self.become_coordinator(cx, out);
        } else {
            out.send_all(self.higher(cx), &Msg::Election(self.uid));
            self.phase = Phase::Electing;
            out.set_timer(Timer::Answer, self.t);
        }
    }

    /// Rules 1 and 4.
    fn become_coordinator(&mut self, cx: &Context, out: &mut Out) {
        self.phase = Phase::Idle;
        out.cancel_timer(Timer::Answer);
        out.cancel_timer(Timer::Coordinator);
        self.leader = Some(self.uid);
        out.emit(Event::Leader { leader: self.uid, term: 0 });
        out.send_all(self.lower(cx), &Msg::Coordinator(self.uid));
        self.watch.lead(out);
    }

    /// Rule 6: coordinator := j. An election of this process ends here too: the `Leader` event
    /// is emitted whenever the coordinator changes *or* this process was electing, so that an
    /// observer that saw `ElectionStarted` sees the election end even when the COORDINATOR names
    /// the coordinator it already followed (a lower process's election re-ran it).
    fn adopt(&mut self, cx: &Context, j: Uid, out: &mut Out) {
        let was_electing = self.phase != Phase::Idle;
        self.phase = Phase::Idle;
        out.cancel_timer(Timer::Answer);
        out.cancel_timer(Timer::Coordinator);
        if self.leader != Some(j) || was_electing {
            self.leader = Some(j);
            out.emit(Event::Leader { leader: j, term: 0 });
        }
        self.watch.follow(cx, out);
    }
}

impl Process for Bully {
    type Msg = Msg;
    type Timer = Timer;

    /// With detection on, a process that learns of no coordinator within the deadline plus
    /// T + T' (one election's length) starts an election itself.
    fn on_start(&mut self, cx: &Context, out: &mut Out) {
        self.watch.follow_after(cx, self.t + self.t_prime, out);
    }

    fn on_message(&mut self, cx: &Context, from: NodeId, msg: Msg, out: &mut Out) {
        match msg {
            Msg::Election(j) => {
                if j < self.uid {
                    out.send(from, Msg::Answer(self.uid));
                    self.start_election(cx, out);
                }
            }
            Msg::Answer(_) => {
                if self.phase == Phase::Electing {
                    self.phase = Phase::Awaiting;
                    out.cancel_timer(Timer::Answer);
                    out.set_timer(Timer::Coordinator, self.t_prime);
                }
            }
            Msg::Coordinator(j) => {
                if j > self.uid {
                    self.adopt(cx, j, out);
                } else if j < self.uid {
                    self.start_election(cx, out);
                }
            }
            Msg::Heartbeat(j) => {
                if self.leader == Some(j) {
                    self.watch.heard(cx, out);
                } else if j < self.uid {
                    self.start_election(cx, out);
                } else if self.phase == Phase::Idle && self.leader.is_none_or(|l| j > l) {
                    self.adopt(cx, j, out);
                }
            }
        }
    }

    fn on_timer(&mut self, cx: &Context, timer: Timer, out: &mut Out) {
        match timer {
            Timer::Answer => {
                if self.phase == Phase::Electing {
                    self.become_coordinator(cx, out);
                }
            }
            Timer::Coordinator => {
                if self.phase == Phase::Awaiting {
                    self.phase = Phase::Idle;
                    self.start_election(cx, out);
                }
            }
            Timer::Watch(WatchTimer::Beat) => {
                if self.leader == Some(self.uid) {
                    self.watch.beat(self.lower(cx), &Msg::Heartbeat(self.uid), out);
                }
            }
            Timer::Watch(WatchTimer::Silence) => {
                if self.watch.suspects(cx) && self.phase == Phase::Idle && self.leader != Some(self.uid) {
                    if self.leader.take().is_some() {
                        out.emit(Event::LeaderLost);
                    }
                    self.start_election(cx, out);
                }
            }
        }
    }

    fn on_request(&mut self, cx: &Context, req: Request, out: &mut Out) {
        if req == Request::StartElection {
            self.start_election(cx, out);
        }
    }

    /// Everything is volatile; rule 7: start an election at once.
    fn on_recover(&mut self, cx: &Context, out: &mut Out) {
        self.leader = None;
        self.phase = Phase::Idle;
        self.watch.follow(cx, out);
        self.start_election(cx, out);
    }

    fn leader(&self) -> Option<Uid> {
        self.leader
    }
}

impl Algorithm for Bully {
    const NAME: &'static str = "bully";
    const FAMILY: Family = Family::Election;
    const SUMMARY: &'static str =
        "ELECTION to every higher id; silence for T means you are the highest (Garcia-Molina 1982)";
    /// Every process that notices the crash starts an election, and each election from below
    /// makes every higher id start its own: N²/2 ELECTION and ANSWER messages in flight, ≈ 240
    /// bytes per pair of nodes (measured 222–235).
    const FOOTPRINT: crate::Footprint = crate::Footprint::quadratic(240);
    type Config = Config;

    fn configure(setup: &Setup) -> Result<Config, ParamError> {
        let ttrans = setup.max_delay;
        let t_process = setup.params.duration("process_time", MILLISECOND / 10)?;
        let t = setup.params.duration("timeout", 2 * ttrans + t_process)?;
        if t == 0 {
            return Err(ParamError::OutOfRange {
                key: "timeout".into(),
                reason: "T must be positive (default 2·max_delay + process_time)".into(),
            });
        }
        let t_prime = setup.params.duration("coordinator_timeout", t + 2 * ttrans)?;
        let watch = Watch::configure(setup, "none", "suspect_after", |period| period + t, false)?;
        Ok(Config { t, t_prime, watch })
    }

    fn new(me: NodeId, config: &Config, setup: &Setup) -> Self {
        Bully {
            uid: setup.uids[me as usize],
            leader: None,
            phase: Phase::Idle,
            t: config.t,
            t_prime: config.t_prime,
            watch: config.watch.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestSystem;
    use ringleader_core::harness::Harness;

    /// T = 2·Ttrans + Tprocess with Ttrans = 1 ms and the default Tprocess = 0.1 ms.
    const T: Time = 2_100_000;
    /// T' = T + 2·Ttrans.
    const T_PRIME: Time = 4_100_000;

    /// Three processes, uids 1, 2, 3 at positions 0, 1, 2.
    fn node(me: NodeId) -> Harness<Bully> {
        TestSystem::new(3).node(me)
    }

    /// Rule 1: the highest id announces itself to every lower id at once.
    #[test]
    fn rule_1_the_highest_id_sends_coordinator_to_every_lower_id() {
        let mut p = node(2);
        let step = p.request(Request::StartElection);
        assert_eq!(step.sent(), vec![(0, Msg::Coordinator(3)), (1, Msg::Coordinator(3))]);
        assert_eq!(step.emitted(), vec![Event::ElectionStarted, Event::Leader { leader: 3, term: 0 }]);
        assert!(step.set().is_empty());
        assert_eq!(p.process.leader(), Some(3));
    }

    /// Rule 2: otherwise ELECTION goes to every higher id and timer T is armed.
    #[test]
    fn rule_2_a_lower_id_sends_election_to_every_higher_id_and_arms_t() {
        let mut p = node(0);
        let step = p.request(Request::StartElection);
        assert_eq!(step.sent(), vec![(1, Msg::Election(1)), (2, Msg::Election(1))]);
        assert_eq!(step.set(), vec![(Timer::Answer, T)]);
        assert_eq!(step.emitted(), vec![Event::ElectionStarted]);
        assert_eq!(p.process.phase(), Phase::Electing);
    }

    /// Rule 3: ELECTION from a lower id is answered, and starts an election unless one runs.
    #[test]
    fn rule_3_election_from_a_lower_id_is_answered_and_starts_an_election_once() {
        let mut p = node(1);
        let step = p.deliver(0, Msg::Election(1));
        assert_eq!(step.sent(), vec![(0, Msg::Answer(2)), (2, Msg::Election(2))]);
        assert_eq!(step.set(), vec![(Timer::Answer, T)]);
        let again = p.deliver(0, Msg::Election(1));
        assert_eq!(again.sent(), vec![(0, Msg::Answer(2))], "already electing: answer only");
        assert!(again.set().is_empty());
        assert!(p.deliver(2, Msg::Election(3)).is_empty(), "ELECTION from a higher id is ignored");
    }

    /// Rule 4: T expires with no ANSWER: the process is coordinator and tells every lower id.
    #[test]
    fn rule_4_silence_for_t_makes_the_process_coordinator() {
        let mut p = node(1);
        p.request(Request::StartElection);
        let step = p.fire(Timer::Answer);
        assert_eq!(step.sent(), vec![(0, Msg::Coordinator(2))]);
        assert_eq!(step.emitted(), vec![Event::Leader { leader: 2, term: 0 }]);
        assert_eq!(p.process.leader(), Some(2));
        assert_eq!(p.process.phase(), Phase::Idle);
    }

    /// Rule 5: an ANSWER replaces T with T'; T' expiring starts the election again.
    #[test]
    fn rule_5_an_answer_waits_t_prime_for_coordinator_then_starts_again() {
        let mut p = node(0);
        p.request(Request::StartElection);
        let step = p.deliver(2, Msg::Answer(3));
        assert_eq!(step.cancelled(), vec![Timer::Answer]);
        assert_eq!(step.set(), vec![(Timer::Coordinator, T_PRIME)]);
        assert!(step.sent().is_empty());
        assert_eq!(p.process.phase(), Phase::Awaiting);
        let again = p.fire(Timer::Coordinator);
        assert_eq!(again.sent(), vec![(1, Msg::Election(1)), (2, Msg::Election(1))]);
        assert_eq!(again.set(), vec![(Timer::Answer, T)]);
    }

    /// Rule 6: COORDINATOR(j) from a higher id sets coordinator := j.
    #[test]
    fn rule_6_coordinator_from_a_higher_id_is_adopted() {
        let mut p = node(0);
        p.request(Request::StartElection);
        let step = p.deliver(2, Msg::Coordinator(3));
        assert_eq!(step.emitted(), vec![Event::Leader { leader: 3, term: 0 }]);
        assert!(step.sent().is_empty());
        assert_eq!(step.cancelled(), vec![Timer::Answer, Timer::Coordinator]);
        assert_eq!(p.process.leader(), Some(3));
        assert!(p.armed().is_empty());
    }

    /// Rule 6, when the coordinator does not change: a process that already follows 3 and was
    /// drawn into an election by a lower id's ELECTION ends that election on COORDINATOR(3) —
    /// it emits `Leader` again, so an observer of its `ElectionStarted` (a real node's role) does
    /// not keep it a candidate.
    #[test]
    fn rule_6_coordinator_ends_an_election_even_for_the_same_coordinator() {
        let mut p = node(1);
        p.deliver(2, Msg::Coordinator(3));
        let step = p.deliver(0, Msg::Election(1));
        assert_eq!(step.emitted(), vec![Event::ElectionStarted]);
        p.deliver(2, Msg::Answer(3));
        assert_eq!(p.process.phase(), Phase::Awaiting);
        let step = p.deliver(2, Msg::Coordinator(3));
        assert_eq!(step.emitted(), vec![Event::Leader { leader: 3, term: 0 }]);
        assert_eq!(p.process.phase(), Phase::Idle);
        assert!(p.deliver(2, Msg::Coordinator(3)).emitted().is_empty(), "idle: nothing new to say");
    }

    /// Rule 7: a recovered process starts an election at once, and a COORDINATOR from a lower
    /// id makes the higher process bully it.
    #[test]
    fn rule_7_recovery_and_a_lower_coordinator_start_an_election() {
        let mut p = node(1);
        p.deliver(2, Msg::Coordinator(3));
        p.crash();
        let step = p.recover();
        assert_eq!(step.sent(), vec![(2, Msg::Election(2))]);
        assert_eq!(step.emitted(), vec![Event::ElectionStarted]);
        assert_eq!(p.process.leader(), None, "the coordinator was volatile");

        let mut top = node(2);
        let step = top.deliver(0, Msg::Coordinator(1));
        assert_eq!(step.sent(), vec![(0, Msg::Coordinator(3)), (1, Msg::Coordinator(3))]);
    }
}
