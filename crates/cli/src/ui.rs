//! `ringleader ui`: a local web playground for every algorithm.
//!
//! The page (`crates/viz/assets/playground.html`) builds the same arguments `ringleader sim`
//! takes — algorithm, N, ids, latency, loss, workload, faults, or a scenario file — and posts
//! them to `POST /run`. The server parses them with the CLI's own parser, runs the simulator and
//! answers with the run's report, its trace, its repro line and the self-contained viewer page
//! of `sim --html`, which the playground shows in a frame. Bad input is answered with the line
//! the CLI would print, so the page and the terminal say the same words. Clicking a lifeline in
//! the viewer adds a crash, pause or recovery of that node at that moment; dragging from one
//! lifeline to another and a later moment adds a partition (`--partition`) of the nodes dragged
//! over from the rest over that span; a second algorithm can run on the same fault plan beside
//! the first.
//!
//! Runs are the simulator's: deterministic, bounded by the CLI's ranges, and executed on a
//! blocking thread so that the server keeps answering. The playground caps N at
//! [`MAX_UI_NODES`] (the viewer is for looking; bigger runs belong to the CLI).

use std::io::Write as _;
use std::net::SocketAddr;

use anyhow::Context as _;
use axum::extract::Json;
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use clap::{Args, Parser};
use serde::{Deserialize, Serialize};

use crate::sim::{SimArgs, html_page, resolve_config};

/// The most nodes a playground run may have.
pub const MAX_UI_NODES: u32 = 2_000;

const PAGE: &str = include_str!("../../viz/assets/playground.html");

/// Serve the browser playground: pick an algorithm, faults and a workload, run, look
///
/// Opens a local web server (127.0.0.1 by default: the playground runs simulations on this
/// machine for whoever can reach it). The page runs every algorithm of `ringleader list`, shows
/// the space-time diagram and verdict, adds faults by clicking a node's lifeline, compares two
/// algorithms on the same fault plan, and downloads the run's JSON, trace, HTML and repro line.
///
/// Example:
///   ringleader ui                      # then open http://127.0.0.1:8080/
///   ringleader ui --listen 0.0.0.0:9000
#[derive(Args, Debug)]
pub struct UiArgs {
    /// Address to listen on (port 0 picks a free one; the address is printed).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    pub listen: String,
}

/// `POST /run`: the arguments of `ringleader sim`, and optionally a scenario file's text.
#[derive(Debug, Deserialize)]
struct RunRequest {
    /// Arguments after `sim`, one per element (`["--algo", "central", "--nodes", "5"]`).
    args: Vec<String>,
    /// A scenario file's TOML text, run with the arguments over it.
    #[serde(default)]
    scenario: Option<String>,
}

/// What a run answers.
#[derive(Debug, Serialize)]
struct RunResponse {
    /// 0: as expected; 2: an unexpected violation (the CLI's exit status).
    exit: i32,
    /// The verdict line.
    verdict: String,
    /// `ringleader sim --json`'s object.
    report: serde_json::Value,
    /// The viewer page (`sim --html`).
    html: String,
    /// The trace, JSON lines (`sim --trace`).
    trace: String,
    /// The command that reproduces the run.
    repro: String,
}

/// An input error: the one line the CLI prints.
#[derive(Debug, Serialize)]
struct RunError {
    error: String,
}

fn bad_request(error: String) -> Response {
    (StatusCode::BAD_REQUEST, Json(RunError { error })).into_response()
}

#[derive(Parser, Debug)]
#[command(name = "sim")]
struct SimOnly {
    #[command(flatten)]
    args: SimArgs,
}

/// Parses the arguments as `ringleader sim` does; the CLI's one-line error otherwise.
fn parse(args: &[String]) -> Result<SimArgs, String> {
    match SimOnly::try_parse_from(std::iter::once("sim".to_string()).chain(args.iter().cloned())) {
        Ok(s) => Ok(s.args),
        Err(e) => {
            let text = e.render().to_string();
            let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("error: bad arguments");
            Err(first.trim_start_matches("error: ").to_string())
        }
    }
}

/// Runs one request; the response, or the line the CLI would print.
fn execute(req: RunRequest) -> Result<RunResponse, String> {
    let mut args = parse(&req.args)?;
    if args.trace.is_some() || args.mermaid.is_some() || args.html.is_some() || args.shiviz.is_some() {
        return Err(
            "--trace, --mermaid, --html and --shiviz write files; the playground offers downloads instead"
                .into(),
        );
    }
    // A scenario's text is written to a file of its own so that errors point at its lines.
    let file = match &req.scenario {
        Some(text) if !text.trim().is_empty() => {
            let mut f = tempfile_named("scenario.toml").map_err(|e| e.to_string())?;
            f.1.write_all(text.as_bytes()).map_err(|e| e.to_string())?;
            Some(f.0)
        }
        _ => None,
    };
    if let Some(path) = &file {
        args.scenario = Some(path.clone());
    }
    let result = (|| -> anyhow::Result<RunResponse> {
        let cfg = resolve_config(&args, Default::default())?;
        if cfg.nodes > MAX_UI_NODES {
            anyhow::bail!(
                "--nodes {}: the playground draws up to {MAX_UI_NODES} nodes; run bigger ones with `ringleader sim`",
                cfg.nodes
            );
        }
        let info =
            ringleader_registry::find(&cfg.algorithm).expect("a resolved run names a registered algorithm");
        if let Some(most) = ringleader_sim::input::interactive_nodes(&info)
            && cfg.nodes > most
        {
            anyhow::bail!(
                "--nodes {}: {}'s start-up grows as N³, and the playground runs it on up to {most} nodes; run bigger ones with `ringleader sim`",
                cfg.nodes,
                cfg.algorithm
            );
        }
        let opts = ringleader_sim::RunOptions { keep_trace: true, ..Default::default() };
        let result = ringleader_sim::run(&cfg, opts)?;
        let report = serde_json::to_value(&result.report)?;
        let human = result.report.human(None);
        let verdict = human.lines().find_map(|l| l.strip_prefix("verdict")).unwrap_or("").trim().to_string();
        let mut trace = String::new();
        for r in &result.records {
            trace.push_str(&serde_json::to_string(r)?);
            trace.push('\n');
        }
        Ok(RunResponse {
            exit: i32::from(crate::ExitStatus::violation_unless(result.report.as_expected()).code()),
            verdict,
            html: html_page(&result, cfg.name.as_deref())?,
            repro: result.report.repro.clone(),
            report,
            trace,
        })
    })();
    if let Some(path) = &file {
        let _ = std::fs::remove_file(path);
    }
    result.map_err(|e| {
        let line = crate::one_line(&e);
        // The scenario's temporary path means nothing to the page: name it as the page does.
        match &file {
            Some(path) => line.replace(&path.display().to_string(), "scenario"),
            None => line,
        }
    })
}

