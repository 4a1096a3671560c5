//! # ringleader-judge: what every driver uses to judge and record a run
//!
//! The simulator, the model checker and real nodes run the same sans-IO processes; this crate
//! holds what they share to say whether a run kept its promises and to show it:
//!
//! - [`checkers`]: the property checkers of each family (agreement, safety, fencing, the clock
//!   condition, soundness …), fed the events, requests and faults of a run and the global view
//!   no process has ([`checkers::World`]: who is really up, crashed or paused);
//! - [`trace`]: the JSON-lines trace writer, which stamps every record with Lamport and vector
//!   timestamps;
//! - [`outcome`]: what a run ended with, typed per family (the checkers build it);
//! - [`mermaid`]: the Mermaid sequence diagram of a trace;
//! - [`linearizability`]: a linearizability checker over client histories (Wing & Gong's search
//!   with Lowe's memo) and the model of the lock service's locks;
//! - [`fenced_resource`]: a fenced resource's log of accepted and refused writes, judged on its
//!   own and against the clients' lock history;
//! - [`lease_expiry`]: leases seen gone by clients that did not end them, judged against their
//!   TTL (no lease ends before its TTL since its last keep-alive);
//! - [`watch`]: watch streams judged against the puts they report (order, no gap, the right
//!   change at each revision: etcd's watch guarantees).
//!
//! It depends on `ringleader-core` and `ringleader-algorithms` only: no event queue, no network
//! model, no scenario parser.

#![warn(missing_docs)]
pub mod checkers;
pub mod fenced_resource;
pub mod lease_expiry;
pub mod linearizability;
pub mod mermaid;
pub mod outcome;
pub mod trace;
pub mod watch;
