//! `ringleader bench`: how fast the simulator runs, and how much memory it takes.
//!
//! Each case runs in a child process of its own so that its peak resident memory (VmHWM) is
//! its own. The default cases are the ones `docs/PERFORMANCE.md` records: Chang-Roberts on a
//! ring of 1,000,000 nodes with random ids and every node initiating, under constant latency
//! (1 ms) and under `uniform:1ms..2ms`, where the event queue really has to order events.
//! `--threads T` measures each case a second time on the windowed engine split across T threads.

use std::process::Command;

use anyhow::{Context as _, bail};
use clap::Args;
use ringleader_sim::notation::Latency;
use ringleader_sim::scenario::{IdArrangement, Initiators};
use ringleader_sim::{RunConfig, RunOptions};
use serde::{Deserialize, Serialize};

/// Measure the simulator on large rings.
#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Ring size, 1..1000000.
    #[arg(long, default_value_t = 1_000_000, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    nodes: u32,
    /// Algorithm to measure.
    #[arg(long, default_value = "chang-roberts")]
    algo: String,
    /// Latency specs to measure, one case each (repeatable)
    /// [default: constant:1ms and uniform:1ms..2ms].
    #[arg(long, value_name = "SPEC")]
    latency: Vec<Latency>,
    /// Also measure each case on the windowed engine split across T threads (repeatable, 1..256),
    /// e.g. --threads 1 --threads 2: the speed-up of one run on several cores.
    #[arg(long, value_name = "T", value_parser = clap::value_parser!(u16).range(1..=256))]
    threads: Vec<u16>,
    /// Print one JSON array instead of a table.
    #[arg(long)]
    json: bool,
    /// Run one case in this process (used by the parent; implies --json).
    #[arg(long, hide = true)]
    single: bool,
}

/// One measured case.
#[derive(Debug, Serialize, Deserialize)]
struct Measurement {
    algorithm: String,
    nodes: u32,
    latency: String,
    /// `serial`, or `windowed T` for the windowed engine on T threads.
    #[serde(default = "serial")]
    engine: String,
    events: u64,
    messages_delivered: u64,
    wall_seconds: f64,
    cpu_seconds: f64,
    events_per_second: f64,
    delivered_per_second: f64,
    delivered_per_cpu_second: f64,
    peak_rss_mib: f64,
    leader: serde_json::Value,
    properties_hold: bool,
}

fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmHWM:")).map(str::to_owned))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|kb| kb.parse::<f64>().ok()))
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// CPU time (user + system) this process has used, from getrusage (microsecond resolution; a
/// 1,000-node ring takes a few milliseconds); it is what the run cost even when other processes
/// compete for the cores.
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage only writes the zero-initialised struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

fn serial() -> String {
    "serial".into()
}

fn measure(algo: &str, nodes: u32, latency: &Latency, threads: Option<u16>) -> anyhow::Result<Measurement> {
    let mut cfg = RunConfig::new(algo, nodes)?;
    cfg.ids = IdArrangement::Random;
    cfg.initiators = Initiators::All;
    cfg.latency = latency.clone();
    cfg.max_delay = latency.bound();
    let cpu_before = cpu_seconds();
    let opts = RunOptions { threads: threads.map(usize::from), ..RunOptions::default() };
    let r = ringleader_sim::run(&cfg, opts)?.report;
    let cpu = cpu_seconds() - cpu_before;
    Ok(Measurement {
        algorithm: algo.into(),
        nodes,
        latency: latency.to_string(),
        engine: threads.map_or_else(serial, |t| format!("windowed {t}")),
        events: r.events,
        messages_delivered: r.messages.delivered,
        wall_seconds: r.wall_seconds,
        cpu_seconds: cpu,
        delivered_per_cpu_second: r.messages.delivered as f64 / cpu,
        events_per_second: r.events as f64 / r.wall_seconds,
        delivered_per_second: r.messages.delivered as f64 / r.wall_seconds,
        peak_rss_mib: peak_rss_mib(),
        leader: r.outcome.election().and_then(|e| e.leader).map_or(serde_json::Value::Null, Into::into),
        properties_hold: r.properties.iter().all(|p| p.holds),
    })
}

/// Runs `ringleader bench`.
pub fn run(args: BenchArgs) -> crate::CommandResult {
    let latencies = if args.latency.is_empty() {
        vec![Latency::Constant(1_000_000), Latency::Uniform(1_000_000, 2_000_000)]
    } else {
        args.latency.clone()
    };
    if args.single {
        let m = measure(&args.algo, args.nodes, &latencies[0], args.threads.first().copied())?;
        println!("{}", serde_json::to_string(&m)?);
        return Ok(crate::ExitStatus::Ok);
    }
    let exe = std::env::current_exe().context("cannot find the ringleader executable")?;
    // The recorded figures use the `perf` profile (thin LTO); say so when this build is another.
    let profile = exe.parent().and_then(|d| d.file_name()).and_then(|d| d.to_str()).unwrap_or("");
    if profile != "perf" && !args.json {
        eprintln!(
            "note: this binary is from target/{profile}; docs/PERFORMANCE.md's figures use the perf \
             profile (thin LTO): cargo build --profile perf && target/perf/ringleader bench"
        );
    }
    let mut results = Vec::new();
    let engines: Vec<Option<u16>> =
        std::iter::once(None).chain(args.threads.iter().copied().map(Some)).collect();
    for (lat, threads) in latencies.iter().flat_map(|l| engines.iter().map(move |&t| (l, t))) {
        let engine = threads.map_or_else(serial, |t| format!("windowed engine on {t} threads"));
        if !args.json {
            eprintln!("measuring {} on {} nodes, latency {lat}, {engine} …", args.algo, args.nodes);
        }
        let mut child = Command::new(&exe);
        child.args(["bench", "--single", "--algo", &args.algo, "--nodes", &args.nodes.to_string()]);
        child.args(["--latency", &lat.to_string()]);
        if let Some(t) = threads {
            child.args(["--threads", &t.to_string()]);
        }
        let out = child.output().context("cannot start the measuring child process")?;
        if !out.status.success() {
            bail!("bench case {lat}, {engine} failed: {}", String::from_utf8_lossy(&out.stderr).trim());
        }
        let m: Measurement =
            serde_json::from_slice(&out.stdout).context("bench child printed no measurement")?;
        results.push(m);
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&results)?);
    } else {
        println!(
            "| algorithm | nodes | latency | engine | events | delivered | wall s | cpu s | delivered/s (wall) | delivered/s (cpu) | peak RSS MiB | leader | properties |"
        );
        println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
        for m in &results {
            println!(
                "| {} | {} | {} | {} | {} | {} | {:.2} | {:.2} | {:.2e} | {:.2e} | {:.0} | {} | {} |",
                m.algorithm,
                m.nodes,
                m.latency,
                m.engine,
                m.events,
                m.messages_delivered,
                m.wall_seconds,
                m.cpu_seconds,
                m.delivered_per_second,
                m.delivered_per_cpu_second,
                m.peak_rss_mib,
                m.leader,
                if m.properties_hold { "hold" } else { "VIOLATED" }
            );
        }
    }
    Ok(crate::ExitStatus::violation_unless(results.iter().all(|m| m.properties_hold)))
}
