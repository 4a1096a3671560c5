//! Grading: a battery of lockstep runs — the family's textbook scenarios and a seeded sweep of
//! random latencies — and a report card: each property with the first run that broke it and
//! its repro line, and the messages per operation against the textbook.
//!
//! Every run of the battery is in lockstep, so that a failing seed repeats (exactly, with a
//! node that writes the end-of-step marker).

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use ringleader_core::Uid;
use ringleader_sim::notation::{At, Latency};
use ringleader_sim::scenario::{Initiators, Scenario};
use serde::Serialize;

use crate::config::{LabConfig, LabFamily};
use crate::report::{LabReport, Verdict, trim};
use crate::{LabError, run};

/// What to grade.
#[derive(Clone, Debug)]
pub struct GradeConfig {
    /// The family.
    pub family: LabFamily,
    /// The node program's command line.
    pub command: String,
    /// Processes per run.
    pub nodes: u32,
    /// The algorithm the learner's is like (the textbook cost, the scenarios).
    pub algo_like: Option<String>,
    /// Seeds of the sweep (1..=seeds).
    pub seeds: u64,
    /// Lockstep quiet period for nodes without the end-of-step marker.
    pub quiet: Duration,
    /// Teacher's scenario files (the simulator's TOML format), run after the battery.
    pub scenarios: Vec<PathBuf>,
}

