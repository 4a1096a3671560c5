//! What the application asks of deadlock algorithms: processes that hold and request resources.
//!
//! Every process runs transactions one after the other. A transaction holds the process's
//! resource (the process itself, in wait-for-graph terms) from its start to its commit, and in
//! the middle asks for resources other transactions hold — *hold and wait*, the second of the
//! four necessary conditions (Coffman, Elphick & Shoshani 1971):
//!
//! ```text
//!   thinking ──begin: WaitFor{[]} (a transaction that needs nothing yet)──▶ holding
//!   holding ──(after a hold time) WaitFor{holders}──▶ blocked
//!   blocked ──each holder commits: StopWaiting{holder}──▶ … ──last one──▶ running
//!   running ──(after a hold time) commit: grants every waiter (StopWaiting to each)──▶ thinking
//!   in a transaction ──emits Aborted (victim, died, wounded) or GaveUp──▶ thinking: grants every
//!            waiter, withdraws its waits, and later restarts: WaitFor{[]} then the same request
//! ```
//!
//! A thinking (or finished) process holds nothing: a request never waits for it. The empty
//! `WaitFor{[]}` marks a transaction's start, which the timestamp schemes need (a restart is a
//! start after an `Aborted`).
//!
//! The workload keeps the global wait-for graph (the application's lock table): an edge
//! P_i → P_j from `WaitFor` until `StopWaiting{j}` or P_i's abort. Only a running transaction
//! commits and grants, so a cycle of blocked processes never dissolves by itself: it is a
//! deadlock.
//!
//! How often cycles form is a parameter: each request asks for 1..=`max_holders` holders; with
//! probability `cycles` one of them is chosen among the processes that already (transitively)
//! wait for the requester, closing a cycle; the others, and all of them otherwise, are chosen
//! among busy processes that do not, so the request adds no cycle (unless every other process
//! is busy and waits for the requester: then any request closes one). A request that finds
//! nobody busy to wait for asks a free process, which grants at once. The run begins no new
//! transaction after `entries` in total (restarts do not count), so runs end.
//!
//! A paused process's application is paused with it: its timers (begin, ask, commit) wait for
//! it to resume, so the lock table never runs transactions in its name that it has not seen.
//!
//! Timing guarantee the detection algorithms rely on: a process that commits (or aborts) stays
//! thinking for at least 2·max_delay + 1 ns before it can block again, so a message sent along an
//! edge before it was granted reaches a process that is not blocked (Chandy-Misra-Haas' "P_k
//! still holds what P_j waits for", without the holder tracking its waiters).

use rand::RngExt;
use rand_distr::{Distribution, Exp};
use rand_xoshiro::Xoshiro256PlusPlus;
use ringleader_core::{Event, NodeId, Request, Time};
use ringleader_judge::checkers::NodeStatus;

use super::{Cx, Tick, Workload};

/// What a workload timer does (its [`Tick::kind`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum TickKind {
    /// A thinking process begins a transaction (or restarts an aborted one).
    Begin,
    /// A holding process makes its request.
    Ask,
    /// A running transaction commits: it grants every waiter.
    Commit,
}

impl TickKind {
    fn of(tick: Tick) -> Option<TickKind> {
        [TickKind::Begin, TickKind::Ask, TickKind::Commit].into_iter().find(|&k| k as u8 == tick.kind)
    }
}

/// Where a process is, as the lock table sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Between transactions: holds nothing.
    Thinking,
    /// In a transaction, holding its resource, request not made yet.
    Holding,
    /// In a transaction, waiting.
    Blocked,
    /// In a transaction, holding everything it needs, about to commit.
    Running,
    /// Out of transactions: holds nothing, forever.
    Done,
}

/// The deadlock workload's state during a run.
#[derive(Debug)]
pub struct DeadlockWorkload {
    budget: u64,
    hold: Time,
    gap: Time,
    cycles: f64,
    max_holders: u32,
    waits: Vec<Vec<NodeId>>,
    phase: Vec<Phase>,
    /// The request to make again after an abort.
    restart: Vec<Option<Vec<NodeId>>>,
    epoch: Vec<u64>,
    requests: u64,
}

