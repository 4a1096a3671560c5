//! What the application asks of the nodes: mutual-exclusion request patterns.
//!
//! - `sequential`: one request at a time with no overlap — the next request is made once the
//!   previous holder has left *and* no message is in flight, so every entry's messages are
//!   counted alone. Requesters take turns starting at node 1 (node 0 is the initial
//!   coordinator, token holder or tree root).
//! - `saturated`: every node asks at time 0 and asks again as soon as it leaves.
//! - `poisson`: each node asks at exponential intervals of mean `1/rate`, holds the section for
//!   an exponential time of mean `hold`.
//!
//! Every pattern stops asking once `entries` requests were made, so runs end.
//!
//! A request that reaches a crashed node is lost, and the workload hears of it: the sequential
//! pattern then asks the next live requester (crashed requesters are skipped), and if the
//! current requester crashes while it waits, the next request goes to the next live one. The
//! run reports how many of the `entries` requests were issued to a live node
//! ([`Workload::tally`]), so a run that could not do what was asked says so.
//!
//! `messages`, the clock workload, is [`super::clock`].

use rand_distr::{Distribution, Exp};
use rand_xoshiro::Xoshiro256PlusPlus;
use ringleader_core::{Event, NodeId, Request, Time};
use ringleader_judge::checkers::NodeStatus;

use super::{Cx, Tally, Workload};
use crate::scenario::WorkloadKind;

/// A request to deliver at a time.
type Scheduled = (Time, NodeId, Request);

/// A mutual-exclusion request pattern during a run.
#[derive(Debug)]
pub struct MutexWorkload {
    kind: WorkloadKind,
    entries: u64,
    hold: Time,
    rate: f64,
    issued: u64,
    requesters: Vec<NodeId>,
    next_requester: usize,
    awaiting_quiet: bool,
    /// The sequential pattern's outstanding requester.
    outstanding: Option<NodeId>,
    /// Requests that reached a crashed node.
    lost: u64,
}

impl MutexWorkload {
    /// A workload of `kind` on `n` nodes. `requesters` (positions) limits who asks; by default
    /// every node asks, except under `sequential` where node 0 does not (unless it is alone).
    pub fn new(
        kind: WorkloadKind,
        n: u32,
        requesters: Option<Vec<NodeId>>,
        entries: u64,
        hold: Time,
        rate: f64,
    ) -> MutexWorkload {
        let requesters = requesters.unwrap_or_else(|| match kind {
            WorkloadKind::Sequential if n > 1 => (1..n).collect(),
            _ => (0..n).collect(),
        });
        MutexWorkload {
            kind,
            entries,
            hold,
            rate,
            issued: 0,
            requesters,
            next_requester: 0,
            awaiting_quiet: false,
            outstanding: None,
            lost: 0,
        }
    }

    fn exp(rng: &mut Xoshiro256PlusPlus, mean: f64) -> Time {
        if mean <= 0.0 {
            return 0;
        }
        Exp::new(1.0 / mean).map(|d| d.sample(rng).round() as Time).unwrap_or(0)
    }

    fn next_sequential(&mut self, now: Time, status: &[NodeStatus]) -> Option<Scheduled> {
        if self.issued >= self.entries {
            return None;
        }
        for _ in 0..self.requesters.len() {
            let node = self.requesters[self.next_requester];
            self.next_requester = (self.next_requester + 1) % self.requesters.len();
            if status[node as usize] != NodeStatus::Crashed {
                self.issued += 1;
                self.outstanding = Some(node);
                return Some((now, node, Request::Acquire));
            }
        }
        None
    }

