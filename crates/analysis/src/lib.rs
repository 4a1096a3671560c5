//! # ringleader-analysis: the programs that study the algorithms through the simulator
//!
//! - [`table`]: every algorithm under the workload its textbook cost is stated for, measured
//!   and set beside the formula (`ringleader table`); its [`table::formulas`] are the
//!   textbook counts the exact-count tests of this crate check too;
//! - [`quorum_risk`]: the probability that quorum voting with forgetful coordinators violates
//!   mutual exclusion, exactly, by sampling and by simulation (`ringleader quorum-risk`);
//! - [`detector_curve`]: a failure detector's detection time against its false suspicions
//!   over a range of timeouts, and the timeout a cost model picks (`ringleader
//!   detector-curve`).
//!
//! Every function here is deterministic: the same options give the same bytes. Errors are
//! typed ([`table::TableError`], [`quorum_risk::QuorumRiskError`],
//! [`detector_curve::CurveError`]); the command line adds context and chooses exit statuses.

#![warn(missing_docs)]

pub mod detector_curve;
pub mod quorum_risk;
pub mod table;
