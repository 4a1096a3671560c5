//! # Centralized coordinator (and its timeout variant)
//!
//! The centralized algorithm of the textbooks: Tanenbaum & van Steen, *Distributed Systems*,
//! mutual exclusion (a centralized algorithm); Coulouris, Dollimore, Kindberg & Blair,
//! *Distributed Systems: Concepts and Design*, §15.2 (the central server algorithm).
//!
//! ## The idea
//! Step back to a centralized system: one process, the *coordinator*, owns the permission and
//! hands it out in the order requests arrive. Every other process is a *participant*.
//!
//! ## The rules
//! 1. A participant that wants the critical section sends REQUEST to the coordinator and waits
//!    for GRANT.
//! 2. On GRANT it enters; when done it leaves and sends RELEASE to the coordinator.
//! 3. The coordinator (the resource starts free) queues every REQUEST in arrival order.
//! 4. On RELEASE from the holder the coordinator marks the resource free.
//! 5. Whenever the resource is free and the queue is not empty, the coordinator dequeues the
//!    head, sends it GRANT and marks the resource busy.
//! 6. A process may play both roles; its own request and grant are local steps, not messages.
//!
//! ```text
//!   coordinator:  free ──queue non-empty / GRANT(head)──▶ busy(holder) ──RELEASE(holder)──▶ free
//!   participant:  idle ──Acquire / REQUEST──▶ awaiting-grant ──GRANT──▶ holding ──Release / RELEASE──▶ idle
//! ```
//!
//! Some presentations also acknowledge every release ("ResponseFree"); that message carries no
//! information the protocol needs, so it is left out and an entry costs three messages.
//!
//! ## Costs
//! Three messages per entry (REQUEST, GRANT, RELEASE); synchronization delay two one-way delays
//! (RELEASE to the coordinator, GRANT to the next holder).
//!
//! ## Fencing tokens
//! Every GRANT carries the coordinator's grant counter, which only increases; it is kept on
//! stable storage so that it keeps increasing across a coordinator crash.
//!
//! ## Coordinator recovery: the coordinator polls who holds and who waits
//! A coordinator that crashes and comes back has kept its grant counter (stable storage) but
//! lost its memory: who holds the permission and who waits for it. Asking for it back is the
//! classic remedy: the coordinator "must poll all the processes in the system to reconstruct
//! its request queue" (Silberschatz, Galvin & Gagne, *Operating System Concepts*, distributed
//! coordination, the centralized approach to mutual exclusion).
//! 12. A recovered coordinator sends POLL to every other node and grants nothing until each of
//!     them has answered with its STATUS: *holding* (with the fencing token it entered with),
//!     *waiting* (with the local time at which it asked) or *idle*. A requester whose REQUEST
//!     was lost in the crash sends nothing else: its STATUS carries the request.
//! 13. From the answers the coordinator rebuilds its state: the holder is the node that
//!     reports holding (the highest token, should two report it); the queue is the waiting
//!     nodes by request time, then by id, followed by the REQUESTs of nodes that had already
//!     answered (in arrival order). A REQUEST or RELEASE from a node not heard yet is dropped:
//!     its STATUS, sent after it, says where that node stands. Then rule 5 applies.
//!
//! These messages exist only after a recovery: a run without one costs exactly the three
//! messages per entry above. The rebuilt queue is FIFO in request time, not in the arrival
//! order the crash forgot. Assumed: FIFO links (a message a node sent before its STATUS
//! arrives before it, and a GRANT sent before the crash arrives before the POLL), and every
//! other node up to answer — a node that is down when polled holds the coordinator up, since it
//! might be the holder. The model checker shows both sides of the assumption: with one crash and
//! recovery of 3 nodes, `check --algo central --nodes 3 --crashes 1 --recover --network ordered`
//! finds no overlap and no fencing regression in any interleaving, while on unordered links a
//! GRANT sent before the crash overtakes the POLL and its receiver enters beside the next
//! holder. `central-timeout` recovers the same way and re-arms its timer for a
//! holder it rebuilt. `scenarios/central-coordinator-recovers.toml` crashes the coordinator
//! while a request waits; without rules 12 and 13 that request would never be served
//! (`liveness` and `no_starvation` violated).
//!
//! ## Assumptions and known flaws
//! Safe, deadlock-free and FIFO-fair while nobody fails. The coordinator is a bottleneck and a
//! single point of failure: while it is down nobody enters (it recovers by rules 12 and 13, or
//! pair it with an election); if the holder crashes, nobody enters again.
//!
//! `central-timeout` is the "obvious" fix of the course notes (the textbooks warn against it,
//! Tanenbaum & van Steen, *Distributed Systems*, mutual exclusion; Coulouris et al.,
//! *Distributed Systems: Concepts and Design*, §15.2), its rule 7:
//! 7. If the holder does not release within `timeout` (parameter, default 10 ms), the
//!    coordinator assumes it crashed and grants the next request.
//!
//! With a holder that is only *slow* (paused), this puts two processes in the critical
//! section at once, found by the safety checker in
//! `scenarios/central-timeout-paused-holder.toml`.
//!
//! ## Coordinator failover (parameter `failover = true`): a stand-in for an election
//! The textbooks pair the coordinator with an election when it fails (Tanenbaum & van Steen,
//! *Distributed Systems*, mutual exclusion and election algorithms). The real elections (bully,
//! majority) live in their own files; this is a deliberately simple stand-in inside the
//! centralized family, honest about its assumptions:
//! 8. A participant that waits for a GRANT PROBEs the coordinator every `probe_every` (default
//!    2·Ttrans + 1 ms; PROBE and ALIVE are counted as detection traffic); a PROBE still
//!    unanswered at the next period makes it *suspect* the coordinator.
//! 9. It then asks the highest-id node it does not suspect to TAKEOVER (itself, if that is it);
//!    a candidate that does not answer within a period is suspected in turn, and so on down —
//!    with a synchronous network (delays below Ttrans) this picks the highest live id.
//! 10. The new coordinator takes epoch + 1, announces itself with COORDINATOR to every node, and
//!     listens for `2·Ttrans + 1 ms` before granting anything: waiting participants re-send their
//!     REQUEST, and the holder (if any) reports HOLDING, so the new coordinator rebuilds its
//!     queue (in the order the re-sent requests arrive — the old FIFO order is lost) and knows
//!     the section is busy. On links that reorder, the holder's RELEASE may overtake its
//!     HOLDING: a RELEASE from a node that is not the holder is remembered, and that node's
//!     HOLDING arriving after it is dropped (else the section would stay busy for good).
//! 11. A GRANT from an older epoch is ignored; fencing tokens are (epoch, counter) pairs
//!     ([`FencingToken`], packed as `epoch · 2³² + counter`), so they keep increasing across
//!     coordinators.
//!
//! Not handled (a real election is needed): a coordinator that was only slow (two coordinators
//! then coexist), a partition, a recovered old coordinator (it comes back as a plain
//! participant), and the holder's crash. `scenarios/central-failover.toml` shows the
//! coordinator crashing with a holder in the section and requests queued.

