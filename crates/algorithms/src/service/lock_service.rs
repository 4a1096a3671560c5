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
//!    the same request id (a proposal is dropped when leadership changes); the state machine
//!    answers a repeated acquire as it answered the first.
//! 5. **Replicated time.** Only the leader measures time: every `clock_every` while leases exist
//!    it proposes `Tick { elapsed }`, the local time since its previous Tick or since it became
//!    leader. Lease deadlines are in this replicated time, so a lease's remaining time survives
//!    a leader change; time between the old leader's last Tick and the new leader's first is
//!    never counted, which can only lengthen a lease at the server — the safe direction. The
//!    replicated clock lags real time by up to `clock_every` plus a commit, so a deadline set
//!    from it can be that much early: the client's margin covers it (rule 6).
//! 6. **A client trusts its lease less than the server does.** The client dates its lease from
//!    when it *sent* the grant or keep-alive request, by its own clock, and gives it up
//!    `margin` before the TTL ends (a tenth of the TTL by default, at least twice
//!    `clock_every`: it covers the replicated clock's lag and clocks that drift apart). It keeps it alive every third of the TTL. A holder whose lease has run out
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
use raft::eraftpb::{Entry, EntryType, Message as RaftMessage, MessageType};
use raft::{RawNode, StateRole};
use ringleader_core::time::MILLISECOND;
use ringleader_core::{Context, Event, Message, NodeId, Outbox, Process, Request, Time, Uid};
use serde::{Deserialize, Serialize};

use super::log::MemoryLog;
use super::state::{Applied, DeadlockPolicy, LeaseId, Notice, Op, Reply, RequestId, StateMachine};
use crate::params::ParamError;
use crate::{Algorithm, Family, Setup};

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

    fn decode(&self) -> Option<RaftMessage> {
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
        Op::Tick { .. } | Op::Grant { .. } => None,
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
}

/// A request of this node's client on its way through the log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Proposal {
    origin: NodeId,
    /// The proposing node's incarnation: request ids restart after a crash, so an entry of an
    /// earlier life, applied again while the recovered node catches up, is not taken for an
    /// answer to a new request.
    incarnation: u64,
    request: RequestId,
    op: Op,
}

/// What this node's client (the workload's user here) has and waits for.
#[derive(Clone, Debug, Default)]
struct Client {
    lease: Option<LeaseId>,
    /// Local time until which the client trusts its lease (rule 6).
    lease_until: Time,
    /// The workload asked for the lock and has not had it yet.
    wants: bool,
    /// The fencing token of the grant while in the critical section.
    holding: Option<u64>,
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
}

/// One replica of the lock service (see the module documentation).
pub struct LockService {
    me: NodeId,
    config: Config,
    raft: RawNode<MemoryLog>,
    machine: StateMachine,
    /// Leader only: local time of the last `Tick` proposal (rule 5).
    tick_from: Option<Time>,
    leader: u64,
    /// The uid of the Raft leader this node knows, if any.
    leader_uid: Option<Uid>,
    client: Client,
    /// The input being handled is lease upkeep (see [`Msg::is_detection`]).
    upkeep: bool,
    /// Encoded proposals waiting for [`LockService::drive`].
    to_propose: Vec<Vec<u8>>,
    /// How many times this node recovered (stable: kept across a crash, like the log).
    incarnation: u64,
    /// Events of this node's client waiting for [`LockService::drive`] to report them.
    events: Vec<Event>,
}

impl fmt::Debug for LockService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LockService")
            .field("me", &self.me)
            .field("role", &self.raft.raft.state)
            .field("term", &self.raft.raft.term)
            .field("leader", &self.leader)
            .field("applied", &self.machine.last_applied())
            .field("holding", &self.client.holding)
            .finish()
    }
}

impl Serialize for LockService {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("LockService", 6)?;
        st.serialize_field("role", &format!("{:?}", self.raft.raft.state).to_lowercase())?;
        st.serialize_field("term", &self.raft.raft.term)?;
        st.serialize_field("leader", &self.leader.checked_sub(1))?;
        st.serialize_field("applied", &self.machine.last_applied())?;
        st.serialize_field("lease", &self.client.lease)?;
        st.serialize_field("holding", &self.client.holding)?;
        st.end()
    }
}

