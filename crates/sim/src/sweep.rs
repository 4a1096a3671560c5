//! Sweeps: one configuration (or several) over a range of seeds, on every core.
//!
//! A sweep is the researcher's unit of evidence: not "this run elected 8" but "over 10,000 seeds
//! the election took between 5 and 41 messages, and `agreement` never failed". [`run`] runs each
//! (configuration, seed) pair as an ordinary simulator run, in parallel on a rayon pool of the
//! requested size, and keeps one small [`RunRecord`] per run. The summary ([`SweepOutput`]) is computed from
//! the records *sorted by configuration and seed*, never from the order runs finished in, so its
//! content does not depend on the thread count.
//!
//! Large sweeps split across machines with a [`Shard`]: shard `i/k` runs the seeds whose index
//! in the range is `i` modulo `k`. Each shard's [`SweepOutput`] carries its records, and
//! [`merge`] unions shards into the output a single machine would have produced (the records
//! are the evidence; the summary is a pure function of them).
//!
//! Per-run figures kept: messages sent (all kinds, detection included; when some are failure
//! detection, `messages_detection` and `messages_algorithm` apart), the messages per operation
//! (`messages_per_election`, `messages_per_entry` …: the run's `per_operation`, as `ringleader
//! table` counts it; on a run cut off with operations under way, also
//! `messages_per_<unit>_incl_unfinished` counting them as operations and
//! `operations_unfinished`, so the true cost lies between the two), events, every latency
//! the family's checker measures (time to leader, entry latency, detection time …) as the run's
//! mean in ms, and every numeric field of the outcome (clock skew before and after, entries,
//! aborts …). Distributions report min, p50, p99 (nearest rank) and max, plus the mean.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::str::FromStr;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::{RunConfig, RunOptions, SimError};

/// How many failing seeds' repro lines a summary keeps per property.
pub const FIRST_FAILURES: usize = 5;

/// One part of a sweep split across machines: seeds whose index in the range is `index` mod `count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// This shard, `0..count`.
    pub index: u64,
    /// How many shards in total.
    pub count: u64,
}

impl FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("shard {s:?}: expected I/K with 0 <= I < K, e.g. 0/4");
        let (i, k) = s.split_once('/').ok_or_else(bad)?;
        let index: u64 = i.trim().parse().map_err(|_| bad())?;
        let count: u64 = k.trim().parse().map_err(|_| bad())?;
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// An inclusive range of seeds, `FIRST..LAST`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seeds {
    /// First seed.
    pub first: u64,
    /// Last seed (included).
    pub last: u64,
}

impl Seeds {
    /// How many seeds.
    pub fn len(&self) -> u64 {
        self.last - self.first + 1
    }

    /// Never empty (`first <= last` is checked when parsed).
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The seeds of `shard` (all of them without one), in increasing order.
    pub fn of_shard(&self, shard: Option<Shard>) -> impl Iterator<Item = u64> + '_ {
        let (i, k) = shard.map_or((0, 1), |s| (s.index, s.count));
        (self.first..=self.last).filter(move |s| (s - self.first) % k == i)
    }
}

impl FromStr for Seeds {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad =
            || format!("seeds {s:?}: expected FIRST..LAST (inclusive) with FIRST <= LAST, e.g. 1..10000");
        let (a, b) = s.split_once("..").ok_or_else(bad)?;
        let first: u64 = a.trim().parse().map_err(|_| bad())?;
        let last: u64 = b.trim().parse().map_err(|_| bad())?;
        if first > last {
            return Err(bad());
        }
        if last - first >= u32::MAX as u64 {
            return Err(format!("seeds {s:?}: at most {} seeds in one sweep", u32::MAX));
        }
        Ok(Seeds { first, last })
    }
}

impl fmt::Display for Seeds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..{}", self.first, self.last)
    }
}

