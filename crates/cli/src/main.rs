//! `ringleader`: the command line.
//!
//! Exit status: 0 when every checked property holds (or exactly the violations a scenario
//! declares were found), 1 for a usage or input error (one line on stderr), 2 when a property
//! was violated unexpectedly.

mod bench;
mod check;
mod cluster;
mod demo;
mod detector_curve;
mod node;
mod quorum_risk;
mod sim;
mod sweep;
mod table;
mod verify;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Leader election, mutual exclusion, clocks, deadlock and failure detection — the classical
/// coordination algorithms, each written once and run by a seeded simulator with faults and
/// property checkers.
#[derive(Parser, Debug)]
#[command(name = "ringleader", version, propagate_version = true, arg_required_else_help = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// List every algorithm: name, family, one-line summary.
    List,
    Sim(Box<sim::SimArgs>),
    Sweep(Box<sweep::SweepArgs>),
    /// Measure the simulator: delivered messages per second and peak memory.
    Bench(bench::BenchArgs),
    /// Run the built-in demonstrations and print what happened.
    Demo,
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
}

fn main() -> ExitCode {
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
            let text = e.render().to_string();
            let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("error: bad arguments");
            eprintln!("{first} (see --help)");
            return ExitCode::from(1);
        }
    };
    let result = match cli.command {
        Command::List => {
            for info in ringleader_algorithms::all() {
                println!("{:<22} {:<9} {}", info.name, info.family.name(), info.summary);
            }
            Ok(0)
        }
        Command::Sim(args) => sim::run(*args),
        Command::Sweep(args) => sweep::run(*args),
        Command::Bench(args) => bench::run(args),
        Command::Demo => demo::run(),
        Command::QuorumRisk(args) => quorum_risk::run(args),
        Command::Node(args) => node::run(*args),
        Command::Cluster(args) => cluster::run(*args),
        Command::Verify(args) => verify::run(args),
        Command::DetectorCurve(args) => detector_curve::run(args),
        Command::Check(args) => check::run(*args),
        Command::Table(args) => table::run(args),
    };
    match result {
        Ok(code) => ExitCode::from(code as u8),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}
