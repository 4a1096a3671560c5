//! The command line's integration tests: the `ringleader` binary driven as a user drives it.
//!
//! One binary for all of them: each file below was a test binary of its own, and each
//! linked the whole dependency tree again (disk and link time on a fresh CI machine).
//! Run one file's tests with a filter: `cargo test -p CRATE --test it -- FILE::`.

mod browser;
mod common;

mod bad_input;
mod check;
mod cli;
mod defaults;
mod detector_curve;
mod docs_generated;
mod durability;
mod etcd_grpc;
mod etcdctl;
mod explorer;
mod fenced_resource;
mod golden;
mod graph;
mod lab;
mod leader_hint;
mod membership;
mod net;
mod quorum_risk;
mod repro;
mod scenarios;
mod service;
mod service_load;
mod service_verbs;
mod shiviz;
mod sweep;
mod table;
mod tls;
mod ui;
mod verify_history;
mod visual;
