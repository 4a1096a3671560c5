//! # ringleader-check: every execution, for small N
//!
//! The simulator samples executions, one per seed; this crate explores *all* of them, up to a
//! bound, with the [`stateright`] model checker, and returns for every violated property its
//! *shortest* counterexample (breadth-first search finds a violating state at the least depth).
//! It runs the very same `Process` code the simulator and the real nodes run: no algorithm is
//! written twice.
//!
//! ## Why a `Model`, not stateright's actor framework
//! Stateright offers two interfaces: `actor::Actor` (its own process contract, run by an
//! `ActorModel`) and the bare [`stateright::Model`] (initial states, actions, next state,
//! properties). The adapter implements `Model` directly for every plain-state algorithm ([`PlainAlgorithm`])
//! ([`CheckModel`]), because four of our semantics do not fit the actor framework:
//!
//! 1. **Recovery.** Our `Process::on_recover` runs on the state the node had when it crashed
//!    and lets the algorithm decide what it forgot. Stateright's actors recover through
//!    `on_start(storage)` from a separate `Storage` value, and its `max_crashes` bounds the
//!    nodes crashed *at the same time*, with recovery always enabled — we want a bound on the
//!    number of crashes in an execution, with recovery a choice.
//! 2. **Application requests are not messages.** `Request::Acquire`, `Release` and
//!    `StartElection` come from the application, not from a peer. In the actor framework they
//!    would need a client actor and a message type wrapping ours; here they are actions of
//!    their own, bounded per node.
//! 3. **Observable events.** Our processes report [`ringleader_core::Event`]s through the
//!    outbox; the simulator's checkers judge those events. Stateright's `Out` has no such
//!    command, so the events would be lost; here each is folded into the state (who believes
//!    whom is the leader, who holds the critical section, who waits) where the properties read
//!    it.
//! 4. **The trace.** A counterexample must read like a simulated run (the same JSON lines, the
//!    same Mermaid diagram). Replaying the path through our own handler loop records exactly
//!    the simulator's records.
//!
//! Timers and networks fit stateright's semantics, and are reproduced as it has them: an armed
//! timer may fire at any moment (durations are ignored — the asynchronous model, in which seed
//! 003 says a slow process and a dead one cannot be told apart), and the network is ordered
//! (FIFO per link), unordered, lossy or duplicating ([`network`]).
//!
//! ## The model
//! A state ([`model::State`]) holds every process's state, the messages in flight, each node's
//! armed timers and fault status, what the application may still ask, and what each node has
//! reported. The steps ([`model::Step`]) possible in a state are:
//!
//! - **requests** — election family: each *initiator* may be asked `StartElection` once, at any
//!   moment; mutex family: each *requester* may be asked `Acquire` up to `acquires` times, when
//!   it neither waits nor holds; a node that reported `Entered` may be asked `Release` at any
//!   moment (never forced: an execution in which it keeps the section is explored too). By
//!   default every node is an initiator, and every node but position 0 (the coordinator of the
//!   centralized algorithms, as in the simulator's default workload) is a requester, once;
//! - **deliveries** of any message the network lets through to a live node;
//! - **timers**: any armed timer of a live node fires;
//! - **losses** of any message (lossy network), or of a message whose receiver is down;
//! - **crashes** of any live node, while fewer than `crashes` crashes happened: it loses its
//!   timers, and what the checkers know of it (belief, holding, waiting), as in the simulator;
//! - **recoveries** (when enabled) of any crashed node: `Process::on_recover` runs.
//!
//! The clock a handler reads is 0 and its randomness is fixed per node: time is measured only
//! by timers, and random choices are not explored.
//!
//! ## Two search orders, and symmetry
//! Breadth-first ([`Search::BreadthFirst`], the default) finds shortest counterexamples but
//! holds its whole frontier in memory, several hundred bytes per state. Depth-first
//! ([`Search::DepthFirst`]) keeps a 64-bit fingerprint per state seen (12 to 23 bytes per
//! state, measured; see [`Search`]): the search that proves properties on large spaces, with
//! paths that may be longer than the shortest. An algorithm whose rules commute with a group of
//! renamings of the nodes declares it ([`ringleader_algorithms::symmetry`]), and
//! [`Options::symmetry`] then explores one state per class of renamed states ([`symmetry`]).
//!
//! ## Properties
//! See [`properties`]: the simulator's predicates (`rival_claimants`, `end_of_run`,
//! `other_holder`, `fencing_regression`) applied to every state, plus `sometimes` properties
//! proving that the interesting states (a leader elected, a critical section entered) are
//! reached at all.
//!
//! ```
//! use ringleader_check::{Bounds, Options, check};
//! let out = check("central-timeout", Bounds::new(3), &Options::default()).unwrap();
//! let safety = out.property("safety").unwrap();
//! assert!(!safety.holds);
//! assert_eq!(safety.length, Some(7)); // the two-holder story, step by step
//! ```

