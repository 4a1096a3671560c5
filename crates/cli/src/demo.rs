//! `ringleader demo`: the built-in demonstrations, printed as readable accounts.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::Args;
use ringleader_sim::{RunOptions, Scenario};

/// Run the built-in demonstrations and print what happened
///
/// Each story is also written as a self-contained HTML page (a space-time diagram with step
/// controls); the paths are printed.
#[derive(Args, Debug, Default)]
pub struct DemoArgs {
    /// Where the HTML pages go [default: ringleader-demo in the system's temporary directory].
    #[arg(long, value_name = "DIR")]
    pub html_dir: Option<PathBuf>,
}

/// The demonstrations: (file name, contents), from `scenarios/`.
const DEMOS: &[(&str, &str)] = &[
    ("chang-roberts-worst-case.toml", include_str!("../../../scenarios/chang-roberts-worst-case.toml")),
    ("central-three-participants.toml", include_str!("../../../scenarios/central-three-participants.toml")),
    (
        "central-timeout-paused-holder.toml",
        include_str!("../../../scenarios/central-timeout-paused-holder.toml"),
    ),
];

/// Runs every demonstration; the exit status is 2 if any did not behave as its scenario says.
pub fn run(args: DemoArgs) -> crate::CommandResult {
    let dir = args.html_dir.unwrap_or_else(|| std::env::temp_dir().join("ringleader-demo"));
    std::fs::create_dir_all(&dir).with_context(|| format!("--html-dir {}", dir.display()))?;
    let mut worst = crate::ExitStatus::Ok;
    for (i, (file, text)) in DEMOS.iter().enumerate() {
        let cfg = Scenario::parse(text, &format!("scenarios/{file}"))?.resolve(None)?;
        let result = ringleader_sim::run(&cfg, RunOptions { keep_trace: true, ..RunOptions::default() })?;
        if i > 0 {
            println!();
        }
        println!("── scenarios/{file} ──");
        print!("{}", result.report.human(cfg.description.as_deref()));
        for line in reading(&result.report) {
            println!("{line}");
        }
        let page = dir.join(file.replace(".toml", ".html"));
        std::fs::write(&page, crate::sim::html_page(&result, cfg.name.as_deref())?)
            .with_context(|| format!("{}", page.display()))?;
        println!("html       {}", page.display());
        worst = worst.max(crate::ExitStatus::violation_unless(result.report.as_expected()));
    }
    println!();
    println!(
        "Run any scenario yourself: cargo run --release -- sim scenarios/<file> [--mermaid run.mmd] [--json]"
    );
    Ok(worst)
}

/// What the numbers of `report` mean, in words, for the fields a demonstration prints: the
/// report's names are terse, and a reader should not need a glossary.
fn reading(report: &ringleader_sim::Report) -> Vec<String> {
    let (election, mutex) = (report.outcome.election(), report.outcome.mutex());
    let mut lines = Vec::new();
    let mut say = |text: String| {
        let prefix = if lines.is_empty() { "reading    " } else { "           " };
        lines.push(format!("{prefix}{text}"));
    };
    if let Some(ms) = election.and_then(|e| e.election_ms) {
        say(format!(
            "election_ms = {ms}: from the first process starting an election until the last one \
             learned the leader"
        ));
    }
    if let Some(p) = report.latency.get("time_to_leader") {
        say(format!(
            "time_to_leader {:.3} ms: from that start until the winner declared itself leader",
            p.max
        ));
    }
    if let Some(n) = mutex.map(|m| m.max_concurrent_holders) {
        say(format!("max_concurrent_holders = {n}: the most processes in the critical section at once"));
    }
    if let Some(n) = mutex.map(|m| m.max_overtaken) {
        say(format!(
            "max_overtaken = {n}: the most entries by others while one request waited, counted from \
             when it was issued; fifo compares arrivals at the coordinator, so a request that arrives \
             last may be overtaken while fifo holds"
        ));
    }
    if let Some(n) = mutex.and_then(|m| m.suspicions) {
        say(format!("suspicions = {n}: times a holder was taken for failed (its timeout fired)"));
    }
    if let Some(p) = report.latency.get("response_time") {
        say(format!(
            "response_time: from a request to its entry into the critical section ({} {})",
            p.count,
            if p.count == 1 { "entry" } else { "entries" }
        ));
    }
    if report.latency.contains_key("sync_delay") {
        say("sync_delay: from one holder leaving to the next one entering, while someone waits".into());
    }
    lines
}
