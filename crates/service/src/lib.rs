//! # ringleader-service: the coordination service on real nodes
//!
//! The coordination service (leases, named locks with fencing tokens, elections, deadlock
//! detection across locks) runs on a Raft replica
//! ([`ringleader_lock_service::replica`]): the very code the simulator judges, raft-rs
//! included. This crate puts it on real nodes.
//!
//! ## Layout
//!
//! - [`disk`]: the durable Raft log, raft-rs's `Storage` on one redb file; each `Ready` is
//!   written in one transaction with one fsync (group commit).
//! - [`identity`]: the cluster and node a data directory belongs to, checked at every start.
//! - [`server`]: one node — the loop that owns the replica, its peers over the authenticated
//!   peer transport of real nodes (`ringleader-transport`; raft-rs's messages, no stamps), and
//!   the commands the API sends the loop.
//! - [`ops`]: the operations both APIs translate to — the blocking lock and campaign waits
//!   (subscribe, propose, wait on notices, withdraw, check the grant again) written once, with
//!   typed answers and errors.
//! - [`users`]: who is calling (the API token, a user's token, a client certificate's name)
//!   and what they may do: etcd's auth model, checked by [`ops`].
//! - [`http`]: the HTTP/JSON API with Server-Sent-Event watches (docs/SERVICE-API.md).
//! - [`etcd`]: the etcd-compatible gRPC API (leases, locks, elections; docs/ETCD.md).
//! - [`metrics`]: what a node counts, and its OpenMetrics page (`GET /metrics`).
//! - [`floor`]: the machine's floor under the service — a durable append on the data
//!   directory's file system, a loopback round trip (`bench-service --measure floor`).

pub mod disk;
pub mod etcd;
pub mod floor;
pub mod http;
pub mod identity;
pub mod metrics;
pub mod ops;
pub mod server;
pub mod users;

/// Starts a service node ([`server::start`]) and serves its HTTP API ([`http::router`]) until
/// the node shuts down, hardened as a real node's API is
/// ([`ringleader_transport::http::serve_router`]): connection limits, idle and write-stall timeouts,
/// the `Host` check on a loopback bind, and the bearer token when one is configured.
pub async fn start(cfg: server::ServerConfig) -> Result<server::Running, server::ServeError> {
    start_with_grpc(cfg, None).await.map(|(running, _)| running)
}

/// [`start`], and with `grpc` also the etcd-compatible gRPC API ([`etcd::serve`]) on that
/// address; answers the bound gRPC address too.
pub async fn start_with_grpc(
    cfg: server::ServerConfig,
    grpc: Option<std::net::SocketAddr>,
) -> Result<(server::Running, Option<std::net::SocketAddr>), server::ServeError> {
    let io = |what: String| move |source| server::ServeError::Io { what, source };
    let grpc = match grpc {
        Some(addr) => {
            let l =
                tokio::net::TcpListener::bind(addr).await.map_err(io(format!("etcd gRPC API on {addr}")))?;
            let bound = l.local_addr().map_err(io("gRPC address".into()))?;
            Some((l, bound))
        }
        None => None,
    };
    let (token, limits, id) = (cfg.api_token.clone(), cfg.api_limits, cfg.id);
    // Both client APIs' TLS, built before anything starts: a bad file is one error line.
    let tls_error = |e: ringleader_transport::tls::TlsError| server::ServeError::Config(e.to_string());
    let api_tls = match &cfg.tls {
        Some(files) => {
            Some(ringleader_transport::tls::server_config(files, &[b"http/1.1"]).map_err(tls_error)?)
        }
        None => None,
    };
    let grpc_tls = match (&cfg.tls, &grpc) {
        (Some(files), Some(_)) => Some(etcd::tls_config(files).map_err(tls_error)?),
        _ => None,
    };
    let (running, api) = server::start(cfg).await?;
    let node = running.node.clone();
    // With an API token, every request needs a bearer: the token, or one a user authenticated
    // for ([`users::Users`]).
    let bearer = token
        .is_some()
        .then(|| node.users.clone() as std::sync::Arc<dyn ringleader_transport::http::BearerCheck>);
    let shutdown = node.shutdown.clone();
    let counts = std::sync::Arc::new(ringleader_transport::http::ConnectionCounters::default());
    tokio::spawn(async move {
        let label = format!("service node {id}");
        ringleader_transport::http::serve_router_tls(
            api,
            http::router(node),
            counts,
            bearer,
            limits,
            api_tls,
            shutdown,
            &label,
        )
        .await
    });
    let bound = grpc.map(|(l, bound)| {
        tokio::spawn(etcd::serve(l, running.node.clone(), grpc_tls));
        bound
    });
    Ok((running, bound))
}
