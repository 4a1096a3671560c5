//! Super-peer properties: coverage, fraction, balanced load.
//!
//! Large-scale elections (Tanenbaum & van Steen, Distributed Systems) elect a *set*: nodes report `Event::SuperPeer` /
//! `Event::SuperPeerLost` for themselves and `Event::ServedBy` for the super-peer that serves
//! them. Judged when the run is over, on the live nodes:
//!
//! - **coverage** — every live node is served by a live node that is a super-peer at the end
//!   (a super-peer serves itself): "normal nodes have access to a super-peer";
//! - **fraction** — the number of live super-peers lies in [⌈target/2⌉, target], where `target`
//!   is the count the algorithm aims for (carried by `ServedBy`): "a predefined portion";
//! - **balanced_load** — no super-peer serves more than 4× the mean number of normal nodes per
//!   super-peer (rounded up): "no super-peer serves more than a fixed number of nodes", with the
//!   fixed number tied to the mean so that the property holds for any fraction.
//!
//! The outcome carries `super_peers`, `target`, `fraction`, `load_max`, `load_mean`,
//! `distance_max`, `distance_mean` (client to its super-peer, in thousandths of the algorithm's
//! unit), `rounds` (the latest round in which a node learned its super-peer), `converged_ms`
//! (virtual time of the last change of the set or of an assignment) and `super_peer_losses`.
//! `per_operation` counts rounds, so `messages_mean` is the number of messages per round.

use std::collections::BTreeMap;

use ringleader_core::{Event, NodeId, Time};

use super::{Checker, FamilyReport, Moment, Property, Violations, World};
use crate::outcome::{Outcome, SuperPeerOutcome};

/// How many times the mean load a super-peer may serve.
pub const LOAD_FACTOR: u64 = 4;

/// Tracks the set of super-peers and who serves whom.
#[derive(Clone, Debug)]
pub struct SuperPeerChecker {
    super_peer: Vec<bool>,
    served_by: Vec<Option<(NodeId, u64)>>,
    target: u32,
    rounds: u64,
    last_change: Time,
    losses: u64,
}

/// The end state, as the checker judges it.
struct Tally {
    live: usize,
    super_peers: Vec<NodeId>,
    load: Vec<u64>,
    clients: u64,
    distance_max: u64,
    distance_sum: u64,
}

impl SuperPeerChecker {
    /// A checker for `n` nodes.
    pub fn new(n: usize) -> Self {
        SuperPeerChecker {
            super_peer: vec![false; n],
            served_by: vec![None; n],
            target: 0,
            rounds: 0,
            last_change: 0,
            losses: 0,
        }
    }

    fn tally(&self, w: &World) -> Tally {
        let n = self.super_peer.len();
        let live: Vec<NodeId> = (0..n as NodeId).filter(|&x| w.alive(x)).collect();
        let super_peers: Vec<NodeId> =
            live.iter().copied().filter(|&x| self.super_peer[x as usize]).collect();
        let mut load = vec![0u64; n];
        let (mut clients, mut distance_max, mut distance_sum) = (0, 0, 0);
        for &x in &live {
            if self.super_peer[x as usize] {
                continue;
            }
            if let Some((sp, d)) = self.served_by[x as usize]
                && self.super_peer[sp as usize]
                && w.alive(sp)
            {
                load[sp as usize] += 1;
                clients += 1;
                distance_max = distance_max.max(d);
                distance_sum += d;
            }
        }
        Tally { live: live.len(), super_peers, load, clients, distance_max, distance_sum }
    }

    fn load_bound(t: &Tally) -> u64 {
        let sps = t.super_peers.len().max(1) as u64;
        let normal = (t.live - t.super_peers.len()) as u64;
        LOAD_FACTOR * normal.div_ceil(sps)
    }
}

impl Checker for SuperPeerChecker {
    fn properties(&self) -> Vec<Property> {
        vec![Property::Coverage, Property::Fraction, Property::BalancedLoad]
    }

