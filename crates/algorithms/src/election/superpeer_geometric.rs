//! # Super-peers by repelling tokens in a geometric space
//!
//! *Tanenbaum & van Steen, Distributed Systems (elections in large-scale systems: place the nodes
//! in an m-dimensional geometric space, hand N tokens to N random nodes, no node holding more
//! than one; tokens repel one another, their positions spread by gossiping, and a node that
//! feels a total force above a threshold moves its token in the direction of that force).*
//!
//! ## The idea
//! Place the nodes in a space where distance stands for latency. Drop as many tokens as
//! super-peers are wanted on random nodes; tokens repel one another like charges, so they drift
//! apart until they are spread evenly; a node that has held a token for a while without having
//! to move it becomes a super-peer, and every node is served by the nearest super-peer it knows.
//! Nobody sees the whole picture: token positions travel by gossip, with ages.
//!
//! ## The rules
//! 1. **Space.** The unit torus [0, 1)² (no border, so no border force); a node's position is a
//!    hash of its uid and `salt`; its overlay neighbours are its `neighbours` nearest nodes.
//! 2. **Tokens.** T = ⌈N · fraction⌉ tokens start on the T nodes with the smallest hash (at most
//!    one per node). Token t carries a version, bumped at every move and when it settles.
//! 3. **Gossip (rounds of `period`).** A node keeps, per token, the newest entry it heard:
//!    (version, holder, position, settled, age). Every round it ages its entries by one. When it
//!    learns something new (a higher version), it pushes its entries younger than `max_age` rounds
//!    to `fanout` random neighbours in each of the next `pushes` rounds (rumour mongering with
//!    ages: the age bounds how far news travel, `pushes` how often a node repeats it). Nodes with
//!    no news fall silent, so the run goes quiet once every token has settled.
//! 4. **Force.** Distances are measured in units of the ideal spacing s = 1/√T. A token at
//!    distance ρ·s pushes with magnitude 1/ρ² − 1/4 for ρ < 2 (zero beyond: the cut-off keeps
//!    the law local and continuous). The holder sums the pushes of the tokens it knows.
//! 5. **Move.** Every round, if the net force exceeds θ·(1 + moves/8) — `threshold`, raised by an
//!    eighth for every move the token already made, so that every token stops after finitely many
//!    moves — the holder passes the token (TOKEN) to the neighbour best aligned with the force that
//!    is not known to hold a token. A node that already holds one passes an arriving token on to a
//!    random neighbour (at most one token per node).
//! 6. **Settle.** A holder that kept its token for `tau` rounds becomes a super-peer
//!    (`SuperPeer`) and announces it (a new version, settled). A super-peer that must move its
//!    token later stops being one (`SuperPeerLost`) and sends RESIGN to its clients.
//! 7. **Service.** Every node is served by the nearest settled token it knows: it sends JOIN to it
//!    and reports `ServedBy` (distance in thousandths of s). A node that is not (or no longer) a
//!    super-peer answers JOIN with RESIGN, and a client that gets RESIGN picks again. A node that
//!    knows no super-peer PULLs the entries of a random neighbour every `max_age` rounds until it
//!    does — this closes the gaps that probabilistic gossip leaves.
//!
//! ## Parameters (defaults chosen by measurement, see `docs/ELECTIONS-LARGE.md`)
//! `fraction` 0.02 (T = ⌈N · fraction⌉ tokens), `neighbours` 8, `fanout` 2, `pushes` 2, `tau` 8
//! rounds, `threshold` 1.5, `max_age` ⌈√(1/fraction)⌉ + 3 rounds (news travel about one spacing
//! and a bit: a token feels its neighbours), `period` 10 ms (at least 4 × the delay bound),
//! `salt` 0 (another geometry).
//!
//! ## Costs and outcome
//! While tokens move, nodes near news send `fanout` GOSSIP per round; measured ≈ 40 messages per
//! node in total (≈ 90 % gossip), converging in ≈ 50–150 rounds for N = 10³–10⁵. TOKEN is one
//! message per move; JOIN/RESIGN/PULL keep the service exact. The report gives rounds to
//! converge, messages per round (`per_operation`), the fraction (exactly T super-peers: tokens are
//! never lost nor merged), load and distance; the tests and the tables also measure the minimum
//! spacing between super-peers (≥ 0.45 s on every run tested up to 3,000 nodes; 0.38 s at
//! 100,000, where 2,000 tokens make a close pair likelier).
//!
//! ## Assumptions
//! Positions reflect latency (the space is given, as in the textbook); reliable channels; rounds
//! longer than a message delay; no failures.
//!
//! ## Known flaws
//! Gossip is probabilistic: a node may keep a stale entry for a token that moved, and be served
//! by a node that is no longer a super-peer (the `coverage` checker would say so). Forces stop at
//! a threshold, so spacing is even only up to that threshold; the cooling guarantees termination
//! at the price of freezing some tokens early. A crashed holder takes its token with it.

