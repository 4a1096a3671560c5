//! # YoYo: minimum finding on an arbitrary connected graph (Santoro)
//!
//! *Minimum finding on arbitrary graphs, in two phases (setup, then YO-/-YO iterations); N. Santoro, "Design and
//! Analysis of Distributed Algorithms" (2007), §3.8.*
//!
//! ## The idea
//! On a graph that is neither a ring nor complete, a candidate cannot send its id "round".
//! YoYo orients every edge from the smaller id to the larger, which makes the graph a DAG whose
//! sources (local minima) are the candidates. Each iteration, values flow *down* the DAG from the
//! sources (YO-), every node learning the smallest source that reaches it; then votes flow back
//! *up* (-YO), and a source survives only if every sink it reaches voted for it. Edges that
//! carried a NO are flipped, so losing sources stop being sources. Pruning removes the parts of
//! the graph that can no longer matter, until the last source — the minimum — has no edge left.
//!
//! ## The rules
//! 1. **Setup.** A woken node (an initiator, or anyone who receives a setup message) sends its
//!    id to every neighbour (2m messages in all). With every neighbour's id in, it orients each
//!    edge from the smaller id to the larger: *sources* have only out-edges, *sinks* only in-edges.
//! 2. **YO-.** A source sends its id on every out-edge. Any other node waits for a value on every
//!    in-edge, takes their minimum, and sends it on every out-edge; a sink just waits.
//! 3. **-YO.** A sink votes YES on the in-edges that brought its minimum and NO on the others. An
//!    internal node waits for a vote on every out-edge; if any is NO it votes NO on all its
//!    in-edges, otherwise YES on those that brought its minimum and NO on the others. A source
//!    that receives a NO is no longer a candidate.
//! 4. **Flip.** Every edge that carried a NO reverses. The graph stays acyclic.
//! 5. **Pruning**, piggybacked on the votes (a PRUNE flag, no extra message):
//!    - a node that received the same value on several in-edges keeps one of them and asks the
//!      others to drop their edge (it answers them YES+PRUNE: the fate of that value travels on
//!      the kept edge, so the pruned edge must not flip anything);
//!    - a node left as a sink with a single in-neighbour — a sink, or an internal node whose
//!      out-edges were all pruned in this very -YO and that voted no NO — drops that edge too
//!      (YES+PRUNE) and leaves the election. Applying this rule on the spot lets a whole pruned
//!      subtree collapse in one iteration instead of one level per iteration.
//! 6. **End.** A source whose edges were all pruned is the minimum: it is the leader. It then
//!    floods COORDINATOR(id) over the original graph (each node forwards the first copy to every
//!    neighbour but the sender), and every node emits `Event::Leader`.
//!
//! ```text
//!   asleep ─wake─▶ setup ─all ids─▶ YO- (wait in-values) ─▶ -YO (wait out-votes) ─▶ YO- …
//!                                        │ source, all edges pruned          │ sink, one in-edge
//!                                        ▼                                   ▼
//!                                     leader ── COORDINATOR flood ──▶     left (relays the flood)
//! ```
//!
//! No message carries an iteration number: on every edge the value of iteration i+1 is sent only
//! after the vote of iteration i arrived, so each edge holds at most one value and one vote in
//! flight; a node keeps them in per-edge slots, which also absorbs a value that overtakes the
//! vote that flipped its edge.
//!
//! ## Costs (messages are sends; `by_kind`: `setup`, `yo`, `yes`, `no`, `coordinator`)
//! - setup: exactly 2m;
//! - each iteration: at most one value and one vote per surviving edge, ≤ 2m;
//! - iterations: at most ⌈log2 n⌉ + 1 (Santoro's bound; the tests measure it);
//! - the announcement, counted apart as `coordinator`: exactly 2m − n + 1 (the leader sends on
//!   all its edges, every other node on all but the one it first heard from).
//!
//! YoYo proper is O(m log n): `setup + yo + yes + no ≤ 2m + 2m(⌈log2 n⌉ + 1)`. The tests check
//! this bound and the exact setup and announcement counts on many random connected graphs;
//! `docs/ELECTIONS-LARGE.md` has the measured table.
//!
//! ## Assumptions
//! A connected undirected graph (a random one by default; the run may choose a grid, a line, a
//! star, a tree or an edge-list file with `--graph`), reliable channels (no order needed), unique
//! ids, no failures.
//! Nodes know their neighbours but not their ids (that is what setup is for).
//!
//! ## Known flaws
//! No fault tolerance: a crash or a lost message stalls an iteration forever (a node waits for
//! every in-edge, then every out-edge). Duplicated messages corrupt the per-edge slots.
//! Iterations are sequential per edge, so the time is O(diameter · log n) message delays.

