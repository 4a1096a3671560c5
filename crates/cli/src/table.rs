//! `ringleader table`: the arguments of [`ringleader_analysis::table`], which makes the table;
//! a row `off` makes the command exit with status 2.

use clap::{Args, ValueEnum};
use ringleader_algorithms::Family;
use ringleader_analysis::table::{self, MAX_NODES, Selection, render};

/// `ringleader table --help`: what the table is, what each column means, what is left out.
pub const LONG_ABOUT: &str = "\
Measured messages per operation beside the textbook formula, for every algorithm.

Runs every election and mutual-exclusion algorithm of `ringleader list`, and the clock,
deadlock and failure-detector algorithms that the textbooks give a message cost per
operation (cristian, berkeley, ntp, chandy-misra-haas, heartbeat, phi-accrual), each under
the workload its textbook cost is stated for, for a few N. Every run is the simulator's,
with its defaults unless the workload says otherwise: seed 1, constant 1 ms latency, no
faults, ids 1..N ascending. The output is the same bytes on every run.

Columns:
  algorithm  the --algo name
  workload   the textbook case: id arrangement, initiators, crashes, request pattern
             (sequential: one request at a time, requesters 1, 2, ... in turn, node 0
             the coordinator, token holder or tree root)
  N          number of processes
  per        what the cost is per: election, entry (critical-section entry), sync,
             round, poll, detection, period, normal node, gossip period (each node's
             own gossip rounds, `period` apart)
  measured   messages the formula counts, per operation: sends over the network (a
             send to a crashed process counts; a message to oneself does not);
             `(gossip)` or `(probe)` when the formula counts one kind only
  by kind    the measured run's messages split by kind, per operation
  formula    the textbook cost: `=` an exact count, `≤` an upper bound
  value      the formula's value for this N (and this run's operations), per operation
  verdict    exact: measured = formula; within: measured < bound; off: a bug (a count,
             a kind's count or a checked property disagrees), exit status 2
  sim per op what `ringleader sim` prints as `per op` for the same runs: every
             message but detection traffic over the operations the runs report, in
             their unit when it is not `per`'s; it differs from `measured` where the
             formula counts one kind, or (chandy-misra-haas) only the probes of the
             initiation that found the cycle, not those of waits that found none

Counts exclude detection traffic, which runs report apart: heartbeats, the ring
election's and the token ring's ACKs, the central coordinator's PROBE/ALIVE. The
failure-detector rows are the exception: there the heartbeats are the algorithm.

Left out, because the textbooks give them no message cost per operation:
lamport-clock and vector-clock (their timestamps ride on the application's messages),
make (seed 004's two-node story), wait-die and wound-wait (their messages depend on the
workload's conflicts).

With --json, each row also has its operation count, totals, the kind it counts, and
`repro`: the `ringleader sim` command that reproduces its run. docs/COSTS.md holds the
default table and says where the measured shape and the textbook's differ.

Exit status: 0 when every row is exact or within, 2 when a row is off, 1 for bad input.

Examples:
  ringleader table
  ringleader table --family mutex --nodes 9
  ringleader table --algo bully --nodes 10 --json
  ringleader table --markdown";

/// The flags of `ringleader table` (the long help is [`LONG_ABOUT`]).
#[derive(Args, Debug)]
pub struct TableArgs {
    /// Only this family's algorithms.
    #[arg(long, value_name = "F", value_enum)]
    family: Option<FamilyArg>,
    /// Only this algorithm (see `ringleader list`).
    #[arg(long, value_name = "NAME")]
    algo: Option<String>,
    /// Sizes to run, e.g. 4,8,16 (1..=256) [default: a few sizes suited to each algorithm];
    /// sizes an algorithm's textbook case cannot take (maekawa needs a perfect square) are
    /// skipped and listed.
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = parse_size)]
    nodes: Vec<u32>,
    /// Print one JSON object: {"rows": [...], "skipped": [...]}.
    #[arg(long, conflicts_with = "markdown")]
    json: bool,
    /// Print a Markdown table (what docs/COSTS.md holds).
    #[arg(long)]
    markdown: bool,
    /// Also write an HTML page: a plot per case of the measured cost against N beside the
    /// textbook curve (SVG), then the table.
    #[arg(long, value_name = "FILE.html")]
    html: Option<std::path::PathBuf>,
}

/// One `--nodes` size.
fn parse_size(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(n) if (1..=MAX_NODES).contains(&n) => Ok(n),
        _ => Err(format!(
            "a size must be a whole number from 1 to {MAX_NODES}, e.g. --nodes 4,8,16 (`ringleader sim` runs larger ones)"
        )),
    }
}

/// `--family`: an algorithm family, by its [`Family::name`]. (The variants carry no doc
/// comments: clap would print them as a list in `--help`, which shows the names on one line.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FamilyArg {
    Election,
    Mutex,
    Clock,
    Deadlock,
    Detector,
}

impl From<FamilyArg> for Family {
    fn from(f: FamilyArg) -> Family {
        match f {
            FamilyArg::Election => Family::Election,
            FamilyArg::Mutex => Family::Mutex,
            FamilyArg::Clock => Family::Clock,
            FamilyArg::Deadlock => Family::Deadlock,
            FamilyArg::Detector => Family::Detector,
        }
    }
}

/// Runs `ringleader table`; returns the exit status.
pub fn run(args: TableArgs) -> crate::CommandResult {
    let selection =
        Selection { family: args.family.map(Family::from), algorithm: args.algo, nodes: args.nodes };
    let t = table::run(&selection)?;
    if let Some(path) = &args.html {
        let page = render::html(&t).map_err(|e| anyhow::anyhow!("--html: {e}"))?;
        std::fs::write(path, page).map_err(|e| anyhow::anyhow!("--html {}: {e}", path.display()))?;
    }
    if args.json {
        println!("{}", render::json(&t));
    } else {
        print!("{}", if args.markdown { render::markdown(&t.rows) } else { render::text(&t.rows) });
        print!("{}", render::footer(&t, args.markdown));
    }
    for line in render::off_lines(&t) {
        eprintln!("{line}");
    }
    Ok(crate::ExitStatus::violation_unless(!t.any_off()))
}
