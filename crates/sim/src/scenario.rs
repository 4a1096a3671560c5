//! Scenario files and resolved run configurations.
//!
//! A [`Scenario`] is what a person writes (TOML) or what the command-line flags say: every field
//! is optional, and flags override the file field by field. [`Scenario::resolve`] fills in the
//! defaults, checks every value, and yields the [`RunConfig`] the simulator runs. Every flag of
//! `ringleader sim` has a field here and vice versa; [`RunConfig::repro`] writes the flags back.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use rand::seq::SliceRandom;
use rand_xoshiro::Xoshiro256PlusPlus;
use ringleader_core::{Time, Uid};
use serde::{Deserialize, Serialize};

use crate::notation::{At, Latency, Partition, Pause, format_duration, parse_duration};
use crate::topologies::{Shape, ShapeSpec};

/// How uids are laid out over positions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IdArrangement {
    /// Position i holds uid i + 1.
    #[default]
    Ascending,
    /// Position i holds uid N − i (ids decrease along the ring's direction of travel).
    Descending,
    /// A seeded permutation of 1..N.
    Random,
}

impl IdArrangement {
    /// The flag spelling.
    pub fn name(self) -> &'static str {
        match self {
            IdArrangement::Ascending => "ascending",
            IdArrangement::Descending => "descending",
            IdArrangement::Random => "random",
        }
    }

    /// The uids of `n` positions laid out this way (`rng` draws the random permutation).
    pub fn uids(self, n: u32, rng: &mut Xoshiro256PlusPlus) -> Vec<Uid> {
        match self {
            IdArrangement::Ascending => (1..=n as Uid).collect(),
            IdArrangement::Descending => (1..=n as Uid).rev().collect(),
            IdArrangement::Random => {
                let mut v: Vec<Uid> = (1..=n as Uid).collect();
                v.shuffle(rng);
                v
            }
        }
    }
}

/// Which nodes start an election at time 0.
#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Initiators {
    /// Every live node.
    All,
    /// The lowest live uid.
    #[default]
    Lowest,
    /// The highest live uid.
    Highest,
    /// Nobody (elections start from failure detection, or never).
    None,
    /// These uids.
    Ids(Vec<Uid>),
}

impl FromStr for Initiators {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "all" => Ok(Initiators::All),
            "lowest" => Ok(Initiators::Lowest),
            "highest" => Ok(Initiators::Highest),
            "none" => Ok(Initiators::None),
            list => list
                .split(',')
                .map(|x| x.trim().parse::<Uid>())
                .collect::<Result<Vec<_>, _>>()
                .map(Initiators::Ids)
                .map_err(|_| {
                    format!("initiators {s:?}: expected all, lowest, highest, none, or ids like 3 or 1,4")
                }),
        }
    }
}

impl fmt::Display for Initiators {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Initiators::All => f.write_str("all"),
            Initiators::Lowest => f.write_str("lowest"),
            Initiators::Highest => f.write_str("highest"),
            Initiators::None => f.write_str("none"),
            Initiators::Ids(v) => f.write_str(&v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(",")),
        }
    }
}

impl From<Initiators> for String {
    fn from(i: Initiators) -> String {
        i.to_string()
    }
}

impl TryFrom<String> for Initiators {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

/// A time written with a unit (`250us`, `1.5ms`, `2s`; bare numbers are ms).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct TimeSpan(pub Time);

impl FromStr for TimeSpan {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        parse_duration(s).map(TimeSpan).ok_or_else(|| {
            format!("cannot read {s:?} as a time (use 250us, 1.5ms, 2s, 5min, 24h; a bare number is ms)")
        })
    }
}

impl From<TimeSpan> for String {
    fn from(d: TimeSpan) -> String {
        format_duration(d.0)
    }
}

impl TryFrom<String> for TimeSpan {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

/// Mutual-exclusion request patterns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WorkloadKind {
    /// One request at a time, no overlap, requesters round-robin from node 1.
    Sequential,
    /// Every node always wants the critical section.
    Saturated,
    /// Each node requests at `rate` per second; hold times are exponential with mean `hold`.
    Poisson,
    /// Clock workloads: each node has local events and sends (to `fanout` random peers) at
    /// `rate` per second, `entries` events in all (see `workload::clock`).
    Messages,
}

