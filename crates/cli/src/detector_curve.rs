//! `ringleader detector-curve`: detection time against false suspicions, and the timeout seed
//! 003's cost rule picks.
//!
//! One seeded world — N processes sending heartbeats every `--period` under a heavy-tailed
//! latency (`lognormal:2ms,1` by default: median 2 ms, 1 % of messages above 20 ms), processes
//! that *pause* (alive but silent, pause lengths log-normal: a few long ones) and processes that
//! really *crash* and come back after `--downtime` — is run once per value of the detector's
//! parameter: the margin D of the heartbeat detector (it suspects after T + D of silence) or
//! the threshold Φ of φ-accrual. For each value the table gives:
//! - false suspicions (a live process suspected: paused or just slow) in total and per
//!   monitored pair per minute;
//! - detection time after a real crash (mean and 99th percentile over every live monitor);
//! - waiting: the total time crashed processes went unsuspected, summed over monitors;
//! - the expected cost under the cost model below.
//!
//! **Cost model** (seed 003: "what does waiting longer cost, E? what does a mistake cost, C?"):
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

use anyhow::{Context as _, bail};
use clap::Args;
use rand::{RngExt, SeedableRng};
use rand_distr::{Distribution, LogNormal};
use rand_xoshiro::Xoshiro256PlusPlus;
use ringleader_core::Time;
use ringleader_core::time::{MILLISECOND, SECOND};
use ringleader_sim::notation::{At, Latency, Pause};
use ringleader_sim::scenario::Duration;
use ringleader_sim::{RunConfig, RunOptions};
use serde::Serialize;

/// Sweep a failure detector's timeout (or Φ) under heavy-tailed latency and pauses
///
/// Prints detection time against false suspicions for each value.
///
/// Examples:
///   ringleader detector-curve
///   ringleader detector-curve --algo phi-accrual --values 1,2,4,8,16 --json
///   ringleader detector-curve --mistake-cost 50 --wait-cost 1
#[derive(Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct CurveArgs {
    /// The detector: heartbeat (sweeps the margin D) or phi-accrual (sweeps Φ).
    #[arg(long, default_value = "heartbeat", value_parser = ["heartbeat", "phi-accrual"])]
    algo: String,
    /// Values to sweep, comma-separated: margins D for heartbeat (times), thresholds Φ for
    /// phi-accrual [defaults: 5ms,10ms,20ms,40ms,80ms,160ms,320ms and 1,2,3,4,6,8,12,16].
    #[arg(long, value_name = "LIST")]
    values: Option<String>,
    /// Processes.
    #[arg(long, default_value_t = 5)]
    nodes: u32,
    /// Seed of the world (latencies, pauses, crashes).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Virtual time per run.
    #[arg(long, value_name = "TIME", default_value = "60s")]
    duration: Duration,
    /// One-way latency distribution (heavy-tailed by default).
    #[arg(long, value_name = "SPEC", default_value = "lognormal:2ms,1")]
    latency: Latency,
    /// Heartbeat period T.
    #[arg(long, value_name = "TIME", default_value = "10ms")]
    period: Duration,
    /// Pauses per process (alive but silent).
    #[arg(long, value_name = "K", default_value_t = 6)]
    pauses: u32,
    /// Median pause length (log-normal, σ = 1: one pause in a hundred is 10× longer).
    #[arg(long, value_name = "TIME", default_value = "30ms")]
    pause_median: Duration,
    /// Real crashes in the run (each process comes back after --downtime).
    #[arg(long, value_name = "K", default_value_t = 6)]
    crashes: u32,
    /// How long a crashed process stays down.
    #[arg(long, value_name = "TIME", default_value = "2s")]
    downtime: Duration,
    /// C: the cost of one false suspicion.
    #[arg(long, value_name = "C", default_value_t = 1.0)]
    mistake_cost: f64,
    /// E: the cost of one second during which a crashed process is not yet suspected (per
    /// monitor).
    #[arg(long, value_name = "E", default_value_t = 10.0)]
    wait_cost: f64,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
}

/// One row of the curve.
#[derive(Debug, Serialize)]
struct Row {
    /// The swept value as given (`20ms`, or Φ).
    value: String,
    /// Heartbeat: T + D in ms; φ-accrual: null.
    timeout_ms: Option<f64>,
    false_suspicions: u64,
    false_per_pair_minute: f64,
    detections: u64,
    missed: u64,
    detection_mean_ms: Option<f64>,
    detection_p99_ms: Option<f64>,
    waiting_s: f64,
    mistake_s: f64,
    cost: f64,
}

/// The whole output.
#[derive(Debug, Serialize)]
struct Curve {
    algorithm: String,
    nodes: u32,
    seed: u64,
    duration_s: f64,
    latency: String,
    period_ms: f64,
    pauses: usize,
    crashes: usize,
    mistake_cost: f64,
    wait_cost: f64,
    cost_model: &'static str,
    rows: Vec<Row>,
    best: String,
}

const COST_MODEL: &str = "cost = C * false_suspicions + E * waiting_seconds (summed over live monitors)";

/// The seeded fault plan: pauses and crash/recover pairs, never overlapping on one process.
fn plan(a: &CurveArgs) -> (Vec<Pause>, Vec<At>, Vec<At>) {
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
    (pauses, crash, recover)
}

