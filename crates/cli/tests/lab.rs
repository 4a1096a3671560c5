//! `ringleader lab`: the command line over real Python nodes — a passing run and grade, a
//! caught bug with its repro line and page, JSON for graders, and one-line input errors.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn ringleader(args: &[&str]) -> Output {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    Command::new(env!("CARGO_BIN_EXE_ringleader")).current_dir(root).args(args).output().unwrap()
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

#[test]
fn run_prints_the_textbook_cost_beside_the_nodes() {
    let o = ringleader(&[
        "lab",
        "run",
        "--family",
        "mutex",
        "--bin",
        "python3 lab/examples/mutex_ra.py",
        "--nodes",
        "5",
        "--algo-like",
        "ricart-agrawala",
        "--lockstep",
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(
        t.contains(
            "messages: yours 8 per entry (80 in 10 operations), textbook 2(N−1) = 8 (ricart-agrawala): exact"
        ),
        "{t}"
    );
}

#[test]
fn grade_passes_the_example_and_fails_the_buggy_node_with_a_repro_and_a_page() {
    let o = ringleader(&[
        "lab",
        "grade",
        "--family",
        "mutex",
        "--bin",
        "python3 lab/examples/mutex_ra.py",
        "--algo-like",
        "ricart-agrawala",
        "--seeds",
        "2",
        "--nodes",
        "3",
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(t.contains("textbook: 2(N−1) = 4 per entry") && t.ends_with("PASS\n"), "{t}");

    let page = Path::new(env!("CARGO_TARGET_TMPDIR")).join("lab-first-failure.html");
    let o = ringleader(&[
        "lab",
        "grade",
        "--family",
        "mutex",
        "--bin",
        "python3 crates/lab/tests/nodes/mutex_ra_no_defer.py",
        "--algo-like",
        "ricart-agrawala",
        "--seeds",
        "2",
        "--nodes",
        "3",
        "--html",
        page.to_str().unwrap(),
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("first failure:") && t.contains("entered the critical section while"), "{t}");
    let repro = t.lines().find(|l| l.trim_start().starts_with("repro: ")).expect("a repro line");
    assert!(repro.contains("ringleader lab run --family mutex") && repro.contains("--lockstep"), "{repro}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("safety violated"), "the page names the violation");

    // The repro line repeats the failure.
    let line = repro.trim_start().trim_start_matches("repro: ringleader ");
    let args = shell_words(line);
    let o = ringleader(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("safety          VIOLATED"), "{}", text(&o));
}

#[test]
fn grade_json_is_for_graders() {
    let o = ringleader(&[
        "lab",
        "grade",
        "--family",
        "election",
        "--bin",
        "python3 lab/examples/election_cr.py",
        "--algo-like",
        "chang-roberts",
        "--seeds",
        "1",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let card: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(card["ok"], true);
    assert_eq!(card["family"], "election");
    assert!(card["runs"].as_array().unwrap().len() >= 4);
    let names: Vec<&str> =
        card["properties"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    for n in ["agreement", "validity", "uniqueness", "termination", "cost"] {
        assert!(names.contains(&n), "{names:?}");
    }
}

#[test]
fn bad_input_gets_one_line() {
    for (args, needle) in [
        (vec!["lab", "run", "--family", "raft", "--bin", "x"], "mutex, election, clock and deadlock"),
        (
            vec![
                "lab",
                "run",
                "--family",
                "mutex",
                "--bin",
                "python3 lab/examples/mutex_ra.py",
                "--algo-like",
                "raft",
            ],
            "--algo-like raft",
        ),
        (
            vec![
                "lab",
                "run",
                "--family",
                "mutex",
                "--bin",
                "python3 lab/examples/mutex_ra.py",
                "--crash",
                "9@1ms",
            ],
            "no node 9",
        ),
    ] {
        let o = ringleader(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(needle), "{err}");
    }
    assert!(Path::new(env!("CARGO_BIN_EXE_ringleader")).exists());
}

/// Splits a repro line: words, and single-quoted words.
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut rest = line.trim();
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('\'') {
            let end = r.find('\'').unwrap();
            words.push(r[..end].to_string());
            rest = r[end + 1..].trim_start();
        } else {
            let end = rest.find(' ').unwrap_or(rest.len());
            words.push(rest[..end].to_string());
            rest = rest[end..].trim_start();
        }
    }
    words
}
