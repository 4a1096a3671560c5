//! What a lab run found: each property's verdict, the messages per operation beside the
//! textbook, what the processes did on their own, and the repro line.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use ringleader_core::trace::TraceRecord;
use serde::Serialize;

use crate::textbook::Textbook;

/// One property's verdict.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    /// The run proves it held.
    Holds,
    /// The run proves it broken.
    Violated {
        /// What went wrong.
        detail: String,
        /// The bench's step at which it was found.
        step: u64,
        /// Bench time, in ms.
        time_ms: f64,
    },
    /// The run was cut off while it was still pending.
    Undecided {
        /// What was pending.
        detail: String,
    },
    /// Not judged in this run (e.g. fencing when the node reports no tokens).
    NotJudged {
        /// Why.
        reason: String,
    },
}

impl Verdict {
    /// True unless violated.
    pub fn ok(&self) -> bool {
        !matches!(self, Verdict::Violated { .. })
    }
}

/// A property and its verdict.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PropertyVerdict {
    /// The property's name (the simulator's).
    pub name: String,
    /// Its verdict.
    #[serde(flatten)]
    pub verdict: Verdict,
}

/// The messages per operation beside the textbook.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cost {
    /// The textbook's cost.
    pub textbook: Textbook,
    /// Messages the nodes sent to each other.
    pub messages: u64,
    /// Operations completed (entries, elections).
    pub operations: u64,
    /// `exact`, `within`, `above`, `below`; `not compared` when the run had message faults
    /// or no operation completed.
    pub verdict: String,
}

impl Cost {
    /// True unless the nodes sent more (or fewer) messages than the textbook allows.
    pub fn ok(&self) -> bool {
        !matches!(self.verdict.as_str(), "above" | "below")
    }
}

/// A lab run's report.
#[derive(Clone, Debug, Serialize)]
pub struct LabReport {
    /// The family.
    pub family: String,
    /// Processes.
    pub nodes: u32,
    /// Seed.
    pub seed: u64,
    /// Lockstep or real time.
    pub lockstep: bool,
    /// The bench's steps (inputs handed to nodes, faults, client operations).
    pub steps: u64,
    /// Bench time at the end, in ms (virtual in lockstep).
    pub time_ms: f64,
    /// Wall-clock time of the run, in ms.
    pub wall_ms: f64,
    /// True when the run hit its time limit while still busy.
    pub cut_off: bool,
    /// Operations completed: critical-section entries, elections agreed on.
    pub operations: u64,
    /// Messages the nodes sent to each other (client traffic and `lab` messages excluded).
    pub messages: u64,
    /// Those messages by body type.
    pub by_kind: BTreeMap<String, u64>,
    /// Messages the network dropped (loss, partitions, crashed destinations).
    pub dropped: u64,
    /// Messages per operation, when any operation completed.
    pub per_operation: Option<f64>,
    /// Each property's verdict.
    pub properties: Vec<PropertyVerdict>,
    /// The cost beside the textbook, with `--algo-like`.
    pub cost: Option<Cost>,
    /// Processes that ended on their own, error answers and other things worth knowing.
    pub notes: Vec<String>,
    /// True when a process ended without being crashed by the bench.
    pub process_died: bool,
    /// The family outcome the checker reports (leader, entries, …).
    pub outcome: serde_json::Value,
    /// The command line that repeats the run.
    pub repro: String,
    /// The trace, when kept.
    #[serde(skip)]
    pub records: Vec<TraceRecord>,
    /// The first violation's window (step, end step), for the page.
    #[serde(skip)]
    pub violation_window: Option<(u64, Option<u64>)>,
}

impl LabReport {
    /// True when no property is violated, the cost is within the textbook's, and no process
    /// died on its own.
    pub fn ok(&self) -> bool {
        self.properties.iter().all(|p| p.verdict.ok())
            && self.cost.as_ref().is_none_or(Cost::ok)
            && !self.process_died
    }

    /// The cost line: `yours: 2(N−1) = 8 per entry, textbook 8 (exact)`.
    pub fn cost_line(&self) -> Option<String> {
        let c = self.cost.as_ref()?;
        let per = if c.operations > 0 { c.messages as f64 / c.operations as f64 } else { 0.0 };
        Some(format!(
            "messages: yours {} per {} ({} in {} operations), textbook {} ({}): {}",
            trim(per),
            self.unit(),
            c.messages,
            c.operations,
            c.textbook.value(),
            c.textbook.algorithm,
            c.verdict
        ))
    }

