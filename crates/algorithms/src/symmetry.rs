//! Symmetry: the renamings of positions under which an algorithm behaves the same.
//!
//! Two global states that differ only by a renaming of the nodes — node 1 holds what node 2
//! held, and every message and every record of a node is renamed with it — have the same
//! futures, renamed: when the algorithm's rules never look at *which* node they talk about,
//! only at what it holds. A model checker then needs to explore only one state of each such
//! class (Ip & Dill 1996; the "Symmetric Spin" of Bošnački, Dams and Holenderski 2000), and
//! the state space shrinks by up to the size of the group of renamings.
//!
//! Most algorithms here are **not** symmetric, and declare nothing: an election compares ids,
//! Ricart-Agrawala and Lamport break ties between equal timestamps by id, Maekawa's quorums are
//! rows and columns of a grid. Renaming the nodes there changes who wins a comparison, so two
//! renamed states have different futures. An algorithm declares a [`Symmetry`] only when its
//! rules commute with the group's renamings; `ringleader-check`'s tests verify that claim on
//! every reachable state of small systems (a renamed state's steps are the renamed steps, and
//! each leads to the renamed successor).

use ringleader_core::{NodeId, Process};

/// A group of renamings of the positions 0..n.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Group {
    /// The rotations `i ↦ (i + r) mod n`: the algorithm treats its peers in ring order starting
    /// from itself (Suzuki-Kasami's scan of the request numbers at exit).
    Rotations,
}

impl Group {
    /// Every renaming of the group on `n` positions, identity first: `map[i]` is the position
    /// that position `i` becomes.
    pub fn renamings(self, n: u32) -> Vec<Vec<NodeId>> {
        match self {
            Group::Rotations => (0..n).map(|r| (0..n).map(|i| (i + r) % n).collect()).collect(),
        }
    }

    /// The group's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Group::Rotations => "rotations",
        }
    }
}

/// How to rename one algorithm's state, messages and timers: each function takes the renaming
/// `map` (`map[i]` is the position that position `i` becomes) and returns the renamed value.
pub struct Symmetry<P: Process> {
    /// The renamings under which the algorithm behaves the same.
    pub group: Group,
    /// A node's state, renamed (the node itself included: its own position becomes `map[me]`).
    pub state: fn(&P, &[NodeId]) -> P,
    /// A message, renamed.
    pub msg: fn(&P::Msg, &[NodeId]) -> P::Msg,
    /// A timer, renamed.
    pub timer: fn(&P::Timer, &[NodeId]) -> P::Timer,
}

/// `values` indexed by position, renamed: the value of position `i` moves to `map[i]`.
pub fn permute_indexed<T: Clone>(values: &[T], map: &[NodeId]) -> Vec<T> {
    let mut out = values.to_vec();
    for (i, v) in values.iter().enumerate() {
        out[map[i] as usize] = v.clone();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotations_of_four_start_with_the_identity_and_are_distinct() {
        let r = Group::Rotations.renamings(4);
        assert_eq!(r.len(), 4);
        assert_eq!(r[0], vec![0, 1, 2, 3]);
        assert_eq!(r[1], vec![1, 2, 3, 0]);
        assert_eq!(r.iter().collect::<std::collections::BTreeSet<_>>().len(), 4);
    }

    #[test]
    fn an_indexed_value_moves_with_its_position() {
        assert_eq!(permute_indexed(&['a', 'b', 'c'], &[1, 2, 0]), vec!['c', 'a', 'b']);
    }
}
