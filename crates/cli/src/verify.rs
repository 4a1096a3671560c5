//! `ringleader verify`: judge the traces of real nodes with the simulator's checkers.

use std::path::PathBuf;

use clap::Args;
use ringleader_core::Uid;

/// Merge node traces and check the family's properties
///
/// Merges node traces (JSON lines) and checks the algorithm family's properties: agreement,
/// validity, uniqueness and termination for elections; safety (mutual exclusion), fencing-token
/// order, FIFO, liveness and no starvation for mutual exclusion.
///
/// Exit status: 0 when every property holds, 2 on a violation, 1 on unreadable input.
///
/// Examples:
///   ringleader verify traces/node-*.jsonl
///   ringleader verify --down 5 traces/*.jsonl     (node 5 was killed for good)
#[derive(Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct VerifyArgs {
    /// The node traces.
    #[arg(required = true, value_name = "TRACE")]
    pub traces: Vec<PathBuf>,
    /// A node id killed for good (repeatable): it counts as crashed after its last record.
    #[arg(long, value_name = "ID")]
    pub down: Vec<Uid>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs `ringleader verify`.
pub fn run(args: VerifyArgs) -> anyhow::Result<i32> {
    let report =
        ringleader_net::verify::verify_files(&args.traces, &args.down).map_err(anyhow::Error::msg)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!("{report}");
    }
    Ok(if report.violations.is_empty() { 0 } else { 2 })
}
