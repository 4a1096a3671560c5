//! What a node's tasks share: the inputs of its driver loop, its view of the algorithm's state,
//! its peer links and the status document built from them.
//!
//! The driver loop (`driver`) owns the algorithm; the peer transport's readers
//! (`ringleader_transport::peer`) and the HTTP API (`api`) hand it [`Input`]s and read the
//! [`Shared`] state it keeps up to date. This module depends on neither the driver nor the API.

use parking_lot::Mutex;
use std::collections::{BTreeMap, VecDeque};
use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::Bytes;
use ringleader_algorithms::Family;
use ringleader_core::{Event, NodeId, Request, Uid};
use ringleader_transport::{Inbound, LinkState};
use tokio::sync::{broadcast, mpsc, oneshot};

pub use ringleader_transport::wall_ns;

use crate::metrics::{Counters, LockHistograms, PeerStatus, StatusDocument};
use crate::wire::Envelope;

/// A lock granted to one client of the node: the handle that owns it, its fencing token and
/// the lease (TTL) it must be renewed within.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grant {
    /// The handle the client releases and renews the lock with (32 hex digits, random).
    pub handle: String,
    /// The fencing token of the grant.
    pub fencing: u64,
    /// The lease: without a keep-alive within it, the node releases the lock.
    pub ttl: Duration,
}

/// Why the node refuses a lock request, a release or a keep-alive.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LockRefusal {
    /// The handle holds no lock at this node (wrong, released, expired or never granted).
    #[error("handle {handle:?} holds no lock at this node (wrong, released, or its lease expired)")]
    NotHolder {
        /// The handle presented.
        handle: String,
    },
    /// The algorithm cannot grant while a peer it needs is unreachable or suspected.
    #[error(
        "{algorithm} cannot grant the lock: {needs}, and peer {peer} has been {why} since {since_ns} ns \
         after the Unix epoch ({ago_ms} ms ago)"
    )]
    Blocked {
        /// The algorithm.
        algorithm: &'static str,
        /// Whose answer a request needs ("it needs every peer's permission", …).
        needs: &'static str,
        /// The peer's id.
        peer: Uid,
        /// What the node knows of it: `unreachable (connection lost)` or `suspected by the
        /// failure detector`.
        why: &'static str,
        /// Since when, ns since the Unix epoch.
        since_ns: u64,
        /// How long ago that was when the answer was given.
        ago_ms: u64,
    },
    /// The OS gave no randomness for a handle.
    #[error("the operating system gave no randomness for a lock handle")]
    NoRandomness,
}

/// A lock request of one client: its lease, and where the grant (or the refusal) goes.
pub struct LockAsk {
    /// The lease the client asks for.
    pub ttl: Duration,
    /// Where the driver answers.
    pub reply: oneshot::Sender<Result<Grant, LockRefusal>>,
}

/// An input of the driver loop, for an algorithm of message type `M` and timer type `T`. The
/// HTTP API sends the inputs that carry neither as `Input<Infallible, Infallible>`.
pub enum Input<M, T> {
    /// A peer's message.
    Message {
        /// Sender position.
        from: NodeId,
        /// The envelope.
        env: Envelope<M>,
    },
    /// A timer's sleep ended.
    Timer {
        /// Which timer.
        timer: T,
        /// The generation it was armed with.
        generation: u64,
    },
    /// An application request.
    Request(Request),
    /// A client asks for the lock; it queues behind the node's other clients (FIFO) and is
    /// answered with its [`Grant`].
    Acquire(LockAsk),
    /// A client releases the lock its handle holds; answered with the fencing token released.
    Release {
        /// The handle [`Input::Acquire`] answered.
        handle: String,
        /// Where the driver answers.
        reply: oneshot::Sender<Result<u64, LockRefusal>>,
    },
    /// A client renews the lease of the lock its handle holds.
    KeepAlive {
        /// The handle.
        handle: String,
        /// Where the driver answers (the grant with its renewed lease).
        reply: oneshot::Sender<Result<Grant, LockRefusal>>,
    },
    /// The lease timer of grant generation `lease` ran out.
    LeaseExpired {
        /// The lease generation the timer was armed for.
        lease: u64,
    },
    /// The transport lost its connection to the peer at this position.
    PeerDown(NodeId),
    /// Every peer is connected (or the settle time passed): an election node that knows no
    /// leader yet starts an election.
    ElectAtStart,
}

