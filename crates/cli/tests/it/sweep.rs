//! `ringleader sweep`: the summary does not depend on threads or shards, and it counts what the
//! individual runs find.

use std::process::{Command, Output};

fn ringleader(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ringleader")).args(args).output().expect("ringleader runs")
}

/// The `--json` output with its timing fields removed.
fn content(out: &Output) -> serde_json::Value {
    let mut v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    let o = v.as_object_mut().unwrap();
    assert!(o.remove("wall_seconds").is_some());
    assert!(o.remove("threads").is_some());
    v
}

fn sweep(extra: &[&str]) -> Output {
    let mut args = vec!["sweep", "--json"];
    args.extend_from_slice(extra);
    ringleader(&args)
}

const LOSSY_CENTRAL: &[&str] = &[
    "--algo",
    "central",
    "--nodes",
    "4,5",
    "--loss",
    "0.05",
    "--seeds",
    "1..30",
    "--variant",
    "",
    "--variant",
    "--dup 0.05",
];

#[test]
fn one_thread_and_two_threads_give_the_same_content() {
    let one = sweep(&[LOSSY_CENTRAL, &["--threads", "1"]].concat());
    let two = sweep(&[LOSSY_CENTRAL, &["--threads", "2"]].concat());
    assert_eq!(one.status.code(), Some(2), "lossy central starves someone on some seed");
    assert_eq!(content(&one), content(&two));
    let v = content(&one);
    assert_eq!(v["configurations"].as_array().unwrap().len(), 4, "2 sizes x 2 variants");
    assert_eq!(v["runs"].as_array().unwrap().len(), 120);
}

