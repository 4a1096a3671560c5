//! The trace format shared by every driver: JSON lines, one record per event.
//!
//! The simulator, the model checker (for counterexamples) and real nodes all write
//! [`TraceRecord`]s, so the same checkers, metrics and diagrams work on any execution.
//! `time_ns` is virtual time in the simulator and the model checker, wall-clock time (ns since
//! the Unix epoch) on real nodes.

use serde::{Deserialize, Serialize};

use crate::{Event, NodeId, Request, Uid};

/// What a trace record reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordKind {
    /// A node started.
    Start,
    /// A message was sent (`node` → `peer`).
    Send,
    /// A message was delivered (`peer` → `node`).
    Deliver,
    /// A message was dropped on its way to `node` (`reason` says why).
    Drop,
    /// A timer fired at `node`.
    Timer,
    /// The application asked `node` something.
    Request,
    /// `node` reported an event.
    Emit,
    /// `node` crashed.
    Crash,
    /// `node` recovered.
    Recover,
    /// `node` was paused (slow, not dead).
    Pause,
    /// `node` resumed.
    Resume,
    /// A partition started.
    Partition,
    /// A partition healed.
    Heal,
    /// A checker found a property violated.
    Violation,
}

/// Records left out of a kept trace: between `records[at - 1]` and `records[at]` the run
/// produced `left_out` records that were not kept (a page of a long run keeps its beginning, its
/// faults and violations, and its end).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Gap {
    /// Index of the first kept record after the gap.
    pub at: usize,
    /// How many records the run produced there that were not kept.
    pub left_out: u64,
}

impl RecordKind {
    /// A fault or a violation: what a page of a long run keeps even from the part it leaves out.
    pub fn is_fault_or_violation(self) -> bool {
        matches!(
            self,
            RecordKind::Crash
                | RecordKind::Recover
                | RecordKind::Pause
                | RecordKind::Resume
                | RecordKind::Partition
                | RecordKind::Heal
                | RecordKind::Violation
        )
    }
}

/// One line of a trace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceRecord {
    /// Step number (the driver's event counter).
    pub step: u64,
    /// Time in nanoseconds.
    pub time_ns: u64,
    /// What happened.
    pub kind: RecordKind,
    /// The node it happened at (receiver for deliveries and drops, sender for sends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<NodeId>,
    /// That node's uid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<Uid>,
    /// The other end of a message (destination of a send, source of a delivery or drop).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer: Option<NodeId>,
    /// Links a send to its delivery or drop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub msg_id: Option<u64>,
    /// The message kind (`election`, `grant`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub msg_kind: Option<String>,
    /// The message itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub msg: Option<serde_json::Value>,
    /// The timer that fired (its debug form).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timer: Option<String>,
    /// The application request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<Request>,
    /// The reported event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<Event>,
    /// The violated property (violation records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub property: Option<String>,
    /// Free text: why a message was dropped, what a partition cut, what a violation is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The node's Lamport timestamp after this event, computed by the driver.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lamport: Option<u64>,
    /// The node's vector timestamp after this event, computed by the driver (small N only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vector: Option<Vec<u64>>,
}

impl TraceRecord {
    /// A record with only the mandatory fields set.
    pub fn new(step: u64, time_ns: u64, kind: RecordKind) -> TraceRecord {
        TraceRecord {
            step,
            time_ns,
            kind,
            node: None,
            uid: None,
            peer: None,
            msg_id: None,
            msg_kind: None,
            msg: None,
            timer: None,
            request: None,
            event: None,
            property: None,
            detail: None,
            lamport: None,
            vector: None,
        }
    }
}
