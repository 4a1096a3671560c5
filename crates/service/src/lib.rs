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

/// Starts a service node ([`server::start`]) and serves its HTTP API ([`http::serve`]) until
/// the node shuts down.
pub async fn start(cfg: server::ServerConfig) -> Result<server::Running, server::ServeError> {
    let (running, api) = server::start(cfg).await?;
    tokio::spawn(http::serve(api, running.node.clone()));
    Ok(running)
}
