//! The driver loop: the one task that owns a node's algorithm state.
//!
//! Every input — a peer's message, a timer, an application request — arrives on one channel
//! and is handled to completion before the next, exactly as the simulator handles one event at
//! a time. After each handler the loop carries out the outbox in order: sends go to the peer's
//! bounded queue, timers are (re)armed on tokio's monotonic clock with a generation number so
//! that a cancelled or re-armed timer never fires stale, events are traced, published to
//! `/events` subscribers and folded into the node's view (leader, term, suspicions, lock).
//!
//! The driver keeps a Lamport clock and a vector clock for the trace
//! ([`ringleader_core::stamp::LogicalClocks`], the rules every driver shares): every step
//! (start, delivery, timer, request, send) ticks them, a send carries them in its envelope and
//! a delivery merges them.
//!
//! The module is split by concern:
//! - the state a node's tasks share ([`Shared`], [`View`], [`PeerLink`]), the `/status`
//!   document built from it and the loop's [`Input`] live in the leaf module `shared`, which
//!   the API uses without depending on the driver (the peer transport's readers hand the loop
//!   [`Input`]s through `From<Inbound<Envelope>>`);
//! - [`launch`]: configuring the algorithm, binding the sockets and spawning the tasks;
//! - [`event_loop`]: the loop itself — handlers, the outbox, clocks and the trace;
//! - [`lock`]: the HTTP lock session (`POST` / `DELETE /lock`) between the API and the loop,
//!   with its state (the queue of clients, the holder and its lease) in the leaf
//!   [`lock_session`].

pub mod event_loop;
pub mod launch;
pub mod lock;
pub mod lock_session;

pub use crate::shared::{Input, NodeEvent, PeerLink, Shared, View, wall_ns};
pub use launch::{StartFuture, StartVisitor};
