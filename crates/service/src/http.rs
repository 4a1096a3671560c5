//! The service's HTTP/JSON API (docs/SERVICE-API.md is its reference).
//!
//! Handlers turn a request into an operation ([`crate::ops`]) or a [`Call`](crate::server::Call) of the node's loop and its answer into JSON.
//! Requests that block (an acquire that queues, a campaign behind an earlier candidate) listen
//! to the node's notices — subscribed *before* proposing, so no notice is missed — until theirs
//! arrives, their lease dies or their timeout passes. A blocked request that ends without its
//! grant (timeout, client gone) withdraws: it proposes the release or resignation, so no
//! abandoned waiter stays queued.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use futures_util::Stream;
use ringleader_core::Time;
use ringleader_core::time::MILLISECOND;
use ringleader_lock_service::state::{
    Candidate, IdempotencyKey, LeaseId, LossReason, Notice, Refusal, Reply, StateMachine,
};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::ops::{self, Caller, Grant, LeaseKey, OpError, Until};
use crate::server::{ChangeRefused, MAX_ID, MemberChange, Members, Node, Unavailable};
use crate::users::{AuthFailed, Denied, Need, Principal, Users};
use ringleader_lock_service::auth::Access;

/// The longest name of a lock or an election, in bytes.
pub const MAX_NAME: usize = 256;
/// The longest value a candidate announces, in bytes.
pub const MAX_VALUE: usize = 4096;
/// The shortest lease TTL (the replicated clock moves in steps of `clock_every`).
pub const MIN_TTL_MS: u64 = 100;
/// The longest lease TTL and the longest wait.
pub const MAX_MS: u64 = 86_400_000;
/// The largest request body, in bytes; a larger one is answered 413. The API's bodies are
/// small: a name of at most [`MAX_NAME`] bytes and a value of at most [`MAX_VALUE`].
pub const MAX_BODY: usize = 64 * 1024;

/// Marks an answer as a refusal, with its reason, for the `rejected_requests` counter.
#[derive(Clone, Copy, Debug)]
struct Rejected(&'static str);

/// An error answer: status, `reason` code and one line.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    reason: &'static str,
    message: String,
    extra: Vec<(&'static str, Value)>,
}

impl ApiError {
    fn new(status: StatusCode, reason: &'static str, message: impl Into<String>) -> ApiError {
        ApiError { status, reason, message: message.into(), extra: Vec::new() }
    }

    fn bad(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }

    fn no_lease(lease: LeaseId) -> ApiError {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "no_such_lease",
            format!("lease {lease} is unknown, revoked or expired; grant a new one"),
        )
    }

    fn conflict(reason: &'static str, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::CONFLICT, reason, message)
    }
}

impl From<Unavailable> for ApiError {
    /// 503; a request not committed in time also says which leader the node knows (`leader`,
    /// `null` when none) and, when the node was told it, the leader's API URL (`leader_url`):
    /// a client tries that endpoint next.
    fn from(e: Unavailable) -> ApiError {
        let reason = if matches!(e, Unavailable::Removed(_)) { "removed" } else { "unavailable" };
        let mut a = ApiError::new(StatusCode::SERVICE_UNAVAILABLE, reason, e.to_string());
        if let Unavailable::Timeout { leader, .. } = e {
            a.extra.push(("leader", json!(leader.as_ref().map(|h| h.id))));
            if let Some(url) = leader.and_then(|h| h.url) {
                a.extra.push(("leader_url", json!(url)));
            }
        }
        a
    }
}

impl From<crate::server::NoSpace> for ApiError {
    fn from(e: crate::server::NoSpace) -> ApiError {
        ApiError::new(StatusCode::INSUFFICIENT_STORAGE, "no_space", e.to_string())
    }
}

