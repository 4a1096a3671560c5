//! The cost table: every algorithm under the workload its textbook cost is stated for,
//! measured by the simulator and set beside the formula.
//!
//! - [`formulas`]: the textbook counts as functions of N and the workload;
//! - [`cases`](mod@cases): each algorithm's textbook workload, formula text and judge;
//! - [`measure`]: what a case's judge sees of a run, and what it finds;
//! - [`row`]: running a case and judging its row;
//! - [`render`]: the row list as text, Markdown and JSON.
//!
//! Totals are compared as integers; per-operation values are only for display. A row's verdict
//! is `exact` when the measured total equals the formula's, `within` when the formula is an
//! upper bound and the measured total is below it, and `off` otherwise — a bug in an
//! algorithm, in the simulator or in this table.
//!
//! Runs use the simulator's defaults unless a case says otherwise: constant 1 ms latency, seed
//! 1, no faults. Nothing here reads a clock or iterates a hash map, so the output is the same
//! bytes on every run.

pub mod cases;
pub mod formulas;
pub mod measure;
pub mod render;
pub mod row;

use std::collections::BTreeMap;

use ringleader_algorithms::Family;
use ringleader_sim::SimError;
use ringleader_sim::scenario::ScenarioError;
use serde::Serialize;

pub use cases::{Case, LEFT_OUT, cases};
pub use measure::CostMatch;
pub use row::run_case;

/// The largest size the table takes: beyond it the quadratic cases (the ring's N concurrent
/// elections carrying lists of N ids, N(N−1) heartbeats per period) take minutes in a debug
/// build; `ringleader sim` runs larger ones.
pub const MAX_NODES: u32 = 256;

