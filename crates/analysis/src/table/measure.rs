//! Measuring one case: running it, turning each run into numbers, and judging the row.

use std::collections::BTreeMap;

use ringleader_algorithms::deadlock::chandy_misra_haas;
use ringleader_core::trace::{RecordKind, TraceRecord};
use ringleader_core::{Event, NodeId, Request};
use ringleader_sim::{Report, RunConfig, RunOptions};
use serde::{Deserialize, Serialize};

use super::cases::Case;
use super::formulas::{self, Count};
use super::{Row, TableError};

/// One finished run, as a case's judge sees it.
pub struct Measured<'a> {
    /// The run's configuration.
    pub cfg: &'a RunConfig,
    /// Its report.
    pub report: &'a Report,
    /// Its trace, when the case asks for it ([`Case::trace`]).
    pub records: &'a [TraceRecord],
}

impl Measured<'_> {
    /// N.
    pub fn n(&self) -> u64 {
        u64::from(self.cfg.nodes)
    }

    /// Sends of kind `k` (0 when the algorithm has no such kind).
    pub fn kind(&self, k: &str) -> u64 {
        self.report.messages.by_kind.get(k).copied().unwrap_or(0)
    }

    /// Whether the report counts `kind` as detection traffic (heartbeats, ACKs …).
    fn is_detection(&self, kind: &str) -> bool {
        self.report.messages.detection_kinds.iter().any(|k| k == kind)
    }

    /// Every message but detection counts; `ops` operations, formula total `value`.
    pub fn all(&self, ops: u64, value: u64) -> Judged {
        let by_kind: BTreeMap<String, u64> = self
            .report
            .messages
            .by_kind
            .iter()
            .filter(|&(k, &v)| v > 0 && !self.is_detection(k))
            .map(|(k, &v)| (k.clone(), v))
            .collect();
        let measured = self.report.messages.sent - self.report.messages.detection;
        let mut j = Judged { ops, measured, value, by_kind, counted: None, problems: Vec::new() };
        let sum: u64 = j.by_kind.values().sum();
        if sum != measured {
            j.problems.push(format!(
                "the kinds shown add up to {sum}, the report says {measured} non-detection sends"
            ));
        }
        j
    }

    /// Every message but detection counts against the textbook `count` over `ops` operations,
    /// and every kind the count names must total exactly what it says.
    pub fn count(&self, ops: u64, count: &Count) -> Judged {
        count.kinds.iter().fold(self.all(ops, count.total), |j, &(kind, want)| j.kind(kind, want))
    }

    /// Only the kind `counted` counts (the formula is about it alone); every kind is shown.
    pub fn only(&self, counted: &'static str, ops: u64, value: u64) -> Judged {
        let by_kind: BTreeMap<String, u64> = self
            .report
            .messages
            .by_kind
            .iter()
            .filter(|&(_, &v)| v > 0)
            .map(|(k, &v)| (k.clone(), v))
            .collect();
        Judged {
            ops,
            measured: self.kind(counted),
            value,
            by_kind,
            counted: Some(counted),
            problems: Vec::new(),
        }
    }
}

/// A run's numbers, before they become a row.
pub struct Judged {
    /// Operations completed.
    pub ops: u64,
    /// Messages the formula counts, over all operations.
    pub measured: u64,
    /// The formula's total over the same operations.
    pub value: u64,
    /// Messages by kind (totals).
    pub by_kind: BTreeMap<String, u64>,
    /// The one kind the formula counts, if not all non-detection messages.
    pub counted: Option<&'static str>,
    /// Checks beyond the total that failed (a kind's exact count, a detection's probes …).
    pub problems: Vec<String>,
}

impl Judged {
    /// Also requires `kind` to total exactly `want`.
    pub fn kind(mut self, kind: &str, want: u64) -> Judged {
        let got = self.by_kind.get(kind).copied().unwrap_or(0);
        if got != want {
            self.problems.push(format!("{kind}: {got} sent, the textbook says {want}"));
        }
        self
    }

    /// Adds another seed's numbers to these.
    fn add(&mut self, other: Judged) {
        self.ops += other.ops;
        self.measured += other.measured;
        self.value += other.value;
        for (k, v) in other.by_kind {
            *self.by_kind.entry(k).or_default() += v;
        }
        self.problems.extend(other.problems);
    }
}

/// Chandy-Misra-Haas from the trace: for every `DeadlockDetected` (report only: the initiator
/// reports), the probes its initiation sent against the length of the cycle it found. An
/// initiation is the initiator and the number of its wait, the first hop of every probe's
/// path.
pub fn cmh_detections(m: &Measured) -> Judged {
    let n = m.cfg.nodes as usize;
    let mut wait = vec![0u64; n];
    let mut probes: BTreeMap<(NodeId, u64), u64> = BTreeMap::new();
    let mut found: Vec<((NodeId, u64), u64)> = Vec::new();
    for r in m.records {
        let node = r.node.unwrap_or(0);
        match r.kind {
            RecordKind::Request => {
                if let Some(Request::WaitFor { holders }) = &r.request
                    && !holders.is_empty()
                {
                    wait[node as usize] += 1;
                }
            }
            RecordKind::Emit => {
                if let Some(Event::DeadlockDetected { cycle }) = &r.event {
                    found.push(((node, wait[node as usize]), cycle.len() as u64));
                }
            }
            RecordKind::Send => {
                let msg = r.msg.as_ref().and_then(|v| chandy_misra_haas::Msg::deserialize(v).ok());
                if let Some(chandy_misra_haas::Msg::Probe { initiator, path, .. }) = msg
                    && let Some(&(_, initiation)) = path.first()
                {
                    *probes.entry((initiator, initiation)).or_default() += 1;
                }
            }
            _ => {}
        }
    }
    let mut j = Judged {
        ops: found.len() as u64,
        measured: 0,
        value: 0,
        by_kind: BTreeMap::new(),
        counted: Some("probe"),
        problems: Vec::new(),
    };
    for (key, len) in found {
        let sent = probes.get(&key).copied().unwrap_or(0);
        let want = formulas::chandy_misra_haas(len).total;
        j.measured += sent;
        j.value += want;
        if sent != want {
            j.problems.push(format!(
                "seed {}: the detection by node {} sent {sent} probes for a cycle of {len}",
                m.cfg.seed, key.0
            ));
        }
    }
    j.by_kind.insert("probe".into(), j.measured);
    j
}