/// One configuration of a sweep: a label (what distinguishes it) and the run it makes.
#[derive(Clone, Debug)]
pub struct SweepConfig {
    /// Shown in the summary, e.g. `nodes=8 --crash 3@0`.
    pub label: String,
    /// The run; its `seed` is replaced by each seed of the sweep.
    pub run: RunConfig,
}

/// What one run left behind.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Index of the configuration.
    pub config: usize,
    /// Seed.
    pub seed: u64,
    /// Messages sent.
    pub messages: u64,
    /// Events processed.
    pub events: u64,
    /// Latencies (the run's mean, ms) and numeric outcome fields.
    pub metrics: BTreeMap<String, f64>,
    /// Properties violated.
    pub violated: Vec<String>,
    /// True when the violations are exactly the expected ones.
    pub as_expected: bool,
    /// Properties the run ended too early to decide.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub undecided: Vec<String>,
    /// Why no progress was possible any more, when the run proved it (see
    /// [`crate::report::Report::no_progress`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_progress: Option<String>,
    /// The repro line, kept for runs with a violation, an undecided property or an
    /// unexpected verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repro: Option<String>,
}

/// min, p50, p99, max and mean of a figure over runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Dist {
    /// Runs that reported the figure.
    pub runs: u64,
    /// Minimum.
    pub min: f64,
    /// Median (nearest rank).
    pub p50: f64,
    /// 99th percentile (nearest rank).
    pub p99: f64,
    /// Maximum.
    pub max: f64,
    /// Mean.
    pub mean: f64,
}

impl Dist {
    /// The distribution of `values` (any order); `None` when empty.
    pub fn of(mut values: Vec<f64>) -> Option<Dist> {
        if values.is_empty() {
            return None;
        }
        values.sort_by(f64::total_cmp);
        let n = values.len();
        let rank = |q: f64| values[((q * n as f64).ceil() as usize).clamp(1, n) - 1];
        Some(Dist {
            runs: n as u64,
            min: values[0],
            p50: rank(0.5),
            p99: rank(0.99),
            max: values[n - 1],
            mean: values.iter().sum::<f64>() / n as f64,
        })
    }
}

/// The runs in which one property was violated (or, in [`ConfigSummary::undecided`], left
/// undecided), over a configuration's runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PropertyViolations {
    /// Runs that violated it (or left it undecided).
    pub runs: u64,
    /// The repro lines of the first failing seeds (lowest seeds first).
    pub first: Vec<String>,
}

/// One configuration's summary.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConfigSummary {
    /// The configuration's label.
    pub label: String,
    /// Algorithm.
    pub algorithm: String,
    /// Nodes.
    pub nodes: u32,
    /// Runs summarised.
    pub runs: u64,
    /// Runs whose violations were not exactly the expected ones.
    pub unexpected: u64,
    /// Messages sent per run.
    pub messages: Dist,
    /// Events per run.
    pub events: Dist,
    /// Latencies (run means, ms) and numeric outcome fields.
    pub metrics: BTreeMap<String, Dist>,
    /// Violations by property (only properties violated at least once).
    pub violations: BTreeMap<String, PropertyViolations>,
    /// Undecided properties by property (only properties some run left undecided): the run
    /// was cut off at `--duration` before it could decide them.
    #[serde(default)]
    pub undecided: BTreeMap<String, PropertyViolations>,
    /// Runs that proved no progress was possible any more (their undecided properties cannot
    /// be decided by a longer run).
    #[serde(default)]
    pub no_progress: u64,
}

/// Everything a sweep (or a merge of shards) reports.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepOutput {
    /// The seed range.
    pub seeds: Seeds,
    /// The shard this output covers, `None` for the whole range.
    pub shard: Option<Shard>,
    /// Per configuration.
    pub configurations: Vec<ConfigSummary>,
    /// Timing: worker threads (0 for a merge).
    pub threads: usize,
    /// Timing: wall-clock seconds (summed over shards for a merge).
    pub wall_seconds: f64,
    /// Every run, sorted by configuration then seed.
    pub runs: Vec<RunRecord>,
}

