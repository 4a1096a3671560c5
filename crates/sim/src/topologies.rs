//! Building the communication graph and the id arrangement of a run.

use std::collections::HashSet;

use rand::RngExt;
use rand::seq::SliceRandom;
use rand_xoshiro::Xoshiro256PlusPlus;
use ringleader_algorithms::TopologyKind;
use ringleader_core::{NodeId, Topology, Uid};

use crate::scenario::IdArrangement;

/// Uids for `n` positions under `arrangement`.
pub fn uids(n: u32, arrangement: IdArrangement, rng: &mut Xoshiro256PlusPlus) -> Vec<Uid> {
    match arrangement {
        IdArrangement::Ascending => (1..=n as Uid).collect(),
        IdArrangement::Descending => (1..=n as Uid).rev().collect(),
        IdArrangement::Random => {
            let mut v: Vec<Uid> = (1..=n as Uid).collect();
            v.shuffle(rng);
            v
        }
    }
}

/// The topology of `kind` on `n` nodes; `edges` sets the edge count of a random graph
/// (default 2n, at least n − 1 so that it is connected, at most n(n − 1)/2).
pub fn build(
    kind: TopologyKind,
    n: u32,
    edges: Option<u64>,
    rng: &mut Xoshiro256PlusPlus,
) -> Result<Topology, String> {
    Ok(match kind {
        TopologyKind::Complete => Topology::Complete { n },
        TopologyKind::Ring => Topology::Ring { n },
        TopologyKind::BiRing => Topology::BiRing { n },
        TopologyKind::Tree => {
            let e: Vec<(NodeId, NodeId)> = (1..n).map(|i| (i, (i - 1) / 2)).collect();
            Topology::from_edges(n, &e)
        }
        TopologyKind::Graph => random_connected(n, edges.unwrap_or(2 * n as u64), rng)?,
    })
}

/// A uniformly seeded random connected graph with exactly `m` edges: a random spanning tree
/// (each node, in a random order, attaches to a random earlier one) plus random extra edges.
pub fn random_connected(n: u32, m: u64, rng: &mut Xoshiro256PlusPlus) -> Result<Topology, String> {
    let max = n as u64 * (n as u64).saturating_sub(1) / 2;
    let min = (n as u64).saturating_sub(1);
    if m < min || m > max {
        return Err(format!("--edges {m}: a connected graph on {n} nodes has between {min} and {max} edges"));
    }
    let mut order: Vec<NodeId> = (0..n).collect();
    order.shuffle(rng);
    let mut edges = Vec::with_capacity(m as usize);
    let mut seen: HashSet<(NodeId, NodeId)> = HashSet::with_capacity(m as usize);
    for i in 1..n as usize {
        let j = rng.random_range(0..i);
        let (a, b) = (order[i].min(order[j]), order[i].max(order[j]));
        seen.insert((a, b));
        edges.push((a, b));
    }
    while (edges.len() as u64) < m {
        let a = rng.random_range(0..n);
        let b = rng.random_range(0..n);
        if a == b {
            continue;
        }
        let key = (a.min(b), a.max(b));
        if seen.insert(key) {
            edges.push(key);
        }
    }
    Ok(Topology::from_edges(n, &edges))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn connected(t: &Topology) -> bool {
        let n = t.len() as usize;
        let mut seen = vec![false; n];
        let mut stack = vec![0];
        seen[0] = true;
        while let Some(x) = stack.pop() {
            for y in t.neighbors(x) {
                if !seen[y as usize] {
                    seen[y as usize] = true;
                    stack.push(y);
                }
            }
        }
        seen.into_iter().all(|s| s)
    }

    #[test]
    fn random_graphs_are_connected_with_the_asked_edge_count() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        for (n, m) in [(2, 1), (10, 9), (10, 45), (100, 400)] {
            let t = random_connected(n, m, &mut rng).unwrap();
            assert_eq!(t.edge_count(), m);
            assert!(connected(&t));
        }
        assert!(random_connected(10, 8, &mut rng).is_err());
        assert!(random_connected(4, 7, &mut rng).is_err());
    }

    #[test]
    fn arrangements_are_permutations() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        assert_eq!(uids(4, IdArrangement::Descending, &mut rng), vec![4, 3, 2, 1]);
        let mut r = uids(50, IdArrangement::Random, &mut rng);
        r.sort();
        assert_eq!(r, (1..=50).collect::<Vec<_>>());
    }
}
