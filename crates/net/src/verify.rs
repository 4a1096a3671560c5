//! `ringleader verify`: merges the traces of real nodes and judges them with the simulator's
//! property checkers.
//!
//! Every node writes its own JSON-lines trace (wall-clock `time_ns`). The verifier reads them
//! all, orders the records by wall-clock time (all nodes of a loopback or Docker cluster read
//! the same kernel clock, and every causal chain crosses a message, so the order respects
//! causality), and replays them into the family's checker from
//! [`ringleader_judge::checkers`]: requests, emitted events, and the faults it can see. A node
//! whose trace shows a second `start` was restarted: it crashed (lost its memory) just before.
//! Nodes named with `down` were killed for good: they crash after their last record.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use ringleader_algorithms::Family;
use ringleader_core::trace::{RecordKind, TraceRecord};
use ringleader_core::{Event, NodeId, Uid};
use ringleader_judge::checkers::{self, Moment, NodeStatus, Property, Violations, World};
use serde::Serialize;

/// What `verify` found.
#[derive(Clone, Debug, Serialize)]
pub struct VerifyReport {
    /// The algorithm the traces ran.
    pub algorithm: String,
    /// Its family.
    pub family: String,
    /// Member ids.
    pub members: Vec<Uid>,
    /// Trace records read.
    pub records: u64,
    /// Messages sent, delivered, dropped.
    pub messages: BTreeMap<String, u64>,
    /// Restarts seen (a second `start` of a node).
    pub restarts: u64,
    /// The properties checked.
    pub properties: Vec<&'static str>,
    /// Operations seen (critical-section entries, leaderships).
    pub operations: u64,
    /// Times some node's known leader changed.
    pub leader_changes: u64,
    /// The family checker's outcome fields.
    pub outcome: serde_json::Map<String, serde_json::Value>,
    /// Violations found (property, time in ms from the first record, detail).
    pub violations: Vec<(String, f64, String)>,
}

impl fmt::Display for VerifyReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "algorithm:      {} ({})", self.algorithm, self.family)?;
        writeln!(f, "members:        {:?}", self.members)?;
        writeln!(f, "records:        {} (restarts seen: {})", self.records, self.restarts)?;
        writeln!(
            f,
            "messages:       {}",
            self.messages.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ")
        )?;
        writeln!(f, "properties:     {}", self.properties.join(", "))?;
        writeln!(f, "operations:     {}", self.operations)?;
        writeln!(f, "leader changes: {}", self.leader_changes)?;
        if !self.outcome.is_empty() {
            writeln!(f, "outcome:        {}", serde_json::Value::Object(self.outcome.clone()))?;
        }
        if self.violations.is_empty() {
            write!(f, "violations:     none")
        } else {
            writeln!(f, "violations:     {}", self.violations.len())?;
            for (p, t, d) in &self.violations {
                writeln!(f, "  {p} at {t:.3} ms: {d}")?;
            }
            Ok(())
        }
    }
}

/// Why traces could not be judged.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// A trace file could not be read.
    #[error("{}: {source}", path.display())]
    Read {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A line of a trace file is not a trace record.
    #[error("{}:{line}: not a trace record: {source}", path.display())]
    NotARecord {
        /// The file.
        path: std::path::PathBuf,
        /// The 1-based line.
        line: usize,
        /// Why.
        source: serde_json::Error,
    },
    /// No node's start record.
    #[error("no start record: these are not node traces")]
    NoStart,
    /// The start record names an algorithm there is not.
    #[error("unknown algorithm {0:?} in the traces")]
    UnknownAlgorithm(String),
    /// The start record names no members.
    #[error("start record names no members")]
    NoMembers,
    /// Two start records describe different setups.
    #[error("traces disagree on the setup: {0:?} vs {1:?}")]
    Disagree(String, String),
    /// `--down` names an id that is not a member.
    #[error("--down names an id that is not a member ({0:?})")]
    NotAMember(Vec<Uid>),
}

/// Reads one trace file.
pub fn read_trace(path: &Path) -> Result<Vec<TraceRecord>, VerifyError> {
    let text = std::fs::read_to_string(path)
        .map_err(|source| VerifyError::Read { path: path.to_path_buf(), source })?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<TraceRecord>(line) {
            Ok(r) => out.push(r),
            // A node killed mid-write leaves a partial last line: skip it, refuse anything else.
            Err(_) if i + 1 == text.lines().count() && !text.ends_with('\n') => {}
            Err(source) => {
                return Err(VerifyError::NotARecord { path: path.to_path_buf(), line: i + 1, source });
            }
        }
    }
    Ok(out)
}

