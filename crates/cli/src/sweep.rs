//! `ringleader sweep`: one run per seed (and per size and variant), on every core, summarised.
//!
//! Argument plumbing only: the runs are built exactly as `ringleader sim` builds them
//! ([`crate::sim::resolve_config`]) and the sweep itself is [`ringleader_sim::sweep`].

use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::{Context as _, bail};
use clap::{Args, Parser, Subcommand};
use ringleader_sim::sweep::{self, Seeds, Shard, SweepConfig, SweepOutput};

use crate::sim::SimArgs;

/// Run an algorithm over a range of seeds on every core and summarise the runs
///
/// Every `ringleader sim` flag (and a scenario file) describes the run; --seeds gives the
/// seeds, --nodes may list sizes and --variant adds fault (or any flag) variants: the sweep
/// runs every size × variant × seed. The summary gives, per configuration, min/p50/p99/max of
/// the messages, of each latency the checker measures (a run's mean: time to leader, entry
/// latency, detection time) and of every numeric outcome (clock skew, entries, aborts), and
/// how many runs violated each property and how many left it undecided (cut off by
/// --duration before it could be decided), with the repro lines of the first such seeds, and
/// how many runs proved that no progress was possible any more. Its content does not depend on
/// --threads or on sharding. The human summary ends each configuration with the textbook's
/// message cost for its algorithm (what `ringleader table` measures under the textbook's own
/// workload); a run cut off with operations under way gives its cost per operation as two
/// bounds (`messages_per_<unit>` and `..._incl_unfinished`).
///
/// --shard I/K runs the seeds whose index is I mod K; `sweep merge` combines the K outputs
/// (written with --json) into what one machine would have printed.
///
/// Exit status: 0 when every run found exactly its expected violations (the verdict says
/// UNDECIDED when some run left a property undecided), 2 otherwise; with --expect-decided, 2
/// also when any run left a property undecided.
///
/// Examples:
///   ringleader sweep --algo chang-roberts --nodes 16 --ids random --initiators all --seeds 1..10000
///   ringleader sweep --algo ricart-agrawala --nodes 4,8 --latency uniform:1ms..2ms --seeds 1..1000
///   ringleader sweep --algo central --seeds 1..500 --variant "" --variant "--loss 0.01" --csv
///   ringleader sweep --algo bully --seeds 1..10000 --shard 0/4 --json > part0.json
///   ringleader sweep merge part0.json part1.json part2.json part3.json
#[derive(Args, Debug)]
#[command(
    verbatim_doc_comment,
    args_conflicts_with_subcommands = true,
    mut_arg("nodes", |a| a.long("single-nodes").hide(true)),
    mut_arg("seed", |a| a.hide(true)),
    mut_arg("trace", |a| a.hide(true)),
    mut_arg("mermaid", |a| a.hide(true))
)]
pub struct SweepArgs {
    #[command(subcommand)]
    merge: Option<MergeCommand>,
    #[command(flatten)]
    sim: SimArgs,
    /// Node counts, one configuration each, e.g. 4 or 4,8,16 [default: 5].
    #[arg(long = "nodes", id = "node_list", value_name = "N[,N…]", value_delimiter = ',')]
    node_list: Vec<u32>,
    /// Seeds to run, FIRST..LAST inclusive, e.g. 1..10000.
    #[arg(long, value_name = "FIRST..LAST")]
    seeds: Option<Seeds>,
    /// A variant: extra sim flags in one argument, overriding the common ones (repeatable;
    /// "" is the common flags alone), e.g. --variant "--crash 3@0" --variant "--loss 0.01".
    #[arg(long = "variant", value_name = "FLAGS", allow_hyphen_values = true)]
    variants: Vec<String>,
    /// Worker threads [default: every core].
    #[arg(long, value_name = "T")]
    threads: Option<usize>,
    /// Run only shard I of K (0 <= I < K): the seeds whose index in the range is I mod K.
    #[arg(long, value_name = "I/K")]
    shard: Option<Shard>,
    /// Print the summary as CSV (one row per configuration and figure).
    #[arg(long, conflicts_with = "json")]
    csv: bool,
    /// Fail (exit 2) when any run leaves a property undecided, as when one finds an unexpected
    /// violation (for CI).
    #[arg(long)]
    expect_decided: bool,
}

#[derive(Subcommand, Debug)]
enum MergeCommand {
    /// Combine the --json outputs of the shards of one sweep into the whole sweep's summary.
    Merge(MergeArgs),
}

#[derive(Args, Debug)]
struct MergeArgs {
    /// The shards' JSON outputs (`ringleader sweep … --shard I/K --json > FILE`).
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// Print exactly one JSON object on stdout (with every run, so it can be merged again).
    #[arg(long)]
    json: bool,
    /// Print the summary as CSV.
    #[arg(long, conflicts_with = "json")]
    csv: bool,
    /// Fail (exit 2) when any run left a property undecided.
    #[arg(long)]
    expect_decided: bool,
}

/// A variant's flags, parsed as `ringleader sim` would.
#[derive(Parser, Debug)]
#[command(name = "--variant", no_binary_name = true)]
struct VariantFlags {
    #[command(flatten)]
    sim: SimArgs,
}

