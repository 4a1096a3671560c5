//! The clock checker: logical timestamps against happens-before, physical clocks against each
//! other, and the `make` story.
//!
//! **Logical clocks.** Every local, send and receive event is reported as [`Event::Stamped`]
//! (local) or [`Event::StampedMessage`] (send or receive, with the message's id). The checker
//! keeps them in program order per node and pairs each receive with its send; happens-before
//! (→) is the transitive closure of program order and send → receive. It is computed once, at
//! the end, as each event's *causal past*: for every node, how many of that node's events
//! precede or equal the event (`past[f][i] ≥ k` iff the k-th event of node i → f, or is f). That
//! is a dynamic program over the trace's own structure, not a re-run of any clock algorithm, and
//! a test compares it with plain graph reachability.
//!
//! - `clock_condition` (Lamport): e → f ⇒ L(e) < L(f). Checked on every edge of the
//!   happens-before graph (program order and send → receive), which by transitivity of `<`
//!   covers every pair, and in addition on the pairs below.
//! - `strong_clock_condition` (vector clocks): e → f ⇔ V(e) < V(f), where V < W means V ≤ W
//!   componentwise and V ≠ W. Checked on every ordered pair of distinct events when there are at
//!   most [`ALL_PAIRS_UP_TO`] events, otherwise on [`SAMPLED_PAIRS`] pairs drawn with a
//!   generator seeded by [`SAMPLE_SEED`] and the event count (so the same run draws the same
//!   pairs).
//!
//! **Physical clocks.** The engine hands the checker every node's true local reading every
//! [`SAMPLE_PERIOD`] of virtual time. The skew at an instant is the largest difference between
//! two live nodes' readings. Outcome fields (times in ms): `max_skew_before` — the largest skew
//! up to the first [`Event::ClockAdjusted`] (the whole run when nobody adjusts); `max_skew_after`
//! — the largest skew over the second half of the run, once the first corrections have been
//! slewed in (choose `--duration` at least twice the convergence time, see docs/CLOCKS.md);
//! `backward_steps` — how many times a node's reading was lower than its previous sample, judged
//! as the property `monotonic` (must be 0); `skew_timeline` — the largest skew in each of up to
//! 20 equal slices of the run, as `[end of slice in s, skew in ms]`.
//!
//! **make** (the textbook's story). [`Event::Touched`] with `what` = `compile`, `edit` or `skip` (decided
//! by comparing the recorded timestamps). `make_rebuilds` is violated when make skips although
//! the last edit really happened (in virtual time) after the last compile.

use std::collections::BTreeMap;

use rand::{RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use ringleader_core::{Event, NodeId, Time, Touch, time::MILLISECOND};

use super::{Checker, FamilyReport, Moment, Property, Violations, World};
use crate::outcome::{LogicalClockOutcome, Outcome, PhysicalClockOutcome};

/// Every ordered pair is checked when a run has at most this many stamped events.
pub const ALL_PAIRS_UP_TO: usize = 1_500;
/// Pairs checked on larger runs.
pub const SAMPLED_PAIRS: usize = 200_000;
/// Seed of the pair sample (mixed with the event count).
pub const SAMPLE_SEED: u64 = 0x0C10_C4EC;
/// Virtual time between two samples of every clock.
pub const SAMPLE_PERIOD: Time = 50 * MILLISECOND;
/// Slices of the skew timeline.
const TIMELINE_SLICES: usize = 20;

/// The role of a stamped event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Local,
    Send(u64),
    Receive(u64),
}

/// One stamped event.
#[derive(Clone, Debug)]
struct Stamped {
    node: NodeId,
    role: Role,
    lamport: u64,
    vector: Vec<u64>,
    at: Moment,
}

/// The clock family's checker.
#[derive(Debug)]
pub struct ClockChecker {
    n: usize,
    events: Vec<Stamped>,
    saw_lamport: bool,
    saw_vector: bool,
    pairs_checked: u64,
    unmatched_receives: u64,
    last_reading: Vec<Option<Time>>,
    backward_steps: u64,
    /// (virtual time, skew) at every sample.
    skews: Vec<(Time, Time)>,
    first_adjustment: Option<Time>,
    adjustments: u64,
    end: Time,
    make: Make,
}

/// What the `make` story has done so far.
#[derive(Clone, Debug, Default)]
struct Make {
    seen: bool,
    /// (virtual time, recorded timestamp) of the last compile and the last edit.
    compile: Option<(Time, Time)>,
    edit: Option<(Time, Time)>,
    rebuilds: u64,
    skips: u64,
}

