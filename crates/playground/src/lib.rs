//! # ringleader-playground
//!
//! The browser playground's server. The page (`crates/viz/assets/playground.html`) builds the
//! arguments `ringleader sim` takes — algorithm, N, ids, latency, loss, workload, faults, or a
//! scenario file's text — and posts them to `POST /run`; the server answers with the run's
//! report, its trace, its repro line and the self-contained viewer page, which the playground
//! shows in a frame. `GET /algorithms` lists what the page may pick.
//!
//! Who runs the simulations is the caller's: [`Runs`]. `ringleader ui` parses the arguments
//! with the command line's own parser and runs every algorithm of `ringleader list`; a
//! learner's crate ([`learner_main`]) runs the learner's algorithm and, to compare, ringleader's
//! algorithms of its family. Bad input is answered with the one line the command line would
//! print (400), so the page and the terminal say the same words.
//!
//! **Explore** (`GET /explore`, the page `crates/viz/assets/explore.html`): you are the
//! scheduler. The model checker's successor function lists the steps enabled in a state
//! (deliver this message, fire this timer, crash this node, ask for the lock); the page picks
//! one, and the path of choices is replayed (`POST /explore`, [`ExploreRequest`]); "find a
//! violation from here" searches breadth-first from the state a path reaches
//! (`POST /explore/find`). A path is the whole state of an exploration, kept in the page's URL.
//!
//! Runs execute on a blocking thread, so the server keeps answering while one runs; a request
//! body is at most 1 MiB.

#![warn(missing_docs)]

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use axum::extract::{Json, State};
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use serde::{Deserialize, Serialize};

mod learner;

pub use learner::{LearnerRuns, learner_main};

/// The most nodes a playground run may have (the viewer is for looking; bigger runs belong
/// to the command line).
pub const MAX_UI_NODES: u32 = 2_000;

/// The page.
pub const PAGE: &str = include_str!("../../viz/assets/playground.html");

/// The explore page.
pub const EXPLORE_PAGE: &str = include_str!("../../viz/assets/explore.html");

/// The longest path an exploration replays (each request replays it from the start).
pub const MAX_PATH: usize = 10_000;

/// `POST /explore` and `POST /explore/find`: the arguments of `ringleader check` and the path
/// of steps chosen so far (each an index among the steps enabled where it was taken).
#[derive(Debug, Deserialize)]
pub struct ExploreRequest {
    /// Arguments after `check` (`["--algo", "central-timeout", "--nodes", "3"]`).
    pub args: Vec<String>,
    /// The steps taken, from the initial state.
    #[serde(default)]
    pub path: Vec<usize>,
}

/// Where a path stands.
#[derive(Debug, Serialize)]
pub struct ExploreResponse {
    /// The path's run drawn by the viewer (a `check --html` page of the path).
    pub html: String,
    /// The steps enabled next, in words, in the order a path indexes them.
    pub enabled: Vec<String>,
    /// The `always` properties violated in the state reached.
    pub violated: Vec<Violated>,
}

/// A property violated, and why.
#[derive(Debug, Serialize)]
pub struct Violated {
    /// The property.
    pub property: String,
    /// Why.
    pub detail: String,
}

/// What "find a violation from here" found.
#[derive(Debug, Serialize)]
pub struct FindResponse {
    /// `found`, `none` (every state reachable from here explored, none violates an `always`
    /// property) or `undecided` (the budget ran out first).
    pub outcome: &'static str,
    /// The whole path to the violating state, when found.
    pub path: Option<Vec<usize>>,
    /// The property violated there, and why.
    pub violated: Option<Violated>,
    /// States explored.
    pub states: usize,
}

/// `POST /run`: the arguments of `ringleader sim`, and optionally a scenario file's text.
#[derive(Debug, Deserialize)]
pub struct RunRequest {
    /// Arguments after `sim`, one per element (`["--algo", "central", "--nodes", "5"]`).
    pub args: Vec<String>,
    /// A scenario file's TOML text, run with the arguments over it.
    #[serde(default)]
    pub scenario: Option<String>,
}

