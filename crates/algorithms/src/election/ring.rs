//! # Ring election with a list (Tanenbaum)
//!
//! *Tanenbaum & van Steen, Distributed Systems (election algorithms: a ring algorithm); the
//! collected-list ring goes back to Le Lann, "Distributed systems — towards a formal approach"
//! (IFIP Congress 1977). Choosing the lowest id instead of the highest ("pick, say, the
//! smallest id in the list") is the `ring-min` variant.*
//!
//! ## The idea
//! Processes sit on a logical ring and every process knows the ring's configuration, so it can
//! skip a successor that is down. An ELECTION message goes once around collecting the ids of
//! every live process; back at its initiator, the list names every candidate, the initiator
//! picks the winner, and a COORDINATOR message goes around once more to tell everyone the
//! winner and the new membership of the ring.
//!
//! ## The rules
//! 1. An initiator sends ELECTION[list = (self)] to its successor. A successor that is down is
//!    skipped: the sender tries the next one, and so on.
//! 2. Each receiver appends itself to the list and forwards it.
//! 3. A process that receives an ELECTION already holding its own id has seen the message go
//!    all the way round: it picks the winner, `max(list)` for `ring` or `min(list)` for
//!    `ring-min`, and sends COORDINATOR(winner, list) along the list;
//!    each receiver records the winner and the membership and forwards it to the next member;
//!    the message is removed when it is back where it started.
//! 4. Concurrent initiators each complete their two rounds; every list holds every live process,
//!    so every COORDINATOR names the same winner: concurrency only costs messages — *provided
//!    no process fails during the election* (see the known flaws).
//!
//! ```text
//!   initiator:  ── ELECTION[(p)] ──▶ … each appends itself … ──▶ back at p
//!               ── COORDINATOR(winner, list) ──▶ … each records winner ──▶ back at p: removed
//! ```
//!
//! ## Choosing the winner: two names
//! The checker judges validity by the algorithm's `LEADER_RULE`, a constant, so the rule is
//! chosen by name rather than at run time: `ring` elects the maximum, `ring-min` the minimum.
//! Each also accepts `choose=max` / `choose=min` matching its name, and names the other
//! algorithm when asked for the other rule.
//!
//! ## Skipping a dead successor: the ACK
//! A process learns that its successor is down the way the textbook describes it — by trying.
//! Every ELECTION and COORDINATOR hop is acknowledged by an ACK; a sender that gets no ACK
//! within T = 2·Ttrans + Tprocess (the bully's timer; `timeout`, `process_time`) tries the next
//! process on the ring. So a skipped dead successor costs exactly one extra send, the ELECTION
//! it never received. The COORDINATOR round follows the collected list, which holds no dead
//! process unless one died during the election. ACKs are detection messages
//! (`Message::is_detection`): like heartbeats they are counted apart, so the textbook count
//! of the algorithm's own messages stays checkable.
//!
//! Because rule 3 is "my own id is in the list" rather than "I am the initiator", a round whose
//! initiator crashed is completed by the first process it reaches a second time.
//!
//! ## Failure detection
//! With `heartbeat = PERIOD` (default 0: off) the coordinator sends HEARTBEAT to every other
//! position of the ring (it knows the configuration; dead ones included, so that a process back
//! from a crash or a partition hears it) every period and a process that hears nothing for
//! `suspect_after` (default PERIOD + T) starts an election (see [`super::watch`]); with
//! `detector = phi-accrual` it starts one when φ-accrual's suspicion level over the
//! coordinator's heartbeats reaches `phi` instead. A heartbeat from a better coordinator
//! (higher id; lower for `ring-min`) than one's own is adopted, which merges two coordinators
//! after a partition heals — unless this process itself is better than that coordinator: it was
//! left out of that election, so it ignores the heartbeat and its silence deadline starts an
//! election that includes it. A process that recovers starts an election, so it re-enters the ring
//! (the COORDINATOR message tells everyone the ring's new members).
//!
//! ## Costs (messages are sends; ACKs and heartbeats counted apart)
//! One initiator, L live processes, d dead ones to skip: L ELECTION hops + d failed sends, then
//! L COORDINATOR hops: 2L + d. With k concurrent initiators: k(2L + d). With `--crash N@0` and
//! one initiator, N = 10: 10 ELECTION + 9 COORDINATOR. Time: 2L one-way delays plus T per skip.
//!
//! ## Assumptions
//! Every process knows the ring's order; the delay bound Ttrans holds (otherwise a slow successor
//! is skipped as dead); crash-recovery failures. Under those, agreement, validity and
//! termination hold.
//!
//! ## Known flaws
//! - *A crash between two concurrent elections*: a process that one ELECTION collected and
//!   then crashes before the other ELECTION reaches it is in one list and not in the other, so
//!   the two COORDINATOR rounds name different winners — the dead process and the best live one
//!   — and each process keeps whichever reached it last. Without a failure detector nothing ever
//!   starts another election, and the disagreement (and a dead coordinator) is final —
//!   `scenarios/ring-crash-mid-election.toml` (ids 1 and 4 initiate on six nodes, id 6 crashes
//!   at 3 ms: id 1 names 6, id 4 names 5). With `detector=heartbeat` the followers of the dead
//!   coordinator suspect it and a new election repairs the split.
//! - *Split brain*: under a partition each side's ring closes around its own members and elects
//!   its own coordinator — `scenarios/ring-partition-split-brain.toml`.
//! - A process that is only slow is skipped and left out of the membership.
//! - 2N messages per initiator and 2N delays, however many initiators: no suppression of
//!   concurrent elections (Chang-Roberts suppresses the smaller ids).

