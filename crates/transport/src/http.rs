//! Serving an HTTP API, hardened the same way for every real node: the textbook node's API
//! (`ringleader_net::api`) and the coordination service's (`ringleader_service::http`) are both
//! served by [`serve_router`].
//!
//! - At most [`ConnectionLimits::max_connections`] connections are open at once: one more is
//!   answered `503` with `Connection: close` and closed ([`ConnectionCounts::refused_over_limit`]).
//! - A connection that sends no complete request head within
//!   [`ConnectionLimits::idle_timeout`] (idle between requests, or trickling its headers) is
//!   closed (hyper's header-read timeout); a response the client stops reading for
//!   [`ConnectionLimits::write_stall_timeout`] ends its connection
//!   ([`ConnectionCounts::write_stalled`]).
//! - On a loopback bind the `Host` header must name the loopback ([`is_loopback_host`]): a web
//!   page that points a browser at the server (DNS rebinding) is refused with 421.
//! - A browser request from another site's page that may change state is refused with 403
//!   ([`cross_site`]).
//! - With an [`ApiToken`] every request but `GET /health` must carry `Authorization: Bearer
//!   TOKEN` (401 otherwise).
//!
//! Both APIs' `/metrics` pages answer in the OpenMetrics text format
//! ([`OPENMETRICS_CONTENT_TYPE`]).

use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Json, Response};
use serde_json::json;
use subtle::ConstantTimeEq;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// The content type of an OpenMetrics text exposition (what `/metrics` answers with).
pub const OPENMETRICS_CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// How long a response may stay unwritable (the client reads nothing) before its connection
/// is closed.
pub const WRITE_STALL_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the API waits for a request head by default (see [`serve_router`]).
pub const DEFAULT_API_IDLE_TIMEOUT: Duration = Duration::from_secs(10);
/// How many API connections may be open at once by default (SSE subscribers included).
pub const DEFAULT_API_MAX_CONNECTIONS: usize = 256;
/// How long a refused connection (over the limit) is given to take its 503 answer.
const REFUSAL_TIMEOUT: Duration = Duration::from_secs(1);

/// How an API server treats its connections.
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
    pub fn new(text: &str) -> Result<ApiToken, BadToken> {
        let t = text.trim();
        if t.len() < Self::MIN_LEN {
            return Err(BadToken::TooShort { len: t.len() });
        }
        if !t.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(BadToken::NotVisibleAscii);
        }
        Ok(ApiToken(t.to_string()))
    }

    /// Reads a token file (its content, surrounding white space ignored), refusing one that
    /// another user owns or that others may read: whoever can read the token is root.
    pub fn read_file(path: &Path) -> Result<ApiToken, TokenError> {
        use crate::auth::Exposed;
        use std::io::Read;
        let io = |source| TokenError::Io { path: path.to_path_buf(), source };
        let file = std::fs::File::open(path).map_err(io)?;
        match crate::auth::private(&file).map_err(io)? {
            Ok(()) => {}
            Err(Exposed::Owner { owner, me }) => {
                return Err(TokenError::Owner { path: path.to_path_buf(), owner, me });
            }
            Err(Exposed::Permissions { mode }) => {
                return Err(TokenError::Permissions { path: path.to_path_buf(), mode });
            }
        }
        // A token is short; a file far larger is not one (and is not read whole).
        let mut text = String::new();
        file.take(4097).read_to_string(&mut text).map_err(io)?;
        if text.len() > 4096 {
            return Err(TokenError::Invalid { path: path.to_path_buf(), reason: BadToken::TooLong });
        }
        ApiToken::new(&text).map_err(|reason| TokenError::Invalid { path: path.to_path_buf(), reason })
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

/// What a bearer credential is checked against: a node's [`ApiToken`], or a server's own
/// check (the coordination service also takes the tokens its users authenticated for).
pub trait BearerCheck: Send + Sync + 'static {
    /// True when `presented` is a credential this server accepts.
    fn accepts(&self, presented: &str) -> bool;
}

