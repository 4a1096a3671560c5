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
//! ([`Workload::issued`]), so a run that could not do what was asked says so.
//!
//! `messages`, the clock workload, is a fixed seeded schedule drawn in [`crate::workload_clock`].

use rand_distr::{Distribution, Exp};
use rand_xoshiro::Xoshiro256PlusPlus;
use ringleader_core::{NodeId, Request, Time};
use ringleader_judge::checkers::Status;

use crate::scenario::WorkloadKind;

/// A request to deliver at a time.
pub type Scheduled = (Time, NodeId, Request);

/// The workload's state during a run.
#[derive(Debug)]
pub struct Workload {
    kind: WorkloadKind,
    entries: u64,
    hold: Time,
    rate: f64,
    issued: u64,
    requesters: Vec<NodeId>,
    next_requester: usize,
    awaiting_quiet: bool,
    fanout: u32,
    n: u32,
    /// The sequential pattern's outstanding requester.
    outstanding: Option<NodeId>,
    /// Requests that reached a crashed node.
    lost: u64,
}

impl Workload {
    /// A workload of `kind` on `n` nodes. `requesters` (positions) limits who asks; by default
    /// every node asks, except under `sequential` where node 0 does not (unless it is alone).
    pub fn new(
        kind: WorkloadKind,
        n: u32,
        requesters: Option<Vec<NodeId>>,
        entries: u64,
        hold: Time,
        rate: f64,
    ) -> Workload {
        let requesters = requesters.unwrap_or_else(|| match kind {
            WorkloadKind::Sequential if n > 1 => (1..n).collect(),
            _ => (0..n).collect(),
        });
        Workload {
            kind,
            entries,
            hold,
            rate,
            issued: 0,
            requesters,
            next_requester: 0,
            awaiting_quiet: false,
            fanout: 1,
            n,
            outstanding: None,
            lost: 0,
        }
    }

    /// Sets the destinations of each send event (`messages`).
    pub fn with_fanout(mut self, fanout: u32) -> Workload {
        self.fanout = fanout;
        self
    }

    fn exp(rng: &mut Xoshiro256PlusPlus, mean: f64) -> Time {
        if mean <= 0.0 {
            return 0;
        }
        Exp::new(1.0 / mean).map(|d| d.sample(rng).round() as Time).unwrap_or(0)
    }

    fn next_sequential(&mut self, now: Time, status: &[Status]) -> Option<Scheduled> {
        if self.issued >= self.entries {
            return None;
        }
        for _ in 0..self.requesters.len() {
            let node = self.requesters[self.next_requester];
            self.next_requester = (self.next_requester + 1) % self.requesters.len();
            if status[node as usize] != Status::Crashed {
                self.issued += 1;
                self.outstanding = Some(node);
                return Some((now, node, Request::Acquire));
            }
        }
        None
    }

    /// The requests made at the start of the run.
    pub fn initial(&mut self, rng: &mut Xoshiro256PlusPlus, status: &[Status]) -> Vec<Scheduled> {
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
            WorkloadKind::Messages => {
                let (n, fanout) = (self.n, self.fanout);
                crate::workload_clock::schedule(&self.requesters, n, self.entries, self.rate, fanout, rng)
            }
        }
    }

    /// `node` entered the critical section at `now`: when it will release.
    pub fn on_entered(&mut self, node: NodeId, now: Time, rng: &mut Xoshiro256PlusPlus) -> Scheduled {
        let hold = match self.kind {
            WorkloadKind::Poisson => Self::exp(rng, self.hold as f64),
            _ => self.hold,
        };
        (now + hold, node, Request::Release)
    }

    /// `node` left the critical section at `now`: its next request, if any.
    pub fn on_exited(&mut self, node: NodeId, now: Time, rng: &mut Xoshiro256PlusPlus) -> Option<Scheduled> {
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

    /// Called after every step: the sequential pattern asks again once the network is quiet.
    pub fn after_step(&mut self, in_flight: u64, now: Time, status: &[Status]) -> Option<Scheduled> {
        if self.awaiting_quiet && in_flight == 0 {
            self.awaiting_quiet = false;
            return self.next_sequential(now, status);
        }
        None
    }

    /// A request to `node` reached it crashed and was lost: it does not count as issued, and
    /// the sequential pattern moves on to the next live requester.
    pub fn on_lost(&mut self, node: NodeId) {
        self.issued = self.issued.saturating_sub(1);
        self.lost += 1;
        if self.kind == WorkloadKind::Sequential && self.outstanding == Some(node) {
            self.outstanding = None;
            self.awaiting_quiet = true;
        }
    }

    /// `node` crashed: if the sequential pattern's request was its, nobody will serve it (the
    /// checker forgets a crashed process's request), so the pattern moves on.
    pub fn on_crash(&mut self, node: NodeId) {
        if self.kind == WorkloadKind::Sequential && self.outstanding == Some(node) {
            self.outstanding = None;
            self.awaiting_quiet = true;
        }
    }

    /// The requesters (positions).
    pub fn requesters(&self) -> &[NodeId] {
        &self.requesters
    }

    /// Requests the run was asked for (`--entries`).
    pub fn asked(&self) -> u64 {
        self.entries
    }

    /// Requests issued to a live node so far.
    pub fn issued(&self) -> u64 {
        self.issued
    }

    /// Requests that reached a crashed node and were lost.
    pub fn lost(&self) -> u64 {
        self.lost
    }

    /// The pattern, as `--workload` names it.
    pub fn kind(&self) -> WorkloadKind {
        self.kind
    }

    /// True while the sequential pattern waits for the network to go quiet.
    pub fn is_waiting(&self) -> bool {
        self.awaiting_quiet
    }
}
