//! The result of a run, as `ringleader sim --json` prints it and as people read it.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use ringleader_core::Uid;
use ringleader_judge::checkers::{Percentiles, Undecided, Violation};
use serde::{Deserialize, Serialize};

/// Message totals.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Messages {
    /// Sends (a send to a crashed node counts, and is dropped).
    pub sent: u64,
    /// Deliveries.
    pub delivered: u64,
    /// Drops: lost, cut by a partition, or addressed to a crashed node.
    pub dropped: u64,
    /// Still in flight when the run ended (a paused receiver's inbox included):
    /// `sent = delivered + dropped + in_flight`.
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

/// A family's result: what the property checker measured, typed per family. Serialised, it is
/// one flat JSON object (`"outcome": {"agreed": true, "leader": 5}`), its fields in
/// alphabetical order, an absent optional field left out.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Outcome {
    /// A leader election.
    Election(ElectionOutcome),
    /// A super-peer election (a set of leaders).
    SuperPeers(SuperPeerOutcome),
    /// Mutual exclusion.
    Mutex(MutexOutcome),
    /// Physical clocks (and the `make` story).
    PhysicalClock(PhysicalClockOutcome),
    /// Logical clocks.
    LogicalClock(LogicalClockOutcome),
    /// Deadlock prevention (wait-die, wound-wait).
    DeadlockPrevention(PreventionOutcome),
    /// Deadlock detection.
    DeadlockDetection(DetectionOutcome),
    /// A failure detector.
    Detector(DetectorOutcome),
}

/// What a leader election ended with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ElectionOutcome {
    /// Every live node believes in the same leader.
    pub agreed: bool,
    /// From the first election's start to the last leader announcement, in ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub election_ms: Option<f64>,
    /// The leader every live node agrees on, if they do.
    pub leader: Option<Uid>,
}

/// What a super-peer election ended with (distances in thousandths of the algorithm's unit).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuperPeerOutcome {
    /// When the set of super-peers last changed, in ms.
    pub converged_ms: f64,
    /// The largest distance from a client to its super-peer.
    pub distance_max: u64,
    /// The mean distance from a client to its super-peer.
    pub distance_mean: f64,
    /// Super-peers among the live nodes.
    pub fraction: f64,
    /// The most clients one super-peer serves.
    pub load_max: u64,
    /// Clients per super-peer.
    pub load_mean: f64,
    /// The smallest spacing between two super-peers, relative to the algorithm's target
    /// spacing (when there are two).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_spacing: Option<f64>,
    /// Gossip rounds.
    pub rounds: u64,
    /// Super-peers lost (crashed or demoted).
    pub super_peer_losses: u64,
    /// Super-peers at the end.
    pub super_peers: u64,
    /// The number of super-peers the algorithm aims at.
    pub target: u32,
}

/// What mutual exclusion ended with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MutexOutcome {
    /// A coordinator took over from a crashed one (when any did).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coordinator_takeovers: Option<u64>,
    /// Critical-section entries.
    pub entries: u64,
    /// The most processes in the critical section at once.
    pub max_concurrent_holders: u64,
    /// The most entries that overtook a waiting request.
    pub max_overtaken: u64,
    /// Suspicions of a crashed process (when any).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspicions: Option<u64>,
    /// Tokens regenerated (when any were).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_regenerated: Option<u64>,
}

/// What physical clock synchronisation ended with (skews in ms).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PhysicalClockOutcome {
    /// Clock adjustments made.
    pub adjustments: u64,
    /// Adjustments that set a clock back.
    pub backward_steps: u64,
    /// The largest skew in the second half of the run.
    pub max_skew_after: f64,
    /// The largest skew before the first adjustment.
    pub max_skew_before: f64,
    /// `make`: rebuilds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rebuilds: Option<u64>,
    /// The largest skew per slice of the run: (end of the slice in s, skew in ms), when any
    /// adjustment was made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skew_timeline: Option<Vec<(f64, f64)>>,
    /// `make`: rebuilds skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skips: Option<u64>,
}

/// What a logical clock ended with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogicalClockOutcome {
    /// Ordered pairs of stamped events checked against happened-before.
    pub pairs_checked: u64,
    /// Stamped events.
    pub stamped_events: u64,
    /// Receives whose send was not seen (when any).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unmatched_receives: Option<u64>,
}

