//! # The lock service: a lock under a lease, decided by a Raft majority
//!
//! Every textbook mutual-exclusion algorithm in this crate trusts something a fault can break:
//! `central` trusts one coordinator, the permission algorithms trust every process to answer,
//! the token algorithms trust that the token is not lost, and `central-timeout` trusts a clock
//! to tell a dead holder from a slow one. When a holder's node dies, most of them lose the lock
//! for good; the timeout fix lets a slow holder and a new one in together. The notes' verdict is
//! that such fixes are "really limited", and their election section names the way out: decide
//! only with a majority. This is that way, as etcd, ZooKeeper and Consul take it (Burrows, "The
//! Chubby lock service", OSDI 2006): the lock table is a *replicated state machine* (Schneider
//! 1990) whose commands are ordered by consensus, and a holder keeps the lock only while its
//! *lease* (Gray & Cheriton 1989) is kept alive.
//!
//! Consensus is not written here. Each node runs TiKV's raft-rs (`RawNode`, Ongaro & Ousterhout,
//! "In Search of an Understandable Consensus Algorithm", 2014), which is itself a sans-IO state
//! machine: the replica feeds it messages and ticks, and carries out what each `Ready` asks —
//! write entries and hard state to stable storage ([`MemoryLog`]), then send messages, then
//! apply committed entries to the state machine ([`StateMachine`]).
//!
//! ## The rules
//!
//! 1. **Ticks.** Every `tick` of local time the replica ticks its Raft node; an election timeout
//!    is `election_ticks` ticks, a heartbeat `heartbeat_ticks`. Pre-vote and check-quorum are
//!    on: a partitioned node does not disturb the majority, and a leader that loses its
//!    majority steps down.
//! 2. **Randomness is ours.** raft-rs draws each randomized election timeout from a global RNG.
//!    The replica replaces that draw, before the next tick can compare against it, with one
//!    taken from the driver's seeded stream (`[election_ticks, 2·election_ticks)`): whenever
//!    the Raft node's election clock is at zero (it was just reset), its timeout is set again.
//!    Outgoing messages are sent in destination order. The same seed gives the same run.
//! 3. **Durable before acting.** A `Ready`'s entries and hard state are written to the log
//!    before the messages that follow from them are sent, and the fencing token a client sees
//!    comes from a committed entry.
//! 4. **Commands go through the log.** A client's request (grant a lease, keep it alive,
//!    acquire, release) is proposed as an entry; raft-rs forwards a follower's proposal to the
//!    leader. A request whose entry was not seen applied after `retry` is proposed again with
//!    the same request id (a proposal is dropped when leadership changes, and may be lost on
//!    the way). Every proposal carries an idempotency key (the node's session for its
//!    incarnation, and the request id): when the original and the retry both commit, the state
//!    machine applies the first and answers the second as a duplicate, changing nothing, so
//!    that a release retried after a waiting acquire cannot drop that acquire from the queue.
//! 5. **Replicated time.** Only the leader measures time: every `clock_every` while leases exist
//!    it proposes `Tick { elapsed }`, the local time since its previous Tick or since it became
//!    leader. Lease deadlines are in this replicated time, so a lease's remaining time survives
//!    a leader change; time between the old leader's last Tick and the new leader's first is
//!    never counted, which can only lengthen a lease at the server — the safe direction. Nor
//!    is the first Tick after a grant or keep-alive, whose time partly passed before that entry
//!    was applied (rule 1 of [`crate::state`]): no lease ends before its TTL of leader time has
//!    passed since it was granted or renewed.
//! 6. **A client trusts its lease less than the server does.** The client dates its lease from
//!    when it *sent* the grant or keep-alive request, by its own clock, and gives it up
//!    `margin` before the TTL ends (a tenth of the TTL by default, at least twice
//!    `clock_every`: it covers clocks whose rates differ). It keeps it
//!    alive every third of the TTL. A holder whose lease has run out
//!    by its own clock leaves the critical section.
//! 7. **Fencing.** A grant's fencing token is the Raft index of the entry whose application
//!    granted it, so tokens increase per lock across leader changes: a resource that refuses
//!    stale tokens refuses a holder that lost its lease while paused.
//! 8. **Crash and recovery.** A crash keeps the log (term, vote, entries, snapshot) and an
//!    incarnation number, which the recovery increments and every proposal carries (request
//!    ids restart, and entries of an earlier life are applied again while the node catches
//!    up: they must not answer new requests). It loses everything else: the Raft node, the state machine (rebuilt from the snapshot and the
//!    committed entries), the client's lease and requests. A recovered node catches up from the
//!    leader.
//! 9. **Compaction.** Every `snapshot_every` applied entries the replica snapshots the state
//!    machine and drops the log before it; a follower behind that point gets the snapshot.
//!
//! In the simulator the mutual-exclusion workload's user at node `i` is node `i`'s client: an
//! acquire request takes a lease (once) and then the lock named `lock`; the node reports
//! `Entered { fencing }` when the grant is applied and `Exited` on release or when its lease
//! runs out.

