//! The textbook's message cost for the algorithm a learner names (`--algo-like`), per
//! operation, from the same formulas `ringleader table` checks ringleader's own algorithms
//! against ([`ringleader_analysis::table::formulas`]).

use ringleader_algorithms::LeaderRule;
use ringleader_analysis::table::formulas as f;
use serde::Serialize;

use crate::family::LabFamily;

/// The algorithms the lab knows a cost for, per family.
pub fn names(family: LabFamily) -> Vec<&'static str> {
    match family {
        LabFamily::Mutex => vec!["ricart-agrawala", "lamport", "central"],
        LabFamily::Election => vec!["chang-roberts", "ring", "bully"],
        LabFamily::Deadlock => vec!["chandy-misra-haas"],
        LabFamily::Clock => vec![],
    }
}

/// A cost per operation: exact when `low == high`, a range otherwise.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Textbook {
    /// The algorithm's name.
    pub algorithm: String,
    /// The formula as the textbook writes it.
    pub formula: String,
    /// The least a correct implementation sends per operation.
    pub low: u64,
    /// The most.
    pub high: u64,
    /// Which uid a correct election elects.
    #[serde(skip)]
    pub rule: LeaderRule,
    /// `low` and `high` are the run's totals, which depend on what happened in it (its
    /// wait-for graph), not costs per operation; the run fills them in.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub per_run: bool,
}

impl Textbook {
    /// The cost of `name` on `n` nodes with `initiators` concurrent elections (elections
    /// only), or `None` for an algorithm the lab has no formula for.
    pub fn of(name: &str, family: LabFamily, n: u64, initiators: u64) -> Option<Textbook> {
        let t = |formula: &str, low: u64, high: u64, rule| Textbook {
            algorithm: name.to_string(),
            formula: formula.to_string(),
            low,
            high,
            rule,
            per_run: false,
        };
        // The formulas are stated for N ≥ 2.
        let n = n.max(2);
        let k = initiators.max(1);
        Some(match (family, name) {
            (LabFamily::Mutex, "ricart-agrawala") => {
                t("2(N−1)", f::ricart_agrawala(n, 1).total, f::ricart_agrawala(n, 1).total, LeaderRule::Max)
            }
            (LabFamily::Mutex, "lamport") => {
                t("3(N−1)", f::lamport(n, 1).total, f::lamport(n, 1).total, LeaderRule::Max)
            }
            (LabFamily::Mutex, "central") => {
                let c = if n > 1 { 3 } else { 0 };
                t("3 (REQUEST, GRANT, RELEASE)", c, c, LeaderRule::Max)
            }
            // One election: the maximum's ELECTION goes round once (N), every other initiator's
            // goes at most round once too, and N ELECTED: from 2N (the maximum alone) to
            // N(N+1)/2 + N (ids descending along the ring, all initiate).
            (LabFamily::Election, "chang-roberts") => t(
                "2N .. N(N+1)/2 + N",
                f::chang_roberts_from_max(n).total,
                f::chang_roberts_worst(n).total,
                LeaderRule::Max,
            ),
            (LabFamily::Election, "ring") => {
                let c = f::ring(n, 0, k).total;
                t("2kN (k initiators)", c, c, LeaderRule::Max)
            }
            // Bully: from N−1 (the next highest detects the crash of the highest: one ELECTION
            // and N−2 COORDINATOR; or the highest itself starts: N−1 COORDINATOR) to N²−N−1
            // (the lowest detects).
            (LabFamily::Election, "bully") => {
                t("N−1 .. N²−N−1", f::bully_best(n).total, f::bully_worst(n).total, LeaderRule::Max)
            }
            // Chandy-Misra-Haas: bounds of the run's own (ProbeBounds), not a formula in N.
            (LabFamily::Deadlock, "chandy-misra-haas") => Textbook {
                per_run: true,
                ..t(
                    "from the longest cycle each initiation reports to one probe per wait-for edge it can reach",
                    0,
                    0,
                    LeaderRule::Max,
                )
            },
            _ => return None,
        })
    }

    /// The verdict on `per_op` messages per operation: `exact`, `within`, `above` or `below`.
    pub fn verdict(&self, total: u64, operations: u64) -> &'static str {
        let (lo, hi) = if self.per_run {
            (self.low, self.high)
        } else {
            (self.low * operations, self.high * operations)
        };
        if total > hi {
            "above"
        } else if total < lo {
            "below"
        } else if lo == hi {
            "exact"
        } else {
            "within"
        }
    }

    /// The formula with its value, as printed: `2(N−1) = 8` or `2N .. N(N+1)/2 + N = 10 .. 20`.
    pub fn value(&self) -> String {
        if self.per_run {
            format!("{}: {} .. {} messages in this run", self.formula, self.low, self.high)
        } else if self.low == self.high {
            format!("{} = {}", self.formula, self.low)
        } else {
            format!("{} = {} .. {}", self.formula, self.low, self.high)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn costs_and_verdicts() {
        let ra = Textbook::of("ricart-agrawala", LabFamily::Mutex, 5, 1).unwrap();
        assert_eq!(ra.value(), "2(N−1) = 8");
        assert_eq!(ra.verdict(16, 2), "exact");
        assert_eq!(ra.verdict(17, 2), "above");
        assert_eq!(ra.verdict(15, 2), "below");
        let cr = Textbook::of("chang-roberts", LabFamily::Election, 4, 1).unwrap();
        assert_eq!((cr.low, cr.high), (8, 14));
        assert_eq!(cr.verdict(11, 1), "within");
        assert_eq!(cr.verdict(20, 1), "above");
        assert!(Textbook::of("paxos", LabFamily::Election, 4, 1).is_none());
        assert!(Textbook::of("ricart-agrawala", LabFamily::Election, 4, 1).is_none());
        let mut cmh = Textbook::of("chandy-misra-haas", LabFamily::Deadlock, 4, 1).unwrap();
        (cmh.low, cmh.high) = (6, 20);
        assert_eq!(cmh.verdict(20, 3), "within");
        assert_eq!(cmh.verdict(21, 3), "above");
        assert_eq!(cmh.verdict(5, 3), "below");
    }
}
