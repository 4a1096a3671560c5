//! `ringleader sim`: one simulated run.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::Context as _;
use clap::Args;
use ringleader_sim::notation::{At, Latency, Partition, Pause};
use ringleader_sim::scenario::{
    ClocksSection, ExpectSection, FaultsSection, IdArrangement, Initiators, NetworkSection, TimeSpan,
    WorkloadKind, WorkloadSection,
};
use ringleader_sim::settings;
use ringleader_sim::topologies::ShapeSpec;
use ringleader_sim::{Progress, RunOptions, Scenario};

/// Simulate one run and check its properties
///
/// Flags override the scenario file field by field.
///
/// Times take a unit (ns, us, ms, s, min, h: 250us, 1.5ms, 2s, 24h); a bare number means milliseconds.
/// Node ids are 1..N; under --ids ascending position i holds id i+1.
///
/// Examples:
///   ringleader sim --algo chang-roberts --nodes 8 --ids descending --initiators all
///   ringleader sim --algo central --nodes 5 --workload sequential --entries 10 --json
///   ringleader sim --algo yoyo --nodes 100 --graph grid --ids random
///   ringleader sim scenarios/central-timeout-paused-holder.toml --mermaid run.mmd
///   ringleader sim --algo chang-roberts --nodes 1000000 --ids random --initiators all --threads 2
#[derive(Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct SimCommand {
    #[command(flatten)]
    pub args: SimArgs,
    /// Run on the windowed engine, split across T threads (1..256): the same run, trace and
    /// report, on any T, but not the serial engine's run for the same seed. Elections and mutual
    /// exclusion without a fault plan, under constant:D or uniform:A..B latency with A > 0 (the
    /// least delay is what lets a thread run ahead); docs/PERFORMANCE.md says why the rest runs
    /// serially.
    #[arg(long, value_name = "T", value_parser = clap::value_parser!(u16).range(1..=256))]
    pub threads: Option<u16>,
}

