//! # Token ring (with a parked idle token, skipped successors and token regeneration)
//!
//! *The token-ring algorithm of Tanenbaum & van Steen, Distributed Systems (mutual exclusion: a
//! token-ring algorithm), with Le Lann's ring ("Distributed systems — towards a formal
//! approach", IFIP Congress 1977) and the lost-token problem the textbooks discuss.*
//!
//! ## The idea
//! The processes form a logical ring; one TOKEN circulates, and only its holder may enter the
//! critical section. The token starts at node 0. A holder that wants the section enters, leaves,
//! then passes the token on: one entry per visit, so nobody starves and waiting is bounded by
//! one lap.
//!
//! ## The rules
//! 1. **Visit.** A node that receives the TOKEN and wants the section enters (the token's counter
//!    goes up by one and the token records the node as `last_user`); on leaving it passes the
//!    token to its successor. A node that does not want it passes it on at once.
//! 2. **Parking (how runs end).** A token that circulates for ever never lets a run go quiet, and
//!    the per-entry message count of the light-load workload would be undefined. So the token
//!    *parks*: a node that receives it back with `last_user` equal to itself — a full lap during
//!    which nobody entered — keeps it. Every node saw that token pass with the same `last_user`,
//!    so every node knows where it parks. A node that wants the section while the token is parked
//!    elsewhere sends one REQUEST to the `last_user` it last saw; a parked holder that receives a
//!    REQUEST sends the token round again; a non-parked node that receives one remembers it
//!    (`wake`) and does not park the token on its next visit. The token starts parked at node 0.
//!    A REQUEST may be stale (the token was still circulating and would have come anyway): at
//!    worst it costs one extra idle lap.
//! 3. **Skipping a crashed successor.** Every node knows the ring configuration. Each TOKEN pass
//!    is acknowledged (ACK, counted as detection traffic); a sender keeps a copy of the token
//!    until the ACK arrives. With no ACK within `ack_timeout` (default 2·Ttrans + 1 ms), the
//!    successor is declared crashed, *removed* from the ring (the token carries the removed set,
//!    so every node learns it on the next visit), and the copy goes to the next node — as a new
//!    generation of this origin (as in rule 4), since the successor may be alive with the token.
//! 4. **Regeneration (explicit detection rule).** A node that has wanted the section for
//!    `regen_timeout` (parameter, default 500 ms) without receiving the token declares it lost
//!    and regenerates it with generation `g + 1`, where `g` is the highest generation it has
//!    seen (ties between regenerators broken by position). A node that receives a token of a
//!    lower generation than one it has already seen discards it.
//! 5. **Duplicates.** Every pass numbers the token (`hops`). A node that receives a copy of the
//!    token it has already had — same generation and origin, a pass number not above the highest
//!    it saw — acknowledges it and discards it. A link that duplicates messages therefore cannot
//!    multiply the token; without this rule every duplicated TOKEN would circulate for ever as a
//!    token of its own, and their number would grow with every lap.
//!
//! ```text
//!   idle ──Acquire (token parked here)──▶ holding ──Release / TOKEN→succ──▶ idle
//!   idle ──Acquire / REQUEST→last_user──▶ waiting ──TOKEN──▶ holding
//!                                         waiting ──regen_timeout / regenerate g+1──▶ holding
//!   TOKEN arrives, not wanted:  last_user = me and no wake ──▶ park   |   otherwise ──▶ TOKEN→succ
//! ```
//!
//! ## Costs
//! Light load (`sequential`, token parked at `p`, requester `j` at ring distance `d(p, j)`):
//! one REQUEST, `d(p, j)` TOKEN hops to reach `j`, then `N` TOKEN hops for the idle lap that
//! parks it at `j` again — `N + d(p, j) + 1` messages per entry (every TOKEN also draws an
//! ACK). For `N = 9` and requesters 1, 2, …, 8, 1, 2 that is 111 messages for 10 entries
//! (101 TOKEN + 10 REQUEST), plus 101 ACKs. Under saturation each entry costs one TOKEN hop:
//! the textbook's "1 … ∞". Synchronization delay: one hop (T) when the next node wants it, up
//! to N − 1 hops in general; response time under light load 0 … (N − 1)·T after the REQUEST.
//!
//! ## Fencing tokens
//! The token's counter, which grows at every entry, packed under the token's identity:
//! `(generation · N + origin) · 2³² + counter`. Every entry made with a regenerated token
//! carries a larger fencing token than any entry made with the token it replaced — until the
//! replaced token turns out to be alive. Two waiters that regenerate at once both make
//! generation `g + 1`, but from different origins, so their tokens differ: the one of the
//! higher origin fences the other out, and a resource that checks fencing tokens (and the
//! `fencing` property) exposes the double token instead of accepting two equal ones.
//!
//! ## Forged messages
//! A real node refuses (`Algorithm::admits`) a TOKEN from a node that is not its ring
//! predecessor — unless every node in between is in the token's removed set, as rule 3 skips
//! them — a TOKEN that says its receiver was removed, names a position outside the ring or
//! carries pass number 0, and an ACK of pass 0. It admits every REQUEST, and an ACK from any
//! node: a late ACK may come from a node that was the successor before a crash cleared this
//! node's removed set, and an ACK that does not match the pass in flight changes nothing.
//!
//! ## Assumptions and known flaws
//! Safe, deadlock-free and starvation-free with reliable links and no failures. A crashed node
//! that does not hold the token is skipped (`scenarios/token-ring-skip-crashed.toml`). A token
//! lost with its crashed holder comes back after `regen_timeout`
//! (`scenarios/token-ring-lost-token.toml`) — but the detection rule cannot tell a crashed
//! holder from a slow one: with a paused holder, or with two waiters that time out together,
//! the rule creates a second token and two processes enter the critical section
//! (`scenarios/token-ring-two-tokens.toml`, safety violation found). The rule is only correct
//! when `regen_timeout` exceeds the longest possible wait (about N·(longest hold + Ttrans) plus a
//! lap) *and* the holder cannot be slower than that. An ACK timeout on a slow (paused) successor,
//! or a lost ACK, removes a live node and duplicates the token in the same way; the copy sent
//! past it is therefore a new generation (rule 3 regenerates it), so the two copies never share
//! a fencing token and a node that saw the new one discards the old: a resource that checks
//! fencing tokens refuses the skipped node's entries made after the copy's first entry
//! (`scenarios/token-ring-lost-ack.toml`). A removed node that recovers
//! stays out of the ring (there is no re-join protocol).
//!
//! The textbooks name both sides: a process that crashes while holding the token stops the
//! ring, and detecting a lost token is hard because the time between two appearances is
//! unbounded — a timeout-based regeneration can put two tokens in the system.

