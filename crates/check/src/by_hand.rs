//! You are the scheduler: one execution chosen step by step, by hand.
//!
//! The model checker picks every interleaving; a learner picks one. Here an execution is a
//! *path*: the indices of the steps taken, each among the steps enabled in the state before it,
//! in [`CheckModel::steps`]' fixed order (requests, deliveries, timers, losses, crashes,
//! recoveries). [`by_hand`] replays a path from the initial state and says where it stands: the
//! trace so far (the simulator's records, for the viewer), the steps enabled next, described in
//! words, and the `always` properties violated in the state reached. Nothing is kept between
//! calls — a path is the whole state of an exploration, so back and forward are a shorter or a
//! longer path, and a link can hold one.
//!
//! [`violation_from`] is "find a violation from here": a breadth-first search from the state a
//! path reaches, over at most a given number of states, for the nearest state that violates an
//! `always` property; its answer is the path to it, shortest from there.

use std::collections::{HashMap, VecDeque};

use ringleader_algorithms::{PlainAlgorithm, PlainVisitor};
use ringleader_core::trace::TraceRecord;
use ringleader_core::{Message as _, Uid};

use crate::model::{Bounds, CheckModel, State, Step, StepOf};
use crate::property::ModelProperty;
use crate::{CheckError, properties};

/// Where a path stands.
#[derive(Clone, Debug, PartialEq)]
pub struct ByHand {
    /// The trace of the path, as a simulated run's (one step per path step, 1 ms apart).
    pub records: Vec<TraceRecord>,
    /// Uid by position.
    pub uids: Vec<Uid>,
    /// The steps enabled next, in words, in the order a path indexes them.
    pub enabled: Vec<String>,
    /// The `always` properties violated in the state reached: (name, why).
    pub violated: Vec<(&'static str, String)>,
}

/// A violation found from a path's state: the whole path to it (the given one and the steps
/// after it), the property and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Found {
    /// The path from the initial state to the violating state.
    pub path: Vec<usize>,
    /// The property violated there.
    pub property: &'static str,
    /// Why.
    pub detail: String,
    /// States explored to find it.
    pub states: usize,
}

/// What a search from a path's state found.
#[derive(Clone, Debug, PartialEq)]
pub enum Search {
    /// A nearest violating state.
    Found(Found),
    /// Every state reachable from there was explored and none violates an `always` property.
    None {
        /// States explored.
        states: usize,
    },
    /// The budget ran out first: nothing is claimed.
    Undecided {
        /// States explored.
        states: usize,
    },
}

/// The step `s` in words, with the positions as the viewer names them (`P0` holds id 1).
fn describe<A: PlainAlgorithm>(step: &StepOf<A>) -> String {
    match step {
        Step::Request { node, request } => format!("P{node}: the application asks {request:?}"),
        Step::Deliver(p) => format!("deliver {} P{} → P{}: {:?}", p.msg.kind(), p.from, p.to, p.msg),
        Step::Drop(p) => format!("lose {} P{} → P{}", p.msg.kind(), p.from, p.to),
        Step::Timer { node, timer } => format!("P{node}: timer {timer:?} fires"),
        Step::Crash(node) => format!("crash P{node}"),
        Step::Recover(node) => format!("P{node} recovers"),
    }
}

/// The `always` properties of `A`'s family violated in `s`.
fn violated<A: PlainAlgorithm>(m: &CheckModel<A>, s: &State<A>) -> Vec<(&'static str, String)> {
    ModelProperty::of_family(m.info.family)
        .iter()
        .filter(|p| p.always())
        .filter_map(|&p| properties::violation(m, s, p).map(|d| (p.name(), d)))
        .collect()
}

/// The steps of `path` from the initial state; the first index that is not an enabled step is
/// an error naming how many were.
fn steps_of<A: PlainAlgorithm>(m: &CheckModel<A>, path: &[usize]) -> Result<Vec<StepOf<A>>, CheckError> {
    let mut s = m.initial(None);
    let mut taken = Vec::with_capacity(path.len());
    for (at, &i) in path.iter().enumerate() {
        let mut enabled = Vec::new();
        m.steps(&s, &mut enabled);
        let Some(step) = enabled.get(i).cloned() else {
            return Err(CheckError::NoSuchStep { at, index: i, enabled: enabled.len() });
        };
        if !m.apply(&mut s, step.clone(), None) {
            return Err(CheckError::NoReplay);
        }
        taken.push(step);
    }
    Ok(taken)
}