/// One run of the battery.
#[derive(Clone, Debug, Serialize)]
pub struct GradedRun {
    /// The scenario's name.
    pub scenario: String,
    /// Its seed.
    pub seed: u64,
    /// No property violated, cost within the textbook, no process died.
    pub ok: bool,
    /// Messages per operation.
    pub per_operation: Option<f64>,
    /// The cost verdict, with `--algo-like`.
    pub cost: Option<String>,
    /// The repro line.
    pub repro: String,
    /// Properties the scenario file expects violated (`[expect]`): their violations do not
    /// fail the run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub expected: Vec<String>,
    /// What of the scenario file the lab could not reproduce.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// One run of the battery, before it runs.
#[derive(Clone, Debug)]
pub struct Planned {
    /// The scenario's name.
    pub scenario: String,
    /// The run.
    pub config: LabConfig,
    /// Properties expected violated (from a scenario file's `[expect]`).
    pub expected: Vec<String>,
    /// What of the scenario file the lab could not reproduce.
    pub notes: Vec<String>,
}

/// A property across the battery.
#[derive(Clone, Debug, Serialize)]
pub struct PropertyCard {
    /// The property (or `cost`, or `process`: nodes that exited on their own).
    pub name: String,
    /// Runs in which it held.
    pub held: usize,
    /// Runs that could not judge it (fencing without tokens, …).
    pub not_judged: usize,
    /// Runs in which it was undecided.
    pub undecided: usize,
    /// Runs in which it was violated.
    pub violated: usize,
    /// Runs in which it was violated as the scenario file expects (not failures).
    pub expected: usize,
    /// The first violation: scenario, seed, what, repro.
    pub first_failure: Option<Failure>,
}

/// Where a property first failed.
#[derive(Clone, Debug, Serialize)]
pub struct Failure {
    /// The scenario.
    pub scenario: String,
    /// The seed.
    pub seed: u64,
    /// What went wrong.
    pub detail: String,
    /// The command line that repeats it.
    pub repro: String,
}

/// The report card.
#[derive(Clone, Debug, Serialize)]
pub struct Card {
    /// The family.
    pub family: String,
    /// Processes per run.
    pub nodes: u32,
    /// The algorithm named with `--algo-like`.
    pub algo_like: Option<String>,
    /// The textbook's cost, as printed.
    pub textbook: Option<String>,
    /// Every run.
    pub runs: Vec<GradedRun>,
    /// Every property.
    pub properties: Vec<PropertyCard>,
    /// True when every run passed.
    pub ok: bool,
    /// The first failing run's report (its trace kept, for its page).
    #[serde(skip)]
    pub first_failure: Option<LabReport>,
}

/// The battery for `g`: the family's built-in runs, then the teacher's scenario files.
pub fn battery(g: &GradeConfig) -> Result<Vec<Planned>, LabError> {
    let mut planned: Vec<Planned> = builtin(g)
        .into_iter()
        .map(|(scenario, config)| Planned { scenario, config, expected: Vec::new(), notes: Vec::new() })
        .collect();
    for path in &g.scenarios {
        let s = Scenario::load(path).map_err(|e| LabError::Config(e.to_string()))?;
        planned.push(from_scenario(g, path, &s)?);
    }
    Ok(planned)
}

/// A lab run from a scenario file of the simulator's format: its nodes, seed, network, faults,
/// workload, initiators and duration, with the lab's client for the family. A field the lab
/// cannot honour is refused when it would change what is judged (a graph, an id layout),
/// and noted otherwise (a mutex workload kind: the lab's clients ask as `lab run` does).
pub fn from_scenario(g: &GradeConfig, path: &std::path::Path, s: &Scenario) -> Result<Planned, LabError> {
    let file = path.display();
    let bad = |m: String| Err(LabError::Config(format!("scenario {file}: {m}")));
    if let Some(a) = &s.algorithm {
        let Some(info) = ringleader_registry::find(a) else {
            return bad(format!("unknown algorithm {a:?}"));
        };
        if info.family != g.family.family() {
            return bad(format!(
                "algorithm {a} is of family {:?}; this grade is for --family {}",
                info.family,
                g.family.name()
            ));
        }
    }
    for (field, set) in [
        ("graph", s.graph.is_some()),
        ("edges", s.edges.is_some()),
        ("ids", s.ids.is_some_and(|i| i.name() != "ascending")),
        ("clocks", s.clocks != Default::default()),
        ("network.fifo", s.network.fifo == Some(true)),
    ] {
        if set {
            return bad(format!(
                "field `{field}` has no meaning in the lab (complete network of n1..nN, ids ascending, no physical clocks, links not FIFO)"
            ));
        }
    }
    let mut c = LabConfig::new(g.family, &g.command, s.nodes.unwrap_or(g.nodes));
    c.lockstep = true;
    c.quiet = g.quiet;
    c.keep_records = true;
    c.seed = s.seed.unwrap_or(1);
    c.algo_like = g
        .algo_like
        .clone()
        .or_else(|| s.algorithm.clone().filter(|a| crate::textbook::names(g.family).contains(&a.as_str())));
    if let Some(l) = &s.network.latency {
        c.latency = l.clone();
    }
    c.loss = s.network.loss.unwrap_or(0.0);
    c.dup = s.network.dup.unwrap_or(0.0);
    c.crashes = s.faults.crash.clone();
    c.recoveries = s.faults.recover.clone();
    c.pauses = s.faults.pause.clone();
    c.partitions = s.faults.partition.clone();
    if let Some(d) = s.duration {
        c.duration = d.0;
    }
    let n = Uid::from(c.nodes);
    let pick = |i: &Initiators| -> Vec<Uid> {
        match i {
            Initiators::All => (1..=n).collect(),
            Initiators::Lowest => vec![1],
            Initiators::Highest => vec![n],
            Initiators::None => Vec::new(),
            Initiators::Ids(v) => v.clone(),
        }
    };
    let mut notes = Vec::new();
    let w = &s.workload;
    if let Some(h) = w.hold {
        c.hold = h.0;
    }
    match g.family {
        LabFamily::Mutex => {
            if let Some(r) = &w.requesters {
                c.requesters = pick(r);
            }
            if let Some(e) = w.entries {
                // The simulator counts entries in all; the lab's clients each ask `entries` times.
                let k = c.requester_uids().len().max(1) as u64;
                c.entries = e.div_ceil(k).max(1) as u32;
            }
            if let Some(kind) = w.kind {
                notes.push(format!(
                    "workload kind {}: the lab's clients ask as in `lab run` (each requester, think apart)",
                    kind.name()
                ));
            }
        }
        LabFamily::Election => {
            if let Some(i) = &s.initiators {
                c.initiators = pick(i);
            }
        }
        LabFamily::Clock => {
            if let Some(e) = w.entries {
                c.events = (e / u64::from(c.nodes).max(1)).max(1) as u32;
            }
        }
        LabFamily::Deadlock => {
            if let Some(e) = w.entries {
                c.entries = (e / u64::from(c.nodes).max(1)).max(1) as u32;
            }
            if let Some(p) = w.cycles {
                c.cycles = p;
            }
            if let Some(h) = w.holders {
                c.holders = h;
            }
            if let Some(v) = s.params.get("give_up") {
                let t = v.as_str().and_then(|t| t.parse::<ringleader_sim::scenario::TimeSpan>().ok());
                let Some(t) = t else {
                    return bad(format!("params.give_up = {v}: a duration such as \"5ms\""));
                };
                c.give_up = Some(t.0);
            }
        }
    }
    for k in s.params.keys().filter(|k| k.as_str() != "give_up") {
        notes.push(format!("param {k}: your node has its own settings; not passed on"));
    }
    c.validate().map_err(|e| LabError::Config(format!("scenario {file}: {e}")))?;
    let name = s
        .name
        .clone()
        .unwrap_or_else(|| path.file_stem().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default());
    Ok(Planned { scenario: format!("file: {name}"), config: c, expected: s.expect.violations.clone(), notes })
}

/// The family's built-in runs: (scenario name, configuration) in order.
fn builtin(g: &GradeConfig) -> Vec<(String, LabConfig)> {
    let base = |seed: u64| {
        let mut c = LabConfig::new(g.family, &g.command, g.nodes);
        c.seed = seed;
        c.lockstep = true;
        c.quiet = g.quiet;
        c.algo_like = g.algo_like.clone();
        c.keep_records = true;
        c
    };
    let n = Uid::from(g.nodes);
    let all: Vec<Uid> = (1..=n).collect();
    let jitter = Latency::Uniform(1_000_000, 10_000_000);
    let mut b = Vec::new();
    match g.family {
        LabFamily::Mutex => {
            let mut c = base(1);
            c.entries = 2;
            b.push(("textbook: 1 ms links, every node enters twice".to_string(), c));
            let mut c = base(1);
            c.requesters = vec![1];
            c.entries = 3;
            b.push(("one requester, no contention".to_string(), c));
            if g.nodes >= 2 {
                let mut c = base(1);
                c.pauses = vec!["2@1ms..30ms".parse().expect("a pause")];
                b.push(("node 2 paused from 1 ms to 30 ms".to_string(), c));
            }
            for seed in 1..=g.seeds {
                let mut c = base(seed);
                c.latency = jitter.clone();
                c.entries = 3;
                c.hold = 5_000_000;
                c.think = 1_000_000;
                b.push(("sweep: 1..10 ms links, contention".to_string(), c));
            }
        }
        LabFamily::Clock => {
            let mut c = base(1);
            c.events = 20;
            b.push(("1 ms links, 20 operations per node".to_string(), c));
            for seed in 1..=g.seeds {
                let mut c = base(seed);
                c.latency = jitter.clone();
                c.events = 20;
                b.push(("sweep: 1..10 ms links, 20 operations per node".to_string(), c));
            }
        }
        LabFamily::Deadlock => {
            let mut c = base(1);
            c.cycles = 1.0;
            b.push(("every request closes a cycle when it can".to_string(), c));
            let mut c = base(1);
            c.cycles = 0.0;
            c.entries = 3;
            b.push(("cycles only where every other node waits (cycles 0)".to_string(), c));
            let mut c = base(1);
            c.holders = 2;
            b.push(("up to two holders per request (AND model)".to_string(), c));
            for seed in 1..=g.seeds {
                let mut c = base(seed);
                c.latency = jitter.clone();
                c.entries = 3;
                c.holders = 2;
                b.push(("sweep: 1..10 ms links, up to two holders".to_string(), c));
            }
        }
        LabFamily::Election => {
            let bully = g.algo_like.as_deref() == Some("bully");
            if bully {
                let mut c = base(1);
                c.crashes = vec![At { uid: n, time: 0 }];
                c.initiators = vec![1];
                b.push((format!("textbook worst case: {n} crashed, 1 detects"), c));
                if n >= 3 {
                    let mut c = base(1);
                    c.crashes = vec![At { uid: n, time: 0 }];
                    c.initiators = vec![n - 1];
                    b.push((format!("textbook best case: {n} crashed, {} detects", n - 1), c));
                }
            } else {
                let mut c = base(1);
                c.initiators = vec![1];
                b.push(("one initiator (1)".to_string(), c));
                let mut c = base(1);
                c.initiators = vec![n];
                b.push((format!("one initiator holding the maximum ({n})"), c));
            }
            let mut c = base(1);
            c.initiators = all.clone();
            b.push(("all initiate".to_string(), c));
            for seed in 1..=g.seeds {
                let mut c = base(seed);
                c.latency = jitter.clone();
                c.initiators = all.clone();
                if bully {
                    c.crashes = vec![At { uid: n, time: 0 }];
                    c.initiators = (1..n).collect();
                }
                b.push(("sweep: 1..10 ms links, all initiate".to_string(), c));
            }
        }
    }
    b
}

/// What one run of a battery gave, whatever ran it: a learner's processes under the lab, or a
/// learner's crate under the simulator or the model checker.
#[derive(Clone, Debug)]
pub struct Judged {
    /// The scenario's name.
    pub scenario: String,
    /// Its seed (0 for the model checker, which draws nothing).
    pub seed: u64,
    /// The command line that repeats it.
    pub repro: String,
    /// Each property's verdict.
    pub properties: Vec<(String, Verdict)>,
    /// Messages per operation.
    pub per_operation: Option<f64>,
    /// The cost against the textbook, with `--algo-like`.
    pub cost: Option<crate::report::Cost>,
    /// Whether a node process exited on its own (learners' processes only).
    pub process: Option<Verdict>,
    /// Properties the scenario file expects violated.
    pub expected: Vec<String>,
    /// What of the scenario file the lab could not reproduce.
    pub notes: Vec<String>,
}

impl Judged {
    /// A lab run's report, as the card counts it.
    pub fn of_lab(
        scenario: String,
        seed: u64,
        expected: Vec<String>,
        notes: Vec<String>,
        report: &LabReport,
    ) -> Judged {
        let process = if report.process_died {
            Verdict::Violated {
                detail: report.notes.first().cloned().unwrap_or_default(),
                step: 0,
                time_ms: 0.0,
            }
        } else {
            Verdict::Holds
        };
        Judged {
            scenario,
            seed,
            repro: report.repro.clone(),
            properties: report.properties.iter().map(|p| (p.name.clone(), p.verdict.clone())).collect(),
            per_operation: report.per_operation,
            cost: report.cost.clone(),
            process: Some(process),
            expected,
            notes,
        }
    }
}

/// Runs the battery and fills the card.
pub fn grade(g: &GradeConfig) -> Result<Card, LabError> {
    let battery = battery(g)?;
    let mut card = Card::new(g.family.name(), g.nodes, g.algo_like.clone());
    for Planned { scenario, config: cfg, expected, notes } in battery {
        let report = run(&cfg)?;
        let passed = card.add(Judged::of_lab(scenario, cfg.seed, expected, notes, &report));
        if !passed && card.first_failure.is_none() {
            card.first_failure = Some(report);
        }
    }
    Ok(card)
}

impl Card {
    /// An empty card.
    pub fn new(family: &str, nodes: u32, algo_like: Option<String>) -> Card {
        Card {
            family: family.to_string(),
            nodes,
            algo_like,
            textbook: None,
            runs: Vec::new(),
            properties: Vec::new(),
            ok: true,
            first_failure: None,
        }
    }

