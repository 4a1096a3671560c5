//! Mutual-exclusion properties: safety, liveness, no starvation, FIFO, fencing.
//!
//! - **safety** (judged after every step): never two live processes in the critical section;
//! - **fencing**: every entry carries a fencing token larger than the previous entry's;
//! - **fifo** (only for algorithms that report `Queued`/`Granted`): a coordinator or arbiter
//!   grants in the order it queued requests;
//! - **timestamp_order** (only for algorithms that report `Requested { ts }`, i.e. promise
//!   Lamport order): when a process enters, no live process has an outstanding request with a
//!   smaller (timestamp, uid);
//! - **liveness** (end of run): while requests wait, somebody entered after the oldest one
//!   was made — otherwise the system is deadlocked;
//! - **no_starvation** (end of run): every request of a live process was served.
//!
//! Both are eventual: they are violated only when the run is over (nothing left to happen) with
//! the request still waiting, and *undecided* when the run was cut off at `--duration` first.
//!
//! The checker also measures response time (request → entry), synchronization delay (exit of
//! one holder → entry of the next, when someone was waiting) and bounded waiting (entries by
//! others between a request and its grant), and counts the fault handling it sees: tokens
//! regenerated, crash suspicions, coordinators that announced themselves.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use ringleader_core::{Event, NodeId, Request, Time, Uid};

use super::{Checker, FamilyReport, Latencies, Moment, Property, Violations, World};
use crate::outcome::{MutexOutcome, Outcome};

/// Safety, over the set of live holders: a process other than `node` holds the critical section
/// too. The simulator asks it at every entry, the model checker in every state.
pub fn other_holder(holders: &BTreeSet<NodeId>, node: NodeId) -> Option<NodeId> {
    holders.iter().copied().find(|&h| h != node)
}

/// What a safety violation says: `node` is in the critical section while `other` holds it.
pub fn safety_detail(uids: &[Uid], node: NodeId, other: NodeId) -> String {
    format!(
        "id {} entered the critical section while id {} holds it",
        uids[node as usize], uids[other as usize]
    )
}

/// Fencing: an entry with token `fencing` after an entry with `previous` breaks the order when
/// it is not above it; returns the previous token then.
pub fn fencing_regression(previous: Option<u64>, fencing: u64) -> Option<u64> {
    previous.filter(|&prev| fencing <= prev)
}

/// What a fencing violation says.
pub fn fencing_detail(uids: &[Uid], node: NodeId, fencing: u64, previous: u64) -> String {
    format!(
        "id {} entered with fencing token {fencing}, not above the previous {previous}",
        uids[node as usize]
    )
}

/// Tracks the holders and the waiting requests.
#[derive(Clone, Debug, Default)]
pub struct MutexChecker {
    holders: BTreeSet<NodeId>,
    max_holders: usize,
    /// node → (request time, entries so far at request time)
    pending: BTreeMap<NodeId, (Time, u64)>,
    entries: u64,
    last_entry: Time,
    last_fencing: Option<u64>,
    exit_with_waiters: Option<Time>,
    /// arbiter → requesters in the order it queued them
    queues: BTreeMap<NodeId, VecDeque<NodeId>>,
    saw_queue: bool,
    /// node → (timestamp, uid) of its outstanding request, from `Requested`
    stamps: BTreeMap<NodeId, (u64, u64)>,
    saw_stamp: bool,
    response: Latencies,
    sync_delay: Latencies,
    max_overtaken: u64,
    /// Tokens regenerated, crash suspicions, coordinators that announced themselves.
    regenerations: u64,
    suspicions: u64,
    takeovers: u64,
}

impl MutexChecker {
    /// A checker for `n` nodes.
    pub fn new(_n: usize) -> Self {
        MutexChecker::default()
    }
}

impl Checker for MutexChecker {
    fn properties(&self) -> Vec<Property> {
        let mut p = vec![Property::Safety, Property::Liveness, Property::NoStarvation, Property::Fencing];
        if self.saw_queue {
            p.push(Property::Fifo);
        }
        if self.saw_stamp {
            p.push(Property::TimestampOrder);
        }
        p
    }

    fn on_request(&mut self, _w: &World, node: NodeId, req: &Request, at: Moment, _v: &mut Violations) {
        if *req == Request::Acquire && !self.holders.contains(&node) {
            self.pending.entry(node).or_insert((at.time, self.entries));
        }
    }

