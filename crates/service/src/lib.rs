//! # ringleader-service: the coordination service's real-node parts
//!
//! The coordination service (leases, named locks, elections) runs on a Raft replica, a sans-IO
//! state machine that the simulator drives with its log in memory. A real node needs what this
//! crate holds: first the durable Raft log ([`disk::DiskLog`]), on which the node persists what
//! each Raft `Ready` carries before it acts on it; later the server.

pub mod disk;