use std::collections::BTreeMap;
use std::fmt;

use protobuf::Message as _;
use raft::eraftpb::{Entry, Message as RaftMessage, MessageType};
use ringleader_core::time::MILLISECOND;
use ringleader_core::{Context, Event, Message, NodeId, Outbox, Process, Request, Time, Uid};
use serde::{Deserialize, Serialize};

use crate::log::MemoryLog;
use crate::planted::Planted;
use crate::replica::{Host, Proposal, Replica, Settings, Submit, Unreachable, raft_id};
use crate::state::{Applied, DeadlockPolicy, LeaseId, Notice, Op, Refusal, Reply, RequestId, StateMachine};
use ringleader_algorithms::params::ParamError;
use ringleader_algorithms::{Algorithm, Family, Setup};

/// The one lock name the mutual-exclusion workload uses.
pub const LOCK: &str = "lock";

/// A Raft message on the wire: its kind (raft-rs's `MessageType`), whether it is lease upkeep
/// (see [`Msg::is_detection`]) and its protobuf encoding.
#[derive(Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Msg {
    kind: u8,
    upkeep: bool,
    bytes: Vec<u8>,
}

impl fmt::Debug for Msg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({} bytes)", Self::KINDS.get(self.kind as usize).unwrap_or(&"unknown"), self.bytes.len())
    }
}

impl Msg {
    /// `m` on the wire; `trigger_upkeep` says whether the input that made the replica send it
    /// was itself upkeep (an upkeep message, or the tick or keep-alive timer).
    fn encode(m: &RaftMessage, trigger_upkeep: bool) -> Msg {
        let kind = m.get_msg_type();
        let upkeep = match kind {
            MessageType::MsgHeartbeat | MessageType::MsgHeartbeatResponse => true,
            MessageType::MsgAppend | MessageType::MsgAppendResponse | MessageType::MsgPropose => {
                let entries = m.get_entries();
                entries.iter().all(is_upkeep) && (!entries.is_empty() || trigger_upkeep)
            }
            _ => false,
        };
        Msg { kind: kind as u8, upkeep, bytes: m.write_to_bytes().unwrap_or_default() }
    }

    /// `m` on the wire, for a real node (which has no use for the upkeep flag).
    pub fn new(m: &RaftMessage) -> Msg {
        Msg::encode(m, false)
    }

    /// The Raft message this carries, if its bytes decode.
    pub fn decode(&self) -> Option<RaftMessage> {
        RaftMessage::parse_from_bytes(&self.bytes).ok()
    }
}