impl SweepOutput {
    /// True when every run found exactly its expected violations.
    pub fn as_expected(&self) -> bool {
        self.configurations.iter().all(|c| c.unexpected == 0)
    }

    /// Runs that left at least one property undecided.
    pub fn undecided_runs(&self) -> u64 {
        self.runs.iter().filter(|r| !r.undecided.is_empty()).count() as u64
    }

    /// The output without its timing fields, for comparing content.
    pub fn content(&self) -> SweepOutput {
        SweepOutput { threads: 0, wall_seconds: 0.0, ..self.clone() }
    }
}

/// Why a sweep or a merge failed.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// A run could not start.
    #[error("configuration {label:?}, seed {seed}: {source}")]
    Run {
        /// The configuration.
        label: String,
        /// The seed.
        seed: u64,
        /// Why.
        source: SimError,
    },
    /// The thread pool could not be built.
    #[error("thread pool: {0}")]
    Pool(String),
    /// Shards that do not belong together.
    #[error("{0}")]
    Merge(String),
}

/// Reduces a run's report to its record.
fn record(config: usize, report: &crate::Report) -> RunRecord {
    let mut metrics = BTreeMap::new();
    for (name, p) in &report.latency {
        metrics.insert(name.clone(), p.mean);
    }
    for (name, x) in report.outcome.numbers() {
        metrics.entry(name).or_insert(x);
    }
    // The algorithm's own messages apart from failure detection (a story's heartbeats), and
    // their cost per operation in the unit of the textbook formula (`ringleader table`).
    if report.messages.detection > 0 {
        metrics.insert("messages_detection".into(), report.messages.detection as f64);
        metrics.insert(
            "messages_algorithm".into(),
            report.messages.sent.saturating_sub(report.messages.detection) as f64,
        );
    }
    if report.per_operation.operations > 0 {
        let unit = report.per_operation.unit.replace(' ', "_");
        metrics.insert(format!("messages_per_{unit}"), report.per_operation.messages_mean);
    }
    // A run cut off with operations under way: their messages are counted above but they are
    // not; counting them as operations gives the other bound (see `PerOperation`).
    if let Some(incl) = report.per_operation.messages_mean_incl_unfinished {
        let unit = report.per_operation.unit.replace(' ', "_");
        metrics.insert(format!("messages_per_{unit}_incl_unfinished"), incl);
        metrics.insert("operations_unfinished".into(), report.per_operation.unfinished as f64);
    }
    let mut violated: Vec<String> = report.violations.iter().map(|v| v.property.to_string()).collect();
    violated.sort();
    violated.dedup();
    let as_expected = report.as_expected();
    let mut undecided: Vec<String> = report.undecided.iter().map(|u| u.property.to_string()).collect();
    undecided.sort();
    undecided.dedup();
    RunRecord {
        config,
        seed: report.seed,
        messages: report.messages.sent,
        events: report.events,
        metrics,
        repro: (!violated.is_empty() || !undecided.is_empty() || !as_expected).then(|| report.repro.clone()),
        violated,
        as_expected,
        undecided,
        no_progress: report.no_progress.clone(),
    }
}

/// Runs every configuration over the seeds of `shard` on `threads` threads; `progress` is
/// called once after each run (from any worker thread).
pub fn run(
    configs: &[SweepConfig],
    seeds: Seeds,
    shard: Option<Shard>,
    threads: usize,
    progress: &(dyn Fn() + Sync),
) -> Result<SweepOutput, SweepError> {
    let wall = std::time::Instant::now();
    let items: Vec<(usize, u64)> =
        (0..configs.len()).flat_map(|c| seeds.of_shard(shard).map(move |s| (c, s))).collect();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .build()
        .map_err(|e| SweepError::Pool(e.to_string()))?;
    let runs: Vec<RunRecord> =
        pool.install(|| {
            items
                .par_iter()
                .map(|&(c, seed)| {
                    let mut cfg = configs[c].run.clone();
                    cfg.seed = seed;
                    let result = crate::run(&cfg, RunOptions::default()).map_err(|source| {
                        SweepError::Run { label: configs[c].label.clone(), seed, source }
                    })?;
                    progress();
                    Ok(record(c, &result.report))
                })
                .collect::<Result<Vec<_>, SweepError>>()
        })?;
    let labels: Vec<(String, String, u32)> =
        configs.iter().map(|c| (c.label.clone(), c.run.algorithm.clone(), c.run.nodes)).collect();
    Ok(SweepOutput {
        seeds,
        shard,
        configurations: summarise(&labels, &runs),
        threads: threads.max(1),
        wall_seconds: wall.elapsed().as_secs_f64(),
        runs,
    })
}

