//! # Watch streams against the writes they report
//!
//! etcd promises three things of a watch (its API guarantees: ordered, reliable, atomic): the
//! events of a stream come in revision order; a stream that reports revision `r` has reported
//! every change to its keys between its start revision and `r`, with none left out; and an event
//! is the change that was made at its revision. A client that resumes a broken stream from the
//! revision after the last event it saw keeps the same promises across its streams.
//!
//! This module judges a client history for them. Writers record each put (key, a value no other
//! put writes, the revision the service answered, or no answer when the outcome is unknown);
//! watchers record each stream's start revision and each event (revision, key, value). Then:
//!
//! | property | violated when |
//! |---|---|
//! | `watch_order` | a watcher's events do not strictly increase in revision, or a resumed stream starts at or below a revision already seen (one put per revision: no two events share one) |
//! | `watch_gap` | an acknowledged put to a watched key, at a revision between a watcher's first start and its last event, is not among that watcher's events |
//! | `watch_event` | an event's key or value is not what the put acknowledged at that revision, no put ever wrote its value, or two watchers saw different changes at one revision |
//!
//! A put whose outcome is unknown may or may not appear; a put acknowledged at a revision a
//! watcher never reached proves nothing about that watcher. Every verdict names the first
//! record that proves it.

use std::collections::{BTreeMap, HashMap};

use serde::Deserialize;

use crate::linearizability::lock::HistoryError;

/// One acknowledged or pending put.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Put {
    /// Who wrote.
    pub client: String,
    /// The key.
    pub key: String,
    /// The value (unique to this put).
    pub value: String,
    /// The revision the service answered, `None` when the outcome is unknown.
    pub revision: Option<u64>,
}

/// One event a watcher saw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatchEvent {
    /// The revision of the change.
    pub revision: u64,
    /// The key changed.
    pub key: String,
    /// Its new value.
    pub value: String,
}

/// What one watcher saw: its streams' start revisions and, in arrival order, its events.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Watcher {
    /// The key prefix watched.
    pub prefix: String,
    /// Each stream's start revision, in the order the streams were opened, with the number of
    /// events seen before it opened.
    pub starts: Vec<(u64, usize)>,
    /// The events, in the order they arrived.
    pub events: Vec<WatchEvent>,
}

/// The puts and watchers of a history.
#[derive(Clone, Debug, Default)]
pub struct WatchHistory {
    /// Every put, in the order of its record.
    pub puts: Vec<Put>,
    /// Each watching client's streams, by client name.
    pub watchers: BTreeMap<String, Watcher>,
}

impl WatchHistory {
    /// True when the history holds no put and no watch record.
    pub fn is_empty(&self) -> bool {
        self.puts.is_empty() && self.watchers.is_empty()
    }

    /// Events seen, over every watcher.
    pub fn events(&self) -> usize {
        self.watchers.values().map(|w| w.events.len()).sum()
    }
}

/// A violated watch guarantee.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatchViolation {
    /// `watch_order`, `watch_gap` or `watch_event`.
    pub property: &'static str,
    /// What the history shows, naming the watcher, the revision and the key.
    pub detail: String,
}

impl std::fmt::Display for WatchViolation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.property, self.detail)
    }
}

/// A record of the history file (only the fields this module reads).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    client: String,
    /// Read from the record's JSON first, to pick the record kind.
    #[serde(rename = "op")]
    _op: String,
    #[serde(default)]
    key: Option<String>,
    #[serde(default)]
    value: Option<String>,
    #[serde(default)]
    prefix: Option<String>,
    #[serde(default)]
    revision: Option<u64>,
    #[serde(default)]
    invoke_ns: Option<u64>,
    #[serde(default)]
    return_ns: Option<u64>,
    /// When a watch record was written (read, not judged: order is by revision).
    #[serde(default, rename = "time_ns")]
    _time_ns: Option<u64>,
}

/// The operations this module reads; the lock checker skips them.
pub const OPS: [&str; 3] = ["put", "watch_start", "watch_event"];

