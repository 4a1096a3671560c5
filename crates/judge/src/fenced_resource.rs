//! # The fenced resource's log, judged on its own and against the clients' history
//!
//! A fencing token (Kleppmann, "How to do distributed locking", 2016; Burrows' Chubby
//! sequencers) protects a resource from a holder whose lock was taken away while it was paused:
//! the resource accepts a write only if its token is at least the highest it has accepted for
//! that lock. `ringleader fenced-resource` is such a resource; it logs every decision, in the
//! order it took them, one JSON line each ([`LogLine`]).
//!
//! Re-checking the resource's own rule on its own log proves little: the resource wrote both.
//! [`check_log`] therefore judges three things, the last two *against the clients' lock
//! history* (the file `ringleader verify --history` reads), which the resource never saw:
//!
//! 1. **Never backwards**: per lock, an accepted token is never below an earlier accepted one
//!    (the resource's own rule; a resource that breaks it is caught here).
//! 2. **One writer per token**: per lock, two different clients are never both accepted with
//!    the same token (the rule accepts an equal token as "the same holder writing again", so a
//!    second holder given the same token by a faulty lock service would pass rule 1).
//! 3. **Written while held, by the history** (only with a history):
//!    - the writer was *granted* that token for that lock (an acquire of that client on that lock
//!      returned it): a token nobody was granted, or granted to someone else, is a forgery or a
//!      mix-up;
//!    - the write was not accepted after the writer's own release or lease end *returned* (the
//!      writer knew it no longer held the lock);
//!    - the write was not accepted after *another* holder's acquire of that lock returned a
//!      higher token (the lock had provably moved on), unless the writer declared the write
//!      stale on purpose (`"stale": true`: `service-load --stale-writers` writes after its lease
//!      ran out, to test the fence). Fencing cannot refuse such a write while the newer holder
//!      has not written yet; declared stale writes accepted that way are counted, not judged.
//!
//! Times in the log and in the history are Unix nanoseconds read by different processes on one
//! host, so "after" means later by more than a slack (`slack_ns`, default
//! [`DEFAULT_SLACK_NS`]): a rule is broken only when the clocks prove it.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::linearizability::lock::{LockOp, LockOperation, LockOutput};

/// The default slack between the resource's clock and the clients' clocks: 10 ms.
pub const DEFAULT_SLACK_NS: u64 = 10_000_000;

/// One line of the resource's log: one decision.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct LogLine {
    /// When the decision was taken (nanoseconds since the Unix epoch).
    pub at_ns: u64,
    /// The lock name.
    pub lock: String,
    /// The fencing token the write carried.
    pub token: u64,
    /// Who wrote.
    pub client: String,
    /// Whether it was accepted.
    pub accepted: bool,
    /// The writer declared it writes after its lease ran out, on purpose (a test of the fence).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stale: bool,
}

/// A rule of the module documentation broken by an accepted write (`line` counts from 1).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FenceAnomaly {
    /// Rule 1: an accepted token below an earlier accepted one.
    #[error("line {line}: lock {lock} accepted token {token} after {highest}")]
    Backwards {
        /// The log line.
        line: usize,
        /// The lock.
        lock: String,
        /// The token accepted.
        token: u64,
        /// The highest token accepted before it.
        highest: u64,
    },
    /// Rule 2: two writers accepted with one token.
    #[error("line {line}: lock {lock} accepted token {token} from {client}, already accepted from {first}")]
    SharedToken {
        /// The log line.
        line: usize,
        /// The lock.
        lock: String,
        /// The token.
        token: u64,
        /// The second writer.
        client: String,
        /// The first writer accepted with it.
        first: String,
    },
    /// Rule 3: the writer was never granted this token for this lock.
    #[error(
        "line {line}: lock {lock} accepted token {token} from {client}, which the history never granted it"
    )]
    NeverGranted {
        /// The log line.
        line: usize,
        /// The lock.
        lock: String,
        /// The token.
        token: u64,
        /// The writer.
        client: String,
    },
    /// Rule 3: accepted after the writer's own release or lease end returned.
    #[error(
        "line {line}: lock {lock} accepted token {token} from {client} {late_ns} ns after its {what} returned"
    )]
    AfterItsEnd {
        /// The log line.
        line: usize,
        /// The lock.
        lock: String,
        /// The token.
        token: u64,
        /// The writer.
        client: String,
        /// `release` or `lease_ended`.
        what: &'static str,
        /// How long after the return the write was accepted.
        late_ns: u64,
    },
    /// Rule 3: accepted after another holder was granted a higher token.
    #[error(
        "line {line}: lock {lock} accepted token {token} from {client} {late_ns} ns after {newer_client} was granted token {newer_token}"
    )]
    AfterNewerGrant {
        /// The log line.
        line: usize,
        /// The lock.
        lock: String,
        /// The token.
        token: u64,
        /// The writer.
        client: String,
        /// The newer holder.
        newer_client: String,
        /// Its token.
        newer_token: u64,
        /// How long after the newer grant returned the write was accepted.
        late_ns: u64,
    },
}