/// What a run answers.
#[derive(Debug, Serialize)]
pub struct RunResponse {
    /// 0: as expected; 2: an unexpected violation (the command line's exit status).
    pub exit: i32,
    /// The verdict line.
    pub verdict: String,
    /// `ringleader sim --json`'s object.
    pub report: serde_json::Value,
    /// The viewer page (`sim --html`).
    pub html: String,
    /// The trace, JSON lines (`sim --trace`).
    pub trace: String,
    /// The command that reproduces the run.
    pub repro: String,
}

impl RunResponse {
    /// The answer for a finished run: its report, trace, repro line and `page`.
    pub fn of(result: &ringleader_sim::RunResult, page: String) -> Result<RunResponse, String> {
        let report = serde_json::to_value(&result.report).map_err(|e| e.to_string())?;
        let mut trace = String::new();
        for r in &result.records {
            trace.push_str(&serde_json::to_string(r).map_err(|e| e.to_string())?);
            trace.push('\n');
        }
        Ok(RunResponse {
            exit: if result.report.as_expected() { 0 } else { 2 },
            verdict: result.report.verdict_line(),
            html: page,
            repro: result.report.repro.clone(),
            report,
            trace,
        })
    }
}

/// An algorithm the page may pick.
#[derive(Clone, Debug, Serialize)]
pub struct AlgorithmEntry {
    /// `--algo`.
    pub name: String,
    /// Its family's name.
    pub family: String,
    /// One line.
    pub summary: String,
}

/// Who runs the playground's simulations.
pub trait Runs: Send + Sync + 'static {
    /// The algorithms the page lists, in order.
    fn algorithms(&self) -> Vec<AlgorithmEntry>;
    /// Runs `args` over the scenario file `scenario` (the page's text, written to a file so
    /// that errors point at its lines); the answer, or the one line naming what was wrong.
    fn run(&self, args: &[String], scenario: Option<&std::path::Path>) -> Result<RunResponse, String>;
    /// Replays `path` on the model `args` describe (`ringleader check`'s arguments).
    fn by_hand(&self, args: &[String], path: &[usize]) -> Result<ExploreResponse, String> {
        let _ = (args, path);
        Err("exploring by hand runs in `ringleader ui`".into())
    }
    /// Searches breadth-first from the state `path` reaches for a violation.
    fn find(&self, args: &[String], path: &[usize]) -> Result<FindResponse, String> {
        let _ = (args, path);
        Err("exploring by hand runs in `ringleader ui`".into())
    }
}

/// What stops the server.
#[derive(Debug, thiserror::Error)]
pub enum PlaygroundError {
    /// `--listen` is not HOST:PORT.
    #[error("--listen {0:?}: expected HOST:PORT such as 127.0.0.1:8080")]
    Address(String),
    /// The address cannot be bound, or the server failed.
    #[error("--listen {addr}: {source}")]
    Io {
        /// The address.
        addr: String,
        /// Why.
        source: std::io::Error,
    },
}

/// Runs one request: the scenario's text written to a file of its own, then `runs`; the
/// file's temporary path is named `scenario` in errors, as the page names it.
pub fn execute(runs: &dyn Runs, req: RunRequest) -> Result<RunResponse, String> {
    let file = match &req.scenario {
        Some(text) if !text.trim().is_empty() => {
            let (path, mut f) = tempfile_named("scenario.toml").map_err(|e| e.to_string())?;
            f.write_all(text.as_bytes()).map_err(|e| e.to_string())?;
            Some(path)
        }
        _ => None,
    };
    let result = runs.run(&req.args, file.as_deref());
    if let Some(path) = &file {
        let _ = std::fs::remove_file(path);
    }
    result.map_err(|line| match &file {
        Some(path) => line.replace(&path.display().to_string(), "scenario"),
        None => line,
    })
}

/// A new file in the temporary directory, named uniquely.
fn tempfile_named(name: &str) -> std::io::Result<(PathBuf, std::fs::File)> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let k = NEXT.fetch_add(1, Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!("ringleader-ui-{}-{k}-{name}", std::process::id()));
    let file = std::fs::File::create(&path)?;
    Ok((path, file))
}

#[derive(Debug, Serialize)]
struct RunError {
    error: String,
}

fn bad_request(error: String) -> Response {
    (StatusCode::BAD_REQUEST, Json(RunError { error })).into_response()
}

type Shared = Arc<dyn Runs>;

