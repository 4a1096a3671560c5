//! # ringleader-sim: the seeded discrete-event simulator
//!
//! Runs any [`ringleader_algorithms::Algorithm`] under a network model (latency distributions,
//! loss, duplication, FIFO links, partitions), a fault plan (crash, recover, pause), drifting
//! physical clocks and a workload, with the property checkers of [`ringleader_judge`] judging
//! every step. Same seed and scenario → the same trace, byte for byte.
//!
//! ```
//! use ringleader_sim::{RunConfig, RunOptions, run};
//! let mut cfg = RunConfig::new("chang-roberts", 8).unwrap();
//! cfg.initiators = ringleader_sim::scenario::Initiators::All;
//! let result = run(&cfg, RunOptions::default()).unwrap();
//! assert_eq!(result.report.messages.by_kind["election"], 15);
//! assert_eq!(result.report.outcome.election().unwrap().leader, Some(8));
//! ```

#![warn(missing_docs)]
pub mod clock;
pub mod engine;
pub mod input;
pub mod network;
pub mod notation;
pub mod queue;
pub mod report;
pub mod resolve;
pub mod scenario;
pub mod settings;
pub mod stories;
mod streams;
pub mod sweep;
pub mod topologies;
pub mod workload;

use std::path::PathBuf;

use ringleader_algorithms::{Algorithm, OperationCount, Visitor};
use ringleader_core::Message;
use ringleader_core::trace::TraceRecord;
use ringleader_judge::checkers::NodeStatus;

pub use engine::{Progress, Simulation, Stop};
pub use report::Report;
pub use scenario::{RunConfig, Scenario};

/// Why a run could not start or finish.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// No algorithm has this name.
    #[error("unknown algorithm {0:?}")]
    UnknownAlgorithm(String),
    /// The communication graph cannot be built (impossible shape, bad edge count …).
    #[error(transparent)]
    Topology(Box<topologies::ShapeError>),
    /// The algorithm refused its parameters (a value out of range, or a name it does not read).
    #[error(transparent)]
    Configure(#[from] ringleader_algorithms::ConfigError),
    /// The run cannot use the windowed engine (`--threads`).
    #[error(
        "--threads: the windowed engine cannot run this: {0}; leave out --threads to run it on the serial engine"
    )]
    Windowed(String),
    /// The trace could not be written.
    #[error("trace {path}: {source}")]
    Trace {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
}

impl From<topologies::ShapeError> for SimError {
    fn from(e: topologies::ShapeError) -> Self {
        SimError::Topology(Box::new(e))
    }
}

/// What to record beyond the report.
#[derive(Default)]
pub struct RunOptions<'a> {
    /// Write the JSON-lines trace here.
    pub trace: Option<PathBuf>,
    /// Keep the trace records in memory (for a Mermaid diagram, an HTML page).
    pub keep_trace: bool,
    /// Keep at most this many records in memory (all of them when `None`): the run's beginning,
    /// its faults and violations and its end ([`ringleader_judge::trace::Keep`]).
    /// A page draws a bounded part of the run, and a run of millions of steps would otherwise
    /// hold every record. The trace file, if any, still gets every record,
    /// [`RunResult::total_records`] counts them all and [`RunResult::gaps`] says where some
    /// were left out.
    pub keep_at_most: Option<usize>,
    /// Called every 65,536 steps.
    pub progress: Option<&'a mut dyn FnMut(Progress)>,
    /// Run on the windowed engine with this many threads ([`engine::windowed`]): the same run
    /// on any number of them, not the serial engine's run. `None`: the serial engine.
    pub threads: Option<usize>,
}

/// A finished run.
#[derive(Debug)]
pub struct RunResult {
    /// The report.
    pub report: Report,
    /// The trace records, when kept (at most [`RunOptions::keep_at_most`] of them).
    pub records: Vec<TraceRecord>,
    /// Where records were left out of `records` (see [`RunOptions::keep_at_most`]).
    pub gaps: Vec<ringleader_core::trace::Gap>,
    /// How many records the run produced when it was traced: more than `records.len()` when
    /// the kept trace was cut.
    pub total_records: u64,
    /// Uids by position.
    pub uids: Vec<ringleader_core::Uid>,
    /// The first violation's window (start step, end step), for diagrams.
    pub violation_window: Option<(u64, Option<u64>)>,
}

