//! The HTTP API of a node (documented with curl examples in docs/HTTP-API.md).
//!
//! | method and path | what it does |
//! |---|---|
//! | `GET /health` | 200 while the process serves (needs no token) |
//! | `GET /ready` | 200 when the node can do its job (see [`readiness`]), else 503 saying why |
//! | `GET /status` | id, algorithm, role, leader, term, peers (connected, suspected), counters |
//! | `POST /election` | asks the algorithm to start an election (`Request::StartElection`) |
//! | `POST /lock[?timeout=30s&ttl=30s]` | queues for the lock; answers with a handle, the fencing token and the lease |
//! | `POST /lock/{handle}/keepalive` | renews the lease of the lock `handle` holds |
//! | `DELETE /lock/{handle}` | releases it |
//! | `GET /events` | server-sent events with ids (resume with `Last-Event-ID`) |
//! | `GET /metrics` | Prometheus / OpenMetrics text exposition |
//!
//! Errors are 4xx/5xx answers with a JSON body `{"error": "..."}` saying what was wrong.
//!
//! The API is served by the peer transport's hardened HTTP server
//! ([`ringleader_transport::http::serve_router`]). On a loopback bind the `Host` header must
//! name the loopback (`localhost`, `127.0.0.1`, `[::1]`, any port): a web page on another site
//! that points a browser at the node (DNS rebinding) sends its own host name and is refused
//! with 421. With an [`ApiToken`] every request but `GET /health` must carry
//! `Authorization: Bearer TOKEN` (401 otherwise).
//!
//! No web page can make the operator's browser change anything (CSRF): a request that may change
//! state (any method but GET, HEAD, OPTIONS) from a page of another origin (`Origin`) is refused
//! with 403 by the transport's HTTP server, and one that says neither `Content-Type:
//! application/json` nor `X-Ringleader: …` is refused with 415 ([`form_refusal`]): those are
//! the only requests a page can send without the browser's CORS preflight, which the node never
//! grants.
//!
//! Connections are served by hyper's HTTP/1.1 server with a header-read timeout
//! ([`NodeConfig::api_idle_timeout`](crate::NodeConfig::api_idle_timeout)): a connection that
//! sends no complete request head within it — idle between requests, or trickling its headers —
//! is closed. A response the client stops reading for
//! [`NodeConfig::api_write_stall_timeout`](crate::NodeConfig::api_write_stall_timeout)
//! (default [`WRITE_STALL_TIMEOUT`]) ends its connection (`api_write_stalls`). At most
//! [`NodeConfig::api_max_connections`](crate::NodeConfig::api_max_connections) (default
//! [`DEFAULT_API_MAX_CONNECTIONS`]) connections are open at once: one more is answered
//! `503` with `Connection: close` and closed (`api_connections_over_limit`).

use std::borrow::Cow;
use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::{Path as UrlPath, RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Json, Response};
use axum::routing::{delete, get, post};
use futures_util::{Stream, StreamExt};
use ringleader_algorithms::Family;
use ringleader_core::Request;
use ringleader_transport::http::{ApiError, ConnectionCounts, OPENMETRICS_CONTENT_TYPE, serve_router};
use serde_json::json;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::metrics::Counters;
use crate::shared::{Input, LockAsk, LockRefusal, Shared};

/// The API's settings as [`NodeConfig`](crate::NodeConfig) takes them, from the transport's
/// HTTP server.
pub use ringleader_transport::http::{
    ApiToken, ConnectionLimits, DEFAULT_API_IDLE_TIMEOUT, DEFAULT_API_MAX_CONNECTIONS, WRITE_STALL_TIMEOUT,
};

type AppState = Arc<Shared>;

