//! # Super-peers in a DHT: reserve the leftmost k bits of the identifier space
//!
//! *Tanenbaum & van Steen, Distributed Systems (elections in large-scale systems: in a DHT,
//! reserve the first k bits of the identifier space for super-peers); Lo, Zhou, Liu,
//! GauthierDickey and Li, "Scalable supernode selection in peer-to-peer overlay networks" (HOT-P2P
//! 2005); Stoica et al., "Chord", SIGCOMM 2001, for the DHT.*
//!
//! ## The idea
//! A large system does not elect one leader but a *set* of super-peers that serve the normal
//! nodes. In a DHT every node already has a random m-bit identifier and a way to find the node
//! responsible for any key. Reserve the keys whose last m − k bits are zero: there are 2^k of
//! them, spread evenly round the identifier ring, and the nodes responsible for them are the
//! super-peers. The super-peer of a node with identifier p is the node responsible for
//! `p AND 1^k 0^(m−k)` — the reserved key at the start of p's block — so the ring is cut into 2^k
//! equal blocks and each super-peer serves the nodes of its block. No election messages at all:
//! the cost is the DHT lookups.
//!
//! ## The rules
//! 1. The DHT is Chord: identifiers are the m-bit hash of the node's uid (and `salt`), as Chord
//!    hashes the address; a node knows its predecessor and its fingers (finger i is the node
//!    responsible for id + 2^i). The overlay is given, as the textbook assumes: it is built from the
//!    membership when the node is created, not by a join protocol.
//! 2. k = ⌈log2(N · fraction)⌉, so that 2^k ≥ N · fraction super-peers are aimed for.
//! 3. At start, a node responsible for a reserved key (one lies in (predecessor, self]) is a
//!    super-peer: it emits `SuperPeer` and serves itself (its own block key is one it owns).
//! 4. Every other node looks up its block key: LOOKUP(key, origin) hops along closest-preceding
//!    fingers; the node whose successor is responsible answers FOUND(super-peer) to the origin,
//!    which then sends JOIN to its super-peer (so that the super-peer knows its clients) and emits
//!    `ServedBy`.
//!
//! ## Parameters
//! - `fraction` (default 0.01): the share of super-peers aimed for; the target is 2^k;
//! - `bits` (default 32, 8..=63): m; colliding hashes are bumped to the next free id;
//! - `salt` (default 0): another hash, hence another DHT, for the same uids. The hash is keyed
//!   by `salt + seed − 1`, so the run's `--seed` also draws another DHT (seed 1, salt 0: key 0).
//!
//! ## Costs and outcome (measured in `docs/ELECTIONS-LARGE.md`)
//! A Chord lookup takes at most m hops and ½·log2 N on average for a random key; here the key
//! is the start of the node's own block, which lies just *behind* it on the ring, so the lookup
//! goes almost all the way round and takes ≈ log2 N hops (measured 13 at N = 100,000). Each node
//! costs ≈ log2 N LOOKUP + 1 FOUND + 1 JOIN messages, 15 per node at N = 100,000; `rounds` (the
//! longest lookup, in message delays) is O(log N). The number of super-peers is the number of distinct nodes responsible
//! for the 2^k reserved keys: 2^k unless two reserved keys fall in the same gap between nodes
//! (rare when N ≫ 2^k). The load of a super-peer is the number of nodes in its block: binomial
//! with mean N / 2^k, so the largest block exceeds the mean by a few standard deviations.
//! `distance` in `ServedBy` is the identifier-space distance between a node and its
//! super-peer, in thousandths of a block (2^(m−k)).
//!
//! ## Assumptions
//! A working DHT (routing tables correct, no churn), reliable channels, no failures during the
//! lookups.
//!
//! ## Known flaws
//! The fraction is only approximate (between the target fraction and twice it, since 2^k is a
//! power of two) and super-peers are spread evenly in *identifier* space, which says nothing of
//! network latency: the first requirement the textbook states for super-peer selection (low-latency access) is not met by construction —
//! the geometric variant addresses it. A crashed super-peer's block is orphaned until the DHT
//! repairs itself and its nodes look up again (not modelled).

use ringleader_core::{Context, Event, Message, NodeId, Outbox, Process};
use serde::{Deserialize, Serialize};

