//! # Wound-wait: preemptive deadlock prevention (Rosenkrantz, Stearns, Lewis 1978)
//!
//! *Rosenkrantz, Stearns and Lewis, "System level concurrency control for distributed database
//! systems", ACM TODS 3(2), 1978; Tanenbaum & van Steen, Distributed Systems (deadlock
//! prevention): here by allowing preemption.*
//!
//! ## The rules
//! When transaction T_i asks for a resource held by T_j (smaller timestamp = older):
//! 1. T_i older than T_j: T_i **wounds** T_j — T_j aborts, releases what it holds, and restarts
//!    later; T_i waits for the release.
//! 2. T_i younger: T_i **waits**.
//! 3. The one exception the textbooks allow is kept: a wounded holder that already has
//!    everything it needs is only finishing (committing), so it is allowed to complete and
//!    release instead of being killed; an older transaction then waits briefly for a younger
//!    *committing* one, which can never be part of a cycle because it has no outgoing edge and
//!    never gets one before it commits.
//! 4. A transaction takes its timestamp when it starts and keeps it across restarts.
//!
//! Younger waits for older.
//!
//! ```text
//!   running ──WaitFor / REQUEST(ts) to holders──▶ blocked ──all granted──▶ running
//!   blocked ──REQUEST from an older transaction (wounded)──▶ aborted ──WaitFor again: Restarted──▶ blocked
//! ```
//!
//! ## Costs
//! One REQUEST per holder asked; the wound is decided where the holder lives, so it costs no
//! message of its own. Compared with wait-die, fewer aborts: a transaction is sacrificed only
//! when an older one actually needs what it holds ("it wounds, but waits").
//!
//! ## Assumptions and flaws
//! Unique timestamps that survive restarts (starvation freedom). Preemption must be possible —
//! the wounded transaction's work is lost.

use super::transaction::{Decision, Rule, Transactions};

/// The wound-wait rule.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct WoundWaitRule;

impl Rule for WoundWaitRule {
    const NAME: &'static str = "wound-wait";
    const SUMMARY: &'static str =
        "prevention: an older requester wounds (aborts) a younger holder, a younger one waits";
    fn decide(requester_older: bool, holder_committing: bool) -> Decision {
        if requester_older && !holder_committing { Decision::Wound } else { Decision::Wait }
    }
}

/// `wound-wait`.
pub type WoundWait = Transactions<WoundWaitRule>;

#[cfg(test)]
mod tests {
    use ringleader_core::harness::Harness;
    use ringleader_core::{Event, NodeId, Request, Time};

    use super::*;
    use crate::deadlock::transaction::Msg;
    use crate::testing::TestSystem;

    /// Position `me` of three (uid = position + 1) with a transaction begun at local time `at`.
    fn started(me: NodeId, at: Time) -> Harness<WoundWait> {
        let mut p = TestSystem::new(3).node(me);
        p.at(at).request(Request::WaitFor { holders: vec![] });
        p
    }

    fn queued(node: NodeId, ts: Time) -> Event {
        Event::Queued { node, transaction: Some(ts) }
    }

    /// Rule 1: an older requester wounds the holder, which aborts; the requester waits.
    #[test]
    fn rule_1_an_older_requester_wounds_the_holder() {
        let mut holder = started(1, 50);
        let step = holder.deliver(0, Msg::Request { ts: (10, 1) });
        assert_eq!(step.emitted(), vec![Event::Aborted, queued(0, 10)]);
        assert!(step.sent().is_empty(), "the wound costs no message");
    }

    /// Rule 2: a younger requester waits.
    #[test]
    fn rule_2_a_younger_requester_waits() {
        let mut holder = started(1, 50);
        let step = holder.deliver(0, Msg::Request { ts: (90, 1) });
        assert_eq!(step.emitted(), vec![queued(0, 90)]);
        assert!(step.sent().is_empty());
    }

    /// Rule 3: a committing holder (it has everything it waited for) is not wounded.
    #[test]
    fn rule_3_a_committing_holder_is_not_wounded() {
        let mut holder = started(1, 50);
        holder.request(Request::WaitFor { holders: vec![2] });
        holder.request(Request::StopWaiting { holder: 2 });
        assert_eq!(holder.deliver(0, Msg::Request { ts: (10, 1) }).emitted(), vec![queued(0, 10)]);
    }

    /// Rule 4: a wounded transaction restarts with its original timestamp.
    #[test]
    fn rule_4_a_restart_keeps_the_original_timestamp() {
        let mut p = started(1, 50);
        p.deliver(0, Msg::Request { ts: (10, 1) });
        assert_eq!(p.at(400).request(Request::WaitFor { holders: vec![] }).emitted(), vec![Event::Restarted]);
        assert_eq!(p.process.timestamp(), (50, 2));
    }
}