/// The summaries of `runs` (sorted by configuration then seed) for configurations
/// `(label, algorithm, nodes)`.
pub fn summarise(configs: &[(String, String, u32)], runs: &[RunRecord]) -> Vec<ConfigSummary> {
    configs
        .iter()
        .enumerate()
        .map(|(c, (label, algorithm, nodes))| {
            let mine: Vec<&RunRecord> = runs.iter().filter(|r| r.config == c).collect();
            let names: BTreeSet<&String> = mine.iter().flat_map(|r| r.metrics.keys()).collect();
            let metrics = names
                .into_iter()
                .filter_map(|n| {
                    Dist::of(mine.iter().filter_map(|r| r.metrics.get(n).copied()).collect())
                        .map(|d| (n.clone(), d))
                })
                .collect();
            let by_property = |of: &dyn Fn(&RunRecord) -> &Vec<String>| {
                let mut out: BTreeMap<String, PropertyViolations> = BTreeMap::new();
                for r in &mine {
                    for p in of(r) {
                        let v =
                            out.entry(p.clone()).or_insert(PropertyViolations { runs: 0, first: Vec::new() });
                        v.runs += 1;
                        if v.first.len() < FIRST_FAILURES {
                            v.first.push(r.repro.clone().unwrap_or_default());
                        }
                    }
                }
                out
            };
            let violations = by_property(&|r| &r.violated);
            let undecided = by_property(&|r| &r.undecided);
            let empty = Dist { runs: 0, min: 0.0, p50: 0.0, p99: 0.0, max: 0.0, mean: 0.0 };
            ConfigSummary {
                label: label.clone(),
                algorithm: algorithm.clone(),
                nodes: *nodes,
                runs: mine.len() as u64,
                unexpected: mine.iter().filter(|r| !r.as_expected).count() as u64,
                messages: Dist::of(mine.iter().map(|r| r.messages as f64).collect()).unwrap_or(empty.clone()),
                events: Dist::of(mine.iter().map(|r| r.events as f64).collect()).unwrap_or(empty),
                metrics,
                violations,
                undecided,
                no_progress: mine.iter().filter(|r| r.no_progress.is_some()).count() as u64,
            }
        })
        .collect()
}