use crate::{Algorithm, Family, LeaderRule, ParamError, Setup, TopologyKind};

/// SplitMix64's finalizer: a fixed, well-mixed hash of a 64-bit value (how these algorithms turn
/// a uid and a salt into a pseudo-random identifier or position, as Chord hashes an address).
pub fn mix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// DHT super-peer messages.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// LOOKUP(key, origin): find the node responsible for `key` for `origin`.
    Lookup {
        /// The key looked up.
        key: u64,
        /// Who asks.
        origin: NodeId,
        /// Hops so far.
        hops: u32,
    },
    /// FOUND: the node responsible for the origin's key (its super-peer).
    Found {
        /// The super-peer's position.
        super_peer: NodeId,
        /// Its identifier.
        id: u64,
        /// Lookup hops, this answer included.
        hops: u32,
    },
    /// JOIN: the sender becomes a client of the receiving super-peer.
    Join,
}

impl Message for Msg {
    const KINDS: &'static [&'static str] = &["lookup", "found", "join"];
    fn kind_index(&self) -> usize {
        match self {
            Msg::Lookup { .. } => 0,
            Msg::Found { .. } => 1,
            Msg::Join => 2,
        }
    }
}

/// No timers: lookups are driven by messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
pub enum Timer {}

/// The shared configuration: the identifier space and the ring.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Config {
    bits: u32,
    k: u32,
    /// (identifier, position), sorted by identifier.
    ring: Vec<(u64, NodeId)>,
    /// Identifier of every position.
    ids: Vec<u64>,
}

impl Config {
    fn space(&self) -> u64 {
        if self.bits == 64 { u64::MAX } else { (1u64 << self.bits) - 1 }
    }

    /// The node responsible for `key`: the first identifier ≥ key, round the ring.
    fn successor(&self, key: u64) -> (u64, NodeId) {
        let i = self.ring.partition_point(|&(id, _)| id < key);
        self.ring[if i == self.ring.len() { 0 } else { i }]
    }
}

/// One DHT node.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct SuperPeerDht {
    id: u64,
    predecessor: u64,
    /// Distinct fingers (identifier, position) in increasing distance; the first is the successor.
    fingers: Vec<(u64, NodeId)>,
    bits: u32,
    k: u32,
    target: u32,
    super_peer: Option<NodeId>,
    is_super_peer: bool,
    clients: u32,
}

type Out = Outbox<Msg, Timer>;

impl SuperPeerDht {
    /// True when this node is a super-peer.
    pub fn is_super_peer(&self) -> bool {
        self.is_super_peer
    }

    /// How many JOINs this super-peer received.
    pub fn clients(&self) -> u32 {
        self.clients
    }

    fn space(&self) -> u64 {
        (1u64 << self.bits) - 1
    }

    /// `x` in the ring interval (a, b] (the whole ring when a = b).
    fn between(&self, x: u64, a: u64, b: u64) -> bool {
        let m = self.space();
        let d = |from: u64, to: u64| to.wrapping_sub(from) & m;
        a == b || (d(a, x) != 0 && d(a, x) <= d(a, b))
    }

    fn block(&self) -> u64 {
        1u64 << (self.bits - self.k)
    }

    fn block_key(&self, id: u64) -> u64 {
        id & !(self.block() - 1) & self.space()
    }

    fn distance(&self, other: u64) -> u64 {
        let d = self.id.abs_diff(other);
        let d = d.min(self.space() - d + 1);
        (d as u128 * 1000 / self.block() as u128) as u64
    }

    fn route(&self, key: u64, origin: NodeId, hops: u32, cx: &Context, out: &mut Out) {
        let (succ_id, succ) = self.fingers[0];
        if self.between(key, self.id, succ_id) {
            if origin == cx.me {
                self.on_found(succ, succ_id, hops, out);
            } else {
                out.send(origin, Msg::Found { super_peer: succ, id: succ_id, hops: hops + 1 });
            }
            return;
        }
        let next = self
            .fingers
            .iter()
            .rev()
            .find(|&&(id, _)| id != key && self.between(id, self.id, key))
            .map_or(succ, |&(_, node)| node);
        out.send(next, Msg::Lookup { key, origin, hops: hops + 1 });
    }

