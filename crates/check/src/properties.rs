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

use ringleader_algorithms::{Family, PlainAlgorithm};
use ringleader_core::NodeId;
use ringleader_judge::checkers::election::{end_of_run, rival_claimants, uniqueness_detail};
use ringleader_judge::checkers::mutex::{fencing_detail, other_holder, safety_detail};
use stateright::Property;

use crate::model::{CheckModel, State};
use crate::property::ModelProperty;

/// The stateright properties of `family`, in report order.
pub fn for_family<A: PlainAlgorithm>(family: Family) -> Vec<Property<CheckModel<A>>> {
    ModelProperty::of_family(family)
        .iter()
        .map(|&p| {
            let judged = condition::<A>(p);
            if p.always() {
                Property::always(p.name(), judged)
            } else {
                Property::sometimes(p.name(), judged)
            }
        })
        .collect()
}

/// The condition stateright evaluates for `p` in a state (a function pointer: one per property).
fn condition<A: PlainAlgorithm>(p: ModelProperty) -> fn(&CheckModel<A>, &State<A>) -> bool {
    use ModelProperty::*;
    match p {
        Uniqueness => |m, s| judge(m, s, Uniqueness),
        Agreement => |m, s| judge(m, s, Agreement),
        Validity => |m, s| judge(m, s, Validity),
        Termination => |m, s| judge(m, s, Termination),
        Elected => |m, s| judge(m, s, Elected),
        Safety => |m, s| judge(m, s, Safety),
        Fencing => |m, s| judge(m, s, Fencing),
        Liveness => |m, s| judge(m, s, Liveness),
        Entered => |m, s| judge(m, s, Entered),
    }
}

/// `p` in `s`, latched: an `always` property holds, a `sometimes` property is reached.
fn judge<A: PlainAlgorithm>(m: &CheckModel<A>, s: &State<A>, p: ModelProperty) -> bool {
    if p.always() {
        m.latch_always(p, || violation(m, s, p))
    } else {
        m.latch_sometimes(p, || reached(m, s, p))
    }
}

fn live<A: PlainAlgorithm>(
    s: &State<A>,
) -> impl Iterator<Item = (NodeId, &crate::model::ModelNode<A::Timer>)> {
    s.nodes.iter().enumerate().filter(|(_, v)| !v.crashed).map(|(p, v)| (p as NodeId, v))
}

/// Why the `always` property `p` is violated in `s`, or `None` when it holds there (always
/// `None` for a `sometimes` property).
pub fn violation<A: PlainAlgorithm>(m: &CheckModel<A>, s: &State<A>, p: ModelProperty) -> Option<String> {
    match p {
        ModelProperty::Uniqueness => {
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
        ModelProperty::Agreement | ModelProperty::Validity | ModelProperty::Termination => {
            if !m.quiescent(s) {
                return None;
            }
            let status = m.status(s);
            let belief: Vec<_> = s.nodes.iter().map(|v| v.belief).collect();
            end_of_run(&m.world(&status), &belief, s.started)
                .into_iter()
                .find(|(property, _)| property.name() == p.name())
                .map(|(_, d)| d)
        }
        ModelProperty::Safety => {
            let holders: BTreeSet<NodeId> = live(s).filter(|(_, v)| v.holding).map(|(p, _)| p).collect();
            let entrant = *holders.last()?;
            other_holder(&holders, entrant).map(|other| safety_detail(&m.uids, entrant, other))
        }
        ModelProperty::Fencing => {
            s.fencing_broken.map(|(node, token, prev)| fencing_detail(&m.uids, node, token, prev))
        }
        ModelProperty::Liveness => {
            let (p, _) = live(s).find(|(_, v)| v.waiting)?;
            m.quiescent(s).then(|| {
                format!(
                    "id {} asked for the critical section and waits forever: nothing else can happen (deadlock)",
                    m.uids[p as usize]
                )
            })
        }
        ModelProperty::Elected | ModelProperty::Entered => None,
    }
}

/// True when the `sometimes` property `p` is reached in `s` (always false for an `always`
/// property).
pub fn reached<A: PlainAlgorithm>(m: &CheckModel<A>, s: &State<A>, p: ModelProperty) -> bool {
    match p {
        ModelProperty::Elected => {
            live(s).any(|(p, v)| v.belief.is_some_and(|(l, _)| l == m.uids[p as usize]))
        }
        ModelProperty::Entered => live(s).any(|(_, v)| v.holding),
        _ => false,
    }
}
