//! # Raymond's tree-based token algorithm (1989)
//!
//! *Raymond, "A tree-based algorithm for distributed mutual exclusion", ACM TOCS 7(1), 1989.*
//!
//! ## The idea
//! Arrange the processes in a static spanning tree and orient every edge toward the token: each
//! process only knows which neighbour, its HOLDER, lies in the token's direction. Requests
//! climb the tree toward the token; the token (the PRIVILEGE) walks back down, reversing the
//! edges it crosses. Each process forwards at most one request at a time on behalf of its whole
//! subtree.
//!
//! ## The rules (Raymond's variables and procedures)
//! HOLDER (self or a neighbour), REQUEST_Q (FIFO of neighbours and self that asked), USING (in
//! the critical section), ASKED (a REQUEST was sent to HOLDER and not yet answered).
//! 1. ASSIGN_PRIVILEGE: if HOLDER = self ∧ ¬USING ∧ REQUEST_Q ≠ ∅: HOLDER := dequeue; ASKED :=
//!    false; if HOLDER = self, USING := true and enter, else send PRIVILEGE to HOLDER.
//! 2. MAKE_REQUEST: if HOLDER ≠ self ∧ REQUEST_Q ≠ ∅ ∧ ¬ASKED: send REQUEST to HOLDER; ASKED :=
//!    true.
//! 3. Acquire: enqueue self. On REQUEST from a neighbour: enqueue it. On PRIVILEGE: HOLDER :=
//!    self. Release: USING := false. After each of these: ASSIGN_PRIVILEGE, then MAKE_REQUEST.
//! 4. The token starts at position 0, so every HOLDER initially points to the neighbour on the
//!    tree path to it (computed once, by breadth-first search from position 0).
//! 5. Copies (not in the paper, which assumes reliable channels): the PRIVILEGE carries a pass
//!    number, one more at every hop, and each process remembers the last it received; a
//!    PRIVILEGE whose pass it has already seen is a duplicated copy and is discarded, and so is
//!    a REQUEST from a neighbour already in REQUEST_Q. A link that duplicates messages cannot
//!    make a second token. (A copy of a REQUEST that arrives after its sender was served queues
//!    it again: one PRIVILEGE hop there and back, no harm.)
//!
//! The tree is the driver's `Tree` topology: by default a balanced binary tree rooted at
//! position 0 (position i's parent is (i − 1)/2); a run may choose another with `--graph line`,
//! `star`, `random-tree` or `file:PATH` (the drivers refuse graphs with cycles).
//!
//! ```text
//!   not holder ──REQUEST_Q non-empty, ¬ASKED / REQUEST to HOLDER──▶ asked ──PRIVILEGE──▶ holder
//!   holder ──head = self──▶ using ──Release──▶ holder ──head = j / PRIVILEGE to j──▶ not holder
//! ```
//!
//! ## Costs
//! An entry costs 2·d messages, d the tree distance from the requester to the token (d REQUESTs
//! up, d PRIVILEGE hops back); d ≤ the diameter, 2·depth on a balanced tree of depth
//! ⌊log2 N⌋, so at most 4·⌊log2 N⌋ per entry under light load, O(log N) on average. The shape
//! decides it: a star (diameter 2) costs at most 4 per entry, a line (diameter N − 1) up to
//! 2(N − 1). Under
//! saturation a REQUEST serves a whole subtree, and the average drops to about 4 per entry.
//! Synchronization delay up to d messages (the token walks the path); response time 2·d delays
//! under light load.
//!
//! ## Fencing tokens
//! The PRIVILEGE carries an entry counter, incremented at every entry: the fencing token.
//!
//! ## Forged messages
//! Every message travels along an edge of the tree, so a real node refuses (`Algorithm::admits`)
//! a REQUEST or PRIVILEGE from a node that is not one of its tree neighbours. It admits a
//! PRIVILEGE from a neighbour that is not its HOLDER: a duplicating link delivers that honestly,
//! and rule 5 discards it.
//!
//! ## Assumptions and known flaws
//! Reliable channels, or channels that duplicate (rule 5); FIFO is not needed (a neighbour sends at most one REQUEST until it gets
//! the PRIVILEGE). Safe, deadlock-free and starvation-free (REQUEST_Q is FIFO) while nobody
//! fails. No crash is tolerated: a crashed process cuts the tree in two and may hold the token.
//! A recovered process forgets REQUEST_Q, USING and ASKED but keeps HOLDER and the token's
//! counter (stable storage); the neighbours whose requests it forgot wait forever.

