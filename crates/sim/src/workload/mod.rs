//! What the application asks of the nodes during a run: one [`Workload`] per family.
//!
//! - [`election`]: the initiators start an election at time 0 (`--initiators`);
//! - [`mutex`]: the mutual-exclusion request patterns (`sequential`, `saturated`, `poisson`);
//! - [`clock`]: the clock workload (`messages`), a fixed seeded schedule of local events and
//!   sends;
//! - [`deadlock`]: transactions that hold and request resources, the application's lock table;
//! - failure detectors have none: their story is the heartbeats and the fault plan.
//!
//! The engine knows only the trait: it starts every workload, tells each what the nodes report
//! and which faults strike, fires the timers a workload set for itself, and schedules what the
//! workload asks for through a [`Cx`].

pub mod clock;
pub mod deadlock;
pub mod election;
pub mod mutex;

use rand_xoshiro::Xoshiro256PlusPlus;
use ringleader_core::{Event, NodeId, Request, Time};
use ringleader_judge::checkers::NodeStatus;

/// A workload's own timer. `kind` says what it is for, in the workload's terms; `epoch` lets the
/// workload recognise a timer it made stale since it set it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tick {
    /// What the timer is for.
    pub kind: u8,
    /// The epoch it was set in.
    pub epoch: u64,
}

/// What a workload schedules for a time: a request to a node, or one of its own timers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stimulus {
    /// Deliver an application request to a node.
    Ask(NodeId, Request),
    /// Fire one of the workload's own timers for a node.
    Tick(NodeId, Tick),
}

/// What a workload sees of the run when it is called, and where it puts what it wants done.
pub struct Cx<'a> {
    /// Virtual time now.
    pub now: Time,
    /// This workload's own random stream (no other purpose draws from it).
    pub rng: &'a mut Xoshiro256PlusPlus,
    /// Every node's status, by position.
    pub status: &'a [NodeStatus],
    out: &'a mut dyn FnMut(Time, Stimulus),
}

impl<'a> Cx<'a> {
    /// A context at `now` that hands what the workload asks for to `out` (the engine schedules
    /// it at once).
    pub fn new(
        now: Time,
        rng: &'a mut Xoshiro256PlusPlus,
        status: &'a [NodeStatus],
        out: &'a mut dyn FnMut(Time, Stimulus),
    ) -> Self {
        Cx { now, rng, status, out }
    }

    /// Asks `node` for `request` at `at`.
    pub fn ask(&mut self, at: Time, node: NodeId, request: Request) {
        (self.out)(at, Stimulus::Ask(node, request));
    }

    /// Sets the workload's timer `tick` for `node` at `at`.
    pub fn tick(&mut self, at: Time, node: NodeId, tick: Tick) {
        (self.out)(at, Stimulus::Tick(node, tick));
    }
}

/// How far a workload got with what the run asked of it (the report's `workload`).
#[derive(Clone, Debug, PartialEq)]
pub struct Tally<'a> {
    /// The pattern, as `--workload` names it.
    pub kind: &'static str,
    /// Requests the run asked for (`--entries`).
    pub asked: u64,
    /// Requests issued to a live node.
    pub issued: u64,
    /// Requests that reached a crashed node and were lost.
    pub lost: u64,
    /// The nodes that make requests (positions).
    pub requesters: &'a [NodeId],
}

/// What the application does during a run. Every method but [`Workload::start`] does nothing by
/// default; a workload overrides what it reacts to.
pub trait Workload: std::fmt::Debug + Send {
    /// The run begins: the first requests and timers.
    fn start(&mut self, cx: &mut Cx);

    /// `node` reported `event` (after the checker judged it).
    fn on_event(&mut self, _node: NodeId, _event: &Event, _cx: &mut Cx) {}

    /// One of this workload's timers fired for `node`.
    fn on_tick(&mut self, _node: NodeId, _tick: Tick, _cx: &mut Cx) {}

    /// `request` reached `node` crashed and was lost.
    fn on_lost(&mut self, _node: NodeId, _request: &Request) {}

    /// `node` crashed.
    fn on_crash(&mut self, _node: NodeId) {}

    /// A step is over; `in_flight` algorithm messages are still on their way.
    fn after_step(&mut self, _in_flight: u64, _cx: &mut Cx) {}

    /// True while the workload still means to ask for something once the network is quiet (a
    /// run in this state is not over).
    fn is_waiting(&self) -> bool {
        false
    }

    /// What the report says of this workload, if anything.
    fn tally(&self) -> Option<Tally<'_>> {
        None
    }
}
