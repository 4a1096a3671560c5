//! What stateright explores: a [`CheckModel`] as a [`Model`] — its initial state, every step
//! possible in a state (so that every order is explored), the state a step leads to, and the
//! properties of the algorithm's family ([`crate::properties`]).

use ringleader_algorithms::PlainAlgorithm;
use ringleader_core::NodeId;
use stateright::Model;

use crate::model::{CheckModel, State, Step, StepOf};
use crate::properties;

/// The name of a property that holds in every state, judged only when the search must be
/// exhaustive. Stateright ends a search as soon as every property has a discovery (each
/// `always` violated, each `sometimes` reached): every verdict is then decided, but the states
/// not yet visited were never explored. A property that is never discovered keeps the search
/// going until the reachable space (within its bounds) is exhausted. It is not reported.
pub const EXHAUSTIVE: &str = "(exhaustive)";

impl<A: PlainAlgorithm> Model for CheckModel<A> {
    type State = State<A>;
    type Action = StepOf<A>;

    fn init_states(&self) -> Vec<State<A>> {
        vec![self.initial(None)]
    }

    fn actions(&self, s: &State<A>, actions: &mut Vec<StepOf<A>>) {
        // Properties judge quiescence from the model's own steps, never from this list, so a
        // halted search cannot make a state look final.
        if self.halt.load(std::sync::atomic::Ordering::Relaxed) {
            return;
        }
        self.steps(s, actions);
    }

    fn next_state(&self, s: &State<A>, step: StepOf<A>) -> Option<State<A>> {
        let mut next = s.clone();
        self.apply(&mut next, step, None).then_some(next)
    }

    fn format_action(&self, step: &StepOf<A>) -> String {
        let p = |n: &NodeId| format!("P{n} (id {})", self.uids[*n as usize]);
        match step {
            Step::Request { node, request } => format!("{} is asked {request:?}", p(node)),
            Step::Deliver(e) => format!("{} receives {:?} from {}", p(&e.to), e.msg, p(&e.from)),
            Step::Drop(e) => format!("{:?} from {} to {} is lost", e.msg, p(&e.from), p(&e.to)),
            Step::Timer { node, timer } => format!("{} timer {timer:?} fires", p(node)),
            Step::Crash(node) => format!("{} crashes", p(node)),
            Step::Recover(node) => format!("{} recovers", p(node)),
        }
    }

    fn properties(&self) -> Vec<stateright::Property<Self>> {
        let mut props = properties::for_family::<A>(self.info.family);
        if self.exhaustive {
            props.push(stateright::Property::always(EXHAUSTIVE, |_, _| true));
        }
        props
    }
}