use std::collections::VecDeque;

use ringleader_core::time::MILLISECOND;
use ringleader_core::{Context, Event, FencingToken, Message, NodeId, Outbox, Process, Request, Time};
use serde::{Deserialize, Serialize};

use crate::{Algorithm, Family, ParamError, Setup};

/// Messages of the centralized algorithm.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// A participant asks for the critical section.
    Request,
    /// The coordinator grants it, with a fencing token.
    Grant {
        /// Strictly increasing grant number: a [`FencingToken`] of the coordinator's epoch,
        /// packed.
        fencing: u64,
    },
    /// The holder gives it back.
    Release,
    /// Failover: is the coordinator alive?
    Probe,
    /// Failover: the coordinator answers a PROBE.
    Alive,
    /// Failover: a participant asks the highest unsuspected node to become coordinator.
    Takeover {
        /// The epoch the new coordinator is to open.
        epoch: u64,
    },
    /// Failover: the sender is the coordinator of `epoch`.
    Coordinator {
        /// The new epoch.
        epoch: u64,
    },
    /// Failover: the sender holds the critical section (reported to a new coordinator).
    Holding,
    /// Recovery: a recovered coordinator asks where the receiver stands.
    Poll,
    /// Recovery: the answer to POLL.
    Status {
        /// Where the sender stands.
        state: ParticipantState,
    },
}

/// Where a participant stands, as it answers a recovered coordinator's POLL.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ParticipantState {
    /// Neither waiting nor holding.
    Idle,
    /// Waiting for a GRANT.
    Waiting {
        /// The participant's local time when it asked.
        since: Time,
    },
    /// In the critical section.
    Holding {
        /// The fencing token it entered with.
        fencing: u64,
    },
}

impl Message for Msg {
    const KINDS: &'static [&'static str] = &[
        "request",
        "grant",
        "release",
        "probe",
        "alive",
        "takeover",
        "coordinator",
        "holding",
        "poll",
        "status",
    ];
    fn kind_index(&self) -> usize {
        match self {
            Msg::Request => 0,
            Msg::Grant { .. } => 1,
            Msg::Release => 2,
            Msg::Probe => 3,
            Msg::Alive => 4,
            Msg::Takeover { .. } => 5,
            Msg::Coordinator { .. } => 6,
            Msg::Holding => 7,
            Msg::Poll => 8,
            Msg::Status { .. } => 9,
        }
    }
    fn is_detection(&self) -> bool {
        matches!(self, Msg::Probe | Msg::Alive)
    }
}

/// Timers of the centralized algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
pub enum Timer {
    /// `central-timeout` only: the holder of grant `fencing` has been silent too long.
    HolderSilent {
        /// The grant the timer watches.
        fencing: u64,
    },
    /// Failover: time to check on the coordinator (or candidate) this participant waits for.
    ProbeDue,
    /// Failover: a new coordinator has heard the survivors long enough; it may grant.
    RecoveryOver,
}

/// Where a participant is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
enum Participant {
    Idle,
    AwaitingGrant,
    Holding,
}

/// The coordinator's volatile state.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize)]
struct Coordinator {
    holder: Option<NodeId>,
    queue: VecDeque<NodeId>,
    /// Failover: a new coordinator does not grant before it heard the survivors. Recovery: a
    /// recovered coordinator does not grant before every node answered its POLL.
    recovering: bool,
    /// Recovery: the state the POLL answers rebuild, while some are missing.
    poll: Option<PollState>,
    /// Failover: nodes whose RELEASE arrived while they were not the holder. On links that
    /// reorder, a holder's RELEASE can overtake the HOLDING it sent before it (rule 10); the
    /// HOLDING that arrives after is then stale and is dropped.
    released_early: Vec<NodeId>,
}

