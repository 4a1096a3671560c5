//! The clock workload (`messages`): local events and message sends for logical clocks.
//!
//! Every requester (by default every node) has events at the instants of a Poisson process of
//! `rate` per second; the superposition of those processes — one Poisson process of rate
//! `rate · requesters`, each event given to a uniformly drawn requester — is drawn up front from
//! the workload's seeded stream, `entries` events in all, so runs end. An event is local
//! ([`Request::Local`]) with probability [`LOCAL_SHARE`]; otherwise it is a send to `fanout`
//! distinct peers drawn uniformly, one [`Request::SendTo`] each, at the same instant (so a send
//! event of fan-out k is k send events in Lamport's sense).
//!
//! Unlike the mutual-exclusion request patterns it never reacts to what nodes
//! report: it is a fixed, seeded schedule, asked for all at the start.

use rand::RngExt;
use rand_distr::{Distribution, Exp};
use rand_xoshiro::Xoshiro256PlusPlus;
use ringleader_core::{NodeId, Request, Time};

use super::{Cx, Workload};

/// Probability that an event is local rather than a send.
pub const LOCAL_SHARE: f64 = 0.25;

/// The clock workload of a run.
#[derive(Debug)]
pub struct ClockWorkload {
    requesters: Vec<NodeId>,
    n: u32,
    entries: u64,
    rate: f64,
    fanout: u32,
}

impl ClockWorkload {
    /// `entries` events at `rate` per second and requester, over `requesters` (positions; by
    /// default every node) in a system of `n` nodes, each send event to `fanout` peers.
    pub fn new(n: u32, requesters: Option<Vec<NodeId>>, entries: u64, rate: f64, fanout: u32) -> Self {
        let requesters = requesters.unwrap_or_else(|| (0..n).collect());
        ClockWorkload { requesters, n, entries, rate, fanout }
    }
}

impl Workload for ClockWorkload {
    fn start(&mut self, cx: &mut Cx) {
        for (at, node, request) in
            schedule(&self.requesters, self.n, self.entries, self.rate, self.fanout, cx.rng)
        {
            cx.ask(at, node, request);
        }
    }
}

/// The whole schedule, in time order: `entries` events over `requesters` in a system of `n`
/// nodes, each an instant, a node and what it is asked.
pub fn schedule(
    requesters: &[NodeId],
    n: u32,
    entries: u64,
    rate: f64,
    fanout: u32,
    rng: &mut Xoshiro256PlusPlus,
) -> Vec<(Time, NodeId, Request)> {
    let mut out = Vec::with_capacity(entries as usize);
    if requesters.is_empty() || n == 0 {
        return out;
    }
    let gap = Exp::new(rate * requesters.len() as f64).expect("positive rate");
    let fanout = fanout.min(n.saturating_sub(1));
    let mut now = 0u64;
    let mut peers: Vec<NodeId> = Vec::new();
    for _ in 0..entries {
        now += (gap.sample(rng) * 1e9).round() as u64;
        let node = requesters[rng.random_range(0..requesters.len())];
        if fanout == 0 || rng.random_bool(LOCAL_SHARE) {
            out.push((now, node, Request::Local));
            continue;
        }
        // `fanout` distinct peers other than `node`: a partial Fisher-Yates over the others.
        peers.clear();
        peers.extend((0..n).filter(|&p| p != node));
        for k in 0..fanout as usize {
            let j = rng.random_range(k..peers.len());
            peers.swap(k, j);
            out.push((now, node, Request::SendTo { to: peers[k] }));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;

    #[test]
    fn the_schedule_has_the_asked_size_shape_and_order() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        let s = schedule(&[0, 1, 2, 3], 4, 1000, 100.0, 2, &mut rng);
        let local = s.iter().filter(|(_, _, r)| *r == Request::Local).count();
        let sends = s.len() - local;
        assert_eq!(sends % 2, 0, "every send event has two destinations");
        assert_eq!(local + sends / 2, 1000);
        assert!(s.windows(2).all(|w| w[0].0 <= w[1].0));
        for (_, node, r) in &s {
            if let Request::SendTo { to } = r {
                assert_ne!(to, node);
            }
        }
        // 1000 events at 400/s in all: about 2.5 s.
        let end = s.last().unwrap().0 as f64 / 1e9;
        assert!((2.0..3.0).contains(&end), "{end}");
        assert!((150..350).contains(&local), "{local}");
    }
}
