//! The etcd-compatible gRPC API (docs/ETCD.md is its reference).
//!
//! A subset of etcd's v3 API, served over the same [`Node`] as the HTTP API, so that clients of
//! etcd's Lease, Lock and Election services (the Rust `etcd-client` crate) can use the
//! service's leases, locks and elections:
//!
//! - [`lease`]: `etcdserverpb.Lease` — Grant, Revoke, KeepAlive (stream), TimeToLive, Leases.
//! - [`lock`]: `v3lockpb.Lock` — Lock, Unlock.
//! - [`election`]: `v3electionpb.Election` — Campaign, Proclaim, Leader, Observe (stream),
//!   Resign.
//! - [`maintenance`]: `etcdserverpb.Maintenance` — Status, Alarm (the `NOSPACE` alarm of the
//!   backend quota).
//! - [`cluster`]: `etcdserverpb.Cluster` — MemberList.
//! - [`kv`]: `etcdserverpb.KV` — Range, Put, DeleteRange, Txn.
//! - [`watch`]: `etcdserverpb.Watch` — Watch (a bidirectional stream).
//! - [`auth`]: `etcdserverpb.Auth` — Authenticate; with an API token, every other call needs
//!   the auth token it answers.
//!
//! Every other method, of these services or of any other, is answered
//! `UNIMPLEMENTED` with the method's name. The messages are compiled from `proto/`, which
//! mirrors etcd's package, service and message names and field numbers.
//!
//! Keys. A lock held by lease `L` on name `N` is the key `N/` followed by `L` in lower-case hex
//! (etcd's own format); Unlock maps it back to `(N, L)`. A candidate of election `E` has the
//! key `E/` followed by its lease in hex, likewise.
//!
//! Headers. `cluster_id` is a hash of the member ids, `member_id` the node's id, `raft_term` its
//! Raft term, and `revision` the node's last applied Raft index when it answers — except in a
//! Lock answer, where it is the lock's fencing token (the index of the entry that granted it),
//! which strictly increases per lock name.

use std::net::SocketAddr;
use std::sync::Arc;

use ringleader_lock_service::auth::AuthRefusal;
use ringleader_lock_service::state::{LeaseId, Refusal, StateMachine};
use tonic::{Request, Status};

use crate::ops::{Caller, OpError};
use crate::server::{Node, Unavailable};
use crate::users::Principal;

pub mod auth;
pub mod cluster;
pub mod election;
pub mod kv;
pub mod lease;
pub mod lock;
pub mod maintenance;
pub mod watch;

/// The messages and services generated from `proto/` (etcd's names and field numbers).
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod pb {
    /// `mvccpb`: key-value records (also an election's leader) and watch events.
    pub mod mvccpb {
        tonic::include_proto!("mvccpb");
    }
    /// `authpb`: the auth store's permissions.
    pub mod authpb {
        tonic::include_proto!("authpb");
    }
    /// `etcdserverpb`: headers, leases, maintenance status, cluster membership, auth.
    pub mod etcdserverpb {
        tonic::include_proto!("etcdserverpb");
    }
    /// `v3lockpb`: the Lock service.
    pub mod v3lockpb {
        tonic::include_proto!("v3lockpb");
    }
    /// `v3electionpb`: the Election service.
    pub mod v3electionpb {
        tonic::include_proto!("v3electionpb");
    }
}

use pb::etcdserverpb::ResponseHeader;

/// The version string `Maintenance.Status` answers: the etcd API level served, marked as
/// ringleader's.
pub const VERSION: &str = "3.5.0+ringleader";

/// The largest write request (a Put or a Txn, as encoded), in bytes, by default: etcd's
/// default `--max-request-bytes`, 1.5 MiB (`ringleader serve --max-request-bytes` sets it). A
/// larger one is refused as etcd refuses it, so that one entry cannot take a node's memory
/// (every entry lives in the log and the history).
pub const MAX_REQUEST_BYTES: usize = crate::server::DEFAULT_MAX_REQUEST_BYTES;

/// What gRPC itself accepts beyond the request limit (etcd's `grpcOverheadBytes`): a message
/// over the sum is refused before it is decoded.
const GRPC_OVERHEAD_BYTES: usize = 512 * 1024;