/// Recovery (rules 12 and 13): what a recovered coordinator has heard so far.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize)]
struct PollState {
    /// The nodes that have not answered yet, ascending.
    unheard: Vec<NodeId>,
    /// The nodes that answered *waiting*, with their request time.
    waiting: Vec<(Time, NodeId)>,
    /// The node that answered *holding*, with its token (the highest token if several).
    holding: Option<(u64, NodeId)>,
    /// REQUESTs of nodes that had already answered, in arrival order.
    later: Vec<NodeId>,
}

/// Validated parameters of the centralized family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Config {
    /// Position of the first coordinator.
    pub coordinator: NodeId,
    /// `central-timeout`: how long a holder may stay silent.
    pub timeout: Time,
    /// Failover stand-in enabled.
    pub failover: bool,
    /// Failover: probing period, also the silence that makes a coordinator suspected.
    pub probe_every: Time,
}

/// A process of the centralized algorithm; `TIMEOUT` selects the timeout variant.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct CentralCoordinator<const TIMEOUT: bool> {
    me: NodeId,
    n: u32,
    coordinator: NodeId,
    config: Config,
    participant: Participant,
    /// The local time of the outstanding request (reported to a recovered coordinator); 0
    /// when none is outstanding.
    requested_at: Time,
    /// The fencing token of the current entry (reported to a recovered coordinator); 0 outside
    /// the critical section.
    entered_with: u64,
    /// Failover: the epoch of the coordinator this node follows — on stable storage.
    epoch: u64,
    /// Failover: the coordinator (or candidate) has not answered the last PROBE / TAKEOVER.
    unanswered: bool,
    /// Failover: `coordinator` is a candidate asked to take over, not yet announced.
    candidate: bool,
    /// Failover: nodes suspected of having crashed.
    suspects: Vec<NodeId>,
    /// Present only at the coordinator.
    coord: Option<Coordinator>,
    /// Grant counter, on stable storage (survives crashes).
    fencing: u64,
}

/// `central`: the coordinator waits for RELEASE however long it takes.
pub type Central = CentralCoordinator<false>;
/// `central-timeout`: the coordinator re-grants when a holder is silent for `timeout`.
pub type CentralTimeout = CentralCoordinator<true>;

type Out = Outbox<Msg, Timer>;

impl<const TIMEOUT: bool> CentralCoordinator<TIMEOUT> {
    /// Delivers `msg` to the coordinator: a message, or a local step when we are it.
    fn send_to_coordinator(&mut self, cx: &Context, msg: Msg, out: &mut Out) {
        if self.me == self.coordinator {
            self.coordinator_receives(cx, self.me, msg, out);
        } else {
            out.send(self.coordinator, msg);
        }
    }

    fn coordinator_receives(&mut self, cx: &Context, from: NodeId, msg: Msg, out: &mut Out) {
        let Some(coord) = self.coord.as_mut() else { return };
        if let Some(poll) = coord.poll.as_mut() {
            // Rules 12 and 13: while answers are missing, rebuild instead of serving.
            let heard = !poll.unheard.contains(&from);
            match msg {
                Msg::Status { state } if !heard => {
                    poll.unheard.retain(|&x| x != from);
                    match state {
                        ParticipantState::Idle => {}
                        ParticipantState::Waiting { since } => poll.waiting.push((since, from)),
                        ParticipantState::Holding { fencing } => {
                            if poll.holding.is_none_or(|(best, _)| fencing > best) {
                                poll.holding = Some((fencing, from));
                            }
                        }
                    }
                }
                Msg::Request if heard && !poll.later.contains(&from) => poll.later.push(from),
                Msg::Release if heard && poll.holding.is_some_and(|(_, h)| h == from) => poll.holding = None,
                _ => return,
            }
            return self.finish_poll(cx, out);
        }
        match msg {
            Msg::Request => {
                coord.queue.push_back(from);
                out.emit(Event::Queued { node: from, transaction: None });
            }
            Msg::Release => {
                if coord.holder == Some(from) {
                    coord.holder = None;
                    if TIMEOUT {
                        out.cancel_timer(Timer::HolderSilent { fencing: self.fencing });
                    }
                } else if self.config.failover {
                    coord.released_early.push(from);
                }
            }
            Msg::Holding => {
                if let Some(i) = coord.released_early.iter().position(|&x| x == from) {
                    // Its RELEASE, sent after this HOLDING, overtook it: it holds no more.
                    coord.released_early.swap_remove(i);
                    return;
                }
                if coord.holder.is_none() {
                    coord.holder = Some(from);
                }
                coord.queue.retain(|&x| x != from);
            }
            _ => return,
        }
        self.grant_if_free(cx, out);
    }

