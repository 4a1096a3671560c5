//! Election properties: agreement, validity, uniqueness, termination.
//!
//! - **uniqueness** is judged after every step: never two live processes that both believe
//!   they are coordinator for the same term (a paused process is alive and still believes);
//! - **agreement**, **validity** and **termination** are judged when the run is over: every
//!   live process names the same coordinator, that coordinator is alive and is the one the
//!   algorithm's rule demands (highest or lowest live id), and every live process learned one.
//!   They are eventual: a run cut off at `--duration` while they do not hold yet leaves them
//!   *undecided*; a run that went quiet (or steady: only heartbeats) proves the violation.

use std::collections::{BTreeMap, BTreeSet};

use ringleader_algorithms::LeaderRule;
use ringleader_core::{Event, NodeId, Time, Uid};

use super::{Checker, FamilyReport, Latencies, Moment, Property, Violations, World};
use crate::outcome::{ElectionOutcome, Outcome};

/// Uniqueness, over the live processes that claim to be coordinator for one term: two or more
/// is a violation. The simulator asks it at every claim, the model checker in every state.
pub fn rival_claimants(claimants: &BTreeSet<NodeId>) -> bool {
    claimants.len() >= 2
}

/// What a uniqueness violation says.
pub fn uniqueness_detail(uids: &[Uid], claimants: &BTreeSet<NodeId>, term: u64) -> String {
    let ids: Vec<String> = claimants.iter().map(|&n| format!("id {}", uids[n as usize])).collect();
    format!("{} all believe they are coordinator (term {term})", ids.join(" and "))
}

/// The end-of-run properties — termination, agreement, validity — judged over what each node
/// believes (`belief[n]`: the coordinator and term node `n` names; a crashed node names none),
/// in that order, with what went wrong. Nothing is judged when no election started and nobody
/// names a coordinator. The simulator asks it when a run is over, the model checker in every
/// quiescent state.
pub fn end_of_run(w: &World, belief: &[Option<(Uid, u64)>], started: bool) -> Vec<(Property, String)> {
    let mut found = Vec::new();
    if !started && belief.iter().all(Option::is_none) {
        return found;
    }
    let live: Vec<NodeId> = (0..w.uids.len() as NodeId).filter(|&n| w.alive(n)).collect();
    if let Some(&n) = live.iter().find(|&&n| belief[n as usize].is_none()) {
        found.push((Property::Termination, format!("id {} never learned a coordinator", w.uids[n as usize])));
    }
    let mut named = live.iter().filter_map(|&n| belief[n as usize].map(|(l, _)| (n, l)));
    if let Some((first, leader)) = named.next()
        && let Some((other, l2)) = named.find(|&(_, l)| l != leader)
    {
        found.push((
            Property::Agreement,
            format!("id {} names {leader}, id {} names {l2}", w.uids[first as usize], w.uids[other as usize]),
        ));
    }
    let expected = ElectionChecker::expected_leader(w);
    let alive_uids: BTreeSet<Uid> = live.iter().map(|&n| w.uids[n as usize]).collect();
    for &n in &live {
        if let Some((l, _)) = belief[n as usize] {
            if !alive_uids.contains(&l) {
                found.push((
                    Property::Validity,
                    format!("id {} names {l}, which is not alive", w.uids[n as usize]),
                ));
                break;
            }
            if let Some(e) = expected
                && l != e
            {
                found.push((
                    Property::Validity,
                    format!(
                        "id {} names {l}, but the {} live id is {e}",
                        w.uids[n as usize],
                        if w.rule == LeaderRule::Max { "highest" } else { "lowest" }
                    ),
                ));
                break;
            }
        }
    }
    found
}

/// Tracks who believes what about the coordinator.
#[derive(Clone, Debug)]
pub struct ElectionChecker {
    belief: Vec<Option<(Uid, u64)>>,
    /// term → live nodes that believe they are the coordinator for that term.
    claimants: BTreeMap<u64, BTreeSet<NodeId>>,
    started: bool,
    first_start: Option<Time>,
    last_leader_event: Time,
    /// Live processes that name each coordinator.
    believers: BTreeMap<Uid, u64>,
    /// Live processes.
    live: u64,
    /// The start of the election under way (the first `ElectionStarted` since the last
    /// agreement).
    episode: Option<Time>,
    /// The coordinator every live process named at the last agreement.
    agreed_on: Option<Uid>,
    /// Elections completed: agreements reached after an election started, or on a new
    /// coordinator.
    elections: u64,
    election_time: Latencies,
}

impl ElectionChecker {
    /// A checker for `n` nodes.
    pub fn new(n: usize) -> Self {
        ElectionChecker {
            belief: vec![None; n],
            claimants: BTreeMap::new(),
            started: false,
            first_start: None,
            last_leader_event: 0,
            believers: BTreeMap::new(),
            live: n as u64,
            episode: None,
            agreed_on: None,
            elections: 0,
            election_time: Latencies::default(),
        }
    }

    /// Sets what `node` (alive) believes, keeping the believer counts.
    fn set_belief(&mut self, node: NodeId, belief: Option<(Uid, u64)>) {
        if let Some((l, _)) = self.belief[node as usize]
            && let Some(c) = self.believers.get_mut(&l)
        {
            *c -= 1;
            if *c == 0 {
                self.believers.remove(&l);
            }
        }
        if let Some((l, _)) = belief {
            *self.believers.entry(l).or_default() += 1;
        }
        self.belief[node as usize] = belief;
    }

