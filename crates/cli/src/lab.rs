//! `ringleader lab`: the arguments of [`ringleader_lab`], which runs a learner's node program
//! over Maelstrom's protocol and judges it (`run`), or grades it on a battery (`grade`), and
//! writes a Rust crate on ringleader's `Process` contract (`new`).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Subcommand};
use ringleader_core::Uid;
use ringleader_lab::grade::{self, GradeConfig};
use ringleader_lab::{LabConfig, LabFamily};
use ringleader_sim::notation::{At, Latency, Partition, Pause};
use ringleader_sim::scenario::TimeSpan;

use crate::{CommandResult, ExitStatus};

/// Run your own implementation, in any language, and judge it (docs/LAB.md)
///
/// Your program speaks Maelstrom's protocol: one JSON message per line on stdin and stdout.
///
/// Examples:
///   ringleader lab run --family mutex --bin 'python3 lab/examples/mutex_ra.py' --nodes 5 --algo-like ricart-agrawala
///   ringleader lab run --family election --bin 'python3 lab/examples/election_cr.py' --nodes 5 --initiators 1,2,3,4,5 --lockstep
///   ringleader lab grade --family mutex --bin 'python3 lab/examples/mutex_ra.py' --algo-like ricart-agrawala --html card.html
///   ringleader lab grade --family deadlock --bin 'python3 lab/examples/deadlock_cmh.py' --scenario scenarios/cmh-report-only.toml
///   ringleader lab new my-ra --family mutex
///   ringleader lab grade --family mutex --crate my-ra --algo-like ricart-agrawala
#[derive(Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct LabArgs {
    #[command(subcommand)]
    command: LabCommand,
}

#[derive(Subcommand, Debug)]
enum LabCommand {
    /// Start N processes of your program, be their network and their clients, judge the run.
    Run(Box<RunArgs>),
    /// Run a battery (textbook scenarios, a seeded sweep) and print a report card.
    Grade(GradeArgs),
    /// Write a Rust crate for your own algorithm on ringleader's Process contract.
    New(NewArgs),
}

#[derive(Args, Debug)]
struct NewArgs {
    /// The crate's name (and directory, under --dir).
    name: String,
    /// The family: mutex, election, clock or deadlock.
    #[arg(long)]
    family: LabFamily,
    /// Where the crate's directory goes.
    #[arg(long, value_name = "DIR", default_value = ".")]
    dir: PathBuf,
    /// The ringleader workspace to depend on by path [default: the one this binary was built
    /// from].
    #[arg(long, value_name = "DIR")]
    ringleader_path: Option<PathBuf>,
}

/// What every lab command takes.
#[derive(Args, Debug)]
struct Common {
    /// The family: mutex, election, clock or deadlock.
    #[arg(long)]
    family: LabFamily,
    /// Your node program's command line (run by sh in the node's own directory; relative paths
    /// in it are resolved against the current directory).
    #[arg(long, value_name = "CMD")]
    bin: String,
    /// The algorithm yours is like: its textbook cost per operation (ricart-agrawala, lamport,
    /// central; chang-roberts, ring, bully).
    #[arg(long, value_name = "ALGO")]
    algo_like: Option<String>,
    /// Lockstep only: how long a node without the lab_done marker must stay silent to be done.
    #[arg(long, value_name = "TIME", default_value = "20ms")]
    quiet: TimeSpan,
}