use ringleader_core::{Context, Event, Message, NodeId, Outbox, Process, Time, time::MILLISECOND};
use serde::{Deserialize, Serialize};

use super::superpeer_dht::mix64;
use crate::{Algorithm, Family, LeaderRule, ParamError, Setup, TopologyKind};

/// What a node knows of one token.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Entry {
    /// The token (the position of the node it started on).
    pub token: NodeId,
    /// Bumped at every move and when the token settles.
    pub version: u32,
    /// The node holding it.
    pub holder: NodeId,
    /// The holder's position.
    pub at: (u32, u32),
    /// True when the holder is a super-peer.
    pub settled: bool,
    /// Rounds since the holder wrote this entry.
    pub age: u8,
}

/// Geometric super-peer messages.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// GOSSIP: the sender's fresh entries.
    Gossip(Vec<Entry>),
    /// TOKEN: the receiver now holds this token.
    Token {
        /// The token.
        token: NodeId,
        /// Its new version.
        version: u32,
        /// Moves it made so far.
        moves: u32,
    },
    /// PULL: the sender knows no super-peer; the receiver answers with GOSSIP of all it knows.
    Pull,
    /// JOIN: the sender is now served by the receiver.
    Join,
    /// RESIGN: the sender is not (or no longer) a super-peer.
    Resign,
}

impl Message for Msg {
    const KINDS: &'static [&'static str] = &["gossip", "token", "pull", "join", "resign"];
    fn kind_index(&self) -> usize {
        match self {
            Msg::Gossip(_) => 0,
            Msg::Token { .. } => 1,
            Msg::Pull => 2,
            Msg::Join => 3,
            Msg::Resign => 4,
        }
    }
}

/// The gossip round.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
pub enum Timer {
    /// Age, evaluate the force, push.
    Round,
    /// Every `max_age` rounds, a node that knows no super-peer pulls from a random neighbour.
    Check,
}

/// The validated parameters and the space.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Config {
    target: u32,
    fanout: u32,
    tau: u32,
    threshold_milli: u32,
    max_age: u8,
    pushes: u8,
    period: Time,
    positions: Vec<(u32, u32)>,
    neighbours: Vec<Vec<NodeId>>,
    holders: Vec<bool>,
}

/// A token this node holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
struct Held {
    token: NodeId,
    version: u32,
    moves: u32,
    still: u32,
}

/// One node of the space.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct SuperPeerGeometric {
    at: (u32, u32),
    neighbours: Vec<(NodeId, (u32, u32))>,
    target: u32,
    fanout: u32,
    tau: u32,
    threshold_milli: u32,
    max_age: u8,
    period: Time,
    known: Vec<Entry>,
    held: Option<Held>,
    settled: bool,
    ticking: bool,
    checking: bool,
    /// Rounds left in which to push (set to `pushes` whenever something new was learned).
    news: u8,
    pushes: u8,
    served_by: Option<NodeId>,
    /// Nodes that joined this super-peer (told when it resigns).
    clients: Vec<NodeId>,
}

type Out = Outbox<Msg, Timer>;

/// Signed torus difference `a − b` on one axis, in units of the side.
fn delta(a: u32, b: u32) -> f64 {
    a.wrapping_sub(b) as i32 as f64 / 4_294_967_296.0
}

/// Torus distance between two positions, in units of the side.
pub fn distance(a: (u32, u32), b: (u32, u32)) -> f64 {
    delta(a.0, b.0).hypot(delta(a.1, b.1))
}

/// The ideal spacing of `target` points on the unit torus.
fn spacing(target: u32) -> f64 {
    1.0 / (target.max(1) as f64).sqrt()
}

impl SuperPeerGeometric {
    /// This node's position on the unit torus (fixed point: 2^32 is the side).
    pub fn position(&self) -> (u32, u32) {
        self.at
    }

    /// True when this node is a super-peer.
    pub fn is_super_peer(&self) -> bool {
        self.settled
    }