/// Unions shards of one sweep into the output of the whole sweep (or of the shards given).
///
/// The shards must share the seed range and configurations, and no (configuration, seed) may
/// appear twice.
pub fn merge(parts: Vec<SweepOutput>) -> Result<SweepOutput, SweepError> {
    let bad = |m: String| Err(SweepError::Merge(m));
    let Some(first) = parts.first() else {
        return bad("sweep merge: no shard files given".into());
    };
    let seeds = first.seeds;
    let configs: Vec<(String, String, u32)> =
        first.configurations.iter().map(|c| (c.label.clone(), c.algorithm.clone(), c.nodes)).collect();
    let mut runs = Vec::new();
    let mut wall = 0.0;
    let mut shards = BTreeSet::new();
    for (i, p) in parts.into_iter().enumerate() {
        if p.seeds != seeds {
            return bad(format!(
                "shard {}: seeds {} differ from the first shard's {}",
                i + 1,
                p.seeds,
                seeds
            ));
        }
        let theirs: Vec<(String, String, u32)> =
            p.configurations.iter().map(|c| (c.label.clone(), c.algorithm.clone(), c.nodes)).collect();
        if theirs != configs {
            return bad(format!("shard {}: its configurations differ from the first shard's", i + 1));
        }
        if let Some(s) = p.shard {
            shards.insert((s.count, s.index));
        }
        wall += p.wall_seconds;
        runs.extend(p.runs);
    }
    runs.sort_by_key(|r| (r.config, r.seed));
    if let Some(w) = runs.windows(2).find(|w| (w[0].config, w[0].seed) == (w[1].config, w[1].seed)) {
        return bad(format!(
            "seed {} of configuration {:?} appears in two shards",
            w[0].seed,
            configs.get(w[0].config).map(|c| c.0.as_str()).unwrap_or("?")
        ));
    }
    if let Some(r) =
        runs.iter().find(|r| r.config >= configs.len() || r.seed < seeds.first || r.seed > seeds.last)
    {
        return bad(format!("a run (configuration {}, seed {}) lies outside the sweep", r.config, r.seed));
    }
    let expected = seeds.len() * configs.len() as u64;
    if runs.len() as u64 != expected {
        return bad(format!(
            "the shards cover {} of {expected} runs: give every shard of the split ({} given)",
            runs.len(),
            shards.len()
        ));
    }
    Ok(SweepOutput {
        seeds,
        shard: None,
        configurations: summarise(&configs, &runs),
        threads: 0,
        wall_seconds: wall,
        runs,
    })
}

impl SweepOutput {
    /// A readable summary.
    pub fn human(&self) -> String {
        self.human_with_notes(&|_| Vec::new())
    }

