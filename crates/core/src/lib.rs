//! # ringleader-core: the process contract
//!
//! Every algorithm in ringleader is written once, as a deterministic state machine that
//! never touches a socket, a clock, a thread or a random-number generator. A *driver* (the
//! simulator, the model checker, the real-network node) feeds it inputs and carries out what
//! it asks for:
//!
//! ```text
//!            on_start / on_message / on_timer / on_request / on_recover
//!   driver ────────────────────────────────────────────────────────────▶ Process
//!          ◀──────────────────────────────────────────────────────────── (state)
//!            Outbox: Send{to,msg} · SetTimer{timer,after} · CancelTimer · Emit(Event) · AdjustClock
//! ```
//!
//! The crate holds only that contract: node identities ([`NodeId`], [`Uid`]), integer time
//! ([`Time`]), the topology a node may know ([`Topology`]), the [`Context`] a handler reads, the
//! [`Outbox`] it writes, and the shared vocabulary of application [`Request`]s, observable
//! [`Event`]s and the [`FencingToken`]s entries carry, that checkers, traces and the HTTP API
//! all speak, and the logical clocks drivers stamp their traces with ([`stamp`]).

#![warn(missing_docs)]
mod event;
mod fencing;
pub mod harness;
mod process;
pub mod stamp;
pub mod time;
mod topology;
pub mod trace;

pub use event::{Event, Request, Touch};
pub use fencing::FencingToken;
pub use process::{Command, Context, Message, Outbox, PlainState, Process};
pub use time::Time;
pub use topology::{Neighbors, Topology};

/// Where a node sits: its position `0..N` in the system. Drivers address nodes by position.
///
/// On a ring, position `i` sends to position `(i + 1) mod N`.
pub type NodeId = u32;

/// A node's identifier in the algorithm's sense: unique and totally ordered (the "id" that
/// elections compare). Under the `ascending` arrangement position `i` holds uid `i + 1`.
pub type Uid = u64;
