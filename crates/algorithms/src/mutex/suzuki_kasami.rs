//! # Suzuki-Kasami broadcast token (1985)
//!
//! *Suzuki and Kasami, "A distributed mutual exclusion algorithm", ACM TOCS 3(4), 1985.*
//!
//! ## The idea
//! One token; whoever holds it may enter. A process without the token broadcasts its wish, so
//! the holder learns of it directly. Sequence numbers tell outstanding requests from old ones.
//!
//! ## The rules
//! Every process keeps RN[1..N], the highest request number heard from each process. The token
//! carries LN[1..N] (the request number each process last had served) and a queue Q.
//! 1. Request: if we hold the idle token, enter (no message). Otherwise RN\[i\] += 1 and send
//!    REQUEST(i, RN\[i\]) to all others.
//! 2. On REQUEST(j, sn): RN\[j\] := max(RN\[j\], sn); if we hold the token, are not in the
//!    critical section, and RN\[j\] = LN\[j\] + 1 (an outstanding request), send TOKEN to j.
//! 3. On TOKEN: enter.
//! 4. Exit: LN\[i\] := RN\[i\]; append to Q every j with RN\[j\] = LN\[j\] + 1 not already in
//!    it (scanning i+1, i+2, …, i−1 so that nobody is favoured); if Q is not empty, send the
//!    token to its head.
//! 5. Copies (not in the paper, which assumes reliable channels): the token only ever travels
//!    to serve an outstanding request, so a process accepts it only while it waits and only when
//!    LN\[i\] + 1 = RN\[i\] (its current request unserved). A duplicated TOKEN that arrives
//!    later — while the process holds the token, after it was served, or once it asks again —
//!    is discarded: a link that duplicates messages cannot make a second token.
//!
//! The token starts at node 0.
//!
//! ```text
//!   idle(no token) ──Acquire / REQUEST to all──▶ waiting ──TOKEN──▶ holding ──Release / TOKEN to Q's head──▶ idle
//!   idle(token) ──Acquire──▶ holding ──Release, Q empty──▶ idle(token)
//! ```
//!
//! ## Costs
//! N messages per entry (N−1 REQUEST + 1 TOKEN), 0 when re-entering with the token. The token
//! carries O(N) numbers. Synchronization delay one message (the TOKEN); response time under light
//! load two one-way delays.
//!
//! ## Fencing tokens
//! The token carries an entry counter, incremented at every entry: the fencing token.
//!
//! ## Forged messages
//! A real node refuses (`Algorithm::admits`) a REQUEST numbered 0, a TOKEN whose LN does not
//! have one entry per process, whose queue names a position twice or outside the system, or
//! whose LN claims more of this node's own requests served than it ever made (only this node
//! writes its entry, from its own request number). It admits a TOKEN while it holds one: a
//! duplicating link delivers that honestly, and rule 5 discards it.
//!
//! ## Assumptions and known flaws
//! Reliable channels; FIFO is not needed (sequence numbers discard stale requests). Safe,
//! deadlock-free and starvation-free (every waiting request is queued at the next exit and Q is
//! FIFO) while nobody fails. No crash is tolerated: the token dies with its holder, and nothing
//! regenerates it. A recovered process that held the token has lost it, and one that recovers
//! while its request is outstanding no longer waits, so rule 5 discards the token sent to serve
//! it: the token is lost too.

use std::collections::VecDeque;

use ringleader_core::{Context, Event, Message, NodeId, Outbox, Process, Request};
use serde::{Deserialize, Serialize};

use crate::symmetry::{Group, Symmetry, permute_indexed};
use crate::{Algorithm, Family, ParamError, Setup};

/// The privilege: the last served request number of every process, the waiting queue and the
/// entry counter.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Token {
    /// LN\[j\]: the request number of j's last served request.
    pub ln: Vec<u64>,
    /// Processes waiting for the token, in order.
    pub q: VecDeque<NodeId>,
    /// Entries so far (the fencing token).
    pub entries: u64,
}

/// Messages of Suzuki-Kasami.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// The sender's `sn`-th request.
    Request {
        /// Request number.
        sn: u64,
    },
    /// The token.
    Token(Token),
}

impl Message for Msg {
    const KINDS: &'static [&'static str] = &["request", "token"];
    fn kind_index(&self) -> usize {
        match self {
            Msg::Request { .. } => 0,
            Msg::Token(_) => 1,
        }
    }
}

/// Suzuki-Kasami sets no timers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
pub enum Timer {}