impl RunResult {
    /// The Mermaid sequence diagram of the kept trace's beginning (up to its first gap; a
    /// closing note says so when that ends before the run's does and the diagram was not
    /// already cut).
    pub fn mermaid(&self) -> String {
        let head = &self.records[..self.gaps.first().map_or(self.records.len(), |g| g.at)];
        let mut diagram = ringleader_judge::mermaid::render(head, &self.uids, self.violation_window);
        let kept = head.len() as u64;
        if self.total_records > kept && !diagram.contains(ringleader_judge::mermaid::CUT_NOTE) {
            diagram.push_str(&format!(
                "    note over P0: {} {kept} of {} records\n",
                ringleader_judge::mermaid::CUT_NOTE,
                self.total_records
            ));
        }
        diagram
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
    ringleader_registry::dispatch(&cfg.algorithm, RunVisitor { cfg, opts })
        .unwrap_or_else(|| Err(SimError::UnknownAlgorithm(cfg.algorithm.clone())))
}

/// Runs algorithm `A` (the configuration's algorithm name is not consulted).
///
/// With [`RunOptions::keep_at_most`], a run that produced more records than it could keep is
/// run a second time, the same run (a run is a function of its configuration), to keep its
/// faults, violations and end ([`ringleader_judge::trace::Keep::Rest`]): the first run's
/// records are cut to half the bound, and the second builds only the records it keeps. A run
/// that fits is run once.
pub fn run_algorithm<A: Algorithm>(cfg: &RunConfig, mut opts: RunOptions) -> Result<RunResult, SimError> {
    use ringleader_judge::trace::{Keep, KeptTrace, Tracer};
    let trace_err = |source| SimError::Trace {
        path: opts.trace.as_ref().map(|p| p.display().to_string()).unwrap_or_default(),
        source,
    };
    let bound = opts.keep_at_most.unwrap_or(usize::MAX);
    let tracer = if opts.trace.is_some() || opts.keep_trace {
        Some(
            Tracer::new(cfg.nodes as usize, opts.trace.as_deref(), opts.keep_trace)
                .map_err(trace_err)?
                .keep(Keep::First(bound)),
        )
    } else {
        None
    };
    let wall = std::time::Instant::now();
    let mut no_progress = |_: Progress| {};
    let progress: &mut dyn FnMut(Progress) = match opts.progress.take() {
        Some(p) => p,
        None => &mut no_progress,
    };
    let mut sim = simulate::<A>(cfg, tracer, opts.threads, progress)?;
    let wall_seconds = wall.elapsed().as_secs_f64();
    let (mut kept, total_records, mut faults) = match sim.take_tracer() {
        Some(t) => {
            let (total, faults) = (t.recorded(), t.faults_left_out());
            (t.finish().map_err(trace_err)?, total, faults)
        }
        None => (KeptTrace::default(), 0, 0),
    };
    // Too long to keep whole (and room for three parts): the first half of the bound stays,
    // and a second run of the same configuration keeps the middle's faults and violations (up
    // to a quarter of the bound) and the end (what they leave).
    if opts.keep_trace && total_records > bound as u64 && bound >= 4 {
        let head = bound / 2;
        faults += kept.records[head..].iter().filter(|r| r.kind.is_fault_or_violation()).count() as u64;
        kept.records.truncate(head);
        let marks = (bound / 4).min(usize::try_from(faults).unwrap_or(usize::MAX));
        let tail = (bound - head - marks) as u64;
        let keep = Keep::Rest { after: head as u64, marks, tail_from: total_records - tail };
        let tracer = Tracer::new(cfg.nodes as usize, None, true).map_err(trace_err)?.keep(keep);
        let mut again = simulate::<A>(cfg, Some(tracer), opts.threads, progress)?;
        let rest = again.take_tracer().expect("the second run was traced").finish().map_err(trace_err)?;
        kept = kept.followed_by(rest);
    }
    let mut report = build_report::<A>(&sim, wall_seconds);
    if let Some(threads) = opts.threads {
        // The windowed engine's run is its own: replaying it needs the flag (any count will do).
        report.threads = Some(threads);
        report.repro.push_str(&format!(" --threads {threads}"));
    }
    let violation_window = sim.violations().list().first().map(|v| (v.step, v.until_step));
    let KeptTrace { records, gaps } = kept;
    Ok(RunResult { report, records, gaps, total_records, uids: sim.uids().to_vec(), violation_window })
}

/// One run of `A` on the serial engine, or on the windowed engine with `threads`.
fn simulate<A: Algorithm>(
    cfg: &RunConfig,
    tracer: Option<ringleader_judge::trace::Tracer>,
    threads: Option<usize>,
    progress: &mut dyn FnMut(Progress),
) -> Result<Simulation<A>, SimError> {
    let mut sim = Simulation::<A>::new(cfg, tracer)?;
    match threads {
        Some(threads) => sim.run_windowed(threads, progress)?,
        None => sim.run(progress),
    }
    Ok(sim)
}

/// Why no progress is possible any more at the end of a run cut off at `--duration`, when the
/// run proves it: the algorithm needs a majority of its nodes up, and more than half of them
/// are crashed with no recovery planned after the end (a paused node counts as up: it
/// resumes; a partition heals or is not reasoned about); or the algorithm's token is lost for
/// good ([`token_lost`]). `None` when nothing is proven.
fn no_progress<A: Algorithm>(sim: &Simulation<A>) -> Option<String> {
    if sim.stopped() != Stop::Duration {
        return None;
    }
    majority_down(sim).or_else(|| token_lost(sim))
}

/// Whether position `node` is crashed now with no recovery planned after now.
fn gone_for_good<A: Algorithm>(sim: &Simulation<A>, node: usize) -> bool {
    let uid = sim.uids()[node];
    sim.status()[node] == NodeStatus::Crashed
        && !sim.cfg.recover.iter().any(|r| r.uid == uid && r.time > sim.now())
}

/// The token is lost for good: no message is in flight (so none carries it), no node holds
/// it, and the algorithm never regenerates it ([`Algorithm::token_lost`]).
fn token_lost<A: Algorithm>(sim: &Simulation<A>) -> Option<String> {
    if sim.in_flight() != 0 {
        return None;
    }
    let n = sim.uids().len();
    let crashed: Vec<bool> = sim.status().iter().map(|s| *s == NodeStatus::Crashed).collect();
    let gone: Vec<bool> = (0..n).map(|i| gone_for_good(sim, i)).collect();
    if !A::token_lost(sim.states(), &crashed, &gone) {
        return None;
    }
    Some(format!(
        "at {:.3} ms: the token is held by no node and carried by no message in flight, and {} never regenerates it",
        sim.now() as f64 / 1e6,
        sim.cfg.algorithm
    ))
}

/// More than half of the nodes are crashed for good and the algorithm needs a majority up.
fn majority_down<A: Algorithm>(sim: &Simulation<A>) -> Option<String> {
    let cfg = &sim.cfg;
    if !sim.info.needs_majority {
        return None;
    }
    let now = sim.now();
    let uids = sim.uids();
    let down: Vec<ringleader_core::Uid> = sim
        .status()
        .iter()
        .enumerate()
        .filter(|&(_, s)| *s == NodeStatus::Crashed)
        .map(|(node, _)| uids[node])
        .filter(|uid| !cfg.recover.iter().any(|r| r.uid == *uid && r.time > now))
        .collect();
    let n = uids.len();
    let majority = n / 2 + 1;
    if n - down.len() >= majority {
        return None;
    }
    // Since the last crash of the nodes that are down, all of them have been down.
    let since = down
        .iter()
        .filter_map(|uid| cfg.crash.iter().filter(|c| c.uid == *uid && c.time <= now).map(|c| c.time).max())
        .max()
        .unwrap_or(0);
    let ids: Vec<String> = down.iter().map(|u| u.to_string()).collect();
    Some(format!(
        "after {:.3} ms: {} of {n} nodes crashed (ids {}) with no recovery planned, and {} completes nothing without a majority ({majority}) up",
        since as f64 / 1e6,
        down.len(),
        ids.join(", "),
        cfg.algorithm
    ))
}

fn build_report<A: Algorithm>(sim: &Simulation<A>, wall_seconds: f64) -> Report {
    let cfg = &sim.cfg;
    let c = sim.counters();
    let kinds = <A::Msg as Message>::KINDS;
    let by_kind = kinds.iter().zip(&c.sent_by_kind).map(|(k, &v)| (k.to_string(), v)).collect();
    let detection_kinds: Vec<String> =
        kinds.iter().zip(&c.detection_by_kind).filter(|&(_, &v)| v > 0).map(|(k, _)| k.to_string()).collect();
    let (properties, fam) = sim.checker_report();
    let violations = sim.violations().list().to_vec();
    // A failure detector's heartbeats are the algorithm itself: they count.
    let algorithm_messages = if sim.info.family == ringleader_algorithms::Family::Detector {
        c.sent()
    } else {
        c.sent() - c.detection
    };
    let outcome = fam.outcome;
    let ringleader_algorithms::OperationUnit { name: unit, count } = A::OPERATION;
    let kind_index = |k: &str| kinds.iter().position(|&x| x == k);
    let operations = match count {
        OperationCount::Checker => fam.operations,
        OperationCount::Sends(k) => kind_index(k).map_or(0, |i| c.sent_by_kind[i]),
        OperationCount::Bursts(k) => kind_index(k).map_or(0, |i| c.bursts_by_kind[i]),
        OperationCount::BurstsPerNode(k) => {
            kind_index(k).map_or(0, |i| c.bursts_by_kind[i].div_ceil(u64::from(cfg.nodes)))
        }
        OperationCount::NormalNodes => {
            let super_peers = outcome.super_peers().map_or(0, |o| o.super_peers);
            u64::from(cfg.nodes).saturating_sub(super_peers)
        }
    };
    let undecided = sim.violations().undecided().to_vec();
    let no_progress = if undecided.is_empty() { None } else { no_progress(sim) };
    let workload = sim.workload_tally().map(|w| {
        let shortfall = (w.issued < w.asked).then(|| {
            if sim.stopped() == Stop::Duration {
                format!("the run was cut off at {:.3} ms", sim.now() as f64 / 1e6)
            } else if !w.requesters.iter().any(|&r| sim.status()[r as usize] != NodeStatus::Crashed) {
                "every requester crashed".to_string()
            } else {
                "the run ended with a request unserved, so the workload could not go on".to_string()
            }
        });
        report::WorkloadSummary {
            kind: w.kind.into(),
            asked: w.asked,
            issued: w.issued,
            lost: w.lost,
            shortfall,
        }
    });
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
            Stop::Steady => "steady".into(),
            Stop::Duration => "duration".into(),
        },
        wall_seconds,
        threads: None,
        messages: Messages {
            sent: c.sent(),
            delivered: c.delivered,
            dropped: c.dropped,
            duplicated: c.duplicated,
            in_flight: sim.in_flight(),
            by_kind,
            detection: c.detection,
            detection_kinds: detection_kinds.clone(),
        },
        outcome,
        per_operation: report::PerOperation {
            unit: unit.into(),
            operations,
            messages_mean: if operations == 0 { 0.0 } else { algorithm_messages as f64 / operations as f64 },
            unfinished: fam.unfinished,
            messages_mean_incl_unfinished: (fam.unfinished > 0)
                .then(|| algorithm_messages as f64 / (operations + fam.unfinished) as f64),
            excluded: if sim.info.family == ringleader_algorithms::Family::Detector {
                Vec::new()
            } else {
                detection_kinds.clone()
            },
        },
        latency: fam.latencies,
        workload,
        properties: properties
            .iter()
            .map(|&p| {
                let violated = sim.violations().has(p);
                let pending = sim.violations().undecided_of(p);
                report::PropertyResult {
                    name: p.name().into(),
                    holds: !violated,
                    status: if violated {
                        report::PropertyStatus::Violated
                    } else if pending.is_some() {
                        report::PropertyStatus::Undecided
                    } else {
                        report::PropertyStatus::Holds
                    },
                    undecided: pending.map(|u| u.detail.clone()),
                    expected_violation: cfg.expect.contains(p.name()),
                }
            })
            .collect(),
        violations,
        undecided,
        no_progress,
        expected_violations: cfg.expect.iter().cloned().collect(),
        repro: cfg.repro(),
    }
}

use report::Messages;