impl Message for Msg {
    /// raft-rs's message types, in its numbering.
    const KINDS: &'static [&'static str] = &[
        "hup",
        "beat",
        "propose",
        "append",
        "append_response",
        "request_vote",
        "request_vote_response",
        "snapshot",
        "heartbeat",
        "heartbeat_response",
        "unreachable",
        "snap_status",
        "check_quorum",
        "transfer_leader",
        "timeout_now",
        "read_index",
        "read_index_response",
        "request_pre_vote",
        "request_pre_vote_response",
    ];

    fn kind_index(&self) -> usize {
        (self.kind as usize).min(Self::KINDS.len() - 1)
    }

    /// Lease upkeep is failure detection by another name: heartbeats, and the appends (and their
    /// answers) that carry only keep-alives and the leader's clock entries, or that an upkeep
    /// input caused. A run whose requests are all served and whose only traffic is upkeep has
    /// told its story, as a detector's heartbeats do.
    fn is_detection(&self) -> bool {
        self.upkeep
    }
}

/// The lease an operation is made for, if any.
fn op_lease(op: &Op) -> Option<LeaseId> {
    match op {
        Op::KeepAlive { lease }
        | Op::Revoke { lease }
        | Op::Acquire { lease, .. }
        | Op::Release { lease, .. }
        | Op::Campaign { lease, .. }
        | Op::Proclaim { lease, .. }
        | Op::Resign { lease, .. } => Some(*lease),
        Op::Tick { .. } | Op::Grant { .. } | Op::Txn { .. } | Op::Auth { .. } => None,
    }
}

/// True for an entry that only keeps leases alive or moves the replicated clock.
fn is_upkeep(e: &Entry) -> bool {
    postcard::from_bytes::<Proposal>(&e.data)
        .is_ok_and(|p| matches!(p.op, Op::Tick { .. } | Op::KeepAlive { .. }))
}

/// The replica's timers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Timer {
    /// Rule 1: tick the Raft node (and, on the leader, the replicated clock).
    Tick,
    /// Rule 6: keep the client's lease alive.
    KeepAlive,
    /// Rule 6: the client's own view of its lease runs out.
    LeaseEnd,
    /// Rule 4: propose again what was not seen applied.
    Retry,
}

/// The service's settings (`--param`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Local time between two Raft ticks (`tick`, default 10 ms).
    pub tick: Time,
    /// Ticks without a leader before a follower campaigns (`election_ticks`, default 10).
    pub election_ticks: usize,
    /// Ticks between a leader's heartbeats (`heartbeat_ticks`, default 2).
    pub heartbeat_ticks: usize,
    /// A session lease's time to live (`ttl`, default 500 ms).
    pub ttl: Time,
    /// How long before its TTL a client gives its lease up (`margin`, default ttl / 10; at
    /// least twice `clock_every`).
    pub margin: Time,
    /// How often the leader moves the replicated clock while leases exist (`clock_every`,
    /// default ttl / 20, at least one tick).
    pub clock_every: Time,
    /// A request not seen applied after this is proposed again (`retry`, default 2 election
    /// timeouts).
    pub retry: Time,
    /// Applied entries between two snapshots (`snapshot_every`, default 1000).
    pub snapshot_every: u64,
    /// After an involuntary loss (expiry, wound) a lock is not granted again for this long
    /// (`lock_delay`, default 0).
    pub lock_delay: Time,
    /// What a wait that would close a cycle of the wait-for graph does (`deadlock`:
    /// `report`, `wait-die` or `wound-wait`; default `report`).
    pub policy: DeadlockPolicy,
    /// A bug planted in the state machine (`planted`, a test build only; see
    /// [`super::planted`]).
    pub planted: Option<Planted>,
}

impl Config {
    fn settings(&self) -> Settings {
        Settings {
            election_ticks: self.election_ticks,
            heartbeat_ticks: self.heartbeat_ticks,
            clock_every: self.clock_every,
            snapshot_every: self.snapshot_every,
            lock_delay: self.lock_delay,
            policy: self.policy,
            planted: self.planted,
        }
    }
}

