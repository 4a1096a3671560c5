//! A single-node test harness: drive one [`Process`] by hand and read what it asked for.
//!
//! Unit tests of an algorithm's rules need no network: they put one node in a known state,
//! give it one input (`start`, `deliver`, `fire`, `request`, `recover`) and check the exact
//! commands it queued — who it sent which message to, which timers it armed or disarmed, which
//! events it reported. [`Harness`] holds the process together with the membership, topology and
//! local clock its [`Context`] is built from, and remembers which timers are armed, as a driver
//! would:
//!
//! ```
//! use ringleader_core::harness::Harness;
//! # use ringleader_core::{Context, Event, Message, NodeId, Outbox, Process, Request, Topology};
//! # #[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
//! # struct Ping;
//! # impl Message for Ping {
//! #     const KINDS: &'static [&'static str] = &["ping"];
//! #     fn kind_index(&self) -> usize { 0 }
//! # }
//! # #[derive(Clone, Debug, PartialEq, Eq, Hash)]
//! # struct Echo;
//! # impl Process for Echo {
//! #     type Msg = Ping;
//! #     type Timer = ();
//! #     fn on_message(&mut self, _: &Context, from: NodeId, m: Ping, out: &mut Outbox<Ping, ()>) {
//! #         out.send(from, m);
//! #     }
//! #     fn on_timer(&mut self, _: &Context, _: (), _: &mut Outbox<Ping, ()>) {}
//! #     fn on_recover(&mut self, _: &Context, _: &mut Outbox<Ping, ()>) {}
//! # }
//! let mut node = Harness::new(Echo, 0, vec![1, 2], Topology::Complete { n: 2 });
//! assert!(node.start().is_empty());
//! assert_eq!(node.deliver(1, Ping).sent(), vec![(1, Ping)]);
//! ```
//!
//! A crash ([`Harness::crash`]) disarms every timer, as the simulator does; [`Harness::fire`] refuses a
//! timer that is not armed, so a test can only fire what the algorithm asked for.

use std::collections::BTreeMap;

use crate::{Command, Context, Event, NodeId, Outbox, Process, Request, Time, Topology, Uid};

/// One process under test, with the world its handlers see.
#[derive(Clone, Debug)]
pub struct Harness<P: Process> {
    /// The process state; tests read it (and may set it up) directly.
    pub process: P,
    /// This node's position.
    pub me: NodeId,
    /// The uid of every position.
    pub uids: Vec<Uid>,
    /// Who can talk to whom.
    pub topology: Topology,
    /// The local clock reading handed to the next handler.
    pub now: Time,
    /// The randomness handed to the next handler.
    pub random: u64,
    armed: BTreeMap<P::Timer, Time>,
}

/// The commands one handler call queued, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Effects<M, T> {
    /// Every command, in the order the handler queued them.
    pub commands: Vec<Command<M, T>>,
}

impl<M: Clone, T: Clone> Effects<M, T> {
    /// The messages sent, with their destinations.
    pub fn sent(&self) -> Vec<(NodeId, M)> {
        self.commands
            .iter()
            .filter_map(|a| match a {
                Command::Send { to, msg } => Some((*to, msg.clone())),
                _ => None,
            })
            .collect()
    }

    /// The timers armed, with their durations.
    pub fn set(&self) -> Vec<(T, Time)> {
        self.commands
            .iter()
            .filter_map(|a| match a {
                Command::SetTimer { timer, after } => Some((timer.clone(), *after)),
                _ => None,
            })
            .collect()
    }

    /// The timers disarmed.
    pub fn cancelled(&self) -> Vec<T> {
        self.commands
            .iter()
            .filter_map(|a| match a {
                Command::CancelTimer(t) => Some(t.clone()),
                _ => None,
            })
            .collect()
    }

    /// The events reported.
    pub fn emitted(&self) -> Vec<Event> {
        self.commands
            .iter()
            .filter_map(|a| match a {
                Command::Emit(e) => Some(e.clone()),
                _ => None,
            })
            .collect()
    }

    /// The clock corrections asked for.
    pub fn adjustments(&self) -> Vec<i64> {
        self.commands
            .iter()
            .filter_map(|a| match a {
                Command::AdjustClock(d) => Some(*d),
                _ => None,
            })
            .collect()
    }

    /// True when the handler queued nothing.
    pub fn is_empty(&self) -> bool {
        self.commands.is_empty()
    }
}

impl<P: Process> Harness<P> {
    /// Harness `me` running `process`, in a system with these uids and this topology, at local
    /// time 0 with randomness 0.
    pub fn new(process: P, me: NodeId, uids: Vec<Uid>, topology: Topology) -> Self {
        assert_eq!(uids.len() as u32, topology.len(), "one uid per position");
        assert!(me < topology.len(), "position {me} is outside the system");
        Harness { process, me, uids, topology, now: 0, random: 0, armed: BTreeMap::new() }
    }

    /// Sets the local clock reading the next handlers see.
    pub fn at(&mut self, now: Time) -> &mut Self {
        self.now = now;
        self
    }

    /// The timers armed now, with the duration each was last armed for.
    pub fn armed(&self) -> &BTreeMap<P::Timer, Time> {
        &self.armed
    }

    /// True when `timer` is armed.
    pub fn is_armed(&self, timer: &P::Timer) -> bool {
        self.armed.contains_key(timer)
    }