/// raft-rs's logger, silenced: the replica reports through events.
fn logger() -> slog::Logger {
    slog::Logger::root(slog::Discard, slog::o!())
}

/// The Raft id of position `node` (Raft ids start at 1).
fn raft_id(node: NodeId) -> u64 {
    node as u64 + 1
}

impl LockService {
    fn raft_config_for(me: NodeId, config: &Config, applied: u64) -> raft::Config {
        raft::Config {
            id: raft_id(me),
            election_tick: config.election_ticks,
            heartbeat_tick: config.heartbeat_ticks,
            // Rule 2: the library's own draw is replaced by ours; this range is the one ours
            // is drawn from.
            min_election_tick: config.election_ticks,
            max_election_tick: 2 * config.election_ticks,
            applied,
            pre_vote: true,
            check_quorum: true,
            max_size_per_msg: 1024 * 1024,
            max_inflight_msgs: 256,
            ..Default::default()
        }
    }

    /// A Raft node over `log` and the state machine as of the log's snapshot; raft-rs hands
    /// the committed entries after the snapshot to the next `Ready` for applying again.
    fn build(me: NodeId, config: &Config, log: MemoryLog) -> (RawNode<MemoryLog>, StateMachine) {
        let snapshot = log.last_snapshot();
        let applied = snapshot.get_metadata().index;
        let machine = Self::machine_from(config, &snapshot.data);
        let raft = RawNode::new(&Self::raft_config_for(me, config, applied), log, &logger())
            .expect("a validated configuration and a consistent log");
        (raft, machine)
    }

    /// The state machine a snapshot holds (a fresh one for the empty snapshot of a new log).
    fn machine_from(config: &Config, data: &[u8]) -> StateMachine {
        postcard::from_bytes(data).unwrap_or_else(|_| StateMachine::new(config.lock_delay, config.policy))
    }

    /// Rule 2: after every call into the Raft node, a reset election clock gets our timeout.
    fn reseed(&mut self, cx: &Context) {
        if self.raft.raft.election_elapsed == 0 && self.raft.raft.state != StateRole::Leader {
            let e = self.config.election_ticks;
            let t = e + (cx.random % e as u64) as usize;
            self.raft.raft.set_randomized_election_timeout(t);
        }
    }

    fn propose(&mut self, cx: &Context, op: Op) -> RequestId {
        let request = self.client.next_request;
        self.client.next_request += 1;
        let p = Proposal { origin: self.me, incarnation: self.incarnation, request, op };
        self.submit(&p);
        self.client.outstanding.insert(request, (p, cx.now));
        request
    }

    /// Queues `p` for the Raft node; [`LockService::drive`] proposes it outside a `Ready`
    /// (raft-rs forbids new messages between taking a `Ready` and advancing it).
    fn submit(&mut self, p: &Proposal) {
        self.to_propose.push(postcard::to_allocvec(p).unwrap_or_default());
    }

    fn propose_queued(&mut self) {
        for data in std::mem::take(&mut self.to_propose) {
            // A proposal dropped here (no leader known) is proposed again by rule 4.
            let _ = self.raft.propose(Vec::new(), data);
        }
    }

    /// Carries out everything the Raft node has ready (rule 3), then reports what the client
    /// saw and arms the client's timers.
    fn drive(&mut self, cx: &Context, out: &mut Outbox<Msg, Timer>) {
        self.reseed(cx);
        self.propose_queued();
        while self.raft.has_ready() {
            let mut rd = self.raft.ready();
            if let Some(ss) = rd.ss() {
                self.on_soft_state(cx, ss.leader_id, out);
            }
            self.send(rd.take_messages(), out);
            if !rd.snapshot().is_empty() {
                let snapshot = rd.snapshot().clone();
                self.machine = Self::machine_from(&self.config, &snapshot.data);
                self.raft.mut_store().install_snapshot(snapshot);
            }
            let committed = rd.take_committed_entries();
            self.apply(cx, committed);
            self.raft.mut_store().append(rd.entries());
            if let Some(hs) = rd.hs() {
                self.raft.mut_store().set_hard_state(hs.clone());
            }
            self.send(rd.take_persisted_messages(), out);
            let mut light = self.raft.advance(rd);
            if let Some(commit) = light.commit_index() {
                self.raft.mut_store().set_commit(commit);
            }
            self.send(light.take_messages(), out);
            let committed = light.take_committed_entries();
            self.apply(cx, committed);
            self.raft.advance_apply();
            self.compact();
            self.propose_queued();
        }
        self.reseed(cx);
        for e in self.events.drain(..) {
            out.emit(e);
        }
        if std::mem::take(&mut self.client.keepalive_due) {
            out.set_timer(Timer::KeepAlive, self.config.ttl / 3);
        }
        if std::mem::take(&mut self.client.lease_timer_due) {
            out.set_timer(Timer::LeaseEnd, self.client.lease_until.saturating_sub(cx.now));
        }
        self.arm_retry(out);
    }

