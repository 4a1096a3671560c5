//! A service node: one [`Replica`] over a [`DiskLog`], its peers over the authenticated TCP
//! transport of real nodes ([`ringleader_transport::peer`]), and the HTTP API ([`crate::http`]).
//!
//! Peers send each other raft-rs's messages alone, one per frame ([`Msg`]): no envelope, no
//! Lamport or vector stamps (a service node keeps no trace to stamp; the stamps belong to the
//! textbook nodes' traces).
//!
//! One task owns the replica (the *loop*, `run_loop`). Everything else talks to it through
//! channels: the transport's readers hand it peer messages, HTTP handlers send it
//! [`Call`]s and wait on a oneshot for the answer, and it publishes every applied
//! [`Notice`] on a broadcast channel that blocked requests and watch streams listen to.
//!
//! Each turn of the loop takes one input, then everything else already waiting (up to a bound),
//! and only then drives the replica: all the proposals and messages of a turn share one
//! `Ready`, so one fsync (group commit).
//!
//! The loop is the replica's [`Host`]: messages go into the peer queues, applied entries of this
//! node's own proposals answer their waiting requests, and a linearizable read is answered once
//! the entry its ReadIndex names has been applied.
//!
//! ## Membership
//!
//! The members change through raft-rs conf changes, one at a time ([`Call::ChangeMembers`]).
//! An added node's peer address travels in its `AddNode` change's context, so every node that
//! applies the change learns it and opens a link to it; a removed node's link is closed once
//! what was queued for it (the append that tells it its removal committed) is written. The
//! address table is kept in the file `members` beside the log (see [`MemberTable`]).
//!
//! A node started with [`ServerConfig::join`] has an empty configuration: it never campaigns,
//! and waits until the leader, having applied its `AddNode`, sends it a snapshot. That it is a
//! snapshot, never the log from index 1 (whose first configuration lives in no entry), is
//! ensured by every node compacting its log right after it applies an `AddNode`. A node that
//! applies its own removal stops: it no longer ticks nor steps, and answers every request 503
//! ([`Unavailable::Removed`]).

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::Mutex;
use raft::StateRole;
use raft::eraftpb::{ConfChange, ConfChangeType, ConfState, Message as RaftMessage};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use ringleader_core::{NodeId, Time};
use ringleader_lock_service::kv::KeyEvent;
use ringleader_lock_service::planted::Planted;
use ringleader_lock_service::process::Msg;
use ringleader_lock_service::replica::{
    Host, Proposal, Replica, ReplicaError, Settings, Submit, Unreachable, add_learner, add_voter, node_of,
    remove_voter,
};
use ringleader_lock_service::state::{
    Applied, DeadlockPolicy, IdempotencyKey, LeaseId, Notice, Op, Owner, Reply, RequestId, StateMachine,
};
use ringleader_transport::auth::Secret;
use ringleader_transport::{
    Counted, Inbound, LinkState, PeerConfig, TransportCounters, TransportCounts, peer, wire,
};
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::disk::{DiskError, DiskLog};
use crate::identity::{self, Identity, LogState, StartMode};
use crate::metrics::{ServiceMetrics, Timed};

/// The replica's log: the redb file, its writes timed for `/metrics`.
type Log = Timed<DiskLog>;

/// The name the service's peers say in their hello, with the version of what they send (3:
/// raft-rs's messages alone, one per frame, whose lease grants carry their owner): only
/// service nodes of this version talk to each other. The cluster id follows it
/// (`lock-service/3/ID`).
pub const PROTOCOL: &str = "lock-service/3";

/// What a peer's reader hands the loop: a message, from the position its connection proved.
type PeerInput = Inbound<Msg, NodeId>;

/// Capacity of each peer's outgoing queue (messages); beyond it messages are dropped.
const QUEUE_CAPACITY: usize = ringleader_transport::DEFAULT_QUEUE_CAPACITY;

/// Adds one to a counter of the loop's ([`ServiceMetrics`]).
fn bump(c: &std::sync::atomic::AtomicU64) {
    c.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// The highest node id (the replica numbers nodes with a `u8`-sized range of positions).
pub const MAX_ID: u64 = 255;

/// The name of the address table's file in the data directory.
const MEMBERS_FILE: &str = "members";

/// How long a removed peer's link stays open to write what was queued for it.
const FAREWELL: Duration = Duration::from_secs(2);

/// The peer address of every node this one knows, by id — the members of the configuration,
/// plus, on a joining node, the members it was told of.
///
/// It survives a restart in the file `members` beside the log, rewritten (fsync, atomic
/// rename) whenever an applied membership change alters it. The file is needed because the log
/// alone cannot rebuild it: the `AddNode` entries carrying the addresses are compacted away
/// behind snapshots, and a snapshot holds the configuration's ids but not their addresses.
/// Entries after the latest snapshot are applied again at start, and applying a change twice
/// leaves the table as once.
pub type MemberTable = BTreeMap<u64, String>;

/// Reads the address table of `dir` (`None` when the file does not exist).
fn read_members(dir: &Path) -> Result<Option<MemberTable>, ServeError> {
    let path = dir.join(MEMBERS_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(ServeError::Io { what: format!("read {}", path.display()), source }),
    };
    let mut table = MemberTable::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let parsed = line.split_once('=').and_then(|(id, addr)| Some((id.trim().parse().ok()?, addr.trim())));
        let Some((id, addr)) = parsed else {
            return Err(ServeError::Config(format!(
                "{} has the line {line:?}, not ID=HOST:PORT; restore or delete the file",
                path.display()
            )));
        };
        table.insert(id, addr.to_string());
    }
    Ok(Some(table))
}

/// Writes the address table of `dir`, with fsync and an atomic rename.
fn write_members(dir: &Path, table: &MemberTable) -> Result<(), ServeError> {
    use std::io::Write;
    let path = dir.join(MEMBERS_FILE);
    let tmp = dir.join("members.new");
    let io = |what: &str, source| ServeError::Io { what: format!("{what} {}", path.display()), source };
    {
        let mut f = crate::disk::private_file(&tmp).map_err(|e| io("write", e))?;
        for (id, addr) in table {
            writeln!(f, "{id}={addr}").map_err(|e| io("write", e))?;
        }
        f.sync_all().map_err(|e| io("sync", e))?;
    }
    std::fs::rename(&tmp, &path).map_err(|e| io("rename", e))
}

/// Everything one service node needs to start.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// This node's id, from 1 (`1..=N` in a cluster started together; it is also its Raft
    /// id).
    pub id: u64,
    /// Every member's id and peer address (`host:port`), this node included.
    pub members: Vec<(u64, String)>,
    /// Where to accept peer connections.
    pub listen: SocketAddr,
    /// Where to serve the HTTP API.
    pub api: SocketAddr,
    /// The directory of the durable Raft log (created if missing).
    pub data_dir: PathBuf,
    /// The cluster secret peers prove they hold; `None`: peers are believed (`--insecure`).
    pub secret: Option<Secret>,
    /// Local time between two Raft ticks.
    pub tick: Duration,
    /// Ticks without a leader before a follower campaigns.
    pub election_ticks: usize,
    /// Ticks between a leader's heartbeats.
    pub heartbeat_ticks: usize,
    /// How often the leader moves the replicated clock while leases exist.
    pub clock_every: Duration,
    /// Applied entries between two snapshots.
    pub snapshot_every: u64,
    /// After an involuntary loss, a lock is not granted again for this long.
    pub lock_delay: Duration,
    /// What a wait that would close a wait-for cycle does.
    pub policy: DeadlockPolicy,
    /// A bug planted in the state machine (`serve --planted`; only a build of the lock service
    /// with the `planted` feature, the test build, plants anything: see
    /// [`ringleader_lock_service::planted`]). `None` in production.
    pub planted: Option<ringleader_lock_service::planted::Planted>,
    /// A request not committed (or a read not confirmed) within this is answered 503.
    pub request_timeout: Duration,
    /// A proposal not seen applied after this is proposed again (a leader change drops it).
    pub retry: Duration,
    /// The seed of the election-timeout draws (`None`: from the OS).
    pub seed: Option<u64>,
    /// This node joins a running cluster: `members` are the cluster's current members (and
    /// this node); it starts with no configuration and waits to be added
    /// ([`Call::ChangeMembers`]) and sent a snapshot. Ignored once its log is not new.
    pub join: bool,
    /// This is the first start of a new cluster: an empty data directory gets the cluster's
    /// first configuration (`members`). Refused over a directory that holds a log; without it
    /// (and without `join`) a member of a multi-node cluster needs its log (see
    /// [`crate::identity`]).
    pub bootstrap: bool,
    /// The cluster's id: checked against the data directory's, taken by a new one (see
    /// [`crate::identity`]).
    pub cluster_id: Option<String>,
    /// The bearer token the HTTP API's clients must send (`None`: none asked).
    pub api_token: Option<ringleader_transport::http::ApiToken>,
    /// The HTTP API's connection limits (open connections, idle and write-stall timeouts).
    pub api_limits: ringleader_transport::http::ConnectionLimits,
    /// `--insecure`: listeners beyond the loopback may go without TLS (and the API without
    /// client authentication).
    pub insecure_api: bool,
    /// TLS of the client APIs, HTTP and gRPC (etcd's `--cert-file`, `--key-file`,
    /// `--trusted-ca-file`, `--client-cert-auth`); `None`: plain TCP.
    pub tls: Option<ringleader_transport::tls::ServerFiles>,
    /// Mutual TLS between peers (etcd's `--peer-cert-file`, `--peer-key-file`,
    /// `--peer-trusted-ca-file`); `None`: plain TCP.
    pub peer_tls: Option<ringleader_transport::tls::PeerTls>,
    /// The largest write request the etcd API takes, in bytes (etcd's `--max-request-bytes`).
    pub max_request_bytes: usize,
    /// The backend quota, in bytes (etcd's `--quota-backend-bytes`): a write that would take
    /// the key-value store's size ([`ringleader_lock_service::kv::KvStore::bytes`])
    /// past it is refused and raises the `NOSPACE` alarm.
    pub quota_backend_bytes: u64,
    /// Other members' HTTP API base URLs (`http://HOST:PORT`), by id: a request refused for want
    /// of a leader names the leader's URL from here ([`LeaderHint`]). This node's own is added
    /// at start.
    pub client_urls: BTreeMap<u64, String>,
}

