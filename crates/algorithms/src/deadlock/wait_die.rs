//! # Wait-die: non-preemptive deadlock prevention (Rosenkrantz, Stearns, Lewis 1978)
//!
//! *Seed 004, "prevenção": make deadlock impossible statically, here by forbidding circular
//! wait.*
//!
//! ## The rule
//! When transaction T_i asks for a resource held by T_j (timestamps kept across restarts,
//! smaller = older):
//! - T_i older than T_j: T_i **waits**;
//! - T_i younger: T_i **dies** — it aborts, releases what it holds, and restarts later with its
//!   original timestamp.
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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
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
