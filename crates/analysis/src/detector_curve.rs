//! Detector curves: detection time against false suspicions, and the timeout a cost rule picks
//! (`ringleader detector-curve`).
//!
//! One seeded world — N processes sending heartbeats every period T under a heavy-tailed
//! latency (`lognormal:2ms,1` by default: median 2 ms, 1 % of messages above 20 ms), processes
//! that *pause* (alive but silent, pause lengths log-normal: a few long ones) and processes that
//! really *crash* and come back after a downtime — is run once per value of the detector's
//! parameter: the margin D of the heartbeat detector (it suspects after T + D of silence) or
//! the threshold Φ of φ-accrual. For each value the table gives:
//! - false suspicions (a live process suspected: paused or just slow) in total and per
//!   monitored pair per minute;
//! - detection time after a real crash (mean and 99th percentile over every live monitor);
//! - waiting: the total time crashed processes went unsuspected, summed over monitors;
//! - the expected cost under the cost model below.
//!
//! **Cost model** (what does waiting longer cost, E? what does a mistake cost, C?):
//! every false suspicion costs C (a needless failover, a second coordinator, a violated
//! exclusion), and every second a crashed process stays unsuspected by a live monitor costs E
//! (the service it provided is missing). Over the same run,
//! `cost(value) = C · false_suspicions(value) + E · waiting_seconds(value)`;
//! the command reports the value that minimises it. Raising the timeout is worth it as long as
//! the mistakes it avoids save more (C · Δp) than the extra waiting costs (E · Δt).
//!
//! The processes' schedule is the same for every value, but not the random stream: the
//! detector's own timers draw from it, so the latencies differ between values (runs are still
//! reproducible, seed by seed).

use std::fmt::Write as _;

use rand::{RngExt, SeedableRng};
use rand_distr::{Distribution, LogNormal};
use rand_xoshiro::Xoshiro256PlusPlus;
use ringleader_core::Time;
use ringleader_core::time::{MILLISECOND, SECOND};
use ringleader_sim::notation::{At, Latency, Pause};
use ringleader_sim::report::DetectorOutcome;
use ringleader_sim::scenario::{ScenarioError, TimeSpan};
use ringleader_sim::{RunConfig, RunOptions, SimError};
use serde::Serialize;

/// The failure detector whose parameter is swept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Detector {
    /// `heartbeat`: sweeps the margin D (it suspects after T + D of silence).
    Heartbeat,
    /// `phi-accrual`: sweeps the threshold Φ.
    PhiAccrual,
}

impl Detector {
    /// The algorithm's name.
    pub fn name(self) -> &'static str {
        match self {
            Detector::Heartbeat => "heartbeat",
            Detector::PhiAccrual => "phi-accrual",
        }
    }

    /// The parameter swept.
    fn key(self) -> &'static str {
        match self {
            Detector::Heartbeat => "margin",
            Detector::PhiAccrual => "phi",
        }
    }

    /// The values swept when none are given.
    fn default_values(self) -> &'static str {
        match self {
            Detector::Heartbeat => "5ms,10ms,20ms,40ms,80ms,160ms,320ms",
            Detector::PhiAccrual => "1,2,3,4,6,8,12,16",
        }
    }
}

/// The world and the values to sweep.
#[derive(Clone, Debug)]
pub struct Options {
    /// The detector.
    pub algo: Detector,
    /// Values to sweep, comma-separated (none: the detector's defaults).
    pub values: Option<String>,
    /// Processes.
    pub nodes: u32,
    /// Seed of the world (latencies, pauses, crashes).
    pub seed: u64,
    /// Virtual time per run.
    pub duration: TimeSpan,
    /// One-way latency distribution.
    pub latency: Latency,
    /// Heartbeat period T.
    pub period: TimeSpan,
    /// Pauses per process (alive but silent).
    pub pauses: u32,
    /// Median pause length (log-normal, σ = 1).
    pub pause_median: TimeSpan,
    /// Real crashes in the run (each process comes back after `downtime`).
    pub crashes: u32,
    /// How long a crashed process stays down.
    pub downtime: TimeSpan,
    /// C: the cost of one false suspicion.
    pub mistake_cost: f64,
    /// E: the cost of one second during which a crashed process is not yet suspected (per
    /// monitor).
    pub wait_cost: f64,
}

