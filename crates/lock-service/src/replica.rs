//! # A replica: one Raft node over stable storage, applying to the state machine
//!
//! The simulator's [`LockService`](crate::process::LockService) and the real server
//! (`ringleader-service`) run the same replica: a raft-rs `RawNode` over a [`StableLog`] — the
//! simulator's [`MemoryLog`](super::log::MemoryLog), or the server's redb file — whose committed
//! entries are [`Proposal`]s applied, in log order, to the [`StateMachine`]. What differs
//! between the two is only the host around it: who sends the messages, where requests come from
//! and who hears the answers. The host implements [`Host`]; [`Replica::drive`] calls it.
//!
//! The order of one `Ready`'s work is raft-rs's contract (Ongaro & Ousterhout 2014, §5.4 and
//! Figure 2's "persistent state … updated on stable storage before responding to RPCs"):
//!
//! 1. messages the leader may send before writing (its appends) go out;
//! 2. the snapshot, new entries and hard state are written in **one** call to
//!    [`StableLog::persist`] — one fsync on disk, however many entries the `Ready` carries;
//! 3. committed entries are applied and their results handed to the host;
//! 4. messages that answer what was just written (votes, append responses) go out;
//! 5. the node advances; what became committed meanwhile is applied too;
//! 6. what became of the messages handed out is reported to the Raft node, as raft-rs asks of
//!    its host: a snapshot that was sent is reported finished (`report_snapshot`), one that could
//!    not be sent failed, and a peer whose message could not be handed to the transport is
//!    reported unreachable (`report_unreachable`).
//!
//! Step 6 is what keeps a follower that needed a snapshot from being left behind for good. The
//! leader stops replicating to such a follower until it hears the snapshot's fate: from the
//! follower's answer, or from the host. An answer can be lost, and the leader would then wait
//! forever (a follower's heartbeat answers carry no log position). Reported finished, the
//! follower is probed from the snapshot's index on: if the snapshot arrived, the probe is
//! accepted; if it was lost, the probe is refused and the leader sends the snapshot again.
//!
//! Two things raft-rs would otherwise decide on its own are taken over so that the same seed
//! gives the same run: the randomized election timeout is drawn from the host's random number
//! ([`Replica::reseed`]), and messages are handed to the host in destination order.
//!
//! Only the leader measures time: while leases exist it proposes `Tick { elapsed }` every
//! `clock_every` of its own clock ([`Replica::tick`]), so that lease deadlines are in replicated
//! time and survive a change of leader (see the state machine's essay).

use std::fmt;

use protobuf::Message as _;
use raft::eraftpb::{
    ConfChange, ConfChangeType, ConfState, Entry, EntryType, HardState, Message as RaftMessage, MessageType,
    Snapshot,
};
use raft::{RawNode, SnapshotStatus, StateRole};
use ringleader_core::{NodeId, Time};
use serde::{Deserialize, Serialize};

use crate::planted::Planted;
use crate::state::{Applied, DeadlockPolicy, IdempotencyKey, Op, RequestId, StateMachine};

/// A replica's stable storage: raft-rs's [`raft::Storage`] plus the writes a replica makes.
pub trait StableLog: raft::Storage {
    /// Why a write failed (the simulator's memory cannot fail).
    type Error: std::error::Error + Send + Sync + 'static;

    /// Writes what one `Ready` carries, durably and all or nothing: a snapshot received from
    /// the leader (it replaces the log up to its index), new entries (dropping a conflicting
    /// suffix) and a new hard state.
    fn persist(
        &mut self,
        snapshot: Option<&Snapshot>,
        entries: &[Entry],
        hard_state: Option<&HardState>,
    ) -> Result<(), Self::Error>;

    /// Records that entries up to `commit` are committed (it may be written lazily: a restarted
    /// node learns the commit index from the leader again).
    fn set_commit(&mut self, commit: u64) -> Result<(), Self::Error>;

    /// Records the cluster's configuration after a membership change was applied.
    fn set_conf_state(&mut self, conf_state: ConfState) -> Result<(), Self::Error>;

    /// Takes a snapshot of the state machine (`data`) as of the applied entry `index` and drops
    /// the entries up to it.
    fn snapshot_and_compact(&mut self, index: u64, data: Vec<u8>) -> Result<(), Self::Error>;