/// A new file in the temporary directory, named uniquely.
fn tempfile_named(name: &str) -> std::io::Result<(std::path::PathBuf, std::fs::File)> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let k = NEXT.fetch_add(1, Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!("ringleader-ui-{}-{k}-{name}", std::process::id()));
    let file = std::fs::File::create(&path)?;
    Ok((path, file))
}

async fn run_handler(body: axum::body::Bytes) -> Response {
    let req: RunRequest = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => {
            return bad_request(format!(
                "request body: {e}; expected {{\"args\": [\"--algo\", \"NAME\", …]}}"
            ));
        }
    };
    match tokio::task::spawn_blocking(move || execute(req)).await {
        Ok(Ok(response)) => Json(response).into_response(),
        Ok(Err(line)) => bad_request(line),
        Err(e) => {
            (StatusCode::INTERNAL_SERVER_ERROR, Json(RunError { error: format!("the run failed: {e}") }))
                .into_response()
        }
    }
}

#[derive(Serialize)]
struct AlgorithmEntry {
    name: &'static str,
    family: &'static str,
    summary: &'static str,
}

async fn algorithms() -> Json<Vec<AlgorithmEntry>> {
    Json(
        ringleader_registry::all()
            .into_iter()
            .map(|i| AlgorithmEntry { name: i.name, family: i.family.name(), summary: i.summary })
            .collect(),
    )
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

/// Runs `ringleader ui` until interrupted.
pub fn run(args: UiArgs) -> crate::CommandResult {
    let addr: SocketAddr = args.listen.parse().map_err(|_| {
        anyhow::anyhow!("--listen {:?}: expected HOST:PORT such as 127.0.0.1:8080", args.listen)
    })?;
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    rt.block_on(async move {
        let listener =
            tokio::net::TcpListener::bind(addr).await.with_context(|| format!("--listen {addr}"))?;
        let local = listener.local_addr()?;
        println!("playground http://{local}/");
        std::io::stdout().flush()?;
        let app = axum::Router::new()
            .route("/", get(page))
            .route("/algorithms", get(algorithms))
            .route("/favicon.ico", get(favicon))
            .route("/run", post(run_handler))
            .layer(axum::extract::DefaultBodyLimit::max(1 << 20));
        axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await?;
        Ok(crate::ExitStatus::Ok)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_parsed_as_the_cli_parses_them() {
        let a = parse(&["--algo".into(), "central".into(), "--nodes".into(), "4".into()]).unwrap();
        assert_eq!(a.algo.as_deref(), Some("central"));
        let e = parse(&["--loss".into(), "x".into()]).unwrap_err();
        assert!(e.contains("--loss"), "{e}");
    }

    #[test]
    fn a_run_answers_its_report_and_a_bad_one_the_cli_s_line() {
        let ok = execute(RunRequest { args: vec!["--algo".into(), "chang-roberts".into()], scenario: None })
            .unwrap();
        assert_eq!(ok.exit, 0);
        assert!(ok.html.contains("run-data"));
        assert!(ok.repro.starts_with("ringleader sim --algo chang-roberts"));
        assert!(ok.trace.lines().count() > 1, "{}", ok.trace);
        let bad = execute(RunRequest {
            args: vec!["--algo".into(), "central".into(), "--loss".into(), "1.5".into()],
            scenario: None,
        })
        .unwrap_err();
        assert!(bad.starts_with("--loss 1.5"), "{bad}");
        let big = execute(RunRequest {
            args: vec!["--algo".into(), "chang-roberts".into(), "--nodes".into(), "5000".into()],
            scenario: None,
        })
        .unwrap_err();
        assert!(big.contains("up to 2000 nodes"), "{big}");
        let slow = execute(RunRequest {
            args: vec!["--algo".into(), "lock-service".into(), "--nodes".into(), "1000".into()],
            scenario: None,
        })
        .unwrap_err();
        let most =
            ringleader_sim::input::interactive_nodes(&ringleader_registry::find("lock-service").unwrap())
                .unwrap();
        assert!(
            slow.contains("start-up grows as N³") && slow.contains(&format!("up to {most} nodes")),
            "{slow}"
        );
        let file = execute(RunRequest {
            args: vec![],
            scenario: Some("algorithm = \"central\"\nnodes = 3\n[network]\nloss = 1.5\n".into()),
        })
        .unwrap_err();
        assert!(file.starts_with("scenario:4:"), "{file}");
    }
}
