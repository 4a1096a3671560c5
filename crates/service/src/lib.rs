//! # ringleader-service: the coordination service on real nodes
//!
//! The coordination service (leases, named locks with fencing tokens, elections, deadlock
//! detection across locks) runs on a Raft replica
//! ([`ringleader_algorithms::service::replica`]): the very code the simulator judges, raft-rs
//! included. This crate puts it on real nodes.
//!
//! ## Layout
//!
//! - [`disk`]: the durable Raft log, raft-rs's `Storage` on one redb file; each `Ready` is
//!   written in one transaction with one fsync (group commit).
//! - [`server`]: one node — the loop that owns the replica, the authenticated TCP transport of
//!   real nodes to its peers, and the commands the API sends the loop.
//! - [`http`]: the HTTP/JSON API with Server-Sent-Event watches (docs/SERVICE-API.md).

pub mod disk;
pub mod http;
pub mod server;