    /// The index of the first entry still kept.
    fn first_kept(&self) -> u64;

    /// The latest snapshot: the state machine a restarted replica starts from (the empty
    /// snapshot of a new log).
    fn latest_snapshot(&self) -> Result<Snapshot, Self::Error>;
}

/// A client's request on its way through the log, as the entry's data carries it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Proposal {
    /// The node that proposed it (and answers its client).
    pub origin: NodeId,
    /// The proposing node's incarnation: request ids restart after a crash, so an entry of an
    /// earlier life, applied again while the recovered node catches up, is not taken for an
    /// answer to a new request.
    pub incarnation: u64,
    /// The proposer's request id (`u64::MAX` for the leader's clock ticks).
    pub request: RequestId,
    /// The request's identity for deduplication: a proposal proposed again with the same key
    /// is applied at most once ([`StateMachine::apply_once`]); `None` for the leader's clock
    /// ticks, which are never proposed again.
    pub key: Option<IdempotencyKey>,
    /// The command.
    pub op: Op,
}

impl Proposal {
    /// The request id of the leader's clock ticks, which nobody waits for.
    pub const CLOCK: RequestId = u64::MAX;

    /// Request `request` of node `origin` in its `incarnation`-th life, made on behalf of
    /// the clients it serves: deduplicated under the node's own session
    /// ([`IdempotencyKey::node`]).
    pub fn of_node(origin: NodeId, incarnation: u64, request: RequestId, op: Op) -> Proposal {
        let key = Some(IdempotencyKey::node(origin, incarnation, request));
        Proposal { origin, incarnation, request, key, op }
    }

    /// The entry data of this proposal.
    pub fn encode(&self) -> Vec<u8> {
        postcard::to_allocvec(self).unwrap_or_default()
    }

    /// The proposal an entry's data carries, if it is one.
    pub fn decode(data: &[u8]) -> Option<Proposal> {
        postcard::from_bytes(data).ok()
    }
}

/// The replica's Raft and state-machine settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// Ticks without a leader before a follower campaigns.
    pub election_ticks: usize,
    /// Ticks between a leader's heartbeats.
    pub heartbeat_ticks: usize,
    /// How often the leader moves the replicated clock while leases exist.
    pub clock_every: Time,
    /// Applied entries between two snapshots.
    pub snapshot_every: u64,
    /// After an involuntary loss a lock is not granted again for this long.
    pub lock_delay: Time,
    /// What a wait that would close a cycle of the wait-for graph does.
    pub policy: DeadlockPolicy,
    /// A bug planted in the state machine by a test build ([`Planted`]); `None` always in a
    /// build without the `planted` feature.
    pub planted: Option<Planted>,
}

/// What the replica's host does with what the replica produces. Every method but
/// [`Host::send`] and [`Host::applied`] has a default that ignores it.
pub trait Host {
    /// The Raft leader this replica knows changed: `leader` is its node id, `None` when
    /// unknown.
    fn leader_changed(&mut self, leader: Option<NodeId>, term: u64) {
        let _ = (leader, term);
    }

    /// The state machine was replaced by a snapshot's (sent by the leader to a follower that
    /// was too far behind): every entry after `previously_applied` up to
    /// `machine.last_applied()` took effect without an `applied` call and without notices.
    /// A host whose clients follow the notices (watchers) must catch them up from the new
    /// machine's history.
    fn restored(&mut self, previously_applied: u64, machine: &StateMachine) {
        let _ = (previously_applied, machine);
    }

    /// Hands a Raft message for node `to` to the transport. Called in destination order.
    /// [`Unreachable`] when it could not be handed over (no connection, a full queue): the
    /// replica tells the Raft node, which stops sending optimistically to that peer and probes
    /// it again (and counts a snapshot that could not be sent as failed).
    fn send(&mut self, to: NodeId, msg: RaftMessage) -> Result<(), Unreachable>;

    /// The committed entry `index`, carrying `proposal`, was applied with result `applied`;
    /// `machine` is the state after it. New proposals go to `submit`.
    fn applied(
        &mut self,
        index: u64,
        proposal: &Proposal,
        applied: Applied,
        machine: &StateMachine,
        submit: &mut Submit,
    );

    /// A linearizable read tagged `ctx` ([`Replica::read_index`]) may be answered once the
    /// state machine has applied `index`.
    fn read_ready(&mut self, ctx: &[u8], index: u64) {
        let _ = (ctx, index);
    }

