//! # A lock under leases, with fencing tokens, as a sequential model
//!
//! The object is one named lock (each name is a partition). Its clients observe three kinds of
//! operation, each with an interval [invoke, return]:
//!
//! | operation | interval | answer | sequential effect |
//! |---|---|---|---|
//! | `acquire` | request sent → grant seen | fencing token `f` | allowed only when the lock is free and `f` is above every token granted before; the caller holds it |
//! | `release` | release sent → client gave the lock up | `ok` | frees the lock if the caller holds it |
//! | `lease_ended` | the earliest moment the lease could have ended (the grant, at the latest) → the client noticed it had | `ok` | frees the lock if the caller holds it |
//!
//! An operation that never returned (the client crashed, the run ended, the request timed out)
//! may have taken effect once, at any point after its invocation, or not at all; an acquire
//! that never returned, if it took effect, granted *some* token above the previous ones.
//!
//! A *holder* is a client under one lease (`client` + `lease` in the history file; in the
//! simulator, a node in one life between crashes). Releasing or ending a lease the caller does
//! not hold is a no-op: the server may have expired it first.
//!
//! ## What a "linearizable" verdict proves
//!
//! That there is one total order of every grant, release and lease end, each placed inside its
//! observed interval, in which (1) nobody is granted a lock that someone else holds, and (2)
//! fencing tokens strictly increase. So: two clients never both saw themselves granted the
//! lock with no release or lease end of the first one able to come between; and no client was
//! ever granted a token at or below one granted before it in real time.
//!
//! ## What it cannot prove
//!
//! Leases are about *time*, linearizability only about real-time *order*. A `lease_ended`
//! interval begins at the grant (the server may expire a lease any time after, as far as order
//! goes), so a holder paused past its lease, which resumes and notices only after the next
//! holder was granted, is linearizable: the lease end is placed before the new grant. That
//! holder may still have *used* the lock while the next one held it: the simulator's `safety`
//! property judges that overlap in time, and fencing (the next holder's larger token) is what
//! keeps a resource safe from it. Likewise the checker cannot tell whether a lease ended
//! *early* at the server (before its TTL): that needs clocks, not order. It proves nothing
//! about operations nobody observed (a grant to a lease that ran out before the client used it
//! is invisible, and harmless: its token only makes later ones larger).

use serde::Deserialize;

use super::{Checked, LinearizabilityVerdict, Model, Operation, Witness};

/// The records of the same history file that other checkers read and this one skips: puts and
/// watch streams (`crate::watch`), leases seen gone (`crate::lease_expiry`), reads
/// ([`super::kv`]).
pub const OTHER_RECORDS: [&str; 5] = ["put", "watch_start", "watch_event", "lease_gone", "get"];

/// What a lock operation is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LockOp {
    /// Take the lock (answered with a fencing token).
    Acquire,
    /// Give it back.
    Release,
    /// The holder's lease ended (the holder noticed it had).
    LeaseEnded,
}

impl LockOp {
    /// Its name in history files.
    pub fn name(self) -> &'static str {
        match self {
            LockOp::Acquire => "acquire",
            LockOp::Release => "release",
            LockOp::LeaseEnded => "lease_ended",
        }
    }
}

/// An operation on a named lock by a holder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockInput {
    /// The lock's name (the partition).
    pub lock: String,
    /// Who: a client under one lease.
    pub holder: String,
    /// What.
    pub op: LockOp,
}

/// What a lock operation answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockOutput {
    /// An acquire: granted, with this fencing token.
    Granted {
        /// The fencing token.
        token: u64,
    },
    /// A release or a lease end: done.
    Done,
}

/// The lock's state in a linearization.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LockState {
    /// Who holds it.
    pub holder: Option<String>,
    /// The smallest token the next grant may carry (one above every token granted so far).
    pub next_token: u64,
}

/// The sequential specification of named locks under leases with fencing tokens.
#[derive(Clone, Copy, Debug, Default)]
pub struct LockModel;

impl Model for LockModel {
    type State = LockState;
    type Input = LockInput;
    type Output = LockOutput;

    fn init(&self) -> LockState {
        LockState { holder: None, next_token: 0 }
    }