use std::collections::VecDeque;

use ringleader_core::{Context, Event, Message, NodeId, Outbox, Process, Request};
use serde::{Deserialize, Serialize};

use crate::{Algorithm, Family, ParamError, Setup, TopologyKind};

/// Messages of Raymond's algorithm.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// A neighbour asks for the privilege on behalf of its subtree.
    Request,
    /// The token, with the number of entries so far.
    Privilege {
        /// Entries so far (the fencing token).
        entries: u64,
        /// Passes so far, numbered from 1: a process discards a PRIVILEGE whose pass it has
        /// already seen (a duplicated copy).
        pass: u64,
    },
}

impl Message for Msg {
    const KINDS: &'static [&'static str] = &["request", "privilege"];
    fn kind_index(&self) -> usize {
        match self {
            Msg::Request => 0,
            Msg::Privilege { .. } => 1,
        }
    }
}

/// Raymond's algorithm sets no timers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
pub enum Timer {}

/// A process of Raymond's algorithm.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Raymond {
    me: NodeId,
    /// The tree neighbours (the parent and the children in the spanning tree), sorted.
    neighbours: Vec<NodeId>,
    /// HOLDER: self, or the neighbour in the token's direction.
    holder: NodeId,
    /// REQUEST_Q.
    request_q: VecDeque<NodeId>,
    /// USING.
    using: bool,
    /// ASKED.
    asked: bool,
    /// The token's entry counter, valid while HOLDER = self.
    entries: u64,
    /// The token's pass number when it was last here (0: it started here or never came) — on
    /// stable storage.
    pass: u64,
}

type Out = Outbox<Msg, Timer>;

impl Raymond {
    fn assign_privilege(&mut self, out: &mut Out) {
        if self.holder != self.me || self.using {
            return;
        }
        let Some(next) = self.request_q.pop_front() else { return };
        self.holder = next;
        self.asked = false;
        if next == self.me {
            self.using = true;
            self.entries += 1;
            out.emit(Event::Entered { fencing: self.entries });
        } else {
            self.pass += 1;
            out.send(next, Msg::Privilege { entries: self.entries, pass: self.pass });
        }
    }

    fn make_request(&mut self, out: &mut Out) {
        if self.holder != self.me && !self.request_q.is_empty() && !self.asked {
            out.send(self.holder, Msg::Request);
            self.asked = true;
        }
    }

    fn after_event(&mut self, out: &mut Out) {
        self.assign_privilege(out);
        self.make_request(out);
    }
}

impl Process for Raymond {
    type Msg = Msg;
    type Timer = Timer;

    fn on_message(&mut self, _cx: &Context, from: NodeId, msg: Msg, out: &mut Out) {
        match msg {
            // A neighbour asks once until it gets the PRIVILEGE: a second REQUEST while it is
            // queued is a copy.
            Msg::Request if self.request_q.contains(&from) => return,
            Msg::Request => self.request_q.push_back(from),
            // The token's pass number only grows, and a copy reaches the process that got the
            // original: a pass already seen is a copy, never a second token.
            Msg::Privilege { pass, .. } if pass <= self.pass => return,
            Msg::Privilege { entries, pass } => {
                self.holder = self.me;
                self.entries = entries;
                self.pass = pass;
            }
        }
        self.after_event(out);
    }

    fn on_timer(&mut self, _cx: &Context, timer: Timer, _out: &mut Out) {
        match timer {}
    }

    fn on_request(&mut self, _cx: &Context, req: Request, out: &mut Out) {
        match req {
            Request::Acquire if !self.using && !self.request_q.contains(&self.me) => {
                self.request_q.push_back(self.me);
            }
            Request::Release if self.using => {
                self.using = false;
                out.emit(Event::Exited);
            }
            _ => return,
        }
        self.after_event(out);
    }

    /// REQUEST_Q, USING and ASKED are volatile; HOLDER and the token's counter are kept on
    /// stable storage. The neighbours whose REQUESTs were forgotten wait forever (their ASKED
    /// stays true): the algorithm does not tolerate crashes.
    fn on_recover(&mut self, _cx: &Context, _out: &mut Out) {
        self.request_q.clear();
        self.using = false;
        self.asked = false;
    }

    fn in_critical_section(&self) -> bool {
        self.using
    }
}