/// The most processes a curve is drawn for.
pub const MAX_NODES: u32 = 100;
/// The most pauses per process, and crashes per run.
pub const MAX_FAULTS: u32 = 1_000;
/// The most values one curve sweeps.
pub const MAX_VALUES: usize = 64;
/// The longest run.
const HOUR: Time = 3_600 * SECOND;

/// Why the curve could not be made.
#[derive(Debug, thiserror::Error)]
pub enum CurveError {
    /// Fewer than two processes, or more than [`MAX_NODES`].
    #[error(
        "--nodes {0}: a failure detector's curve is drawn for 2..{MAX_NODES} processes (all-to-all heartbeats)"
    )]
    Nodes(u32),
    /// A run shorter than 5 s (the fault plan does not fit) or longer than an hour.
    #[error("--duration {0}: give 5s..1h (crashes and pauses must fit)")]
    Duration(String),
    /// More pauses per process or crashes than [`MAX_FAULTS`].
    #[error("--{flag} {count}: give 0..{MAX_FAULTS}")]
    Faults {
        /// `pauses` or `crashes`.
        flag: &'static str,
        /// The count given.
        count: u32,
    },
    /// A downtime under 100 ms, or too long for a crashed process to come back within the run.
    #[error(
        "--downtime {0}: give 100ms up to the duration less 2s, so that a crashed process comes back within the run"
    )]
    Downtime(String),
    /// A median pause outside 1 ms..5 s.
    #[error("--pause-median {0}: give 1ms..5s (pauses are drawn from 1 ms to 5 s)")]
    PauseMedian(String),
    /// A negative or infinite cost.
    #[error("--mistake-cost and --wait-cost must be finite non-negative numbers")]
    Cost,
    /// More values than [`MAX_VALUES`].
    #[error("--values: {0} values; a curve sweeps 1..{MAX_VALUES}")]
    TooManyValues(usize),
    /// A heartbeat margin that is not a time.
    #[error("--values: {0}")]
    BadMargin(String),
    /// A threshold that is not a positive number.
    #[error("--values: {0:?} is not a threshold Φ (a positive number such as 3 or 8)")]
    BadThreshold(String),
    /// A run could not be configured.
    #[error(transparent)]
    Config(#[from] ScenarioError),
    /// A run failed.
    #[error("value {value}")]
    Run {
        /// The value swept.
        value: String,
        /// Why.
        source: SimError,
    },
}

/// One row of the curve.
#[derive(Debug, Serialize)]
pub struct Row {
    /// The swept value as given (`20ms`, or Φ).
    pub value: String,
    /// Heartbeat: T + D in ms; φ-accrual: null.
    pub timeout_ms: Option<f64>,
    /// False suspicions, in total.
    pub false_suspicions: u64,
    /// False suspicions per monitored pair per minute.
    pub false_per_pair_minute: f64,
    /// Crashes detected.
    pub detections: u64,
    /// Crashes not detected.
    pub missed: u64,
    /// Mean detection time.
    pub detection_mean_ms: Option<f64>,
    /// 99th percentile of the detection time.
    pub detection_p99_ms: Option<f64>,
    /// Time crashed processes went unsuspected, summed over monitors.
    pub waiting_s: f64,
    /// Time live processes were suspected, summed over monitors.
    pub mistake_s: f64,
    /// The cost model's value.
    pub cost: f64,
}