/// The path of `steps` (each step's index among those enabled where it was taken), or `None` if
/// one is not enabled where it comes: how a counterexample found by the search is handed to a
/// page where one explores by hand.
pub fn path_of<A: PlainAlgorithm>(m: &CheckModel<A>, steps: &[StepOf<A>]) -> Option<Vec<usize>> {
    let mut s = m.initial(None);
    let mut path = Vec::with_capacity(steps.len());
    for step in steps {
        let mut enabled = Vec::new();
        m.steps(&s, &mut enabled);
        path.push(enabled.iter().position(|e| e == step)?);
        if !m.apply(&mut s, step.clone(), None) {
            return None;
        }
    }
    Some(path)
}

/// Every state of a small model, for a page that explores by hand without a server: the
/// records of the initial state, and for each state (0 is the initial one) its enabled steps —
/// each with its words, the state it leads to and the records it makes, without stamps or
/// message ids (the page numbers and stamps the path it builds) — and the `always` properties
/// violated there. `None` when the model has more than `max_states` states.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Graph {
    /// The initial state's records (the nodes' starts).
    pub start: Vec<TraceRecord>,
    /// The states, by number.
    pub states: Vec<GraphState>,
}

/// One state of a [`Graph`].
#[derive(Clone, Debug, serde::Serialize)]
pub struct GraphState {
    /// The enabled steps: words, target state, records.
    pub steps: Vec<(String, usize, Vec<TraceRecord>)>,
    /// The `always` properties violated here: name and why.
    pub violated: Vec<(&'static str, String)>,
}

/// [`graph`] for algorithm `A`.
pub fn graph_algorithm<A: PlainAlgorithm>(
    bounds: Bounds,
    max_states: usize,
) -> Result<Option<Graph>, CheckError> {
    let m = CheckModel::<A>::new(bounds)?.unlatched();
    let keep = m.bounds.network == crate::NetworkKind::Duplicating;
    let mut rec = crate::model::Recording::new(&m.uids, keep);
    let first = m.initial(Some(&mut rec));
    let start = rec.finish();
    let mut ids: HashMap<State<A>, usize> = HashMap::new();
    let mut order = vec![first.clone()];
    ids.insert(first, 0);
    let mut states = Vec::new();
    let mut at = 0;
    while at < order.len() {
        let s = order[at].clone();
        at += 1;
        let mut enabled = Vec::new();
        m.steps(&s, &mut enabled);
        let mut steps = Vec::with_capacity(enabled.len());
        for step in enabled {
            let words = describe::<A>(&step);
            let mut next = s.clone();
            let mut rec = crate::model::Recording::new(&m.uids, keep);
            if !m.apply(&mut next, step, Some(&mut rec)) {
                continue;
            }
            let target = match ids.get(&next) {
                Some(&i) => i,
                None => {
                    if order.len() >= max_states {
                        return Ok(None);
                    }
                    ids.insert(next.clone(), order.len());
                    order.push(next);
                    order.len() - 1
                }
            };
            steps.push((words, target, rec.finish()));
        }
        states.push(GraphState { steps, violated: violated(&m, &s) });
    }
    Ok(Some(Graph { start, states }))
}

/// [`by_hand`] for algorithm `A`.
pub fn by_hand_algorithm<A: PlainAlgorithm>(bounds: Bounds, path: &[usize]) -> Result<ByHand, CheckError> {
    let m = CheckModel::<A>::new(bounds)?.unlatched();
    let taken = steps_of(&m, path)?;
    let (mut rec, s) = m.replay(&taken).ok_or(CheckError::NoReplay)?;
    let violated = violated(&m, &s);
    for (name, detail) in &violated {
        rec.violation(name, detail.clone());
    }
    let mut enabled = Vec::new();
    m.steps(&s, &mut enabled);
    Ok(ByHand {
        records: rec.finish(),
        uids: m.uids.clone(),
        enabled: enabled.iter().map(describe::<A>).collect(),
        violated,
    })
}

/// [`violation_from`] for algorithm `A`.
pub fn violation_from_algorithm<A: PlainAlgorithm>(
    bounds: Bounds,
    path: &[usize],
    max_states: usize,
) -> Result<Search, CheckError> {
    let m = CheckModel::<A>::new(bounds)?.unlatched();
    let taken = steps_of(&m, path)?;
    let (_, start) = m.replay(&taken).ok_or(CheckError::NoReplay)?;
    // Breadth-first: each state remembers the state it was reached from and the step's index.
    let mut parent: HashMap<State<A>, Option<(State<A>, usize)>> = HashMap::new();
    let mut queue = VecDeque::new();
    parent.insert(start.clone(), None);
    queue.push_back(start);
    while let Some(s) = queue.pop_front() {
        if let Some((property, detail)) = violated(&m, &s).into_iter().next() {
            let mut suffix = Vec::new();
            let mut at = &s;
            while let Some(Some((from, i))) = parent.get(at) {
                suffix.push(*i);
                at = from;
            }
            suffix.reverse();
            let mut path = path.to_vec();
            path.extend(suffix);
            return Ok(Search::Found(Found { path, property, detail, states: parent.len() }));
        }
        let mut enabled = Vec::new();
        m.steps(&s, &mut enabled);
        for (i, step) in enabled.into_iter().enumerate() {
            let mut next = s.clone();
            if !m.apply(&mut next, step, None) || parent.contains_key(&next) {
                continue;
            }
            if parent.len() >= max_states {
                return Ok(Search::Undecided { states: parent.len() });
            }
            parent.insert(next.clone(), Some((s.clone(), i)));
            queue.push_back(next);
        }
    }
    Ok(Search::None { states: parent.len() })
}

struct ByHandVisitor<'a> {
    bounds: Bounds,
    path: &'a [usize],
}