    fn step(&self, s: &LockState, input: &LockInput, output: Option<&LockOutput>) -> Option<LockState> {
        match input.op {
            LockOp::Acquire => {
                if s.holder.is_some() {
                    return None;
                }
                let next_token = match output {
                    Some(&LockOutput::Granted { token }) if token >= s.next_token => token + 1,
                    Some(_) => return None,
                    // Granted some token at or above `next_token`: the next one is above it.
                    None => s.next_token + 1,
                };
                Some(LockState { holder: Some(input.holder.clone()), next_token })
            }
            LockOp::Release | LockOp::LeaseEnded => {
                if s.holder.as_ref() == Some(&input.holder) {
                    Some(LockState { holder: None, next_token: s.next_token })
                } else {
                    Some(s.clone())
                }
            }
        }
    }

    fn partition(&self, input: &LockInput) -> String {
        input.lock.clone()
    }

    fn describe(&self, input: &LockInput, output: Option<&LockOutput>) -> String {
        match (input.op, output) {
            (LockOp::Acquire, Some(LockOutput::Granted { token })) => format!("acquire -> token {token}"),
            (op, Some(_)) => op.name().to_string(),
            (op, None) => format!("{} (no return)", op.name()),
        }
    }
}

/// A lock history operation.
pub type LockOperation = Operation<LockInput, LockOutput>;

/// A history file that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A line is not a valid operation.
    #[error("line {line}: {message}")]
    Line {
        /// 1-based line number.
        line: usize,
        /// What was wrong and what is allowed.
        message: String,
    },
}

/// One line of a history file (see docs/VERIFICATION.md).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    client: String,
    op: String,
    lock: String,
    #[serde(default)]
    lease: Option<u64>,
    invoke_ns: u64,
    #[serde(default)]
    return_ns: Option<u64>,
    #[serde(default)]
    result: Option<serde_json::Value>,
    /// The node that answered a grant (deploy/nemesis.sh reads it to fault a holder's node);
    /// not judged.
    #[serde(default, rename = "node")]
    _node: Option<u64>,
}

/// Reads a lock history: JSON lines, one operation each; blank lines are skipped, and so are
/// fault records: an object with a `fault` field (deploy/nemesis.sh writes when each fault
/// started and ended into the clients' history, docs/NEMESIS.md).
pub fn parse_history(text: &str) -> Result<Vec<LockOperation>, HistoryError> {
    let mut ops = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        if raw.trim().is_empty() {
            continue;
        }
        let bad = |message: String| HistoryError::Line { line, message };
        let expected = |e: serde_json::Error| {
            bad(format!(
                "{e} (expected an object with client, op, lock, invoke_ns and optionally lease, return_ns, result, node; \
                 or a fault record, with a fault field)"
            ))
        };
        let value: serde_json::Value = serde_json::from_str(raw).map_err(expected)?;
        if value.get("fault").is_some()
            || value.get("op").and_then(|o| o.as_str()).is_some_and(|op| OTHER_RECORDS.contains(&op))
        {
            continue;
        }
        let l: Line = serde_json::from_value(value).map_err(expected)?;
        let op = match l.op.as_str() {
            "acquire" => LockOp::Acquire,
            "release" => LockOp::Release,
            "lease_ended" => LockOp::LeaseEnded,
            other => return Err(bad(format!("op {other:?} is not one of acquire, release, lease_ended"))),
        };
        if let Some(r) = l.return_ns
            && r < l.invoke_ns
        {
            return Err(bad(format!("return_ns {r} is before invoke_ns {}", l.invoke_ns)));
        }
        let output = match (l.return_ns, op, &l.result) {
            (None, _, None | Some(serde_json::Value::Null)) => None,
            (None, _, Some(_)) => {
                return Err(bad(
                    "a result without return_ns (an operation that never returned has no result)".into(),
                ));
            }
            (Some(_), LockOp::Acquire, Some(v)) => match v.get("token").and_then(|t| t.as_u64()) {
                Some(token) if v.as_object().is_some_and(|o| o.len() == 1) => {
                    Some(LockOutput::Granted { token })
                }
                _ => return Err(bad(format!("acquire result {v} is not {{\"token\": N}}"))),
            },
            (Some(_), LockOp::Acquire, None) => {
                return Err(bad("an acquire that returned needs result {\"token\": N}".into()));
            }
            (Some(_), _, None) => Some(LockOutput::Done),
            (Some(_), _, Some(v)) if v.as_str() == Some("ok") => Some(LockOutput::Done),
            (Some(_), op, Some(v)) => return Err(bad(format!("{} result {v} is not \"ok\"", op.name()))),
        };
        if l.lock.is_empty() {
            return Err(bad("lock is empty (name the lock)".into()));
        }
        let holder = match l.lease {
            Some(lease) => format!("{} (lease {lease})", l.client),
            None => l.client.clone(),
        };
        ops.push(Operation {
            client: holder.clone(),
            input: LockInput { lock: l.lock, holder, op },
            output,
            call: l.invoke_ns,
            ret: l.return_ns,
        });
    }
    Ok(ops)
}

