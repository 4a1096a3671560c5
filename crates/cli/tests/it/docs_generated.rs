//! Documentation generated from the binary's output stays equal to what the binary prints now.
//!
//! Two blocks of the docs are the binary's output, not prose:
//! - docs/CLI.md's JSON example (`sim --json` of the run its `repro` names), compared value by
//!   value except `wall_seconds`, the one field that is not deterministic;
//! - docs/SERVICE.md's comparison table (`scenarios/lock-comparison.toml` run with each
//!   algorithm), compared cell by cell.
//!
//! When the binary's output changes on purpose, regenerate them and read the diff:
//!
//! ```sh
//! RINGLEADER_BLESS_DOCS=1 cargo test -p ringleader --test it -- docs_generated::
//! git diff docs/
//! ```

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn bless() -> bool {
    std::env::var_os("RINGLEADER_BLESS_DOCS").is_some()
}

/// Runs the binary in the repository's root; its stdout (exit status 0 or 2: a run with a
/// violation still prints its report).
fn ringleader(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_ringleader"))
        .current_dir(root())
        .args(args)
        .output()
        .expect("ringleader runs");
    assert!(
        matches!(out.status.code(), Some(0 | 2)),
        "ringleader {}: {:?}\n{}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// The block after the first line that starts with `start` after `heading`, up to the first
/// line for which `ends` is true: its byte span in `doc`.
fn block(doc: &str, heading: &str, start: &str, ends: fn(&str) -> bool) -> (usize, usize) {
    let h = doc.find(heading).unwrap_or_else(|| panic!("the heading {heading:?} is in the document"));
    let mut offset = h;
    let mut from = None;
    for line in doc[h..].split_inclusive('\n') {
        match from {
            None if line.starts_with(start) => from = Some(offset + line.len()),
            Some(f) if ends(line) => return (f, offset),
            _ => {}
        }
        offset += line.len();
    }
    panic!("the block after {heading:?} ends")
}

/// Replaces `doc[from..to]` with `new` in `path` (bless) or fails with both versions.
fn compare(path: &Path, doc: &str, (from, to): (usize, usize), new: &str, what: &str) {
    if doc[from..to] == *new {
        return;
    }
    if bless() {
        let text = format!("{}{}{}", &doc[..from], new, &doc[to..]);
        std::fs::write(path, text).expect("the document is writable");
        return;
    }
    panic!(
        "{what} in {} differs from what the binary prints now (RINGLEADER_BLESS_DOCS=1 regenerates it)\n\
         --- document\n{}--- binary\n{new}",
        path.display(),
        &doc[from..to]
    );
}

#[test]
fn cli_md_json_example_is_what_sim_json_prints() {
    let path = root().join("docs/CLI.md");
    let doc = std::fs::read_to_string(&path).expect("docs/CLI.md");
    let span = block(&doc, "### The JSON object", "```json", |l| l.starts_with("```"));
    // An abbreviated example (`…` for elided list items) is read as far as it goes.
    let text = doc[span.0..span.1].replace(", … ]", " ]");
    let shown: Value = serde_json::from_str(&text).expect("the example is one JSON object");
    let repro = shown["repro"].as_str().expect("the example has a repro line").to_string();
    let args: Vec<&str> = repro.split_whitespace().skip(1).chain(["--json"]).collect();
    let mut now: Value = serde_json::from_str(&ringleader(&args)).expect("sim --json prints JSON");
    // The wall-clock time is the machine's, not the run's: the document keeps its own.
    now["wall_seconds"] = shown["wall_seconds"].clone();
    let text = serde_json::to_string_pretty(&now).expect("JSON") + "\n";
    compare(&path, &doc, span, &text, "the JSON example");
}

/// docs/SERVICE.md's table of `scenarios/lock-comparison.toml` under each way to keep a lock.
#[test]
fn service_md_comparison_table_is_what_the_runs_print() {
    let path = root().join("docs/SERVICE.md");
    let doc = std::fs::read_to_string(&path).expect("docs/SERVICE.md");
    let span =
        block(&doc, "### The same fault plan on four ways to keep a lock", "|---|", |l| !l.starts_with('|'));
    // The algorithms, in the table's order, from the table itself.
    let algorithms: Vec<String> =
        doc[span.0..span.1].lines().filter_map(|l| l.split('`').nth(1).map(str::to_string)).collect();
    assert!(algorithms.len() >= 4, "the table lists the algorithms it compares");
    let mut rows = String::new();
    for algo in &algorithms {
        let r: Value = serde_json::from_str(&ringleader(&[
            "sim",
            "scenarios/lock-comparison.toml",
            "--algo",
            algo,
            "--json",
        ]))
        .expect("sim --json prints JSON");
        let status = |name: &str| {
            r["properties"]
                .as_array()
                .and_then(|ps| ps.iter().find(|p| p["name"] == name))
                .and_then(|p| p["status"].as_str())
                .unwrap_or("—")
                .to_string()
        };
        let entries = r["outcome"]["entries"].as_u64().expect("a mutex run counts its entries");
        let mean = r["per_operation"]["messages_mean"].as_f64().expect("messages per entry");
        let sent = r["messages"]["sent"].as_u64().expect("messages sent");
        rows.push_str(&format!(
            "| `{algo}` | {entries} | {} | {} | {} | {} | {mean:.1} | {} |\n",
            status("safety"),
            status("liveness"),
            status("no_starvation"),
            status("fencing"),
            thousands(sent)
        ));
    }
    compare(&path, &doc, span, &rows, "the comparison table");
}

/// 12319 → "12,319", as the document writes numbers.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The check can fail: a planted stale value is found.
#[test]
fn a_stale_value_is_told_apart() {
    let doc = "### H\n\n| a |\n|---|\n| `x` | 1 |\n| `y` | 2 |\n\nafter\n";
    let span = block(doc, "### H", "|---|", |l| !l.starts_with('|'));
    assert_eq!(&doc[span.0..span.1], "| `x` | 1 |\n| `y` | 2 |\n");
    let result = std::panic::catch_unwind(|| {
        if !bless() {
            compare(Path::new("/nonexistent"), doc, span, "| `x` | 1 |\n| `y` | 3 |\n", "planted");
        } else {
            panic!("bless mode writes instead of failing");
        }
    });
    assert!(result.is_err(), "a stale table is refused");
    assert_eq!(thousands(12319), "12,319");
    assert_eq!(thousands(565), "565");
}
