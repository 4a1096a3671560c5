//! # Maekawa's quorum algorithm (1985)
//!
//! *Maekawa, "A √N algorithm for mutual exclusion in decentralized systems", ACM TOCS 3(2),
//! 1985; the deadlock fix for INQUIRE/YIELD follows Sanders, "The information structure of
//! distributed mutual exclusion algorithms", ACM TOCS 5(3), 1987.*
//!
//! ## The idea
//! Ricart-Agrawala asks everybody; it is enough to ask a *quorum*, as long as every two quorums
//! intersect: the process in the intersection votes for only one of the two at a time. Every
//! process is both a requester and an arbiter holding one vote.
//!
//! ## The rules
//! Requests are stamped (Lamport timestamp, uid); smaller has priority.
//! 1. **Quorums.** The N positions fill a grid of c = ⌈√N⌉ columns row by row; the quorum of
//!    position p is its row ∪ its column (itself included). Two quorums always meet: the cell at
//!    (row of p, column of q) or (row of q, column of p) exists even when the last row is short.
//!    For a square N, K = 2√N − 1 (N = 9: a 3 × 3 grid, K = 5).
//! 2. **Requester.** Send REQUEST(ts) to its quorum; enter after a REPLY from every member; on
//!    exit send RELEASE to its quorum.
//! 3. **Arbiter.** If its vote is free, lock it for the requester and REPLY; otherwise queue the
//!    request (in priority order). On RELEASE, give the vote to the best queued request.
//!
//! Deadlock handling (parameter `deadlock_handling`, default true):
//! 4. A queued request that is not the best one the arbiter knows (holder included) receives
//!    FAILED, once; when a queued request beats the holder, the arbiter sends the holder
//!    INQUIRE, once per lock.
//! 5. A requester answers an INQUIRE with YIELD (giving the vote back) if it has received a
//!    FAILED or has already yielded during this request; otherwise it keeps the inquiry until
//!    one of those happens, or drops it when it enters (the RELEASE answers it).
//! 6. On YIELD the arbiter queues the yielder again and locks for the best request.
//!
//! A process's request to itself as arbiter, and the answers, are local steps (not messages).
//!
//! ```text
//!   arbiter:    free ──REQUEST / REPLY──▶ locked(r) ──RELEASE or YIELD / REPLY to best queued──▶ locked(best) | free
//!               locked(r) ──better REQUEST queued / INQUIRE to r──▶ inquired
//!   requester:  idle ──Acquire / REQUEST to quorum──▶ waiting ──K REPLYs──▶ holding ──Release / RELEASE──▶ idle
//!               waiting ──INQUIRE ∧ (FAILED seen ∨ yielded) / YIELD──▶ waiting
//! ```
//!
//! ## Costs
//! Light load: 3(K−1) messages per entry (REQUEST, REPLY, RELEASE with the K−1 other quorum
//! members): 12 for N = 9. Under contention up to 5(K−1) with INQUIRE, YIELD and FAILED (more
//! when a vote is yielded and granted again). Synchronization delay two messages (RELEASE to the
//! shared arbiter, REPLY from it); response time under light load two one-way delays.
//!
//! ## Fencing tokens
//! Entries do not follow request-stamp order (a younger request may collect its quorum before an
//! older one reaches the shared arbiter), so the fencing token is the Lamport clock *at entry*,
//! packed as `clock · 2^20 + rank(uid)`: every message carries the sender's clock, the clock
//! ticks at entry, and in a safe run every hand-over is a causal chain exit → RELEASE → REPLY
//! → entry along which Lamport clocks strictly increase.
//!
//! ## Forged messages
//! Quorums are symmetric (same row or same column), so every message comes from a member of
//! the receiver's own quorum: a real node refuses (`Algorithm::admits`) any message from outside
//! it. Every message but a REQUEST names a request the receiver made (REPLY, INQUIRE, FAILED)
//! or received (RELEASE, YIELD), so one naming a timestamp above the receiver's clock (on
//! stable storage, it only grows) is refused too, as is a timestamp or clock of 0 or beyond
//! 2^62.
//!
//! ## Assumptions and known flaws
//! Reliable channels; FIFO is not needed (every message names the request it is about, and
//! stale ones are ignored). Safe by quorum intersection. Without INQUIRE/YIELD/FAILED it
//! deadlocks: two requesters each lock their own vote, then wait for each other's —
//! `scenarios/maekawa-deadlock.toml` (liveness violated, declared expected); with them
//! (`scenarios/maekawa-deadlock-handled.toml`) the same run completes. No crash is tolerated: a
//! crashed arbiter's vote is lost for every quorum it belongs to.