/// How long a client may wait for the lock when `POST /lock` names no `timeout`.
pub const DEFAULT_LOCK_WAIT: Duration = Duration::from_secs(30);
/// The longest `timeout` a client may ask for.
pub const MAX_LOCK_WAIT: Duration = Duration::from_secs(600);
/// The lease of a grant when `POST /lock` names no `ttl`.
pub const DEFAULT_LOCK_TTL: Duration = Duration::from_secs(30);
/// The shortest and the longest `ttl` a client may ask for.
pub const LOCK_TTL_RANGE: (Duration, Duration) = (Duration::from_millis(100), Duration::from_secs(3600));

const ENDPOINTS: &str = "GET /health, GET /ready, GET /status, POST /election, POST /lock, \
                         POST /lock/HANDLE/keepalive, DELETE /lock/HANDLE, GET /events, GET /metrics";

/// The router of one node.
pub fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/health", get(health))
        .route("/ready", get(ready))
        .route("/status", get(status))
        .route("/election", post(election))
        .route("/lock", post(lock).delete(unlock_without_handle))
        .route("/lock/{handle}", delete(unlock))
        .route("/lock/{handle}/keepalive", post(keep_alive))
        .route("/events", get(events))
        .route("/metrics", get(metrics))
        .route_layer(axum::middleware::from_fn(not_a_form))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(shared)
}

/// The header a client may send instead of `Content-Type: application/json` on a request that
/// changes state (any value): a browser sends it only after a CORS preflight, which the node
/// never grants.
pub const CLIENT_HEADER: &str = "x-ringleader";

/// Why a request that may change state must be refused as one a web page could have made a
/// browser send (`None`: it may go on). A request with any method but GET, HEAD and OPTIONS
/// must say `Content-Type: application/json` or carry the [`CLIENT_HEADER`]: a page on another
/// site can make a browser send a POST without a preflight only with no content type or a
/// form's (`text/plain`, `application/x-www-form-urlencoded`, `multipart/form-data`) and no
/// custom header. (A foreign `Origin` is refused before, by the transport's HTTP server.)
pub fn form_refusal(method: &str, content_type: Option<&str>, client_header: bool) -> Option<String> {
    if matches!(method, "GET" | "HEAD" | "OPTIONS") || client_header {
        return None;
    }
    let media = content_type.map(|c| c.split(';').next().unwrap_or("").trim());
    match media {
        Some(m) if m.eq_ignore_ascii_case("application/json") => None,
        _ => Some(format!(
            "{method} with {} is refused: a request that changes state must say `Content-Type: \
             application/json` or carry an `X-Ringleader` header (so that no web page can send it \
             through a browser)",
            match content_type {
                Some(c) => format!("Content-Type {c:?}"),
                None => "no Content-Type".to_string(),
            }
        )),
    }
}

async fn not_a_form(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let h = request.headers();
    let content_type = h.get(header::CONTENT_TYPE).map(|v| v.to_str().unwrap_or("?"));
    match form_refusal(request.method().as_str(), content_type, h.contains_key(CLIENT_HEADER)) {
        Some(why) => ApiError(StatusCode::UNSUPPORTED_MEDIA_TYPE, why).into_response(),
        None => next.run(request).await,
    }
}

/// Serves the API on `listener` until shutdown: HTTP/1.1 with the [`ConnectionLimits`], the
/// Host check on a loopback bind, the bearer token when there is one.
pub async fn serve(
    listener: TcpListener,
    shared: Arc<Shared>,
    token: Option<ApiToken>,
    limits: ConnectionLimits,
    shutdown: CancellationToken,
) {
    let label = format!("id {}", shared.id);
    serve_router(listener, router(shared.clone()), shared, token, limits, shutdown, &label).await
}

impl ConnectionCounts for Shared {
    fn open_connections(&self) -> &AtomicU64 {
        &self.api_connections
    }
    fn refused_over_limit(&self) {
        Counters::bump(&self.counters.api_connections_over_limit);
    }
    fn write_stalled(&self) {
        Counters::bump(&self.counters.api_write_stalls);
    }
}

