//! # Lamport's logical clock
//!
//! *Lamport, "Time, clocks, and the ordering of events in a distributed system", CACM 21(7),
//! 1978; Tanenbaum & van Steen, Distributed Systems, logical clocks.*
//!
//! ## The idea
//! What `make` needs is not the time of day but agreement on the *order* of events. Lamport's
//! happens-before relation (→) is the smallest relation such that a → b when a precedes b on
//! the same process, and send(m) → receive(m); it is transitive. A logical clock gives every
//! event a number such that a → b implies L(a) < L(b) (the *clock condition*).
//!
//! ## The rules
//! Every process keeps a counter L, initially 0.
//! 1. Before each event (local, send or receive) the process increments L.
//! 2. A message carries the sender's L (after the increment of its send event).
//! 3. On receipt of a message carrying t: L := max(L, t), then increment (rule 1).
//!
//! Ties are broken by the process id: ordering events by (L, uid) is a total order that
//! extends →, the order the `lamport` mutual-exclusion algorithm relies on.
//!
//! ```text
//!   P0  1 local   2 send ──┐                                   ┌──▶ receive: max(2, 4) + 1 = 5
//!   P1  1 local            └──▶ receive: max(1, 2) + 1 = 3   4 send
//! ```
//!
//! ## Costs
//! One integer per process and per message; no extra messages.
//!
//! ## Assumptions and known flaws
//! The converse does not hold: L(a) < L(b) says nothing about whether a → b (concurrent events
//! get arbitrary order) — vector clocks characterize → exactly. The counter is kept on stable
//! storage: a process that recovered with L = 0 would stamp new events below its own earlier
//! ones.
//!
//! ## Observation
//! Every event is reported: local events as `Stamped { lamport, vector: [] }`, sends and
//! receives as `StampedMessage { message, receive, lamport, vector: [] }` with the message's id,
//! which the message carries, so the clock checker can rebuild → and verify the clock condition.

use ringleader_core::{Context, Event, Message, NodeId, Outbox, Process, Request};
use serde::{Deserialize, Serialize};

use super::message_id;
use crate::{Algorithm, Family, ParamError, Setup};

/// Messages of the Lamport clock workload.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// An application message carrying the sender's clock.
    Message {
        /// The message's id (for the checker).
        id: u64,
        /// The sender's L at the send event.
        lamport: u64,
    },
}

impl Message for Msg {
    const KINDS: &'static [&'static str] = &["message"];
    fn kind_index(&self) -> usize {
        0
    }
}

/// Lamport clocks use no timers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
pub enum Timer {}

/// A process with a Lamport clock.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct LamportClock {
    me: NodeId,
    /// L, on stable storage.
    clock: u64,
    /// Sends so far (message ids).
    sent: u64,
}

impl LamportClock {
    /// The current value of L.
    pub fn value(&self) -> u64 {
        self.clock
    }
}

impl Process for LamportClock {
    type Msg = Msg;
    type Timer = Timer;

    fn on_message(&mut self, _cx: &Context, _from: NodeId, msg: Msg, out: &mut Outbox<Msg, Timer>) {
        let Msg::Message { id, lamport } = msg;
        self.clock = self.clock.max(lamport) + 1;
        out.emit(Event::StampedMessage {
            message: id,
            receive: true,
            lamport: self.clock,
            vector: Vec::new(),
        });
    }

    fn on_timer(&mut self, _cx: &Context, timer: Timer, _out: &mut Outbox<Msg, Timer>) {
        match timer {}
    }

    fn on_request(&mut self, _cx: &Context, req: Request, out: &mut Outbox<Msg, Timer>) {
        match req {
            Request::Local => {
                self.clock += 1;
                out.emit(Event::Stamped { lamport: self.clock, vector: Vec::new() });
            }
            Request::SendTo { to } => {
                self.clock += 1;
                let id = message_id(self.me, self.sent);
                self.sent += 1;
                out.send(to, Msg::Message { id, lamport: self.clock });
                out.emit(Event::StampedMessage {
                    message: id,
                    receive: false,
                    lamport: self.clock,
                    vector: Vec::new(),
                });
            }
            _ => {}
        }
    }