    /// True when this node holds a token.
    pub fn holds_token(&self) -> bool {
        self.held.is_some()
    }

    /// Moves made by the token this node holds.
    pub fn token_moves(&self) -> Option<u32> {
        self.held.map(|h| h.moves)
    }

    fn round(&self, cx: &Context) -> u64 {
        cx.now / self.period
    }

    fn random(cx: &Context, salt: u64) -> u64 {
        mix64(cx.random ^ mix64(salt))
    }

    fn merge(&mut self, e: Entry) -> bool {
        match self.known.binary_search_by_key(&e.token, |k| k.token) {
            Ok(i) => {
                let k = &mut self.known[i];
                if e.version > k.version {
                    *k = e;
                    true
                } else {
                    if e.version == k.version && e.age < k.age {
                        k.age = e.age;
                    }
                    false
                }
            }
            Err(i) => {
                self.known.insert(i, e);
                true
            }
        }
    }

    /// Writes this holder's own entry (a new version: it moved here or settled) and makes it news.
    fn write_own(&mut self, cx: &Context) {
        if let Some(h) = self.held {
            let e = Entry {
                token: h.token,
                version: h.version,
                holder: cx.me,
                at: self.at,
                settled: self.settled,
                age: 0,
            };
            match self.known.binary_search_by_key(&h.token, |k| k.token) {
                Ok(i) => self.known[i] = e,
                Err(i) => self.known.insert(i, e),
            }
            self.news = self.pushes;
        }
    }

    fn tick(&mut self, out: &mut Out) {
        if !self.ticking {
            self.ticking = true;
            out.set_timer(Timer::Round, self.period);
        }
    }

    fn check(&mut self, out: &mut Out) {
        if !self.checking {
            self.checking = true;
            out.set_timer(Timer::Check, self.period * self.max_age as Time);
        }
    }

    fn take_token(&mut self, cx: &Context, token: NodeId, version: u32, moves: u32, out: &mut Out) {
        self.held = Some(Held { token, version, moves, still: 0 });
        self.settled = false;
        self.write_own(cx);
        self.tick(out);
    }

    /// The net force on this node from the tokens it knows, in units of one token at spacing s.
    fn force(&self, own: NodeId) -> (f64, f64) {
        let s = spacing(self.target);
        let (mut fx, mut fy) = (0.0, 0.0);
        for e in self.known.iter().filter(|e| e.token != own) {
            let (dx, dy) = (delta(self.at.0, e.at.0) / s, delta(self.at.1, e.at.1) / s);
            let rho = dx.hypot(dy);
            if rho > 0.0 && rho < 2.0 {
                let m = 1.0 / (rho * rho) - 0.25;
                fx += dx / rho * m;
                fy += dy / rho * m;
            }
        }
        (fx, fy)
    }

    /// A holder's round: move the token if the force is too strong, else count a still round.
    fn evaluate(&mut self, cx: &Context, out: &mut Out) {
        let Some(mut h) = self.held else { return };
        let (fx, fy) = self.force(h.token);
        let threshold = self.threshold_milli as f64 / 1000.0 * (1.0 + h.moves as f64 / 8.0);
        if fx.hypot(fy) > threshold {
            let occupied = |n: NodeId| self.known.iter().any(|e| e.holder == n);
            let best = self
                .neighbours
                .iter()
                .filter(|&&(n, _)| !occupied(n))
                .map(|&(n, p)| (n, p, delta(p.0, self.at.0) * fx + delta(p.1, self.at.1) * fy))
                .filter(|&(_, _, dot)| dot > 0.0)
                .max_by(|a, b| a.2.total_cmp(&b.2));
            if let Some((to, p, _)) = best {
                let version = h.version + 1;
                out.send(to, Msg::Token { token: h.token, version, moves: h.moves + 1 });
                self.merge(Entry { token: h.token, version, holder: to, at: p, settled: false, age: 0 });
                self.news = self.pushes;
                self.held = None;
                if self.settled {
                    self.resign(cx, out);
                }
                return;
            }
        }
        h.still += 1;
        self.held = Some(h);
        if h.still >= self.tau && !self.settled {
            self.settled = true;
            h.version += 1;
            self.held = Some(h);
            self.write_own(cx);
            out.emit(Event::SuperPeer);
            self.serve(cx, cx.me, 0, out);
        }
    }

