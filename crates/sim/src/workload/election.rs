//! The election workload: the initiators (`--initiators`) start an election at time 0, in the
//! order given; the engine resolves who they are (all, the lowest or highest live id, or ids).

use ringleader_core::{NodeId, Request};

use super::{Cx, Workload};

/// The nodes that start an election at time 0.
#[derive(Debug)]
pub struct ElectionWorkload {
    initiators: Vec<NodeId>,
}

impl ElectionWorkload {
    /// `initiators` (positions) start an election at time 0, in this order.
    pub fn new(initiators: Vec<NodeId>) -> Self {
        ElectionWorkload { initiators }
    }
}

impl Workload for ElectionWorkload {
    fn start(&mut self, cx: &mut Cx) {
        for node in std::mem::take(&mut self.initiators) {
            cx.ask(0, node, Request::StartElection);
        }
    }
}
