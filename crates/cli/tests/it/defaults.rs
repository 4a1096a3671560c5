//! Every algorithm's default run (`ringleader sim --algo X`, no other flag) shows what the
//! algorithm is for: its outcome is informative, its verdict is what the story declares, and
//! its repro line replays it byte for byte.

use std::process::Command;

use serde_json::Value;

fn ringleader(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ringleader")).args(args).output().expect("ringleader runs");
    (out.status.code().unwrap_or(-1), String::from_utf8(out.stdout).unwrap())
}

fn algorithms() -> Vec<(String, String)> {
    let (code, text) = ringleader(&["list"]);
    assert_eq!(code, 0);
    text.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            Some((w.next()?.to_string(), w.next()?.to_string()))
        })
        .collect()
}

fn num(r: &Value, key: &str) -> f64 {
    r["outcome"][key]
        .as_f64()
        .unwrap_or_else(|| panic!("{}: outcome {key} in {}", r["algorithm"], r["outcome"]))
}

fn kind(r: &Value, k: &str) -> u64 {
    r["messages"]["by_kind"][k].as_u64().unwrap_or(0)
}

/// What makes each default run informative, beyond "every property holds".
fn assert_informative(algo: &str, family: &str, r: &Value) {
    let o = &r["outcome"];
    let why = format!("{algo}: {o} (repro {})", r["repro"]);
    match (family, algo) {
        (_, "bully") => {
            // The textbook story: the coordinator crashes and the next highest id takes over.
            let n = r["nodes"].as_u64().unwrap();
            assert!(r["repro"].as_str().unwrap().contains(&format!("--crash {n}@")), "{why}");
            assert_eq!(num(r, "leader") as u64, n - 1, "{why}");
            assert!(kind(r, "heartbeat") > 0 && kind(r, "coordinator") > n - 1, "re-elected: {why}");
        }
        (_, "yoyo") => {
            let n = num(r, "leader");
            assert!(n >= 1.0, "{why}");
            // Not the complete graph: fewer edges than N(N − 1)/2.
            let nodes = r["nodes"].as_u64().unwrap();
            assert!(nodes >= 10, "{why}");
        }
        (_, "superpeer-dht" | "superpeer-geometric") => {
            assert!(num(r, "super_peers") >= 3.0, "several super-peers: {why}");
        }
        ("election", _) => {
            assert!(o["agreed"] == true && num(r, "leader") >= 1.0, "{why}");
        }
        (_, "central-timeout") => {
            // The timeout fires on a slow holder: two holders, the flaw declared expected.
            assert_eq!(num(r, "max_concurrent_holders"), 2.0, "{why}");
            assert_eq!(r["expected_violations"], serde_json::json!(["safety"]), "{why}");
        }
        ("mutex", _) => {
            assert_eq!(num(r, "entries"), 10.0, "{why}");
            assert_eq!(num(r, "max_concurrent_holders"), 1.0, "{why}");
        }
        (_, "lamport-clock" | "vector-clock") => {
            assert!(num(r, "stamped_events") > 0.0 && num(r, "pairs_checked") > 0.0, "{why}");
            for physical in ["max_skew_before", "max_skew_after", "adjustments", "backward_steps"] {
                assert!(o.get(physical).is_none(), "a logical clock reports {physical}: {why}");
            }
        }
        (_, "make") => {
            assert_eq!(num(r, "skips"), 1.0, "the skewed make skips a rebuild: {why}");
        }
        ("clock", _) => {
            // Drifting clocks brought together: skew before > skew after > 0, real adjustments.
            let (before, after) = (num(r, "max_skew_before"), num(r, "max_skew_after"));
            assert!(before > 5.0 && after < before / 5.0 && after > 0.0, "{why}");
            assert!(num(r, "adjustments") > 0.0, "{why}");
        }
        ("deadlock", "chandy-misra-haas") => {
            // The default story is the declared phantom: real cycles are all reported, and a
            // phantom report beside them is what the story shows on purpose.
            assert!(num(r, "deadlocks_real") >= 1.0 && num(r, "phantom_reports") >= 1.0, "{why}");
            let reported = num(r, "deadlocks_real") + num(r, "phantom_reports");
            assert_eq!(num(r, "deadlocks_reported"), reported, "{why}");
        }
        ("deadlock", _) => {
            assert!(num(r, "aborts") >= 1.0 && num(r, "restarts") >= 1.0, "{why}");
            assert_eq!(num(r, "deadlocks_real"), 0.0, "{why}");
        }
        ("detector", _) => {
            // A crash detected (a true suspicion) and a pause mistaken for one.
            assert!(num(r, "detections") >= 1.0, "{why}");
            assert!(num(r, "false_suspicions") >= 1.0, "{why}");
        }
        _ => panic!("{algo}: no expectation for family {family}"),
    }
}

#[test]
fn every_default_run_shows_its_algorithm() {
    let algos = algorithms();
    assert!(algos.len() >= 30, "{algos:?}");
    for (algo, family) in &algos {
        let (code, out) = ringleader(&["sim", "--algo", algo, "--json"]);
        let r: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{algo}: {e}: {out}"));
        assert_eq!(code, 0, "{algo}: the default run exits 0 (flaws shown are declared): {out}");
        assert!(r["messages"]["sent"].as_u64().unwrap() > 0 || algo == "make", "{algo}: {out}");
        assert_informative(algo, family, &r);
    }
}

#[test]
fn a_default_story_replays_from_its_repro_line_and_flags_win() {
    for algo in ["bully", "heartbeat", "cristian", "central-timeout"] {
        let (_, out) = ringleader(&["sim", "--algo", algo, "--json"]);
        let r: Value = serde_json::from_str(&out).unwrap();
        let repro = r["repro"].as_str().unwrap();
        let words: Vec<String> =
            repro.split_whitespace().skip(1).map(|w| w.trim_matches('\'').to_string()).collect();
        let mut args: Vec<&str> = words.iter().map(String::as_str).collect();
        args.push("--json");
        let (_, again) = ringleader(&args);
        let mut again: Value = serde_json::from_str(&again).unwrap();
        let mut first = r.clone();
        for v in [&mut again, &mut first] {
            v.as_object_mut().unwrap().remove("wall_seconds");
        }
        assert_eq!(again, first, "{algo}: {repro}");
    }
    // An explicit flag wins over the story's setting; --plain asks for the generic defaults.
    let (_, out) = ringleader(&["sim", "--algo", "heartbeat", "--crash", "2@1s", "--json"]);
    let r: Value = serde_json::from_str(&out).unwrap();
    let repro = r["repro"].as_str().unwrap();
    assert!(repro.contains("--crash 2@1s") && !repro.contains("--pause"), "{repro}");
    let (_, out) = ringleader(&["sim", "--algo", "cristian", "--plain", "--duration", "10s", "--json"]);
    let r: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(num(&r, "max_skew_before"), 0.0);
    assert!(r["repro"].as_str().unwrap().ends_with(" --plain"), "{}", r["repro"]);
}