async fn not_found() -> ApiError {
    ApiError(StatusCode::NOT_FOUND, format!("no such endpoint; endpoints: {ENDPOINTS}"))
}

async fn method_not_allowed() -> ApiError {
    ApiError(StatusCode::METHOD_NOT_ALLOWED, format!("method not allowed; endpoints: {ENDPOINTS}"))
}

async fn health(State(s): State<AppState>) -> Json<serde_json::Value> {
    Json(json!({ "id": s.id, "status": "alive" }))
}

/// Whether the node can do its job, and why (or why not): an election or detector node is
/// ready when it knows a leader that is itself or a peer it is connected to; any other node
/// when it is connected to every peer.
pub fn readiness(s: &Shared) -> (bool, String) {
    let st = s.status();
    match s.family {
        Family::Election | Family::Detector => match st.leader {
            None => (false, "no leader known yet".into()),
            Some(l) if l == s.id => (true, "this node is the leader".into()),
            Some(l) if st.peers.iter().any(|p| p.id == l && p.connected) => {
                (true, format!("leader {l} is known and connected"))
            }
            Some(l) => (false, format!("leader {l} is known but not connected")),
        },
        _ => {
            let down: Vec<String> =
                st.peers.iter().filter(|p| !p.connected).map(|p| p.id.to_string()).collect();
            if down.is_empty() {
                (true, "every peer is connected".into())
            } else {
                (false, format!("not connected to peer(s) {}", down.join(", ")))
            }
        }
    }
}

async fn ready(State(s): State<AppState>) -> Response {
    let (ok, why) = readiness(&s);
    let code = if ok { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    (code, Json(json!({ "id": s.id, "ready": ok, "why": why }))).into_response()
}

async fn status(State(s): State<AppState>) -> Json<crate::metrics::StatusDocument> {
    Json(s.status())
}

/// The query's `key=value` pairs, each key one of `allowed` at most once.
fn query(q: &Option<String>, endpoint: &str, allowed: &[&str]) -> Result<Vec<(String, String)>, ApiError> {
    let mut seen: Vec<(String, String)> = Vec::new();
    for pair in q.as_deref().unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        if !allowed.contains(&k) {
            let takes = if allowed.is_empty() {
                "takes no query".to_string()
            } else {
                format!(
                    "takes {}",
                    allowed.iter().map(|a| format!("{a}=DURATION")).collect::<Vec<_>>().join(", ")
                )
            };
            return Err(ApiError(
                StatusCode::BAD_REQUEST,
                format!("unknown query parameter {k:?}; {endpoint} {takes}"),
            ));
        }
        if seen.iter().any(|(s, _)| s == k) {
            return Err(ApiError(StatusCode::BAD_REQUEST, format!("query parameter {k:?} given twice")));
        }
        seen.push((k.to_string(), v.to_string()));
    }
    Ok(seen)
}

/// Reads a duration parameter and checks it lies in `range`.
fn duration(key: &str, v: &str, range: (Duration, Duration)) -> Result<Duration, ApiError> {
    let ns = ringleader_algorithms::params::parse_duration(v).ok_or_else(|| {
        ApiError(
            StatusCode::BAD_REQUEST,
            format!("{key} {v:?} is not a duration; use e.g. 250ms, 2s (bare numbers are ms)"),
        )
    })?;
    let d = Duration::from_nanos(ns);
    if d < range.0 || d > range.1 {
        return Err(ApiError(
            StatusCode::BAD_REQUEST,
            format!("{key} {v}: give {:?}..={:?}", range.0, range.1),
        ));
    }
    Ok(d)
}

async fn election(State(s): State<AppState>, RawQuery(q): RawQuery) -> Result<Response, ApiError> {
    query(&q, "POST /election", &[])?;
    if s.family != Family::Election {
        return Err(ApiError(
            StatusCode::CONFLICT,
            format!("{} is a {} algorithm; it holds no elections", s.algorithm, s.family.name()),
        ));
    }
    send(&s, Input::Request(Request::StartElection)).await?;
    Ok((StatusCode::ACCEPTED, Json(json!({ "id": s.id, "requested": "election" }))).into_response())
}

