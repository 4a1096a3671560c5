//! What a node may know of who it can talk to.

use crate::NodeId;

/// The communication graph. Rings and complete graphs are computed, not stored, so a
/// million-node ring costs no memory here; arbitrary graphs are kept as compressed adjacency
/// lists (undirected: every edge appears in both lists).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Topology {
    /// Every node can send to every other node.
    Complete {
        /// Number of nodes.
        n: u32,
    },
    /// Unidirectional ring: position `i` sends to `(i + 1) mod n` only.
    Ring {
        /// Number of nodes.
        n: u32,
    },
    /// Bidirectional ring: position `i` talks to `i ± 1 mod n`.
    BiRing {
        /// Number of nodes.
        n: u32,
    },
    /// An arbitrary undirected graph in compressed sparse row form.
    Graph {
        /// `offsets[i]..offsets[i + 1]` indexes `targets` for node `i`; `offsets.len() == n + 1`.
        offsets: Vec<u32>,
        /// Concatenated, sorted neighbour lists.
        targets: Vec<NodeId>,
    },
}

impl Topology {
    /// Builds a graph topology from an undirected edge list; duplicate edges and self-loops are
    /// dropped, neighbour lists are sorted.
    pub fn from_edges(n: u32, edges: &[(NodeId, NodeId)]) -> Topology {
        let mut lists: Vec<Vec<NodeId>> = vec![Vec::new(); n as usize];
        for &(a, b) in edges {
            if a != b {
                lists[a as usize].push(b);
                lists[b as usize].push(a);
            }
        }
        let mut offsets = Vec::with_capacity(n as usize + 1);
        let mut targets = Vec::new();
        offsets.push(0);
        for mut list in lists {
            list.sort_unstable();
            list.dedup();
            targets.extend_from_slice(&list);
            offsets.push(targets.len() as u32);
        }
        Topology::Graph { offsets, targets }
    }

    /// Number of nodes.
    pub fn len(&self) -> u32 {
        match self {
            Topology::Complete { n } | Topology::Ring { n } | Topology::BiRing { n } => *n,
            Topology::Graph { offsets, .. } => offsets.len() as u32 - 1,
        }
    }

    /// True when the topology has no nodes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of undirected edges (a unidirectional ring counts its `n` links).
    pub fn edge_count(&self) -> u64 {
        match self {
            Topology::Complete { n } => *n as u64 * (*n as u64).saturating_sub(1) / 2,
            Topology::Ring { n } | Topology::BiRing { n } => *n as u64,
            Topology::Graph { targets, .. } => targets.len() as u64 / 2,
        }
    }

    /// The ring successor `(i + 1) mod n` (defined for every topology, by position).
    pub fn successor(&self, node: NodeId) -> NodeId {
        let n = self.len();
        if node + 1 == n { 0 } else { node + 1 }
    }

    /// The ring predecessor `(i − 1) mod n` (defined for every topology, by position).
    pub fn predecessor(&self, node: NodeId) -> NodeId {
        if node == 0 { self.len() - 1 } else { node - 1 }
    }

