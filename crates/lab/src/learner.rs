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

use std::path::PathBuf;
use std::process::ExitCode;

use ringleader_algorithms::{Family, PlainAlgorithm};
use ringleader_core::Uid;
use ringleader_sim::RunResult;
use ringleader_sim::scenario::{IdArrangement, Initiators, Scenario, WorkloadKind};

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

fn parsed<T: std::str::FromStr>(flag: &str, v: &str) -> Result<T, String>
where
    T::Err: std::fmt::Display,
{
    v.parse().map_err(|e| format!("{flag} {v:?}: {e}"))
}

fn uid_list(flag: &str, v: &str) -> Result<Vec<Uid>, String> {
    v.split(',').map(|x| number::<Uid>(flag, x.trim())).collect()
}

/// The flags of one simulated run (`sim`, and the playground's runs), as `ringleader sim`
/// spells them.
const RUN_FLAGS: &[&str] = &[
    "--algo",
    "--nodes",
    "--seed",
    "--scenario",
    "--html",
    "--latency",
    "--loss",
    "--dup",
    "--crash",
    "--recover",
    "--pause",
    "--partition",
    "--duration",
    "--entries",
    "--hold",
    "--requesters",
    "--initiators",
    "--ids",
    "--workload",
];

/// One simulated run, as its flags describe it.
#[derive(Clone, Debug, Default)]
pub struct RunFlags {
    /// `--algo`: an algorithm of ringleader's to run instead (the playground compares).
    pub algo: Option<String>,
    /// The flags over the scenario file.
    pub overlay: Scenario,
    /// `--scenario`.
    pub scenario: Option<PathBuf>,
    /// `--html`.
    pub html: Option<PathBuf>,
    /// The flags as given, less `--html` and `--algo` (the repro line).
    pub words: Vec<String>,
}

impl RunFlags {
    /// Parses `args`; the one line naming what was wrong otherwise.
    pub fn parse(args: &[String]) -> Result<RunFlags, String> {
        let mut f = RunFlags::default();
        let o = &mut f.overlay;
        for (flag, v) in flags(args, RUN_FLAGS)? {
            if !matches!(flag, "--html" | "--algo") {
                f.words.push(flag.to_string());
                f.words.push(v.to_string());
            }
            match flag {
                "--algo" => f.algo = Some(v.to_string()),
                "--nodes" => o.nodes = Some(number(flag, v)?),
                "--seed" => o.seed = Some(number(flag, v)?),
                "--scenario" => f.scenario = Some(PathBuf::from(v)),
                "--html" => f.html = Some(PathBuf::from(v)),
                "--latency" => o.network.latency = Some(parsed(flag, v)?),
                "--loss" => o.network.loss = Some(parsed(flag, v)?),
                "--dup" => o.network.dup = Some(parsed(flag, v)?),
                "--crash" => o.faults.crash.push(parsed(flag, v)?),
                "--recover" => o.faults.recover.push(parsed(flag, v)?),
                "--pause" => o.faults.pause.push(parsed(flag, v)?),
                "--partition" => o.faults.partition.push(parsed(flag, v)?),
                "--duration" => o.duration = Some(parsed(flag, v)?),
                "--entries" => o.workload.entries = Some(number(flag, v)?),
                "--hold" => o.workload.hold = Some(parsed(flag, v)?),
                "--requesters" => o.workload.requesters = Some(Initiators::Ids(uid_list(flag, v)?)),
                "--initiators" => o.initiators = Some(parsed(flag, v)?),
                "--ids" => {
                    o.ids = Some(match v {
                        "ascending" => IdArrangement::Ascending,
                        "descending" => IdArrangement::Descending,
                        "random" => IdArrangement::Random,
                        _ => return Err(format!("--ids {v:?}: ascending, descending or random")),
                    })
                }
                _ => {
                    o.workload.kind = Some(match v {
                        "sequential" => WorkloadKind::Sequential,
                        "saturated" => WorkloadKind::Saturated,
                        "poisson" => WorkloadKind::Poisson,
                        "messages" => WorkloadKind::Messages,
                        _ => {
                            return Err(format!(
                                "--workload {v:?}: sequential, saturated, poisson (mutex) or messages (clocks)"
                            ));
                        }
                    })
                }
            }
        }
        Ok(f)
    }