    fn send(&self, mut msgs: Vec<RaftMessage>, out: &mut Outbox<Msg, Timer>) {
        let upkeep = self.upkeep;
        // Rule 2: a fixed order, whatever order the library's maps gave.
        msgs.sort_by_key(|m| m.to);
        for m in &msgs {
            if m.to >= 1 {
                out.send((m.to - 1) as NodeId, Msg::encode(m, upkeep));
            }
        }
    }

    fn on_soft_state(&mut self, cx: &Context, leader: u64, out: &mut Outbox<Msg, Timer>) {
        if leader == self.leader {
            return;
        }
        self.leader = leader;
        if leader == 0 {
            self.leader_uid = None;
            out.emit(Event::LeaderLost);
        } else {
            let uid: Uid = cx.uid_of((leader - 1) as NodeId);
            self.leader_uid = Some(uid);
            out.emit(Event::Leader { leader: uid, term: self.raft.raft.term });
        }
    }

    fn apply(&mut self, cx: &Context, entries: Vec<Entry>) {
        for e in entries {
            if e.get_entry_type() != EntryType::EntryNormal || e.data.is_empty() {
                continue;
            }
            let Ok(p) = postcard::from_bytes::<Proposal>(&e.data) else { continue };
            // An index at or below the last applied one (a snapshot already covered it) is
            // refused by the state machine and changes nothing.
            let Ok(applied) = self.machine.apply(e.index, &p.op) else { continue };
            self.react(cx, &p, applied);
        }
    }

    /// This node's client learns what the applied entry did for it. An entry can be applied
    /// twice when a retried proposal and its original both commit (rule 4); the client
    /// answers a grant it no longer wants by releasing it, and an extra lease by revoking it.
    fn react(&mut self, cx: &Context, p: &Proposal, applied: Applied) {
        if p.origin == self.me && p.incarnation == self.incarnation {
            let mine = self.client.outstanding.remove(&p.request);
            match (&p.op, applied.reply) {
                (Op::Grant { .. }, Reply::Granted { lease, .. }) => {
                    if let (Some((_, sent)), None) = (&mine, self.client.lease) {
                        self.client.lease = Some(lease);
                        self.trust_lease_from(*sent);
                        self.client.keepalive_due = true;
                        if self.client.wants {
                            self.acquire(cx);
                        }
                    } else if self.client.lease != Some(lease) {
                        self.propose(cx, Op::Revoke { lease });
                    }
                }
                (Op::KeepAlive { .. }, Reply::KeptAlive { .. }) => {
                    if let Some((_, sent)) = mine {
                        self.trust_lease_from(sent);
                    }
                }
                (Op::Acquire { lease, .. }, Reply::Acquired { fencing }) => self.granted(cx, *lease, fencing),
                (Op::Acquire { .. }, Reply::Aborted) if mine.is_some() && self.client.wants => {
                    self.acquire(cx)
                }
                (Op::Release { .. }, _) if mine.is_some() => {
                    self.client.releasing = false;
                    if self.client.wants {
                        self.acquire(cx);
                    }
                }
                (Op::Grant { .. } | Op::Revoke { .. }, _) => {}
                (op, Reply::NoSuchLease) if mine.is_some() && op_lease(op) == self.client.lease => {
                    self.lease_gone(cx)
                }
                _ => {}
            }
        }
        for n in applied.notices {
            match n {
                Notice::Granted { lease, fencing, .. } => self.granted(cx, lease, fencing),
                Notice::Aborted { lease, .. } if Some(lease) == self.client.lease && self.client.wants => {
                    self.acquire(cx)
                }
                Notice::Lost { lease, .. } if Some(lease) == self.client.lease => self.leave(),
                Notice::LeaseExpired { lease, .. } if Some(lease) == self.client.lease => self.lease_gone(cx),
                _ => {}
            }
        }
    }