    fn unit(&self) -> &'static str {
        unit(&self.family)
    }

    /// The human-readable report.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "lab {}: {} nodes, seed {}, {}, {} steps, {:.3} ms{}, {:.0} ms wall",
            self.family,
            self.nodes,
            self.seed,
            if self.lockstep { "lockstep" } else { "real time" },
            self.steps,
            self.time_ms,
            if self.cut_off { " (cut off)" } else { "" },
            self.wall_ms
        );
        let kinds: Vec<String> = self.by_kind.iter().map(|(k, v)| format!("{k} {v}")).collect();
        let _ = writeln!(
            s,
            "{} {}(s), {} messages ({}), {} dropped{}",
            self.operations,
            self.unit(),
            self.messages,
            if kinds.is_empty() { "none".to_string() } else { kinds.join(", ") },
            self.dropped,
            self.per_operation.map(|p| format!(", {} per {}", trim(p), self.unit())).unwrap_or_default()
        );
        for p in &self.properties {
            let line = match &p.verdict {
                Verdict::Holds => "holds".to_string(),
                Verdict::Violated { detail, step, time_ms } => {
                    format!("VIOLATED at step {step} ({time_ms:.3} ms): {detail}")
                }
                Verdict::Undecided { detail } => format!("undecided (run cut off): {detail}"),
                Verdict::NotJudged { reason } => format!("not judged: {reason}"),
            };
            let _ = writeln!(s, "  {:<15} {line}", p.name);
        }
        if let Some(c) = self.cost_line() {
            let _ = writeln!(s, "{c}");
        }
        for n in &self.notes {
            let _ = writeln!(s, "note: {n}");
        }
        let _ = writeln!(s, "{}", if self.ok() { "ok" } else { "FAILED" });
        let _ = writeln!(s, "repro: {}", self.repro);
        s
    }
}

/// What one operation of `family` is called.
pub fn unit(family: &str) -> &'static str {
    match family {
        "mutex" => "entry",
        "election" => "election",
        "deadlock" => "detection",
        _ => "event",
    }
}

/// A number with at most two decimals and no trailing zeros.
pub fn trim(x: f64) -> String {
    let s = format!("{x:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

impl LabReport {
    /// The run's space-time page (the viewer of `ringleader sim --html`), drawn from the kept
    /// trace.
    pub fn page(&self, title: &str) -> String {
        let uids: Vec<u64> = (1..=u64::from(self.nodes)).collect();
        let properties: Vec<serde_json::Value> = self
            .properties
            .iter()
            .map(
                |p| serde_json::json!({"name": p.name, "holds": p.verdict.ok(), "expected_violation": false}),
            )
            .collect();
        let violations: Vec<serde_json::Value> = self
            .properties
            .iter()
            .filter_map(|p| match &p.verdict {
                Verdict::Violated { detail, step, .. } => {
                    Some(serde_json::json!({"property": p.name, "step": step, "detail": detail}))
                }
                _ => None,
            })
            .collect();
        let report = serde_json::json!({
            "algorithm": self.cost.as_ref().map_or("learner's node".to_string(), |c| format!("like {}", c.textbook.algorithm)),
            "family": self.family,
            "nodes": self.nodes,
            "seed": self.seed,
            "events": self.steps,
            "messages": {"sent": self.messages, "by_kind": self.by_kind},
            "properties": properties,
            "violations": violations,
            "repro": self.repro,
        });
        let verdict = match self.properties.iter().find(|p| !p.verdict.ok()) {
            Some(p) => format!("{} violated", p.name),
            None if self.ok() => "every property holds".to_string(),
            None => "FAILED".to_string(),
        };
        ringleader_viz::html(&ringleader_viz::RunView {
            title: title.to_string(),
            source: "lab",
            uids: &uids,
            records: &self.records,
            gaps: &[],
            total_records: self.records.len() as u64,
            report,
            verdict,
            ok: self.ok(),
            violation_window: self.violation_window,
            explore: None,
        })
    }
}