impl PlainVisitor for ByHandVisitor<'_> {
    type Output = Result<ByHand, CheckError>;
    fn visit<A: PlainAlgorithm>(self) -> Self::Output {
        by_hand_algorithm::<A>(self.bounds, self.path)
    }
}

struct GraphVisitor {
    bounds: Bounds,
    max_states: usize,
}

impl PlainVisitor for GraphVisitor {
    type Output = Result<Option<Graph>, CheckError>;
    fn visit<A: PlainAlgorithm>(self) -> Self::Output {
        graph_algorithm::<A>(self.bounds, self.max_states)
    }
}

/// Every state of `algorithm`'s model under `bounds`, when there are at most `max_states`.
pub fn graph(algorithm: &str, bounds: Bounds, max_states: usize) -> Result<Option<Graph>, CheckError> {
    ringleader_registry::dispatch_plain(algorithm, GraphVisitor { bounds, max_states })
        .unwrap_or_else(|| Err(crate::not_checkable(algorithm)))
}

/// Replays `path` on the model of `algorithm` under `bounds` and says where it stands.
pub fn by_hand(algorithm: &str, bounds: Bounds, path: &[usize]) -> Result<ByHand, CheckError> {
    ringleader_registry::dispatch_plain(algorithm, ByHandVisitor { bounds, path })
        .unwrap_or_else(|| Err(crate::not_checkable(algorithm)))
}

struct SearchVisitor<'a> {
    bounds: Bounds,
    path: &'a [usize],
    max_states: usize,
}

impl PlainVisitor for SearchVisitor<'_> {
    type Output = Result<Search, CheckError>;
    fn visit<A: PlainAlgorithm>(self) -> Self::Output {
        violation_from_algorithm::<A>(self.bounds, self.path, self.max_states)
    }
}