#[derive(Args, Debug)]
struct RunArgs {
    #[command(flatten)]
    common: Common,
    /// Processes (n1..nN).
    #[arg(long, default_value_t = 3)]
    nodes: u32,
    /// Seed of the network model.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// One-way latency distribution.
    #[arg(long, value_name = "SPEC", default_value = "constant:1ms")]
    latency: Latency,
    /// Loss probability.
    #[arg(long, value_name = "P", default_value_t = 0.0)]
    loss: f64,
    /// Duplication probability.
    #[arg(long, value_name = "P", default_value_t = 0.0)]
    dup: f64,
    /// A partition, A,B|C,D@FROM..TO (or A,B>C,D@… one way); repeatable.
    #[arg(long, value_name = "SPEC")]
    partition: Vec<Partition>,
    /// A pause, ID@FROM..TO (inputs held); repeatable.
    #[arg(long, value_name = "SPEC")]
    pause: Vec<Pause>,
    /// A crash, ID@TIME (the process is killed); repeatable.
    #[arg(long, value_name = "ID@TIME")]
    crash: Vec<At>,
    /// A recovery, ID@TIME (started again in the same directory); repeatable.
    #[arg(long, value_name = "ID@TIME")]
    recover: Vec<At>,
    /// Mutex: entries per requester; deadlock: transactions per node.
    #[arg(long, value_name = "E", default_value_t = 2)]
    entries: u32,
    /// Mutex: the requesters, comma-separated ids [default: all].
    #[arg(long, value_name = "IDS", value_delimiter = ',')]
    requesters: Vec<Uid>,
    /// Mutex: how long a client holds the section; deadlock: how long a transaction holds
    /// before it asks, and runs before it commits.
    #[arg(long, value_name = "TIME", default_value = "1ms")]
    hold: TimeSpan,
    /// Mutex: a client's wait between a release and its next acquire; deadlock: between
    /// transactions (after twice the latency bound).
    #[arg(long, value_name = "TIME", default_value = "2ms")]
    think: TimeSpan,
    /// Clock: operations per node (local or send_to, drawn with the seed), think apart.
    #[arg(long, value_name = "K", default_value_t = 6)]
    events: u32,
    /// Deadlock: probability that a request closes a wait-for cycle.
    #[arg(long, value_name = "P", default_value_t = 0.5)]
    cycles: f64,
    /// Deadlock: the most holders one request waits for.
    #[arg(long, value_name = "K", default_value_t = 1)]
    holders: u32,
    /// Deadlock: a client that has waited this long gives up (abort) [default: never].
    #[arg(long, value_name = "TIME")]
    give_up: Option<TimeSpan>,
    /// Election: the nodes told to start_election, comma-separated ids.
    #[arg(long, value_name = "IDS", value_delimiter = ',', default_value = "1")]
    initiators: Vec<Uid>,
    /// Election: when the initiators are told.
    #[arg(long, value_name = "TIME", default_value = "0")]
    start: TimeSpan,
    /// One input at a time on a virtual clock (deterministic with the lab_done marker).
    #[arg(long)]
    lockstep: bool,
    /// Time limit (virtual in lockstep): a run busy then is cut off.
    #[arg(long, value_name = "TIME", default_value = "10s")]
    duration: TimeSpan,
    /// The most messages the nodes may send each other: a run that reaches it is cut off.
    #[arg(long, value_name = "M", default_value_t = 100_000)]
    max_messages: u64,
    /// Keep the nodes' working directories under DIR.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Write the trace (JSON lines).
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    /// Write the run's space-time page.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
#[command(group = clap::ArgGroup::new("what").required(true).args(["bin", "krate"]))]
struct GradeArgs {
    /// The family: mutex, election, clock or deadlock.
    #[arg(long)]
    family: LabFamily,
    /// Your node program's command line (run by sh in the node's own directory; relative paths
    /// in it are resolved against the current directory).
    #[arg(long, value_name = "CMD")]
    bin: Option<String>,
    /// A Rust crate `lab new` wrote: built with cargo and graded under ringleader's simulator
    /// (the same battery) and model checker (every interleaving of --check-nodes nodes).
    #[arg(long = "crate", value_name = "DIR")]
    krate: Option<PathBuf>,
    /// The algorithm yours is like: its textbook cost per operation (ricart-agrawala, lamport,
    /// central; chang-roberts, ring, bully).
    #[arg(long, value_name = "ALGO")]
    algo_like: Option<String>,
    /// Lockstep only: how long a node without the lab_done marker must stay silent to be done.
    #[arg(long, value_name = "TIME", default_value = "20ms")]
    quiet: TimeSpan,
    /// Processes per run.
    #[arg(long, default_value_t = 4)]
    nodes: u32,
    /// Seeds in the sweep.
    #[arg(long, default_value_t = 8)]
    seeds: u64,
    /// With --crate: nodes of the model checker's system [default: 3].
    #[arg(long, value_name = "M")]
    check_nodes: Option<u32>,
    /// A teacher's scenario file (the simulator's TOML format: nodes, seed, network, faults,
    /// workload, initiators, `[expect]`), run after the battery; repeatable.
    #[arg(long, value_name = "FILE")]
    scenario: Vec<PathBuf>,
    /// Write the space-time page of the first failing run.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Print the card as JSON.
    #[arg(long)]
    json: bool,
}

fn quiet(c: &Common) -> Duration {
    Duration::from_nanos(c.quiet.0)
}

pub fn lab(args: LabArgs) -> CommandResult {
    match args.command {
        LabCommand::Run(a) => run(*a),
        LabCommand::Grade(a) => grade(a),
        LabCommand::New(a) => new(a),
    }
}

fn new(a: NewArgs) -> CommandResult {
    let root = a.ringleader_path.unwrap_or_else(ringleader_lab::new::workspace_root);
    let dir = a.dir.join(&a.name);
    let files = ringleader_lab::new::new_crate(&dir, &a.name, a.family, &root)?;
    println!("wrote {} ({} family, ringleader at {}):", dir.display(), a.family.name(), root.display());
    for f in files {
        println!("  {}", f.display());
    }
    println!(
        "next: cd {} && cargo test (the rule test fails until you write it), then cargo run -- sim",
        dir.display()
    );
    Ok(ExitStatus::violation_unless(true))
}

fn run(a: RunArgs) -> CommandResult {
    let mut c = LabConfig::new(a.common.family, &a.common.bin, a.nodes);
    c.seed = a.seed;
    c.latency = a.latency;
    c.loss = a.loss;
    c.dup = a.dup;
    c.partitions = a.partition;
    c.pauses = a.pause;
    c.crashes = a.crash;
    c.recoveries = a.recover;
    c.entries = a.entries;
    c.requesters = a.requesters;
    c.hold = a.hold.0;
    c.think = a.think.0;
    c.events = a.events;
    c.cycles = a.cycles;
    c.holders = a.holders;
    c.give_up = a.give_up.map(|t| t.0);
    c.initiators = a.initiators;
    c.start = a.start.0;
    c.algo_like = a.common.algo_like.clone();
    c.lockstep = a.lockstep;
    c.quiet = quiet(&a.common);
    c.duration = a.duration.0;
    c.max_messages = a.max_messages;
    c.trace = a.trace;
    c.keep_records = a.html.is_some();
    c.dir = a.dir;
    let report = ringleader_lab::run(&c)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.render());
    }
    if let Some(path) = a.html {
        let title = format!("lab {}: {}", report.family, a.common.bin);
        std::fs::write(&path, report.page(&title)).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(ExitStatus::violation_unless(report.ok()))
}