use std::collections::{BTreeSet, VecDeque};

use ringleader_core::{Context, Event, Message, NodeId, Outbox, Process, Request};
use serde::{Deserialize, Serialize};

use super::stamp::{self, ScalarClock, Stamp};
use crate::{Algorithm, Family, ParamError, Setup};

/// Messages of Maekawa's algorithm. `ts` names the request the message is about; `clock` is the
/// sender's Lamport clock.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// Ask the arbiter for its vote; `ts` is the request's timestamp (and the sender's clock).
    Request {
        /// The request's timestamp.
        ts: u64,
    },
    /// The arbiter's vote is locked for request `ts`.
    Reply {
        /// The request.
        ts: u64,
        /// Sender's clock.
        clock: u64,
    },
    /// The requester left the critical section: the vote is free.
    Release {
        /// The request.
        ts: u64,
        /// Sender's clock.
        clock: u64,
    },
    /// The arbiter asks the holder of its vote whether it can give it back.
    Inquire {
        /// The request holding the vote.
        ts: u64,
        /// Sender's clock.
        clock: u64,
    },
    /// The requester gives the vote back.
    Yield {
        /// The request.
        ts: u64,
        /// Sender's clock.
        clock: u64,
    },
    /// The arbiter has a better request than `ts` (locked or queued).
    Failed {
        /// The request.
        ts: u64,
        /// Sender's clock.
        clock: u64,
    },
}

impl Msg {
    fn clock(&self) -> u64 {
        match *self {
            Msg::Request { ts } => ts,
            Msg::Reply { clock, .. }
            | Msg::Release { clock, .. }
            | Msg::Inquire { clock, .. }
            | Msg::Yield { clock, .. }
            | Msg::Failed { clock, .. } => clock,
        }
    }
}

impl Message for Msg {
    const KINDS: &'static [&'static str] = &["request", "reply", "release", "inquire", "yield", "failed"];
    fn kind_index(&self) -> usize {
        match self {
            Msg::Request { .. } => 0,
            Msg::Reply { .. } => 1,
            Msg::Release { .. } => 2,
            Msg::Inquire { .. } => 3,
            Msg::Yield { .. } => 4,
            Msg::Failed { .. } => 5,
        }
    }
}

/// Maekawa's algorithm sets no timers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
pub enum Timer {}

/// The configuration: the number of positions (each builds its own quorum from it) and whether
/// deadlocks are handled.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Config {
    /// N, the number of positions in the grid.
    pub positions: u32,
    /// Use INQUIRE / YIELD / FAILED.
    pub deadlock_handling: bool,
}

/// The grid quorum of position `p` of `n`: its row ∪ its column in a grid of ⌈√n⌉ columns
/// (sorted, `p` included).
///
/// Built as a merge of the sorted row and column, O(√N): the run's quorums cost O(N√N), the
/// size of what they hold, and each node keeps only its own. (A filter over every position,
/// O(N²) for the run, took longer than the run itself at N = 10⁵.)
pub fn grid_quorum(n: u32, p: NodeId) -> Vec<NodeId> {
    let c = grid_columns(n);
    let row_start = p / c * c;
    let mut row = (row_start..(row_start + c).min(n)).peekable();
    let mut column = (p % c..n).step_by(c as usize).peekable();
    let mut quorum: Vec<NodeId> = Vec::with_capacity(2 * c as usize);
    loop {
        let next = match (row.peek(), column.peek()) {
            (Some(&r), Some(&k)) if r == k => {
                column.next();
                row.next()
            }
            (Some(&r), Some(&k)) if r < k => row.next(),
            (Some(_), Some(_)) | (None, Some(_)) => column.next(),
            (Some(_), None) => row.next(),
            (None, None) => break,
        };
        quorum.extend(next);
    }
    quorum
}

