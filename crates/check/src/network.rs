//! The network of the model: the messages in flight and what the network may do with them.
//!
//! Messages in flight are one sorted vector, so that two interleavings that leave the same
//! messages in flight reach the *same* state (stateright deduplicates states by hash):
//!
//! - **ordered** — FIFO per link: sorted by link `(from, to)`, and in send order within a link;
//!   only the oldest message of each link may be delivered. Nothing is lost or duplicated.
//! - **unordered** — a multiset: any message in flight may be delivered next, exactly once.
//! - **lossy** — unordered, and any message in flight may also be dropped.
//! - **duplicating** — a set: a delivered message stays in flight and may be delivered again,
//!   any number of times (stateright's `unordered_duplicating` network). A state with messages
//!   in flight is never quiescent, so end-of-run properties are never judged on it.
//!
//! Under every kind, a message addressed to a crashed node may be dropped (it arrived while the
//! node was down) or may wait and be delivered after the node recovers (it was slow).

use std::hash::{DefaultHasher, Hash, Hasher};
use std::str::FromStr;

use ringleader_core::NodeId;

/// What the network may do with a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum NetworkKind {
    /// FIFO per link, reliable.
    Ordered,
    /// Any order, reliable, no duplicates.
    #[default]
    Unordered,
    /// Any order; any message may be lost.
    Lossy,
    /// Any order; any message may be delivered any number of times.
    Duplicating,
}

impl NetworkKind {
    /// Every kind, by its `--network` name.
    pub const ALL: [NetworkKind; 4] =
        [NetworkKind::Ordered, NetworkKind::Unordered, NetworkKind::Lossy, NetworkKind::Duplicating];

    /// The `--network` name.
    pub fn name(self) -> &'static str {
        match self {
            NetworkKind::Ordered => "ordered",
            NetworkKind::Unordered => "unordered",
            NetworkKind::Lossy => "lossy",
            NetworkKind::Duplicating => "duplicating",
        }
    }
}

impl FromStr for NetworkKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        NetworkKind::ALL
            .into_iter()
            .find(|k| k.name() == s.trim())
            .ok_or_else(|| format!("network {s:?}: expected ordered, unordered, lossy or duplicating"))
    }
}

/// A message in flight from `from` to `to`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Packet<M> {
    /// Sender position.
    pub from: NodeId,
    /// Receiver position.
    pub to: NodeId,
    /// A fixed hash of `msg`: the sort key that makes the multiset canonical.
    key: u64,
    /// The message.
    pub msg: M,
}

impl<M: Hash> Packet<M> {
    /// A message from `from` to `to`.
    pub fn new(from: NodeId, to: NodeId, msg: M) -> Self {
        let mut h = DefaultHasher::new();
        msg.hash(&mut h);
        Packet { from, to, key: h.finish(), msg }
    }
}

/// The messages in flight.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct InFlight<M> {
    packets: Vec<Packet<M>>,
}

impl<M> Default for InFlight<M> {
    fn default() -> Self {
        InFlight { packets: Vec::new() }
    }
}

impl<M: Clone + Eq + Hash> InFlight<M> {
    /// Puts `e` in flight.
    pub fn send(&mut self, kind: NetworkKind, e: Packet<M>) {
        let at = match kind {
            NetworkKind::Ordered => self.packets.partition_point(|x| (x.from, x.to) <= (e.from, e.to)),
            _ => {
                let at = self.packets.partition_point(|x| (x.from, x.to, x.key) <= (e.from, e.to, e.key));
                if kind == NetworkKind::Duplicating
                    && self.packets[..at].iter().rev().take_while(|x| x.key == e.key).any(|x| *x == e)
                {
                    return;
                }
                at
            }
        };
        self.packets.insert(at, e);
    }

    /// The messages that may be delivered next (each distinct message once): under `ordered`
    /// the oldest of each link, otherwise every message.
    pub fn deliverable(&self, kind: NetworkKind) -> impl Iterator<Item = &Packet<M>> {
        self.packets.iter().enumerate().filter_map(move |(i, e)| {
            let first = i == 0 || {
                let p = &self.packets[i - 1];
                match kind {
                    NetworkKind::Ordered => (p.from, p.to) != (e.from, e.to),
                    _ => p != e,
                }
            };
            first.then_some(e)
        })
    }