/// What [`check_log`] found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct LogCheck {
    /// Accepted writes.
    pub accepted: u64,
    /// Rejected writes.
    pub rejected: u64,
    /// Lock names written.
    pub locks: usize,
    /// Whether the log was judged against a history (rule 3).
    pub against_history: bool,
    /// Declared stale writes accepted while the newer holder had not written yet (not judged).
    pub stale_accepted: u64,
    /// Every broken rule, in log order.
    pub anomalies: Vec<FenceAnomaly>,
}

/// A log that cannot be read.
#[derive(Debug, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct LogError {
    /// 1-based line number.
    pub line: usize,
    /// What was wrong and what is allowed.
    pub message: String,
}

/// What the history says of one lock, for rule 3.
#[derive(Default)]
struct Held<'h> {
    /// Acquires that returned a token: (client, token, the acquire).
    grants: Vec<(&'h str, u64, &'h LockOperation)>,
    /// Releases and lease ends that returned: (holder, kind, call, return).
    ends: Vec<(&'h str, &'static str, u64, u64)>,
}

/// The client name of a history holder (`client (lease N)` or `client`).
fn client_of(holder: &str) -> &str {
    holder.split_once(" (lease ").map_or(holder, |(c, _)| c)
}

fn index(history: &[LockOperation]) -> HashMap<&str, Held<'_>> {
    let mut by_lock: HashMap<&str, Held<'_>> = HashMap::new();
    for op in history {
        let held = by_lock.entry(op.input.lock.as_str()).or_default();
        match (op.input.op, op.output, op.ret) {
            (LockOp::Acquire, Some(LockOutput::Granted { token }), Some(_)) => {
                held.grants.push((client_of(&op.input.holder), token, op));
            }
            (LockOp::Release, Some(_), Some(ret)) => {
                held.ends.push((op.input.holder.as_str(), "release", op.call, ret));
            }
            (LockOp::LeaseEnded, Some(_), Some(ret)) => {
                held.ends.push((op.input.holder.as_str(), "lease_ended", op.call, ret));
            }
            _ => {}
        }
    }
    by_lock
}

/// Judges a resource log (JSON lines, [`LogLine`]); with `history`, rule 3 as well (see the
/// module documentation). `slack_ns` is how much later than a return a write must be to count
/// as after it.
pub fn check_log(text: &str, history: Option<&[LockOperation]>, slack_ns: u64) -> Result<LogCheck, LogError> {
    let by_lock = history.map(index);
    let mut highest: HashMap<String, u64> = HashMap::new();
    let mut writer: HashMap<(String, u64), String> = HashMap::new();
    let mut c = LogCheck { against_history: history.is_some(), ..LogCheck::default() };
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        if raw.trim().is_empty() {
            continue;
        }
        let l: LogLine = serde_json::from_str(raw).map_err(|e| LogError {
            line,
            message: format!(
                "not a fenced-resource log line ({e}); expected {{\"at_ns\", \"lock\", \"token\", \"client\", \"accepted\"}}"
            ),
        })?;
        if !l.accepted {
            c.rejected += 1;
            continue;
        }
        c.accepted += 1;
        let h = highest.entry(l.lock.clone()).or_insert(l.token);
        if l.token < *h {
            c.anomalies.push(FenceAnomaly::Backwards {
                line,
                lock: l.lock.clone(),
                token: l.token,
                highest: *h,
            });
        }
        *h = (*h).max(l.token);
        let first = writer.entry((l.lock.clone(), l.token)).or_insert_with(|| l.client.clone());
        if *first != l.client {
            c.anomalies.push(FenceAnomaly::SharedToken {
                line,
                lock: l.lock.clone(),
                token: l.token,
                client: l.client.clone(),
                first: first.clone(),
            });
        }
        if let Some(by_lock) = &by_lock {
            judge_against_history(&l, line, by_lock.get(l.lock.as_str()), slack_ns, &mut c);
        }
    }
    c.locks = highest.len();
    Ok(c)
}