impl ClockChecker {
    /// A checker for `n` nodes.
    pub fn new(n: usize) -> ClockChecker {
        ClockChecker {
            n,
            events: Vec::new(),
            saw_lamport: false,
            saw_vector: false,
            pairs_checked: 0,
            unmatched_receives: 0,
            last_reading: vec![None; n],
            backward_steps: 0,
            skews: Vec::new(),
            first_adjustment: None,
            adjustments: 0,
            end: 0,
            make: Make::default(),
        }
    }

    /// Each event's causal past (see the module documentation), or `None` for events whose
    /// receive has no matching send. Also counts program-order positions.
    fn causal_pasts(&mut self) -> (Vec<Vec<u32>>, Vec<u32>) {
        let n = self.n;
        let mut send_of: BTreeMap<u64, usize> = BTreeMap::new();
        let mut last_of: Vec<Option<usize>> = vec![None; n];
        let mut count: Vec<u32> = vec![0; n];
        let mut pos = Vec::with_capacity(self.events.len());
        let mut past: Vec<Vec<u32>> = Vec::with_capacity(self.events.len());
        for (k, e) in self.events.iter().enumerate() {
            let i = e.node as usize;
            let mut p = match last_of[i] {
                Some(prev) => past[prev].clone(),
                None => vec![0; n],
            };
            match e.role {
                Role::Send(m) => {
                    send_of.insert(m, k);
                }
                Role::Receive(m) => match send_of.get(&m) {
                    Some(&s) => {
                        for (a, b) in p.iter_mut().zip(&past[s]) {
                            *a = (*a).max(*b);
                        }
                    }
                    None => self.unmatched_receives += 1,
                },
                Role::Local => {}
            }
            count[i] += 1;
            p[i] = count[i];
            pos.push(count[i]);
            past.push(p);
            last_of[i] = Some(k);
        }
        (past, pos)
    }

    /// Judges the pair (e, f), e ≠ f.
    fn judge(&mut self, e: usize, f: usize, past: &[Vec<u32>], pos: &[u32], v: &mut Violations) {
        let (a, b) = (&self.events[e], &self.events[f]);
        let hb = past[f][a.node as usize] >= pos[e];
        self.pairs_checked += 1;
        if self.saw_lamport && hb && a.lamport >= b.lamport {
            v.record(Property::ClockCondition, b.at, || {
                format!(
                    "{} → {} but L = {} is not below L = {}",
                    describe(a, pos[e]),
                    describe(b, pos[f]),
                    a.lamport,
                    b.lamport
                )
            });
        }
        if self.saw_vector && hb != vector_less(&a.vector, &b.vector) {
            v.record(Property::StrongClockCondition, b.at, || {
                format!(
                    "{} {} {} but V = {:?} is {}below V = {:?}",
                    describe(a, pos[e]),
                    if hb { "→" } else { "does not happen before" },
                    describe(b, pos[f]),
                    a.vector,
                    if hb { "not " } else { "" },
                    b.vector
                )
            });
        }
    }

    fn skew_outcome(&self) -> (f64, f64, Vec<(f64, f64)>) {
        let ms = |t: Time| t as f64 / 1e6;
        let before_end = self.first_adjustment.unwrap_or(Time::MAX);
        let before = self.skews.iter().filter(|(t, _)| *t <= before_end).map(|s| s.1).max().unwrap_or(0);
        let half = self.end / 2;
        let after = self.skews.iter().filter(|(t, _)| *t >= half).map(|s| s.1).max().unwrap_or(0);
        let mut timeline = Vec::new();
        if self.end > 0 && !self.skews.is_empty() {
            let slice = self.end.div_ceil(TIMELINE_SLICES as Time).max(1);
            let mut k = 0;
            while k * slice < self.end || k == 0 {
                let (lo, hi) = (k * slice, (k + 1) * slice);
                if let Some(m) = self.skews.iter().filter(|(t, _)| *t >= lo && *t < hi).map(|s| s.1).max() {
                    timeline.push((hi.min(self.end) as f64 / 1e9, ms(m)));
                }
                k += 1;
            }
        }
        (ms(before), ms(after), timeline)
    }
}

