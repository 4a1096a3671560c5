//! Symmetry reduction: one state of each class of renamed states.
//!
//! An algorithm that declares a [`Symmetry`] (its rules commute with a group of renamings of
//! the positions, see [`ringleader_algorithms::symmetry`]) is searched depth-first with
//! stateright's symmetry reduction: before a new state is recorded as seen, it is replaced by
//! its *representative* — of all its renamings under the group, the one whose hash is least —
//! so that two states that are renamings of each other are explored once. The path the search
//! follows keeps the state as it was reached, so counterexamples replay as they are.
//!
//! Renaming a global state renames everything that names a node: each process's state (by the
//! algorithm's own function), the messages in flight (sender, receiver, and the message), the
//! armed timers, and what the checkers know of each node (a believed leader's uid, the node that
//! broke fencing). The positions' uids are `1..=n` in the model, so uid `u` renames to
//! `map[u - 1] + 1`.
//!
//! Soundness rests on the declaration being true. `tests/it/search_orders.rs` checks it on every
//! reachable state of small systems: the steps of a renamed state are the renamed steps, each
//! leads to the renamed successor, and the search with and without the reduction gives the same
//! verdicts.

use std::hash::BuildHasher;

use ringleader_algorithms::PlainAlgorithm;
use ringleader_algorithms::symmetry::Symmetry;
use ringleader_core::{NodeId, Uid};

use crate::model::{ModelNode, State, Step, StepOf};
use crate::network::{InFlight, NetworkKind, Packet};

/// `s` renamed by `map` (`map[i]` is the position that position `i` becomes). `ordered` says
/// whether the network keeps FIFO links (which fixes how messages in flight are sorted).
pub fn rename<A: PlainAlgorithm>(s: &State<A>, map: &[NodeId], sym: &Symmetry<A>, ordered: bool) -> State<A> {
    let n = s.procs.len();
    let mut procs = s.procs.clone();
    let mut nodes = s.nodes.clone();
    for i in 0..n {
        let to = map[i] as usize;
        procs[to] = (sym.state)(&s.procs[i], map);
        let v = &s.nodes[i];
        nodes[to] = ModelNode {
            crashed: v.crashed,
            timers: v.timers.iter().map(|t| (sym.timer)(t, map)).collect(),
            requests_left: v.requests_left,
            belief: v.belief.map(|(uid, term)| (rename_uid(uid, map), term)),
            holding: v.holding,
            waiting: v.waiting,
        };
    }
    let packets = s.network.iter().map(|e| rename_packet(e, map, sym)).collect();
    State {
        procs,
        nodes,
        network: InFlight::from_packets(
            packets,
            if ordered { NetworkKind::Ordered } else { NetworkKind::Unordered },
        ),
        crashes: s.crashes,
        started: s.started,
        last_fencing: s.last_fencing,
        fencing_broken: s.fencing_broken.map(|(node, token, previous)| (map[node as usize], token, previous)),
    }
}

/// A step renamed by `map`.
pub fn rename_step<A: PlainAlgorithm>(step: &StepOf<A>, map: &[NodeId], sym: &Symmetry<A>) -> StepOf<A> {
    match step {
        Step::Request { node, request } => {
            Step::Request { node: map[*node as usize], request: request.clone() }
        }
        Step::Deliver(e) => Step::Deliver(rename_packet(e, map, sym)),
        Step::Drop(e) => Step::Drop(rename_packet(e, map, sym)),
        Step::Timer { node, timer } => {
            Step::Timer { node: map[*node as usize], timer: (sym.timer)(timer, map) }
        }
        Step::Crash(node) => Step::Crash(map[*node as usize]),
        Step::Recover(node) => Step::Recover(map[*node as usize]),
    }
}

fn rename_packet<A: PlainAlgorithm>(e: &Packet<A::Msg>, map: &[NodeId], sym: &Symmetry<A>) -> Packet<A::Msg> {
    Packet::new(map[e.from as usize], map[e.to as usize], (sym.msg)(&e.msg, map))
}

