//! `ringleader verify`: merges the traces of real nodes and judges them with the simulator's
//! property checkers.
//!
//! Every node writes its own JSON-lines trace (wall-clock `time_ns`). The verifier reads them
//! all, orders the records by wall-clock time (all nodes of a loopback or Docker cluster read
//! the same kernel clock, and every causal chain crosses a message, so the order respects
//! causality), and replays them into the family's checker from
//! [`ringleader_judge::checkers`]: requests, emitted events, and the faults it can see. A node
//! whose trace shows a `crash` record (a launcher writes one when it kills the node) crashed
//! then; a second `start` is a restart: the node recovers (and, with no `crash` record before
//! it, crashed just before). Nodes named with `down` were killed for good: they crash after
//! their last record.

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
    /// Crashes a launcher recorded (`crash` records: `cluster ctl kill` and `restart`).
    pub crashes: u64,
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
        writeln!(
            f,
            "records:        {} (crashes recorded: {}, restarts seen: {})",
            self.records, self.crashes, self.restarts
        )?;
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

/// Opens a trace file to append records to it (creating it). A node killed in the middle of a
/// write leaves a partial last line; a newline ends it, so that the next record starts a line
/// of its own (and [`read_trace`] skips the partial one).
pub fn open_trace_for_append(path: &Path) -> std::io::Result<std::fs::File> {
    use std::io::{Read, Seek, SeekFrom, Write};
    let mut file = std::fs::OpenOptions::new().create(true).read(true).append(true).open(path)?;
    if file.metadata()?.len() > 0 {
        let mut last = [0u8; 1];
        file.seek(SeekFrom::End(-1))?;
        file.read_exact(&mut last)?;
        if last[0] != b'\n' {
            file.write_all(b"\n")?;
        }
    }
    Ok(file)
}

/// The time of the last complete record of a trace file (read from its last 64 KiB), if any.
fn last_record_time(path: &Path) -> std::io::Result<Option<u64>> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let len = file.metadata()?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(64 * 1024)))?;
    let mut tail = Vec::new();
    file.read_to_end(&mut tail)?;
    Ok(tail
        .split(|&b| b == b'\n')
        .rev()
        .find_map(|line| serde_json::from_slice::<TraceRecord>(line).ok())
        .map(|r| r.time_ns))
}

/// Reads one trace file.
pub fn read_trace(path: &Path) -> Result<Vec<TraceRecord>, VerifyError> {
    let text = std::fs::read_to_string(path)
        .map_err(|source| VerifyError::Read { path: path.to_path_buf(), source })?;
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        match serde_json::from_str::<TraceRecord>(line) {
            Ok(r) => out.push(r),
            // A node killed mid-write leaves a partial last line, and the node (or the launcher)
            // that appends next starts a new line: skip a broken line that is the last one or is
            // followed by a restart or a recorded crash; refuse anything else.
            Err(_)
                if lines.get(i + 1).map_or(!text.ends_with('\n'), |next| {
                    serde_json::from_str::<TraceRecord>(next)
                        .is_ok_and(|r| matches!(r.kind, RecordKind::Start | RecordKind::Crash))
                }) => {}
            Err(source) => {
                let number =
                    text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()).nth(i).map(|(n, _)| n);
                return Err(VerifyError::NotARecord {
                    path: path.to_path_buf(),
                    line: number.unwrap_or(i) + 1,
                    source,
                });
            }
        }
    }
    Ok(out)
}