use ringleader_core::{Context, Event, Message, NodeId, Outbox, Process, Request, Uid};
use serde::{Deserialize, Serialize};

use crate::{Algorithm, Family, LeaderRule, ParamError, Setup, TopologyKind};

/// YoYo messages.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// Setup: the sender's id (sent once on every edge).
    Setup(Uid),
    /// YO-: the smallest source value that reached the sender.
    Yo(Uid),
    /// -YO: the vote on the edge (YES or NO), with the PRUNE request piggybacked.
    Vote {
        /// YES (true) or NO (false).
        yes: bool,
        /// PRUNE: the receiver must drop this edge.
        prune: bool,
    },
    /// COORDINATOR(j): j is the leader; flooded over the original graph.
    Coordinator(Uid),
}

impl Message for Msg {
    const KINDS: &'static [&'static str] = &["setup", "yo", "yes", "no", "coordinator"];
    fn kind_index(&self) -> usize {
        match self {
            Msg::Setup(_) => 0,
            Msg::Yo(_) => 1,
            Msg::Vote { yes: true, .. } => 2,
            Msg::Vote { yes: false, .. } => 3,
            Msg::Coordinator(_) => 4,
        }
    }
}

/// YoYo has no timers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
pub enum Timer {}

/// The orientation of an edge, seen from this node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
enum Link {
    /// The neighbour's id is not known yet.
    Unknown,
    /// The neighbour sends values to this node.
    In,
    /// This node sends values to the neighbour.
    Out,
    /// Removed by pruning.
    Pruned,
}

/// One edge and what arrived on it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
struct Edge {
    node: NodeId,
    link: Link,
    uid: Option<Uid>,
    value: Option<Uid>,
    vote: Option<(bool, bool)>,
}

/// Where a node stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
enum Phase {
    /// Not woken up yet.
    Asleep,
    /// Waiting for the neighbours' ids.
    Setup,
    /// YO-: waiting for a value on every in-edge.
    Down,
    /// -YO: waiting for a vote on every out-edge.
    Up,
    /// Pruned away: only relays the announcement.
    Left,
    /// The minimum.
    Leader,
}

/// One node of the graph.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct YoYo {
    uid: Uid,
    phase: Phase,
    edges: Vec<Edge>,
    min: Uid,
    iterations: u32,
    leader: Option<Uid>,
}

type Out = Outbox<Msg, Timer>;

impl YoYo {
    /// The YO-/-YO iterations this node has started (the leader's count is the run's count).
    pub fn iterations(&self) -> u32 {
        self.iterations
    }

    /// True when this node was pruned away (it only relays the announcement).
    pub fn has_left(&self) -> bool {
        self.phase == Phase::Left
    }

    fn edge(&mut self, from: NodeId) -> &mut Edge {
        let i = self.edges.binary_search_by_key(&from, |e| e.node).expect("a message comes over an edge");
        &mut self.edges[i]
    }

    fn count(&self, link: Link) -> usize {
        self.edges.iter().filter(|e| e.link == link).count()
    }

    fn wake(&mut self, cx: &Context, out: &mut Out) {
        if self.phase != Phase::Asleep {
            return;
        }
        out.emit(Event::ElectionStarted);
        self.phase = Phase::Setup;
        for e in &self.edges {
            out.send(e.node, Msg::Setup(self.uid));
        }
        self.try_orient(cx, out);
    }

    fn try_orient(&mut self, cx: &Context, out: &mut Out) {
        if self.phase != Phase::Setup || self.edges.iter().any(|e| e.uid.is_none()) {
            return;
        }
        for e in &mut self.edges {
            e.link = if e.uid > Some(self.uid) { Link::Out } else { Link::In };
        }
        if self.edges.is_empty() {
            self.become_leader(cx, out);
        } else {
            self.begin_iteration(cx, out);
        }
    }

    fn begin_iteration(&mut self, cx: &Context, out: &mut Out) {
        self.iterations += 1;
        self.phase = Phase::Down;
        self.try_down(cx, out);
    }

