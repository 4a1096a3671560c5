//! Property checkers: the simulator's global view, judged after every step.
//!
//! A checker sees every observable [`Event`], every application [`Request`] and every fault,
//! with the global knowledge no process has (who is really alive, who really holds the section).
//! Each family has one checker; it records the *first* violation of each property with its time,
//! step and a short explanation, and keeps the violation window open until the bad condition
//! ends (the Mermaid diagram draws that window as a red rectangle).

pub mod clock;
pub mod deadlock;
pub mod detector;
pub mod election;
pub mod linearizable;
pub mod mutex;
pub mod property;
pub mod superpeer;

pub use property::Property;

use std::collections::BTreeMap;

use ringleader_algorithms::{Family, Info, LeaderRule};
use ringleader_core::{Event, NodeId, Request, Time, Uid};
use serde::Serialize;

use crate::outcome::Outcome;

/// Every property name any checker may report (what `expect.violations` may name).
pub const ALL_PROPERTIES: &[&str] = &property::NAMES;

/// Whether a node is up, crashed or paused, as the simulator knows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeStatus {
    /// Running.
    Up,
    /// Crashed: receives nothing until it recovers.
    Crashed,
    /// Paused: alive but slow; its inputs wait until it resumes.
    Paused,
}

/// The global view a checker may consult.
#[derive(Clone, Copy, Debug)]
pub struct World<'a> {
    /// Uid of every position.
    pub uids: &'a [Uid],
    /// The status of every position.
    pub status: &'a [NodeStatus],
    /// What validity demands of an election.
    pub rule: LeaderRule,
}

impl World<'_> {
    /// True unless `node` is crashed (a paused node is alive).
    pub fn alive(&self, node: NodeId) -> bool {
        self.status[node as usize] != NodeStatus::Crashed
    }
}

/// When something happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Moment {
    /// Virtual time.
    pub time: Time,
    /// Step number.
    pub step: u64,
}

/// A property found violated.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Violation {
    /// The property.
    pub property: Property,
    /// Virtual time, in ms.
    pub time: f64,
    /// Step at which it was found.
    pub step: u64,
    /// What went wrong.
    pub detail: String,
    /// The step at which the bad condition ended, if it did.
    #[serde(skip)]
    pub until_step: Option<u64>,
    /// Virtual time in ns.
    #[serde(skip)]
    pub time_ns: Time,
}

/// An eventual property the run ended too early to decide: something it promises was still
/// pending when the run was cut off at `--duration`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Undecided {
    /// The property.
    pub property: Property,
    /// What was still pending, and since when.
    pub detail: String,
    /// When the pending condition began, in ms (the run was cut off at its end).
    pub since: f64,
}

/// The first violation of each property, and the eventual properties left undecided.
#[derive(Clone, Debug, Default)]
pub struct Violations {
    list: Vec<Violation>,
    undecided: Vec<Undecided>,
    cut_off: bool,
}

impl Violations {
    /// Records a violation of `property` unless one is already recorded.
    pub fn record(&mut self, property: Property, at: Moment, detail: impl FnOnce() -> String) {
        if !self.list.iter().any(|v| v.property == property) {
            self.list.push(Violation {
                property,
                time: at.time as f64 / 1e6,
                step: at.step,
                detail: detail(),
                until_step: None,
                time_ns: at.time,
            });
        }
    }

    /// Marks the end of the bad condition of `property`'s first violation.
    pub fn close(&mut self, property: Property, at: Moment) {
        if let Some(v) = self.list.iter_mut().find(|v| v.property == property && v.until_step.is_none()) {
            v.until_step = Some(at.step);
        }
    }

    /// True when `property` was violated.
    pub fn has(&self, property: Property) -> bool {
        self.list.iter().any(|v| v.property == property)
    }

    /// The violations, in the order they were found.
    pub fn list(&self) -> &[Violation] {
        &self.list
    }

    /// How many were recorded so far.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// True when none was recorded.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Says whether the run was cut off (at `--duration`) rather than over: set by the driver
    /// before [`Checker::finish`]. After a cut-off, an eventual property whose promise is still
    /// pending is *undecided*, not violated: a longer run might have kept it.
    pub fn set_cut_off(&mut self, cut_off: bool) {
        self.cut_off = cut_off;
    }

    /// True when the run was cut off before it was over.
    pub fn cut_off(&self) -> bool {
        self.cut_off
    }

    /// An eventual property's promise is still pending at the end of the run (since `since`):
    /// a violation when the run is over (quiescent: nothing left could keep the promise), an
    /// undecided property when it was cut off.
    pub fn pending(&mut self, property: Property, at: Moment, since: Time, detail: impl FnOnce() -> String) {
        if self.cut_off {
            if !self.has(property) && !self.undecided.iter().any(|u| u.property == property) {
                self.undecided.push(Undecided { property, detail: detail(), since: since as f64 / 1e6 });
            }
        } else {
            self.record(property, at, detail);
        }
    }

    /// `property` could not be decided for a reason other than a cut-off (a search ran out of
    /// its budget): undecided whether or not the run was cut off, unless already violated.
    pub fn undecided_because(&mut self, property: Property, since: Time, detail: impl FnOnce() -> String) {
        if !self.has(property) && !self.undecided.iter().any(|u| u.property == property) {
            self.undecided.push(Undecided { property, detail: detail(), since: since as f64 / 1e6 });
        }
    }

    /// The eventual properties left undecided (none is also violated).
    pub fn undecided(&self) -> &[Undecided] {
        &self.undecided
    }