use std::collections::BTreeSet;

use ringleader_core::time::MILLISECOND;
use ringleader_core::{Context, Event, FencingToken, Message, NodeId, Outbox, Process, Request, Time};
use serde::{Deserialize, Serialize};

use crate::{Algorithm, Family, ParamError, Setup, TopologyKind};

/// The circulating permission.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Token {
    /// Incremented by every regeneration.
    pub generation: u64,
    /// The position that regenerated this generation (breaks ties between regenerators).
    pub origin: NodeId,
    /// Entries made with this token (and the ones it replaced).
    pub counter: u64,
    /// The last node that entered with it: the token parks there after an idle lap.
    pub last_user: NodeId,
    /// Nodes removed from the ring (found crashed), sorted.
    pub removed: Vec<NodeId>,
    /// Passes so far: an ACK names the pass it acknowledges (a late ACK of an earlier pass to
    /// the same node must not be taken for this one).
    pub hops: u64,
}

impl Token {
    fn rank(&self) -> (u64, NodeId) {
        (self.generation, self.origin)
    }

    /// The [`FencingToken`] of the next entry, packed: its epoch is `generation · n + origin`
    /// (capped at 2³² − 1) and its counter the low 32 bits of `counter`, so tokens order as
    /// (generation, origin, counter) and tokens regenerated by different origins never share a
    /// fencing token.
    fn fencing(&self, n: u32) -> u64 {
        let identity = self.generation.saturating_mul(u64::from(n)).saturating_add(u64::from(self.origin));
        let epoch = u32::try_from(identity).unwrap_or(u32::MAX);
        FencingToken::new(epoch, self.counter as u32).packed()
    }
}

