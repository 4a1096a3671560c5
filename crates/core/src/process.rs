//! The contract between an algorithm and a driver.

use std::fmt::Debug;
use std::hash::Hash;

use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::{Event, NodeId, Request, Time, Topology, Uid};

/// A message type of one algorithm. Variants are named as in the literature (`Election`,
/// `Answer`, `Coordinator`, `Request`, `Reply`, `Token`, `Probe` …); metrics count sends by kind.
pub trait Message: Clone + Eq + Hash + Debug + Serialize + DeserializeOwned + Send + Sync + 'static {
    /// The kinds of this message type in lower snake_case, indexed by [`Message::kind_index`].
    const KINDS: &'static [&'static str];

    /// Index of this message's kind in [`Message::KINDS`].
    fn kind_index(&self) -> usize;

    /// This message's kind in lower snake_case (`election`, `answer`, …).
    fn kind(&self) -> &'static str {
        Self::KINDS[self.kind_index()]
    }

    /// True for messages that belong to failure detection (heartbeats, pings) rather than to
    /// the algorithm proper, so that textbook counts stay checkable. Default: none.
    fn is_detection(&self) -> bool {
        false
    }

    /// The uid this message says its sender has, if it says one (bully's COORDINATOR(j): "I, j,
    /// am the coordinator"). A real node refuses a message whose claim is not the id its
    /// connection proved. Default: none.
    fn sender_uid(&self) -> Option<Uid> {
        None
    }

    /// Every uid this message names, its sender's claim included. A real node refuses a message
    /// that names an id outside the membership. Default: the sender's claim, if any.
    fn uids_named(&self) -> Vec<Uid> {
        self.sender_uid().into_iter().collect()
    }
}

/// What a handler may read: who it is, what it knows of the membership, and its *local* clock.
///
/// A context never gives access to the global state: a process sees only what a real node
/// would see.
#[derive(Clone, Copy, Debug)]
pub struct Context<'a> {
    /// This node's position.
    pub me: NodeId,
    /// The uid of every position (the membership). Algorithms on rings must only use their own
    /// entry, as a real ring node knows only itself and its successor.
    pub uids: &'a [Uid],
    /// Who can talk to whom.
    pub topology: &'a Topology,
    /// The local clock reading: virtual time distorted by this node's offset and drift in the
    /// simulator, the OS clock in a real node.
    pub now: Time,
    /// Fresh randomness for this step from the driver (a seeded stream in the simulator).
    pub random: u64,
}

impl Context<'_> {
    /// This node's uid.
    pub fn uid(&self) -> Uid {
        self.uids[self.me as usize]
    }

    /// Number of nodes in the system.
    pub fn n(&self) -> u32 {
        self.uids.len() as u32
    }

    /// The uid held by position `node`.
    pub fn uid_of(&self, node: NodeId) -> Uid {
        self.uids[node as usize]
    }

    /// The ring successor of this node.
    pub fn successor(&self) -> NodeId {
        self.topology.successor(self.me)
    }

    /// A small deterministic generator seeded from this step's randomness.
    pub fn rng(&self) -> Xoshiro256PlusPlus {
        Xoshiro256PlusPlus::seed_from_u64(self.random)
    }
}

/// One thing a handler asks the driver to do.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Command<M, T> {
    /// Send `msg` to position `to`.
    Send {
        /// Destination position.
        to: NodeId,
        /// The message.
        msg: M,
    },
    /// (Re)arm `timer` to fire after `after` of local time; re-arming replaces the old one.
    SetTimer {
        /// Which timer.
        timer: T,
        /// Local-time duration.
        after: Time,
    },
    /// Disarm `timer` (no effect if it is not armed).
    CancelTimer(T),
    /// Report an observable event.
    Emit(Event),
    /// Correct the local clock by `delta` nanoseconds. Drivers apply it by slewing, never by
    /// stepping the clock backwards; as with `adjtime`, a new correction replaces the part of
    /// the previous one not yet absorbed.
    AdjustClock(i64),
}

/// Where handlers put their commands. The driver drains it after every handler call, in order.
#[derive(Clone, Debug)]
pub struct Outbox<M, T> {
    commands: Vec<Command<M, T>>,
}

impl<M, T> Default for Outbox<M, T> {
    fn default() -> Self {
        Outbox { commands: Vec::new() }
    }
}

impl<M, T> Outbox<M, T> {
    /// An empty outbox.
    pub fn new() -> Self {
        Self::default()
    }

    /// Send `msg` to `to`.
    pub fn send(&mut self, to: NodeId, msg: M) {
        self.commands.push(Command::Send { to, msg });
    }