    /// The undecided entry of `property`, if any.
    pub fn undecided_of(&self, property: Property) -> Option<&Undecided> {
        self.undecided.iter().find(|u| u.property == property)
    }
}

/// Latency summary, in ms: exact count, min, max and mean; quantiles from a histogram of 3
/// significant digits, clamped to [min, max].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Percentiles {
    /// Samples.
    pub count: u64,
    /// Minimum (exact).
    pub min: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Maximum (exact).
    pub max: f64,
    /// Mean (exact).
    pub mean: f64,
}

/// A latency recorder: exact count, min, max and sum, and a histogram for the quantiles (ns,
/// 3 significant digits, up to 10,000 s; longer samples saturate the histogram only).
#[derive(Clone, Debug)]
pub struct Latencies {
    histogram: hdrhistogram::Histogram<u64>,
    count: u64,
    min: Time,
    max: Time,
    sum: u128,
}

impl Default for Latencies {
    fn default() -> Self {
        Latencies {
            histogram: hdrhistogram::Histogram::new_with_bounds(1, 10_000_000_000_000, 3)
                .expect("valid bounds"),
            count: 0,
            min: Time::MAX,
            max: 0,
            sum: 0,
        }
    }
}

impl Latencies {
    /// Records one sample in ns.
    pub fn record(&mut self, ns: Time) {
        self.histogram.saturating_record(ns);
        self.count += 1;
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
        self.sum += u128::from(ns);
    }

    /// The summary, or `None` without samples. Quantiles come from the histogram (within 0.1 %)
    /// but never leave the exact [min, max].
    pub fn summary(&self) -> Option<Percentiles> {
        (self.count > 0).then(|| {
            let q = |x: f64| self.histogram.value_at_quantile(x).clamp(self.min, self.max) as f64 / 1e6;
            Percentiles {
                count: self.count,
                min: self.min as f64 / 1e6,
                p50: q(0.5),
                p90: q(0.9),
                p99: q(0.99),
                max: self.max as f64 / 1e6,
                mean: (self.sum as f64 / self.count as f64) / 1e6,
            }
        })
    }
}

/// What a family checker adds to the run report.
#[derive(Clone, Debug)]
pub struct FamilyReport {
    /// What the run ended with (`leader`, `agreed`; `entries`, `max_concurrent_holders` …).
    pub outcome: Outcome,
    /// Operations performed (elections won, critical-section entries …).
    pub operations: u64,
    /// Operations begun and not completed when the run stopped: critical-section requests
    /// still waiting, an election under way. 0 in families whose operation is counted when it
    /// begins (a clock's sync, a deadlock request) or cannot be told begun (a detection).
    pub unfinished: u64,
    /// Named latency summaries.
    pub latencies: BTreeMap<String, Percentiles>,
}

/// A family's property checker.
pub trait Checker {
    /// The properties this checker judges, in report order.
    fn properties(&self) -> Vec<Property>;
    /// A node reported `event`.
    fn on_event(&mut self, w: &World, node: NodeId, event: &Event, at: Moment, v: &mut Violations);
    /// A live node received an application request.
    fn on_request(&mut self, _w: &World, _node: NodeId, _req: &Request, _at: Moment, _v: &mut Violations) {}
    /// `node` crashed (the world already says so).
    fn on_crash(&mut self, _w: &World, _node: NodeId, _at: Moment, _v: &mut Violations) {}
    /// `node` recovered.
    fn on_recover(&mut self, _w: &World, _node: NodeId, _at: Moment, _v: &mut Violations) {}
    /// How often (virtual time) the engine hands this checker every node's local clock reading
    /// through [`Checker::on_clocks`]. `None`, the default, costs the engine nothing.
    fn clock_sample_period(&self) -> Option<Time> {
        None
    }
    /// Every node's local clock reading (by position) at virtual time `at.time`.
    fn on_clocks(&mut self, _w: &World, _readings: &[Time], _at: Moment, _v: &mut Violations) {}
    /// The run is over (quiescent or out of time): judge end-state properties.
    fn finish(&mut self, w: &World, at: Moment, v: &mut Violations);
    /// Outcome, operation count and latencies.
    fn report(&self, w: &World) -> FamilyReport;
}

/// A checker for `family` on `n` nodes.
pub fn for_family(family: Family, n: usize) -> Box<dyn Checker + Send> {
    match family {
        Family::Election => Box::new(election::ElectionChecker::new(n)),
        Family::Mutex => Box::new(mutex::MutexChecker::new(n)),
        Family::Clock => Box::new(clock::ClockChecker::new(n)),
        Family::Deadlock => Box::new(deadlock::DeadlockChecker::new(n)),
        Family::Detector => Box::new(detector::DetectorChecker::new(n)),
    }
}

/// The checker for algorithm `info` on `n` nodes: the super-peer checker for algorithms that
/// elect a set ([`LeaderRule::Set`]), the mutual-exclusion checker plus `linearizable` for the
/// lock service, the family's checker otherwise.
pub fn for_algorithm(info: &Info, n: usize) -> Box<dyn Checker + Send> {
    if info.leader_rule == LeaderRule::Set {
        Box::new(superpeer::SuperPeerChecker::new(n))
    } else if info.linearizable {
        Box::new(linearizable::LinearizableChecker::new(mutex::MutexChecker::new(n)))
    } else if info.prevention {
        Box::new(deadlock::DeadlockChecker::for_prevention(n))
    } else {
        for_family(info.family, n)
    }
}
