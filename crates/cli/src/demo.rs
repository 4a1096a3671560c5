//! `ringleader demo`: the built-in demonstrations, printed as readable accounts.

use ringleader_sim::{RunOptions, Scenario};

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
pub fn run() -> anyhow::Result<i32> {
    let mut worst = 0;
    for (i, (file, text)) in DEMOS.iter().enumerate() {
        let cfg = Scenario::parse(text, &format!("scenarios/{file}"))?.resolve(None)?;
        let result = ringleader_sim::run(&cfg, RunOptions::default())?;
        if i > 0 {
            println!();
        }
        println!("── scenarios/{file} ──");
        print!("{}", result.report.human(cfg.description.as_deref()));
        worst = worst.max(result.report.exit_code());
    }
    println!();
    println!(
        "Run any scenario yourself: cargo run --release -- sim scenarios/<file> [--mermaid run.mmd] [--json]"
    );
    Ok(worst)
}
