//! Deadlock properties, judged on the global wait-for graph (WFG) the simulator sees.
//!
//! The checker keeps the WFG from the workload's requests: an edge P_i → P_j from
//! `WaitFor{holders}` (for each holder j) until `StopWaiting{j}`, P_i's `Aborted` or its
//! `GaveUp`. Every
//! request that closes a cycle through the requester is one **real deadlock**.
//!
//! Detection (Chandy-Misra-Haas):
//! - **soundness**: every `DeadlockDetected{cycle}` names a cycle whose every edge is in the WFG
//!   at that moment (a phantom deadlock violates it);
//! - **completeness**: every real deadlock is reported within [`DeadlockChecker::bound`] of its
//!   formation, and none is left unreported at the end of the run (a run cut off before an
//!   unreported cycle's bound leaves it *undecided*);
//! - **single_victim**: every `Aborted` comes from a process that is on a cycle at that moment
//!   (a second victim of an already broken cycle is a needless abort). A process that gives up
//!   its wait after a timeout emits `GaveUp` instead: it withdraws its waits, but no detector
//!   chose it, so it is no victim and is not judged (`gave_up` counts them).
//!
//! Prevention (wait-die, wound-wait; recognised by the `Queued` / `Restarted` events they emit):
//! an edge only counts once the holder lets the requester wait (`Queued{node}`, emitted by the
//! holder):
//! - **no_deadlock**: the graph of such waits has no cycle that is permanent. A holder judges a
//!   REQUEST against its own state when the REQUEST arrives, which can be stale (a paused holder
//!   reads its inbox late; a restarted transaction's old REQUEST arrives after its new one), so
//!   an allowed wait can close a cycle for a moment — and the scheme's next REQUEST along that
//!   cycle aborts one of its transactions (wait-die kills the younger requester, wound-wait
//!   wounds the younger holder) when it is judged, which breaks it. Such a *transient* cycle is no deadlock. A
//!   cycle is judged a deadlock when it is still closed when the run ends with nothing left to
//!   happen (no message in flight, no timer: nobody can be aborted any more); when the run is
//!   cut off with a cycle closed, `no_deadlock` is undecided;
//! - **no_starvation**: at the end of the run no live process is still waiting (every
//!   transaction, however often restarted, committed).
//!
//! Outcome, detection: `deadlocks_real`, `deadlocks_reported` (distinct deadlocks reported,
//! phantoms included), `reports`, `phantom_reports`, `victims` (detector aborts only),
//! `needless_aborts`, `gave_up`, `requests`;
//! latency `detection` (formation → first report). Prevention: `requests`, `aborts`,
//! `restarts`, `deadlocks_real` (cycles of allowed waits: 0 unless `no_deadlock` fails) and
//! `deadlocks_reported` (0: nothing detects).

use std::collections::{BTreeMap, BTreeSet};

use ringleader_core::time::MILLISECOND;
use ringleader_core::{Event, NodeId, Request, Time};

use super::{Checker, FamilyReport, Latencies, Moment, Property, Violations, World};
use crate::outcome::{DetectionOutcome, Outcome, PreventionOutcome};

/// A cycle closed by a request.
#[derive(Clone, Debug)]
struct Deadlock {
    closer: NodeId,
    formed: Time,
    reported: bool,
    open: bool,
}

/// Tracks the wait-for graph, the deadlocks in it, and the reports.
#[derive(Clone, Debug)]
pub struct DeadlockChecker {
    /// Requested edges: node → holders it waits for.
    waits: Vec<BTreeSet<NodeId>>,
    /// Edges (requester, holder) the holder let wait (prevention), with when it let it wait.
    queued: BTreeMap<(NodeId, NodeId), Moment>,
    /// Prevention: the transaction (start timestamp) each process waits with, from its
    /// `Requested{ts}`; a `Queued` naming another transaction is a stale REQUEST.
    transaction: Vec<Option<Time>>,
    prevention: bool,
    /// Deadlocks not yet broken (closed ones only count).
    deadlocks: Vec<Deadlock>,
    /// Requests that closed a cycle.
    real: u64,
    /// Of those, reported at least once.
    detected: u64,
    reports: u64,
    phantoms: u64,
    aborts: u64,
    /// Waits given up after a timeout (`GaveUp`): withdrawn, not victims.
    gave_up: u64,
    needless: u64,
    requests: u64,
    restarts: u64,
    detection: Latencies,
    /// Prevention: cycles of allowed waits still closed at the end of the run (deadlocks).
    prevented_failures: u64,
    bound: Time,
    /// The first needless abort, judged at the end (prevention schemes abort by design, and
    /// the checker only knows which kind of algorithm runs once it sees `Queued`/`Restarted`).
    first_needless: Option<(Moment, String)>,
}

