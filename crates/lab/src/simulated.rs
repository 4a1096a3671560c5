//! A learner's algorithm in one simulated run: the flags that describe it (those of
//! `ringleader sim`, spelled the same way), the run itself under ringleader's simulator with
//! the workload and checkers of the algorithm's family, and its space-time page. The learner's
//! command line ([`crate::learner`]), its grade ([`crate::crate_grade`]) and its playground
//! all run through here.

use std::path::PathBuf;

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

/// Flags as (name, value) pairs after the command word.
pub(crate) fn flags<'a>(
    args: &'a [String],
    allowed: &[&str],
    usage: &str,
) -> Result<Vec<(&'a str, &'a str)>, String> {
    let mut out = Vec::new();
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        if !allowed.contains(&flag.as_str()) {
            return Err(format!("unknown argument {flag:?}; {usage}"));
        }
        let Some(value) = it.next() else { return Err(format!("{flag} needs a value")) };
        out.push((flag.as_str(), value.as_str()));
    }
    Ok(out)
}

pub(crate) fn number<T: std::str::FromStr>(flag: &str, v: &str) -> Result<T, String> {
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

/// The run flags, as an error names them.
const RUN_USAGE: &str = "a run takes --nodes N --seed S --scenario FILE --html FILE --latency SPEC --loss P --dup P \
--crash ID@T --recover ID@T --pause ID@A..B --partition A,B|C@A..B --duration T --entries E --hold T \
--requesters IDS --initiators IDS --ids ascending|descending|random --workload KIND";

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
        // A learner's algorithm has no default story, so `--plain` (ringleader's repro lines and
        // the playground's runs carry it) changes nothing here.
        let args: Vec<String> = args.iter().filter(|a| *a != "--plain").cloned().collect();
        let mut f = RunFlags::default();
        let o = &mut f.overlay;
        for (flag, v) in flags(&args, RUN_FLAGS, RUN_USAGE)? {
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

/// The space-time page of a run.
pub fn page(result: &RunResult) -> Result<String, String> {
    let report = &result.report;
    Ok(ringleader_viz::html(&ringleader_viz::RunView {
        title: format!("{}, {} nodes, seed {}", report.algorithm, report.nodes, report.seed),
        source: "sim",
        uids: &result.uids,
        records: &result.records,
        gaps: &result.gaps,
        total_records: result.total_records,
        report: serde_json::to_value(report).map_err(|e| e.to_string())?,
        verdict: report.verdict_line(),
        ok: report.as_expected(),
        violation_window: result.violation_window,
        explore: None,
    }))
}