/// What deadlock prevention ended with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PreventionOutcome {
    /// Transactions aborted.
    pub aborts: u64,
    /// Deadlocks the scheme let happen.
    pub deadlocks_real: u64,
    /// Always 0: prevention reports nothing.
    pub deadlocks_reported: u64,
    /// Requests made.
    pub requests: u64,
    /// Transactions restarted.
    pub restarts: u64,
}

/// What deadlock detection ended with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DetectionOutcome {
    /// Deadlocks that formed.
    pub deadlocks_real: u64,
    /// Deadlocks reported (phantoms included).
    pub deadlocks_reported: u64,
    /// Victims aborted although their cycle was already gone.
    pub needless_aborts: u64,
    /// Reports of a cycle that was not there.
    pub phantom_reports: u64,
    /// Reports.
    pub reports: u64,
    /// Requests made.
    pub requests: u64,
    /// Victims aborted.
    pub victims: u64,
}

/// What a failure detector ended with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DetectorOutcome {
    /// Crashes detected.
    pub detections: u64,
    /// Live processes suspected.
    pub false_suspicions: u64,
    /// Crashes never detected.
    pub missed: u64,
    /// Time live processes were suspected, summed over monitors, in ms.
    pub mistake_ms: f64,
    /// Time crashed processes went unsuspected, summed over monitors, in ms.
    pub waiting_ms: f64,
}

impl Outcome {
    /// The outcome the property checker measured, from its fields; `None` when they are no
    /// family's outcome (a checker that names a field wrong).
    pub fn from_fields(fields: serde_json::Map<String, serde_json::Value>) -> Option<Outcome> {
        serde_json::from_value(serde_json::Value::Object(fields)).ok()
    }

    /// The fields by name, in alphabetical order (what the JSON object holds).
    pub fn fields(&self) -> serde_json::Map<String, serde_json::Value> {
        match serde_json::to_value(self) {
            Ok(serde_json::Value::Object(m)) => m,
            _ => serde_json::Map::new(),
        }
    }

    /// The numeric fields as numbers, by name.
    pub fn numbers(&self) -> Vec<(String, f64)> {
        self.fields().into_iter().filter_map(|(k, v)| Some((k, v.as_f64()?))).collect()
    }

    /// A leader election's outcome.
    pub fn election(&self) -> Option<&ElectionOutcome> {
        match self {
            Outcome::Election(o) => Some(o),
            _ => None,
        }
    }

    /// A super-peer election's outcome.
    pub fn super_peers(&self) -> Option<&SuperPeerOutcome> {
        match self {
            Outcome::SuperPeers(o) => Some(o),
            _ => None,
        }
    }

    /// Mutual exclusion's outcome.
    pub fn mutex(&self) -> Option<&MutexOutcome> {
        match self {
            Outcome::Mutex(o) => Some(o),
            _ => None,
        }
    }

    /// A physical clock's outcome.
    pub fn physical_clock(&self) -> Option<&PhysicalClockOutcome> {
        match self {
            Outcome::PhysicalClock(o) => Some(o),
            _ => None,
        }
    }

    /// A logical clock's outcome.
    pub fn logical_clock(&self) -> Option<&LogicalClockOutcome> {
        match self {
            Outcome::LogicalClock(o) => Some(o),
            _ => None,
        }
    }

    /// Deadlock prevention's outcome.
    pub fn prevention(&self) -> Option<&PreventionOutcome> {
        match self {
            Outcome::DeadlockPrevention(o) => Some(o),
            _ => None,
        }
    }

    /// Deadlock detection's outcome.
    pub fn detection(&self) -> Option<&DetectionOutcome> {
        match self {
            Outcome::DeadlockDetection(o) => Some(o),
            _ => None,
        }
    }

    /// A failure detector's outcome.
    pub fn detector(&self) -> Option<&DetectorOutcome> {
        match self {
            Outcome::Detector(o) => Some(o),
            _ => None,
        }
    }
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
            "messages   {} sent, {} delivered, {} dropped, {} in flight{}",
            self.messages.sent,
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
            if !self.undecided.is_empty() {
                format!(
                    "UNDECIDED: no violation, but {} cut off at {:.3} ms before {} could be decided; \
                     try a longer --duration (e.g. --duration {})",
                    "the run was",
                    self.sim_time,
                    self.undecided.iter().map(|u| u.property).collect::<Vec<_>>().join(", "),
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