    /// YO-: with a value on every in-edge, pass the minimum down.
    fn try_down(&mut self, cx: &Context, out: &mut Out) {
        if self.phase != Phase::Down {
            return;
        }
        // A source's minimum is its own id; anyone else's, the smallest value on its in-edges.
        let mut min: Option<Uid> = None;
        for e in self.edges.iter().filter(|e| e.link == Link::In) {
            match e.value {
                Some(v) => min = Some(min.map_or(v, |m| m.min(v))),
                None => return,
            }
        }
        self.min = min.unwrap_or(self.uid);
        if self.count(Link::Out) == 0 {
            self.decide(cx, out);
        } else {
            for e in self.edges.iter().filter(|e| e.link == Link::Out) {
                out.send(e.node, Msg::Yo(self.min));
            }
            self.phase = Phase::Up;
        }
    }

    /// -YO: with a vote on every out-edge, vote on the in-edges, flip and prune.
    fn try_up(&mut self, cx: &Context, out: &mut Out) {
        if self.phase == Phase::Up && self.edges.iter().all(|e| e.link != Link::Out || e.vote.is_some()) {
            self.decide(cx, out);
        }
    }

    fn decide(&mut self, cx: &Context, out: &mut Out) {
        let ins: Vec<usize> = (0..self.edges.len()).filter(|&i| self.edges[i].link == Link::In).collect();
        let mut any_no = false;
        for e in self.edges.iter_mut().filter(|e| e.link == Link::Out) {
            let (yes, prune) = e.vote.take().expect("every out-edge voted");
            any_no |= !yes;
            e.link = if prune {
                Link::Pruned
            } else if yes {
                Link::Out
            } else {
                Link::In
            };
        }
        if ins.is_empty() {
            // A source: it stays a candidate unless it got a NO; alone, it is the minimum.
            if !any_no && self.count(Link::Out) == 0 {
                self.become_leader(cx, out);
                return;
            }
            self.begin_iteration(cx, out);
            return;
        }
        // Keep one in-edge per distinct value; ask the others to prune.
        let mut kept: Vec<usize> = Vec::with_capacity(ins.len());
        for &i in &ins {
            let v = self.edges[i].value;
            if kept.iter().any(|&k| self.edges[k].value == v) {
                out.send(self.edges[i].node, Msg::Vote { yes: true, prune: true });
                self.edges[i].link = Link::Pruned;
            } else {
                kept.push(i);
            }
        }
        let sink_now = !any_no && self.count(Link::Out) == 0;
        if sink_now && kept.len() == 1 {
            let e = &mut self.edges[kept[0]];
            out.send(e.node, Msg::Vote { yes: true, prune: true });
            e.link = Link::Pruned;
            for &i in &ins {
                self.edges[i].value = None;
            }
            self.phase = Phase::Left;
            return;
        }
        for &i in &kept {
            let e = &mut self.edges[i];
            let yes = !any_no && e.value == Some(self.min);
            out.send(e.node, Msg::Vote { yes, prune: false });
            if !yes {
                e.link = Link::Out;
            }
        }
        for &i in &ins {
            self.edges[i].value = None;
        }
        self.begin_iteration(cx, out);
    }

    fn become_leader(&mut self, cx: &Context, out: &mut Out) {
        self.phase = Phase::Leader;
        self.leader = Some(self.uid);
        out.emit(Event::Leader { leader: self.uid, term: 0 });
        for to in cx.topology.neighbors(cx.me) {
            out.send(to, Msg::Coordinator(self.uid));
        }
    }
}

impl Process for YoYo {
    type Msg = Msg;
    type Timer = Timer;

    fn on_message(&mut self, cx: &Context, from: NodeId, msg: Msg, out: &mut Out) {
        match msg {
            Msg::Setup(j) => {
                self.wake(cx, out);
                self.edge(from).uid = Some(j);
                self.try_orient(cx, out);
            }
            Msg::Yo(v) => {
                self.edge(from).value = Some(v);
                self.try_down(cx, out);
            }
            Msg::Vote { yes, prune } => {
                self.edge(from).vote = Some((yes, prune));
                self.try_up(cx, out);
            }
            Msg::Coordinator(j) => {
                if self.leader.is_none() {
                    self.leader = Some(j);
                    out.emit(Event::Leader { leader: j, term: 0 });
                    for to in cx.topology.neighbors(cx.me).filter(|&to| to != from) {
                        out.send(to, Msg::Coordinator(j));
                    }
                }
            }
        }
    }

