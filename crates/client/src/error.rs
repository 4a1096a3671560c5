//! [`ClientError`]: the service's `reason` codes, plus what can go wrong on the way.

use serde::Deserialize;

/// Why a request failed. Each service `reason` code has its variant; the `Display` of each is
/// one line saying what happened and what to do.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ClientError {
    /// 404 `no_such_lease`: the lease is unknown, revoked or expired.
    #[error("no such lease (unknown, revoked or expired): grant a new one")]
    NoSuchLease,
    /// 409 `busy`: a try-lock found the lock held.
    #[error("the lock is held by another lease: try again later, or wait for it")]
    Busy,
    /// 409 `lock_delay`: a try-lock found the lock in its lock-delay after an involuntary loss.
    #[error(
        "the lock is in its lock-delay after its holder was lost (until {until} ms on the service's clock): try again after it"
    )]
    LockDelay {
        /// When the lock-delay ends, in milliseconds on the service's replicated clock.
        until: u64,
    },
    /// 409 `not_holder`: a release by a lease that neither holds nor waits for the lock.
    #[error("this lease neither holds nor waits for the lock: nothing to release")]
    NotHolder,
    /// 409 `not_leader`: a proclaim by a lease that does not lead the election.
    #[error("this lease does not lead the election: campaign first")]
    NotLeader,
    /// 409 `not_candidate`: a resign by a lease that is not a candidate.
    #[error("this lease is not a candidate in the election: nothing to resign")]
    NotCandidate,
    /// 409 `aborted`: wait-die refused the wait (the requester is younger than the holder).
    #[error("the service refused the wait (wait-die: this lease is younger than the holder): retry later")]
    Aborted,
    /// 409 `lost`: the lease lost the lock or candidacy while the request waited.
    #[error(
        "the lease lost the lock or candidacy while waiting (expired, revoked or wounded): start again with a live lease"
    )]
    Lost,
    /// 408 `timeout`, or the client's own deadline passed: the wait was withdrawn.
    #[error("timed out waiting; the wait was withdrawn: retry with a longer timeout")]
    Timeout,
    /// No endpoint answered (connection failed, or 503 `unavailable` from each).
    #[error("no service node answered (tried {}): check that the service runs and has a majority, or the endpoints", tried.join(", "))]
    Unavailable {
        /// The endpoints tried, in order.
        tried: Vec<String>,
    },
    /// 409 `change_in_progress`: another membership change is not applied yet.
    #[error("a membership change is already in progress: retry once it is applied")]
    ChangeInProgress,
    /// 404 `unknown_member`: the node to remove is not a member.
    #[error("no such member: {0}")]
    UnknownMember(String),
    /// 409 `last_member`: the node to remove is the last one.
    #[error("cannot remove the last member: {0}")]
    LastMember(String),
    /// 409 `already_member`: the node to add is a member already, at another address.
    #[error("already a member: {0}")]
    AlreadyMember(String),
    /// 400 `bad_request`: the service refused the request's content.
    #[error("the service refused the request: {0}")]
    BadRequest(String),
    /// An endpoint given to [`crate::Client::new`] is not `http://HOST:PORT` or
    /// `https://HOST:PORT`.
    #[error("bad endpoint {0:?}: expected http://HOST:PORT or https://HOST:PORT (no path)")]
    BadEndpoint(String),
    /// TLS cannot be set up: an unreadable or malformed CA, certificate or key file, an
    /// `https://` endpoint without a CA, or an `http://` one with a CA.
    #[error("TLS: {0}")]
    Tls(String),
    /// No endpoint answered, and one refused to be verified: its certificate is not signed by
    /// the CA given, or does not name its host. Nothing was sent to it.
    #[error(
        "refused to talk to {endpoint}: its TLS certificate could not be verified with the CA given (--cacert): {reason}; nothing was sent to it"
    )]
    Untrusted {
        /// The endpoint refused.
        endpoint: String,
        /// What TLS said.
        reason: String,
    },
    /// The answer did not follow the API (unexpected status, malformed body, broken stream).
    #[error("unexpected answer from the service: {0}")]
    Protocol(String),
}

/// An error body: `{"error": "<one line>", "reason": "<code>"}` (plus `until_ms` for
/// `lock_delay`).
#[derive(Deserialize)]
struct ErrorBody {
    #[serde(default)]
    error: String,
    reason: String,
    #[serde(default)]
    until_ms: Option<u64>,
}