/// What this node's client (the workload's user here) has and waits for. A crash loses it.
#[derive(Clone, Debug)]
struct Client {
    me: NodeId,
    config: Config,
    /// The replica's incarnation this client lives in (rule 8).
    incarnation: u64,
    lease: Option<LeaseId>,
    /// Local time until which the client trusts its lease (rule 6).
    lease_until: Time,
    /// The workload asked for the lock and has not had it yet.
    wants: bool,
    /// The fencing token of the grant while in the critical section.
    holding: Option<u64>,
    /// The highest fencing token this client entered with: a grant at or below it is one it
    /// already used (a duplicate's first reply, a grant seen again in the state machine).
    last_fencing: u64,
    /// Proposals not yet seen applied: request id → (proposal, local time first sent).
    outstanding: BTreeMap<RequestId, (Proposal, Time)>,
    next_request: RequestId,
    /// The retry timer is armed.
    retrying: bool,
    /// A release is proposed and not yet applied: an acquire waits for it, so that the two
    /// are applied in the order the client made them.
    releasing: bool,
    /// The keep-alive timer is to be armed at the end of this step.
    keepalive_due: bool,
    /// The lease-end timer is to be re-armed at the end of this step.
    lease_timer_due: bool,
    /// Events waiting for [`LockService::drive`] to report them.
    events: Vec<Event>,
}

/// One replica of the lock service and its node's client (see the module documentation).
pub struct LockService {
    replica: Replica<MemoryLog>,
    /// The uid of the Raft leader this node knows, if any.
    leader_uid: Option<Uid>,
    client: Client,
    /// The input being handled is lease upkeep (see [`Msg::is_detection`]).
    upkeep: bool,
}

impl fmt::Debug for LockService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LockService")
            .field("me", &self.replica.id())
            .field("role", &self.replica.role())
            .field("term", &self.replica.term())
            .field("leader", &self.replica.leader().map_or(0, |l| l as u64 + 1))
            .field("applied", &self.replica.machine().last_applied())
            .field("holding", &self.client.holding)
            .finish()
    }
}

impl Serialize for LockService {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("LockService", 6)?;
        st.serialize_field("role", &format!("{:?}", self.replica.role()).to_lowercase())?;
        st.serialize_field("term", &self.replica.term())?;
        st.serialize_field("leader", &self.replica.leader().map(|l| l as u64))?;
        st.serialize_field("applied", &self.replica.machine().last_applied())?;
        st.serialize_field("lease", &self.client.lease)?;
        st.serialize_field("holding", &self.client.holding)?;
        st.end()
    }
}

/// The simulator's side of a [`Replica`]: messages go to the outbox, leader changes and the
/// client's events are reported, applied entries reach this node's client.
struct SimHost<'a> {
    cx: &'a Context<'a>,
    out: &'a mut Outbox<Msg, Timer>,
    client: &'a mut Client,
    leader_uid: &'a mut Option<Uid>,
    upkeep: bool,
}

impl Host for SimHost<'_> {
    fn leader_changed(&mut self, leader: Option<NodeId>, term: u64) {
        match leader {
            None => {
                *self.leader_uid = None;
                self.out.emit(Event::LeaderLost);
            }
            Some(node) => {
                let uid: Uid = self.cx.uid_of(node);
                *self.leader_uid = Some(uid);
                self.out.emit(Event::Leader { leader: uid, term });
            }
        }
    }

    /// The simulated network takes every message (it may lose it on the way, which the sender
    /// cannot tell).
    fn send(&mut self, to: NodeId, msg: RaftMessage) -> Result<(), Unreachable> {
        self.out.send(to, Msg::encode(&msg, self.upkeep));
        Ok(())
    }

    fn applied(&mut self, _: u64, p: &Proposal, applied: Applied, _: &StateMachine, submit: &mut Submit) {
        self.client.react(self.cx, p, applied, submit);
    }
}

impl Client {
    fn new(me: NodeId, config: Config, incarnation: u64) -> Client {
        Client {
            me,
            config,
            incarnation,
            lease: None,
            lease_until: 0,
            wants: false,
            holding: None,
            last_fencing: 0,
            outstanding: BTreeMap::new(),
            next_request: 0,
            retrying: false,
            releasing: false,
            keepalive_due: false,
            lease_timer_due: false,
            events: Vec::new(),
        }
    }