impl DeadlockChecker {
    /// A checker for `n` processes; a deadlock must be reported within `n` × 50 ms.
    pub fn new(n: usize) -> Self {
        DeadlockChecker {
            waits: vec![BTreeSet::new(); n],
            queued: BTreeMap::new(),
            transaction: vec![None; n],
            prevention: false,
            deadlocks: Vec::new(),
            real: 0,
            detected: 0,
            reports: 0,
            phantoms: 0,
            aborts: 0,
            gave_up: 0,
            needless: 0,
            requests: 0,
            restarts: 0,
            detection: Latencies::default(),
            prevented_failures: 0,
            bound: n.max(1) as Time * 50 * MILLISECOND,
            first_needless: None,
        }
    }

    /// A checker for a prevention scheme: judged by `no_deadlock` and `no_starvation` from the
    /// start, even if no process ever waits (a single node, say).
    pub fn for_prevention(n: usize) -> Self {
        DeadlockChecker { prevention: true, ..DeadlockChecker::new(n) }
    }

    /// The completeness bound: N hops of at most 50 ms.
    pub fn bound(&self) -> Time {
        self.bound
    }

    /// Nodes reachable from `from` in one or more steps of `edge`.
    fn reachable(&self, from: NodeId, edge: impl Fn(NodeId, NodeId) -> bool) -> Vec<bool> {
        let n = self.waits.len();
        let mut seen = vec![false; n];
        let mut stack: Vec<NodeId> =
            self.waits[from as usize].iter().copied().filter(|&h| edge(from, h)).collect();
        while let Some(x) = stack.pop() {
            if std::mem::replace(&mut seen[x as usize], true) {
                continue;
            }
            stack.extend(self.waits[x as usize].iter().copied().filter(|&h| edge(x, h)));
        }
        seen
    }

    fn on_cycle(&self, node: NodeId) -> bool {
        self.reachable(node, |_, _| true)[node as usize]
    }

    /// Members of `node`'s strongly connected component (itself included).
    fn component(&self, node: NodeId) -> Vec<bool> {
        let fwd = self.reachable(node, |_, _| true);
        (0..self.waits.len() as NodeId)
            .map(|x| x == node || (fwd[x as usize] && self.reachable(x, |_, _| true)[node as usize]))
            .collect()
    }

    fn close_resolved(&mut self) {
        for i in 0..self.deadlocks.len() {
            if self.deadlocks[i].open && !self.on_cycle(self.deadlocks[i].closer) {
                self.deadlocks[i].open = false;
            }
        }
        self.deadlocks.retain(|d| d.open);
    }

    fn check_bound(&mut self, w: &World, at: Moment, v: &mut Violations) {
        if self.prevention {
            return;
        }
        if let Some(d) =
            self.deadlocks.iter().find(|d| d.open && !d.reported && at.time > d.formed + self.bound)
        {
            let (closer, formed) = (d.closer, d.formed);
            v.record(Property::Completeness, at, || {
                format!(
                    "the cycle closed by id {} at {:.3} ms is still unreported after {:.3} ms",
                    w.uids[closer as usize],
                    formed as f64 / 1e6,
                    self.bound as f64 / 1e6
                )
            });
        }
    }

    fn withdraw(&mut self, node: NodeId) {
        self.waits[node as usize].clear();
        self.queued.retain(|&(i, _), _| i != node);
    }
}

impl Checker for DeadlockChecker {
    fn properties(&self) -> Vec<Property> {
        if self.prevention {
            vec![Property::NoDeadlock, Property::NoStarvation]
        } else {
            vec![Property::Soundness, Property::Completeness, Property::SingleVictim]
        }
    }

