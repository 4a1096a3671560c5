//! The self-contained HTML viewer of one run.
//!
//! The page embeds the run as one JSON object (the trace records column by column, see
//! [`crate::columns`], the report, the node ids, the first violation's window) inside a `<script type="application/json">` element, and the
//! viewer's script and style sheet inline (`assets/viewer.js`, `assets/viewer.css`). Nothing
//! is fetched: the file opens from disk, offline, and can be mailed or attached to an issue.
//!
//! Below the viewer the page shows SVG plots of what the report measured over the run, drawn by
//! [`crate::plot`] when the report carries the data: a physical clock's skew over time
//! (`outcome.skew_timeline`), and the latency distributions (`latency`: each one's quantiles).
//! A run without such data has no plot section.
//!
//! Large runs: the page embeds at most [`MAX_RECORDS`] records and says how many of the run's
//! records it left out ([`RunView::total_records`]: a driver may have kept only some while the
//! run went on, so the total is the run's count, not the length of the slice it hands over) and
//! where ([`RunView::gaps`]: the simulator keeps a long run's beginning, its faults and
//! violations and its end; the viewer draws a break at each gap with what it left out). The report, and so the summary and the property verdicts, is always the whole run's.
//! The viewer draws only the rows that are scrolled into view once a run has more than a
//! few thousand rows.

use crate::plot;
use ringleader_core::Uid;
use ringleader_core::trace::{Gap, TraceRecord};
use serde::Serialize;

/// At most this many records are embedded in a page; the rest are left out, and the page says so.
pub const MAX_RECORDS: usize = 200_000;

const VIEWER_JS: &str = include_str!("../assets/viewer.js");
const VIEWER_CSS: &str = include_str!("../assets/viewer.css");

/// A run to draw.
#[derive(Clone, Debug)]
pub struct RunView<'a> {
    /// The page title (e.g. the scenario's name or the algorithm and N).
    pub title: String,
    /// Which driver produced the run: `sim`, `check` or `verify`.
    pub source: &'a str,
    /// Node uids by position (node `i` has uid `uids[i]`).
    pub uids: &'a [Uid],
    /// The trace, in step order: all of it, or the part a driver kept.
    pub records: &'a [TraceRecord],
    /// Where the driver left records out of `records` (empty when it kept them all, or only
    /// the first ones).
    pub gaps: &'a [Gap],
    /// How many records the whole run produced (at least `records.len()`; more when the driver
    /// kept only the first ones).
    pub total_records: u64,
    /// The run's report as JSON (`ringleader sim --json`'s object, or the driver's own). The
    /// viewer reads `algorithm`, `family`, `nodes`, `seed`, `events`, `messages.by_kind`,
    /// `properties` (`name`, `holds`, `expected_violation`), `violations` (`property`,
    /// `step`, `detail`) and `repro` when present.
    pub report: serde_json::Value,
    /// The verdict line, as the command line prints it.
    pub verdict: String,
    /// True when the verdict is good (the run behaved as expected).
    pub ok: bool,
    /// The first violation's window: its step, and the step at which the bad condition ended.
    pub violation_window: Option<(u64, Option<u64>)>,
    /// For a model checker's page of a small model: every state, so that the page can explore
    /// by hand without a server (`ringleader_check::by_hand::Graph`, with `duplicating` set for
    /// a duplicating network). The viewer then offers "explore by hand".
    pub explore: Option<serde_json::Value>,
}

#[derive(Serialize)]
struct Embedded<'a> {
    title: &'a str,
    source: &'a str,
    uids: &'a [Uid],
    records: crate::columns::Columns,
    gaps: &'a [Gap],
    total_records: u64,
    report: &'a serde_json::Value,
    verdict: &'a str,
    ok: bool,
    violation: Option<(u64, Option<u64>)>,
    #[serde(skip_serializing_if = "Option::is_none")]
    explore: Option<&'a serde_json::Value>,
}

/// Escapes text for HTML element content and attribute values.
fn escape(text: &str) -> String {
    let mut s = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => s.push_str("&amp;"),
            '<' => s.push_str("&lt;"),
            '>' => s.push_str("&gt;"),
            '"' => s.push_str("&quot;"),
            '\'' => s.push_str("&#39;"),
            c => s.push(c),
        }
    }
    s
}

/// The run as JSON that is safe inside a `<script>` element: every `<`, `>` and `&` (which only
/// occur inside JSON strings) is written as a `\u` escape, so no `</script>` can end it early.
fn embed_json(value: &impl Serialize) -> String {
    let text = serde_json::to_string(value).expect("trace records serialize");
    let mut s = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => s.push_str("\\u003c"),
            '>' => s.push_str("\\u003e"),
            '&' => s.push_str("\\u0026"),
            '\u{2028}' => s.push_str("\\u2028"),
            '\u{2029}' => s.push_str("\\u2029"),
            c => s.push(c),
        }
    }
    s
}

