//! Grading a learner's Rust crate (`cargo run -- grade` in a crate `lab new` wrote, or
//! `ringleader lab grade --crate DIR`): the family's battery under ringleader's simulator —
//! textbook scenarios, a seeded sweep of random latencies, the teacher's scenario files — then
//! the model checker over every interleaving of a small system, on the same report card as a
//! learner's processes get ([`crate::grade::Card`]).
//!
//! The simulator runs the learner's algorithm with the workload and checkers of its family,
//! as `cargo run -- sim` does, so that every failure's repro line is a command of the crate.

use ringleader_algorithms::PlainAlgorithm;
use ringleader_sim::report::PropertyStatus;
use ringleader_sim::scenario::Initiators;

use crate::family::LabFamily;
use crate::grade::{Card, Judged};
use crate::report::{Cost, Verdict};
use crate::simulated::{self, RunFlags};
use crate::textbook::Textbook;

/// The most states the model checker may generate in a grade (a learner's algorithm whose
/// state grows without bound gets "undecided", not a search that never ends).
pub const CHECK_STATES: usize = 2_000_000;

const USAGE: &str = "usage: grade [--nodes N] [--seeds K] [--algo-like A] [--check-nodes M] [--scenario FILE]… [--html FILE] [--json]";

/// What `grade` was asked.
#[derive(Clone, Debug)]
struct Ask {
    family: LabFamily,
    nodes: u32,
    seeds: u64,
    check_nodes: u32,
    algo_like: Option<String>,
    scenarios: Vec<String>,
    html: Option<std::path::PathBuf>,
    json: bool,
}

fn ask<A: PlainAlgorithm>(args: &[String]) -> Result<Ask, String> {
    let Some(family) = LabFamily::of(A::FAMILY) else {
        return Err(format!(
            "{} is of a family the lab has no battery for (mutex, election, clock, deadlock)",
            A::NAME
        ));
    };
    let mut a = Ask {
        family,
        nodes: 4,
        seeds: 8,
        check_nodes: 3,
        algo_like: None,
        scenarios: Vec::new(),
        html: None,
        json: false,
    };
    let number = |flag: &str, v: &str| -> Result<u64, String> {
        v.parse::<u64>().map_err(|_| format!("{flag} {v:?}: a whole number"))
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        if flag == "--json" {
            a.json = true;
            continue;
        }
        let Some(v) = it.next() else {
            return Err(format!("{flag} needs a value; {USAGE}"));
        };
        match flag.as_str() {
            "--nodes" => a.nodes = number(flag, v)? as u32,
            "--seeds" => a.seeds = number(flag, v)?,
            "--check-nodes" => a.check_nodes = number(flag, v)? as u32,
            "--algo-like" => a.algo_like = Some(v.clone()),
            "--scenario" => a.scenarios.push(v.clone()),
            "--html" => a.html = Some(v.into()),
            "--family" => {
                let f: LabFamily = v.parse()?;
                if f != family {
                    return Err(format!("--family {}: {} is of family {}", f.name(), A::NAME, family.name()));
                }
            }
            _ => return Err(format!("unknown argument {flag:?}; {USAGE}")),
        }
    }
    if !(2..=64).contains(&a.nodes) {
        return Err(format!("--nodes {}: from 2 to 64", a.nodes));
    }
    if !(1..=1000).contains(&a.seeds) {
        return Err(format!("--seeds {}: from 1 to 1000", a.seeds));
    }
    if !(1..=5).contains(&a.check_nodes) {
        return Err(format!(
            "--check-nodes {}: from 1 to 5 (the model checker explores every interleaving)",
            a.check_nodes
        ));
    }
    if let Some(like) = &a.algo_like
        && Textbook::of(like, family, u64::from(a.nodes), 1).is_none()
    {
        let known = crate::textbook::names(family);
        return Err(format!(
            "--algo-like {like}: the lab knows the {} family's costs of {}",
            family.name(),
            if known.is_empty() { "no algorithm".to_string() } else { known.join(", ") }
        ));
    }
    Ok(a)
}

