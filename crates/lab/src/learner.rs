//! The command line of a learner's Rust crate (`ringleader lab new`): the learner's
//! [`Algorithm`](ringleader_algorithms::Algorithm) under ringleader's own simulator, checkers, model checker and viewer.
//!
//! A crate written by `lab new` has a `main` of one line, `ringleader_lab::learner::main::<Node>()`,
//! which gives the learner's algorithm these commands:
//!
//! - `sim [--nodes N] [--seed S] [--scenario FILE] [--html FILE]`: one simulated run with the
//!   family's workload and checkers (a scenario file of the simulator's format sets the
//!   network, the faults and the workload), the report as `ringleader sim` prints it, and its
//!   space-time page;
//! - `check [--nodes N] [--depth D] [--crashes K]`: the model checker over every interleaving
//!   of a small system, each property with its verdict and the shortest counterexample's steps.
//!
//! A scenario names no algorithm of ringleader's: the run uses the learner's, with the
//! workload and checkers of its family ([`Algorithm::FAMILY`](ringleader_algorithms::Algorithm::FAMILY)).

use std::path::PathBuf;
use std::process::ExitCode;

use ringleader_algorithms::{Family, PlainAlgorithm};
use ringleader_sim::scenario::Scenario;

/// A ringleader algorithm of `family`, whose name a scenario is resolved with (its defaults,
/// its checks); the run itself is the learner's algorithm's.
pub fn stand_in(family: Family) -> &'static str {
    match family {
        Family::Mutex => "ricart-agrawala",
        Family::Election => "bully",
        Family::Clock => "lamport-clock",
        Family::Deadlock => "chandy-misra-haas",
        Family::Detector => "heartbeat",
    }
}

const USAGE: &str = "usage: sim [--nodes N] [--seed S] [--scenario FILE] [--html FILE]
       check [--nodes N] [--depth D] [--crashes K]";

/// Runs the command in the process's arguments on algorithm `A`; the exit code is 0 when
/// every property held (or failed as the scenario expects), 2 when one was violated, 1 on bad
/// input.
pub fn main<A: PlainAlgorithm>() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run::<A>(&args) {
        Ok((text, ok)) => {
            print!("{text}");
            if ok { ExitCode::SUCCESS } else { ExitCode::from(2) }
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

/// Flags as (name, value) pairs after the command word.
fn flags<'a>(args: &'a [String], allowed: &[&str]) -> Result<Vec<(&'a str, &'a str)>, String> {
    let mut out = Vec::new();
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        if !allowed.contains(&flag.as_str()) {
            return Err(format!("unknown argument {flag:?}; {USAGE}"));
        }
        let Some(value) = it.next() else { return Err(format!("{flag} needs a value")) };
        out.push((flag.as_str(), value.as_str()));
    }
    Ok(out)
}

fn number<T: std::str::FromStr>(flag: &str, v: &str) -> Result<T, String> {
    v.parse().map_err(|_| format!("{flag} {v:?}: a whole number"))
}

/// Runs `args` (`sim …` or `check …`) on `A`: the printed text and whether it passed.
pub fn run<A: PlainAlgorithm>(args: &[String]) -> Result<(String, bool), String> {
    match args.first().map(String::as_str) {
        Some("sim") => sim::<A>(&args[1..]),
        Some("check") => check::<A>(&args[1..]),
        _ => Err(USAGE.to_string()),
    }
}

fn sim<A: PlainAlgorithm>(args: &[String]) -> Result<(String, bool), String> {
    let (mut nodes, mut seed, mut file, mut html) = (None, None, None, None);
    for (flag, v) in flags(args, &["--nodes", "--seed", "--scenario", "--html"])? {
        match flag {
            "--nodes" => nodes = Some(number::<u32>(flag, v)?),
            "--seed" => seed = Some(number::<u64>(flag, v)?),
            "--scenario" => file = Some(PathBuf::from(v)),
            _ => html = Some(PathBuf::from(v)),
        }
    }
    let mut s = match &file {
        Some(p) => Scenario::load(p).map_err(|e| e.to_string())?,
        None => Scenario::default(),
    };
    s.algorithm = Some(stand_in(A::FAMILY).to_string());
    s.nodes = nodes.or(s.nodes).or(Some(3));
    s.seed = seed.or(s.seed);
    let scenario_path = file.clone();
    let cfg = s.resolve(file).map_err(|e| e.to_string())?;
    let opts = ringleader_sim::RunOptions {
        keep_trace: html.is_some(),
        keep_at_most: Some(ringleader_viz::html::MAX_RECORDS),
        ..Default::default()
    };
    let mut result = ringleader_sim::run_algorithm::<A>(&cfg, opts).map_err(|e| e.to_string())?;
    // The run is the learner's algorithm's, and it repeats with this crate's command line.
    result.report.algorithm = A::NAME.to_string();
    result.report.repro = format!(
        "cargo run -- sim --nodes {} --seed {}{}",
        result.report.nodes,
        result.report.seed,
        scenario_path.map(|p| format!(" --scenario {}", p.display())).unwrap_or_default()
    );
    let report = &result.report;
    let mut text = report.human(cfg.description.as_deref());
    if let Some(path) = html {
        let human = report.human(None);
        let verdict = human.lines().find_map(|l| l.strip_prefix("verdict")).unwrap_or("").trim().to_string();
        let page = ringleader_viz::html(&ringleader_viz::RunView {
            title: format!("{}, {} nodes, seed {}", A::NAME, report.nodes, report.seed),
            source: "sim",
            uids: &result.uids,
            records: &result.records,
            total_records: result.total_records,
            report: serde_json::to_value(report).map_err(|e| e.to_string())?,
            verdict,
            ok: report.as_expected(),
            violation_window: result.violation_window,
        });
        std::fs::write(&path, page).map_err(|e| format!("writing {}: {e}", path.display()))?;
        text.push_str(&format!("html       {}\n", path.display()));
    }
    Ok((text, report.as_expected()))
}

fn check<A: PlainAlgorithm>(args: &[String]) -> Result<(String, bool), String> {
    let mut bounds = ringleader_check::Bounds::new(3);
    let mut opts = ringleader_check::Options::default();
    for (flag, v) in flags(args, &["--nodes", "--depth", "--crashes"])? {
        match flag {
            "--nodes" => {
                let n = number::<u32>(flag, v)?;
                let crashes = bounds.crashes;
                bounds = ringleader_check::Bounds::new(n);
                bounds.crashes = crashes;
            }
            "--depth" => opts.depth = Some(number::<usize>(flag, v)?),
            _ => bounds.crashes = number::<u32>(flag, v)?,
        }
    }
    let o = ringleader_check::check_algorithm::<A>(bounds, &opts).map_err(|e| e.to_string())?;
    let mut text = format!(
        "check {}: {} nodes, {} states ({} unique), depth {}, {}\n",
        A::NAME,
        o.nodes,
        o.states,
        o.unique_states,
        o.depth,
        if o.complete { "every interleaving explored" } else { "bounded" }
    );
    let mut ok = true;
    for p in &o.properties {
        let verdict = if p.holds {
            "holds".to_string()
        } else if p.violated() {
            ok &= p.expected_violation;
            format!("VIOLATED{}", p.detail.as_ref().map(|d| format!(": {d}")).unwrap_or_default())
        } else {
            "never reached".to_string()
        };
        text.push_str(&format!("  {:<15} {verdict}\n", p.name));
        if p.violated() {
            for step in &p.steps {
                text.push_str(&format!("      {step}\n"));
            }
        }
    }
    Ok((text, ok))
}