/// One plot of the page: its element id, its caption and the SVG.
struct Figure {
    id: &'static str,
    caption: String,
    svg: String,
}

/// The plots of what `report` measured: the skew timeline and the latency quantiles, each only
/// when the report has it (and it has something to draw).
fn figures(report: &serde_json::Value) -> Vec<Figure> {
    let mut out = Vec::new();
    let skew: Vec<(f64, f64)> = report["outcome"]["skew_timeline"]
        .as_array()
        .map(|points| {
            points.iter().filter_map(|p| Some((p.get(0)?.as_f64()?, p.get(1)?.as_f64()?))).collect()
        })
        .unwrap_or_default();
    if !skew.is_empty()
        && let Ok(svg) = plot::svg(&plot::skew_timeline(&skew), 640, 360)
    {
        out.push(Figure {
            id: "plot-skew",
            caption: "The largest difference between two live clocks in each of up to 20 equal \
                      slices of the run (the clock checker's skew_timeline)."
                .into(),
            svg,
        });
    }
    let quantiles: Vec<plot::Quantiles> = report["latency"]
        .as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(name, q)| {
                    Some(plot::Quantiles {
                        name: name.clone(),
                        count: q["count"].as_u64()?,
                        min: q["min"].as_f64()?,
                        p50: q["p50"].as_f64()?,
                        p90: q["p90"].as_f64()?,
                        p99: q["p99"].as_f64()?,
                        max: q["max"].as_f64()?,
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    if let Ok(svg) = plot::svg(&plot::latency_quantiles(&quantiles), 640, 360) {
        let means: Vec<String> = report["latency"]
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(_, q)| q["count"].as_u64().unwrap_or(0) > 0)
            .filter_map(|(name, q)| Some(format!("{name} mean {:.3} ms", q["mean"].as_f64()?)))
            .collect();
        out.push(Figure {
            id: "plot-latency",
            caption: format!(
                "The report keeps each latency's quantiles, not its samples: the markers are the \
                 minimum, median, 90th and 99th percentiles and the maximum; the lines only join \
                 them. {}.",
                means.join("; ")
            ),
            svg,
        });
    }
    out
}

/// The HTML page of `run`.
pub fn html(run: &RunView) -> String {
    let kept = &run.records[..run.records.len().min(MAX_RECORDS)];
    let gaps = &run.gaps[..run.gaps.partition_point(|g| g.at < kept.len())];
    let data = Embedded {
        title: &run.title,
        source: run.source,
        uids: run.uids,
        records: crate::columns::encode(kept, run.uids),
        gaps,
        total_records: run.total_records.max(run.records.len() as u64),
        report: &run.report,
        verdict: &run.verdict,
        ok: run.ok,
        violation: run.violation_window,
        explore: run.explore.as_ref(),
    };
    let mut page = String::with_capacity(kept.len() * 60 + VIEWER_JS.len() + 4096);
    page.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    page.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    // No favicon request either (a file:// page would log a failed fetch).
    page.push_str("<link rel=\"icon\" href=\"data:,\">\n");
    page.push_str(&format!("<title>{} — ringleader</title>\n", escape(&run.title)));
    page.push_str("<style>\n");
    page.push_str(VIEWER_CSS);
    page.push_str("</style>\n</head>\n<body>\n");
    page.push_str(
        "<noscript>This page draws the run with JavaScript; the run itself is the JSON below.</noscript>\n",
    );
    page.push_str("<div id=\"app\"></div>\n");
    let figures = figures(&run.report);
    if !figures.is_empty() {
        page.push_str("<section id=\"plots\">\n<h2>Measured over the run</h2>\n");
        for f in &figures {
            page.push_str(&format!("<figure class=\"plot\" id=\"{}\">\n", f.id));
            page.push_str(&f.svg);
            page.push_str(&format!("\n<figcaption>{}</figcaption>\n</figure>\n", escape(&f.caption)));
        }
        page.push_str("</section>\n");
    }
    page.push_str("<script type=\"application/json\" id=\"run-data\">");
    page.push_str(&embed_json(&data));
    page.push_str("</script>\n<script>\n");
    page.push_str(VIEWER_JS);
    page.push_str("\n</script>\n</body>\n</html>\n");
    page
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringleader_core::trace::RecordKind;

    fn view<'a>(records: &'a [TraceRecord], uids: &'a [Uid]) -> RunView<'a> {
        RunView {
            title: "t<i>".into(),
            source: "sim",
            uids,
            records,
            gaps: &[],
            total_records: records.len() as u64,
            report: serde_json::json!({"algorithm": "x"}),
            verdict: "OK".into(),
            ok: true,
            violation_window: None,
            explore: None,
        }
    }

    #[test]
    fn a_message_cannot_close_the_script_element() {
        let mut r = TraceRecord::new(1, 0, RecordKind::Violation);
        r.detail = Some("</script><script>alert(1)</script> & more".into());
        let page = html(&view(&[r], &[1]));
        assert_eq!(page.matches("</script>").count(), 2, "only the two real script ends");
        assert!(page.contains("\\u003c/script\\u003e"));
        assert!(page.contains("<title>t&lt;i&gt; — ringleader</title>"));
    }

    #[test]
    fn the_embedded_json_reads_back_as_the_records() {
        let mut r = TraceRecord::new(3, 7, RecordKind::Send);
        r.node = Some(0);
        r.peer = Some(1);
        r.msg_id = Some(9);
        r.msg_kind = Some("grant".into());
        r.msg = Some(serde_json::json!({"Grant": {"fencing": 1}}));
        let records = vec![r];
        let page = html(&view(&records, &[1, 2]));
        let start = page.find("id=\"run-data\">").unwrap() + "id=\"run-data\">".len();
        let end = start + page[start..].find("</script>").unwrap();
        let data: serde_json::Value = serde_json::from_str(&page[start..end]).unwrap();
        let back = crate::columns::decode(&data["records"], &[1, 2]).unwrap();
        assert_eq!(back, records);
        assert_eq!(data["uids"], serde_json::json!([1, 2]));
        assert_eq!(data["total_records"], 1);
        for fetch in ["src=\"http", "href=\"http", "fetch(", "XMLHttpRequest", "import("] {
            assert!(!page.contains(fetch), "nothing is fetched: {fetch}");
        }
    }

    #[test]
    fn the_page_plots_the_skew_timeline_and_latencies_only_when_the_report_has_them() {
        let mut v = view(&[], &[1, 2]);
        let page = html(&v);
        assert!(!page.contains("id=\"plots\"") && !page.contains("class=\"plot\""), "no data, no plot");

        v.report = serde_json::json!({
            "outcome": {"skew_timeline": [[0.5, 30.0], [1.0, 4.5]]},
            "latency": {"response_time": {"count": 9, "min": 1.0, "p50": 2.0, "p90": 3.0, "p99": 4.0,
                                          "max": 5.0, "mean": 2.5},
                        "sync_delay": {"count": 0, "min": 0.0, "p50": 0.0, "p90": 0.0, "p99": 0.0,
                                       "max": 0.0, "mean": 0.0}},
        });
        let page = html(&v);
        for text in
            ["id=\"plot-skew\"", "clock skew over time", "id=\"plot-latency\"", "response_time (9 samples)"]
        {
            assert!(page.contains(text), "{text}");
        }
        let plots = &page[page.find("<section id=\"plots\">").unwrap()..page.find("</section>").unwrap()];
        assert!(
            plots.contains("response_time") && !plots.contains("sync_delay"),
            "a latency without samples is not plotted"
        );
        assert_eq!(page.matches("<svg").count(), 2);

        // Latencies without samples and an empty timeline: no plot at all.
        v.report = serde_json::json!({
            "outcome": {"skew_timeline": []},
            "latency": {"sync_delay": {"count": 0, "min": 0.0, "p50": 0.0, "p90": 0.0, "p99": 0.0,
                                       "max": 0.0, "mean": 0.0}},
        });
        assert!(!html(&v).contains("<svg"));
    }

    #[test]
    fn a_long_trace_is_cut_and_the_page_knows_the_total() {
        let records: Vec<_> =
            (0..MAX_RECORDS as u64 + 5).map(|i| TraceRecord::new(i, i, RecordKind::Timer)).collect();
        let page = html(&view(&records, &[1]));
        assert!(page.contains(&format!("\"total_records\":{}", MAX_RECORDS + 5)));
        assert!(page.contains(&format!("\"n\":{MAX_RECORDS},")));
    }

    #[test]
    fn a_trace_kept_in_part_by_the_driver_reports_the_run_s_total() {
        let records: Vec<_> = (0..3).map(|i| TraceRecord::new(i, i, RecordKind::Timer)).collect();
        let mut v = view(&records, &[1]);
        v.total_records = 1_000_000;
        let page = html(&v);
        assert!(page.contains("\"total_records\":1000000"));
        assert!(page.contains("\"n\":3,"));
    }
}