/// The family's built-in runs, as `sim` flags: (scenario name, flags).
fn battery(a: &Ask) -> Vec<(String, Vec<String>)> {
    let n = a.nodes;
    let w = |words: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = vec!["--nodes".into(), n.to_string()];
        v.extend(words.iter().map(|w| w.to_string()));
        v
    };
    let jitter = "uniform:1ms..10ms";
    let mut b: Vec<(String, Vec<String>)> = Vec::new();
    let sweep = |b: &mut Vec<(String, Vec<String>)>, name: &str, words: &[&str]| {
        for seed in 1..=a.seeds {
            let mut v = w(words);
            v.extend(["--seed".to_string(), seed.to_string()]);
            b.push((name.to_string(), v));
        }
    };
    let entries = (2 * n).to_string();
    let more = (3 * n).to_string();
    match a.family {
        LabFamily::Mutex => {
            b.push((
                "textbook: 1 ms links, one entry at a time".into(),
                w(&[
                    "--seed",
                    "1",
                    "--latency",
                    "constant:1ms",
                    "--workload",
                    "sequential",
                    "--entries",
                    &entries,
                ]),
            ));
            b.push((
                "every node asks at once".into(),
                w(&[
                    "--seed",
                    "1",
                    "--latency",
                    "constant:1ms",
                    "--workload",
                    "saturated",
                    "--entries",
                    &entries,
                ]),
            ));
            b.push((
                "node 2 paused from 1 ms to 30 ms".into(),
                w(&[
                    "--seed",
                    "1",
                    "--workload",
                    "saturated",
                    "--entries",
                    &entries,
                    "--pause",
                    "2@1ms..30ms",
                ]),
            ));
            sweep(
                &mut b,
                "sweep: 1..10 ms links, contention",
                &["--latency", jitter, "--workload", "saturated", "--entries", &more],
            );
        }
        LabFamily::Election => {
            let top = n.to_string();
            if a.algo_like.as_deref() == Some("bully") {
                let crash = format!("{n}@0ms");
                b.push((
                    format!("textbook worst case: {n} crashed, 1 detects"),
                    w(&["--seed", "1", "--crash", &crash, "--initiators", "1"]),
                ));
                let next = (n - 1).to_string();
                b.push((
                    format!("textbook best case: {n} crashed, {} detects", n - 1),
                    w(&["--seed", "1", "--crash", &crash, "--initiators", &next]),
                ));
                let rest = (1..n).map(|i| i.to_string()).collect::<Vec<_>>().join(",");
                sweep(
                    &mut b,
                    "sweep: 1..10 ms links, all but the crashed initiate",
                    &["--latency", jitter, "--crash", &crash, "--initiators", &rest],
                );
            } else {
                b.push(("one initiator (1)".into(), w(&["--seed", "1", "--initiators", "1"])));
                b.push((
                    format!("one initiator holding the maximum ({n})"),
                    w(&["--seed", "1", "--initiators", &top]),
                ));
                b.push(("all initiate".into(), w(&["--seed", "1", "--initiators", "all"])));
                sweep(
                    &mut b,
                    "sweep: 1..10 ms links, all initiate",
                    &["--latency", jitter, "--initiators", "all"],
                );
            }
        }
        LabFamily::Clock => {
            b.push(("1 ms links, messages".into(), w(&["--seed", "1", "--latency", "constant:1ms"])));
            sweep(&mut b, "sweep: 1..10 ms links, messages", &["--latency", jitter]);
        }
        LabFamily::Deadlock => {
            b.push((
                "1 ms links, the family's workload".into(),
                w(&["--seed", "1", "--latency", "constant:1ms"]),
            ));
            sweep(&mut b, "sweep: 1..10 ms links", &["--latency", jitter]);
        }
    }
    for s in &a.scenarios {
        let name =
            std::path::Path::new(s).file_stem().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
        b.push((format!("file: {name}"), vec!["--scenario".into(), s.clone()]));
    }
    b
}

/// How many initiators a resolved run has.
fn initiators(i: &Initiators, n: u32) -> u64 {
    match i {
        Initiators::All => u64::from(n),
        Initiators::Lowest | Initiators::Highest => 1,
        Initiators::None => 0,
        Initiators::Ids(v) => v.len() as u64,
    }
}

