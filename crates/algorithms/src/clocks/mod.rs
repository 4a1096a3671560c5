//! Logical and physical clocks (Tanenbaum & van Steen, Distributed Systems, synchronization).
//!
//! - [`lamport_clock`]: Lamport's logical clock (e → f ⇒ L(e) < L(f));
//! - [`vector_clock`]: vector clocks (e → f ⇔ V(e) < V(f));
//! - [`cristian`]: ask a time server, set to T + RTT/2, keep the minimum-RTT sample;
//! - [`berkeley`]: a master polls, averages with a fault-tolerant average, sends deltas;
//! - [`ntp`]: offset and delay from four timestamps, minimum-delay filter over the last 8;
//! - [`make`]: the textbook's `make` story, where skewed clocks skip a needed rebuild.
//!
//! Logical clocks run under the `messages` workload (`Request::Local`, `Request::SendTo`) and
//! report every event with [`ringleader_core::Event::Stamped`] (local) or
//! [`ringleader_core::Event::StampedMessage`] (send, receive). Physical clocks correct the
//! node's clock with `Outbox::adjust_clock`, which drivers apply by slewing, never stepping back,
//! and report every correction with [`ringleader_core::Event::ClockAdjusted`].

pub mod berkeley;
pub mod cristian;
pub mod lamport_clock;
pub mod make;
pub mod ntp;
pub mod vector_clock;

use ringleader_core::{NodeId, Time};

/// A message id unique in a run: the sender's position · 2³² + the sender's count of sends.
pub fn message_id(sender: NodeId, count: u64) -> u64 {
    ((sender as u64) << 32) | (count & 0xFFFF_FFFF)
}

/// The signed difference `a − b` of two clock readings, in ns.
pub fn diff(a: Time, b: Time) -> i64 {
    (a as i128 - b as i128) as i64
}

/// Cristian's estimate of how far a remote clock is *ahead* of ours, in ns: we sent at local
/// `t0`, the remote clock read `remote` when it answered, the answer arrived at local `t1`.
/// The remote reading is taken to be half a round trip old: `remote + (t1 − t0)/2 − t1`. The
/// error is at most half the asymmetry of the two one-way delays: ±(RTT/2 − min delay).
pub fn remote_offset(t0: Time, remote: Time, t1: Time) -> i64 {
    diff(remote, t1) + diff(t1, t0) / 2
}