    /// The nodes `node` can send to directly, in increasing position order (for a
    /// unidirectional ring, just the successor).
    pub fn neighbors(&self, node: NodeId) -> Neighbors<'_> {
        match self {
            Topology::Complete { n } => Neighbors::AllBut { next: 0, n: *n, skip: node },
            Topology::Ring { n } => {
                Neighbors::Few { list: [self.successor(node), 0], len: u8::from(*n > 1), at: 0 }
            }
            Topology::BiRing { n } => {
                let (p, s) = (self.predecessor(node), self.successor(node));
                let (a, b) = if p < s { (p, s) } else { (s, p) };
                let len = match n {
                    0 | 1 => 0,
                    2 => 1,
                    _ => 2,
                };
                Neighbors::Few { list: [a, b], len, at: 0 }
            }
            Topology::Graph { offsets, targets } => {
                let (s, e) = (offsets[node as usize] as usize, offsets[node as usize + 1] as usize);
                Neighbors::Slice(targets[s..e].iter())
            }
        }
    }

    /// The number of direct neighbours of `node`.
    pub fn degree(&self, node: NodeId) -> usize {
        match self {
            Topology::Graph { offsets, .. } => (offsets[node as usize + 1] - offsets[node as usize]) as usize,
            _ => self.neighbors(node).count(),
        }
    }

    /// True when `a` can send to `b` directly.
    pub fn is_link(&self, a: NodeId, b: NodeId) -> bool {
        match self {
            Topology::Complete { n } => a != b && a < *n && b < *n,
            Topology::Ring { .. } => self.successor(a) == b && a != b,
            Topology::BiRing { .. } => a != b && (self.successor(a) == b || self.predecessor(a) == b),
            Topology::Graph { offsets, targets } => {
                let (s, e) = (offsets[a as usize] as usize, offsets[a as usize + 1] as usize);
                targets[s..e].binary_search(&b).is_ok()
            }
        }
    }

    /// A short human name: `complete`, `ring`, `biring`, `graph`.
    pub fn name(&self) -> &'static str {
        match self {
            Topology::Complete { .. } => "complete",
            Topology::Ring { .. } => "ring",
            Topology::BiRing { .. } => "biring",
            Topology::Graph { .. } => "graph",
        }
    }
}

/// Iterator over a node's neighbours, without allocating.
#[derive(Clone, Debug)]
pub enum Neighbors<'a> {
    /// Every node in `0..n` except `skip`.
    AllBut {
        /// Next candidate.
        next: u32,
        /// Number of nodes.
        n: u32,
        /// The node itself.
        skip: u32,
    },
    /// Up to two computed neighbours.
    Few {
        /// The neighbours.
        list: [NodeId; 2],
        /// How many of `list` are valid.
        len: u8,
        /// Next index.
        at: u8,
    },
    /// A stored adjacency list.
    Slice(std::slice::Iter<'a, NodeId>),
}

impl Iterator for Neighbors<'_> {
    type Item = NodeId;
    fn next(&mut self) -> Option<NodeId> {
        match self {
            Neighbors::AllBut { next, n, skip } => {
                if *next == *skip {
                    *next += 1;
                }
                if *next < *n {
                    *next += 1;
                    Some(*next - 1)
                } else {
                    None
                }
            }
            Neighbors::Few { list, len, at } => {
                if *at < *len {
                    *at += 1;
                    Some(list[*at as usize - 1])
                } else {
                    None
                }
            }
            Neighbors::Slice(it) => it.next().copied(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn complete_graph_lists_everyone_but_self() {
        let t = Topology::Complete { n: 4 };
        assert_eq!(t.neighbors(2).collect::<Vec<_>>(), vec![0, 1, 3]);
        assert_eq!(t.edge_count(), 6);
        assert!(t.is_link(0, 3) && !t.is_link(1, 1));
    }

    #[test]
    fn rings_wrap_around() {
        let r = Topology::Ring { n: 5 };
        assert_eq!(r.neighbors(4).collect::<Vec<_>>(), vec![0]);
        assert!(r.is_link(4, 0) && !r.is_link(0, 4));
        let b = Topology::BiRing { n: 5 };
        assert_eq!(b.neighbors(0).collect::<Vec<_>>(), vec![1, 4]);
        assert_eq!(Topology::BiRing { n: 2 }.neighbors(0).collect::<Vec<_>>(), vec![1]);
    }

    #[test]
    fn graph_from_edges_is_symmetric_and_deduplicated() {
        let g = Topology::from_edges(4, &[(0, 1), (1, 0), (1, 2), (3, 3), (2, 3)]);
        assert_eq!(g.neighbors(1).collect::<Vec<_>>(), vec![0, 2]);
        assert_eq!(g.edge_count(), 3);
        assert_eq!(g.degree(3), 1);
        assert!(g.is_link(2, 3) && !g.is_link(0, 3));
    }
}
