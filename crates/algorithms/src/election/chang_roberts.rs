//! # Chang-Roberts: election on a unidirectional ring (1979)
//!
//! *Chang and Roberts, "An improved algorithm for decentralized extrema-finding in circular
//! configurations of processes", CACM 22(5), 1979; Le Lann's ring election (IFIP 1977) that it
//! improves.*
//!
//! ## The idea
//! Processes sit on a ring and only know their successor. An initiator sends its own id around;
//! a larger id swallows a smaller one, so only the largest id survives a full trip — when a
//! process receives its own id back, it has seen every other id lose and it is the coordinator.
//!
//! ## The rules
//! All processes start *non-participant*.
//! 1. An initiator marks itself participant and sends ELECTION(own id) to its successor.
//! 2. On ELECTION(j) at P_i:
//!    - j > i: forward ELECTION(j), mark participant;
//!    - j < i and P_i is not a participant: send ELECTION(i) instead, mark participant;
//!    - j < i and P_i is a participant: discard (its own, larger id is already travelling);
//!    - j = i: P_i is elected.
//! 3. The elected process becomes non-participant and sends ELECTED(i); each receiver records
//!    the coordinator, becomes non-participant and forwards; the message stops at the winner.
//!
//! ```text
//!   non-participant ──initiate / ELECTION(j)──▶ participant ──ELECTED(j)──▶ non-participant
//!                                                  │ ELECTION(own id)
//!                                                  ▼
//!                                               elected ── sends ELECTED(own id)
//! ```
//!
//! ## Costs (messages are sends; every process initiates at t = 0; ELECTED adds N)
//! - ELECTION best case 2N − 1 (ids ascending along the direction of travel);
//! - worst case N(N + 1)/2 (ids descending);
//! - average N·H_N ≈ 0.69·N·log2 N over random arrangements;
//! - a single initiator costs between 2N (it holds the maximum) and 3N − 1 in total (the maximum
//!   is its predecessor).
//!
//! ## Assumptions
//! Reliable FIFO-free channels (order does not matter), no failures during the election, unique
//! ids. A crashed process breaks the ring: Chang-Roberts has no way to skip it (the list-based
//! `ring` election does).
//!
//! ## Known flaws
//! No fault tolerance at all: one crash, or one lost message, and the election never ends — the
//! termination checker reports it. Messages are O(N²) in the worst arrangement, which
//! Hirschberg-Sinclair brings down to O(N log N) on a bidirectional ring.

use ringleader_core::{Context, Event, Message, NodeId, Outbox, Process, Request, Uid};
use serde::{Deserialize, Serialize};

use crate::{Algorithm, Family, ParamError, Setup, TopologyKind};

/// Chang-Roberts messages.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// ELECTION(j): the candidate j travels around the ring.
    Election(Uid),
    /// ELECTED(j): j is the coordinator; travels once around, stops at j.
    Elected(Uid),
}

impl Message for Msg {
    const KINDS: &'static [&'static str] = &["election", "elected"];
    fn kind_index(&self) -> usize {
        match self {
            Msg::Election(_) => 0,
            Msg::Elected(_) => 1,
        }
    }
    /// Both messages are forwarded around the ring: they name a candidate, not their sender.
    fn uids_named(&self) -> Vec<Uid> {
        match self {
            Msg::Election(j) | Msg::Elected(j) => vec![*j],
        }
    }
}

/// Chang-Roberts has no timers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
pub enum Timer {}

/// One process on the ring.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct ChangRoberts {
    uid: Uid,
    participant: bool,
    leader: Option<Uid>,
}

type Out = Outbox<Msg, Timer>;

impl ChangRoberts {
    fn initiate(&mut self, cx: &Context, out: &mut Out) {
        if !self.participant {
            out.emit(Event::ElectionStarted);
            if cx.n() == 1 {
                // Alone on the ring: its own id has already "come back". Deciding is a local
                // step, not two messages to itself.
                self.leader = Some(self.uid);
                out.emit(Event::Leader { leader: self.uid, term: 0 });
                return;
            }
            self.participant = true;
            out.send(cx.successor(), Msg::Election(self.uid));
        }
    }

    fn recv_election(&mut self, cx: &Context, j: Uid, out: &mut Out) {
        if j > self.uid {
            self.participant = true;
            out.send(cx.successor(), Msg::Election(j));
        } else if j < self.uid {
            if !self.participant {
                self.participant = true;
                out.send(cx.successor(), Msg::Election(self.uid));
            }
        } else {
            self.participant = false;
            self.leader = Some(self.uid);
            out.emit(Event::Leader { leader: self.uid, term: 0 });
            out.send(cx.successor(), Msg::Elected(self.uid));
        }
    }

    fn recv_elected(&mut self, cx: &Context, j: Uid, out: &mut Out) {
        if j != self.uid {
            self.participant = false;
            self.leader = Some(j);
            out.emit(Event::Leader { leader: j, term: 0 });
            out.send(cx.successor(), Msg::Elected(j));
        }
    }
}