/// The grid's columns for `n` positions: ⌈√n⌉ (at least 1).
fn grid_columns(n: u32) -> u32 {
    let n = u64::from(n);
    let mut c = (n as f64).sqrt() as u64;
    while c * c < n {
        c += 1;
    }
    while c > 1 && (c - 1) * (c - 1) >= n {
        c -= 1;
    }
    c.max(1) as u32
}

/// Every position's grid quorum ([`grid_quorum`]), for `n` positions.
pub fn grid_quorums(n: u32) -> Vec<Vec<NodeId>> {
    (0..n).map(|p| grid_quorum(n, p)).collect()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
enum State {
    Idle,
    Wanted(Stamp),
    Held(Stamp),
}

/// A process of Maekawa's algorithm: a requester and an arbiter.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Maekawa {
    me: NodeId,
    quorum: Vec<NodeId>,
    deadlock_handling: bool,
    clock: ScalarClock,
    // Requester.
    state: State,
    /// Arbiters whose vote we hold for the current request.
    granted: BTreeSet<NodeId>,
    /// A FAILED arrived during the current request.
    failed: bool,
    /// We yielded a vote during the current request.
    yielded: bool,
    /// Arbiters that inquired and were not answered yet.
    inquiries: BTreeSet<NodeId>,
    // Arbiter.
    /// The request our vote is locked for.
    locked: Option<Stamp>,
    /// Queued requests, best first.
    waiting: BTreeSet<Stamp>,
    /// Queued requesters that were sent FAILED.
    failed_sent: BTreeSet<NodeId>,
    /// An INQUIRE was sent for the current lock.
    inquired: bool,
    /// Messages to ourselves, handled within the same step (always empty between steps).
    local: VecDeque<Msg>,
}

type Out = Outbox<Msg, Timer>;

impl Maekawa {
    /// Sends `msg`, or queues it as a local step when it is for ourselves.
    fn send(&mut self, to: NodeId, msg: Msg, out: &mut Out) {
        if to == self.me {
            self.local.push_back(msg);
        } else {
            out.send(to, msg);
        }
    }

    fn drain_local(&mut self, cx: &Context, out: &mut Out) {
        while let Some(msg) = self.local.pop_front() {
            self.handle(cx, self.me, msg, out);
        }
    }

    fn handle(&mut self, cx: &Context, from: NodeId, msg: Msg, out: &mut Out) {
        self.clock.observe(msg.clock());
        match msg {
            Msg::Request { ts } => self.arbiter_request(Stamp { ts, uid: cx.uid_of(from), node: from }, out),
            Msg::Release { ts, .. } => {
                if self.locked.is_some_and(|l| l.node == from && l.ts == ts) {
                    self.locked = None;
                    self.grant_next(out);
                }
            }
            Msg::Yield { ts, .. } => {
                if let Some(l) = self.locked.filter(|l| l.node == from && l.ts == ts) {
                    self.locked = None;
                    self.waiting.insert(l);
                    self.failed_sent.insert(l.node);
                    self.grant_next(out);
                }
            }
            Msg::Reply { ts, .. } => {
                if self.wants(ts) {
                    self.granted.insert(from);
                    self.answer_inquiries(out);
                    if self.granted.len() == self.quorum.len()
                        && let State::Wanted(s) = self.state
                    {
                        self.state = State::Held(s);
                        self.inquiries.clear();
                        let at_entry = Stamp { ts: self.clock.tick(), uid: cx.uid(), node: self.me };
                        out.emit(Event::Entered { fencing: at_entry.fencing(cx.uids) });
                    }
                }
            }
            Msg::Inquire { ts, .. } => {
                if self.wants(ts) {
                    self.inquiries.insert(from);
                    self.answer_inquiries(out);
                }
            }
            Msg::Failed { ts, .. } => {
                if self.wants(ts) {
                    self.failed = true;
                    self.answer_inquiries(out);
                }
            }
        }
    }

