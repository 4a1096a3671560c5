//! The command line of a learner's Rust crate (`ringleader lab new`): the learner's
//! [`Algorithm`](ringleader_algorithms::Algorithm) under ringleader's own simulator, checkers, model checker and viewer.
//!
//! A crate written by `lab new` has a `main` of one line,
//! `ringleader_playground::learner_main::<Node>()`, which serves `ui` (the browser playground,
//! the learner's algorithm beside ringleader's of its family) and hands every other command to
//! [`main`] here:
//!
//! - `sim [--nodes N] [--seed S] [--scenario FILE] [--html FILE] [run flags]`: one simulated run
//!   with the family's workload and checkers (a scenario file of the simulator's format, or the
//!   flags `ringleader sim` spells the same way, set the network, the faults and the workload),
//!   the report as `ringleader sim` prints it, and its space-time page;
//! - `check [--nodes N] [--depth D] [--crashes K]`: the model checker over every interleaving
//!   of a small system, each property with its verdict and the shortest counterexample's steps;
//! - `grade [--nodes N] [--seeds K] [--algo-like A] …`: the family's battery and the model
//!   checker on one report card ([`crate::crate_grade`]).
//!
//! A scenario names no algorithm of ringleader's: the run uses the learner's, with the
//! workload and checkers of its family ([`Algorithm::FAMILY`](ringleader_algorithms::Algorithm::FAMILY)).

use std::process::ExitCode;

use ringleader_algorithms::PlainAlgorithm;
use ringleader_sim::scenario::Scenario;

use crate::simulated::{RunFlags, flags, number, page, simulate};

const USAGE: &str = "usage: sim [--nodes N] [--seed S] [--scenario FILE] [--html FILE] [run flags]
       check [--nodes N] [--depth D] [--crashes K]
       grade [--nodes N] [--seeds K] [--algo-like A] [--scenario FILE]… [--html FILE] [--json]
       ui [--listen ADDR]
run flags: --latency SPEC --loss P --dup P --crash ID@T --recover ID@T --pause ID@A..B
           --partition A,B|C@A..B --duration T --entries E --hold T --requesters IDS
           --initiators IDS --ids ascending|descending|random --workload KIND";

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

/// Runs `args` (`sim …`, `check …` or `grade …`) on `A`: the printed text and whether it
/// passed.
pub fn run<A: PlainAlgorithm>(args: &[String]) -> Result<(String, bool), String> {
    match args.first().map(String::as_str) {
        Some("sim") => sim::<A>(&args[1..]),
        Some("check") => check::<A>(&args[1..]),
        Some("grade") => crate::crate_grade::crate_grade::<A>(&args[1..]),
        Some("ui") => {
            Err("ui is served by ringleader_playground::learner_main (the main `lab new` writes)".into())
        }
        _ => Err(USAGE.to_string()),
    }
}

fn sim<A: PlainAlgorithm>(args: &[String]) -> Result<(String, bool), String> {
    let flags = RunFlags::parse(args)?;
    if let Some(a) = &flags.algo {
        return Err(format!(
            "--algo {a}: this command runs {} only; `ui` compares it with ringleader's",
            A::NAME
        ));
    }
    let result = simulate::<A>(&flags, flags.html.is_some())?;
    let report = &result.report;
    let description = match &flags.scenario {
        Some(p) => Scenario::load(p).ok().and_then(|s| s.description),
        None => None,
    };
    let mut text = report.human(description.as_deref());
    if let Some(path) = &flags.html {
        std::fs::write(path, page(&result)?).map_err(|e| format!("writing {}: {e}", path.display()))?;
        text.push_str(&format!("html       {}\n", path.display()));
    }
    Ok((text, report.as_expected()))
}

fn check<A: PlainAlgorithm>(args: &[String]) -> Result<(String, bool), String> {
    let mut bounds = ringleader_check::Bounds::new(3);
    let mut opts = ringleader_check::Options::default();
    for (flag, v) in flags(args, &["--nodes", "--depth", "--crashes"], USAGE)? {
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