/// The largest peer message a node sends and takes. A snapshot travels as one message, and it
/// holds the whole state machine: the key-value store (at most the backend quota, which counts
/// more per record than the snapshot's encoding takes), its history (at most
/// [`HISTORY_BYTES_LIMIT`](ringleader_lock_service::kv::HISTORY_BYTES_LIMIT)), leases,
/// locks and the idempotency answers (the slack). A bound below that would leave a new or lagging
/// member waiting for ever for a snapshot that can never be written (its frame refused, the
/// connection reset, the snapshot sent again). At least 8 MiB; at most 4 GiB − 1, the frame
/// format's limit. Only a peer that proved itself may send frames this large
/// ([`HANDSHAKE_MAX_FRAME`](ringleader_transport::peer::HANDSHAKE_MAX_FRAME) before).
pub fn max_frame(quota_backend_bytes: u64) -> usize {
    const SLACK: u64 = 64 * 1024 * 1024;
    let bound = quota_backend_bytes
        .saturating_add(ringleader_lock_service::kv::HISTORY_BYTES_LIMIT)
        .saturating_add(SLACK)
        .clamp(8 * 1024 * 1024, u32::MAX as u64);
    bound as usize
}

/// etcd's default `--max-request-bytes`: 1.5 MiB.
pub const DEFAULT_MAX_REQUEST_BYTES: usize = 1536 * 1024;

/// etcd's default `--quota-backend-bytes`: 2 GiB.
pub const DEFAULT_QUOTA_BACKEND_BYTES: u64 = 2 * 1024 * 1024 * 1024;

impl ServerConfig {
    /// A configuration with the defaults for everything but identity, membership and places.
    pub fn new(
        id: u64,
        members: Vec<(u64, String)>,
        listen: SocketAddr,
        api: SocketAddr,
        data_dir: PathBuf,
    ) -> Self {
        ServerConfig {
            id,
            members,
            listen,
            api,
            data_dir,
            secret: None,
            tick: Duration::from_millis(10),
            election_ticks: 10,
            heartbeat_ticks: 2,
            clock_every: Duration::from_millis(20),
            snapshot_every: 1_000,
            lock_delay: Duration::ZERO,
            policy: DeadlockPolicy::Report,
            planted: None,
            request_timeout: Duration::from_secs(5),
            retry: Duration::from_millis(400),
            seed: None,
            join: false,
            bootstrap: false,
            cluster_id: None,
            api_token: None,
            api_limits: ringleader_transport::http::ConnectionLimits::default(),
            insecure_api: false,
            tls: None,
            peer_tls: None,
            max_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
            quota_backend_bytes: DEFAULT_QUOTA_BACKEND_BYTES,
            client_urls: BTreeMap::new(),
        }
    }

    /// True when the client APIs are TLS and their clients authenticate (a client certificate
    /// or the bearer token): what a listener beyond the loopback needs without `--insecure`.
    pub fn authenticated_tls(&self) -> bool {
        self.tls.as_ref().is_some_and(|t| t.client_cert_auth || self.api_token.is_some())
    }

    /// The scheme of this node's client URLs: `https` with TLS, else `http`.
    pub fn scheme(&self) -> &'static str {
        if self.tls.is_some() { "https" } else { "http" }
    }

    /// Checks the configuration; the error says what is wrong and what is allowed.
    pub fn validate(&self) -> Result<(), ServeError> {
        let bad = |what: String| Err(ServeError::Config(what));
        if self.max_request_bytes < 1024 || self.max_request_bytes > 64 * 1024 * 1024 {
            return bad(format!(
                "--max-request-bytes {}: give 1024..=67108864 (1 KiB to 64 MiB)",
                self.max_request_bytes
            ));
        }
        if self.quota_backend_bytes == 0 {
            return bad("--quota-backend-bytes 0: give a positive number of bytes".into());
        }
        let mut ids: Vec<u64> = self.members.iter().map(|m| m.0).collect();
        ids.sort_unstable();
        if ids.first() == Some(&0) {
            return bad("node ids start at 1".into());
        }
        if ids.windows(2).any(|w| w[0] == w[1]) {
            return bad("a member id appears twice in --peer/--members; ids must be distinct".into());
        }
        if !ids.contains(&self.id) {
            return bad(format!("this node's id {} is not among the members {ids:?}", self.id));
        }
        if ids.len() > 255 || self.id > MAX_ID {
            return bad(format!("at most 255 members, with ids 1..={MAX_ID}"));
        }
        if !self.api.ip().is_loopback() && !self.insecure_api && !self.authenticated_tls() {
            return bad(format!(
                "--api {}: a non-loopback API needs TLS (--cert-file, --key-file) and client authentication \
                 (--client-cert-auth, or a bearer token: --api-token-file), or --insecure",
                self.api
            ));
        }
        if !self.listen.ip().is_loopback() && !self.insecure_api && self.peer_tls.is_none() {
            return bad(format!(
                "--listen {}: non-loopback peer links need mutual TLS (--peer-cert-file, --peer-key-file, \
                 --peer-trusted-ca-file), or --insecure",
                self.listen
            ));
        }
        if self.join && self.bootstrap {
            return bad("--join and --bootstrap contradict each other: a node joins a running cluster or starts a new one".into());
        }
        if let Some(c) = &self.cluster_id {
            crate::identity::check_cluster_id(c)?;
        }
        if self.join && ids.len() < 2 {
            return bad("--join needs the running cluster's members (--peer ID=HOST:PORT for each)".into());
        }
        if self.tick < Duration::from_millis(1) || self.tick > Duration::from_secs(1) {
            return bad("--tick must be 1ms..=1s".into());
        }
        if !(2..=1000).contains(&self.election_ticks) {
            return bad("--election-ticks must be 2..=1000".into());
        }
        if self.heartbeat_ticks == 0 || self.heartbeat_ticks >= self.election_ticks {
            return bad(format!(
                "--heartbeat-ticks must be 1..{} (below --election-ticks)",
                self.election_ticks
            ));
        }
        if self.snapshot_every == 0 {
            return bad("--snapshot-every must be at least 1".into());
        }
        if self.request_timeout < self.tick * 2 {
            return bad("--request-timeout must be at least two ticks".into());
        }
        Ok(())
    }

    fn settings(&self) -> Settings {
        Settings {
            election_ticks: self.election_ticks,
            heartbeat_ticks: self.heartbeat_ticks,
            clock_every: self.clock_every.as_nanos() as Time,
            snapshot_every: self.snapshot_every,
            lock_delay: self.lock_delay.as_nanos() as Time,
            policy: self.policy,
            // Nothing unless `serve --planted` in a test build (deploy/nemesis.sh).
            planted: self.planted,
        }
    }
}

/// Why a service node could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The configuration is invalid.
    #[error("{0}")]
    Config(String),
    /// The durable log could not be opened or written; the message ends with what to do.
    #[error("{source} (file {}); {}", dir.join(crate::disk::FILE_NAME).display(), source.advice())]
    Disk {
        /// The data directory.
        dir: PathBuf,
        /// What went wrong.
        source: Box<DiskError>,
    },
    /// The data directory is not this node's whole log (see [`crate::identity`]).
    #[error(transparent)]
    Identity(#[from] crate::identity::IdentityError),
    /// The leader knows this node acknowledged entries its log no longer holds: the directory is
    /// an old copy, or was emptied, while the cluster went on.
    #[error(
        "node {leader}, the leader in term {term}, counts entries up to {commit} as replicated here, but the \
         Raft log in {dir} ends at {last_index}: the directory is an old or emptied copy; remove this node \
         (`ringleader member remove {id}`) and add it back empty with --join (docs/SERVICE.md, \"Replacing a \
         lost disk\")"
    )]
    StaleLog {
        /// This node's id.
        id: u64,
        /// The data directory.
        dir: PathBuf,
        /// The leader's id.
        leader: u64,
        /// Its term.
        term: u64,
        /// The commit index it sent.
        commit: u64,
        /// This log's last index.
        last_index: u64,
    },
    /// The replica failed (storage, a corrupt snapshot, raft-rs refusing the log).
    #[error("replica: {0}")]
    Replica(Box<ReplicaError<DiskError>>),
    /// A socket or a file could not be opened.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The OS error.
        source: std::io::Error,
    },
}