    /// This super-peer stops being one and tells its clients.
    fn resign(&mut self, cx: &Context, out: &mut Out) {
        self.settled = false;
        out.emit(Event::SuperPeerLost);
        for c in std::mem::take(&mut self.clients) {
            out.send(c, Msg::Resign);
        }
        self.served_by = None;
        self.choose(cx, out);
        self.check(out);
    }

    fn serve(&mut self, cx: &Context, sp: NodeId, distance: u64, out: &mut Out) {
        self.served_by = Some(sp);
        if sp != cx.me {
            out.send(sp, Msg::Join);
        }
        out.emit(Event::ServedBy { super_peer: sp, distance, round: self.round(cx), target: self.target });
    }

    /// A node that is not a super-peer picks the nearest settled token it knows.
    fn choose(&mut self, cx: &Context, out: &mut Out) {
        if self.settled {
            return;
        }
        let best = self
            .known
            .iter()
            .filter(|e| e.settled && e.holder != cx.me)
            .map(|e| (e.holder, distance(self.at, e.at)))
            .min_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
        if let Some((sp, d)) = best
            && self.served_by != Some(sp)
        {
            self.serve(cx, sp, (d / spacing(self.target) * 1000.0).round() as u64, out);
        }
    }

    /// Pushes the fresh entries to `fanout` distinct random neighbours.
    fn push(&mut self, cx: &Context, out: &mut Out) {
        let fresh: Vec<Entry> = self.known.iter().copied().filter(|e| e.age < self.max_age).collect();
        if fresh.is_empty() {
            return;
        }
        // A partial Fisher-Yates shuffle of the neighbour indices.
        let mut pick: Vec<usize> = (0..self.neighbours.len()).collect();
        for i in 0..(self.fanout as usize).min(pick.len()) {
            let j = i + (Self::random(cx, i as u64) % (pick.len() - i) as u64) as usize;
            pick.swap(i, j);
            out.send(self.neighbours[pick[i]].0, Msg::Gossip(fresh.clone()));
        }
    }
}

impl Process for SuperPeerGeometric {
    type Msg = Msg;
    type Timer = Timer;

    fn on_start(&mut self, cx: &Context, out: &mut Out) {
        self.check(out);
        if self.held.is_some() {
            self.write_own(cx);
            self.tick(out);
        }
    }

    fn on_message(&mut self, cx: &Context, from: NodeId, msg: Msg, out: &mut Out) {
        match msg {
            Msg::Gossip(entries) => {
                let mut changed = false;
                for e in entries {
                    if self.held.is_some_and(|h| h.token == e.token) {
                        continue;
                    }
                    changed |= self.merge(e);
                }
                if changed {
                    self.news = self.pushes;
                    if self
                        .served_by
                        .is_some_and(|sp| !self.known.iter().any(|e| e.holder == sp && e.settled))
                    {
                        self.served_by = None;
                        self.check(out);
                    }
                    self.choose(cx, out);
                    self.tick(out);
                }
            }
            Msg::Token { token, version, moves } => {
                if self.held.is_some() {
                    let others: Vec<NodeId> =
                        self.neighbours.iter().map(|&(n, _)| n).filter(|&n| n != from).collect();
                    let to = others
                        .get((Self::random(cx, 99) % others.len().max(1) as u64) as usize)
                        .copied()
                        .unwrap_or(from);
                    out.send(to, Msg::Token { token, version, moves });
                } else {
                    self.take_token(cx, token, version, moves, out);
                }
            }
            Msg::Pull => {
                if !self.known.is_empty() {
                    out.send(from, Msg::Gossip(self.known.clone()));
                }
            }
            Msg::Join => {
                if self.settled {
                    if !self.clients.contains(&from) {
                        self.clients.push(from);
                    }
                } else {
                    out.send(from, Msg::Resign);
                }
            }
            Msg::Resign => {
                for e in self.known.iter_mut().filter(|e| e.holder == from) {
                    e.settled = false;
                }
                if self.served_by == Some(from) {
                    self.served_by = None;
                    self.choose(cx, out);
                    self.check(out);
                }
            }
        }
    }

    fn on_timer(&mut self, cx: &Context, timer: Timer, out: &mut Out) {
        match timer {
            Timer::Round => {
                self.ticking = false;
                for e in &mut self.known {
                    e.age = e.age.saturating_add(1);
                }
                self.evaluate(cx, out);
                if self.news > 0 {
                    self.news -= 1;
                    self.push(cx, out);
                }
                if self.news > 0 || (self.held.is_some() && !self.settled) {
                    self.tick(out);
                }
            }
            Timer::Check => {
                self.checking = false;
                if self.served_by.is_none() && !self.neighbours.is_empty() {
                    let i = (Self::random(cx, 7) % self.neighbours.len() as u64) as usize;
                    out.send(self.neighbours[i].0, Msg::Pull);
                    self.check(out);
                }
            }
        }
    }

