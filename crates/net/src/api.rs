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
//! On a loopback bind the `Host` header must name the loopback (`localhost`, `127.0.0.1`,
//! `[::1]`, any port): a web page on another site that points a browser at the node (DNS
//! rebinding) sends its own host name and is refused with 421. With an [`ApiToken`] every
//! request but `GET /health` must carry `Authorization: Bearer TOKEN` (401 otherwise).
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
use std::future::Future;
use std::io;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
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
use serde_json::json;
use subtle::ConstantTimeEq;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::NetError;
use crate::metrics::Counters;
use crate::shared::{Input, LockAsk, LockRefusal, Shared};

type AppState = Arc<Shared>;

/// How long a client may wait for the lock when `POST /lock` names no `timeout`.
pub const DEFAULT_LOCK_WAIT: Duration = Duration::from_secs(30);
/// The longest `timeout` a client may ask for.
pub const MAX_LOCK_WAIT: Duration = Duration::from_secs(600);
/// The lease of a grant when `POST /lock` names no `ttl`.
pub const DEFAULT_LOCK_TTL: Duration = Duration::from_secs(30);
/// The shortest and the longest `ttl` a client may ask for.
pub const LOCK_TTL_RANGE: (Duration, Duration) = (Duration::from_millis(100), Duration::from_secs(3600));
/// How long a response may stay unwritable (the client reads nothing) before its connection
/// is closed.
pub const WRITE_STALL_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the API waits for a request head by default (see [`serve`]).
pub const DEFAULT_API_IDLE_TIMEOUT: Duration = Duration::from_secs(10);
/// How many API connections may be open at once by default (SSE subscribers included).
pub const DEFAULT_API_MAX_CONNECTIONS: usize = 256;
/// How long a refused connection (over the limit) is given to take its 503 answer.
const REFUSAL_TIMEOUT: Duration = Duration::from_secs(1);

/// How the API treats its connections (from [`NodeConfig`](crate::NodeConfig)).
#[derive(Clone, Copy, Debug)]
pub struct ConnectionLimits {
    /// A connection that sends no complete request head for this long is closed.
    pub idle_timeout: Duration,
    /// A connection whose response stays unwritable (the client reads nothing) this long is
    /// closed.
    pub write_stall_timeout: Duration,
    /// Connections open at once; one more is answered 503 and closed.
    pub max_connections: usize,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            idle_timeout: DEFAULT_API_IDLE_TIMEOUT,
            write_stall_timeout: WRITE_STALL_TIMEOUT,
            max_connections: DEFAULT_API_MAX_CONNECTIONS,
        }
    }
}

/// The answer to a connection over the limit (it is closed after it).
const OVER_LIMIT_ANSWER: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
connection: close\r\nretry-after: 1\r\ncontent-length: 63\r\n\r\n\
{\"error\":\"too many open connections to this node's API; retry\"}";

const ENDPOINTS: &str = "GET /health, GET /ready, GET /status, POST /election, POST /lock, \
                         POST /lock/HANDLE/keepalive, DELETE /lock/HANDLE, GET /events, GET /metrics";

/// The bearer token API clients must present (`Authorization: Bearer TOKEN`).
#[derive(Clone)]
pub struct ApiToken(String);

impl std::fmt::Debug for ApiToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiToken(…)")
    }
}

impl ApiToken {
    /// The shortest token accepted.
    pub const MIN_LEN: usize = 16;

    /// A token from its text: at least [`ApiToken::MIN_LEN`] visible ASCII characters.
    pub fn new(text: &str) -> Result<ApiToken, String> {
        let t = text.trim();
        if t.len() < Self::MIN_LEN {
            return Err(format!("the token has {} characters; give at least {}", t.len(), Self::MIN_LEN));
        }
        if !t.bytes().all(|b| b.is_ascii_graphic()) {
            return Err("the token must be visible ASCII characters (no spaces)".into());
        }
        Ok(ApiToken(t.to_string()))
    }

    /// Reads a token file (its content, surrounding white space ignored).
    pub fn read_file(path: &Path) -> Result<ApiToken, NetError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| NetError::Io { what: format!("API token file {}", path.display()), source })?;
        ApiToken::new(&text).map_err(|reason| NetError::ApiToken { path: path.to_path_buf(), reason })
    }

    /// True when `presented` is this token (compared in constant time).
    pub fn matches(&self, presented: &str) -> bool {
        self.0.as_bytes().ct_eq(presented.as_bytes()).into()
    }

    /// A credential derived from this token for `purpose`: HMAC-SHA-256 keyed by the token over
    /// `purpose`, in lower-case hex. Every holder of the token derives the same value, and the
    /// value does not reveal the token (the etcd gRPC API hands it out as its auth token).
    pub fn derive(&self, purpose: &str) -> String {
        use hmac::{Hmac, Mac};
        let mut mac =
            Hmac::<sha2::Sha256>::new_from_slice(self.0.as_bytes()).expect("HMAC takes keys of any length");
        mac.update(purpose.as_bytes());
        mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// A 4xx/5xx answer with a JSON error.
pub struct ApiError(StatusCode, String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, Json(json!({ "error": self.1 }))).into_response()
    }
}

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
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(shared)
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

