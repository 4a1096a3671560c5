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

/// Starts a service node ([`server::start`]) and serves its HTTP API ([`http::router`]) until
/// the node shuts down, hardened as a real node's API is
/// ([`ringleader_net::api::serve_router`]): connection limits, idle and write-stall timeouts,
/// the `Host` check on a loopback bind, and the bearer token when one is configured.
pub async fn start(cfg: server::ServerConfig) -> Result<server::Running, server::ServeError> {
    let (token, limits, id) = (cfg.api_token.clone(), cfg.api_limits, cfg.id);
    let (running, api) = server::start(cfg).await?;
    let node = running.node.clone();
    let shutdown = node.shutdown.clone();
    let counts = std::sync::Arc::new(ringleader_net::api::ConnectionCounters::default());
    tokio::spawn(async move {
        let label = format!("service node {id}");
        ringleader_net::api::serve_router(api, http::router(node), counts, token, limits, shutdown, &label)
            .await
    });
    Ok(running)
}