    /// A membership change was applied: `change` (its context carries what the proposer put
    /// there, e.g. the new node's address) gave configuration `conf_state`.
    fn membership_changed(&mut self, change: &ConfChange, conf_state: &ConfState) {
        let _ = (change, conf_state);
    }
}

/// A message the host could not hand to its transport (see [`Host::send`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unreachable;

/// What became of a message handed to the host, for the Raft node (step 6 of the module
/// documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SendReport {
    /// A snapshot was sent to the peer (`true`) or could not be (`false`).
    Snapshot(u64, bool),
    /// The peer could not be reached.
    Unreachable(u64),
}

/// Proposals waiting to be handed to the Raft node (outside a `Ready`, as raft-rs requires).
#[derive(Debug, Default)]
pub struct Submit {
    proposals: Vec<Vec<u8>>,
    reads: Vec<Vec<u8>>,
    changes: Vec<ConfChange>,
}

impl Submit {
    /// Queues `p` for proposal.
    pub fn submit(&mut self, p: &Proposal) {
        self.proposals.push(p.encode());
    }
}

/// Why a replica could not be built or driven.
#[derive(Debug, thiserror::Error)]
pub enum ReplicaError<E: std::error::Error + 'static> {
    /// Stable storage failed a write.
    #[error("stable storage: {0}")]
    Storage(#[source] E),
    /// raft-rs refused the configuration or the log.
    #[error("raft: {0}")]
    Raft(#[from] raft::Error),
    /// A snapshot's data is not a state machine this build can read.
    #[error("a snapshot's state machine could not be decoded: {0}")]
    Snapshot(postcard::Error),
}

/// One replica (see the module documentation).
pub struct Replica<L: StableLog> {
    id: NodeId,
    incarnation: u64,
    settings: Settings,
    raft: RawNode<L>,
    machine: StateMachine,
    /// Leader only: local time of the last `Tick` proposal.
    tick_from: Option<Time>,
    /// The Raft id of the leader this replica knows, 0 if none.
    leader: u64,
    queued: Submit,
    /// What the host did with the messages of the current `Ready` (step 6).
    reports: Vec<SendReport>,
}

impl<L: StableLog> fmt::Debug for Replica<L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Replica")
            .field("id", &self.id)
            .field("role", &self.raft.raft.state)
            .field("term", &self.raft.raft.term)
            .field("leader", &self.leader)
            .field("applied", &self.machine.last_applied())
            .finish()
    }
}

/// raft-rs's logger, silenced: replicas report through their hosts.
fn logger() -> slog::Logger {
    slog::Logger::root(slog::Discard, slog::o!())
}

/// The Raft id of node `node` (Raft ids start at 1).
pub fn raft_id(node: NodeId) -> u64 {
    node as u64 + 1
}

/// The node id of Raft id `id` (`None` for 0, raft-rs's "nobody").
pub fn node_of(id: u64) -> Option<NodeId> {
    id.checked_sub(1).map(|n| n as NodeId)
}

impl<L: StableLog> Replica<L> {
    /// Replica `id` over `log`, in its `incarnation`-th life, with the state machine as of the
    /// log's latest snapshot; raft-rs hands the committed entries after it to the next `Ready`
    /// for applying again.
    pub fn new(
        id: NodeId,
        incarnation: u64,
        settings: Settings,
        log: L,
    ) -> Result<Self, ReplicaError<L::Error>> {
        let snapshot = log.latest_snapshot().map_err(ReplicaError::Storage)?;
        let applied = snapshot.get_metadata().index;
        let machine = machine_from(&settings, &snapshot.data)?;
        let raft = RawNode::new(&raft_config(id, &settings, applied), log, &logger())?;
        Ok(Replica {
            id,
            incarnation,
            settings,
            raft,
            machine,
            tick_from: None,
            leader: 0,
            queued: Submit::default(),
            reports: Vec::new(),
        })
    }

    /// This replica's node id.
    pub fn id(&self) -> NodeId {
        self.id
    }

    /// This replica's incarnation (how many times it restarted).
    pub fn incarnation(&self) -> u64 {
        self.incarnation
    }

    /// The state machine as of the last applied entry.
    pub fn machine(&self) -> &StateMachine {
        &self.machine
    }