/// Reads the put and watch records of a history (JSON lines), skipping every other record
/// (lock operations, faults).
pub fn parse_history(text: &str) -> Result<WatchHistory, HistoryError> {
    let mut h = WatchHistory::default();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let bad = |message: String| HistoryError::Line { line, message };
        let Ok(value) = serde_json::from_str::<serde_json::Value>(raw) else {
            continue; // the lock checker names unreadable lines
        };
        let Some(op) = value.get("op").and_then(|o| o.as_str()) else { continue };
        if !OPS.contains(&op) {
            continue;
        }
        let l: Line = serde_json::from_value(value.clone()).map_err(|e| {
            bad(format!(
                "{e} (a {op} record has client, op and: put key, value, invoke_ns, optionally return_ns and revision; \
                 watch_start prefix, revision, time_ns; watch_event key, value, revision, time_ns)"
            ))
        })?;
        let need = |field: Option<String>, name: &str| {
            field.ok_or_else(|| bad(format!("a {op} record without {name}")))
        };
        match op {
            "put" => {
                if l.invoke_ns.is_none() {
                    return Err(bad("a put record without invoke_ns".into()));
                }
                if l.revision.is_some() != l.return_ns.is_some() {
                    return Err(bad("a put has a revision exactly when it has a return_ns".into()));
                }
                h.puts.push(Put {
                    client: l.client,
                    key: need(l.key, "key")?,
                    value: need(l.value, "value")?,
                    revision: l.revision,
                });
            }
            "watch_start" => {
                let revision =
                    l.revision.ok_or_else(|| bad("a watch_start record without revision".into()))?;
                let prefix = need(l.prefix, "prefix")?;
                let w = h.watchers.entry(l.client).or_default();
                if !w.starts.is_empty() && w.prefix != prefix {
                    return Err(bad(format!("one watcher watches {:?} and {prefix:?}", w.prefix)));
                }
                w.prefix = prefix;
                let seen = w.events.len();
                w.starts.push((revision, seen));
            }
            _ => {
                let revision =
                    l.revision.ok_or_else(|| bad("a watch_event record without revision".into()))?;
                let (key, value) = (need(l.key, "key")?, need(l.value, "value")?);
                let Some(w) = h.watchers.get_mut(&l.client) else {
                    return Err(bad(format!("a watch_event of {} before its watch_start", l.client)));
                };
                w.events.push(WatchEvent { revision, key, value });
            }
        }
    }
    Ok(h)
}