#![warn(missing_docs)]
pub mod by_hand;
pub mod model;
pub mod network;
pub mod properties;
pub mod property;
mod search;
pub mod sleep_sets;
pub mod symmetry;

use std::time::Instant;

use ringleader_algorithms::{PlainAlgorithm, PlainVisitor};
use ringleader_core::Uid;
use ringleader_core::trace::TraceRecord;
use serde::Serialize;
use stateright::{Checker, Expectation, Model};

pub use model::{Bounds, CheckModel, State, Step, StepOf};
pub use network::NetworkKind;
use sleep_sets::Cut;

/// How to run the checker.
#[derive(Clone, Debug)]
pub struct Options {
    /// Explore no deeper than this many steps (`None`: the whole reachable state space).
    pub depth: Option<usize>,
    /// Checker threads. With more than one the search is no longer strictly breadth-first, and
    /// counterexamples may not be the shortest.
    pub threads: usize,
    /// Stop generating states once this many were generated (repeats included).
    pub max_states: Option<usize>,
    /// Stop generating states once the process's resident memory exceeds this many bytes
    /// (read from `/proc/self/status`; ignored where that file does not exist).
    pub max_memory: Option<u64>,
    /// Stop generating states once the search has run this long (wall-clock time).
    pub max_time: Option<std::time::Duration>,
    /// Explore every reachable state even once every property is decided. Without it the
    /// search ends when each `always` property has a counterexample and each `sometimes`
    /// property an example, and the outcome says so ([`CheckReport::decided_early`]).
    pub exhaustive: bool,
    /// The order in which states are explored.
    pub search: Search,
    /// Explore one state of each class of states that are renamings of each other, under the
    /// algorithm's declared [`ringleader_algorithms::symmetry::Symmetry`] (an error for an
    /// algorithm that declares none). Stateright reduces only in its depth-first search, so
    /// this implies [`Search::DepthFirst`].
    pub symmetry: bool,
}

/// The order in which the checker explores states.
///
/// Both visit every reachable state once and judge the same properties in each, so a property
/// that holds in one holds in the other. They differ in what a stored state costs and in the
/// paths they find:
///
/// - **Breadth-first** keeps, for every state seen, its parent, and holds the whole frontier
///   (every state of the next depth, each a full copy) in memory. On one thread its
///   counterexamples are shortest. The frontier is what fills memory on large spaces.
/// - **Depth-first** keeps only a 64-bit fingerprint of every state seen, and the states on the
///   current path and their unexplored siblings. A stored state costs 12 to 23 bytes
///   (measured: the fingerprint set and its slack) instead of several hundred, so spaces ten
///   times larger fit in the same memory; its counterexamples are real and replayable but may
///   be longer than the shortest, and on several threads may differ from run to run. This is
///   the search for proofs. It takes no depth bound: it marks a state seen at the first path
///   that reaches it, which may be longer than the bound, and would then skip the state when a
///   shorter path reaches it ([`check_algorithm`] refuses the pair).
///
/// - **Depth-first with sleep sets** (partial-order reduction, [`sleep_sets`]) is the
///   depth-first search that does not take both orders of two steps at different nodes that
///   commute: it visits every state the others visit, judges the same properties in each, and
///   generates fewer states (each with its sleep set in the table: 16 bytes per state plus
///   slack), on any number of threads. It takes no depth bound either.
///
/// All three searches deduplicate states by a 64-bit hash, so a "holds" is a proof up to a hash
/// collision: about n²/2⁶⁵ for n states, 5·10⁻⁵ for 41.6 million.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub enum Search {
    /// Breadth-first: shortest counterexamples on one thread.
    #[default]
    #[serde(rename = "bfs")]
    BreadthFirst,
    /// Depth-first: fingerprints only, for the largest spaces.
    #[serde(rename = "dfs")]
    DepthFirst,
    /// Depth-first with sleep sets: the same states, fewer generated.
    #[serde(rename = "por")]
    SleepSets,
}