    /// The lock was granted to `lease` with `fencing`.
    fn granted(&mut self, cx: &Context, lease: LeaseId, fencing: u64) {
        if Some(lease) != self.client.lease || self.client.holding == Some(fencing) {
            return;
        }
        if cx.now >= self.client.lease_until {
            // Rule 6: a grant that arrives after the lease ran out by this node's clock (it was
            // paused, or the grant was slow) is not used; the server expires the lease.
            self.lease_gone(cx);
            return;
        }
        if self.client.wants && self.client.holding.is_none() && !self.client.releasing {
            self.client.wants = false;
            self.client.holding = Some(fencing);
            self.events.push(Event::Entered { fencing });
        } else if !self.client.releasing {
            self.client.releasing = true;
            self.propose(cx, Op::Release { name: LOCK.into(), lease });
        }
    }

    /// Leaves the critical section if in it.
    fn leave(&mut self) {
        if self.client.holding.take().is_some() {
            self.events.push(Event::Exited);
        }
    }

    fn trust_lease_from(&mut self, sent: Time) {
        let until = sent + self.config.ttl - self.config.margin;
        if until > self.client.lease_until {
            self.client.lease_until = until;
            self.client.lease_timer_due = true;
        }
    }

    fn acquire(&mut self, cx: &Context) {
        let pending = self.client.outstanding.values().any(|(p, _)| matches!(p.op, Op::Acquire { .. }));
        if let Some(lease) = self.client.lease
            && !pending
            && !self.client.releasing
        {
            let request = self.client.next_request;
            self.propose(cx, Op::Acquire { name: LOCK.into(), lease, request, wait: true });
        }
    }

    fn take_lease(&mut self, cx: &Context) {
        let pending = self.client.outstanding.values().any(|(p, _)| matches!(p.op, Op::Grant { .. }));
        if !pending {
            let request = self.client.next_request;
            self.propose(cx, Op::Grant { ttl: self.config.ttl, origin: self.me, request });
        }
    }

    /// The client's lease is gone (expired at the server, or by its own clock): leave the
    /// critical section, forget the lease, and take a new one if the lock is still wanted.
    fn lease_gone(&mut self, cx: &Context) {
        self.leave();
        self.client.lease = None;
        self.client.lease_until = 0;
        self.client.releasing = false;
        self.client.outstanding.retain(|_, (p, _)| matches!(p.op, Op::Grant { .. }));
        if self.client.wants {
            self.take_lease(cx);
        }
    }

    /// Rule 4: while a request waits, the retry timer is armed (once: re-arming at every tick
    /// would keep it from ever firing).
    fn arm_retry(&mut self, out: &mut Outbox<Msg, Timer>) {
        if !self.client.outstanding.is_empty() && !self.client.retrying {
            self.client.retrying = true;
            out.set_timer(Timer::Retry, self.config.retry);
        }
    }

    /// Rule 5, on the leader.
    fn leader_clock(&mut self, cx: &Context) {
        if self.raft.raft.state != StateRole::Leader {
            self.tick_from = None;
            return;
        }
        match self.tick_from {
            None => self.tick_from = Some(cx.now),
            Some(from)
                if !self.machine.leases().is_empty()
                    && cx.now.saturating_sub(from) >= self.config.clock_every =>
            {
                let elapsed = cx.now - from;
                self.tick_from = Some(cx.now);
                let p = Proposal {
                    origin: self.me,
                    incarnation: self.incarnation,
                    request: u64::MAX,
                    op: Op::Tick { elapsed },
                };
                self.submit(&p);
            }
            Some(_) if self.machine.leases().is_empty() => self.tick_from = Some(cx.now),
            Some(_) => {}
        }
    }

