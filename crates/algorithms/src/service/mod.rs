//! The lock service: leases, named locks and elections replicated through Raft (raft-rs).
//!
//! [`replica`] is one Raft node over stable storage applying to the state machine, the part the
//! simulator and real servers share; [`lock_service`] is the simulator's process around it
//! (the replica and its node's workload client); [`state`] is the replicated state machine
//! every replica applies in log order; [`log`] is the Raft log as the simulator keeps it on a
//! replica's stable storage; [`kv`] is the key-value store (etcd's data model) inside the state
//! machine; [`planted`] lists the bugs a test build can plant in it, to prove the checkers.

pub mod kv;
pub mod lock_service;
pub mod log;
pub mod planted;
pub mod replica;
pub mod state;