impl std::str::FromStr for Search {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "bfs" | "breadth-first" => Ok(Search::BreadthFirst),
            "dfs" | "depth-first" => Ok(Search::DepthFirst),
            "por" | "sleep-sets" => Ok(Search::SleepSets),
            _ => Err(format!(
                "search {s:?}: expected bfs (breadth-first), dfs (depth-first) or por (depth-first with sleep sets)"
            )),
        }
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            depth: None,
            threads: 1,
            max_states: None,
            max_memory: None,
            max_time: None,
            exhaustive: false,
            search: Search::BreadthFirst,
            symmetry: false,
        }
    }
}

/// How far a running check has got, reported every [`PROGRESS_EVERY`].
#[derive(Clone, Debug)]
pub struct Progress {
    /// States generated, repeats included.
    pub states: usize,
    /// Distinct states.
    pub unique_states: usize,
    /// Greatest depth reached (steps from the initial state).
    pub depth: usize,
    /// Seconds since the start.
    pub seconds: f64,
    /// Resident memory of the process in bytes, where known.
    pub memory: Option<u64>,
}

/// How often a running check reports its [`Progress`].
pub const PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_secs(2);

/// Resident memory of this process in bytes (`VmRSS`), where the OS tells.
pub fn resident_memory() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Why the state space of `algorithm` is infinite, when it is known to be: a search without
/// `--depth` then ends only at a budget.
pub fn unbounded_reason(algorithm: &str) -> Option<&'static str> {
    Some(match algorithm {
        "bully" | "majority" => "its coordinator heartbeats and timeouts re-arm forever",
        "ring" => "a ring election message may circulate again after every timeout",
        "token-ring" => "the token circulates forever, and its counter grows",
        "quorum" => "its retries and rounds have no bound",
        _ => return None,
    })
}

/// What the checker found about one property.
#[derive(Clone, Debug, Serialize)]
pub struct PropertyOutcome {
    /// The property.
    pub name: &'static str,
    /// `always` (a counterexample violates it) or `sometimes` (an example proves it reachable).
    pub kind: &'static str,
    /// `always`: no reachable state violates it; `sometimes`: some reachable state has it.
    pub holds: bool,
    /// Steps of the counterexample (violated `always`) or of the example (`sometimes` reached).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub length: Option<usize>,
    /// What the counterexample's last state violates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// True when the caller declared the violation as expected (`--expect`).
    pub expected_violation: bool,
    /// The counterexample or example, as the simulator's trace records.
    #[serde(skip)]
    pub trace: Vec<TraceRecord>,
    /// The steps, as the explorer names them.
    #[serde(skip)]
    pub steps: Vec<String>,
    /// The steps as a path to explore by hand from ([`by_hand`]): each one's index among the
    /// steps enabled where it was taken.
    #[serde(skip)]
    pub path: Vec<usize>,
}

impl PropertyOutcome {
    /// True for a violated `always` property (it has a counterexample).
    pub fn violated(&self) -> bool {
        self.kind == "always" && !self.holds
    }
}

