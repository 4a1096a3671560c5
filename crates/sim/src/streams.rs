//! One random stream per purpose, each derived from the run's seed.
//!
//! A run draws randomness for five purposes: the layout (the ids' arrangement and a random
//! topology), the physical clocks (offsets and drifts), the workloads (when and where the
//! application asks), the network (each message's loss, latency and duplication) and the
//! algorithms themselves (each handler call's `Context::random`). Were all of them one stream,
//! one extra draw anywhere — a node that sends one more message, a workload that asks once
//! more — would shift every later latency and fault of every node, and a failing seed would not
//! survive an unrelated change. TigerBeetle's VOPR and FoundationDB's simulator derive one stream
//! per purpose from the seed for the same reason.
//!
//! So each purpose has its own salt, and the streams that many nodes share are keyed by node:
//! node `i`'s `k`-th message draws from `network(seed, i, k)` whatever the other nodes did, and
//! its `k`-th handler call reads `node(seed, i, k)`. What a node draws still depends on what
//! happened to it (a message that arrives later is answered later), but not on how many draws
//! other nodes, or other purposes, made before.
//!
//! A message's stream is SplitMix64 (Vigna's, from `rand_xoshiro`) seeded with the message's
//! key: a message draws at most four values (loss, latency, duplication, the copy's latency),
//! and SplitMix64 is seeded by storing one word, where Xoshiro256++ fills 32 bytes through a
//! seeding generator first. On the million-node ring with random latencies that seeding, and two
//! 64-bit counts a node, made the run 1.10× slower than one shared stream (docs/PERFORMANCE.md).
//!
//! The windowed engine hashes its draws with the same [`mix`] and salts, keyed by its event keys.

use rand::SeedableRng;
use rand_xoshiro::{SplitMix64, Xoshiro256PlusPlus};

use ringleader_core::NodeId;

/// Salts that keep the purposes' streams apart (ASCII of their names).
pub(crate) const SALT_HANDLER: u64 = 0x68616e646c6572;
pub(crate) const SALT_START: u64 = 0x7374617274;
pub(crate) const SALT_NETWORK: u64 = 0x6e6574776f726b;
pub(crate) const SALT_WORKLOAD: u64 = 0x776f726b6c6f6164;
const SALT_LAYOUT: u64 = 0x6c61796f7574;
const SALT_CLOCKS: u64 = 0x636c6f636b73;

/// SplitMix64's finaliser over `a` and `b`: the random value of one draw.
pub(crate) fn mix(a: u64, b: u64) -> u64 {
    let mut z = a ^ b.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The stream that lays the run out: the ids' arrangement, then a random topology.
pub(crate) fn layout(seed: u64) -> Xoshiro256PlusPlus {
    Xoshiro256PlusPlus::seed_from_u64(mix(seed ^ SALT_LAYOUT, 0))
}

/// The stream that sets every node's physical clock (offset and drift).
pub(crate) fn clocks(seed: u64) -> Xoshiro256PlusPlus {
    Xoshiro256PlusPlus::seed_from_u64(mix(seed ^ SALT_CLOCKS, 0))
}

/// The stream of the run's `i`-th workload (election initiators, the request pattern or the
/// clock schedule, the deadlock transactions).
pub(crate) fn workload(seed: u64, i: usize) -> Xoshiro256PlusPlus {
    Xoshiro256PlusPlus::seed_from_u64(mix(seed ^ SALT_WORKLOAD, i as u64))
}

/// The stream of node `from`'s `k`-th message (loss, latency, duplication, the copy's latency).
pub(crate) fn network(seed: u64, from: NodeId, k: u64) -> SplitMix64 {
    SplitMix64::seed_from_u64(mix(mix(seed ^ SALT_NETWORK, u64::from(from)), k))
}

/// The random value node `node` reads in its `k`-th handler call.
pub(crate) fn node(seed: u64, node: NodeId, k: u64) -> u64 {
    mix(mix(seed ^ SALT_HANDLER, u64::from(node)), k)
}

/// How many draws each node has made of its own streams: handler calls and messages, side by
/// side, 32 bits each (8 bytes a node, prefetched with the node's state). They are counted
/// apart so that a node's handler calls, which other nodes' messages cause, do not move its
/// messages' streams. A node that makes more than 2³² calls or sends in one run starts that
/// count again (its streams repeat, still apart from every other node's).
#[derive(Debug, Clone, Default)]
pub(crate) struct Counters {
    draws: Vec<[u32; 2]>,
}

impl Counters {
    /// Counters for `n` nodes, all at zero.
    pub(crate) fn new(n: u32) -> Self {
        Counters { draws: vec![[0; 2]; n as usize] }
    }

    /// `node`'s count of handler calls (`which` 0) or of messages (1), then one more.
    #[inline]
    fn next(&mut self, node: NodeId, which: usize) -> u64 {
        let k = &mut self.draws[node as usize][which];
        let drawn = *k;
        *k = drawn.wrapping_add(1);
        u64::from(drawn)
    }

    /// The stream of `from`'s next message, or `None` (the count still moves) when the network
    /// draws nothing (constant latency, no loss, no duplication).
    #[inline]
    pub(crate) fn next_network(&mut self, seed: u64, from: NodeId, draws: bool) -> Option<SplitMix64> {
        let k = self.next(from, 1);
        draws.then(|| network(seed, from, k))
    }

    /// The random value of `node`'s next handler call.
    #[inline]
    pub(crate) fn next_node(&mut self, seed: u64, node: NodeId) -> u64 {
        let k = self.next(node, 0);
        self::node(seed, node, k)
    }

    /// Where `node`'s counts live (to prefetch them with the node's state).
    pub(crate) fn slot(&self, node: NodeId) -> *const [u32; 2] {
        self.draws.as_ptr().wrapping_add(node as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    #[test]
    fn the_purposes_draw_apart() {
        let seed = 7;
        let first = [
            layout(seed).next_u64(),
            clocks(seed).next_u64(),
            workload(seed, 0).next_u64(),
            workload(seed, 1).next_u64(),
            network(seed, 0, 0).next_u64(),
            network(seed, 1, 0).next_u64(),
            network(seed, 0, 1).next_u64(),
            node(seed, 0, 0),
            node(seed, 1, 0),
            node(seed, 0, 1),
        ];
        let mut sorted = first.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), first.len(), "two streams began alike: {first:?}");
    }

    #[test]
    fn a_nodes_draws_do_not_move_another_nodes() {
        let (mut a, mut b) = (Counters::new(3), Counters::new(3));
        // In `b`, node 2 draws five times first; node 1's draws are unchanged.
        for _ in 0..5 {
            b.next_node(9, 2);
            b.next_network(9, 2, true);
        }
        for _ in 0..4 {
            assert_eq!(a.next_node(9, 1), b.next_node(9, 1));
            let (mut x, mut y) = (a.next_network(9, 1, true).unwrap(), b.next_network(9, 1, true).unwrap());
            assert_eq!(x.next_u64(), y.next_u64());
        }
    }
}