    /// A readable summary with `notes(configuration)`'s lines added at the end of each
    /// configuration's block (the command line adds the textbook's cost there).
    pub fn human_with_notes(&self, notes: &dyn Fn(&ConfigSummary) -> Vec<String>) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "sweep      seeds {}{}, {} configuration(s), {} runs, {:.2} s wall on {} thread(s)",
            self.seeds,
            self.shard.map(|sh| format!(" (shard {sh})")).unwrap_or_default(),
            self.configurations.len(),
            self.runs.len(),
            self.wall_seconds,
            self.threads
        );
        for (index, c) in self.configurations.iter().enumerate() {
            let _ = writeln!(s, "\n{} ({}, {} nodes): {} runs", c.label, c.algorithm, c.nodes, c.runs);
            let width = c.metrics.keys().map(|k| k.chars().count()).max().unwrap_or(0).max(26);
            let _ = writeln!(
                s,
                "  {:<width$} {:>12} {:>12} {:>12} {:>12} {:>12}",
                "figure", "min", "p50", "p99", "max", "mean"
            );
            let mut row = |name: &str, d: &Dist| {
                let _ = writeln!(
                    s,
                    "  {:<width$} {:>12} {:>12} {:>12} {:>12} {:>12.3}",
                    name,
                    num(d.min),
                    num(d.p50),
                    num(d.p99),
                    num(d.max),
                    d.mean
                );
            };
            row("messages", &c.messages);
            row("events", &c.events);
            for (name, d) in &c.metrics {
                row(name, d);
            }
            if let Some((name, d)) = c.metrics.iter().find(|(name, _)| name.ends_with("_incl_unfinished")) {
                let finished = name.trim_end_matches("_incl_unfinished");
                let _ = writeln!(
                    s,
                    "  {} of {} runs stopped with operations unfinished: {finished} counts their messages over \
                     the finished operations only (an upper bound), {name} counts them as operations (a lower \
                     bound, over those runs)",
                    d.runs, c.runs
                );
            }
            if c.violations.is_empty() {
                let _ = writeln!(s, "  violations: none");
            }
            for (p, v) in &c.violations {
                let _ = writeln!(s, "  {p} violated in {} of {} runs; first failing seeds:", v.runs, c.runs);
                for line in &v.first {
                    let _ = writeln!(s, "    {line}");
                }
            }
            for (p, v) in &c.undecided {
                let _ = writeln!(
                    s,
                    "  {p} undecided in {} of {} runs (cut off before it could be decided); first seeds:",
                    v.runs, c.runs
                );
                for line in &v.first {
                    let _ = writeln!(s, "    {line}");
                }
            }
            if c.no_progress > 0 {
                let first = self
                    .runs
                    .iter()
                    .filter(|r| r.config == index)
                    .find_map(|r| r.no_progress.as_ref().map(|why| format!("seed {}: {why}", r.seed)));
                let _ = writeln!(
                    s,
                    "  no progress possible in {} of {} runs (a longer run cannot decide them); {}",
                    c.no_progress,
                    c.runs,
                    first.unwrap_or_default()
                );
            }
            if c.unexpected > 0 {
                let _ = writeln!(s, "  {} run(s) did not find exactly the expected violations", c.unexpected);
            }
            for line in notes(c) {
                let _ = writeln!(s, "  {line}");
            }
        }
        let undecided = self.undecided_runs();
        let verdict = if !self.as_expected() {
            "FAILED: some runs found unexpected violations".to_string()
        } else if undecided > 0 {
            format!(
                "UNDECIDED: no unexpected violation, but {undecided} of {} runs left properties undecided",
                self.runs.len()
            )
        } else {
            "OK: every run found exactly the expected violations (none unless declared) and decided every property"
                .to_string()
        };
        let _ = writeln!(s, "\nverdict    {verdict}");
        s
    }

    /// The summary as CSV: one row per configuration and figure, then one per violated property.
    pub fn csv(&self) -> String {
        let mut s = String::from("configuration,algorithm,nodes,figure,runs,min,p50,p99,max,mean\n");
        let quote = |x: &str| format!("\"{}\"", x.replace('"', "\"\""));
        for c in &self.configurations {
            let mut row = |name: &str, d: &Dist| {
                s.push_str(&format!(
                    "{},{},{},{},{},{},{},{},{},{}\n",
                    quote(&c.label),
                    c.algorithm,
                    c.nodes,
                    quote(name),
                    d.runs,
                    d.min,
                    d.p50,
                    d.p99,
                    d.max,
                    d.mean
                ))
            };
            row("messages", &c.messages);
            row("events", &c.events);
            for (name, d) in &c.metrics {
                row(name, d);
            }
            let counts = c.violations.iter().map(|(p, v)| (format!("violated:{p}"), v.runs));
            let counts = counts.chain(c.undecided.iter().map(|(p, v)| (format!("undecided:{p}"), v.runs)));
            let counts =
                counts.chain((c.no_progress > 0).then(|| ("no_progress".to_string(), c.no_progress)));
            for (figure, runs) in counts {
                s.push_str(&format!(
                    "{},{},{},{},{},,,,,\n",
                    quote(&c.label),
                    c.algorithm,
                    c.nodes,
                    quote(&figure),
                    runs
                ));
            }
        }
        s
    }
}

fn num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 { format!("{x:.0}") } else { format!("{x:.3}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let d = Dist::of((1..=100).rev().map(|x| x as f64).collect()).unwrap();
        assert_eq!((d.min, d.p50, d.p99, d.max, d.mean), (1.0, 50.0, 99.0, 100.0, 50.5));
        let one = Dist::of(vec![7.0]).unwrap();
        assert_eq!((one.p50, one.p99), (7.0, 7.0));
    }

    #[test]
    fn shards_partition_the_seeds() {
        let seeds: Seeds = "10..29".parse().unwrap();
        let mut all: Vec<u64> =
            (0..3).flat_map(|i| seeds.of_shard(Some(Shard { index: i, count: 3 }))).collect();
        all.sort();
        assert_eq!(all, (10..=29).collect::<Vec<_>>());
        assert!("3/3".parse::<Shard>().is_err());
        assert!("5..4".parse::<Seeds>().is_err());
    }
}