/// [`super::check`] with the lock model, and when its search is undecided, the
/// [`definite_overlap`] scan: a history the search could not decide within its budget is still
/// refuted when two holders provably held a lock at once.
///
/// Acquires that never returned are left out of the search: the same question, fewer
/// candidates. Taking effect, such an acquire would only constrain the order (its holder holds
/// the lock, which blocks other grants, and the next token must be above its own), and nothing
/// in the model needs it (a release or lease end by a holder that does not hold is a no-op):
/// any order that places it stays an order once it is taken out. On a long nemesis run, where
/// hundreds of acquires time out during faults, each of them was a candidate to the end.
pub fn check_lock_history(ops: &[LockOperation], budget: u64) -> Checked {
    let searched: Vec<LockOperation> =
        ops.iter().filter(|o| !(o.input.op == LockOp::Acquire && o.ret.is_none())).cloned().collect();
    let mut checked = super::check(&LockModel, &searched, budget);
    checked.operations = ops.len();
    checked.partitions =
        ops.iter().map(|o| o.input.lock.as_str()).collect::<std::collections::BTreeSet<_>>().len();
    if matches!(checked.verdict, LinearizabilityVerdict::Undecided { .. })
        && let Some(w) = definite_overlap(ops)
    {
        checked.verdict = LinearizabilityVerdict::Violated(Box::new(w));
    }
    checked
}

/// Two holders that provably held one lock at once, without a search: holder A holds from the
/// return of its granted acquire (the grant took effect before the answer) at least until the
/// invocation of its next operation on that lock (a release, a `lease_ended`, another acquire:
/// none can take effect before it is invoked); if holder B's granted acquire returned inside
/// that span, B was granted the lock while A held it, which no order explains. Sound for the
/// lock model, and linear after sorting; it finds what a search out of budget could not (the
/// dense histories of a service that ends leases early). The witness is the earliest such grant.
pub fn definite_overlap(ops: &[LockOperation]) -> Option<Witness> {
    use std::collections::BTreeMap;
    // Per (lock, holder): its operations in invocation order.
    let mut by: BTreeMap<(&str, &str), Vec<&LockOperation>> = BTreeMap::new();
    for o in ops {
        by.entry((o.input.lock.as_str(), o.input.holder.as_str())).or_default().push(o);
    }
    // Per lock: (held from, held at least until, the grant) of every granted acquire.
    let mut spans: BTreeMap<&str, Vec<(u64, u64, &LockOperation)>> = BTreeMap::new();
    for ((lock, _), list) in by.iter_mut() {
        list.sort_by_key(|o| o.call);
        for (i, o) in list.iter().enumerate() {
            let (LockOp::Acquire, Some(LockOutput::Granted { .. }), Some(ret)) =
                (o.input.op, o.output, o.ret)
            else {
                continue;
            };
            let until = list[i + 1..].iter().map(|n| n.call).find(|&c| c >= o.call).unwrap_or(u64::MAX);
            if until > ret {
                spans.entry(lock).or_default().push((ret, until, o));
            }
        }
    }
    let mut found: Option<(u64, &LockOperation, &LockOperation, u64)> = None;
    for list in spans.values_mut() {
        list.sort_by_key(|&(from, _, _)| from);
        // The span reaching furthest among those started so far.
        let mut longest: Option<(u64, &LockOperation)> = None;
        for &(from, until, o) in list.iter() {
            if let Some((held_until, a)) = longest
                && held_until > from
                && a.input.holder != o.input.holder
                && found.is_none_or(|(t, ..)| from < t)
            {
                found = Some((from, a, o, held_until));
            }
            if longest.is_none_or(|(u, _)| until > u) {
                longest = Some((until, o));
            }
        }
    }
    let (at, a, b, held_until) = found?;
    let show = |o: &LockOperation| super::shown(&LockModel, o);
    let until = if held_until == u64::MAX {
        "to the end of the history".to_string()
    } else {
        format!("until at least {:.3} ms", held_until as f64 / 1e6)
    };
    Some(Witness {
        partition: a.input.lock.clone(),
        prefix_end: at,
        prefix_ops: ops.iter().filter(|o| o.input.lock == a.input.lock && o.call <= at).count(),
        culprit: format!("{} (granted while another holder held the lock)", show(b)),
        concurrent: Vec::new(),
        linearized: vec![format!("{}, held {until}", show(a))],
        linearized_len: 1,
    })
}

