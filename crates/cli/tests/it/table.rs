//! `ringleader table` through the binary: every row of the default table agrees with its
//! textbook formula, specific rows are the textbook's exact numbers, bad input gets one line and
//! exit status 1, the output is deterministic, and docs/COSTS.md holds the current table.

use std::process::{Command, Output};

use serde_json::Value;

fn ringleader(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ringleader")).args(args).output().expect("ringleader runs")
}

/// `ringleader table --json ARGS`: the rows, after checking the command succeeded.
fn rows(args: &[&str]) -> Vec<Value> {
    let mut all = vec!["table", "--json"];
    all.extend_from_slice(args);
    let out = ringleader(&all);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    v["rows"].as_array().expect("rows").clone()
}

/// The row of `algorithm` on `nodes` whose workload starts with `workload`.
fn row<'a>(rows: &'a [Value], algorithm: &str, nodes: u64, workload: &str) -> &'a Value {
    rows.iter()
        .find(|r| {
            r["algorithm"] == algorithm
                && r["nodes"] == nodes
                && r["workload"].as_str().unwrap().starts_with(workload)
        })
        .unwrap_or_else(|| panic!("no row {algorithm} N = {nodes} {workload:?}"))
}

fn kind(r: &Value, k: &str) -> f64 {
    r["by_kind"][k].as_f64().unwrap_or_else(|| panic!("{}: no kind {k}", r["algorithm"]))
}

fn total(r: &Value) -> u64 {
    r["measured_total"].as_u64().unwrap()
}

#[test]
fn every_row_of_the_default_table_is_exact_or_within_its_formula() {
    let rows = rows(&[]);
    assert!(rows.len() >= 90, "{} rows", rows.len());
    for r in &rows {
        let (measured, formula) = (total(r), r["formula_total"].as_u64().unwrap());
        match r["verdict"].as_str().unwrap() {
            "exact" => assert_eq!(measured, formula, "{r}"),
            "within" => {
                assert_eq!(r["relation"], "≤", "{r}");
                assert!(measured < formula, "{r}");
            }
            other => panic!("verdict {other}: {r}"),
        }
        assert!(r["operations"].as_u64().unwrap() > 0, "{r}");
        assert!(r["repro"].as_str().unwrap().starts_with("ringleader sim --algo "), "{r}");
    }
    // Every election and mutex algorithm of `ringleader list` has rows; of the other families
    // exactly those with a textbook cost per operation. The lock service has none: its cost is
    // Raft's and its lease upkeep's (docs/SERVICE.md measures it beside the textbook algorithms).
    let list = ringleader(&["list"]);
    let list = String::from_utf8(list.stdout).unwrap();
    let has = |name: &str| rows.iter().any(|r| r["algorithm"] == name);
    for line in list.lines() {
        let mut words = line.split_whitespace();
        let (name, family) = (words.next().unwrap(), words.next().unwrap());
        let expected = match family {
            _ if name == "lock-service" => false,
            "election" | "mutex" => true,
            _ => ["cristian", "berkeley", "ntp", "chandy-misra-haas", "heartbeat", "phi-accrual"]
                .contains(&name),
        };
        assert_eq!(has(name), expected, "{name} ({family})");
    }
}

#[test]
fn chang_roberts_rows_are_the_textbook_counts() {
    let rows = rows(&["--algo", "chang-roberts", "--nodes", "8"]);
    let worst = row(&rows, "chang-roberts", 8, "worst case: ids descending");
    assert_eq!((kind(worst, "election"), kind(worst, "elected")), (36.0, 8.0));
    assert_eq!(
        (worst["formula"].as_str().unwrap(), worst["formula_value"].as_f64().unwrap()),
        ("N(N+1)/2 + N", 44.0)
    );
    assert_eq!(worst["verdict"], "exact");
    let best = row(&rows, "chang-roberts", 8, "best case: ids ascending");
    assert_eq!((kind(best, "election"), kind(best, "elected")), (15.0, 8.0));
    let single = row(&rows, "chang-roberts", 8, "one initiator (id 1)");
    assert_eq!((total(single), single["formula"].as_str().unwrap()), (3 * 8 - 1, "3N−1"));
    let max = row(&rows, "chang-roberts", 8, "one initiator holding the max");
    assert_eq!(total(max), 2 * 8);
}

