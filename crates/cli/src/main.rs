//! `ringleader`: the command line.
//!
//! Exit status ([`ExitStatus`]): 0 when every checked property holds (or exactly the violations
//! a scenario declares were found), 1 for a usage or input error (one line on stderr), 2 when a
//! property was violated unexpectedly.
//!
//! Errors: the libraries return typed errors (`thiserror` enums such as `SimError`,
//! `NetError`, `TableError`), so that a caller can tell one failure from another and a test
//! can match on it. This crate is the last caller: all it does with an error is print it on one
//! line and exit with status 1, so it collects them in `anyhow::Error`, adding the context only
//! it knows (which flag, which file) on the way.

mod bench;
mod bench_service;
mod check;
mod cluster;
mod demo;
mod detector_curve;
mod elect;
mod fenced_resource;
mod lab;
mod lease;
mod lock;
mod member;
mod node;
mod quorum_risk;
mod serve;
mod service_client;
mod service_load;
mod sim;
mod sweep;
mod table;
mod tls_gen;
mod ui;
mod verify;

use std::process::ExitCode;

use clap::Parser;

/// How a command ends: the process's exit status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ExitStatus {
    /// 0: done, and every checked property holds (or exactly the expected violations were
    /// found).
    Ok,
    /// 1: bad usage or input, or a request the other side refused; one line on stderr.
    Input,
    /// 2: a property was violated unexpectedly (or a table row is `off`).
    Violation,
}

impl ExitStatus {
    /// [`ExitStatus::Ok`] when `expected`, else [`ExitStatus::Violation`].
    pub fn violation_unless(expected: bool) -> ExitStatus {
        if expected { ExitStatus::Ok } else { ExitStatus::Violation }
    }

    /// The number the process exits with.
    pub fn code(self) -> u8 {
        match self {
            ExitStatus::Ok => 0,
            ExitStatus::Input => 1,
            ExitStatus::Violation => 2,
        }
    }
}

/// What a subcommand returns.
pub type CommandResult = anyhow::Result<ExitStatus>;

/// Leader election, mutual exclusion, clocks, deadlock and failure detection — the classical
/// coordination algorithms, each written once and run by a seeded simulator with faults and
/// property checkers.
#[derive(Parser, Debug)]
#[command(name = "ringleader", version, propagate_version = true, arg_required_else_help = true)]
struct Cli {
    #[command(subcommand)]
    command: Subcommand,
}

#[derive(clap::Subcommand, Debug)]
enum Subcommand {
    /// List every algorithm: name, family, one-line summary.
    List,
    Sim(Box<sim::SimCommand>),
    Sweep(Box<sweep::SweepArgs>),
    /// Measure the simulator: delivered messages per second and peak memory.
    Bench(bench::BenchArgs),
    Demo(demo::DemoArgs),
    /// Probability that quorum voting with forgetful coordinators violates mutual exclusion.
    QuorumRisk(quorum_risk::QuorumRiskArgs),
    Node(Box<node::NodeArgs>),
    Cluster(Box<cluster::ClusterArgs>),
    Verify(verify::VerifyArgs),
    DetectorCurve(detector_curve::CurveArgs),
    Check(Box<check::CheckArgs>),
    /// Measured messages per operation beside the textbook formula, for every algorithm.
    #[command(long_about = table::LONG_ABOUT)]
    Table(table::TableArgs),
    /// Run your own implementation, in any language, and judge it as ringleader judges its own.
    Lab(lab::LabArgs),
    Ui(ui::UiArgs),
    Serve(Box<serve::ServeArgs>),
    BenchService(bench_service::BenchServiceArgs),
    Lock(Box<lock::LockArgs>),
    Elect(Box<elect::ElectArgs>),
    Lease(Box<lease::LeaseArgs>),
    Member(Box<member::MemberArgs>),
    #[command(hide = true)]
    ServiceLoad(Box<service_load::ServiceLoadArgs>),
    #[command(hide = true)]
    FencedResource(fenced_resource::FencedResourceArgs),
}