    /// The flags as a shell line (less `--html` and `--algo`), for a repro line.
    pub fn repro_words(&self) -> String {
        shell_line(&self.words)
    }

    /// The run: the scenario file, the flags over it, and the algorithm whose defaults and
    /// checks the run takes (a scenario's own `algorithm` is ignored).
    pub fn resolve(&self, algorithm: &str) -> Result<ringleader_sim::RunConfig, String> {
        let base = match &self.scenario {
            Some(p) => Scenario::load(p).map_err(|e| e.to_string())?,
            None => Scenario::default(),
        };
        let mut s = base.merge(self.overlay.clone());
        s.algorithm = Some(algorithm.to_string());
        s.nodes = s.nodes.or(Some(3));
        s.resolve(self.scenario.clone()).map_err(|e| e.to_string())
    }
}

/// Runs `A` as `flags` say, its report named after `A` and its repro line this crate's.
pub fn simulate<A: PlainAlgorithm>(flags: &RunFlags, keep_trace: bool) -> Result<RunResult, String> {
    let cfg = flags.resolve(stand_in(A::FAMILY))?;
    let opts = ringleader_sim::RunOptions {
        keep_trace,
        keep_at_most: Some(ringleader_viz::html::MAX_RECORDS),
        ..Default::default()
    };
    let mut result = ringleader_sim::run_algorithm::<A>(&cfg, opts).map_err(|e| e.to_string())?;
    // The run is the learner's algorithm's, and it repeats with this crate's command line.
    result.report.algorithm = A::NAME.to_string();
    result.report.repro = format!("cargo run -- sim {}", flags.repro_words()).trim_end().to_string();
    Ok(result)
}

/// Words joined as a shell line, quoting those that need it.
fn shell_line(words: &[String]) -> String {
    words
        .iter()
        .map(|w| {
            if w.chars().all(|c| c.is_ascii_alphanumeric() || "-_.,@:/=+".contains(c)) {
                w.clone()
            } else {
                format!("'{w}'")
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The verdict line of a report, in the command line's words.
pub fn verdict_line(report: &ringleader_sim::Report) -> String {
    let human = report.human(None);
    human.lines().find_map(|l| l.strip_prefix("verdict")).unwrap_or("").trim().to_string()
}

/// The space-time page of a run.
pub fn page(result: &RunResult) -> Result<String, String> {
    let report = &result.report;
    Ok(ringleader_viz::html(&ringleader_viz::RunView {
        title: format!("{}, {} nodes, seed {}", report.algorithm, report.nodes, report.seed),
        source: "sim",
        uids: &result.uids,
        records: &result.records,
        total_records: result.total_records,
        report: serde_json::to_value(report).map_err(|e| e.to_string())?,
        verdict: verdict_line(report),
        ok: report.as_expected(),
        violation_window: result.violation_window,
    }))
}

/// Runs `args` (`sim …`, `check …` or `grade …`) on `A`: the printed text and whether it
/// passed.
pub fn run<A: PlainAlgorithm>(args: &[String]) -> Result<(String, bool), String> {
    match args.first().map(String::as_str) {
        Some("sim") => sim::<A>(&args[1..]),
        Some("check") => check::<A>(&args[1..]),
        Some("grade") => crate::crate_grade::crate_grade::<A>(&args[1..]),
        Some("ui") => Err("ui is served by ringleader_playground::learner_main (the main `lab new` writes)".into()),
        _ => Err(USAGE.to_string()),
    }
}

fn sim<A: PlainAlgorithm>(args: &[String]) -> Result<(String, bool), String> {
    let flags = RunFlags::parse(args)?;
    if let Some(a) = &flags.algo {
        return Err(format!("--algo {a}: this command runs {} only; `ui` compares it with ringleader's", A::NAME));
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
