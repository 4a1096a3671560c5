//! # ringleader-sim: the seeded discrete-event simulator
//!
//! Runs any [`ringleader_algorithms::Algorithm`] under a network model (latency distributions,
//! loss, duplication, FIFO links, partitions), a fault plan (crash, recover, pause), drifting
//! physical clocks and a workload, with property checkers judging every step. Same seed and
//! scenario → the same trace, byte for byte.
//!
//! ```
//! use ringleader_sim::{RunConfig, RunOptions, run};
//! let mut cfg = RunConfig::new("chang-roberts", 8).unwrap();
//! cfg.initiators = ringleader_sim::scenario::Initiators::All;
//! let result = run(&cfg, RunOptions::default()).unwrap();
//! assert_eq!(result.report.messages.by_kind["election"], 15);
//! assert_eq!(result.report.outcome["leader"], 8);
//! ```

#![warn(missing_docs)]
pub mod checkers;
pub mod clock;
pub mod engine;
pub mod mermaid;
pub mod network;
pub mod notation;
pub mod queue;
pub mod report;
pub mod scenario;
pub mod sweep;
pub mod topologies;
pub mod trace;
pub mod workload;
pub mod workload_clock;
pub mod workload_deadlock;

use std::path::PathBuf;

use ringleader_algorithms::{Algorithm, Visitor};
use ringleader_core::Message;
use ringleader_core::trace::TraceRecord;

pub use engine::{Progress, Simulation, Stop};
pub use report::Report;
pub use scenario::{RunConfig, Scenario};

/// Why a run could not start or finish.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The configuration cannot run (bad parameter, impossible topology …).
    #[error("{0}")]
    Config(String),
    /// The trace could not be written.
    #[error("trace {path}: {source}")]
    Trace {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
}

/// What to record beyond the report.
#[derive(Default)]
pub struct RunOptions<'a> {
    /// Write the JSON-lines trace here.
    pub trace: Option<PathBuf>,
    /// Keep the trace records in memory (for a Mermaid diagram).
    pub keep_trace: bool,
    /// Called every 65,536 steps.
    pub progress: Option<&'a mut dyn FnMut(Progress)>,
}

/// A finished run.
#[derive(Debug)]
pub struct RunResult {
    /// The report.
    pub report: Report,
    /// The trace records, when kept.
    pub records: Vec<TraceRecord>,
    /// Uids by position.
    pub uids: Vec<ringleader_core::Uid>,
    /// The first violation's window (start step, end step), for diagrams.
    pub violation_window: Option<(u64, Option<u64>)>,
}

impl RunResult {
    /// The Mermaid sequence diagram of the kept trace.
    pub fn mermaid(&self) -> String {
        mermaid::render(&self.records, &self.uids, self.violation_window)
    }
}

struct RunVisitor<'a, 'b> {
    cfg: &'a RunConfig,
    opts: RunOptions<'b>,
}

impl Visitor for RunVisitor<'_, '_> {
    type Output = Result<RunResult, SimError>;
    fn visit<A: Algorithm>(self) -> Self::Output {
        run_algorithm::<A>(self.cfg, self.opts)
    }
}

/// Runs the configured algorithm.
pub fn run(cfg: &RunConfig, opts: RunOptions) -> Result<RunResult, SimError> {
    ringleader_algorithms::dispatch(&cfg.algorithm, RunVisitor { cfg, opts })
        .unwrap_or_else(|| Err(SimError::Config(format!("unknown algorithm {:?}", cfg.algorithm))))
}

/// Runs algorithm `A` (the configuration's algorithm name is not consulted).
pub fn run_algorithm<A: Algorithm>(cfg: &RunConfig, mut opts: RunOptions) -> Result<RunResult, SimError> {
    let trace_err = |source| SimError::Trace {
        path: opts.trace.as_ref().map(|p| p.display().to_string()).unwrap_or_default(),
        source,
    };
    let tracer = if opts.trace.is_some() || opts.keep_trace {
        Some(
            trace::Tracer::new(cfg.nodes as usize, opts.trace.as_deref(), opts.keep_trace)
                .map_err(trace_err)?,
        )
    } else {
        None
    };
    let wall = std::time::Instant::now();
    let mut sim = Simulation::<A>::new(cfg, tracer)?;
    let mut no_progress = |_: Progress| {};
    let progress: &mut dyn FnMut(Progress) = match opts.progress.take() {
        Some(p) => p,
        None => &mut no_progress,
    };
    sim.run(progress);
    let wall_seconds = wall.elapsed().as_secs_f64();
    let records = match sim.take_tracer() {
        Some(t) => t.finish().map_err(trace_err)?,
        None => Vec::new(),
    };
    let report = build_report::<A>(&sim, wall_seconds);
    let violation_window = sim.violations().list().first().map(|v| (v.step, v.until_step));
    Ok(RunResult { report, records, uids: sim.uids().to_vec(), violation_window })
}

fn build_report<A: Algorithm>(sim: &Simulation<A>, wall_seconds: f64) -> Report {
    let cfg = &sim.cfg;
    let c = sim.counters();
    let by_kind =
        <A::Msg as Message>::KINDS.iter().zip(&c.sent_by_kind).map(|(k, &v)| (k.to_string(), v)).collect();
    let (properties, fam) = sim.checker_report();
    let violations = sim.violations().list().to_vec();
    let algorithm_messages = c.sent() - c.detection;
    Report {
        scenario: cfg.name.clone(),
        algorithm: cfg.algorithm.clone(),
        family: sim.info.family.name().into(),
        nodes: cfg.nodes,
        seed: cfg.seed,
        graph: cfg.graph.as_ref().map(|g| g.to_string()),
        events: sim.steps(),
        sim_time: sim.now() as f64 / 1e6,
        stopped: match sim.stopped() {
            Stop::Quiescent => "quiescent".into(),
            Stop::Duration => "duration".into(),
        },
        wall_seconds,
        messages: Messages {
            sent: c.sent(),
            delivered: c.delivered,
            dropped: c.dropped,
            by_kind,
            detection: c.detection,
        },
        outcome: fam.outcome,
        per_operation: report::PerOperation {
            operations: fam.operations,
            messages_mean: if fam.operations == 0 {
                0.0
            } else {
                algorithm_messages as f64 / fam.operations as f64
            },
        },
        latency: fam.latencies,
        properties: properties
            .iter()
            .map(|&p| report::PropertyResult {
                name: p.into(),
                holds: !sim.violations().has(p),
                expected_violation: cfg.expect.contains(p),
            })
            .collect(),
        violations,
        expected_violations: cfg.expect.iter().cloned().collect(),
        repro: cfg.repro(),
    }
}

use report::Messages;