impl WorkloadKind {
    /// The flag spelling.
    pub fn name(self) -> &'static str {
        match self {
            WorkloadKind::Sequential => "sequential",
            WorkloadKind::Saturated => "saturated",
            WorkloadKind::Poisson => "poisson",
            WorkloadKind::Messages => "messages",
        }
    }
}

/// `[network]`: the network model.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkSection {
    /// One-way latency distribution.
    pub latency: Option<Latency>,
    /// Probability a message is lost.
    pub loss: Option<f64>,
    /// Probability a message is delivered twice.
    pub dup: Option<f64>,
    /// FIFO per link.
    pub fifo: Option<bool>,
    /// The delay bound algorithms may assume (Ttrans); default: the latency's bound.
    pub max_delay: Option<TimeSpan>,
}

/// `[faults]`: the time-stamped fault plan.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultsSection {
    /// `ID@TIME` crashes.
    #[serde(default)]
    pub crash: Vec<At>,
    /// `ID@TIME` recoveries.
    #[serde(default)]
    pub recover: Vec<At>,
    /// `ID@FROM..TO` pauses.
    #[serde(default)]
    pub pause: Vec<Pause>,
    /// `A,B|C,D@FROM..TO` partitions.
    #[serde(default)]
    pub partition: Vec<Partition>,
}

/// `[workload]`: what the application asks.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadSection {
    /// Request pattern (mutual exclusion).
    pub kind: Option<WorkloadKind>,
    /// Total critical-section entries to request.
    pub entries: Option<u64>,
    /// Critical-section duration (mean, under `poisson`).
    pub hold: Option<TimeSpan>,
    /// Requests per second per node (`poisson`).
    pub rate: Option<f64>,
    /// Which nodes make requests (uids); default: all (all but node 0 under `sequential`).
    pub requesters: Option<Initiators>,
    /// Deadlock workload: probability that a request closes a wait-for cycle [default 0.3].
    pub cycles: Option<f64>,
    /// Destinations of each send event (`messages` workload of clock runs) [default 1].
    pub fanout: Option<u32>,
    /// Deadlock workload: the most holders one request waits for [default 2; 1 for
    /// chandy-misra-haas].
    pub holders: Option<u32>,
}

/// `[clocks]`: physical clocks of the simulated nodes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClocksSection {
    /// Each node's initial offset is drawn uniformly from ±this (around a common base of +this,
    /// so that no clock reads below zero): clocks start up to twice this apart.
    pub offset: Option<TimeSpan>,
    /// Each node's drift is drawn uniformly from ±this many parts per million.
    pub drift_ppm: Option<u32>,
    /// How fast a clock correction is slewed in, in ppm (default 500, the `adjtime` rate).
    pub slew_ppm: Option<u32>,
    /// Whether a forward correction steps at once instead of slewing (default false; a
    /// backward correction always slews).
    pub step_forward: Option<bool>,
}

/// `[expect]`: what a flaw-demonstrating scenario expects to find.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectSection {
    /// Properties that must be violated (and no others).
    #[serde(default)]
    pub violations: Vec<String>,
}

/// A scenario file, or the command-line flags: everything optional, merged field by field.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// A title.
    pub name: Option<String>,
    /// What the scenario shows (printed with the result).
    pub description: Option<String>,
    /// `--algo`.
    pub algorithm: Option<String>,
    /// `--nodes`.
    pub nodes: Option<u32>,
    /// `--seed`.
    pub seed: Option<u64>,
    /// `--ids`.
    pub ids: Option<IdArrangement>,
    /// `--initiators`.
    pub initiators: Option<Initiators>,
    /// `--duration`: stop runs that never go quiet.
    pub duration: Option<TimeSpan>,
    /// `--edges`: edge count of a random connected graph (`--graph random`).
    pub edges: Option<u64>,
    /// `--graph`: the communication graph, for algorithms that run on arbitrary graphs or trees
    /// (`random`, `grid`, `tree`, `line`, `star`, `random-tree`, `file:PATH`). A relative
    /// `file:` path in a scenario file is read from the scenario's directory.
    pub graph: Option<ShapeSpec>,
    /// `--param key=value`.
    #[serde(default)]
    pub params: BTreeMap<String, toml::Value>,
    /// Network model.
    #[serde(default)]
    pub network: NetworkSection,
    /// Fault plan.
    #[serde(default)]
    pub faults: FaultsSection,
    /// Workload.
    #[serde(default)]
    pub workload: WorkloadSection,
    /// Physical clocks.
    #[serde(default)]
    pub clocks: ClocksSection,
    /// Expected violations.
    #[serde(default)]
    pub expect: ExpectSection,
    /// The file this scenario was read from, so that a bad value is reported at its line.
    #[serde(skip)]
    pub origin: Option<Origin>,
    /// Fields (`loss`, `network.loss` …) whose value came from flags overriding the file.
    #[serde(skip)]
    pub overridden: BTreeSet<String>,
}