/// The header that carries a client's idempotency key (docs/SERVICE-API.md).
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// The client's idempotency key, from the `Idempotency-Key: SESSION:SEQ` header (decimal;
/// SESSION in `1..2^63`, chosen at random by the client; SEQ increasing with each new request
/// of the session, repeated by a retry): a write retried with the same key is applied at most
/// once, and the retry is answered as the first application was.
fn idempotency_key(headers: &axum::http::HeaderMap) -> Result<Option<IdempotencyKey>, ApiError> {
    let Some(v) = headers.get(IDEMPOTENCY_KEY) else { return Ok(None) };
    let bad = || {
        ApiError::bad(format!(
            "Idempotency-Key {v:?}: expected SESSION:SEQ, two decimal numbers, SESSION in 1..{} (a random \
             number per client), SEQ increasing with each new request",
            1u64 << 63
        ))
    };
    let text = v.to_str().map_err(|_| bad())?;
    let (session, seq) = text.trim().split_once(':').ok_or_else(bad)?;
    let client: u64 = session.parse().map_err(|_| bad())?;
    let seq: u64 = seq.parse().map_err(|_| bad())?;
    // Sessions with the top bit set are the nodes' own (IdempotencyKey::node).
    if client == 0 || client >= 1 << 63 {
        return Err(bad());
    }
    Ok(Some(IdempotencyKey { client, seq }))
}

/// Refuses an `Idempotency-Key` on a request that waits (an acquire, a campaign): those are
/// retried safely without one, since a lease that already holds the lock or stands in the
/// election is answered as before.
fn no_idempotency_key(headers: &axum::http::HeaderMap) -> Result<(), ApiError> {
    if headers.contains_key(IDEMPOTENCY_KEY) {
        return Err(ApiError::bad(
            "Idempotency-Key is taken by lease grant, keepalive, revoke, lock release, proclaim and resign; an \
             acquire or a campaign needs none (retried by the same lease, it is answered as before)",
        ));
    }
    Ok(())
}

impl From<OpError> for ApiError {
    fn from(e: OpError) -> ApiError {
        let message = e.to_string();
        match e {
            OpError::Unavailable(e) => e.into(),
            OpError::NoSpace(e) => e.into(),
            OpError::NoSuchLease(lease) => ApiError::no_lease(lease),
            OpError::NotOwner(_) => ApiError::new(StatusCode::FORBIDDEN, "not_owner", message),
            OpError::Denied(Denied::Unauthenticated) => {
                ApiError::new(StatusCode::UNAUTHORIZED, "unauthenticated", message)
            }
            OpError::Denied(Denied::PermissionDenied) => {
                ApiError::new(StatusCode::FORBIDDEN, "permission_denied", message)
            }
            OpError::NotLeader { .. } => ApiError::conflict("not_leader", message),
            OpError::Busy { .. } => ApiError::conflict("busy", message),
            OpError::LockDelay { until, .. } => {
                let mut e = ApiError::conflict("lock_delay", message);
                e.extra.push(("until_ms", json!(ms(until))));
                e
            }
            OpError::WaitRefused | OpError::WaitDropped => ApiError::conflict("aborted", message),
            OpError::Refused(reason) => refused(reason),
            OpError::TimedOut(_) => ApiError::new(StatusCode::REQUEST_TIMEOUT, "timeout", message),
            OpError::LostLock { .. } | OpError::LostElection => ApiError::conflict("lost", message),
            OpError::Members(e) => e.into(),
            OpError::Unexpected(reply) => unexpected(&reply),
        }
    }
}

impl From<ChangeRefused> for ApiError {
    fn from(e: ChangeRefused) -> ApiError {
        let message = e.to_string();
        match e {
            ChangeRefused::InProgress => ApiError::conflict("change_in_progress", message),
            ChangeRefused::Unknown(_) => ApiError::new(StatusCode::NOT_FOUND, "unknown_member", message),
            ChangeRefused::LastMember(_) => ApiError::conflict("last_member", message),
            ChangeRefused::LearnerNotReady { .. } => ApiError::conflict("learner_not_ready", message),
            ChangeRefused::AlreadyMember { .. } => ApiError::conflict("already_member", message),
            ChangeRefused::NotMember => ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "not_member", message),
            ChangeRefused::Unavailable(u) => u.into(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut body = json!({ "error": self.message, "reason": self.reason });
        for (k, v) in self.extra {
            body[k] = v;
        }
        let mut response = (self.status, Json(body)).into_response();
        response.extensions_mut().insert(Rejected(self.reason));
        response
    }
}

type Answer = Result<Json<Value>, ApiError>;

/// Who a request comes from ([`crate::users`]): the bearer credential's principal (the API
/// token is root, a token from `POST /v1/auth/authenticate` its user), else the common name of
/// the client certificate, else nobody. A bearer credential the node does not know is 401
/// while auth is enabled, and ignored while it is disabled.
struct Who(Principal);

impl axum::extract::FromRequestParts<Arc<Node>> for Who {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        node: &Arc<Node>,
    ) -> Result<Who, ApiError> {
        if let Some(v) = parts.headers.get(axum::http::header::AUTHORIZATION) {
            let presented = v.to_str().ok().and_then(ringleader_transport::http::bearer_credentials);
            let principal = presented.and_then(|t| node.users.identify(t.trim()));
            // A node without an API token ignores a bearer it does not know while auth is
            // disabled (as etcd ignores tokens then); with one, the bearer check let in only
            // the credentials `identify` knows.
            if principal.is_none() && !node.users.enabled() {
                return Ok(Who(Principal::Nobody));
            }
            return principal.map(Who).ok_or_else(|| {
                ApiError::new(
                    StatusCode::UNAUTHORIZED,
                    "invalid_token",
                    "the bearer credential is neither the API token nor a live token of a user; \
                     authenticate again (POST /v1/auth/authenticate)",
                )
            });
        }
        let cert = parts.extensions.get::<ringleader_transport::http::ClientCertificate>();
        Ok(Who(cert.and_then(|c| Users::identify_certificate(&c.0)).unwrap_or(Principal::Nobody)))
    }
}