/// The flags that describe a run (shared by `sim`, `sweep` and the explorer's `ui`).
#[derive(Args, Debug, Default)]
pub struct SimArgs {
    /// A scenario file (TOML); see scenarios/ for examples.
    pub scenario: Option<PathBuf>,
    /// Algorithm to run (see `ringleader list`).
    #[arg(long, value_name = "NAME")]
    pub algo: Option<String>,
    /// The run setting [`settings::NODES`].
    #[arg(long, value_name = settings::NODES.value_name, help = settings::NODES.help)]
    pub nodes: Option<u32>,
    /// The run setting [`settings::SEED`].
    #[arg(long, value_name = settings::SEED.value_name, help = settings::SEED.help)]
    pub seed: Option<u64>,
    /// The run setting [`settings::IDS`].
    #[arg(long, value_name = settings::IDS.value_name, value_enum, help = settings::IDS.help)]
    pub ids: Option<IdsArg>,
    /// The run setting [`settings::INITIATORS`].
    #[arg(long, value_name = settings::INITIATORS.value_name, help = settings::INITIATORS.help)]
    pub initiators: Option<Initiators>,
    /// The run setting [`settings::CRASH`].
    #[arg(long, value_name = settings::CRASH.value_name, help = settings::CRASH.help)]
    pub crash: Vec<At>,
    /// The run setting [`settings::RECOVER`].
    #[arg(long, value_name = settings::RECOVER.value_name, help = settings::RECOVER.help)]
    pub recover: Vec<At>,
    /// The run setting [`settings::PAUSE`].
    #[arg(long, value_name = settings::PAUSE.value_name, help = settings::PAUSE.help)]
    pub pause: Vec<Pause>,
    /// The run setting [`settings::PARTITION`].
    #[arg(long, value_name = settings::PARTITION.value_name, help = settings::PARTITION.help)]
    pub partition: Vec<Partition>,
    /// The run setting [`settings::LOSS`].
    #[arg(long, value_name = settings::LOSS.value_name, help = settings::LOSS.help)]
    pub loss: Option<f64>,
    /// The run setting [`settings::DUP`].
    #[arg(long, value_name = settings::DUP.value_name, help = settings::DUP.help)]
    pub dup: Option<f64>,
    /// The run setting [`settings::LATENCY`].
    #[arg(long, value_name = settings::LATENCY.value_name, help = settings::LATENCY.help)]
    pub latency: Option<Latency>,
    /// The run setting [`settings::FIFO`].
    #[arg(long, help = settings::FIFO.help)]
    pub fifo: bool,
    /// The run setting [`settings::MAX_DELAY`].
    #[arg(long, value_name = settings::MAX_DELAY.value_name, help = settings::MAX_DELAY.help)]
    pub max_delay: Option<TimeSpan>,
    /// The run setting [`settings::DURATION`].
    #[arg(long, value_name = settings::DURATION.value_name, help = settings::DURATION.help)]
    pub duration: Option<TimeSpan>,
    /// The run setting [`settings::GRAPH`].
    #[arg(long, value_name = settings::GRAPH.value_name, help = settings::GRAPH.help)]
    pub graph: Option<ShapeSpec>,
    /// The run setting [`settings::EDGES`].
    #[arg(long, value_name = settings::EDGES.value_name, help = settings::EDGES.help)]
    pub edges: Option<u64>,
    /// The run setting [`settings::WORKLOAD`].
    #[arg(long, value_name = settings::WORKLOAD.value_name, value_enum, help = settings::WORKLOAD.help)]
    pub workload: Option<WorkloadArg>,
    /// The run setting [`settings::ENTRIES`].
    #[arg(long, value_name = settings::ENTRIES.value_name, help = settings::ENTRIES.help)]
    pub entries: Option<u64>,
    /// The run setting [`settings::HOLD`].
    #[arg(long, value_name = settings::HOLD.value_name, help = settings::HOLD.help)]
    pub hold: Option<TimeSpan>,
    /// The run setting [`settings::RATE`].
    #[arg(long, value_name = settings::RATE.value_name, help = settings::RATE.help)]
    pub rate: Option<f64>,
    /// The run setting [`settings::REQUESTERS`].
    #[arg(long, value_name = settings::REQUESTERS.value_name, help = settings::REQUESTERS.help)]
    pub requesters: Option<Initiators>,
    /// The run setting [`settings::CYCLES`].
    #[arg(long, value_name = settings::CYCLES.value_name, help = settings::CYCLES.help)]
    pub cycles: Option<f64>,
    /// The run setting [`settings::FANOUT`].
    #[arg(long, value_name = settings::FANOUT.value_name, help = settings::FANOUT.help)]
    pub fanout: Option<u32>,
    /// The run setting [`settings::HOLDERS`].
    #[arg(long, value_name = settings::HOLDERS.value_name, help = settings::HOLDERS.help)]
    pub holders: Option<u32>,
    /// The run setting [`settings::CLOCK_OFFSET`].
    #[arg(long, value_name = settings::CLOCK_OFFSET.value_name, help = settings::CLOCK_OFFSET.help)]
    pub clock_offset: Option<TimeSpan>,
    /// The run setting [`settings::DRIFT_PPM`].
    #[arg(long, value_name = settings::DRIFT_PPM.value_name, help = settings::DRIFT_PPM.help)]
    pub drift_ppm: Option<u32>,
    /// The run setting [`settings::SLEW_PPM`].
    #[arg(long, value_name = settings::SLEW_PPM.value_name, help = settings::SLEW_PPM.help)]
    pub slew_ppm: Option<u32>,
    /// The run setting [`settings::STEP_FORWARD`].
    #[arg(long, help = settings::STEP_FORWARD.help)]
    pub step_forward: bool,
    /// Algorithm parameter (repeatable), e.g. --param timeout=20ms; a time-valued parameter other
    /// than its default lies in 100us..1h.
    #[arg(long, value_name = "KEY=VALUE", value_parser = parse_param)]
    pub param: Vec<(String, String)>,
    /// The run setting [`settings::EXPECT`].
    #[arg(long, value_name = settings::EXPECT.value_name, help = settings::EXPECT.help)]
    pub expect: Vec<String>,
    /// Use the generic defaults (no fault, perfect clocks, …) for every setting left unset,
    /// instead of the algorithm's default story (docs/ lists each story; scenario files never
    /// get one).
    #[arg(long)]
    pub plain: bool,
    /// Print exactly one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
    /// Write the trace, one JSON object per line.
    #[arg(long, value_name = "FILE.jsonl")]
    pub trace: Option<PathBuf>,
    /// Write a Mermaid sequence diagram of the run.
    #[arg(long, value_name = "FILE.mmd")]
    pub mermaid: Option<PathBuf>,
    /// Write the run as one self-contained HTML page: a space-time diagram with step controls.
    #[arg(long, value_name = "FILE.html")]
    pub html: Option<PathBuf>,
    /// At most this many trace records on the --html page. A longer run keeps its first half,
    /// then its faults and violations (up to a quarter), then its end; the page marks each cut
    /// and says what it left out. The run is made a second time to find its end.
    #[arg(long, value_name = "N", default_value_t = ringleader_viz::html::MAX_RECORDS,
          value_parser = parse_page_records, requires = "html")]
    pub page_records: usize,
    /// Write a ShiViz log of the run (runs of at most 64 nodes: it needs vector timestamps).
    #[arg(long, value_name = "FILE.log")]
    pub shiviz: Option<PathBuf>,
}

