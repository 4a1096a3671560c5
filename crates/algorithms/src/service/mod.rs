//! The lock service: leases, named locks and elections replicated through Raft (raft-rs).
//!
//! [`lock_service`] is the replica, the process the simulator and real nodes run; [`state`] is
//! the replicated state machine every replica applies in log order; [`log`] is the Raft log as
//! the simulator keeps it on a replica's stable storage.

pub mod lock_service;
pub mod log;
pub mod state;