/// V < W: componentwise ≤ and different.
fn vector_less(v: &[u64], w: &[u64]) -> bool {
    v.len() == w.len() && v.iter().zip(w).all(|(a, b)| a <= b) && v != w
}

fn describe(e: &Stamped, pos: u32) -> String {
    let role = match e.role {
        Role::Local => "local".to_string(),
        Role::Send(m) => format!("send of m{m:x}"),
        Role::Receive(m) => format!("receive of m{m:x}"),
    };
    format!("event {pos} of node {} ({role})", e.node)
}

impl Checker for ClockChecker {
    fn properties(&self) -> Vec<Property> {
        let mut p = Vec::new();
        if self.saw_lamport {
            p.push(Property::ClockCondition);
        }
        if self.saw_vector {
            p.push(Property::StrongClockCondition);
        }
        p.push(Property::Monotonic);
        if self.make.seen {
            p.push(Property::MakeRebuilds);
        }
        p
    }

    fn on_event(&mut self, _w: &World, node: NodeId, event: &Event, at: Moment, v: &mut Violations) {
        let (role, lamport, vector) = match event {
            Event::Stamped { lamport, vector } => (Role::Local, *lamport, vector),
            Event::StampedMessage { message, receive, lamport, vector } => {
                (if *receive { Role::Receive(*message) } else { Role::Send(*message) }, *lamport, vector)
            }
            Event::ClockAdjusted { .. } => {
                self.adjustments += 1;
                self.first_adjustment.get_or_insert(at.time);
                return;
            }
            Event::Touched { what, time } => {
                let m = &mut self.make;
                m.seen = true;
                match what {
                    Touch::Compile => {
                        m.compile = Some((at.time, *time));
                        m.rebuilds += 1;
                    }
                    Touch::Edit => m.edit = Some((at.time, *time)),
                    Touch::Skip => {
                        m.skips += 1;
                        if let (Some((edited, src)), Some((compiled, obj))) = (m.edit, m.compile)
                            && edited > compiled
                        {
                            v.record(Property::MakeRebuilds, at, || {
                                format!(
                                    "make skipped the rebuild: the source was edited at {} ms, after the \
                                     last compile at {} ms, but is stamped {src} ≤ the object's {obj}",
                                    edited as f64 / 1e6,
                                    compiled as f64 / 1e6
                                )
                            });
                        }
                    }
                }
                return;
            }
            _ => return,
        };
        self.saw_lamport |= lamport > 0;
        self.saw_vector |= !vector.is_empty();
        self.events.push(Stamped { node, role, lamport, vector: vector.clone(), at });
    }

    fn clock_sample_period(&self) -> Option<Time> {
        Some(SAMPLE_PERIOD)
    }

    fn on_clocks(&mut self, w: &World, readings: &[Time], at: Moment, v: &mut Violations) {
        let (mut lo, mut hi) = (Time::MAX, 0);
        for (i, &r) in readings.iter().enumerate() {
            if let Some(last) = self.last_reading[i]
                && r < last
            {
                self.backward_steps += 1;
                v.record(Property::Monotonic, at, || {
                    format!("node {i}'s clock went back from {last} to {r}")
                });
            }
            self.last_reading[i] = Some(r);
            if w.alive(i as NodeId) {
                lo = lo.min(r);
                hi = hi.max(r);
            }
        }
        self.skews.push((at.time, hi.saturating_sub(lo)));
    }

    fn finish(&mut self, _w: &World, at: Moment, v: &mut Violations) {
        self.end = at.time;
        if self.events.is_empty() {
            return;
        }
        let (past, pos) = self.causal_pasts();
        // Every edge: program order and send → receive.
        let mut last_of: Vec<Option<usize>> = vec![None; self.n];
        let mut send_of: BTreeMap<u64, usize> = BTreeMap::new();
        for f in 0..self.events.len() {
            let node = self.events[f].node as usize;
            if let Some(e) = last_of[node] {
                self.judge(e, f, &past, &pos, v);
            }
            last_of[node] = Some(f);
            match self.events[f].role {
                Role::Send(m) => {
                    send_of.insert(m, f);
                }
                Role::Receive(m) => {
                    if let Some(&e) = send_of.get(&m) {
                        self.judge(e, f, &past, &pos, v);
                    }
                }
                Role::Local => {}
            }
        }
        let count = self.events.len();
        if count <= ALL_PAIRS_UP_TO {
            for e in 0..count {
                for f in 0..count {
                    if e != f {
                        self.judge(e, f, &past, &pos, v);
                    }
                }
            }
        } else {
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(SAMPLE_SEED ^ count as u64);
            for _ in 0..SAMPLED_PAIRS {
                let (e, f) = (rng.random_range(0..count), rng.random_range(0..count));
                if e != f {
                    self.judge(e, f, &past, &pos, v);
                }
            }
        }
    }