    fn on_request(&mut self, w: &World, node: NodeId, req: &Request, at: Moment, v: &mut Violations) {
        match req {
            Request::WaitFor { holders } => {
                if !self.waits[node as usize].is_empty() || holders.is_empty() {
                    return;
                }
                self.requests += 1;
                self.waits[node as usize] = holders.iter().copied().filter(|&h| h != node).collect();
                if self.on_cycle(node) {
                    self.real += 1;
                    self.deadlocks.push(Deadlock {
                        closer: node,
                        formed: at.time,
                        reported: false,
                        open: true,
                    });
                }
            }
            Request::StopWaiting { holder } => {
                self.waits[node as usize].remove(holder);
                self.queued.remove(&(node, *holder));
                self.close_resolved();
            }
            _ => {}
        }
        self.check_bound(w, at, v);
    }

    fn on_event(&mut self, w: &World, node: NodeId, event: &Event, at: Moment, v: &mut Violations) {
        match event {
            Event::DeadlockDetected { cycle } => {
                self.reports += 1;
                let real = !cycle.is_empty()
                    && (0..cycle.len()).all(|k| {
                        let (a, b) = (cycle[k], cycle[(k + 1) % cycle.len()]);
                        self.waits[a as usize].contains(&b)
                    });
                if !real {
                    self.phantoms += 1;
                    v.record(Property::Soundness, at, || {
                        let ids: Vec<String> = cycle.iter().map(|&n| w.uids[n as usize].to_string()).collect();
                        format!(
                            "id {} reported the cycle {} but it is not in the wait-for graph (phantom deadlock)",
                            w.uids[node as usize],
                            ids.join(" → ")
                        )
                    });
                } else {
                    for i in 0..self.deadlocks.len() {
                        let d = &self.deadlocks[i];
                        if d.open && !d.reported {
                            let comp = self.component(d.closer);
                            if cycle.iter().all(|&x| comp[x as usize]) {
                                self.deadlocks[i].reported = true;
                                self.detected += 1;
                                self.detection.record(at.time - self.deadlocks[i].formed);
                            }
                        }
                    }
                }
            }
            Event::Aborted => {
                self.aborts += 1;
                if !self.on_cycle(node) {
                    self.needless += 1;
                    self.first_needless.get_or_insert_with(|| {
                        (
                            at,
                            format!(
                                "id {} aborted but is on no cycle of the wait-for graph",
                                w.uids[node as usize]
                            ),
                        )
                    });
                }
                self.withdraw(node);
                self.close_resolved();
            }
            Event::GaveUp => {
                // A timeout, not a detector's choice: the waits go, nobody is judged a victim.
                self.gave_up += 1;
                self.withdraw(node);
                self.close_resolved();
            }
            Event::Restarted => {
                self.prevention = true;
                self.restarts += 1;
            }
            Event::Requested { ts } => self.transaction[node as usize] = Some(*ts),
            Event::Queued { node: requester, transaction } => {
                self.prevention = true;
                let (i, j) = (*requester, node);
                if !self.waits[i as usize].contains(&j) {
                    return; // a stale request: the edge was granted or withdrawn already
                }
                if transaction.is_some_and(|t| self.transaction[i as usize] != Some(t)) {
                    return; // a stale request of an earlier transaction that waited here too
                }
                self.queued.insert((i, j), at);
                // A cycle this wait closes is judged at the end of the run: the scheme's next
                // request along it breaks it, unless nothing is left to happen.
            }
            _ => {}
        }
        self.check_bound(w, at, v);
    }

    fn on_crash(&mut self, _w: &World, node: NodeId, _at: Moment, _v: &mut Violations) {
        self.withdraw(node);
        self.close_resolved();
    }

