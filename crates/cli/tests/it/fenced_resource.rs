//! `ringleader fenced-resource --check LOG --history H`: the resource's log judged against the
//! clients' history, with exit status 2 on an anomaly the resource's own rule lets through.

use std::path::PathBuf;
use std::process::Command;

fn file(name: &str, lines: &[&str]) -> PathBuf {
    let path = std::env::temp_dir().join(format!("ringleader-fence-{}-{name}.jsonl", std::process::id()));
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

fn check(log: &[&str], history: &[&str], name: &str) -> (Option<i32>, String) {
    let (l, h) = (file(&format!("{name}-log"), log), file(&format!("{name}-history"), history));
    let out = Command::new(env!("CARGO_BIN_EXE_ringleader"))
        .args(["fenced-resource", "--check"])
        .arg(&l)
        .arg("--history")
        .arg(&h)
        .output()
        .unwrap();
    let _ = (std::fs::remove_file(l), std::fs::remove_file(h));
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

const HISTORY: [&str; 2] = [
    r#"{"client":"a","op":"acquire","lock":"x","lease":1,"invoke_ns":10,"return_ns":20,"result":{"token":3}}"#,
    r#"{"client":"a","op":"release","lock":"x","lease":1,"invoke_ns":30,"return_ns":40,"result":"ok"}"#,
];

#[test]
fn a_write_by_the_holder_the_history_granted_passes() {
    let (code, text) =
        check(&[r#"{"at_ns":25,"lock":"x","token":3,"client":"a","accepted":true}"#], &HISTORY, "ok");
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("every accepted write made while its writer held the lock"), "{text}");
}

/// A server that forged a token (9,000,000,000) for a client the history shows holding token 3:
/// the resource accepts it (it is the highest), the judge does not.
#[test]
fn a_token_the_history_never_granted_is_an_anomaly() {
    let (code, text) = check(
        &[r#"{"at_ns":25,"lock":"x","token":9000000000,"client":"a","accepted":true}"#],
        &HISTORY,
        "forged",
    );
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("VIOLATED") && text.contains("never granted"), "{text}");
}

#[test]
fn a_bad_history_line_is_one_line_naming_the_file() {
    let (code, text) = check(
        &[r#"{"at_ns":25,"lock":"x","token":3,"client":"a","accepted":true}"#],
        &[r#"{"client":"a","op":"grab","lock":"x","invoke_ns":1}"#],
        "bad",
    );
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("--history") && text.contains("line 1"), "{text}");
}