    fn on_event(&mut self, _w: &World, node: NodeId, event: &Event, at: Moment, _v: &mut Violations) {
        match *event {
            Event::SuperPeer => {
                self.super_peer[node as usize] = true;
                self.last_change = at.time;
            }
            Event::SuperPeerLost => {
                self.super_peer[node as usize] = false;
                self.losses += 1;
                self.last_change = at.time;
            }
            Event::ServedBy { super_peer, distance, round, target } => {
                self.served_by[node as usize] = Some((super_peer, distance));
                self.target = self.target.max(target);
                self.rounds = self.rounds.max(round);
                self.last_change = at.time;
            }
            _ => {}
        }
    }

    fn on_crash(&mut self, _w: &World, node: NodeId, _at: Moment, _v: &mut Violations) {
        self.super_peer[node as usize] = false;
        self.served_by[node as usize] = None;
    }

    fn finish(&mut self, w: &World, at: Moment, v: &mut Violations) {
        let t = self.tally(w);
        let n = self.super_peer.len() as NodeId;
        let uncovered = (0..n).find(|&x| {
            w.alive(x)
                && !self.super_peer[x as usize]
                && !self.served_by[x as usize]
                    .is_some_and(|(sp, _)| self.super_peer[sp as usize] && w.alive(sp))
        });
        if let Some(x) = uncovered {
            v.pending(Property::Coverage, at, self.last_change, || match self.served_by[x as usize] {
                None => format!("id {} never learned a super-peer", w.uids[x as usize]),
                Some((sp, _)) => format!(
                    "id {} is served by id {}, which is not a live super-peer",
                    w.uids[x as usize], w.uids[sp as usize]
                ),
            });
        }
        let count = t.super_peers.len() as u32;
        if count < self.target.div_ceil(2) || count > self.target || count == 0 {
            let (low, target) = (self.target.div_ceil(2), self.target);
            v.pending(Property::Fraction, at, self.last_change, || match (count, target) {
                // No peer has been served yet, so there is no target to compare with.
                (_, 0) => format!("{count} super-peer(s) and no peer served by one yet"),
                (0, _) => format!("no live super-peer, where {low} to {target} are wanted"),
                _ => format!("{count} super-peers, outside the wanted {low} to {target}"),
            });
        }
        let bound = Self::load_bound(&t);
        if let Some(&sp) = t.super_peers.iter().max_by_key(|&&sp| t.load[sp as usize])
            && t.load[sp as usize] > bound
        {
            v.pending(Property::BalancedLoad, at, self.last_change, || {
                format!(
                    "super-peer id {} serves {} nodes, more than {LOAD_FACTOR}× the mean ({bound})",
                    w.uids[sp as usize], t.load[sp as usize]
                )
            });
        }
    }