    /// Recovery, rule 13: once every node answered the POLL, rebuild holder and queue, then
    /// serve as usual.
    fn finish_poll(&mut self, cx: &Context, out: &mut Out) {
        let Some(coord) = self.coord.as_mut() else { return };
        let Some(poll) = coord.poll.take_if(|p| p.unheard.is_empty()) else { return };
        let mut waiting = poll.waiting;
        waiting.sort_unstable_by_key(|&(since, x)| (since, cx.uid_of(x)));
        let waiting: Vec<NodeId> = waiting.into_iter().map(|(_, x)| x).collect();
        let later = poll.later.into_iter().filter(|x| !waiting.contains(x));
        coord.queue = waiting.iter().copied().chain(later).collect();
        coord.holder = poll.holding.map(|(_, x)| x);
        coord.recovering = false;
        for &x in &coord.queue {
            out.emit(Event::Queued { node: x, transaction: None });
        }
        if TIMEOUT && coord.holder.is_some() {
            out.set_timer(Timer::HolderSilent { fencing: self.fencing }, self.config.timeout);
        }
        self.grant_if_free(cx, out);
    }

    /// A participant answers a recovered coordinator's POLL (rule 12).
    fn status(&self) -> ParticipantState {
        match self.participant {
            Participant::Idle => ParticipantState::Idle,
            Participant::AwaitingGrant => ParticipantState::Waiting { since: self.requested_at },
            Participant::Holding => ParticipantState::Holding { fencing: self.entered_with },
        }
    }

    fn grant_if_free(&mut self, cx: &Context, out: &mut Out) {
        let Some(coord) = self.coord.as_mut() else { return };
        if coord.holder.is_some() || coord.recovering {
            return;
        }
        let Some(next) = coord.queue.pop_front() else { return };
        coord.holder = Some(next);
        self.fencing += 1;
        let fencing = self.fencing;
        out.emit(Event::Granted { node: next });
        if TIMEOUT {
            out.set_timer(Timer::HolderSilent { fencing }, self.config.timeout);
        }
        // Epochs and grants stay far below 2³², each in its half of the packed token.
        let fencing = FencingToken::new(self.epoch as u32, fencing as u32).packed();
        if next == self.me {
            self.participant_receives_grant(fencing, out);
        } else {
            out.send(next, Msg::Grant { fencing });
        }
        let _ = cx;
    }

    fn participant_receives_grant(&mut self, fencing: u64, out: &mut Out) {
        // A grant of an older epoch died with its coordinator.
        if self.participant == Participant::AwaitingGrant
            && u64::from(FencingToken::from_packed(fencing).epoch) == self.epoch
        {
            if self.config.failover {
                out.cancel_timer(Timer::ProbeDue);
            }
            self.participant = Participant::Holding;
            // Only the state a POLL is answered from is kept: equal states stay equal.
            self.requested_at = 0;
            self.entered_with = fencing;
            out.emit(Event::Entered { fencing });
        }
    }

    /// Failover: the probing period is over.
    fn probe_due(&mut self, cx: &Context, out: &mut Out) {
        if self.participant != Participant::AwaitingGrant || self.coord.is_some() {
            return;
        }
        if self.unanswered {
            // Silent for a whole period: suspect it and ask the next candidate.
            let silent = self.coordinator;
            if !self.suspects.contains(&silent) {
                self.suspects.push(silent);
            }
            out.emit(Event::Suspect { node: silent });
            let next = (0..self.n)
                .filter(|x| !self.suspects.contains(x))
                .max_by_key(|&x| cx.uid_of(x))
                .unwrap_or(self.me);
            self.coordinator = next;
            self.candidate = true;
            if next == self.me {
                return self.take_over(cx, self.epoch + 1, out);
            }
        }
        let msg = if self.candidate { Msg::Takeover { epoch: self.epoch + 1 } } else { Msg::Probe };
        out.send(self.coordinator, msg);
        self.unanswered = true;
        out.set_timer(Timer::ProbeDue, self.config.probe_every);
    }

    /// Failover: become the coordinator of `epoch` and announce it.
    fn take_over(&mut self, cx: &Context, epoch: u64, out: &mut Out) {
        self.epoch = epoch;
        self.coordinator = self.me;
        self.candidate = false;
        self.unanswered = false;
        out.cancel_timer(Timer::ProbeDue);
        out.emit(Event::Leader { leader: cx.uid(), term: epoch });
        let mut coord = Coordinator { recovering: true, ..Coordinator::default() };
        match self.participant {
            Participant::Holding => coord.holder = Some(self.me),
            Participant::AwaitingGrant => {
                coord.queue.push_back(self.me);
                out.emit(Event::Queued { node: self.me, transaction: None });
            }
            Participant::Idle => {}
        }
        self.coord = Some(coord);
        for x in (0..self.n).filter(|&x| x != self.me) {
            out.send(x, Msg::Coordinator { epoch });
        }
        out.set_timer(Timer::RecoveryOver, self.config.probe_every);
    }

    /// Failover: `from` announces itself coordinator of `epoch`.
    fn follow(&mut self, cx: &Context, from: NodeId, epoch: u64, out: &mut Out) {
        if epoch < self.epoch || (epoch == self.epoch && self.coordinator == from && !self.candidate) {
            if from == self.coordinator {
                self.unanswered = false;
            }
            return;
        }
        self.epoch = epoch;
        self.coordinator = from;
        self.candidate = false;
        self.unanswered = false;
        self.coord = None;
        out.emit(Event::Leader { leader: cx.uid_of(from), term: epoch });
        match self.participant {
            Participant::AwaitingGrant => out.send(from, Msg::Request),
            Participant::Holding => out.send(from, Msg::Holding),
            Participant::Idle => {}
        }
    }
}

impl<const TIMEOUT: bool> Process for CentralCoordinator<TIMEOUT> {
    type Msg = Msg;
    type Timer = Timer;

