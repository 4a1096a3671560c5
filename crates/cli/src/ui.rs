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
use ringleader_check::by_hand::{ByHand, Search};
use ringleader_playground::{AlgorithmEntry, ExploreResponse, FindResponse, RunResponse, Runs, Violated};

use crate::check::CheckArgs;
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

#[derive(Parser, Debug)]
#[command(name = "check")]
struct CheckOnly {
    #[command(flatten)]
    args: CheckArgs,
}

/// clap's error as the CLI's one line.
fn clap_line(e: clap::Error) -> String {
    let text = e.render().to_string();
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("error: bad arguments");
    first.trim_start_matches("error: ").to_string()
}

/// Parses the arguments as `ringleader sim` does; the CLI's one-line error otherwise.
fn parse(args: &[String]) -> Result<SimArgs, String> {
    SimOnly::try_parse_from(std::iter::once("sim".to_string()).chain(args.iter().cloned()))
        .map(|s| s.args)
        .map_err(clap_line)
}

/// The states "find a violation from here" explores at most.
const FIND_STATES: usize = 200_000;

/// Parses the arguments as `ringleader check` does: the algorithm and its bounds.
fn parse_check(args: &[String]) -> Result<(String, ringleader_check::Bounds), String> {
    let a = CheckOnly::try_parse_from(std::iter::once("check".to_string()).chain(args.iter().cloned()))
        .map_err(clap_line)?
        .args;
    let bounds = a.bounds().map_err(|e| crate::one_line(&e))?;
    Ok((a.algo, bounds))
}

/// The viewer's page of a path by hand (the model checker's pages: steps, not milliseconds).
fn by_hand_page(algo: &str, h: &ByHand, path: &[usize]) -> Result<String, String> {
    let family = ringleader_registry::find(algo).map(|i| i.family.name()).unwrap_or_default();
    let report = serde_json::json!({
        "algorithm": algo,
        "family": family,
        "nodes": h.uids.len(),
        "events": path.len(),
        "violations": h.violated.iter().map(|(p, d)| serde_json::json!({
            "property": p, "step": path.len(), "detail": d,
        })).collect::<Vec<_>>(),
    });
    let verdict = match h.violated.first() {
        Some((p, d)) => format!("{p} violated after {} steps: {d}", path.len()),
        None => format!("{} steps chosen by hand; no always-property is violated here", path.len()),
    };
    Ok(ringleader_viz::html(&ringleader_viz::RunView {
        title: format!("{algo} by hand ({} nodes, {} steps)", h.uids.len(), path.len()),
        source: "check",
        uids: &h.uids,
        records: &h.records,
        gaps: &[],
        total_records: h.records.len() as u64,
        report,
        verdict,
        ok: h.violated.is_empty(),
        violation_window: (!h.violated.is_empty()).then_some((path.len() as u64, None)),
        explore: None,
    }))
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

    fn by_hand(&self, args: &[String], path: &[usize]) -> Result<ExploreResponse, String> {
        let (algo, bounds) = parse_check(args)?;
        let h = ringleader_check::by_hand::by_hand(&algo, bounds, path).map_err(|e| e.to_string())?;
        Ok(ExploreResponse {
            html: by_hand_page(&algo, &h, path)?,
            enabled: h.enabled,
            violated: h
                .violated
                .into_iter()
                .map(|(p, d)| Violated { property: p.to_string(), detail: d })
                .collect(),
        })
    }

    fn find(&self, args: &[String], path: &[usize]) -> Result<FindResponse, String> {
        let (algo, bounds) = parse_check(args)?;
        let search = ringleader_check::by_hand::violation_from(&algo, bounds, path, FIND_STATES)
            .map_err(|e| e.to_string())?;
        Ok(match search {
            Search::Found(f) => FindResponse {
                outcome: "found",
                states: f.states,
                violated: Some(Violated { property: f.property.to_string(), detail: f.detail }),
                path: Some(f.path),
            },
            Search::None { states } => FindResponse { outcome: "none", path: None, violated: None, states },
            Search::Undecided { states } => {
                FindResponse { outcome: "undecided", path: None, violated: None, states }
            }
        })
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