    fn report(&self, w: &World) -> FamilyReport {
        let t = self.tally(w);
        let sps = t.super_peers.len();
        let outcome = Outcome::SuperPeers(SuperPeerOutcome {
            converged_ms: self.last_change as f64 / 1e6,
            distance_max: t.distance_max,
            distance_mean: t.distance_sum as f64 / t.clients.max(1) as f64,
            fraction: sps as f64 / t.live.max(1) as f64,
            load_max: t.super_peers.iter().map(|&s| t.load[s as usize]).max().unwrap_or(0),
            load_mean: t.clients as f64 / sps.max(1) as f64,
            // Measured over the final states by the driver (`Algorithm::final_outcome`).
            min_spacing: None,
            rounds: self.rounds,
            super_peer_losses: self.losses,
            super_peers: sps as u64,
            target: self.target,
        });
        FamilyReport { outcome, operations: self.rounds, unfinished: 0, latencies: BTreeMap::new() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkers::NodeStatus;
    use ringleader_algorithms::LeaderRule;

    fn judge(n: usize, events: &[(NodeId, Event)]) -> Vec<&'static str> {
        details(n, events).into_iter().map(|(name, _)| name).collect()
    }

    fn details(n: usize, events: &[(NodeId, Event)]) -> Vec<(&'static str, String)> {
        let uids: Vec<u64> = (1..=n as u64).collect();
        let status = vec![NodeStatus::Up; n];
        let w = World { uids: &uids, status: &status, rule: LeaderRule::Set };
        let mut c = SuperPeerChecker::new(n);
        let mut v = Violations::default();
        for (i, (node, e)) in events.iter().enumerate() {
            c.on_event(&w, *node, e, Moment { time: i as u64, step: i as u64 }, &mut v);
        }
        c.finish(&w, Moment { time: 99, step: 99 }, &mut v);
        v.list().iter().map(|x| (x.property.name(), x.detail.clone())).collect()
    }

    #[test]
    fn the_fraction_detail_names_what_is_wrong() {
        let none: Vec<_> = details(3, &[]).into_iter().filter(|(p, _)| *p == "fraction").collect();
        assert_eq!(none[0].1, "0 super-peer(s) and no peer served by one yet");
        let mut ev = vec![(0, Event::SuperPeer), (1, Event::SuperPeer), (2, Event::SuperPeer)];
        ev.extend((3..10).map(|x| (x, served(x % 3, 2))));
        assert_eq!(details(10, &ev)[0].1, "3 super-peers, outside the wanted 1 to 2");
        let mut ev = vec![(0, Event::SuperPeer)];
        ev.extend((1..4).map(|x| (x, served(0, 2))));
        ev.push((0, Event::SuperPeerLost));
        let fraction = details(4, &ev).into_iter().find(|(p, _)| *p == "fraction").unwrap();
        assert_eq!(fraction.1, "no live super-peer, where 1 to 2 are wanted");
    }

    fn served(sp: NodeId, target: u32) -> Event {
        Event::ServedBy { super_peer: sp, distance: 1, round: 1, target }
    }

    #[test]
    fn a_covered_balanced_set_of_the_target_size_passes() {
        let mut ev = vec![(0, Event::SuperPeer), (1, Event::SuperPeer)];
        ev.extend((2..10).map(|x| (x, served(x % 2, 2))));
        assert!(judge(10, &ev).is_empty());
    }

    #[test]
    fn each_property_fails_when_it_should() {
        // Node 9 never learns a super-peer.
        let mut ev = vec![(0, Event::SuperPeer), (1, Event::SuperPeer)];
        ev.extend((2..9).map(|x| (x, served(x % 2, 2))));
        assert_eq!(judge(10, &ev), vec!["coverage"]);
        // Node 9 is served by a super-peer that stepped down.
        let mut ev = vec![(0, Event::SuperPeer), (1, Event::SuperPeer), (2, Event::SuperPeer)];
        ev.extend((3..10).map(|x| (x, served(x % 3, 3))));
        ev.push((0, Event::SuperPeerLost));
        assert_eq!(judge(10, &ev), vec!["coverage"]);
        // Three super-peers for a target of 2.
        let mut ev = vec![(0, Event::SuperPeer), (1, Event::SuperPeer), (2, Event::SuperPeer)];
        ev.extend((3..10).map(|x| (x, served(x % 3, 2))));
        assert_eq!(judge(10, &ev), vec!["fraction"]);
        // 30 normal nodes on 3 super-peers: mean 10, bound 40; one serves 28 of them.
        let mut ev = vec![(0, Event::SuperPeer), (1, Event::SuperPeer), (2, Event::SuperPeer)];
        ev.extend((3..33).map(|x| (x, served(if x < 31 { 0 } else { x - 30 }, 3))));
        assert!(judge(33, &ev).is_empty(), "28 ≤ 40");
        // 100 normal nodes on 5 super-peers: mean 20, bound 80; one serves 96 of them.
        let mut ev: Vec<(NodeId, Event)> = (0..5).map(|x| (x, Event::SuperPeer)).collect();
        ev.extend((5..105).map(|x| (x, served(if x < 101 { 0 } else { x - 100 }, 5))));
        assert_eq!(judge(105, &ev), vec!["balanced_load"], "96 > 4 × 20");
    }
}
