//! `ringleader fenced-resource`: a small HTTP resource that only accepts writes carrying a
//! fencing token at least as high as the highest it has accepted for that lock name, so that a
//! holder whose lock was taken over (its lease ran out while it was paused, say) cannot write
//! after the next holder did. `ringleader service-load --resource URL` writes through it; the
//! Docker fault tests (`deploy/nemesis.sh`, `deploy/service-fault-test.sh`) check its log with `--check`.
//!
//! API: `POST /write` with `{"lock": "orders", "token": 42, "client": "client-3"}` answers 200
//! `{"accepted": true, "highest": 42}`, or 409 `{"accepted": false, "highest": 57}` for a stale
//! token; `GET /stats` answers `{"accepted": A, "rejected": R}`. Every decision is appended to
//! the log (JSON lines: `at_ns`, `lock`, `token`, `client`, `accepted`, and `stale` when the
//! writer declared a write past its lease on purpose) in the order it was taken. `--check`
//! judges a log with [`ringleader_judge::fenced_resource`], against the clients' history when
//! given one.

use std::collections::HashMap;
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::{Context as _, bail};
use axum::extract::{Json, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use clap::Args;
use ringleader_judge::fenced_resource::{LogLine, check_log};
use ringleader_judge::linearizability::lock::parse_history;
use serde::{Deserialize, Serialize};

/// A resource that rejects writes with stale fencing tokens (test tooling)
///
/// Serves POST /write {"lock", "token", "client"}: accepted (200) when the token is at least
/// the highest accepted for that lock, else rejected (409); GET /stats counts both. Every
/// decision is logged to --log.
///
/// With --check LOG: judges such a log and exits 2 on any anomaly: an accepted token below an
/// earlier accepted one, or two clients accepted with one token. With --history H as well (the
/// clients' lock history, as `ringleader verify --history` reads it): every accepted write must
/// carry a token the history granted to its writer for that lock, and must not be accepted
/// after the writer's own release or lease end returned, nor after another holder was granted a
/// higher token (unless the write declared itself stale: a deliberate test of the fence).
///
/// Examples:
///   ringleader fenced-resource --listen 127.0.0.1:4300 --log writes.jsonl
///   ringleader fenced-resource --check writes.jsonl --history history.jsonl
#[derive(Args, Debug, Clone)]
#[command(verbatim_doc_comment)]
pub struct FencedResourceArgs {
    /// Where to serve (host:port; a loopback address unless --insecure).
    #[arg(long, default_value = "127.0.0.1:4300", value_name = "ADDR", conflicts_with = "check")]
    pub listen: String,
    /// Append every decision to this file (JSON lines).
    #[arg(long, value_name = "FILE", required_unless_present = "check")]
    pub log: Option<PathBuf>,
    /// Check a log written by this resource instead of serving.
    #[arg(long, value_name = "LOG")]
    pub check: Option<PathBuf>,
    /// With --check: judge the log against this client lock history (JSON lines).
    #[arg(long, value_name = "FILE", requires = "check")]
    pub history: Option<PathBuf>,
    /// With --check --history: how much later than a return a write must be accepted to count
    /// as after it (the resource and the clients read different processes' clocks).
    #[arg(long, value_name = "DURATION", default_value = "10ms", value_parser = crate::service_client::parse_wait, requires = "history")]
    pub clock_slack: std::time::Duration,
    /// Allow a non-loopback --listen address (the resource has no authentication).
    #[arg(long)]
    pub insecure: bool,
}

/// What the resource decided about one write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// The token is at least the highest accepted for the lock: the write is done.
    Accepted,
    /// The token is below the highest accepted for the lock: a stale holder.
    Rejected {
        /// The highest token accepted for the lock.
        highest: u64,
    },
}

/// The fencing rule: per lock name, the highest token accepted so far, and counts.
#[derive(Debug, Default)]
pub struct Fence {
    highest: HashMap<String, u64>,
    /// Writes accepted.
    pub accepted: u64,
    /// Writes rejected as stale.
    pub rejected: u64,
}