#[cfg(test)]
mod tests {
    use super::super::{DEFAULT_BUDGET, LinearizabilityVerdict, check};
    use super::*;

    fn op(
        holder: &str,
        kind: LockOp,
        output: Option<LockOutput>,
        call: u64,
        ret: Option<u64>,
    ) -> LockOperation {
        Operation {
            client: holder.into(),
            input: LockInput { lock: "l".into(), holder: holder.into(), op: kind },
            output,
            call,
            ret,
        }
    }
    fn acq(h: &str, token: u64, call: u64, ret: u64) -> LockOperation {
        op(h, LockOp::Acquire, Some(LockOutput::Granted { token }), call, Some(ret))
    }
    fn rel(h: &str, call: u64, ret: u64) -> LockOperation {
        op(h, LockOp::Release, Some(LockOutput::Done), call, Some(ret))
    }
    fn ended(h: &str, call: u64, ret: u64) -> LockOperation {
        op(h, LockOp::LeaseEnded, Some(LockOutput::Done), call, Some(ret))
    }
    fn verdict(h: &[LockOperation]) -> LinearizabilityVerdict {
        check(&LockModel, h, DEFAULT_BUDGET).verdict
    }

    /// Acquires that never returned are left out of the search: with sixty of them the answer
    /// is the same, in a few steps, and a double grant among them is still found.
    #[test]
    fn acquires_that_never_returned_are_left_out_of_the_search() {
        let mut h = vec![acq("a", 3, 0, 10)];
        h.extend((0..60).map(|i| op(&format!("p{i}"), LockOp::Acquire, None, 5 + i, None)));
        h.extend([rel("a", 20, 30), acq("b", 5, 40, 50), rel("b", 60, 70)]);
        let checked = check_lock_history(&h, DEFAULT_BUDGET);
        assert_eq!(
            (checked.verdict, checked.operations, checked.partitions),
            (LinearizabilityVerdict::Linearizable, 64, 1)
        );
        assert!(checked.steps < 100, "{} steps", checked.steps);
        h.push(acq("c", 9, 55, 58));
        assert!(matches!(
            check_lock_history(&h, DEFAULT_BUDGET).verdict,
            LinearizabilityVerdict::Violated(_)
        ));
    }

    #[test]
    fn increasing_tokens_with_releases_between_grants_hold() {
        let h =
            [acq("a", 3, 0, 10), rel("a", 20, 30), acq("b", 5, 5, 40), rel("b", 50, 60), acq("a", 9, 55, 70)];
        assert_eq!(verdict(&h), LinearizabilityVerdict::Linearizable);
    }

    #[test]
    fn two_overlapping_grants_violate() {
        let h = [acq("a", 3, 0, 10), acq("b", 5, 0, 20), rel("a", 30, 40), rel("b", 30, 40)];
        let LinearizabilityVerdict::Violated(w) = verdict(&h) else {
            panic!("two holders must not be linearizable")
        };
        assert_eq!(w.prefix_end, 20, "{w}");
        assert!(w.culprit.contains("acquire -> token 5"), "{w}");
    }

    #[test]
    fn a_release_concurrent_with_the_next_grant_may_come_first() {
        let h = [acq("a", 3, 0, 10), rel("a", 20, 40), acq("b", 5, 15, 30)];
        assert_eq!(verdict(&h), LinearizabilityVerdict::Linearizable);
    }

    #[test]
    fn a_stale_token_after_a_newer_grant_violates() {
        let h = [acq("a", 7, 0, 10), rel("a", 20, 30), acq("b", 6, 40, 50)];
        let LinearizabilityVerdict::Violated(w) = verdict(&h) else { panic!() };
        assert!(w.culprit.contains("b acquire -> token 6"), "{w}");
        // A repeated token is as stale as a smaller one.
        assert!(matches!(
            verdict(&[acq("a", 7, 0, 10), rel("a", 20, 30), acq("b", 7, 40, 50)]),
            LinearizabilityVerdict::Violated(_)
        ));
    }

