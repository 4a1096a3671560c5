//! # Centralized coordinator (and its timeout variant)
//!
//! *Seed 003 "Exclusão Mútua → Coordenador" and "Lidando com Falhas"; seed 004.*
//!
//! ## The idea
//! Step back to a centralized system: one process, the *coordinator*, owns the permission and
//! hands it out in the order requests arrive. Every other process is a *participant*.
//!
//! ## The rules
//! Participant: send REQUEST to the coordinator; wait for GRANT; access; send RELEASE.
//! Coordinator: the resource starts free; queue every REQUEST; on RELEASE mark it free; whenever
//! it is free and the queue is not empty, dequeue the head, send it GRANT, mark it busy.
//! A process may play both roles; its own request and grant are local steps, not messages.
//!
//! ```text
//!   coordinator:  free ──queue non-empty / GRANT(head)──▶ busy(holder) ──RELEASE(holder)──▶ free
//!   participant:  idle ──Acquire / REQUEST──▶ awaiting-grant ──GRANT──▶ holding ──Release / RELEASE──▶ idle
//! ```
//!
//! The seed's diagram also acknowledges every release ("ResponseFree"); that message carries no
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
//! ## Assumptions and known flaws
//! Safe, deadlock-free and FIFO-fair while nobody fails. The coordinator is a bottleneck and a
//! single point of failure: if it crashes the permission is lost with it (pair it with an
//! election); if the holder crashes, nobody enters again.
//!
//! `central-timeout` is the seed's "obvious" fix: if the holder does not release within
//! `timeout` (parameter, default 10 ms), the coordinator assumes it crashed and grants the next
//! request. With a holder that is only *slow* (paused), this puts two processes in the critical
//! section — the red rectangle of seed 003, found by the safety checker in
//! `scenarios/central-timeout-paused-holder.toml`.

use std::collections::VecDeque;

use ringleader_core::time::MILLISECOND;
use ringleader_core::{Context, Event, Message, NodeId, Outbox, Process, Request, Time};
use serde::{Deserialize, Serialize};

use crate::{Algorithm, Family, ParamError, Setup};

/// Messages of the centralized algorithm.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// A participant asks for the critical section.
    Request,
    /// The coordinator grants it, with a fencing token.
    Grant {
        /// Strictly increasing grant number.
        fencing: u64,
    },
    /// The holder gives it back.
    Release,
}

impl Message for Msg {
    const KINDS: &'static [&'static str] = &["request", "grant", "release"];
    fn kind_index(&self) -> usize {
        match self {
            Msg::Request => 0,
            Msg::Grant { .. } => 1,
            Msg::Release => 2,
        }
    }
}

/// Timers of the centralized algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Timer {
    /// `central-timeout` only: the holder of grant `fencing` has been silent too long.
    HolderSilent {
        /// The grant the timer watches.
        fencing: u64,
    },
}

/// Where a participant is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Participant {
    Idle,
    AwaitingGrant,
    Holding,
}

/// The coordinator's volatile state.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
struct Coordinator {
    holder: Option<NodeId>,
    queue: VecDeque<NodeId>,
}

/// A process of the centralized algorithm; `TIMEOUT` selects the seed's timeout variant.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CentralCoordinator<const TIMEOUT: bool> {
    me: NodeId,
    coordinator: NodeId,
    timeout: Time,
    participant: Participant,
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
        match msg {
            Msg::Request => {
                coord.queue.push_back(from);
                out.emit(Event::Queued { node: from });
            }
            Msg::Release => {
                if coord.holder == Some(from) {
                    coord.holder = None;
                    if TIMEOUT {
                        out.cancel_timer(Timer::HolderSilent { fencing: self.fencing });
                    }
                }
            }
            Msg::Grant { .. } => return,
        }
        self.grant_if_free(cx, out);
    }

    fn grant_if_free(&mut self, cx: &Context, out: &mut Out) {
        let Some(coord) = self.coord.as_mut() else { return };
        if coord.holder.is_some() {
            return;
        }
        let Some(next) = coord.queue.pop_front() else { return };
        coord.holder = Some(next);
        self.fencing += 1;
        let fencing = self.fencing;
        out.emit(Event::Granted { node: next });
        if TIMEOUT {
            out.set_timer(Timer::HolderSilent { fencing }, self.timeout);
        }
        if next == self.me {
            self.participant_receives_grant(fencing, out);
        } else {
            out.send(next, Msg::Grant { fencing });
        }
        let _ = cx;
    }

    fn participant_receives_grant(&mut self, fencing: u64, out: &mut Out) {
        if self.participant == Participant::AwaitingGrant {
            self.participant = Participant::Holding;
            out.emit(Event::Entered { fencing });
        }
    }
}

