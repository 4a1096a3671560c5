//! The result of a run, as `ringleader sim --json` prints it and as people read it.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::checkers::{Percentiles, Violation};

/// Message totals.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Messages {
    /// Sends (a send to a crashed node counts, and is dropped).
    pub sent: u64,
    /// Deliveries.
    pub delivered: u64,
    /// Drops: lost, cut by a partition, or addressed to a crashed node.
    pub dropped: u64,
    /// Sends by message kind.
    pub by_kind: BTreeMap<String, u64>,
    /// Sends that belong to failure detection (heartbeats …), counted in `by_kind` too.
    pub detection: u64,
}

/// Per-operation costs (per election won, per critical-section entry).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PerOperation {
    /// Operations completed.
    pub operations: u64,
    /// Messages (excluding detection) per operation.
    pub messages_mean: f64,
}

/// Whether a property held.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PropertyResult {
    /// The property.
    pub name: String,
    /// True when it was never violated.
    pub holds: bool,
    /// True when the scenario declares its violation as expected.
    pub expected_violation: bool,
}

/// Everything a run reports. Serialized, it is the `--json` object of `CLI.md`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    /// The scenario's title, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scenario: Option<String>,
    /// Algorithm name.
    pub algorithm: String,
    /// Family.
    pub family: String,
    /// Node count.
    pub nodes: u32,
    /// Seed.
    pub seed: u64,
    /// The communication graph (`--graph`), when the run chose one other than the algorithm's
    /// default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub graph: Option<String>,
    /// Events processed (steps).
    pub events: u64,
    /// Virtual time at the end, in ms.
    pub sim_time: f64,
    /// `quiescent` or `duration`.
    pub stopped: String,
    /// Wall-clock seconds (the only field that differs between identical runs).
    pub wall_seconds: f64,
    /// Message totals.
    pub messages: Messages,
    /// The family's result.
    pub outcome: serde_json::Map<String, serde_json::Value>,
    /// Per-operation cost.
    pub per_operation: PerOperation,
    /// Latency percentiles (virtual ms).
    pub latency: BTreeMap<String, Percentiles>,
    /// Every checked property.
    pub properties: Vec<PropertyResult>,
    /// First violation of each violated property.
    pub violations: Vec<Violation>,
    /// The violations the scenario declares as expected.
    pub expected_violations: Vec<String>,
    /// A command line that reproduces this run.
    pub repro: String,
}

impl Report {
    /// True when exactly the expected violations were found (none, if none were expected).
    pub fn as_expected(&self) -> bool {
        let mut found: Vec<&str> = self.violations.iter().map(|v| v.property).collect();
        found.sort_unstable();
        found.dedup();
        let mut want: Vec<&str> = self.expected_violations.iter().map(String::as_str).collect();
        want.sort_unstable();
        found == want
    }

    /// The exit status `CLI.md` specifies: 0 as expected, 2 otherwise.
    pub fn exit_code(&self) -> i32 {
        if self.as_expected() { 0 } else { 2 }
    }

    /// A readable account of the run.
    pub fn human(&self, description: Option<&str>) -> String {
        let mut s = String::new();
        if let Some(name) = &self.scenario {
            let _ = writeln!(s, "scenario   {name}");
        }
        if let Some(d) = description {
            for line in textwrap(d, 88) {
                let _ = writeln!(s, "           {line}");
            }
        }
        let _ = writeln!(
            s,
            "algorithm  {} ({}), {} nodes{}, seed {}",
            self.algorithm,
            self.family,
            self.nodes,
            self.graph.as_ref().map(|g| format!(", graph {g}")).unwrap_or_default(),
            self.seed
        );
        let _ = writeln!(
            s,
            "run        {} events, {:.3} ms of virtual time, stopped {}, {:.3} s wall",
            self.events, self.sim_time, self.stopped, self.wall_seconds
        );
        let kinds: Vec<String> =
            self.messages.by_kind.iter().filter(|&(_, &v)| v > 0).map(|(k, v)| format!("{k} {v}")).collect();
        let _ = writeln!(
            s,
            "messages   {} sent, {} delivered, {} dropped{}",
            self.messages.sent,
            self.messages.delivered,
            self.messages.dropped,
            if kinds.is_empty() { String::new() } else { format!("  ({})", kinds.join(", ")) }
        );
        let outcome: Vec<String> = self.outcome.iter().map(|(k, v)| format!("{k} = {v}")).collect();
        let _ = writeln!(s, "outcome    {}", outcome.join(", "));
        let _ = writeln!(
            s,
            "per op     {} operation(s), {:.2} messages each",
            self.per_operation.operations, self.per_operation.messages_mean
        );
        for (name, p) in &self.latency {
            let _ = writeln!(
                s,
                "latency    {name}: p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms ({} sample{})",
                p.p50,
                p.p99,
                p.max,
                p.count,
                if p.count == 1 { "" } else { "s" }
            );
        }
        let _ = writeln!(s, "properties");
        for p in &self.properties {
            let mark = match (p.holds, p.expected_violation) {
                (true, false) => "holds",
                (false, true) => "VIOLATED (expected by the scenario)",
                (false, false) => "VIOLATED",
                (true, true) => "holds, but the scenario expected a violation",
            };
            let _ = writeln!(s, "  {:<15} {mark}", p.name);
        }
        for v in &self.violations {
            let _ = writeln!(s, "  ! {} at {:.3} ms (step {}): {}", v.property, v.time, v.step, v.detail);
        }
        let verdict = if self.as_expected() {
            if self.expected_violations.is_empty() {
                "OK: every property holds"
            } else {
                "OK: the expected violations were found"
            }
        } else {
            "FAILED: the violations differ from what was expected"
        };
        let _ = writeln!(s, "verdict    {verdict}");
        let _ = writeln!(s, "repro      {}", self.repro);
        s
    }
}

fn textwrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = vec![String::new()];
    for word in text.split_whitespace() {
        let last = lines.last_mut().expect("one line");
        if !last.is_empty() && last.len() + 1 + word.len() > width {
            lines.push(word.to_string());
        } else {
            if !last.is_empty() {
                last.push(' ');
            }
            last.push_str(word);
        }
    }
    lines
}