    #[test]
    fn a_lease_end_frees_the_lock_but_only_after_the_grant() {
        // The paused holder: the lease end is noticed after the next grant, but may be placed
        // before it.
        let h = [acq("a", 3, 0, 10), acq("b", 5, 5, 40), ended("a", 10, 60)];
        assert_eq!(verdict(&h), LinearizabilityVerdict::Linearizable);
        // Without it, the same grants are two holders.
        assert!(matches!(verdict(&h[..2]), LinearizabilityVerdict::Violated(_)));
    }

    #[test]
    fn an_acquire_that_never_returned_may_hold_the_lock_and_use_a_token() {
        let pending = op("a", LockOp::Acquire, None, 0, None);
        // It may not have taken effect: b is granted.
        assert_eq!(verdict(&[pending.clone(), acq("b", 5, 10, 20)]), LinearizabilityVerdict::Linearizable);
        // If it took effect, it holds the lock: with no release of a's, a grant to b after it in
        // real time is explained only by leaving a's acquire out (or placing it after b's).
        let h = [pending.clone(), acq("b", 5, 10, 20), rel("b", 30, 40), acq("c", 6, 50, 60)];
        assert_eq!(verdict(&h), LinearizabilityVerdict::Linearizable);
        // Its token, whatever it was, is above the one granted before it: after grants 5 and
        // (some token above 5) a grant of 6 cannot follow both.
        let a = op("a", LockOp::Acquire, None, 30, None);
        let h = [acq("b", 5, 0, 10), rel("b", 12, 14), a, ended("a", 40, 50), acq("c", 6, 60, 70)];
        assert_eq!(verdict(&h), LinearizabilityVerdict::Linearizable, "a's acquire may be left out");
    }

    /// A seeded generator of valid sequential lock histories, made concurrent by stretching every
    /// interval around its linearization point: always linearizable.
    #[test]
    fn valid_sequential_histories_made_concurrent_are_linearizable() {
        use rand::{RngExt, SeedableRng};
        for seed in 0..200u64 {
            let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
            let clients = ["a", "b", "c", "d"];
            let mut holder: Option<&str> = None;
            let mut token = rng.random_range(0..5u64);
            let mut h = Vec::new();
            for k in 0..40u64 {
                let point = 1_000 + k * 100;
                let (call, ret) = (point - rng.random_range(0..400), point + rng.random_range(0..400));
                match holder {
                    None => {
                        let c = clients[rng.random_range(0..clients.len())];
                        token += rng.random_range(1..4);
                        holder = Some(c);
                        if rng.random_range(0..10) == 0 {
                            h.push(op(c, LockOp::Acquire, None, call, None));
                        } else {
                            h.push(acq(c, token, call, ret));
                        }
                    }
                    Some(c) => {
                        holder = None;
                        let kind =
                            if rng.random_range(0..3) == 0 { LockOp::LeaseEnded } else { LockOp::Release };
                        h.push(op(c, kind, Some(LockOutput::Done), call, Some(ret)));
                    }
                }
            }
            let c = check(&LockModel, &h, DEFAULT_BUDGET);
            assert_eq!(c.verdict, LinearizabilityVerdict::Linearizable, "seed {seed}: {h:?}");
        }
    }