    fn on_found(&self, super_peer: NodeId, id: u64, hops: u32, out: &mut Out) {
        out.send(super_peer, Msg::Join);
        out.emit(Event::ServedBy {
            super_peer,
            distance: self.distance(id),
            round: hops as u64,
            target: self.target,
        });
    }
}

impl Process for SuperPeerDht {
    type Msg = Msg;
    type Timer = Timer;

    fn on_start(&mut self, cx: &Context, out: &mut Out) {
        let first_reserved = (self.block_key(self.predecessor).wrapping_add(self.block())) & self.space();
        if self.fingers.is_empty() || self.between(first_reserved, self.predecessor, self.id) {
            self.is_super_peer = true;
            self.super_peer = Some(cx.me);
            out.emit(Event::SuperPeer);
            out.emit(Event::ServedBy { super_peer: cx.me, distance: 0, round: 0, target: self.target });
        } else {
            self.route(self.block_key(self.id), cx.me, 0, cx, out);
        }
    }

    fn on_message(&mut self, cx: &Context, _from: NodeId, msg: Msg, out: &mut Out) {
        match msg {
            Msg::Lookup { key, origin, hops } => self.route(key, origin, hops, cx, out),
            Msg::Found { super_peer, id, hops } => {
                self.super_peer = Some(super_peer);
                self.on_found(super_peer, id, hops, out);
            }
            Msg::Join => self.clients += 1,
        }
    }

    fn on_timer(&mut self, _cx: &Context, timer: Timer, _out: &mut Out) {
        match timer {}
    }

    /// The DHT state (identifier, fingers) is stable; the role is recomputed as at start.
    fn on_recover(&mut self, cx: &Context, out: &mut Out) {
        self.is_super_peer = false;
        self.super_peer = None;
        self.clients = 0;
        self.on_start(cx, out);
    }
}

impl Algorithm for SuperPeerDht {
    const NAME: &'static str = "superpeer-dht";
    const FAMILY: Family = Family::Election;
    const SUMMARY: &'static str =
        "elects a set of super-peers: the nodes responsible for the keys with k leading bits reserved (DHT)";
    const TOPOLOGY: TopologyKind = TopologyKind::Complete;
    const LEADER_RULE: LeaderRule = LeaderRule::Set;
    /// The election's cost is per joining node: one operation is one node that is not a
    /// super-peer.
    const OPERATION: crate::OperationUnit =
        crate::OperationUnit { name: "normal node", count: crate::OperationCount::NormalNodes };
    type Config = Config;

    fn configure(setup: &Setup) -> Result<Config, ParamError> {
        let fraction: f64 = setup.params.get("fraction", 0.01)?;
        if !(fraction > 0.0 && fraction <= 1.0) {
            return Err(ParamError::OutOfRange {
                key: "fraction".into(),
                reason: format!("{fraction} is not in (0, 1]"),
            });
        }
        let bits: u32 = setup.params.get("bits", 32)?;
        if !(8..=63).contains(&bits) {
            return Err(ParamError::OutOfRange {
                key: "bits".into(),
                reason: format!("{bits} is not in 8..=63"),
            });
        }
        let salt: u64 = setup.params.get("salt", 0)?;
        // Another seed, another DHT: the identifiers are the run's random layout.
        let key = salt.wrapping_add(setup.seed.wrapping_sub(1));
        let n = setup.uids.len();
        if (n as u64) > 1u64 << (bits - 1) {
            return Err(ParamError::OutOfRange {
                key: "bits".into(),
                reason: format!("{bits} bits cannot give {n} nodes distinct identifiers"),
            });
        }
        let wanted = (n as f64 * fraction).ceil().max(1.0);
        let k = (wanted.log2().ceil() as u32).min(bits - 1);
        let space = (1u64 << bits) - 1;
        let mut ring: Vec<(u64, NodeId)> = setup
            .uids
            .iter()
            .enumerate()
            .map(|(i, &u)| (mix64(u ^ mix64(key)) >> (64 - bits), i as NodeId))
            .collect();
        ring.sort_unstable();
        for i in 1..ring.len() {
            if ring[i].0 <= ring[i - 1].0 {
                ring[i].0 = (ring[i - 1].0 + 1) & space;
            }
        }
        ring.sort_unstable();
        let mut ids = vec![0; n];
        for &(id, node) in &ring {
            ids[node as usize] = id;
        }
        Ok(Config { bits, k, ring, ids })
    }