fn lock_family(s: &Shared) -> Result<(), ApiError> {
    if s.family != Family::Mutex {
        return Err(ApiError(
            StatusCode::CONFLICT,
            format!("{} is a {} algorithm; it grants no locks", s.algorithm, s.family.name()),
        ));
    }
    Ok(())
}

async fn send(s: &Shared, input: Input<Infallible, Infallible>) -> Result<(), ApiError> {
    s.api_tx.send(input).await.map_err(|_| shutting_down())
}

fn shutting_down() -> ApiError {
    ApiError(StatusCode::SERVICE_UNAVAILABLE, "the node is shutting down".into())
}

fn refused(r: LockRefusal) -> Response {
    match &r {
        LockRefusal::NotHolder { .. } => ApiError(StatusCode::FORBIDDEN, r.to_string()).into_response(),
        LockRefusal::Blocked { peer, since_ns, why, .. } => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({ "error": r.to_string(), "peer": peer, "since_ns": since_ns, "reason": why })),
        )
            .into_response(),
        LockRefusal::NoRandomness => ApiError(StatusCode::SERVICE_UNAVAILABLE, r.to_string()).into_response(),
    }
}

/// A handle as `POST /lock` hands them out: 32 lowercase hex digits.
fn check_handle(handle: &str) -> Result<(), ApiError> {
    if handle.len() == 32 && handle.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        Ok(())
    } else {
        Err(ApiError(
            StatusCode::BAD_REQUEST,
            "malformed lock handle: give the 32 hex digits POST /lock answered".into(),
        ))
    }
}

async fn lock(State(s): State<AppState>, RawQuery(q): RawQuery) -> Result<Response, ApiError> {
    lock_family(&s)?;
    let mut wait = DEFAULT_LOCK_WAIT;
    let mut ttl = DEFAULT_LOCK_TTL;
    for (k, v) in query(&q, "POST /lock", &["timeout", "ttl"])? {
        match k.as_str() {
            "timeout" => wait = duration("timeout", &v, (Duration::from_millis(1), MAX_LOCK_WAIT))?,
            _ => ttl = duration("ttl", &v, LOCK_TTL_RANGE)?,
        }
    }
    let (reply, rx) = oneshot::channel();
    send(&s, Input::Acquire(LockAsk { ttl, reply })).await?;
    match tokio::time::timeout(wait, rx).await {
        Err(_) => {
            let st = s.status();
            let gone: Vec<String> = st
                .peers
                .iter()
                .filter(|p| !p.connected || p.suspected)
                .map(|p| format!("{}{}", p.id, if p.suspected { " (suspected)" } else { " (not connected)" }))
                .collect();
            let hint = if gone.is_empty() {
                String::new()
            } else {
                format!("; peers unreachable or suspected now: {}", gone.join(", "))
            };
            Err(ApiError(
                StatusCode::REQUEST_TIMEOUT,
                format!("not granted within {wait:?}{hint}; a late grant is given back at once"),
            ))
        }
        Ok(Err(_)) => Err(shutting_down()),
        Ok(Ok(Err(r))) => Ok(refused(r)),
        Ok(Ok(Ok(g))) => Ok(Json(json!({
            "id": s.id,
            "fencing": g.fencing,
            "handle": g.handle,
            "ttl_ms": g.ttl.as_millis() as u64,
        }))
        .into_response()),
    }
}

async fn unlock_without_handle(State(s): State<AppState>) -> Result<Response, ApiError> {
    lock_family(&s)?;
    Err(ApiError(
        StatusCode::BAD_REQUEST,
        "missing lock handle: DELETE /lock/HANDLE with the handle POST /lock answered".into(),
    ))
}

