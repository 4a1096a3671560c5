//! What a node's tasks share: the inputs of its driver loop, its view of the algorithm's state,
//! its peer links and the status document built from them.
//!
//! The driver loop (`driver`) owns the algorithm; the transport's readers (`transport`) and the
//! HTTP API (`api`) hand it [`Input`]s and read the [`Shared`] state it keeps up to date. This
//! module depends on none of them.

use std::collections::BTreeSet;
use std::convert::Infallible;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;
use ringleader_algorithms::Family;
use ringleader_core::{Event, NodeId, Request, Uid};
use serde::Serialize;
use tokio::sync::{broadcast, mpsc, oneshot};

use crate::metrics::{Counters, PeerStatus, StatusDocument};
use crate::wire::Envelope;

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
    /// The HTTP API asks for the critical section; answered with the fencing token.
    Acquire(oneshot::Sender<Result<u64, String>>),
    /// The HTTP API releases the critical section; answered with the fencing token released.
    Release(oneshot::Sender<Result<u64, String>>),
    /// Every peer is connected (or the settle time passed): an election node that knows no
    /// leader yet starts an election.
    ElectAtStart,
}

impl Input<Infallible, Infallible> {
    /// The same input for a driver of any message and timer types: it carries neither.
    pub fn widen<M, T>(self) -> Input<M, T> {
        match self {
            Input::Message { env, .. } => match env.msg {},
            Input::Timer { timer, .. } => match timer {},
            Input::Request(r) => Input::Request(r),
            Input::Acquire(reply) => Input::Acquire(reply),
            Input::Release(reply) => Input::Release(reply),
            Input::ElectAtStart => Input::ElectAtStart,
        }
    }
}

/// An event as `/events` publishes it.
#[derive(Clone, Debug, Serialize)]
pub struct NodeEvent {
    /// The id of the node that emitted it.
    pub id: Uid,
    /// Wall-clock time, ns since the Unix epoch.
    pub time_ns: u64,
    /// The event.
    #[serde(flatten)]
    pub event: Event,
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
    /// Suspected positions.
    pub suspected: BTreeSet<NodeId>,
    /// Fencing token of the section held.
    pub holding: Option<u64>,
    /// Waiting for the section.
    pub waiting: bool,
}

/// One peer link, shared by the driver, its writer task and the API.
pub struct PeerLink {
    /// The peer's id.
    pub id: Uid,
    /// Its position.
    pub position: NodeId,
    /// Its address.
    pub addr: String,
    /// True while the outgoing connection is up.
    pub connected: AtomicBool,
    /// The outgoing queue.
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
    /// Peer links by position (`None` at our own position).
    pub peers: Vec<Option<PeerLink>>,
    /// Inputs from the API to the driver: the driver's own inputs, with no message and no
    /// timer type (see [`Input::widen`]).
    pub api_tx: mpsc::Sender<Input<Infallible, Infallible>>,
}

impl Shared {
    /// The status document of `/status`.
    pub fn status(&self) -> StatusDocument {
        let view = self.view.lock().expect("view lock").clone();
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
                id: p.id,
                addr: p.addr.clone(),
                connected: p.connected.load(Ordering::Relaxed),
                suspected: view.suspected.contains(&p.position),
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
            peers,
            counters,
        }
    }
}
