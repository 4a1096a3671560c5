//! # ringleader-net: the same algorithms as real processes over TCP
//!
//! The simulator runs a [`ringleader_core::Process`] against a virtual network; this crate runs
//! the very same value against a real one. Nothing in an algorithm changes: the driver feeds it
//! `on_start` / `on_message` / `on_timer` / `on_request` and carries out its `Outbox`.
//!
//! ```text
//!   peers ──TCP frames──▶ reader tasks ─┐                    ┌─▶ writer task per peer ──TCP──▶ peers
//!   timers (tokio, monotonic) ──────────┼─▶ driver loop ─────┤   (bounded queue, reconnect)
//!   HTTP API (axum) ── requests ────────┘   owns the Process └─▶ trace (JSON lines), events (SSE)
//! ```
//!
//! The sockets are the peer transport's (`ringleader-transport`: the listener, the inbound
//! connection readers, the outbound writers, the handshake with the cluster secret, and the
//! hardened HTTP server); this crate is the textbook-node driver on top of it:
//!
//! - [`wire`]: the envelope a node sends its peers (the message, its id and the Lamport and
//!   vector stamps), in the transport's frames;
//! - [`driver`]: the loop that owns the algorithm, its timers, its Lamport and vector clocks
//!   and its trace;
//! - [`api`]: the HTTP API (`/health`, `/ready`, `/status`, `/election`, `/lock`, `/events`,
//!   `/metrics`);
//! - [`shared`]: what the node's tasks share: the driver loop's inputs, the node's view, its peer
//!   links;
//! - [`metrics`]: counters and the status document;
//! - [`storage`]: stable storage (`--data-dir`): the state a node recovers from after a crash;
//! - [`verify`]: merging node traces and judging them with the simulator's checkers.
//!
//! A node's local clock (`Context.now`) is the OS wall clock in nanoseconds since the Unix
//! epoch; timers run on tokio's monotonic clock, so a wall-clock step never fires a timer early.

#![warn(missing_docs)]

pub mod api;
pub mod driver;
pub mod metrics;
pub mod shared;
pub mod storage;
pub mod verify;
pub mod wire;

/// The cluster secret and the challenge–response, from the peer transport (a node's
/// [`NodeConfig::secret`] is one).
pub use ringleader_transport::auth;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use ringleader_core::time::MILLISECOND;
use ringleader_core::{Time, Uid};
use tokio_util::sync::CancellationToken;

pub use shared::Shared;

/// Everything one node needs to start.
#[derive(Clone, Debug)]
pub struct NodeConfig {
    /// This node's id (its uid; positions are the ids in ascending order).
    pub id: Uid,
    /// Where to accept peer connections.
    pub listen: SocketAddr,
    /// The other members: id and `host:port` (resolved at every connection attempt).
    pub peers: Vec<(Uid, String)>,
    /// The algorithm's name.
    pub algorithm: String,
    /// The algorithm's parameters.
    pub params: BTreeMap<String, String>,
    /// Where to serve the HTTP API (none: no API).
    pub api: Option<SocketAddr>,
    /// Where to write the JSON-lines trace.
    pub trace: Option<PathBuf>,
    /// The one-way delay bound the algorithm may assume (Ttrans).
    pub max_delay: Time,
    /// Maximum frame size in bytes.
    pub max_frame: usize,
    /// Capacity of each peer's outgoing queue (messages); beyond it messages are dropped.
    pub queue_capacity: usize,
    /// Maximum simultaneous inbound connections.
    pub max_connections: usize,
    /// Election algorithms only: start an election once every peer is connected (or after
    /// [`ELECTION_SETTLE`]) if no leader is known by then.
    pub elect_at_start: bool,
    /// The cluster secret peers prove they hold ([`auth`]); `None`: peers are believed
    /// (`--insecure`).
    pub secret: Option<auth::Secret>,
    /// The bearer token every API request but `GET /health` must carry; `None`: no token.
    pub api_token: Option<api::ApiToken>,
    /// Serve the API on a non-loopback address without a token (`--insecure`).
    pub insecure_api: bool,
    /// An API connection that sends no complete request head for this long (idle between
    /// requests, or trickling its headers) is closed.
    pub api_idle_timeout: std::time::Duration,
    /// An API connection whose response stays unwritable this long (the client reads nothing,
    /// e.g. an SSE subscriber that stopped reading) is closed.
    pub api_write_stall_timeout: std::time::Duration,
    /// API connections open at once (SSE subscribers included); one more is answered 503 and
    /// closed.
    pub api_max_connections: usize,
    /// An inbound peer connection that delivers no frame for this long is closed; writers send
    /// an empty keep-alive frame after a quarter of it without traffic.
    pub peer_idle_timeout: std::time::Duration,
    /// Stable storage ([`storage`]): the directory the node keeps its state in, and recovers
    /// from when it starts; `None`: the node forgets everything when it stops.
    pub data_dir: Option<PathBuf>,
    /// Delete the state in `data_dir` before starting (start with an empty memory on purpose).
    pub wipe_data: bool,
}

