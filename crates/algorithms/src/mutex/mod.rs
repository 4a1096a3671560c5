//! Distributed mutual exclusion: at most one process in the critical section at a time.
//!
//! Every algorithm emits `Entered { fencing }` / `Exited` so that the checker sees the holders
//! globally; properties: safety, liveness, no starvation, fairness where promised.

pub mod central;
pub mod quorum;
pub mod token_ring;