/// What a model-checking run found.
#[derive(Clone, Debug, Serialize)]
pub struct CheckReport {
    /// Algorithm name.
    pub algorithm: String,
    /// Family.
    pub family: String,
    /// Node count.
    pub nodes: u32,
    /// Network kind.
    pub network: String,
    /// Crash bound.
    pub crashes: u32,
    /// Whether crashed nodes may recover.
    pub recover: bool,
    /// States generated, repeats included.
    pub states: usize,
    /// Distinct states.
    pub unique_states: usize,
    /// Greatest depth explored: the most steps from the initial state to a state judged.
    pub depth: usize,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// True when every reachable state within the depth bound was explored.
    pub complete: bool,
    /// True when the search ended because every property was decided (each `always` property
    /// violated, each `sometimes` property reached) before every state was explored: the
    /// verdicts are final, the state counts are those of the part explored
    /// ([`Options::exhaustive`] explores the rest).
    pub decided_early: bool,
    /// What cut the search short, when something did: `--depth D`, the state budget, the
    /// memory budget or the time budget.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bounded_by: Option<String>,
    /// Checker threads the search ran on.
    pub threads: usize,
    /// The search order: `dfs` ([`Search`]); absent from the JSON for the default, `bfs`.
    #[serde(skip_serializing_if = "is_breadth_first")]
    pub search: Search,
    /// The group of renamings the search reduced by (`--symmetry`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub symmetry: Option<&'static str>,
    /// True when every counterexample and example is a shortest one: a breadth-first search on
    /// one thread keeps the first path it finds to each property, and visits states in order of
    /// depth. With more threads the workers' frontiers interleave, and a path may be longer than
    /// the shortest; a depth-first search follows one path as deep as it goes.
    pub shortest: bool,
    /// Every property, in report order.
    pub properties: Vec<PropertyOutcome>,
    /// Uids by position.
    #[serde(skip)]
    pub uids: Vec<Uid>,
}

impl CheckReport {
    /// The outcome of property `name`.
    pub fn property(&self, name: &str) -> Option<&PropertyOutcome> {
        self.properties.iter().find(|p| p.name == name)
    }

    /// The Mermaid sequence diagram of `p`'s trace, the violating step in a red rectangle.
    pub fn mermaid(&self, p: &PropertyOutcome) -> String {
        let last = p.trace.iter().map(|r| r.step).max().unwrap_or(0);
        let window = p.violated().then_some((last, None));
        ringleader_judge::mermaid::render(&p.trace, &self.uids, window)
    }
}

struct CheckVisitor<'a, 'p> {
    bounds: Bounds,
    opts: &'a Options,
    progress: &'p mut dyn FnMut(&Progress),
}

impl PlainVisitor for CheckVisitor<'_, '_> {
    type Output = Result<CheckReport, CheckError>;
    fn visit<A: PlainAlgorithm>(self) -> Self::Output {
        check_algorithm_with_progress::<A>(self.bounds, self.opts, self.progress)
    }
}

/// Model-checks the algorithm named `algorithm` under `bounds`.
pub fn check(algorithm: &str, bounds: Bounds, opts: &Options) -> Result<CheckReport, CheckError> {
    check_with_progress(algorithm, bounds, opts, &mut |_| {})
}

/// [`check`], calling `progress` every [`PROGRESS_EVERY`] while the search runs.
pub fn check_with_progress(
    algorithm: &str,
    bounds: Bounds,
    opts: &Options,
    progress: &mut dyn FnMut(&Progress),
) -> Result<CheckReport, CheckError> {
    ringleader_registry::dispatch_plain(algorithm, CheckVisitor { bounds, opts, progress })
        .unwrap_or_else(|| Err(not_checkable(algorithm)))
}

/// Model-checks algorithm `A` under `bounds`.
pub fn check_algorithm<A: PlainAlgorithm>(bounds: Bounds, opts: &Options) -> Result<CheckReport, CheckError> {
    check_algorithm_with_progress::<A>(bounds, opts, &mut |_| {})
}

