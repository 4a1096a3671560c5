//! What the peer transport counts, and where: each user of the transport keeps its counters
//! where it shows them ([`TransportCounts`]); [`TransportCounters`] keeps them on their own.

use std::sync::atomic::{AtomicU64, Ordering};

/// Something the peer transport counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Counted {
    /// Messages written to a peer connection.
    MessagesSent,
    /// Messages dropped because a peer's outgoing queue was full (counted by whoever queues).
    MessagesDroppedQueueFull,
    /// Messages lost because the connection broke while writing them.
    MessagesDroppedConnection,
    /// Inbound connections whose handshake was accepted.
    ConnectionsAccepted,
    /// Inbound connections closed: bad handshake, bad frame or over the limit.
    ConnectionsRejected,
    /// Handshakes refused (magic, version, protocol or unknown sender).
    HandshakeErrors,
    /// Frames refused (undecodable, truncated or oversized).
    FrameErrors,
    /// Inbound connections refused because too many were open.
    ConnectionsOverLimit,
    /// Inbound connections still in their handshake closed to make room for a new one.
    HandshakesEvicted,
    /// Inbound connections closed because no frame arrived within the idle timeout.
    ConnectionsIdleClosed,
    /// Peer connections that did not prove they hold the cluster secret for the id they claimed.
    AuthFailures,
    /// Outbound connection attempts after a failure.
    Reconnects,
}

impl Counted {
    /// Every counted thing, in declaration order.
    pub const ALL: [Counted; 12] = [
        Counted::MessagesSent,
        Counted::MessagesDroppedQueueFull,
        Counted::MessagesDroppedConnection,
        Counted::ConnectionsAccepted,
        Counted::ConnectionsRejected,
        Counted::HandshakeErrors,
        Counted::FrameErrors,
        Counted::ConnectionsOverLimit,
        Counted::HandshakesEvicted,
        Counted::ConnectionsIdleClosed,
        Counted::AuthFailures,
        Counted::Reconnects,
    ];

    /// The counter's name (snake case, as metrics name it).
    pub fn name(self) -> &'static str {
        match self {
            Counted::MessagesSent => "messages_sent",
            Counted::MessagesDroppedQueueFull => "messages_dropped_queue_full",
            Counted::MessagesDroppedConnection => "messages_dropped_connection",
            Counted::ConnectionsAccepted => "connections_accepted",
            Counted::ConnectionsRejected => "connections_rejected",
            Counted::HandshakeErrors => "handshake_errors",
            Counted::FrameErrors => "frame_errors",
            Counted::ConnectionsOverLimit => "connections_over_limit",
            Counted::HandshakesEvicted => "handshakes_evicted",
            Counted::ConnectionsIdleClosed => "connections_idle_closed",
            Counted::AuthFailures => "auth_failures",
            Counted::Reconnects => "reconnects",
        }
    }
}

/// Where the transport's counts go.
pub trait TransportCounts: Send + Sync + 'static {
    /// Adds `n` to the counter of `what`.
    fn add(&self, what: Counted, n: u64);

    /// Adds one to the counter of `what`.
    fn bump(&self, what: Counted) {
        self.add(what, 1);
    }
}

/// The transport's counters on their own, for a user that keeps no others.
#[derive(Debug, Default)]
pub struct TransportCounters([AtomicU64; Counted::ALL.len()]);

impl TransportCounters {
    /// The value of the counter of `what`.
    pub fn get(&self, what: Counted) -> u64 {
        self.0[what as usize].load(Ordering::Relaxed)
    }
}

impl TransportCounts for TransportCounters {
    fn add(&self, what: Counted, n: u64) {
        self.0[what as usize].fetch_add(n, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_counted_thing_has_its_own_counter_in_declaration_order() {
        let c = TransportCounters::default();
        for (i, what) in Counted::ALL.into_iter().enumerate() {
            assert_eq!(what as usize, i, "{}", what.name());
            c.add(what, i as u64 + 1);
        }
        for (i, what) in Counted::ALL.into_iter().enumerate() {
            assert_eq!(c.get(what), i as u64 + 1);
        }
    }
}