impl BearerCheck for ApiToken {
    fn accepts(&self, presented: &str) -> bool {
        self.matches(presented)
    }
}

/// The certificate (DER) a TLS client presented, in each of its requests' extensions.
#[derive(Clone, Debug)]
pub struct ClientCertificate(pub Arc<[u8]>);

/// Why a text is not a usable API token.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BadToken {
    /// Fewer than [`ApiToken::MIN_LEN`] characters once trimmed.
    #[error("the token has {len} characters; give at least {}", ApiToken::MIN_LEN)]
    TooShort {
        /// Its length.
        len: usize,
    },
    /// A character that is not visible ASCII inside the token.
    #[error("the token must be visible ASCII characters (no spaces)")]
    NotVisibleAscii,
    /// Over 4 KiB: not a token.
    #[error("the file is over 4096 bytes; a token is one short line")]
    TooLong,
}

/// Why an API token file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// The file could not be read.
    #[error("API token file {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why it could not be read.
        source: std::io::Error,
    },
    /// Another user owns the file (and could have chosen the token, or read it).
    #[error("API token file {}: owned by uid {owner}, not by this user (uid {me}); use a token file of your own", path.display())]
    Owner {
        /// The file.
        path: PathBuf,
        /// Its owner.
        owner: u32,
        /// This process's effective uid.
        me: u32,
    },
    /// Others may read the file.
    #[error("API token file {}: readable by others (mode {mode:o}); chmod 600 it", path.display())]
    Permissions {
        /// The file.
        path: PathBuf,
        /// Its mode bits.
        mode: u32,
    },
    /// The file holds no usable token.
    #[error("API token file {}: {reason}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong with its token.
        reason: BadToken,
    },
}

/// A 4xx/5xx answer with a JSON body `{"error": "..."}`.
pub struct ApiError(pub StatusCode, pub String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, Json(json!({ "error": self.1 }))).into_response()
    }
}

/// What [`serve_router`] counts: a textbook node counts into its node's metrics; another server
/// (the coordination service) can use [`ConnectionCounters`].
pub trait ConnectionCounts: Send + Sync + 'static {
    /// The number of connections open now, kept by the server.
    fn open_connections(&self) -> &AtomicU64;
    /// A connection was refused (503, closed) because too many were open.
    fn refused_over_limit(&self);
    /// A connection was closed because its client read nothing for the write-stall timeout.
    fn write_stalled(&self);
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
    app: Router,
    counts: Arc<C>,
    token: Option<ApiToken>,
    limits: ConnectionLimits,
    shutdown: CancellationToken,
    label: &str,
) {
    let bearer = token.map(|t| Arc::new(t) as Arc<dyn BearerCheck>);
    serve_router_tls(listener, app, counts, bearer, limits, None, shutdown, label).await
}