/// Why the table could not be made.
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    /// The algorithm is one the table leaves out on purpose.
    #[error("{algorithm} has no row: {reason} (see `ringleader table --help`)")]
    LeftOut {
        /// The algorithm asked for.
        algorithm: String,
        /// Why it has no row.
        reason: &'static str,
    },
    /// The algorithm has no case.
    #[error("unknown algorithm {algorithm:?}; the table covers: {covered}")]
    Unknown {
        /// The algorithm asked for.
        algorithm: String,
        /// The algorithms the table covers, comma-separated.
        covered: String,
    },
    /// The algorithm asked for is not in the family asked for.
    #[error("--algo {algorithm} belongs to the {is} family, not to --family {family}")]
    WrongFamily {
        /// The algorithm asked for.
        algorithm: String,
        /// Its family (`?` when unknown).
        is: &'static str,
        /// The family asked for.
        family: &'static str,
    },
    /// No selected case takes any of the sizes asked for.
    #[error("--nodes {sizes}: no selected case runs on these sizes ({algorithm} {reason})")]
    NoSize {
        /// The sizes asked for, comma-separated.
        sizes: String,
        /// The first case skipped.
        algorithm: &'static str,
        /// What it needs.
        reason: &'static str,
    },
    /// A case's run could not be configured.
    #[error(transparent)]
    Config(#[from] ScenarioError),
    /// A case's run failed.
    #[error(transparent)]
    Sim(#[from] SimError),
}

/// Which rows to make.
#[derive(Clone, Debug, Default)]
pub struct Selection {
    /// Only this family's algorithms.
    pub family: Option<Family>,
    /// Only this algorithm.
    pub algorithm: Option<String>,
    /// Sizes to run (empty: each case's default sizes); sizes a case cannot take are skipped.
    pub nodes: Vec<u32>,
}

/// One line of the table.
#[derive(Debug, Serialize)]
pub struct Row {
    /// The `--algo` name.
    pub algorithm: &'static str,
    /// Its family.
    pub family: &'static str,
    /// The textbook workload.
    pub workload: &'static str,
    /// N.
    pub nodes: u32,
    /// The operation the cost is per.
    pub per: &'static str,
    /// Operations completed (over all runs of the row).
    pub operations: u64,
    /// Seeded runs whose numbers were added up.
    pub runs: u64,
    /// The message kind the formula counts, or `all` (every non-detection message).
    pub counted: &'static str,
    /// Measured messages per operation.
    pub measured: f64,
    /// Measured messages over all operations.
    pub measured_total: u64,
    /// What `ringleader sim` prints as `per op` for the same runs: every message but
    /// detection traffic, over the operations the runs report, in the runs' own unit
    /// ([`Row::sim_per`]). It differs from `measured` where the formula counts one kind, or only
    /// the probes of the initiation that found the cycle, or its own operations.
    pub sim_per_operation: f64,
    /// The unit of `sim_per_operation` (the run's `per_operation.unit`).
    pub sim_per: String,
    /// Messages by kind, per operation.
    pub by_kind: BTreeMap<String, f64>,
    /// Detection sends of the runs (heartbeats, ACKs …): never counted, except that the
    /// detector rows count their heartbeats.
    pub detection_total: u64,
    /// The formula, as text.
    pub formula: &'static str,
    /// `=` for an exact cost, `≤` for an upper bound.
    pub relation: &'static str,
    /// The formula's value per operation.
    pub formula_value: f64,
    /// The formula's value over all operations.
    pub formula_total: u64,
    /// `exact`, `within` or `off`.
    pub verdict: CostMatch,
    /// What made the row `off` (empty otherwise).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
    /// The `ringleader sim` command that reproduces the (first) run.
    pub repro: String,
}

/// A size a case could not take.
#[derive(Debug, Serialize)]
pub struct Skipped {
    /// The `--algo` name.
    pub algorithm: &'static str,
    /// The size asked for.
    pub nodes: u32,
    /// What the case needs.
    pub reason: &'static str,
}

/// The finished table.
#[derive(Debug, Serialize)]
pub struct Table {
    /// The rows, in `ringleader list` order, then by size.
    pub rows: Vec<Row>,
    /// The sizes cases could not take.
    pub skipped: Vec<Skipped>,
}

impl Table {
    /// Rows with this verdict.
    pub fn count(&self, verdict: CostMatch) -> usize {
        self.rows.iter().filter(|r| r.verdict == verdict).count()
    }

    /// True when a row is `off`.
    pub fn any_off(&self) -> bool {
        self.count(CostMatch::Off) > 0
    }
}

/// The cases `selection` asks for.
pub fn select(all: &[Case], selection: &Selection) -> Result<Vec<usize>, TableError> {
    let family_of = |name: &str| ringleader_registry::find(name).map(|i| i.family);
    if let Some(name) = &selection.algorithm {
        if let Some((_, why)) = LEFT_OUT.iter().find(|(n, _)| n == name) {
            return Err(TableError::LeftOut { algorithm: name.clone(), reason: why });
        }
        if !all.iter().any(|c| c.algorithm == name) {
            let mut names: Vec<&str> = all.iter().map(|c| c.algorithm).collect();
            names.dedup();
            return Err(TableError::Unknown { algorithm: name.clone(), covered: names.join(", ") });
        }
    }
    let selected: Vec<usize> = all
        .iter()
        .enumerate()
        .filter(|(_, c)| selection.algorithm.as_deref().is_none_or(|a| a == c.algorithm))
        .filter(|(_, c)| selection.family.is_none_or(|f| family_of(c.algorithm) == Some(f)))
        .map(|(i, _)| i)
        .collect();
    if selected.is_empty() {
        let algorithm = selection.algorithm.clone().unwrap_or_default();
        return Err(TableError::WrongFamily {
            is: family_of(&algorithm).map(Family::name).unwrap_or("?"),
            algorithm,
            family: selection.family.map(Family::name).unwrap_or_default(),
        });
    }
    Ok(selected)
}

/// Runs the selected cases on their sizes.
pub fn run(selection: &Selection) -> Result<Table, TableError> {
    let all = cases();
    let mut rows = Vec::new();
    let mut skipped = Vec::new();
    for i in select(&all, selection)? {
        let case = &all[i];
        let sizes: &[u32] = if selection.nodes.is_empty() { case.sizes } else { &selection.nodes };
        for &n in sizes {
            match (case.domain)(n) {
                Ok(()) => rows.push(run_case(case, n)?),
                Err(reason) => skipped.push(Skipped { algorithm: case.algorithm, nodes: n, reason }),
            }
        }
    }
    if rows.is_empty() {
        let s = &skipped[0];
        let list: Vec<String> = selection.nodes.iter().map(u32::to_string).collect();
        return Err(TableError::NoSize { sizes: list.join(","), algorithm: s.algorithm, reason: s.reason });
    }
    Ok(Table { rows, skipped })
}
