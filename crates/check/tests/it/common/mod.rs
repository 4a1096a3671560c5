//! Helpers shared by the model checker's integration tests.

use ringleader_check::CheckReport;
use ringleader_core::trace::RecordKind;
use ringleader_judge::checkers::{self, Moment, NodeStatus, Violations, World};

/// Feeds a counterexample's trace to the simulator's own checker, then ends the run there
/// (`finish`: what the end-of-run properties judge): the replayed run must be judged violating
/// too.
pub fn simulator_judges(out: &CheckReport, property: &str) -> Violations {
    let p = out.property(property).unwrap();
    let family = match out.family.as_str() {
        "election" => ringleader_algorithms::Family::Election,
        _ => ringleader_algorithms::Family::Mutex,
    };
    let n = out.uids.len();
    let mut checker = checkers::for_family(family, n);
    let mut status = vec![NodeStatus::Up; n];
    let mut v = Violations::default();
    let rule = ringleader_registry::find(&out.algorithm).unwrap().leader_rule;
    for r in &p.trace {
        let at = Moment { time: r.time_ns, step: r.step };
        let Some(node) = r.node else { continue };
        match r.kind {
            RecordKind::Crash => status[node as usize] = NodeStatus::Crashed,
            RecordKind::Recover => status[node as usize] = NodeStatus::Up,
            _ => {}
        }
        let w = World { uids: &out.uids, status: &status, rule };
        match r.kind {
            RecordKind::Emit => checker.on_event(&w, node, r.event.as_ref().unwrap(), at, &mut v),
            RecordKind::Request => checker.on_request(&w, node, r.request.as_ref().unwrap(), at, &mut v),
            RecordKind::Crash => checker.on_crash(&w, node, at, &mut v),
            RecordKind::Recover => checker.on_recover(&w, node, at, &mut v),
            _ => {}
        }
    }
    if let Some(last) = p.trace.last() {
        let w = World { uids: &out.uids, status: &status, rule };
        checker.finish(&w, Moment { time: last.time_ns, step: last.step }, &mut v);
    }
    v
}