    fn compact(&mut self) {
        let applied = self.machine.last_applied();
        let log = self.raft.store();
        if applied >= log.first() && applied - log.first() + 1 >= self.config.snapshot_every {
            let data = postcard::to_allocvec(&self.machine).unwrap_or_default();
            self.raft.mut_store().compact(applied, data);
        }
    }
}

impl Process for LockService {
    type Msg = Msg;
    type Timer = Timer;

    fn on_start(&mut self, cx: &Context, out: &mut Outbox<Msg, Timer>) {
        self.reseed(cx);
        out.set_timer(Timer::Tick, self.config.tick);
    }

    fn on_message(&mut self, cx: &Context, _from: NodeId, msg: Msg, out: &mut Outbox<Msg, Timer>) {
        self.upkeep = msg.upkeep;
        if let Some(m) = msg.decode() {
            // A message the library refuses (another cluster's, a stale term) changes nothing.
            let _ = self.raft.step(m);
            self.drive(cx, out);
        }
    }

    fn on_timer(&mut self, cx: &Context, timer: Timer, out: &mut Outbox<Msg, Timer>) {
        self.upkeep = matches!(timer, Timer::Tick | Timer::KeepAlive);
        match timer {
            Timer::Tick => {
                self.raft.tick();
                self.leader_clock(cx);
                out.set_timer(Timer::Tick, self.config.tick);
            }
            Timer::KeepAlive => {
                if let Some(lease) = self.client.lease {
                    let pending =
                        self.client.outstanding.values().any(|(p, _)| matches!(p.op, Op::KeepAlive { .. }));
                    if !pending {
                        self.propose(cx, Op::KeepAlive { lease });
                    }
                    self.client.keepalive_due = true;
                }
            }
            Timer::LeaseEnd => {
                if self.client.lease.is_some() && cx.now >= self.client.lease_until {
                    self.lease_gone(cx);
                }
            }
            Timer::Retry => {
                self.client.retrying = false;
                let due: Vec<Proposal> = self
                    .client
                    .outstanding
                    .values()
                    .filter(|(_, sent)| cx.now.saturating_sub(*sent) >= self.config.retry)
                    .map(|(p, _)| p.clone())
                    .collect();
                for p in &due {
                    self.submit(p);
                }
            }
        }
        self.drive(cx, out);
    }

    fn on_request(&mut self, cx: &Context, req: Request, out: &mut Outbox<Msg, Timer>) {
        self.upkeep = false;
        match req {
            Request::Acquire if !self.client.wants && self.client.holding.is_none() => {
                self.client.wants = true;
                if self.client.lease.is_some() {
                    // Waits for an outstanding release to apply first (see `acquire`).
                    self.acquire(cx);
                } else {
                    self.take_lease(cx);
                }
            }
            Request::Release if self.client.holding.is_some() => {
                self.leave();
                if let Some(lease) = self.client.lease {
                    self.client.releasing = true;
                    self.propose(cx, Op::Release { name: LOCK.into(), lease });
                }
            }
            _ => return,
        }
        self.drive(cx, out);
    }

    fn on_recover(&mut self, cx: &Context, out: &mut Outbox<Msg, Timer>) {
        // Rule 8: the log survives; the Raft node, the state machine and the client do not.
        let log = std::mem::take(self.raft.mut_store());
        let (raft, machine) = Self::build(self.me, &self.config, log);
        self.raft = raft;
        self.machine = machine;
        self.tick_from = None;
        self.leader = 0;
        self.leader_uid = None;
        self.client = Client::default();
        self.to_propose.clear();
        self.events.clear();
        self.incarnation += 1;
        self.reseed(cx);
        out.set_timer(Timer::Tick, self.config.tick);
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
        Ok(Config {
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
        let log = MemoryLog::new(voters);
        let (raft, machine) = Self::build(me, config, log);
        LockService {
            me,
            config: *config,
            raft,
            machine,
            tick_from: None,
            leader: 0,
            leader_uid: None,
            client: Client::default(),
            upkeep: false,
            to_propose: Vec::new(),
            events: Vec::new(),
            incarnation: 0,
        }
    }
}
