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
//! ShiViz accepts a log only if its clocks obey its rules ([`check`] tests them): each host's
//! own entry starts at 1 and grows by exactly 1 from one of its events to the next, and every
//! entry for another host names an event of that host whose clock this one covers. The vector
//! stamps of a trace need not obey them (a real node stamps records the log leaves out, and a
//! merged trace of real nodes can hold a delivery before its send when their clocks tie), so the
//! clocks are rebuilt from the trace itself: one tick per logged event, a delivery merging its
//! send's clock, in an order that keeps each host's events in trace order and puts every send
//! before its delivery.
//!
//! Logged: sends, deliveries, timers, requests and reported events of the nodes; their crashes,
//! recoveries, pauses and resumptions (events of the node); partitions and heals (events of a
//! host named `network`); and the first violation (an event of a host named `checker`, whose
//! clock covers every node's clock at that point: it judged their state). Drops are not events
//! of anyone: the lost message's send is logged, and nothing receives it.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use ringleader_core::trace::{RecordKind, TraceRecord};

/// ShiViz's default log-parsing regular expression (its input page and file format).
pub const DEFAULT_REGEX: &str = r"(?<event>.*)\n(?<host>\S*) (?<clock>{.*})";

/// At most this many nodes in a log: ShiViz draws one column per host, and a vector clock per
/// event grows with the hosts.
pub const MAX_NODES: usize = 64;

/// The host of partitions and heals.
pub const NETWORK: &str = "network";
/// The host of the first violation.
pub const CHECKER: &str = "checker";

/// Why a trace cannot be written as a ShiViz log.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShivizError {
    /// More nodes than ShiViz can show.
    #[error("the run has {nodes} nodes: a ShiViz log holds at most {MAX_NODES}")]
    TooManyNodes {
        /// The nodes the trace names.
        nodes: usize,
    },
}

fn host(node: u32) -> String {
    format!("P{node}")
}

fn one_line(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        v => v.to_string(),
    }
}

/// The host and text of a record's event, or `None` for a record ShiViz gets no event for.
fn event_of(r: &TraceRecord) -> Option<(String, String)> {
    if matches!(r.kind, RecordKind::Partition | RecordKind::Heal) {
        let what = if r.kind == RecordKind::Partition { "partition" } else { "heal" };
        return Some((NETWORK.into(), format!("{NETWORK} {what} {}", r.detail.as_deref().unwrap_or(""))));
    }
    if r.kind == RecordKind::Violation {
        let text = format!(
            "{CHECKER} VIOLATION {}: {}",
            r.property.as_deref().unwrap_or("property"),
            r.detail.as_deref().unwrap_or("")
        );
        return Some((CHECKER.into(), text));
    }
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
        RecordKind::Crash => format!("{me}{uid} crashes"),
        RecordKind::Recover => format!("{me}{uid} recovers"),
        RecordKind::Pause => format!("{me}{uid} is paused"),
        RecordKind::Resume => format!("{me}{uid} resumes"),
        _ => return None,
    };
    Some((me, text))
}

/// A vector clock: host name to count (hosts it has not heard of are left out, as ShiViz reads).
type Clock = BTreeMap<String, u64>;

fn merge(into: &mut Clock, other: &Clock) {
    for (h, &c) in other {
        let e = into.entry(h.clone()).or_insert(0);
        *e = (*e).max(c);
    }
}