/// Ends the program quietly when a reader closes our stdout or stderr (`ringleader table | head
/// -1`): the standard library panics with "failed printing to stdout: Broken pipe" on every
/// `println!` after that, and the reader has left, so there is nobody to tell. Installed once,
/// before any subcommand runs, so every subcommand's output is covered; any other panic still
/// reaches the default hook.
fn end_quietly_on_closed_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let text = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if text.starts_with("failed printing to std") && text.contains("Broken pipe") {
            // 128 + SIGPIPE, what a shell reports for a program ended by a closed pipe.
            std::process::exit(141);
        }
        default(info);
    }));
}

/// `e` and its causes, each said once: a cause whose text its context already quotes (an OS
/// error a file error repeats) is not printed again.
fn one_line(e: &anyhow::Error) -> String {
    let mut line = e.to_string();
    for cause in e.chain().skip(1) {
        let text = cause.to_string();
        if !line.contains(&text) {
            line = format!("{line}: {text}");
        }
    }
    line
}

/// The first paragraph of clap's error as one line: a missing argument's names are on the
/// lines under its first (`…were not provided:` then `  --family <FAMILY>`).
fn first_paragraph(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .skip_while(|l| l.trim().is_empty())
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect();
    if lines.is_empty() { "error: bad arguments".to_string() } else { lines.join(" ") }
}

/// mimalloc in place of the system allocator: the model checker's search clones and frees a
/// state per step (a fifth of its time with glibc's malloc; 16 % more states per second with
/// mimalloc, docs/VERIFICATION.md), and the simulator and the service allocate per message.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    end_quietly_on_closed_pipe();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(
                e.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                let _ = e.print();
                return ExitCode::SUCCESS;
            }
            eprintln!("{} (see --help)", first_paragraph(&e.render().to_string()));
            return ExitCode::from(ExitStatus::Input.code());
        }
    };
    let result = match cli.command {
        Subcommand::List => {
            for info in ringleader_registry::all() {
                println!("{:<22} {:<9} {}", info.name, info.family.name(), info.summary);
            }
            Ok(ExitStatus::Ok)
        }
        Subcommand::Sim(args) => sim::run(*args),
        Subcommand::Sweep(args) => sweep::run(*args),
        Subcommand::Bench(args) => bench::run(args),
        Subcommand::Demo(args) => demo::run(args),
        Subcommand::QuorumRisk(args) => quorum_risk::run(args),
        Subcommand::Node(args) => node::run(*args),
        Subcommand::Cluster(args) => cluster::run(*args),
        Subcommand::Verify(args) => verify::run(args),
        Subcommand::DetectorCurve(args) => detector_curve::run(args),
        Subcommand::Check(args) => check::run(*args),
        Subcommand::Table(args) => table::run(args),
        Subcommand::Lab(args) => lab::lab(args),
        Subcommand::Ui(args) => ui::run(args),
        Subcommand::Serve(args) => serve::run(*args),
        Subcommand::BenchService(args) => bench_service::run(args),
        Subcommand::Lock(args) => lock::run(*args),
        Subcommand::Elect(args) => elect::run(*args),
        Subcommand::Lease(args) => lease::run(*args),
        Subcommand::Member(args) => member::run(*args),
        Subcommand::ServiceLoad(args) => service_load::run(*args),
        Subcommand::FencedResource(args) => fenced_resource::run(args),
    };
    match result {
        Ok(status) => ExitCode::from(status.code()),
        Err(e)
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) =>
        {
            // A write to a closed pipe returned its error instead of panicking: end as quietly.
            ExitCode::from(141)
        }
        Err(e) => {
            eprintln!("error: {}", one_line(&e));
            ExitCode::from(ExitStatus::Input.code())
        }
    }
}