    fn finish(&mut self, w: &World, at: Moment, v: &mut Violations) {
        if self.prevention {
            // A cycle of allowed waits still closed now: its latest edge closed it.
            let queued = &self.queued;
            let closer = queued
                .iter()
                .filter(|&(&(i, j), _)| self.reachable(j, |a, b| queued.contains_key(&(a, b)))[i as usize])
                .max_by_key(|&(_, m)| (m.time, m.step))
                .map(|(&edge, &m)| (edge, m));
            if let Some(((i, j), formed)) = closer {
                self.prevented_failures += 1;
                let detail = move || {
                    format!(
                        "id {} waits for id {}, which waits for it through the wait-for graph: the cycle closed at {:.3} ms is still closed at the end",
                        w.uids[i as usize],
                        w.uids[j as usize],
                        formed.time as f64 / 1e6
                    )
                };
                v.pending(Property::NoDeadlock, at, formed.time, detail);
            }
            if let Some(n) =
                (0..self.waits.len()).find(|&n| w.alive(n as NodeId) && !self.waits[n].is_empty())
            {
                v.pending(Property::NoStarvation, at, at.time, || {
                    format!("id {} still waits at the end of the run", w.uids[n])
                });
            }
        } else {
            if let Some((stamp, detail)) = self.first_needless.take() {
                v.record(Property::SingleVictim, stamp, || detail);
            }
            // A cycle still unreported is a violation once its bound has passed, or when the
            // run is over (nothing left could report it); before its bound, a cut-off run leaves
            // completeness undecided.
            let bound = self.bound;
            if let Some(d) = self.deadlocks.iter().find(|d| d.open && !d.reported) {
                let (closer, formed) = (d.closer, d.formed);
                let within = at.time <= formed + bound;
                let detail = move || {
                    format!(
                        "the cycle closed by id {} at {:.3} ms was {} (bound {:.3} ms)",
                        w.uids[closer as usize],
                        formed as f64 / 1e6,
                        if within { "not reported yet" } else { "never reported" },
                        bound as f64 / 1e6
                    )
                };
                if within {
                    v.pending(Property::Completeness, at, formed, detail);
                } else {
                    v.record(Property::Completeness, at, detail);
                }
            }
        }
    }

