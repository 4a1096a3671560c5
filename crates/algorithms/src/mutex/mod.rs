//! Distributed mutual exclusion: at most one process in the critical section at a time.
//!
//! Every algorithm emits `Entered { fencing }` / `Exited` so that the checker sees the holders
//! globally; properties: safety, liveness, no starvation, fairness where promised.

pub mod central;
pub mod lamport;
pub mod maekawa;
pub mod quorum;
pub mod raymond;
pub mod ricart_agrawala;
pub mod roucairol_carvalho;
pub mod stamp;
pub mod suzuki_kasami;
pub mod token_ring;