impl From<ReplicaError<DiskError>> for ServeError {
    fn from(e: ReplicaError<DiskError>) -> ServeError {
        ServeError::Replica(Box::new(e))
    }
}

/// The leader a refusing node knows of, for the client to try next: its id, and its HTTP API's
/// base URL when this node was told it ([`ServerConfig::client_urls`]).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct LeaderHint {
    /// The leader's node id.
    pub id: u64,
    /// Its HTTP API's base URL (`http://HOST:PORT`), if known.
    pub url: Option<String>,
}

impl std::fmt::Display for LeaderHint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.url {
            Some(url) => write!(f, "the leader is node {} at {url}", self.id),
            None => write!(f, "the leader is node {}", self.id),
        }
    }
}

/// The leader hint, or "no leader known", for [`Unavailable::Timeout`]'s message.
fn hint_text(leader: &Option<LeaderHint>) -> String {
    match leader {
        Some(h) => format!("{h}"),
        None => "no leader known".into(),
    }
}

/// Why a request could not be served.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Unavailable {
    /// Not committed within the request timeout (no leader, no majority, the leader out of
    /// reach): `leader` is the leader this node knew when it gave up.
    #[error(
        "not committed within {after:?}: no leader or no majority reachable ({}); try another node",
        hint_text(leader)
    )]
    Timeout {
        /// The request timeout.
        after: Duration,
        /// The leader this node knows, if any.
        leader: Option<LeaderHint>,
    },
    /// The node is stopping.
    #[error("the node is stopping")]
    Stopping,
    /// The node was removed from the cluster: it serves nothing any more.
    #[error("node {0} was removed from the cluster and serves nothing; ask another node")]
    Removed(u64),
}

/// A change of the cluster's members.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MemberChange {
    /// Add node `id`, whose peers reach it at `peer` (`host:port`), as a voter.
    Add {
        /// Its id.
        id: u64,
        /// Its peer address.
        peer: String,
    },
    /// Remove node `id`.
    Remove {
        /// Its id.
        id: u64,
    },
}

/// Why a membership change was not made.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ChangeRefused {
    /// Another change is not applied yet (raft-rs makes one at a time).
    #[error("a membership change is already in progress; retry once it is applied")]
    InProgress,
    /// The node to remove is not a member.
    #[error("node {0} is not a member")]
    Unknown(u64),
    /// The node to remove is the last voter.
    #[error("node {0} is the last member; a cluster cannot remove its last voter")]
    LastMember(u64),
    /// The node to add is a member already, at another address.
    #[error("node {id} is already a member, at {peer}; remove it first to move it")]
    AlreadyMember {
        /// Its id.
        id: u64,
        /// Its address.
        peer: String,
    },
    /// The new member was added as a learner but never connected (or a promotion would have
    /// left fewer started voters than a majority) before the request's timeout: it stays a
    /// learner, which counts toward no quorum.
    #[error(
        "node {id} was added as a learner (it receives the log and does not vote) but was not ready to be \
         promoted in time: start it (serve --join) and add it again to promote it, or remove it"
    )]
    LearnerNotReady {
        /// The learner.
        id: u64,
    },
    /// This node is not in the configuration yet (it waits to be added).
    #[error("this node is not a member yet (it waits to be added); ask a member")]
    NotMember,
    /// The change was not applied in time, or the node is stopping or removed.
    #[error("{0}")]
    Unavailable(#[from] Unavailable),
}

/// One member: its id and peer address.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Member {
    /// Its id.
    pub id: u64,
    /// Its peer address (empty if this node never learnt it).
    pub peer: String,
}

/// The members as of an applied index.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Members {
    /// The voters, by id.
    pub members: Vec<Member>,
    /// The learners (added, not promoted yet), by id.
    pub learners: Vec<Member>,
    /// The index this node had applied.
    pub applied: u64,
}

/// A question about the state machine, asked in the loop: the closure reads the state machine
/// and sends its typed answer on a channel of its own ([`Node::read`] and [`Node::local`] build
/// it), so no answer crosses the loop as untyped data.
pub type Query = Box<dyn FnOnce(&StateMachine) + Send>;

/// A call into the node's loop: what the APIs ask of it (the loop owns the replica; a call
/// carries a oneshot for its answer).
pub enum Call {
    /// Propose `op`; the answer is the index of its entry and the applied result.
    Propose {
        /// The operation.
        op: Op,
        /// The client's idempotency key, if it gave one (else the node's own key is used): a
        /// request retried with the same key is applied at most once.
        key: Option<IdempotencyKey>,
        /// Where the result goes.
        reply: oneshot::Sender<Result<(u64, Applied), Unavailable>>,
    },
    /// A linearizable read: `query` runs once a ReadIndex confirmed by a majority is applied;
    /// `reply` then carries the applied index it saw (or why the read could not be made, and
    /// `query` is dropped without running).
    Read {
        /// The question.
        query: Query,
        /// Where the applied index goes.
        reply: oneshot::Sender<Result<u64, Unavailable>>,
    },
    /// A read of this node's own state machine, without a round trip (a check before
    /// answering, not a linearizable read).
    Local {
        /// The question.
        query: Query,
        /// Where the applied index goes, once `query` ran (or why it did not run).
        reply: oneshot::Sender<Result<u64, Unavailable>>,
    },
    /// The members this node knows (its applied configuration and address table).
    Members {
        /// Where the answer goes.
        reply: oneshot::Sender<Result<Members, Unavailable>>,
    },
    /// Proposes a membership change; the answer comes once it is applied here.
    ChangeMembers {
        /// The change.
        change: MemberChange,
        /// Where the members after it go.
        reply: oneshot::Sender<Result<Members, ChangeRefused>>,
    },
}

/// What `/status` shows, kept up to date by the loop.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Status {
    /// This node's id.
    pub id: u64,
    /// The cluster's id (a joining node is started with it).
    pub cluster: String,
    /// The id of the Raft leader this node knows.
    pub leader: Option<u64>,
    /// The current term.
    pub term: u64,
    /// `leader`, `follower`, `candidate`, `pre_candidate`, or `removed` once this node was
    /// removed from the cluster.
    pub role: &'static str,
    /// The last applied index.
    pub applied: u64,
    /// The highest index known committed.
    pub commit: u64,
    /// The voters' ids.
    pub members: Vec<u64>,
    /// True once this node applied its own removal: it serves nothing any more.
    pub removed: bool,
    /// The key-value store's size as the backend quota counts it
    /// ([`ringleader_lock_service::kv::KvStore::bytes`]).
    pub store_bytes: u64,
}

/// An applied entry's notice, with the entry's index.
pub type Published = Arc<(u64, Notice)>;

/// A running service node: what the HTTP API needs, and how to stop it.
pub struct Node {
    /// This node's position in the replica's numbering (its id − 1): the `origin` of its
    /// leases.
    pub me: NodeId,
    /// Commands to the loop.
    pub calls: mpsc::Sender<Call>,
    /// Every applied notice, in log order.
    pub notices: broadcast::Sender<Published>,
    /// The status, as of the loop's last turn.
    pub status: Arc<Mutex<Status>>,
    /// The peer transport's counters (authentication failures, dropped messages, …).
    pub peer_counters: Arc<TransportCounters>,
    /// How long a request may wait for its commit.
    pub request_timeout: Duration,
    /// Cancelled to stop the node.
    pub shutdown: CancellationToken,
    /// What the loop and the API count (`GET /metrics`).
    pub metrics: Arc<ServiceMetrics>,
    /// Event streams (SSE) open at once, at most: half the API's connections, so that streams
    /// never take the connections that health checks, reads and writes need.
    pub max_streams: usize,
    /// Event streams open now.
    pub streams: Arc<std::sync::atomic::AtomicUsize>,
    /// The largest write request the etcd API takes, in bytes.
    pub max_request_bytes: usize,
    /// The backend quota, in bytes ([`ServerConfig::quota_backend_bytes`]).
    pub quota_backend_bytes: u64,
    /// The `NOSPACE` alarm: raised when this node refused a write for want of space, listed by
    /// the etcd API's `Maintenance.Alarm` until it is disarmed there.
    pub nospace: std::sync::atomic::AtomicBool,
    /// Who is calling and what they may do: the applied auth store's view, the tokens handed
    /// out, the API token ([`crate::users`]).
    pub users: Arc<crate::users::Users>,
    /// Who owns each lease, as far as this node has seen ([`LeaseOwners`]).
    pub lease_owners: Arc<LeaseOwners>,
}

/// The owners of the leases this node has seen granted: a cache of the applied state, so that
/// checking who may act on a lease ([`crate::ops::authorize`]) costs no round trip through the
/// loop. Sound because a lease's owner never changes after its grant and lease ids are never
/// reused. Filled when a grant is applied here (or a lookup missed); an entry leaves when its
/// lease expires or is revoked. An entry whose lease ended unseen (a snapshot installed over
/// it) only lets an operation reach the state machine, which answers that the lease is gone.
#[derive(Default)]
pub struct LeaseOwners(Mutex<std::collections::HashMap<LeaseId, Option<Owner>>>);

impl LeaseOwners {
    /// The most entries kept; past it the cache starts again empty.
    const MAX: usize = 1 << 20;