    /// The requests made at the start of the run.
    fn initial(&mut self, rng: &mut Xoshiro256PlusPlus, status: &[NodeStatus]) -> Vec<Scheduled> {
        match self.kind {
            WorkloadKind::Sequential => self.next_sequential(0, status).into_iter().collect(),
            WorkloadKind::Saturated => {
                let mut v = Vec::new();
                for &node in &self.requesters {
                    if self.issued < self.entries {
                        self.issued += 1;
                        v.push((0, node, Request::Acquire));
                    }
                }
                v
            }
            WorkloadKind::Poisson => {
                let mean = 1e9 / self.rate;
                let mut v = Vec::new();
                for &node in &self.requesters {
                    if self.issued < self.entries {
                        self.issued += 1;
                        v.push((Self::exp(rng, mean), node, Request::Acquire));
                    }
                }
                v
            }
            // The clock workload is not a request pattern ([`super::clock`]).
            WorkloadKind::Messages => Vec::new(),
        }
    }

    /// `node` entered the critical section at `now`: when it will release.
    fn on_entered(&mut self, node: NodeId, now: Time, rng: &mut Xoshiro256PlusPlus) -> Scheduled {
        let hold = match self.kind {
            WorkloadKind::Poisson => Self::exp(rng, self.hold as f64),
            _ => self.hold,
        };
        (now + hold, node, Request::Release)
    }

    /// `node` left the critical section at `now`: its next request, if any.
    fn on_exited(&mut self, node: NodeId, now: Time, rng: &mut Xoshiro256PlusPlus) -> Option<Scheduled> {
        match self.kind {
            WorkloadKind::Sequential => {
                self.awaiting_quiet = true;
                self.outstanding = None;
                None
            }
            WorkloadKind::Saturated if self.issued < self.entries => {
                self.issued += 1;
                Some((now, node, Request::Acquire))
            }
            WorkloadKind::Poisson if self.issued < self.entries => {
                self.issued += 1;
                Some((now + Self::exp(rng, 1e9 / self.rate), node, Request::Acquire))
            }
            _ => None,
        }
    }
}

impl Workload for MutexWorkload {
    fn start(&mut self, cx: &mut Cx) {
        for (at, node, request) in self.initial(cx.rng, cx.status) {
            cx.ask(at, node, request);
        }
    }

    fn on_event(&mut self, node: NodeId, event: &Event, cx: &mut Cx) {
        match event {
            Event::Entered { .. } => {
                let (at, node, request) = self.on_entered(node, cx.now, cx.rng);
                cx.ask(at, node, request);
            }
            Event::Exited => {
                if let Some((at, node, request)) = self.on_exited(node, cx.now, cx.rng) {
                    cx.ask(at, node, request);
                }
            }
            _ => {}
        }
    }

    /// A request to `node` reached it crashed and was lost: it does not count as issued, and
    /// the sequential pattern moves on to the next live requester.
    fn on_lost(&mut self, node: NodeId, request: &Request) {
        if *request != Request::Acquire {
            return;
        }
        self.issued = self.issued.saturating_sub(1);
        self.lost += 1;
        if self.kind == WorkloadKind::Sequential && self.outstanding == Some(node) {
            self.outstanding = None;
            self.awaiting_quiet = true;
        }
    }

    /// `node` crashed: if the sequential pattern's request was its, nobody will serve it (the
    /// checker forgets a crashed process's request), so the pattern moves on.
    fn on_crash(&mut self, node: NodeId) {
        if self.kind == WorkloadKind::Sequential && self.outstanding == Some(node) {
            self.outstanding = None;
            self.awaiting_quiet = true;
        }
    }

    /// The sequential pattern asks again once the network is quiet.
    fn after_step(&mut self, in_flight: u64, cx: &mut Cx) {
        if self.awaiting_quiet && in_flight == 0 {
            self.awaiting_quiet = false;
            if let Some((at, node, request)) = self.next_sequential(cx.now, cx.status) {
                cx.ask(at, node, request);
            }
        }
    }

    /// True while the sequential pattern waits for the network to go quiet.
    fn is_waiting(&self) -> bool {
        self.awaiting_quiet
    }

    fn tally(&self) -> Option<Tally<'_>> {
        Some(Tally {
            kind: self.kind.name(),
            asked: self.entries,
            issued: self.issued,
            lost: self.lost,
            requesters: &self.requesters,
        })
    }
}