    /// The Raft leader this replica knows.
    pub fn leader(&self) -> Option<NodeId> {
        node_of(self.leader)
    }

    /// Its Raft role.
    pub fn role(&self) -> StateRole {
        self.raft.raft.state
    }

    /// Its current term.
    pub fn term(&self) -> u64 {
        self.raft.raft.term
    }

    /// The index of the last entry applied, whatever it carried: a proposal, a membership
    /// change, or the empty entry a new leader commits at the start of its term. The state
    /// machine's own [`StateMachine::last_applied`] counts proposals only, so a read whose
    /// ReadIndex names a leader's empty entry must wait on this one.
    pub fn applied(&self) -> u64 {
        self.raft.raft.raft_log.applied
    }

    /// The highest index it knows committed.
    pub fn commit(&self) -> u64 {
        self.raft.raft.raft_log.committed
    }

    /// The voters of its current configuration, as node ids.
    pub fn voters(&self) -> Vec<NodeId> {
        let mut v: Vec<NodeId> =
            self.raft.raft.prs().conf().voters().ids().iter().filter_map(node_of).collect();
        v.sort_unstable();
        v
    }

    /// The learners of its current configuration (they receive the log and do not vote), as
    /// node ids.
    pub fn learners(&self) -> Vec<NodeId> {
        let mut v: Vec<NodeId> =
            self.raft.raft.prs().conf().learners().iter().filter_map(|&id| node_of(id)).collect();
        v.sort_unstable();
        v
    }

    /// On a leader, whether `node` has the log up to within `lag` entries of the commit index
    /// (a learner caught up enough to be promoted); `None` on a follower, which does not know.
    pub fn caught_up(&self, node: NodeId, lag: u64) -> Option<bool> {
        let raft = &self.raft.raft;
        if raft.state != StateRole::Leader {
            return None;
        }
        let matched = raft.prs().get(raft_id(node)).map_or(0, |p| p.matched);
        Some(matched + lag >= raft.raft_log.committed)
    }

    /// True on a leader while a membership change it proposed is not yet applied (raft-rs
    /// allows one at a time and turns a second into an empty entry).
    pub fn conf_change_pending(&self) -> bool {
        self.raft.raft.state == StateRole::Leader && self.raft.raft.has_pending_conf()
    }

    /// Takes a snapshot of the state machine now, as of the last entry applied (a membership
    /// change or an empty entry included), and compacts the log behind it, whatever
    /// `snapshot_every` says (nothing when nothing was applied since the last one). The real
    /// server calls it after a node is added, so that the new node always starts from a
    /// snapshot carrying the configuration (see `ringleader-service`'s server).
    pub fn compact_now(&mut self) -> Result<(), ReplicaError<L::Error>> {
        let applied = self.raft.raft.raft_log.applied;
        if applied == 0 || applied < self.raft.store().first_kept() {
            return Ok(());
        }
        let data = postcard::to_allocvec(&self.machine).unwrap_or_default();
        self.raft.mut_store().snapshot_and_compact(applied, data).map_err(ReplicaError::Storage)
    }

    /// Its stable storage.
    pub fn log(&self) -> &L {
        self.raft.store()
    }

    /// A crash and recovery: everything but the stable storage is lost. The Raft node and the
    /// state machine are rebuilt from the log (its snapshot, then the committed entries after
    /// it, which the next `Ready` applies again), and the incarnation is incremented.
    pub fn recover(&mut self) -> Result<(), ReplicaError<L::Error>>
    where
        L: Default,
    {
        let log = std::mem::take(self.raft.mut_store());
        *self = Replica::new(self.id, self.incarnation + 1, self.settings, log)?;
        Ok(())
    }

    /// After every call into the Raft node, a reset election clock gets a timeout drawn from
    /// `random` in `[election_ticks, 2·election_ticks)`, never raft-rs's global RNG.
    pub fn reseed(&mut self, random: u64) {
        if self.raft.raft.election_elapsed == 0 && self.raft.raft.state != StateRole::Leader {
            let e = self.settings.election_ticks;
            let t = e + (random % e as u64) as usize;
            self.raft.raft.set_randomized_election_timeout(t);
        }
    }

    /// Queues `p`; [`Replica::drive`] proposes it.
    pub fn submit(&mut self, p: &Proposal) {
        self.queued.submit(p);
    }

