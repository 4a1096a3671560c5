//! # Hirschberg-Sinclair: election on a bidirectional ring in O(N log N) messages (1980)
//!
//! *Chang-Roberts' worst case is N(N + 1)/2 messages; Hirschberg and Sinclair ("Decentralized extrema-finding in circular configurations
//! of processors", CACM 1980) bring it down to O(N log N) when links work both ways.*
//!
//! ## The idea
//! Instead of sending its id all the way round, a candidate conquers a neighbourhood that doubles
//! in every phase. In phase k it probes 2^k hops to the left and 2^k hops to the right; a larger
//! id anywhere in that neighbourhood swallows the probe and the candidate drops out. Only
//! candidates that are the largest within distance 2^k survive phase k, and two survivors are
//! more than 2^k apart, so at most ⌈N / (2^k + 1)⌉ candidates start phase k + 1. The one whose
//! probe travels all the way round and comes back to it holds the largest id.
//!
//! ## The rules
//! Every process starts asleep; an initiator, or a sleeping process that receives anything, wakes
//! up as a candidate in phase 0.
//! 1. A candidate in phase k sends PROBE(id, k, 1) both ways and waits for two REPLYs.
//! 2. On PROBE(j, k, d) at P_i, travelling in one direction:
//!    - j = i: its own probe came all the way round — P_i is elected;
//!    - j > i and d < 2^k: relay PROBE(j, k, d + 1) onward (P_i stops being a candidate);
//!    - j > i and d = 2^k: send REPLY(j, k) back toward j (P_i stops being a candidate);
//!    - j < i: swallow the probe.
//! 3. On REPLY(j, k) at P_i: j ≠ i → relay it onward; j = i → count it; with both replies of
//!    phase k in, move to phase k + 1.
//! 4. The elected process sends ELECTED(i) round the ring (it stops at i: N messages); every
//!    receiver records the coordinator.
//!
//! ```text
//!  asleep ──wake──▶ candidate(k) ──2 REPLY──▶ candidate(k+1) ──own PROBE back──▶ elected
//!                       │ larger PROBE                                        │ ELECTED round
//!                       ▼                                                     ▼
//!                    relay ◀─────────────────── ELECTED(j) ─────────────── coordinator known
//! ```
//!
//! Messages carry their direction of travel (`Dir`), so a two-node ring, where the left and the
//! right neighbour are the same process, works like any other.
//!
//! ## Costs (messages are sends)
//! Phase k costs at most 4·2^k sends per candidate (a probe and its reply, 2^k hops, both ways)
//! and at most ⌈N / (2^(k−1) + 1)⌉ candidates start it, so at most 8N per phase; there are at
//! most 1 + ⌈log2 N⌉ phases. PROBE + REPLY ≤ **8N(1 + ⌈log2 N⌉)**, plus N ELECTED. The tests
//! check that bound for ascending, descending and random arrangements and several N (powers of
//! two and not); `docs/ELECTIONS-LARGE.md` tabulates the measured counts beside it — the measured
//! counts are far below, around 3N log2 N for random arrangements.
//!
//! ## Assumptions
//! Bidirectional reliable channels (order does not matter: every message says what it is), no
//! failures, unique ids. Every process learns the coordinator from ELECTED.
//!
//! ## Known flaws
//! Like Chang-Roberts, no fault tolerance: one crash or one lost message and the election never
//! ends (the termination checker says so). Phases make it slower in time than Chang-Roberts:
//! phase k takes 2·2^k delays, so the election takes about 4N delays in total.

use ringleader_core::{Context, Event, Message, NodeId, Outbox, Process, Request, Uid};
use serde::{Deserialize, Serialize};

use crate::{Algorithm, Family, ParamError, Setup, TopologyKind};

/// Which way a message travels round the ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Dir {
    /// Toward the successor, (i + 1) mod N.
    Right,
    /// Toward the predecessor, (i − 1) mod N.
    Left,
}

impl Dir {
    fn reverse(self) -> Dir {
        match self {
            Dir::Right => Dir::Left,
            Dir::Left => Dir::Right,
        }
    }
}

/// Hirschberg-Sinclair messages.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// PROBE(j, k, d): candidate j, in phase k, has travelled d hops in direction `dir`.
    Probe {
        /// The candidate's id.
        uid: Uid,
        /// Its phase.
        phase: u32,
        /// Hops travelled so far (1 on the first hop).
        hops: u64,
        /// Direction of travel.
        dir: Dir,
    },
    /// REPLY(j, k): the probe of candidate j in phase k survived 2^k hops; travelling back.
    Reply {
        /// The candidate's id.
        uid: Uid,
        /// Its phase.
        phase: u32,
        /// Direction of travel (back toward the candidate).
        dir: Dir,
    },
    /// ELECTED(j): j is the coordinator; travels once round, stops at j.
    Elected(Uid),
}

