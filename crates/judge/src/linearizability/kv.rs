//! # Keys as registers: puts and reads, as a sequential model
//!
//! Each key of a key-value store is a register (each key is a partition): a put sets its value,
//! a read answers the value the last put set, or that the key is absent when none has. A history
//! of puts and reads is linearizable when every read answers what the last put before it, in
//! one order that respects real time, wrote. So a read that begins after a put was acknowledged
//! must see that put's value or a later one: a read answered from a replica that has not yet
//! heard of the put (a *stale read*: a follower's local state, a deposed leader's) is the
//! violation this model exists to find.
//!
//! | operation | interval | answer | sequential effect |
//! |---|---|---|---|
//! | `put` | request sent → acknowledged | (its revision, not judged here) | the key holds the value |
//! | `get` | request sent → answered | the value, or absent | none; legal only when the key holds exactly that |
//!
//! Every put writes a value no other put writes, so a read's answer names the one put it can
//! come from. A put whose outcome is unknown (no answer: a timeout, a crash) may have taken
//! effect at any point after its invocation, or never. Reads without an answer are not recorded:
//! they change nothing and prove nothing. Keys start absent: the nemesis writes under a prefix
//! unique to its run.
//!
//! Revisions, which order puts *across* keys, are judged by the watch checker
//! (`crate::watch`), not here: per-key partitions cannot see them.

use serde::Deserialize;

use super::lock::HistoryError;
use super::{Checked, Model, Operation};

/// The records this checker reads: `put` (shared with the watch checker) and `get`.
pub const OPS: [&str; 2] = ["put", "get"];

/// What a key-value operation asks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KvInput {
    /// Set `key` to `value`.
    Put {
        /// The key (the partition).
        key: String,
        /// The value, unique to this put.
        value: String,
    },
    /// Read `key`.
    Get {
        /// The key (the partition).
        key: String,
    },
}

impl KvInput {
    /// The key it acts on.
    pub fn key(&self) -> &str {
        match self {
            KvInput::Put { key, .. } | KvInput::Get { key } => key,
        }
    }
}

/// What a key-value operation answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KvOutput {
    /// A put: acknowledged.
    Written,
    /// A read: the value, or `None` when the key was absent.
    Read(Option<String>),
}

/// The sequential specification of a key as a register; the state is the key's value.
#[derive(Clone, Copy, Debug, Default)]
pub struct KvModel;

impl Model for KvModel {
    type State = Option<String>;
    type Input = KvInput;
    type Output = KvOutput;

    fn init(&self) -> Option<String> {
        None
    }

    fn step(&self, s: &Option<String>, input: &KvInput, output: Option<&KvOutput>) -> Option<Option<String>> {
        match (input, output) {
            (KvInput::Put { value, .. }, None | Some(KvOutput::Written)) => Some(Some(value.clone())),
            (KvInput::Get { .. }, Some(KvOutput::Read(seen))) => (seen == s).then(|| s.clone()),
            (KvInput::Get { .. }, None) => Some(s.clone()),
            (_, Some(_)) => None,
        }
    }

    fn partition(&self, input: &KvInput) -> String {
        input.key().to_string()
    }

    fn describe(&self, input: &KvInput, output: Option<&KvOutput>) -> String {
        match (input, output) {
            (KvInput::Put { value, .. }, Some(_)) => format!("put {value:?}"),
            (KvInput::Put { value, .. }, None) => format!("put {value:?} (no return)"),
            (KvInput::Get { .. }, Some(KvOutput::Read(Some(v)))) => format!("get -> {v:?}"),
            (KvInput::Get { .. }, Some(KvOutput::Read(None))) => "get -> absent".to_string(),
            (KvInput::Get { .. }, _) => "get (no return)".to_string(),
        }
    }
}

/// A key-value history operation.
pub type KvOperation = Operation<KvInput, KvOutput>;

/// A `put` or `get` record (the fields this module reads).
#[derive(Deserialize)]
struct Line {
    client: String,
    op: String,
    key: Option<String>,
    /// Absent from a `get` of an absent key (or `null`).
    #[serde(default)]
    value: Option<String>,
    invoke_ns: Option<u64>,
    #[serde(default)]
    return_ns: Option<u64>,
}