/// Judges the merged `records` of every node; `down` lists ids killed for good.
pub fn verify(mut records: Vec<TraceRecord>, down: &[Uid]) -> Result<VerifyReport, VerifyError> {
    let start = records
        .iter()
        .find(|r| r.kind == RecordKind::Start && r.detail.is_some())
        .ok_or(VerifyError::NoStart)?;
    let detail = start.detail.clone().unwrap_or_default();
    let mut algorithm = String::new();
    let mut members: Vec<Uid> = Vec::new();
    for part in detail.split_whitespace() {
        if let Some(a) = part.strip_prefix("algorithm=") {
            algorithm = a.to_string();
        } else if let Some(m) = part.strip_prefix("members=") {
            members = m.split(',').filter_map(|x| x.parse().ok()).collect();
        }
    }
    let info = ringleader_algorithms::find(&algorithm)
        .ok_or_else(|| VerifyError::UnknownAlgorithm(algorithm.clone()))?;
    if members.is_empty() {
        return Err(VerifyError::NoMembers);
    }
    for r in &records {
        if r.kind == RecordKind::Start
            && let Some(d) = &r.detail
            && *d != detail
        {
            return Err(VerifyError::Disagree(detail, d.clone()));
        }
    }
    let n = members.len();
    records.sort_by_key(|r| (r.time_ns, r.uid, r.step));
    let t0 = records.first().map(|r| r.time_ns).unwrap_or(0);
    let mut last_of: BTreeMap<NodeId, usize> = BTreeMap::new();
    for (i, r) in records.iter().enumerate() {
        if let Some(node) = r.node {
            last_of.insert(node, i);
        }
    }
    let down_positions: Vec<NodeId> =
        down.iter().filter_map(|d| members.iter().position(|m| m == d).map(|p| p as NodeId)).collect();
    if down_positions.len() != down.len() {
        return Err(VerifyError::NotAMember(members));
    }

    let mut checker = checkers::for_family(info.family, n);
    let mut violations = Violations::default();
    let mut status = vec![NodeStatus::Up; n];
    let mut started = vec![false; n];
    let mut belief: Vec<Option<Uid>> = vec![None; n];
    let mut report = VerifyReport {
        algorithm: algorithm.clone(),
        family: info.family.name().into(),
        members: members.clone(),
        records: records.len() as u64,
        messages: BTreeMap::new(),
        restarts: 0,
        properties: Vec::new(),
        operations: 0,
        leader_changes: 0,
        outcome: Default::default(),
        violations: Vec::new(),
    };
    for (i, r) in records.iter().enumerate() {
        let Some(node) = r.node.filter(|&p| (p as usize) < n) else { continue };
        let at = Moment { time: r.time_ns - t0, step: i as u64 };
        match r.kind {
            RecordKind::Start => {
                if started[node as usize] {
                    report.restarts += 1;
                    status[node as usize] = NodeStatus::Crashed;
                    let w = World { uids: &members, status: &status, rule: info.leader_rule };
                    checker.on_crash(&w, node, at, &mut violations);
                    status[node as usize] = NodeStatus::Up;
                    let w = World { uids: &members, status: &status, rule: info.leader_rule };
                    checker.on_recover(&w, node, at, &mut violations);
                    belief[node as usize] = None;
                }
                started[node as usize] = true;
            }
            RecordKind::Request => {
                if let Some(req) = &r.request {
                    let w = World { uids: &members, status: &status, rule: info.leader_rule };
                    checker.on_request(&w, node, req, at, &mut violations);
                }
            }
            RecordKind::Emit => {
                if let Some(ev) = &r.event {
                    match ev {
                        Event::Leader { leader, .. } if belief[node as usize] != Some(*leader) => {
                            belief[node as usize] = Some(*leader);
                            report.leader_changes += 1;
                        }
                        Event::LeaderLost => belief[node as usize] = None,
                        _ => {}
                    }
                    let w = World { uids: &members, status: &status, rule: info.leader_rule };
                    checker.on_event(&w, node, ev, at, &mut violations);
                }
            }
            RecordKind::Send => *report.messages.entry("sent".into()).or_default() += 1,
            RecordKind::Deliver => *report.messages.entry("delivered".into()).or_default() += 1,
            RecordKind::Drop => *report.messages.entry("dropped".into()).or_default() += 1,
            _ => {}
        }
        if down_positions.contains(&node) && last_of.get(&node) == Some(&i) {
            status[node as usize] = NodeStatus::Crashed;
            let w = World { uids: &members, status: &status, rule: info.leader_rule };
            checker.on_crash(&w, node, at, &mut violations);
        }
    }
    let end =
        Moment { time: records.last().map(|r| r.time_ns - t0).unwrap_or(0), step: records.len() as u64 };
    let w = World { uids: &members, status: &status, rule: info.leader_rule };
    checker.finish(&w, end, &mut violations);
    let fam = checker.report(&w);
    report.properties = checker.properties().into_iter().map(Property::name).collect();
    report.operations = fam.operations;
    report.outcome = fam.outcome.fields();
    if info.family == Family::Election {
        report.outcome.insert("final_beliefs".into(), serde_json::to_value(&belief).unwrap_or_default());
    }
    report.violations =
        violations.list().iter().map(|v| (v.property.to_string(), v.time, v.detail.clone())).collect();
    Ok(report)
}