/// How long an inbound peer connection may stay silent (see [`NodeConfig::peer_idle_timeout`]).
pub const DEFAULT_PEER_IDLE_TIMEOUT: std::time::Duration = ringleader_transport::DEFAULT_PEER_IDLE_TIMEOUT;

/// The heartbeat period real nodes give the elections that watch their coordinator (`bully`,
/// `ring`, `majority`) when the parameters name no detector (see [`driver`]).
pub const DEFAULT_HEARTBEAT: &str = "20ms";

/// The one-way delay bound real nodes assume by default (Ttrans).
pub const DEFAULT_MAX_DELAY: Time = 20 * MILLISECOND;

/// How long an election node waits, once its peers are connected, for a leader to make itself
/// known before it starts an election (more than two default heartbeat periods).
pub const ELECTION_QUIET: std::time::Duration = std::time::Duration::from_millis(50);

/// How long a starting election node waits for its peers before electing anyway.
pub const ELECTION_SETTLE: std::time::Duration = std::time::Duration::from_secs(2);

impl NodeConfig {
    /// A configuration with the defaults for everything but identity and membership.
    pub fn new(id: Uid, listen: SocketAddr, peers: Vec<(Uid, String)>, algorithm: &str) -> NodeConfig {
        NodeConfig {
            id,
            listen,
            peers,
            algorithm: algorithm.to_string(),
            params: BTreeMap::new(),
            api: None,
            trace: None,
            max_delay: DEFAULT_MAX_DELAY,
            max_frame: wire::DEFAULT_MAX_FRAME,
            queue_capacity: ringleader_transport::DEFAULT_QUEUE_CAPACITY,
            max_connections: ringleader_transport::DEFAULT_MAX_CONNECTIONS,
            elect_at_start: true,
            secret: None,
            api_token: None,
            insecure_api: false,
            api_idle_timeout: api::DEFAULT_API_IDLE_TIMEOUT,
            api_write_stall_timeout: api::WRITE_STALL_TIMEOUT,
            api_max_connections: api::DEFAULT_API_MAX_CONNECTIONS,
            peer_idle_timeout: DEFAULT_PEER_IDLE_TIMEOUT,
            data_dir: None,
            wipe_data: false,
        }
    }

    /// Every member's id in ascending order (the position of an id is its index).
    pub fn members(&self) -> Vec<Uid> {
        let mut ids: Vec<Uid> = self.peers.iter().map(|p| p.0).chain([self.id]).collect();
        ids.sort_unstable();
        ids
    }

    /// What the peer transport needs of this configuration: the hello names the algorithm.
    pub fn peer_config(&self) -> ringleader_transport::PeerConfig {
        ringleader_transport::PeerConfig {
            id: self.id,
            protocol: self.algorithm.clone(),
            secret: self.secret.clone(),
            max_frame: self.max_frame,
            max_connections: self.max_connections,
            peer_idle_timeout: self.peer_idle_timeout,
            tls: None,
        }
    }

    /// Checks the membership: distinct ids, no peer with our own id.
    pub fn validate(&self) -> Result<(), NetError> {
        let ids = self.members();
        if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
            return Err(NetError::DuplicateId(w[0]));
        }
        if self.max_frame < 64 {
            return Err(NetError::FrameTooSmall);
        }
        if self.queue_capacity == 0 || self.max_connections == 0 || self.api_max_connections == 0 {
            return Err(NetError::ZeroCapacity);
        }
        if let Some(api) = self.api
            && !api.ip().is_loopback()
            && self.api_token.is_none()
            && !self.insecure_api
        {
            return Err(NetError::OpenApi(api));
        }
        if self.peer_idle_timeout < std::time::Duration::from_millis(40) {
            return Err(NetError::IdleTimeoutTooShort);
        }
        Ok(())
    }
}

