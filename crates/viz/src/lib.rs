//! # ringleader-viz: pictures of a run
//!
//! Turns the trace every driver writes ([`TraceRecord`]s: the simulator, the model checker's
//! counterexamples, real nodes' merged logs) into documents people look at:
//!
//! - [`html()`]: one self-contained HTML file (inline script and style, no network fetch, opens
//!   from disk) holding the run and a viewer. The viewer draws the space-time diagram of the
//!   distributed-systems textbooks (Lamport 1978; the sequence diagrams of the course notes):
//!   one lifeline per node, an arrow from each send to its delivery so that crossing and
//!   overtaking messages are visible, a cross where a message was dropped, crash, recovery and
//!   pause marks, partition bands, critical-section bars, leader and suspicion labels, and the
//!   first violation inside a red rectangle. It has step and play controls, a time slider, each
//!   node's state at the current step and the properties' status at that step.
//! - [`shiviz()`]: a log for ShiViz (Beschastnikh et al., "Debugging distributed systems",
//!   CACM 2016), parsed by its documented default regular expression.
//! - [`plot::svg`]: SVG line plots (costs against N beside the textbook curve, a detector's
//!   detection time and mistakes against its timeout), drawn with `plotters`.
//!
//! The crate depends only on `ringleader-core`, so the simulator, the model checker and the
//! real-network verifier can all use it.

#![warn(missing_docs)]

pub mod columns;
pub mod html;
pub mod plot;
pub mod shiviz;

pub use html::{RunView, html};
pub use shiviz::shiviz;

pub use ringleader_core::trace::TraceRecord;