impl Message for Msg {
    const KINDS: &'static [&'static str] = &["probe", "reply", "elected"];
    fn kind_index(&self) -> usize {
        match self {
            Msg::Probe { .. } => 0,
            Msg::Reply { .. } => 1,
            Msg::Elected(_) => 2,
        }
    }
}

/// Hirschberg-Sinclair has no timers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
pub enum Timer {}

/// Where a process stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
enum Role {
    /// Not woken up yet.
    Asleep,
    /// Still a candidate, in `phase`, with `replies` of its two replies in.
    Candidate { phase: u32, replies: u8 },
    /// Lost to a larger id; relays.
    Relay,
    /// Its own probe came back.
    Elected,
}

/// One process on the bidirectional ring.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct HirschbergSinclair {
    uid: Uid,
    role: Role,
    leader: Option<Uid>,
}

type Out = Outbox<Msg, Timer>;

fn toward(cx: &Context, dir: Dir) -> NodeId {
    match dir {
        Dir::Right => cx.topology.successor(cx.me),
        Dir::Left => cx.topology.predecessor(cx.me),
    }
}

impl HirschbergSinclair {
    /// The phase this process is in while it is a candidate.
    pub fn phase(&self) -> Option<u32> {
        match self.role {
            Role::Candidate { phase, .. } => Some(phase),
            _ => None,
        }
    }

    fn wake(&mut self, cx: &Context, out: &mut Out) {
        if self.role != Role::Asleep {
            return;
        }
        out.emit(Event::ElectionStarted);
        if cx.n() == 1 {
            self.elect(cx, out);
            return;
        }
        self.role = Role::Candidate { phase: 0, replies: 0 };
        self.send_probes(cx, 0, out);
    }

    fn send_probes(&self, cx: &Context, phase: u32, out: &mut Out) {
        for dir in [Dir::Right, Dir::Left] {
            out.send(toward(cx, dir), Msg::Probe { uid: self.uid, phase, hops: 1, dir });
        }
    }

    fn elect(&mut self, cx: &Context, out: &mut Out) {
        self.role = Role::Elected;
        self.leader = Some(self.uid);
        out.emit(Event::Leader { leader: self.uid, term: 0 });
        if cx.n() > 1 {
            out.send(cx.successor(), Msg::Elected(self.uid));
        }
    }

    fn recv_probe(&mut self, cx: &Context, uid: Uid, phase: u32, hops: u64, dir: Dir, out: &mut Out) {
        if uid == self.uid {
            if self.role != Role::Elected {
                self.elect(cx, out);
            }
        } else if uid > self.uid {
            if self.role != Role::Elected {
                self.role = Role::Relay;
            }
            if hops < 1u64 << phase {
                out.send(toward(cx, dir), Msg::Probe { uid, phase, hops: hops + 1, dir });
            } else {
                let back = dir.reverse();
                out.send(toward(cx, back), Msg::Reply { uid, phase, dir: back });
            }
        }
    }

    fn recv_reply(&mut self, cx: &Context, uid: Uid, phase: u32, dir: Dir, out: &mut Out) {
        if uid != self.uid {
            out.send(toward(cx, dir), Msg::Reply { uid, phase, dir });
            return;
        }
        if let Role::Candidate { phase: p, replies } = self.role
            && p == phase
        {
            if replies == 1 {
                self.role = Role::Candidate { phase: p + 1, replies: 0 };
                self.send_probes(cx, p + 1, out);
            } else {
                self.role = Role::Candidate { phase: p, replies: 1 };
            }
        }
    }
}

impl Process for HirschbergSinclair {
    type Msg = Msg;
    type Timer = Timer;