    fn on_message(&mut self, cx: &Context, from: NodeId, msg: Msg, out: &mut Out) {
        match msg {
            Msg::Grant { fencing } => self.participant_receives_grant(fencing, out),
            Msg::Request | Msg::Release | Msg::Holding | Msg::Status { .. } => {
                self.coordinator_receives(cx, from, msg, out)
            }
            Msg::Poll => {
                if from == self.coordinator && self.coord.is_none() {
                    out.send(from, Msg::Status { state: self.status() });
                }
            }
            Msg::Probe => {
                if self.coord.is_some() {
                    out.send(from, Msg::Alive);
                }
            }
            Msg::Alive => {
                if from == self.coordinator {
                    self.unanswered = false;
                }
            }
            Msg::Takeover { epoch } => {
                // A coordinator asked to take over is alive and keeps its state: it answers.
                if self.coord.is_some() {
                    out.send(from, Msg::Coordinator { epoch: self.epoch });
                } else if epoch > self.epoch {
                    self.take_over(cx, epoch, out);
                }
            }
            Msg::Coordinator { epoch } => self.follow(cx, from, epoch, out),
        }
    }

    fn on_timer(&mut self, cx: &Context, timer: Timer, out: &mut Out) {
        let fencing = match timer {
            Timer::HolderSilent { fencing } => fencing,
            Timer::ProbeDue => return self.probe_due(cx, out),
            Timer::RecoveryOver => {
                if let Some(coord) = self.coord.as_mut() {
                    coord.recovering = false;
                }
                return self.grant_if_free(cx, out);
            }
        };
        if let Some(coord) = self.coord.as_mut()
            && fencing == self.fencing
            && let Some(holder) = coord.holder.take()
        {
            // Rule 7: silence means the holder crashed. It may only be slow.
            out.emit(Event::Suspect { node: holder });
            self.grant_if_free(cx, out);
        }
    }

    fn on_request(&mut self, cx: &Context, req: Request, out: &mut Out) {
        match req {
            Request::Acquire if self.participant == Participant::Idle => {
                self.participant = Participant::AwaitingGrant;
                self.requested_at = cx.now;
                if self.config.failover && self.coord.is_none() {
                    self.unanswered = false;
                    out.set_timer(Timer::ProbeDue, self.config.probe_every);
                }
                self.send_to_coordinator(cx, Msg::Request, out);
            }
            Request::Release if self.participant == Participant::Holding => {
                self.participant = Participant::Idle;
                self.entered_with = 0;
                out.emit(Event::Exited);
                self.send_to_coordinator(cx, Msg::Release, out);
            }
            _ => {}
        }
    }

    /// A recovered participant has forgotten its request; a recovered coordinator has forgotten
    /// its queue and its holder, but not its grant counter, and polls the others for them
    /// (rules 12 and 13).
    /// With failover, a recovered coordinator comes back as a plain participant (somebody else
    /// may have taken over).
    fn on_recover(&mut self, cx: &Context, out: &mut Out) {
        self.participant = Participant::Idle;
        self.requested_at = 0;
        self.entered_with = 0;
        self.unanswered = false;
        if self.coord.is_some() {
            self.coord = None;
            if !self.config.failover {
                let unheard: Vec<NodeId> = (0..self.n).filter(|&x| x != self.me).collect();
                for &x in &unheard {
                    out.send(x, Msg::Poll);
                }
                let poll = PollState { unheard, ..PollState::default() };
                self.coord =
                    Some(Coordinator { recovering: true, poll: Some(poll), ..Coordinator::default() });
                self.finish_poll(cx, out);
            }
        }
    }

    fn in_critical_section(&self) -> bool {
        self.participant == Participant::Holding
    }
}

impl<const TIMEOUT: bool> Algorithm for CentralCoordinator<TIMEOUT> {
    const NAME: &'static str = if TIMEOUT { "central-timeout" } else { "central" };