    fn call(
        &mut self,
        handler: impl FnOnce(&mut P, &Context, &mut Outbox<P::Msg, P::Timer>),
    ) -> Effects<P::Msg, P::Timer> {
        let cx = Context {
            me: self.me,
            uids: &self.uids,
            topology: &self.topology,
            now: self.now,
            random: self.random,
        };
        let mut out = Outbox::new();
        handler(&mut self.process, &cx, &mut out);
        let commands: Vec<_> = out.drain().collect();
        for a in &commands {
            match a {
                Command::SetTimer { timer, after } => {
                    self.armed.insert(timer.clone(), *after);
                }
                Command::CancelTimer(timer) => {
                    self.armed.remove(timer);
                }
                _ => {}
            }
        }
        Effects { commands }
    }

    /// The node starts ([`Process::on_start`]).
    pub fn start(&mut self) -> Effects<P::Msg, P::Timer> {
        self.call(|p, cx, out| p.on_start(cx, out))
    }

    /// A message from `from` arrives ([`Process::on_message`]).
    pub fn deliver(&mut self, from: NodeId, msg: P::Msg) -> Effects<P::Msg, P::Timer> {
        self.call(|p, cx, out| p.on_message(cx, from, msg, out))
    }

    /// The armed `timer` fires ([`Process::on_timer`]); it is disarmed first, as a driver does.
    ///
    /// # Panics
    /// If `timer` is not armed: a test fires only what the process asked for.
    pub fn fire(&mut self, timer: P::Timer) -> Effects<P::Msg, P::Timer> {
        assert!(self.armed.remove(&timer).is_some(), "timer {timer:?} is not armed; armed: {:?}", self.armed);
        self.call(|p, cx, out| p.on_timer(cx, timer, out))
    }

    /// The application asks `req` ([`Process::on_request`]).
    pub fn request(&mut self, req: Request) -> Effects<P::Msg, P::Timer> {
        self.call(|p, cx, out| p.on_request(cx, req, out))
    }

    /// The node crashes: its timers are disarmed (its state stays, as the driver keeps it for
    /// [`Process::on_recover`]).
    pub fn crash(&mut self) {
        self.armed.clear();
    }

    /// The node comes back after a crash ([`Process::on_recover`]).
    pub fn recover(&mut self) -> Effects<P::Msg, P::Timer> {
        self.call(|p, cx, out| p.on_recover(cx, out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Message;

    #[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
    struct Ping(u8);

    impl Message for Ping {
        const KINDS: &'static [&'static str] = &["ping"];
        fn kind_index(&self) -> usize {
            0
        }
    }

    /// Arms timers 1 and 2 at start; a PING(k) cancels timer k and answers its sender; timer k
    /// sends PING(k) to position 0 and asks for a clock correction equal to the local time; a
    /// recovery reports `Exited`.
    #[derive(Clone, Debug, PartialEq, Eq, Hash)]
    struct Toy;

    impl Process for Toy {
        type Msg = Ping;
        type Timer = u8;

        fn on_start(&mut self, _cx: &Context, out: &mut Outbox<Ping, u8>) {
            out.set_timer(1, 10);
            out.set_timer(2, 20);
        }

        fn on_message(&mut self, _cx: &Context, from: NodeId, msg: Ping, out: &mut Outbox<Ping, u8>) {
            out.cancel_timer(msg.0);
            out.send(from, msg);
        }

        fn on_timer(&mut self, cx: &Context, timer: u8, out: &mut Outbox<Ping, u8>) {
            out.send(0, Ping(timer));
            out.adjust_clock(cx.now as i64);
        }

        fn on_recover(&mut self, _cx: &Context, out: &mut Outbox<Ping, u8>) {
            out.emit(Event::Exited);
        }
    }

    fn node() -> Harness<Toy> {
        Harness::new(Toy, 1, vec![5, 6], Topology::Complete { n: 2 })
    }

    #[test]
    fn a_step_sorts_its_actions_and_the_node_tracks_armed_timers() {
        let mut n = node();
        let step = n.start();
        assert_eq!(step.set(), vec![(1, 10), (2, 20)]);
        assert!(step.sent().is_empty() && step.emitted().is_empty());
        assert_eq!(n.armed().len(), 2);
        let step = n.deliver(0, Ping(2));
        assert_eq!(step.cancelled(), vec![2]);
        assert_eq!(step.sent(), vec![(0, Ping(2))]);
        assert!(!n.is_armed(&2) && n.is_armed(&1));
        let step = n.at(7).fire(1);
        assert_eq!(step.sent(), vec![(0, Ping(1))]);
        assert_eq!(step.adjustments(), vec![7], "the handler sees the clock set with `at`");
        assert!(n.armed().is_empty(), "a fired timer is disarmed");
    }

    #[test]
    #[should_panic(expected = "is not armed")]
    fn firing_a_timer_that_is_not_armed_is_refused() {
        node().fire(1);
    }

    #[test]
    fn a_crash_disarms_every_timer_and_recover_calls_on_recover() {
        let mut n = node();
        n.start();
        n.crash();
        assert!(n.armed().is_empty());
        assert_eq!(n.recover().emitted(), vec![Event::Exited]);
        assert!(n.request(Request::Acquire).is_empty(), "the default on_request ignores everything");
    }
}