    /// The queue [`Replica::submit`] adds to, for a host that proposes from its own methods.
    pub fn queue(&mut self) -> &mut Submit {
        &mut self.queued
    }

    /// Queues a linearizable read tagged `ctx`: [`Host::read_ready`] says from which index it
    /// may be answered.
    pub fn read_index(&mut self, ctx: Vec<u8>) {
        self.queued.reads.push(ctx);
    }

    /// Queues a membership change (add or remove a voter; its context is the proposer's to
    /// fill, e.g. with the new node's address).
    pub fn change_membership(&mut self, change: ConfChange) {
        self.queued.changes.push(change);
    }

    /// Hands a peer's message to the Raft node. A message the library refuses (another
    /// cluster's, a stale term) changes nothing.
    pub fn step(&mut self, msg: RaftMessage) {
        let _ = self.raft.step(msg);
    }

    /// The connection to `peer` was lost (its process died and the kernel closed its sockets,
    /// or the link failed). When `peer` is this follower's leader, the follower stops waiting
    /// out the base election timeout: its election clock jumps to the end of it, so that its
    /// lease on the old leader is over (it grants the pre-votes of the others that lost it
    /// too), and it campaigns (pre-vote first) within its own slot of the next base timeout.
    /// Returns whether the clock moved.
    ///
    /// The slots keep two followers that lost the leader at the same moment from splitting the
    /// vote (a split costs a whole randomized timeout more): the base timeout is cut into one
    /// slot per voter but the old leader, taken in id order, and this follower campaigns at a
    /// point drawn from `random` within its slot. When the first in line cannot win (its log is
    /// behind), the next campaigns in its own slot.
    ///
    /// Safety does not depend on it (Raft's never depends on timing), nor does stability: a
    /// follower that still hears from the leader keeps refusing pre-votes (check-quorum's
    /// lease), and a heartbeat resets the clock, so a lost connection to a live leader starts
    /// no election that could win.
    pub fn leader_lost(&mut self, peer: NodeId, random: u64) -> bool {
        let others: Vec<NodeId> = self.voters().into_iter().filter(|&v| v != peer).collect();
        let raft = &mut self.raft.raft;
        let base = raft.election_timeout();
        if raft.state != StateRole::Follower
            || node_of(raft.leader_id) != Some(peer)
            || raft.election_elapsed >= base
        {
            return false;
        }
        let rank = others.iter().position(|&v| v == self.id).unwrap_or(others.len());
        let slot = (base / others.len().max(1)).max(1);
        raft.election_elapsed = base;
        raft.set_randomized_election_timeout(base + rank * slot + (random % slot as u64) as usize);
        true
    }

    /// One tick of local time `now`: the Raft node's clock, and, on the leader, the replicated
    /// clock while leases exist.
    pub fn tick(&mut self, now: Time) {
        self.raft.tick();
        if self.raft.raft.state != StateRole::Leader {
            self.tick_from = None;
            return;
        }
        match self.tick_from {
            None => self.tick_from = Some(now),
            Some(_) if self.machine.leases().is_empty() => self.tick_from = Some(now),
            Some(from) if now.saturating_sub(from) >= self.settings.clock_every => {
                self.tick_from = Some(now);
                let p = Proposal {
                    origin: self.id,
                    incarnation: self.incarnation,
                    request: Proposal::CLOCK,
                    key: None,
                    op: Op::Tick { elapsed: now - from },
                };
                self.queued.submit(&p);
            }
            Some(_) => {}
        }
    }

    fn propose_queued(&mut self) {
        let queued = std::mem::take(&mut self.queued);
        for data in queued.proposals {
            // Dropped here when no leader is known; the host proposes again.
            let _ = self.raft.propose(Vec::new(), data);
        }
        for ctx in queued.reads {
            self.raft.read_index(ctx);
        }
        for change in queued.changes {
            let _ = self.raft.propose_conf_change(Vec::new(), change);
        }
    }