    fn report(&self, _w: &World) -> FamilyReport {
        let (outcome, operations) = if self.prevention {
            let o = PreventionOutcome {
                aborts: self.aborts,
                deadlocks_real: self.prevented_failures,
                deadlocks_reported: 0,
                requests: self.requests,
                restarts: self.restarts,
            };
            (Outcome::DeadlockPrevention(o), self.requests)
        } else {
            let o = DetectionOutcome {
                deadlocks_real: self.real,
                deadlocks_reported: self.detected + self.phantoms,
                gave_up: self.gave_up,
                needless_aborts: self.needless,
                phantom_reports: self.phantoms,
                reports: self.reports,
                requests: self.requests,
                victims: self.aborts,
            };
            // One operation per detection: every report (each costs its probe computation).
            (Outcome::DeadlockDetection(o), self.reports)
        };
        let mut r = FamilyReport { outcome, operations, unfinished: 0, latencies: BTreeMap::new() };
        if let Some(p) = self.detection.summary() {
            r.latencies.insert("detection".into(), p);
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkers::NodeStatus;
    use ringleader_algorithms::LeaderRule;

    /// A two-process cycle closed at 1 ms and never reported, judged at `end` after a cut-off
    /// (or after the run was over).
    fn judge(end: Time, cut_off: bool) -> Violations {
        let uids = [1, 2];
        let status = [NodeStatus::Up; 2];
        let w = World { uids: &uids, status: &status, rule: LeaderRule::Any };
        let mut c = DeadlockChecker::new(2);
        let mut v = Violations::default();
        let at = Moment { time: MILLISECOND, step: 1 };
        c.on_request(&w, 0, &Request::WaitFor { holders: vec![1] }, at, &mut v);
        c.on_request(&w, 1, &Request::WaitFor { holders: vec![0] }, at, &mut v);
        v.set_cut_off(cut_off);
        c.finish(&w, Moment { time: end, step: 2 }, &mut v);
        v
    }

    /// Two prevention transactions let each other wait (a stale judgement), then `clear` says
    /// whether one of them aborts before the end; judged at `end`, cut off or not.
    fn prevention(clear: bool, cut_off: bool) -> Violations {
        let uids = [1, 2];
        let status = [NodeStatus::Up; 2];
        let w = World { uids: &uids, status: &status, rule: LeaderRule::Any };
        let mut c = DeadlockChecker::for_prevention(2);
        let mut v = Violations::default();
        let at = |ms: Time| Moment { time: ms * MILLISECOND, step: ms };
        for (i, j, ts) in [(0, 1, 10), (1, 0, 20)] {
            c.on_request(&w, i, &Request::WaitFor { holders: vec![j] }, at(1), &mut v);
            c.on_event(&w, i, &Event::Requested { ts }, at(1), &mut v);
        }
        c.on_event(&w, 1, &Event::Queued { node: 0, transaction: Some(10) }, at(2), &mut v);
        c.on_event(&w, 0, &Event::Queued { node: 1, transaction: Some(20) }, at(3), &mut v);
        assert!(v.is_empty(), "a cycle is not judged when it closes");
        if clear {
            c.on_event(&w, 1, &Event::Aborted, at(4), &mut v);
        }
        v.set_cut_off(cut_off);
        c.finish(&w, at(9), &mut v);
        v
    }

    /// A two-process cycle (1 ms), its victim id 2 (2 ms), then `second` emitted by id 1 off
    /// the broken cycle (3 ms); judged at the end of a finished run.
    fn after_one_victim(second: Event) -> (Violations, DetectionOutcome) {
        let uids = [1, 2];
        let status = [NodeStatus::Up; 2];
        let w = World { uids: &uids, status: &status, rule: LeaderRule::Any };
        let mut c = DeadlockChecker::new(2);
        let mut v = Violations::default();
        let at = |ms: Time| Moment { time: ms * MILLISECOND, step: ms };
        c.on_request(&w, 0, &Request::WaitFor { holders: vec![1] }, at(1), &mut v);
        c.on_request(&w, 1, &Request::WaitFor { holders: vec![0] }, at(1), &mut v);
        c.on_event(&w, 1, &Event::DeadlockDetected { cycle: vec![1, 0] }, at(2), &mut v);
        c.on_event(&w, 1, &Event::Aborted, at(2), &mut v);
        c.on_event(&w, 0, &second, at(3), &mut v);
        c.finish(&w, at(9), &mut v);
        let Outcome::DeadlockDetection(o) = c.report(&w).outcome else { panic!("detection") };
        (v, o)
    }

    #[test]
    fn a_second_victim_of_a_broken_cycle_violates_single_victim_but_giving_up_does_not() {
        let (v, o) = after_one_victim(Event::Aborted);
        assert!(v.has(Property::SingleVictim), "a detector's second victim is needless");
        assert!(v.list()[0].detail.contains("id 1 aborted but is on no cycle"), "{:?}", v.list());
        assert_eq!((o.victims, o.needless_aborts, o.gave_up), (2, 1, 0));
        let (v, o) = after_one_victim(Event::GaveUp);
        assert!(v.is_empty(), "a timeout is no detector's victim: {:?}", v.list());
        assert_eq!((o.victims, o.needless_aborts, o.gave_up), (1, 0, 1));
    }

    #[test]
    fn a_prevention_cycle_is_a_deadlock_only_if_it_outlives_the_run() {
        let v = prevention(true, false);
        assert!(!v.has(Property::NoDeadlock), "a transient cycle, broken by an abort");
        let v = prevention(false, false);
        assert!(v.has(Property::NoDeadlock), "still closed when nothing is left to happen");
        assert!(v.list()[0].detail.contains("closed at 3.000 ms"), "{:?}", v.list());
        let v = prevention(false, true);
        assert!(!v.has(Property::NoDeadlock));
        assert_eq!(v.undecided()[0].property, Property::NoDeadlock, "cut off: it might still clear");
    }

    #[test]
    fn an_unreported_cycle_is_undecided_only_before_its_bound_in_a_cut_off_run() {
        // Bound: 2 × 50 ms.
        let v = judge(50 * MILLISECOND, true);
        assert!(v.is_empty());
        assert_eq!(v.undecided()[0].property, Property::Completeness);
        assert_eq!(v.undecided()[0].since, 1.0);
        let v = judge(102 * MILLISECOND, true);
        assert!(v.has(Property::Completeness), "the bound passed");
        assert!(v.undecided().is_empty());
        let v = judge(50 * MILLISECOND, false);
        assert!(v.has(Property::Completeness), "the run is over: nothing will report it");
    }
}
