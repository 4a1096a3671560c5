//! What a case's judge sees of one run ([`Measured`]), what it finds ([`Judged`]), and a row's
//! [`CostMatch`].

use std::collections::BTreeMap;

use ringleader_algorithms::deadlock::chandy_misra_haas;
use ringleader_core::trace::{RecordKind, TraceRecord};
use ringleader_core::{Event, NodeId, Request};
use ringleader_sim::{Report, RunConfig};
use serde::{Deserialize, Serialize};

use super::formulas::{self, Count};

/// One finished run, as a case's judge sees it.
pub struct Measured<'a> {
    /// The run's configuration.
    pub cfg: &'a RunConfig,
    /// Its report.
    pub report: &'a Report,
    /// Its trace, when the case asks for it ([`Case::trace`](super::cases::Case::trace)).
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
    pub(super) fn add(&mut self, other: Judged) {
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

/// How a row's measured total compares with its formula: the row's verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CostMatch {
    /// The measured total equals the formula's.
    Exact,
    /// The formula is an upper bound and the measured total is below it.
    Within,
    /// Anything else: a bug in an algorithm, in the simulator or in the table.
    Off,
}

impl CostMatch {
    /// `exact`, `within` or `off`.
    pub fn name(self) -> &'static str {
        match self {
            CostMatch::Exact => "exact",
            CostMatch::Within => "within",
            CostMatch::Off => "off",
        }
    }
}