/// A row's verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// The measured total equals the formula's.
    Exact,
    /// The formula is an upper bound and the measured total is below it.
    Within,
    /// Anything else: a bug in an algorithm, in the simulator or in the table.
    Off,
}

impl Verdict {
    /// `exact`, `within` or `off`.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Exact => "exact",
            Verdict::Within => "within",
            Verdict::Off => "off",
        }
    }
}

/// `total / ops`, 0 when nothing completed.
fn per_op(total: u64, ops: u64) -> f64 {
    if ops == 0 { 0.0 } else { total as f64 / ops as f64 }
}

/// Runs one case on `n` nodes.
pub fn run_case(case: &Case, n: u32) -> Result<Row, TableError> {
    let family = ringleader_algorithms::find(case.algorithm).map(|i| i.family.name()).unwrap_or("?");
    let mut total: Option<Judged> = None;
    let mut repro = String::new();
    let mut problems = Vec::new();
    let mut detection = 0;
    let mut reported_ops = 0;
    for seed in 1..=case.runs {
        let mut cfg = RunConfig::new(case.algorithm, n)?;
        cfg.seed = seed;
        (case.configure)(&mut cfg);
        let opts = RunOptions { keep_trace: case.trace, ..RunOptions::default() };
        let result = ringleader_sim::run(&cfg, opts)?;
        let report = &result.report;
        detection += report.messages.detection;
        reported_ops += report.per_operation.operations;
        if report.per_operation.unit != case.per {
            problems.push(format!(
                "seed {seed}: the run reports its cost per {}, the formula is per {}",
                report.per_operation.unit, case.per
            ));
        }
        if !report.as_expected() {
            let names: Vec<&str> = report.violations.iter().map(|v| v.property).collect();
            problems.push(format!("seed {seed}: properties violated: {}", names.join(", ")));
        }
        let judged = (case.judge)(&Measured { cfg: &cfg, report, records: &result.records });
        if seed == 1 {
            repro = report.repro.clone();
        }
        match &mut total {
            None => total = Some(judged),
            Some(t) => t.add(judged),
        }
    }
    let j = total.expect("every case runs at least once");
    problems.extend(j.problems);
    if reported_ops != j.ops && !case.ops_counted_apart {
        problems.push(format!("the runs report {reported_ops} operations, the table counts {}", j.ops));
    }
    if j.ops == 0 {
        problems.push("no operation completed".into());
    }
    let verdict = if !problems.is_empty() {
        Verdict::Off
    } else if j.measured == j.value {
        Verdict::Exact
    } else if case.bound && j.measured < j.value {
        Verdict::Within
    } else {
        problems.push(format!(
            "measured {} {} the formula's {}",
            j.measured,
            if j.measured < j.value { "is below" } else { "exceeds" },
            j.value
        ));
        Verdict::Off
    };
    Ok(Row {
        algorithm: case.algorithm,
        family,
        workload: case.workload,
        nodes: n,
        per: case.per,
        operations: j.ops,
        runs: case.runs,
        counted: j.counted.unwrap_or("all"),
        measured: per_op(j.measured, j.ops),
        measured_total: j.measured,
        by_kind: j.by_kind.iter().map(|(k, &v)| (k.clone(), per_op(v, j.ops))).collect(),
        detection_total: detection,
        formula: case.formula,
        relation: if case.bound { "≤" } else { "=" },
        formula_value: per_op(j.value, j.ops),
        formula_total: j.value,
        verdict,
        problems,
        repro,
    })
}

#[cfg(test)]
mod tests {
    use super::super::cases::{ENTRIES, cases};
    use super::*;

    #[test]
    fn a_wrong_count_makes_the_row_off() {
        let mut case = cases().into_iter().find(|c| c.algorithm == "ricart-agrawala").unwrap();
        assert_eq!(run_case(&case, 5).unwrap().verdict, Verdict::Exact);
        // One message fewer than the run sends: an exact formula that disagrees is a bug …
        case.judge = |m| m.all(ENTRIES, 2 * (m.n() - 1) * ENTRIES - 1);
        let row = run_case(&case, 5).unwrap();
        assert_eq!(row.verdict, Verdict::Off);
        assert!(row.problems[0].contains("exceeds"), "{:?}", row.problems);
        // … and so is a bound the run exceeds, or a kind that disagrees with the textbook.
        case.bound = true;
        assert_eq!(run_case(&case, 5).unwrap().verdict, Verdict::Off);
        case.bound = false;
        case.judge = |m| m.all(ENTRIES, 2 * (m.n() - 1) * ENTRIES).kind("reply", 0);
        let row = run_case(&case, 5).unwrap();
        assert_eq!(row.verdict, Verdict::Off);
        assert!(row.problems[0].starts_with("reply: 40 sent"), "{:?}", row.problems);
        // A bound the run stays below is `within`.
        case.bound = true;
        case.judge = |m| m.all(ENTRIES, 2 * (m.n() - 1) * ENTRIES + 1);
        assert_eq!(run_case(&case, 5).unwrap().verdict, Verdict::Within);
    }
}
