//! The shared vocabulary between algorithms and the world around them.
//!
//! Every algorithm has its own message and timer types, but what an application asks of a node
//! ([`Request`]) and what a node reports ([`Event`]) are shared: the simulator's workloads, the
//! property checkers, the trace, `ringleader verify` and the HTTP API all speak them without
//! knowing which algorithm runs.

use serde::{Deserialize, Serialize};

use crate::{NodeId, Time, Uid};

/// What an application (or a workload, or an operator) asks a node to do.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "request", rename_all = "snake_case")]
pub enum Request {
    /// Start an election now (an initiator, or a node told that the coordinator is gone).
    StartElection,
    /// Ask for the critical section; the node emits [`Event::Entered`] when it holds it.
    Acquire,
    /// Leave the critical section (only meaningful after [`Event::Entered`]).
    Release,
    /// A local event with no communication (clock workloads).
    Local,
    /// Send an application message to `to` (clock workloads).
    SendTo {
        /// Destination position.
        to: NodeId,
    },
    /// Start a clock-synchronisation round.
    Synchronize,
    /// Block waiting for the resources held by `holders` (deadlock workloads, AND model).
    WaitFor {
        /// Positions this node now waits for.
        holders: Vec<NodeId>,
    },
    /// Stop waiting for `holder` (the resource was granted, or the request withdrawn).
    StopWaiting {
        /// Position no longer waited for.
        holder: NodeId,
    },
}

/// What a node reports about itself: the observable behaviour checkers judge.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// This node started (or joined) an election.
    ElectionStarted,
    /// This node now believes `leader` is the coordinator for `term` (0 where the algorithm
    /// has no terms). `leader` equal to the node's own uid means "I am the coordinator".
    Leader {
        /// The coordinator's uid.
        leader: Uid,
        /// The epoch or term (0 for algorithms without terms).
        term: u64,
    },
    /// This node no longer knows a coordinator (it suspects the old one, or stepped down).
    LeaderLost,
    /// This node was chosen as a super-peer (large-scale elections elect a set).
    SuperPeer,
    /// This node stopped being a super-peer.
    SuperPeerLost,
    /// This node entered the critical section; `fencing` increases with every grant.
    Entered {
        /// Fencing token: strictly increasing in grant order. An algorithm whose grants carry
        /// an epoch sends a [`crate::FencingToken`], packed.
        fencing: u64,
    },
    /// This node left the critical section.
    Exited,
    /// A coordinator or arbiter queued a request from `node`; under a deadlock-prevention
    /// scheme, a holder let `node`'s transaction wait for it.
    Queued {
        /// Requester position.
        node: NodeId,
        /// Prevention schemes: the identity (start timestamp) of the requester's transaction
        /// that may wait, as its REQUEST carried it. A checker takes the wait as an edge only
        /// while that transaction is the requester's current one: a REQUEST delayed past the
        /// end of its transaction is stale. `None` elsewhere.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        transaction: Option<Time>,
    },
    /// A coordinator or arbiter granted permission to `node`.
    Granted {
        /// Requester position.
        node: NodeId,
    },
    /// The token was (re)generated at this node.
    TokenRegenerated,
    /// This node suspects `node` of having crashed.
    Suspect {
        /// Suspected position.
        node: NodeId,
    },
    /// This node stopped suspecting `node`.
    Trust {
        /// Trusted position.
        node: NodeId,
    },
    /// This node detected a deadlock: a probe it initiated came back.
    DeadlockDetected {
        /// Positions on the detected cycle, as far as the probe knows them.
        cycle: Vec<NodeId>,
    },
    /// This node aborted (a deadlock victim, or a transaction that died or was wounded).
    Aborted,
    /// This node gave up its wait after a timeout (a transaction abandoning its wait, not a
    /// victim chosen by a detector): it withdraws its waits as an abort does.
    GaveUp,
    /// A transaction restarted, keeping its original timestamp.
    Restarted,
    /// This node's clock was corrected by `delta` nanoseconds (applied by slewing).
    ClockAdjusted {
        /// The correction, in nanoseconds (negative slows the clock down).
        delta: i64,
    },
    /// A logical timestamp attached to a local, send or receive event (clock algorithms).
    Stamped {
        /// The Lamport value, or 0.
        lamport: u64,
        /// The vector value (empty for Lamport clocks).
        vector: Vec<u64>,
    },
    /// A file-system-like observation for the `make` story: `what` was done at local `time`.
    Touched {
        /// What was done.
        what: Touch,
        /// The local timestamp recorded.
        time: Time,
    },
    /// This node asked for the critical section with logical timestamp `ts`; algorithms that
    /// promise to serve requests in (timestamp, id) order (Lamport, Ricart-Agrawala) emit it so
    /// that the checker can judge that order.
    Requested {
        /// The request's Lamport timestamp (ties are broken by the node's uid).
        ts: u64,
    },
    /// A logical timestamp attached to a send or a receive (clock algorithms; local events use
    /// [`Event::Stamped`]). `message` names the message — the sender makes it unique per run
    /// (its position · 2³² + its count of sends) and carries it in the message — so that a
    /// checker can pair every delivery with its send and rebuild happens-before.
    StampedMessage {
        /// The message's id, equal on the send and on each of its deliveries.
        message: u64,
        /// True for a receive, false for a send.
        receive: bool,
        /// The Lamport value, or 0.
        lamport: u64,
        /// The vector value (empty for Lamport clocks).
        vector: Vec<u64>,
    },
    /// Large-scale elections elect a set: this node is now served by the super-peer at position
    /// `super_peer` (its own position when it is one), `distance` away in the algorithm's metric
    /// (in thousandths of the algorithm's unit), learned in the algorithm's round `round`;
    /// `target` is the number of super-peers the algorithm aims for.
    ServedBy {
        /// The serving super-peer's position.
        super_peer: NodeId,
        /// Distance to it, in thousandths of the algorithm's unit.
        distance: u64,
        /// The round in which this node learned it.
        round: u64,
        /// How many super-peers the algorithm aims for.
        target: u32,
    },
}

/// What the `make` story did to a file ([`Event::Touched`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Touch {
    /// The source was edited; `time` is its new modification time.
    Edit,
    /// The object was rebuilt; `time` is its modification time.
    Compile,
    /// The rebuild was skipped: the object looked newer than the source.
    Skip,
}

impl Event {
    /// A short snake_case name for the event kind.
    pub fn name(&self) -> &'static str {
        match self {
            Event::ElectionStarted => "election_started",
            Event::Leader { .. } => "leader",
            Event::LeaderLost => "leader_lost",
            Event::SuperPeer => "super_peer",
            Event::SuperPeerLost => "super_peer_lost",
            Event::Entered { .. } => "entered",
            Event::Exited => "exited",
            Event::Queued { .. } => "queued",
            Event::Granted { .. } => "granted",
            Event::TokenRegenerated => "token_regenerated",
            Event::Suspect { .. } => "suspect",
            Event::Trust { .. } => "trust",
            Event::DeadlockDetected { .. } => "deadlock_detected",
            Event::Aborted => "aborted",
            Event::GaveUp => "gave_up",
            Event::Restarted => "restarted",
            Event::ClockAdjusted { .. } => "clock_adjusted",
            Event::Stamped { .. } => "stamped",
            Event::Touched { .. } => "touched",
            Event::Requested { .. } => "requested",
            Event::StampedMessage { .. } => "stamped_message",
            Event::ServedBy { .. } => "served_by",
        }
    }
}