impl Who {
    /// The caller, showing the lease key `key` (text from a body; 400 when it is not one).
    fn with_key(self, key: Option<&str>) -> Result<Caller, ApiError> {
        Ok(Caller::new(self.0).with_key(lease_key(key)?))
    }

    /// The caller, showing no lease key.
    fn caller(self) -> Caller {
        Caller::new(self.0)
    }
}

/// The body of a request, or a 400 naming what was wrong with it (413 when it is over
/// [`MAX_BODY`]).
fn body<T>(b: Result<Json<T>, JsonRejection>) -> Result<T, ApiError> {
    b.map(|Json(t)| t).map_err(|e| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            return ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "too_large",
                format!("the request body is over {MAX_BODY} bytes, the most this API takes"),
            );
        }
        ApiError::bad(format!("bad JSON body: {}", e.body_text()))
    })
}

fn check_name(what: &str, name: &str) -> Result<(), ApiError> {
    if name.is_empty() || name.len() > MAX_NAME {
        return Err(ApiError::bad(format!("{what} must be 1..={MAX_NAME} bytes long")));
    }
    Ok(())
}

fn check_ms(what: &str, ms: u64, min: u64) -> Result<Duration, ApiError> {
    if !(min..=MAX_MS).contains(&ms) {
        return Err(ApiError::bad(format!("{what} must be {min}..={MAX_MS} milliseconds")));
    }
    Ok(Duration::from_millis(ms))
}

fn ms(t: Time) -> u64 {
    t / MILLISECOND
}

fn candidate(c: &Candidate) -> Value {
    json!({ "lease": c.lease, "value": c.value, "index": c.index })
}

fn refused(reason: Refusal) -> ApiError {
    match reason {
        Refusal::NotHolder => ApiError::conflict("not_holder", reason.to_string()),
        Refusal::NotCandidate => ApiError::conflict("not_candidate", reason.to_string()),
        Refusal::ZeroTtl | Refusal::EmptyName => ApiError::bad(reason.to_string()),
        Refusal::Forgotten => ApiError::conflict("forgotten", reason.to_string()),
        Refusal::Auth(_) => ApiError::conflict("auth_refused", reason.to_string()),
    }
}

/// The answer to a reply no handler expects for its operation.
fn unexpected(reply: &Reply) -> ApiError {
    ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", format!("unexpected reply {reply:?}"))
}

/// The API's routes. Every refusal is a JSON body with a `reason`, counted by reason in
/// `/metrics`.
pub fn router(node: Arc<Node>) -> axum::Router {
    axum::Router::new()
        .route("/health", get(health))
        .route("/ready", get(ready))
        .route("/metrics", get(metrics))
        .route("/status", get(status))
        .route("/v1/auth/authenticate", post(authenticate))
        .route("/v1/members", get(members_list).post(member_add))
        .route("/v1/members/{id}", delete(member_remove))
        .route("/v1/lease/grant", post(lease_grant))
        .route("/v1/lease/keepalive", post(lease_keepalive))
        .route("/v1/lease/revoke", post(lease_revoke))
        .route("/v1/lease/{id}", get(lease_get))
        .route("/v1/lease/{id}/watch", get(lease_watch))
        .route("/v1/lock/acquire", post(lock_acquire))
        .route("/v1/lock/release", post(lock_release))
        .route("/v1/lock/{name}", get(lock_get))
        .route("/v1/election/campaign", post(campaign))
        .route("/v1/election/proclaim", post(proclaim))
        .route("/v1/election/resign", post(resign))
        .route("/v1/election/{name}", get(election_get))
        .route("/v1/election/{name}/observe", get(observe))
        .fallback(|| async {
            ApiError::new(StatusCode::NOT_FOUND, "not_found", "no such route; see docs/SERVICE-API.md")
        })
        .method_not_allowed_fallback(|| async {
            ApiError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                "this route does not take that method; see docs/SERVICE-API.md",
            )
        })
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY))
        .layer(axum::middleware::from_fn_with_state(node.clone(), count_rejections))
        .with_state(node)
}

