//! The HTTP API of a node (documented with curl examples in docs/HTTP-API.md).
//!
//! | method and path | what it does |
//! |---|---|
//! | `GET /status` | id, algorithm, role, leader, term, peers (connected, suspected), counters |
//! | `POST /election` | asks the algorithm to start an election (`Request::StartElection`) |
//! | `POST /lock[?timeout=2s]` | acquires the critical section; answers with the fencing token |
//! | `DELETE /lock` | releases it |
//! | `GET /events` | server-sent events: every event the algorithm emits |
//! | `GET /metrics` | the counters in Prometheus text format |
//!
//! Errors are 4xx answers with a JSON body `{"error": "..."}` saying what was wrong.
//!
//! On a loopback bind the `Host` header must name the loopback (`localhost`, `127.0.0.1`,
//! `[::1]`, any port): a web page on another site that points a browser at the node (DNS
//! rebinding) sends its own host name and is refused with 421.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{RawQuery, State};
use axum::http::{StatusCode, header};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Json, Response};
use axum::routing::{get, post};
use futures_util::Stream;
use ringleader_algorithms::Family;
use ringleader_core::Request;
use serde_json::json;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::shared::{Input, Shared};

type AppState = Arc<Shared>;

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
        .route("/status", get(status))
        .route("/election", post(election))
        .route("/lock", post(lock).delete(unlock))
        .route("/events", get(events))
        .route("/metrics", get(metrics))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(shared)
}

/// Serves the API on `listener` until shutdown.
pub async fn serve(listener: TcpListener, shared: Arc<Shared>, shutdown: CancellationToken) {
    let loopback = listener.local_addr().is_ok_and(|a| a.ip().is_loopback());
    let mut app = router(shared.clone());
    if loopback {
        app = app.layer(axum::middleware::from_fn(loopback_host));
    }
    let result =
        axum::serve(listener, app).with_graceful_shutdown(async move { shutdown.cancelled().await }).await;
    if let Err(e) = result {
        eprintln!("[id {}] HTTP API stopped: {e}", shared.id);
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

async fn not_found() -> ApiError {
    ApiError(
        StatusCode::NOT_FOUND,
        "no such endpoint; endpoints: GET /status, POST /election, POST /lock, DELETE /lock, GET /events, GET /metrics"
            .into(),
    )
}

async fn method_not_allowed() -> ApiError {
    ApiError(
        StatusCode::METHOD_NOT_ALLOWED,
        "method not allowed; endpoints: GET /status, POST /election, POST /lock, DELETE /lock, GET /events, GET /metrics"
            .into(),
    )
}

async fn status(State(s): State<AppState>) -> Json<crate::metrics::StatusDocument> {
    Json(s.status())
}

fn no_query(q: &Option<String>) -> Result<(), ApiError> {
    match q.as_deref() {
        None | Some("") => Ok(()),
        Some(q) => Err(ApiError(
            StatusCode::BAD_REQUEST,
            format!("unexpected query {q:?}; this endpoint takes none"),
        )),
    }
}

async fn election(State(s): State<AppState>, RawQuery(q): RawQuery) -> Result<Response, ApiError> {
    no_query(&q)?;
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
    s.api_tx
        .send(input)
        .await
        .map_err(|_| ApiError(StatusCode::SERVICE_UNAVAILABLE, "the node is shutting down".into()))
}

/// Reads `?timeout=DURATION` (the only parameter `POST /lock` takes).
fn lock_timeout(q: &Option<String>) -> Result<Option<Duration>, ApiError> {
    let mut timeout = None;
    for pair in q.as_deref().unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        if k != "timeout" {
            return Err(ApiError(
                StatusCode::BAD_REQUEST,
                format!("unknown query parameter {k:?}; POST /lock takes timeout=DURATION"),
            ));
        }
        let ns = ringleader_algorithms::params::parse_duration(v).ok_or_else(|| {
            ApiError(
                StatusCode::BAD_REQUEST,
                format!("timeout {v:?} is not a duration; use e.g. 250ms, 2s (bare numbers are ms)"),
            )
        })?;
        timeout = Some(Duration::from_nanos(ns));
    }
    Ok(timeout)
}

async fn lock(State(s): State<AppState>, RawQuery(q): RawQuery) -> Result<Response, ApiError> {
    lock_family(&s)?;
    let timeout = lock_timeout(&q)?;
    let (tx, rx) = oneshot::channel();
    send(&s, Input::Acquire(tx)).await?;
    let answer = match timeout {
        Some(t) => match tokio::time::timeout(t, rx).await {
            Ok(a) => a,
            Err(_) => {
                return Err(ApiError(
                    StatusCode::REQUEST_TIMEOUT,
                    format!("not granted within {t:?}; a late grant is released at once"),
                ));
            }
        },
        None => rx.await,
    };
    match answer {
        Ok(Ok(fencing)) => Ok(Json(json!({ "id": s.id, "fencing": fencing })).into_response()),
        Ok(Err(e)) => Err(ApiError(StatusCode::CONFLICT, e)),
        Err(_) => Err(ApiError(StatusCode::SERVICE_UNAVAILABLE, "the node is shutting down".into())),
    }
}

async fn unlock(State(s): State<AppState>, RawQuery(q): RawQuery) -> Result<Response, ApiError> {
    no_query(&q)?;
    lock_family(&s)?;
    let (tx, rx) = oneshot::channel();
    send(&s, Input::Release(tx)).await?;
    match rx.await {
        Ok(Ok(fencing)) => Ok(Json(json!({ "id": s.id, "released": fencing })).into_response()),
        Ok(Err(e)) => Err(ApiError(StatusCode::CONFLICT, e)),
        Err(_) => Err(ApiError(StatusCode::SERVICE_UNAVAILABLE, "the node is shutting down".into())),
    }
}

async fn events(State(s): State<AppState>) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>> {
    let rx = s.events.subscribe();
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        let item = match rx.recv().await {
            Ok(e) => {
                let data = serde_json::to_string(&e).unwrap_or_default();
                SseEvent::default().event(e.event.name()).data(data)
            }
            Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                SseEvent::default().event("lagged").data(format!("{{\"missed\":{n}}}"))
            }
            Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
        };
        Some((Ok(item), rx))
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}

async fn metrics(State(s): State<AppState>) -> Response {
    let mut text = String::new();
    for (name, help, value) in s.counters.list() {
        text.push_str(&format!(
            "# HELP ringleader_{name} {help}\n# TYPE ringleader_{name} counter\nringleader_{name}{{id=\"{}\",algorithm=\"{}\"}} {value}\n",
            s.id, s.algorithm
        ));
    }
    let st = s.status();
    text.push_str(&format!(
        "# HELP ringleader_leader The leader this node believes in (0: unknown).\n# TYPE ringleader_leader gauge\nringleader_leader{{id=\"{}\"}} {}\n",
        s.id,
        st.leader.unwrap_or(0)
    ));
    for p in &st.peers {
        text.push_str(&format!(
            "ringleader_peer_connected{{id=\"{}\",peer=\"{}\"}} {}\nringleader_peer_suspected{{id=\"{}\",peer=\"{}\"}} {}\n",
            s.id, p.id, p.connected as u8, s.id, p.id, p.suspected as u8
        ));
    }
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response()
}

#[cfg(test)]
mod tests {
    use super::is_loopback_host;

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
}
