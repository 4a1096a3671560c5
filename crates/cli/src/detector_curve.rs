//! `ringleader detector-curve`: the arguments of [`ringleader_analysis::detector_curve`], which
//! sweeps a failure detector's timeout (or Φ) and prints detection time against false
//! suspicions.

use clap::{Args, ValueEnum};
use ringleader_analysis::detector_curve::{self, Detector, Options};
use ringleader_sim::notation::Latency;
use ringleader_sim::scenario::TimeSpan;

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
    #[arg(long, value_enum, default_value = "heartbeat")]
    algo: DetectorArg,
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
    duration: TimeSpan,
    /// One-way latency distribution (heavy-tailed by default).
    #[arg(long, value_name = "SPEC", default_value = "lognormal:2ms,1")]
    latency: Latency,
    /// Heartbeat period T.
    #[arg(long, value_name = "TIME", default_value = "10ms")]
    period: TimeSpan,
    /// Pauses per process (alive but silent).
    #[arg(long, value_name = "K", default_value_t = 6)]
    pauses: u32,
    /// Median pause length (log-normal, σ = 1: one pause in a hundred is 10× longer).
    #[arg(long, value_name = "TIME", default_value = "30ms")]
    pause_median: TimeSpan,
    /// Real crashes in the run (each process comes back after --downtime).
    #[arg(long, value_name = "K", default_value_t = 6)]
    crashes: u32,
    /// How long a crashed process stays down.
    #[arg(long, value_name = "TIME", default_value = "2s")]
    downtime: TimeSpan,
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
    /// Also write an HTML page: detection time, false suspicions and cost against the swept
    /// value (SVG plots), then the table.
    #[arg(long, value_name = "FILE.html")]
    html: Option<std::path::PathBuf>,
}

/// `--algo`: the detector, by its algorithm name. (No doc comments on the variants: clap would
/// list them in `--help`, which shows the names on one line.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DetectorArg {
    Heartbeat,
    PhiAccrual,
}

/// Runs `ringleader detector-curve`; returns the exit status.
pub fn run(a: CurveArgs) -> crate::CommandResult {
    let options = Options {
        algo: match a.algo {
            DetectorArg::Heartbeat => Detector::Heartbeat,
            DetectorArg::PhiAccrual => Detector::PhiAccrual,
        },
        values: a.values,
        nodes: a.nodes,
        seed: a.seed,
        duration: a.duration,
        latency: a.latency,
        period: a.period,
        pauses: a.pauses,
        pause_median: a.pause_median,
        crashes: a.crashes,
        downtime: a.downtime,
        mistake_cost: a.mistake_cost,
        wait_cost: a.wait_cost,
    };
    let list = detector_curve::validate(&options)?;
    let plan = detector_curve::plan(&options);
    if std::env::var_os("RINGLEADER_CURVE_PLAN").is_some() {
        eprintln!("{}", plan.flags());
    }
    let curve = detector_curve::curve(&options, &list, &plan)?;
    if let Some(path) = &a.html {
        let page = curve.html().map_err(|e| anyhow::anyhow!("--html: {e}"))?;
        std::fs::write(path, page).map_err(|e| anyhow::anyhow!("--html {}: {e}", path.display()))?;
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&curve)?);
    } else {
        print!("{}", curve.table());
    }
    Ok(crate::ExitStatus::Ok)
}