use std::collections::BTreeMap;

use ringleader_core::time::MILLISECOND;
use ringleader_core::{Context, Event, Message, NodeId, Outbox, Process, Request, Time, Uid};
use serde::{Deserialize, Serialize};

use super::watch::{Watch, WatchTimer};
use crate::{Algorithm, Family, LeaderRule, ParamError, Setup, TopologyKind};

/// A ring member as the messages list it: its position (its address) and its id.
pub type Member = (NodeId, Uid);

/// Ring election messages.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// ELECTION(list): the members collected so far, in ring order from the initiator.
    Election {
        /// Hop number, echoed by the ACK.
        seq: u64,
        /// The members collected so far.
        list: Vec<Member>,
    },
    /// COORDINATOR(winner, list), started by position `origin`, removed when back there.
    Coordinator {
        /// Hop number, echoed by the ACK.
        seq: u64,
        /// The winner's id.
        winner: Uid,
        /// Who turned the ELECTION into this message.
        origin: NodeId,
        /// The new ring membership.
        list: Vec<Member>,
    },
    /// ACK(seq): the hop arrived (failure detection).
    Ack(u64),
    /// HEARTBEAT(j): coordinator j is alive (failure detection).
    Heartbeat(Uid),
}

impl Message for Msg {
    const KINDS: &'static [&'static str] = &["election", "coordinator", "ack", "heartbeat"];
    fn kind_index(&self) -> usize {
        match self {
            Msg::Election { .. } => 0,
            Msg::Coordinator { .. } => 1,
            Msg::Ack(_) => 2,
            Msg::Heartbeat(_) => 3,
        }
    }
    fn is_detection(&self) -> bool {
        matches!(self, Msg::Ack(_) | Msg::Heartbeat(_))
    }
    /// The coordinator sends its HEARTBEAT itself; ELECTION and COORDINATOR are forwarded.
    fn sender_uid(&self) -> Option<Uid> {
        match self {
            Msg::Heartbeat(j) => Some(*j),
            _ => None,
        }
    }
    fn uids_named(&self) -> Vec<Uid> {
        match self {
            Msg::Election { list, .. } => list.iter().map(|m| m.1).collect(),
            Msg::Coordinator { winner, list, .. } => {
                std::iter::once(*winner).chain(list.iter().map(|m| m.1)).collect()
            }
            Msg::Ack(_) => vec![],
            Msg::Heartbeat(j) => vec![*j],
        }
    }
}