fn grade(a: GradeArgs) -> CommandResult {
    if let Some(dir) = &a.krate {
        return grade_crate(dir, &a);
    }
    if a.check_nodes.is_some() {
        anyhow::bail!(
            "--check-nodes: the model checker runs on Rust crates only (--crate DIR), not on --bin programs"
        );
    }
    let g = GradeConfig {
        family: a.family,
        command: a.bin.clone().expect("clap requires --bin or --crate"),
        nodes: a.nodes,
        algo_like: a.algo_like.clone(),
        seeds: a.seeds,
        quiet: Duration::from_nanos(a.quiet.0),
        scenarios: a.scenario,
    };
    LabConfig { algo_like: g.algo_like.clone(), ..LabConfig::new(g.family, &g.command, g.nodes) }
        .validate()?;
    let card = grade::grade(&g)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&card)?);
    } else {
        print!("{}", card.render());
    }
    if let (Some(path), Some(first)) = (a.html, card.first_failure.as_ref()) {
        let title = format!("lab grade {}: first failure", card.family);
        std::fs::write(&path, first.page(&title)).with_context(|| format!("writing {}", path.display()))?;
        if !a.json {
            println!("page of the first failure: {}", path.display());
        }
    }
    Ok(ExitStatus::violation_unless(card.ok))
}

/// `lab grade --crate DIR`: the crate's own `grade` command, built and run by cargo in the
/// current directory (so relative --scenario and --html paths mean what they say here); its
/// card is printed as it comes.
fn grade_crate(dir: &std::path::Path, a: &GradeArgs) -> CommandResult {
    let manifest = dir.join("Cargo.toml");
    if !manifest.is_file() {
        anyhow::bail!("--crate {}: no Cargo.toml there (a crate `ringleader lab new` wrote)", dir.display());
    }
    let mut args: Vec<String> = vec![
        "grade".into(),
        "--family".into(),
        a.family.name().into(),
        "--nodes".into(),
        a.nodes.to_string(),
        "--seeds".into(),
        a.seeds.to_string(),
        "--check-nodes".into(),
        a.check_nodes.unwrap_or(3).to_string(),
    ];
    if let Some(like) = &a.algo_like {
        args.extend(["--algo-like".into(), like.clone()]);
    }
    for s in &a.scenario {
        args.extend(["--scenario".into(), s.display().to_string()]);
    }
    if let Some(h) = &a.html {
        args.extend(["--html".into(), h.display().to_string()]);
    }
    if a.json {
        args.push("--json".into());
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = std::process::Command::new(&cargo)
        .args(["run", "--quiet", "--manifest-path"])
        .arg(&manifest)
        .arg("--")
        .args(&args)
        .status()
        .with_context(|| format!("running {} (the crate is built with cargo)", cargo.to_string_lossy()))?;
    match status.code() {
        Some(0) => Ok(ExitStatus::violation_unless(true)),
        Some(2) => Ok(ExitStatus::violation_unless(false)),
        Some(c) => anyhow::bail!(
            "--crate {}: building or grading it failed (exit {c}; its output is above)",
            dir.display()
        ),
        None => anyhow::bail!("--crate {}: the grade was killed by a signal", dir.display()),
    }
}