fn judge_against_history(l: &LogLine, line: usize, held: Option<&Held<'_>>, slack_ns: u64, c: &mut LogCheck) {
    let (lock, token, client) = (l.lock.clone(), l.token, l.client.clone());
    let grant = held.and_then(|h| h.grants.iter().find(|(who, t, _)| *who == l.client && *t == l.token));
    let (Some(held), Some((_, _, acquire))) = (held, grant) else {
        c.anomalies.push(FenceAnomaly::NeverGranted { line, lock, token, client });
        return;
    };
    // The writer's own end: its first release or lease end on this lock after the acquire.
    let own_end = held
        .ends
        .iter()
        .filter(|(holder, _, call, _)| *holder == acquire.input.holder && *call >= acquire.call)
        .min_by_key(|(_, _, call, _)| *call);
    if let Some(&(_, what, _, ret)) = own_end
        && l.at_ns > ret.saturating_add(slack_ns)
    {
        c.anomalies.push(FenceAnomaly::AfterItsEnd {
            line,
            lock,
            token,
            client,
            what,
            late_ns: l.at_ns - ret,
        });
        return;
    }
    let newer = held
        .grants
        .iter()
        .filter(|(who, t, op)| {
            *who != l.client && *t > l.token && op.ret.is_some_and(|r| l.at_ns > r.saturating_add(slack_ns))
        })
        .min_by_key(|(_, _, op)| op.ret);
    if let Some(&(newer_client, newer_token, op)) = newer {
        if l.stale {
            c.stale_accepted += 1;
        } else {
            let late_ns = l.at_ns - op.ret.unwrap_or(l.at_ns);
            c.anomalies.push(FenceAnomaly::AfterNewerGrant {
                line,
                lock,
                token,
                client,
                newer_client: newer_client.to_string(),
                newer_token,
                late_ns,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linearizability::lock::parse_history;

    fn line(at_ns: u64, lock: &str, token: u64, client: &str, accepted: bool) -> String {
        serde_json::to_string(&LogLine {
            at_ns,
            lock: lock.into(),
            token,
            client: client.into(),
            accepted,
            stale: false,
        })
        .unwrap()
    }

    /// A history: `a` holds lock `x` with token 3 from 10 to 40, `b` with token 7 from 50 to 90.
    fn history() -> Vec<LockOperation> {
        let text = [
            r#"{"client":"a","op":"acquire","lock":"x","lease":1,"invoke_ns":10,"return_ns":20,"result":{"token":3}}"#,
            r#"{"client":"a","op":"release","lock":"x","lease":1,"invoke_ns":30,"return_ns":40,"result":"ok"}"#,
            r#"{"client":"b","op":"acquire","lock":"x","lease":2,"invoke_ns":35,"return_ns":50,"result":{"token":7}}"#,
            r#"{"client":"b","op":"release","lock":"x","lease":2,"invoke_ns":80,"return_ns":90,"result":"ok"}"#,
        ]
        .join("\n");
        parse_history(&text).unwrap()
    }

    #[test]
    fn rule_1_an_accepted_token_below_an_earlier_one_is_found() {
        let good = [line(1, "a", 3, "p", true), line(2, "a", 2, "q", false), line(3, "b", 1, "q", true)];
        let c = check_log(&good.join("\n"), None, 0).unwrap();
        assert_eq!((c.accepted, c.rejected, c.locks, c.anomalies.len()), (2, 1, 2, 0));
        let bad = [line(1, "a", 3, "p", true), line(2, "b", 9, "q", true), line(3, "a", 2, "r", true)];
        let c = check_log(&bad.join("\n"), None, 0).unwrap();
        assert_eq!(
            c.anomalies,
            [FenceAnomaly::Backwards { line: 3, lock: "a".into(), token: 2, highest: 3 }]
        );
    }

    /// The resource's own rule accepts an equal token; two writers with one token pass it.
    #[test]
    fn rule_2_two_writers_accepted_with_one_token_are_found() {
        let same_writer = [line(1, "a", 5, "p", true), line(2, "a", 5, "p", true)];
        assert!(check_log(&same_writer.join("\n"), None, 0).unwrap().anomalies.is_empty());
        let two = [line(1, "a", 5, "p", true), line(2, "a", 5, "q", true)];
        let c = check_log(&two.join("\n"), None, 0).unwrap();
        assert_eq!(
            c.anomalies,
            [FenceAnomaly::SharedToken {
                line: 2,
                lock: "a".into(),
                token: 5,
                client: "q".into(),
                first: "p".into()
            }]
        );
    }

    #[test]
    fn rule_3_writes_while_held_by_the_history_pass() {
        let h = history();
        let log = [line(25, "x", 3, "a", true), line(60, "x", 7, "b", true), line(65, "x", 3, "a", false)];
        let c = check_log(&log.join("\n"), Some(&h), 0).unwrap();
        assert!(c.anomalies.is_empty(), "{:?}", c.anomalies);
        assert!(c.against_history);
    }

    #[test]
    fn rule_3_a_token_the_writer_was_never_granted_is_found() {
        let h = history();
        // A forged token; and b writing with a's token.
        let log = [line(25, "x", 9_000_000_000, "a", true), line(60, "x", 9_000_000_000, "b", false)];
        let c = check_log(&log.join("\n"), Some(&h), 0).unwrap();
        assert!(matches!(c.anomalies[..], [FenceAnomaly::NeverGranted { line: 1, .. }]), "{:?}", c.anomalies);
        let log = [line(25, "x", 3, "b", true)];
        let c = check_log(&log.join("\n"), Some(&h), 0).unwrap();
        assert!(matches!(c.anomalies[..], [FenceAnomaly::NeverGranted { .. }]), "{:?}", c.anomalies);
        let c = check_log(&line(25, "y", 3, "a", true), Some(&h), 0).unwrap();
        assert!(matches!(c.anomalies[..], [FenceAnomaly::NeverGranted { .. }]), "other lock");
    }

    #[test]
    fn rule_3_a_write_after_the_writers_own_release_returned_is_found() {
        let h = history();
        // a released at 40; b had not written yet, so the fence accepted a's token 3 at 45.
        let c = check_log(&line(45, "x", 3, "a", true), Some(&h), 0).unwrap();
        assert_eq!(
            c.anomalies,
            [FenceAnomaly::AfterItsEnd {
                line: 1,
                lock: "x".into(),
                token: 3,
                client: "a".into(),
                what: "release",
                late_ns: 5
            }]
        );
        // Within the slack, the clocks do not prove it.
        assert!(check_log(&line(45, "x", 3, "a", true), Some(&h), 5).unwrap().anomalies.is_empty());
    }

    #[test]
    fn rule_3_a_write_after_a_newer_grant_is_found_unless_declared_stale() {
        // a's lease ran out (lease_ended confirmed late), b was granted 7 at 50, a wrote at 55.
        let text = [
            r#"{"client":"a","op":"acquire","lock":"x","lease":1,"invoke_ns":10,"return_ns":20,"result":{"token":3}}"#,
            r#"{"client":"a","op":"lease_ended","lock":"x","lease":1,"invoke_ns":10,"return_ns":100,"result":"ok"}"#,
            r#"{"client":"b","op":"acquire","lock":"x","lease":2,"invoke_ns":35,"return_ns":50,"result":{"token":7}}"#,
        ]
        .join("\n");
        let h = parse_history(&text).unwrap();
        let c = check_log(&line(55, "x", 3, "a", true), Some(&h), 0).unwrap();
        assert!(
            matches!(&c.anomalies[..], [FenceAnomaly::AfterNewerGrant { newer_token: 7, late_ns: 5, .. }]),
            "{:?}",
            c.anomalies
        );
        let stale = LogLine {
            at_ns: 55,
            lock: "x".into(),
            token: 3,
            client: "a".into(),
            accepted: true,
            stale: true,
        };
        let c = check_log(&serde_json::to_string(&stale).unwrap(), Some(&h), 0).unwrap();
        assert_eq!((c.anomalies.len(), c.stale_accepted), (0, 1));
    }

    #[test]
    fn a_line_that_is_not_a_decision_is_a_one_line_error() {
        let err = check_log("{\"lock\": 1}", None, 0).unwrap_err();
        assert_eq!(err.line, 1);
        assert!(err.to_string().contains("expected"), "{err}");
    }
}
