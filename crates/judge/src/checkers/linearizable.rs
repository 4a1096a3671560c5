//! `linearizable`: the lock service's client history, checked for linearizability.
//!
//! The lock service's nodes each run a client of the one lock the workload uses
//! (crates/lock-service/src/process.rs). This checker wraps the mutual-exclusion
//! checker (which judges `safety`, `fencing` and the rest) and records, from what the trace
//! already has, one operation per client observation:
//!
//! - `acquire`: from the `Acquire` request to `Entered { fencing }` (the fencing token is the
//!   answer); an acquire still waiting at a crash or at the end never returned;
//! - `release`: from the `Release` request to `Exited`; if the holder was seen paused while it
//!   held the lock, also a `lease_ended` from the `Entered` to that `Exited` (its lease may have
//!   run out at the server during the pause without the client noticing; see below);
//! - `lease_ended`: an `Exited` with no release asked is the client giving the lock up because its
//!   lease ran out by its clock; it may have ended at the server any time after the grant, so the
//!   interval runs from the `Entered` to the `Exited`. A holder that crashes gets a lease end
//!   that never returned (the server expires its lease at some point after the grant).
//!
//! Pauses: a holder paused past its lease cannot notice that the server expired it, and when it
//! resumes it may release a lock it no longer holds. That expiry is real but no client observed
//! it, so the history would otherwise show two holders. The checker uses the simulator's view:
//! a holder seen paused (at any event of the run) while it held the lock gets a `lease_ended`
//! from its grant to its exit. Real clients' histories have no such view (see
//! docs/VERIFICATION.md).
//!
//! A holder is a node in one life: a recovered node's client has a new lease. At the end of the
//! run the history is checked against [`crate::linearizability::lock::LockModel`] (what that
//! proves and what it cannot is in its essay). A violation is reported at the step of the
//! return that could not be explained, with the witness; a search that runs out of budget
//! leaves the property undecided.

use std::collections::{BTreeMap, BTreeSet};

use ringleader_core::{Event, NodeId, Request, Time};

use super::{Checker, FamilyReport, Moment, NodeStatus, Property, Violations, World};
use crate::linearizability::lock::{LockInput, LockModel, LockOp, LockOperation, LockOutput};
use crate::linearizability::{DEFAULT_BUDGET, LinearizabilityVerdict, Operation, check};

/// The lock name the simulator's history uses (the workload's one lock).
const LOCK: &str = "lock";

/// Records the client history of a lock-service run.
#[derive(Clone, Debug, Default)]
pub struct LockHistory {
    ops: Vec<LockOperation>,
    /// Return time → the first moment with that time (where a violation is reported).
    moments: BTreeMap<Time, Moment>,
    open_acquire: BTreeMap<NodeId, usize>,
    open_release: BTreeMap<NodeId, usize>,
    /// Holder → when it entered.
    holding: BTreeMap<NodeId, Time>,
    /// Crashes per node (its life number).
    lives: BTreeMap<NodeId, u32>,
    /// Holders seen paused while holding.
    paused: BTreeSet<NodeId>,
}

impl LockHistory {
    /// The operations recorded so far.
    pub fn operations(&self) -> &[LockOperation] {
        &self.ops
    }

    fn holder(&self, w: &World, node: NodeId) -> String {
        match self.lives.get(&node) {
            Some(&life) if life > 0 => format!("id {} (life {})", w.uids[node as usize], life + 1),
            _ => format!("id {}", w.uids[node as usize]),
        }
    }

    fn open(&mut self, w: &World, node: NodeId, op: LockOp, call: Time) -> usize {
        let holder = self.holder(w, node);
        self.ops.push(Operation {
            client: holder.clone(),
            input: LockInput { lock: LOCK.into(), holder, op },
            output: None,
            call,
            ret: None,
        });
        self.ops.len() - 1
    }

    fn close(&mut self, i: usize, output: LockOutput, at: Moment) {
        self.ops[i].output = Some(output);
        self.ops[i].ret = Some(at.time);
        self.moments.entry(at.time).or_insert(at);
    }

    /// Notes the holders the world says are paused.
    fn note_pauses(&mut self, w: &World) {
        for &h in self.holding.keys() {
            if w.status[h as usize] == NodeStatus::Paused {
                self.paused.insert(h);
            }
        }
    }

