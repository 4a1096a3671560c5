//! `ringleader check` through the binary: the contract of its output and exit status.

use std::process::{Command, Output};

fn ringleader(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ringleader")).args(args).output().expect("ringleader runs")
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).expect("stdout is one JSON object")
}

#[test]
fn central_timeout_counterexample_is_a_trace_and_a_diagram() {
    let dir = std::env::temp_dir().join(format!("ringleader-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (trace, mmd) = (dir.join("ce.jsonl"), dir.join("ce.mmd"));
    let out = ringleader(&[
        "check",
        "--algo",
        "central-timeout",
        "--nodes",
        "3",
        "--trace",
        trace.to_str().unwrap(),
        "--mermaid",
        mmd.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("safety       always    VIOLATED: counterexample of 7 steps"), "{text}");
    let records: Vec<ringleader_core::trace::TraceRecord> = std::fs::read_to_string(&trace)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is a trace record"))
        .collect();
    assert_eq!(records.last().unwrap().property.as_deref(), Some("safety"));
    let diagram = std::fs::read_to_string(&mmd).unwrap();
    assert!(diagram.starts_with("sequenceDiagram"));
    assert!(diagram.contains("rect rgb(200, 0, 0)"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn json_has_the_sim_shape_and_expected_violations_exit_zero() {
    let out = ringleader(&[
        "check",
        "--algo",
        "central-timeout",
        "--json",
        "--expect",
        "safety",
        "--expect",
        "fencing",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let v = json(&out);
    for key in ["states", "unique_states", "depth", "seconds", "properties"] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    let props = v["properties"].as_array().unwrap();
    let safety = props.iter().find(|p| p["name"] == "safety").unwrap();
    assert_eq!(safety["holds"], false);
    assert_eq!(safety["length"], 7);
    assert_eq!(safety["expected_violation"], true);
}

#[test]
fn a_proof_exits_zero_and_a_bounded_search_says_so() {
    let out = ringleader(&["check", "--algo", "chang-roberts", "--nodes", "3", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let v = json(&out);
    assert_eq!(v["unique_states"], 432);
    assert_eq!(v["complete"], true);
    let out = ringleader(&["check", "--algo", "chang-roberts", "--depth", "3", "--json"]);
    let v = json(&out);
    assert_eq!(v["complete"], false);
    assert_eq!(v["depth"], 3);
}

/// One thread keeps shortest paths; with more, the report says its paths may be longer.
#[test]
fn a_search_on_several_threads_does_not_claim_shortest_paths() {
    let args =
        ["check", "--algo", "central-timeout", "--nodes", "3", "--expect", "safety", "--expect", "fencing"];
    let one = json(&ringleader(&[&args[..], &["--json"]].concat()));
    assert_eq!((one["threads"].clone(), one["shortest"].clone()), (1.into(), true.into()));
    let two = ringleader(&[&args[..], &["--threads", "2"]].concat());
    assert_eq!(two.status.code(), Some(0));
    let text = String::from_utf8_lossy(&two.stdout);
    assert!(text.contains("note       found on 2 threads: a path may be longer than the shortest"), "{text}");
    let two = json(&ringleader(&[&args[..], &["--threads", "2", "--json"]].concat()));
    assert_eq!((two["threads"].clone(), two["shortest"].clone()), (2.into(), false.into()));
    let quiet = ringleader(&[&args[..], &["--threads", "1"]].concat());
    assert!(!String::from_utf8_lossy(&quiet.stdout).contains("note "));
}

/// Depth-first and symmetric searches say so in the report and the JSON, and prove what the
/// breadth-first search proves.
#[test]
fn depth_first_and_symmetric_searches_say_what_they_did() {
    let args = ["check", "--algo", "suzuki-kasami", "--nodes", "3", "--requesters", "all", "--exhaustive"];
    let bfs = json(&ringleader(&[&args[..], &["--json"]].concat()));
    let dfs = json(&ringleader(&[&args[..], &["--search", "dfs", "--json"]].concat()));
    let sym = json(&ringleader(&[&args[..], &["--symmetry", "--json"]].concat()));
    assert_eq!((bfs.get("search"), bfs.get("symmetry")), (None, None));
    assert_eq!((dfs["search"].clone(), dfs["shortest"].clone()), ("dfs".into(), false.into()));
    assert_eq!((sym["search"].clone(), sym["symmetry"].clone()), ("dfs".into(), "rotations".into()));
    assert_eq!(bfs["unique_states"], dfs["unique_states"]);
    assert!(sym["unique_states"].as_u64().unwrap() < dfs["unique_states"].as_u64().unwrap());
    for v in [&bfs, &dfs, &sym] {
        assert_eq!(v["complete"], true);
        let verdicts: Vec<_> =
            v["properties"].as_array().unwrap().iter().map(|p| p["holds"].clone()).collect();
        assert!(verdicts.iter().all(|h| *h == true), "{verdicts:?}");
    }
    let text =
        String::from_utf8_lossy(&ringleader(&[&args[..], &["--symmetry"]].concat()).stdout).to_string();
    assert!(
        text.contains("search     depth-first (a fingerprint per state seen), one state per class of renamings (rotations)"),
        "{text}"
    );
}

#[test]
fn a_search_stopped_once_every_property_is_decided_says_so() {
    let args = ["check", "--algo", "lamport", "--nodes", "3", "--expect", "safety", "--expect", "fencing"];
    let out = ringleader(&[&args[..], &["--expect", "liveness"]].concat());
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("(stopped once every property was decided; --exhaustive explores every state)"),
        "{text}"
    );
    let v = json(&ringleader(&[&args[..], &["--json"]].concat()));
    assert_eq!((v["complete"].clone(), v["decided_early"].clone()), (false.into(), true.into()));
    let v = json(&ringleader(&[&args[..], &["--json", "--exhaustive"]].concat()));
    assert_eq!((v["complete"].clone(), v["decided_early"].clone()), (true.into(), false.into()));
    assert_eq!(v["unique_states"], 15_799);
}

#[test]
fn bad_input_is_one_line_and_exit_one() {
    for args in [
        &["check", "--algo", "nope"][..],
        &["check", "--algo", "central", "--network", "fifo"],
        &["check", "--algo", "central", "--expect", "bogus"],
        &["check", "--algo", "central", "--param", "x=1"],
        &["check", "--algo", "central", "--nodes", "0"],
        &["check", "--algo", "central", "--requesters", "9"],
        &["check", "--algo", "central", "--show", "bogus"],
    ] {
        let out = ringleader(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
}

#[test]
fn an_unexpected_violation_exits_two() {
    let out = ringleader(&["check", "--algo", "central", "--crashes", "1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stdout).contains("liveness"));
}

#[test]
fn an_infinite_space_is_announced_and_stops_at_its_budget() {
    let out = ringleader(&["check", "--algo", "bully", "--nodes", "3", "--max-states", "5000"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("warning: the state space of bully is infinite"), "{err}");
    assert!(err.contains("--depth"), "{err}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("bounded by the state budget of 5000 states"), "{text}");
    assert_eq!(out.status.code(), Some(2), "bully's uniqueness flaw is still found");
    let bounded = ringleader(&["check", "--algo", "bully", "--nodes", "3", "--depth", "3"]);
    assert!(!String::from_utf8_lossy(&bounded.stderr).contains("warning"));
    let bad = ringleader(&["check", "--algo", "central", "--max-memory", "lots"]);
    assert_eq!(bad.status.code(), Some(1));
    let bad = ringleader(&["check", "--algo", "central", "--max-time", "lots"]);
    assert_eq!(bad.status.code(), Some(1));
}

/// `central`'s recovered coordinator polls before it grants (rules 12 and 13): over every
/// interleaving of 3 nodes with one crash and recovery on FIFO links, no two holders and no
/// fencing regression. On unordered links a GRANT sent before the crash can overtake the POLL,
/// the assumption the essay states: the checker finds that overlap.
#[test]
fn central_recovery_is_safe_on_fifo_links_and_the_checker_shows_why_it_needs_them() {
    let args = ["check", "--algo", "central", "--nodes", "3", "--crashes", "1", "--recover", "--json"];
    let prop = |v: &serde_json::Value, name: &str| {
        v["properties"].as_array().unwrap().iter().find(|p| p["name"] == name).unwrap()["holds"].clone()
    };
    let ordered = json(&ringleader(&[&args[..], &["--network", "ordered"]].concat()));
    assert_eq!(ordered["complete"], true);
    assert_eq!(ordered["unique_states"], 613);
    assert_eq!(prop(&ordered, "safety"), true, "{ordered}");
    assert_eq!(prop(&ordered, "fencing"), true, "{ordered}");
    let unordered = json(&ringleader(&args));
    assert_eq!(prop(&unordered, "safety"), false, "{unordered}");
}
