//! What a node counts and shows: transport counters (the peer transport's
//! [`Counted`] things among them, counted here), lock wait and hold times, and the status the
//! HTTP API serves.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use ringleader_transport::Counted;

use ringleader_core::{NodeId, Uid};
use serde::Serialize;

macro_rules! counters {
    ($($name:ident: $help:literal),* $(,)?) => {
        /// Transport and driver counters (monotonic), shared by every task of a node.
        #[derive(Debug, Default)]
        pub struct Counters {
            $(#[doc = $help] pub $name: AtomicU64,)*
        }

        impl Counters {
            /// Every counter as (name, help, value), in declaration order.
            pub fn list(&self) -> Vec<(&'static str, &'static str, u64)> {
                vec![$((stringify!($name), $help, self.$name.load(Ordering::Relaxed))),*]
            }
        }
    };
}

counters! {
    messages_sent: "Algorithm messages written to a peer connection.",
    messages_received: "Algorithm messages received and delivered to the algorithm.",
    messages_dropped_queue_full: "Messages dropped because a peer's outgoing queue was full.",
    messages_dropped_connection: "Messages lost because the connection broke while writing them.",
    connections_accepted: "Inbound connections whose handshake was accepted.",
    connections_rejected: "Inbound connections closed: bad handshake, bad frame or over the limit.",
    handshake_errors: "Handshakes refused (magic, version, algorithm or unknown sender).",
    frame_errors: "Frames refused (undecodable, truncated or oversized).",
    connections_over_limit: "Inbound connections refused because too many were open.",
    handshakes_evicted: "Inbound connections still in their handshake closed to make room for a new one when the connection limit was reached.",
    connections_idle_closed: "Inbound peer connections closed because no frame arrived within the idle timeout.",
    auth_failures: "Peer connections that did not prove they hold the cluster secret for the id they claimed.",
    reconnects: "Outbound connection attempts after a failure.",
    timers_fired: "Timers that fired (stale generations excluded).",
    requests: "Application requests handed to the algorithm.",
    events: "Events the algorithm emitted.",
    lock_grants: "Critical-section entries at this node.",
    lock_releases: "Critical-section exits at this node.",
    leader_changes: "Times this node's known leader changed.",
    messages_rejected_sender: "Messages refused because they claim a sender id other than the one their connection proved.",
    messages_rejected_stranger: "Messages refused because they name an id that is not a member.",
    messages_rejected_rules: "Messages refused because their sender could not have sent them by the algorithm's rules (e.g. a fencing token from a node that is not the coordinator).",
    api_connections_over_limit: "HTTP API connections refused (503, closed) because too many were open.",
    api_write_stalls: "HTTP API connections closed because the client read nothing of a response for the write-stall timeout.",
    state_writes: "Times the algorithm's state was written durably to the data directory (--data-dir).",
}

impl Counters {
    /// Adds one to `c`.
    pub fn bump(c: &AtomicU64) {
        c.fetch_add(1, Ordering::Relaxed);
    }
}

impl ringleader_transport::TransportCounts for Counters {
    fn add(&self, what: Counted, n: u64) {
        let c = match what {
            Counted::MessagesSent => &self.messages_sent,
            Counted::MessagesDroppedQueueFull => &self.messages_dropped_queue_full,
            Counted::MessagesDroppedConnection => &self.messages_dropped_connection,
            Counted::ConnectionsAccepted => &self.connections_accepted,
            Counted::ConnectionsRejected => &self.connections_rejected,
            Counted::HandshakeErrors => &self.handshake_errors,
            Counted::FrameErrors => &self.frame_errors,
            Counted::ConnectionsOverLimit => &self.connections_over_limit,
            Counted::HandshakesEvicted => &self.handshakes_evicted,
            Counted::ConnectionsIdleClosed => &self.connections_idle_closed,
            Counted::AuthFailures => &self.auth_failures,
            Counted::Reconnects => &self.reconnects,
        };
        c.fetch_add(n, Ordering::Relaxed);
    }
}

/// How long clients wait for the lock and hold it (seconds; buckets 0.5 ms … 16 s, doubling).
#[derive(Debug, Clone)]
pub struct LockHistograms {
    /// From a client's `POST /lock` reaching the driver to its grant.
    pub wait: Histogram,
    /// From a grant to its release (or to the expiry of its lease).
    pub hold: Histogram,
}

impl Default for LockHistograms {
    fn default() -> Self {
        let buckets = || Histogram::new(exponential_buckets(0.0005, 2.0, 16));
        LockHistograms { wait: buckets(), hold: buckets() }
    }
}

impl LockHistograms {
    /// Records one wait.
    pub fn waited(&self, d: Duration) {
        self.wait.observe(d.as_secs_f64());
    }

    /// Records one hold.
    pub fn held(&self, d: Duration) {
        self.hold.observe(d.as_secs_f64());
    }
}

/// One peer as `/status` shows it.
#[derive(Clone, Debug, Serialize)]
pub struct PeerStatus {
    /// The peer's id (uid).
    pub id: Uid,
    /// Its address.
    pub addr: String,
    /// True while our outgoing connection to it is established.
    pub connected: bool,
    /// True while the algorithm suspects it (`Suspect` without a later `Trust`).
    pub suspected: bool,
    /// Messages waiting in its outgoing queue.
    pub queued: usize,
}

/// The node state the HTTP API serves, updated by the driver after every step.
#[derive(Clone, Debug, Serialize)]
pub struct StatusDocument {
    /// This node's id (uid).
    pub id: Uid,
    /// Its position in the membership (0..N).
    pub position: NodeId,
    /// The algorithm's name.
    pub algorithm: &'static str,
    /// Its family (`election`, `mutex`, …).
    pub family: &'static str,
    /// `leader`, `follower`, `candidate` (election under way), `holder`, `waiting`, `idle`.
    pub role: &'static str,
    /// The leader this node believes in; null while unknown.
    pub leader: Option<Uid>,
    /// The term of the last leader announcement (null before any; 0 for algorithms without terms).
    pub term: Option<u64>,
    /// The fencing token of the critical section this node holds.
    pub holding: Option<u64>,
    /// Clients of this node queued for the lock.
    pub clients_waiting: usize,
    /// The peers.
    pub peers: Vec<PeerStatus>,
    /// The counters.
    pub counters: serde_json::Map<String, serde_json::Value>,
}
