//! The model checker's integration tests.
//!
//! One binary for all of them: each file below was a test binary of its own, and each
//! linked the whole dependency tree again (disk and link time on a fresh CI machine).
//! Run one file's tests with a filter: `cargo test -p CRATE --test it -- FILE::`.

mod common;

mod budget;
mod known_flaws;
mod search_orders;