/// Where a scenario's values came from, so that an error can point into the file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Origin {
    /// The file, as the user named it.
    pub path: String,
    /// Its text.
    pub text: String,
}

impl Origin {
    /// 1-based (line, column) of field `key` (`leaf` or `section.leaf`), or of `element` inside
    /// its value when the element is written there as a string.
    pub fn locate(&self, key: &str, element: Option<&str>) -> Option<(usize, usize)> {
        let (section, leaf) = key.rsplit_once('.').unwrap_or(("", key));
        let mut current = String::new();
        let mut offset = 0;
        let mut found = None;
        for line in self.text.split_inclusive('\n') {
            let t = line.trim();
            if t.starts_with('[') {
                current = t.trim_matches(|c| c == '[' || c == ']').trim().to_string();
            } else if current == section
                && let Some((k, _)) = line.split_once('=')
                && k.trim().trim_matches('"') == leaf
            {
                let eq = k.len() + 1;
                let spaces = line[eq..].len() - line[eq..].trim_start().len();
                found = Some(offset + eq + spaces);
                break;
            }
            offset += line.len();
        }
        let mut at = found?;
        if let Some(e) = element
            && let Some(i) = self.text[at..].find(&format!("\"{e}\""))
        {
            at += i;
        }
        let before = &self.text[..at];
        let line = before.matches('\n').count() + 1;
        let column = before[before.rfind('\n').map_or(0, |i| i + 1)..].chars().count() + 1;
        Some((line, column))
    }
}

/// A scenario or configuration problem, said in one line.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not valid, with its position.
    #[error("{path}:{line}:{column}: {message}")]
    Parse {
        /// The file.
        path: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What is wrong and what is allowed.
        message: String,
    },
    /// A value given as a flag (or a default the flags make impossible) is out of range or
    /// inconsistent: `--loss 1.5: a probability must be between 0 and 1`.
    #[error("{flag} {value}: {reason}")]
    Flag {
        /// The flag, `--loss`.
        flag: String,
        /// The value, as the user wrote it or as the run shows it.
        value: String,
        /// What is wrong and what is allowed.
        reason: String,
    },
    /// Neither `--algo` nor the scenario names an algorithm.
    #[error(
        "no algorithm: give --algo NAME or `algorithm = \"NAME\"` in the scenario (see `ringleader list`)"
    )]
    NoAlgorithm,
    /// No algorithm has this name.
    #[error("unknown algorithm {name:?}; known: {}", known.join(", "))]
    UnknownAlgorithm {
        /// The name asked for.
        name: String,
        /// Every algorithm's name.
        known: Vec<&'static str>,
    },
    /// `--expect` names no property.
    #[error("expected violation {name:?} is not a property; known: {}", known.join(", "))]
    UnknownProperty {
        /// The name given.
        name: String,
        /// Every property's name.
        known: &'static [&'static str],
    },
    /// The `--graph` edge-list file cannot be read or is not an edge list.
    #[error(transparent)]
    GraphFile(#[from] crate::topologies::GraphFileError),
    /// The algorithm cannot run on the chosen graph.
    #[error(transparent)]
    Shape(Box<crate::topologies::ShapeError>),
}

impl From<crate::topologies::ShapeError> for ScenarioError {
    fn from(e: crate::topologies::ShapeError) -> Self {
        ScenarioError::Shape(Box::new(e))
    }
}

/// The default `--duration`: one hour of virtual time (a million-node ring needs about 2,000 s).
pub const DEFAULT_DURATION: Time = 3_600_000_000_000;

/// The default `--duration` of failure detectors, whose heartbeats never stop: 10 s.
pub const DETECTOR_DURATION: Time = 10_000_000_000;

/// Who starts an election at time 0 unless told: the lowest id in an election, nobody else.
pub fn default_initiators(family: ringleader_algorithms::Family) -> Initiators {
    match family {
        ringleader_algorithms::Family::Election => Initiators::Lowest,
        _ => Initiators::None,
    }
}

