//! # Vector clocks
//!
//! *Fidge, "Timestamps in message-passing systems that preserve the partial ordering" (11th
//! Australian Computer Science Conference, 1988); Mattern, "Virtual time and global states of
//! distributed systems" (Parallel and Distributed Algorithms, 1989); Tanenbaum & van Steen,
//! Distributed Systems, vector clocks.*
//!
//! ## The idea
//! A Lamport clock orders causally related events but also orders concurrent ones arbitrarily,
//! so L(a) < L(b) cannot tell "a → b" from "a ∥ b". A vector clock keeps one counter per
//! process: V(e)\[j\] is the number of events of process j that e knows about (its causal past).
//! Then e → f if and only if V(e) < V(f) (componentwise ≤ and different): the *strong* clock
//! condition, an exact characterization of happens-before.
//!
//! ## The rules
//! Process i keeps V, initially all zeros.
//! 1. Before each event (local, send or receive): V\[i\] += 1.
//! 2. A message carries V (after the increment of its send event).
//! 3. On receipt of W: V := max(V, W) componentwise, then rule 1.
//!
//! ```text
//!   P0 [1,0,0] ──send──▶ P1 max([0,1,0],[1,0,0]) then ++ = [1,2,0]
//!   P2 [0,0,1]           ([0,0,1] ∥ [1,2,0]: neither is below the other)
//! ```
//!
//! ## Costs
//! N integers per process and per message (O(N) space and bandwidth), no extra messages.
//!
//! ## Assumptions and known flaws
//! The membership must be fixed and known (N counters). The vector is kept on stable storage
//! for the same reason as Lamport's counter.
//!
//! ## Observation
//! Local events are reported as `Stamped { lamport: 0, vector }`, sends and receives as
//! `StampedMessage { message, receive, lamport: 0, vector }`; the clock checker verifies
//! e → f ⇔ V(e) < V(f).

use ringleader_core::{Context, Event, Message, NodeId, Outbox, Process, Request};
use serde::{Deserialize, Serialize};

use super::message_id;
use crate::{Algorithm, Family, ParamError, Setup};

/// Messages of the vector clock workload.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// An application message carrying the sender's vector.
    Message {
        /// The message's id (for the checker).
        id: u64,
        /// The sender's V at the send event.
        vector: Vec<u64>,
    },
}

impl Message for Msg {
    const KINDS: &'static [&'static str] = &["message"];
    fn kind_index(&self) -> usize {
        0
    }
}

/// Vector clocks use no timers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
pub enum Timer {}

/// A process with a vector clock.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct VectorClock {
    me: NodeId,
    /// V, on stable storage.
    clock: Vec<u64>,
    /// Sends so far (message ids).
    sent: u64,
}

impl VectorClock {
    /// The current vector.
    pub fn value(&self) -> &[u64] {
        &self.clock
    }

    fn tick(&mut self) {
        self.clock[self.me as usize] += 1;
    }
}

impl Process for VectorClock {
    type Msg = Msg;
    type Timer = Timer;

    fn on_message(&mut self, _cx: &Context, _from: NodeId, msg: Msg, out: &mut Outbox<Msg, Timer>) {
        let Msg::Message { id, vector } = msg;
        for (mine, theirs) in self.clock.iter_mut().zip(&vector) {
            *mine = (*mine).max(*theirs);
        }
        self.tick();
        out.emit(Event::StampedMessage {
            message: id,
            receive: true,
            lamport: 0,
            vector: self.clock.clone(),
        });
    }

    fn on_timer(&mut self, _cx: &Context, timer: Timer, _out: &mut Outbox<Msg, Timer>) {
        match timer {}
    }

