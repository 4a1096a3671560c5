//! The command-line contract of `CLI.md`: flags, the JSON object, exit codes, errors.

use std::process::{Command, Output};

fn ringleader(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ringleader")).args(args).output().expect("ringleader runs")
}

fn json(args: &[&str]) -> serde_json::Value {
    let out = ringleader(args);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("stdout is exactly one JSON object")
}

fn sim(extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["sim", "--json"];
    args.extend_from_slice(extra);
    json(&args)
}

fn all_hold(r: &serde_json::Value) -> bool {
    r["properties"].as_array().unwrap().iter().all(|p| p["holds"] == true)
}

#[test]
fn chang_roberts_textbook_counts() {
    let d = sim(&["--algo", "chang-roberts", "--nodes", "8", "--ids", "descending", "--initiators", "all"]);
    assert_eq!(d["messages"]["by_kind"]["election"], 36);
    assert_eq!(d["messages"]["by_kind"]["elected"], 8);
    assert_eq!(d["outcome"]["leader"], 8);
    assert!(all_hold(&d));
    let a = sim(&["--algo", "chang-roberts", "--nodes", "8", "--ids", "ascending", "--initiators", "all"]);
    assert_eq!(a["messages"]["by_kind"]["election"], 15);
    assert_eq!(a["messages"]["by_kind"]["elected"], 8);
    let one = sim(&["--algo", "chang-roberts", "--nodes", "8", "--ids", "ascending", "--initiators", "1"]);
    assert_eq!(one["messages"]["sent"], 23, "3N-1 for N = 8");
}