/// The whole curve.
#[derive(Debug, Serialize)]
pub struct Curve {
    /// The detector's name.
    pub algorithm: String,
    /// Processes.
    pub nodes: u32,
    /// Seed.
    pub seed: u64,
    /// Virtual time per run, in s.
    pub duration_s: f64,
    /// The latency distribution.
    pub latency: String,
    /// Heartbeat period, in ms.
    pub period_ms: f64,
    /// Pauses planned.
    pub pauses: usize,
    /// Crashes planned.
    pub crashes: usize,
    /// C.
    pub mistake_cost: f64,
    /// E.
    pub wait_cost: f64,
    /// The cost model, as text.
    pub cost_model: &'static str,
    /// One row per value.
    pub rows: Vec<Row>,
    /// The value of least cost.
    pub best: String,
}

const COST_MODEL: &str = "cost = C * false_suspicions + E * waiting_seconds (summed over live monitors)";

/// The seeded fault plan of a world: pauses, crashes and recoveries.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Pauses.
    pub pauses: Vec<Pause>,
    /// Crashes.
    pub crash: Vec<At>,
    /// Recoveries, one per crash.
    pub recover: Vec<At>,
}

impl Plan {
    /// The plan as `ringleader sim` flags.
    pub fn flags(&self) -> String {
        let join = |v: Vec<String>| v.join(" ");
        format!(
            "{} {} {}",
            join(self.pauses.iter().map(|p| format!("--pause {p}")).collect()),
            join(self.crash.iter().map(|p| format!("--crash {p}")).collect()),
            join(self.recover.iter().map(|p| format!("--recover {p}")).collect())
        )
    }
}

/// The seeded fault plan: pauses and crash/recover pairs, never overlapping on one process.
pub fn plan(a: &Options) -> Plan {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(a.seed ^ 0xDE7E_C70B);
    let d = a.duration.0;
    let (start, end) = (SECOND / 2, d.saturating_sub(a.downtime.0 + SECOND));
    let mut busy: Vec<Vec<(Time, Time)>> = vec![Vec::new(); a.nodes as usize];
    let free = |node: usize, from: Time, to: Time, busy: &mut [Vec<(Time, Time)>]| {
        let gap = 200 * MILLISECOND;
        if busy[node].iter().any(|&(f, t)| from < t + gap && f < to + gap) {
            return false;
        }
        busy[node].push((from, to));
        true
    };
    let (mut crash, mut recover) = (Vec::new(), Vec::new());
    if end > start {
        for _ in 0..a.crashes {
            let node = rng.random_range(0..a.nodes) as usize;
            let at = rng.random_range(start..end);
            if free(node, at, at + a.downtime.0, &mut busy) {
                crash.push(At { uid: node as u64 + 1, time: at });
                recover.push(At { uid: node as u64 + 1, time: at + a.downtime.0 });
            }
        }
    }
    let mut pauses = Vec::new();
    let lengths = LogNormal::new((a.pause_median.0.max(1) as f64).ln(), 1.0).expect("finite");
    if d > 2 * SECOND {
        for node in 0..a.nodes as usize {
            for _ in 0..a.pauses {
                let from = rng.random_range(start..d - SECOND);
                let len = (lengths.sample(&mut rng) as Time).clamp(MILLISECOND, 5 * SECOND);
                if free(node, from, from + len, &mut busy) {
                    pauses.push(Pause { uid: node as u64 + 1, from, to: from + len });
                }
            }
        }
    }
    Plan { pauses, crash, recover }
}

/// The values to sweep, checked.
pub fn values(a: &Options) -> Result<Vec<String>, CurveError> {
    let list: Vec<String> = a
        .values
        .as_deref()
        .unwrap_or(a.algo.default_values())
        .split(',')
        .map(|s| s.trim().to_string())
        .collect();
    if list.len() > MAX_VALUES {
        return Err(CurveError::TooManyValues(list.len()));
    }
    for v in &list {
        match a.algo {
            Detector::Heartbeat => {
                v.parse::<TimeSpan>().map_err(|e| CurveError::BadMargin(e.to_string()))?;
            }
            Detector::PhiAccrual => {
                if !v.parse::<f64>().is_ok_and(|x| x > 0.0 && x.is_finite()) {
                    return Err(CurveError::BadThreshold(v.clone()));
                }
            }
        }
    }
    Ok(list)
}