    fn on_event(&mut self, w: &World, node: NodeId, event: &Event, at: Moment, v: &mut Violations) {
        match *event {
            Event::Entered { fencing } => {
                if let Some(prev) = fencing_regression(self.last_fencing, fencing) {
                    v.record(Property::Fencing, at, || fencing_detail(w.uids, node, fencing, prev));
                }
                self.last_fencing = Some(fencing);
                if let Some(mine) = self.stamps.remove(&node)
                    && let Some((_, &(ts, uid))) =
                        self.stamps.iter().filter(|&(_, s)| *s < mine).min_by_key(|&(_, s)| *s)
                {
                    v.record(Property::TimestampOrder, at, || {
                        format!(
                            "id {} entered with request (ts, id) = ({}, {}) while id {uid} waits with the earlier ({ts}, {uid})",
                            mine.1, mine.0, mine.1
                        )
                    });
                }
                self.holders.insert(node);
                if let Some(other) = other_holder(&self.holders, node) {
                    v.record(Property::Safety, at, || safety_detail(w.uids, node, other));
                }
                self.max_holders = self.max_holders.max(self.holders.len());
                self.entries += 1;
                self.last_entry = at.time;
                if let Some((since, entries_then)) = self.pending.remove(&node) {
                    self.response.record(at.time - since);
                    self.max_overtaken = self.max_overtaken.max(self.entries - 1 - entries_then);
                }
                if let Some(t) = self.exit_with_waiters.take() {
                    self.sync_delay.record(at.time - t);
                }
            }
            Event::Exited => {
                if self.holders.remove(&node) && self.holders.len() < 2 {
                    v.close(Property::Safety, at);
                }
                if !self.pending.is_empty() && self.holders.is_empty() {
                    self.exit_with_waiters = Some(at.time);
                }
            }
            Event::Requested { ts } => {
                self.saw_stamp = true;
                self.stamps.insert(node, (ts, w.uids[node as usize]));
            }
            Event::Queued { node: who, .. } => {
                self.saw_queue = true;
                self.queues.entry(node).or_default().push_back(who);
            }
            Event::Granted { node: who } => {
                let q = self.queues.entry(node).or_default();
                match q.iter().position(|&x| x == who) {
                    Some(0) => {
                        q.pop_front();
                    }
                    Some(i) => {
                        let first = q[0];
                        q.remove(i);
                        v.record(Property::Fifo, at, || {
                            format!(
                                "id {} granted id {} before id {}, which queued earlier",
                                w.uids[node as usize], w.uids[who as usize], w.uids[first as usize]
                            )
                        });
                    }
                    None => {}
                }
            }
            Event::TokenRegenerated => self.regenerations += 1,
            Event::Suspect { .. } => self.suspicions += 1,
            Event::Leader { leader, .. } if leader == w.uids[node as usize] => self.takeovers += 1,
            _ => {}
        }
    }

    fn on_crash(&mut self, _w: &World, node: NodeId, at: Moment, v: &mut Violations) {
        if self.holders.remove(&node) && self.holders.len() < 2 {
            v.close(Property::Safety, at);
        }
        self.pending.remove(&node);
        self.queues.remove(&node);
        self.stamps.remove(&node);
    }

    fn finish(&mut self, w: &World, at: Moment, v: &mut Violations) {
        let waiting: Vec<(NodeId, Time)> =
            self.pending.iter().filter(|&(&n, _)| w.alive(n)).map(|(&n, &(t, _))| (n, t)).collect();
        if let Some(&(oldest_node, oldest)) = waiting.iter().min_by_key(|&&(_, t)| t) {
            let cut_off = v.cut_off();
            if self.entries == 0 || self.last_entry < oldest {
                v.pending(Property::Liveness, at, oldest, || {
                    format!(
                        "{} request(s) wait and nobody entered since id {} asked at {:.3} ms{}",
                        waiting.len(),
                        w.uids[oldest_node as usize],
                        oldest as f64 / 1e6,
                        if cut_off { "" } else { ", with nothing left to happen (deadlock)" }
                    )
                });
            }
            v.pending(Property::NoStarvation, at, oldest, || {
                format!(
                    "id {} asked at {:.3} ms and {}",
                    w.uids[oldest_node as usize],
                    oldest as f64 / 1e6,
                    if cut_off { "had not entered yet" } else { "never entered" }
                )
            });
        }
    }

    fn report(&self, _w: &World) -> FamilyReport {
        let when_any = |count: u64| (count > 0).then_some(count);
        let outcome = Outcome::Mutex(MutexOutcome {
            coordinator_takeovers: when_any(self.takeovers),
            entries: self.entries,
            max_concurrent_holders: self.max_holders as u64,
            max_overtaken: self.max_overtaken,
            suspicions: when_any(self.suspicions),
            tokens_regenerated: when_any(self.regenerations),
        });
        let mut r = FamilyReport {
            outcome,
            operations: self.entries,
            unfinished: self.pending.len() as u64,
            latencies: BTreeMap::new(),
        };
        if let Some(p) = self.response.summary() {
            r.latencies.insert("response_time".into(), p);
        }
        if let Some(p) = self.sync_delay.summary() {
            r.latencies.insert("sync_delay".into(), p);
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safety_and_fencing_predicates() {
        let one: BTreeSet<NodeId> = [2].into();
        let two: BTreeSet<NodeId> = [1, 2].into();
        assert_eq!(other_holder(&one, 2), None);
        assert_eq!(other_holder(&two, 2), Some(1));
        assert_eq!(other_holder(&two, 1), Some(2));
        assert_eq!(safety_detail(&[1, 2, 3], 2, 1), "id 3 entered the critical section while id 2 holds it");
        assert_eq!(fencing_regression(None, 1), None);
        assert_eq!(fencing_regression(Some(1), 2), None);
        assert_eq!(fencing_regression(Some(2), 2), Some(2));
        assert_eq!(fencing_regression(Some(3), 1), Some(3));
    }
}