impl<const TIMEOUT: bool> Process for CentralCoordinator<TIMEOUT> {
    type Msg = Msg;
    type Timer = Timer;

    fn on_start(&mut self, _cx: &Context, _out: &mut Out) {}

    fn on_message(&mut self, cx: &Context, from: NodeId, msg: Msg, out: &mut Out) {
        match msg {
            Msg::Grant { fencing } => self.participant_receives_grant(fencing, out),
            other => self.coordinator_receives(cx, from, other, out),
        }
    }

    fn on_timer(&mut self, cx: &Context, timer: Timer, out: &mut Out) {
        let Timer::HolderSilent { fencing } = timer;
        if let Some(coord) = self.coord.as_mut()
            && fencing == self.fencing
            && let Some(holder) = coord.holder.take()
        {
            // The seed's rule: silence means the holder crashed. It may only be slow.
            out.emit(Event::Suspect { node: holder });
            self.grant_if_free(cx, out);
        }
    }

    fn on_request(&mut self, cx: &Context, req: Request, out: &mut Out) {
        match req {
            Request::Acquire if self.participant == Participant::Idle => {
                self.participant = Participant::AwaitingGrant;
                self.send_to_coordinator(cx, Msg::Request, out);
            }
            Request::Release if self.participant == Participant::Holding => {
                self.participant = Participant::Idle;
                out.emit(Event::Exited);
                self.send_to_coordinator(cx, Msg::Release, out);
            }
            _ => {}
        }
    }

    /// A recovered participant has forgotten its request; a recovered coordinator has forgotten
    /// its queue and its holder, but not its grant counter.
    fn on_recover(&mut self, _cx: &Context, _out: &mut Out) {
        self.participant = Participant::Idle;
        if self.coord.is_some() {
            self.coord = Some(Coordinator::default());
        }
    }

    fn in_critical_section(&self) -> bool {
        self.participant == Participant::Holding
    }
}

impl<const TIMEOUT: bool> Algorithm for CentralCoordinator<TIMEOUT> {
    const NAME: &'static str = if TIMEOUT { "central-timeout" } else { "central" };
    const FAMILY: Family = Family::Mutex;
    const SUMMARY: &'static str = if TIMEOUT {
        "coordinator that re-grants when the holder is silent too long (seed 003's unsafe fix)"
    } else {
        "one coordinator queues REQUESTs and GRANTs in FIFO order; 3 messages per entry"
    };
    /// (coordinator position, holder timeout)
    type Config = (NodeId, Time);

    fn configure(setup: &Setup) -> Result<(NodeId, Time), ParamError> {
        let coordinator: NodeId = setup.params.get("coordinator", 0)?;
        if coordinator as usize >= setup.uids.len() {
            return Err(ParamError::OutOfRange {
                key: "coordinator".into(),
                reason: format!("position {coordinator} does not exist (0..{})", setup.uids.len()),
            });
        }
        let timeout = if TIMEOUT { setup.params.duration("timeout", 10 * MILLISECOND)? } else { 0 };
        Ok((coordinator, timeout))
    }

    fn new(me: NodeId, &(coordinator, timeout): &(NodeId, Time), _setup: &Setup) -> Self {
        CentralCoordinator {
            me,
            coordinator,
            timeout,
            participant: Participant::Idle,
            coord: (me == coordinator).then(Coordinator::default),
            fencing: 0,
        }
    }
}