/// Messages of the token ring.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// The permission, passed to the successor.
    Token(Token),
    /// Acknowledges a TOKEN (failure detection of the successor).
    Ack {
        /// The `hops` of the TOKEN acknowledged.
        hops: u64,
    },
    /// Asks a node where the token parked to send it round again.
    Request,
}

impl Message for Msg {
    const KINDS: &'static [&'static str] = &["token", "ack", "request"];
    fn kind_index(&self) -> usize {
        match self {
            Msg::Token(_) => 0,
            Msg::Ack { .. } => 1,
            Msg::Request => 2,
        }
    }
    fn is_detection(&self) -> bool {
        matches!(self, Msg::Ack { .. })
    }
}

/// Timers of the token ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
pub enum Timer {
    /// The successor `to` has not acknowledged the token.
    AckWait {
        /// The successor.
        to: NodeId,
    },
    /// This node has waited too long for the token: regenerate it.
    TokenSilent,
}

/// Validated parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Config {
    /// How long a sender waits for the ACK of a TOKEN.
    pub ack_timeout: Time,
    /// How long a waiting node waits for the token before regenerating it.
    pub regen_timeout: Time,
}

/// A node of the token ring.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct TokenRing {
    me: NodeId,
    n: u32,
    config: Config,
    wants: bool,
    /// The token while this node is in the critical section.
    holding: Option<Token>,
    /// The token while it is parked here.
    parked: Option<Token>,
    /// The token just passed, kept until the successor acknowledges it.
    outgoing: Option<(NodeId, Token)>,
    /// A REQUEST arrived while the token was not here: do not park it on its next visit.
    wake: bool,
    /// Where the token parks, as far as this node knows.
    last_user_seen: NodeId,
    /// Highest (generation, origin) seen — on stable storage.
    newest: (u64, NodeId),
    /// Highest counter seen — on stable storage.
    counter_seen: u64,
    /// Highest pass number seen of the token ranked `newest` — on stable storage.
    hops_seen: u64,
    removed: BTreeSet<NodeId>,
}

type Out = Outbox<Msg, Timer>;

impl TokenRing {
    /// The next node of the ring that has not been removed (`me` when nobody else is left).
    fn successor(&self) -> NodeId {
        (1..self.n).map(|k| (self.me + k) % self.n).find(|x| !self.removed.contains(x)).unwrap_or(self.me)
    }

    fn pass(&mut self, mut token: Token, out: &mut Out) {
        self.wake = false;
        if self.removed.contains(&token.last_user) {
            // The token would park at a node the ring skips (a removed node that is alive and
            // entered with its own copy): it would circulate for ever. It parks here instead.
            token.last_user = self.me;
            self.last_user_seen = self.me;
        }
        token.removed = self.removed.iter().copied().collect();
        token.hops += 1;
        let next = self.successor();
        if next == self.me {
            self.parked = Some(token);
            return;
        }
        out.send(next, Msg::Token(token.clone()));
        out.set_timer(Timer::AckWait { to: next }, self.config.ack_timeout);
        self.outgoing = Some((next, token));
    }

    fn enter(&mut self, mut token: Token, out: &mut Out) {
        token.counter += 1;
        token.last_user = self.me;
        self.counter_seen = self.counter_seen.max(token.counter);
        self.last_user_seen = self.me;
        self.wants = false;
        out.cancel_timer(Timer::TokenSilent);
        out.emit(Event::Entered { fencing: token.fencing(self.n) });
        self.holding = Some(token);
    }

    /// The token is here (received, regenerated or un-parked).
    fn visit(&mut self, token: Token, out: &mut Out) {
        if self.wants {
            self.enter(token, out);
        } else if token.last_user == self.me && !self.wake {
            self.parked = Some(token);
        } else {
            self.pass(token, out);
        }
    }
}

impl Process for TokenRing {
    type Msg = Msg;
    type Timer = Timer;