async fn unlock(
    State(s): State<AppState>,
    UrlPath(handle): UrlPath<String>,
    RawQuery(q): RawQuery,
) -> Result<Response, ApiError> {
    query(&q, "DELETE /lock/HANDLE", &[])?;
    lock_family(&s)?;
    check_handle(&handle)?;
    let (reply, rx) = oneshot::channel();
    send(&s, Input::Release { handle, reply }).await?;
    match rx.await {
        Ok(Ok(fencing)) => Ok(Json(json!({ "id": s.id, "released": fencing })).into_response()),
        Ok(Err(r)) => Ok(refused(r)),
        Err(_) => Err(shutting_down()),
    }
}

async fn keep_alive(
    State(s): State<AppState>,
    UrlPath(handle): UrlPath<String>,
    RawQuery(q): RawQuery,
) -> Result<Response, ApiError> {
    query(&q, "POST /lock/HANDLE/keepalive", &[])?;
    lock_family(&s)?;
    check_handle(&handle)?;
    let (reply, rx) = oneshot::channel();
    send(&s, Input::KeepAlive { handle, reply }).await?;
    match rx.await {
        Ok(Ok(g)) => {
            Ok(Json(json!({ "id": s.id, "fencing": g.fencing, "ttl_ms": g.ttl.as_millis() as u64 }))
                .into_response())
        }
        Ok(Err(r)) => Ok(refused(r)),
        Err(_) => Err(shutting_down()),
    }
}

fn sse(e: &crate::shared::NodeEvent, members: &[u64]) -> SseEvent {
    SseEvent::default().id(e.seq.to_string()).event(e.name()).data(e.to_json(members).to_string())
}

async fn events(
    State(s): State<AppState>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    let last = match headers.get("last-event-id") {
        None => None,
        Some(v) => Some(v.to_str().ok().and_then(|v| v.trim().parse::<u64>().ok()).ok_or_else(|| {
            ApiError(
                StatusCode::BAD_REQUEST,
                "Last-Event-ID must be the number of an event this node sent".into(),
            )
        })?),
    };
    // Copy the backlog and subscribe under the log's lock: nothing missed, nothing twice.
    let (backlog, rx) = {
        let log = s.event_log.lock();
        let mut backlog = Vec::new();
        if let Some(last) = last {
            let oldest = log.recent.front().map_or(log.last_seq + 1, |e| e.seq);
            if last > log.last_seq {
                backlog.push(SseEvent::default().event("reset").data(
                    json!({ "reason": "this node restarted since that id; its event ids began again at 1" })
                        .to_string(),
                ));
            } else if last + 1 < oldest {
                backlog.push(
                    SseEvent::default()
                        .event("lagged")
                        .data(json!({ "missed": oldest - last - 1 }).to_string()),
                );
            }
            let from = if last > log.last_seq { 0 } else { last };
            backlog.extend(log.recent.iter().filter(|e| e.seq > from).map(|e| sse(e, &s.members)));
        }
        (backlog, s.events.subscribe())
    };
    let members = s.members.clone();
    let live = futures_util::stream::unfold((rx, members), |(mut rx, members)| async move {
        let item = match rx.recv().await {
            Ok(e) => sse(&e, &members),
            Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                SseEvent::default().event("lagged").data(format!("{{\"missed\":{n}}}"))
            }
            Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
        };
        Some((Ok(item), (rx, members)))
    });
    let stream = futures_util::stream::iter(backlog.into_iter().map(Ok)).chain(live);
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

