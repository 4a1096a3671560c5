//! Grading: a battery of lockstep runs — the family's textbook scenarios and a seeded sweep of
//! random latencies — and a report card: each property with the first run that broke it and
//! its repro line, and the messages per operation against the textbook.
//!
//! Every run of the battery is in lockstep, so that a failing seed repeats (exactly, with a
//! node that writes the end-of-step marker).

use std::fmt::Write as _;
use std::time::Duration;

use ringleader_core::Uid;
use ringleader_sim::notation::{At, Latency};
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

/// The battery for `g`: (scenario name, configuration) in order.
pub fn battery(g: &GradeConfig) -> Vec<(String, LabConfig)> {
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

/// Runs the battery and fills the card.
pub fn grade(g: &GradeConfig) -> Result<Card, LabError> {
    let battery = battery(g);
    let mut card = Card {
        family: g.family.name().to_string(),
        nodes: g.nodes,
        algo_like: g.algo_like.clone(),
        textbook: None,
        runs: Vec::new(),
        properties: Vec::new(),
        ok: true,
        first_failure: None,
    };
    for (scenario, cfg) in battery {
        let report = run(&cfg)?;
        let seed = cfg.seed;
        let mut tally = |name: &str, verdict: &Verdict| {
            let i = match card.properties.iter().position(|p| p.name == name) {
                Some(i) => i,
                None => {
                    card.properties.push(PropertyCard {
                        name: name.to_string(),
                        held: 0,
                        not_judged: 0,
                        undecided: 0,
                        violated: 0,
                        first_failure: None,
                    });
                    card.properties.len() - 1
                }
            };
            let p = &mut card.properties[i];
            match verdict {
                Verdict::Holds => p.held += 1,
                Verdict::NotJudged { .. } => p.not_judged += 1,
                Verdict::Undecided { .. } => p.undecided += 1,
                Verdict::Violated { detail, .. } => {
                    p.violated += 1;
                    p.first_failure.get_or_insert_with(|| Failure {
                        scenario: scenario.clone(),
                        seed,
                        detail: detail.clone(),
                        repro: report.repro.clone(),
                    });
                }
            }
        };
        for p in &report.properties {
            tally(&p.name, &p.verdict);
        }
        if let Some(c) = &report.cost {
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
        let process = if report.process_died {
            Verdict::Violated {
                detail: report.notes.first().cloned().unwrap_or_default(),
                step: 0,
                time_ms: 0.0,
            }
        } else {
            Verdict::Holds
        };
        tally("process", &process);
        card.textbook = card.textbook.take().or_else(|| report.cost.as_ref().map(|c| c.textbook.value()));
        let ok = report.ok();
        card.runs.push(GradedRun {
            scenario,
            seed,
            ok,
            per_operation: report.per_operation,
            cost: report.cost.as_ref().map(|c| c.verdict.clone()),
            repro: report.repro.clone(),
        });
        if !ok {
            card.ok = false;
            if card.first_failure.is_none() {
                card.first_failure = Some(report);
            }
        }
    }
    Ok(card)
}

impl Card {
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
                if r.ok { "ok" } else { "FAIL" },
                r.scenario,
                r.seed,
                r.per_operation
                    .map(|p| format!("{} msgs/{unit}", trim(p)))
                    .unwrap_or_else(|| "no operation".into()),
                r.cost.as_ref().map(|c| format!(" ({c})")).unwrap_or_default()
            );
        }
        if let Some(t) = &self.textbook {
            let _ = writeln!(s, "textbook: {t} per {unit}");
        }
        let _ = writeln!(s, "property          held  not judged  undecided  violated");
        for p in &self.properties {
            let _ = writeln!(
                s,
                "  {:<15} {:>4}  {:>10}  {:>9}  {:>8}",
                p.name, p.held, p.not_judged, p.undecided, p.violated
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