/// A process of Suzuki-Kasami.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct SuzukiKasami {
    me: NodeId,
    /// RN\[j\]: the highest request number heard from j.
    rn: Vec<u64>,
    token: Option<Token>,
    requesting: bool,
    in_cs: bool,
}

type Out = Outbox<Msg, Timer>;

impl SuzukiKasami {
    fn enter(&mut self, out: &mut Out) {
        let Some(token) = self.token.as_mut() else { return };
        token.entries += 1;
        self.requesting = false;
        self.in_cs = true;
        out.emit(Event::Entered { fencing: token.entries });
    }

    fn pass_token(&mut self, to: NodeId, out: &mut Out) {
        if let Some(token) = self.token.take() {
            out.send(to, Msg::Token(token));
        }
    }
}

impl Process for SuzukiKasami {
    type Msg = Msg;
    type Timer = Timer;

    fn on_message(&mut self, _cx: &Context, from: NodeId, msg: Msg, out: &mut Out) {
        match msg {
            Msg::Request { sn } => {
                let j = from as usize;
                self.rn[j] = self.rn[j].max(sn);
                if !self.in_cs
                    && let Some(token) = &self.token
                    && self.rn[j] == token.ln[j] + 1
                {
                    self.pass_token(from, out);
                }
            }
            Msg::Token(token) => {
                // Rule 5: the token is sent only to serve an outstanding request, so one that
                // arrives while this node holds it, is not waiting, or whose LN says a request
                // other than the outstanding one is being served, is a copy.
                let me = self.me as usize;
                if self.token.is_some() || self.in_cs || !self.requesting || token.ln[me] + 1 != self.rn[me] {
                    return;
                }
                self.token = Some(token);
                self.enter(out);
            }
        }
    }

    fn on_timer(&mut self, _cx: &Context, timer: Timer, _out: &mut Out) {
        match timer {}
    }

    fn on_request(&mut self, cx: &Context, req: Request, out: &mut Out) {
        match req {
            Request::Acquire if !self.requesting && !self.in_cs => {
                self.requesting = true;
                if self.token.is_some() {
                    self.enter(out);
                } else {
                    let me = self.me as usize;
                    self.rn[me] += 1;
                    out.send_all((0..cx.n()).filter(|&j| j != self.me), &Msg::Request { sn: self.rn[me] });
                }
            }
            Request::Release if self.in_cs => {
                self.in_cs = false;
                out.emit(Event::Exited);
                let n = self.rn.len();
                let me = self.me as usize;
                let Some(token) = self.token.as_mut() else { return };
                token.ln[me] = self.rn[me];
                for k in 1..n {
                    let j = (me + k) % n;
                    if self.rn[j] == token.ln[j] + 1 && !token.q.contains(&(j as NodeId)) {
                        token.q.push_back(j as NodeId);
                    }
                }
                if let Some(next) = token.q.pop_front() {
                    self.pass_token(next, out);
                }
            }
            _ => {}
        }
    }

    /// Everything is volatile: the token, if held, is lost; the request numbers restart from
    /// what the process remembers on stable storage (RN is kept so that its own numbers keep
    /// increasing).
    fn on_recover(&mut self, _cx: &Context, _out: &mut Out) {
        self.token = None;
        self.requesting = false;
        self.in_cs = false;
    }

    fn in_critical_section(&self) -> bool {
        self.in_cs
    }
}

impl Algorithm for SuzukiKasami {
    const NAME: &'static str = "suzuki-kasami";

    /// Nothing regenerates the token; a crashed holder loses it (a recovered process no longer
    /// has it), so only an up process can hold it.
    fn token_lost(states: &[Self], crashed: &[bool], _gone: &[bool]) -> bool {
        states.iter().zip(crashed).all(|(s, &down)| down || s.token.is_none())
    }
    const FAMILY: Family = Family::Mutex;
    const SUMMARY: &'static str =
        "broadcast REQUEST(j, sn); the token carries LN and a queue; N messages per entry, 0 to re-enter";
    /// RN, one request number per peer at every node: ≈ 16 bytes per pair of nodes.
    const FOOTPRINT: crate::Footprint = crate::Footprint::quadratic(16);
    type Config = ();

