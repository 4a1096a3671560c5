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
/// Kills that `ringleader cluster` made are in the traces (a `crash` record); a later `start`
/// of the node is its recovery.
///
/// With --history, checks instead a client history of lock operations (JSON lines: client, op,
/// lock, lease, invoke_ns, return_ns, result; docs/VERIFICATION.md) for linearizability
/// against a lock under leases with fencing tokens; its puts and reads, when it has them (put,
/// get records), for linearizability of each key as a register (no read misses a put
/// acknowledged before it began); its puts and watch streams (watch_start, watch_event records)
/// for etcd's watch guarantees: events in revision order, no acknowledged put left out, each
/// event the change made at its revision; and its
/// lease_gone records (a lease a client heard was gone, that it had not ended) for leases ended
/// before their TTL since their last keep-alive.
///
/// Exit status: 0 when every property holds (for --history: linearizable), 2 on a violation,
/// and for --history also when undecided (the search ran out of --budget without finding a
/// violation: raise --budget, or give --allow-undecided to exit 0), 1 on unreadable input.
///
/// Examples:
///   ringleader verify traces/node-*.jsonl
///   ringleader verify --down 5 traces/*.jsonl     (node 5 was killed for good, by hand)
///   ringleader verify --history clients.jsonl
#[derive(Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct VerifyArgs {
    /// The node traces.
    #[arg(required_unless_present = "history", conflicts_with = "history", value_name = "TRACE")]
    pub traces: Vec<PathBuf>,
    /// Check a client history of lock operations (JSON lines) for linearizability instead.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["down", "html", "shiviz"])]
    pub history: Option<PathBuf>,
    /// With --history: the search budget, in steps per lock; over it the verdict is undecided.
    #[arg(long, value_name = "STEPS", default_value_t = ringleader_judge::linearizability::DEFAULT_BUDGET,
          value_parser = clap::value_parser!(u64).range(1..), requires = "history")]
    pub budget: u64,
    /// With --history: exit 0 when the search runs out of its budget undecided (by default an
    /// undecided history exits 2: nothing was proved).
    #[arg(long, requires = "history")]
    pub allow_undecided: bool,
    /// A node id killed for good that no launcher recorded (repeatable): it counts as crashed
    /// after its last record.
    #[arg(long, value_name = "ID")]
    pub down: Vec<Uid>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Write the merged traces as one self-contained HTML page: a space-time diagram.
    #[arg(long, value_name = "FILE.html")]
    pub html: Option<PathBuf>,
    /// Write the merged traces as a ShiViz log (needs the nodes' vector timestamps).
    #[arg(long, value_name = "FILE.log")]
    pub shiviz: Option<PathBuf>,
}

/// Runs `ringleader verify`.
pub fn run(args: VerifyArgs) -> crate::CommandResult {
    if let Some(path) = &args.history {
        return history(path, args.budget, args.json, args.allow_undecided);
    }
    let report = ringleader_net::verify::verify_files(&args.traces, &args.down)?;
    if args.html.is_some() || args.shiviz.is_some() {
        write_pictures(&args, &report)?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!("{report}");
    }
    Ok(crate::ExitStatus::violation_unless(report.violations.is_empty()))
}

/// `--html` and `--shiviz`: the merged traces, in time order, one row per record.
fn write_pictures(args: &VerifyArgs, report: &ringleader_net::verify::VerifyReport) -> anyhow::Result<()> {
    use anyhow::Context as _;
    let mut records = Vec::new();
    for p in &args.traces {
        records.extend(ringleader_net::verify::read_trace(p).map_err(anyhow::Error::msg)?);
    }
    records.sort_by_key(|r| (r.time_ns, r.uid, r.step));
    let t0 = records.first().map(|r| r.time_ns).unwrap_or(0);
    for (i, r) in records.iter_mut().enumerate() {
        r.step = i as u64;
    }
    if let Some(path) = &args.shiviz {
        let log = ringleader_viz::shiviz(&records).map_err(|e| anyhow::anyhow!("--shiviz: {e}"))?;
        std::fs::write(path, log).with_context(|| format!("{}", path.display()))?;
    }
    if let Some(path) = &args.html {
        // The first record at or after each violation's time (ms since the first record).
        let step_at = |ms: f64| {
            records.iter().find(|r| (r.time_ns - t0) as f64 / 1e6 >= ms).map(|r| r.step).unwrap_or(0)
        };
        let violations: Vec<serde_json::Value> = report
            .violations
            .iter()
            .map(
                |(p, t, d)| serde_json::json!({ "property": p, "time": t, "step": step_at(*t), "detail": d }),
            )
            .collect();
        let properties: Vec<serde_json::Value> = report
            .properties
            .iter()
            .map(|p| serde_json::json!({ "name": p, "holds": !report.violations.iter().any(|v| v.0 == *p) }))
            .collect();
        let json = serde_json::json!({
            "algorithm": report.algorithm,
            "family": report.family,
            "nodes": report.members.len(),
            "properties": properties,
            "violations": violations,
        });
        let ok = report.violations.is_empty();
        let first = violations.first().and_then(|v| v["step"].as_u64());
        let page = ringleader_viz::html(&ringleader_viz::RunView {
            title: format!("{}: {} real nodes, merged traces", report.algorithm, report.members.len()),
            source: "verify",
            uids: &report.members,
            records: &records,
            gaps: &[],
            total_records: records.len() as u64,
            report: json,
            verdict: if ok { "every property holds".into() } else { "VIOLATED".into() },
            ok,
            violation_window: first.map(|s| (s, None)),
            explore: None,
        });
        std::fs::write(path, page).with_context(|| format!("{}", path.display()))?;
    }
    Ok(())
}