/// [`check_algorithm`], calling `progress` every [`PROGRESS_EVERY`] while the search runs.
pub fn check_algorithm_with_progress<A: PlainAlgorithm>(
    bounds: Bounds,
    opts: &Options,
    progress: &mut dyn FnMut(&Progress),
) -> Result<CheckReport, CheckError> {
    if opts.symmetry && opts.search == Search::SleepSets {
        return Err(CheckError::SymmetryWithSleepSets);
    }
    let search = if opts.symmetry { Search::DepthFirst } else { opts.search };
    if search != Search::BreadthFirst
        && let Some(d) = opts.depth
    {
        return Err(CheckError::DepthFirstDepth(d));
    }
    let group = match (opts.symmetry, A::symmetry()) {
        (false, _) => None,
        (true, Some(sym)) => Some(sym.group),
        (true, None) => return Err(no_symmetry(A::NAME)),
    };
    let mut model = CheckModel::<A>::new(bounds)?;
    let ordered = model.bounds.network == NetworkKind::Ordered;
    model.exhaustive = opts.exhaustive;
    let halt = model.halt.clone();
    let bounds = model.bounds.clone();
    let (uids, family) = (model.uids.clone(), model.info.family);
    let props: Vec<_> = model.properties().into_iter().filter(|p| p.name != search::EXHAUSTIVE).collect();
    let start = Instant::now();
    if search == Search::SleepSets {
        let found = sleep_sets::search(&model, &props, opts, progress);
        let run = Run { start, halt, bounds, uids, family, props, search, group };
        return run.report(&model, found, opts);
    }
    let mut builder = model.checker().threads(opts.threads.max(1));
    if let Some(d) = opts.depth {
        // Stateright counts the initial state as depth 1 and skips states at the target depth:
        // paths of up to `d` steps are judged.
        builder = builder.target_max_depth(d + 2);
    }
    if let Some(n) = opts.max_states {
        builder = builder.target_state_count(n.max(1));
    }
    if group.is_some() {
        builder = builder.symmetry_fn(if ordered {
            symmetry::representative::<A, true>
        } else {
            symmetry::representative::<A, false>
        });
    }
    let run = Run { start, halt, bounds, uids, family, props, search, group };
    match search {
        Search::BreadthFirst => run.watch(builder.spawn_bfs(), opts, progress),
        Search::DepthFirst => run.watch(builder.spawn_dfs(), opts, progress),
        Search::SleepSets => unreachable!("the sleep-set search returned above"),
    }
}

/// What a search's watcher needs besides the checker: when it started, the model's halt switch,
/// what it explores and the properties to report.
struct Run<A: PlainAlgorithm> {
    start: Instant,
    halt: std::sync::Arc<std::sync::atomic::AtomicBool>,
    bounds: Bounds,
    uids: Vec<Uid>,
    family: ringleader_algorithms::Family,
    props: Vec<stateright::Property<CheckModel<A>>>,
    search: Search,
    group: Option<ringleader_algorithms::symmetry::Group>,
}