/// etcd's answer to a write over the node's request limit (`--max-request-bytes`).
pub fn too_large(node: &Node, size: usize) -> Result<(), Status> {
    if size > node.max_request_bytes {
        return Err(Status::invalid_argument("etcdserver: request is too large"));
    }
    Ok(())
}

/// etcd's answer to a write that would take the store past the backend quota
/// (`--quota-backend-bytes`): `RESOURCE_EXHAUSTED`, and the `NOSPACE` alarm raised.
pub fn check_space(node: &Node, adds: u64) -> Result<(), Status> {
    node.check_space(adds).map_err(|_| no_space())
}

/// etcd's `RESOURCE_EXHAUSTED` answer to a write past the backend quota.
fn no_space() -> Status {
    Status::resource_exhausted("etcdserver: mvcc: database space exceeded")
}

/// The gRPC methods served; any other path is answered `UNIMPLEMENTED` with its name.
pub const SERVED: [&str; 37] = [
    "/etcdserverpb.Lease/LeaseGrant",
    "/etcdserverpb.Lease/LeaseRevoke",
    "/etcdserverpb.Lease/LeaseKeepAlive",
    "/etcdserverpb.Lease/LeaseTimeToLive",
    "/etcdserverpb.Lease/LeaseLeases",
    "/v3lockpb.Lock/Lock",
    "/v3lockpb.Lock/Unlock",
    "/v3electionpb.Election/Campaign",
    "/v3electionpb.Election/Proclaim",
    "/v3electionpb.Election/Leader",
    "/v3electionpb.Election/Observe",
    "/v3electionpb.Election/Resign",
    "/etcdserverpb.Maintenance/Status",
    "/etcdserverpb.Maintenance/Alarm",
    "/etcdserverpb.Cluster/MemberList",
    "/etcdserverpb.KV/Range",
    "/etcdserverpb.KV/Put",
    "/etcdserverpb.KV/DeleteRange",
    "/etcdserverpb.KV/Txn",
    "/etcdserverpb.Watch/Watch",
    "/etcdserverpb.Auth/Authenticate",
    "/etcdserverpb.Auth/AuthEnable",
    "/etcdserverpb.Auth/AuthDisable",
    "/etcdserverpb.Auth/AuthStatus",
    "/etcdserverpb.Auth/UserAdd",
    "/etcdserverpb.Auth/UserGet",
    "/etcdserverpb.Auth/UserList",
    "/etcdserverpb.Auth/UserDelete",
    "/etcdserverpb.Auth/UserChangePassword",
    "/etcdserverpb.Auth/UserGrantRole",
    "/etcdserverpb.Auth/UserRevokeRole",
    "/etcdserverpb.Auth/RoleAdd",
    "/etcdserverpb.Auth/RoleGet",
    "/etcdserverpb.Auth/RoleList",
    "/etcdserverpb.Auth/RoleDelete",
    "/etcdserverpb.Auth/RoleGrantPermission",
    "/etcdserverpb.Auth/RoleRevokePermission",
];

/// What the gRPC services share: the node and the API's own address.
#[derive(Clone)]
pub struct Ctx {
    /// The node the API speaks for.
    pub node: Arc<Node>,
    /// The address the gRPC API is served on (reported by MemberList as the node's client URL).
    pub addr: SocketAddr,
}

impl Ctx {
    /// The header of an answer to a proposal: its revision is this node's applied index read in
    /// the node's loop, so at or past the proposal's own entry (the published status may lag
    /// the loop by a turn).
    pub async fn applied_header(&self) -> Option<ResponseHeader> {
        let applied = self.node.local(|m: &StateMachine| m.last_applied()).await.ok();
        self.header(applied)
    }

    /// A response header; `revision`: the revision to report (default: the last applied index
    /// the node published).
    pub fn header(&self, revision: Option<u64>) -> Option<ResponseHeader> {
        let s = self.node.status.lock().clone();
        Some(ResponseHeader {
            cluster_id: cluster_id(&s.members),
            member_id: self.node.me as u64 + 1,
            revision: to_i64(revision.unwrap_or(s.applied)),
            raft_term: s.term,
        })
    }
}