    fn on_message(&mut self, cx: &Context, _from: NodeId, msg: Msg, out: &mut Out) {
        self.wake(cx, out);
        match msg {
            Msg::Probe { uid, phase, hops, dir } => self.recv_probe(cx, uid, phase, hops, dir, out),
            Msg::Reply { uid, phase, dir } => self.recv_reply(cx, uid, phase, dir, out),
            Msg::Elected(j) => {
                if j != self.uid {
                    self.leader = Some(j);
                    out.emit(Event::Leader { leader: j, term: 0 });
                    out.send(cx.successor(), Msg::Elected(j));
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

    /// Everything is volatile: a recovered process is asleep again.
    fn on_recover(&mut self, _cx: &Context, _out: &mut Out) {
        self.role = Role::Asleep;
        self.leader = None;
    }

    fn leader(&self) -> Option<Uid> {
        self.leader
    }
}

impl Algorithm for HirschbergSinclair {
    const NAME: &'static str = "hirschberg-sinclair";
    const FAMILY: Family = Family::Election;
    const SUMMARY: &'static str =
        "bidirectional ring; candidates probe 2^k hops both ways, O(N log N) messages (1980)";
    const TOPOLOGY: TopologyKind = TopologyKind::BiRing;
    type Config = ();

    fn configure(_setup: &Setup) -> Result<(), ParamError> {
        Ok(())
    }

    fn new(me: NodeId, _config: &(), setup: &Setup) -> Self {
        HirschbergSinclair { uid: setup.uids[me as usize], role: Role::Asleep, leader: None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestSystem;
    use ringleader_core::Topology;
    use ringleader_core::harness::Harness;

    /// Position 2 (uid 3) of a bidirectional ring of five, uids 1..=5: its right neighbour is
    /// position 3, its left neighbour position 1. Already a candidate when `awake`.
    fn node(awake: bool) -> Harness<HirschbergSinclair> {
        let mut p = TestSystem::new(5).topology(Topology::BiRing { n: 5 }).node(2);
        if awake {
            p.request(Request::StartElection);
        }
        p
    }

    fn probe(uid: Uid, phase: u32, hops: u64, dir: Dir) -> Msg {
        Msg::Probe { uid, phase, hops, dir }
    }

    /// Rule 1: a candidate in phase 0 probes one hop both ways.
    #[test]
    fn rule_1_a_candidate_probes_both_ways() {
        let mut p = node(false);
        let step = p.request(Request::StartElection);
        assert_eq!(step.sent(), vec![(3, probe(3, 0, 1, Dir::Right)), (1, probe(3, 0, 1, Dir::Left))]);
        assert_eq!(step.emitted(), vec![Event::ElectionStarted]);
        assert_eq!(p.process.phase(), Some(0));
        let mut asleep = node(false);
        let woken = asleep.deliver(1, probe(1, 0, 1, Dir::Right));
        assert_eq!(woken.sent().len(), 2, "a sleeping process wakes up as a candidate: {woken:?}");
    }

    /// Rule 2: a larger probe is relayed within 2^k hops and turned back at 2^k; a smaller one
    /// is swallowed; one's own probe coming round elects.
    #[test]
    fn rule_2_probes_are_relayed_turned_back_swallowed_or_elect() {
        let mut p = node(true);
        assert_eq!(p.deliver(1, probe(5, 1, 1, Dir::Right)).sent(), vec![(3, probe(5, 1, 2, Dir::Right))]);
        assert_eq!(p.process.phase(), None, "beaten by a larger id");
        assert_eq!(
            p.deliver(3, probe(5, 0, 1, Dir::Left)).sent(),
            vec![(3, Msg::Reply { uid: 5, phase: 0, dir: Dir::Right })]
        );
        let mut q = node(true);
        assert!(q.deliver(1, probe(1, 0, 1, Dir::Right)).is_empty());
        assert_eq!(q.process.phase(), Some(0));
        let step = q.deliver(1, probe(3, 3, 5, Dir::Right));
        assert_eq!(step.emitted(), vec![Event::Leader { leader: 3, term: 0 }]);
        assert_eq!(step.sent(), vec![(3, Msg::Elected(3))]);
    }

    /// Rule 3: another's reply is relayed onward; a candidate's two own replies start its next
    /// phase.
    #[test]
    fn rule_3_replies_are_relayed_or_counted_and_two_advance_the_phase() {
        let mut p = node(true);
        assert_eq!(
            p.deliver(3, Msg::Reply { uid: 1, phase: 0, dir: Dir::Left }).sent(),
            vec![(1, Msg::Reply { uid: 1, phase: 0, dir: Dir::Left })]
        );
        assert!(p.deliver(3, Msg::Reply { uid: 3, phase: 0, dir: Dir::Left }).is_empty());
        let step = p.deliver(1, Msg::Reply { uid: 3, phase: 0, dir: Dir::Right });
        assert_eq!(step.sent(), vec![(3, probe(3, 1, 1, Dir::Right)), (1, probe(3, 1, 1, Dir::Left))]);
        assert_eq!(p.process.phase(), Some(1));
    }

    /// Rule 4: ELECTED(j) is recorded and forwarded; it stops at j.
    #[test]
    fn rule_4_elected_goes_round_once() {
        let mut p = node(true);
        let step = p.deliver(1, Msg::Elected(5));
        assert_eq!(step.emitted(), vec![Event::Leader { leader: 5, term: 0 }]);
        assert_eq!(step.sent(), vec![(3, Msg::Elected(5))]);
        assert!(p.deliver(1, Msg::Elected(3)).is_empty(), "back at the winner");
    }
}