impl<A: PlainAlgorithm> Run<A> {
    /// Watches `checker` until it ends (reporting progress, halting it at a budget), then
    /// judges every property and replays its path.
    fn watch(
        self,
        checker: impl Checker<CheckModel<A>>,
        opts: &Options,
        progress: &mut dyn FnMut(&Progress),
    ) -> Result<CheckReport, CheckError> {
        let Run { start, halt, bounds, uids, family, props, search, group } = self;
        // Watch the search: report progress, and halt it when the memory budget is spent.
        let mut over_memory = false;
        let mut over_time = false;
        let mut last_report = Instant::now();
        while !checker.is_done() {
            // Short naps first: most checks end within milliseconds.
            let nap = if start.elapsed().as_millis() < 200 { 1 } else { 50 };
            std::thread::sleep(std::time::Duration::from_millis(nap));
            let memory = resident_memory();
            if let (Some(limit), Some(m)) = (opts.max_memory, memory)
                && m > limit
                && !over_memory
            {
                over_memory = true;
                halt.store(true, std::sync::atomic::Ordering::Relaxed);
            }
            if opts.max_time.is_some_and(|limit| start.elapsed() > limit) && !over_time && !over_memory {
                over_time = true;
                halt.store(true, std::sync::atomic::Ordering::Relaxed);
            }
            if last_report.elapsed() >= PROGRESS_EVERY {
                last_report = Instant::now();
                progress(&Progress {
                    states: checker.state_count(),
                    unique_states: checker.unique_state_count(),
                    depth: checker.max_depth().saturating_sub(1),
                    seconds: start.elapsed().as_secs_f64(),
                    memory,
                });
            }
        }
        let checker = checker.join();
        // Paths are rebuilt by replaying the model's actions: un-halt it first.
        halt.store(false, std::sync::atomic::Ordering::Relaxed);
        let over_states = opts.max_states.is_some_and(|n| checker.state_count() >= n);
        let found = Found {
            generated: checker.state_count(),
            unique: checker.unique_state_count(),
            steps_deep: checker.max_depth().saturating_sub(1),
            cut: if over_memory {
                Some(Cut::Memory)
            } else if over_time {
                Some(Cut::Time)
            } else if over_states {
                Some(Cut::States)
            } else {
                None
            },
            threads: opts.threads.max(1),
            paths: props.iter().map(|p| checker.discovery(p.name).map(|path| path.into_actions())).collect(),
        };
        let run = Run { start, halt, bounds, uids, family, props, search, group };
        run.report(checker.model(), found, opts)
    }

    /// Judges every property from the paths `found` holds (replaying each into the simulator's
    /// trace) and writes the report.
    fn report(
        self,
        model: &CheckModel<A>,
        found: Found<A>,
        opts: &Options,
    ) -> Result<CheckReport, CheckError> {
        let Run { start, bounds, uids, family, props, search, group, .. } = self;
        let seconds = start.elapsed().as_secs_f64();
        let steps_deep = found.steps_deep;
        let mut properties = Vec::new();
        for (p, path) in props.iter().zip(found.paths) {
            let always = p.expectation == Expectation::Always;
            let mut out = PropertyOutcome {
                name: p.name,
                kind: if always { "always" } else { "sometimes" },
                holds: path.is_none() == always,
                length: None,
                detail: None,
                expected_violation: false,
                trace: Vec::new(),
                steps: Vec::new(),
                path: Vec::new(),
            };
            if let Some(steps) = path {
                out.length = Some(steps.len());
                out.steps = steps.iter().map(|s| model.format_action(s)).collect();
                out.path = by_hand::path_of(model, &steps).unwrap_or_default();
                let (mut rec, last) = model.replay(&steps).ok_or(CheckError::NoReplay)?;
                if always {
                    let judged = property::ModelProperty::from_name(p.name).expect("a property of ours");
                    let mut detail = properties::violation(model, &last, judged).unwrap_or_default();
                    if p.name == "safety" {
                        detail = safety_story(model, &rec_entrant(&steps), &last).unwrap_or(detail);
                    }
                    rec.violation(p.name, detail.clone());
                    out.detail = Some(detail);
                }
                out.trace = rec.finish();
            }
            properties.push(out);
        }
        // A search stops as soon as every property has a discovery (a path, so a length); whether
        // states were left unexplored then is not known, so the space is not claimed complete.
        let decided_early = !opts.exhaustive && properties.iter().all(|p| p.length.is_some());
        Ok(CheckReport {
            algorithm: A::NAME.into(),
            family: family.name().into(),
            nodes: bounds.nodes,
            network: bounds.network.name().into(),
            crashes: bounds.crashes,
            recover: bounds.recover,
            states: found.generated,
            unique_states: found.unique,
            depth: opts.depth.map_or(steps_deep, |d| steps_deep.min(d)),
            seconds,
            complete: opts.depth.is_none_or(|d| steps_deep <= d) && found.cut.is_none() && !decided_early,
            decided_early,
            bounded_by: match found.cut {
                Some(Cut::Memory) => {
                    Some(format!("the memory budget of {} MiB", opts.max_memory.unwrap_or(0) >> 20))
                }
                Some(Cut::Time) => {
                    Some(format!("the time budget of {:?}", opts.max_time.unwrap_or_default()))
                }
                Some(Cut::States) => {
                    Some(format!("the state budget of {} states", opts.max_states.unwrap_or(0)))
                }
                None if opts.depth.is_some_and(|d| steps_deep > d) => {
                    Some(format!("--depth {}", opts.depth.unwrap_or(0)))
                }
                None => None,
            },
            threads: found.threads,
            search,
            symmetry: group.map(|g| g.name()),
            shortest: found.threads <= 1 && search == Search::BreadthFirst,
            properties,
            uids,
        })
    }
}