    fn propose(&mut self, cx: &Context, op: Op, submit: &mut Submit) -> RequestId {
        let request = self.next_request;
        self.next_request += 1;
        let p = Proposal::of_node(self.me, self.incarnation, request, op);
        submit.submit(&p);
        self.outstanding.insert(request, (p, cx.now));
        request
    }

    /// This node's client learns what the applied entry did for it. When a retried proposal
    /// and its original both commit (rule 4), the later is a duplicate the state machine did
    /// not apply and is ignored here. A request too old for the state machine to tell
    /// ([`Refusal::Forgotten`]) was not applied now: a wanted lease or lock is asked for again.
    fn react(&mut self, cx: &Context, p: &Proposal, applied: Applied, submit: &mut Submit) {
        if p.origin == self.me && p.incarnation == self.incarnation {
            let mine = self.outstanding.remove(&p.request);
            // A request of ours whose first application this node did not see (it came inside
            // a snapshot) is answered by its retry, a duplicate carrying the first reply.
            let reply = match applied.reply {
                Reply::Duplicate { first } if mine.is_some() => *first,
                reply => reply,
            };
            match (&p.op, reply) {
                (_, Reply::Duplicate { .. }) => {}
                (Op::Grant { .. }, Reply::Granted { lease, .. }) => {
                    if let (Some((_, sent)), None) = (&mine, self.lease) {
                        self.lease = Some(lease);
                        self.trust_lease_from(*sent);
                        self.keepalive_due = true;
                        if self.wants {
                            self.acquire(cx, submit);
                        }
                    } else if self.lease != Some(lease) {
                        self.propose(cx, Op::Revoke { lease }, submit);
                    }
                }
                (Op::KeepAlive { .. }, Reply::KeptAlive { .. }) => {
                    if let Some((_, sent)) = mine {
                        self.trust_lease_from(sent);
                    }
                }
                (Op::Acquire { lease, .. }, Reply::Acquired { fencing }) => {
                    self.granted(cx, *lease, fencing, submit)
                }
                (Op::Acquire { .. }, Reply::Aborted) if mine.is_some() && self.wants => {
                    self.acquire(cx, submit)
                }
                (Op::Release { .. }, _) if mine.is_some() => {
                    self.releasing = false;
                    if self.wants {
                        self.acquire(cx, submit);
                    }
                }
                (op, Reply::Refused { reason: Refusal::Forgotten }) if mine.is_some() => match op {
                    Op::Grant { .. } if self.lease.is_none() && self.wants => self.take_lease(cx, submit),
                    Op::Acquire { .. } if self.wants => self.acquire(cx, submit),
                    Op::Release { .. } => {
                        self.releasing = false;
                        if self.wants {
                            self.acquire(cx, submit);
                        }
                    }
                    _ => {}
                },
                (Op::Grant { .. } | Op::Revoke { .. }, _) => {}
                (op, Reply::NoSuchLease) if mine.is_some() && op_lease(op) == self.lease => {
                    self.lease_gone(cx, submit)
                }
                _ => {}
            }
        }
        for n in applied.notices {
            match n {
                Notice::Granted { lease, fencing, .. } => self.granted(cx, lease, fencing, submit),
                Notice::Aborted { lease, .. } if Some(lease) == self.lease && self.wants => {
                    self.acquire(cx, submit)
                }
                Notice::Lost { lease, .. } if Some(lease) == self.lease => self.leave(),
                Notice::LeaseExpired { lease, .. } if Some(lease) == self.lease => {
                    self.lease_gone(cx, submit)
                }
                _ => {}
            }
        }
    }

    /// The lock was granted to `lease` with `fencing`.
    fn granted(&mut self, cx: &Context, lease: LeaseId, fencing: u64, submit: &mut Submit) {
        if Some(lease) != self.lease || fencing <= self.last_fencing {
            return;
        }
        if cx.now >= self.lease_until {
            // Rule 6: a grant that arrives after the lease ran out by this node's clock (it was
            // paused, or the grant was slow) is not used; the server expires the lease.
            self.lease_gone(cx, submit);
            return;
        }
        if self.wants && self.holding.is_none() && !self.releasing {
            self.wants = false;
            self.holding = Some(fencing);
            self.last_fencing = fencing;
            self.events.push(Event::Entered { fencing });
            // The grant answers every acquire still waiting for its reply (one whose reply
            // came inside a snapshot): proposed again, it would be a duplicate that answers
            // "queued" for a grant already used.
            self.outstanding.retain(|_, (p, _)| !matches!(p.op, Op::Acquire { .. }));
        } else if !self.releasing {
            self.releasing = true;
            self.propose(cx, Op::Release { name: LOCK.into(), lease }, submit);
        }
    }