    fn on_request(&mut self, _cx: &Context, req: Request, out: &mut Outbox<Msg, Timer>) {
        match req {
            Request::Local => {
                self.tick();
                out.emit(Event::Stamped { lamport: 0, vector: self.clock.clone() });
            }
            Request::SendTo { to } => {
                self.tick();
                let id = message_id(self.me, self.sent);
                self.sent += 1;
                out.send(to, Msg::Message { id, vector: self.clock.clone() });
                out.emit(Event::StampedMessage {
                    message: id,
                    receive: false,
                    lamport: 0,
                    vector: self.clock.clone(),
                });
            }
            _ => {}
        }
    }

    /// V and the send count survive (stable storage); there is nothing volatile to forget.
    fn on_recover(&mut self, _cx: &Context, _out: &mut Outbox<Msg, Timer>) {}
}

impl Algorithm for VectorClock {
    const NAME: &'static str = "vector-clock";
    const FAMILY: Family = Family::Clock;
    const SUMMARY: &'static str =
        "vector clocks: one counter per process, componentwise max on receive; a → b ⇔ V(a) < V(b)";
    /// A vector per node and per message: ≈ 16 bytes per pair of nodes.
    const FOOTPRINT: crate::Footprint = crate::Footprint::quadratic(16);
    type Config = ();

    fn configure(_setup: &Setup) -> Result<(), ParamError> {
        Ok(())
    }

    fn new(me: NodeId, _config: &(), setup: &Setup) -> Self {
        VectorClock { me, clock: vec![0; setup.uids.len()], sent: 0 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testing::TestSystem;
    use ringleader_core::harness::Harness;

    fn node(me: NodeId) -> Harness<VectorClock> {
        TestSystem::new(3).node(me)
    }

    /// Rule 1: every event increments the process's own entry.
    #[test]
    fn rule_1_every_event_increments_its_own_entry() {
        let mut p = node(1);
        assert_eq!(
            p.request(Request::Local).emitted(),
            vec![Event::Stamped { lamport: 0, vector: vec![0, 1, 0] }]
        );
        let step = p.request(Request::SendTo { to: 2 });
        let id = message_id(1, 0);
        assert_eq!(
            step.emitted(),
            vec![Event::StampedMessage { message: id, receive: false, lamport: 0, vector: vec![0, 2, 0] }]
        );
    }

    /// Rule 2: a message carries the sender's vector after its send event.
    #[test]
    fn rule_2_a_message_carries_the_senders_vector() {
        let mut p = node(2);
        let step = p.request(Request::SendTo { to: 0 });
        assert_eq!(step.sent(), vec![(0, Msg::Message { id: message_id(2, 0), vector: vec![0, 0, 1] })]);
    }

    /// Rule 3: a receive takes the componentwise maximum, then increments its own entry.
    #[test]
    fn rule_3_a_receive_takes_the_componentwise_max_then_ticks() {
        let mut p = node(1);
        p.request(Request::Local);
        p.request(Request::Local);
        let step = p.deliver(0, Msg::Message { id: 4, vector: vec![3, 1, 5] });
        assert_eq!(
            step.emitted(),
            vec![Event::StampedMessage { message: 4, receive: true, lamport: 0, vector: vec![3, 3, 5] }]
        );
        assert!(step.sent().is_empty());
    }

    /// The essay's picture: P0 sends to P1 after P1's local event; P2 is concurrent to both.
    #[test]
    fn the_receive_takes_the_componentwise_max_then_ticks() {
        let mut p: Vec<Harness<VectorClock>> = (0..3).map(node).collect();
        let sent = p[0].request(Request::SendTo { to: 1 }).sent();
        p[1].request(Request::Local);
        let receive = p[1].deliver(0, sent[0].1.clone());
        p[2].request(Request::Local);
        assert_eq!(p[0].process.value(), [1, 0, 0]);
        assert_eq!(p[1].process.value(), [1, 2, 0]);
        assert_eq!(p[2].process.value(), [0, 0, 1]);
        assert_eq!(
            receive.emitted(),
            vec![Event::StampedMessage {
                message: message_id(0, 0),
                receive: true,
                lamport: 0,
                vector: vec![1, 2, 0]
            }]
        );
    }
}