/// What a finished search found, whichever search ran.
pub(crate) struct Found<A: PlainAlgorithm> {
    /// States generated, repeats included.
    pub(crate) generated: usize,
    /// Distinct states.
    pub(crate) unique: usize,
    /// The most steps from the initial state to a state judged.
    pub(crate) steps_deep: usize,
    /// The budget that cut the search short, if one did.
    pub(crate) cut: Option<Cut>,
    /// Threads the search ran on.
    pub(crate) threads: usize,
    /// Each property's path (its counterexample or example), in the order of the run's
    /// properties.
    pub(crate) paths: Vec<Option<Vec<StepOf<A>>>>,
}

/// True for the default search order, which the JSON leaves out.
fn is_breadth_first(search: &Search) -> bool {
    *search == Search::BreadthFirst
}

/// The node that acted last in a path (for a safety violation: the one that just entered).
fn rec_entrant<M, T>(steps: &[Step<M, T>]) -> Option<ringleader_core::NodeId> {
    steps.last().map(|s| match s {
        Step::Request { node, .. } | Step::Timer { node, .. } | Step::Crash(node) | Step::Recover(node) => {
            *node
        }
        Step::Deliver(e) | Step::Drop(e) => e.to,
    })
}

/// The safety detail naming the node that entered last as the entrant.
fn safety_story<A: PlainAlgorithm>(
    m: &CheckModel<A>,
    entrant: &Option<ringleader_core::NodeId>,
    s: &State<A>,
) -> Option<String> {
    let e = (*entrant)?;
    let holders: std::collections::BTreeSet<_> = s
        .nodes
        .iter()
        .enumerate()
        .filter(|(_, v)| v.holding && !v.crashed)
        .map(|(p, _)| p as ringleader_core::NodeId)
        .collect();
    if !holders.contains(&e) {
        return None;
    }
    ringleader_judge::checkers::mutex::other_holder(&holders, e)
        .map(|o| ringleader_judge::checkers::mutex::safety_detail(&m.uids, e, o))
}

struct ExploreVisitor<'a> {
    bounds: Bounds,
    address: &'a str,
    threads: usize,
}

impl PlainVisitor for ExploreVisitor<'_> {
    type Output = Result<(), CheckError>;
    fn visit<A: PlainAlgorithm>(self) -> Self::Output {
        let model = CheckModel::<A>::new(self.bounds)?.unlatched();
        std::net::TcpListener::bind(self.address)
            .map_err(|source| CheckError::Listen { address: self.address.to_string(), source })?;
        model.checker().threads(self.threads.max(1)).serve(self.address);
        Ok(())
    }
}

/// Opens stateright's web explorer on the model of `algorithm` at `address` (blocks).
pub fn explore(algorithm: &str, bounds: Bounds, address: &str, threads: usize) -> Result<(), CheckError> {
    ringleader_registry::dispatch_plain(algorithm, ExploreVisitor { bounds, address, threads })
        .unwrap_or_else(|| Err(not_checkable(algorithm)))
}

/// Why `--symmetry` does not apply to `algorithm`, and which algorithms it applies to.
fn no_symmetry(algorithm: &str) -> CheckError {
    struct Declares;
    impl PlainVisitor for Declares {
        type Output = bool;
        fn visit<A: PlainAlgorithm>(self) -> bool {
            A::symmetry().is_some()
        }
    }
    let symmetric: Vec<&str> = ringleader_registry::all()
        .iter()
        .map(|i| i.name)
        .filter(|n| ringleader_registry::dispatch_plain(n, Declares).unwrap_or(false))
        .collect();
    CheckError::NoSymmetry { algorithm: algorithm.to_string(), declaring: symmetric.join(", ") }
}