/// Judges the history's watch streams against its puts: the first violation found, or `None`
/// when every guarantee holds.
pub fn check(h: &WatchHistory) -> Option<WatchViolation> {
    let violation = |property, detail| Some(WatchViolation { property, detail });
    let mut acknowledged: BTreeMap<u64, &Put> = BTreeMap::new();
    let mut written: HashMap<&str, &Put> = HashMap::new();
    for p in &h.puts {
        if let Some(r) = p.revision
            && let Some(other) = acknowledged.insert(r, p)
        {
            return violation(
                "watch_event",
                format!(
                    "two puts acknowledged at revision {r}: {:?} by {} and {:?} by {}",
                    other.key, other.client, p.key, p.client
                ),
            );
        }
        written.insert(&p.value, p);
    }
    let mut seen_at: BTreeMap<u64, (&str, &WatchEvent)> = BTreeMap::new();
    for (client, w) in &h.watchers {
        // Order, within and across the watcher's streams.
        let mut last: Option<u64> = None;
        let mut starts = w.starts.iter().peekable();
        for (i, e) in w.events.iter().enumerate() {
            while let Some(&&(start, before)) = starts.peek() {
                if before > i {
                    break;
                }
                starts.next();
                if let Some(l) = last
                    && start <= l
                {
                    return violation(
                        "watch_order",
                        format!(
                            "{client} resumed its watch at revision {start}, not after revision {l} it had seen"
                        ),
                    );
                }
            }
            if let Some(l) = last
                && e.revision <= l
            {
                return violation(
                    "watch_order",
                    format!("{client} saw revision {} ({:?}) after revision {l}", e.revision, e.key),
                );
            }
            last = Some(e.revision);
            // The event is the change made at its revision.
            if !e.key.starts_with(&w.prefix) {
                return violation(
                    "watch_event",
                    format!("{client} watching {:?} saw {:?} at revision {}", w.prefix, e.key, e.revision),
                );
            }
            match (acknowledged.get(&e.revision), written.get(e.value.as_str())) {
                (Some(p), _) if p.key != e.key || p.value != e.value => {
                    return violation(
                        "watch_event",
                        format!(
                            "{client} saw {:?} = {:?} at revision {}, where {} put {:?} = {:?}",
                            e.key, e.value, e.revision, p.client, p.key, p.value
                        ),
                    );
                }
                (None, None) => {
                    return violation(
                        "watch_event",
                        format!(
                            "{client} saw {:?} = {:?} at revision {}, a value no put wrote",
                            e.key, e.value, e.revision
                        ),
                    );
                }
                (None, Some(p)) if p.key != e.key => {
                    return violation(
                        "watch_event",
                        format!(
                            "{client} saw {:?} = {:?} at revision {}, a value put to {:?}",
                            e.key, e.value, e.revision, p.key
                        ),
                    );
                }
                _ => {}
            }
            match seen_at.get(&e.revision) {
                Some((other, o)) if o.key != e.key || o.value != e.value => {
                    return violation(
                        "watch_event",
                        format!(
                            "at revision {}: {other} saw {:?} = {:?}, {client} saw {:?} = {:?}",
                            e.revision, o.key, o.value, e.key, e.value
                        ),
                    );
                }
                Some(_) => {}
                None => {
                    seen_at.insert(e.revision, (client, e));
                }
            }
        }
        // A stream resumed after the last event must start past it too.
        for &(start, _) in starts {
            if let Some(l) = last
                && start <= l
            {
                return violation(
                    "watch_order",
                    format!(
                        "{client} resumed its watch at revision {start}, not after revision {l} it had seen"
                    ),
                );
            }
        }
        // No gap: every acknowledged put to a watched key in [first start, last event].
        let (Some(&(first, _)), Some(last)) = (w.starts.first(), last) else { continue };
        let got: std::collections::BTreeSet<u64> = w.events.iter().map(|e| e.revision).collect();
        for (r, p) in acknowledged.range(first..=last) {
            if p.key.starts_with(&w.prefix) && !got.contains(r) {
                return violation(
                    "watch_gap",
                    format!(
                        "{client} saw revisions {first}..={last} of {:?} but not revision {r} ({} put {:?} = {:?})",
                        w.prefix, p.client, p.key, p.value
                    ),
                );
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(client: &str, key: &str, value: &str, revision: Option<u64>) -> String {
        match revision {
            Some(r) => format!(
                r#"{{"client":"{client}","op":"put","key":"{key}","value":"{value}","invoke_ns":1,"return_ns":2,"revision":{r}}}"#
            ),
            None => {
                format!(r#"{{"client":"{client}","op":"put","key":"{key}","value":"{value}","invoke_ns":1}}"#)
            }
        }
    }
    fn start(client: &str, revision: u64) -> String {
        format!(
            r#"{{"client":"{client}","op":"watch_start","prefix":"kv/","revision":{revision},"time_ns":1}}"#
        )
    }
    fn event(client: &str, key: &str, value: &str, revision: u64) -> String {
        format!(
            r#"{{"client":"{client}","op":"watch_event","key":"{key}","value":"{value}","revision":{revision},"time_ns":3}}"#
        )
    }
    fn judge(lines: &[String]) -> Option<WatchViolation> {
        check(&parse_history(&lines.join("\n")).unwrap())
    }

    /// The writes of a small run, each seen by the watcher: every guarantee holds.
    fn good() -> Vec<String> {
        vec![
            start("w", 5),
            put("a", "kv/x", "a-1", Some(5)),
            event("w", "kv/x", "a-1", 5),
            put("b", "kv/y", "b-1", Some(7)),
            put("b", "other", "b-2", Some(8)),
            put("a", "kv/x", "a-2", None),
            event("w", "kv/y", "b-1", 7),
            event("w", "kv/x", "a-2", 9),
        ]
    }

    #[test]
    fn a_stream_that_reports_every_write_in_order_holds() {
        assert_eq!(judge(&good()), None);
    }

    #[test]
    fn a_lock_record_or_a_fault_is_skipped() {
        let mut h = good();
        h.push(r#"{"client":"c","op":"acquire","lock":"l","lease":1,"invoke_ns":1}"#.into());
        h.push(r#"{"fault":"kill","phase":"start","node":2}"#.into());
        assert_eq!(judge(&h), None);
    }

    #[test]
    fn the_lock_checker_skips_exactly_the_other_checkers_records() {
        let mut others: Vec<&str> = OPS
            .iter()
            .chain(crate::lease_expiry::OPS.iter())
            .chain(crate::linearizability::kv::OPS.iter())
            .copied()
            .collect();
        others.sort_unstable();
        others.dedup();
        let mut skipped = crate::linearizability::lock::OTHER_RECORDS.to_vec();
        skipped.sort_unstable();
        assert_eq!(others, skipped);
    }

    #[test]
    fn the_lock_checker_skips_puts_and_watch_records() {
        let mut h = good();
        h.push(r#"{"client":"c","op":"acquire","lock":"l","lease":1,"invoke_ns":1}"#.into());
        let ops = crate::linearizability::lock::parse_history(&h.join("\n")).unwrap();
        assert_eq!(ops.len(), 1);
    }

    #[test]
    fn events_out_of_revision_order_are_caught() {
        let mut h = good();
        h.swap(6, 7);
        assert_eq!(judge(&h).unwrap().property, "watch_order");
    }

    #[test]
    fn a_stream_resumed_at_a_revision_already_seen_is_caught() {
        let mut h = good();
        h.insert(7, start("w", 7));
        let v = judge(&h).unwrap();
        assert_eq!(v.property, "watch_order", "{v}");
        assert!(v.detail.contains("resumed its watch at revision 7"), "{v}");
    }

    #[test]
    fn an_acknowledged_write_left_out_is_a_gap() {
        let mut h = good();
        h.remove(6);
        let v = judge(&h).unwrap();
        assert_eq!(v.property, "watch_gap", "{v}");
        assert!(v.detail.contains("not revision 7"), "{v}");
    }

    #[test]
    fn a_write_after_the_last_event_is_no_gap() {
        let mut h = good();
        h.push(put("a", "kv/x", "a-3", Some(10)));
        assert_eq!(judge(&h), None);
    }

    #[test]
    fn an_event_that_is_not_the_change_made_at_its_revision_is_caught() {
        let mut h = good();
        h[6] = event("w", "kv/y", "a-1", 7);
        assert_eq!(judge(&h).unwrap().property, "watch_event");
        let mut h = good();
        h[7] = event("w", "kv/x", "nobody", 9);
        assert!(judge(&h).unwrap().detail.contains("a value no put wrote"));
    }

    #[test]
    fn two_watchers_that_disagree_on_a_revision_are_caught() {
        let mut h = good();
        h.push(start("v", 9));
        h.push(put("c", "kv/z", "c-1", None));
        h.push(event("v", "kv/z", "c-1", 9));
        let v = judge(&h).unwrap();
        assert_eq!(v.property, "watch_event", "{v}");
        assert!(v.detail.contains("at revision 9"), "{v}");
    }

    #[test]
    fn a_malformed_record_is_one_line_naming_what_is_missing() {
        let e = parse_history(r#"{"client":"w","op":"watch_event","key":"kv/x","revision":3}"#).unwrap_err();
        assert!(e.to_string().contains("line 1: a watch_event record without value"), "{e}");
        let e = parse_history(r#"{"client":"w","op":"watch_event","key":"kv/x","value":"v","revision":3}"#)
            .unwrap_err();
        assert!(e.to_string().contains("before its watch_start"), "{e}");
    }
}
