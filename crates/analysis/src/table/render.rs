//! The table as people and programs read it: plain text, Markdown (docs/COSTS.md) and JSON.

use std::fmt::Write as _;

use super::{CostMatch, Row, Table};

/// A number as the table prints it: whole numbers bare, others with at most two decimals.
pub fn num(x: f64) -> String {
    if (x - x.round()).abs() < 1e-9 {
        format!("{}", x.round() as i64)
    } else {
        let s = format!("{x:.2}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// The columns of the text and Markdown tables.
pub const HEADER: [&str; 10] =
    ["algorithm", "workload", "N", "per", "measured", "by kind", "formula", "value", "verdict", "sim per op"];

/// A row as the text and Markdown tables show it, one string per column of [`HEADER`].
fn cells(r: &Row) -> Vec<String> {
    let kinds: Vec<String> = r.by_kind.iter().map(|(k, &v)| format!("{k} {}", num(v))).collect();
    let measured =
        if r.counted == "all" { num(r.measured) } else { format!("{} ({})", num(r.measured), r.counted) };
    vec![
        r.algorithm.to_string(),
        r.workload.to_string(),
        r.nodes.to_string(),
        r.per.to_string(),
        measured,
        kinds.join(", "),
        format!("{} {}", r.relation, r.formula),
        num(r.formula_value),
        r.verdict.name().to_string(),
        if r.sim_per == r.per {
            num(r.sim_per_operation)
        } else {
            format!("{} per {}", num(r.sim_per_operation), r.sim_per)
        },
    ]
}

/// The Markdown table (`--markdown`, docs/COSTS.md).
pub fn markdown(rows: &[Row]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "| {} |", HEADER.join(" | "));
    let align: Vec<&str> = HEADER
        .iter()
        .map(|h| if matches!(*h, "N" | "measured" | "value" | "sim per op") { "---:" } else { "---" })
        .collect();
    let _ = writeln!(s, "|{}|", align.join("|"));
    for r in rows {
        let mut c = cells(r);
        c[0] = format!("`{}`", c[0]);
        let _ = writeln!(s, "| {} |", c.join(" | "));
    }
    s
}

/// The plain table: columns padded with spaces, numbers right-aligned.
pub fn text(rows: &[Row]) -> String {
    let all: Vec<Vec<String>> = std::iter::once(HEADER.iter().map(|h| h.to_string()).collect())
        .chain(rows.iter().map(cells))
        .collect();
    let widths: Vec<usize> =
        (0..HEADER.len()).map(|i| all.iter().map(|c| c[i].chars().count()).max().unwrap_or(0)).collect();
    let mut s = String::new();
    for c in &all {
        let line: Vec<String> = c
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let pad = widths[i] - v.chars().count();
                if matches!(i, 2 | 4 | 7 | 9) {
                    format!("{}{v}", " ".repeat(pad))
                } else {
                    format!("{v}{}", " ".repeat(pad))
                }
            })
            .collect();
        let _ = writeln!(s, "{}", line.join("  ").trim_end());
    }
    s
}

/// One JSON object, pretty-printed: `{"rows": [...], "skipped": [...]}`.
pub fn json(table: &Table) -> String {
    serde_json::to_string_pretty(table).expect("the table serialises")
}

/// The lines after the text or Markdown table: skipped sizes, and (text only) the count of
/// rows by verdict.
pub fn footer(table: &Table, markdown: bool) -> String {
    let mut s = String::new();
    for k in &table.skipped {
        let _ = writeln!(s, "skipped: {} on {} nodes ({})", k.algorithm, k.nodes, k.reason);
    }
    if !markdown {
        let _ = writeln!(
            s,
            "{} rows: {} exact, {} within, {} off; counts exclude detection traffic except in the detector rows",
            table.rows.len(),
            table.count(CostMatch::Exact),
            table.count(CostMatch::Within),
            table.count(CostMatch::Off)
        );
    }
    s
}

/// One line per `off` row, for stderr.
pub fn off_lines(table: &Table) -> Vec<String> {
    table
        .rows
        .iter()
        .filter(|r| r.verdict == CostMatch::Off)
        .map(|r| {
            format!("off: {} on {} nodes ({}): {}", r.algorithm, r.nodes, r.workload, r.problems.join("; "))
        })
        .collect()
}

/// The table as one self-contained HTML page: for every case (algorithm, workload, unit), the
/// measured messages per operation against N beside the textbook formula's curve (an SVG plot
/// each), then the text table.
pub fn html(table: &Table) -> Result<String, ringleader_viz::plot::PlotError> {
    use ringleader_viz::plot::{Plot, Series, svg};
    // One plot per case: the rows of one algorithm, workload, unit and formula, across N.
    let mut groups: Vec<(&Row, Vec<&Row>)> = Vec::new();
    for r in &table.rows {
        let same = |g: &&Row| {
            (g.algorithm, g.workload, g.per, g.formula) == (r.algorithm, r.workload, r.per, r.formula)
        };
        match groups.iter_mut().find(|(g, _)| same(g)) {
            Some((_, rows)) => rows.push(r),
            None => groups.push((r, vec![r])),
        }
    }
    let mut body = String::new();
    for (first, rows) in &groups {
        let points = |f: fn(&Row) -> f64| rows.iter().map(|r| (f64::from(r.nodes), f(r))).collect::<Vec<_>>();
        let plot = Plot {
            title: format!("{} · {}", first.algorithm, first.workload),
            x_label: "N".into(),
            y_label: format!("messages per {}", rows[0].per),
            series: vec![
                Series { name: "measured".into(), points: points(|r| r.measured), dashed: false },
                Series {
                    name: format!("textbook {} {}", rows[0].relation, rows[0].formula),
                    points: points(|r| r.formula_value),
                    dashed: true,
                },
            ],
            log_x: false,
            log_y: false,
        };
        let _ = writeln!(body, "<figure>{}</figure>", svg(&plot, 520, 320)?);
    }
    let escape = |s: &str| s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
    Ok(format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>ringleader table</title>\
         <style>body{{font:14px system-ui,sans-serif;margin:16px}}figure{{display:inline-block;margin:4px}}\
         pre{{font-size:12px}}</style></head><body>\n<h1>Messages per operation against N, beside the \
         textbook formula</h1>\n{body}<pre>{}</pre>\n</body></html>\n",
        escape(&(text(&table.rows) + &footer(table, false)))
    ))
}