/// Why a node could not start.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    /// An id appears twice in the membership.
    #[error("id {0} appears twice in the membership (this node and its --peer list must have distinct ids)")]
    DuplicateId(Uid),
    /// The maximum frame size is below 64 bytes.
    #[error("max frame size must be at least 64 bytes")]
    FrameTooSmall,
    /// The API would listen beyond the loopback with no token.
    #[error(
        "--api {0} is not a loopback address: give --api-token-file FILE (clients then send \
         `Authorization: Bearer TOKEN`) or --insecure to serve it to anyone"
    )]
    OpenApi(SocketAddr),
    /// The API token file is unusable.
    #[error(transparent)]
    ApiToken(#[from] ringleader_transport::http::TokenError),
    /// A peer idle timeout under 40 ms.
    #[error("the peer idle timeout must be at least 40 ms")]
    IdleTimeoutTooShort,
    /// A queue capacity or connection limit of 0.
    #[error("queue capacity and connection limit must be positive")]
    ZeroCapacity,
    /// No algorithm has this name.
    #[error("unknown algorithm {name:?}; known: {known}")]
    UnknownAlgorithm {
        /// The name asked for.
        name: String,
        /// The algorithms there are, comma-separated.
        known: String,
    },
    /// The algorithm exists but its state is not plain data a node keeps in its state file
    /// (the lock service, whose replicas hold a Raft engine).
    #[error(
        "{name:?} does not run on `ringleader node`: its state holds a library engine; judge it in the simulator (`sim`, `sweep`)"
    )]
    NotOnNodes {
        /// The name asked for.
        name: String,
    },
    /// The algorithm's communication graph cannot be built for this membership.
    #[error(transparent)]
    Topology(#[from] ringleader_algorithms::topology::TopologyError),
    /// A parameter is unknown to the algorithm or out of range.
    #[error(transparent)]
    Param(#[from] ringleader_algorithms::ParamError),
    /// `detector=none` together with a detector's setting.
    #[error("parameter `{key}` contradicts detector=none (no failure detector runs); drop one of them")]
    DetectorContradiction {
        /// The detector setting given.
        key: &'static str,
    },
    /// The algorithm watches no coordinator: it reads no failure-detector parameters.
    #[error("{algorithm} reads no failure-detector parameters")]
    NoDetector {
        /// The algorithm.
        algorithm: &'static str,
    },
    /// The algorithm refused its parameters (unknown or out of range).
    #[error(transparent)]
    Configure(#[from] ringleader_algorithms::ConfigError),
    /// The data directory could not be used, or holds a state this node must not start over.
    #[error(transparent)]
    Storage(#[from] storage::StorageError),
    /// A socket or file could not be opened.
    #[error("{what}: {source}")]
    Io {
        /// What was being opened.
        what: String,
        /// Why it failed.
        source: std::io::Error,
    },
}

/// A running node.
#[derive(Clone)]
pub struct NodeHandle {
    /// The address peers connect to (the real port when the configuration asked for port 0).
    pub listen: SocketAddr,
    /// The HTTP API's address, if served.
    pub api: Option<SocketAddr>,
    /// The node's shared state (counters, view, events).
    pub shared: Arc<Shared>,
    /// Cancel to stop the node.
    pub shutdown: CancellationToken,
    /// Completes when the driver loop has flushed its trace and stopped.
    pub stopped: CancellationToken,
}

/// Starts a node on the current tokio runtime: binds its sockets, then runs the algorithm until
/// `handle.shutdown` is cancelled.
pub async fn start(cfg: NodeConfig) -> Result<NodeHandle, NetError> {
    cfg.validate()?;
    let name = cfg.algorithm.clone();
    let fut = ringleader_registry::dispatch_plain(&name, driver::StartVisitor { cfg }).ok_or_else(|| {
        if ringleader_registry::find(&name).is_some() {
            return NetError::NotOnNodes { name: name.clone() };
        }
        let names: Vec<&str> = ringleader_registry::all()
            .iter()
            .map(|i| i.name)
            .filter(|n| ringleader_registry::is_plain(n))
            .collect();
        NetError::UnknownAlgorithm { name: name.clone(), known: names.join(", ") }
    })?;
    fut.await
}