#[test]
fn central_sequential_costs_three_messages_per_entry() {
    let r = sim(&["--algo", "central", "--nodes", "5", "--workload", "sequential", "--entries", "10"]);
    assert_eq!(r["messages"]["sent"], 30);
    assert_eq!(r["outcome"]["entries"], 10);
    assert_eq!(r["outcome"]["max_concurrent_holders"], 1);
    let names: Vec<&str> =
        r["properties"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    for p in ["safety", "liveness", "fifo"] {
        assert!(names.contains(&p), "{p} is checked");
    }
    assert!(all_hold(&r));
}

#[test]
fn same_seed_same_json_and_trace_different_seed_different_trace() {
    let dir = std::env::temp_dir().join(format!("ringleader-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let run = |seed: &str, name: &str| {
        let path = dir.join(name);
        let mut r = sim(&[
            "--algo",
            "central",
            "--nodes",
            "6",
            "--workload",
            "poisson",
            "--entries",
            "30",
            "--latency",
            "uniform:1ms..3ms",
            "--seed",
            seed,
            "--trace",
            path.to_str().unwrap(),
        ]);
        r.as_object_mut().unwrap().remove("wall_seconds");
        (r, std::fs::read(path).unwrap())
    };
    let (a, ta) = run("7", "a.jsonl");
    let (b, tb) = run("7", "b.jsonl");
    let (_, tc) = run("8", "c.jsonl");
    assert_eq!(a, b);
    assert_eq!(ta, tb);
    assert_ne!(ta, tc);
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn expected_violation_exits_zero_and_undeclared_exits_two() {
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/central-timeout-paused-holder.toml");
    let declared = ringleader(&["sim", file, "--json"]);
    assert_eq!(declared.status.code(), Some(0));
    let r: serde_json::Value = serde_json::from_slice(&declared.stdout).unwrap();
    let v = &r["violations"][0];
    assert_eq!(v["property"], "safety");
    assert_eq!(v["time"], 12.0);
    assert!(v["step"].as_u64().unwrap() > 0);
    // The same run from its flags, without the declaration.
    let undeclared = ringleader(&[
        "sim",
        "--algo",
        "central-timeout",
        "--nodes",
        "3",
        "--workload",
        "saturated",
        "--entries",
        "2",
        "--hold",
        "5ms",
        "--requesters",
        "2,3",
        "--pause",
        "2@2.5ms..100ms",
        "--param",
        "timeout=10ms",
        "--json",
    ]);
    assert_eq!(undeclared.status.code(), Some(2));
}

#[test]
fn bad_input_gets_one_line_and_exit_one() {
    let dir = std::env::temp_dir().join(format!("ringleader-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let malformed = dir.join("malformed.toml");
    std::fs::write(&malformed, "algorithm = \"central\"\nnodes = [\n").unwrap();
    let unknown = dir.join("unknown.toml");
    std::fs::write(&unknown, "algorithm = \"central\"\nnodez = 3\n").unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["sim", "--algo", "paxos"], "unknown algorithm"),
        (vec!["sim", "--algo", "central", "--nodes", "0"], "at least 1"),
        (vec!["sim", "--algo", "central", "--crash", "2@soon"], "time"),
        (vec!["sim", malformed.to_str().unwrap()], "malformed.toml:"),
        (vec!["sim", unknown.to_str().unwrap()], "nodez"),
        (vec!["sim", "--algo", "central", "--param", "bogus=1"], "unknown parameter"),
        (vec!["sim", "--algo", "central", "--nodes", "many"], "--nodes"),
    ];
    for (args, needle) in cases {
        let out = ringleader(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: one line, got {err}");
        assert!(err.contains(needle), "{args:?}: {err} should mention {needle}");
        assert!(out.stdout.is_empty(), "{args:?}: nothing on stdout");
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn list_names_every_algorithm_with_family() {
    let out = ringleader(&["list"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.lines().any(|l| l.starts_with("chang-roberts") && l.contains("election")));
    assert!(text.lines().any(|l| l.starts_with("central ") && l.contains("mutex")));
}

#[test]
fn mermaid_draws_the_violation_in_red() {
    let dir = std::env::temp_dir().join(format!("ringleader-mmd-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("run.mmd");
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/central-timeout-paused-holder.toml");
    let out = ringleader(&["sim", file, "--mermaid", path.to_str().unwrap()]);
    assert!(out.status.success());
    let mmd = std::fs::read_to_string(&path).unwrap();
    assert!(mmd.starts_with("sequenceDiagram"));
    assert!(mmd.contains("participant P0"));
    assert!(mmd.contains("rect rgb(200, 0, 0)"));
    assert!(mmd.contains("enters critical section"));
    assert!(mmd.contains("paused"));
    std::fs::remove_dir_all(dir).ok();
}

/// `--threads`: the windowed engine gives the same report and trace on 1 and 3 threads (but for
/// the wall time and the thread count), with Chang-Roberts' textbook count N(N+1)/2 for
/// descending ids, and the text report names the engine.
#[test]
fn threads_give_the_same_run_on_the_windowed_engine() {
    let dir = std::env::temp_dir().join(format!("ringleader-windowed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let run = |threads: &str| {
        let trace = dir.join(format!("trace-{threads}.jsonl"));
        let args = ["--algo", "chang-roberts", "--nodes", "8", "--ids", "descending", "--initiators", "all"];
        let mut extra = args.to_vec();
        let trace_arg = trace.to_str().unwrap().to_string();
        extra.extend(["--latency", "uniform:1ms..3ms", "--threads", threads, "--trace", &trace_arg]);
        let mut d = sim(&extra);
        assert_eq!(d["threads"], threads.parse::<u64>().unwrap());
        d["wall_seconds"] = 0.into();
        d["threads"] = 0.into();
        let repro = d["repro"].as_str().unwrap().to_string();
        assert!(repro.ends_with(&format!(" --threads {threads}")), "{repro}");
        d["repro"] = repro.trim_end_matches(&format!(" --threads {threads}")).into();
        (d, std::fs::read_to_string(&trace).unwrap())
    };
    let (one, trace_one) = run("1");
    let (three, trace_three) = run("3");
    assert_eq!(one["messages"]["by_kind"]["election"], 36);
    assert_eq!(one["outcome"]["leader"], 8);
    assert!(all_hold(&one));
    assert_eq!(one, three);
    assert!(trace_one.lines().count() > 40 && trace_one == trace_three, "the traces differ");
    let text = ringleader(&["sim", "--algo", "chang-roberts", "--nodes", "8", "--threads", "2"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("engine     windowed, 2 threads"), "{text}");
    std::fs::remove_dir_all(&dir).ok();
}

/// The README's main command: `demo` tells its three stories with their textbook counts, finds
/// the expected two holders, writes a page per story and exits 0.
#[test]
fn the_demo_tells_three_stories_and_exits_0() {
    let dir = std::env::temp_dir().join(format!("ringleader-demo-{}", std::process::id()));
    let out = ringleader(&["demo", "--html-dir", dir.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    for needle in [
        "── scenarios/chang-roberts-worst-case.toml ──",
        "messages   44 sent, 44 delivered, 0 dropped, 0 in flight  (elected 8, election 36)",
        "leader = 8",
        "── scenarios/central-three-participants.toml ──",
        "messages   9 sent, 9 delivered, 0 dropped, 0 in flight  (grant 3, release 3, request 3)",
        "max_concurrent_holders = 1,",
        "── scenarios/central-timeout-paused-holder.toml ──",
        "max_concurrent_holders = 2,",
        "safety          VIOLATED (expected by the scenario)",
        "verdict    OK: the expected violations were found",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
    for page in ["chang-roberts-worst-case", "central-three-participants", "central-timeout-paused-holder"] {
        let html = std::fs::read_to_string(dir.join(format!("{page}.html"))).unwrap();
        assert!(html.starts_with("<!DOCTYPE html>"), "{page}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