/// The model's uid of position `p` is `p + 1`.
fn rename_uid(uid: Uid, map: &[NodeId]) -> Uid {
    map[(uid - 1) as usize] as Uid + 1
}

/// The representative of `s`'s class: of its renamings under `A`'s group, the one with the
/// least hash, a tie broken by a second hash with another seed. (Any fixed choice within the
/// class is sound; the least hash needs no order on states. Were two renamings to tie on both
/// hashes, the choice would depend on the member reached, and that class might be explored
/// twice: more work, never a missed state.) `ORDERED` is whether the network keeps FIFO links.
/// A state of an algorithm that declares no symmetry is its own representative.
///
/// The hash is foldhash with a fixed seed: the same in every run, and several times cheaper
/// than the standard library's SipHash, which was a third of a symmetric search's time.
pub fn representative<A: PlainAlgorithm, const ORDERED: bool>(s: &State<A>) -> State<A> {
    let Some(sym) = A::symmetry() else { return s.clone() };
    let hasher = foldhash::fast::FixedState::with_seed(0);
    let mut best = (hasher.hash_one(s), s.clone());
    for map in sym.group.renamings(s.procs.len() as u32).iter().skip(1) {
        let r = rename(s, map, &sym, ORDERED);
        let key = hasher.hash_one(&r);
        let tie_won = || {
            let second = foldhash::fast::FixedState::with_seed(1);
            r != best.1 && second.hash_one(&r) < second.hash_one(&best.1)
        };
        if key < best.0 || (key == best.0 && tie_won()) {
            best = (key, r);
        }
    }
    best.1
}

/// Checks that `A`'s declared symmetry is true under `bounds`, on every reachable state: for
/// each renaming in `renamings` (default: the declared group's), the steps possible in the
/// renamed state are exactly the renamed steps, and each renamed step leads to the renamed
/// successor. Returns the number of reachable states checked, or the first state and renaming
/// where the claim fails. Explores the whole space without reduction: for small systems only.
pub fn verify<A: PlainAlgorithm>(
    bounds: crate::Bounds,
    renamings: Option<Vec<Vec<NodeId>>>,
) -> Result<usize, String> {
    use std::collections::{HashSet, VecDeque};
    let sym = A::symmetry().ok_or_else(|| format!("{} declares no symmetry", A::NAME))?;
    let model = crate::CheckModel::<A>::new(bounds).map_err(|e| e.to_string())?;
    let ordered = model.bounds.network == NetworkKind::Ordered;
    let renamings = renamings.unwrap_or_else(|| sym.group.renamings(model.bounds.nodes));
    let init = model.initial(None);
    let mut seen: HashSet<State<A>> = HashSet::from([init.clone()]);
    let mut queue = VecDeque::from([init]);
    let successors = |s: &State<A>| {
        let mut steps = Vec::new();
        model.steps(s, &mut steps);
        steps
            .into_iter()
            .filter_map(|step| {
                let mut next = s.clone();
                model.apply(&mut next, step.clone(), None).then_some((step, next))
            })
            .collect::<Vec<_>>()
    };
    while let Some(s) = queue.pop_front() {
        let next = successors(&s);
        for map in &renamings {
            let r = rename(&s, map, &sym, ordered);
            let mut theirs: Vec<_> = successors(&r);
            let mut ours: Vec<_> = next
                .iter()
                .map(|(step, t)| (rename_step(step, map, &sym), rename(t, map, &sym, ordered)))
                .collect();
            let key = |x: &(StepOf<A>, State<A>)| format!("{:?}", x.0);
            theirs.sort_by_key(key);
            ours.sort_by_key(key);
            if theirs != ours {
                return Err(format!(
                    "{}: renaming {map:?} does not commute with the steps of state {s:?}",
                    A::NAME
                ));
            }
        }
        for (_, t) in next {
            if seen.insert(t.clone()) {
                queue.push_back(t);
            }
        }
    }
    Ok(seen.len())
}