/// What [`serve_router`] counts: a node's [`Shared`] counts into its metrics; another server
/// (the coordination service) can use [`ConnectionCounters`].
pub trait ConnectionCounts: Send + Sync + 'static {
    /// The number of connections open now, kept by the server.
    fn open_connections(&self) -> &AtomicU64;
    /// A connection was refused (503, closed) because too many were open.
    fn refused_over_limit(&self);
    /// A connection was closed because its client read nothing for the write-stall timeout.
    fn write_stalled(&self);
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

/// Plain connection counters, for a server without a node's metrics.
#[derive(Debug, Default)]
pub struct ConnectionCounters {
    /// Connections open now.
    pub open: AtomicU64,
    /// Connections refused over the limit.
    pub over_limit: AtomicU64,
    /// Connections closed for a write stall.
    pub write_stalls: AtomicU64,
}

impl ConnectionCounts for ConnectionCounters {
    fn open_connections(&self) -> &AtomicU64 {
        &self.open
    }
    fn refused_over_limit(&self) {
        self.over_limit.fetch_add(1, Ordering::Relaxed);
    }
    fn write_stalled(&self) {
        self.write_stalls.fetch_add(1, Ordering::Relaxed);
    }
}

/// Serves `app` on `listener` until shutdown, hardened as a node's API is: HTTP/1.1 with the
/// [`ConnectionLimits`] (idle and write-stall timeouts, a cap on open connections), the `Host`
/// check on a loopback bind, and the bearer token when there is one. `label` names the server
/// in the rare log line (an accept that failed).
pub async fn serve_router<C: ConnectionCounts>(
    listener: TcpListener,
    mut app: Router,
    counts: Arc<C>,
    token: Option<ApiToken>,
    limits: ConnectionLimits,
    shutdown: CancellationToken,
    label: &str,
) {
    let loopback = listener.local_addr().is_ok_and(|a| a.ip().is_loopback());
    if let Some(token) = token {
        app = app.layer(axum::middleware::from_fn_with_state(Arc::new(token), bearer));
    }
    if loopback {
        app = app.layer(axum::middleware::from_fn(loopback_host));
    }
    app = app.layer(axum::middleware::from_fn(same_origin));
    // Refusals in progress are bounded too: beyond this many, an extra connection is just closed.
    let refusing = Arc::new(AtomicUsize::new(0));
    let max_refusing = (limits.max_connections / 4).max(16);
    loop {
        let accepted = tokio::select! {
            _ = shutdown.cancelled() => return,
            a = listener.accept() => a,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                eprintln!("[{label}] HTTP API accept failed: {e}");
                // Out of descriptors, typically: give connections a moment to close.
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        if counts.open_connections().load(Ordering::Relaxed) >= limits.max_connections as u64 {
            counts.refused_over_limit();
            if refusing.load(Ordering::Relaxed) < max_refusing {
                refusing.fetch_add(1, Ordering::Relaxed);
                let refusing = refusing.clone();
                tokio::spawn(async move {
                    let _ = tokio::time::timeout(REFUSAL_TIMEOUT, refuse(stream)).await;
                    refusing.fetch_sub(1, Ordering::Relaxed);
                });
            }
            continue;
        }
        let open = OpenConnection::new(counts.clone());
        let service = hyper_util::service::TowerToHyperService::new(app.clone());
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            let mut http = hyper::server::conn::http1::Builder::new();
            http.timer(hyper_util::rt::TokioTimer::new()).header_read_timeout(limits.idle_timeout);
            let guard = StallGuard::new(stream, limits.write_stall_timeout, open.counts.clone());
            let io = hyper_util::rt::TokioIo::new(guard);
            let connection = http.serve_connection(io, service);
            tokio::select! {
                _ = connection => {}
                _ = shutdown.cancelled() => {}
            }
            drop(open);
        });
    }
}