    /// L and the send count survive (stable storage); there is nothing volatile to forget.
    fn on_recover(&mut self, _cx: &Context, _out: &mut Outbox<Msg, Timer>) {}
}

impl Algorithm for LamportClock {
    const NAME: &'static str = "lamport-clock";
    const FAMILY: Family = Family::Clock;
    const SUMMARY: &'static str =
        "Lamport's logical clock: increment per event, max on receive; a → b ⇒ L(a) < L(b)";
    type Config = ();

    fn configure(_setup: &Setup) -> Result<(), ParamError> {
        Ok(())
    }

    fn new(me: NodeId, _config: &(), _setup: &Setup) -> Self {
        LamportClock { me, clock: 0, sent: 0 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testing::TestSystem;
    use ringleader_core::harness::Harness;

    fn node(me: NodeId) -> Harness<LamportClock> {
        TestSystem::new(2).node(me)
    }

    /// Rule 1: every event — local, send, receive — increments L first.
    #[test]
    fn rule_1_every_event_increments_the_clock() {
        let mut p = node(0);
        assert_eq!(p.request(Request::Local).emitted(), vec![Event::Stamped { lamport: 1, vector: vec![] }]);
        assert_eq!(p.request(Request::Local).emitted(), vec![Event::Stamped { lamport: 2, vector: vec![] }]);
        let step = p.request(Request::SendTo { to: 1 });
        let id = message_id(0, 0);
        assert_eq!(
            step.emitted(),
            vec![Event::StampedMessage { message: id, receive: false, lamport: 3, vector: vec![] }]
        );
    }

    /// Rule 2: a message carries the sender's L after its send event's increment.
    #[test]
    fn rule_2_a_message_carries_the_senders_clock() {
        let mut p = node(1);
        p.request(Request::Local);
        let step = p.request(Request::SendTo { to: 0 });
        assert_eq!(step.sent(), vec![(0, Msg::Message { id: message_id(1, 0), lamport: 2 })]);
        let next = p.request(Request::SendTo { to: 0 });
        assert_eq!(
            next.sent(),
            vec![(0, Msg::Message { id: message_id(1, 1), lamport: 3 })],
            "ids count sends"
        );
    }

    /// Rule 3: a receive sets L := max(L, t) + 1.
    #[test]
    fn rule_3_a_receive_jumps_past_the_carried_clock() {
        let mut p = node(1);
        p.request(Request::Local);
        let step = p.deliver(0, Msg::Message { id: 9, lamport: 6 });
        assert_eq!(
            step.emitted(),
            vec![Event::StampedMessage { message: 9, receive: true, lamport: 7, vector: vec![] }]
        );
        assert!(step.sent().is_empty());
        p.deliver(0, Msg::Message { id: 10, lamport: 2 });
        assert_eq!(p.process.value(), 8, "an older stamp still ticks");
    }

    /// P0 has two local events and sends at 3; P1, after one local event (1), receives at
    /// max(1, 3) + 1 = 4; a late message with an old stamp still ticks (5).
    #[test]
    fn the_receive_takes_the_max_then_ticks() {
        let (mut p0, mut p1) = (node(0), node(1));
        p0.request(Request::Local);
        p0.request(Request::Local);
        let sent = p0.request(Request::SendTo { to: 1 }).sent();
        assert_eq!(sent, vec![(1, Msg::Message { id: message_id(0, 0), lamport: 3 })]);
        p1.request(Request::Local);
        p1.deliver(0, sent[0].1.clone());
        assert_eq!(p1.process.value(), 4, "max(1, 3) + 1");
        p1.deliver(0, Msg::Message { id: 7, lamport: 1 });
        assert_eq!(p1.process.value(), 5, "an old stamp still ticks");
    }
}
