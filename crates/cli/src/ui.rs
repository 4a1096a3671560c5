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

use clap::{Args, Parser};
use ringleader_playground::{AlgorithmEntry, RunResponse, Runs};

use crate::sim::{SimArgs, html_page, resolve_config};

pub use ringleader_playground::MAX_UI_NODES;

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

/// The playground's runs: every algorithm, parsed and resolved as `ringleader sim` does.
struct CliRuns;

impl Runs for CliRuns {
    fn algorithms(&self) -> Vec<AlgorithmEntry> {
        ringleader_registry::all()
            .into_iter()
            .map(|i| AlgorithmEntry {
                name: i.name.to_string(),
                family: i.family.name().to_string(),
                summary: i.summary.to_string(),
            })
            .collect()
    }

    fn run(&self, args: &[String], scenario: Option<&std::path::Path>) -> Result<RunResponse, String> {
        let mut args = parse(args)?;
        if args.trace.is_some() || args.mermaid.is_some() || args.html.is_some() || args.shiviz.is_some() {
            return Err(
                "--trace, --mermaid, --html and --shiviz write files; the playground offers downloads instead"
                    .into(),
            );
        }
        if let Some(path) = scenario {
            args.scenario = Some(path.to_path_buf());
        }
        (|| -> anyhow::Result<RunResponse> {
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
            let opts = ringleader_sim::RunOptions {
                keep_trace: true,
                keep_at_most: Some(ringleader_viz::html::MAX_RECORDS),
                ..Default::default()
            };
            let result = ringleader_sim::run(&cfg, opts)?;
            let page = html_page(&result, cfg.name.as_deref())?;
            RunResponse::of(&result, page).map_err(anyhow::Error::msg)
        })()
        .map_err(|e| crate::one_line(&e))
    }
}

/// Runs `ringleader ui` until interrupted.
pub fn run(args: UiArgs) -> crate::CommandResult {
    ringleader_playground::serve(&args.listen, CliRuns)?;
    Ok(crate::ExitStatus::Ok)
}

#[cfg(test)]
mod tests {
    use ringleader_playground::RunRequest;

    use super::*;

    fn execute(req: RunRequest) -> Result<RunResponse, String> {
        ringleader_playground::execute(&CliRuns, req)
    }

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