impl<M, T> From<Inbound<Envelope<M>, NodeId>> for Input<M, T> {
    /// A peer's envelope, as the transport's reader delivers it.
    fn from(m: Inbound<Envelope<M>, NodeId>) -> Input<M, T> {
        Input::Message { from: m.from, env: m.msg }
    }
}

impl Input<Infallible, Infallible> {
    /// The same input for a driver of any message and timer types: it carries neither.
    pub fn widen<M, T>(self) -> Input<M, T> {
        match self {
            Input::Message { env, .. } => match env.msg {},
            Input::Timer { timer, .. } => match timer {},
            Input::Request(r) => Input::Request(r),
            Input::Acquire(ask) => Input::Acquire(ask),
            Input::Release { handle, reply } => Input::Release { handle, reply },
            Input::KeepAlive { handle, reply } => Input::KeepAlive { handle, reply },
            Input::LeaseExpired { lease } => Input::LeaseExpired { lease },
            Input::PeerDown(p) => Input::PeerDown(p),
            Input::ElectAtStart => Input::ElectAtStart,
        }
    }
}

/// An event as `/events` publishes it.
#[derive(Clone, Debug)]
pub struct NodeEvent {
    /// Its number: 1, 2, … in publication order since the node started (the SSE `id`).
    pub seq: u64,
    /// The id of the node that emitted it.
    pub id: Uid,
    /// Wall-clock time, ns since the Unix epoch.
    pub time_ns: u64,
    /// The event.
    pub kind: NodeEventKind,
}

/// What a [`NodeEvent`] reports.
#[derive(Clone, Debug)]
pub enum NodeEventKind {
    /// An event the algorithm emitted.
    Algorithm(Event),
    /// The node released a client's lock because its lease ran out without a keep-alive.
    LockLost {
        /// The fencing token of the lost grant.
        fencing: u64,
        /// The lease that was not renewed.
        ttl: Duration,
    },
}

impl NodeEvent {
    /// The SSE event name: the algorithm event's name, or `lock_lost`.
    pub fn name(&self) -> &'static str {
        match &self.kind {
            NodeEventKind::Algorithm(e) => e.name(),
            NodeEventKind::LockLost { .. } => "lock_lost",
        }
    }

    /// The event as JSON, naming nodes by id: the algorithm's positions (`node`, `super_peer`,
    /// `cycle`) are replaced by the ids of the `members` at those positions.
    pub fn to_json(&self, members: &[Uid]) -> serde_json::Value {
        let mut v = serde_json::json!({ "seq": self.seq, "id": self.id, "time_ns": self.time_ns });
        let uid = |p: &serde_json::Value| {
            p.as_u64().and_then(|p| members.get(p as usize)).map_or(p.clone(), |&u| u.into())
        };
        match &self.kind {
            NodeEventKind::Algorithm(e) => {
                if let Ok(serde_json::Value::Object(fields)) = serde_json::to_value(e) {
                    for (k, f) in fields {
                        let f = match k.as_str() {
                            "node" | "super_peer" => uid(&f),
                            "cycle" => f.as_array().map_or(f.clone(), |a| a.iter().map(uid).collect()),
                            _ => f,
                        };
                        v[k] = f;
                    }
                }
            }
            NodeEventKind::LockLost { fencing, ttl } => {
                v["event"] = "lock_lost".into();
                v["fencing"] = (*fencing).into();
                v["ttl_ms"] = (ttl.as_millis() as u64).into();
                v["reason"] =
                    "the holder sent no keep-alive within its lease; the node released the lock".into();
            }
        }
        v
    }
}

/// How many recent events a node keeps for clients that resume `/events` (`Last-Event-ID`).
pub const EVENT_LOG_CAPACITY: usize = 1024;

/// The recent events (a bounded ring) and the number the next one gets.
#[derive(Default)]
pub struct EventLog {
    /// The newest [`EVENT_LOG_CAPACITY`] events, oldest first.
    pub recent: VecDeque<NodeEvent>,
    /// The sequence number of the last event published (0: none yet).
    pub last_seq: u64,
}