    /// `lease`'s owner, when this node has seen it.
    pub fn get(&self, lease: LeaseId) -> Option<Option<Owner>> {
        self.0.lock().get(&lease).cloned()
    }

    /// Records `lease`'s owner.
    pub fn insert(&self, lease: LeaseId, owner: Option<Owner>) {
        let mut m = self.0.lock();
        if m.len() >= Self::MAX {
            m.clear();
        }
        m.insert(lease, owner);
    }

    /// Forgets `lease` (it ended).
    pub fn remove(&self, lease: LeaseId) {
        self.0.lock().remove(&lease);
    }
}

/// A write refused because it would take the store past the backend quota.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "the store holds {used} bytes and this write adds up to {adds}, past the backend quota of {quota} bytes; \
     delete keys (or raise --quota-backend-bytes on every node) and retry"
)]
pub struct NoSpace {
    /// The store's size now.
    pub used: u64,
    /// What the write may add.
    pub adds: u64,
    /// The quota.
    pub quota: u64,
}

impl Node {
    /// Proposes `op` and waits for its result.
    pub async fn propose(&self, op: Op) -> Result<Applied, Unavailable> {
        Ok(self.propose_at(op).await?.1)
    }

    /// Proposes `op` and waits for its result, with the index of its entry: a request that
    /// then waits for a notice takes only notices of later entries as answers (an earlier
    /// notice about the same lease and name answered an earlier request).
    pub async fn propose_at(&self, op: Op) -> Result<(u64, Applied), Unavailable> {
        self.propose_keyed(op, None).await
    }

    /// Proposes `op` under the client's idempotency key `key` (`None`: the node's own): if a
    /// request with the same key was applied before, nothing changes and the answer is the
    /// first application's reply. Answers as [`Node::propose_at`].
    pub async fn propose_keyed(
        &self,
        op: Op,
        key: Option<IdempotencyKey>,
    ) -> Result<(u64, Applied), Unavailable> {
        let (reply, rx) = oneshot::channel();
        self.calls.send(Call::Propose { op, key, reply }).await.map_err(|_| Unavailable::Stopping)?;
        rx.await.map_err(|_| Unavailable::Stopping)?
    }

    /// A linearizable read: `query`'s answer on the state machine once a ReadIndex confirmed
    /// by a majority is applied, with the applied index it saw.
    pub async fn read<T: Send + 'static>(
        &self,
        query: impl FnOnce(&StateMachine) -> T + Send + 'static,
    ) -> Result<(u64, T), Unavailable> {
        let (answer, answered) = oneshot::channel();
        let query: Query = Box::new(move |m| drop(answer.send(query(m))));
        let (reply, rx) = oneshot::channel();
        self.calls.send(Call::Read { query, reply }).await.map_err(|_| Unavailable::Stopping)?;
        let index = rx.await.map_err(|_| Unavailable::Stopping)??;
        let value = answered.await.map_err(|_| Unavailable::Stopping)?;
        Ok((index, value))
    }

    /// The members this node knows.
    pub async fn members(&self) -> Result<Members, Unavailable> {
        let (reply, rx) = oneshot::channel();
        self.calls.send(Call::Members { reply }).await.map_err(|_| Unavailable::Stopping)?;
        rx.await.map_err(|_| Unavailable::Stopping)?
    }

    /// Proposes a membership change and waits until it is applied on this node.
    pub async fn change_members(&self, change: MemberChange) -> Result<Members, ChangeRefused> {
        let (reply, rx) = oneshot::channel();
        self.calls.send(Call::ChangeMembers { change, reply }).await.map_err(|_| Unavailable::Stopping)?;
        rx.await.map_err(|_| Unavailable::Stopping)?
    }

    /// Whether a write that adds up to `adds` bytes to the store fits under the backend quota,
    /// on this node's applied state as of the loop's last turn. A refusal raises the `NOSPACE`
    /// alarm. Writes in flight are not counted: the store may pass the quota by what they add
    /// (as etcd's may).
    pub fn check_space(&self, adds: u64) -> Result<(), NoSpace> {
        let used = self.status.lock().store_bytes;
        if used.saturating_add(adds) > self.quota_backend_bytes {
            self.nospace.store(true, std::sync::atomic::Ordering::Relaxed);
            return Err(NoSpace { used, adds, quota: self.quota_backend_bytes });
        }
        Ok(())
    }

    /// `query`'s answer on this node's applied state (no round trip: a check before answering,
    /// not a linearizable read).
    pub async fn local<T: Send + 'static>(
        &self,
        query: impl FnOnce(&StateMachine) -> T + Send + 'static,
    ) -> Result<T, Unavailable> {
        let (answer, answered) = oneshot::channel();
        let query: Query = Box::new(move |m| drop(answer.send(query(m))));
        let (reply, rx) = oneshot::channel();
        self.calls.send(Call::Local { query, reply }).await.map_err(|_| Unavailable::Stopping)?;
        rx.await.map_err(|_| Unavailable::Stopping)??;
        answered.await.map_err(|_| Unavailable::Stopping)
    }
}

/// A started node: its addresses and its end.
pub struct Running {
    /// The node, for the API.
    pub node: Arc<Node>,
    /// The bound peer address.
    pub listen: SocketAddr,
    /// The bound API address.
    pub api: SocketAddr,
    /// Resolves when the loop stopped, with its error if it failed.
    pub done: tokio::task::JoinHandle<Result<(), ServeError>>,
}

/// Reads and increments the incarnation kept beside the log (request ids restart with each
/// life; see [`Proposal::incarnation`]). Written with fsync and an atomic rename.
///
/// A directory without one — a first start, or a node whose directory was lost and that was
/// removed and added back under the same id — starts from a random number in `2^16..2^31`, not
/// from 0: the replicated state machine remembers the replies to each (node, incarnation)'s
/// requests ([`IdempotencyKey::node`](ringleader_lock_service::state::IdempotencyKey::node)),
/// and a node id's new life counting from 1 again would have its new requests answered with
/// its earlier life's replies, unapplied (a release answered and not done, say).
fn next_incarnation(dir: &Path) -> Result<u64, ServeError> {
    let path = dir.join("incarnation");
    let io = |what: &str, source| ServeError::Io { what: format!("{what} {}", path.display()), source };
    let previous = match std::fs::read_to_string(&path) {
        Ok(text) => text.trim().parse::<u64>().map_err(|_| {
            ServeError::Config(format!(
                "{} holds {:?}, not a number; restore or delete it",
                path.display(),
                text.trim()
            ))
        })?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => fresh_incarnation_base()?,
        Err(e) => return Err(io("read", e)),
    };
    let next = previous + 1;
    let tmp = dir.join("incarnation.new");
    {
        use std::io::Write;
        let mut f = crate::disk::private_file(&tmp).map_err(|e| io("write", e))?;
        writeln!(f, "{next}").map_err(|e| io("write", e))?;
        f.sync_all().map_err(|e| io("sync", e))?;
    }
    std::fs::rename(&tmp, &path).map_err(|e| io("rename", e))?;
    Ok(next)
}

/// Where a data directory's incarnations start: a random number in `2^16..2^31` (see
/// [`next_incarnation`]); the low 32 bits are what a request key keeps of it.
fn fresh_incarnation_base() -> Result<u64, ServeError> {
    let mut b = [0u8; 4];
    getrandom::fill(&mut b).map_err(|e| {
        ServeError::Config(format!("no randomness for a new data directory's incarnation: {e}"))
    })?;
    Ok((1 << 16) + u64::from(u32::from_le_bytes(b) % ((1 << 31) - (1 << 16))))
}

/// Start-up: checks that the data directory is this node's whole log (see
/// [`crate::identity`]) before anything is created in it, opens the log, and on a first start
/// gives the directory its identity and, unless the node joins, the cluster's first
/// configuration (the member list; node ids are Raft ids). A joining node starts with none:
/// the snapshot it is sent brings it. The identity is written last, so a first start cut
/// short leaves a pristine log, which the next start treats as no log.
/// Also whether the directory was new: its log was created by this start.
fn open_data_dir(cfg: &ServerConfig) -> Result<(DiskLog, Identity, bool), ServeError> {
    let dir = &cfg.data_dir;
    let disk = |source| ServeError::Disk { dir: dir.clone(), source: Box::new(source) };
    let found = identity::read(dir)?;
    let had_identity = found.is_some();
    let path = dir.join(crate::disk::FILE_NAME);
    let exists = path
        .try_exists()
        .map_err(|source| ServeError::Io { what: format!("look for {}", path.display()), source })?;
    let log = if exists { Some(DiskLog::open(dir).map_err(disk)?) } else { None };
    let state = match &log {
        None => LogState::Missing,
        Some(l) if l.is_pristine() => LogState::Pristine,
        Some(_) => LogState::Holding,
    };
    let mode = match (cfg.bootstrap, cfg.join) {
        (true, _) => StartMode::Bootstrap,
        (false, true) => StartMode::Join,
        (false, false) => StartMode::Restart,
    };
    let established =
        identity::establish(dir, cfg.id, &cfg.members, mode, cfg.cluster_id.as_deref(), found, state)?;
    let mut log = match log {
        Some(log) => log,
        None => DiskLog::open(dir).map_err(disk)?,
    };
    if established.new {
        let voters = match mode {
            StartMode::Join => Vec::new(),
            _ => {
                let mut ids: Vec<u64> = cfg.members.iter().map(|m| m.0).collect();
                ids.sort_unstable();
                ids
            }
        };
        log.set_conf_state(ConfState { voters, ..Default::default() }).map_err(disk)?;
    }
    if !had_identity {
        identity::write(dir, &established.identity)?;
    }
    Ok((log, established.identity, established.new))
}