impl Fence {
    /// Decides about a write to `lock` carrying `token`; an equal token is the same holder
    /// writing again and is accepted.
    pub fn offer(&mut self, lock: &str, token: u64) -> Decision {
        match self.highest.get_mut(lock) {
            Some(h) if token < *h => {
                self.rejected += 1;
                Decision::Rejected { highest: *h }
            }
            Some(h) => {
                *h = token;
                self.accepted += 1;
                Decision::Accepted
            }
            None => {
                self.highest.insert(lock.to_string(), token);
                self.accepted += 1;
                Decision::Accepted
            }
        }
    }

    /// The highest token accepted for `lock`.
    #[cfg(test)]
    pub fn highest(&self, lock: &str) -> Option<u64> {
        self.highest.get(lock).copied()
    }
}

struct Shared {
    fence: Fence,
    log: std::io::BufWriter<std::fs::File>,
}

type AppState = Arc<Mutex<Shared>>;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Write {
    lock: String,
    token: u64,
    #[serde(default)]
    client: String,
    /// The writer writes after its lease ran out on purpose (a test of the fence).
    #[serde(default)]
    stale: bool,
}

#[derive(Serialize)]
struct Answer {
    accepted: bool,
    highest: u64,
}

async fn write(State(state): State<AppState>, body: axum::body::Bytes) -> axum::response::Response {
    let w: Write = match serde_json::from_slice(&body) {
        Ok(w) => w,
        Err(e) => {
            let error = format!(
                "body: {e}; expected {{\"lock\": NAME, \"token\": N, \"client\": WHO, \"stale\": BOOL}}"
            );
            return (StatusCode::BAD_REQUEST, Json(serde_json::json!({ "error": error }))).into_response();
        }
    };
    let mut s = state.lock().unwrap_or_else(|p| p.into_inner());
    let decision = s.fence.offer(&w.lock, w.token);
    let line = LogLine {
        at_ns: ringleader_client::history::unix_ns(),
        lock: w.lock.clone(),
        token: w.token,
        client: w.client,
        accepted: decision == Decision::Accepted,
        stale: w.stale,
    };
    let logged = serde_json::to_string(&line)
        .map_err(std::io::Error::other)
        .and_then(|t| writeln!(s.log, "{t}"))
        .and_then(|()| s.log.flush());
    if let Err(e) = logged {
        let error = format!("cannot log the write: {e}");
        return (StatusCode::INTERNAL_SERVER_ERROR, Json(serde_json::json!({ "error": error })))
            .into_response();
    }
    match decision {
        Decision::Accepted => Json(Answer { accepted: true, highest: w.token }).into_response(),
        Decision::Rejected { highest } => {
            (StatusCode::CONFLICT, Json(Answer { accepted: false, highest })).into_response()
        }
    }
}

async fn stats(State(state): State<AppState>) -> Json<serde_json::Value> {
    let s = state.lock().unwrap_or_else(|p| p.into_inner());
    Json(serde_json::json!({ "accepted": s.fence.accepted, "rejected": s.fence.rejected }))
}