/// Counts every refusal by its reason.
async fn count_rejections(
    State(node): State<Arc<Node>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let response = next.run(request).await;
    if let Some(Rejected(reason)) = response.extensions().get::<Rejected>() {
        node.metrics.reject(reason);
    }
    response
}

/// `/health`: 200 while the process serves.
async fn health(State(node): State<Arc<Node>>) -> Json<Value> {
    Json(json!({ "id": node.status.lock().id, "status": "alive" }))
}

/// Whether this node can serve: a member of the cluster that knows a leader and has applied
/// everything it knows committed; the reason when it cannot.
pub fn readiness(s: &crate::server::Status) -> Result<String, String> {
    if s.removed {
        return Err(format!("node {} was removed from the cluster", s.id));
    }
    if !s.members.contains(&s.id) {
        return Err(format!("node {} is not a member (yet)", s.id));
    }
    let Some(leader) = s.leader else { return Err("no leader known".into()) };
    if s.applied < s.commit {
        return Err(format!("applied up to {} of {} committed", s.applied, s.commit));
    }
    Ok(format!("leader {leader} known; applied up to the commit index {}", s.commit))
}

/// `/ready`: 200 when [`readiness`] says so, else 503 with the reason.
async fn ready(State(node): State<Arc<Node>>) -> Response {
    let s = node.status.lock().clone();
    match readiness(&s) {
        Ok(why) => Json(json!({ "id": s.id, "ready": true, "why": why })).into_response(),
        Err(why) => {
            let mut e = ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "not_ready", why);
            e.extra.push(("ready", json!(false)));
            e.into_response()
        }
    }
}

/// `/metrics`: the OpenMetrics page ([`crate::metrics::exposition`]).
async fn metrics(State(node): State<Arc<Node>>) -> Result<Response, ApiError> {
    use crate::metrics::Holdings;
    let holdings = node.local(Holdings::of).await?;
    let status = node.status.lock().clone();
    let position = crate::metrics::RaftPosition {
        id: status.id,
        term: status.term,
        leader: status.leader,
        commit: status.commit,
        applied: status.applied,
    };
    let text = crate::metrics::exposition(&node.metrics, &position, holdings);
    let kind = ringleader_transport::http::OPENMETRICS_CONTENT_TYPE;
    Ok(([(axum::http::header::CONTENT_TYPE, kind)], text).into_response())
}

/// A place among the open event streams, given back when the stream ends.
struct StreamSlot(Arc<std::sync::atomic::AtomicUsize>);

