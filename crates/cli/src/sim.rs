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
    /// Number of nodes, 1..1000000 [default: 5]. Algorithms whose state or messages grow as N²
    /// (bully, lamport, suzuki-kasami, vector-clock, chandy-misra-haas, heartbeat, phi-accrual)
    /// are refused up front when their estimated memory exceeds 4 GiB.
    #[arg(long, value_name = "N")]
    pub nodes: Option<u32>,
    /// Seed of the run's random streams (one per purpose and node, derived from it), any 64-bit number [default: 1].
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,
    /// How ids are laid out over positions [default: ascending].
    #[arg(long, value_name = "ARRANGEMENT", value_enum)]
    pub ids: Option<IdsArg>,
    /// Who starts an election at time 0: all, lowest, highest, none, or ids like 3 or 1,4
    /// (lowest/highest mean the lowest/highest live id); elections only [default: lowest].
    #[arg(long, value_name = "WHO")]
    pub initiators: Option<Initiators>,
    /// Crash node ID at TIME (repeatable), e.g. --crash 7@0; TIME at most --duration, and a
    /// node already down cannot crash again.
    #[arg(long, value_name = "ID@TIME")]
    pub crash: Vec<At>,
    /// Recover node ID at TIME (repeatable); the node must be down (crashed earlier).
    #[arg(long, value_name = "ID@TIME")]
    pub recover: Vec<At>,
    /// Pause node ID (slow, not dead) from FROM to TO (repeatable), e.g. --pause 3@10ms..200ms;
    /// FROM before TO and before the end, pauses of one node do not overlap.
    #[arg(long, value_name = "ID@FROM..TO")]
    pub pause: Vec<Pause>,
    /// Cut A,B from C,D from FROM to TO (repeatable); A,B>C,D cuts one way only. Each id once,
    /// FROM before TO and before the end.
    #[arg(long, value_name = "A,B|C,D@FROM..TO")]
    pub partition: Vec<Partition>,
    /// Probability that a message is lost, 0..1 [default: 0].
    #[arg(long, value_name = "P")]
    pub loss: Option<f64>,
    /// Probability that a message is delivered twice, 0..1 [default: 0].
    #[arg(long, value_name = "P")]
    pub dup: Option<f64>,
    /// One-way latency: constant:D, uniform:A..B, exponential:MEAN, normal:MEAN,SD,
    /// lognormal:MEDIAN,SIGMA (SIGMA 0..3); its bound (maximum, or 99.99th percentile) at
    /// most 60s [default: constant:1ms].
    #[arg(long, value_name = "SPEC")]
    pub latency: Option<Latency>,
    /// Deliver messages on each link in the order they were sent.
    #[arg(long)]
    pub fifo: bool,
    /// The delay bound algorithms may assume (Ttrans in timeouts), from the latency's bound to
    /// 60s [default: the latency's bound].
    #[arg(long, value_name = "TIME")]
    pub max_delay: Option<TimeSpan>,
    /// Stop runs that never go quiet after this much virtual time, above 0 and at most 24h
    /// [default: 1h = 3600s; 10s for failure detectors].
    #[arg(long, value_name = "TIME")]
    pub duration: Option<TimeSpan>,
    /// The communication graph, for algorithms that run on arbitrary graphs (yoyo: any shape)
    /// or trees (raymond: tree, line, star, random-tree, or a file holding a tree); ring and
    /// complete-graph algorithms take none. SHAPE: random (a random connected graph with
    /// --edges edges), grid (⌊√N⌋ rows filled row by row, 4-neighbour), tree (balanced binary,
    /// rooted at position 1), line, star (position 1 in the middle), random-tree (each position
    /// joins a uniformly chosen earlier one), or file:PATH (one `A B` pair of 1-based positions
    /// per line, # comments; N is --nodes) [default: random for graph algorithms, tree for tree
    /// algorithms].
    #[arg(long, value_name = "SHAPE")]
    pub graph: Option<ShapeSpec>,
    /// Edges of the random connected graph (--graph random only), between N − 1 and N(N − 1)/2
    /// [default: 2N, or N(N − 1)/2 when smaller].
    #[arg(long, value_name = "M")]
    pub edges: Option<u64>,
    /// Workload: sequential, saturated, poisson (mutual exclusion); messages (clocks: local
    /// events and sends) [default: sequential for mutex, messages for clock algorithms].
    /// Elections and detectors have no workload and take none of the workload flags.
    #[arg(long, value_name = "KIND", value_enum)]
    pub workload: Option<WorkloadArg>,
    /// Critical-section entries (mutex), transactions (deadlock) or events (messages workload)
    /// to request in total, 0..10000000 [default: 10].
    #[arg(long, value_name = "E")]
    pub entries: Option<u64>,
    /// Time a holder stays in the critical section (mean, under poisson; the mean hold and
    /// think time of deadlock transactions), 0..1h; mutex and deadlock runs [default: 1ms].
    #[arg(long, value_name = "TIME")]
    pub hold: Option<TimeSpan>,
    /// Requests (poisson) or events (clock messages workload) per second per node, above 0 and
    /// at most 1000000 [default: 10].
    #[arg(long, value_name = "R")]
    pub rate: Option<f64>,
    /// Which ids make requests (mutex and clock runs), each once, e.g. 2,3,4 [default: all; all
    /// but node 0 under sequential].
    #[arg(long, value_name = "IDS")]
    pub requesters: Option<Initiators>,
    /// Deadlock workload: probability that a request closes a wait-for cycle, 0..1 [default: 0.3].
    #[arg(long, value_name = "P")]
    pub cycles: Option<f64>,
    /// Destinations of each send event (messages workload of clock runs), 1..N−1 [default: 1].
    #[arg(long, value_name = "K")]
    pub fanout: Option<u32>,
    /// Deadlock workload: the most holders one request waits for, 1..N−1 [default: 2].
    #[arg(long, value_name = "K")]
    pub holders: Option<u32>,
    /// Draw each node's initial clock offset uniformly from ±TIME, 0..1h [default: 0].
    #[arg(long, value_name = "TIME")]
    pub clock_offset: Option<TimeSpan>,
    /// Draw each node's clock drift uniformly from ±PPM parts per million, 0..100000 (10 %)
    /// [default: 0].
    #[arg(long, value_name = "PPM")]
    pub drift_ppm: Option<u32>,
    /// Slew clock corrections in at PPM parts per million, 1..500000 [default: 500, the
    /// `adjtime` rate: 0.5 ms per second].
    #[arg(long, value_name = "PPM")]
    pub slew_ppm: Option<u32>,
    /// Let a forward clock correction step at once (a backward one always slews: a clock never
    /// reads a time it has already shown).
    #[arg(long)]
    pub step_forward: bool,
    /// Algorithm parameter (repeatable), e.g. --param timeout=20ms; a time-valued parameter other
    /// than its default lies in 100us..1h.
    #[arg(long, value_name = "KEY=VALUE", value_parser = parse_param)]
    pub param: Vec<(String, String)>,
    /// A property of the algorithm's family whose violation the run is expected to find
    /// (repeatable).
    #[arg(long, value_name = "PROPERTY")]
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
    /// Write a ShiViz log of the run (runs of at most 64 nodes: it needs vector timestamps).
    #[arg(long, value_name = "FILE.log")]
    pub shiviz: Option<PathBuf>,
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
        keep_at_most: args.shiviz.is_none().then_some(ringleader_viz::html::MAX_RECORDS),
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
    // The verdict in the words the command line prints.
    let human = report.human(None);
    let verdict = human.lines().find_map(|l| l.strip_prefix("verdict")).unwrap_or("").trim().to_string();
    Ok(ringleader_viz::html(&ringleader_viz::RunView {
        title,
        source: "sim",
        uids: &result.uids,
        records: &result.records,
        total_records: result.total_records,
        report: serde_json::to_value(report)?,
        verdict,
        ok: report.as_expected(),
        violation_window: result.violation_window,
    }))
}