/// Answers a connection over the limit with 503 and closes it: the answer, a half-close, then
/// whatever the client sent is read and discarded until it closes too (closing with unread
/// data would reset the connection and could lose the answer).
async fn refuse(mut stream: TcpStream) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    if stream.write_all(OVER_LIMIT_ANSWER).await.is_err() || stream.shutdown().await.is_err() {
        return;
    }
    let mut sink = [0u8; 1024];
    while matches!(stream.read(&mut sink).await, Ok(n) if n > 0) {}
}

/// One open API connection, counted in [`ConnectionCounts::open_connections`] while it lives.
struct OpenConnection<C: ConnectionCounts> {
    counts: Arc<C>,
}

impl<C: ConnectionCounts> OpenConnection<C> {
    fn new(counts: Arc<C>) -> OpenConnection<C> {
        counts.open_connections().fetch_add(1, Ordering::Relaxed);
        OpenConnection { counts }
    }
}

impl<C: ConnectionCounts> Drop for OpenConnection<C> {
    fn drop(&mut self) {
        self.counts.open_connections().fetch_sub(1, Ordering::Relaxed);
    }
}

/// A TCP stream whose writes fail once they have been blocked for `limit` (the client reads
/// nothing: an SSE subscriber that stopped reading, a slow reader).
/// Each stall is counted once in `api_write_stalls`.
struct StallGuard<C: ConnectionCounts> {
    io: TcpStream,
    limit: Duration,
    stalled: Option<Pin<Box<tokio::time::Sleep>>>,
    counts: Arc<C>,
    counted: bool,
}

impl<C: ConnectionCounts> StallGuard<C> {
    fn new(io: TcpStream, limit: Duration, counts: Arc<C>) -> StallGuard<C> {
        StallGuard { io, limit, stalled: None, counts, counted: false }
    }

