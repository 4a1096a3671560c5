//! Mermaid sequence diagrams from traces, in the style the seeds draw them.
//!
//! One participant per node; an arrow per delivered message (`-x` for a dropped one), a
//! self-arrow per timer that fires; notes for what the application asks (acquire, release,
//! start an election), for what a node reports (elected, enters or leaves the critical section,
//! suspects) and for faults; and a red `rect rgb(200, 0, 0)` around the steps of the first violation.

use std::fmt::Write as _;

use ringleader_core::trace::{RecordKind, TraceRecord};
use ringleader_core::{Event, Uid};

/// Diagrams above this many records are cut (a note says so).
pub const MAX_RECORDS: usize = 4_000;

/// The words of the note that ends a cut diagram.
pub const CUT_NOTE: &str = "… trace cut after";

fn label(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '{' | '[' => '(',
            '}' | ']' => ')',
            ';' | '#' | ':' | '"' => ' ',
            c => c,
        })
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        // A message's fields read `GRANT (fencing 1)`, not `GRANT ( fencing 1)`.
        .replace("( ", "(")
        .replace(" )", ")")
}

fn msg_label(r: &TraceRecord) -> String {
    let kind = r.msg_kind.clone().unwrap_or_default().to_uppercase();
    let args = match &r.msg {
        Some(serde_json::Value::Object(m)) => m.values().next().map(|v| v.to_string()).unwrap_or_default(),
        _ => String::new(),
    };
    if args.is_empty() || args == "null" { kind } else { label(&format!("{kind} {args}")) }
}

fn event_label(e: &Event, own: Option<Uid>) -> String {
    match e {
        Event::ElectionStarted => "participant: starts an election".into(),
        Event::Leader { leader, term } if Some(*leader) == own => {
            if *term == 0 {
                "elected: I am coordinator".into()
            } else {
                format!("elected: I am coordinator (term {term})")
            }
        }
        Event::Leader { leader, term } => {
            if *term == 0 {
                format!("coordinator = {leader}")
            } else {
                format!("coordinator = {leader} (term {term})")
            }
        }
        Event::LeaderLost => "coordinator unknown".into(),
        Event::Entered { fencing } => format!("enters critical section (fencing {fencing})"),
        Event::Exited => "leaves critical section".into(),
        // A request is queued whether or not the resource is free; only a grant makes it busy.
        Event::Queued { node, .. } => format!("queue += P{node}"),
        Event::Granted { node } => format!("granted to P{node}, resource busy"),
        Event::Suspect { node } => format!("suspects P{node}"),
        Event::Trust { node } => format!("trusts P{node} again"),
        other => label(&serde_json::to_string(other).unwrap_or_default()),
    }
}

/// Renders `records` of a run on nodes with `uids`.
pub fn render(records: &[TraceRecord], uids: &[Uid], violation_window: Option<(u64, Option<u64>)>) -> String {
    let mut s = String::from("sequenceDiagram\n");
    for (i, u) in uids.iter().enumerate() {
        let _ = writeln!(s, "    participant P{i} as P{i} (id {u})");
    }
    let mut in_rect = false;
    let mut shown = 0usize;
    let close_step = |step: u64| match violation_window {
        Some((_, Some(end))) => step > end,
        _ => false,
    };
    for r in records {
        if shown >= MAX_RECORDS {
            let _ = writeln!(s, "    note over P0: {CUT_NOTE} {MAX_RECORDS} records");
            break;
        }
        if let Some((start, _)) = violation_window {
            if !in_rect && r.step >= start && !close_step(r.step) && r.kind != RecordKind::Violation {
                s.push_str("    rect rgb(200, 0, 0)\n");
                in_rect = true;
            } else if in_rect && close_step(r.step) {
                s.push_str("    end\n");
                in_rect = false;
            }
        }
        let node = r.node.map(|n| format!("P{n}"));
        let line = match (r.kind, &node) {
            (RecordKind::Deliver, Some(to)) => r.peer.map(|p| format!("P{p}->>{to}: {}", msg_label(r))),
            (RecordKind::Drop, Some(to)) => r.peer.map(|p| {
                format!("P{p}-x{to}: {} ({})", msg_label(r), label(r.detail.as_deref().unwrap_or("dropped")))
            }),
            (RecordKind::Emit, Some(n)) => r.event.as_ref().and_then(|e| match e {
                Event::Stamped { .. } | Event::StampedMessage { .. } => None,
                e => Some(format!("note over {n}: {}", label(&event_label(e, r.uid)))),
            }),
            (RecordKind::Timer, Some(n)) => {
                Some(format!("{n}->>{n}: timeout {}", label(r.timer.as_deref().unwrap_or(""))))
            }
            (RecordKind::Request, Some(n)) => r.request.as_ref().map(|q| {
                let text = serde_json::to_value(q)
                    .ok()
                    .and_then(|v| v.get("request").and_then(|x| x.as_str()).map(str::to_string))
                    .unwrap_or_default();
                format!("note over {n}: application asks {}", label(&text.replace('_', " ")))
            }),
            (RecordKind::Crash, Some(n)) => Some(format!("note over {n}: CRASH")),
            (RecordKind::Recover, Some(n)) => Some(format!("note over {n}: recovers")),
            (RecordKind::Pause, Some(n)) => Some(format!("note over {n}: paused (slow, not dead)")),
            (RecordKind::Resume, Some(n)) => Some(format!("note over {n}: resumes")),
            (RecordKind::Partition, _) => {
                Some(format!("note over P0: partition {}", label(r.detail.as_deref().unwrap_or(""))))
            }
            (RecordKind::Heal, _) => {
                Some(format!("note over P0: partition healed {}", label(r.detail.as_deref().unwrap_or(""))))
            }
            (RecordKind::Violation, _) => Some(format!(
                "note over P0: VIOLATION {} - {}",
                r.property.as_deref().unwrap_or(""),
                label(r.detail.as_deref().unwrap_or(""))
            )),
            _ => None,
        };
        if let Some(line) = line {
            let _ = writeln!(s, "    {line}");
            shown += 1;
        }
    }
    if in_rect {
        s.push_str("    end\n");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_safe_for_mermaid() {
        assert_eq!(label("a;b#c: {x}"), "a b c (x)");
        assert_eq!(label(r#"GRANT {"fencing":1}"#), "GRANT (fencing 1)");
        assert_eq!(label(r#"TOKEN {"removed":[2],"hops":3}"#), "TOKEN (removed (2), hops 3)");
    }

    #[test]
    fn a_queued_request_does_not_call_the_resource_busy() {
        // The first request reaches a free resource: it is queued, then granted at once.
        let queued = event_label(&Event::Queued { node: 1, transaction: None }, Some(1));
        assert_eq!(queued, "queue += P1");
        assert!(!queued.contains("busy"));
        assert_eq!(event_label(&Event::Granted { node: 1 }, Some(1)), "granted to P1, resource busy");
    }
}