/// `--history`: a client history checked for linearizability.
fn history(path: &std::path::Path, budget: u64, json: bool, allow_undecided: bool) -> crate::CommandResult {
    use ringleader_judge::linearizability::{LinearizabilityVerdict, kv, lock};
    // One read of the file for the four checkers.
    let text = std::fs::read_to_string(path)
        .map_err(|source| lock::HistoryError::Io { path: path.display().to_string(), source })?;
    let checked = lock::check_lock_history(&lock::parse_history(&text)?, budget);
    let watches = ringleader_judge::watch::parse_history(&text)?;
    let watch_violation = ringleader_judge::watch::check(&watches);
    let gone = ringleader_judge::lease_expiry::parse_history(&text)?;
    let early = ringleader_judge::lease_expiry::check(&gone);
    let kv_ops = kv::parse_history(&text)?;
    let kv_checked = (!kv_ops.is_empty()).then(|| kv::check_kv_history(&kv_ops, budget));
    let passes = |verdict: &LinearizabilityVerdict| match verdict {
        LinearizabilityVerdict::Linearizable => true,
        LinearizabilityVerdict::Violated(_) => false,
        LinearizabilityVerdict::Undecided { .. } => allow_undecided,
    };
    // One word for --json, one line's end for the text, for the locks and the keys alike.
    let word = |verdict: &LinearizabilityVerdict| match verdict {
        LinearizabilityVerdict::Linearizable => "linearizable",
        LinearizabilityVerdict::Violated(_) => "violated",
        LinearizabilityVerdict::Undecided { .. } => "undecided",
    };
    let said = |verdict: &LinearizabilityVerdict| match verdict {
        LinearizabilityVerdict::Linearizable => "OK: linearizable".to_string(),
        LinearizabilityVerdict::Violated(w) => format!("VIOLATED: not linearizable: {w}"),
        LinearizabilityVerdict::Undecided { .. } => format!(
            "UNDECIDED: {}{}",
            verdict.to_string().replacen("undecided: ", "", 1),
            if allow_undecided { "" } else { " (exit 2: raise --budget, or --allow-undecided)" }
        ),
    };
    let detail = match &checked.verdict {
        LinearizabilityVerdict::Linearizable => None,
        LinearizabilityVerdict::Violated(w) => Some(w.to_string()),
        LinearizabilityVerdict::Undecided { .. } => Some(checked.verdict.to_string()),
    };
    if json {
        let v = serde_json::json!({
            "history": path.display().to_string(),
            "operations": checked.operations,
            "locks": checked.partitions,
            "steps": checked.steps,
            "budget": budget,
            "verdict": word(&checked.verdict),
            "detail": detail,
            "watch": (!watches.is_empty()).then(|| serde_json::json!({
                "puts": watches.puts.len(),
                "watchers": watches.watchers.len(),
                "events": watches.events(),
                "verdict": if watch_violation.is_some() { "violated" } else { "holds" },
                "property": watch_violation.as_ref().map(|v| v.property),
                "detail": watch_violation.as_ref().map(|v| v.detail.clone()),
            })),
            "kv": kv_checked.as_ref().map(|c| serde_json::json!({
                "operations": c.operations,
                "keys": c.partitions,
                "steps": c.steps,
                "verdict": word(&c.verdict),
                "detail": (c.verdict != LinearizabilityVerdict::Linearizable).then(|| c.verdict.to_string()),
            })),
            "leases": (!gone.is_empty()).then(|| serde_json::json!({
                "seen_gone": gone.len(),
                "verdict": if early.is_some() { "violated" } else { "holds" },
                "detail": early,
            })),
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!(
            "history    {}: {} operations on {} lock{}",
            path.display(),
            checked.operations,
            checked.partitions,
            if checked.partitions == 1 { "" } else { "s" }
        );
        println!("search     {} steps (budget {budget} per lock)", checked.steps);
        println!("verdict    {}", said(&checked.verdict));
        if !watches.is_empty() {
            println!(
                "watch      {} puts, {} events seen by {} watcher{}: {}",
                watches.puts.len(),
                watches.events(),
                watches.watchers.len(),
                if watches.watchers.len() == 1 { "" } else { "s" },
                match &watch_violation {
                    None => "OK: in revision order, no gap, each the change made at its revision".to_string(),
                    Some(v) => format!("VIOLATED: {v}"),
                }
            );
        }
    }
    if !json && let Some(c) = &kv_checked {
        println!(
            "kv         {} puts and reads on {} key{}, {} steps: {}",
            c.operations,
            c.partitions,
            if c.partitions == 1 { "" } else { "s" },
            c.steps,
            said(&c.verdict)
        );
    }
    if !json && !gone.is_empty() {
        println!(
            "leases     {} seen gone by clients that did not end them: {}",
            gone.len(),
            match &early {
                None => "OK: none before its TTL since its last keep-alive".to_string(),
                Some(v) => format!("VIOLATED: {v}"),
            }
        );
    }
    Ok(crate::ExitStatus::violation_unless(
        early.is_none()
            && watch_violation.is_none()
            && passes(&checked.verdict)
            && kv_checked.as_ref().is_none_or(|c| passes(&c.verdict)),
    ))
}