    /// True while we wait for the request stamped `ts`.
    fn wants(&self, ts: u64) -> bool {
        matches!(self.state, State::Wanted(s) if s.ts == ts)
    }

    fn arbiter_request(&mut self, r: Stamp, out: &mut Out) {
        if self.locked.is_none() {
            self.locked = Some(r);
            let clock = self.clock.tick();
            self.send(r.node, Msg::Reply { ts: r.ts, clock }, out);
            return;
        }
        self.waiting.insert(r);
        self.notify(out);
    }

    /// Deadlock handling: FAILED to every queued request that is not the best known, INQUIRE
    /// to the holder when a queued request beats it.
    fn notify(&mut self, out: &mut Out) {
        let (Some(held), Some(&best)) = (self.locked, self.waiting.first()) else { return };
        if !self.deadlock_handling {
            return;
        }
        let losers: Vec<Stamp> = self
            .waiting
            .iter()
            .filter(|&&w| (w != best || held < best) && !self.failed_sent.contains(&w.node))
            .copied()
            .collect();
        for w in losers {
            self.failed_sent.insert(w.node);
            let clock = self.clock.tick();
            self.send(w.node, Msg::Failed { ts: w.ts, clock }, out);
        }
        if best < held && !self.inquired {
            self.inquired = true;
            let clock = self.clock.tick();
            self.send(held.node, Msg::Inquire { ts: held.ts, clock }, out);
        }
    }

    fn grant_next(&mut self, out: &mut Out) {
        self.inquired = false;
        if let Some(next) = self.waiting.pop_first() {
            self.failed_sent.remove(&next.node);
            self.locked = Some(next);
            let clock = self.clock.tick();
            self.send(next.node, Msg::Reply { ts: next.ts, clock }, out);
            self.notify(out);
        }
    }

    /// YIELD to every inquiring arbiter whose vote we hold, once we know we cannot win now.
    fn answer_inquiries(&mut self, out: &mut Out) {
        let State::Wanted(s) = self.state else { return };
        if !(self.failed || self.yielded) {
            return;
        }
        let give_back: Vec<NodeId> = self.inquiries.intersection(&self.granted).copied().collect();
        for a in give_back {
            self.inquiries.remove(&a);
            self.granted.remove(&a);
            self.yielded = true;
            let clock = self.clock.tick();
            self.send(a, Msg::Yield { ts: s.ts, clock }, out);
        }
    }
}

impl Process for Maekawa {
    type Msg = Msg;
    type Timer = Timer;

    fn on_message(&mut self, cx: &Context, from: NodeId, msg: Msg, out: &mut Out) {
        self.handle(cx, from, msg, out);
        self.drain_local(cx, out);
    }

    fn on_timer(&mut self, _cx: &Context, timer: Timer, _out: &mut Out) {
        match timer {}
    }

    fn on_request(&mut self, cx: &Context, req: Request, out: &mut Out) {
        match req {
            Request::Acquire if self.state == State::Idle => {
                let s = Stamp { ts: self.clock.tick(), uid: cx.uid(), node: self.me };
                self.state = State::Wanted(s);
                self.granted.clear();
                self.inquiries.clear();
                self.failed = false;
                self.yielded = false;
                for q in self.quorum.clone() {
                    self.send(q, Msg::Request { ts: s.ts }, out);
                }
            }
            Request::Release => {
                let State::Held(s) = self.state else { return };
                self.state = State::Idle;
                out.emit(Event::Exited);
                for q in self.quorum.clone() {
                    let clock = self.clock.tick();
                    self.send(q, Msg::Release { ts: s.ts, clock }, out);
                }
            }
            _ => return,
        }
        self.drain_local(cx, out);
    }

