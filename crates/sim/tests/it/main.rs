//! The simulator's integration tests: textbook counts, sweeps, scenarios and properties.
//!
//! One binary for all of them: each file below was a test binary of its own, and each
//! linked the whole dependency tree again (disk and link time on a fresh CI machine).
//! Run one file's tests with a filter: `cargo test -p CRATE --test it -- FILE::`.

mod common;

mod admits_honest_runs;
mod clock_observation;
mod clocks;
mod core_properties;
mod deadlock;
mod detectors;
mod distributed_mutex_sweeps;
mod election_detectors;
mod election_large_sweeps;
mod election_scenarios;
mod election_sweeps;
mod elections_large_tables;
mod graph_shapes;
mod hirschberg_sinclair;
mod kept_trace;
mod lock_service;
mod mutex_ring_quorum_failover;
mod planted;
mod prevention;
mod streams;
mod superpeer;
mod token_copies;
mod verdicts;
mod windowed;
mod yoyo;