/// The ShiViz log of `records` (see the module documentation for the format and the clocks).
pub fn shiviz(records: &[TraceRecord]) -> Result<String, ShivizError> {
    let nodes =
        records.iter().flat_map(|r| r.node.into_iter().chain(r.peer)).max().map_or(0, |m| m as usize + 1);
    if nodes > MAX_NODES {
        return Err(ShivizError::TooManyNodes { nodes });
    }
    // The logged events, each host's in trace order (only the first violation).
    let mut events: Vec<(usize, String, String)> = Vec::new();
    let mut violation = false;
    for (i, r) in records.iter().enumerate() {
        if r.kind == RecordKind::Violation && std::mem::replace(&mut violation, true) {
            continue;
        }
        if let Some((h, text)) = event_of(r) {
            events.push((i, h, text.replace(['\n', '\r'], " ")));
        }
    }
    let sent: std::collections::HashSet<u64> = events
        .iter()
        .filter(|(i, _, _)| records[*i].kind == RecordKind::Send)
        .filter_map(|(i, _, _)| records[*i].msg_id)
        .collect();
    // One queue per host; the next event written is the earliest head whose send (for a
    // delivery) is written already. Every head is a delivery of an unwritten send only if a
    // send is missing from the trace, which `sent` rules out, so the loop always progresses.
    let mut queues: BTreeMap<&str, std::collections::VecDeque<usize>> = BTreeMap::new();
    for (k, (_, h, _)) in events.iter().enumerate() {
        queues.entry(h.as_str()).or_default().push_back(k);
    }
    let mut clocks: BTreeMap<String, Clock> = BTreeMap::new();
    let mut send_clock: HashMap<u64, Clock> = HashMap::new();
    let mut s = String::new();
    s.push_str(DEFAULT_REGEX);
    s.push_str("\n\n");
    loop {
        let ready = |k: usize| {
            let r = &records[events[k].0];
            r.kind != RecordKind::Deliver
                || r.msg_id.is_none_or(|id| !sent.contains(&id) || send_clock.contains_key(&id))
        };
        let next = queues.values().filter_map(|q| q.front().copied()).filter(|&k| ready(k)).min();
        let Some(k) = next else { break };
        let (i, h, text) = &events[k];
        queues.get_mut(h.as_str()).expect("its queue").pop_front();
        let r = &records[*i];
        let mut clock = clocks.get(h).cloned().unwrap_or_default();
        match r.kind {
            RecordKind::Deliver => {
                if let Some(c) = r.msg_id.and_then(|id| send_clock.get(&id)) {
                    merge(&mut clock, c);
                }
            }
            RecordKind::Violation => {
                // The checker judged every node's state as it was then.
                for (other, c) in &clocks {
                    if other.as_str() != NETWORK {
                        merge(&mut clock, c);
                    }
                }
            }
            _ => {}
        }
        *clock.entry(h.clone()).or_insert(0) += 1;
        if r.kind == RecordKind::Send
            && let Some(id) = r.msg_id
        {
            send_clock.insert(id, clock.clone());
        }
        let json: serde_json::Map<String, serde_json::Value> =
            clock.iter().map(|(h, &c)| (h.clone(), c.into())).collect();
        let _ = writeln!(s, "{text}");
        let _ = writeln!(s, "{h} {}", serde_json::Value::Object(json));
        clocks.insert(h.clone(), clock);
    }
    Ok(s)
}

/// A rule of ShiViz's that a log breaks: the event (counted from 1) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("event {event}: {rule}")]
pub struct RuleBroken {
    /// The event, counted from 1 in log order.
    pub event: usize,
    /// What is wrong.
    pub rule: String,
}