/// The virtual-time limit unless told.
pub fn default_duration(family: ringleader_algorithms::Family) -> Time {
    match family {
        // Heartbeats never go quiet: a detector run stops after 10 s unless told.
        ringleader_algorithms::Family::Detector => DETECTOR_DURATION,
        _ => DEFAULT_DURATION,
    }
}

impl Scenario {
    /// Reads and parses a scenario file.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| ScenarioError::Io { path: path.display().to_string(), source })?;
        let mut scenario = Scenario::parse(&text, &path.display().to_string())?;
        if let Some(ShapeSpec::File(file)) = &mut scenario.graph
            && file.is_relative()
            && let Some(dir) = path.parent()
        {
            *file = dir.join(&*file);
        }
        Ok(scenario)
    }

    /// Parses scenario text; errors name `origin`, the line, the column and the field.
    pub fn parse(text: &str, origin: &str) -> Result<Scenario, ScenarioError> {
        let scenario: Result<Scenario, _> = toml::from_str(text);
        scenario
            .map(|s| Scenario { origin: Some(Origin { path: origin.into(), text: text.into() }), ..s })
            .map_err(|e| {
                let (line, column) = match e.span() {
                    Some(span) => {
                        let before = &text[..span.start.min(text.len())];
                        let line = before.matches('\n').count() + 1;
                        let column = before.len() - before.rfind('\n').map(|i| i + 1).unwrap_or(0) + 1;
                        (line, column)
                    }
                    None => (1, 1),
                };
                let line_text = text.lines().nth(line - 1).unwrap_or("");
                let field = line_text
                    .split_once('=')
                    .map(|(k, _)| k.trim().trim_matches('"'))
                    .filter(|k| !k.is_empty() && !k.starts_with('['));
                let message = e.message().trim().replace('\n', " ");
                let message = match field {
                    Some(f) if !message.contains(&format!("`{f}`")) => format!("field `{f}`: {message}"),
                    _ => message,
                };
                ScenarioError::Parse { path: origin.into(), line, column, message }
            })
    }

    /// Overlays `flags` on `self`: every field the flags set wins (a list when it is not
    /// empty; `params` key by key) and is recorded in [`Scenario::overridden`]. The fields are
    /// listed here one by one; `settings::tests::a_merge_takes_every_field_the_flags_set`
    /// fails when a field of the structs above or a setting of the table is missing.
    pub fn merge(mut self, flags: Scenario) -> Scenario {
        macro_rules! take {
            ($($f:ident).+) => { if flags.$($f).+.is_some() {
                self.overridden.insert([$(stringify!($f)),+].join("."));
                self.$($f).+ = flags.$($f).+;
            } };
        }
        macro_rules! take_list {
            ($($f:ident).+) => { if !flags.$($f).+.is_empty() {
                self.overridden.insert([$(stringify!($f)),+].join("."));
                self.$($f).+ = flags.$($f).+;
            } };
        }
        take!(name);
        take!(description);
        take!(algorithm);
        take!(nodes);
        take!(seed);
        take!(ids);
        take!(initiators);
        take!(duration);
        take!(edges);
        take!(graph);
        self.params.extend(flags.params);
        take!(network.latency);
        take!(network.loss);
        take!(network.dup);
        take!(network.fifo);
        take!(network.max_delay);
        take_list!(faults.crash);
        take_list!(faults.recover);
        take_list!(faults.pause);
        take_list!(faults.partition);
        take!(workload.kind);
        take!(workload.entries);
        take!(workload.hold);
        take!(workload.rate);
        take!(workload.requesters);
        take!(workload.cycles);
        take!(workload.fanout);
        take!(workload.holders);
        take!(clocks.offset);
        take!(clocks.drift_ppm);
        take!(clocks.slew_ppm);
        take!(clocks.step_forward);
        take_list!(expect.violations);
        self
    }
}