/// Starts a node: opens (or creates) its log, binds its sockets, connects to its peers and
/// runs its loop until `shutdown`. The API's listener is bound and handed back for
/// [`crate::start`] to serve.
pub async fn start(cfg: ServerConfig) -> Result<(Running, tokio::net::TcpListener), ServeError> {
    cfg.validate()?;
    let (log, identity, fresh) = open_data_dir(&cfg)?;
    // The address table: the one written beside the log when there is one (it follows the
    // applied changes; the flags may be stale), else the flags' (see `MemberTable`).
    let table: MemberTable = match read_members(&cfg.data_dir)? {
        Some(t) => t,
        None => {
            let t: MemberTable = cfg.members.iter().cloned().collect();
            write_members(&cfg.data_dir, &t)?;
            t
        }
    };
    let voters = log.conf_state().voters.clone();
    let removed_at_start = !voters.is_empty() && !voters.contains(&cfg.id);
    let incarnation = next_incarnation(&cfg.data_dir)?;
    let me = (cfg.id - 1) as NodeId;
    let metrics = Arc::new(ServiceMetrics::default());
    let log = Timed { inner: log, fsync_seconds: metrics.fsync_seconds.clone() };
    let replica = Replica::new(me, incarnation, cfg.settings(), log)?;

    let listener = tokio::net::TcpListener::bind(cfg.listen)
        .await
        .map_err(|source| ServeError::Io { what: format!("listen for peers on {}", cfg.listen), source })?;
    let listen =
        listener.local_addr().map_err(|source| ServeError::Io { what: "peer address".into(), source })?;
    let api_listener = tokio::net::TcpListener::bind(cfg.api)
        .await
        .map_err(|source| ServeError::Io { what: format!("HTTP API on {}", cfg.api), source })?;
    let api =
        api_listener.local_addr().map_err(|source| ServeError::Io { what: "API address".into(), source })?;
    let mut cfg = cfg;
    cfg.client_urls.insert(cfg.id, format!("{}://{api}", cfg.scheme()));

    // The peer transport of real nodes: ids are the node ids, a message comes from the
    // replica's position of the id its connection proved. The peer links are the loop's own
    // (they change with the members). The cluster id is part of the protocol name the hello
    // carries: nodes of two clusters refuse each other's connections.
    let mut peer_cfg = PeerConfig::new(cfg.id, &format!("{PROTOCOL}/{}", identity.cluster));
    peer_cfg.secret = cfg.secret.clone();
    peer_cfg.tls = cfg.peer_tls.clone();
    peer_cfg.max_frame = max_frame(cfg.quota_backend_bytes);
    let (input_tx, input_rx) = mpsc::channel::<PeerInput>(4096);
    let peer_counters = Arc::new(TransportCounters::default());
    let shutdown = CancellationToken::new();
    let known = Arc::new(Mutex::new(table.keys().copied().collect::<BTreeSet<u64>>()));
    let admit: peer::Admit<NodeId> = {
        let known = known.clone();
        // Peers are let in while they are in the address table; the secret, when there is one,
        // still has to be proven.
        Arc::new(move |u| known.lock().contains(&u).then(|| (u - 1) as NodeId))
    };
    tokio::spawn(peer::listen::<Msg, NodeId, PeerInput>(
        listener,
        peer_cfg.clone(),
        peer_counters.clone(),
        admit,
        input_tx,
        shutdown.clone(),
    ));

    let (calls_tx, calls_rx) = mpsc::channel(4096);
    let (notices, _) = broadcast::channel(65_536);
    let users = Arc::new(crate::users::Users::new(cfg.api_token.clone(), cfg.secret.clone()));
    let lease_owners = Arc::new(LeaseOwners::default());
    let status = Arc::new(Mutex::new(Status {
        id: cfg.id,
        cluster: identity.cluster.clone(),
        removed: removed_at_start,
        ..Status::default()
    }));
    let node = Arc::new(Node {
        me,
        calls: calls_tx,
        notices: notices.clone(),
        status: status.clone(),
        peer_counters: peer_counters.clone(),
        request_timeout: cfg.request_timeout,
        shutdown: shutdown.clone(),
        metrics: metrics.clone(),
        max_streams: (cfg.api_limits.max_connections / 2).max(1),
        streams: Default::default(),
        max_request_bytes: cfg.max_request_bytes,
        quota_backend_bytes: cfg.quota_backend_bytes,
        nospace: Default::default(),
        users: users.clone(),
        lease_owners: lease_owners.clone(),
    });
    let seed = cfg.seed.unwrap_or_else(|| {
        let mut b = [0u8; 8];
        let _ = getrandom::fill(&mut b);
        u64::from_le_bytes(b)
    });
    let (lost_tx, lost_rx) = mpsc::channel(64);
    let state = LoopState {
        cfg: cfg.clone(),
        peer_counters,
        notices,
        status,
        users,
        lease_owners,
        rng: Xoshiro256PlusPlus::seed_from_u64(seed),
        started: Instant::now(),
        pending: BTreeMap::new(),
        next_request: 0,
        reads: BTreeMap::new(),
        next_read: 0,
        table: MemberTable::new(),
        known,
        links: BTreeMap::new(),
        peer: peer_cfg,
        shutdown: shutdown.clone(),
        change: None,
        removed: removed_at_start,
        removal_pending: false,
        lost: lost_tx,
        leader_appeared: false,
        fresh,
        compact: false,
        table_changed: false,
        metrics,
    };
    let mut state = state;
    for (id, addr) in table {
        state.learn(id, addr);
    }
    state.table_changed = false;
    let done = tokio::spawn(run_loop(replica, state, input_rx, calls_rx, lost_rx, shutdown.clone()));
    Ok((Running { node, listen, api, done }, api_listener))
}

/// A proposal of this node's waiting to be seen applied.
struct Pending {
    proposal: Proposal,
    reply: Option<oneshot::Sender<Result<(u64, Applied), Unavailable>>>,
    first_sent: Instant,
    last_sent: Instant,
}

/// A linearizable read waiting for its ReadIndex, then for that index to be applied.
struct PendingRead {
    query: Query,
    reply: oneshot::Sender<Result<u64, Unavailable>>,
    first_sent: Instant,
    last_sent: Instant,
    /// The index the read may be answered from, once the leader confirmed it.
    index: Option<u64>,
}

/// A link to a peer: its writer's queue, and how to stop the writer.
struct Link {
    queue: mpsc::Sender<Bytes>,
    stop: CancellationToken,
    /// The writer's view of the link: `connected` once the peer proved the cluster secret on
    /// this node's connection to it.
    peer: Arc<LinkState>,
}

/// A membership change of this node's, waiting to be seen applied. An addition goes in two
/// steps, as etcd's and raft-rs's learners do: the new node is added as a learner (it receives
/// the log and counts toward no quorum), then promoted to a voter once this node is connected
/// to it and the started voters would still be a majority; a node that never comes stays a
/// learner and cannot take the quorum away.
struct PendingChange {
    change: MemberChange,
    reply: oneshot::Sender<Result<Members, ChangeRefused>>,
    first_sent: Instant,
    /// An addition whose learner step is not applied yet.
    learner_pending: bool,
    /// When the addition's promotion was last proposed (a promotion a leader dropped, its
    /// learner step not applied there yet, is proposed again a second later).
    promoted_at: Option<Instant>,
    /// Seen applied: answered at the end of the turn.
    applied: bool,
}

/// The loop's own state (everything but the replica).
struct LoopState {
    cfg: ServerConfig,
    /// What the peer transport counts.
    peer_counters: Arc<TransportCounters>,
    notices: broadcast::Sender<Published>,
    status: Arc<Mutex<Status>>,
    /// The node's users, whose view of the auth store the loop publishes.
    users: Arc<crate::users::Users>,
    /// The lease owners the loop records as grants apply and leases end.
    lease_owners: Arc<LeaseOwners>,
    rng: Xoshiro256PlusPlus,
    started: Instant,
    pending: BTreeMap<RequestId, Pending>,
    next_request: RequestId,
    reads: BTreeMap<u64, PendingRead>,
    next_read: u64,
    /// Every known node's peer address (see [`MemberTable`]).
    table: MemberTable,
    /// The ids of `table`, for the listener's admission.
    known: Arc<Mutex<BTreeSet<u64>>>,
    /// The links to the peers of `table`.
    links: BTreeMap<u64, Link>,
    /// The peer transport's settings (the hello's protocol name, the secret, the limits).
    peer: PeerConfig,
    shutdown: CancellationToken,
    change: Option<PendingChange>,
    /// This node applied its own removal.
    removed: bool,
    /// This node applied an entry removing it, but has not yet applied everything it knows
    /// committed: a later entry may add it back (a replaced member catching up from an older
    /// snapshot replays its own removal before its re-addition), so it is `removed` only once
    /// caught up with the removal still standing.
    removal_pending: bool,
    /// Where a peer link's writer reports the loss of its connection (the peer's id): a
    /// follower that loses its leader's stops waiting out the base election timeout (see
    /// [`Replica::leader_lost`]).
    lost: mpsc::Sender<u64>,
    /// A leader became known during the last `Ready`: this node's proposals and reads that a
    /// dead leader may have taken with it are sent again at once rather than after `retry`.
    leader_appeared: bool,
    /// The log was created empty by this start (a new member): everything in it came from the
    /// current leaders, so a heartbeat that counts more as replicated here can only be stale (a
    /// message queued for this id's earlier incarnation, before it was removed and added back)
    /// and is dropped, not taken as proof that the log lost entries.
    fresh: bool,
    /// A node was added: compact the log (see the module documentation).
    compact: bool,
    /// `table` changed since it was last written.
    table_changed: bool,
    /// What the loop counts.
    metrics: Arc<ServiceMetrics>,
}