    /// Leaves the critical section if in it.
    fn leave(&mut self) {
        if self.holding.take().is_some() {
            self.events.push(Event::Exited);
        }
    }

    fn trust_lease_from(&mut self, sent: Time) {
        let until = sent + self.config.ttl - self.config.margin;
        if until > self.lease_until {
            self.lease_until = until;
            self.lease_timer_due = true;
        }
    }

    fn acquire(&mut self, cx: &Context, submit: &mut Submit) {
        let pending = self.outstanding.values().any(|(p, _)| matches!(p.op, Op::Acquire { .. }));
        if let Some(lease) = self.lease
            && !pending
            && !self.releasing
        {
            let request = self.next_request;
            self.propose(cx, Op::Acquire { name: LOCK.into(), lease, request, wait: true }, submit);
        }
    }

    fn take_lease(&mut self, cx: &Context, submit: &mut Submit) {
        let pending = self.outstanding.values().any(|(p, _)| matches!(p.op, Op::Grant { .. }));
        if !pending {
            let request = self.next_request;
            self.propose(
                cx,
                Op::Grant { ttl: self.config.ttl, origin: self.me, request, owner: None },
                submit,
            );
        }
    }

    /// The client's lease is gone (expired at the server, or by its own clock): leave the
    /// critical section, forget the lease, and take a new one if the lock is still wanted.
    fn lease_gone(&mut self, cx: &Context, submit: &mut Submit) {
        self.leave();
        self.lease = None;
        self.lease_until = 0;
        self.releasing = false;
        self.outstanding.retain(|_, (p, _)| matches!(p.op, Op::Grant { .. }));
        if self.wants {
            self.take_lease(cx, submit);
        }
    }

    /// Rule 4: while a request waits, the retry timer is armed (once: re-arming at every tick
    /// would keep it from ever firing).
    fn arm_retry(&mut self, out: &mut Outbox<Msg, Timer>) {
        if !self.outstanding.is_empty() && !self.retrying {
            self.retrying = true;
            out.set_timer(Timer::Retry, self.config.retry);
        }
    }
}

impl LockService {
    /// Carries out everything the Raft node has ready (rule 3), then reports what the client
    /// saw and arms the client's timers.
    fn drive(&mut self, cx: &Context, out: &mut Outbox<Msg, Timer>) {
        let mut host = SimHost {
            cx,
            out: &mut *out,
            client: &mut self.client,
            leader_uid: &mut self.leader_uid,
            upkeep: self.upkeep,
        };
        self.replica
            .drive(cx.random, &mut host)
            .expect("the simulator's log cannot fail, and its snapshots are the replicas' own");
        // A grant applied inside a snapshot this node installed was never seen as a notice:
        // the state machine says who holds the lock.
        if let Some(lease) = self.client.lease
            && self.client.wants
            && self.client.holding.is_none()
            && let Some((holder, fencing)) = self.replica.machine().holder(LOCK)
            && holder == lease
        {
            self.client.granted(cx, lease, fencing, self.replica.queue());
        }
        for e in self.client.events.drain(..) {
            out.emit(e);
        }
        if std::mem::take(&mut self.client.keepalive_due) {
            out.set_timer(Timer::KeepAlive, self.client.config.ttl / 3);
        }
        if std::mem::take(&mut self.client.lease_timer_due) {
            out.set_timer(Timer::LeaseEnd, self.client.lease_until.saturating_sub(cx.now));
        }
        self.client.arm_retry(out);
    }
}

