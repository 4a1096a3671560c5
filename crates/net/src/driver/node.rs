//! The state a node's tasks share, and the `/status` document built from it.

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use ringleader_algorithms::Family;
use ringleader_core::{Event, NodeId, Uid};
use serde::Serialize;
use tokio::sync::{broadcast, mpsc};

use super::ApiInput;
use crate::metrics::{Counters, PeerStatus, Status};

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
    /// Inputs from the API to the driver.
    pub api_tx: mpsc::Sender<ApiInput>,
}

impl Shared {
    /// The status document of `/status`.
    pub fn status(&self) -> Status {
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
        Status {
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

/// The OS wall clock, ns since the Unix epoch.
pub fn wall_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0)
}