impl StreamSlot {
    /// A place, or 503 when [`Node::max_streams`] are open.
    fn take(node: &Node) -> Result<StreamSlot, ApiError> {
        use std::sync::atomic::Ordering;
        let open = node.streams.fetch_add(1, Ordering::Relaxed);
        let slot = StreamSlot(node.streams.clone());
        if open >= node.max_streams {
            return Err(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "too_many_streams",
                format!(
                    "{} event streams are open, the most this node serves; retry later",
                    node.max_streams
                ),
            ));
        }
        Ok(slot)
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

async fn status(State(node): State<Arc<Node>>) -> Json<Value> {
    let s = node.status.lock().clone();
    Json(serde_json::to_value(s).unwrap_or_default())
}

fn members_json(m: Members) -> Json<Value> {
    Json(serde_json::to_value(m).unwrap_or_default())
}

async fn members_list(State(node): State<Arc<Node>>, who: Who) -> Answer {
    ops::permit(&node, &who.caller(), &Need::Someone)?;
    Ok(members_json(node.members().await?))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MemberBody {
    id: u64,
    peer: String,
}

fn check_member_id(id: u64) -> Result<u64, ApiError> {
    if !(1..=MAX_ID).contains(&id) {
        return Err(ApiError::bad(format!("id {id}: member ids are 1..={MAX_ID}")));
    }
    Ok(id)
}

/// A peer address: `HOST:PORT`, with a port, no spaces, at most 255 bytes.
fn check_peer(peer: &str) -> Result<(), ApiError> {
    let port = peer.rsplit_once(':').map(|(host, port)| (host, port.parse::<u16>()));
    match port {
        Some((host, Ok(p)))
            if !host.is_empty() && p != 0 && peer.len() <= 255 && !peer.contains(char::is_whitespace) =>
        {
            Ok(())
        }
        _ => {
            Err(ApiError::bad(format!("peer {peer:?}: expected HOST:PORT, the new node's --listen address")))
        }
    }
}

async fn member_add(
    State(node): State<Arc<Node>>,
    who: Who,
    b: Result<Json<MemberBody>, JsonRejection>,
) -> Answer {
    let b = body(b)?;
    let id = check_member_id(b.id)?;
    check_peer(&b.peer)?;
    Ok(members_json(ops::change_members(&node, &who.caller(), MemberChange::Add { id, peer: b.peer }).await?))
}

async fn member_remove(State(node): State<Arc<Node>>, who: Who, Path(id): Path<String>) -> Answer {
    let id = id
        .parse::<u64>()
        .map_err(|_| ApiError::bad(format!("member id {id:?}: expected a number 1..={MAX_ID}")))?;
    let id = check_member_id(id)?;
    Ok(members_json(ops::change_members(&node, &who.caller(), MemberChange::Remove { id }).await?))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AuthenticateBody {
    name: String,
    password: String,
}

/// `POST /v1/auth/authenticate`: a user's name and password (while auth is enabled) → a token
/// to send as `Authorization: Bearer TOKEN` ([`crate::users`]).
async fn authenticate(
    State(node): State<Arc<Node>>,
    b: Result<Json<AuthenticateBody>, JsonRejection>,
) -> Answer {
    let b = body(b)?;
    match ops::authenticate(&node, b.name, b.password).await {
        Ok(token) => Ok(Json(json!({ "token": token }))),
        Err(e @ AuthFailed::NotEnabled) => Err(ApiError::conflict("auth_not_enabled", e.to_string())),
        Err(e @ AuthFailed::Invalid) => {
            Err(ApiError::new(StatusCode::UNAUTHORIZED, "auth_failed", e.to_string()))
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GrantBody {
    ttl_ms: u64,
    /// The lease's key, chosen by the client (so that a retried grant answers the same key);
    /// drawn by the node when absent.
    #[serde(default)]
    key: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LeaseBody {
    lease: LeaseId,
    #[serde(default)]
    key: Option<String>,
}

/// The lease key a body carries (`None`: none).
fn lease_key(key: Option<&str>) -> Result<Option<LeaseKey>, ApiError> {
    key.map(|k| LeaseKey::parse(k).map_err(|e| ApiError::bad(format!("key: {e}")))).transpose()
}

async fn lease_grant(
    State(node): State<Arc<Node>>,
    who: Who,
    headers: axum::http::HeaderMap,
    b: Result<Json<GrantBody>, JsonRejection>,
) -> Answer {
    let retry = idempotency_key(&headers)?;
    let b = body(b)?;
    let ttl = check_ms("ttl_ms", b.ttl_ms, MIN_TTL_MS)?;
    let key = match lease_key(b.key.as_deref())? {
        Some(k) => k,
        // A retry of a grant that was applied answers the first grant's lease, whose key only
        // the client can know: a keyed grant must bring its own.
        None if retry.is_some() => {
            return Err(ApiError::bad(
                "a grant with an Idempotency-Key needs a key of its own (64 hex digits, from a random source),                  so that a retry answers the same key",
            ));
        }
        None => LeaseKey::random()
            .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "no_randomness", e.to_string()))?,
    };
    let g = ops::grant(&node, ttl.as_nanos() as Time, &who.caller(), Some(key), retry).await?;
    let key = g.key.map(|k| k.to_string());
    Ok(Json(json!({ "lease": g.lease, "ttl_ms": ms(g.ttl), "key": key })))
}

async fn lease_keepalive(
    State(node): State<Arc<Node>>,
    who: Who,
    headers: axum::http::HeaderMap,
    b: Result<Json<LeaseBody>, JsonRejection>,
) -> Answer {
    let retry = idempotency_key(&headers)?;
    let b = body(b)?;
    let ttl_left = ops::keep_alive(&node, b.lease, &who.with_key(b.key.as_deref())?, retry).await?;
    Ok(Json(json!({ "lease": b.lease, "ttl_ms": ms(ttl_left) })))
}

async fn lease_revoke(
    State(node): State<Arc<Node>>,
    who: Who,
    headers: axum::http::HeaderMap,
    b: Result<Json<LeaseBody>, JsonRejection>,
) -> Answer {
    let retry = idempotency_key(&headers)?;
    let b = body(b)?;
    ops::revoke(&node, b.lease, &who.with_key(b.key.as_deref())?, retry).await?;
    Ok(Json(json!({ "lease": b.lease })))
}

fn parse_id(text: &str) -> Result<LeaseId, ApiError> {
    text.parse().map_err(|_| ApiError::bad(format!("{text:?} is not a lease id (an unsigned integer)")))
}

async fn lease_get(State(node): State<Arc<Node>>, who: Who, Path(id): Path<String>) -> Answer {
    ops::permit(&node, &who.caller(), &Need::Someone)?;
    let lease = parse_id(&id)?;
    let (_, found) = node
        .read(move |m: &StateMachine| m.lease(lease).map(|l| (l.ttl, l.deadline.saturating_sub(m.now()))))
        .await?;
    let (ttl, remaining) = found.ok_or_else(|| ApiError::no_lease(lease))?;
    Ok(Json(json!({ "lease": lease, "ttl_ms": ms(ttl), "remaining_ms": ms(remaining) })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AcquireBody {
    name: String,
    lease: LeaseId,
    #[serde(default)]
    key: Option<String>,
    #[serde(default)]
    wait: Option<bool>,
    #[serde(default)]
    timeout_ms: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReleaseBody {
    name: String,
    lease: LeaseId,
    #[serde(default)]
    key: Option<String>,
}

fn until_of(timeout_ms: Option<u64>) -> Result<Until, ApiError> {
    Ok(match timeout_ms {
        Some(t) => Until::Deadline(tokio::time::Instant::now() + check_ms("timeout_ms", t, 0)?),
        None => Until::Answered,
    })
}

async fn lock_acquire(
    State(node): State<Arc<Node>>,
    who: Who,
    headers: axum::http::HeaderMap,
    b: Result<Json<AcquireBody>, JsonRejection>,
) -> Answer {
    no_idempotency_key(&headers)?;
    let b = body(b)?;
    check_name("name", &b.name)?;
    let until = until_of(b.timeout_ms)?;
    let who = who.with_key(b.key.as_deref())?;
    let Grant { fencing } =
        ops::acquire(&node, &b.name, b.lease, &who, b.wait.unwrap_or(true), until).await?;
    Ok(Json(json!({ "name": b.name, "lease": b.lease, "fencing": fencing })))
}

async fn lock_release(
    State(node): State<Arc<Node>>,
    who: Who,
    headers: axum::http::HeaderMap,
    b: Result<Json<ReleaseBody>, JsonRejection>,
) -> Answer {
    let retry = idempotency_key(&headers)?;
    let b = body(b)?;
    check_name("name", &b.name)?;
    ops::release(&node, &b.name, b.lease, &who.with_key(b.key.as_deref())?, retry).await?;
    Ok(Json(json!({ "name": b.name, "lease": b.lease })))
}

async fn lock_get(State(node): State<Arc<Node>>, who: Who, Path(name): Path<String>) -> Answer {
    check_name("name", &name)?;
    ops::permit(&node, &who.caller(), &Need::name(Access::Read, &name))?;
    let n = name.clone();
    let (_, (holder, waiters)) = node.read(move |m: &StateMachine| (m.holder(&n), m.waiters(&n))).await?;
    let holder = holder.map(|(lease, fencing)| json!({ "lease": lease, "fencing": fencing }));
    Ok(Json(json!({ "name": name, "holder": holder, "waiters": waiters })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CampaignBody {
    election: String,
    lease: LeaseId,
    value: String,
    #[serde(default)]
    key: Option<String>,
    #[serde(default)]
    timeout_ms: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProclaimBody {
    election: String,
    lease: LeaseId,
    value: String,
    #[serde(default)]
    key: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ResignBody {
    election: String,
    lease: LeaseId,
    #[serde(default)]
    key: Option<String>,
}

fn check_value(value: &str) -> Result<(), ApiError> {
    if value.len() > MAX_VALUE {
        return Err(ApiError::bad(format!("value must be at most {MAX_VALUE} bytes")));
    }
    Ok(())
}

async fn campaign(
    State(node): State<Arc<Node>>,
    who: Who,
    headers: axum::http::HeaderMap,
    b: Result<Json<CampaignBody>, JsonRejection>,
) -> Answer {
    no_idempotency_key(&headers)?;
    let b = body(b)?;
    check_name("election", &b.election)?;
    check_value(&b.value)?;
    let until = until_of(b.timeout_ms)?;
    let who = who.with_key(b.key.as_deref())?;
    let leader = ops::campaign(&node, &b.election, b.lease, &who, b.value, until).await?;
    Ok(Json(json!({ "election": b.election, "leader": candidate(&leader) })))
}

async fn proclaim(
    State(node): State<Arc<Node>>,
    who: Who,
    headers: axum::http::HeaderMap,
    b: Result<Json<ProclaimBody>, JsonRejection>,
) -> Answer {
    let retry = idempotency_key(&headers)?;
    let b = body(b)?;
    check_name("election", &b.election)?;
    check_value(&b.value)?;
    let who = who.with_key(b.key.as_deref())?;
    ops::proclaim(&node, &b.election, b.lease, b.value, &who, retry).await?;
    Ok(Json(json!({ "election": b.election, "lease": b.lease })))
}

async fn resign(
    State(node): State<Arc<Node>>,
    who: Who,
    headers: axum::http::HeaderMap,
    b: Result<Json<ResignBody>, JsonRejection>,
) -> Answer {
    let retry = idempotency_key(&headers)?;
    let b = body(b)?;
    check_name("election", &b.election)?;
    ops::resign(&node, &b.election, b.lease, &who.with_key(b.key.as_deref())?, retry).await?;
    Ok(Json(json!({ "election": b.election, "lease": b.lease })))
}

async fn election_get(State(node): State<Arc<Node>>, who: Who, Path(name): Path<String>) -> Answer {
    check_name("election", &name)?;
    ops::permit(&node, &who.caller(), &Need::name(Access::Read, &name))?;
    let e = name.clone();
    let (_, leader) = node.read(move |m: &StateMachine| m.leader(&e)).await?;
    Ok(Json(json!({ "election": name, "leader": leader.as_ref().map(candidate) })))
}

type Events = Sse<
    axum::response::sse::KeepAliveStream<
        std::pin::Pin<Box<dyn Stream<Item = Result<SseEvent, Infallible>> + Send>>,
    >,
>;

/// The entry index a `Last-Event-ID` header names (ids are `INDEX` or `INDEX.K`), if any.
fn last_event_index(headers: &axum::http::HeaderMap) -> Result<Option<u64>, ApiError> {
    let Some(v) = headers.get("last-event-id") else { return Ok(None) };
    let text = v.to_str().unwrap_or("");
    let index = text.split('.').next().unwrap_or("");
    index.parse().map(Some).map_err(|_| {
        ApiError::bad(format!("Last-Event-ID {text:?}: expected an id this API sent (INDEX or INDEX.K)"))
    })
}

/// `observe`: the current leader (a linearizable read), then every change after the index that
/// read saw, in log order. Each event's id is the index of the entry it reflects. A client that
/// reconnects with `Last-Event-ID` gets the current leader first only if it changed after that
/// id: the current leader stands for every change it missed.
async fn observe(
    State(node): State<Arc<Node>>,
    who: Who,
    Path(name): Path<String>,
    headers: axum::http::HeaderMap,
) -> Result<Events, ApiError> {
    check_name("election", &name)?;
    ops::permit(&node, &who.caller(), &Need::name(Access::Read, &name))?;
    let last = last_event_index(&headers)?;
    let slot = StreamSlot::take(&node)?;
    let rx = node.notices.subscribe();
    let e = name.clone();
    let (seen, leader) = node.read(move |m: &StateMachine| m.leader(&e)).await?;
    let first = json!({ "election": name, "leader": leader.as_ref().map(candidate) });
    // With Last-Event-ID, the current state is sent again only if the client may lack it.
    let known = last.is_some_and(|l| l >= seen);
    let first = (!known)
        .then(|| Ok(SseEvent::default().event("leader").id(seen.to_string()).data(first.to_string())));
    let rest = futures_util::stream::unfold((rx, slot), move |(mut rx, slot)| {
        let name = name.clone();
        async move {
            loop {
                match rx.recv().await {
                    Ok(p) => {
                        if let (index, Notice::LeaderChanged { election, leader }) = &*p
                            && *election == name
                            && *index > seen
                        {
                            let data =
                                json!({ "election": election, "leader": leader.as_ref().map(candidate) });
                            let event = SseEvent::default().event("leader").id(index.to_string());
                            return Some((Ok(event.data(data.to_string())), (rx, slot)));
                        }
                    }
                    // A subscriber that fell behind cannot tell what it missed: the stream ends
                    // and the client observes again, with Last-Event-ID (it gets the current
                    // leader first).
                    Err(_) => return None,
                }
            }
        }
    });
    let stream = futures_util::StreamExt::chain(futures_util::stream::iter(first), rest);
    Ok(Sse::new(Box::pin(stream) as _).keep_alive(KeepAlive::default()))
}

/// `watch`: what happens to one lease, until it expires. Each event's id is `INDEX.K`: the
/// entry's index and the event's place among that entry's events. Events are not kept, so a
/// client that reconnects with `Last-Event-ID` older than this node's applied index first gets
/// a `reset` event: the lease's state now (the locks it holds), standing for what it missed.
async fn lease_watch(
    State(node): State<Arc<Node>>,
    who: Who,
    Path(id): Path<String>,
    headers: axum::http::HeaderMap,
) -> Result<Events, ApiError> {
    ops::permit(&node, &who.caller(), &Need::Someone)?;
    let lease = parse_id(&id)?;
    let last = last_event_index(&headers)?;
    let slot = StreamSlot::take(&node)?;
    let rx = node.notices.subscribe();
    let (seen, (alive, held)) = node
        .read(move |m: &StateMachine| {
            let held: Vec<(String, u64)> = m
                .locks()
                .into_iter()
                .filter_map(|n| match m.holder(&n) {
                    Some((l, fencing)) if l == lease => Some((n, fencing)),
                    _ => None,
                })
                .collect();
            (m.lease(lease).is_some(), held)
        })
        .await?;
    if !alive {
        return Err(ApiError::no_lease(lease));
    }
    let reset = last.filter(|&l| l < seen).map(|l| {
        let locks: Vec<Value> =
            held.iter().map(|(n, fencing)| json!({ "name": n, "fencing": fencing })).collect();
        let data = json!({ "last_event_id": l, "applied": seen, "locks": locks });
        Ok(SseEvent::default().event("reset").id(seen.to_string()).data(data.to_string()))
    });
    let skip_to = last.unwrap_or(0);
    let init = (rx, false, (0u64, 0u64), slot);
    let rest = futures_util::stream::unfold(init, move |(mut rx, ended, (at, k), slot)| async move {
        if ended {
            return None;
        }
        let (mut at, mut k) = (at, k);
        loop {
            let p = rx.recv().await.ok()?;
            if p.0 <= skip_to {
                continue;
            }
            let (event, data, end) = match &p.1 {
                Notice::Granted { name, lease: l, fencing, .. } if *l == lease => {
                    ("granted", json!({ "name": name, "fencing": fencing }), false)
                }
                Notice::Lost { name, lease: l, reason, .. } if *l == lease => {
                    let reason = match reason {
                        LossReason::Expired => "expired",
                        LossReason::Revoked => "revoked",
                        LossReason::Wounded => "wounded",
                    };
                    ("lost", json!({ "name": name, "reason": reason }), false)
                }
                Notice::Aborted { name, lease: l, .. } if *l == lease => {
                    ("aborted", json!({ "name": name }), false)
                }
                Notice::Deadlock { cycle, victim } if cycle.contains(&lease) => {
                    ("deadlock", json!({ "cycle": cycle, "victim": victim }), false)
                }
                Notice::LeaseExpired { lease: l, .. } if *l == lease => ("expired", json!({}), true),
                _ => continue,
            };
            if p.0 == at {
                k += 1;
            } else {
                (at, k) = (p.0, 0);
            }
            let event = SseEvent::default().event(event).id(format!("{at}.{k}")).data(data.to_string());
            return Some((Ok(event), (rx, end, (at, k), slot)));
        }
    });
    let stream = futures_util::StreamExt::chain(futures_util::stream::iter(reset), rest);
    Ok(Sse::new(Box::pin(stream) as _).keep_alive(KeepAlive::default()))
}