/// Checks a log as ShiViz does when it loads one; returns the number of events. The rules:
/// every event is a text line then `HOST {clock}` with a JSON object of positive counts; each
/// host's own entry is 1 at its first event and grows by exactly 1 at each next one; a host's
/// clock never goes back; an entry `n` for another host names that host's `n`-th event, which
/// exists and whose clock this one covers (the clock of a receive is at least its previous
/// one and the message's, plus its own tick).
pub fn check(log: &str) -> Result<usize, RuleBroken> {
    let mut lines = log.lines();
    let body: Vec<&str> = match (lines.next(), lines.next()) {
        (Some(DEFAULT_REGEX), Some("")) => lines.collect(),
        _ => log.lines().collect(),
    };
    let broken = |event: usize, rule: String| RuleBroken { event, rule };
    if !body.len().is_multiple_of(2) {
        return Err(broken(body.len() / 2 + 1, "an event line without its host and clock line".into()));
    }
    let mut parsed: Vec<(String, Clock)> = Vec::new();
    for (e, pair) in body.chunks(2).enumerate() {
        let (h, clock) = pair[1]
            .split_once(' ')
            .filter(|(h, c)| !h.is_empty() && !h.contains(char::is_whitespace) && c.starts_with('{'))
            .ok_or_else(|| broken(e + 1, format!("not `HOST {{clock}}`: {:?}", pair[1])))?;
        let value: serde_json::Map<String, serde_json::Value> = serde_json::from_str(clock)
            .map_err(|err| broken(e + 1, format!("clock is not a JSON object: {err}")))?;
        let mut c = Clock::new();
        for (k, v) in value {
            let n = v
                .as_u64()
                .filter(|&n| n > 0)
                .ok_or_else(|| broken(e + 1, format!("{k}'s count {v} is not positive")))?;
            c.insert(k, n);
        }
        parsed.push((h.to_string(), c));
    }
    // Each host's events by their own count.
    let mut by_host: HashMap<&str, Vec<&Clock>> = HashMap::new();
    for (e, (h, c)) in parsed.iter().enumerate() {
        let mine =
            c.get(h).copied().ok_or_else(|| broken(e + 1, format!("{h}'s clock has no entry for {h}")))?;
        let seen = by_host.entry(h).or_default();
        if mine != seen.len() as u64 + 1 {
            let rule = if seen.is_empty() {
                format!("{h}'s own count starts at {mine}, not 1")
            } else {
                format!("{h}'s own count goes from {} to {mine}, not up by 1", seen.len())
            };
            return Err(broken(e + 1, rule));
        }
        if let Some(prev) = seen.last()
            && let Some((k, _)) = prev.iter().find(|(k, v)| c.get(*k).is_none_or(|n| n < v))
        {
            return Err(broken(e + 1, format!("{h}'s clock goes back for {k}")));
        }
        seen.push(c);
    }
    for (e, (h, c)) in parsed.iter().enumerate() {
        for (other, &n) in c.iter().filter(|(k, _)| *k != h) {
            let Some(then) = by_host.get(other.as_str()).and_then(|v| v.get(n as usize - 1)) else {
                return Err(broken(e + 1, format!("{other}'s count {n} names no event of {other}")));
            };
            if let Some((k, _)) = then.iter().find(|(k, v)| c.get(*k).is_none_or(|m| m < v)) {
                return Err(broken(
                    e + 1,
                    format!("covers {other}'s event {n} but not its knowledge of {k}"),
                ));
            }
        }
    }
    Ok(parsed.len())
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

    fn message(step: u64, kind: RecordKind, node: u32, peer: u32, id: u64) -> TraceRecord {
        let mut r = rec(step, kind, node, None);
        r.peer = Some(peer);
        r.msg_id = Some(id);
        r.msg_kind = Some("grant".into());
        r
    }

    #[test]
    fn two_lines_per_event_after_the_option_lines() {
        let mut send = rec(1, RecordKind::Send, 0, Some(vec![1, 0]));
        send.peer = Some(1);
        send.msg_id = Some(7);
        send.msg_kind = Some("grant".into());
        send.msg = Some(serde_json::json!({"Grant": {"fencing": 1}}));
        let mut deliver = rec(2, RecordKind::Deliver, 1, Some(vec![1, 1]));
        deliver.peer = Some(0);
        deliver.msg_id = Some(7);
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
                "P1 crashes",
                "P1 {\"P0\":1,\"P1\":2}",
            ]
        );
        assert_eq!(check(&log), Ok(3));
    }

    /// A merged trace of real nodes: stamps with gaps (records the log leaves out ticked the
    /// node's clock) and a delivery ahead of its send (the two nodes' clocks tied). The log's
    /// clocks are rebuilt: each host counts 1, 2, 3, and the receive follows its send.
    #[test]
    fn clocks_are_rebuilt_so_that_each_host_counts_from_one_by_one() {
        let mut deliver = message(0, RecordKind::Deliver, 1, 0, 5);
        deliver.vector = Some(vec![7, 3]);
        let mut send = message(1, RecordKind::Send, 0, 1, 5);
        send.vector = Some(vec![7, 0]);
        let mut timer = rec(2, RecordKind::Timer, 1, Some(vec![7, 9]));
        timer.timer = Some("Tick".into());
        let mut reply = message(3, RecordKind::Send, 1, 0, 6);
        reply.vector = Some(vec![7, 10]);
        let mut back = message(4, RecordKind::Deliver, 0, 1, 6);
        back.vector = Some(vec![11, 10]);
        let log = shiviz(&[deliver, send, timer, reply, back]).unwrap();
        let clocks: Vec<&str> = log.lines().skip(2).skip(1).step_by(2).collect();
        assert_eq!(
            clocks,
            [
                "P0 {\"P0\":1}",
                "P1 {\"P0\":1,\"P1\":1}",
                "P1 {\"P0\":1,\"P1\":2}",
                "P1 {\"P0\":1,\"P1\":3}",
                "P0 {\"P0\":2,\"P1\":3}",
            ]
        );
        assert_eq!(check(&log), Ok(5));
    }

    #[test]
    fn faults_and_the_first_violation_are_events() {
        let mut part = TraceRecord::new(1, 1000, RecordKind::Partition);
        part.detail = Some("1|2@1ms..5ms".into());
        let mut heal = TraceRecord::new(5, 5000, RecordKind::Heal);
        heal.detail = part.detail.clone();
        let mut v1 = TraceRecord::new(6, 6000, RecordKind::Violation);
        v1.property = Some("safety".into());
        v1.detail = Some("two holders".into());
        let mut v2 = v1.clone();
        v2.step = 7;
        let records = vec![
            rec(0, RecordKind::Pause, 1, None),
            part,
            rec(2, RecordKind::Resume, 1, None),
            rec(3, RecordKind::Crash, 0, None),
            rec(4, RecordKind::Recover, 0, None),
            heal,
            v1,
            v2,
        ];
        let log = shiviz(&records).unwrap();
        let text: Vec<&str> = log.lines().skip(2).step_by(2).collect();
        assert_eq!(
            text,
            [
                "P1 is paused",
                "network partition 1|2@1ms..5ms",
                "P1 resumes",
                "P0 crashes",
                "P0 recovers",
                "network heal 1|2@1ms..5ms",
                "checker VIOLATION safety: two holders",
            ]
        );
        assert!(log.ends_with("checker {\"P0\":2,\"P1\":2,\"checker\":1}\n"), "{log}");
        assert_eq!(check(&log), Ok(7));
    }

    /// The checker finds each rule broken (each log below is what a bad writer would produce).
    #[test]
    fn the_checker_finds_every_broken_rule() {
        let bad = |log: &str| check(log).unwrap_err().rule;
        assert!(bad("a\nP0 {\"P0\":2}\n").contains("starts at 2, not 1"));
        assert!(bad("a\nP0 {\"P0\":1}\nb\nP0 {\"P0\":3}\n").contains("from 1 to 3"));
        assert!(bad("a\nP0 {\"P1\":1}\n").contains("no entry for P0"));
        assert!(bad("a\nP0 {\"P0\":1,\"P1\":1}\n").contains("P1's count 1 names no event"));
        assert!(
            bad("a\nP1 {\"P1\":1}\nb\nP0 {\"P0\":1,\"P1\":1}\nc\nP0 {\"P0\":2}\n")
                .contains("goes back for P1")
        );
        assert!(
            bad("a\nP2 {\"P2\":1}\nb\nP1 {\"P1\":1,\"P2\":1}\nc\nP0 {\"P0\":1,\"P1\":1}\n")
                .contains("covers P1's event 1 but not its knowledge of P2")
        );
        assert!(bad("a\nP0 {\"P0\":0}\n").contains("not positive"));
        assert!(bad("a\n").contains("without its host"));
        assert!(bad("a\nP0 [1]\n").contains("not `HOST {clock}`"));
        assert_eq!(check(&format!("{DEFAULT_REGEX}\n\na\nP0 {{\"P0\":1}}\n")), Ok(1));
    }

    #[test]
    fn more_nodes_than_shiviz_shows_are_refused() {
        let err = shiviz(&[rec(4, RecordKind::Timer, 64, None)]).unwrap_err();
        assert_eq!(err, ShivizError::TooManyNodes { nodes: 65 });
        assert!(err.to_string().contains("at most 64"));
    }
}