/// Checks the options and returns the values to sweep.
pub fn validate(a: &Options) -> Result<Vec<String>, CurveError> {
    if !(2..=MAX_NODES).contains(&a.nodes) {
        return Err(CurveError::Nodes(a.nodes));
    }
    if a.duration.0 < 5 * SECOND || a.duration.0 > HOUR {
        return Err(CurveError::Duration(String::from(a.duration)));
    }
    for (flag, count) in [("pauses", a.pauses), ("crashes", a.crashes)] {
        if count > MAX_FAULTS {
            return Err(CurveError::Faults { flag, count });
        }
    }
    if a.downtime.0 < 100 * MILLISECOND || a.downtime.0 + 2 * SECOND > a.duration.0 {
        return Err(CurveError::Downtime(String::from(a.downtime)));
    }
    if a.pause_median.0 < MILLISECOND || a.pause_median.0 > 5 * SECOND {
        return Err(CurveError::PauseMedian(String::from(a.pause_median)));
    }
    let finite = a.mistake_cost.is_finite() && a.wait_cost.is_finite();
    if !(a.mistake_cost >= 0.0 && a.wait_cost >= 0.0 && finite) {
        return Err(CurveError::Cost);
    }
    values(a)
}

/// Runs the world once per value of `list` under `plan`.
pub fn curve(a: &Options, list: &[String], plan: &Plan) -> Result<Curve, CurveError> {
    let pairs = (a.nodes * (a.nodes - 1)) as f64;
    let minutes = a.duration.0 as f64 / 60e9;
    let mut rows = Vec::new();
    for v in list {
        let mut cfg = RunConfig::new(a.algo.name(), a.nodes)?;
        cfg.seed = a.seed;
        cfg.duration = a.duration.0;
        cfg.latency = a.latency.clone();
        cfg.max_delay = a.latency.bound();
        cfg.pause = plan.pauses.clone();
        cfg.crash = plan.crash.clone();
        cfg.recover = plan.recover.clone();
        cfg.params.insert("period".into(), String::from(a.period));
        cfg.params.insert(a.algo.key().into(), v.clone());
        let r = ringleader_sim::run(&cfg, RunOptions::default())
            .map_err(|source| CurveError::Run { value: v.clone(), source })?
            .report;
        let o = r.outcome.detector().cloned().unwrap_or(DetectorOutcome {
            detections: 0,
            false_suspicions: 0,
            missed: 0,
            mistake_ms: 0.0,
            waiting_ms: 0.0,
        });
        let det = r.latency.get("detection_time");
        let false_suspicions = o.false_suspicions;
        let waiting_s = o.waiting_ms / 1e3;
        rows.push(Row {
            value: v.clone(),
            timeout_ms: (a.algo == Detector::Heartbeat)
                .then(|| (a.period.0 + v.parse::<TimeSpan>().map(|d| d.0).unwrap_or(0)) as f64 / 1e6),
            false_suspicions,
            false_per_pair_minute: false_suspicions as f64 / pairs / minutes,
            detections: o.detections,
            missed: o.missed,
            detection_mean_ms: det.map(|p| p.mean),
            detection_p99_ms: det.map(|p| p.p99),
            waiting_s,
            mistake_s: o.mistake_ms / 1e3,
            cost: a.mistake_cost * false_suspicions as f64 + a.wait_cost * waiting_s,
        });
    }
    let best =
        rows.iter().min_by(|x, y| x.cost.total_cmp(&y.cost)).map(|r| r.value.clone()).unwrap_or_default();
    Ok(Curve {
        algorithm: a.algo.name().to_string(),
        nodes: a.nodes,
        seed: a.seed,
        duration_s: a.duration.0 as f64 / 1e9,
        latency: a.latency.to_string(),
        period_ms: a.period.0 as f64 / 1e6,
        pauses: plan.pauses.len(),
        crashes: plan.crash.len(),
        mistake_cost: a.mistake_cost,
        wait_cost: a.wait_cost,
        cost_model: COST_MODEL,
        rows,
        best,
    })
}