    /// Knowledge and tokens are volatile: a recovered node starts empty.
    fn on_recover(&mut self, _cx: &Context, _out: &mut Out) {
        self.known.clear();
        self.held = None;
        self.settled = false;
        self.ticking = false;
        self.checking = false;
        self.news = 0;
        self.served_by = None;
        self.clients.clear();
    }
}

impl Algorithm for SuperPeerGeometric {
    const NAME: &'static str = "superpeer-geometric";
    const FAMILY: Family = Family::Election;
    const SUMMARY: &'static str =
        "elects a set of super-peers: repelling tokens spread by gossip in a geometric space";
    const TOPOLOGY: TopologyKind = TopologyKind::Complete;
    const LEADER_RULE: LeaderRule = LeaderRule::Set;
    type Config = Config;

    fn configure(setup: &Setup) -> Result<Config, ParamError> {
        let p = setup.params;
        let range = |key: &str, reason: String| ParamError::OutOfRange { key: key.into(), reason };
        let fraction: f64 = p.get("fraction", 0.02)?;
        if !(fraction > 0.0 && fraction <= 0.5) {
            return Err(range("fraction", format!("{fraction} is not in (0, 0.5]")));
        }
        let k: u32 = p.get("neighbours", 8)?;
        if !(1..=64).contains(&k) {
            return Err(range("neighbours", format!("{k} is not in 1..=64")));
        }
        let fanout: u32 = p.get("fanout", 2)?;
        if !(1..=k).contains(&fanout) {
            return Err(range("fanout", format!("{fanout} is not in 1..=neighbours ({k})")));
        }
        let tau: u32 = p.get("tau", 8)?;
        if tau == 0 {
            return Err(range("tau", "must be at least 1 round".into()));
        }
        let threshold: f64 = p.get("threshold", 1.5)?;
        if !(threshold > 0.0 && threshold < 1000.0) {
            return Err(range("threshold", format!("{threshold} is not in (0, 1000)")));
        }
        let default_age = (1.0 / fraction).sqrt().ceil() as u32 + 3;
        let max_age: u32 = p.get("max_age", default_age)?;
        if !(1..=250).contains(&max_age) {
            return Err(range("max_age", format!("{max_age} is not in 1..=250 rounds")));
        }
        let pushes: u32 = p.get("pushes", 2)?;
        if !(1..=50).contains(&pushes) {
            return Err(range("pushes", format!("{pushes} is not in 1..=50 rounds")));
        }
        let period = p.duration("period", (10 * MILLISECOND).max(4 * setup.max_delay))?;
        if period == 0 {
            return Err(range("period", "must be positive".into()));
        }
        let salt: u64 = p.get("salt", 0)?;
        let n = setup.uids.len();
        let target = ((n as f64 * fraction).ceil() as u32).clamp(1, n.max(1) as u32);
        let seed = mix64(salt);
        let positions: Vec<(u32, u32)> = setup
            .uids
            .iter()
            .map(|&u| {
                let h = mix64(u ^ seed);
                (h as u32, (h >> 32) as u32)
            })
            .collect();
        let mut order: Vec<(u64, NodeId)> =
            setup.uids.iter().enumerate().map(|(i, &u)| (mix64(u ^ mix64(seed)), i as NodeId)).collect();
        order.sort_unstable();
        let mut holders = vec![false; n];
        for &(_, i) in order.iter().take(target as usize) {
            holders[i as usize] = true;
        }
        let neighbours = nearest(&positions, k as usize);
        Ok(Config {
            target,
            fanout,
            tau,
            threshold_milli: (threshold * 1000.0).round() as u32,
            max_age: max_age as u8,
            pushes: pushes as u8,
            period,
            positions,
            neighbours,
            holders,
        })
    }