    /// Only the coordinator grants and polls: a GRANT, and the fencing token in it, or a POLL
    /// from any other node could not have been issued by the sender.
    fn admits(&self, from: NodeId, msg: &Msg) -> Result<(), &'static str> {
        match msg {
            Msg::Grant { .. } if from != self.coordinator => {
                Err("a GRANT (fencing token) from a node that is not the coordinator")
            }
            Msg::Poll if from != self.coordinator => Err("a POLL from a node that is not the coordinator"),
            _ => Ok(()),
        }
    }
    const FAMILY: Family = Family::Mutex;
    const SUMMARY: &'static str = if TIMEOUT {
        "coordinator that re-grants when the holder is silent too long (the unsafe obvious fix)"
    } else {
        "one coordinator queues REQUESTs and GRANTs in FIFO order; 3 messages per entry"
    };
    type Config = Config;

    fn configure(setup: &Setup) -> Result<Config, ParamError> {
        let coordinator: NodeId = setup.params.get("coordinator", 0)?;
        if coordinator as usize >= setup.uids.len() {
            return Err(ParamError::OutOfRange {
                key: "coordinator".into(),
                reason: format!("position {coordinator} does not exist (0..{})", setup.uids.len()),
            });
        }
        let timeout = if TIMEOUT { setup.params.duration("timeout", 10 * MILLISECOND)? } else { 0 };
        let failover: bool = setup.params.get("failover", false)?;
        let probe_every = setup.params.duration("probe_every", 2 * setup.max_delay + MILLISECOND)?;
        if probe_every == 0 {
            return Err(ParamError::OutOfRange {
                key: "probe_every".into(),
                reason: "must be positive".into(),
            });
        }
        Ok(Config { coordinator, timeout, failover, probe_every })
    }

    fn new(me: NodeId, config: &Config, setup: &Setup) -> Self {
        CentralCoordinator {
            me,
            n: setup.uids.len() as u32,
            coordinator: config.coordinator,
            config: *config,
            participant: Participant::Idle,
            requested_at: 0,
            entered_with: 0,
            epoch: 0,
            unanswered: false,
            candidate: false,
            suspects: Vec::new(),
            coord: (me == config.coordinator).then(Coordinator::default),
            fencing: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestSystem;
    use ringleader_core::harness::Harness;

    /// The failover probing period: 2·Ttrans + 1 ms with Ttrans = 1 ms.
    const PROBE: Time = 3 * MILLISECOND;

    /// Position `me` of three (uids 1, 2, 3), the coordinator at position 0.
    fn node<const T: bool>(me: NodeId) -> Harness<CentralCoordinator<T>> {
        TestSystem::new(3).node(me)
    }

    fn failover(me: NodeId) -> Harness<Central> {
        TestSystem::new(3).param("failover", "true").node(me)
    }

    fn queued(node: NodeId) -> Event {
        Event::Queued { node, transaction: None }
    }

    /// Rule 1: a participant sends REQUEST to the coordinator and waits.
    #[test]
    fn rule_1_a_participant_requests_from_the_coordinator() {
        let mut p = node::<false>(1);
        let step = p.request(Request::Acquire);
        assert_eq!(step.sent(), vec![(0, Msg::Request)]);
        assert!(step.emitted().is_empty());
        assert!(p.request(Request::Acquire).is_empty(), "one request at a time");
    }

    /// Rule 2: GRANT lets it in; leaving sends RELEASE.
    #[test]
    fn rule_2_grant_enters_and_leaving_releases() {
        let mut p = node::<false>(1);
        p.request(Request::Acquire);
        assert_eq!(p.deliver(0, Msg::Grant { fencing: 1 }).emitted(), vec![Event::Entered { fencing: 1 }]);
        assert!(p.process.in_critical_section());
        let step = p.request(Request::Release);
        assert_eq!(step.emitted(), vec![Event::Exited]);
        assert_eq!(step.sent(), vec![(0, Msg::Release)]);
    }

    /// Rule 3: the coordinator queues every REQUEST in arrival order.
    #[test]
    fn rule_3_the_coordinator_queues_requests_in_arrival_order() {
        let mut c = node::<false>(0);
        c.deliver(1, Msg::Request);
        assert_eq!(c.deliver(2, Msg::Request).emitted(), vec![queued(2)]);
        assert!(c.deliver(2, Msg::Request).sent().is_empty(), "busy: queued only");
        assert_eq!(c.process.coord.as_ref().unwrap().queue, VecDeque::from([2, 2]));
    }

    /// Rule 4: only the holder's RELEASE frees the resource.
    #[test]
    fn rule_4_release_from_the_holder_frees_the_resource() {
        let mut c = node::<false>(0);
        c.deliver(1, Msg::Request);
        assert!(c.deliver(2, Msg::Release).is_empty(), "not the holder");
        assert!(c.deliver(1, Msg::Release).is_empty());
        assert_eq!(c.process.coord.as_ref().unwrap().holder, None);
    }

    /// Rule 5: free with a non-empty queue, the coordinator grants the head with the next
    /// fencing token.
    #[test]
    fn rule_5_a_free_coordinator_grants_the_head_of_the_queue() {
        let mut c = node::<false>(0);
        let step = c.deliver(1, Msg::Request);
        assert_eq!(step.sent(), vec![(1, Msg::Grant { fencing: 1 })]);
        assert_eq!(step.emitted(), vec![queued(1), Event::Granted { node: 1 }]);
        c.deliver(2, Msg::Request);
        let step = c.deliver(1, Msg::Release);
        assert_eq!(step.sent(), vec![(2, Msg::Grant { fencing: 2 })]);
        assert_eq!(step.emitted(), vec![Event::Granted { node: 2 }]);
    }

    /// Rule 6: the coordinator's own request and grant are local steps.
    #[test]
    fn rule_6_the_coordinators_own_request_is_local() {
        let mut c = node::<false>(0);
        let step = c.request(Request::Acquire);
        assert!(step.sent().is_empty());
        assert_eq!(
            step.emitted(),
            vec![queued(0), Event::Granted { node: 0 }, Event::Entered { fencing: 1 }]
        );
        c.deliver(1, Msg::Request);
        let step = c.request(Request::Release);
        assert_eq!(step.emitted(), vec![Event::Exited, Event::Granted { node: 1 }]);
        assert_eq!(step.sent(), vec![(1, Msg::Grant { fencing: 2 })]);
    }

    /// Rule 7 (`central-timeout`): a holder silent for `timeout` is suspected and the next
    /// request is granted; a RELEASE in time disarms the timer.
    #[test]
    fn rule_7_a_silent_holder_is_timed_out_and_the_next_is_granted() {
        let mut c = node::<true>(0);
        assert_eq!(
            c.deliver(1, Msg::Request).set(),
            vec![(Timer::HolderSilent { fencing: 1 }, 10 * MILLISECOND)]
        );
        c.deliver(2, Msg::Request);
        let step = c.fire(Timer::HolderSilent { fencing: 1 });
        assert_eq!(step.emitted(), vec![Event::Suspect { node: 1 }, Event::Granted { node: 2 }]);
        assert_eq!(step.sent(), vec![(2, Msg::Grant { fencing: 2 })]);
        assert_eq!(c.deliver(2, Msg::Release).cancelled(), vec![Timer::HolderSilent { fencing: 2 }]);
        assert!(c.armed().is_empty());
    }

    /// Rule 8 (failover): a waiting participant probes the coordinator every period and suspects
    /// it when a probe is still unanswered at the next period.
    #[test]
    fn rule_8_a_waiting_participant_probes_and_suspects_a_silent_coordinator() {
        let mut p = failover(1);
        assert_eq!(p.request(Request::Acquire).set(), vec![(Timer::ProbeDue, PROBE)]);
        let step = p.fire(Timer::ProbeDue);
        assert_eq!(step.sent(), vec![(0, Msg::Probe)]);
        p.deliver(0, Msg::Alive);
        let step = p.fire(Timer::ProbeDue);
        assert_eq!(step.sent(), vec![(0, Msg::Probe)], "answered: probe again");
        assert!(step.emitted().is_empty());
        let step = p.fire(Timer::ProbeDue);
        assert_eq!(step.emitted(), vec![Event::Suspect { node: 0 }]);
        assert_eq!(step.sent(), vec![(2, Msg::Takeover { epoch: 1 })]);
        assert!(node::<false>(0).deliver(1, Msg::Probe).sent() == vec![(1, Msg::Alive)]);
    }

    /// Rule 9 (failover): a silent candidate is suspected in turn, down to the asker itself.
    #[test]
    fn rule_9_takeover_goes_down_the_ids_to_the_highest_unsuspected() {
        let mut p = failover(1);
        p.request(Request::Acquire);
        p.fire(Timer::ProbeDue);
        p.fire(Timer::ProbeDue);
        let step = p.fire(Timer::ProbeDue);
        assert_eq!(
            step.emitted(),
            vec![Event::Suspect { node: 2 }, Event::Leader { leader: 2, term: 1 }, queued(1)]
        );
        assert_eq!(step.sent(), vec![(0, Msg::Coordinator { epoch: 1 }), (2, Msg::Coordinator { epoch: 1 })]);
    }

    /// Rule 10 (failover): the new coordinator opens epoch + 1, announces it, rebuilds its queue
    /// from re-sent requests and HOLDING reports, and grants only after listening a period.
    #[test]
    fn rule_10_a_new_coordinator_announces_listens_then_grants() {
        let mut c = failover(2);
        let step = c.deliver(1, Msg::Takeover { epoch: 1 });
        assert_eq!(step.emitted(), vec![Event::Leader { leader: 3, term: 1 }]);
        assert_eq!(step.sent(), vec![(0, Msg::Coordinator { epoch: 1 }), (1, Msg::Coordinator { epoch: 1 })]);
        assert_eq!(step.set(), vec![(Timer::RecoveryOver, PROBE)]);
        assert_eq!(c.deliver(1, Msg::Request).emitted(), vec![queued(1)], "no grant while listening");
        let step = c.fire(Timer::RecoveryOver);
        assert_eq!(step.sent(), vec![(1, Msg::Grant { fencing: FencingToken::new(1, 1).packed() })]);

        let mut waiting = failover(1);
        waiting.request(Request::Acquire);
        let step = waiting.deliver(2, Msg::Coordinator { epoch: 1 });
        assert_eq!(step.emitted(), vec![Event::Leader { leader: 3, term: 1 }]);
        assert_eq!(step.sent(), vec![(2, Msg::Request)]);
        let mut holder = failover(1);
        holder.request(Request::Acquire);
        holder.deliver(0, Msg::Grant { fencing: 1 });
        assert_eq!(holder.deliver(2, Msg::Coordinator { epoch: 1 }).sent(), vec![(2, Msg::Holding)]);
    }

    /// Rule 10, on links that reorder: a holder answers COORDINATOR with HOLDING, leaves, and
    /// its RELEASE overtakes the HOLDING. The HOLDING that arrives after it is stale: the
    /// section is free, and the waiting request is granted once the listening period is over
    /// (found by a seeded run: the section stayed busy for good and the waiter starved).
    #[test]
    fn rule_10_a_release_that_overtook_its_holding_leaves_the_section_free() {
        let mut c = failover(2);
        c.deliver(1, Msg::Takeover { epoch: 1 });
        c.deliver(0, Msg::Release);
        c.deliver(0, Msg::Holding);
        c.deliver(1, Msg::Request);
        let step = c.fire(Timer::RecoveryOver);
        assert_eq!(step.sent(), vec![(1, Msg::Grant { fencing: FencingToken::new(1, 1).packed() })]);
    }

    /// Rule 11 (failover): a GRANT of an older epoch is ignored.
    #[test]
    fn rule_11_a_grant_of_an_older_epoch_is_ignored() {
        let mut p = failover(1);
        p.request(Request::Acquire);
        p.deliver(2, Msg::Coordinator { epoch: 1 });
        assert!(p.deliver(0, Msg::Grant { fencing: 5 }).is_empty());
        assert_eq!(
            p.deliver(2, Msg::Grant { fencing: FencingToken::new(1, 1).packed() }).emitted(),
            vec![Event::Entered { fencing: FencingToken::new(1, 1).packed() }]
        );
    }

    fn status(state: ParticipantState) -> Msg {
        Msg::Status { state }
    }

    /// Rule 12: a recovered coordinator POLLs every other node and grants nothing until all of
    /// them answered; a participant answers where it stands, and only to the coordinator.
    #[test]
    fn rule_12_a_recovered_coordinator_polls_everyone_and_grants_only_after_every_answer() {
        let mut c = node::<false>(0);
        c.deliver(1, Msg::Request);
        c.deliver(2, Msg::Request);
        c.crash();
        let step = c.recover();
        assert_eq!(step.sent(), vec![(1, Msg::Poll), (2, Msg::Poll)]);
        assert!(step.emitted().is_empty() && step.set().is_empty());
        let step = c.deliver(2, status(ParticipantState::Waiting { since: 5 * MILLISECOND }));
        assert!(step.is_empty(), "id 2 has not answered yet: nothing is granted");
        assert!(c.deliver(1, Msg::Request).is_empty(), "a REQUEST of a node not heard yet is dropped");
        let step = c.deliver(1, status(ParticipantState::Holding { fencing: 1 }));
        assert_eq!(step.emitted(), vec![queued(2)], "id 2 (position 1) holds: id 3 waits");
        assert!(step.sent().is_empty());
        let step = c.deliver(1, Msg::Release);
        assert_eq!(step.sent(), vec![(2, Msg::Grant { fencing: 2 })], "the counter survived the crash");

        let mut p = node::<false>(1);
        assert_eq!(p.deliver(0, Msg::Poll).sent(), vec![(0, status(ParticipantState::Idle))]);
        p.at(7 * MILLISECOND).request(Request::Acquire);
        assert_eq!(
            p.deliver(0, Msg::Poll).sent(),
            vec![(0, status(ParticipantState::Waiting { since: 7 * MILLISECOND }))]
        );
        p.deliver(0, Msg::Grant { fencing: 4 });
        assert_eq!(
            p.deliver(0, Msg::Poll).sent(),
            vec![(0, status(ParticipantState::Holding { fencing: 4 }))]
        );
        assert!(p.deliver(2, Msg::Poll).is_empty(), "only the coordinator polls");
        assert!(node::<false>(1).process.admits(2, &Msg::Poll).is_err());
        assert!(node::<false>(1).process.admits(0, &Msg::Poll).is_ok());
    }

    /// Rule 13: the answers rebuild the holder and the queue — waiting nodes by request time,
    /// then id, then the REQUESTs of nodes already heard, in arrival order — before anything is
    /// granted.
    #[test]
    fn rule_13_the_answers_rebuild_the_queue_by_request_time_then_id() {
        let mut c = TestSystem::new(5).node::<Central>(0);
        c.crash();
        c.recover();
        c.deliver(4, status(ParticipantState::Waiting { since: 9 }));
        c.deliver(1, status(ParticipantState::Idle));
        c.deliver(1, Msg::Request);
        c.deliver(3, status(ParticipantState::Waiting { since: 4 }));
        let step = c.deliver(2, status(ParticipantState::Waiting { since: 4 }));
        assert_eq!(
            step.emitted(),
            vec![queued(2), queued(3), queued(4), queued(1), Event::Granted { node: 2 }]
        );
        assert_eq!(step.sent(), vec![(2, Msg::Grant { fencing: 1 })]);
        assert_eq!(c.process.coord.as_ref().unwrap().queue, VecDeque::from([3, 4, 1]));

        // Nobody waits or holds: the coordinator serves the next request at once.
        let mut c = node::<false>(0);
        c.crash();
        c.recover();
        c.deliver(1, status(ParticipantState::Idle));
        assert!(c.deliver(2, status(ParticipantState::Idle)).is_empty());
        assert_eq!(c.deliver(1, Msg::Request).sent(), vec![(1, Msg::Grant { fencing: 1 })]);
    }

    /// Rule 13 in `central-timeout`: a rebuilt holder is watched by the timer again.
    #[test]
    fn rule_13_central_timeout_rearms_its_timer_for_a_rebuilt_holder() {
        let mut c = node::<true>(0);
        c.deliver(1, Msg::Request);
        c.crash();
        c.recover();
        c.deliver(2, status(ParticipantState::Waiting { since: 3 }));
        let step = c.deliver(1, status(ParticipantState::Holding { fencing: 1 }));
        assert_eq!(step.set(), vec![(Timer::HolderSilent { fencing: 1 }, 10 * MILLISECOND)]);
        let step = c.fire(Timer::HolderSilent { fencing: 1 });
        assert_eq!(step.emitted(), vec![Event::Suspect { node: 1 }, Event::Granted { node: 2 }]);
        assert_eq!(step.sent(), vec![(2, Msg::Grant { fencing: 2 })]);
    }

    /// With failover, a recovered coordinator comes back as a plain participant: it polls nobody.
    #[test]
    fn a_recovered_coordinator_with_failover_does_not_poll() {
        let mut c = failover(0);
        c.crash();
        assert!(c.recover().is_empty());
        assert!(c.process.coord.is_none());
    }
}