impl DeadlockWorkload {
    /// A workload on `n` processes: `entries` transactions in total, mean hold `hold`, up to
    /// `max_holders` holders per request, probability `cycles` of closing a cycle; `max_delay` is the
    /// network's delay bound.
    pub fn new(n: u32, entries: u64, hold: Time, max_holders: u32, cycles: f64, max_delay: Time) -> Self {
        let n = n as usize;
        DeadlockWorkload {
            budget: entries,
            hold,
            gap: 2 * max_delay + 1,
            cycles,
            max_holders: max_holders.max(1),
            waits: vec![Vec::new(); n],
            phase: vec![Phase::Thinking; n],
            restart: vec![None; n],
            epoch: vec![0; n],
            requests: 0,
        }
    }

    fn exp(&self, rng: &mut Xoshiro256PlusPlus) -> Time {
        if self.hold == 0 {
            return 0;
        }
        Exp::new(1.0 / self.hold as f64).map(|d| d.sample(rng).round() as Time).unwrap_or(0)
    }

    /// Sets `node`'s timer `kind` at `at`, in its current epoch (an abort makes it stale).
    fn tick(&self, at: Time, node: NodeId, kind: TickKind, cx: &mut Cx) {
        cx.tick(at, node, Tick { kind: kind as u8, epoch: self.epoch[node as usize] });
    }

    fn busy(&self, x: NodeId) -> bool {
        matches!(self.phase[x as usize], Phase::Holding | Phase::Blocked | Phase::Running)
    }

    /// Processes that wait for `target`, directly or transitively.
    fn waiting_on(&self, target: NodeId) -> Vec<bool> {
        let n = self.phase.len();
        let mut reach = vec![false; n];
        reach[target as usize] = true;
        let mut changed = true;
        while changed {
            changed = false;
            for x in 0..n {
                if !reach[x] && self.waits[x].iter().any(|&h| reach[h as usize]) {
                    reach[x] = true;
                    changed = true;
                }
            }
        }
        reach[target as usize] = false;
        reach
    }

    fn choose_holders(&self, j: NodeId, rng: &mut Xoshiro256PlusPlus) -> Vec<NodeId> {
        let n = self.phase.len() as NodeId;
        let ancestors = self.waiting_on(j);
        let mut closing: Vec<NodeId> = (0..n).filter(|&x| ancestors[x as usize]).collect();
        let mut safe: Vec<NodeId> =
            (0..n).filter(|&x| x != j && self.busy(x) && !ancestors[x as usize]).collect();
        let k = rng.random_range(1..=self.max_holders) as usize;
        let mut holders = Vec::with_capacity(k);
        if !closing.is_empty() && rng.random_bool(self.cycles) {
            holders.push(closing.swap_remove(rng.random_range(0..closing.len())));
        }
        while holders.len() < k && !safe.is_empty() {
            holders.push(safe.swap_remove(rng.random_range(0..safe.len())));
        }
        if holders.is_empty() && !closing.is_empty() && (0..n).all(|x| x == j || self.busy(x)) {
            // Everybody else is busy and waits for j: any request closes a cycle.
            holders.push(closing.swap_remove(rng.random_range(0..closing.len())));
        }
        holders.sort_unstable();
        holders
    }

    /// `j` grants every process that waits for it.
    fn release(&mut self, j: NodeId, cx: &mut Cx) {
        let now = cx.now;
        for x in 0..self.waits.len() {
            if let Some(i) = self.waits[x].iter().position(|&h| h == j) {
                self.waits[x].remove(i);
                cx.ask(now, x as NodeId, Request::StopWaiting { holder: j });
                if self.waits[x].is_empty() && self.phase[x] == Phase::Blocked {
                    self.phase[x] = Phase::Running;
                    let at = now + self.exp(cx.rng);
                    self.tick(at, x as NodeId, TickKind::Commit, cx);
                }
            }
        }
    }