impl ClientError {
    /// The error a non-2xx answer with `status` and `body` stands for.
    pub fn from_response(status: u16, body: &str) -> ClientError {
        let Ok(e) = serde_json::from_str::<ErrorBody>(body) else {
            let text: String = body.chars().take(200).collect();
            return ClientError::Protocol(format!(
                "status {status} with a body that is not an error: {text:?}"
            ));
        };
        match e.reason.as_str() {
            "bad_request" => ClientError::BadRequest(e.error),
            "no_such_lease" => ClientError::NoSuchLease,
            "timeout" => ClientError::Timeout,
            "busy" => ClientError::Busy,
            "lock_delay" => match e.until_ms {
                Some(until) => ClientError::LockDelay { until },
                None => ClientError::Protocol("a lock_delay error without until_ms".into()),
            },
            "not_holder" => ClientError::NotHolder,
            "not_leader" => ClientError::NotLeader,
            "not_candidate" => ClientError::NotCandidate,
            "aborted" => ClientError::Aborted,
            "lost" => ClientError::Lost,
            "change_in_progress" => ClientError::ChangeInProgress,
            "unknown_member" => ClientError::UnknownMember(e.error),
            "last_member" => ClientError::LastMember(e.error),
            "already_member" => ClientError::AlreadyMember(e.error),
            "unavailable" => ClientError::Unavailable { tried: Vec::new() },
            "not_found" => {
                ClientError::Protocol(format!("no such route (is this a ringleader service?): {}", e.error))
            }
            other => ClientError::Protocol(format!("status {status}, unknown reason {other:?}: {}", e.error)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(reason: &str) -> String {
        format!(r#"{{"error": "some text", "reason": "{reason}"}}"#)
    }

    #[test]
    fn every_reason_maps_to_its_variant() {
        let cases = [
            (404, "no_such_lease", ClientError::NoSuchLease),
            (408, "timeout", ClientError::Timeout),
            (409, "busy", ClientError::Busy),
            (409, "not_holder", ClientError::NotHolder),
            (409, "not_leader", ClientError::NotLeader),
            (409, "not_candidate", ClientError::NotCandidate),
            (409, "aborted", ClientError::Aborted),
            (409, "lost", ClientError::Lost),
            (409, "change_in_progress", ClientError::ChangeInProgress),
            (404, "unknown_member", ClientError::UnknownMember("some text".into())),
            (409, "last_member", ClientError::LastMember("some text".into())),
            (409, "already_member", ClientError::AlreadyMember("some text".into())),
            (400, "bad_request", ClientError::BadRequest("some text".into())),
            (503, "unavailable", ClientError::Unavailable { tried: vec![] }),
        ];
        for (status, reason, want) in cases {
            assert_eq!(ClientError::from_response(status, &body(reason)), want, "{reason}");
        }
    }

    #[test]
    fn lock_delay_carries_its_end() {
        let b = r#"{"error": "lock delay", "reason": "lock_delay", "until_ms": 1234}"#;
        assert_eq!(ClientError::from_response(409, b), ClientError::LockDelay { until: 1234 });
        let without = r#"{"error": "lock delay", "reason": "lock_delay"}"#;
        assert!(matches!(ClientError::from_response(409, without), ClientError::Protocol(_)));
    }

    #[test]
    fn unknown_reasons_and_bodies_are_protocol_errors() {
        assert!(
            matches!(ClientError::from_response(418, &body("teapot")), ClientError::Protocol(m) if m.contains("teapot"))
        );
        assert!(
            matches!(ClientError::from_response(502, "<html>bad gateway</html>"), ClientError::Protocol(m) if m.contains("502"))
        );
        assert!(
            matches!(ClientError::from_response(404, &body("not_found")), ClientError::Protocol(m) if m.contains("no such route"))
        );
    }

    #[test]
    fn every_message_is_one_line() {
        let all = [
            ClientError::NoSuchLease,
            ClientError::Busy,
            ClientError::LockDelay { until: 5 },
            ClientError::NotHolder,
            ClientError::NotLeader,
            ClientError::NotCandidate,
            ClientError::Aborted,
            ClientError::Lost,
            ClientError::Timeout,
            ClientError::ChangeInProgress,
            ClientError::UnknownMember("node 9 is not a member".into()),
            ClientError::Unavailable { tried: vec!["http://a:1".into(), "http://b:2".into()] },
            ClientError::BadRequest("ttl_ms: must be positive".into()),
            ClientError::BadEndpoint("ftp://x".into()),
            ClientError::Protocol("x".into()),
        ];
        for e in all {
            let text = e.to_string();
            assert_eq!(text.lines().count(), 1, "{text}");
        }
        let u = ClientError::Unavailable { tried: vec!["http://a:1".into(), "http://b:2".into()] };
        assert!(u.to_string().contains("http://a:1, http://b:2"));
    }
}
