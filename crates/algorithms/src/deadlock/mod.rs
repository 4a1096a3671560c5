//! Distributed deadlock: detection (Chandy-Misra-Haas) and prevention (wait-die, wound-wait).
//!
//! The textbooks (Coffman, Elphick and Shoshani, "System deadlocks", ACM Computing Surveys
//! 3(2), 1971; Tanenbaum, Modern Operating Systems, deadlocks) name the four necessary conditions — mutual exclusion, hold and
//! wait, no preemption, circular wait — and four strategies: ignore the problem (the ostrich),
//! detect and recover, prevent statically, avoid by careful allocation. The distributed
//! detection algorithm of Tanenbaum & van Steen's Distributed Systems is Chandy-Misra-Haas; the prevention schemes break *no preemption* (wound-wait)
//! or *hold and wait with circular order* (wait-die) using transaction timestamps.
//!
//! Every algorithm here is driven by the simulator's deadlock workload through
//! [`ringleader_core::Request::WaitFor`] (the process blocks on the resources held by
//! `holders`) and [`ringleader_core::Request::StopWaiting`] (one of them was granted), and
//! reports [`ringleader_core::Event::DeadlockDetected`], [`ringleader_core::Event::Aborted`],
//! [`ringleader_core::Event::Restarted`] and, for prevention, [`ringleader_core::Event::Queued`]
//! (a holder lets a requester wait for it).

pub mod chandy_misra_haas;
pub mod transaction;
pub mod wait_die;
pub mod wound_wait;