    fn new(me: NodeId, config: &Config, _setup: &Setup) -> Self {
        let id = config.ids[me as usize];
        let space = config.space();
        let mut fingers: Vec<(u64, NodeId)> = Vec::new();
        for i in 0..config.bits {
            let f = config.successor(id.wrapping_add(1u64 << i) & space);
            if f.1 != me && fingers.last() != Some(&f) {
                fingers.push(f);
            }
        }
        let i = config.ring.partition_point(|&(x, _)| x < id);
        let predecessor = config.ring[if i == 0 { config.ring.len() - 1 } else { i - 1 }].0;
        SuperPeerDht {
            id,
            predecessor,
            fingers,
            bits: config.bits,
            k: config.k,
            target: 1 << config.k,
            super_peer: None,
            is_super_peer: false,
            clients: 0,
        }
    }

    /// `min_spacing`: the smallest gap on the id ring between two live super-peers, in units of
    /// the ideal gap 2^(m − k) (one block); absent with fewer than two super-peers.
    fn final_outcome(states: &[Self], live: &[bool]) -> Vec<(&'static str, f64)> {
        let sps: Vec<&Self> =
            states.iter().zip(live).filter(|(s, up)| **up && s.is_super_peer).map(|x| x.0).collect();
        let Some(first) = sps.first() else { return Vec::new() };
        if sps.len() < 2 {
            return Vec::new();
        }
        let mut ids: Vec<u64> = sps.iter().map(|s| s.id).collect();
        ids.sort_unstable();
        let ring = first.space() as u128 + 1;
        let gaps = ids.windows(2).map(|w| (w[1] - w[0]) as u128);
        let wrap = ring - (ids[ids.len() - 1] - ids[0]) as u128;
        let min = gaps.chain(std::iter::once(wrap)).min().unwrap_or(0);
        vec![("min_spacing", min as f64 / first.block() as f64)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Params;
    use ringleader_core::Topology;

    fn ids(seed: u64, salt: Option<u64>) -> Vec<u64> {
        let uids: Vec<u64> = (1..=16).collect();
        let topology = Topology::Complete { n: 16 };
        let params = Params::new(salt.map(|s| ("salt".to_string(), s.to_string())).into_iter().collect());
        let setup = Setup { uids: &uids, topology: &topology, params: &params, max_delay: 1, seed };
        SuperPeerDht::configure(&setup).unwrap().ids
    }

    use crate::testing::TestSystem;
    use ringleader_core::harness::Harness;

    /// Sixteen nodes, an 8-bit identifier space, a quarter of them aimed for as super-peers:
    /// k = 2, blocks of 64 identifiers, reserved keys 0, 64, 128, 192.
    fn world() -> TestSystem {
        TestSystem::new(16).param("bits", "8").param("fraction", "0.25")
    }

    fn node(me: NodeId) -> Harness<SuperPeerDht> {
        world().node(me)
    }

    /// The positions responsible for the four reserved keys.
    fn super_peers() -> Vec<NodeId> {
        let c = world().config::<SuperPeerDht>();
        let mut sps: Vec<NodeId> = (0..4).map(|r| c.successor(r * 64).1).collect();
        sps.dedup();
        sps
    }

    /// Rule 1: the predecessor is the previous identifier on the ring and finger i is the node
    /// responsible for id + 2^i (distinct fingers, the successor first).
    #[test]
    fn rule_1_the_overlay_is_chord_predecessor_and_fingers() {
        let c = world().config::<SuperPeerDht>();
        for (i, &(id, me)) in c.ring.iter().enumerate() {
            let p = node(me).process;
            assert_eq!(p.id, id);
            assert_eq!(p.predecessor, c.ring[(i + 15) % 16].0);
            assert_eq!(p.fingers[0], c.ring[(i + 1) % 16], "finger 0 is the successor");
            for b in 0..8 {
                let f = c.successor((id + (1 << b)) & 255);
                assert!(f.1 == me || p.fingers.contains(&f), "finger {b} of {me}");
            }
        }
    }

    /// Rule 2: k = ⌈log2(N · fraction)⌉.
    #[test]
    fn rule_2_k_is_the_ceiling_log_of_the_wanted_count() {
        assert_eq!((node(0).process.k, node(0).process.target), (2, 4));
        let five = TestSystem::new(16).param("bits", "8").param("fraction", "0.3").node::<SuperPeerDht>(0);
        assert_eq!((five.process.k, five.process.target), (3, 8), "4.8 super-peers wanted: 2^3");
    }

    /// Rule 3: a node responsible for a reserved key is a super-peer from the start and serves
    /// itself, without a message.
    #[test]
    fn rule_3_the_node_responsible_for_a_reserved_key_is_a_super_peer() {
        let sps = super_peers();
        assert!(!sps.is_empty());
        for me in 0..16 {
            let mut p = node(me);
            let step = p.start();
            if sps.contains(&me) {
                assert_eq!(
                    step.emitted(),
                    vec![
                        Event::SuperPeer,
                        Event::ServedBy { super_peer: me, distance: 0, round: 0, target: 4 }
                    ]
                );
                assert!(step.sent().is_empty());
                assert!(p.process.is_super_peer());
            } else {
                assert!(!step.emitted().contains(&Event::SuperPeer), "{me}: {step:?}");
                assert_eq!(step.sent().len(), 1, "{me}: one LOOKUP or one JOIN");
            }
        }
    }

    /// Rule 4: a LOOKUP reaching the predecessor of the responsible node is answered with FOUND
    /// to its origin, which JOINs its super-peer and reports being served; elsewhere it hops to
    /// a finger that precedes the key.
    #[test]
    fn rule_4_lookup_hops_found_answers_and_the_origin_joins() {
        let c = world().config::<SuperPeerDht>();
        let sps = super_peers();
        // A client whose super-peer's ring predecessor is another node.
        let (origin, key, sp_id, sp, i, before) = (0..16)
            .filter(|p| !sps.contains(p))
            .map(|origin| {
                let key = c.ids[origin as usize] & !63;
                let (sp_id, sp) = c.successor(key);
                let i = c.ring.iter().position(|&(_, n)| n == sp).unwrap();
                (origin, key, sp_id, sp, i, c.ring[(i + 15) % 16].1)
            })
            .find(|&(origin, .., before)| before != origin)
            .unwrap();
        let mut p = node(before);
        let step = p.deliver(origin, Msg::Lookup { key, origin, hops: 3 });
        assert_eq!(step.sent(), vec![(origin, Msg::Found { super_peer: sp, id: sp_id, hops: 4 })]);

        let mut o = node(origin);
        let step = o.deliver(before, Msg::Found { super_peer: sp, id: sp_id, hops: 4 });
        assert_eq!(step.sent(), vec![(sp, Msg::Join)]);
        let id = c.ids[origin as usize];
        let d = id.abs_diff(sp_id).min(256 - id.abs_diff(sp_id));
        assert_eq!(
            step.emitted(),
            vec![Event::ServedBy { super_peer: sp, distance: d * 1000 / 64, round: 4, target: 4 }]
        );
        let mut s = node(sp);
        assert!(s.deliver(origin, Msg::Join).is_empty());
        assert_eq!(s.process.clients(), 1);

        // Far from the key, the lookup hops to a finger between this node and the key.
        let far = c.ring[(i + 8) % 16].1;
        let step = node(far).deliver(origin, Msg::Lookup { key, origin, hops: 0 });
        let [(to, Msg::Lookup { key: k, origin: o2, hops: 1 })] = step.sent()[..] else { panic!("{step:?}") };
        assert_eq!((k, o2), (key, origin));
        let (far_id, to_id) = (c.ids[far as usize], c.ids[to as usize]);
        assert!(
            to_id.wrapping_sub(far_id) & 255 < key.wrapping_sub(far_id) & 255,
            "the finger precedes the key"
        );
    }

    #[test]
    fn the_seed_draws_another_dht() {
        assert_eq!(ids(1, None), ids(1, None));
        assert_ne!(ids(1, None), ids(2, None), "--seed must change the identifiers");
        // Seed 1 with salt 0 is the key 0; the salt still chooses another hash.
        assert_ne!(ids(1, None), ids(1, Some(5)));
    }
}