    /// A request to `node`'s client.
    pub fn on_request(&mut self, w: &World, node: NodeId, req: &Request, at: Moment) {
        self.note_pauses(w);
        match req {
            Request::Acquire
                if !self.open_acquire.contains_key(&node) && !self.holding.contains_key(&node) =>
            {
                let i = self.open(w, node, LockOp::Acquire, at.time);
                self.open_acquire.insert(node, i);
            }
            Request::Release
                if self.holding.contains_key(&node) && !self.open_release.contains_key(&node) =>
            {
                let i = self.open(w, node, LockOp::Release, at.time);
                self.open_release.insert(node, i);
            }
            _ => {}
        }
    }

    /// An event of `node`'s.
    pub fn on_event(&mut self, w: &World, node: NodeId, event: &Event, at: Moment) {
        self.note_pauses(w);
        match *event {
            Event::Entered { fencing } => {
                let i = match self.open_acquire.remove(&node) {
                    Some(i) => i,
                    None => self.open(w, node, LockOp::Acquire, at.time),
                };
                self.close(i, LockOutput::Granted { token: fencing }, at);
                self.holding.insert(node, at.time);
            }
            Event::Exited => {
                if let Some(granted) = self.holding.remove(&node) {
                    let paused = self.paused.remove(&node);
                    if let Some(i) = self.open_release.remove(&node) {
                        self.close(i, LockOutput::Done, at);
                        if !paused {
                            return;
                        }
                    }
                    let i = self.open(w, node, LockOp::LeaseEnded, granted);
                    self.close(i, LockOutput::Done, at);
                }
            }
            _ => {}
        }
    }

    /// `node` crashed: what it had asked never returns; a lease it held ends at some point.
    pub fn on_crash(&mut self, w: &World, node: NodeId) {
        self.open_acquire.remove(&node);
        self.open_release.remove(&node);
        if let Some(granted) = self.holding.remove(&node) {
            self.open(w, node, LockOp::LeaseEnded, granted);
        }
        self.paused.remove(&node);
        *self.lives.entry(node).or_default() += 1;
    }

    /// Checks the history; records a violation (at the return that could not be explained) or
    /// leaves the property undecided.
    pub fn judge(&self, at: Moment, v: &mut Violations) {
        let checked = check(&LockModel, &self.ops, DEFAULT_BUDGET);
        match checked.verdict {
            LinearizabilityVerdict::Linearizable => {}
            LinearizabilityVerdict::Violated(w) => {
                let when = self.moments.get(&w.prefix_end).copied().unwrap_or(at);
                v.record(Property::Linearizable, when, || w.to_string());
            }
            LinearizabilityVerdict::Undecided { .. } => {
                v.undecided_because(Property::Linearizable, at.time, || checked.verdict.to_string());
            }
        }
    }
}

/// A checker that adds `linearizable` to another (the mutual-exclusion checker).
pub struct LinearizableChecker<C> {
    inner: C,
    history: LockHistory,
}

impl<C: Checker> LinearizableChecker<C> {
    /// Wraps `inner`.
    pub fn new(inner: C) -> Self {
        LinearizableChecker { inner, history: LockHistory::default() }
    }

    /// The client history recorded so far.
    pub fn history(&self) -> &LockHistory {
        &self.history
    }
}

impl<C: Checker> Checker for LinearizableChecker<C> {
    fn properties(&self) -> Vec<Property> {
        let mut p = self.inner.properties();
        p.push(Property::Linearizable);
        p
    }

    fn on_event(&mut self, w: &World, node: NodeId, event: &Event, at: Moment, v: &mut Violations) {
        self.history.on_event(w, node, event, at);
        self.inner.on_event(w, node, event, at, v);
    }

    fn on_request(&mut self, w: &World, node: NodeId, req: &Request, at: Moment, v: &mut Violations) {
        self.history.on_request(w, node, req, at);
        self.inner.on_request(w, node, req, at, v);
    }

    fn on_crash(&mut self, w: &World, node: NodeId, at: Moment, v: &mut Violations) {
        self.history.on_crash(w, node);
        self.inner.on_crash(w, node, at, v);
    }

    fn on_recover(&mut self, w: &World, node: NodeId, at: Moment, v: &mut Violations) {
        self.inner.on_recover(w, node, at, v);
    }

    fn clock_sample_period(&self) -> Option<Time> {
        self.inner.clock_sample_period()
    }

    fn on_clocks(&mut self, w: &World, readings: &[Time], at: Moment, v: &mut Violations) {
        self.inner.on_clocks(w, readings, at, v);
    }

    fn finish(&mut self, w: &World, at: Moment, v: &mut Violations) {
        self.inner.finish(w, at, v);
        self.history.judge(at, v);
    }