/// What the node believes, folded from its events.
#[derive(Clone, Debug, Default)]
pub struct View {
    /// Known leader.
    pub leader: Option<Uid>,
    /// Term of the last leader announcement.
    pub term: Option<u64>,
    /// An election is under way (started, no leader since).
    pub electing: bool,
    /// Suspected positions, with the time (ns since the Unix epoch) of the suspicion.
    pub suspected: BTreeMap<NodeId, u64>,
    /// Fencing token of the section held.
    pub holding: Option<u64>,
    /// The algorithm has a request for the section outstanding.
    pub waiting: bool,
    /// Clients of this node queued for the lock.
    pub clients_waiting: usize,
}

/// One peer link, shared by the driver, its writer task and the API.
pub struct PeerLink {
    /// Its position.
    pub position: NodeId,
    /// The writer's view of the link: the peer's id and address, whether it is connected and
    /// since when it is not.
    pub state: Arc<LinkState>,
    /// The outgoing queue (encoded envelopes).
    pub queue: mpsc::Sender<Bytes>,
}

/// A node's state shared between its tasks.
pub struct Shared {
    /// This node's id.
    pub id: Uid,
    /// Its position.
    pub position: NodeId,
    /// Every member's id by position.
    pub members: Vec<Uid>,
    /// The algorithm's name.
    pub algorithm: &'static str,
    /// Its family.
    pub family: Family,
    /// Counters.
    pub counters: Counters,
    /// The node's view.
    pub view: Mutex<View>,
    /// Event publication for `/events`.
    pub events: broadcast::Sender<NodeEvent>,
    /// The recent events, for `/events` clients that resume with `Last-Event-ID`.
    pub event_log: Mutex<EventLog>,
    /// Lock wait and hold times.
    pub lock_times: LockHistograms,
    /// Peer links by position (`None` at our own position).
    pub peers: Vec<Option<PeerLink>>,
    /// Inputs from the API to the driver: the driver's own inputs, with no message and no
    /// timer type (see [`Input::widen`]).
    pub api_tx: mpsc::Sender<Input<Infallible, Infallible>>,
    /// HTTP API connections open now (a gauge; see [`crate::api::ConnectionLimits`]).
    pub api_connections: std::sync::atomic::AtomicU64,
}

impl ringleader_transport::TransportCounts for Shared {
    fn add(&self, what: ringleader_transport::Counted, n: u64) {
        self.counters.add(what, n);
    }
}

impl Shared {
    /// Publishes an event to `/events` subscribers and the recent-event ring, numbering it.
    pub fn publish(&self, time_ns: u64, kind: NodeEventKind) {
        let mut log = self.event_log.lock();
        log.last_seq += 1;
        let event = NodeEvent { seq: log.last_seq, id: self.id, time_ns, kind };
        if log.recent.len() == EVENT_LOG_CAPACITY {
            log.recent.pop_front();
        }
        log.recent.push_back(event.clone());
        // Sent under the log's lock, so that a subscriber that copies the log and subscribes
        // under it misses nothing and sees nothing twice.
        let _ = self.events.send(event);
    }

    /// The status document of `/status`.
    pub fn status(&self) -> StatusDocument {
        let view = self.view.lock().clone();
        let role = match self.family {
            Family::Election | Family::Detector => {
                if view.leader == Some(self.id) {
                    "leader"
                } else if view.electing {
                    "candidate"
                } else if view.leader.is_some() {
                    "follower"
                } else {
                    "unknown"
                }
            }
            _ if view.holding.is_some() => "holder",
            _ if view.waiting => "waiting",
            _ => "idle",
        };
        let peers = self
            .peers
            .iter()
            .flatten()
            .map(|p| PeerStatus {
                id: p.state.id,
                addr: p.state.addr.clone(),
                connected: p.state.connected.load(Ordering::Relaxed),
                suspected: view.suspected.contains_key(&p.position),
                queued: p.queue.max_capacity() - p.queue.capacity(),
            })
            .collect();
        let counters = self.counters.list().into_iter().map(|(k, _, v)| (k.to_string(), v.into())).collect();
        StatusDocument {
            id: self.id,
            position: self.position,
            algorithm: self.algorithm,
            family: self.family.name(),
            role,
            leader: view.leader,
            term: view.term,
            holding: view.holding,
            clients_waiting: view.clients_waiting,
            peers,
            counters,
        }
    }
}