/// Ring election timers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
pub enum Timer {
    /// No ACK for hop `seq` within T: try the next process.
    Ack(u64),
    /// The heartbeat detector.
    Watch(WatchTimer),
}

impl From<WatchTimer> for Timer {
    fn from(t: WatchTimer) -> Timer {
        Timer::Watch(t)
    }
}

/// A hop waiting for its ACK: the message and the processes still to try after this one.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
struct Pending {
    msg: Msg,
    rest: Vec<NodeId>,
}

/// The validated configuration of a run.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Config {
    /// T: how long a hop waits for its ACK.
    pub t: Time,
    /// The coordinator's watch, as every process starts with it.
    pub watch: Watch,
}

/// One process on the ring; `MIN` selects the winner rule (`false`: max, `ring`; `true`: min,
/// `ring-min`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct RingElection<const MIN: bool> {
    uid: Uid,
    leader: Option<Uid>,
    members: Vec<Member>,
    pending: BTreeMap<u64, Pending>,
    next_seq: u64,
    /// T: how long a hop waits for its ACK.
    t: Time,
    /// This process's failure detector on its coordinator.
    watch: Watch,
}

/// The ring election that elects the highest id.
pub type Ring = RingElection<false>;
/// The ring election that elects the lowest id.
pub type RingMin = RingElection<true>;

type Out = Outbox<Msg, Timer>;

impl<const MIN: bool> RingElection<MIN> {
    /// The ring members this process last learned from a COORDINATOR message.
    pub fn members(&self) -> &[Member] {
        &self.members
    }

    fn better(a: Uid, b: Uid) -> bool {
        if MIN { a < b } else { a > b }
    }

    fn winner(list: &[Member]) -> Uid {
        let ids = list.iter().map(|&(_, u)| u);
        if MIN { ids.min() } else { ids.max() }.expect("a list holds its sender")
    }

    /// Every other position in ring order after this one.
    fn ring_after(cx: &Context) -> Vec<NodeId> {
        (1..cx.n()).map(|k| (cx.me + k) % cx.n()).collect()
    }

    /// Sends `msg` to the first of `targets`, keeping the rest to try if no ACK comes; with no
    /// target left the message has nowhere to go (this process is alone, or the round is over).
    fn hop(&mut self, cx: &Context, msg: Msg, mut targets: Vec<NodeId>, out: &mut Out) {
        if targets.is_empty() {
            if let Msg::Election { list, .. } = msg {
                self.close_round(cx, list, out);
            }
            return;
        }
        let to = targets.remove(0);
        let seq = self.next_seq;
        self.next_seq += 1;
        let msg = match msg {
            Msg::Election { list, .. } => Msg::Election { seq, list },
            Msg::Coordinator { winner, origin, list, .. } => Msg::Coordinator { seq, winner, origin, list },
            other => other,
        };
        out.send(to, msg.clone());
        self.pending.insert(seq, Pending { msg, rest: targets });
        out.set_timer(Timer::Ack(seq), self.t);
    }

    /// How long two rounds may take: every position is tried at most once per round, and an
    /// attempt ends within T (ACK or timeout).
    fn round_bound(&self, cx: &Context) -> Time {
        2 * cx.n() as Time * self.t
    }

    fn start_election(&mut self, cx: &Context, out: &mut Out) {
        out.emit(Event::ElectionStarted);
        self.watch.follow_after(cx, self.round_bound(cx), out);
        let msg = Msg::Election { seq: 0, list: vec![(cx.me, self.uid)] };
        self.hop(cx, msg, Self::ring_after(cx), out);
    }