impl LoopState {
    /// Learns (or updates) the address of node `id` and keeps a link to it.
    fn learn(&mut self, id: u64, addr: String) {
        if self.table.get(&id) == Some(&addr) && (id == self.cfg.id || self.links.contains_key(&id)) {
            return;
        }
        self.table.insert(id, addr.clone());
        self.known.lock().insert(id);
        self.table_changed = true;
        if id == self.cfg.id {
            return;
        }
        if let Some(old) = self.links.remove(&id) {
            old.stop.cancel();
        }
        // The writer reads `rx`; `tx` is the queue's only sender, so that dropping it closes
        // the queue (see `forget`).
        let (tx, rx) = mpsc::channel(QUEUE_CAPACITY);
        let link = Arc::new(LinkState::new(id, addr));
        let stop = self.shutdown.child_token();
        tokio::spawn(peer::writer(
            self.peer.clone(),
            self.peer_counters.clone(),
            link.clone(),
            rx,
            {
                let lost = self.lost.clone();
                move || {
                    let _ = lost.try_send(id);
                }
            },
            stop.clone(),
        ));
        self.links.insert(id, Link { queue: tx, stop, peer: link });
    }

    /// Forgets node `id`: its link writes what was queued, then closes.
    fn forget(&mut self, id: u64) {
        if self.table.remove(&id).is_some() {
            self.table_changed = true;
        }
        self.known.lock().remove(&id);
        if let Some(link) = self.links.remove(&id) {
            // The queue's only sender is dropped here, so the writer ends once what was queued
            // (the append telling the peer that its removal committed) is written; one that
            // cannot connect is stopped after `FAREWELL`.
            drop(link.queue);
            let stop = link.stop;
            tokio::spawn(async move {
                tokio::time::sleep(FAREWELL).await;
                stop.cancel();
            });
        }
    }

    /// The members of `voters` (node ids) with their addresses.
    fn members(&self, replica: &Replica<Log>) -> Members {
        let member = |p: NodeId| {
            let id = p as u64 + 1;
            Member { id, peer: self.table.get(&id).cloned().unwrap_or_default() }
        };
        Members {
            members: replica.voters().into_iter().map(member).collect(),
            learners: replica.learners().into_iter().map(member).collect(),
            applied: replica.machine().last_applied(),
        }
    }
}

/// The replica's host: the loop's state plus the incarnation to recognise own proposals.
struct ServerHost<'a> {
    state: &'a mut LoopState,
    me: NodeId,
    incarnation: u64,
}

impl Host for ServerHost<'_> {
    fn leader_changed(&mut self, leader: Option<NodeId>, _: u64) {
        bump(&self.state.metrics.leader_changes);
        self.state.leader_appeared |= leader.is_some();
    }

    /// The key changes the snapshot brought are published from its history, one notice per
    /// revision as if applied one by one, so that a live watcher misses none of them; when the
    /// history no longer reaches back to them, a [`Notice::HistoryGap`] cancels the watchers.
    fn restored(&mut self, previously_applied: u64, machine: &StateMachine) {
        let publish = |index: u64, n: Notice| drop(self.state.notices.send(Arc::new((index, n))));
        match machine.kv().events_since(previously_applied + 1) {
            Ok(events) => {
                let mut by_revision: BTreeMap<u64, Vec<KeyEvent>> = BTreeMap::new();
                for (revision, e) in events {
                    by_revision.entry(revision).or_default().push(e);
                }
                for (revision, events) in by_revision {
                    publish(revision, Notice::KeyEvents { events });
                }
            }
            Err(_) => {
                publish(machine.last_applied(), Notice::HistoryGap { first_kept: machine.kv().first_kept() })
            }
        }
    }

    fn send(&mut self, to: NodeId, msg: RaftMessage) -> Result<(), Unreachable> {
        let s = &mut *self.state;
        if msg.get_msg_type() == raft::eraftpb::MessageType::MsgSnapshot {
            bump(&s.metrics.snapshots_sent);
        }
        let Some(link) = s.links.get(&(to as u64 + 1)) else { return Err(Unreachable) };
        if link.queue.try_send(wire::encode(&Msg::new(&msg))).is_err() {
            s.peer_counters.bump(Counted::MessagesDroppedQueueFull);
            return Err(Unreachable);
        }
        Ok(())
    }

    fn applied(
        &mut self,
        index: u64,
        p: &Proposal,
        applied: Applied,
        machine: &StateMachine,
        submit: &mut Submit,
    ) {
        for n in &applied.notices {
            if let Notice::LeaseExpired { lease, .. } = n {
                self.state.lease_owners.remove(*lease);
            }
            let _ = self.state.notices.send(Arc::new((index, n.clone())));
        }
        match (&p.op, &applied.reply) {
            (Op::Grant { owner, .. }, Reply::Granted { lease, .. }) => {
                self.state.lease_owners.insert(*lease, owner.clone())
            }
            (Op::Revoke { lease }, Reply::Done) => self.state.lease_owners.remove(*lease),
            _ => {}
        }
        // Before any answer: a client told its auth change is done is checked under it.
        self.state.users.publish(machine.auth());
        if p.origin != self.me || p.incarnation != self.incarnation {
            return;
        }
        match self.state.pending.remove(&p.request) {
            Some(Pending { reply: Some(reply), first_sent, .. }) => {
                self.state.metrics.proposal_seconds.observe(first_sent.elapsed().as_secs_f64());
                // A duplicate (the same key applied before) is answered as the first was.
                let applied = Applied { reply: applied.reply.original(), ..applied };
                // The store's size first: a client that has its answer may write again at once,
                // and that write's quota check must count this one (the status is otherwise
                // published after the whole Ready).
                self.state.status.lock().store_bytes = machine.kv().bytes();
                let _ = reply.send(Ok((index, applied)));
            }
            Some(_) => {}
            None => {
                // A retried proposal committed twice (the original survived a leader change
                // after the retry was sent). Nobody waits for the second application, so what it
                // took is given back: a second lease is revoked, and a lock it granted anew (its
                // token is this entry's index: the first grant had been released meanwhile) is
                // released. The other duplicates are harmless: the state machine answers them as
                // it answered the first.
                use ringleader_lock_service::state::Reply;
                let undo = match (&p.op, &applied.reply) {
                    (Op::Grant { .. }, Reply::Granted { lease, .. }) => Some(Op::Revoke { lease: *lease }),
                    (Op::Acquire { name, lease, .. }, Reply::Acquired { fencing }) if *fencing == index => {
                        Some(Op::Release { name: name.clone(), lease: *lease })
                    }
                    _ => None,
                };
                if let Some(op) = undo {
                    let undo = Proposal {
                        origin: self.me,
                        incarnation: self.incarnation,
                        request: Proposal::CLOCK - 1,
                        key: None,
                        op,
                    };
                    submit.submit(&undo);
                }
            }
        }
    }

    fn read_ready(&mut self, ctx: &[u8], index: u64) {
        let Ok(bytes) = <[u8; 8]>::try_from(ctx) else { return };
        if let Some(r) = self.state.reads.get_mut(&u64::from_le_bytes(bytes)) {
            r.index = Some(index);
        }
    }

    fn membership_changed(&mut self, change: &ConfChange, conf_state: &ConfState) {
        let s = &mut *self.state;
        let id = change.node_id;
        match change.get_change_type() {
            ConfChangeType::AddNode => {
                if id == s.cfg.id {
                    s.removal_pending = false;
                }
                let addr = String::from_utf8_lossy(&change.context).into_owned();
                if !addr.is_empty() {
                    s.learn(id, addr);
                }
                s.compact = true;
            }
            ConfChangeType::RemoveNode => {
                if id == s.cfg.id {
                    s.removal_pending = true;
                } else {
                    s.forget(id);
                }
            }
            ConfChangeType::AddLearnerNode => {
                // Added back after a removal this node replayed from the log: it is a member
                // again (as for AddNode), not a removed node.
                if id == s.cfg.id {
                    s.removal_pending = false;
                }
                let addr = String::from_utf8_lossy(&change.context).into_owned();
                if !addr.is_empty() {
                    s.learn(id, addr);
                }
                // The new node is sent a snapshot rather than the whole log.
                s.compact = true;
                if let Some(p) = s.change.as_mut()
                    && matches!(p.change, MemberChange::Add { id: want, .. } if want == id)
                {
                    p.learner_pending = false;
                }
            }
        }
        let done = s.change.as_ref().is_some_and(|p| match &p.change {
            MemberChange::Add { id: want, .. } => {
                change.get_change_type() == ConfChangeType::AddNode && id == *want
            }
            MemberChange::Remove { id: want } => {
                change.get_change_type() == ConfChangeType::RemoveNode && id == *want
            }
        });
        if done && let Some(p) = s.change.as_mut() {
            // Answered after this turn's `Ready`, with the replica at hand.
            p.applied = true;
        }
        let _ = conf_state;
    }
}