impl Process for LockService {
    type Msg = Msg;
    type Timer = Timer;

    fn on_start(&mut self, cx: &Context, out: &mut Outbox<Msg, Timer>) {
        self.replica.reseed(cx.random);
        out.set_timer(Timer::Tick, self.client.config.tick);
    }

    fn on_message(&mut self, cx: &Context, _from: NodeId, msg: Msg, out: &mut Outbox<Msg, Timer>) {
        self.upkeep = msg.upkeep;
        if let Some(m) = msg.decode() {
            self.replica.step(m);
            self.drive(cx, out);
        }
    }

    fn on_timer(&mut self, cx: &Context, timer: Timer, out: &mut Outbox<Msg, Timer>) {
        self.upkeep = matches!(timer, Timer::Tick | Timer::KeepAlive);
        let client = &mut self.client;
        match timer {
            Timer::Tick => {
                self.replica.tick(cx.now);
                out.set_timer(Timer::Tick, client.config.tick);
            }
            Timer::KeepAlive => {
                if let Some(lease) = client.lease {
                    let pending =
                        client.outstanding.values().any(|(p, _)| matches!(p.op, Op::KeepAlive { .. }));
                    if !pending {
                        client.propose(cx, Op::KeepAlive { lease }, self.replica.queue());
                    }
                    client.keepalive_due = true;
                }
            }
            Timer::LeaseEnd => {
                if client.lease.is_some() && cx.now >= client.lease_until {
                    client.lease_gone(cx, self.replica.queue());
                }
            }
            Timer::Retry => {
                client.retrying = false;
                let retry = client.config.retry;
                for (p, sent) in client.outstanding.values() {
                    if cx.now.saturating_sub(*sent) >= retry {
                        self.replica.submit(p);
                    }
                }
            }
        }
        self.drive(cx, out);
    }

    fn on_request(&mut self, cx: &Context, req: Request, out: &mut Outbox<Msg, Timer>) {
        self.upkeep = false;
        let client = &mut self.client;
        match req {
            Request::Acquire if !client.wants && client.holding.is_none() => {
                client.wants = true;
                if client.lease.is_some() {
                    // Waits for an outstanding release to apply first (see `acquire`).
                    client.acquire(cx, self.replica.queue());
                } else {
                    client.take_lease(cx, self.replica.queue());
                }
            }
            Request::Release if client.holding.is_some() => {
                client.leave();
                if let Some(lease) = client.lease {
                    client.releasing = true;
                    client.propose(cx, Op::Release { name: LOCK.into(), lease }, self.replica.queue());
                }
            }
            _ => return,
        }
        self.drive(cx, out);
    }

    fn on_recover(&mut self, cx: &Context, out: &mut Outbox<Msg, Timer>) {
        // Rule 8: the log survives; the Raft node, the state machine and the client do not.
        self.replica.recover().expect("the simulator's log holds only what its replica wrote");
        self.leader_uid = None;
        self.client = Client::new(self.replica.id(), self.client.config, self.replica.incarnation());
        self.replica.reseed(cx.random);
        out.set_timer(Timer::Tick, self.client.config.tick);
    }

    fn leader(&self) -> Option<Uid> {
        self.leader_uid
    }

    fn in_critical_section(&self) -> bool {
        self.client.holding.is_some()
    }
}

impl Algorithm for LockService {
    const NAME: &'static str = "lock-service";
    const FAMILY: Family = Family::Mutex;
    const SUMMARY: &'static str =
        "leases and named locks replicated by Raft (raft-rs): survives holder and leader failures";
    /// Raft commits an entry only once a majority stored it, and elects a leader only with a
    /// majority's votes.
    const NEEDS_MAJORITY: bool = true;
    /// Its clients' acquire and release answers form a history judged for linearizability.
    const LINEARIZABLE: bool = true;