/// `--page-records`: 1 to the page's ceiling.
fn parse_page_records(s: &str) -> Result<usize, String> {
    let max = ringleader_viz::html::MAX_RECORDS;
    match s.parse::<usize>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(format!("a number of records from 1 to {max}")),
    }
}

/// Reads one `--param KEY=VALUE`.
pub fn parse_param(s: &str) -> Result<(String, String), String> {
    let (k, v) = s.split_once('=').ok_or_else(|| format!("{s:?}: expected KEY=VALUE"))?;
    if k.trim().is_empty() {
        return Err(format!("{s:?}: the key is empty"));
    }
    Ok((k.trim().into(), v.trim().into()))
}

/// `--ids`: how ids are laid out over positions, by [`IdArrangement::name`]. (The variants
/// carry no doc comments: clap would list them in `--help`, which shows the names on one line.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum IdsArg {
    Ascending,
    Descending,
    Random,
}

impl From<IdsArg> for IdArrangement {
    fn from(a: IdsArg) -> IdArrangement {
        match a {
            IdsArg::Ascending => IdArrangement::Ascending,
            IdsArg::Descending => IdArrangement::Descending,
            IdsArg::Random => IdArrangement::Random,
        }
    }
}

/// `--workload`: the request pattern, by [`WorkloadKind::name`] (no doc comments on the
/// variants, as for [`IdsArg`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum WorkloadArg {
    Sequential,
    Saturated,
    Poisson,
    Messages,
}

impl From<WorkloadArg> for WorkloadKind {
    fn from(a: WorkloadArg) -> WorkloadKind {
        match a {
            WorkloadArg::Sequential => WorkloadKind::Sequential,
            WorkloadArg::Saturated => WorkloadKind::Saturated,
            WorkloadArg::Poisson => WorkloadKind::Poisson,
            WorkloadArg::Messages => WorkloadKind::Messages,
        }
    }
}

impl SimArgs {
    /// The flags as a scenario overlay.
    pub fn overlay(&self) -> Scenario {
        let ids = self.ids.map(IdArrangement::from);
        let workload = self.workload.map(WorkloadKind::from);
        Scenario {
            algorithm: self.algo.clone(),
            nodes: self.nodes,
            seed: self.seed,
            ids,
            initiators: self.initiators.clone(),
            duration: self.duration,
            edges: self.edges,
            graph: self.graph.clone(),
            params: self
                .param
                .iter()
                .map(|(k, v)| (k.clone(), toml::Value::String(v.clone())))
                .collect::<BTreeMap<_, _>>(),
            network: NetworkSection {
                latency: self.latency.clone(),
                loss: self.loss,
                dup: self.dup,
                fifo: self.fifo.then_some(true),
                max_delay: self.max_delay,
            },
            faults: FaultsSection {
                crash: self.crash.clone(),
                recover: self.recover.clone(),
                pause: self.pause.clone(),
                partition: self.partition.clone(),
            },
            workload: WorkloadSection {
                kind: workload,
                entries: self.entries,
                hold: self.hold,
                rate: self.rate,
                requesters: self.requesters.clone(),
                cycles: self.cycles,
                fanout: self.fanout,
                holders: self.holders,
            },
            clocks: ClocksSection {
                offset: self.clock_offset,
                drift_ppm: self.drift_ppm,
                slew_ppm: self.slew_ppm,
                step_forward: self.step_forward.then_some(true),
            },
            expect: ExpectSection { violations: self.expect.clone() },
            ..Scenario::default()
        }
    }
}

/// The run the arguments describe: the scenario file, the flags over it, then `extra` over
/// both (`ringleader sweep` passes a variant's flags there).
pub fn resolve_config(args: &SimArgs, extra: Scenario) -> anyhow::Result<ringleader_sim::RunConfig> {
    let base = match &args.scenario {
        Some(path) => Scenario::load(path)?,
        None => Scenario::default(),
    };
    let merged = base.merge(args.overlay()).merge(extra);
    // Settings left unset take the algorithm's default story (command-line runs only).
    let merged =
        if args.scenario.is_none() && !args.plain { ringleader_sim::stories::apply(merged)? } else { merged };
    Ok(merged.resolve(args.scenario.clone())?)
}

