//! The communication graph an algorithm is written for, and the graph each kind gets by default.
//!
//! An algorithm declares a [`TopologyKind`]; every driver (the simulator, the model checker, a
//! real node) builds that kind's default graph with [`TopologyKind::default_topology`] unless
//! the run chooses another shape the kind accepts (the simulator's `--graph`). Rings and
//! complete graphs are fixed by the node count; a tree is the balanced binary tree rooted at
//! position 0 ([`binary_tree_edges`]); a general graph is a seeded random connected graph with
//! 2N edges by default ([`random_connected`], [`default_edges`]).

use std::collections::HashSet;

use rand::RngExt;
use rand::seq::SliceRandom;
use rand_xoshiro::Xoshiro256PlusPlus;
use ringleader_core::{NodeId, Topology};

/// The shape of communication graph an algorithm is written for; the driver builds it (for
/// `Graph` and `Tree`, in the shape the run chooses among those the kind accepts).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TopologyKind {
    /// Everyone talks to everyone.
    Complete,
    /// Unidirectional ring.
    Ring,
    /// Bidirectional ring.
    BiRing,
    /// Any connected graph; the run chooses it (`--graph`: a random connected graph by
    /// default, or a grid, a tree, a line, a star, a random tree, an edge-list file).
    Graph,
    /// Any tree, stored as a graph; a balanced binary tree rooted at position 0 unless the run
    /// chooses another acyclic shape (`--graph line`, `star`, `random-tree`, `file:PATH`).
    Tree,
}

/// A graph that cannot be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TopologyError {
    /// A connected graph on `n` nodes has between `min` and `max` edges; `edges` is outside.
    #[error("--edges {edges}: a connected graph on {n} nodes has between {min} and {max} edges")]
    Edges {
        /// The edge count asked for.
        edges: u64,
        /// The node count.
        n: u32,
        /// A spanning tree's edge count, n − 1.
        min: u64,
        /// The complete graph's edge count, n(n − 1)/2.
        max: u64,
    },
}

impl TopologyKind {
    /// The graph of this kind on `n` nodes, in the kind's default shape; `edges` sets the edge
    /// count of a random graph (default [`default_edges`]) and is ignored by the other kinds.
    /// `rng` draws the random graph only.
    pub fn default_topology(
        self,
        n: u32,
        edges: Option<u64>,
        rng: &mut Xoshiro256PlusPlus,
    ) -> Result<Topology, TopologyError> {
        Ok(match self {
            TopologyKind::Complete => Topology::Complete { n },
            TopologyKind::Ring => Topology::Ring { n },
            TopologyKind::BiRing => Topology::BiRing { n },
            TopologyKind::Tree => Topology::from_edges(n, &binary_tree_edges(n)),
            TopologyKind::Graph => random_connected(n, edges.unwrap_or(default_edges(n)), rng)?,
        })
    }
}

/// The default edge count of a random connected graph on `n` nodes: 2n, or the complete graph's
/// n(n − 1)/2 when that is smaller (n ≤ 4).
pub fn default_edges(n: u32) -> u64 {
    (2 * n as u64).min(n as u64 * (n as u64).saturating_sub(1) / 2)
}

/// The balanced binary tree rooted at position 0: position i's parent is (i − 1) / 2.
pub fn binary_tree_edges(n: u32) -> Vec<(NodeId, NodeId)> {
    (1..n).map(|i| ((i - 1) / 2, i)).collect()
}

/// A uniformly seeded random connected graph with exactly `m` edges: a random spanning tree
/// (each node, in a random order, attaches to a random earlier one) plus random extra edges.
pub fn random_connected(n: u32, m: u64, rng: &mut Xoshiro256PlusPlus) -> Result<Topology, TopologyError> {
    let max = n as u64 * (n as u64).saturating_sub(1) / 2;
    let min = (n as u64).saturating_sub(1);
    if m < min || m > max {
        return Err(TopologyError::Edges { edges: m, n, min, max });
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
    use rand::SeedableRng;

    use super::*;

    #[test]
    fn random_graphs_have_the_asked_edge_count_or_say_what_is_allowed() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        for (n, m) in [(2, 1), (10, 9), (10, 45), (100, 400)] {
            assert_eq!(random_connected(n, m, &mut rng).unwrap().edge_count(), m);
        }
        assert_eq!(
            random_connected(10, 8, &mut rng).unwrap_err().to_string(),
            "--edges 8: a connected graph on 10 nodes has between 9 and 45 edges"
        );
        assert!(random_connected(4, 7, &mut rng).is_err());
    }

    #[test]
    fn each_kind_has_its_default_graph() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        assert_eq!(TopologyKind::Ring.default_topology(5, None, &mut rng).unwrap(), Topology::Ring { n: 5 });
        assert_eq!(
            TopologyKind::Complete.default_topology(5, Some(3), &mut rng).unwrap(),
            Topology::Complete { n: 5 }
        );
        let tree = TopologyKind::Tree.default_topology(7, None, &mut rng).unwrap();
        assert_eq!((tree.edge_count(), tree.degree(0), tree.degree(1)), (6, 2, 3));
        for n in 1..=6 {
            let g = TopologyKind::Graph.default_topology(n, None, &mut rng).unwrap();
            assert_eq!(g.edge_count(), default_edges(n));
        }
        assert_eq!([1, 2, 3, 4, 5, 10].map(default_edges), [0, 1, 3, 6, 10, 20]);
    }
}