    fn on_message(&mut self, _cx: &Context, from: NodeId, msg: Msg, out: &mut Out) {
        match msg {
            Msg::Token(token) => {
                out.send(from, Msg::Ack { hops: token.hops });
                if token.rank() < self.newest {
                    return; // a replaced token: discard it
                }
                if token.rank() == self.newest && token.hops <= self.hops_seen {
                    return; // a copy of a pass already received: discard it
                }
                self.newest = token.rank();
                self.hops_seen = token.hops;
                self.counter_seen = self.counter_seen.max(token.counter);
                self.last_user_seen = token.last_user;
                self.removed.extend(token.removed.iter().copied());
                self.visit(token, out);
            }
            Msg::Ack { hops } => {
                if self.outgoing.as_ref().is_some_and(|(to, t)| *to == from && t.hops == hops) {
                    self.outgoing = None;
                    out.cancel_timer(Timer::AckWait { to: from });
                }
            }
            Msg::Request => match self.parked.take() {
                Some(token) => self.pass(token, out),
                None => self.wake = true,
            },
        }
    }

    fn on_timer(&mut self, _cx: &Context, timer: Timer, out: &mut Out) {
        match timer {
            Timer::AckWait { to } => {
                let Some((dest, mut token)) = self.outgoing.take() else { return };
                if dest != to {
                    self.outgoing = Some((dest, token));
                    return;
                }
                // No ACK: the successor is declared crashed and removed from the ring.
                self.removed.insert(to);
                out.emit(Event::Suspect { node: to });
                // The successor may be alive with the token (only its ACK was lost, or it is
                // slow): the copy sent on becomes a token of its own, a new generation from this
                // origin, so that it fences the skipped node's copy out (a node that has seen it
                // discards the older token) instead of repeating its fencing tokens.
                token.generation = self.newest.0 + 1;
                token.origin = self.me;
                token.hops = 0;
                self.newest = token.rank();
                self.hops_seen = 0;
                if token.last_user == to {
                    token.last_user = self.me;
                    self.last_user_seen = self.me;
                }
                if self.wants {
                    self.enter(token, out);
                } else {
                    self.pass(token, out);
                }
            }
            Timer::TokenSilent => {
                if !self.wants {
                    return;
                }
                // The explicit detection rule: waited `regen_timeout` without the token.
                let token = Token {
                    generation: self.newest.0 + 1,
                    origin: self.me,
                    counter: self.counter_seen,
                    last_user: self.me,
                    removed: self.removed.iter().copied().collect(),
                    hops: 0,
                };
                self.newest = token.rank();
                self.hops_seen = 0;
                out.emit(Event::TokenRegenerated);
                self.enter(token, out);
            }
        }
    }

    fn on_request(&mut self, _cx: &Context, req: Request, out: &mut Out) {
        match req {
            Request::Acquire if !self.wants && self.holding.is_none() => {
                self.wants = true;
                if let Some(token) = self.parked.take() {
                    self.enter(token, out);
                    return;
                }
                if self.last_user_seen != self.me {
                    out.send(self.last_user_seen, Msg::Request);
                }
                out.set_timer(Timer::TokenSilent, self.config.regen_timeout);
            }
            Request::Release => {
                if let Some(token) = self.holding.take() {
                    out.emit(Event::Exited);
                    self.pass(token, out);
                }
            }
            _ => {}
        }
    }

    /// A recovered node forgets its wish, the token it held and its view of the ring; it keeps
    /// the newest generation and counter it saw.
    fn on_recover(&mut self, _cx: &Context, _out: &mut Out) {
        self.wants = false;
        self.holding = None;
        self.parked = None;
        self.outgoing = None;
        self.wake = false;
        self.removed.clear();
    }

    fn in_critical_section(&self) -> bool {
        self.holding.is_some()
    }
}

impl Algorithm for TokenRing {
    const NAME: &'static str = "token-ring";
    const FAMILY: Family = Family::Mutex;
    const SUMMARY: &'static str =
        "a TOKEN circulates on a ring, parks after an idle lap; skips crashed nodes, regenerates lost tokens";
    const TOPOLOGY: TopologyKind = TopologyKind::Ring;
    type Config = Config;