/// The node's metrics in the OpenMetrics text format (which Prometheus reads,
/// [`OPENMETRICS_CONTENT_TYPE`]): every family
/// with HELP and TYPE, counters ending in `_total`, lock wait and hold histograms in seconds,
/// gauges for the leader, the term and the lock holder. Every sample carries the node's `id`
/// and `algorithm` labels.
pub fn exposition(s: &Shared) -> String {
    use prometheus_client::metrics::counter::ConstCounter;
    use prometheus_client::metrics::family::Family as Labelled;
    use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
    use prometheus_client::registry::{Registry, Unit};
    let labels = [
        (Cow::Borrowed("id"), Cow::Owned(s.id.to_string())),
        (Cow::Borrowed("algorithm"), Cow::Borrowed(s.algorithm)),
    ];
    let mut r = Registry::with_prefix_and_labels("ringleader", labels.into_iter());
    for (name, help, value) in s.counters.list() {
        r.register(name, help.trim_end_matches('.'), ConstCounter::new(value));
    }
    let st = s.status();
    let int = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    r.register(
        "leader",
        "The leader this node believes in (0: unknown)",
        ConstGauge::new(int(st.leader.unwrap_or(0))),
    );
    r.register(
        "term",
        "The term of the last leader announcement (0: none or no terms)",
        ConstGauge::new(int(st.term.unwrap_or(0))),
    );
    r.register(
        "lock_holder",
        "1 while this node holds the lock for one of its clients, else 0",
        ConstGauge::new(i64::from(st.holding.is_some())),
    );
    r.register(
        "lock_fencing",
        "The fencing token of the grant this node holds (0: none)",
        ConstGauge::new(int(st.holding.unwrap_or(0))),
    );
    r.register(
        "api_connections",
        "HTTP API connections open now (SSE subscribers included)",
        ConstGauge::new(int(s.api_connections.load(Ordering::Relaxed))),
    );
    r.register(
        "lock_clients_waiting",
        "Clients of this node queued for the lock",
        ConstGauge::new(int(st.clients_waiting as u64)),
    );
    let connected = Labelled::<Vec<(String, String)>, Gauge>::default();
    let suspected = Labelled::<Vec<(String, String)>, Gauge>::default();
    for p in &st.peers {
        let peer = vec![("peer".to_string(), p.id.to_string())];
        connected.get_or_create(&peer).set(i64::from(p.connected));
        suspected.get_or_create(&peer).set(i64::from(p.suspected));
    }
    r.register("peer_connected", "1 while the outgoing connection to the peer is up", connected);
    r.register("peer_suspected", "1 while the algorithm suspects the peer", suspected);
    r.register_with_unit(
        "lock_wait",
        "Time from a client's POST /lock reaching the node to its grant",
        Unit::Seconds,
        s.lock_times.wait.clone(),
    );
    r.register_with_unit(
        "lock_hold",
        "Time from a grant to its release or the expiry of its lease",
        Unit::Seconds,
        s.lock_times.hold.clone(),
    );
    let mut text = String::new();
    // Writing into a String cannot fail.
    let _ = prometheus_client::encoding::text::encode(&mut text, &r);
    text
}

async fn metrics(State(s): State<AppState>) -> Response {
    ([(header::CONTENT_TYPE, OPENMETRICS_CONTENT_TYPE)], exposition(&s)).into_response()
}

#[cfg(test)]
mod tests {
    use super::form_refusal;

    #[test]
    fn only_json_or_the_client_header_may_change_state() {
        // What a page can make a browser send without a preflight.
        for form in
            [None, Some("text/plain"), Some("application/x-www-form-urlencoded"), Some("multipart/form-data")]
        {
            assert!(form_refusal("POST", form, false).is_some(), "{form:?}");
            assert!(form_refusal("DELETE", form, false).is_some(), "{form:?}");
        }
        assert!(
            form_refusal("POST", Some("text/plain"), false).unwrap().contains("Content-Type \"text/plain\"")
        );
        for ok in ["application/json", "Application/JSON; charset=utf-8"] {
            assert_eq!(form_refusal("POST", Some(ok), false), None, "{ok}");
        }
        assert_eq!(form_refusal("POST", None, true), None);
        assert_eq!(form_refusal("GET", Some("text/plain"), false), None);
    }
}
