//! `ringleader verify --history`: a client history of lock operations checked for
//! linearizability, with the exit statuses of the rest of `verify`.

use std::path::PathBuf;
use std::process::{Command, Output};

fn history(name: &str, lines: &[&str]) -> PathBuf {
    let path = std::env::temp_dir().join(format!("ringleader-history-{}-{name}.jsonl", std::process::id()));
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

fn verify(path: &PathBuf, extra: &[&str]) -> (Output, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ringleader"))
        .args(["verify", "--history"])
        .arg(path)
        .args(extra)
        .output()
        .unwrap();
    let _ = std::fs::remove_file(path);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    (out, text)
}

const A1: &str = r#"{"client":"a","op":"acquire","lock":"orders","lease":1,"invoke_ns":0,"return_ns":100,"result":{"token":5}}"#;
const A1_REL: &str = r#"{"client":"a","op":"release","lock":"orders","lease":1,"invoke_ns":300,"return_ns":310,"result":"ok"}"#;

#[test]
fn a_served_history_is_linearizable() {
    let p = history(
        "ok",
        &[
            A1,
            r#"{"client":"b","op":"acquire","lock":"orders","lease":2,"invoke_ns":50,"return_ns":400,"result":{"token":9}}"#,
            A1_REL,
            r#"{"client":"c","op":"acquire","lock":"other","lease":3,"invoke_ns":60}"#,
        ],
    );
    let (out, text) = verify(&p, &[]);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("4 operations on 2 locks") && text.contains("OK: linearizable"), "{text}");
}

#[test]
fn two_holders_at_once_are_a_violation_with_a_witness() {
    let p = history(
        "two",
        &[
            A1,
            r#"{"client":"b","op":"acquire","lock":"orders","lease":2,"invoke_ns":150,"return_ns":200,"result":{"token":9}}"#,
            A1_REL,
        ],
    );
    let (out, text) = verify(&p, &["--json"]);
    assert_eq!(out.status.code(), Some(2), "{text}");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["verdict"], "violated");
    assert!(v["detail"].as_str().unwrap().contains("b (lease 2) acquire -> token 9"), "{text}");
}

#[test]
fn over_budget_the_verdict_is_undecided_and_fails_unless_allowed() {
    let p = history("budget", &[A1, A1_REL]);
    let (out, text) = verify(&p, &["--budget", "1"]);
    assert_eq!(out.status.code(), Some(2), "nothing was proved: {text}");
    assert!(text.contains("UNDECIDED") && text.contains("--allow-undecided"), "{text}");
    let p = history("budget-allowed", &[A1, A1_REL]);
    let (out, text) = verify(&p, &["--budget", "1", "--allow-undecided"]);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("UNDECIDED"), "{text}");
}

/// A history in which two holders overlap is violated under any budget large enough to decide,
/// and undecided (exit 2, never 0) under a budget too small: a too-small budget cannot hide it.
#[test]
fn a_violating_history_under_a_tiny_budget_does_not_pass() {
    let lines = [
        A1,
        r#"{"client":"b","op":"acquire","lock":"orders","lease":2,"invoke_ns":150,"return_ns":200,"result":{"token":9}}"#,
        A1_REL,
    ];
    let (out, text) = verify(&history("tiny", &lines), &["--budget", "1"]);
    assert_eq!(out.status.code(), Some(2), "{text}");
}

#[test]
fn a_bad_line_is_one_line_on_stderr_naming_it() {
    let p = history("bad", &[A1, r#"{"client":"a","op":"unlock","lock":"orders","invoke_ns":1}"#]);
    let (out, _) = verify(&p, &[]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("line 2") && err.contains("acquire, release, lease_ended"), "{err}");
}
