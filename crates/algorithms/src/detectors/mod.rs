//! Failure detectors: who suspects whom, and how wrong they are (Chandra & Toueg, JACM 1996).
//!
//! In an asynchronous system a slow process and a crashed one look the same from outside; a
//! failure detector turns silence into *suspicion*, and every detector trades detection time
//! against false suspicions. The detector logic lives in reusable structs
//! ([`heartbeat::HeartbeatDetector`], [`phi_accrual::PhiAccrualDetector`]) that the elections
//! embed to watch their coordinator (the election family's `watch` module); the [`heartbeat::Heartbeat`] and
//! [`phi_accrual::PhiAccrual`] processes run them on every pair of nodes and report
//! [`ringleader_core::Event::Suspect`] / [`ringleader_core::Event::Trust`].

pub mod heartbeat;
pub mod phi_accrual;
