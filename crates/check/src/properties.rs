//! The properties the model checker judges, by family — the simulator's checkers' predicates
//! applied to every reachable state.
//!
//! | family | property | kind | judged | definition shared with the simulator |
//! |---|---|---|---|---|
//! | election | `uniqueness` | always | every state | [`rival_claimants`] over each term's live claimants |
//! | election | `termination`, `agreement`, `validity` | always | quiescent states | [`end_of_run`] |
//! | election | `elected` | sometimes | every state | some live node believes it is the coordinator |
//! | mutex | `safety` | always | every state | [`other_holder`] over the live holders |
//! | mutex | `fencing` | always | every entry | [`fencing_regression`](ringleader_judge::checkers::mutex::fencing_regression) |
//! | mutex | `liveness` | always | quiescent states | no live node waits for the critical section when nothing else can happen (deadlock) |
//! | mutex | `entered` | sometimes | every state | some live node is in the critical section |
//!
//! *Quiescent* means what the simulator means when its queue runs dry: no request the
//! application may still make, no message a live node may receive, no armed timer, no pending
//! recovery ([`CheckModel::quiescent`]). Losses and crashes do not count as progress.
//! `always` properties produce counterexamples; `sometimes` properties prove that the
//! interesting states are reachable at all (a checker that never reaches a leader proves
//! nothing about two leaders).
//!
//! ## Shortest counterexamples
//! Stateright's breadth-first search visits states in order of depth, but it *replaces* a
//! property's discovery every time another state violates (or reaches) it, so left alone it
//! reports the deepest one. Each property is therefore *latched* in the model
//! ([`CheckModel::latch_always`]): after its first discovery it reports "holds" (or "not
//! reached") for every later state, and the first — with one thread, a shortest — path stays.

use std::collections::{BTreeMap, BTreeSet};

use ringleader_algorithms::{Algorithm, Family};
use ringleader_core::NodeId;
use ringleader_judge::checkers::election::{end_of_run, rival_claimants, uniqueness_detail};
use ringleader_judge::checkers::mutex::{fencing_detail, other_holder, safety_detail};
use stateright::Property;

use crate::model::{CheckModel, State};

/// Every property name, in a fixed order (a property's index is its bit in the model's latch).
pub const NAMES: &[&str] = &[
    "uniqueness",
    "agreement",
    "validity",
    "termination",
    "elected",
    "safety",
    "fencing",
    "liveness",
    "entered",
];

/// The properties of `family`, in report order.
pub fn for_family<A: Algorithm>(family: Family) -> Vec<Property<CheckModel<A>>> {
    match family {
        Family::Election => vec![
            Property::always("uniqueness", |m, s| {
                m.latch_always("uniqueness", || violation::<A>(m, s, "uniqueness"))
            }),
            Property::always("agreement", |m, s| {
                m.latch_always("agreement", || violation::<A>(m, s, "agreement"))
            }),
            Property::always("validity", |m, s| {
                m.latch_always("validity", || violation::<A>(m, s, "validity"))
            }),
            Property::always("termination", |m, s| {
                m.latch_always("termination", || violation::<A>(m, s, "termination"))
            }),
            Property::sometimes("elected", |m, s| {
                m.latch_sometimes("elected", || reached::<A>(m, s, "elected"))
            }),
        ],
        Family::Mutex => vec![
            Property::always("safety", |m, s| m.latch_always("safety", || violation::<A>(m, s, "safety"))),
            Property::always("fencing", |m, s| m.latch_always("fencing", || violation::<A>(m, s, "fencing"))),
            Property::always("liveness", |m, s| {
                m.latch_always("liveness", || violation::<A>(m, s, "liveness"))
            }),
            Property::sometimes("entered", |m, s| {
                m.latch_sometimes("entered", || reached::<A>(m, s, "entered"))
            }),
        ],
        _ => Vec::new(),
    }
}

fn live<A: Algorithm>(s: &State<A>) -> impl Iterator<Item = (NodeId, &crate::model::Node<A::Timer>)> {
    s.nodes.iter().enumerate().filter(|(_, v)| !v.crashed).map(|(p, v)| (p as NodeId, v))
}

/// Why the `always` property `name` is violated in `s`, or `None` when it holds there.
pub fn violation<A: Algorithm>(m: &CheckModel<A>, s: &State<A>, name: &str) -> Option<String> {
    match name {
        "uniqueness" => {
            let mut claims: BTreeMap<u64, BTreeSet<NodeId>> = BTreeMap::new();
            for (p, v) in live(s) {
                if let Some((leader, term)) = v.belief
                    && leader == m.uids[p as usize]
                {
                    claims.entry(term).or_default().insert(p);
                }
            }
            claims
                .iter()
                .find(|(_, set)| rival_claimants(set))
                .map(|(&t, set)| uniqueness_detail(&m.uids, set, t))
        }
        "agreement" | "validity" | "termination" => {
            if !m.quiescent(s) {
                return None;
            }
            let status = m.status(s);
            let belief: Vec<_> = s.nodes.iter().map(|v| v.belief).collect();
            end_of_run(&m.world(&status), &belief, s.started)
                .into_iter()
                .find(|(p, _)| *p == name)
                .map(|(_, d)| d)
        }
        "safety" => {
            let holders: BTreeSet<NodeId> = live(s).filter(|(_, v)| v.holding).map(|(p, _)| p).collect();
            let entrant = *holders.last()?;
            other_holder(&holders, entrant).map(|other| safety_detail(&m.uids, entrant, other))
        }
        "fencing" => s.fencing_broken.map(|(node, token, prev)| fencing_detail(&m.uids, node, token, prev)),
        "liveness" => {
            let (p, _) = live(s).find(|(_, v)| v.waiting)?;
            m.quiescent(s).then(|| {
                format!(
                    "id {} asked for the critical section and waits forever: nothing else can happen (deadlock)",
                    m.uids[p as usize]
                )
            })
        }
        _ => None,
    }
}

/// True when the `sometimes` property `name` is reached in `s`.
pub fn reached<A: Algorithm>(m: &CheckModel<A>, s: &State<A>, name: &str) -> bool {
    match name {
        "elected" => live(s).any(|(p, v)| v.belief.is_some_and(|(l, _)| l == m.uids[p as usize])),
        "entered" => live(s).any(|(_, v)| v.holding),
        _ => false,
    }
}