    fn pending<T>(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
        let limit = self.limit;
        let sleep = self.stalled.get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match sleep.as_mut().poll(cx) {
            Poll::Ready(()) => {
                if !self.counted {
                    self.counted = true;
                    self.counts.write_stalled();
                }
                Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the client read nothing of the response for too long",
                )))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<C: ConnectionCounts> AsyncRead for StallGuard<C> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl<C: ConnectionCounts> AsyncWrite for StallGuard<C> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        match Pin::new(&mut this.io).poll_write(cx, buf) {
            Poll::Pending => this.pending(cx),
            done => {
                this.stalled = None;
                done
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        match Pin::new(&mut this.io).poll_flush(cx) {
            Poll::Pending => this.pending(cx),
            done => {
                this.stalled = None;
                done
            }
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

/// True when a `Host` header value names the loopback.
pub fn is_loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split_once(']').map(|(h, _)| h).unwrap_or(rest),
        None => host.rsplit_once(':').map(|(h, _)| h).unwrap_or(host),
    };
    name.eq_ignore_ascii_case("localhost")
        || name.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Why a request a browser sent on behalf of another site's page must be refused, if it must:
/// a method that changes something (anything but GET, HEAD and OPTIONS) whose `Origin` is not
/// this server's own `Host`, or that the browser marks `Sec-Fetch-Site: cross-site`. A page on
/// another site can make an operator's browser send a plain POST (`Content-Type: text/plain`
/// needs no preflight) to a node on the loopback; browsers always name the page's origin on
/// such a request. Clients that are not browsers send neither header and pass.
pub fn cross_site(
    method: &str,
    host: Option<&str>,
    origin: Option<&str>,
    fetch_site: Option<&str>,
) -> Option<String> {
    if matches!(method, "GET" | "HEAD" | "OPTIONS") {
        return None;
    }
    if fetch_site.is_some_and(|s| s.eq_ignore_ascii_case("cross-site")) {
        return Some("a cross-site request from a browser (Sec-Fetch-Site: cross-site)".into());
    }
    let origin = origin?;
    let authority = origin.split_once("://").map(|(_, a)| a).unwrap_or(origin).trim_end_matches('/');
    match host {
        Some(h) if h.eq_ignore_ascii_case(authority) => None,
        _ => Some(format!(
            "a request from the page of another origin ({origin}) than this server ({})",
            host.unwrap_or("?")
        )),
    }
}

async fn same_origin(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let h = request.headers();
    let text = |name| h.get(name).and_then(|v: &header::HeaderValue| v.to_str().ok());
    let why = cross_site(
        request.method().as_str(),
        text(header::HOST),
        text(header::ORIGIN),
        text(header::HeaderName::from_static("sec-fetch-site")),
    );
    match why {
        Some(why) => {
            ApiError(StatusCode::FORBIDDEN, format!("{why} is refused: it may change state")).into_response()
        }
        None => next.run(request).await,
    }
}

async fn loopback_host(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let host = request.headers().get(header::HOST).map(|h| h.to_str().unwrap_or("?").to_string());
    match host {
        Some(h) if !is_loopback_host(&h) => ApiError(
            StatusCode::MISDIRECTED_REQUEST,
            format!(
                "Host {h:?} is not this node: a loopback API answers only Host localhost, 127.0.0.1 or [::1]"
            ),
        )
        .into_response(),
        _ => next.run(request).await,
    }
}

async fn bearer(
    State(token): State<Arc<ApiToken>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    if request.uri().path() == "/health" {
        return next.run(request).await;
    }
    let presented = request.headers().get(header::AUTHORIZATION).map(|v| v.to_str().unwrap_or(""));
    let why = match presented.map(bearer_credentials) {
        Some(Some(t)) if token.matches(t.trim()) => return next.run(request).await,
        Some(Some(_)) => "wrong bearer token",
        Some(None) => "the Authorization header must be `Bearer TOKEN`",
        None => "this API needs `Authorization: Bearer TOKEN` (the node's --api-token-file)",
    };
    let mut response = ApiError(StatusCode::UNAUTHORIZED, why.into()).into_response();
    response.headers_mut().insert(header::WWW_AUTHENTICATE, header::HeaderValue::from_static("Bearer"));
    response
}

/// The credentials of an `Authorization` value in the Bearer scheme (RFC 6750), whose scheme
/// name is case-insensitive (RFC 9110 §11.1): `Bearer T`, `bearer T` and `BEARER T` all give
/// `T`; any other scheme gives `None`.
fn bearer_credentials(value: &str) -> Option<&str> {
    let (scheme, credentials) = value.trim_start().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then_some(credentials)
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

/// The node's metrics in the OpenMetrics text format (which Prometheus reads): every family
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

/// The content type of [`exposition`].
pub const OPENMETRICS_CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

async fn metrics(State(s): State<AppState>) -> Response {
    ([(header::CONTENT_TYPE, OPENMETRICS_CONTENT_TYPE)], exposition(&s)).into_response()
}

#[cfg(test)]
mod tests {
    use super::{ApiToken, bearer_credentials, cross_site, is_loopback_host};

    #[test]
    fn a_browser_request_from_another_site_may_read_but_not_change_anything() {
        let host = Some("127.0.0.1:8001");
        // The attack: a page on evil.example posts to the node.
        assert!(cross_site("POST", host, Some("http://evil.example"), None).is_some());
        assert!(cross_site("DELETE", host, Some("http://127.0.0.1:9999"), None).is_some());
        assert!(cross_site("POST", host, None, Some("cross-site")).is_some());
        // A page the node served itself, a read, and a client that is not a browser pass.
        assert_eq!(cross_site("POST", host, Some("http://127.0.0.1:8001"), Some("same-origin")), None);
        assert_eq!(cross_site("GET", host, Some("http://evil.example"), Some("cross-site")), None);
        assert_eq!(cross_site("POST", host, None, None), None);
    }

    #[test]
    fn the_bearer_scheme_name_is_case_insensitive() {
        for ok in ["Bearer tok", "bearer tok", "BEARER tok", "  Bearer tok"] {
            assert_eq!(bearer_credentials(ok), Some("tok"), "{ok:?}");
        }
        for bad in ["Basic dG9rOg==", "Bearertok", "tok", "", "Bearer"] {
            assert_eq!(bearer_credentials(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn only_loopback_names_pass_the_host_check() {
        for ok in ["127.0.0.1:8001", "localhost:8001", "LOCALHOST", "[::1]:8001", "127.0.0.1", "127.3.4.5:80"]
        {
            assert!(is_loopback_host(ok), "{ok}");
        }
        for bad in
            ["evil.example", "evil.example:8001", "10.0.0.1:8001", "localhost.evil.example", "[::2]:80", ""]
        {
            assert!(!is_loopback_host(bad), "{bad}");
        }
    }

    #[test]
    fn tokens_are_checked_and_compared_whole() {
        assert!(ApiToken::new("short").unwrap_err().contains("at least 16"));
        assert!(ApiToken::new("with a space in the middle").unwrap_err().contains("no spaces"));
        let t = ApiToken::new(" 0123456789abcdef0123\n").unwrap();
        assert!(t.matches("0123456789abcdef0123"));
        assert!(!t.matches("0123456789abcdef012"));
        assert!(!t.matches("0123456789abcdef01234"));
        assert!(!t.matches(""));
        assert_eq!(format!("{t:?}"), "ApiToken(…)");
    }
}