    fn report(&self, _w: &World) -> FamilyReport {
        // Logical clocks (stamped events) say nothing about physical clocks: their report
        // carries no skew or adjustment fields.
        let outcome = if self.events.is_empty() {
            let (before, after, timeline) = self.skew_outcome();
            Outcome::PhysicalClock(PhysicalClockOutcome {
                adjustments: self.adjustments,
                backward_steps: self.backward_steps,
                max_skew_after: after,
                max_skew_before: before,
                rebuilds: self.make.seen.then_some(self.make.rebuilds),
                skew_timeline: (self.adjustments > 0).then_some(timeline),
                skips: self.make.seen.then_some(self.make.skips),
            })
        } else {
            // `make` stamps no messages: a run with stamped events is no `make` story.
            debug_assert!(!self.make.seen, "a logical clock run has no make story");
            Outcome::LogicalClock(LogicalClockOutcome {
                pairs_checked: self.pairs_checked,
                stamped_events: self.events.len() as u64,
                unmatched_receives: (self.unmatched_receives > 0).then_some(self.unmatched_receives),
            })
        };
        FamilyReport {
            outcome,
            operations: if self.events.is_empty() { self.adjustments } else { self.events.len() as u64 },
            unfinished: 0,
            latencies: BTreeMap::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkers::NodeStatus;
    use ringleader_algorithms::LeaderRule;

    fn stamp(step: u64) -> Moment {
        Moment { time: step, step }
    }

    /// Plain reachability over the happens-before graph, the definition itself.
    fn reachable(events: &[Stamped], e: usize, f: usize) -> bool {
        let mut seen = vec![false; events.len()];
        let mut stack = vec![e];
        while let Some(x) = stack.pop() {
            for y in x + 1..events.len() {
                let next_local =
                    events[y].node == events[x].node && (x + 1..y).all(|z| events[z].node != events[x].node);
                let delivery = matches!((events[x].role, events[y].role),
                    (Role::Send(a), Role::Receive(b)) if a == b);
                if (next_local || delivery) && !seen[y] {
                    if y == f {
                        return true;
                    }
                    seen[y] = true;
                    stack.push(y);
                }
            }
        }
        false
    }

    #[test]
    fn causal_pasts_agree_with_reachability() {
        let uids = [1, 2, 3];
        let status = [NodeStatus::Up; 3];
        let w = World { uids: &uids, status: &status, rule: LeaderRule::Any };
        let mut c = ClockChecker::new(3);
        let mut v = Violations::default();
        let script: &[(NodeId, Event)] = &[
            (0, Event::StampedMessage { message: 1, receive: false, lamport: 1, vector: vec![] }),
            (1, Event::Stamped { lamport: 1, vector: vec![] }),
            (2, Event::StampedMessage { message: 2, receive: false, lamport: 1, vector: vec![] }),
            (1, Event::StampedMessage { message: 1, receive: true, lamport: 2, vector: vec![] }),
            (0, Event::StampedMessage { message: 2, receive: true, lamport: 2, vector: vec![] }),
            (1, Event::StampedMessage { message: 3, receive: false, lamport: 3, vector: vec![] }),
            (2, Event::StampedMessage { message: 3, receive: true, lamport: 4, vector: vec![] }),
        ];
        for (k, (node, e)) in script.iter().enumerate() {
            c.on_event(&w, *node, e, stamp(k as u64), &mut v);
        }
        let (past, pos) = c.causal_pasts();
        let mut related = 0;
        for e in 0..script.len() {
            for (f, past_f) in past.iter().enumerate() {
                if e != f {
                    let hb = past_f[c.events[e].node as usize] >= pos[e];
                    assert_eq!(hb, reachable(&c.events, e, f), "pair ({e}, {f})");
                    related += hb as u32;
                }
            }
        }
        assert_eq!(related, 12);
        c.finish(&w, stamp(99), &mut v);
        assert!(v.is_empty(), "{:?}", v.list());
        assert_eq!(c.pairs_checked, 7 * 6 + 4 + 3);
    }
}
