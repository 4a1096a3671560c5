//! Every file in `scenarios/` runs through the real binary and behaves as it declares: exit 0,
//! with exactly the expected violations found.

use std::path::PathBuf;
use std::process::Command;

fn scenario_files() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("scenarios/ exists")
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_scenario_runs_as_declared() {
    let files = scenario_files();
    assert!(files.len() >= 3, "expected the curated scenarios, found {files:?}");
    for file in files {
        let out = Command::new(env!("CARGO_BIN_EXE_ringleader"))
            .arg("sim")
            .arg(&file)
            .arg("--json")
            .output()
            .expect("ringleader runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{} exited {:?}: {stderr}", file.display(), out.status.code());
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
        let expected: Vec<&str> =
            report["expected_violations"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
        for property in expected {
            let found = report["violations"].as_array().unwrap().iter().any(|v| v["property"] == property);
            assert!(found, "{}: expected violation {property} not found", file.display());
        }
    }
}
