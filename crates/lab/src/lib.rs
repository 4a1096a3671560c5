//! The lab bench: a learner's own implementation, in any language, judged as ringleader judges
//! its own algorithms.
//!
//! A learner writes a node program that speaks Maelstrom's protocol: one JSON object per line
//! on stdin and stdout, `{"src":"n1","dest":"n2","body":{"type":…,"msg_id":…,"in_reply_to":…}}`,
//! `init` (with `node_id` and `node_ids`) answered by `init_ok`, errors as Maelstrom's error
//! bodies. The bench ([`run::run`]) starts N processes of that program, one working directory
//! each, and is their network: every message a node writes goes through a seeded model of the
//! simulator's ([`ringleader_sim::network::Network`]: latency, loss, duplication, partitions),
//! pauses hold a node's inputs, a crash kills its process and a recovery starts it again in the
//! same directory. The bench is also the client: per family it sends the operations docs/LAB.md
//! defines (mutex `acquire`/`release`, election `start_election` and `leader?`) and turns the
//! answers into the events the simulator's checkers judge ([`ringleader_judge::checkers`]), so a
//! learner's run gets the same verdicts — safety, liveness with *undecided*, fencing,
//! agreement, validity, uniqueness, termination — and its message count per operation beside
//! the textbook's formula ([`textbook`]).
//!
//! Time. In real time (the default, as Maelstrom) delays are wall-clock delays. In lockstep the
//! bench keeps a virtual clock and hands one input at a time to one node, then waits until that
//! node is done: it wrote the end-of-step marker (`lab_done`, see [`protocol`]) or, for a node
//! that never writes one, stayed quiet for a short period. With the marker, a deterministic
//! node gives the same trace for the same seed, byte for byte; the bench's own timers
//! (`lab_timer`) run on the virtual clock too.
//!
//! [`grade`] runs a battery of such runs (the family's textbook scenarios and a seeded sweep)
//! and prints a report card: each property with its first failing seed and repro line.

pub mod config;
pub mod crate_grade;
mod deadlock;
pub mod family;
pub mod grade;
pub mod learner;
pub mod new;
pub mod nodes;
pub mod protocol;
pub mod report;
pub mod run;
pub mod simulated;
pub mod textbook;

pub use config::{LabConfig, LabFamily};
pub use report::LabReport;
pub use run::run;

/// Why a lab run could not be carried out (a node's misbehaviour that the checkers judge is not
/// an error: it is in the report).
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// A node program could not be started.
    #[error("cannot start node {node} with {command:?}: {source}")]
    Spawn {
        /// The node's name.
        node: String,
        /// The command line.
        command: String,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// A node did not answer `init` in time.
    #[error("node {node} did not answer init with init_ok within {seconds} s{stderr}")]
    NoInit {
        /// The node's name.
        node: String,
        /// The bound.
        seconds: u64,
        /// The last line it wrote on stderr, if any (with a separator).
        stderr: String,
    },
    /// A node wrote a line that is not a Maelstrom message, or a message the bench cannot route.
    #[error("node {node} broke the protocol: {why} (line: {line})")]
    Protocol {
        /// The node's name.
        node: String,
        /// What was wrong and what is allowed.
        why: String,
        /// The line, shortened.
        line: String,
    },
    /// In lockstep, a node that uses the end-of-step marker did not write it in time.
    #[error(
        "node {node} wrote no lab_done within {seconds} s of its input (lockstep waits for it once a node has written one)"
    )]
    NoMarker {
        /// The node's name.
        node: String,
        /// The bound.
        seconds: u64,
    },
    /// The configuration is not usable.
    #[error("{0}")]
    Config(String),
    /// Writing the trace or the scratch directories failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being written.
        what: String,
        /// The error.
        source: std::io::Error,
    },
}
