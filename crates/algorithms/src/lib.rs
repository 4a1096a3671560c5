//! # ringleader-algorithms
//!
//! Every algorithm, one file each, each opening with an essay: the papers and textbooks it
//! comes from, the idea, the numbered rules (each with a unit test named after it), the costs,
//! the assumptions and the known flaws.
//!
//! - [`election`]: leader election (Chang-Roberts, …);
//! - [`mutex`]: distributed mutual exclusion (centralized coordinator, …);
//! - [`clocks`]: logical clocks (Lamport, vector) and clock synchronization (Cristian,
//!   Berkeley, NTP), and the textbook's `make` story.
//! - [`deadlock`]: deadlock detection (Chandy-Misra-Haas) and prevention (wait-die, wound-wait);
//! - [`detectors`]: failure detectors (heartbeat timeout, φ-accrual);
//!
//! Each algorithm implements [`Algorithm`] on top of the [`ringleader_core::Process`] contract.
//! The crate `ringleader-registry` lists them all by the name `--algo` takes, beside the lock
//! service (`ringleader-lock-service`), which is not here so that no textbook algorithm links
//! raft-rs or protobuf.

#![warn(missing_docs)]
pub mod clocks;
pub mod configure;
pub mod deadlock;
pub mod detectors;
pub mod election;
pub mod mutex;

pub use ringleader_core::Message;
pub mod params;
pub mod symmetry;
#[cfg(test)]
mod testing;
pub mod topology;

pub use configure::{ConfigError, configure};
pub use params::{ParamError, Params};
pub use topology::TopologyKind;

use ringleader_core::{NodeId, Process, Time, Topology, Uid};

/// The family an algorithm belongs to; it decides which checkers, workloads and outcome fields
/// apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Family {
    /// Leader election.
    Election,
    /// Distributed mutual exclusion.
    Mutex,
    /// Logical and physical clocks.
    Clock,
    /// Distributed deadlock detection and prevention.
    Deadlock,
    /// Failure detectors.
    Detector,
}

impl Family {
    /// Lower-case name (`election`, `mutex`, `clock`, `deadlock`, `detector`).
    pub fn name(self) -> &'static str {
        match self {
            Family::Election => "election",
            Family::Mutex => "mutex",
            Family::Clock => "clock",
            Family::Deadlock => "deadlock",
            Family::Detector => "detector",
        }
    }
}

/// Which id a correct election must elect (the validity property).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LeaderRule {
    /// The highest live uid.
    Max,
    /// The lowest live uid.
    Min,
    /// Any live node.
    Any,
    /// Not one leader but a set of super-peers (`Event::SuperPeer`, `Event::ServedBy`), judged by
    /// the super-peer checker instead of agreement and validity.
    Set,
}

/// Everything an algorithm may know when it is configured: the membership, the topology, its
/// parameters, and the bound on one-way delay the deployment promises (the `Ttrans` of
/// synchronous-system timeouts).
#[derive(Clone, Copy, Debug)]
pub struct Setup<'a> {
    /// Uid of every position.
    pub uids: &'a [Uid],
    /// The communication graph.
    pub topology: &'a Topology,
    /// Algorithm parameters (`--param key=value`, or the scenario's `[params]`).
    pub params: &'a Params,
    /// Upper bound on one-way message delay the algorithm may assume (Ttrans).
    pub max_delay: Time,
    /// The run's seed (`--seed` in the simulator; 1, the default seed, where a deployment has
    /// none). Configuration that draws a random layout (identifiers, positions) keys it with
    /// this, so that another seed gives another layout.
    pub seed: u64,
}