impl Process for ChangRoberts {
    type Msg = Msg;
    type Timer = Timer;

    fn on_message(&mut self, cx: &Context, _from: NodeId, msg: Msg, out: &mut Out) {
        match msg {
            Msg::Election(j) => self.recv_election(cx, j, out),
            Msg::Elected(j) => self.recv_elected(cx, j, out),
        }
    }

    fn on_timer(&mut self, _cx: &Context, timer: Timer, _out: &mut Out) {
        match timer {}
    }

    fn on_request(&mut self, cx: &Context, req: Request, out: &mut Out) {
        if req == Request::StartElection {
            self.initiate(cx, out);
        }
    }

    /// Everything is volatile: a recovered process is a fresh non-participant.
    fn on_recover(&mut self, _cx: &Context, _out: &mut Out) {
        self.participant = false;
        self.leader = None;
    }

    fn leader(&self) -> Option<Uid> {
        self.leader
    }
}

impl Algorithm for ChangRoberts {
    const NAME: &'static str = "chang-roberts";
    const FAMILY: Family = Family::Election;
    const SUMMARY: &'static str = "unidirectional ring; the largest id swallows smaller ones (1979)";
    const TOPOLOGY: TopologyKind = TopologyKind::Ring;
    type Config = ();

    fn configure(_setup: &Setup) -> Result<(), ParamError> {
        Ok(())
    }

    fn new(me: NodeId, _config: &(), setup: &Setup) -> Self {
        ChangRoberts { uid: setup.uids[me as usize], participant: false, leader: None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestSystem;
    use ringleader_core::Topology;
    use ringleader_core::harness::Harness;

    /// Position `me` of a ring of three, uids 1, 2, 3.
    fn node(me: NodeId) -> Harness<ChangRoberts> {
        TestSystem::new(3).topology(Topology::Ring { n: 3 }).node(me)
    }

    /// Rule 1: an initiator becomes participant and sends ELECTION(own id) to its successor.
    #[test]
    fn rule_1_an_initiator_sends_its_own_id_to_the_successor() {
        let mut p = node(0);
        let step = p.request(Request::StartElection);
        assert_eq!(step.sent(), vec![(1, Msg::Election(1))]);
        assert_eq!(step.emitted(), vec![Event::ElectionStarted]);
        assert!(p.process.participant);
        assert!(p.request(Request::StartElection).is_empty(), "a participant does not start again");
    }

    /// Rule 2: a larger id is forwarded, a smaller one replaced (non-participant) or discarded
    /// (participant), one's own id back means elected.
    #[test]
    fn rule_2_larger_ids_pass_smaller_ids_are_replaced_or_discarded_and_ones_own_elects() {
        let mut p = node(1);
        assert_eq!(p.deliver(0, Msg::Election(3)).sent(), vec![(2, Msg::Election(3))]);
        assert!(p.process.participant);
        let mut fresh = node(1);
        assert_eq!(fresh.deliver(0, Msg::Election(1)).sent(), vec![(2, Msg::Election(2))]);
        assert!(fresh.deliver(0, Msg::Election(1)).is_empty(), "a participant discards a smaller id");
        let step = fresh.deliver(0, Msg::Election(2));
        assert_eq!(step.emitted(), vec![Event::Leader { leader: 2, term: 0 }]);
        assert_eq!(step.sent(), vec![(2, Msg::Elected(2))]);
        assert!(!fresh.process.participant);
    }

    /// Rule 3: ELECTED(j) is recorded and forwarded by everyone but j, where it stops.
    #[test]
    fn rule_3_elected_is_recorded_forwarded_and_stops_at_the_winner() {
        let mut p = node(1);
        p.deliver(0, Msg::Election(3));
        let step = p.deliver(0, Msg::Elected(3));
        assert_eq!(step.sent(), vec![(2, Msg::Elected(3))]);
        assert_eq!(step.emitted(), vec![Event::Leader { leader: 3, term: 0 }]);
        assert!(!p.process.participant);
        assert!(p.deliver(0, Msg::Elected(2)).is_empty(), "back at the winner");
    }

    /// Alone on the ring, an initiator's id has already come back: it decides locally.
    #[test]
    fn alone_on_the_ring_it_elects_itself_without_sending() {
        let mut p = TestSystem::new(1).uids(&[7]).topology(Topology::Ring { n: 1 }).node::<ChangRoberts>(0);
        let step = p.request(Request::StartElection);
        assert!(step.sent().is_empty(), "{step:?}");
        assert_eq!(step.emitted(), vec![Event::ElectionStarted, Event::Leader { leader: 7, term: 0 }]);
        assert_eq!(p.process.leader(), Some(7));
        assert!(!p.process.participant);
    }
}