    /// Each node builds a Raft replica, and raft-rs builds each replica's configuration from
    /// its voters one voter at a time, checking the whole configuration after each
    /// (`confchange::restore`): O(N²) per replica, O(N³) for the run. 30 ns per N³ in the
    /// release build (its dependencies, raft-rs among them, at opt-level 1): 30 s at 1,000
    /// nodes. The test build, with dependencies at opt-level 2, is faster: 3.2 s at 800 nodes,
    /// 26.4 s at 1,600 (6.4 ns per N³).
    const FOOTPRINT: ringleader_algorithms::Footprint = ringleader_algorithms::Footprint {
        startup_ns_per_n3: 30,
        ..ringleader_algorithms::Footprint::LINEAR
    };
    type Config = Config;

    fn configure(setup: &Setup) -> Result<Config, ParamError> {
        let p = setup.params;
        let tick = p.duration("tick", 10 * MILLISECOND)?;
        let election_ticks: usize = p.get("election_ticks", 10)?;
        let heartbeat_ticks: usize = p.get("heartbeat_ticks", 2)?;
        if !(2..=1000).contains(&election_ticks) {
            return Err(ParamError::OutOfRange {
                key: "election_ticks".into(),
                reason: "must be 2..=1000".into(),
            });
        }
        if heartbeat_ticks == 0 || heartbeat_ticks >= election_ticks {
            return Err(ParamError::OutOfRange {
                key: "heartbeat_ticks".into(),
                reason: format!("must be 1..{election_ticks} (below election_ticks)"),
            });
        }
        let ttl = p.duration("ttl", 500 * MILLISECOND)?;
        if ttl < 3 * tick {
            return Err(ParamError::OutOfRange {
                key: "ttl".into(),
                reason: "must be at least 3 ticks".into(),
            });
        }
        let clock_every = p.duration("clock_every", (ttl / 20).max(tick))?;
        if clock_every < tick || clock_every > ttl / 4 {
            return Err(ParamError::OutOfRange {
                key: "clock_every".into(),
                reason: "must be at least one tick and at most a quarter of ttl".into(),
            });
        }
        let margin = p.duration("margin", (ttl / 10).max(2 * clock_every))?;
        if margin >= ttl || margin < 2 * clock_every {
            return Err(ParamError::OutOfRange {
                key: "margin".into(),
                reason: "must be below ttl and at least twice clock_every (the replicated clock lags by up to that)"
                    .into(),
            });
        }
        let retry = p.duration("retry", 2 * election_ticks as Time * tick)?;
        let snapshot_every: u64 = p.get("snapshot_every", 1000)?;
        if snapshot_every == 0 {
            return Err(ParamError::OutOfRange {
                key: "snapshot_every".into(),
                reason: "must be at least 1".into(),
            });
        }
        let lock_delay = p.duration_or_off("lock_delay", 0)?;
        let policy = match p.get::<String>("deadlock", "report".into())?.as_str() {
            "report" => DeadlockPolicy::Report,
            "wait-die" => DeadlockPolicy::WaitDie,
            "wound-wait" => DeadlockPolicy::WoundWait,
            other => {
                return Err(ParamError::OutOfRange {
                    key: "deadlock".into(),
                    reason: format!("{other:?} is not a policy; allowed: report, wait-die, wound-wait"),
                });
            }
        };
        // Read only when given, so that the parameter lists of user builds never name it.
        let planted = match p.values().contains_key("planted") {
            false => None,
            true => Some(
                Planted::parse(&p.get::<String>("planted", String::new())?)
                    .map_err(|reason| ParamError::OutOfRange { key: "planted".into(), reason })?,
            ),
        };
        Ok(Config {
            planted,
            tick,
            election_ticks,
            heartbeat_ticks,
            ttl,
            margin,
            clock_every,
            retry,
            snapshot_every,
            lock_delay,
            policy,
        })
    }

    fn new(me: NodeId, config: &Config, setup: &Setup) -> Self {
        let voters: Vec<u64> = (0..setup.uids.len() as NodeId).map(raft_id).collect();
        let replica = Replica::new(me, 0, config.settings(), MemoryLog::new(voters))
            .expect("a validated configuration and a fresh log");
        LockService { replica, leader_uid: None, client: Client::new(me, *config, 0), upkeep: false }
    }
}