    /// Everything but the clock is volatile: the vote this arbiter had given is forgotten (and
    /// may be given twice: crashes are not tolerated), its queue is lost.
    fn on_recover(&mut self, _cx: &Context, _out: &mut Out) {
        self.state = State::Idle;
        self.granted.clear();
        self.inquiries.clear();
        self.failed = false;
        self.yielded = false;
        self.locked = None;
        self.waiting.clear();
        self.failed_sent.clear();
        self.inquired = false;
    }

    fn in_critical_section(&self) -> bool {
        matches!(self.state, State::Held(_))
    }
}

impl Algorithm for Maekawa {
    const NAME: &'static str = "maekawa";
    const FAMILY: Family = Family::Mutex;
    const SUMMARY: &'static str = "grid quorums (K = 2√N − 1) with INQUIRE / YIELD / FAILED; 3(K−1) messages per entry under light load";
    /// Each node keeps its grid quorum (2√N − 1 ids): O(N√N), ≈ 8 bytes per node and quorum
    /// member (measured 3.3 on the default run at N = 10⁴ and 10⁵, with 700 bytes per node
    /// besides; doubled for runs with more requests in flight).
    const FOOTPRINT: crate::Footprint =
        crate::Footprint { bytes_per_quorum_member: 8, ..crate::Footprint::LINEAR };
    type Config = Config;