fn check(path: &Path, history: Option<&Path>, slack: std::time::Duration) -> crate::CommandResult {
    let text = std::fs::read_to_string(path).with_context(|| format!("--check {}", path.display()))?;
    let history = match history {
        Some(h) => {
            let text = std::fs::read_to_string(h).with_context(|| format!("--history {}", h.display()))?;
            Some(parse_history(&text).with_context(|| format!("--history {}", h.display()))?)
        }
        None => None,
    };
    let slack_ns = u64::try_from(slack.as_nanos()).unwrap_or(u64::MAX);
    let c = check_log(&text, history.as_deref(), slack_ns)
        .with_context(|| format!("--check {}", path.display()))?;
    println!(
        "fenced resource: {} writes accepted, {} rejected as stale, on {} lock{}",
        c.accepted,
        c.rejected,
        c.locks,
        if c.locks == 1 { "" } else { "s" }
    );
    if c.stale_accepted > 0 {
        println!(
            "fenced resource: {} declared stale writes accepted before the newer holder wrote (fencing cannot refuse those)",
            c.stale_accepted
        );
    }
    let judged = if c.against_history {
        "accepted tokens never went backwards, one writer per token, every accepted write made while its writer held the lock by the history"
    } else {
        "accepted tokens never went backwards, one writer per token"
    };
    if c.anomalies.is_empty() {
        println!("fenced resource: {judged}");
        return Ok(crate::ExitStatus::Ok);
    }
    for a in c.anomalies.iter().take(10) {
        println!("fenced resource: VIOLATED: {a}");
    }
    if c.anomalies.len() > 10 {
        println!("fenced resource: … and {} more anomalies", c.anomalies.len() - 10);
    }
    Ok(crate::ExitStatus::Violation)
}

/// Runs `ringleader fenced-resource`.
pub fn run(args: FencedResourceArgs) -> crate::CommandResult {
    if let Some(path) = &args.check {
        return check(path, args.history.as_deref(), args.clock_slack);
    }
    let Some(log_path) = &args.log else { bail!("--log FILE: where to log the writes") };
    let addr: SocketAddr = crate::node::resolve(&args.listen, "--listen")?;
    if !addr.ip().is_loopback() && !args.insecure {
        bail!("--listen {addr}: the resource has no authentication; bind loopback, or give --insecure");
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log_path)
        .with_context(|| format!("--log {}", log_path.display()))?;
    let state: AppState =
        Arc::new(Mutex::new(Shared { fence: Fence::default(), log: std::io::BufWriter::new(file) }));
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    rt.block_on(async move {
        let listener =
            tokio::net::TcpListener::bind(addr).await.with_context(|| format!("--listen {addr}"))?;
        eprintln!("fenced resource on http://{}, log {}", listener.local_addr()?, log_path.display());
        let app =
            axum::Router::new().route("/write", post(write)).route("/stats", get(stats)).with_state(state);
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            })
            .await?;
        Ok(crate::ExitStatus::Ok)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_below_the_highest_accepted_is_rejected_per_lock() {
        let mut f = Fence::default();
        assert_eq!(f.offer("a", 5), Decision::Accepted);
        assert_eq!(f.offer("a", 5), Decision::Accepted, "the same holder writes again");
        assert_eq!(f.offer("a", 9), Decision::Accepted);
        assert_eq!(f.offer("a", 7), Decision::Rejected { highest: 9 });
        assert_eq!(f.offer("b", 1), Decision::Accepted, "another lock has its own highest");
        assert_eq!(f.offer("a", 10), Decision::Accepted);
        assert_eq!((f.accepted, f.rejected), (5, 1));
        assert_eq!((f.highest("a"), f.highest("b"), f.highest("c")), (Some(10), Some(1), None));
    }

    /// The log the server writes is the log the judge reads; whatever the fence decides, the
    /// judge finds no anomaly in it (its checks are in `ringleader_judge::fenced_resource`).
    #[test]
    fn what_the_fence_decides_the_log_check_agrees_with() {
        let mut f = Fence::default();
        let mut log = Vec::new();
        for (lock, token) in [("a", 1), ("a", 4), ("a", 2), ("b", 7), ("a", 4), ("b", 6), ("a", 5)] {
            let accepted = f.offer(lock, token) == Decision::Accepted;
            let line =
                LogLine { at_ns: 1, lock: lock.into(), token, client: "c".into(), accepted, stale: false };
            log.push(serde_json::to_string(&line).unwrap());
        }
        let c = check_log(&log.join("\n"), None, 0).unwrap();
        assert_eq!((c.accepted, c.rejected, c.anomalies.len()), (f.accepted, f.rejected, 0));
    }
}