#[test]
fn merged_shards_equal_the_single_sweep() {
    let dir = std::env::temp_dir().join(format!("ringleader-sweep-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let whole = sweep(LOSSY_CENTRAL);
    let mut files = Vec::new();
    for i in 0..3 {
        let shard = format!("{i}/3");
        let part = sweep(&[LOSSY_CENTRAL, &["--shard", &shard, "--threads", "1"]].concat());
        let path = dir.join(format!("part{i}.json"));
        std::fs::write(&path, &part.stdout).unwrap();
        files.push(path.display().to_string());
    }
    // Shards in any order.
    let order = [files[2].as_str(), files[0].as_str(), files[1].as_str()];
    let merged = ringleader(&[&["sweep", "merge", "--json"], &order[..]].concat());
    assert_eq!(merged.status.code(), whole.status.code());
    assert_eq!(content(&merged), content(&whole));
    // The text summaries agree too, but for the timing line.
    let text = |o: &Output| String::from_utf8_lossy(&o.stdout).lines().skip(1).collect::<Vec<_>>().join("\n");
    let merged_text = ringleader(&[&["sweep", "merge"], &order[..]].concat());
    let whole_text = ringleader(&[&["sweep"], LOSSY_CENTRAL].concat());
    assert_eq!(text(&merged_text), text(&whole_text));
    // A missing shard or a shard given twice is refused.
    let missing = ringleader(&["sweep", "merge", &files[0], &files[1]]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("cover"));
    let twice = ringleader(&["sweep", "merge", &files[0], &files[0], &files[1], &files[2]]);
    assert_eq!(twice.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&twice.stderr).contains("two shards"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn violation_counts_and_repro_lines_match_the_single_runs() {
    let out = sweep(&["--algo", "central", "--nodes", "4", "--loss", "0.05", "--seeds", "1..12"]);
    let v = content(&out);
    let summary = &v["configurations"][0];
    let mut failing = Vec::new();
    let mut messages = Vec::new();
    for seed in 1..=12u64 {
        let s = seed.to_string();
        let run = ringleader(&[
            "sim", "--json", "--algo", "central", "--nodes", "4", "--loss", "0.05", "--seed", &s,
        ]);
        let r: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
        messages.push(r["messages"]["sent"].as_u64().unwrap());
        if run.status.code() == Some(2) {
            failing.push(r["repro"].as_str().unwrap().to_string());
        }
    }
    assert!(!failing.is_empty() && failing.len() < 12, "some but not all seeds fail: {failing:?}");
    assert_eq!(summary["unexpected"], failing.len());
    let starved = &summary["violations"]["no_starvation"];
    let listed: Vec<String> =
        starved["first"].as_array().unwrap().iter().map(|x| x.as_str().unwrap().to_string()).collect();
    assert_eq!(listed[..], failing[..listed.len()], "the first failing seeds, lowest first");
    assert_eq!(summary["messages"]["min"], *messages.iter().min().unwrap() as f64);
    assert_eq!(summary["messages"]["max"], *messages.iter().max().unwrap() as f64);
    messages.sort();
    assert_eq!(summary["messages"]["p50"], messages[5] as f64, "nearest rank: the 6th of 12");
}

#[test]
fn bad_sweep_input_is_one_line_and_exit_1() {
    for args in [
        &["sweep", "--algo", "central"][..],
        &["sweep", "--algo", "central", "--seeds", "9..1"],
        &["sweep", "--algo", "central", "--seeds", "1..5", "--seed", "3"],
        &["sweep", "--algo", "central", "--seeds", "1..5", "--shard", "2/2"],
        &["sweep", "--algo", "central", "--seeds", "1..5", "--threads", "0"],
        &["sweep", "--algo", "central", "--seeds", "1..5", "--variant", "--no-such-flag"],
        &["sweep", "--algo", "no-such-algo", "--seeds", "1..5"],
        &["sweep", "merge", "/nonexistent/part.json"],
    ] {
        let out = ringleader(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
}

/// Undecided properties are counted per property, with the runs that proved no progress
/// possible; the verdict says UNDECIDED (not OK), and `--expect-decided` makes it a failure.
#[test]
fn undecided_runs_are_counted_and_expect_decided_fails_them() {
    let args = [
        "--algo",
        "lock-service",
        "--nodes",
        "3",
        "--workload",
        "saturated",
        "--entries",
        "6",
        "--duration",
        "1s",
        "--seeds",
        "1..3",
        "--variant",
        "",
        "--variant",
        "--crash 2@0 --crash 3@0",
    ];
    let out = sweep(&args);
    assert_eq!(out.status.code(), Some(0), "undecided is no violation");
    let v = content(&out);
    let (decided, stuck) = (&v["configurations"][0], &v["configurations"][1]);
    assert_eq!(decided["undecided"], serde_json::json!({}));
    assert_eq!(decided["no_progress"], 0);
    assert_eq!(stuck["undecided"]["no_starvation"]["runs"], 3);
    assert_eq!(stuck["no_progress"], 3);
    assert_eq!(stuck["violations"], serde_json::json!({}));
    let mut text_args = vec!["sweep"];
    text_args.extend_from_slice(&args);
    let text = ringleader(&text_args);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("no_starvation undecided in 3 of 3 runs"), "{text}");
    assert!(text.contains("no progress possible in 3 of 3 runs"), "{text}");
    assert!(
        text.contains(
            "verdict    UNDECIDED: no unexpected violation, but 3 of 6 runs left properties undecided"
        ),
        "{text}"
    );
    text_args.push("--expect-decided");
    assert_eq!(ringleader(&text_args).status.code(), Some(2));
    // The decided configuration alone passes --expect-decided.
    let out = ringleader(&[
        "sweep",
        "--expect-decided",
        "--algo",
        "lock-service",
        "--nodes",
        "3",
        "--workload",
        "saturated",
        "--entries",
        "6",
        "--seeds",
        "1..3",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(String::from_utf8_lossy(&out.stdout).contains("verdict    OK: "));
}

/// A run cut off with critical-section requests still waiting counts their messages but not
/// them: the sweep gives both bounds (`messages_per_entry` over finished entries,
/// `..._incl_unfinished` counting the waiting ones), and `sim` says how many were unfinished.
/// Seeds and sizes other than any golden run's.
#[test]
fn cut_off_runs_give_the_cost_per_operation_as_two_bounds() {
    let args = [
        "--algo",
        "ricart-agrawala",
        "--nodes",
        "6",
        "--entries",
        "30",
        "--latency",
        "uniform:1ms..3ms",
        "--duration",
        "9ms",
    ];
    let mut sweep_args = vec!["--seeds", "11..14"];
    sweep_args.extend_from_slice(&args);
    let out = sweep(&sweep_args);
    let v = content(&out);
    let mut checked = 0;
    for run in v["runs"].as_array().unwrap() {
        let m = &run["metrics"];
        let upper = m["messages_per_entry"].as_f64().expect("entries finished");
        let Some(lower) = m["messages_per_entry_incl_unfinished"].as_f64() else { continue };
        let unfinished = m["operations_unfinished"].as_f64().expect("the count beside it");
        assert!(unfinished >= 1.0 && lower < upper, "{run}");
        checked += 1;
    }
    assert_eq!(checked, 4, "every run is cut off with a request waiting: {v}");

    let mut sim_args = vec!["sim", "--json", "--seed", "12"];
    sim_args.extend_from_slice(&args);
    let out = ringleader(&sim_args);
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let po = &r["per_operation"];
    let (ops, unfinished) = (po["operations"].as_f64().unwrap(), po["unfinished"].as_f64().unwrap());
    let algorithm = r["messages"]["sent"].as_f64().unwrap();
    assert_eq!(po["messages_mean_incl_unfinished"].as_f64().unwrap(), algorithm / (ops + unfinished), "{po}");
    let mut human_args = vec!["sim", "--seed", "12"];
    human_args.extend_from_slice(&args);
    let text = String::from_utf8(ringleader(&human_args).stdout).unwrap();
    assert!(text.contains("unfinished when the run stopped"), "{text}");
}

/// The human summary puts the textbook's formula beside the measured rows, and says so when
/// the textbooks give none.
#[test]
fn the_human_summary_shows_the_textbook_cost() {
    let text = |algo: &str| {
        let out = ringleader(&["sweep", "--algo", algo, "--nodes", "5", "--seeds", "1..2"]);
        String::from_utf8(out.stdout).unwrap()
    };
    let ra = text("ricart-agrawala");
    assert!(ra.contains("textbook (N = 5;") && ra.contains("= 2(N−1) messages per entry"), "{ra}");
    let bully = text("bully");
    assert!(bully.contains("messages per election"), "{bully}");
    let ww = text("wound-wait");
    assert!(
        ww.contains("textbook: no message cost per operation (the textbooks give no message cost"),
        "{ww}"
    );
}