fn values(a: &CurveArgs) -> anyhow::Result<Vec<String>> {
    let default =
        if a.algo == "heartbeat" { "5ms,10ms,20ms,40ms,80ms,160ms,320ms" } else { "1,2,3,4,6,8,12,16" };
    let list: Vec<String> =
        a.values.as_deref().unwrap_or(default).split(',').map(|s| s.trim().to_string()).collect();
    if list.len() > MAX_VALUES {
        bail!("--values: {} values; a curve sweeps 1..{MAX_VALUES}", list.len());
    }
    for v in &list {
        if a.algo == "heartbeat" {
            v.parse::<Duration>().map_err(|e| anyhow::anyhow!("--values: {e}"))?;
        } else if !v.parse::<f64>().is_ok_and(|x| x > 0.0 && x.is_finite()) {
            bail!("--values: {v:?} is not a threshold Φ (a positive number such as 3 or 8)");
        }
    }
    Ok(list)
}

/// The most processes a curve is drawn for.
const MAX_NODES: u32 = 100;
/// The most pauses per process, and crashes per run.
const MAX_FAULTS: u32 = 1_000;
/// The most values one curve sweeps.
const MAX_VALUES: usize = 64;
const HOUR: Time = 3_600 * SECOND;

/// Runs `ringleader detector-curve`; returns the exit status.
pub fn run(a: CurveArgs) -> anyhow::Result<i32> {
    if !(2..=MAX_NODES).contains(&a.nodes) {
        bail!(
            "--nodes {}: a failure detector's curve is drawn for 2..{MAX_NODES} processes (all-to-all heartbeats)",
            a.nodes
        );
    }
    if a.duration.0 < 5 * SECOND || a.duration.0 > HOUR {
        bail!("--duration {}: give 5s..1h (crashes and pauses must fit)", String::from(a.duration));
    }
    for (flag, k) in [("pauses", a.pauses), ("crashes", a.crashes)] {
        if k > MAX_FAULTS {
            bail!("--{flag} {k}: give 0..{MAX_FAULTS}");
        }
    }
    if a.downtime.0 < 100 * MILLISECOND || a.downtime.0 + 2 * SECOND > a.duration.0 {
        bail!(
            "--downtime {}: give 100ms up to the duration less 2s, so that a crashed process comes back within the run",
            String::from(a.downtime)
        );
    }
    if a.pause_median.0 < MILLISECOND || a.pause_median.0 > 5 * SECOND {
        bail!(
            "--pause-median {}: give 1ms..5s (pauses are drawn from 1 ms to 5 s)",
            String::from(a.pause_median)
        );
    }
    if !(a.mistake_cost >= 0.0 && a.wait_cost >= 0.0 && a.mistake_cost.is_finite() && a.wait_cost.is_finite())
    {
        bail!("--mistake-cost and --wait-cost must be finite non-negative numbers");
    }
    let list = values(&a)?;
    let (pauses, crash, recover) = plan(&a);
    if std::env::var_os("RINGLEADER_CURVE_PLAN").is_some() {
        let join = |v: Vec<String>| v.join(" ");
        eprintln!(
            "{} {} {}",
            join(pauses.iter().map(|p| format!("--pause {p}")).collect()),
            join(crash.iter().map(|p| format!("--crash {p}")).collect()),
            join(recover.iter().map(|p| format!("--recover {p}")).collect())
        );
    }
    let pairs = (a.nodes * (a.nodes - 1)) as f64;
    let minutes = a.duration.0 as f64 / 60e9;
    let mut rows = Vec::new();
    for v in &list {
        let mut cfg = RunConfig::new(&a.algo, a.nodes)?;
        cfg.seed = a.seed;
        cfg.duration = a.duration.0;
        cfg.latency = a.latency.clone();
        cfg.max_delay = a.latency.bound();
        cfg.pause = pauses.clone();
        cfg.crash = crash.clone();
        cfg.recover = recover.clone();
        cfg.params.insert("period".into(), String::from(a.period));
        let key = if a.algo == "heartbeat" { "margin" } else { "phi" };
        cfg.params.insert(key.into(), v.clone());
        let r =
            ringleader_sim::run(&cfg, RunOptions::default()).with_context(|| format!("value {v}"))?.report;
        let get = |k: &str| r.outcome.get(k).and_then(|x| x.as_f64()).unwrap_or(0.0);
        let det = r.latency.get("detection_time");
        let false_suspicions = get("false_suspicions") as u64;
        let waiting_s = get("waiting_ms") / 1e3;
        rows.push(Row {
            value: v.clone(),
            timeout_ms: (a.algo == "heartbeat")
                .then(|| (a.period.0 + v.parse::<Duration>().map(|d| d.0).unwrap_or(0)) as f64 / 1e6),
            false_suspicions,
            false_per_pair_minute: false_suspicions as f64 / pairs / minutes,
            detections: get("detections") as u64,
            missed: get("missed") as u64,
            detection_mean_ms: det.map(|p| p.mean),
            detection_p99_ms: det.map(|p| p.p99),
            waiting_s,
            mistake_s: get("mistake_ms") / 1e3,
            cost: a.mistake_cost * false_suspicions as f64 + a.wait_cost * waiting_s,
        });
    }
    let best =
        rows.iter().min_by(|x, y| x.cost.total_cmp(&y.cost)).map(|r| r.value.clone()).unwrap_or_default();
    let curve = Curve {
        algorithm: a.algo.clone(),
        nodes: a.nodes,
        seed: a.seed,
        duration_s: a.duration.0 as f64 / 1e9,
        latency: a.latency.to_string(),
        period_ms: a.period.0 as f64 / 1e6,
        pauses: pauses.len(),
        crashes: crash.len(),
        mistake_cost: a.mistake_cost,
        wait_cost: a.wait_cost,
        cost_model: COST_MODEL,
        rows,
        best,
    };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&curve)?);
    } else {
        print!("{}", table(&curve));
    }
    Ok(0)
}

fn table(c: &Curve) -> String {
    use std::fmt::Write as _;
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