/// An algorithm as the drivers see it: a [`Process`] with a name, a family, a configuration
/// step that validates its parameters, and a constructor per node.
///
/// The whole state serializes (`serde`): a real node keeps it on stable storage so that after
/// a crash it restarts from the state it crashed in and recovers through
/// [`Process::on_recover`], as the simulator's crash and recovery do.
pub trait Algorithm: Process + serde::Serialize {
    /// The name `--algo` takes (kebab-case).
    const NAME: &'static str;
    /// The family.
    const FAMILY: Family;
    /// One-line summary for `ringleader list`.
    const SUMMARY: &'static str;
    /// The topology the algorithm is written for.
    const TOPOLOGY: TopologyKind = TopologyKind::Complete;
    /// For elections: which uid validity demands.
    const LEADER_RULE: LeaderRule = LeaderRule::Max;
    /// For deadlock algorithms: a prevention scheme (judged by `no_deadlock` and
    /// `no_starvation`, even when no process ever waits) rather than a detector.
    const PREVENTION: bool = false;
    /// The algorithm completes nothing unless a majority of its nodes is up (a service
    /// replicated by consensus): with more than half of them crashed for good, a request still
    /// pending is never served. The simulator then says that no progress is possible rather
    /// than advise a longer run.
    const NEEDS_MAJORITY: bool = false;
    /// The algorithm is a lock service whose clients' answers are judged for linearizability
    /// (the `linearizable` property, beside mutual exclusion's), not only its critical sections.
    const LINEARIZABLE: bool = false;
    /// For deadlock algorithms: how many resources a request of the deadlock workload waits
    /// on when the run does not say (`--holders`). Two make cycles overlap; an algorithm whose
    /// resolution misbehaves on overlapping cycles declares what it was written for.
    const WORKLOAD_HOLDERS: u32 = 2;
    /// What one operation of the algorithm is, and how a run counts them: the unit of the
    /// per-operation costs the simulator reports and `ringleader table` compares with the
    /// textbook's formulas. Default: the family's ([`OperationUnit::of_family`]).
    const OPERATION: OperationUnit =
        OperationUnit::of_family(Self::FAMILY, Self::LEADER_RULE, Self::PREVENTION);
    /// How the memory and start-up time of a run grow with its node count, beyond the
    /// constant per node every run has; a run estimated above its limits is refused before
    /// anything is built. Default: nothing beyond linear ([`Footprint::LINEAR`]).
    const FOOTPRINT: Footprint = Footprint::LINEAR;

    /// Validated, shared configuration.
    type Config: Clone + std::fmt::Debug + Send + Sync + 'static;

    /// Whether a message `msg` from position `from` is one its sender could have sent by the
    /// algorithm's rules, as this node's state knows them — e.g. only `central`'s coordinator
    /// grants, so a GRANT (and its fencing token) from anyone else is forged. A real node
    /// refuses and counts a message this rejects (`Err` says why); the simulator's nodes do not
    /// lie, and it never asks. Default: every message.
    fn admits(&self, _from: NodeId, _msg: &Self::Msg) -> Result<(), &'static str> {
        Ok(())
    }

    /// Reads and validates parameters. Unknown parameters are reported by the caller.
    fn configure(setup: &Setup) -> Result<Self::Config, ParamError>;

    /// The initial state of the node at position `me`.
    fn new(me: NodeId, config: &Self::Config, setup: &Setup) -> Self;

    /// Outcome fields that need the driver's global view of the final states rather than the
    /// events a checker sees — e.g. the minimum spacing between super-peers, which needs every
    /// super-peer's position. `live[i]` is false for a crashed position. Default: none.
    fn final_outcome(_states: &[Self], _live: &[bool]) -> Vec<(&'static str, f64)>
    where
        Self: Sized,
    {
        Vec::new()
    }

    /// For a token algorithm in which nothing regenerates a lost token: whether no node holds
    /// the token, given every node's state, which nodes are crashed now (`crashed`) and which
    /// of those have no recovery to come (`gone`). The simulator asks only when no message is
    /// in flight, so a token held by no node is then lost for good, and a request still waiting
    /// is never served: it says that no progress is possible rather than advise a longer run.
    /// Default: false (no token, or one that is regenerated).
    fn token_lost(_states: &[Self], _crashed: &[bool], _gone: &[bool]) -> bool
    where
        Self: Sized,
    {
        false
    }

    /// The renamings of positions under which the algorithm behaves the same, and how to rename
    /// its state, messages and timers ([`symmetry`]); the model checker's `--symmetry` explores
    /// one state of each class. Default: none (most algorithms compare ids).
    fn symmetry() -> Option<symmetry::Symmetry<Self>>
    where
        Self: Sized,
    {
        None
    }
}

/// An algorithm whose node state is plain data ([`ringleader_core::PlainState`]) and can be read
/// back from its serialised form: the model checker stores and compares such states, and a real
/// node writes one whole to its state file. Every textbook algorithm is one; the lock service,
/// whose state holds a Raft engine, is not.
pub trait PlainAlgorithm: Algorithm + ringleader_core::PlainState + serde::de::DeserializeOwned {}

impl<A: Algorithm + ringleader_core::PlainState + serde::de::DeserializeOwned> PlainAlgorithm for A {}