/// The most inputs of one kind a loop turn takes in before driving the replica.
const BATCH: usize = 1024;

/// The loop: inputs in, replica driven, answers out (see the module documentation).
async fn run_loop(
    mut replica: Replica<Log>,
    mut state: LoopState,
    mut peers: mpsc::Receiver<PeerInput>,
    mut calls: mpsc::Receiver<Call>,
    mut lost: mpsc::Receiver<u64>,
    shutdown: CancellationToken,
) -> Result<(), ServeError> {
    let mut ticker = tokio::time::interval(state.cfg.tick);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let random = state.rng.next_u64();
    replica.reseed(random);
    if state.removed {
        eprintln!("[id {}] this node was removed from the cluster; it serves nothing", state.cfg.id);
        publish_status(&replica, &state);
    }
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = ticker.tick() => if !state.removed {
                // What already arrived counts before the tick: a follower behind on its input
                // would otherwise count the leader's silence while the leader's messages wait
                // in its queue, and campaign under load with no leader lost.
                drain_peers(&mut replica, &state, &mut peers)?;
                on_tick(&mut replica, &mut state)
            },
            Some(input) = peers.recv() => if !state.removed { on_peer(&mut replica, &state, input)? },
            Some(cmd) = calls.recv() => on_call(&mut replica, &mut state, cmd),
            Some(id) = lost.recv() => if let Some(peer) = node_of(id) {
                replica.leader_lost(peer, state.rng.next_u64());
            },
        }
        // Group commit: everything already waiting joins this turn's Ready.
        drain_peers(&mut replica, &state, &mut peers)?;
        for _ in 0..BATCH {
            match calls.try_recv() {
                Ok(cmd) => on_call(&mut replica, &mut state, cmd),
                Err(_) => break,
            }
        }
        if state.removed {
            // A removed node no longer drives its replica: it would only campaign in vain.
            continue;
        }
        let random = state.rng.next_u64();
        let me = replica.id();
        let incarnation = replica.incarnation();
        let mut host = ServerHost { state: &mut state, me, incarnation };
        tokio::task::block_in_place(|| replica.drive(random, &mut host)).map_err(|e| match e {
            // A failed write names the file and what to do, as at start.
            ReplicaError::Storage(source) => {
                ServeError::Disk { dir: host.state.cfg.data_dir.clone(), source: Box::new(source) }
            }
            other => ServeError::from(other),
        })?;
        if std::mem::take(&mut state.leader_appeared) {
            send_again(&mut replica, &mut state);
        }
        after_changes(&mut replica, &mut state)?;
        answer_reads(&replica, &mut state);
        publish_status(&replica, &state);
    }
    for (_, p) in std::mem::take(&mut state.pending) {
        if let Some(reply) = p.reply {
            let _ = reply.send(Err(Unavailable::Stopping));
        }
    }
    Ok(())
}

/// Steps up to [`BATCH`] of the peers' messages already waiting (a removed node drops them).
fn drain_peers(
    replica: &mut Replica<Log>,
    state: &LoopState,
    peers: &mut mpsc::Receiver<PeerInput>,
) -> Result<(), ServeError> {
    for _ in 0..BATCH {
        match peers.try_recv() {
            Ok(input) if !state.removed => on_peer(replica, state, input)?,
            Ok(_) => {}
            Err(_) => break,
        }
    }
    Ok(())
}

/// What applied membership changes leave to do once the `Ready` is handled: compact the log
/// after an addition, write the address table, answer the change, and stop if this node was
/// removed.
fn after_changes(replica: &mut Replica<Log>, state: &mut LoopState) -> Result<(), ServeError> {
    if state.removal_pending && replica.applied() >= replica.commit() {
        state.removal_pending = false;
        state.removed = true;
    }
    if std::mem::take(&mut state.compact) {
        // A failure here only means a new node may be sent the log rather than a snapshot
        // later; the node goes on.
        if let Err(e) = tokio::task::block_in_place(|| replica.compact_now()) {
            eprintln!("[id {}] could not compact the log after a node was added: {e}", state.cfg.id);
        }
    }
    if std::mem::take(&mut state.table_changed) {
        write_members(&state.cfg.data_dir, &state.table)?;
    }
    if state.change.as_ref().is_some_and(|c| c.applied)
        && let Some(c) = state.change.take()
    {
        let _ = c.reply.send(Ok(state.members(replica)));
    }
    promote_when_ready(replica, state);
    if state.removed {
        let gone = Unavailable::Removed(state.cfg.id);
        eprintln!(
            "[id {}] this node was removed from the cluster; it serves nothing from now on",
            state.cfg.id
        );
        for (_, p) in std::mem::take(&mut state.pending) {
            if let Some(reply) = p.reply {
                let _ = reply.send(Err(gone.clone()));
            }
        }
        for (_, r) in std::mem::take(&mut state.reads) {
            let _ = r.reply.send(Err(gone.clone()));
        }
        if let Some(c) = state.change.take() {
            let _ = c.reply.send(Err(gone.into()));
        }
        for (_, link) in std::mem::take(&mut state.links) {
            // What is queued (this node's last answers) is still written.
            drop(link.queue);
        }
        publish_status(replica, state);
    }
    Ok(())
}

/// Steps a peer's message. A heartbeat whose commit index lies past this log's end proves the
/// log lost entries it acknowledged (raft-rs would panic in `commit_to`): the node stops with
/// [`ServeError::StaleLog`] rather than go on with a log that forgot its votes.
fn on_peer(replica: &mut Replica<Log>, state: &LoopState, input: PeerInput) -> Result<(), ServeError> {
    if let Some(m) = input.msg.decode() {
        if m.get_msg_type() == raft::eraftpb::MessageType::MsgSnapshot {
            bump(&state.metrics.snapshots_received);
        }
        let last_index = raft::Storage::last_index(replica.log()).unwrap_or(0);
        if m.get_msg_type() == raft::eraftpb::MessageType::MsgHeartbeat
            && m.term >= replica.term()
            && m.commit > last_index
        {
            if state.fresh {
                // Stale (see `LoopState::fresh`); stepping it would make raft-rs panic.
                return Ok(());
            }
            return Err(ServeError::StaleLog {
                id: state.cfg.id,
                dir: state.cfg.data_dir.clone(),
                leader: m.from,
                term: m.term,
                commit: m.commit,
                last_index,
            });
        }
        replica.step(m);
    }
    Ok(())
}

fn on_call(replica: &mut Replica<Log>, state: &mut LoopState, cmd: Call) {
    let now = Instant::now();
    if state.removed {
        let gone = Unavailable::Removed(state.cfg.id);
        match cmd {
            Call::Propose { reply, .. } => drop(reply.send(Err(gone))),
            Call::Read { reply, .. } => drop(reply.send(Err(gone))),
            Call::Members { reply } => drop(reply.send(Err(gone))),
            Call::ChangeMembers { reply, .. } => drop(reply.send(Err(gone.into()))),
            Call::Local { reply, .. } => drop(reply.send(Err(gone))),
        }
        return;
    }
    match cmd {
        Call::Members { reply } => {
            let _ = reply.send(Ok(state.members(replica)));
        }
        Call::ChangeMembers { change, reply } => {
            let voters: Vec<u64> = replica.voters().into_iter().map(|p| p as u64 + 1).collect();
            let learners: Vec<u64> = replica.learners().into_iter().map(|p| p as u64 + 1).collect();
            let refused = if voters.is_empty() {
                Some(ChangeRefused::NotMember)
            } else if state.change.is_some() || replica.conf_change_pending() {
                Some(ChangeRefused::InProgress)
            } else {
                match &change {
                    MemberChange::Add { id, peer } if voters.contains(id) => {
                        if state.table.get(id) == Some(peer) {
                            // Already done (a retry): the members as they are.
                            let _ = reply.send(Ok(state.members(replica)));
                            return;
                        }
                        Some(ChangeRefused::AlreadyMember {
                            id: *id,
                            peer: state.table.get(id).cloned().unwrap_or_default(),
                        })
                    }
                    MemberChange::Add { id, peer }
                        if learners.contains(id) && state.table.get(id) != Some(peer) =>
                    {
                        Some(ChangeRefused::AlreadyMember {
                            id: *id,
                            peer: state.table.get(id).cloned().unwrap_or_default(),
                        })
                    }
                    MemberChange::Remove { id } if !voters.contains(id) && !learners.contains(id) => {
                        Some(ChangeRefused::Unknown(*id))
                    }
                    MemberChange::Remove { id } if voters == [*id] => Some(ChangeRefused::LastMember(*id)),
                    _ => None,
                }
            };
            if let Some(r) = refused {
                let _ = reply.send(Err(r));
                return;
            }
            // Proposed once: a change dropped on the way (no leader, a leader change) is not
            // proposed again but answered 503 after the request timeout, for the client to retry
            // (a retry of an add that did apply is answered with the members; of an add that
            // left a learner, goes on to its promotion).
            let mut pending = PendingChange {
                change,
                reply,
                first_sent: now,
                learner_pending: false,
                promoted_at: None,
                applied: false,
            };
            match &pending.change {
                MemberChange::Add { id, .. } if learners.contains(id) => {}
                MemberChange::Add { id, peer } => {
                    replica.change_membership(add_learner((id - 1) as NodeId, peer.clone().into_bytes()));
                    pending.learner_pending = true;
                }
                MemberChange::Remove { id } => replica.change_membership(remove_voter((id - 1) as NodeId)),
            }
            state.change = Some(pending);
            promote_when_ready(replica, state);
        }
        Call::Propose { op, key, reply } => {
            bump(&state.metrics.proposals);
            let request = state.next_request;
            state.next_request += 1;
            let mut proposal = Proposal::of_node(replica.id(), replica.incarnation(), request, op);
            if key.is_some() {
                proposal.key = key;
            }
            replica.submit(&proposal);
            state
                .pending
                .insert(request, Pending { proposal, reply: Some(reply), first_sent: now, last_sent: now });
        }
        Call::Read { query, reply }
            if Planted::active(state.cfg.planted, Planted::StaleRead) && !state.removed =>
        {
            // The planted bug: no ReadIndex, whatever this node has applied.
            query(replica.machine());
            let _ = reply.send(Ok(replica.machine().last_applied()));
        }
        Call::Read { query, reply } => {
            let ctx = state.next_read;
            state.next_read += 1;
            replica.read_index(ctx.to_le_bytes().to_vec());
            state
                .reads
                .insert(ctx, PendingRead { query, reply, first_sent: now, last_sent: now, index: None });
        }
        Call::Local { query, reply } => {
            query(replica.machine());
            let _ = reply.send(Ok(replica.machine().last_applied()));
        }
    }
}