/// Reads and judges trace files.
pub fn verify_files(paths: &[impl AsRef<Path>], down: &[Uid]) -> Result<VerifyReport, VerifyError> {
    let mut all = Vec::new();
    for p in paths {
        all.extend(read_trace(p.as_ref())?);
    }
    verify(all, down)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(t: u64, node: NodeId, kind: RecordKind) -> TraceRecord {
        let mut r = TraceRecord::new(t, t, kind);
        r.node = Some(node);
        r.uid = Some(node as Uid + 1);
        if kind == RecordKind::Start {
            r.detail = Some("algorithm=central members=1,2".into());
        }
        r
    }

    fn emit(t: u64, node: NodeId, event: Event) -> TraceRecord {
        let mut r = rec(t, node, RecordKind::Emit);
        r.event = Some(event);
        r
    }

    fn acquire(t: u64, node: NodeId) -> TraceRecord {
        let mut r = rec(t, node, RecordKind::Request);
        r.request = Some(ringleader_core::Request::Acquire);
        r
    }

    fn names(r: &VerifyReport) -> Vec<&str> {
        r.violations.iter().map(|v| v.0.as_str()).collect()
    }

    #[test]
    fn clean_traces_hold_and_order_does_not_matter() {
        let mut records = vec![
            rec(1, 0, RecordKind::Start),
            rec(1, 1, RecordKind::Start),
            acquire(2, 1),
            emit(3, 1, Event::Entered { fencing: 1 }),
            emit(4, 1, Event::Exited),
            acquire(5, 0),
            emit(6, 0, Event::Entered { fencing: 2 }),
            emit(7, 0, Event::Exited),
        ];
        records.reverse();
        let r = verify(records, &[]).unwrap();
        assert_eq!(r.operations, 2);
        assert!(r.violations.is_empty(), "{r}");
    }

    #[test]
    fn overlap_and_stale_fencing_tokens_are_found() {
        let records = vec![
            rec(1, 0, RecordKind::Start),
            rec(1, 1, RecordKind::Start),
            acquire(2, 0),
            acquire(2, 1),
            emit(3, 0, Event::Entered { fencing: 5 }),
            emit(4, 1, Event::Entered { fencing: 5 }),
            emit(5, 0, Event::Exited),
            emit(6, 1, Event::Exited),
        ];
        let r = verify(records, &[]).unwrap();
        assert_eq!(names(&r), ["fencing", "safety"]);
    }

    #[test]
    fn a_restart_is_a_crash_and_down_nodes_stop_waiting() {
        let records = vec![
            rec(1, 0, RecordKind::Start),
            rec(1, 1, RecordKind::Start),
            acquire(2, 1),
            emit(3, 1, Event::Entered { fencing: 1 }),
            // Node 1 restarts while holding: its section ends with the crash.
            rec(4, 1, RecordKind::Start),
            acquire(5, 0),
            emit(6, 0, Event::Entered { fencing: 2 }),
            emit(7, 0, Event::Exited),
            acquire(8, 1),
        ];
        let r = verify(records.clone(), &[]).unwrap();
        assert_eq!(r.restarts, 1);
        assert_eq!(names(&r), ["liveness", "no_starvation"], "node 2 waits at the end: {r}");
        let r = verify(records, &[2]).unwrap();
        assert!(r.violations.is_empty(), "node 2 was killed for good: {r}");
        assert!(verify(vec![rec(1, 0, RecordKind::Timer)], &[]).is_err());
    }
}
