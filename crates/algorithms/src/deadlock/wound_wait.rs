//! # Wound-wait: preemptive deadlock prevention (Rosenkrantz, Stearns, Lewis 1978)
//!
//! *Seed 004, "prevenção": here by allowing preemption.*
//!
//! ## The rule
//! When transaction T_i asks for a resource held by T_j (timestamps kept across restarts,
//! smaller = older):
//! - T_i older than T_j: T_i **wounds** T_j — T_j aborts, releases what it holds, and restarts
//!   later with its original timestamp; T_i waits for the release;
//! - T_i younger: T_i **waits**.
//!
//! Younger waits for older. The one exception the textbooks allow is kept: a wounded holder that
//! already has everything it needs is only finishing (committing), so it is allowed to complete
//! and release instead of being killed; an older transaction then waits briefly for a younger
//! *committing* one, which can never be part of a cycle because it has no outgoing edge and
//! never gets one before it commits.
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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
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