#[test]
fn bully_on_ten_nodes_is_45_election_36_answer_8_coordinator() {
    let rows = rows(&["--algo", "bully", "--nodes", "10"]);
    let worst = row(&rows, "bully", 10, "worst case");
    assert_eq!(
        (kind(worst, "election"), kind(worst, "answer"), kind(worst, "coordinator")),
        (45.0, 36.0, 8.0)
    );
    assert_eq!((total(worst), worst["verdict"].as_str().unwrap()), (89, "exact"));
    let best = row(&rows, "bully", 10, "best case");
    assert_eq!((total(best), kind(best, "election"), kind(best, "coordinator")), (9, 1.0, 8.0));
}

#[test]
fn mutex_on_nine_nodes_and_ten_entries_costs_the_textbook_totals() {
    let rows = rows(&["--family", "mutex", "--nodes", "9"]);
    let r = |a: &str| row(&rows, a, 9, "sequential, 10 entries");
    for r in rows.iter() {
        assert_eq!(r["operations"], 10, "{r}");
    }
    assert_eq!((total(r("central")), r("central")["measured"].as_f64().unwrap()), (30, 3.0));
    assert_eq!(total(r("central-timeout")), 30);
    assert_eq!(total(r("ricart-agrawala")), 160);
    assert_eq!(total(r("lamport")), 240);
    assert_eq!(total(r("suzuki-kasami")), 90);
    assert_eq!((kind(r("suzuki-kasami"), "request"), kind(r("suzuki-kasami"), "token")), (8.0, 1.0));
    let m = r("maekawa");
    assert_eq!((total(m), m["measured"].as_f64().unwrap()), (120, 12.0));
    assert_eq!((kind(m, "request"), kind(m, "reply"), kind(m, "release")), (4.0, 4.0, 4.0));
    // Quorum: n = 5 coordinators, requesters 6..9 outside them: 3n = 15 per entry.
    assert_eq!(total(r("quorum")), 150);
    // Token ring: requesters 1..8, 1, 2, the token parks after each idle lap: 101 TOKEN + 10
    // REQUEST (ACKs are detection).
    assert_eq!(total(r("token-ring")), 111);
    // Roucairol-Carvalho: 8 · 16 + 2 · 14, below Ricart-Agrawala's 2(N − 1) per entry.
    let rc = r("roucairol-carvalho");
    assert_eq!(
        (total(rc), rc["formula_total"].as_u64().unwrap(), rc["verdict"].as_str().unwrap()),
        (156, 160, "within")
    );
    // Raymond on the balanced binary tree: 2, 4, 6, 4, 8, 4, 10, 4, 4, 4 — each at most
    // 2 · diameter = 10 (the diameter of the 9-node tree is 5).
    let ray = r("raymond");
    assert_eq!((total(ray), ray["verdict"].as_str().unwrap()), (50, "exact"));
    assert!(ray["measured"].as_f64().unwrap() <= 10.0);
}

#[test]
fn bounded_elections_stay_within_their_bounds() {
    let rows = rows(&["--family", "election"]);
    for n in [8u64, 16, 64] {
        let hs = row(&rows, "hirschberg-sinclair", n, "all initiate");
        let log = 64 - (n - 1).leading_zeros() as u64;
        assert_eq!(hs["formula_total"].as_u64().unwrap(), 8 * n * (1 + log) + n);
        assert!(total(hs) <= 8 * n * (1 + log) + n);
        assert_eq!(kind(hs, "elected"), n as f64);
        let yoyo = row(&rows, "yoyo", n, "random connected graph");
        let m = 2 * n;
        assert_eq!(kind(yoyo, "setup"), (2 * m) as f64);
        assert_eq!(kind(yoyo, "coordinator"), (2 * m - n + 1) as f64);
        assert!(total(yoyo) <= 2 * m + 2 * m * (log + 1) + (2 * m - n + 1));
    }
    let dht = row(&rows, "superpeer-dht", 256, "Chord");
    assert_eq!(kind(dht, "join"), 1.0);
    assert!(dht["measured"].as_f64().unwrap() <= 34.0);
}