/// The cluster id headers carry: FNV-1a of the sorted member ids (the same on every member).
pub fn cluster_id(members: &[u64]) -> u64 {
    let mut ids = members.to_vec();
    ids.sort_unstable();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for id in ids {
        for b in id.to_le_bytes() {
            h ^= b as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// etcd's answer to an operation on a lease it does not know.
pub fn lease_not_found() -> Status {
    Status::not_found("etcdserver: requested lease not found")
}

/// The metadata key of the leader's node id on an UNAVAILABLE status (see [`unavailable`]).
pub const LEADER_METADATA: &str = "ringleader-leader";
/// The metadata key of the leader's HTTP API URL on an UNAVAILABLE status.
pub const LEADER_URL_METADATA: &str = "ringleader-leader-url";

/// A service that cannot be reached in time answers UNAVAILABLE (clients retry elsewhere); a
/// request not committed in time names the leader the node knows in the message and in the
/// metadata [`LEADER_METADATA`] (its id) and [`LEADER_URL_METADATA`] (its HTTP API URL, when
/// known).
pub fn unavailable(e: Unavailable) -> Status {
    let mut status = Status::unavailable(e.to_string());
    if let Unavailable::Timeout { leader: Some(h), .. } = &e {
        let md = status.metadata_mut();
        if let Ok(v) = h.id.to_string().parse() {
            md.insert(LEADER_METADATA, v);
        }
        if let Some(Ok(v)) = h.url.as_ref().map(|u| u.parse()) {
            md.insert(LEADER_URL_METADATA, v);
        }
    }
    status
}

/// A lease id from the wire: etcd's are `int64`, ringleader's are positive.
pub fn lease_id(what: &str, id: i64) -> Result<LeaseId, Status> {
    if id <= 0 {
        return Err(Status::invalid_argument(format!(
            "{what} {id}: a lease id from LeaseGrant is required (ringleader chooses lease ids, all positive)"
        )));
    }
    Ok(id as LeaseId)
}

/// An optional lease id from the wire: 0 for none, else as [`lease_id`].
pub fn lease_or_none(id: i64) -> Result<LeaseId, Status> {
    if id == 0 { Ok(0) } else { lease_id("lease", id) }
}

/// A lock or election name from the wire: UTF-8, 1..=[`MAX_NAME`](crate::http::MAX_NAME) bytes.
pub fn name_of(what: &str, bytes: &[u8]) -> Result<String, Status> {
    let name = std::str::from_utf8(bytes).map_err(|_| {
        Status::invalid_argument(format!("{what} must be UTF-8 (ringleader's names are text)"))
    })?;
    if name.is_empty() || name.len() > crate::http::MAX_NAME {
        return Err(Status::invalid_argument(format!(
            "{what} must be 1..={} bytes long",
            crate::http::MAX_NAME
        )));
    }
    Ok(name.to_string())
}

/// The key of lease `lease` under `name`: `name/` and the lease in lower-case hex (etcd's
/// format for lock and election keys).
pub fn key_of(name: &str, lease: LeaseId) -> Vec<u8> {
    format!("{name}/{lease:x}").into_bytes()
}

/// The `(name, lease)` a key made by [`key_of`] stands for; `None` for any other key.
pub fn parse_key(key: &[u8]) -> Option<(String, LeaseId)> {
    let key = std::str::from_utf8(key).ok()?;
    let (name, hex) = key.rsplit_once('/')?;
    if name.is_empty() || hex.is_empty() || hex.len() > 16 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let lease = LeaseId::from_str_radix(hex, 16).ok()?;
    (lease > 0).then(|| (name.to_string(), lease))
}

/// etcd's answer to an operation's error (see [`crate::ops`]).
pub fn op_status(e: OpError) -> Status {
    let message = e.to_string();
    match e {
        OpError::Unavailable(e) => unavailable(e),
        OpError::NoSpace(_) => no_space(),
        OpError::NoSuchLease(_) => lease_not_found(),
        OpError::NotOwner(_) => Status::permission_denied(message),
        OpError::Denied(crate::users::Denied::Unauthenticated) => Status::unauthenticated(message),
        OpError::Denied(crate::users::Denied::PermissionDenied) => Status::permission_denied(message),
        OpError::Refused(Refusal::Auth(r @ (AuthRefusal::UserEmpty | AuthRefusal::RoleEmpty))) => {
            Status::invalid_argument(r.to_string())
        }
        OpError::NotLeader { .. } => Status::failed_precondition("election: not leader"),
        OpError::WaitRefused | OpError::WaitDropped | OpError::LostLock { .. } | OpError::LostElection => {
            Status::aborted(message)
        }
        OpError::Busy { .. } | OpError::LockDelay { .. } | OpError::Refused(_) | OpError::Members(_) => {
            Status::failed_precondition(message)
        }
        OpError::TimedOut(_) => Status::deadline_exceeded(message),
        OpError::Unexpected(_) => Status::internal(message),
    }
}

/// The caller of a call: the principal the interceptor ([`auth::Authorizer`]) established, and
/// the lease key its metadata shows ([`lease_key_of`]).
pub fn caller_of<T>(req: &Request<T>) -> Result<Caller, Status> {
    let principal = req.extensions().get::<Principal>().cloned().unwrap_or(Principal::Nobody);
    Ok(Caller::new(principal).with_key(lease_key_of(req)?))
}

/// The metadata that carries a lease key: a lease granted through the HTTP API answers a key
/// (crate::ops::LeaseKey), and acting on it through this API takes the key as this metadata.
/// etcd's own clients never send it, and leases they grant here have no key.
pub const LEASE_KEY_METADATA: &str = "lease-key";

/// The lease key a call carries ([`LEASE_KEY_METADATA`]), if any.
pub fn lease_key_of<T>(req: &Request<T>) -> Result<Option<crate::ops::LeaseKey>, Status> {
    let Some(v) = req.metadata().get(LEASE_KEY_METADATA) else { return Ok(None) };
    let text = v.to_str().map_err(|_| Status::invalid_argument("lease-key: not text"))?;
    crate::ops::LeaseKey::parse(text)
        .map(Some)
        .map_err(|e| Status::invalid_argument(format!("lease-key: {e}")))
}

/// The answer to a method this API does not serve.
fn unimplemented(path: &str) -> axum::response::Response {
    let method = path.trim_start_matches('/');
    let status = Status::unimplemented(format!(
        "ringleader does not serve {method}: its etcd API has KV (without Compact), Watch, leases, locks, \
         elections, Maintenance.Status and .Alarm and Cluster.MemberList (see docs/ETCD.md)"
    ));
    let (parts, ()) = status.into_http::<()>().into_parts();
    axum::response::Response::from_parts(parts, axum::body::Body::empty())
}

/// The gRPC routes: each served method to its service, everything else to UNIMPLEMENTED. With
/// an API token or while auth is enabled, every method but Authenticate needs a caller
/// ([`auth`]).
pub fn router(ctx: Ctx) -> axum::Router {
    use pb::etcdserverpb::auth_server::AuthServer;
    use pb::etcdserverpb::cluster_server::ClusterServer;
    use pb::etcdserverpb::lease_server::LeaseServer;
    use pb::etcdserverpb::maintenance_server::MaintenanceServer;
    use pb::v3electionpb::election_server::ElectionServer;
    use pb::v3lockpb::lock_server::LockServer;
    let check = auth::Authorizer::new(ctx.node.users.clone());
    let lease = LeaseServer::with_interceptor(lease::LeaseApi(ctx.clone()), check.clone());
    let lock = LockServer::with_interceptor(lock::LockApi(ctx.clone()), check.clone());
    let election = ElectionServer::with_interceptor(election::ElectionApi(ctx.clone()), check.clone());
    let maintenance =
        MaintenanceServer::with_interceptor(maintenance::MaintenanceApi(ctx.clone()), check.clone());
    let kv = tonic::service::interceptor::InterceptedService::new(
        pb::etcdserverpb::kv_server::KvServer::new(kv::KvApi(ctx.clone()))
            .max_decoding_message_size(ctx.node.max_request_bytes + GRPC_OVERHEAD_BYTES),
        check.clone(),
    );
    let watch = pb::etcdserverpb::watch_server::WatchServer::with_interceptor(
        watch::WatchApi(ctx.clone()),
        check.clone(),
    );
    let cluster = ClusterServer::with_interceptor(cluster::ClusterApi(ctx.clone()), check.clone());
    let auth = AuthServer::new(auth::AuthApi { ctx, check });
    let mut r = axum::Router::new();
    for path in SERVED {
        r = match path.split('/').nth(1) {
            Some("etcdserverpb.Lease") => r.route_service(path, lease.clone()),
            Some("v3lockpb.Lock") => r.route_service(path, lock.clone()),
            Some("v3electionpb.Election") => r.route_service(path, election.clone()),
            Some("etcdserverpb.Maintenance") => r.route_service(path, maintenance.clone()),
            Some("etcdserverpb.KV") => r.route_service(path, kv.clone()),
            Some("etcdserverpb.Watch") => r.route_service(path, watch.clone()),
            Some("etcdserverpb.Auth") => r.route_service(path, auth.clone()),
            _ => r.route_service(path, cluster.clone()),
        };
    }
    r.fallback(|uri: axum::http::Uri| async move { unimplemented(uri.path()) })
}

/// The gRPC API's TLS from etcd's flags (tonic's rustls acceptor, HTTP/2 by ALPN): the
/// server's certificate and key, and with `--trusted-ca-file` the CA client certificates are
/// verified with (required with `--client-cert-auth`). The files are checked with
/// [`ringleader_transport::tls::server_config`] first, for its one-line errors.
pub fn tls_config(
    files: &ringleader_transport::tls::ServerFiles,
) -> Result<tonic::transport::ServerTlsConfig, ringleader_transport::tls::TlsError> {
    use ringleader_transport::tls::TlsError;
    use tonic::transport::{Certificate, Identity, ServerTlsConfig};
    ringleader_transport::tls::server_config(files, &[])?;
    // tonic builds its rustls configuration with the process's default provider: ring.
    ringleader_transport::tls::install_default_provider();
    let read = |flag: &'static str, path: &std::path::Path| {
        std::fs::read(path).map_err(|source| TlsError::Read { flag, path: path.to_path_buf(), source })
    };
    let identity = Identity::from_pem(read("--cert-file", &files.cert)?, read("--key-file", &files.key)?);
    let mut tls = ServerTlsConfig::new().identity(identity);
    if let Some(ca) = &files.trusted_ca {
        tls = tls
            .client_ca_root(Certificate::from_pem(read("--trusted-ca-file", ca)?))
            .client_auth_optional(!files.client_cert_auth);
    }
    Ok(tls)
}

/// Serves the gRPC API on `listener` until the node shuts down; with an API token or users,
/// authentication ([`auth`]); with `tls` ([`tls_config`]), connections are TLS.
pub async fn serve(
    listener: tokio::net::TcpListener,
    node: Arc<Node>,
    tls: Option<tonic::transport::ServerTlsConfig>,
) {
    let Ok(addr) = listener.local_addr() else { return };
    let shutdown = node.shutdown.clone();
    let routes = tonic::service::Routes::from(router(Ctx { node, addr }));
    let incoming = tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true));
    let mut server = tonic::transport::Server::builder();
    if let Some(tls) = tls {
        server = match server.tls_config(tls) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("etcd gRPC API: TLS: {e}; not serving");
                return;
            }
        };
    }
    let _ =
        server.add_routes(routes).serve_with_incoming_shutdown(incoming, shutdown.cancelled_owned()).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_map_back_to_name_and_lease() {
        assert_eq!(key_of("db", 0x694d), b"db/694d".to_vec());
        assert_eq!(parse_key(b"db/694d"), Some(("db".to_string(), 0x694d)));
        assert_eq!(parse_key(b"a/b/ff"), Some(("a/b".to_string(), 255)));
        for bad in [&b"db"[..], b"/ff", b"db/", b"db/xyz", b"db/0", b"db/11112222333344445", b"\xff/1"] {
            assert_eq!(parse_key(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn cluster_id_ignores_member_order() {
        assert_eq!(cluster_id(&[1, 2, 3]), cluster_id(&[3, 1, 2]));
        assert_ne!(cluster_id(&[1, 2, 3]), cluster_id(&[1, 2]));
    }
}