    /// One election is complete when every live process names the same coordinator, after an
    /// election started or on a coordinator other than the last agreed one: the textbook's
    /// unit of cost ("messages per election"), however many processes took part or claimed.
    fn check_agreement(&mut self, at: Moment) {
        let agreed = match self.believers.iter().next() {
            Some((&l, &c)) if self.believers.len() == 1 && c == self.live && self.live > 0 => Some(l),
            _ => None,
        };
        if let Some(l) = agreed
            && (self.episode.is_some() || self.agreed_on != Some(l))
        {
            self.elections += 1;
            if let Some(start) = self.episode.take() {
                self.election_time.record(at.time - start);
            }
            self.agreed_on = Some(l);
        }
    }

    fn drop_claim(&mut self, node: NodeId, at: Moment, v: &mut Violations) {
        if let Some((_, term)) = self.belief[node as usize]
            && let Some(set) = self.claimants.get_mut(&term)
        {
            set.remove(&node);
            if set.len() < 2 {
                v.close(Property::Uniqueness, at);
            }
            if set.is_empty() {
                self.claimants.remove(&term);
            }
        }
    }

    fn expected_leader(w: &World) -> Option<Uid> {
        let live = (0..w.uids.len() as NodeId).filter(|&n| w.alive(n)).map(|n| w.uids[n as usize]);
        match w.rule {
            LeaderRule::Max => live.max(),
            LeaderRule::Min => live.min(),
            LeaderRule::Any | LeaderRule::Set => None,
        }
    }
}

impl Checker for ElectionChecker {
    fn properties(&self) -> Vec<Property> {
        vec![Property::Agreement, Property::Validity, Property::Uniqueness, Property::Termination]
    }

    fn on_event(&mut self, w: &World, node: NodeId, event: &Event, at: Moment, v: &mut Violations) {
        match *event {
            Event::ElectionStarted => {
                self.started = true;
                self.first_start.get_or_insert(at.time);
                self.episode.get_or_insert(at.time);
            }
            Event::Leader { leader, term } => {
                self.drop_claim(node, at, v);
                self.set_belief(node, Some((leader, term)));
                self.last_leader_event = at.time;
                self.check_agreement(at);
                if leader == w.uids[node as usize] {
                    let set = self.claimants.entry(term).or_default();
                    set.insert(node);
                    if rival_claimants(set) {
                        v.record(Property::Uniqueness, at, || uniqueness_detail(w.uids, set, term));
                    }
                }
            }
            Event::LeaderLost => {
                self.drop_claim(node, at, v);
                self.set_belief(node, None);
            }
            _ => {}
        }
    }

    fn on_crash(&mut self, _w: &World, node: NodeId, at: Moment, v: &mut Violations) {
        self.drop_claim(node, at, v);
        self.set_belief(node, None);
        self.live -= 1;
        self.check_agreement(at);
    }

    fn on_recover(&mut self, _w: &World, node: NodeId, _at: Moment, _v: &mut Violations) {
        self.set_belief(node, None);
        self.live += 1;
    }

    fn finish(&mut self, w: &World, at: Moment, v: &mut Violations) {
        let since = self.first_start.unwrap_or(0).max(self.last_leader_event);
        for (property, detail) in end_of_run(w, &self.belief, self.started) {
            v.pending(property, at, since, || detail);
        }
    }

    fn report(&self, w: &World) -> FamilyReport {
        let live: Vec<NodeId> = (0..w.uids.len() as NodeId).filter(|&n| w.alive(n)).collect();
        let leaders: BTreeSet<Option<Uid>> =
            live.iter().map(|&n| self.belief[n as usize].map(|(l, _)| l)).collect();
        let agreed = leaders.len() == 1 && !leaders.contains(&None);
        let leader = if agreed { leaders.into_iter().next().flatten() } else { None };
        let election_ms = self.first_start.map(|s| self.last_leader_event.saturating_sub(s) as f64 / 1e6);
        let outcome = Outcome::Election(ElectionOutcome { agreed, election_ms, leader });
        let mut r = FamilyReport {
            outcome,
            operations: self.elections,
            unfinished: u64::from(self.episode.is_some()),
            latencies: BTreeMap::new(),
        };
        if let Some(p) = self.election_time.summary() {
            r.latencies.insert("time_to_leader".into(), p);
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkers::NodeStatus;

    #[test]
    fn uniqueness_needs_two_claimants() {
        assert!(!rival_claimants(&[0].into()));
        assert!(rival_claimants(&[0, 2].into()));
        assert_eq!(
            uniqueness_detail(&[1, 2, 3], &[0, 2].into(), 4),
            "id 1 and id 3 all believe they are coordinator (term 4)"
        );
    }

    #[test]
    fn end_of_run_judges_termination_agreement_validity() {
        let uids = [1, 2, 3];
        let up = [NodeStatus::Up; 3];
        let w = World { uids: &uids, status: &up, rule: LeaderRule::Max };
        assert!(end_of_run(&w, &[None; 3], false).is_empty());
        assert!(end_of_run(&w, &[Some((3, 0)); 3], true).is_empty());
        let names = |b: &[Option<(Uid, u64)>]| -> Vec<Property> {
            end_of_run(&w, b, true).into_iter().map(|(p, _)| p).collect()
        };
        assert_eq!(names(&[None, Some((3, 0)), Some((3, 0))]), vec![Property::Termination]);
        assert_eq!(
            names(&[Some((2, 0)), Some((3, 0)), Some((3, 0))]),
            vec![Property::Agreement, Property::Validity]
        );
        let third_down = [NodeStatus::Up, NodeStatus::Up, NodeStatus::Crashed];
        let w = World { uids: &uids, status: &third_down, rule: LeaderRule::Max };
        let found = end_of_run(&w, &[Some((3, 0)), Some((3, 0)), None], true);
        assert_eq!(found, vec![(Property::Validity, "id 1 names 3, which is not alive".to_string())]);
    }
}
