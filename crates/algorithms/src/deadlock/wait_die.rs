//! # Wait-die: non-preemptive deadlock prevention (Rosenkrantz, Stearns, Lewis 1978)
//!
//! *Rosenkrantz, Stearns and Lewis, "System level concurrency control for distributed database
//! systems", ACM TODS 3(2), 1978; Tanenbaum & van Steen, Distributed Systems (deadlock
//! prevention): make deadlock impossible statically, here by forbidding circular wait.*
//!
//! ## The rules
//! When transaction T_i asks for a resource held by T_j (smaller timestamp = older):
//! 1. T_i older than T_j: T_i **waits**.
//! 2. T_i younger: T_i **dies** — it aborts, releases what it holds, and restarts later.
//! 3. A transaction takes its timestamp when it starts and keeps it across restarts.
//!
//! Older waits for younger, never the reverse, so every edge of the wait-for graph points from
//! an older to a younger transaction and no cycle can form. Nothing is ever preempted: only the
//! requester is sacrificed, which is why the scheme is called non-preemptive.
//!
//! ```text
//!   running ──WaitFor / REQUEST(ts) to holders──▶ blocked ──all granted──▶ running
//!   blocked ──DIE(ts) from an older holder──▶ aborted ──WaitFor again: Restarted (same ts)──▶ blocked
//! ```
//!
//! ## Costs
//! One REQUEST per holder asked, one DIE per refusal; no detection traffic at all. The price is
//! paid in aborts: a young transaction may die several times before it is old enough to wait
//! ("it dies young, and often"). Measured in `docs/DEADLOCK.md`.
//!
//! ## Assumptions and flaws
//! Timestamps must be unique and totally ordered — (start time, uid) is — and must survive
//! restarts, otherwise a restarted transaction could starve. Aborts can be needless: the holder
//! might never have waited for the requester at all.

use super::transaction::{Decision, Rule, Transactions};

/// The wait-die rule.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct WaitDieRule;

impl Rule for WaitDieRule {
    const NAME: &'static str = "wait-die";
    const SUMMARY: &'static str =
        "prevention: an older requester waits, a younger one dies (restarts, same timestamp)";
    fn decide(requester_older: bool, _holder_committing: bool) -> Decision {
        if requester_older { Decision::Wait } else { Decision::Die }
    }
}

/// `wait-die`.
pub type WaitDie = Transactions<WaitDieRule>;

#[cfg(test)]
mod tests {
    use ringleader_core::harness::Harness;
    use ringleader_core::{Event, NodeId, Request, Time};

    use super::*;
    use crate::deadlock::transaction::Msg;
    use crate::testing::TestSystem;

    /// Position `me` of three (uid = position + 1) with a transaction begun at local time `at`.
    fn started(me: NodeId, at: Time) -> Harness<WaitDie> {
        let mut p = TestSystem::new(3).node(me);
        p.at(at).request(Request::WaitFor { holders: vec![] });
        p
    }

    /// Rule 1: an older requester is let wait (the holder reports the wait-for edge).
    #[test]
    fn rule_1_an_older_requester_waits() {
        let mut holder = started(1, 50);
        let step = holder.deliver(0, Msg::Request { ts: (10, 1) });
        assert_eq!(step.emitted(), vec![Event::Queued { node: 0, transaction: Some(10) }]);
        assert!(step.sent().is_empty());
    }

    /// Rule 2: a younger requester is told to die, and dies.
    #[test]
    fn rule_2_a_younger_requester_dies() {
        let mut holder = started(1, 50);
        assert_eq!(
            holder.deliver(0, Msg::Request { ts: (90, 1) }).sent(),
            vec![(0, Msg::Die { ts: (90, 1) })]
        );
        let mut requester = started(0, 90);
        let step = requester.request(Request::WaitFor { holders: vec![1] });
        assert_eq!(step.emitted(), vec![Event::Requested { ts: 90 }]);
        assert_eq!(step.sent(), vec![(1, Msg::Request { ts: (90, 1) })]);
        assert_eq!(requester.deliver(1, Msg::Die { ts: (90, 1) }).emitted(), vec![Event::Aborted]);
    }

    /// Rule 3: the timestamp is taken at the start and kept by the restart.
    #[test]
    fn rule_3_a_restart_keeps_the_original_timestamp() {
        let mut p = started(0, 90);
        assert_eq!(p.process.timestamp(), (90, 1));
        p.request(Request::WaitFor { holders: vec![1] });
        p.deliver(1, Msg::Die { ts: (90, 1) });
        let step = p.at(500).request(Request::WaitFor { holders: vec![] });
        assert_eq!(step.emitted(), vec![Event::Restarted]);
        assert_eq!(p.process.timestamp(), (90, 1));
    }
}