impl Curve {
    /// The curve as one self-contained HTML page: detection time, false suspicions and the cost
    /// model against the swept timeout (heartbeat: T + D in ms) or threshold Φ, as SVG plots
    /// drawn with `plotters`, then the table.
    pub fn html(&self) -> Result<String, ringleader_viz::plot::PlotError> {
        use ringleader_viz::plot::{Plot, Series, svg};
        let x_label = if self.rows.iter().all(|r| r.timeout_ms.is_some()) {
            "timeout T + D (ms)"
        } else {
            "threshold Φ"
        };
        let x = |r: &Row| r.timeout_ms.unwrap_or_else(|| r.value.parse().unwrap_or(f64::NAN));
        let series = |name: &str, f: &dyn Fn(&Row) -> Option<f64>| Series {
            name: name.into(),
            points: self.rows.iter().filter_map(|r| Some((x(r), f(r)?))).collect(),
            dashed: false,
        };
        let plot = |title: &str, y_label: &str, series: Vec<Series>| Plot {
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            series,
            log_x: true,
            log_y: false,
        };
        let plots = [
            plot(
                "detection time of a crash",
                "ms",
                vec![series("mean", &|r| r.detection_mean_ms), series("p99", &|r| r.detection_p99_ms)],
            ),
            plot(
                "false suspicions",
                "per monitored pair per minute",
                vec![series("false suspicions", &|r| Some(r.false_per_pair_minute))],
            ),
            plot(
                "cost",
                &format!("{} (lower is better)", self.cost_model),
                vec![series("cost", &|r| Some(r.cost))],
            ),
        ];
        let mut body = String::new();
        for p in &plots {
            let _ = writeln!(body, "<figure>{}</figure>", svg(p, 520, 320)?);
        }
        let escape = |s: &str| s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
        Ok(format!(
            "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>ringleader \
             detector-curve</title><style>body{{font:14px system-ui,sans-serif;margin:16px}}\
             figure{{display:inline-block;margin:4px}}pre{{font-size:12px}}</style></head><body>\n\
             <h1>{}: detection time against mistakes</h1>\n{body}<pre>{}</pre>\n</body></html>\n",
            escape(&self.algorithm),
            escape(&self.table())
        ))
    }

    /// The curve as a Markdown-style table with a two-line heading.
    pub fn table(&self) -> String {
        let c = self;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{} · {} processes · {} s · latency {} · period {} ms · {} pauses · {} crashes · seed {}",
            c.algorithm, c.nodes, c.duration_s, c.latency, c.period_ms, c.pauses, c.crashes, c.seed
        );
        let _ = writeln!(s, "{} with C = {}, E = {}", c.cost_model, c.mistake_cost, c.wait_cost);
        let head = if c.algorithm == "heartbeat" { "D (T+D ms)" } else { "Φ" };
        let _ = writeln!(
            s,
            "| {head:>14} | false susp. | per pair·min | detect mean ms | detect p99 ms | missed | waiting s | cost |"
        );
        let _ = writeln!(s, "|---:|---:|---:|---:|---:|---:|---:|---:|");
        let ms = |x: Option<f64>| x.map(|v| format!("{v:.1}")).unwrap_or_else(|| "—".into());
        for r in &c.rows {
            let value = match r.timeout_ms {
                Some(t) => format!("{} ({t})", r.value),
                None => r.value.clone(),
            };
            let _ = writeln!(
                s,
                "| {value:>14} | {:>11} | {:>12.3} | {:>14} | {:>13} | {:>6} | {:>9.2} | {:>7.1}{} |",
                r.false_suspicions,
                r.false_per_pair_minute,
                ms(r.detection_mean_ms),
                ms(r.detection_p99_ms),
                r.missed,
                r.waiting_s,
                r.cost,
                if r.value == c.best { " ◀ min" } else { "" }
            );
        }
        s
    }
}