#[test]
fn clock_deadlock_and_detector_rows_are_exact() {
    let clocks = rows(&["--nodes", "8", "--family", "clock"]);
    assert_eq!(row(&clocks, "cristian", 8, "one probe")["measured"], 2.0);
    assert_eq!(row(&clocks, "berkeley", 8, "period")["measured"], 21.0);
    assert_eq!(row(&clocks, "ntp", 8, "period")["measured"], 2.0);
    let detectors = rows(&["--family", "detector", "--nodes", "8"]);
    for algo in ["heartbeat", "phi-accrual"] {
        let r = row(&detectors, algo, 8, "period");
        assert_eq!((r["measured"].as_f64().unwrap(), r["operations"].as_u64().unwrap()), (56.0, 10));
    }
    // Chandy-Misra-Haas: every detection of a cycle of length L sent exactly L probes.
    let cmh = rows(&["--algo", "chandy-misra-haas"]);
    assert_eq!(cmh.len(), 3);
    for r in &cmh {
        assert_eq!(r["verdict"], "exact", "{r}");
        assert!(r["operations"].as_u64().unwrap() >= 20, "{r}");
        assert!(r["formula_value"].as_f64().unwrap() >= 2.0, "{r}");
    }
}

#[test]
fn sizes_a_case_cannot_take_are_skipped_and_listed() {
    let out = ringleader(&["table", "--family", "mutex", "--nodes", "10", "--json"]);
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["skipped"][0]["algorithm"], "maekawa");
    assert!(v["rows"].as_array().unwrap().iter().all(|r| r["algorithm"] != "maekawa"));
}

#[test]
fn bad_input_gets_one_line_and_exit_one() {
    for (args, needle) in [
        (&["table", "--algo", "nope"][..], "unknown algorithm \"nope\""),
        (&["table", "--nodes", "0"][..], "from 1 to 256"),
        (&["table", "--nodes", "4,x"][..], "from 1 to 256"),
        (&["table", "--algo", "lamport-clock"][..], "no row"),
        (&["table", "--algo", "maekawa", "--nodes", "10"][..], "perfect square"),
        (&["table", "--family", "mutex", "--algo", "bully"][..], "election family"),
        (&["table", "--family", "time"][..], "--family"),
    ] {
        let out = ringleader(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

#[test]
fn the_same_bytes_every_run() {
    for flag in ["--json", "--markdown"] {
        let a = ringleader(&["table", flag]);
        let b = ringleader(&["table", flag]);
        assert!(a.status.success() && !a.stdout.is_empty());
        assert_eq!(a.stdout, b.stdout, "{flag}");
    }
}

const BEGIN: &str = "<!-- BEGIN `ringleader table --markdown` (generated: do not edit by hand) -->\n";
const END: &str = "<!-- END `ringleader table --markdown` -->";

#[test]
fn docs_costs_md_holds_the_current_table() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/COSTS.md");
    let doc = std::fs::read_to_string(path).expect("docs/COSTS.md");
    let start = doc.find(BEGIN).expect("the BEGIN marker in docs/COSTS.md") + BEGIN.len();
    let end = doc[start..].find(END).expect("the END marker in docs/COSTS.md") + start;
    let out = ringleader(&["table", "--markdown"]);
    assert!(out.status.success());
    let table = String::from_utf8(out.stdout).unwrap();
    if std::env::var_os("RINGLEADER_REGENERATE_DOCS").is_some() {
        std::fs::write(path, format!("{}{table}{}", &doc[..start], &doc[end..]))
            .expect("write docs/COSTS.md");
        return;
    }
    assert!(
        doc[start..end] == table,
        "docs/COSTS.md does not hold the current `ringleader table --markdown` output; regenerate it with\n  \
         RINGLEADER_REGENERATE_DOCS=1 cargo test -p ringleader --test it -- table::\nand commit the change"
    );
}

/// `table --html FILE`: one SVG plot per case (measured against N beside the textbook curve),
/// then the table itself.
#[test]
fn the_html_page_has_a_plot_per_case_beside_the_textbook_curve() {
    let file = std::env::temp_dir().join(format!("ringleader-table-{}.html", std::process::id()));
    let out = ringleader(&["table", "--algo", "chang-roberts", "--html", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let page = std::fs::read_to_string(&file).unwrap();
    let cases = rows(&["--algo", "chang-roberts"])
        .iter()
        .map(|r| (r["workload"].to_string(), r["formula"].to_string()))
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    assert!(cases >= 2);
    assert_eq!(page.matches("<svg").count(), cases, "one plot per case");
    assert!(page.contains("measured") && page.contains("textbook = N(N+1)/2 + N"), "legend");
    assert!(page.contains("<pre>") && page.contains("chang-roberts"), "the table follows");
    let _ = std::fs::remove_file(&file);
}
