//! The result of a run, as `ringleader sim --json` prints it and as people read it.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use ringleader_judge::checkers::{Percentiles, Undecided, Violation};
pub use ringleader_judge::outcome::{
    DetectionOutcome, DetectorOutcome, ElectionOutcome, LogicalClockOutcome, MutexOutcome, Outcome,
    PhysicalClockOutcome, PreventionOutcome, SuperPeerOutcome,
};
use serde::Serialize;

/// Message totals.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Messages {
    /// Sends (a send to a crashed node counts, and is dropped).
    pub sent: u64,
    /// Deliveries.
    pub delivered: u64,
    /// Drops: lost, cut by a partition, or addressed to a crashed node.
    pub dropped: u64,
    /// Copies the network made of sent messages (`--dup`), not counted in `sent` or `by_kind`
    /// (the algorithm sent them once).
    #[serde(skip_serializing_if = "is_zero")]
    pub duplicated: u64,
    /// Still in flight when the run ended (a paused receiver's inbox included):
    /// `sent + duplicated = delivered + dropped + in_flight`.
    pub in_flight: u64,
    /// Sends by message kind.
    pub by_kind: BTreeMap<String, u64>,
    /// Sends that belong to failure detection (heartbeats …), counted in `by_kind` too.
    pub detection: u64,
    /// The kinds counted as detection (excluded from `per_operation`).
    pub detection_kinds: Vec<String>,
}

/// Per-operation costs, in the unit of the textbook formula that `ringleader table` prints:
/// per election, per critical-section entry, per synchronisation (Cristian), per round
/// (Berkeley), per poll (NTP), per detection (deadlock), per request (prevention schemes), per
/// normal node (DHT super-peers), per round (gossip super-peers), per stamped event (logical
/// clocks), per heartbeat period (failure detectors).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PerOperation {
    /// What one operation is (`election`, `entry`, `sync`, `round`, `poll`, `detection` …).
    pub unit: String,
    /// Operations completed.
    pub operations: u64,
    /// Messages (excluding detection) per operation.
    pub messages_mean: f64,
    /// Operations begun and not completed when the run stopped (critical-section requests
    /// still waiting, an election under way; see the family checker). Their messages are in
    /// `messages_mean`'s numerator but they are not in its denominator, so on a cut-off run
    /// `messages_mean` is an upper bound and `messages_mean_incl_unfinished` a lower one.
    #[serde(skip_serializing_if = "is_zero")]
    pub unfinished: u64,
    /// Messages (excluding detection) per operation counting the unfinished ones as
    /// operations, when there are any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub messages_mean_incl_unfinished: Option<f64>,
    /// The message kinds this run sent that the count leaves out as detection traffic
    /// (heartbeats, ACKs …; a failure detector's heartbeats are its algorithm and count).
    pub excluded: Vec<String>,
}

/// How a property came out: `holds`, `violated`, or `undecided` — an eventual property whose
/// promise was still pending when the run was cut off at `--duration`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PropertyStatus {
    /// Never violated (and decided).
    Holds,
    /// Violated: the run proves it.
    Violated,
    /// Neither: the run ended too early to decide.
    Undecided,
}

/// Whether a property held.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PropertyResult {
    /// The property.
    pub name: String,
    /// True when it was not violated (`holds` or `undecided`): `holds` keeps its old meaning,
    /// "no violation found"; read `status` to tell a decided property from an undecided one.
    pub holds: bool,
    /// `holds`, `violated` or `undecided`.
    pub status: PropertyStatus,
    /// Why it is undecided: what was pending, since when.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub undecided: Option<String>,
    /// True when the scenario declares its violation as expected.
    pub expected_violation: bool,
}

/// What the mutual-exclusion workload did with what it was asked.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WorkloadSummary {
    /// The pattern (`sequential`, `saturated`, `poisson`).
    pub kind: String,
    /// Requests asked for (`--entries`).
    pub asked: u64,
    /// Requests issued to a live node.
    pub issued: u64,
    /// Requests that reached a crashed node and were lost.
    pub lost: u64,
    /// Why fewer were issued than asked, when they were.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shortfall: Option<String>,
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
    /// The windowed engine's thread count, when the run used it (`--threads`): like
    /// `wall_seconds`, nothing else in the report depends on it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threads: Option<usize>,
    /// Message totals.
    pub messages: Messages,
    /// The family's result.
    pub outcome: Outcome,
    /// Per-operation cost.
    pub per_operation: PerOperation,
    /// Latency percentiles (virtual ms).
    pub latency: BTreeMap<String, Percentiles>,
    /// What the mutual-exclusion workload issued, when the run has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workload: Option<WorkloadSummary>,
    /// Every checked property.
    pub properties: Vec<PropertyResult>,
    /// First violation of each violated property.
    pub violations: Vec<Violation>,
    /// The eventual properties the run ended too early to decide.
    pub undecided: Vec<Undecided>,
    /// Why no progress was possible any more, when properties were left undecided and the
    /// run proves that a longer one could not decide them: "after T ms: …" (today: an
    /// algorithm that needs a majority up, with more than half of its nodes crashed and no
    /// recovery planned).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_progress: Option<String>,
    /// The violations the scenario declares as expected.
    pub expected_violations: Vec<String>,
    /// A command line that reproduces this run.
    pub repro: String,
}

impl Report {
    /// The verdict, in the words of the `verdict` line the command line prints.
    pub fn verdict_line(&self) -> String {
        let human = self.human(None);
        human.lines().find_map(|l| l.strip_prefix("verdict")).unwrap_or("").trim().to_string()
    }