/// Appends a `crash` record for the node at position `node` (id `uid`) to its trace: a
/// launcher that killed a node tells `verify` when it did (see [`verify`]). Call it once the
/// node is dead, with `killed_ns` the wall-clock time just before the signal was sent: the
/// crash is placed then, or just after the node's last record if that is later (a dying node
/// may finish the step it was in).
pub fn record_crash(
    path: &Path,
    node: NodeId,
    uid: Uid,
    killed_ns: u64,
    detail: &str,
) -> std::io::Result<()> {
    use std::io::Write;
    let time_ns = last_record_time(path)?.map_or(killed_ns, |t| killed_ns.max(t + 1));
    let mut r = TraceRecord::new(0, time_ns, RecordKind::Crash);
    r.node = Some(node);
    r.uid = Some(uid);
    r.detail = Some(detail.to_string());
    let mut line = serde_json::to_vec(&r).map_err(std::io::Error::other)?;
    line.push(b'\n');
    let mut file = open_trace_for_append(path)?;
    file.write_all(&line)?;
    file.sync_all()
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
    let info = ringleader_registry::find(&algorithm)
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
        crashes: 0,
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
            RecordKind::Crash if status[node as usize] == NodeStatus::Up => {
                // A launcher recorded when it killed the node.
                report.crashes += 1;
                status[node as usize] = NodeStatus::Crashed;
                let w = World { uids: &members, status: &status, rule: info.leader_rule };
                checker.on_crash(&w, node, at, &mut violations);
                belief[node as usize] = None;
            }
            RecordKind::Start => {
                if started[node as usize] {
                    report.restarts += 1;
                    if status[node as usize] == NodeStatus::Up {
                        // No recorded crash: the node crashed just before it started again.
                        status[node as usize] = NodeStatus::Crashed;
                        let w = World { uids: &members, status: &status, rule: info.leader_rule };
                        checker.on_crash(&w, node, at, &mut violations);
                    }
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
        if down_positions.contains(&node)
            && last_of.get(&node) == Some(&i)
            && status[node as usize] == NodeStatus::Up
        {
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

    #[test]
    fn a_recorded_crash_ends_the_node_then_and_needs_no_down() {
        let records = vec![
            rec(1, 0, RecordKind::Start),
            rec(1, 1, RecordKind::Start),
            acquire(2, 1),
            emit(3, 1, Event::Entered { fencing: 1 }),
            // The launcher killed node 2 while it held the section: its section ends there.
            rec(4, 1, RecordKind::Crash),
            acquire(5, 0),
            emit(6, 0, Event::Entered { fencing: 2 }),
            emit(7, 0, Event::Exited),
        ];
        let r = verify(records.clone(), &[]).unwrap();
        assert_eq!((r.crashes, r.restarts), (1, 0));
        assert!(r.violations.is_empty(), "node 2 is down after its crash record: {r}");
        // Restarted later: a recovery, not a second crash.
        let mut again = records;
        again.push(rec(8, 1, RecordKind::Start));
        again.push(acquire(9, 1));
        again.push(emit(10, 1, Event::Entered { fencing: 3 }));
        again.push(emit(11, 1, Event::Exited));
        let r = verify(again, &[]).unwrap();
        assert_eq!((r.crashes, r.restarts), (1, 1));
        assert!(r.violations.is_empty(), "{r}");
    }

    #[test]
    fn a_partial_line_before_a_restart_is_skipped() {
        let dir = std::env::temp_dir().join(format!("ringleader-verify-partial-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("node-1.jsonl");
        let line = |r: &TraceRecord| serde_json::to_string(r).unwrap();
        std::fs::write(&path, format!("{}\n{{\"step\":2,\"ti", line(&rec(1, 0, RecordKind::Start)))).unwrap();
        // The launcher records the kill, then the node starts again: both begin a new line.
        record_crash(&path, 0, 1, 5, "killed").unwrap();
        {
            use std::io::Write;
            let mut f = open_trace_for_append(&path).unwrap();
            writeln!(f, "{}", line(&rec(6, 0, RecordKind::Start))).unwrap();
        }
        let records = read_trace(&path).unwrap();
        let kinds: Vec<RecordKind> = records.iter().map(|r| r.kind).collect();
        assert_eq!(kinds, [RecordKind::Start, RecordKind::Crash, RecordKind::Start]);
        // A broken line elsewhere is still refused.
        std::fs::write(
            &path,
            format!("{}\nnot json\n{}\n", line(&rec(1, 0, RecordKind::Start)), line(&acquire(2, 0))),
        )
        .unwrap();
        assert!(read_trace(&path).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