    /// Arm `timer` to fire after `after` nanoseconds of local time.
    pub fn set_timer(&mut self, timer: T, after: Time) {
        self.commands.push(Command::SetTimer { timer, after });
    }

    /// Disarm `timer`.
    pub fn cancel_timer(&mut self, timer: T) {
        self.commands.push(Command::CancelTimer(timer));
    }

    /// Report `event`.
    pub fn emit(&mut self, event: Event) {
        self.commands.push(Command::Emit(event));
    }

    /// Ask the driver to correct the local clock by `delta` nanoseconds (by slewing).
    pub fn adjust_clock(&mut self, delta: i64) {
        self.commands.push(Command::AdjustClock(delta));
    }

    /// The commands queued so far.
    pub fn commands(&self) -> &[Command<M, T>] {
        &self.commands
    }

    /// Takes the queued commands out, keeping the buffer's capacity.
    pub fn drain(&mut self) -> std::vec::Drain<'_, Command<M, T>> {
        self.commands.drain(..)
    }

    /// True when nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.commands.is_empty()
    }
}

impl<M: Clone, T> Outbox<M, T> {
    /// Send `msg` to each of `targets`.
    pub fn send_all(&mut self, targets: impl IntoIterator<Item = NodeId>, msg: &M) {
        for to in targets {
            self.send(to, msg.clone());
        }
    }
}

/// A distributed algorithm's node, written as a deterministic sans-IO state machine.
///
/// The value is the node's state. The simulator and real nodes ask only `Debug + Send`; a process
/// whose state is also plain data ([`PlainState`]: `Clone + Eq + Hash + Sync`) can be stored and
/// compared by the model checker. A process that wraps a library whose state is not plain data
/// (the lock service's Raft engine) runs in the simulator and on real nodes but not in the
/// model checker. Handlers must not read clocks, spawn threads, do I/O, use a global
/// RNG or iterate a `HashMap`: everything they need is in the [`Context`].
///
/// Crash semantics: a crashed node receives nothing. When it recovers the driver calls
/// [`Process::on_recover`] on the state it had when it crashed; the implementation must first
/// forget everything that is volatile (what a real process would lose with its memory) and keep
/// only what the algorithm puts on stable storage, then act as the algorithm prescribes.
pub trait Process: Debug + Send + 'static {
    /// The algorithm's messages.
    type Msg: Message;
    /// The algorithm's timers: a closed enum named after each timer's purpose.
    type Timer: Clone + Eq + Ord + Hash + Debug + Send + Sync + 'static;

    /// The node starts. Default: nothing (the node waits for a message or a request).
    fn on_start(&mut self, _cx: &Context, _out: &mut Outbox<Self::Msg, Self::Timer>) {}

    /// A message from position `from` arrives.
    fn on_message(
        &mut self,
        cx: &Context,
        from: NodeId,
        msg: Self::Msg,
        out: &mut Outbox<Self::Msg, Self::Timer>,
    );

    /// An armed timer fires.
    fn on_timer(&mut self, cx: &Context, timer: Self::Timer, out: &mut Outbox<Self::Msg, Self::Timer>);

    /// The application asks something. Requests an algorithm does not serve are ignored.
    /// Default: every request is ignored.
    fn on_request(&mut self, _cx: &Context, _req: Request, _out: &mut Outbox<Self::Msg, Self::Timer>) {}

    /// The node comes back after a crash: forget volatile state, keep stable state, act.
    ///
    /// Deliberately without a default: what survives a crash (stable storage) and what is lost
    /// (memory) is a decision every algorithm must make explicitly. A default would silently
    /// keep everything, and a process that "remembers" through a crash is exactly the hidden
    /// assumption the simulator and the model checker exist to expose.
    fn on_recover(&mut self, cx: &Context, out: &mut Outbox<Self::Msg, Self::Timer>);

    /// The leader this node currently believes in, if the algorithm elects one (read by the
    /// HTTP API and the model checker; the simulator's checkers use [`Event`]s).
    fn leader(&self) -> Option<Uid> {
        None
    }

    /// True while this node is in the critical section (read by the model checker).
    fn in_critical_section(&self) -> bool {
        false
    }
}

/// A process whose whole state is plain data: it can be cloned, compared and hashed, and shared
/// between threads. The model checker stores states of this kind; every textbook algorithm is
/// one. Implemented for every process that has these traits.
pub trait PlainState: Process + Clone + Eq + Hash + Sync {}

impl<P: Process + Clone + Eq + Hash + Sync> PlainState for P {}