/// How far behind the commit index a learner may be and still be promoted (in entries).
const CATCH_UP_LAG: u64 = 128;

/// Promotes the learner of this node's pending addition once it is ready: its learner step is
/// applied, this node is connected to it (it runs and proved the cluster secret; on the leader,
/// it also has the log within [`CATCH_UP_LAG`] entries of the commit index), and the
/// voters this node is connected to, itself and the learner included, are a majority of the
/// configuration after it (etcd's strict reconfiguration check). Until then it waits; the
/// request's timeout answers [`ChangeRefused::LearnerNotReady`].
fn promote_when_ready(replica: &mut Replica<Log>, state: &mut LoopState) {
    let Some(p) = state.change.as_ref() else { return };
    let MemberChange::Add { id, peer } = &p.change else { return };
    let learner = replica.learners().contains(&((id - 1) as NodeId));
    let again = p.promoted_at.is_some_and(|t| t.elapsed() >= Duration::from_secs(1));
    if p.learner_pending || (p.promoted_at.is_some() && !(again && learner)) || replica.conf_change_pending()
    {
        return;
    }
    let connected = |v: u64| {
        state.links.get(&v).is_some_and(|l| l.peer.connected.load(std::sync::atomic::Ordering::Relaxed))
    };
    // On the leader, also caught up (within the entries a second of ticks adds); a follower
    // cannot see the learner's progress and goes by the connection alone.
    if !connected(*id) || replica.caught_up((id - 1) as NodeId, CATCH_UP_LAG) == Some(false) {
        return;
    }
    let voters: Vec<u64> = replica.voters().into_iter().map(|p| p as u64 + 1).collect();
    let started = voters.iter().filter(|&&v| v == state.cfg.id || connected(v)).count() + 1;
    let after = voters.len() + 1;
    if started < after / 2 + 1 {
        return;
    }
    replica.change_membership(add_voter((id - 1) as NodeId, peer.clone().into_bytes()));
    if let Some(p) = state.change.as_mut() {
        p.promoted_at = Some(Instant::now());
    }
}

/// Proposes again, at once, every proposal and read of this node's still waiting: called when
/// a leader becomes known, since the one before may have died with them (a follower forwards
/// its proposals to the leader it knows, and drops them while it knows none). A proposal
/// applied twice is recognised by its request id; the next `Ready` carries them.
fn send_again(replica: &mut Replica<Log>, state: &mut LoopState) {
    let now = Instant::now();
    for p in state.pending.values_mut().filter(|p| p.reply.is_some()) {
        p.last_sent = now;
        replica.submit(&p.proposal);
    }
    for (ctx, r) in state.reads.iter_mut().filter(|(_, r)| r.index.is_none()) {
        r.last_sent = now;
        replica.read_index(ctx.to_le_bytes().to_vec());
    }
}

/// A tick: the replica's clock, then requests to propose again or give up, and a learner to
/// promote.
fn on_tick(replica: &mut Replica<Log>, state: &mut LoopState) {
    on_tick_requests(replica, state);
    promote_when_ready(replica, state);
}

/// The replica's clock, then requests to propose again or give up.
fn on_tick_requests(replica: &mut Replica<Log>, state: &mut LoopState) {
    replica.tick(state.started.elapsed().as_nanos() as Time);
    let now = Instant::now();
    let (retry, timeout) = (state.cfg.retry, state.cfg.request_timeout);
    let leader = replica.leader().map(|p| p as u64 + 1);
    let gave_up = || Unavailable::Timeout {
        after: timeout,
        leader: leader.map(|id| LeaderHint { id, url: state.cfg.client_urls.get(&id).cloned() }),
    };
    if state.change.as_ref().is_some_and(|c| !c.applied && now.duration_since(c.first_sent) >= timeout)
        && let Some(c) = state.change.take()
    {
        let answer = match c.change {
            // The learner is in; its promotion never came.
            MemberChange::Add { id, .. } if !c.learner_pending && c.promoted_at.is_none() => {
                ChangeRefused::LearnerNotReady { id }
            }
            _ => gave_up().into(),
        };
        let _ = c.reply.send(Err(answer));
    }
    state.pending.retain(|_, p| {
        if now.duration_since(p.first_sent) >= timeout {
            if let Some(reply) = p.reply.take() {
                let _ = reply.send(Err(gave_up()));
            }
            // Kept without a waiter while it may still commit, so that a late duplicate grant
            // is still recognised; forgotten after twice the timeout.
            return now.duration_since(p.first_sent) < 2 * timeout;
        }
        if now.duration_since(p.last_sent) >= retry {
            p.last_sent = now;
            replica.submit(&p.proposal);
            bump(&state.metrics.proposals_retried);
        }
        true
    });
    let reads: Vec<u64> = state.reads.keys().copied().collect();
    for ctx in reads {
        let r = state.reads.get_mut(&ctx).expect("listed");
        if now.duration_since(r.first_sent) >= timeout {
            let r = state.reads.remove(&ctx).expect("listed");
            let _ = r.reply.send(Err(gave_up()));
        } else if r.index.is_none() && now.duration_since(r.last_sent) >= retry {
            r.last_sent = now;
            replica.read_index(ctx.to_le_bytes().to_vec());
        }
    }
}

/// Answers the reads whose confirmed index is applied. The index counts every applied entry,
/// the new leader's empty entry included: a ReadIndex on a fresh cluster, or after a leader
/// change with nothing written since, names that entry, which changes no state.
fn answer_reads(replica: &Replica<Log>, state: &mut LoopState) {
    let applied = replica.applied();
    let ready: Vec<u64> =
        state.reads.iter().filter(|(_, r)| r.index.is_some_and(|i| i <= applied)).map(|(k, _)| *k).collect();
    for ctx in ready {
        let r = state.reads.remove(&ctx).expect("listed");
        (r.query)(replica.machine());
        let _ = r.reply.send(Ok(applied));
    }
}

fn publish_status(replica: &Replica<Log>, state: &LoopState) {
    let role = match replica.role() {
        StateRole::Leader => "leader",
        StateRole::Follower => "follower",
        StateRole::Candidate => "candidate",
        StateRole::PreCandidate => "pre_candidate",
    };
    let mut s = state.status.lock();
    s.leader = replica.leader().map(|p| p as u64 + 1);
    s.term = replica.term();
    s.role = role;
    s.applied = replica.applied();
    s.commit = replica.commit();
    s.members = replica.voters().into_iter().map(|p| p as u64 + 1).collect();
    s.removed = state.removed;
    s.store_bytes = replica.machine().kv().bytes();
    state.users.publish(replica.machine().auth());
    if state.removed {
        // raft-rs leaves a removed leader in its role; it leads nothing any more.
        s.role = "removed";
        s.leader = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A new data directory's incarnations start at a random number, so that a node id that
    /// lived before (its directory lost, the node removed and added back) does not reuse its
    /// earlier lives' request keys; each restart then counts up by one.
    #[test]
    fn a_new_directory_starts_its_incarnations_at_a_random_number() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let first = next_incarnation(a.path()).unwrap();
        assert!(((1 << 16) + 1..=1 << 31).contains(&first), "{first}");
        assert_eq!(next_incarnation(a.path()).unwrap(), first + 1);
        assert_ne!(next_incarnation(b.path()).unwrap(), first, "two new lives share an incarnation");
    }
}