    /// True when exactly the expected violations were found (none, if none were expected).
    pub fn as_expected(&self) -> bool {
        let mut found: Vec<&str> = self.violations.iter().map(|v| v.property.name()).collect();
        found.sort_unstable();
        found.dedup();
        let mut want: Vec<&str> = self.expected_violations.iter().map(String::as_str).collect();
        want.sort_unstable();
        found == want
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
        if let Some(threads) = self.threads {
            let _ =
                writeln!(s, "engine     windowed, {threads} threads (the same run on any number of them)");
        }
        let kinds: Vec<String> =
            self.messages.by_kind.iter().filter(|&(_, &v)| v > 0).map(|(k, v)| format!("{k} {v}")).collect();
        let _ = writeln!(
            s,
            "messages   {} sent{}, {} delivered, {} dropped, {} in flight{}",
            self.messages.sent,
            match self.messages.duplicated {
                0 => String::new(),
                n => format!(" (and {n} duplicated)"),
            },
            self.messages.delivered,
            self.messages.dropped,
            self.messages.in_flight,
            if kinds.is_empty() { String::new() } else { format!("  ({})", kinds.join(", ")) }
        );
        let outcome: Vec<String> = self.outcome.fields().iter().map(|(k, v)| format!("{k} = {v}")).collect();
        let _ = writeln!(s, "outcome    {}", outcome.join(", "));
        let po = &self.per_operation;
        let _ = writeln!(
            s,
            "per op     {} {}, {:.2} messages each{}",
            po.operations,
            plural(&po.unit, po.operations),
            po.messages_mean,
            if po.excluded.is_empty() {
                String::new()
            } else {
                format!(" (detection excluded: {})", po.excluded.join(", "))
            }
        );
        if let Some(incl) = po.messages_mean_incl_unfinished {
            let _ = writeln!(
                s,
                "           {} more {} unfinished when the run stopped: the messages sent for them are counted, so \
                 the cost per {} lies between {incl:.2} (counting them as done) and {:.2}",
                po.unfinished,
                plural(&po.unit, po.unfinished),
                po.unit,
                po.messages_mean
            );
        }
        if let Some(w) = &self.workload {
            let _ = writeln!(
                s,
                "workload   {}: {} of {} requests issued{}{}",
                w.kind,
                w.issued,
                w.asked,
                if w.lost > 0 { format!(", {} lost to crashed nodes", w.lost) } else { String::new() },
                w.shortfall.as_ref().map(|r| format!(" ({r})")).unwrap_or_default()
            );
        }
        for (name, p) in &self.latency {
            let _ = writeln!(
                s,
                "latency    {name}: min {:.3} ms, p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms, mean {:.3} ms ({} sample{})",
                p.min,
                p.p50,
                p.p99,
                p.max,
                p.mean,
                p.count,
                if p.count == 1 { "" } else { "s" }
            );
        }
        let _ = writeln!(s, "properties");
        for p in &self.properties {
            let mark = match (p.status, p.expected_violation) {
                (PropertyStatus::Holds, false) => "holds",
                (PropertyStatus::Violated, true) => "VIOLATED (expected by the scenario)",
                (PropertyStatus::Violated, false) => "VIOLATED",
                (PropertyStatus::Holds, true) => "holds, but the scenario expected a violation",
                (PropertyStatus::Undecided, false) => "undecided (the run was cut off first)",
                (PropertyStatus::Undecided, true) => "undecided, but the scenario expected a violation",
            };
            let _ = writeln!(s, "  {:<15} {mark}", p.name);
        }
        for v in &self.violations {
            let _ = writeln!(s, "  ! {} at {:.3} ms (step {}): {}", v.property, v.time, v.step, v.detail);
        }
        for u in &self.undecided {
            let _ = writeln!(s, "  ? {} at {:.3} ms: {}", u.property, self.sim_time, u.detail);
        }
        let verdict = if self.as_expected() {
            if let (false, Some(why)) = (self.undecided.is_empty(), &self.no_progress) {
                format!(
                    "NO PROGRESS POSSIBLE {why}; {} cannot be decided by a longer run",
                    self.undecided.iter().map(|u| u.property.name()).collect::<Vec<_>>().join(", ")
                )
            } else if !self.undecided.is_empty() {
                format!(
                    "UNDECIDED: no violation, but {} cut off at {:.3} ms before {} could be decided; \
                     try a longer --duration (e.g. --duration {})",
                    "the run was",
                    self.sim_time,
                    self.undecided.iter().map(|u| u.property.name()).collect::<Vec<_>>().join(", "),
                    longer_duration(self.sim_time)
                )
            } else if let Some(reason) = self.workload.as_ref().and_then(|w| {
                w.shortfall.as_ref().map(|r| format!("{} of {} requests issued: {r}", w.issued, w.asked))
            }) {
                format!("INCOMPLETE: no violation, but the workload did not do what was asked ({reason})")
            } else if self.expected_violations.is_empty() {
                "OK: every property holds".into()
            } else {
                "OK: the expected violations were found".into()
            }
        } else {
            "FAILED: the violations differ from what was expected".into()
        };
        let _ = writeln!(s, "verdict    {verdict}");
        let _ = writeln!(s, "repro      {}", self.repro);
        s
    }
}

/// `unit`, in the plural unless `count` is 1.
fn plural(unit: &str, count: u64) -> String {
    if count == 1 {
        unit.to_string()
    } else if let Some(stem) = unit.strip_suffix('y') {
        format!("{stem}ies")
    } else {
        format!("{unit}s")
    }
}

/// A `--duration` ten times `ms` (rounded up to a readable value).
fn longer_duration(ms: f64) -> String {
    let target = (ms * 10.0).max(1.0);
    if target >= 1000.0 {
        format!("{}s", (target / 1000.0).ceil() as u64)
    } else {
        format!("{}ms", target.ceil() as u64)
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

fn is_zero(x: &u64) -> bool {
    *x == 0
}