    fn report(&self, w: &World) -> FamilyReport {
        self.inner.report(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkers::LeaderRule;
    use crate::checkers::mutex::MutexChecker;

    fn at(ms: u64, step: u64) -> Moment {
        Moment { time: ms * 1_000_000, step }
    }

    /// Feeds (ms, node, request or event) in order and returns the violations.
    fn run(script: &[(u64, NodeId, Result<Request, Event>)]) -> Violations {
        let uids = [1, 2, 3];
        let status = [NodeStatus::Up; 3];
        let w = World { uids: &uids, status: &status, rule: LeaderRule::Max };
        let mut c = LinearizableChecker::new(MutexChecker::new(3));
        let mut v = Violations::default();
        for (step, (ms, node, what)) in script.iter().enumerate() {
            match what {
                Ok(req) => c.on_request(&w, *node, req, at(*ms, step as u64), &mut v),
                Err(e) => c.on_event(&w, *node, e, at(*ms, step as u64), &mut v),
            }
        }
        c.finish(&w, at(1_000, script.len() as u64), &mut v);
        v
    }

    #[test]
    fn a_served_history_is_linearizable() {
        let v = run(&[
            (0, 0, Ok(Request::Acquire)),
            (1, 1, Ok(Request::Acquire)),
            (5, 0, Err(Event::Entered { fencing: 4 })),
            (10, 0, Ok(Request::Release)),
            (10, 0, Err(Event::Exited)),
            (15, 1, Err(Event::Entered { fencing: 9 })),
            (20, 1, Err(Event::Exited)),
        ]);
        assert!(!v.has(Property::Linearizable), "{:?}", v.list());
    }

    /// A hand-built trace of a broken service: a grant of an older token after a newer one,
    /// each holder having left before the next entered (so `safety` holds); `fencing` and
    /// `linearizable` catch it, and the witness names the culprit at its step.
    #[test]
    fn a_stale_grant_is_not_linearizable() {
        let v = run(&[
            (0, 0, Ok(Request::Acquire)),
            (5, 0, Err(Event::Entered { fencing: 7 })),
            (6, 1, Ok(Request::Acquire)),
            (10, 0, Ok(Request::Release)),
            (11, 0, Err(Event::Exited)),
            (20, 1, Err(Event::Entered { fencing: 5 })),
        ]);
        assert!(!v.has(Property::Safety));
        let lin = v.list().iter().find(|x| x.property == Property::Linearizable).expect("violated");
        assert_eq!(lin.step, 5);
        assert!(lin.detail.contains("id 2 acquire -> token 5"), "{}", lin.detail);
    }

    /// Two holders at once with no lease end between: not linearizable.
    #[test]
    fn a_second_grant_while_the_first_holder_still_holds_is_not_linearizable() {
        let v = run(&[
            (0, 0, Ok(Request::Acquire)),
            (5, 0, Err(Event::Entered { fencing: 7 })),
            (6, 1, Ok(Request::Acquire)),
            (20, 1, Err(Event::Entered { fencing: 9 })),
            (30, 0, Ok(Request::Release)),
            (31, 0, Err(Event::Exited)),
        ]);
        let lin = v.list().iter().find(|x| x.property == Property::Linearizable).expect("violated");
        assert!(lin.detail.contains("id 2 acquire -> token 9"), "{}", lin.detail);
    }

    /// A holder paused past its lease releases after the next grant: its lease ended unobserved
    /// during the pause, which the simulator saw, so the history is linearizable; the same
    /// history without the pause is two holders.
    #[test]
    fn a_holder_seen_paused_may_have_lost_its_lease_during_the_pause() {
        let uids = [1, 2, 3];
        let up = [NodeStatus::Up; 3];
        let paused = [NodeStatus::Paused, NodeStatus::Up, NodeStatus::Up];
        for pause in [true, false] {
            let mut c = LinearizableChecker::new(MutexChecker::new(3));
            let mut v = Violations::default();
            let w = World { uids: &uids, status: &up, rule: LeaderRule::Max };
            let wp = World { uids: &uids, status: if pause { &paused } else { &up }, rule: LeaderRule::Max };
            c.on_request(&w, 0, &Request::Acquire, at(0, 0), &mut v);
            c.on_event(&w, 0, &Event::Entered { fencing: 3 }, at(5, 1), &mut v);
            c.on_request(&w, 1, &Request::Acquire, at(6, 2), &mut v);
            c.on_event(&wp, 1, &Event::Entered { fencing: 8 }, at(600, 3), &mut v);
            c.on_request(&w, 0, &Request::Release, at(900, 4), &mut v);
            c.on_event(&w, 0, &Event::Exited, at(900, 5), &mut v);
            c.finish(&w, at(1_000, 6), &mut v);
            assert_eq!(v.has(Property::Linearizable), !pause, "paused: {pause}: {:?}", v.list());
        }
    }
}