/// Everything one run needs, with defaults filled in and values checked.
#[derive(Clone, Debug, PartialEq)]
pub struct RunConfig {
    /// Scenario title.
    pub name: Option<String>,
    /// Scenario description.
    pub description: Option<String>,
    /// Algorithm name.
    pub algorithm: String,
    /// Number of nodes.
    pub nodes: u32,
    /// PRNG seed.
    pub seed: u64,
    /// Uid arrangement.
    pub ids: IdArrangement,
    /// Election initiators at time 0.
    pub initiators: Initiators,
    /// Virtual-time limit.
    pub duration: Time,
    /// Random graph edge count (`--graph random`).
    pub edges: Option<u64>,
    /// The communication graph the run chose; `None`: the algorithm's default (a random
    /// connected graph for graph algorithms, a balanced binary tree for tree algorithms).
    pub graph: Option<Shape>,
    /// Algorithm parameters.
    pub params: BTreeMap<String, String>,
    /// Latency distribution.
    pub latency: Latency,
    /// Loss probability.
    pub loss: f64,
    /// Duplication probability.
    pub dup: f64,
    /// FIFO links.
    pub fifo: bool,
    /// Delay bound the algorithms may assume.
    pub max_delay: Time,
    /// Whether `max_delay` was given explicitly.
    pub max_delay_given: bool,
    /// Crashes.
    pub crash: Vec<At>,
    /// Recoveries.
    pub recover: Vec<At>,
    /// Pauses.
    pub pause: Vec<Pause>,
    /// Partitions.
    pub partition: Vec<Partition>,
    /// Mutual-exclusion workload.
    pub workload: Option<WorkloadKind>,
    /// Entries to request.
    pub entries: u64,
    /// Critical-section hold time.
    pub hold: Time,
    /// Poisson rate per node per second.
    pub rate: f64,
    /// Uids that make requests (`None`: the workload's default).
    pub requesters: Option<Vec<Uid>>,
    /// Deadlock workload: probability that a request closes a cycle.
    pub cycles: f64,
    /// Destinations of each send event (the `messages` workload of clock runs).
    pub fanout: u32,
    /// The most holders one request waits for (deadlock workload).
    pub holders: u32,
    /// Maximum initial clock offset.
    pub clock_offset: Time,
    /// Maximum drift in ppm.
    pub clock_drift_ppm: u32,
    /// How fast clock corrections are slewed in, in ppm.
    pub clock_slew_ppm: u32,
    /// Whether forward clock corrections step at once.
    pub clock_step_forward: bool,
    /// Expected violations.
    pub expect: BTreeSet<String>,
    /// The scenario file, if any.
    pub source: Option<PathBuf>,
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;