impl Algorithm for Raymond {
    const NAME: &'static str = "raymond";

    /// Nothing regenerates the token; it is at the process whose HOLDER is itself, which keeps
    /// it through a crash and a recovery (a crashed one with no recovery to come has it no
    /// more).
    fn token_lost(states: &[Self], _crashed: &[bool], gone: &[bool]) -> bool {
        states.iter().zip(gone).all(|(s, &gone)| gone || s.holder != s.me)
    }
    const FAMILY: Family = Family::Mutex;
    const SUMMARY: &'static str =
        "token on a static spanning tree; HOLDER points to it, REQUESTs climb, PRIVILEGE descends; O(log N)";
    const TOPOLOGY: TopologyKind = TopologyKind::Tree;
    /// Each position's initial HOLDER: its neighbour on the path to position 0 (0 for itself).
    type Config = Vec<NodeId>;

    /// REQUEST and PRIVILEGE travel along the tree's edges only.
    fn admits(&self, from: NodeId, _msg: &Msg) -> Result<(), &'static str> {
        if self.neighbours.binary_search(&from).is_err() {
            return Err("a REQUEST or PRIVILEGE from a node that is not a tree neighbour");
        }
        Ok(())
    }

    fn configure(setup: &Setup) -> Result<Vec<NodeId>, ParamError> {
        let n = setup.topology.len() as usize;
        let mut parent = vec![NodeId::MAX; n];
        let mut queue = VecDeque::new();
        if n > 0 {
            parent[0] = 0;
            queue.push_back(0);
        }
        while let Some(x) = queue.pop_front() {
            for y in setup.topology.neighbors(x) {
                if parent[y as usize] == NodeId::MAX {
                    parent[y as usize] = x;
                    queue.push_back(y);
                }
            }
        }
        match parent.iter().position(|&p| p == NodeId::MAX) {
            Some(p) => Err(ParamError::OutOfRange {
                key: "graph".into(),
                reason: format!("position {} cannot reach position 1; the tree must be connected", p + 1),
            }),
            None => Ok(parent),
        }
    }

    fn new(me: NodeId, parent: &Vec<NodeId>, _setup: &Setup) -> Self {
        let neighbours = (0..parent.len() as NodeId)
            .filter(|&j| j != me && (parent[j as usize] == me || parent[me as usize] == j))
            .collect();
        Raymond {
            me,
            neighbours,
            holder: parent[me as usize],
            request_q: VecDeque::new(),
            using: false,
            asked: false,
            entries: 0,
            pass: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestSystem;
    use ringleader_core::Topology;
    use ringleader_core::harness::Harness;

    /// Position `me` of the balanced binary tree on seven positions (0 the root; 1 and 2 its
    /// children; 3, 4 under 1; 5, 6 under 2).
    fn node(me: NodeId) -> Harness<Raymond> {
        let tree = Topology::from_edges(7, &[(0, 1), (0, 2), (1, 3), (1, 4), (2, 5), (2, 6)]);
        TestSystem::new(7).topology(tree).node(me)
    }

    /// Rule 1: the idle holder gives the privilege to the head of REQUEST_Q: itself (it enters)
    /// or a neighbour (PRIVILEGE); not while using it.
    #[test]
    fn rule_1_assign_privilege_to_the_head_of_the_queue() {
        let mut root = node(0);
        assert_eq!(root.deliver(1, Msg::Request).sent(), vec![(1, Msg::Privilege { entries: 0, pass: 1 })]);
        assert_eq!(root.process.holder, 1);
        let mut busy = node(0);
        assert_eq!(busy.request(Request::Acquire).emitted(), vec![Event::Entered { fencing: 1 }]);
        assert!(busy.deliver(2, Msg::Request).is_empty(), "using: queued");
        let step = busy.request(Request::Release);
        assert_eq!(step.emitted(), vec![Event::Exited]);
        assert_eq!(step.sent(), vec![(2, Msg::Privilege { entries: 1, pass: 1 })]);
    }

    /// Rule 2: a non-holder with a non-empty queue asks its HOLDER once, until answered.
    #[test]
    fn rule_2_make_request_asks_the_holder_once() {
        let mut leaf = node(3);
        assert_eq!(leaf.request(Request::Acquire).sent(), vec![(1, Msg::Request)]);
        let mut inner = node(1);
        assert_eq!(inner.deliver(3, Msg::Request).sent(), vec![(0, Msg::Request)]);
        assert!(inner.deliver(4, Msg::Request).is_empty(), "already asked for the subtree");
        let mut root = node(0);
        root.request(Request::Acquire);
        root.deliver(1, Msg::Request);
        root.deliver(2, Msg::Request);
        assert_eq!(
            root.request(Request::Release).sent(),
            vec![(1, Msg::Privilege { entries: 1, pass: 1 }), (1, Msg::Request)],
            "the token leaves with 2 still queued: ask it back"
        );
    }

    /// Rule 3: PRIVILEGE makes this node HOLDER, then the privilege is assigned and the
    /// remaining queue asked for.
    #[test]
    fn rule_3_privilege_makes_the_node_holder_and_passes_down() {
        let mut inner = node(1);
        inner.deliver(3, Msg::Request);
        inner.deliver(4, Msg::Request);
        assert_eq!(
            inner.deliver(0, Msg::Privilege { entries: 5, pass: 4 }).sent(),
            vec![(3, Msg::Privilege { entries: 5, pass: 5 }), (3, Msg::Request)]
        );
        let mut leaf = node(3);
        leaf.request(Request::Acquire);
        assert_eq!(
            leaf.deliver(1, Msg::Privilege { entries: 5, pass: 5 }).emitted(),
            vec![Event::Entered { fencing: 6 }]
        );
        assert!(leaf.process.in_critical_section());
    }

    /// Rule 5: a copy of a PRIVILEGE (a pass already seen) or of a queued neighbour's REQUEST
    /// is discarded; the next pass is taken.
    #[test]
    fn rule_5_copies_are_discarded() {
        let mut leaf = node(3);
        leaf.request(Request::Acquire);
        let first = leaf.deliver(1, Msg::Privilege { entries: 5, pass: 5 });
        assert_eq!(first.emitted(), vec![Event::Entered { fencing: 6 }]);
        leaf.request(Request::Release);
        leaf.deliver(1, Msg::Request);
        leaf.request(Request::Acquire);
        let copy = leaf.deliver(1, Msg::Privilege { entries: 5, pass: 5 });
        assert!(copy.is_empty(), "a copy of pass 5 is not a second token");
        assert!(!leaf.process.in_critical_section());
        let next = leaf.deliver(1, Msg::Privilege { entries: 7, pass: 7 });
        assert_eq!(next.emitted(), vec![Event::Entered { fencing: 8 }]);
        let mut root = node(0);
        root.request(Request::Acquire);
        root.deliver(1, Msg::Request);
        assert!(root.deliver(1, Msg::Request).is_empty());
        assert_eq!(root.process.request_q, VecDeque::from([1]), "queued once");
    }

    /// Rule 4: HOLDER starts pointing along the tree path to position 0.
    #[test]
    fn rule_4_holder_starts_on_the_path_to_the_token() {
        let holders: Vec<NodeId> = (0..7).map(|p| node(p).process.holder).collect();
        assert_eq!(holders, vec![0, 0, 0, 1, 1, 2, 2]);
        let line = Topology::from_edges(4, &[(3, 2), (2, 1), (1, 0)]);
        let h: Vec<NodeId> = (0..4)
            .map(|p| TestSystem::new(4).topology(line.clone()).node::<Raymond>(p).process.holder)
            .collect();
        assert_eq!(h, vec![0, 0, 1, 2]);
    }

    /// Forged messages: a REQUEST or PRIVILEGE from a node that is not a tree neighbour is
    /// refused; the parent's and the children's are admitted.
    #[test]
    fn admits_messages_only_from_tree_neighbours() {
        let p = node(1);
        assert_eq!(p.process.neighbours, vec![0, 3, 4]);
        for from in [0, 3, 4] {
            assert_eq!(p.process.admits(from, &Msg::Request), Ok(()));
            assert_eq!(p.process.admits(from, &Msg::Privilege { entries: 2, pass: 1 }), Ok(()));
        }
        for from in [2, 5, 6] {
            assert_eq!(
                p.process.admits(from, &Msg::Privilege { entries: 2, pass: 1 }),
                Err("a REQUEST or PRIVILEGE from a node that is not a tree neighbour")
            );
            assert_eq!(
                p.process.admits(from, &Msg::Request),
                Err("a REQUEST or PRIVILEGE from a node that is not a tree neighbour")
            );
        }
    }
}
