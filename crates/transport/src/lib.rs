//! # ringleader-transport: what a real node puts on the network
//!
//! The sockets both kinds of real node share, the textbook node (`ringleader-net`) and the
//! coordination service's node (`ringleader-service`), with nothing of either:
//!
//! - [`peer`]: authenticated peer links over TCP — one writer per peer with a bounded queue,
//!   keep-alives and reconnection with backoff; a listener with a cap on connections, a
//!   handshake deadline and an idle timeout, whose readers decode frames as the user's own
//!   payload type;
//! - [`wire`]: the frames and the versioned handshake (`Hello`, and with a secret `Challenge`
//!   and `Proof`);
//! - [`auth`]: the cluster secret and the HMAC challenge–response peers prove it with;
//! - [`tls`]: TLS with rustls for every listener (certificates, keys and CAs from PEM files),
//!   mutual TLS between peers;
//! - [`counters`]: what the transport counts, counted where its user keeps its counters;
//! - [`http`]: serving an HTTP API hardened the same way for both (connection limits, idle and
//!   write-stall timeouts, the loopback `Host` check, cross-site refusals, the bearer token),
//!   and the OpenMetrics content type their `/metrics` pages answer with.
//!
//! ```text
//!   user ──encode──▶ queue ──▶ writer ──TCP frames──▶ listener ─▶ reader ──Inbound{from,msg}──▶ user
//! ```
//!
//! The payload is the user's: a textbook node sends its driver's envelopes (with the Lamport and
//! vector stamps its trace needs), a service node raft-rs's messages alone. The crate depends on
//! no other ringleader crate.

#![warn(missing_docs)]

pub mod auth;
pub mod counters;
pub mod http;
pub mod peer;
pub mod tls;
pub mod wire;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub use counters::{Counted, TransportCounters, TransportCounts};
pub use peer::{Admit, Inbound, LinkState};

/// How long an inbound peer connection may stay silent (see [`PeerConfig::peer_idle_timeout`]).
pub const DEFAULT_PEER_IDLE_TIMEOUT: Duration = Duration::from_secs(5);

/// Proven peers' inbound connections open at once by default.
pub const DEFAULT_MAX_CONNECTIONS: usize = 64;

/// Capacity of a peer's outgoing queue by default (messages; its user drops what does not fit).
pub const DEFAULT_QUEUE_CAPACITY: usize = 4096;

/// What one node's peer links need to know: who it is, which protocol it speaks, the secret its
/// peers prove, and its limits.
#[derive(Clone, Debug)]
pub struct PeerConfig {
    /// This node's id (what its hello claims, and, with a secret, proves).
    pub id: u64,
    /// The protocol name the hello carries; a peer naming another is refused (a textbook node:
    /// its algorithm; a service node: the service and its cluster id).
    pub protocol: String,
    /// The cluster secret peers prove they hold ([`auth`]); `None`: peers are believed.
    pub secret: Option<auth::Secret>,
    /// Maximum frame size in bytes, taken from a peer once it is through its handshake.
    pub max_frame: usize,
    /// Maximum simultaneous inbound connections of proven peers (one per peer id); connections
    /// still in their handshake have a cap of their own ([`peer::MAX_HANDSHAKES`]).
    pub max_connections: usize,
    /// An inbound peer connection that delivers no frame for this long is closed; writers send
    /// an empty keep-alive frame after a quarter of it without traffic.
    pub peer_idle_timeout: Duration,
    /// Mutual TLS between peers (`None`: plain TCP). The hello and, with a secret, the
    /// challenge–response then run inside the TLS session.
    pub tls: Option<tls::PeerTls>,
}

impl PeerConfig {
    /// The links of node `id` speaking `protocol`, with no secret and the default limits.
    pub fn new(id: u64, protocol: &str) -> PeerConfig {
        PeerConfig {
            id,
            protocol: protocol.to_string(),
            secret: None,
            max_frame: wire::DEFAULT_MAX_FRAME,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            peer_idle_timeout: DEFAULT_PEER_IDLE_TIMEOUT,
            tls: None,
        }
    }
}

/// The OS wall clock, ns since the Unix epoch (what traces, links and `/status` times are in).
pub fn wall_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0)
}