    fn on_timer(&mut self, _cx: &Context, timer: Timer, _out: &mut Out) {
        match timer {}
    }

    fn on_request(&mut self, cx: &Context, req: Request, out: &mut Out) {
        if req == Request::StartElection {
            self.wake(cx, out);
        }
    }

    /// Everything is volatile: a recovered node is asleep again, with its edges unknown.
    fn on_recover(&mut self, _cx: &Context, _out: &mut Out) {
        self.phase = Phase::Asleep;
        self.leader = None;
        self.iterations = 0;
        for e in &mut self.edges {
            *e = Edge { node: e.node, link: Link::Unknown, uid: None, value: None, vote: None };
        }
    }

    fn leader(&self) -> Option<Uid> {
        self.leader
    }
}

impl Algorithm for YoYo {
    const NAME: &'static str = "yoyo";
    const FAMILY: Family = Family::Election;
    const SUMMARY: &'static str =
        "arbitrary connected graph; values flow down a DAG, votes up, edges flip and prune (Santoro)";
    const TOPOLOGY: TopologyKind = TopologyKind::Graph;
    const LEADER_RULE: LeaderRule = LeaderRule::Min;
    type Config = ();

    fn configure(_setup: &Setup) -> Result<(), ParamError> {
        Ok(())
    }