async fn run_handler(State(runs): State<Shared>, body: axum::body::Bytes) -> Response {
    let req: RunRequest = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => {
            return bad_request(format!(
                "request body: {e}; expected {{\"args\": [\"--algo\", \"NAME\", …]}}"
            ));
        }
    };
    match tokio::task::spawn_blocking(move || execute(runs.as_ref(), req)).await {
        Ok(Ok(response)) => Json(response).into_response(),
        Ok(Err(line)) => bad_request(line),
        Err(e) => {
            (StatusCode::INTERNAL_SERVER_ERROR, Json(RunError { error: format!("the run failed: {e}") }))
                .into_response()
        }
    }
}

/// Parses an explore request; its one-line error otherwise.
fn explore_request(body: &[u8]) -> Result<ExploreRequest, String> {
    let req: ExploreRequest = serde_json::from_slice(body).map_err(|e| {
        format!("request body: {e}; expected {{\"args\": [\"--algo\", \"NAME\", …], \"path\": [0, 2, …]}}")
    })?;
    if req.path.len() > MAX_PATH {
        return Err(format!("a path of {} steps: at most {MAX_PATH}", req.path.len()));
    }
    Ok(req)
}

/// Runs `work` on a blocking thread and answers with its JSON or its one line (400).
async fn blocking<T: Serialize + Send + 'static>(
    work: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Response {
    match tokio::task::spawn_blocking(work).await {
        Ok(Ok(answer)) => Json(answer).into_response(),
        Ok(Err(line)) => bad_request(line),
        Err(e) => {
            (StatusCode::INTERNAL_SERVER_ERROR, Json(RunError { error: format!("the request failed: {e}") }))
                .into_response()
        }
    }
}

async fn explore_handler(State(runs): State<Shared>, body: axum::body::Bytes) -> Response {
    match explore_request(&body) {
        Ok(req) => blocking(move || runs.by_hand(&req.args, &req.path)).await,
        Err(line) => bad_request(line),
    }
}

async fn find_handler(State(runs): State<Shared>, body: axum::body::Bytes) -> Response {
    match explore_request(&body) {
        Ok(req) => blocking(move || runs.find(&req.args, &req.path)).await,
        Err(line) => bad_request(line),
    }
}

async fn explore_page() -> impl IntoResponse {
    ([(header::CACHE_CONTROL, "no-store")], Html(EXPLORE_PAGE))
}

async fn algorithms(State(runs): State<Shared>) -> Json<Vec<AlgorithmEntry>> {
    Json(runs.algorithms())
}

/// A ring of three nodes, so that browsers asking for an icon get one.
async fn favicon() -> impl IntoResponse {
    const ICON: &str = "<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 16 16'>\
        <circle cx='8' cy='8' r='6' fill='none' stroke='#1f77b4' stroke-width='1.5'/>\
        <circle cx='8' cy='2' r='2' fill='#d62728'/><circle cx='3' cy='11' r='2' fill='#1f77b4'/>\
        <circle cx='13' cy='11' r='2' fill='#1f77b4'/></svg>";
    ([(header::CONTENT_TYPE, "image/svg+xml")], ICON)
}

async fn page() -> impl IntoResponse {
    ([(header::CACHE_CONTROL, "no-store")], Html(PAGE))
}

/// Serves the playground on `listen` (HOST:PORT; port 0 picks a free one) until interrupted,
/// printing `playground http://ADDR/` once it listens.
pub fn serve(listen: &str, runs: impl Runs) -> Result<(), PlaygroundError> {
    let addr: SocketAddr = listen.parse().map_err(|_| PlaygroundError::Address(listen.to_string()))?;
    let io = |source| PlaygroundError::Io { addr: addr.to_string(), source };
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(io)?;
    let runs: Shared = Arc::new(runs);
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr).await.map_err(io)?;
        let local = listener.local_addr().map_err(io)?;
        println!("playground http://{local}/");
        std::io::stdout().flush().map_err(io)?;
        let app = axum::Router::new()
            .route("/", get(page))
            .route("/algorithms", get(algorithms))
            .route("/favicon.ico", get(favicon))
            .route("/run", post(run_handler))
            .route("/explore", get(explore_page).post(explore_handler))
            .route("/explore/find", post(find_handler))
            .layer(axum::extract::DefaultBodyLimit::max(1 << 20))
            .with_state(runs);
        axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await
            .map_err(io)
    })
}