    /// Takes `e` out of flight for delivery (under `duplicating` it stays); false when `e` may
    /// not be delivered now.
    pub fn deliver(&mut self, kind: NetworkKind, e: &Packet<M>) -> bool {
        let ok = self.deliverable(kind).any(|x| x == e);
        match ok {
            false => false,
            true if kind == NetworkKind::Duplicating => true,
            true => self.remove(e),
        }
    }

    /// Removes one copy of `e`; false when it is not in flight.
    pub fn remove(&mut self, e: &Packet<M>) -> bool {
        match self.packets.iter().position(|x| x == e) {
            Some(i) => {
                self.packets.remove(i);
                true
            }
            None => false,
        }
    }

    /// The messages `packets` in flight, put in the canonical order of `kind`: by link, and
    /// (unless links are FIFO) by message within a link. The sort is stable, so the packets of
    /// one link keep their order.
    pub fn from_packets(mut packets: Vec<Packet<M>>, kind: NetworkKind) -> Self {
        match kind {
            NetworkKind::Ordered => packets.sort_by_key(|x| (x.from, x.to)),
            _ => packets.sort_by_key(|x| (x.from, x.to, x.key)),
        }
        InFlight { packets }
    }

    /// Every message in flight, in the canonical order.
    pub fn iter(&self) -> impl Iterator<Item = &Packet<M>> {
        self.packets.iter()
    }

    /// True when nothing is in flight.
    pub fn is_empty(&self) -> bool {
        self.packets.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(from: NodeId, to: NodeId, m: u32) -> Packet<u32> {
        Packet::new(from, to, m)
    }

    #[test]
    fn ordered_links_deliver_their_oldest_message_only() {
        let mut f = InFlight::default();
        for m in [1, 2, 3] {
            f.send(NetworkKind::Ordered, e(0, 1, m));
        }
        f.send(NetworkKind::Ordered, e(2, 1, 9));
        let next: Vec<u32> = f.deliverable(NetworkKind::Ordered).map(|x| x.msg).collect();
        assert_eq!(next, vec![1, 9]);
        assert!(!f.deliver(NetworkKind::Ordered, &e(0, 1, 2)));
        assert!(f.deliver(NetworkKind::Ordered, &e(0, 1, 1)));
        let next: Vec<u32> = f.deliverable(NetworkKind::Ordered).map(|x| x.msg).collect();
        assert_eq!(next, vec![2, 9]);
    }

    #[test]
    fn unordered_flight_is_a_canonical_multiset() {
        let (mut a, mut b) = (InFlight::default(), InFlight::default());
        for m in [3, 1, 2, 1] {
            a.send(NetworkKind::Unordered, e(0, 1, m));
        }
        for m in [1, 2, 1, 3] {
            b.send(NetworkKind::Unordered, e(0, 1, m));
        }
        assert_eq!(a, b);
        assert_eq!(a.deliverable(NetworkKind::Unordered).count(), 3);
        assert!(a.deliver(NetworkKind::Unordered, &e(0, 1, 1)));
        assert_eq!(a.iter().count(), 3);
        assert_eq!(a.deliverable(NetworkKind::Unordered).count(), 3);
    }

    #[test]
    fn duplicating_flight_keeps_what_it_delivers() {
        let mut f = InFlight::default();
        f.send(NetworkKind::Duplicating, e(0, 1, 7));
        f.send(NetworkKind::Duplicating, e(0, 1, 7));
        assert_eq!(f.iter().count(), 1);
        assert!(f.deliver(NetworkKind::Duplicating, &e(0, 1, 7)));
        assert!(f.deliver(NetworkKind::Duplicating, &e(0, 1, 7)));
        assert!(f.remove(&e(0, 1, 7)));
        assert!(f.is_empty());
    }

    #[test]
    fn network_names_parse_back() {
        for k in NetworkKind::ALL {
            assert_eq!(k.name().parse::<NetworkKind>(), Ok(k));
        }
        assert!("fifo".parse::<NetworkKind>().unwrap_err().contains("ordered, unordered"));
    }
}