    fn new(me: NodeId, _config: &(), setup: &Setup) -> Self {
        let edges = setup
            .topology
            .neighbors(me)
            .map(|node| Edge { node, link: Link::Unknown, uid: None, value: None, vote: None })
            .collect();
        YoYo {
            uid: setup.uids[me as usize],
            phase: Phase::Asleep,
            edges,
            min: 0,
            iterations: 0,
            leader: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestSystem;
    use ringleader_core::Topology;
    use ringleader_core::harness::Harness;

    const YES: Msg = Msg::Vote { yes: true, prune: false };
    const NO: Msg = Msg::Vote { yes: false, prune: false };
    const PRUNE: Msg = Msg::Vote { yes: true, prune: true };

    /// Position 0 at the centre of a star with leaves 1, 2, 3, holding `uids[0]`; the leaves'
    /// ids have been exchanged (setup done) unless `setup` is false.
    fn centre(uids: [Uid; 4], setup: bool) -> Harness<YoYo> {
        let topology = Topology::from_edges(4, &[(0, 1), (0, 2), (0, 3)]);
        let mut p = TestSystem::new(4).uids(&uids).topology(topology).node(0);
        if setup {
            p.request(Request::StartElection);
            for k in 1..4 {
                p.deliver(k, Msg::Setup(uids[k as usize]));
            }
        }
        p
    }

    /// Rule 1: a woken node sends its id on every edge and orients each edge toward the larger
    /// id once it knows them all.
    #[test]
    fn rule_1_setup_sends_the_id_on_every_edge_then_orients() {
        let mut p = centre([5, 1, 7, 9], false);
        let step = p.request(Request::StartElection);
        assert_eq!(step.sent(), vec![(1, Msg::Setup(5)), (2, Msg::Setup(5)), (3, Msg::Setup(5))]);
        assert_eq!(step.emitted(), vec![Event::ElectionStarted]);
        assert!(p.deliver(1, Msg::Setup(1)).is_empty());
        assert!(p.deliver(2, Msg::Setup(7)).is_empty());
        assert!(p.deliver(3, Msg::Setup(9)).is_empty(), "internal: it waits for its in-edge's value");
        let links: Vec<Link> = p.process.edges.iter().map(|e| e.link).collect();
        assert_eq!(links, vec![Link::In, Link::Out, Link::Out]);
        let mut asleep = centre([5, 1, 7, 9], false);
        assert_eq!(asleep.deliver(1, Msg::Setup(1)).sent().len(), 3, "a setup message wakes a node");
    }

    /// Rule 2: a source sends its id down at once; an internal node waits for every in-edge
    /// and passes their minimum down.
    #[test]
    fn rule_2_yo_down_sources_send_and_internal_nodes_pass_the_minimum() {
        let mut source = centre([1, 2, 3, 4], false);
        source.request(Request::StartElection);
        source.deliver(1, Msg::Setup(2));
        source.deliver(2, Msg::Setup(3));
        let step = source.deliver(3, Msg::Setup(4));
        assert_eq!(step.sent(), vec![(1, Msg::Yo(1)), (2, Msg::Yo(1)), (3, Msg::Yo(1))]);

        let mut p = centre([5, 1, 2, 9], true);
        assert!(p.deliver(2, Msg::Yo(2)).is_empty(), "one in-edge still silent");
        assert_eq!(p.deliver(1, Msg::Yo(1)).sent(), vec![(3, Msg::Yo(1))]);
    }

    /// Rule 3: a sink votes YES where its minimum came from and NO elsewhere; an internal node
    /// that got a NO votes NO upward; a source that got a NO stops being a source.
    #[test]
    fn rule_3_votes_go_up_yes_for_the_minimum_no_for_the_rest() {
        let mut sink = centre([9, 1, 2, 3], true);
        sink.deliver(1, Msg::Yo(1));
        sink.deliver(2, Msg::Yo(2));
        assert_eq!(sink.deliver(3, Msg::Yo(3)).sent(), vec![(1, YES), (2, NO), (3, NO)]);

        let mut internal = centre([5, 1, 8, 9], true);
        internal.deliver(1, Msg::Yo(1));
        assert!(internal.deliver(2, YES).is_empty(), "one out-edge has not voted");
        assert_eq!(internal.deliver(3, NO).sent(), vec![(1, NO)]);

        let mut source = centre([1, 2, 3, 4], true);
        source.deliver(1, YES);
        source.deliver(2, YES);
        assert!(source.deliver(3, NO).is_empty());
        assert_eq!(source.process.edges[2].link, Link::In, "no longer a source");
        assert_eq!(source.process.iterations(), 2);
    }

    /// Rule 4: every edge that carried a NO reverses.
    #[test]
    fn rule_4_edges_that_carried_no_flip() {
        let mut sink = centre([9, 1, 2, 3], true);
        sink.deliver(1, Msg::Yo(1));
        sink.deliver(2, Msg::Yo(2));
        sink.deliver(3, Msg::Yo(3));
        let links: Vec<Link> = sink.process.edges.iter().map(|e| e.link).collect();
        assert_eq!(links, vec![Link::In, Link::Out, Link::Out]);
        assert_eq!(sink.deliver(1, Msg::Yo(1)).sent(), vec![(2, Msg::Yo(1)), (3, Msg::Yo(1))]);
    }

    /// Rule 5: duplicate values keep one edge and prune the others; a sink left with one
    /// in-neighbour prunes it too and leaves.
    #[test]
    fn rule_5_duplicates_and_a_lone_sink_edge_are_pruned() {
        let mut p = centre([9, 1, 2, 3], true);
        p.deliver(1, Msg::Yo(1));
        p.deliver(2, Msg::Yo(1));
        assert_eq!(p.deliver(3, Msg::Yo(3)).sent(), vec![(2, PRUNE), (1, YES), (3, NO)]);
        assert!(!p.process.has_left());

        let mut q = centre([9, 1, 2, 3], true);
        q.deliver(1, Msg::Yo(1));
        q.deliver(2, Msg::Yo(1));
        assert_eq!(q.deliver(3, Msg::Yo(1)).sent(), vec![(2, PRUNE), (3, PRUNE), (1, PRUNE)]);
        assert!(q.process.has_left());
    }

    /// Rule 6: a source whose edges were all pruned leads and floods COORDINATOR over the
    /// original graph; every node forwards the first copy to all but its sender.
    #[test]
    fn rule_6_the_last_source_leads_and_coordinator_floods() {
        let mut p = centre([1, 2, 3, 4], true);
        p.deliver(1, PRUNE);
        p.deliver(2, PRUNE);
        let step = p.deliver(3, PRUNE);
        assert_eq!(step.emitted(), vec![Event::Leader { leader: 1, term: 0 }]);
        let c = Msg::Coordinator(1);
        assert_eq!(step.sent(), vec![(1, c.clone()), (2, c.clone()), (3, c.clone())]);

        let mut q = centre([5, 1, 7, 9], true);
        let step = q.deliver(1, c.clone());
        assert_eq!(step.sent(), vec![(2, c.clone()), (3, c.clone())]);
        assert_eq!(step.emitted(), vec![Event::Leader { leader: 1, term: 0 }]);
        assert!(q.deliver(2, c).is_empty(), "only the first copy is forwarded");
    }
}