/// [`serve_router`], over TLS when `tls` is given ([`crate::tls::server_config`]): each
/// connection's TLS handshake must end within the idle timeout, and a connection that is not
/// TLS (or whose client certificate is refused) is closed before any request is read; the
/// certificate a client presented is in its requests' extensions ([`ClientCertificate`]). Over
/// the connection limit a TLS connection is closed without an answer (a plain 503 would not be
/// TLS). With `bearer`, every request but `/health` needs a bearer credential it accepts.
#[allow(clippy::too_many_arguments)]
pub async fn serve_router_tls<C: ConnectionCounts>(
    listener: TcpListener,
    mut app: Router,
    counts: Arc<C>,
    bearer: Option<Arc<dyn BearerCheck>>,
    limits: ConnectionLimits,
    tls: Option<Arc<rustls::ServerConfig>>,
    shutdown: CancellationToken,
    label: &str,
) {
    let tls = tls.map(tokio_rustls::TlsAcceptor::from);
    let loopback = listener.local_addr().is_ok_and(|a| a.ip().is_loopback());
    if let Some(check) = bearer {
        app = app.layer(axum::middleware::from_fn_with_state(check, require_bearer));
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
            if tls.is_none() && refusing.load(Ordering::Relaxed) < max_refusing {
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
        let app = app.clone();
        let shutdown = shutdown.clone();
        let tls = tls.clone();
        tokio::spawn(async move {
            let mut http = hyper::server::conn::http1::Builder::new();
            http.timer(hyper_util::rt::TokioTimer::new()).header_read_timeout(limits.idle_timeout);
            let guard = StallGuard::new(stream, limits.write_stall_timeout, open.counts.clone());
            match tls {
                None => {
                    let connection = http.serve_connection(hyper_util::rt::TokioIo::new(guard), service);
                    tokio::select! {
                        _ = connection => {}
                        _ = shutdown.cancelled() => {}
                    }
                }
                Some(acceptor) => {
                    let session = tokio::select! {
                        s = tokio::time::timeout(limits.idle_timeout, acceptor.accept(guard)) => s,
                        _ = shutdown.cancelled() => return,
                    };
                    // Not TLS, a refused client certificate, or too slow: closed, unanswered.
                    let Ok(Ok(session)) = session else { return };
                    let certificate = session.get_ref().1.peer_certificates().and_then(|c| c.first());
                    let service = match certificate {
                        Some(der) => {
                            let cert = ClientCertificate(Arc::from(der.as_ref()));
                            hyper_util::service::TowerToHyperService::new(app.layer(axum::Extension(cert)))
                        }
                        None => service,
                    };
                    let connection = http.serve_connection(hyper_util::rt::TokioIo::new(session), service);
                    tokio::select! {
                        _ = connection => {}
                        _ = shutdown.cancelled() => {}
                    }
                }
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

async fn require_bearer(
    State(check): State<Arc<dyn BearerCheck>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    if request.uri().path() == "/health" {
        return next.run(request).await;
    }
    let presented = request.headers().get(header::AUTHORIZATION).map(|v| v.to_str().unwrap_or(""));
    let why = match presented.map(bearer_credentials) {
        Some(Some(t)) if check.accepts(t.trim()) => return next.run(request).await,
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
pub fn bearer_credentials(value: &str) -> Option<&str> {
    let (scheme, credentials) = value.trim_start().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then_some(credentials)
}

#[cfg(test)]
mod tests {
    use super::{ApiToken, BadToken, bearer_credentials, cross_site, is_loopback_host};

    #[test]
    fn a_token_file_others_may_read_or_another_user_owns_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let path = std::env::temp_dir().join(format!("ringleader-token-test-{}", std::process::id()));
        std::fs::write(&path, "0123456789abcdef0123\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = ApiToken::read_file(&path).unwrap_err().to_string();
        assert!(err.contains("readable by others (mode 644); chmod 600 it"), "{err}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(ApiToken::read_file(&path).unwrap().matches("0123456789abcdef0123"));
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            std::os::unix::fs::chown(&path, Some(65534), None).unwrap();
            let err = ApiToken::read_file(&path).unwrap_err().to_string();
            assert!(err.contains("owned by uid 65534, not by this user (uid 0)"), "{err}");
        } else {
            println!("skipped the owner check: it needs root to give the file to another user");
        }
        let _ = std::fs::remove_file(&path);
    }

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
        assert!(ApiToken::new("short").unwrap_err().to_string().contains("at least 16"));
        assert_eq!(ApiToken::new("with a space in the middle").unwrap_err(), BadToken::NotVisibleAscii);
        let t = ApiToken::new(" 0123456789abcdef0123\n").unwrap();
        assert!(t.matches("0123456789abcdef0123"));
        assert!(!t.matches("0123456789abcdef012"));
        assert!(!t.matches("0123456789abcdef01234"));
        assert!(!t.matches(""));
        assert_eq!(format!("{t:?}"), "ApiToken(…)");
    }
}