/// Reads the `put` and `get` records of a history (JSON lines), skipping every other record.
pub fn parse_history(text: &str) -> Result<Vec<KvOperation>, HistoryError> {
    let mut ops = Vec::new();
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
                "{e} (a {op} record has client, op, key, invoke_ns; a put its value and, when answered, \
                 return_ns; a get return_ns and the value read, or none when the key was absent)"
            ))
        })?;
        let key = l.key.ok_or_else(|| bad(format!("a {op} record without key")))?;
        let call = l.invoke_ns.ok_or_else(|| bad(format!("a {op} record without invoke_ns")))?;
        if let Some(r) = l.return_ns
            && r < call
        {
            return Err(bad(format!("return_ns {r} is before invoke_ns {call}")));
        }
        let (input, output) = if l.op == "put" {
            let value = l.value.ok_or_else(|| bad("a put record without value".into()))?;
            (KvInput::Put { key, value }, l.return_ns.map(|_| KvOutput::Written))
        } else {
            if l.return_ns.is_none() {
                return Err(bad(
                    "a get record without return_ns (record only reads that were answered)".into()
                ));
            }
            (KvInput::Get { key }, Some(KvOutput::Read(l.value)))
        };
        ops.push(Operation { client: l.client, input, output, call, ret: l.return_ns });
    }
    Ok(ops)
}