    /// Rule 3: the ELECTION came back; announce the winner along the list.
    fn close_round(&mut self, cx: &Context, list: Vec<Member>, out: &mut Out) {
        let winner = Self::winner(&list);
        self.learn(cx, winner, list.clone(), out);
        let targets = Self::along(cx, &list, cx.me);
        self.hop(cx, Msg::Coordinator { seq: 0, winner, origin: cx.me, list }, targets, out);
    }

    /// The members of `list` after this process in ring order, up to and including `origin`.
    fn along(cx: &Context, list: &[Member], origin: NodeId) -> Vec<NodeId> {
        let n = cx.n();
        let dist = |p: NodeId| (p + n - cx.me) % n;
        let mut after: Vec<NodeId> = list.iter().map(|&(p, _)| p).filter(|&p| p != cx.me).collect();
        after.sort_by_key(|&p| dist(p));
        after.dedup();
        if origin != cx.me {
            after.retain(|&p| dist(p) <= dist(origin));
        }
        after
    }

    /// A COORDINATOR round passed: record the winner and the membership. The winner may learn
    /// of its victory up to a round after this process, so the first deadline allows a round.
    fn learn(&mut self, cx: &Context, winner: Uid, list: Vec<Member>, out: &mut Out) {
        self.members = list;
        self.set_leader(cx, winner, self.round_bound(cx), out);
    }

    fn set_leader(&mut self, cx: &Context, winner: Uid, grace: Time, out: &mut Out) {
        let news = self.leader != Some(winner);
        if news {
            self.leader = Some(winner);
            out.emit(Event::Leader { leader: winner, term: 0 });
        }
        if winner == self.uid {
            if news {
                // The followers' first deadline allows a whole round (`learn`); a heartbeat at
                // once replaces it with the detector's own, so a coordinator that dies just
                // after its election is suspected as soon as one that dies later. Later rounds
                // naming this process again leave the heartbeat's cadence alone.
                self.watch.lead(out);
                self.watch.beat(Self::ring_after(cx), &Msg::Heartbeat(self.uid), out);
            }
        } else if news {
            // Only news arms the deadline: a COORDINATOR naming the coordinator this process
            // already follows (a concurrent round, or one arriving after the new coordinator's
            // first heartbeat) must not push the detector's deadline back by a round.
            self.watch.follow_after(cx, grace, out);
        }
    }
}

impl<const MIN: bool> Process for RingElection<MIN> {
    type Msg = Msg;
    type Timer = Timer;

    fn on_start(&mut self, cx: &Context, out: &mut Out) {
        self.watch.follow_after(cx, self.round_bound(cx), out);
    }

    fn on_message(&mut self, cx: &Context, from: NodeId, msg: Msg, out: &mut Out) {
        match msg {
            Msg::Election { seq, mut list } => {
                out.send(from, Msg::Ack(seq));
                if list.iter().any(|&(_, u)| u == self.uid) {
                    self.close_round(cx, list, out);
                } else {
                    list.push((cx.me, self.uid));
                    self.hop(cx, Msg::Election { seq, list }, Self::ring_after(cx), out);
                }
            }
            Msg::Coordinator { seq, winner, origin, list } => {
                out.send(from, Msg::Ack(seq));
                if origin != cx.me {
                    self.learn(cx, winner, list.clone(), out);
                    let targets = Self::along(cx, &list, origin);
                    self.hop(cx, Msg::Coordinator { seq, winner, origin, list }, targets, out);
                }
            }
            Msg::Ack(seq) => {
                if self.pending.remove(&seq).is_some() {
                    out.cancel_timer(Timer::Ack(seq));
                }
            }
            Msg::Heartbeat(j) => {
                if self.leader == Some(j) {
                    self.watch.heard(cx, out);
                } else if !Self::better(self.uid, j) && self.leader.is_none_or(|l| Self::better(j, l)) {
                    // A coordinator worse than this process was elected without it; instead of
                    // following, let the silence deadline start an election that includes it.
                    self.set_leader(cx, j, 0, out);
                }
            }
        }
    }

