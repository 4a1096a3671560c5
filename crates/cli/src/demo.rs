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
pub fn run(args: DemoArgs) -> anyhow::Result<i32> {
    let dir = args.html_dir.unwrap_or_else(|| std::env::temp_dir().join("ringleader-demo"));
    std::fs::create_dir_all(&dir).with_context(|| format!("--html-dir {}", dir.display()))?;
    let mut worst = 0;
    for (i, (file, text)) in DEMOS.iter().enumerate() {
        let cfg = Scenario::parse(text, &format!("scenarios/{file}"))?.resolve(None)?;
        let result = ringleader_sim::run(&cfg, RunOptions { keep_trace: true, ..RunOptions::default() })?;
        if i > 0 {
            println!();
        }
        println!("── scenarios/{file} ──");
        print!("{}", result.report.human(cfg.description.as_deref()));
        let page = dir.join(file.replace(".toml", ".html"));
        std::fs::write(&page, crate::sim::html_page(&result, cfg.name.as_deref())?)
            .with_context(|| format!("{}", page.display()))?;
        println!("html       {}", page.display());
        worst = worst.max(result.report.exit_code());
    }
    println!();
    println!(
        "Run any scenario yourself: cargo run --release -- sim scenarios/<file> [--mermaid run.mmd] [--json]"
    );
    Ok(worst)
}