    /// A TOKEN comes from the ring predecessor, or from a node before it when every node in
    /// between is in the token's removed set (the sender skipped them, rule 3); it never names
    /// its receiver as removed nor a position outside the ring, and every pass numbers it from
    /// 1 — so does every ACK.
    fn admits(&self, from: NodeId, msg: &Msg) -> Result<(), &'static str> {
        let n = self.n;
        match msg {
            Msg::Token(t) => {
                if t.hops == 0 {
                    return Err("a TOKEN of pass 0: every pass numbers the token from 1");
                }
                if t.origin >= n || t.last_user >= n || t.removed.iter().any(|&x| x >= n) {
                    return Err("a TOKEN naming a position outside the ring");
                }
                if t.removed.contains(&self.me) {
                    return Err("a TOKEN that says its receiver was removed from the ring");
                }
                let mut skipped = (1..n).map(|k| (from + k) % n).take_while(|&x| x != self.me);
                if skipped.any(|x| !t.removed.contains(&x)) {
                    return Err(
                        "a TOKEN from a node that is not the ring predecessor, past nodes not removed",
                    );
                }
                Ok(())
            }
            Msg::Ack { hops: 0 } => Err("an ACK of pass 0, which no TOKEN carries"),
            Msg::Ack { .. } | Msg::Request => Ok(()),
        }
    }

    fn configure(setup: &Setup) -> Result<Config, ParamError> {
        let ack_timeout = setup.params.duration("ack_timeout", 2 * setup.max_delay + MILLISECOND)?;
        let regen_timeout = setup.params.duration("regen_timeout", 500 * MILLISECOND)?;
        for (key, v) in [("ack_timeout", ack_timeout), ("regen_timeout", regen_timeout)] {
            if v == 0 {
                return Err(ParamError::OutOfRange { key: key.into(), reason: "must be positive".into() });
            }
        }
        Ok(Config { ack_timeout, regen_timeout })
    }

    fn new(me: NodeId, config: &Config, setup: &Setup) -> Self {
        TokenRing {
            me,
            n: setup.uids.len() as u32,
            config: *config,
            wants: false,
            holding: None,
            parked: (me == 0).then(|| Token {
                generation: 0,
                origin: 0,
                counter: 0,
                last_user: 0,
                removed: vec![],
                hops: 0,
            }),
            outgoing: None,
            wake: false,
            last_user_seen: 0,
            newest: (0, 0),
            counter_seen: 0,
            hops_seen: 0,
            removed: BTreeSet::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Params;
    use ringleader_core::{Command, Topology};

    use crate::testing::TestSystem;
    use ringleader_core::harness::Harness;

    /// The ACK timeout: 2·Ttrans + 1 ms with Ttrans = 1 ms.
    const ACK: Time = 3 * MILLISECOND;

    /// Position `me` of a ring of four; the token starts parked at position 0.
    fn node(me: NodeId) -> Harness<TokenRing> {
        TestSystem::new(4).topology(Topology::Ring { n: 4 }).node(me)
    }

    fn token(counter: u64, last_user: NodeId, removed: &[NodeId], hops: u64) -> Token {
        Token { generation: 0, origin: 0, counter, last_user, removed: removed.to_vec(), hops }
    }

    /// Rule 1: a node that wants the section enters with the arriving token and passes it on
    /// when it leaves; one that does not passes it on at once. Every TOKEN is acknowledged.
    #[test]
    fn rule_1_a_visit_enters_if_wanted_and_passes_the_token_on() {
        let mut p = node(1);
        let step = p.request(Request::Acquire);
        assert_eq!(step.sent(), vec![(0, Msg::Request)]);
        assert_eq!(step.set(), vec![(Timer::TokenSilent, 500 * MILLISECOND)]);
        let step = p.deliver(0, Msg::Token(token(0, 0, &[], 1)));
        assert_eq!(step.sent(), vec![(0, Msg::Ack { hops: 1 })]);
        assert_eq!(step.emitted(), vec![Event::Entered { fencing: 1 }]);
        assert_eq!(step.cancelled(), vec![Timer::TokenSilent]);
        let step = p.request(Request::Release);
        assert_eq!(step.emitted(), vec![Event::Exited]);
        assert_eq!(step.sent(), vec![(2, Msg::Token(token(1, 1, &[], 2)))]);
        assert_eq!(step.set(), vec![(Timer::AckWait { to: 2 }, ACK)]);
        assert_eq!(p.deliver(2, Msg::Ack { hops: 2 }).cancelled(), vec![Timer::AckWait { to: 2 }]);

        let mut q = node(2);
        assert_eq!(
            q.deliver(1, Msg::Token(token(1, 1, &[], 2))).sent(),
            vec![(1, Msg::Ack { hops: 2 }), (3, Msg::Token(token(1, 1, &[], 3)))]
        );
    }

    /// Rule 2: after an idle lap the token parks at its last user; a REQUEST sends it round
    /// again; a REQUEST that finds no parked token keeps the next visit from parking it.
    #[test]
    fn rule_2_the_token_parks_after_an_idle_lap_and_a_request_wakes_it() {
        let mut p = node(1);
        assert_eq!(
            p.deliver(0, Msg::Token(token(3, 1, &[], 9))).sent(),
            vec![(0, Msg::Ack { hops: 9 })],
            "parked"
        );
        assert_eq!(p.deliver(3, Msg::Request).sent(), vec![(2, Msg::Token(token(3, 1, &[], 10)))]);

        let mut first = node(0);
        assert_eq!(
            first.request(Request::Acquire).emitted(),
            vec![Event::Entered { fencing: 1 }],
            "parked at 0"
        );

        let mut q = node(1);
        assert!(q.deliver(2, Msg::Request).is_empty());
        assert_eq!(
            q.deliver(0, Msg::Token(token(3, 1, &[], 9))).sent(),
            vec![(0, Msg::Ack { hops: 9 }), (2, Msg::Token(token(3, 1, &[], 10)))],
            "woken: not parked"
        );
    }

    /// Rule 3: with no ACK in time the successor is removed, the token carries the removal and
    /// goes to the next node as a new generation of this origin: the skipped node may be alive
    /// with the token, and its entries must not repeat the copy's fencing tokens.
    #[test]
    fn rule_3_an_unacknowledged_successor_is_removed_and_skipped() {
        let mut p = node(1);
        p.deliver(0, Msg::Token(token(0, 0, &[], 1)));
        let step = p.fire(Timer::AckWait { to: 2 });
        assert_eq!(step.emitted(), vec![Event::Suspect { node: 2 }]);
        let copy = Token { generation: 1, origin: 1, ..token(0, 0, &[2], 1) };
        assert_eq!(step.sent(), vec![(3, Msg::Token(copy))]);
        assert_eq!(step.set(), vec![(Timer::AckWait { to: 3 }, ACK)]);
        // The skipped node, alive, enters with the old token; the copy's holder enters with a
        // larger fencing token, and the old token is discarded where the copy has passed.
        let mut skipped = node(2);
        skipped.request(Request::Acquire);
        let old = skipped.deliver(1, Msg::Token(token(0, 0, &[], 2))).emitted();
        let mut next = node(3);
        next.request(Request::Acquire);
        let new =
            next.deliver(1, Msg::Token(Token { generation: 1, origin: 1, ..token(0, 0, &[2], 1) })).emitted();
        let (Event::Entered { fencing: a }, Event::Entered { fencing: b }) = (&old[0], &new[0]) else {
            panic!("{old:?} {new:?}")
        };
        assert!(b > a, "{b} > {a}");
        next.request(Request::Release);
        assert_eq!(next.deliver(2, Msg::Token(token(1, 2, &[], 3))).sent(), vec![(2, Msg::Ack { hops: 3 })]);
    }

    /// Rule 4: a waiter silent for `regen_timeout` regenerates the token with the next
    /// generation; a token of an older generation is then discarded.
    #[test]
    fn rule_4_a_long_wait_regenerates_the_token_and_older_tokens_are_discarded() {
        let mut p = node(1);
        p.request(Request::Acquire);
        let step = p.fire(Timer::TokenSilent);
        assert_eq!(
            step.emitted(),
            vec![Event::TokenRegenerated, Event::Entered { fencing: FencingToken::new(5, 1).packed() }]
        );
        p.request(Request::Release);
        assert_eq!(
            p.deliver(0, Msg::Token(token(0, 0, &[], 1))).sent(),
            vec![(0, Msg::Ack { hops: 1 })],
            "discarded"
        );
    }

    /// Two waiters time out together and both regenerate generation 1: their entries must
    /// carry different fencing tokens, or fencing cannot expose the double token.
    #[test]
    fn tokens_regenerated_at_once_carry_distinct_fencing_tokens() {
        let uids = [1, 2, 3, 4];
        let topology = Topology::Ring { n: 4 };
        let params = Params::default();
        let setup =
            Setup { uids: &uids, topology: &topology, params: &params, max_delay: MILLISECOND, seed: 1 };
        let config = TokenRing::configure(&setup).unwrap();
        let fencing = |me: NodeId| {
            let cx = Context { me, uids: &uids, topology: &topology, now: 0, random: 0 };
            let mut p = TokenRing::new(me, &config, &setup);
            let mut out = Out::new();
            p.on_request(&cx, Request::Acquire, &mut out);
            p.on_timer(&cx, Timer::TokenSilent, &mut out);
            out.drain()
                .find_map(|a| match a {
                    Command::Emit(Event::Entered { fencing }) => Some(fencing),
                    _ => None,
                })
                .expect("regenerated and entered")
        };
        let (a, b) = (fencing(1), fencing(3));
        assert_ne!(a, b);
        assert!(a < b, "the higher origin fences the lower one out: {a} vs {b}");
        // Both are above every entry of generation 0 (counter below 2³²).
        assert!(a > u64::from(u32::MAX));
    }

    /// Rule 5: a second copy of a pass already received is acknowledged and discarded, so a
    /// duplicating link cannot multiply the token.
    #[test]
    fn rule_5_a_duplicated_token_is_acknowledged_and_discarded() {
        let mut p = node(1);
        let step = p.deliver(0, Msg::Token(token(0, 0, &[], 1)));
        assert_eq!(step.sent(), vec![(0, Msg::Ack { hops: 1 }), (2, Msg::Token(token(0, 0, &[], 2)))]);
        let copy = p.deliver(0, Msg::Token(token(0, 0, &[], 1)));
        assert_eq!(copy.sent(), vec![(0, Msg::Ack { hops: 1 })], "the copy is only acknowledged");
        assert!(copy.set().is_empty());
    }

    /// Forged messages: a TOKEN from a non-predecessor past a node not removed, one that says
    /// its receiver was removed, names a stranger position or has pass 0, and an ACK of pass 0
    /// are refused; the predecessor's TOKEN, one that skips removed nodes, any REQUEST and a
    /// late ACK are admitted.
    #[test]
    fn admits_a_token_only_from_the_predecessor_or_across_removed_nodes() {
        let p = node(2);
        let admits = |from, msg: Msg| p.process.admits(from, &msg);
        assert_eq!(admits(1, Msg::Token(token(0, 0, &[], 1))), Ok(()));
        assert_eq!(admits(0, Msg::Token(token(0, 0, &[1], 1))), Ok(()), "1 was skipped");
        assert_eq!(admits(3, Msg::Token(token(0, 0, &[0, 1], 4))), Ok(()), "0 and 1 were skipped");
        assert_eq!(
            admits(0, Msg::Token(token(0, 0, &[], 1))),
            Err("a TOKEN from a node that is not the ring predecessor, past nodes not removed")
        );
        assert_eq!(
            admits(3, Msg::Token(token(0, 0, &[1], 1))),
            Err("a TOKEN from a node that is not the ring predecessor, past nodes not removed"),
            "0 lies between 3 and 2 and was not removed"
        );
        assert_eq!(
            admits(1, Msg::Token(token(0, 0, &[2], 1))),
            Err("a TOKEN that says its receiver was removed from the ring")
        );
        assert_eq!(
            admits(1, Msg::Token(token(0, 4, &[], 1))),
            Err("a TOKEN naming a position outside the ring")
        );
        assert_eq!(
            admits(1, Msg::Token(token(0, 0, &[9], 1))),
            Err("a TOKEN naming a position outside the ring")
        );
        assert_eq!(
            admits(1, Msg::Token(token(0, 0, &[], 0))),
            Err("a TOKEN of pass 0: every pass numbers the token from 1")
        );
        assert_eq!(admits(0, Msg::Ack { hops: 0 }), Err("an ACK of pass 0, which no TOKEN carries"));
        assert_eq!(admits(0, Msg::Ack { hops: 7 }), Ok(()), "a late ACK from an earlier successor");
        assert_eq!(admits(0, Msg::Request), Ok(()));
    }
}
