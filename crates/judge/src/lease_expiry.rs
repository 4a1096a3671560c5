//! # No lease ends before its TTL
//!
//! A lease promises its holder the time to live it was granted: once the service has answered a
//! keep-alive with the lease still alive, it may not end the lease before a TTL has passed since
//! that keep-alive was *sent* (the service applied it later, and its replicated clock may only lag
//! real time). A client that was not the one to end the lease (it did not revoke it) and that
//! hears "no such lease" earlier than that has caught the service ending a lease early — the
//! mistake that hands a lock to a second holder while the first still trusts its lease.
//!
//! Clients record each such observation as one line:
//!
//! ```json
//! {"client":"etcd-1","op":"lease_gone","lease":7,"alive_ns":100,"ttl_ms":3000,"gone_ns":3200000200}
//! ```
//!
//! `alive_ns`: when the last keep-alive answered "alive" (or the grant) was sent; `gone_ns`: when
//! the answer "gone" arrived, on the same clock. `lease_early` is violated when `gone_ns` is
//! before `alive_ns + ttl`. Only one process's clock is compared with itself, so the verdict
//! holds whatever the machines' clocks say.

use serde::Deserialize;

use crate::linearizability::lock::HistoryError;

/// A lease seen gone by a client that did not end it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseGone {
    /// The client.
    pub client: String,
    /// The lease.
    pub lease: u64,
    /// When the last keep-alive (or the grant) answered "alive" was sent, in ns.
    pub alive_ns: u64,
    /// The lease's time to live, in ms.
    pub ttl_ms: u64,
    /// When "gone" was heard, in ns.
    pub gone_ns: u64,
}

/// The record kind this module reads; the lock checker skips it.
pub const OPS: [&str; 1] = ["lease_gone"];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    client: String,
    #[serde(rename = "op")]
    _op: String,
    lease: u64,
    alive_ns: u64,
    ttl_ms: u64,
    gone_ns: u64,
}

/// Reads the `lease_gone` records of a history (JSON lines), skipping every other record.
pub fn parse_history(text: &str) -> Result<Vec<LeaseGone>, HistoryError> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let Ok(value) = serde_json::from_str::<serde_json::Value>(raw) else { continue };
        if value.get("op").and_then(|o| o.as_str()) != Some(OPS[0]) {
            continue;
        }
        let l: Line = serde_json::from_value(value).map_err(|e| HistoryError::Line {
            line: i + 1,
            message: format!("{e} (a lease_gone record has client, op, lease, alive_ns, ttl_ms and gone_ns)"),
        })?;
        out.push(LeaseGone {
            client: l.client,
            lease: l.lease,
            alive_ns: l.alive_ns,
            ttl_ms: l.ttl_ms,
            gone_ns: l.gone_ns,
        });
    }
    Ok(out)
}

/// The first lease seen gone before its TTL ran out since its last keep-alive, as one line
/// naming the client, the lease and how early; `None` when every lease lived its TTL.
pub fn check(gone: &[LeaseGone]) -> Option<String> {
    gone.iter().find(|g| g.gone_ns < g.alive_ns.saturating_add(g.ttl_ms.saturating_mul(1_000_000))).map(|g| {
        format!(
            "lease_early: lease {} of {} was gone {:.3} s after a keep-alive answered alive, before its TTL of {:.3} s",
            g.lease,
            g.client,
            g.gone_ns.saturating_sub(g.alive_ns) as f64 / 1e9,
            g.ttl_ms as f64 / 1e3
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(alive: u64, gone: u64) -> String {
        format!(
            r#"{{"client":"c","op":"lease_gone","lease":7,"alive_ns":{alive},"ttl_ms":3000,"gone_ns":{gone}}}"#
        )
    }

    #[test]
    fn a_lease_gone_after_its_ttl_holds() {
        let h = [line(1_000, 3_000_001_000), line(0, 9_000_000_000)].join("\n");
        assert_eq!(check(&parse_history(&h).unwrap()), None);
    }

    #[test]
    fn a_lease_gone_before_its_ttl_is_early() {
        let h = [line(0, 9_000_000_000), line(1_000_000_000, 1_750_000_000)].join("\n");
        let v = check(&parse_history(&h).unwrap()).unwrap();
        assert!(v.starts_with("lease_early: lease 7 of c was gone 0.750 s after"), "{v}");
    }

    #[test]
    fn other_records_are_skipped_and_a_bad_one_is_named() {
        let h = r#"{"client":"c","op":"acquire","lock":"l","invoke_ns":1}"#;
        assert!(parse_history(h).unwrap().is_empty());
        let e = parse_history(r#"{"client":"c","op":"lease_gone","lease":7}"#).unwrap_err();
        assert!(e.to_string().starts_with("line 1: missing field"), "{e}");
    }
}
