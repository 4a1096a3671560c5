//! The driver loop: the one task that owns a node's algorithm state.
//!
//! Every input — a peer's message, a timer, an application request — arrives on one channel
//! and is handled to completion before the next, exactly as the simulator handles one event at
//! a time. After each handler the loop carries out the outbox in order: sends go to the peer's
//! bounded queue, timers are (re)armed on tokio's monotonic clock with a generation number so
//! that a cancelled or re-armed timer never fires stale, events are traced, published to
//! `/events` subscribers and folded into the node's view (leader, term, suspicions, lock).
//!
//! The driver keeps a Lamport clock and a vector clock for the trace: every step (start,
//! delivery, timer, request, send) ticks them, a send carries them in its envelope and a
//! delivery merges them.
//!
//! The module is split by concern:
//! - [`node`]: the state a node's tasks share ([`Shared`], [`View`], [`PeerLink`]) and the
//!   `/status` document built from it;
//! - [`launch`]: configuring the algorithm, binding the sockets and spawning the tasks;
//! - [`event_loop`]: the loop itself — handlers, the outbox, clocks and the trace;
//! - [`lock`]: the HTTP lock session (`POST` / `DELETE /lock`) between the API and the loop.

pub mod event_loop;
pub mod launch;
pub mod lock;
pub mod node;

use ringleader_core::{NodeId, Request};
use tokio::sync::oneshot;

use crate::wire::Envelope;

pub use launch::{StartFuture, StartVisitor};
pub use node::{NodeEvent, PeerLink, Shared, View, wall_ns};

/// An input of the driver loop.
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

/// The boxed, type-erased version of [`Input`] the API uses.
pub enum ApiInput {
    /// See [`Input::Request`].
    Request(Request),
    /// See [`Input::Acquire`].
    Acquire(oneshot::Sender<Result<u64, String>>),
    /// See [`Input::Release`].
    Release(oneshot::Sender<Result<u64, String>>),
}
