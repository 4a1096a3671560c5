//! Lamport timestamps for the permission-based mutual-exclusion algorithms (Lamport,
//! Ricart-Agrawala, Roucairol-Carvalho, Maekawa).
//!
//! A request's priority is the pair (timestamp, uid), smaller first; [`Stamp`] is that pair.
//! Its fencing token packs the pair into one strictly increasing `u64`,
//! `ts · 2^20 + rank(uid)`, where `rank` is the uid's position among all uids in increasing
//! order (so that uids of any size fit in the low 20 bits and the packed order is the pair's
//! order). Runs are therefore limited to 2^20 nodes ([`check_size`]).

use ringleader_core::{NodeId, Uid};

use crate::{ParamError, Setup};

/// Bits of a fencing token that hold the uid's rank.
pub const RANK_BITS: u32 = 20;

/// The largest clock value a message may carry. A Lamport clock advances by one per event: no
/// process reaches 2^62 (over a century at a billion events a second), and a value near 2^64
/// would overflow the receiver's clock when it observes it and ticks.
pub const CLOCK_LIMIT: u64 = 1 << 62;

/// Whether `ts` is a clock value a sender could have stamped: every stamp follows a tick, so
/// it is at least 1, and it stays below [`CLOCK_LIMIT`]. `Err` says which bound it breaks.
pub fn admits_clock(ts: u64) -> Result<(), &'static str> {
    if ts == 0 {
        Err("a timestamp of 0: every stamp follows a tick of the sender's clock")
    } else if ts >= CLOCK_LIMIT {
        Err("a timestamp beyond 2^62: no clock ticks that often, and it would overflow this node's clock")
    } else {
        Ok(())
    }
}

/// Refuses memberships whose ranks do not fit in [`RANK_BITS`].
pub fn check_size(setup: &Setup) -> Result<(), ParamError> {
    if setup.uids.len() > 1 << RANK_BITS {
        return Err(ParamError::OutOfRange {
            key: "nodes".into(),
            reason: format!(
                "{} nodes: timestamp fencing tokens hold at most 2^{RANK_BITS} ranks",
                setup.uids.len()
            ),
        });
    }
    Ok(())
}

/// The rank of `uid` among `uids` (0 for the smallest).
pub fn rank(uids: &[Uid], uid: Uid) -> u64 {
    uids.iter().filter(|&&u| u < uid).count() as u64
}

/// A request's priority: (Lamport timestamp, uid), compared lexicographically; smaller wins.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
pub struct Stamp {
    /// The Lamport timestamp.
    pub ts: u64,
    /// The requester's uid (breaks ties).
    pub uid: Uid,
    /// The requester's position (not part of the order: uids are unique).
    pub node: NodeId,
}

impl Stamp {
    /// The fencing token of this stamp: `ts · 2^20 + rank(uid)`, strictly increasing in the
    /// stamps' order.
    pub fn fencing(&self, uids: &[Uid]) -> u64 {
        (self.ts << RANK_BITS) | rank(uids, self.uid)
    }
}

/// Lamport's logical clock, a scalar clock in Raynal and Singhal's terms (one counter, not a
/// vector): ticks before every local event and send, jumps past every timestamp it receives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct ScalarClock(pub u64);

impl ScalarClock {
    /// A local event or a send: the clock advances; returns the new value.
    pub fn tick(&mut self) -> u64 {
        self.0 += 1;
        self.0
    }

    /// A receive of a message stamped `ts`: the clock moves past it; returns the new value.
    pub fn observe(&mut self, ts: u64) -> u64 {
        self.0 = self.0.max(ts) + 1;
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fencing_follows_the_stamp_order() {
        let uids = [30, 10, 20];
        let s = |ts, uid| Stamp { ts, uid, node: 0 };
        let order = [s(1, 10), s(1, 20), s(1, 30), s(2, 10), s(7, 30)];
        for w in order.windows(2) {
            assert!(w[0] < w[1]);
            assert!(w[0].fencing(&uids) < w[1].fencing(&uids));
        }
        assert_eq!(s(2, 30).fencing(&uids), (2 << 20) + 2);
    }

    #[test]
    fn clock_ticks_and_jumps() {
        let mut c = ScalarClock::default();
        assert_eq!(c.tick(), 1);
        assert_eq!(c.observe(7), 8);
        assert_eq!(c.observe(3), 9);
    }
}