    /// Carries out everything the Raft node has ready (see the module documentation), calling
    /// `host` for what it must send, hear and answer. `random` reseeds the election timeout.
    pub fn drive(&mut self, random: u64, host: &mut impl Host) -> Result<(), ReplicaError<L::Error>> {
        self.reseed(random);
        self.propose_queued();
        while self.raft.has_ready() {
            let mut rd = self.raft.ready();
            if let Some(ss) = rd.ss()
                && ss.leader_id != self.leader
            {
                self.leader = ss.leader_id;
                host.leader_changed(node_of(ss.leader_id), self.raft.raft.term);
            }
            send(rd.take_messages(), host, &mut self.reports);
            let snapshot = (!rd.snapshot().is_empty()).then(|| rd.snapshot().clone());
            let previously_applied = self.machine.last_applied();
            if let Some(s) = &snapshot {
                self.machine = machine_from(&self.settings, &s.data)?;
            }
            self.raft
                .mut_store()
                .persist(snapshot.as_ref(), rd.entries(), rd.hs())
                .map_err(ReplicaError::Storage)?;
            if snapshot.is_some() {
                host.restored(previously_applied, &self.machine);
            }
            for rs in rd.read_states() {
                host.read_ready(&rs.request_ctx, rs.index);
            }
            let committed = rd.take_committed_entries();
            self.apply(committed, host)?;
            send(rd.take_persisted_messages(), host, &mut self.reports);
            let mut light = self.raft.advance(rd);
            if let Some(commit) = light.commit_index() {
                self.raft.mut_store().set_commit(commit).map_err(ReplicaError::Storage)?;
            }
            send(light.take_messages(), host, &mut self.reports);
            let committed = light.take_committed_entries();
            self.apply(committed, host)?;
            self.raft.advance_apply();
            self.report_sends();
            self.compact()?;
            self.propose_queued();
        }
        self.reseed(random);
        Ok(())
    }

    /// Step 6: tells the Raft node what became of the messages just handed out.
    fn report_sends(&mut self) {
        for report in std::mem::take(&mut self.reports) {
            match report {
                SendReport::Snapshot(to, sent) => {
                    let status = if sent { SnapshotStatus::Finish } else { SnapshotStatus::Failure };
                    self.raft.report_snapshot(to, status);
                }
                SendReport::Unreachable(to) => self.raft.report_unreachable(to),
            }
        }
    }