/// A simulated run as the card counts it.
fn judged_of_sim(
    scenario: String,
    result: &ringleader_sim::RunResult,
    cfg: &ringleader_sim::RunConfig,
    family: LabFamily,
    algo_like: Option<&str>,
) -> Judged {
    let r = &result.report;
    let properties = r
        .properties
        .iter()
        .map(|p| {
            let verdict = match p.status {
                PropertyStatus::Holds => Verdict::Holds,
                PropertyStatus::Undecided => {
                    Verdict::Undecided { detail: p.undecided.clone().unwrap_or_default() }
                }
                PropertyStatus::Violated => match r.violations.iter().find(|v| v.property.name() == p.name) {
                    Some(v) => Verdict::Violated { detail: v.detail.clone(), step: v.step, time_ms: v.time },
                    None => Verdict::Violated { detail: String::new(), step: 0, time_ms: 0.0 },
                },
            };
            (p.name.clone(), verdict)
        })
        .collect();
    let ops = r.per_operation.operations;
    let mut notes = Vec::new();
    let textbook = algo_like.and_then(|like| {
        Textbook::of(like, family, u64::from(r.nodes), initiators(&cfg.initiators, cfg.nodes))
    });
    let textbook = match textbook {
        Some(t) if t.per_run => {
            notes.push(format!(
                "cost not compared: {}'s bounds come from the wait-for history the lab keeps for processes",
                t.algorithm
            ));
            None
        }
        t => t,
    };
    let cost = textbook.map(|textbook| {
        let messages = r.messages.sent.saturating_sub(r.messages.detection);
        let verdict = if cfg.loss > 0.0 || cfg.dup > 0.0 {
            "not compared (the network lost or duplicated messages)".to_string()
        } else if ops == 0 {
            "not compared (no operation completed)".to_string()
        } else {
            textbook.verdict(messages, ops).to_string()
        };
        Cost { textbook, messages, operations: ops, verdict }
    });
    Judged {
        scenario,
        seed: r.seed,
        repro: r.repro.clone(),
        properties,
        per_operation: (ops > 0).then_some(r.per_operation.messages_mean),
        cost,
        process: None,
        expected: r.expected_violations.clone(),
        notes,
    }
}

/// The model checker's verdicts as the card counts them: a property holds only when the
/// search was complete.
fn judged_of_check(report: &ringleader_check::CheckReport, nodes: u32) -> Judged {
    let properties = report
        .properties
        .iter()
        .map(|p| {
            let verdict = if p.violated() {
                let path = if p.steps.is_empty() {
                    String::new()
                } else {
                    format!(" after {}", p.steps.join(" → "))
                };
                Verdict::Violated {
                    detail: format!("{}{path}", p.detail.clone().unwrap_or_else(|| "violated".into())),
                    step: p.length.unwrap_or(0) as u64,
                    time_ms: 0.0,
                }
            } else if p.holds && report.complete {
                Verdict::Holds
            } else if p.holds {
                Verdict::Undecided {
                    detail: format!(
                        "no violation in the {} states explored; the search was cut off",
                        report.states
                    ),
                }
            } else {
                Verdict::Undecided { detail: "never reached in the explored states".into() }
            };
            (p.name.to_string(), verdict)
        })
        .collect();
    Judged {
        scenario: format!("model checker: {nodes} nodes, every interleaving"),
        seed: 0,
        repro: format!("cargo run -- check --nodes {nodes}"),
        properties,
        per_operation: None,
        cost: None,
        process: None,
        expected: report
            .properties
            .iter()
            .filter(|p| p.expected_violation)
            .map(|p| p.name.to_string())
            .collect(),
        notes: if report.complete {
            Vec::new()
        } else {
            vec![format!(
                "the search stopped at {} states: properties that held are undecided",
                report.states
            )]
        },
    }
}

/// `grade` on `A`: the printed card (or its JSON) and whether every run passed.
pub fn crate_grade<A: PlainAlgorithm>(args: &[String]) -> Result<(String, bool), String> {
    let a = ask::<A>(args)?;
    let mut card = Card::new(a.family.name(), a.nodes, a.algo_like.clone());
    let mut first_failure = None;
    for (name, words) in battery(&a) {
        let flags = RunFlags::parse(&words)?;
        let cfg = flags.resolve(simulated::stand_in(A::FAMILY))?;
        let result = simulated::simulate::<A>(&flags, a.html.is_some())?;
        let passed = card.add(judged_of_sim(name, &result, &cfg, a.family, a.algo_like.as_deref()));
        if !passed && first_failure.is_none() {
            first_failure = Some(result);
        }
    }
    let bounds = ringleader_check::Bounds::new(a.check_nodes);
    let opts = ringleader_check::Options { max_states: Some(CHECK_STATES), ..Default::default() };
    let checked = ringleader_check::check_algorithm::<A>(bounds, &opts).map_err(|e| e.to_string())?;
    card.add(judged_of_check(&checked, a.check_nodes));
    let mut text = if a.json {
        serde_json::to_string_pretty(&card).map_err(|e| e.to_string())? + "\n"
    } else {
        card.render()
    };
    if let (Some(path), Some(result)) = (&a.html, &first_failure) {
        std::fs::write(path, simulated::page(result)?)
            .map_err(|e| format!("writing {}: {e}", path.display()))?;
        if !a.json {
            text.push_str(&format!("page of the first failure: {}\n", path.display()));
        }
    }
    Ok((text, card.ok))
}
