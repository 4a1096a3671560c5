//! Logs for ShiViz, the space-time diagram viewer of Beschastnikh et al. ("Debugging distributed
//! systems: Challenges and options for validation and debugging", CACM 59(8), 2016).
//!
//! ShiViz reads a log with a regular expression whose named groups are `event` (the text),
//! `host` (who executed it) and `clock` (its vector timestamp as a JSON object from host name to
//! count). Its documented default, [`DEFAULT_REGEX`], takes two lines per event:
//!
//! ```text
//! P1 receives grant from P0: {"Grant":{"fencing":1}}
//! P1 {"P0":4,"P1":3}
//! ```
//!
//! The file opens with the two option lines of ShiViz's file upload (the parsing expression,
//! written out as the default one, then an empty line for "no multiple-execution delimiter"),
//! then the log. To paste the log into ShiViz's text box instead, leave out those two lines.
//!
//! Only the events that tick a vector clock are logged (sends, deliveries, timers, requests,
//! reported events): ShiViz wants each host's own entry to grow by one from one event to the
//! next, which the driver's stamping guarantees for exactly those records.

use std::fmt::Write as _;

use ringleader_core::trace::{RecordKind, TraceRecord};

/// ShiViz's default log-parsing regular expression (its input page and file format).
pub const DEFAULT_REGEX: &str = r"(?<event>.*)\n(?<host>\S*) (?<clock>{.*})";

/// Why a trace cannot be written as a ShiViz log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoVectorClocks {
    /// The first record that ticks a clock but carries no vector timestamp.
    pub step: u64,
}

impl std::fmt::Display for NoVectorClocks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the trace has no vector timestamps (record at step {}): ShiViz needs them, and runs keep them \
             only up to 64 nodes",
            self.step
        )
    }
}

impl std::error::Error for NoVectorClocks {}

fn host(node: u32) -> String {
    format!("P{node}")
}

fn one_line(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        v => v.to_string(),
    }
}

/// The text of a record's event, or `None` for a record ShiViz gets no event for.
fn event_text(r: &TraceRecord) -> Option<String> {
    let uid = r.uid.map(|u| format!(" (id {u})")).unwrap_or_default();
    let me = r.node.map(host)?;
    let kind = r.msg_kind.as_deref().unwrap_or("message");
    let body = r.msg.as_ref().map(|m| format!(": {}", one_line(m))).unwrap_or_default();
    let text = match r.kind {
        RecordKind::Send => format!("{me}{uid} sends {kind} to {}{body}", r.peer.map(host)?),
        RecordKind::Deliver => format!("{me}{uid} receives {kind} from {}{body}", r.peer.map(host)?),
        RecordKind::Timer => format!("{me}{uid} timer {}", r.timer.as_deref().unwrap_or("")),
        RecordKind::Request => format!(
            "{me}{uid} is asked {}",
            r.request
                .as_ref()
                .and_then(|q| serde_json::to_value(q).ok())
                .map(|v| one_line(&v))
                .unwrap_or_default()
        ),
        RecordKind::Emit => format!(
            "{me}{uid} reports {}",
            r.event
                .as_ref()
                .and_then(|e| serde_json::to_value(e).ok())
                .map(|v| one_line(&v))
                .unwrap_or_default()
        ),
        _ => return None,
    };
    // One line per event: the expression's `.` stops at a newline.
    Some(text.replace(['\n', '\r'], " "))
}

/// The ShiViz log of `records` (see the module documentation for the format).
pub fn shiviz(records: &[TraceRecord]) -> Result<String, NoVectorClocks> {
    let mut s = String::new();
    s.push_str(DEFAULT_REGEX);
    s.push_str("\n\n");
    for r in records {
        let Some(text) = event_text(r) else { continue };
        let Some(vector) = &r.vector else {
            return Err(NoVectorClocks { step: r.step });
        };
        let clock: serde_json::Map<String, serde_json::Value> = vector
            .iter()
            .enumerate()
            .filter(|&(_, &c)| c > 0)
            .map(|(i, &c)| (host(i as u32), c.into()))
            .collect();
        let _ = writeln!(s, "{text}");
        let _ = writeln!(
            s,
            "{} {}",
            host(r.node.expect("an event has a node")),
            serde_json::Value::Object(clock)
        );
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(step: u64, kind: RecordKind, node: u32, vector: Option<Vec<u64>>) -> TraceRecord {
        let mut r = TraceRecord::new(step, step * 1000, kind);
        r.node = Some(node);
        r.vector = vector;
        r
    }

    #[test]
    fn two_lines_per_ticking_event_after_the_option_lines() {
        let mut send = rec(1, RecordKind::Send, 0, Some(vec![1, 0]));
        send.peer = Some(1);
        send.msg_kind = Some("grant".into());
        send.msg = Some(serde_json::json!({"Grant": {"fencing": 1}}));
        let mut deliver = rec(2, RecordKind::Deliver, 1, Some(vec![1, 1]));
        deliver.peer = Some(0);
        deliver.msg_kind = Some("grant".into());
        let crash = rec(3, RecordKind::Crash, 1, Some(vec![1, 1]));
        let log = shiviz(&[rec(0, RecordKind::Start, 0, Some(vec![0, 0])), send, deliver, crash]).unwrap();
        let lines: Vec<&str> = log.lines().collect();
        assert_eq!(lines[0], DEFAULT_REGEX);
        assert_eq!(lines[1], "");
        assert_eq!(
            &lines[2..],
            [
                "P0 sends grant to P1: {\"Grant\":{\"fencing\":1}}",
                "P0 {\"P0\":1}",
                "P1 receives grant from P0",
                "P1 {\"P0\":1,\"P1\":1}",
            ]
        );
    }

    #[test]
    fn a_trace_without_vector_clocks_is_refused() {
        let err = shiviz(&[rec(4, RecordKind::Timer, 0, None)]).unwrap_err();
        assert_eq!(err, NoVectorClocks { step: 4 });
        assert!(err.to_string().contains("vector timestamps"));
    }
}