    /// Counts one run: each property's verdict (a violation the scenario expects is not a
    /// failure), the cost, the processes. Returns whether the run passed.
    pub fn add(&mut self, run: Judged) -> bool {
        let Judged { scenario, seed, repro, properties, per_operation, cost, process, expected, notes } = run;
        let mut unexpected = false;
        let mut tally = |name: &str, verdict: &Verdict| {
            let i = match self.properties.iter().position(|p| p.name == name) {
                Some(i) => i,
                None => {
                    self.properties.push(PropertyCard {
                        name: name.to_string(),
                        held: 0,
                        not_judged: 0,
                        undecided: 0,
                        violated: 0,
                        expected: 0,
                        first_failure: None,
                    });
                    self.properties.len() - 1
                }
            };
            let p = &mut self.properties[i];
            match verdict {
                Verdict::Holds => p.held += 1,
                Verdict::NotJudged { .. } => p.not_judged += 1,
                Verdict::Undecided { .. } => p.undecided += 1,
                Verdict::Violated { .. } if expected.iter().any(|e| e == name) => p.expected += 1,
                Verdict::Violated { detail, .. } => {
                    unexpected = true;
                    p.violated += 1;
                    p.first_failure.get_or_insert_with(|| Failure {
                        scenario: scenario.clone(),
                        seed,
                        detail: detail.clone(),
                        repro: repro.clone(),
                    });
                }
            }
        };
        for (name, verdict) in &properties {
            tally(name, verdict);
        }
        if let Some(c) = &cost {
            let verdict = if c.ok() {
                Verdict::Holds
            } else {
                Verdict::Violated {
                    detail: format!(
                        "{} messages in {} operation(s): {} per operation, textbook {} ({})",
                        c.messages,
                        c.operations,
                        trim(c.messages as f64 / c.operations.max(1) as f64),
                        c.textbook.value(),
                        c.verdict
                    ),
                    step: 0,
                    time_ms: 0.0,
                }
            };
            tally("cost", &verdict);
        }
        if let Some(p) = &process {
            tally("process", p);
        }
        let unit = crate::report::unit(&self.family);
        self.textbook = self.textbook.take().or_else(|| {
            cost.as_ref().map(|c| {
                if c.textbook.per_run {
                    format!("{} (bounds of each run's own)", c.textbook.formula)
                } else {
                    format!("{} per {unit}", c.textbook.value())
                }
            })
        });
        let ok = !unexpected;
        self.runs.push(GradedRun {
            scenario,
            seed,
            ok,
            per_operation,
            cost: cost.as_ref().map(|c| c.verdict.clone()),
            repro,
            expected,
            notes,
        });
        self.ok &= ok;
        ok
    }