/// Runs `ringleader sim`; returns the exit status.
pub fn run(command: SimCommand) -> crate::CommandResult {
    let SimCommand { args, threads } = command;
    let cfg = resolve_config(&args, Scenario::default())?;
    let info =
        ringleader_registry::find(&cfg.algorithm).expect("a resolved run names a registered algorithm");
    if let Some(most) = ringleader_sim::input::interactive_nodes(&info)
        && cfg.nodes > most
    {
        eprintln!(
            "warning: --nodes {}: {} will spend about {} building its nodes before the first event (its start-up \
             grows as N³; above {most} nodes it passes 2 s)",
            cfg.nodes,
            cfg.algorithm,
            ringleader_sim::input::seconds(ringleader_sim::input::startup_estimate(&info, cfg.nodes))
        );
    }
    let show_progress = !args.json && std::io::stderr().is_terminal();
    let bar = show_progress.then(|| {
        let b = indicatif::ProgressBar::new(cfg.duration.max(1));
        b.set_style(
            indicatif::ProgressStyle::with_template("{spinner} {msg} [{elapsed_precise}]")
                .expect("valid template"),
        );
        b
    });
    let mut on_progress = |p: Progress| {
        if let Some(b) = &bar {
            b.set_message(format!(
                "{} steps, virtual {:.3} ms, {} queued",
                p.step,
                p.now as f64 / 1e6,
                p.queued
            ));
            b.tick();
        }
    };
    let opts = RunOptions {
        trace: args.trace.clone(),
        keep_trace: args.mermaid.is_some() || args.html.is_some() || args.shiviz.is_some(),
        // A page embeds at most its first MAX_RECORDS records and a diagram draws fewer: keep no
        // more than that while the run goes on. A ShiViz log is the whole run: it keeps all.
        keep_at_most: args.shiviz.is_none().then_some(args.page_records),
        progress: Some(&mut on_progress),
        threads: threads.map(usize::from),
    };
    let result = ringleader_sim::run(&cfg, opts)?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    if let Some(path) = &args.mermaid {
        std::fs::write(path, result.mermaid()).with_context(|| format!("{}", path.display()))?;
    }
    if let Some(path) = &args.html {
        std::fs::write(path, html_page(&result, cfg.name.as_deref())?)
            .with_context(|| format!("{}", path.display()))?;
    }
    if let Some(path) = &args.shiviz {
        let log = ringleader_viz::shiviz(&result.records).map_err(|e| anyhow::anyhow!("--shiviz: {e}"))?;
        std::fs::write(path, log).with_context(|| format!("{}", path.display()))?;
    }
    let report = &result.report;
    if args.json {
        println!("{}", serde_json::to_string_pretty(report)?);
    } else {
        print!("{}", report.human(cfg.description.as_deref()));
        if let Some(p) = &args.trace {
            println!("trace      {}", p.display());
        }
        if let Some(p) = &args.mermaid {
            println!("diagram    {}", p.display());
        }
        if let Some(p) = &args.html {
            println!("html       {}", p.display());
        }
        if let Some(p) = &args.shiviz {
            println!("shiviz     {}", p.display());
        }
    }
    Ok(crate::ExitStatus::violation_unless(report.as_expected()))
}

/// The HTML page of a simulated run (`--html`, `demo`).
pub fn html_page(result: &ringleader_sim::RunResult, scenario: Option<&str>) -> anyhow::Result<String> {
    let report = &result.report;
    let title = match scenario {
        Some(name) => name.to_string(),
        None => format!("{}, {} nodes, seed {}", report.algorithm, report.nodes, report.seed),
    };
    Ok(ringleader_viz::html(&ringleader_viz::RunView {
        title,
        source: "sim",
        uids: &result.uids,
        records: &result.records,
        gaps: &result.gaps,
        total_records: result.total_records,
        report: serde_json::to_value(report)?,
        verdict: report.verdict_line(),
        ok: report.as_expected(),
        violation_window: result.violation_window,
        explore: None,
    }))
}

#[cfg(test)]
mod tests {
    use clap::{Args as _, Command};

    use super::*;

    /// Every run setting of the table is a flag of `sim` (and so of `sweep` and the
    /// playground), with the table's value name and help text.
    #[test]
    fn every_run_setting_is_a_flag_with_the_tables_help() {
        let command = SimArgs::augment_args(Command::new("sim"));
        for setting in settings::ALL {
            let arg = command
                .get_arguments()
                .find(|a| a.get_long() == Some(setting.long()))
                .unwrap_or_else(|| panic!("{} is not a flag of sim", setting.flag));
            assert_eq!(
                arg.get_help().map(|h| h.to_string()).as_deref(),
                Some(setting.help),
                "{}",
                setting.flag
            );
            let names: Vec<String> =
                arg.get_value_names().unwrap_or_default().iter().map(|n| n.to_string()).collect();
            let expected: Vec<String> = setting.value_name.iter().map(|n| n.to_string()).collect();
            if setting.value_name.is_some() {
                assert_eq!(names, expected, "{}", setting.flag);
            }
        }
    }
}