/// [`super::check`] with the register model, one partition per key.
///
/// A put that never returned and whose value no read saw is left out of the search: the same
/// question, fewer candidates. In any order that places it, no read comes between it and the
/// next put to its key (a read there would have seen its value), so the order without it
/// explains every read too. On a long nemesis run, where thousands of puts time out during
/// faults, each of them was a candidate to the end.
pub fn check_kv_history(ops: &[KvOperation], budget: u64) -> Checked {
    let seen: std::collections::HashSet<&str> = ops
        .iter()
        .filter_map(|o| match &o.output {
            Some(KvOutput::Read(Some(v))) => Some(v.as_str()),
            _ => None,
        })
        .collect();
    let searched: Vec<KvOperation> = ops
        .iter()
        .filter(|o| !matches!(&o.input, KvInput::Put { value, .. } if o.ret.is_none() && !seen.contains(value.as_str())))
        .cloned()
        .collect();
    let mut checked = super::check(&KvModel, &searched, budget);
    checked.operations = ops.len();
    checked.partitions = ops.iter().map(|o| o.input.key()).collect::<std::collections::BTreeSet<_>>().len();
    checked
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linearizability::LinearizabilityVerdict;

    fn verdict(text: &str) -> LinearizabilityVerdict {
        check_kv_history(&parse_history(text).unwrap(), 100_000).verdict
    }

    /// A read that begins after a put was acknowledged and answers the value before it: the
    /// stale read, named with the read that could not be placed.
    #[test]
    fn a_stale_read_after_an_acknowledged_put_is_a_violation() {
        let h = r#"{"client":"w1","op":"put","key":"k","value":"a","invoke_ns":0,"return_ns":10}
{"client":"w1","op":"put","key":"k","value":"b","invoke_ns":20,"return_ns":30}
{"client":"w2","op":"get","key":"k","value":"a","invoke_ns":40,"return_ns":50}"#;
        match verdict(h) {
            LinearizabilityVerdict::Violated(w) => assert!(w.to_string().contains("get -> \"a\""), "{w}"),
            v => panic!("expected a violation, got {v}"),
        }
    }

    /// The same read, concurrent with the second put, may come before it: linearizable.
    #[test]
    fn a_read_concurrent_with_a_put_may_see_the_old_value() {
        let h = r#"{"client":"w1","op":"put","key":"k","value":"a","invoke_ns":0,"return_ns":10}
{"client":"w1","op":"put","key":"k","value":"b","invoke_ns":20,"return_ns":60}
{"client":"w2","op":"get","key":"k","value":"a","invoke_ns":40,"return_ns":50}
{"client":"w2","op":"get","key":"k","value":"b","invoke_ns":70,"return_ns":80}"#;
        assert_eq!(verdict(h), LinearizabilityVerdict::Linearizable);
    }

    /// A key is absent until its first put; a read of it absent after that put is stale.
    #[test]
    fn absent_before_the_first_put_and_never_after() {
        let ok = r#"{"client":"r","op":"get","key":"k","invoke_ns":0,"return_ns":5}
{"client":"w","op":"put","key":"k","value":"a","invoke_ns":10,"return_ns":20}"#;
        assert_eq!(verdict(ok), LinearizabilityVerdict::Linearizable);
        let bad = r#"{"client":"w","op":"put","key":"k","value":"a","invoke_ns":10,"return_ns":20}
{"client":"r","op":"get","key":"k","value":null,"invoke_ns":30,"return_ns":40}"#;
        assert!(matches!(verdict(bad), LinearizabilityVerdict::Violated(_)));
    }

    /// A put whose outcome is unknown may take effect later than anything after it, or never:
    /// a read may see it long after, and a read may never see it.
    #[test]
    fn a_put_without_an_answer_may_take_effect_late_or_never() {
        let late = r#"{"client":"w1","op":"put","key":"k","value":"a","invoke_ns":0}
{"client":"w2","op":"put","key":"k","value":"b","invoke_ns":10,"return_ns":20}
{"client":"r","op":"get","key":"k","value":"a","invoke_ns":30,"return_ns":40}"#;
        assert_eq!(verdict(late), LinearizabilityVerdict::Linearizable);
        let never = r#"{"client":"w1","op":"put","key":"k","value":"a","invoke_ns":0}
{"client":"r","op":"get","key":"k","invoke_ns":30,"return_ns":40}"#;
        assert_eq!(verdict(never), LinearizabilityVerdict::Linearizable);
        // But a value read once cannot be followed by its predecessor.
        let back = r#"{"client":"w1","op":"put","key":"k","value":"a","invoke_ns":0,"return_ns":5}
{"client":"w1","op":"put","key":"k","value":"b","invoke_ns":10}
{"client":"r","op":"get","key":"k","value":"b","invoke_ns":30,"return_ns":40}
{"client":"r","op":"get","key":"k","value":"a","invoke_ns":50,"return_ns":60}"#;
        assert!(matches!(verdict(back), LinearizabilityVerdict::Violated(_)));
    }

    /// Puts without an answer that nobody read are left out of the search; one that was read
    /// stays (it took effect), and a violation is still found among them.
    #[test]
    fn unanswered_puts_nobody_read_are_left_out_of_the_search() {
        let mut lines = vec![
            r#"{"client":"w","op":"put","key":"k","value":"a","invoke_ns":0,"return_ns":10}"#.to_string(),
        ];
        for i in 0..60 {
            lines.push(format!(
                r#"{{"client":"p{i}","op":"put","key":"k","value":"lost{i}","invoke_ns":{}}}"#,
                20 + i
            ));
        }
        lines.push(
            r#"{"client":"w","op":"put","key":"k","value":"b","invoke_ns":100,"return_ns":110}"#.into(),
        );
        lines.push(
            r#"{"client":"r","op":"get","key":"k","value":"lost7","invoke_ns":120,"return_ns":130}"#.into(),
        );
        let ops = parse_history(&lines.join("\n")).unwrap();
        let checked = check_kv_history(&ops, 10_000);
        assert_eq!((checked.verdict, checked.operations), (LinearizabilityVerdict::Linearizable, 63));
        assert!(checked.steps < 100, "{} steps", checked.steps);
        // Reading "a" after "b" was acknowledged is stale whatever the lost puts did.
        lines.push(
            r#"{"client":"r","op":"get","key":"k","value":"a","invoke_ns":140,"return_ns":150}"#.into(),
        );
        let ops = parse_history(&lines.join("\n")).unwrap();
        assert!(matches!(check_kv_history(&ops, 10_000).verdict, LinearizabilityVerdict::Violated(_)));
    }

    /// Keys are independent: a read of one key says nothing of another's puts.
    #[test]
    fn keys_are_separate_registers() {
        let h = r#"{"client":"w","op":"put","key":"k1","value":"a","invoke_ns":0,"return_ns":10}
{"client":"r","op":"get","key":"k2","invoke_ns":20,"return_ns":30}"#;
        let checked = check_kv_history(&parse_history(h).unwrap(), 1000);
        assert_eq!((checked.verdict, checked.partitions), (LinearizabilityVerdict::Linearizable, 2));
    }

    /// Records of other checkers are skipped; a get without an answer, or a put without a
    /// value, is named with its line.
    #[test]
    fn malformed_records_are_named_and_others_skipped() {
        let h = r#"{"client":"c","op":"acquire","lock":"l","invoke_ns":0}
{"client":"c","op":"watch_event","key":"k","value":"v","revision":3,"time_ns":1}
{"fault":"kill","node":1}"#;
        assert!(parse_history(h).unwrap().is_empty());
        let e = parse_history(r#"{"client":"r","op":"get","key":"k","invoke_ns":1}"#).unwrap_err();
        assert!(e.to_string().starts_with("line 1: a get record without return_ns"), "{e}");
        let e = parse_history(
            "\n{\"client\":\"w\",\"op\":\"put\",\"key\":\"k\",\"invoke_ns\":1,\"return_ns\":2,\"revision\":4}",
        )
        .unwrap_err();
        assert!(e.to_string().starts_with("line 2: a put record without value"), "{e}");
    }
}