    /// Request numbers start at 1; the token has one LN entry per process, a queue of distinct
    /// positions, and this node's LN entry is one of its own request numbers (only this node
    /// writes it, at its exit).
    fn admits(&self, _from: NodeId, msg: &Msg) -> Result<(), &'static str> {
        let n = self.rn.len();
        match msg {
            Msg::Request { sn: 0 } => Err("a REQUEST numbered 0: request numbers start at 1"),
            Msg::Request { .. } => Ok(()),
            Msg::Token(t) => {
                if t.ln.len() != n {
                    return Err("a TOKEN whose LN does not have one entry per process");
                }
                let mut seen = vec![false; n];
                for &j in &t.q {
                    match seen.get_mut(j as usize) {
                        Some(s) if !*s => *s = true,
                        _ => return Err("a TOKEN whose queue names a position twice or outside the system"),
                    }
                }
                let me = self.me as usize;
                if t.ln[me] > self.rn[me] {
                    return Err("a TOKEN whose LN claims more of this node's requests served than it made");
                }
                Ok(())
            }
        }
    }

    fn configure(_setup: &Setup) -> Result<(), ParamError> {
        Ok(())
    }

    fn new(me: NodeId, _config: &(), setup: &Setup) -> Self {
        let n = setup.uids.len();
        SuzukiKasami {
            me,
            rn: vec![0; n],
            token: (me == 0).then(|| Token { ln: vec![0; n], q: VecDeque::new(), entries: 0 }),
            requesting: false,
            in_cs: false,
        }
    }

    /// Rotations: the only place a rule orders the peers is the scan at exit, which starts
    /// after the leaving node and goes round (`(me + k) mod n`), so rotating every position
    /// rotates the scan with it. (A scan from position 0 would break the symmetry.)
    fn symmetry() -> Option<Symmetry<Self>> {
        fn token(t: &Token, map: &[NodeId]) -> Token {
            Token {
                ln: permute_indexed(&t.ln, map),
                q: t.q.iter().map(|&j| map[j as usize]).collect(),
                entries: t.entries,
            }
        }
        Some(Symmetry {
            group: Group::Rotations,
            state: |p, map| SuzukiKasami {
                me: map[p.me as usize],
                rn: permute_indexed(&p.rn, map),
                token: p.token.as_ref().map(|t| token(t, map)),
                requesting: p.requesting,
                in_cs: p.in_cs,
            },
            msg: |m, map| match m {
                Msg::Request { sn } => Msg::Request { sn: *sn },
                Msg::Token(t) => Msg::Token(token(t, map)),
            },
            timer: |t, _| match *t {},
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestSystem;
    use ringleader_core::harness::Harness;

    /// Position `me` of four; the token starts at position 0.
    fn node(me: NodeId) -> Harness<SuzukiKasami> {
        TestSystem::new(4).node(me)
    }

    fn token(ln: [u64; 4], q: &[NodeId], entries: u64) -> Token {
        Token { ln: ln.to_vec(), q: q.iter().copied().collect(), entries }
    }

    /// Rule 1: with the idle token, enter without a message; otherwise broadcast the next
    /// request number.
    #[test]
    fn rule_1_enter_with_the_token_or_broadcast_a_numbered_request() {
        let mut holder = node(0);
        let step = holder.request(Request::Acquire);
        assert!(step.sent().is_empty());
        assert_eq!(step.emitted(), vec![Event::Entered { fencing: 1 }]);
        let mut p = node(2);
        let ask = Msg::Request { sn: 1 };
        assert_eq!(p.request(Request::Acquire).sent(), vec![(0, ask.clone()), (1, ask.clone()), (3, ask)]);
        assert_eq!(p.process.rn, vec![0, 0, 1, 0]);
    }

    /// Rule 2: an outstanding request reaching the idle holder gets the token; an old one, or
    /// one reaching a holder in the section, does not.
    #[test]
    fn rule_2_the_idle_holder_sends_the_token_to_an_outstanding_request() {
        let mut holder = node(0);
        assert_eq!(
            holder.deliver(2, Msg::Request { sn: 1 }).sent(),
            vec![(2, Msg::Token(token([0; 4], &[], 0)))]
        );
        let mut busy = node(0);
        busy.request(Request::Acquire);
        assert!(busy.deliver(2, Msg::Request { sn: 1 }).is_empty(), "in the section");
        let mut stale = node(0);
        stale.process.token.as_mut().unwrap().ln[2] = 1;
        assert!(stale.deliver(2, Msg::Request { sn: 1 }).is_empty(), "already served");
        assert_eq!(stale.process.rn[2], 1);
    }

    /// Rule 3: the token lets a waiting process in.
    #[test]
    fn rule_3_the_token_lets_the_requester_in() {
        let mut p = node(2);
        p.request(Request::Acquire);
        assert_eq!(
            p.deliver(0, Msg::Token(token([0; 4], &[], 4))).emitted(),
            vec![Event::Entered { fencing: 5 }]
        );
    }

    /// Rule 4: on exit LN[i] := RN[i], outstanding requests join Q in ring order after i, and
    /// the token goes to Q's head.
    #[test]
    fn rule_4_exit_queues_outstanding_requests_in_ring_order_and_passes_to_the_head() {
        let mut p = node(2);
        p.request(Request::Acquire);
        p.deliver(0, Msg::Token(token([0; 4], &[], 0)));
        p.deliver(1, Msg::Request { sn: 1 });
        p.deliver(3, Msg::Request { sn: 1 });
        p.deliver(0, Msg::Request { sn: 1 });
        let step = p.request(Request::Release);
        assert_eq!(step.emitted(), vec![Event::Exited]);
        assert_eq!(step.sent(), vec![(3, Msg::Token(token([0, 0, 1, 0], &[0, 1], 1)))]);
        let mut alone = node(0);
        alone.request(Request::Acquire);
        assert!(alone.request(Request::Release).sent().is_empty(), "Q empty: the token stays");
        assert!(alone.process.token.is_some());
    }

    /// Rule 5: a copy of the token — arriving while this process holds it, after its request
    /// was served, or once it asks again — is discarded; the token serving the new request is
    /// taken.
    #[test]
    fn rule_5_copies_of_the_token_are_discarded() {
        let mut p = node(2);
        p.request(Request::Acquire);
        let original = token([0; 4], &[], 3);
        assert_eq!(p.deliver(0, Msg::Token(original.clone())).emitted(), vec![Event::Entered { fencing: 4 }]);
        assert!(p.deliver(0, Msg::Token(original.clone())).is_empty(), "held: a copy");
        p.deliver(1, Msg::Request { sn: 1 });
        p.request(Request::Release);
        assert!(p.process.token.is_none(), "passed to 1");
        assert!(p.deliver(0, Msg::Token(original.clone())).is_empty(), "served, not waiting: a copy");
        p.request(Request::Acquire);
        assert!(p.deliver(0, Msg::Token(original)).is_empty(), "serves request 1, not 2: a copy");
        assert!(!p.process.in_critical_section());
        assert_eq!(
            p.deliver(1, Msg::Token(token([0, 1, 1, 0], &[], 5))).emitted(),
            vec![Event::Entered { fencing: 6 }]
        );
    }

    /// Forged messages: a REQUEST numbered 0, a TOKEN with a short LN, a queue naming a
    /// position twice or outside the system, or an LN entry for this node above its own request
    /// number is refused; a TOKEN that serves this node's last request is admitted, as is a
    /// second TOKEN while this node holds one (a duplicating link).
    #[test]
    fn admits_a_token_only_with_a_well_formed_ln_and_queue() {
        let mut p = node(2);
        p.request(Request::Acquire);
        let admits = |p: &Harness<SuzukiKasami>, msg: Msg| p.process.admits(0, &msg);
        assert_eq!(admits(&p, Msg::Token(token([0, 0, 0, 0], &[1, 3], 4))), Ok(()));
        assert_eq!(admits(&p, Msg::Token(token([0, 0, 1, 0], &[], 4))), Ok(()), "its request 1 served");
        assert_eq!(
            admits(&p, Msg::Token(token([0, 0, 2, 0], &[], 4))),
            Err("a TOKEN whose LN claims more of this node's requests served than it made")
        );
        let short = Token { ln: vec![0; 3], q: VecDeque::new(), entries: 4 };
        assert_eq!(
            admits(&p, Msg::Token(short)),
            Err("a TOKEN whose LN does not have one entry per process")
        );
        assert_eq!(
            admits(&p, Msg::Token(token([0; 4], &[1, 1], 4))),
            Err("a TOKEN whose queue names a position twice or outside the system")
        );
        assert_eq!(
            admits(&p, Msg::Token(token([0; 4], &[4], 4))),
            Err("a TOKEN whose queue names a position twice or outside the system")
        );
        assert_eq!(
            admits(&p, Msg::Request { sn: 0 }),
            Err("a REQUEST numbered 0: request numbers start at 1")
        );
        assert_eq!(admits(&p, Msg::Request { sn: 9 }), Ok(()));
        let holder = node(0);
        assert_eq!(admits(&holder, Msg::Token(token([0; 4], &[], 0))), Ok(()), "a duplicated TOKEN");
    }
}
