//! # The lock service's replicated core
//!
//! Leases, named locks, elections and an etcd-style key-value store, replicated through Raft
//! (raft-rs). This is the part of the coordination service that the simulator and the real
//! server (`ringleader serve`, crate `ringleader-service`) share; it is its own crate so that the
//! textbook algorithms (`ringleader-algorithms`) link neither raft-rs nor protobuf.
//!
//! - [`state`]: the replicated state machine every replica applies in log order;
//! - [`auth`]: users, roles and permissions (etcd's auth model) in the state machine;
//! - [`kv`]: the key-value store (etcd's data model) inside the state machine;
//! - [`replica`]: one Raft node over stable storage, applying committed entries to the state
//!   machine;
//! - [`log`]: the Raft log as the simulator keeps it on a replica's stable storage (the server
//!   keeps it in redb);
//! - [`process`]: the simulator's `lock-service` algorithm, the replica and its node's workload
//!   client as one [`ringleader_algorithms::Algorithm`];
//! - [`planted`]: the bugs a test build can plant in the state machine, to prove the checkers.

#![warn(missing_docs)]

pub mod auth;
pub mod kv;
pub mod log;
pub mod planted;
pub mod process;
pub mod replica;
pub mod state;