    fn new(me: NodeId, c: &Config, _setup: &Setup) -> Self {
        let neighbours = c.neighbours[me as usize].iter().map(|&n| (n, c.positions[n as usize])).collect();
        SuperPeerGeometric {
            at: c.positions[me as usize],
            neighbours,
            target: c.target,
            fanout: c.fanout,
            tau: c.tau,
            threshold_milli: c.threshold_milli,
            max_age: c.max_age,
            period: c.period,
            known: Vec::new(),
            held: c.holders[me as usize].then_some(Held { token: me, version: 0, moves: 0, still: 0 }),
            settled: false,
            ticking: false,
            checking: false,
            news: 0,
            pushes: c.pushes,
            served_by: None,
            clients: Vec::new(),
        }
    }

    /// `min_spacing`: the smallest torus distance between two live super-peers, in units of
    /// the ideal spacing 1/√T (T the target number of super-peers); absent with fewer than two.
    fn final_outcome(states: &[Self], live: &[bool]) -> Vec<(&'static str, f64)> {
        let sps: Vec<&Self> =
            states.iter().zip(live).filter(|(s, up)| **up && s.settled).map(|x| x.0).collect();
        let Some(first) = sps.first() else { return Vec::new() };
        let mut min = f64::INFINITY;
        for (i, a) in sps.iter().enumerate() {
            for b in &sps[i + 1..] {
                min = min.min(distance(a.at, b.at));
            }
        }
        if min.is_finite() { vec![("min_spacing", min / spacing(first.target))] } else { Vec::new() }
    }
}