    /// A workload timer of `j` fired.
    fn tick_fired(&mut self, j: NodeId, tick: Tick, cx: &mut Cx) {
        let (jj, now) = (j as usize, cx.now);
        if tick.epoch != self.epoch[jj] {
            return;
        }
        let Some(kind) = TickKind::of(tick) else { return };
        if cx.status[jj] == NodeStatus::Paused {
            // A paused process's application is paused with it: it begins, asks and commits
            // nothing until it resumes. (Were the lock table to go on without it, requests made
            // in its name would reach it after it resumed, behind an abort of the transaction
            // it had when it paused, and that abort would withdraw the wrong transaction's waits.)
            self.tick(now + self.gap, j, kind, cx);
            return;
        }
        match (kind, self.phase[jj]) {
            (TickKind::Begin, Phase::Thinking) => {
                if self.restart[jj].is_none() {
                    if self.budget == 0 {
                        self.phase[jj] = Phase::Done;
                        return;
                    }
                    self.budget -= 1;
                }
                self.phase[jj] = Phase::Holding;
                cx.ask(now, j, Request::WaitFor { holders: Vec::new() });
                let at = now + self.exp(cx.rng);
                self.tick(at, j, TickKind::Ask, cx);
            }
            (TickKind::Ask, Phase::Holding) => {
                let holders: Vec<NodeId> = match self.restart[jj].take() {
                    Some(h) if !h.is_empty() => h.into_iter().filter(|&x| self.busy(x)).collect(),
                    _ => self.choose_holders(j, cx.rng),
                };
                if holders.is_empty() {
                    // Nobody holds anything it could want: it asks a free process, which grants
                    // at once, so the process still learns its transaction is finishing.
                    let n = self.phase.len() as NodeId;
                    let free: Vec<NodeId> = (0..n).filter(|&x| x != j && !self.busy(x)).collect();
                    if !free.is_empty() {
                        let h = free[cx.rng.random_range(0..free.len())];
                        cx.ask(now, j, Request::WaitFor { holders: vec![h] });
                        cx.ask(now, j, Request::StopWaiting { holder: h });
                    }
                    self.phase[jj] = Phase::Running;
                    let at = now + self.exp(cx.rng);
                    self.tick(at, j, TickKind::Commit, cx);
                } else {
                    self.requests += 1;
                    self.phase[jj] = Phase::Blocked;
                    self.waits[jj] = holders.clone();
                    cx.ask(now, j, Request::WaitFor { holders });
                }
            }
            (TickKind::Commit, Phase::Running) => {
                self.release(j, cx);
                self.phase[jj] = Phase::Thinking;
                let at = now + self.gap + self.exp(cx.rng);
                self.tick(at, j, TickKind::Begin, cx);
            }
            _ => {}
        }
    }

    /// `j` reported `Aborted`: it withdraws its waits, grants its waiters, and will restart its
    /// transaction with the same request.
    fn on_aborted(&mut self, j: NodeId, cx: &mut Cx) {
        let jj = j as usize;
        // A running transaction may abort too: one that needed nothing from others never told
        // its process it was finishing, and wound-wait may wound it.
        if !matches!(self.phase[jj], Phase::Holding | Phase::Blocked | Phase::Running) {
            return;
        }
        self.epoch[jj] += 1;
        self.restart[jj] = Some(std::mem::take(&mut self.waits[jj]));
        self.phase[jj] = Phase::Thinking;
        self.release(j, cx);
        let at = cx.now + self.gap + self.exp(cx.rng);
        self.tick(at, j, TickKind::Begin, cx);
    }

    /// Requests made so far (restarts included).
    pub fn requests(&self) -> u64 {
        self.requests
    }
}

impl Workload for DeadlockWorkload {
    /// The first timers: every process begins a transaction after a think time.
    fn start(&mut self, cx: &mut Cx) {
        for j in 0..self.phase.len() as NodeId {
            let at = self.exp(cx.rng);
            self.tick(at, j, TickKind::Begin, cx);
        }
    }

    fn on_event(&mut self, node: NodeId, event: &Event, cx: &mut Cx) {
        if matches!(event, Event::Aborted | Event::GaveUp) {
            self.on_aborted(node, cx);
        }
    }

    fn on_tick(&mut self, node: NodeId, tick: Tick, cx: &mut Cx) {
        self.tick_fired(node, tick, cx);
    }
}