    /// The printed card.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "lab grade {}: {} nodes, {} runs{}",
            self.family,
            self.nodes,
            self.runs.len(),
            self.algo_like.as_ref().map(|a| format!(", like {a}")).unwrap_or_default()
        );
        let unit = crate::report::unit(&self.family);
        for r in &self.runs {
            let _ = writeln!(
                s,
                "  {:<4} {:<45} seed {:<3} {}{}",
                if !r.ok {
                    "FAIL"
                } else if r.expected.is_empty() {
                    "ok"
                } else {
                    "ok*"
                },
                r.scenario,
                r.seed,
                r.per_operation
                    .map(|p| format!("{} msgs/{unit}", trim(p)))
                    .unwrap_or_else(|| "no operation".into()),
                r.cost.as_ref().map(|c| format!(" ({c})")).unwrap_or_default()
            );
            if !r.expected.is_empty() {
                let _ = writeln!(s, "       * the scenario expects {} violated", r.expected.join(", "));
            }
            for n in &r.notes {
                let _ = writeln!(s, "       note: {n}");
            }
        }
        if let Some(t) = &self.textbook {
            let _ = writeln!(s, "textbook: {t}");
        }
        let expected = self.properties.iter().any(|p| p.expected > 0);
        let _ = writeln!(
            s,
            "property          held  not judged  undecided  violated{}",
            if expected { "  expected" } else { "" }
        );
        for p in &self.properties {
            let _ = writeln!(
                s,
                "  {:<15} {:>4}  {:>10}  {:>9}  {:>8}{}",
                p.name,
                p.held,
                p.not_judged,
                p.undecided,
                p.violated,
                if expected { format!("  {:>8}", p.expected) } else { String::new() }
            );
            if let Some(f) = &p.first_failure {
                let _ = writeln!(s, "    first failure: {} (seed {}): {}", f.scenario, f.seed, f.detail);
                let _ = writeln!(s, "    repro: {}", f.repro);
            }
        }
        let _ = writeln!(s, "{}", if self.ok { "PASS" } else { "FAIL" });
        s
    }
}