/// The `k` nearest nodes of every node on the torus, found through a grid of about two nodes
/// per cell: the cells round a node are searched ring by ring until `k` candidates are found,
/// then one ring further.
fn nearest(positions: &[(u32, u32)], k: usize) -> Vec<Vec<NodeId>> {
    let n = positions.len();
    let g = ((n as f64 / 2.0).sqrt().floor() as usize).max(1);
    let cell = |v: u32| ((v as u64 * g as u64) >> 32) as usize;
    let mut cells: Vec<Vec<NodeId>> = vec![Vec::new(); g * g];
    for (i, &(x, y)) in positions.iter().enumerate() {
        cells[cell(x) * g + cell(y)].push(i as NodeId);
    }
    let k = k.min(n.saturating_sub(1));
    let mut result = Vec::with_capacity(n);
    let mut cand: Vec<(f64, NodeId)> = Vec::new();
    for (i, &p) in positions.iter().enumerate() {
        let (cx, cy) = (cell(p.0) as isize, cell(p.1) as isize);
        let mut r = 0isize;
        let mut extra = false;
        loop {
            let count: usize = (-r..=r)
                .flat_map(|a| (-r..=r).map(move |b| (a, b)))
                .map(|(a, b)| {
                    cells[(cx + a).rem_euclid(g as isize) as usize * g
                        + (cy + b).rem_euclid(g as isize) as usize]
                        .len()
                })
                .sum();
            if (count > k && extra) || 2 * r + 1 >= g as isize {
                break;
            }
            if count > k {
                extra = true;
            }
            r += 1;
        }
        cand.clear();
        let side = (2 * r + 1).min(g as isize);
        for a in 0..side {
            for b in 0..side {
                let xs = (cx - r + a).rem_euclid(g as isize) as usize;
                let ys = (cy - r + b).rem_euclid(g as isize) as usize;
                for &j in &cells[xs * g + ys] {
                    if j as usize != i {
                        cand.push((distance(p, positions[j as usize]), j));
                    }
                }
            }
        }
        cand.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        cand.dedup_by_key(|c| c.1);
        result.push(cand.iter().take(k).map(|c| c.1).collect());
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestSystem;
    use ringleader_core::harness::Harness;

    /// 100 nodes, a quarter of them aimed for as super-peers: T = 25 tokens, spacing s = 0.2
    /// of the side, `max_age` ⌈√4⌉ + 3 = 5 rounds, rounds of 10 ms.
    fn world() -> TestSystem {
        TestSystem::new(100).param("fraction", "0.25")
    }

    const PERIOD: Time = 10 * MILLISECOND;
    const MAX_AGE: u8 = 5;

    fn node(me: NodeId) -> Harness<SuperPeerGeometric> {
        world().node(me)
    }

    fn holders() -> Vec<NodeId> {
        (0..100).filter(|&p| node(p).process.holds_token()).collect()
    }

    fn plain() -> NodeId {
        (0..100).find(|&p| !node(p).process.holds_token()).unwrap()
    }

    /// `rho` spacings east of `at` (s = 0.2 of the side).
    fn east(at: (u32, u32), rho: f64) -> (u32, u32) {
        (at.0.wrapping_add((rho * 0.2 * 4_294_967_296.0) as u32), at.1)
    }

    fn entry(token: NodeId, version: u32, holder: NodeId, at: (u32, u32), settled: bool) -> Entry {
        Entry { token, version, holder, at, settled, age: 0 }
    }

    /// Rule 1 (space): a node's overlay neighbours are its `neighbours` (8) nearest nodes on
    /// the torus.
    #[test]
    fn rule_1_space_neighbours_are_the_nearest_nodes() {
        let c = world().config::<SuperPeerGeometric>();
        for me in [0, 17, 99] {
            let p = node(me).process;
            let mut by_distance: Vec<NodeId> = (0..100).filter(|&j| j != me).collect();
            by_distance.sort_by(|&a, &b| {
                distance(p.at, c.positions[a as usize]).total_cmp(&distance(p.at, c.positions[b as usize]))
            });
            let mut mine: Vec<NodeId> = p.neighbours.iter().map(|&(n, _)| n).collect();
            let mut nearest = by_distance[..8].to_vec();
            mine.sort_unstable();
            nearest.sort_unstable();
            assert_eq!(mine, nearest, "node {me}");
        }
    }

    /// Rule 2 (tokens): T = ⌈N · fraction⌉ tokens, one per node; a holder announces its token
    /// and starts its rounds, every node arms its pull check.
    #[test]
    fn rule_2_tokens_start_one_per_node_on_t_nodes() {
        let hs = holders();
        assert_eq!(hs.len(), 25);
        let mut h = node(hs[0]);
        let step = h.start();
        assert_eq!(step.set(), vec![(Timer::Check, PERIOD * MAX_AGE as Time), (Timer::Round, PERIOD)]);
        assert_eq!(h.process.known, vec![entry(hs[0], 0, hs[0], h.process.at, false)]);
        let mut p = node(plain());
        assert_eq!(p.start().set(), vec![(Timer::Check, PERIOD * MAX_AGE as Time)]);
    }

    /// Rule 3 (gossip): news (a higher version) is pushed, aged, to `fanout` (2) distinct
    /// neighbours in each of the next `pushes` (2) rounds; old news is not news.
    #[test]
    fn rule_3_gossip_pushes_news_to_fanout_neighbours_for_pushes_rounds() {
        let me = plain();
        let mut p = node(me);
        p.start();
        let from = p.process.neighbours[0].0;
        let e = entry(3, 2, 7, (1, 1), false);
        let step = p.deliver(from, Msg::Gossip(vec![e]));
        assert_eq!(step.set(), vec![(Timer::Round, PERIOD)]);
        assert!(p.deliver(from, Msg::Gossip(vec![e])).is_empty(), "the same version is no news");
        for round in 1..=2u8 {
            let step = p.fire(Timer::Round);
            let sent = step.sent();
            assert_eq!(sent.len(), 2, "round {round}: {step:?}");
            assert_ne!(sent[0].0, sent[1].0);
            let aged = Entry { age: round, ..e };
            for (to, msg) in sent {
                assert!(p.process.neighbours.iter().any(|&(n, _)| n == to));
                assert_eq!(msg, Msg::Gossip(vec![aged]));
            }
        }
        assert!(!p.is_armed(&Timer::Round), "no news left: silent");
    }

    /// Rule 4 (force): a token ρ spacings away pushes with 1/ρ² − 1/4, away from itself, and
    /// not at all from 2 spacings on.
    #[test]
    fn rule_4_force_is_inverse_square_with_a_cut_off_at_two_spacings() {
        let mut p = node(plain()).process;
        p.known = vec![entry(1, 0, 1, east(p.at, 1.0), false)];
        let (fx, fy) = p.force(u32::MAX);
        assert!((fx + 0.75).abs() < 1e-6 && fy.abs() < 1e-6, "({fx}, {fy})");
        p.known = vec![entry(1, 0, 1, east(p.at, 0.5), false)];
        assert!((p.force(u32::MAX).0 + 3.75).abs() < 1e-6);
        p.known = vec![entry(1, 0, 1, east(p.at, 2.2), false)];
        assert_eq!(p.force(u32::MAX), (0.0, 0.0));
        assert_eq!(p.force(1), (0.0, 0.0), "a token does not push itself");
    }

    /// Rule 5 (move): a holder pushed beyond the threshold passes the token, with a new version,
    /// to the free neighbour best aligned with the force; a node that already holds a token passes
    /// an arriving one on.
    #[test]
    fn rule_5_a_pushed_holder_passes_its_token_along_the_force() {
        let me = holders()[0];
        let mut h = node(me);
        h.start();
        h.process.known.push(entry(u32::MAX, 0, u32::MAX, east(h.process.at, 0.5), false));
        h.process.known.sort_by_key(|e| e.token);
        let step = h.fire(Timer::Round);
        let (to, msg) = step.sent()[0].clone();
        assert_eq!(msg, Msg::Token { token: me, version: 1, moves: 1 });
        let best = h
            .process
            .neighbours
            .iter()
            .map(|&(n, p)| (n, -delta(p.0, h.process.at.0)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap();
        assert_eq!(to, best.0, "the neighbour furthest west, away from the pushing token");
        assert!(!h.process.holds_token());

        let mut other = node(holders()[1]);
        let from = other.process.neighbours[0].0;
        let step = other.deliver(from, Msg::Token { token: 5, version: 3, moves: 2 });
        let [(to, Msg::Token { token: 5, version: 3, moves: 2 })] = step.sent()[..] else {
            panic!("{step:?}")
        };
        assert_ne!(to, from);
    }

    /// Rule 6 (settle): a holder that kept its token for `tau` rounds becomes a super-peer and
    /// announces it; one that must move it later resigns to its clients.
    #[test]
    fn rule_6_a_still_holder_settles_and_a_moved_super_peer_resigns() {
        let me = holders()[0];
        let mut h =
            TestSystem::new(100).param("fraction", "0.25").param("tau", "1").node::<SuperPeerGeometric>(me);
        h.start();
        h.at(PERIOD);
        let step = h.fire(Timer::Round);
        assert_eq!(
            step.emitted(),
            vec![Event::SuperPeer, Event::ServedBy { super_peer: me, distance: 0, round: 1, target: 25 }]
        );
        assert!(h.process.is_super_peer());
        assert_eq!(h.process.known[0], entry(me, 1, me, h.process.at, true));

        let client = plain();
        assert!(h.deliver(client, Msg::Join).is_empty());
        h.process.known.push(entry(u32::MAX, 0, u32::MAX, east(h.process.at, 0.5), false));
        let step = h.fire(Timer::Round);
        assert_eq!(step.emitted(), vec![Event::SuperPeerLost]);
        assert!(step.sent().contains(&(client, Msg::Resign)), "{step:?}");
        assert!(!h.process.is_super_peer());
    }

    /// Rule 7 (service): a node joins the nearest super-peer it knows; a node that is not one
    /// answers JOIN with RESIGN; a client left without one pulls from a neighbour.
    #[test]
    fn rule_7_nodes_join_the_nearest_super_peer_and_pull_when_they_know_none() {
        let c = world().config::<SuperPeerGeometric>();
        let me = plain();
        let mut p = node(me);
        p.start();
        let (near, far) = (holders()[0], holders()[1]);
        let (dn, df) = (
            distance(p.process.at, c.positions[near as usize]),
            distance(p.process.at, c.positions[far as usize]),
        );
        let (near, far, d) = if dn < df { (near, far, dn) } else { (far, near, df) };
        let gossip = Msg::Gossip(vec![
            entry(near, 1, near, c.positions[near as usize], true),
            entry(far, 1, far, c.positions[far as usize], true),
        ]);
        let step = p.deliver(far, gossip);
        assert_eq!(step.sent(), vec![(near, Msg::Join)]);
        let milli = (d / 0.2 * 1000.0).round() as u64;
        assert_eq!(
            step.emitted(),
            vec![Event::ServedBy { super_peer: near, distance: milli, round: 0, target: 25 }]
        );

        assert_eq!(node(me).deliver(near, Msg::Join).sent(), vec![(near, Msg::Resign)]);
        let mut client = p.clone();
        assert_eq!(client.deliver(near, Msg::Resign).sent(), vec![(far, Msg::Join)], "a RESIGN: pick again");

        let mut lonely = node(me);
        lonely.start();
        let step = lonely.fire(Timer::Check);
        let [(to, Msg::Pull)] = step.sent()[..] else { panic!("{step:?}") };
        assert!(lonely.process.neighbours.iter().any(|&(n, _)| n == to));
        assert!(lonely.is_armed(&Timer::Check));
        assert_eq!(
            p.deliver(to, Msg::Pull).sent(),
            vec![(to, Msg::Gossip(p.process.known.clone()))],
            "a PULL is answered with everything known"
        );
    }
}