/// How operations of an algorithm are counted (see [`OperationUnit`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OperationCount {
    /// The family checker's count (elections, entries, detections, rounds, stamped events).
    Checker,
    /// Sends of one message kind (one REQUEST = one synchronisation or poll).
    Sends(&'static str),
    /// Bursts of one message kind (one POLL broadcast = one round).
    Bursts(&'static str),
    /// Bursts of one message kind by every node, rounded up (a failure detector's period: each
    /// node sends one burst of heartbeats per period).
    BurstsPerNode(&'static str),
    /// Nodes that are not super-peers (a super-peer election's cost is per joining node).
    NormalNodes,
}

/// What one operation of an algorithm is ([`Algorithm::OPERATION`]): its name, singular
/// (`election`, `entry`, `sync`, …), and how a run counts them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OperationUnit {
    /// The operation, singular (`election`, `entry`, `poll`).
    pub name: &'static str,
    /// How a run counts them.
    pub count: OperationCount,
}

impl OperationUnit {
    /// One operation per event the family's checker counts, called `name`.
    pub const fn checked(name: &'static str) -> OperationUnit {
        OperationUnit { name, count: OperationCount::Checker }
    }

    /// The unit of a family, as its checker counts it: an election (a round, for super-peer
    /// sets), an entry, a stamped event, a detection (a request, for prevention schemes), a
    /// failure detector's period.
    pub const fn of_family(family: Family, leader_rule: LeaderRule, prevention: bool) -> OperationUnit {
        match family {
            Family::Election => match leader_rule {
                LeaderRule::Set => OperationUnit::checked("round"),
                _ => OperationUnit::checked("election"),
            },
            Family::Mutex => OperationUnit::checked("entry"),
            Family::Clock => OperationUnit::checked("stamped event"),
            Family::Deadlock if prevention => OperationUnit::checked("request"),
            Family::Deadlock => OperationUnit::checked("detection"),
            Family::Detector => {
                OperationUnit { name: "period", count: OperationCount::BurstsPerNode("heartbeat") }
            }
        }
    }
}

/// How a run's cost grows with its node count N beyond the constant per node every run has
/// ([`Algorithm::FOOTPRINT`]). The coefficients are measured (docs/PERFORMANCE.md has the
/// figures) and rounded up; the simulator turns them into estimates and refuses a run that
/// would outgrow its limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Footprint {
    /// Bytes per pair of nodes, for state or messages in flight that grow as N² (O(N) state
    /// per node, or O(N²) messages at once).
    pub bytes_per_pair: u64,
    /// Bytes per node and member of its quorum, for quorums of 2√N − 1 ids per node (N√N).
    pub bytes_per_quorum_member: u64,
    /// Nanoseconds per N³ of building the nodes before the first event, for a start-up that
    /// grows as N³.
    pub startup_ns_per_n3: u64,
}

impl Footprint {
    /// Nothing beyond a constant per node (and per neighbour).
    pub const LINEAR: Footprint =
        Footprint { bytes_per_pair: 0, bytes_per_quorum_member: 0, startup_ns_per_n3: 0 };

    /// State or messages that grow as N², `bytes` per pair of nodes.
    pub const fn quadratic(bytes: u64) -> Footprint {
        Footprint { bytes_per_pair: bytes, ..Footprint::LINEAR }
    }
}

/// What `ringleader list` shows about an algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Info {
    /// The `--algo` name.
    pub name: &'static str,
    /// The family.
    pub family: Family,
    /// One-line summary.
    pub summary: &'static str,
    /// The topology it is written for.
    pub topology: TopologyKind,
    /// Which uid a correct election elects.
    pub leader_rule: LeaderRule,
    /// A deadlock-prevention scheme (rather than a detector).
    pub prevention: bool,
    /// Completes nothing without a majority of its nodes up ([`Algorithm::NEEDS_MAJORITY`]).
    pub needs_majority: bool,
    /// Judged for linearizability as a lock service ([`Algorithm::LINEARIZABLE`]).
    pub linearizable: bool,
    /// The deadlock workload's default holders per request ([`Algorithm::WORKLOAD_HOLDERS`]).
    pub workload_holders: u32,
    /// What one operation is and how it is counted ([`Algorithm::OPERATION`]).
    pub operation: OperationUnit,
    /// How its cost grows with N ([`Algorithm::FOOTPRINT`]).
    pub footprint: Footprint,
}

impl Info {
    /// The description of algorithm `A`.
    pub fn of<A: Algorithm>() -> Info {
        Info {
            name: A::NAME,
            family: A::FAMILY,
            summary: A::SUMMARY,
            topology: A::TOPOLOGY,
            leader_rule: A::LEADER_RULE,
            prevention: A::PREVENTION,
            needs_majority: A::NEEDS_MAJORITY,
            linearizable: A::LINEARIZABLE,
            workload_holders: A::WORKLOAD_HOLDERS,
            operation: A::OPERATION,
            footprint: A::FOOTPRINT,
        }
    }
}

/// Generic code to run on one concrete algorithm type.
pub trait Visitor {
    /// What the visit returns.
    type Output;
    /// Runs with `A` as the algorithm.
    fn visit<A: Algorithm>(self) -> Self::Output;
}

/// Generic code to run on one concrete algorithm whose state is plain data (the model checker,
/// a real node's whole-state file).
pub trait PlainVisitor {
    /// What the visit returns.
    type Output;
    /// Runs with `A` as the algorithm.
    fn visit<A: PlainAlgorithm>(self) -> Self::Output;
}