    fn on_timer(&mut self, cx: &Context, timer: Timer, out: &mut Out) {
        match timer {
            Timer::Ack(seq) => {
                if let Some(Pending { msg, rest }) = self.pending.remove(&seq) {
                    self.hop(cx, msg, rest, out);
                }
            }
            Timer::Watch(WatchTimer::Beat) => {
                if self.leader == Some(self.uid) {
                    self.watch.beat(Self::ring_after(cx), &Msg::Heartbeat(self.uid), out);
                }
            }
            Timer::Watch(WatchTimer::Silence) => {
                if self.watch.suspects(cx) && self.leader != Some(self.uid) {
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

    /// Everything is volatile; the recovered process starts an election to re-enter the ring.
    /// The hop counter starts afresh at a point drawn from the recovery's randomness, so that
    /// an ACK still in flight for a hop of the crashed incarnation matches no new hop. The
    /// counter is not kept across the crash: a real node writes its state to its data
    /// directory whenever what survives a crash changes, and a surviving counter would cost a
    /// durable write per hop — slow enough (tens of ms under load) to exceed T and have live
    /// successors skipped.
    fn on_recover(&mut self, cx: &Context, out: &mut Out) {
        self.leader = None;
        self.members.clear();
        self.pending.clear();
        self.next_seq = (cx.random >> 2) | 1;
        self.start_election(cx, out);
    }

    fn leader(&self) -> Option<Uid> {
        self.leader
    }
}

impl<const MIN: bool> Algorithm for RingElection<MIN> {
    const NAME: &'static str = if MIN { "ring-min" } else { "ring" };
    const FAMILY: Family = Family::Election;
    const SUMMARY: &'static str = if MIN {
        "ring election collecting a list; the lowest id in it wins (the textbook's variant)"
    } else {
        "ring election collecting a list; the highest id in it wins (Tanenbaum)"
    };
    const TOPOLOGY: TopologyKind = TopologyKind::Ring;
    const LEADER_RULE: LeaderRule = if MIN { LeaderRule::Min } else { LeaderRule::Max };
    type Config = Config;

    fn configure(setup: &Setup) -> Result<Config, ParamError> {
        let mine = if MIN { "min" } else { "max" };
        let choose: String = setup.params.get("choose", mine.to_string())?;
        if choose != mine {
            let (other, name) = if MIN { ("max", "ring") } else { ("min", "ring-min") };
            return Err(ParamError::OutOfRange {
                key: "choose".into(),
                reason: if choose == other {
                    format!("{} elects the {mine} id; for choose={other} run --algo {name}", Self::NAME)
                } else {
                    format!("expected max or min, got {choose:?}")
                },
            });
        }
        let t_process = setup.params.duration("process_time", MILLISECOND / 10)?;
        let t = setup.params.duration("timeout", 2 * setup.max_delay + t_process)?;
        if t == 0 {
            return Err(ParamError::OutOfRange {
                key: "timeout".into(),
                reason: "the ACK timeout must be positive (default 2·max_delay + process_time)".into(),
            });
        }
        let watch = Watch::configure(setup, "none", "suspect_after", |period| period + t, false)?;
        Ok(Config { t, watch })
    }

    fn new(me: NodeId, config: &Config, setup: &Setup) -> Self {
        RingElection {
            uid: setup.uids[me as usize],
            leader: None,
            members: Vec::new(),
            pending: BTreeMap::new(),
            next_seq: 1,
            t: config.t,
            watch: config.watch.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestSystem;
    use ringleader_core::Topology;
    use ringleader_core::harness::Harness;

    /// T = 2·Ttrans + Tprocess with Ttrans = 1 ms and the default Tprocess = 0.1 ms.
    const T: Time = 2_100_000;

    /// Four processes on a ring, uids 1..=4 at positions 0..=3.
    fn node<const MIN: bool>(me: NodeId) -> Harness<RingElection<MIN>> {
        TestSystem::new(4).topology(Topology::Ring { n: 4 }).node(me)
    }

    fn all() -> Vec<Member> {
        vec![(0, 1), (1, 2), (2, 3), (3, 4)]
    }

    /// Rule 1: the initiator sends ELECTION[(self)] to its successor, and skips it when no ACK
    /// comes within T.
    #[test]
    fn rule_1_the_initiator_sends_its_list_to_the_successor_and_skips_a_dead_one() {
        let mut p = node::<false>(0);
        let step = p.request(Request::StartElection);
        assert_eq!(step.sent(), vec![(1, Msg::Election { seq: 1, list: vec![(0, 1)] })]);
        assert_eq!(step.set(), vec![(Timer::Ack(1), T)]);
        assert_eq!(step.emitted(), vec![Event::ElectionStarted]);
        let skip = p.fire(Timer::Ack(1));
        assert_eq!(skip.sent(), vec![(2, Msg::Election { seq: 2, list: vec![(0, 1)] })]);
        assert_eq!(skip.set(), vec![(Timer::Ack(2), T)]);
        let ack = p.deliver(2, Msg::Ack(2));
        assert_eq!(ack.cancelled(), vec![Timer::Ack(2)]);
        assert!(p.armed().is_empty());
    }

    /// Nothing survives a crash, the hop counter included: two processes that made different
    /// numbers of hops recover into the same state (a real node's stable storage then writes
    /// nothing when a hop is made).
    #[test]
    fn nothing_survives_a_crash_not_even_the_hop_counter() {
        let mut a = node::<false>(0);
        let b = node::<false>(0);
        a.request(Request::StartElection);
        a.fire(Timer::Ack(1));
        a.deliver(2, Msg::Ack(2));
        assert_ne!(a.process, b.process);
        let (mut a, mut b) = (a.process.clone(), b.process.clone());
        let uids = [1, 2, 3, 4];
        let topology = Topology::Ring { n: 4 };
        let cx = Context { me: 0, uids: &uids, topology: &topology, now: 5, random: 12345 };
        a.on_recover(&cx, &mut Outbox::new());
        b.on_recover(&cx, &mut Outbox::new());
        assert_eq!(a, b);
    }

    /// Rule 2: each receiver acknowledges, appends itself and forwards.
    #[test]
    fn rule_2_a_receiver_appends_itself_and_forwards() {
        let mut p = node::<false>(1);
        let step = p.deliver(0, Msg::Election { seq: 5, list: vec![(0, 1)] });
        assert_eq!(
            step.sent(),
            vec![(0, Msg::Ack(5)), (2, Msg::Election { seq: 1, list: vec![(0, 1), (1, 2)] })]
        );
        assert!(step.emitted().is_empty());
    }

    /// Rule 3: an ELECTION holding the receiver's own id has gone round; the winner (max for
    /// `ring`, min for `ring-min`) travels in COORDINATOR along the list and stops at its origin.
    #[test]
    fn rule_3_the_list_back_home_names_the_winner_and_coordinator_goes_round_once() {
        let mut p = node::<false>(0);
        let step = p.deliver(3, Msg::Election { seq: 7, list: all() });
        let coordinator = Msg::Coordinator { seq: 1, winner: 4, origin: 0, list: all() };
        assert_eq!(step.sent(), vec![(3, Msg::Ack(7)), (1, coordinator)]);
        assert_eq!(step.emitted(), vec![Event::Leader { leader: 4, term: 0 }]);

        let mut q = node::<false>(1);
        let step = q.deliver(0, Msg::Coordinator { seq: 1, winner: 4, origin: 0, list: all() });
        let forwarded = Msg::Coordinator { seq: 1, winner: 4, origin: 0, list: all() };
        assert_eq!(step.sent(), vec![(0, Msg::Ack(1)), (2, forwarded)]);
        assert_eq!(q.process.members(), &all()[..]);
        assert_eq!(q.process.leader(), Some(4));

        let back = p.deliver(3, Msg::Coordinator { seq: 9, winner: 4, origin: 0, list: all() });
        assert_eq!(back.sent(), vec![(3, Msg::Ack(9))], "removed at its origin");

        let mut min = node::<true>(0);
        let step = min.deliver(3, Msg::Election { seq: 7, list: all() });
        assert_eq!(step.emitted(), vec![Event::Leader { leader: 1, term: 0 }]);
    }

    /// Failure detection: a process that learns it is the new coordinator sends a HEARTBEAT to
    /// every other position at once (and every period after), so the followers' first deadline
    /// — a whole round of grace — is replaced by the detector's own right away; a second round
    /// naming the same coordinator sends no extra heartbeat and does not postpone the next one.
    #[test]
    fn a_new_coordinator_beats_at_once() {
        let world = TestSystem::new(4).topology(Topology::Ring { n: 4 }).param("heartbeat", "20ms");
        let mut p: Harness<RingElection<false>> = world.node(3);
        let step = p.deliver(2, Msg::Election { seq: 7, list: all() });
        let beats: Vec<_> = step.sent().into_iter().filter(|(_, m)| *m == Msg::Heartbeat(4)).collect();
        assert_eq!(beats, vec![(0, Msg::Heartbeat(4)), (1, Msg::Heartbeat(4)), (2, Msg::Heartbeat(4))]);
        let again = p.deliver(2, Msg::Election { seq: 8, list: all() });
        assert!(!again.sent().iter().any(|(_, m)| *m == Msg::Heartbeat(4)), "{:?}", again.sent());
        assert!(
            !again.set().iter().any(|(t, _)| *t == Timer::Watch(WatchTimer::Beat)),
            "a later round must not postpone the next heartbeat: {:?}",
            again.set()
        );
    }

    /// Failure detection: a COORDINATOR that names the coordinator a process already follows
    /// (here it heard that coordinator's first heartbeat before the COORDINATOR came round)
    /// leaves the detector's deadline alone instead of granting the new coordinator another
    /// round to learn of its victory.
    #[test]
    fn a_coordinator_already_followed_does_not_push_the_deadline_back() {
        let world = TestSystem::new(4).topology(Topology::Ring { n: 4 }).param("heartbeat", "20ms");
        let mut p: Harness<RingElection<false>> = world.node(0);
        let heard = p.deliver(3, Msg::Heartbeat(4));
        assert_eq!(heard.emitted(), vec![Event::Leader { leader: 4, term: 0 }]);
        assert!(heard.set().iter().any(|(t, _)| *t == Timer::Watch(WatchTimer::Silence)));
        let round = p.deliver(3, Msg::Coordinator { seq: 1, winner: 4, origin: 2, list: all() });
        assert!(round.emitted().is_empty());
        assert!(
            !round.set().iter().any(|(t, _)| *t == Timer::Watch(WatchTimer::Silence)),
            "{:?}",
            round.set()
        );
    }

    /// Rule 4: concurrent initiators are not suppressed; lists with the same members, in any
    /// order, name the same winner.
    #[test]
    fn rule_4_concurrent_rounds_both_complete_and_agree() {
        let mut p = node::<false>(1);
        p.request(Request::StartElection);
        let step = p.deliver(0, Msg::Election { seq: 3, list: vec![(0, 1)] });
        assert_eq!(
            step.sent(),
            vec![(0, Msg::Ack(3)), (2, Msg::Election { seq: 2, list: vec![(0, 1), (1, 2)] })]
        );
        let mut q = node::<false>(2);
        let rotated = vec![(2, 3), (3, 4), (0, 1), (1, 2)];
        let step = q.deliver(1, Msg::Election { seq: 1, list: rotated });
        assert_eq!(step.emitted(), vec![Event::Leader { leader: 4, term: 0 }]);
    }
}