    /// Only quorum members talk to each other; stamps follow a tick and stay below
    /// [`stamp::CLOCK_LIMIT`]; every message but a REQUEST names a request this node made or
    /// received, so its timestamp is no later than this node's clock.
    fn admits(&self, from: NodeId, msg: &Msg) -> Result<(), &'static str> {
        if self.quorum.binary_search(&from).is_err() {
            return Err("a message from a node outside this node's quorum (its grid row and column)");
        }
        stamp::admits_clock(msg.clock())?;
        match *msg {
            Msg::Request { .. } => Ok(()),
            Msg::Reply { ts, .. }
            | Msg::Release { ts, .. }
            | Msg::Inquire { ts, .. }
            | Msg::Yield { ts, .. }
            | Msg::Failed { ts, .. } => {
                stamp::admits_clock(ts)?;
                if ts > self.clock.0 {
                    return Err(
                        "a message about a request stamped later than this node's clock: one it never saw",
                    );
                }
                Ok(())
            }
        }
    }

    fn configure(setup: &Setup) -> Result<Config, ParamError> {
        stamp::check_size(setup)?;
        let deadlock_handling = setup.params.get("deadlock_handling", true)?;
        Ok(Config { positions: setup.uids.len() as u32, deadlock_handling })
    }

    fn new(me: NodeId, config: &Config, _setup: &Setup) -> Self {
        Maekawa {
            me,
            quorum: grid_quorum(config.positions, me),
            deadlock_handling: config.deadlock_handling,
            clock: ScalarClock::default(),
            state: State::Idle,
            granted: BTreeSet::new(),
            failed: false,
            yielded: false,
            inquiries: BTreeSet::new(),
            locked: None,
            waiting: BTreeSet::new(),
            failed_sent: BTreeSet::new(),
            inquired: false,
            local: VecDeque::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testing::TestSystem;
    use ringleader_core::harness::Harness;

    /// Position `me` of `n` (uid = position + 1), with or without deadlock handling.
    fn node(n: u32, me: NodeId, handling: bool) -> Harness<Maekawa> {
        TestSystem::new(n).param("deadlock_handling", if handling { "true" } else { "false" }).node(me)
    }

    /// Rule 1, as built: the merged row and column equal the definition's filter, for every
    /// position of every N up to 130 (full grids and ragged last rows).
    #[test]
    fn rule_1_the_merged_quorums_equal_the_definition() {
        for n in 1..=130u32 {
            let c = (1..=n).find(|c| c * c >= n).unwrap_or(1);
            let by_definition: Vec<Vec<NodeId>> =
                (0..n).map(|p| (0..n).filter(|q| q / c == p / c || q % c == p % c).collect()).collect();
            assert_eq!(grid_quorums(n), by_definition, "n = {n}");
        }
    }

    /// Rule 1: a grid of ⌈√N⌉ columns; the quorum is the row and the column, and any two meet.
    #[test]
    fn rule_1_quorums_are_a_row_and_a_column_of_the_grid() {
        assert_eq!(grid_quorums(4), vec![vec![0, 1, 2], vec![0, 1, 3], vec![0, 2, 3], vec![1, 2, 3]]);
        assert_eq!(node(9, 4, true).process.quorum, vec![1, 3, 4, 5, 7]);
    }

    /// Rule 2: REQUEST to the quorum (its own vote locally), enter with every member's REPLY,
    /// RELEASE to the quorum on exit.
    #[test]
    fn rule_2_a_requester_needs_a_reply_from_every_quorum_member() {
        let mut p = node(4, 0, true);
        let step = p.request(Request::Acquire);
        assert_eq!(step.sent(), vec![(1, Msg::Request { ts: 1 }), (2, Msg::Request { ts: 1 })]);
        assert!(p.deliver(1, Msg::Reply { ts: 1, clock: 1 }).is_empty());
        assert_eq!(
            p.deliver(2, Msg::Reply { ts: 1, clock: 1 }).emitted(),
            vec![Event::Entered { fencing: 7 << 20 }]
        );
        let step = p.request(Request::Release);
        assert_eq!(step.emitted(), vec![Event::Exited]);
        assert_eq!(
            step.sent(),
            vec![(1, Msg::Release { ts: 1, clock: 9 }), (2, Msg::Release { ts: 1, clock: 10 })]
        );
    }

    /// Rule 3: a free arbiter locks and replies; a locked one queues; RELEASE hands the vote
    /// to the best queued request.
    #[test]
    fn rule_3_an_arbiter_votes_for_one_request_at_a_time_best_first() {
        let mut a = node(9, 4, false);
        assert_eq!(a.deliver(1, Msg::Request { ts: 5 }).sent(), vec![(1, Msg::Reply { ts: 5, clock: 7 })]);
        assert!(a.deliver(3, Msg::Request { ts: 9 }).is_empty());
        assert!(a.deliver(5, Msg::Request { ts: 7 }).is_empty());
        assert!(a.deliver(3, Msg::Release { ts: 9, clock: 1 }).is_empty(), "not the holder's release");
        assert_eq!(
            a.deliver(1, Msg::Release { ts: 5, clock: 1 }).sent(),
            vec![(5, Msg::Reply { ts: 7, clock: 14 })]
        );
    }

    /// Rule 4: a queued request that is not the best gets FAILED once; one that beats the
    /// holder makes the arbiter INQUIRE the holder once.
    #[test]
    fn rule_4_failed_to_losers_and_inquire_to_an_outranked_holder() {
        let mut a = node(9, 4, true);
        a.deliver(1, Msg::Request { ts: 5 });
        assert_eq!(a.deliver(3, Msg::Request { ts: 9 }).sent(), vec![(3, Msg::Failed { ts: 9, clock: 11 })]);
        assert_eq!(a.deliver(5, Msg::Request { ts: 3 }).sent(), vec![(1, Msg::Inquire { ts: 5, clock: 13 })]);
        assert!(
            a.deliver(7, Msg::Request { ts: 2 })
                .sent()
                .iter()
                .all(|(_, m)| !matches!(m, Msg::Inquire { .. })),
            "once per lock"
        );
    }

    /// Rule 5: an INQUIRE is answered with YIELD once a FAILED came (or after a first yield);
    /// before that it is kept.
    #[test]
    fn rule_5_yield_to_an_inquiry_only_after_failed_or_a_yield() {
        let mut p = node(4, 0, true);
        p.request(Request::Acquire);
        p.deliver(1, Msg::Reply { ts: 1, clock: 1 });
        assert!(p.deliver(1, Msg::Inquire { ts: 1, clock: 1 }).is_empty(), "kept");
        assert_eq!(
            p.deliver(2, Msg::Failed { ts: 1, clock: 1 }).sent(),
            vec![(1, Msg::Yield { ts: 1, clock: 8 })]
        );
        p.deliver(1, Msg::Reply { ts: 1, clock: 1 });
        assert_eq!(
            p.deliver(1, Msg::Inquire { ts: 1, clock: 1 }).sent(),
            vec![(1, Msg::Yield { ts: 1, clock: 11 })]
        );
    }

    /// Rule 6: on YIELD the arbiter queues the yielder and votes for the best request.
    #[test]
    fn rule_6_a_yielded_vote_goes_to_the_best_request() {
        let mut a = node(9, 4, true);
        a.deliver(1, Msg::Request { ts: 5 });
        a.deliver(5, Msg::Request { ts: 3 });
        assert_eq!(
            a.deliver(1, Msg::Yield { ts: 5, clock: 1 }).sent(),
            vec![(5, Msg::Reply { ts: 3, clock: 11 })]
        );
        assert_eq!(
            a.deliver(5, Msg::Release { ts: 3, clock: 1 }).sent(),
            vec![(1, Msg::Reply { ts: 5, clock: 13 })]
        );
    }

    #[test]
    fn grid_quorums_intersect_pairwise() {
        for n in 1..=30 {
            let qs = grid_quorums(n);
            for (p, a) in qs.iter().enumerate() {
                assert!(a.contains(&(p as NodeId)));
                for b in &qs {
                    assert!(a.iter().any(|x| b.contains(x)), "n = {n}: {a:?} and {b:?} are disjoint");
                }
            }
        }
        assert!(grid_quorums(9).iter().all(|q| q.len() == 5));
        assert_eq!(grid_quorums(9)[4], vec![1, 3, 4, 5, 7]);
    }

    /// Forged messages: any message from outside the quorum, a REPLY (or INQUIRE, FAILED,
    /// RELEASE, YIELD) about a request stamped above this node's clock, and a clock of 0 are
    /// refused; a quorum member's REQUEST and the REPLY to this node's request are admitted.
    #[test]
    fn admits_only_quorum_members_about_requests_this_node_saw() {
        // Nine positions, a 3 × 3 grid: position 4's quorum is 1, 3, 4, 5, 7.
        let mut p = node(9, 4, true);
        assert_eq!(p.request(Request::Acquire).sent()[0], (1, Msg::Request { ts: 1 }));
        let admits = |p: &Harness<Maekawa>, from, msg: Msg| p.process.admits(from, &msg);
        assert_eq!(admits(&p, 1, Msg::Reply { ts: 1, clock: 3 }), Ok(()));
        assert_eq!(admits(&p, 7, Msg::Request { ts: 12 }), Ok(()));
        assert_eq!(
            admits(&p, 0, Msg::Reply { ts: 1, clock: 3 }),
            Err("a message from a node outside this node's quorum (its grid row and column)")
        );
        assert_eq!(
            admits(&p, 8, Msg::Request { ts: 2 }),
            Err("a message from a node outside this node's quorum (its grid row and column)")
        );
        assert_eq!(
            admits(&p, 1, Msg::Reply { ts: 5, clock: 6 }),
            Err("a message about a request stamped later than this node's clock: one it never saw")
        );
        assert_eq!(
            admits(&p, 3, Msg::Release { ts: 9, clock: 10 }),
            Err("a message about a request stamped later than this node's clock: one it never saw")
        );
        assert_eq!(
            admits(&p, 5, Msg::Failed { ts: 1, clock: 0 }),
            Err("a timestamp of 0: every stamp follows a tick of the sender's clock")
        );
    }
}