    #[test]
    fn arrangements_are_permutations() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        assert_eq!(IdArrangement::Descending.uids(4, &mut rng), vec![4, 3, 2, 1]);
        let mut r = IdArrangement::Random.uids(50, &mut rng);
        r.sort();
        assert_eq!(r, (1..=50).collect::<Vec<_>>());
    }

    #[test]
    fn unknown_fields_are_named_with_their_line() {
        let err = Scenario::parse("algorithm = \"central\"\nnodes = 3\nbogus = 1\n", "x.toml")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("x.toml:3:"), "{err}");
        assert!(err.contains("bogus"), "{err}");
        assert!(err.contains("expected one of"), "{err}");
    }

    #[test]
    fn bad_values_name_the_field() {
        let err = Scenario::parse("[faults]\ncrash = [\"3@soon\"]\n", "f.toml").unwrap_err().to_string();
        assert!(err.starts_with("f.toml:2:"), "{err}");
        assert!(err.contains("crash"), "{err}");
        let err = Scenario::parse("nodes = \"many\"\n", "n.toml").unwrap_err().to_string();
        assert!(err.contains("nodes"), "{err}");
    }

    #[test]
    fn flags_override_the_file() {
        let file = Scenario::parse("algorithm = \"central\"\nnodes = 3\nseed = 9\n", "s").unwrap();
        let flags = Scenario { nodes: Some(7), ..Scenario::default() };
        let cfg = file.merge(flags).resolve(None).unwrap();
        assert_eq!((cfg.nodes, cfg.seed), (7, 9));
    }

    #[test]
    fn resolve_rejects_what_cannot_run() {
        assert!(RunConfig::new("nope", 3).unwrap_err().to_string().contains("unknown algorithm"));
        assert!(RunConfig::new("central", 0).unwrap_err().to_string().contains("at least 1"));
        let s = Scenario {
            algorithm: Some("central".into()),
            nodes: Some(3),
            faults: FaultsSection { crash: vec!["9@0".parse().unwrap()], ..Default::default() },
            ..Default::default()
        };
        assert_eq!(
            s.resolve(None).unwrap_err().to_string(),
            "--crash 9@0: node id 9 does not exist (ids are 1..3)"
        );
    }

    #[test]
    fn a_node_id_that_does_not_exist_is_blamed_on_its_line() {
        let text =
            "algorithm = \"central\"\nnodes = 3\n\n[faults]\npause = [\"2@1ms..2ms\", \"4@1ms..5ms\"]\n";
        let err = Scenario::parse(text, "s.toml").unwrap().resolve(None).unwrap_err().to_string();
        assert_eq!(err, "s.toml:5:24: field `pause` = 4@1ms..5ms: node id 4 does not exist (ids are 1..3)");
        let text = "algorithm = \"central\"\nnodes = 3\n[workload]\nrequesters = \"2,7\"\n";
        let err = Scenario::parse(text, "s.toml").unwrap().resolve(None).unwrap_err().to_string();
        assert_eq!(err, "s.toml:4:14: field `requesters` = 2,7: node id 7 does not exist (ids are 1..3)");
        // A flag that overrides the file is blamed as the flag.
        let flags = Scenario { nodes: Some(1), ..Scenario::default() };
        let err =
            Scenario::parse(text, "s.toml").unwrap().merge(flags).resolve(None).unwrap_err().to_string();
        assert!(err.starts_with("s.toml:4:14: field `requesters`"), "{err}");
    }

    #[test]
    fn graph_choices_are_checked_named_and_written_back() {
        let err =
            Scenario::parse("algorithm = \"yoyo\"\ngraph = \"hexagon\"\n", "g.toml").unwrap_err().to_string();
        assert!(
            err.starts_with("g.toml:2:9: field `graph`: unknown shape \"hexagon\"; allowed: random, grid"),
            "{err}"
        );
        let cfg = |text: &str| Scenario::parse(text, "s").unwrap().resolve(None);
        let grid = cfg("algorithm = \"yoyo\"\nnodes = 9\ngraph = \"grid\"\n").unwrap();
        assert_eq!(grid.graph, Some(Shape::Grid));
        assert!(grid.repro().contains(" --graph grid"), "{}", grid.repro());
        // The algorithm's own default is no choice: nothing to report or write back.
        let random = cfg("algorithm = \"yoyo\"\nnodes = 9\ngraph = \"random\"\nedges = 12\n").unwrap();
        assert_eq!(random.graph, None);
        assert!(!random.repro().contains("--graph") && random.repro().contains("--edges 12"));
        assert_eq!(cfg("algorithm = \"raymond\"\ngraph = \"tree\"\n").unwrap().graph, None);
        let err = cfg("algorithm = \"ring\"\ngraph = \"line\"\n").unwrap_err().to_string();
        assert_eq!(err, "--graph line: ring runs on a ring and takes no --graph");
        // Flags override the file's shape.
        let file = Scenario::parse("algorithm = \"yoyo\"\nnodes = 9\ngraph = \"grid\"\n", "s").unwrap();
        let flags = Scenario { graph: Some(ShapeSpec::Star), ..Scenario::default() };
        assert_eq!(file.merge(flags).resolve(None).unwrap().graph, Some(Shape::Star));
    }

    #[test]
    fn a_relative_edge_list_is_read_beside_the_scenario() {
        let dir = std::env::temp_dir().join(format!("ringleader-scenario-graph-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("graphs")).unwrap();
        std::fs::write(dir.join("graphs/path.txt"), "# a path\n1 2\n2 3\n\n3 4  # last\n").unwrap();
        std::fs::write(
            dir.join("s.toml"),
            "algorithm = \"raymond\"\nnodes = 4\ngraph = \"file:graphs/path.txt\"\n",
        )
        .unwrap();
        let cfg = Scenario::load(&dir.join("s.toml")).unwrap().resolve(None).unwrap();
        let Some(Shape::File(list)) = &cfg.graph else { panic!("{:?}", cfg.graph) };
        assert_eq!(list.path, dir.join("graphs/path.txt"));
        assert_eq!(list.edges, vec![(0, 1), (1, 2), (2, 3)]);
        assert!(cfg.repro().contains(&format!(" --graph file:{}", dir.join("graphs/path.txt").display())));
        // Five nodes: position 5 is on no line of the file.
        let flags = Scenario { nodes: Some(5), ..Scenario::default() };
        let err =
            Scenario::load(&dir.join("s.toml")).unwrap().merge(flags).resolve(None).unwrap_err().to_string();
        assert!(err.ends_with("path.txt: the graph is not connected (position 5 cannot reach 1)"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