    fn apply(&mut self, entries: Vec<Entry>, host: &mut impl Host) -> Result<(), ReplicaError<L::Error>> {
        for e in entries {
            match e.get_entry_type() {
                EntryType::EntryNormal if !e.data.is_empty() => {
                    let Some(p) = Proposal::decode(&e.data) else { continue };
                    // An index at or below the last applied one (a snapshot already covered it)
                    // is refused by the state machine and changes nothing.
                    let Ok(applied) = self.machine.apply_once(e.index, p.key, &p.op) else { continue };
                    host.applied(e.index, &p, applied, &self.machine, &mut self.queued);
                }
                EntryType::EntryConfChange => {
                    let Ok(change) = ConfChange::parse_from_bytes(&e.data) else { continue };
                    let conf_state = self.raft.apply_conf_change(&change)?;
                    self.raft
                        .mut_store()
                        .set_conf_state(conf_state.clone())
                        .map_err(ReplicaError::Storage)?;
                    host.membership_changed(&change, &conf_state);
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn compact(&mut self) -> Result<(), ReplicaError<L::Error>> {
        let applied = self.machine.last_applied();
        let first = self.raft.store().first_kept();
        if applied >= first && applied - first + 1 >= self.settings.snapshot_every {
            let data = postcard::to_allocvec(&self.machine).unwrap_or_default();
            self.raft.mut_store().snapshot_and_compact(applied, data).map_err(ReplicaError::Storage)?;
        }
        Ok(())
    }
}

/// Hands `msgs` to the host in destination order (raft-rs's order follows its hash maps),
/// noting in `reports` the snapshots sent and the peers found unreachable.
fn send(mut msgs: Vec<RaftMessage>, host: &mut impl Host, reports: &mut Vec<SendReport>) {
    msgs.sort_by_key(|m| m.to);
    for m in msgs {
        let Some(to) = node_of(m.to) else { continue };
        let (raft_to, snapshot) = (m.to, m.get_msg_type() == MessageType::MsgSnapshot);
        let sent = host.send(to, m).is_ok();
        if snapshot {
            reports.push(SendReport::Snapshot(raft_to, sent));
        }
        if !sent {
            reports.push(SendReport::Unreachable(raft_to));
        }
    }
}

/// A membership change that adds `node` as a voter, with `context` (e.g. its address).
pub fn add_voter(node: NodeId, context: Vec<u8>) -> ConfChange {
    let mut cc = ConfChange::default();
    cc.set_change_type(ConfChangeType::AddNode);
    cc.node_id = raft_id(node);
    cc.context = context.into();
    cc
}

/// A membership change that adds `node` as a learner, with `context` (e.g. its address): it
/// receives the log and does not vote, so it counts toward no quorum until [`add_voter`]
/// promotes it.
pub fn add_learner(node: NodeId, context: Vec<u8>) -> ConfChange {
    let mut cc = ConfChange::default();
    cc.set_change_type(ConfChangeType::AddLearnerNode);
    cc.node_id = raft_id(node);
    cc.context = context.into();
    cc
}

/// A membership change that removes `node` (a voter or a learner).
pub fn remove_voter(node: NodeId) -> ConfChange {
    let mut cc = ConfChange::default();
    cc.set_change_type(ConfChangeType::RemoveNode);
    cc.node_id = raft_id(node);
    cc
}

fn raft_config(id: NodeId, settings: &Settings, applied: u64) -> raft::Config {
    raft::Config {
        id: raft_id(id),
        election_tick: settings.election_ticks,
        heartbeat_tick: settings.heartbeat_ticks,
        // The library's own draw is replaced by ours (`reseed`); this is the range ours is
        // drawn from.
        min_election_tick: settings.election_ticks,
        max_election_tick: 2 * settings.election_ticks,
        applied,
        pre_vote: true,
        check_quorum: true,
        max_size_per_msg: 1024 * 1024,
        max_inflight_msgs: 256,
        ..Default::default()
    }
}

/// The state machine a snapshot holds (a fresh one for the empty snapshot of a new log).
fn machine_from<E: std::error::Error>(
    settings: &Settings,
    data: &[u8],
) -> Result<StateMachine, ReplicaError<E>> {
    if data.is_empty() {
        return Ok(StateMachine::new(settings.lock_delay, settings.policy).with_planted(settings.planted));
    }
    let machine: StateMachine = postcard::from_bytes(data).map_err(ReplicaError::Snapshot)?;
    Ok(machine.with_planted(settings.planted))
}

#[cfg(test)]
mod tests {
    //! [`Replica::leader_lost`] on three replicas over memory logs, ticked and delivered by hand.

    use super::*;
    use crate::log::MemoryLog;

    const ELECTION_TICKS: usize = 10;

    /// A host that keeps what its replica sends.
    #[derive(Default)]
    struct Outbox(Vec<(NodeId, RaftMessage)>);

    impl Host for Outbox {
        fn send(&mut self, to: NodeId, msg: RaftMessage) -> Result<(), Unreachable> {
            self.0.push((to, msg));
            Ok(())
        }
        fn applied(&mut self, _: u64, _: &Proposal, _: Applied, _: &StateMachine, _: &mut Submit) {}
    }

    /// Three replicas. `down[i]` drops everything to and from replica `i`; `cut` drops the
    /// messages of one direction of one link.
    struct Cluster {
        nodes: Vec<Replica<MemoryLog>>,
        down: [bool; 3],
        cut: Option<(NodeId, NodeId)>,
        draw: u64,
    }

    impl Cluster {
        fn new() -> Cluster {
            let settings = Settings {
                election_ticks: ELECTION_TICKS,
                heartbeat_ticks: 2,
                clock_every: 1_000_000_000,
                snapshot_every: 1_000,
                lock_delay: 0,
                policy: DeadlockPolicy::Report,
                planted: None,
            };
            let nodes = (0..3)
                .map(|me| Replica::new(me, 0, settings, MemoryLog::new(vec![1, 2, 3])).expect("a fresh log"))
                .collect();
            let mut c = Cluster { nodes, down: [false; 3], cut: None, draw: 1 };
            // Driven once before the first tick, as the hosts do: the election timeouts are then
            // ours, not raft-rs's own draw.
            c.settle();
            c
        }

        /// Drives every live replica and delivers what they send until nothing is sent.
        fn settle(&mut self) {
            loop {
                let mut sent = Vec::new();
                for i in (0..3).filter(|&i| !self.down[i]) {
                    // A fixed sequence of draws: the same run every time.
                    self.draw = self.draw.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    let mut out = Outbox::default();
                    self.nodes[i].drive(self.draw >> 33, &mut out).expect("memory never fails");
                    sent.extend(out.0.into_iter().map(|(to, m)| (i as NodeId, to, m)));
                }
                if sent.is_empty() {
                    return;
                }
                for (from, to, m) in sent {
                    if !self.down[from as usize] && !self.down[to as usize] && self.cut != Some((from, to)) {
                        self.nodes[to as usize].step(m);
                    }
                }
            }
        }

        /// One tick of every live replica, then everything they send is delivered.
        fn tick(&mut self) {
            for i in (0..3).filter(|&i| !self.down[i]) {
                self.nodes[i].tick(0);
            }
            self.settle();
        }

        fn leader(&self) -> Option<NodeId> {
            (0..3).find(|&i| !self.down[i] && self.nodes[i].role() == StateRole::Leader).map(|i| i as NodeId)
        }

        /// Ticks until a live replica leads; returns it and the ticks it took.
        fn elect(&mut self) -> (NodeId, usize) {
            for ticks in 1..=10 * ELECTION_TICKS {
                self.tick();
                if let Some(l) = self.leader() {
                    return (l, ticks);
                }
            }
            panic!("no leader within {} ticks", 10 * ELECTION_TICKS)
        }

        fn followers(&self, of: NodeId) -> Vec<usize> {
            (0..3).filter(|&i| i != of as usize).collect()
        }
    }

    #[test]
    fn followers_that_lose_their_leader_elect_another_within_the_randomized_part_of_the_timeout() {
        let mut c = Cluster::new();
        let (old, _) = c.elect();
        c.down[old as usize] = true;
        for f in c.followers(old) {
            assert!(c.nodes[f].leader_lost(old, 7), "follower {f} moves its clock");
            assert!(!c.nodes[f].leader_lost(old, 7), "and only forward, once");
        }
        // The first in line campaigns within its slot (half the base timeout for two).
        let (new, ticks) = c.elect();
        assert_ne!(new, old);
        assert!(ticks <= ELECTION_TICKS / 2 + 1, "{ticks} ticks: the base timeout was waited out");

        // Without the hint the followers wait out the base timeout, less the tick at most that
        // passed since the leader's last heartbeat (every 2 ticks).
        let mut c = Cluster::new();
        let (old, _) = c.elect();
        c.down[old as usize] = true;
        let (_, ticks) = c.elect();
        assert!(ticks >= ELECTION_TICKS - 1, "{ticks} ticks");
    }

    #[test]
    fn followers_that_lose_the_leader_together_do_not_split_the_vote() {
        // The same draw for both: without their slots they would campaign in the same tick.
        for random in 0..2 * ELECTION_TICKS as u64 {
            let mut c = Cluster::new();
            let (old, _) = c.elect();
            let term = c.nodes[old as usize].term();
            c.down[old as usize] = true;
            for f in c.followers(old) {
                assert!(c.nodes[f].leader_lost(old, random));
            }
            let (new, _) = c.elect();
            assert_eq!(c.nodes[new as usize].term(), term + 1, "draw {random}: more than one election");
        }
    }

    #[test]
    fn a_lost_connection_to_a_live_leader_changes_neither_leader_nor_term() {
        let mut c = Cluster::new();
        let (leader, _) = c.elect();
        let term = c.nodes[leader as usize].term();
        let f = c.followers(leader)[0];
        // The follower hears no more from the leader, but everyone else does.
        c.cut = Some((leader, f as NodeId));
        assert!(c.nodes[f].leader_lost(leader, 7));
        for _ in 0..5 * ELECTION_TICKS {
            c.tick();
        }
        // Its pre-votes were refused: the other follower and the leader are within their lease.
        assert_eq!(c.leader(), Some(leader));
        assert_eq!(c.nodes[leader as usize].term(), term);
        let other = c.followers(leader)[1];
        assert_eq!(c.nodes[other].term(), term);
    }

    #[test]
    fn a_lost_connection_to_a_peer_that_does_not_lead_changes_nothing() {
        let mut c = Cluster::new();
        let (leader, _) = c.elect();
        let [a, b] = c.followers(leader)[..] else { unreachable!() };
        assert!(!c.nodes[a].leader_lost(b as NodeId, 7), "a follower is not the leader");
        assert!(!c.nodes[leader as usize].leader_lost(a as NodeId, 7), "a leader has no leader to lose");
    }
}
