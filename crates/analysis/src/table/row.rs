//! One row of the table: a case's seeded runs, each judged by the case, summed into its row.

use ringleader_sim::{RunConfig, RunOptions};

use super::cases::Case;
use super::measure::{CostMatch, Judged, Measured};
use super::{Row, TableError};

/// `total / ops`, 0 when nothing completed.
fn per_op(total: u64, ops: u64) -> f64 {
    if ops == 0 { 0.0 } else { total as f64 / ops as f64 }
}

/// The messages `sim`'s `per_operation` divides: every send but detection traffic (a failure
/// detector's heartbeats are its algorithm and count).
pub fn algorithm_messages(report: &ringleader_sim::Report) -> u64 {
    if report.family == "detector" {
        report.messages.sent
    } else {
        report.messages.sent - report.messages.detection
    }
}

/// Runs one case on `n` nodes.
pub fn run_case(case: &Case, n: u32) -> Result<Row, TableError> {
    let family = ringleader_registry::find(case.algorithm).map(|i| i.family.name()).unwrap_or("?");
    let mut total: Option<Judged> = None;
    let mut repro = String::new();
    let mut problems = Vec::new();
    let mut detection = 0;
    let mut reported_ops = 0;
    let mut sim_messages = 0;
    let mut sim_per = String::new();
    for seed in 1..=case.runs {
        let mut cfg = RunConfig::new(case.algorithm, n)?;
        cfg.seed = seed;
        (case.configure)(&mut cfg);
        let opts = RunOptions { keep_trace: case.trace, ..RunOptions::default() };
        let result = ringleader_sim::run(&cfg, opts)?;
        let report = &result.report;
        detection += report.messages.detection;
        reported_ops += report.per_operation.operations;
        sim_messages += algorithm_messages(report);
        sim_per = report.per_operation.unit.clone();
        if report.per_operation.unit != case.per && !case.ops_counted_apart {
            problems.push(format!(
                "seed {seed}: the run reports its cost per {}, the formula is per {}",
                report.per_operation.unit, case.per
            ));
        }
        if !report.as_expected() {
            let names: Vec<&str> = report.violations.iter().map(|v| v.property.name()).collect();
            problems.push(format!("seed {seed}: properties violated: {}", names.join(", ")));
        }
        let judged = (case.judge)(&Measured { cfg: &cfg, report, records: &result.records });
        if seed == 1 {
            repro = report.repro.clone();
        }
        match &mut total {
            None => total = Some(judged),
            Some(t) => t.add(judged),
        }
    }
    let j = total.expect("every case runs at least once");
    problems.extend(j.problems);
    if reported_ops != j.ops && !case.ops_counted_apart {
        problems.push(format!("the runs report {reported_ops} operations, the table counts {}", j.ops));
    }
    if j.ops == 0 {
        problems.push("no operation completed".into());
    }
    let verdict = if !problems.is_empty() {
        CostMatch::Off
    } else if j.measured == j.value {
        CostMatch::Exact
    } else if case.bound && j.measured < j.value {
        CostMatch::Within
    } else {
        problems.push(format!(
            "measured {} {} the formula's {}",
            j.measured,
            if j.measured < j.value { "is below" } else { "exceeds" },
            j.value
        ));
        CostMatch::Off
    };
    Ok(Row {
        algorithm: case.algorithm,
        family,
        workload: case.workload,
        nodes: n,
        per: case.per,
        operations: j.ops,
        runs: case.runs,
        counted: j.counted.unwrap_or("all"),
        measured: per_op(j.measured, j.ops),
        measured_total: j.measured,
        sim_per_operation: per_op(sim_messages, reported_ops),
        sim_per,
        by_kind: j.by_kind.iter().map(|(k, &v)| (k.clone(), per_op(v, j.ops))).collect(),
        detection_total: detection,
        formula: case.formula,
        relation: if case.bound { "≤" } else { "=" },
        formula_value: per_op(j.value, j.ops),
        formula_total: j.value,
        verdict,
        problems,
        repro,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::cases::{ENTRIES, cases};

    /// `table`'s `sim per op` is what `sim` prints as `per op` for the same runs, pooled
    /// over the row's seeds, for the rows whose `measured` counts something else (one
    /// detection's probes; gossip per period).
    #[test]
    fn the_sim_per_op_column_is_what_sim_reports_for_the_same_runs() {
        for (algo, n) in [("chandy-misra-haas", 5), ("chandy-misra-haas", 7), ("superpeer-geometric", 96)] {
            let case = cases().into_iter().find(|c| c.algorithm == algo).unwrap();
            let row = run_case(&case, n).unwrap();
            let (mut messages, mut ops) = (0, 0);
            for seed in 1..=case.runs {
                let mut cfg = RunConfig::new(algo, n).unwrap();
                cfg.seed = seed;
                (case.configure)(&mut cfg);
                let r = ringleader_sim::run(&cfg, RunOptions::default()).unwrap().report;
                messages +=
                    (r.per_operation.messages_mean * r.per_operation.operations as f64).round() as u64;
                ops += r.per_operation.operations;
                assert_eq!(r.per_operation.unit, row.sim_per, "{algo} seed {seed}");
            }
            assert_eq!(row.sim_per_operation, per_op(messages, ops), "{algo} on {n}");
            assert!(row.sim_per_operation > row.measured, "{algo} on {n}: {row:?}");
        }
    }

    #[test]
    fn a_wrong_count_makes_the_row_off() {
        let mut case = cases().into_iter().find(|c| c.algorithm == "ricart-agrawala").unwrap();
        assert_eq!(run_case(&case, 5).unwrap().verdict, CostMatch::Exact);
        // One message fewer than the run sends: an exact formula that disagrees is a bug …
        case.judge = |m| m.all(ENTRIES, 2 * (m.n() - 1) * ENTRIES - 1);
        let row = run_case(&case, 5).unwrap();
        assert_eq!(row.verdict, CostMatch::Off);
        assert!(row.problems[0].contains("exceeds"), "{:?}", row.problems);
        // … and so is a bound the run exceeds, or a kind that disagrees with the textbook.
        case.bound = true;
        assert_eq!(run_case(&case, 5).unwrap().verdict, CostMatch::Off);
        case.bound = false;
        case.judge = |m| m.all(ENTRIES, 2 * (m.n() - 1) * ENTRIES).kind("reply", 0);
        let row = run_case(&case, 5).unwrap();
        assert_eq!(row.verdict, CostMatch::Off);
        assert!(row.problems[0].starts_with("reply: 40 sent"), "{:?}", row.problems);
        // A bound the run stays below is `within`.
        case.bound = true;
        case.judge = |m| m.all(ENTRIES, 2 * (m.n() - 1) * ENTRIES + 1);
        assert_eq!(run_case(&case, 5).unwrap().verdict, CostMatch::Within);
    }
}
