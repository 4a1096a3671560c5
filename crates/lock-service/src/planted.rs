//! # Planted bugs: proof that the checkers can fail
//!
//! A checker that never fails proves nothing until it is shown to catch a real bug. Jepsen
//! validates its checkers on systems with known bugs; FoundationDB runs its simulator with
//! "buggified" code paths. These are ours: each is a mistake a lock service could plausibly
//! ship, planted in the replicated state machine that the simulator and `ringleader serve` share,
//! and each must be caught by the simulator's checkers (`crates/sim/tests/it/planted.rs`) while
//! the same seeds pass without it; `ringleader serve --planted NAME` plants one in a real node,
//! and `deploy/nemesis.sh --planted NAME` must catch it in containers under faults
//! (docs/NEMESIS.md).
//!
//! They exist only in a build with the `planted` feature (the test build of this workspace):
//! without it [`Planted::active`] is `false` whatever was asked, the compiler removes the
//! buggy paths, and `--param planted=…` is refused.
//!
//! | name | the mistake | what catches it |
//! |---|---|---|
//! | `fencing-reused` | a lock handed over on a release keeps the released holder's fencing token instead of taking the granting entry's index | `fencing` (two holders in turn with one token) |
//! | `grant-while-held` | a hand-over does not check that the lock is free: the first waiter is granted it while the holder still holds it | `safety` (two holders at once) |
//! | `fast-clock` | the replicated clock adds each tick four times (a unit mix-up): leases expire at a quarter of their TTL | `safety` (the server grants a lock its holder still trusts) |
//! | `watch-skips` | the changes of every 32nd revision are kept in the key-value history but left out of the notice to live watchers | the watch checker's `watch_gap` (`ringleader verify --history`; the simulator has no watchers) |
//! | `stale-read` | a server answers a read from its own state machine, skipping the ReadIndex round that confirms it still leads and has applied what was committed: a follower behind the leader, or a deposed leader, answers what it has | the key-value checker (`ringleader verify --history`'s `kv` line: a read that misses a put acknowledged before it began; the simulator has no reads) |
//!
//! Not planted yet: applying a retried proposal twice (ignoring the idempotency key). Planted,
//! it was caught on none of the runs tried (loss up to 5 %, duplication 20 %, snapshots every 20
//! entries): a duplicate commits only when the original proposal is delayed past the retry
//! interval, which those runs never do. A plan that delays proposals is needed first.

use serde::{Deserialize, Serialize};

/// A planted bug (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Planted {
    /// A lock handed over on a release keeps the released holder's fencing token.
    FencingReused,
    /// A hand-over grants the first waiter without checking that the lock is free.
    GrantWhileHeld,
    /// The replicated clock counts each tick four times.
    FastClock,
    /// The changes of every 32nd revision are not noticed to live watchers.
    WatchSkips,
    /// Reads are answered from the node's own state machine, without ReadIndex.
    StaleRead,
}

impl Planted {
    /// Every planted bug, in the order of the module documentation.
    pub const ALL: [Planted; 5] = [
        Planted::FencingReused,
        Planted::GrantWhileHeld,
        Planted::FastClock,
        Planted::WatchSkips,
        Planted::StaleRead,
    ];

    /// Its name in `--param planted=NAME`.
    pub fn name(self) -> &'static str {
        match self {
            Planted::FencingReused => "fencing-reused",
            Planted::GrantWhileHeld => "grant-while-held",
            Planted::FastClock => "fast-clock",
            Planted::WatchSkips => "watch-skips",
            Planted::StaleRead => "stale-read",
        }
    }

    /// The bug named `name`, or a one-line error naming the allowed names (and saying when
    /// this build has none).
    pub fn parse(name: &str) -> Result<Planted, String> {
        if !cfg!(feature = "planted") {
            return Err(format!(
                "{name:?}: planted bugs exist only in a build with the `planted` feature (the test build)"
            ));
        }
        Planted::ALL.into_iter().find(|p| p.name() == name).ok_or_else(|| {
            let names: Vec<&str> = Planted::ALL.iter().map(|p| p.name()).collect();
            format!("{name:?} is not a planted bug; allowed: {}", names.join(", "))
        })
    }

    /// Whether this build has planted bugs (the `planted` feature): `serve --list-planted`
    /// prints [`Planted::ALL`]'s names only then.
    pub const fn available() -> bool {
        cfg!(feature = "planted")
    }

    /// Whether `planted` is this bug, in a build that has planted bugs.
    #[inline]
    pub fn active(planted: Option<Planted>, this: Planted) -> bool {
        cfg!(feature = "planted") && planted == Some(this)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A build without the feature refuses every name; one with it knows exactly the bugs of
    /// the table and names them when refusing another.
    #[test]
    fn a_bug_is_named_only_in_a_build_with_planted_bugs() {
        let parsed = Planted::parse("fast-clock");
        if cfg!(feature = "planted") {
            assert_eq!(parsed, Ok(Planted::FastClock));
            for p in Planted::ALL {
                assert_eq!(Planted::parse(p.name()), Ok(p));
                assert!(Planted::active(Some(p), p));
            }
            let err = Planted::parse("off-by-one").unwrap_err();
            assert!(
                err.ends_with(
                    "allowed: fencing-reused, grant-while-held, fast-clock, watch-skips, stale-read"
                ),
                "{err}"
            );
        } else {
            assert!(parsed.unwrap_err().contains("`planted` feature"));
            assert!(!Planted::active(Some(Planted::FastClock), Planted::FastClock));
        }
        assert!(!Planted::active(None, Planted::FastClock));
    }
}