    #[test]
    fn history_lines_parse_and_bad_ones_say_what_is_allowed() {
        let text = r#"
{"client":"c1","op":"acquire","lock":"orders","lease":7,"invoke_ns":100,"return_ns":250,"result":{"token":12}}
{"client":"c1","op":"release","lock":"orders","lease":7,"invoke_ns":300,"return_ns":320,"result":"ok"}
{"client":"c2","op":"acquire","lock":"orders","invoke_ns":310}
"#;
        let ops = parse_history(text).unwrap();
        assert_eq!(ops.len(), 3);
        assert_eq!(ops[0].output, Some(LockOutput::Granted { token: 12 }));
        assert_eq!(ops[0].input.holder, "c1 (lease 7)");
        assert_eq!((ops[2].output, ops[2].ret), (None, None));
        assert_eq!(check(&LockModel, &ops, DEFAULT_BUDGET).verdict, LinearizabilityVerdict::Linearizable);
        let err = |l: &str| parse_history(l).unwrap_err().to_string();
        assert!(err(r#"{"client":"c","op":"lock","lock":"x","invoke_ns":1}"#).contains("not one of acquire"));
        assert!(
            err(
                r#"{"client":"c","op":"acquire","lock":"x","invoke_ns":5,"return_ns":4,"result":{"token":1}}"#
            )
            .contains("before invoke_ns")
        );
        assert!(
            err(r#"{"client":"c","op":"acquire","lock":"x","invoke_ns":1,"return_ns":4}"#)
                .contains("needs result")
        );
        assert!(err("\n{nope").starts_with("line 2: "));
        assert!(
            err(r#"{"client":"c","op":"acquire","lock":"x","invoke_ns":1,"fault":7"#).starts_with("line 1: ")
        );
    }

    /// A search out of budget (here a budget of one step) is undecided; the overlap scan still
    /// refutes a history in which a second holder's grant returned while the first holder held
    /// the lock (before it invoked anything else on it), and leaves one where the first holder
    /// had invoked its release (or its lease end) by then.
    #[test]
    fn an_undecided_history_is_refuted_by_a_definite_overlap() {
        let overlap = r#"{"client":"c1","op":"acquire","lock":"orders","lease":7,"invoke_ns":100,"return_ns":200,"result":{"token":12}}
{"client":"c2","op":"acquire","lock":"orders","lease":8,"invoke_ns":150,"return_ns":300,"result":{"token":13}}
{"client":"c1","op":"release","lock":"orders","lease":7,"invoke_ns":400,"return_ns":420,"result":"ok"}
{"client":"c2","op":"release","lock":"orders","lease":8,"invoke_ns":500}
"#;
        let ops = parse_history(overlap).unwrap();
        assert!(matches!(check(&LockModel, &ops, 1).verdict, LinearizabilityVerdict::Undecided { .. }));
        let LinearizabilityVerdict::Violated(w) = check_lock_history(&ops, 1).verdict else {
            panic!("not refuted")
        };
        assert_eq!((w.partition.as_str(), w.prefix_end), ("orders", 300));
        assert!(w.culprit.starts_with("c2 (lease 8) acquire -> token 13"), "{}", w.culprit);
        assert!(w.linearized[0].starts_with("c1 (lease 7) acquire -> token 12"), "{w}");
        for released in [
            r#"{"client":"c1","op":"release","lock":"orders","lease":7,"invoke_ns":250}"#,
            r#"{"client":"c1","op":"lease_ended","lock":"orders","lease":7,"invoke_ns":250,"return_ns":900}"#,
        ] {
            let text = overlap.replacen(
                r#"{"client":"c1","op":"release","lock":"orders","lease":7,"invoke_ns":400,"return_ns":420,"result":"ok"}"#,
                released,
                1,
            );
            let ops = parse_history(&text).unwrap();
            assert_eq!(definite_overlap(&ops), None, "{released}");
            assert_eq!(
                check_lock_history(&ops, DEFAULT_BUDGET).verdict,
                LinearizabilityVerdict::Linearizable,
                "{released}"
            );
        }
    }

    /// The nemesis's fault records (an object with a `fault` field) are skipped wherever they
    /// are, and change nothing in the verdict: here a violation between two of them.
    #[test]
    fn fault_records_are_skipped() {
        let text = r#"{"fault":"kill","node":2,"phase":"start","time_ns":90,"seed":1}
{"client":"c1","op":"acquire","lock":"orders","invoke_ns":100,"return_ns":250,"result":{"token":12}}
{"fault":"partition-one-way","node":1,"phase":"start","time_ns":260,"seed":1}
{"client":"c2","op":"acquire","lock":"orders","invoke_ns":300,"return_ns":320,"result":{"token":13}}
{"fault":"kill","node":2,"phase":"end","time_ns":400,"seed":1}
"#;
        let ops = parse_history(text).unwrap();
        assert_eq!(ops.len(), 2);
        assert_eq!(ops[1].input.holder, "c2");
        assert!(matches!(
            check(&LockModel, &ops, DEFAULT_BUDGET).verdict,
            LinearizabilityVerdict::Violated(_)
        ));
        let without: String =
            text.lines().filter(|l| !l.contains("fault")).map(|l| format!("{l}\n")).collect();
        assert_eq!(parse_history(&without).unwrap(), ops);
    }
}