/// Runs `ringleader sweep`; returns the exit status.
pub fn run(args: SweepArgs) -> crate::CommandResult {
    if let Some(MergeCommand::Merge(m)) = args.merge {
        return merge(m);
    }
    let sim = &args.sim;
    let Some(seeds) = args.seeds else {
        bail!("sweep needs --seeds FIRST..LAST (inclusive), e.g. --seeds 1..1000");
    };
    if sim.seed.is_some() {
        bail!("--seed names one run; a sweep takes --seeds FIRST..LAST");
    }
    if sim.nodes.is_some() {
        bail!("--single-nodes is internal; give --nodes N or --nodes N,M,…");
    }
    if sim.trace.is_some() || sim.mermaid.is_some() {
        bail!(
            "--trace and --mermaid record one run: sweep prints each failing seed's repro line, run it with `ringleader sim`"
        );
    }
    if args.threads == Some(0) {
        bail!("--threads must be at least 1");
    }
    let threads = args.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let sizes: Vec<Option<u32>> = if args.node_list.is_empty() {
        vec![None]
    } else {
        args.node_list.iter().map(|&n| Some(n)).collect()
    };
    let variants: Vec<String> =
        if args.variants.is_empty() { vec![String::new()] } else { args.variants.clone() };
    let mut configs = Vec::new();
    for &size in &sizes {
        for variant in &variants {
            let words: Vec<&str> = variant.split_whitespace().collect();
            let flags = VariantFlags::try_parse_from(&words).map_err(|e| {
                let text = e.render().to_string();
                let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("bad flags").to_string();
                anyhow::anyhow!("--variant {variant:?}: {}", first.trim_start_matches("error: "))
            })?;
            let v = &flags.sim;
            if v.scenario.is_some() || v.seed.is_some() || v.json || v.trace.is_some() || v.mermaid.is_some()
            {
                bail!(
                    "--variant {variant:?}: a variant may change run flags only (no scenario file, --seed, --json, --trace, --mermaid)"
                );
            }
            let mut extra = v.overlay();
            if let Some(n) = size {
                extra.nodes = Some(n);
            }
            let run = crate::sim::resolve_config(sim, extra).with_context(|| {
                if variant.is_empty() { String::new() } else { format!("--variant {variant:?}") }
            })?;
            let mut label = format!("nodes={}", run.nodes);
            if !variant.trim().is_empty() {
                label = format!("{label} {}", words.join(" "));
            }
            configs.push(SweepConfig { label, run });
        }
    }
    let total = seeds.of_shard(args.shard).count() as u64 * configs.len() as u64;
    let bar = (std::io::stderr().is_terminal() && !args.sim.json).then(|| {
        let b = indicatif::ProgressBar::new(total);
        b.set_style(
            indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} runs, {per_sec}, eta {eta}")
                .expect("valid template"),
        );
        b
    });
    let tick = || {
        if let Some(b) = &bar {
            b.inc(1);
        }
    };
    let out = sweep::run(&configs, seeds, args.shard, threads, &tick)?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    print_output(&out, args.sim.json, args.csv)?;
    Ok(verdict(&out, args.expect_decided))
}

fn merge(m: MergeArgs) -> crate::CommandResult {
    let mut parts = Vec::new();
    for f in &m.files {
        let text = std::fs::read_to_string(f).with_context(|| format!("{}", f.display()))?;
        let part: SweepOutput = serde_json::from_str(&text).map_err(|e| {
            anyhow::anyhow!("{}: not the --json output of `ringleader sweep` ({e})", f.display())
        })?;
        parts.push(part);
    }
    let out = sweep::merge(parts)?;
    print_output(&out, m.json, m.csv)?;
    Ok(verdict(&out, m.expect_decided))
}

/// 0 when every run found exactly its expected violations (and, with `expect_decided`, left
/// no property undecided); 2 otherwise.
fn verdict(out: &SweepOutput, expect_decided: bool) -> crate::ExitStatus {
    crate::ExitStatus::violation_unless(out.as_expected() && (!expect_decided || out.undecided_runs() == 0))
}

fn print_output(out: &SweepOutput, json: bool, csv: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string(out)?);
    } else if csv {
        print!("{}", out.csv());
    } else {
        print!("{}", out.human_with_notes(&textbook));
    }
    Ok(())
}

/// The textbook's message cost of a configuration's algorithm, beside the measured rows: each
/// formula with the operation it is per and the workload it is stated for (`ringleader table`
/// runs that workload and compares). A run under another workload (a story's crash, a
/// heartbeat detector, random latencies) is not expected to match it; the rows say what was
/// measured, this says what the books promise.
fn textbook(c: &sweep::ConfigSummary) -> Vec<String> {
    let cases: Vec<_> =
        ringleader_analysis::table::cases().into_iter().filter(|k| k.algorithm == c.algorithm).collect();
    if cases.is_empty() {
        let why = ringleader_analysis::table::LEFT_OUT
            .iter()
            .find(|(name, _)| *name == c.algorithm)
            .map_or("`ringleader table` has no textbook case for it", |(_, why)| why);
        return vec![format!("textbook: no message cost per operation ({why})")];
    }
    let mut lines = vec![format!(
        "textbook ({}; `ringleader table --algo {}` measures it under these workloads):",
        if c.nodes == 0 { "N".to_string() } else { format!("N = {}", c.nodes) },
        c.algorithm
    )];
    for k in cases {
        lines.push(format!(
            "  {} {} messages per {} — {}",
            if k.bound { "≤" } else { "=" },
            k.formula,
            k.per,
            k.workload
        ));
    }
    lines
}