/// How many steps a state has, for [`CheckError::NoSuchStep`].
fn enabled_there(enabled: usize) -> String {
    match enabled {
        0 => "nothing can happen there".to_string(),
        1 => "one step is enabled there: 0".to_string(),
        n => format!("{n} steps are enabled there: 0 to {}", n - 1),
    }
}

/// Why `algorithm` cannot be model-checked: unknown, or its state is not plain data.
pub(crate) fn not_checkable(algorithm: &str) -> CheckError {
    if ringleader_registry::find(algorithm).is_some() {
        CheckError::NotPlain(algorithm.to_string())
    } else {
        let names: Vec<&str> = ringleader_registry::all()
            .iter()
            .map(|i| i.name)
            .filter(|n| ringleader_registry::is_plain(n))
            .collect();
        CheckError::Unknown { algorithm: algorithm.to_string(), known: names.join(", ") }
    }
}

/// Why a model cannot be checked (or explored) as asked.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// No such algorithm.
    #[error("unknown algorithm {algorithm:?}; known: {known}")]
    Unknown {
        /// The name asked for.
        algorithm: String,
        /// The names the checker knows.
        known: String,
    },
    /// The algorithm's state is not plain data.
    #[error(
        "{0:?} cannot be model-checked: its state holds a library engine, not plain data \
         the checker can store and compare; judge it in the simulator (`sim`, `sweep`)"
    )]
    NotPlain(String),
    /// `--nodes` outside what the checker explores.
    #[error("--nodes {0}: the model checker explores 1 to 16 nodes")]
    Nodes(u32),
    /// An initiator or requester position that does not exist.
    #[error("position {position} does not exist (0..{nodes})")]
    NoSuchPosition {
        /// The position.
        position: u32,
        /// The number of nodes.
        nodes: u32,
    },
    /// The algorithm's default graph cannot be built for these bounds.
    #[error(transparent)]
    Topology(#[from] ringleader_algorithms::topology::TopologyError),
    /// The algorithm refused its parameters.
    #[error(transparent)]
    Config(#[from] ringleader_algorithms::ConfigError),
    /// `--depth` with a depth-first search.
    #[error(
        "--depth {0} with a depth-first search: it keeps the first path it finds to a state, which may be \
         longer than {0} steps, and would skip states within them; bound it with --max-states, \
         --max-time or --max-memory, or use --search bfs with --depth"
    )]
    DepthFirstDepth(usize),
    /// `--symmetry` for an algorithm that declares none.
    #[error(
        "--symmetry: {algorithm} declares no symmetry (its rules tell nodes apart, e.g. by comparing ids, so \
         renamed states have different futures); algorithms that declare one: {declaring}"
    )]
    NoSymmetry {
        /// The algorithm.
        algorithm: String,
        /// The algorithms that declare one, comma-separated.
        declaring: String,
    },
    /// A path the search found does not replay to the same states: a handler is not a
    /// deterministic function of its state and input (a defect of the algorithm).
    #[error("a discovered path does not replay (nondeterministic handler?)")]
    NoReplay,
    /// `--symmetry` with the sleep-set search.
    #[error(
        "--symmetry with --search por: symmetry reduction runs on the plain depth-first search (give --search dfs, \
         or drop --symmetry)"
    )]
    SymmetryWithSleepSets,
    /// A path by hand names a step that is not enabled where it stands.
    #[error("step {} of the path: there is no step {index} ({})", at + 1, enabled_there(*enabled))]
    NoSuchStep {
        /// Where in the path (0 for its first step).
        at: usize,
        /// The index asked for.
        index: usize,
        /// How many steps were enabled there.
        enabled: usize,
    },
    /// The explorer's address cannot be listened on.
    #[error("--explore {address}: cannot listen there: {source}")]
    Listen {
        /// The address.
        address: String,
        /// Why.
        source: std::io::Error,
    },
}