/// Searches breadth-first from the state `path` reaches, over at most `max_states` states, for
/// the nearest state of `algorithm`'s model that violates an `always` property.
pub fn violation_from(
    algorithm: &str,
    bounds: Bounds,
    path: &[usize],
    max_states: usize,
) -> Result<Search, CheckError> {
    ringleader_registry::dispatch_plain(algorithm, SearchVisitor { bounds, path, max_states })
        .unwrap_or_else(|| Err(crate::not_checkable(algorithm)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_requesters() -> Bounds {
        let mut b = Bounds::new(3);
        b.requesters = vec![1, 2];
        b
    }

    /// Central-timeout's two holders, found by hand: each requester asks, the coordinator
    /// grants the first, its holder-silent timer fires (the holder is slow, not dead) and it
    /// grants the second. The search from the start finds the same kind of state, and from a
    /// state where it is already violated it answers at once.
    #[test]
    fn central_timeout_s_two_holders_by_hand_and_by_search() {
        let start = by_hand("central-timeout", two_requesters(), &[]).unwrap();
        assert!(start.violated.is_empty());
        assert_eq!(start.enabled, ["P1: the application asks Acquire", "P2: the application asks Acquire"]);
        // Pick by words: the index of the first enabled step containing `text`.
        let mut path = Vec::new();
        for text in [
            "P1: the application asks",
            "P2: the application asks",
            "deliver request P1 → P0",
            "deliver request P2 → P0",
            "deliver grant P0 → P1",
            "P0: timer HolderSilent",
            "deliver grant P0 → P2",
        ] {
            let here = by_hand("central-timeout", two_requesters(), &path).unwrap();
            let i = here
                .enabled
                .iter()
                .position(|e| e.contains(text))
                .unwrap_or_else(|| panic!("{text}: {:?}", here.enabled));
            path.push(i);
        }
        let end = by_hand("central-timeout", two_requesters(), &path).unwrap();
        assert_eq!(end.violated.len(), 1, "{:?}", end.violated);
        assert_eq!(end.violated[0].0, "safety");
        assert!(
            end.records.iter().any(|r| r.property.as_deref() == Some("safety")),
            "the trace ends in the violation"
        );

        let Search::Found(found) = violation_from("central-timeout", two_requesters(), &[], 100_000).unwrap()
        else {
            panic!("central-timeout violates safety")
        };
        assert_eq!(found.property, "safety");
        assert!(found.path.len() <= path.len(), "breadth-first: no longer than the hand-made path");
        let replayed = by_hand("central-timeout", two_requesters(), &found.path).unwrap();
        assert_eq!(replayed.violated[0].0, "safety", "the path found leads to the violation");
        let here = violation_from("central-timeout", two_requesters(), &path, 10).unwrap();
        assert!(matches!(&here, Search::Found(f) if f.path == path), "{here:?}");
    }

    /// Central (no timeout) never has two holders: the search explores every state and says so;
    /// with too small a budget it claims nothing.
    #[test]
    fn a_search_that_finds_nothing_says_whether_it_looked_everywhere() {
        let none = violation_from("central", two_requesters(), &[], 1_000_000).unwrap();
        assert!(matches!(none, Search::None { states } if states > 10), "{none:?}");
        let cut = violation_from("central", two_requesters(), &[], 3).unwrap();
        assert_eq!(cut, Search::Undecided { states: 3 });
    }

    /// The counterexample the search finds is handed over as a path: replayed by hand, it ends
    /// in the same violation.
    #[test]
    fn a_counterexample_is_a_path_to_explore_from() {
        let out = crate::check("central-timeout", two_requesters(), &crate::Options::default()).unwrap();
        let safety = out.property("safety").unwrap();
        assert!(safety.violated());
        assert_eq!(safety.path.len(), safety.length.unwrap());
        let here = by_hand("central-timeout", two_requesters(), &safety.path).unwrap();
        assert_eq!(here.violated[0].0, "safety");
    }

    /// The whole graph of a small model agrees with replaying paths: the counterexample's path
    /// walked through the graph ends in a state that violates safety; too large a model gives
    /// no graph.
    #[test]
    fn the_graph_of_a_small_model_walks_like_the_replay() {
        let g = graph("central-timeout", two_requesters(), 10_000).unwrap().expect("a small model");
        assert_eq!(g.states[0].steps.len(), 2);
        assert_eq!(g.start.len(), 3, "three nodes start");
        let out = crate::check("central-timeout", two_requesters(), &crate::Options::default()).unwrap();
        let mut at = 0;
        for &i in &out.property("safety").unwrap().path {
            at = g.states[at].steps[i].1;
        }
        assert_eq!(g.states[at].violated[0].0, "safety");
        assert!(graph("central-timeout", two_requesters(), 10).unwrap().is_none());
    }

    /// A path index beyond the enabled steps is refused with the count there was.
    #[test]
    fn a_step_that_is_not_enabled_is_refused() {
        let err = by_hand("central", two_requesters(), &[0, 7]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "step 2 of the path: there is no step 7 (2 steps are enabled there: 0 to 1)"
        );
    }
}
