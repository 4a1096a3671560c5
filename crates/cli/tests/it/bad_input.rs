//! Bad input gets one line on stderr naming what was wrong and what is allowed, exit status 1,
//! nothing on stdout; never a panic, an allocation abort or a run that does not end. A reader
//! that closes the pipe ends the program quietly.

use std::io::Write as _;
use std::process::{Command, Output, Stdio};

fn ringleader(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ringleader")).args(args).output().expect("ringleader runs")
}

/// Runs `args`, expects exit 1 with one stderr line containing every `needles`; returns it.
fn refused(args: &[&str], needles: &[&str]) -> String {
    let out = ringleader(args);
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1), "{args:?} should be refused; stderr: {err}");
    assert!(out.stdout.is_empty(), "{args:?} printed on stdout: {}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(err.lines().count(), 1, "{args:?}: one line expected, got: {err}");
    for n in needles {
        assert!(err.contains(n), "{args:?}: {err:?} should say {n:?}");
    }
    err
}

#[test]
fn a_closed_pipe_ends_the_program_quietly() {
    for args in [
        &["table"][..],
        &["demo"],
        &["list"],
        &["sim", "--algo", "central", "--json"],
        &["sim", "--algo", "chang-roberts"],
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ringleader"))
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("ringleader runs");
        // The reader leaves before anything is written, as `| head -0` or `| (exec 0<&-)` do.
        drop(child.stdout.take());
        let out = child.wait_with_output().expect("ringleader ends");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.is_empty(), "{args:?}: nothing on stderr expected, got {err}");
        assert_ne!(out.status.code(), Some(101), "{args:?} panicked");
        assert!(matches!(out.status.code(), Some(0 | 141) | None), "{args:?}: {:?}", out.status);
    }
}

#[test]
fn every_numeric_input_has_a_range() {
    fn central<'a>(extra: &[&'a str]) -> Vec<&'a str> {
        let mut a = vec!["sim", "--algo", "central"];
        a.extend_from_slice(extra);
        a
    }
    let cases: &[(&[&str], &[&str])] = &[
        (&["--nodes", "0"], &["--nodes 0", "at least 1 and at most 1000000"]),
        (&["--nodes", "2000000"], &["--nodes 2000000", "at most 1000000"]),
        (&["--duration", "0"], &["--duration 0", "above 0"]),
        (&["--duration", "100000s"], &["--duration 100000s", "at most 86400s"]),
        (&["--drift-ppm", "1500000"], &["--drift-ppm 1500000", "0..100000"]),
        (&["--clock-offset", "4000s"], &["--clock-offset 4000s", "0..3600s"]),
        (&["--latency", "constant:2000s"], &["--latency constant:2000s", "at most 60s"]),
        (&["--latency", "lognormal:1ms,9"], &["SIGMA must be 0..3"]),
        (&["--loss", "1.5"], &["--loss 1.5", "between 0 and 1"]),
        (&["--dup=-0.1"], &["--dup -0.1", "between 0 and 1"]),
        (&["--latency", "uniform:1ms..3ms", "--max-delay", "2ms"], &["--max-delay 2ms", "3ms"]),
        (&["--max-delay", "90s"], &["--max-delay 90s", "at most 60s"]),
        (&["--entries", "20000000"], &["--entries 20000000", "0..10000000"]),
        (&["--hold", "2h"], &["--hold 7200s", "0..3600s"]),
        (&["--hold", "2 weeks"], &["cannot read", "24h"]),
        (&["--duration", "25h"], &["--duration 90000s", "at most 86400s"]),
        (&["--hold", "7200s"], &["--hold 7200s", "0..3600s"]),
        (&["--workload", "poisson", "--rate", "0"], &["--rate 0", "above 0"]),
        (&["--workload", "poisson", "--rate", "1e9"], &["--rate 1000000000", "at most 1000000"]),
        (&["--param", "timeout=1ns"], &["unknown parameter"]),
    ];
    for (extra, needles) in cases {
        refused(&central(extra), needles);
    }
    refused(&["sim", "--algo", "central-timeout", "--param", "timeout=1ns"], &["timeout", "100us..1h"]);
    refused(&["sim", "--algo", "heartbeat", "--param", "period=1ns"], &["period", "100us..1h"]);
    refused(&["sim", "--algo", "bully", "--param", "heartbeat=1ns"], &["heartbeat", "100us..1h"]);
    refused(&["sim", "--algo", "vector-clock", "--fanout", "5"], &["--fanout 5", "1..4"]);
    refused(&["sim", "--algo", "wait-die", "--cycles", "2"], &["--cycles 2", "between 0 and 1"]);
    refused(&["sim", "--algo", "cristian", "--slew-ppm", "0"], &["--slew-ppm 0", "1..500000"]);
    refused(&["sim", "--algo", "cristian", "--slew-ppm", "600000"], &["--slew-ppm 600000", "1..500000"]);
    // Counts inside parameters: a window or a number of probes that would flood or fill memory.
    refused(&["sim", "--algo", "cristian", "--param", "probes=4000000000"], &["probes", "1..1000"]);
    refused(&["sim", "--algo", "phi-accrual", "--param", "window=100000000000"], &["window", "1..100000"]);
    refused(&["sim", "--algo", "ntp", "--param", "window=1000000000000"], &["window", "1..10000"]);
}

/// The model checker's search order is one of two, and symmetry reduction is refused, with the
/// list of algorithms that declare one, where nodes are not interchangeable.
#[test]
fn a_search_order_or_symmetry_that_does_not_apply_is_refused() {
    refused(&["check", "--algo", "central", "--search", "sideways"], &["sideways", "bfs", "dfs"]);
    refused(
        &["check", "--algo", "ricart-agrawala", "--symmetry"],
        &["--symmetry", "ricart-agrawala declares no symmetry", "suzuki-kasami"],
    );
    refused(
        &["check", "--algo", "suzuki-kasami", "--symmetry", "--search", "bfs"],
        &["--symmetry with --search bfs", "depth-first"],
    );
    refused(
        &["check", "--algo", "central", "--search", "dfs", "--depth", "8"],
        &["--depth 8 with a depth-first search", "--max-states", "--search bfs"],
    );
}

/// The other commands' numeric flags have ranges too: the model checker, the benchmark, the
/// detector curve, the quorum-risk calculator and a real node.
#[test]
fn every_command_s_numeric_flags_have_a_range() {
    let cases: &[(&[&str], &[&str])] = &[
        (&["check", "--algo", "central", "--crashes", "9"], &["--crashes 9", "at most the 3 nodes"]),
        (&["check", "--algo", "central", "--acquires", "0"], &["--acquires 0", "1..16"]),
        (&["check", "--algo", "central", "--threads", "0"], &["--threads 0", "1..1024"]),
        (&["check", "--algo", "bully", "--depth", "0"], &["--depth 0"]),
        (&["bench", "--nodes", "0"], &["--nodes", "1..=1000000"]),
        (&["bench", "--threads", "0"], &["--threads", "1..=256"]),
        (&["sim", "--algo", "chang-roberts", "--threads", "0"], &["--threads", "1..=256"]),
        (
            &["sim", "--algo", "token-ring", "--nodes", "12", "--workload", "saturated", "--threads", "3"],
            &["--threads", "token-ring sent from position", "not a link of its ring topology"],
        ),
        (
            &["sim", "--algo", "chang-roberts", "--crash", "2@1ms", "--threads", "2"],
            &["--threads", "fault plan", "leave out --threads"],
        ),
        (
            &[
                "sim",
                "--algo",
                "ricart-agrawala",
                "--workload",
                "saturated",
                "--latency",
                "exponential:1ms",
                "--threads",
                "2",
            ],
            &["--threads", "no delay", "uniform:A..B"],
        ),
        (&["detector-curve", "--nodes", "100000"], &["--nodes 100000", "2..100"]),
        (&["detector-curve", "--pauses", "100000000"], &["--pauses 100000000", "0..1000"]),
        (&["detector-curve", "--downtime", "0"], &["--downtime 0", "100ms"]),
        (&["detector-curve", "--pause-median", "0"], &["--pause-median 0", "1ms..5s"]),
        (&["detector-curve", "--duration", "7200s"], &["--duration 7200s", "5s..1h"]),
        (
            &["quorum-risk", "--p", "0.1", "--n", "4000000000", "--m", "3000000000"],
            &["--n 4000000000", "1..1000"],
        ),
        (
            &["quorum-risk", "--p", "0.1", "--n", "3", "--m", "2", "--monte-carlo", "100000000000000"],
            &["--monte-carlo", "1..100000000"],
        ),
        (
            &["quorum-risk", "--p", "0.1", "--n", "3", "--m", "2", "--protocol", "100000000000"],
            &["--protocol", "1..1000000"],
        ),
        (
            &[
                "node",
                "--id",
                "1",
                "--algo",
                "central",
                "--insecure",
                "--listen",
                "127.0.0.1:1",
                "--max-frame",
                "0",
            ],
            &["--max-frame 0", "1024..16777216"],
        ),
        (
            &[
                "node",
                "--id",
                "1",
                "--algo",
                "central",
                "--insecure",
                "--listen",
                "127.0.0.1:1",
                "--queue",
                "0",
            ],
            &["--queue 0", "1..1000000"],
        ),
        (
            &[
                "node",
                "--id",
                "1",
                "--algo",
                "central",
                "--insecure",
                "--listen",
                "127.0.0.1:1",
                "--max-connections",
                "0",
            ],
            &["--max-connections 0", "1..65536"],
        ),
        (
            &[
                "node",
                "--id",
                "1",
                "--algo",
                "central",
                "--insecure",
                "--listen",
                "127.0.0.1:1",
                "--max-delay",
                "0",
            ],
            &["--max-delay 0", "100us..60s"],
        ),
    ];
    for (args, needles) in cases {
        refused(args, needles);
    }
}

#[test]
fn quadratic_algorithms_on_a_hundred_thousand_nodes_are_refused_up_front() {
    for algo in
        ["bully", "lamport", "suzuki-kasami", "vector-clock", "chandy-misra-haas", "heartbeat", "phi-accrual"]
    {
        let err = refused(
            &["sim", "--algo", algo, "--nodes", "100000"],
            &["--nodes 100000", "GiB", "the limit is 4.0 GiB"],
        );
        assert!(err.contains(&format!("{algo} needs about")), "{err}");
    }
}

/// maekawa's quorums grow as N√N: a million nodes are refused with the largest size allowed,
/// and lock-service's N³ start-up is refused where it would pass ten minutes (the class of
/// "size limits that lie": every superlinear cost is estimated before anything is built).
#[test]
fn superlinear_start_up_and_quorum_memory_are_refused_up_front() {
    let err = refused(
        &["sim", "--algo", "maekawa", "--nodes", "1000000"],
        &["--nodes 1000000", "maekawa needs about", "N√N", "allows at most"],
    );
    assert!(!err.contains("N²"), "{err}");
    refused(
        &["sim", "--algo", "lock-service", "--nodes", "5000"],
        &["--nodes 5000", "lock-service would spend about", "before its first event", "N³", "allows at most"],
    );
}

#[test]
fn impossible_runs_are_refused() {
    let cases: &[(&[&str], &[&str])] = &[
        (&["--algo", "bully", "--entries", "3"], &["--entries 3", "election algorithm", "no workload"]),
        (&["--algo", "bully", "--workload", "sequential"], &["--workload sequential", "no --workload"]),
        (&["--algo", "central", "--initiators", "2"], &["--initiators 2", "only elections"]),
        (&["--algo", "central", "--cycles", "0.5"], &["--cycles 0.5", "deadlock runs"]),
        (&["--algo", "central", "--fanout", "2"], &["--fanout 2", "for clock runs"]),
        (&["--algo", "wait-die", "--fanout", "2"], &["--fanout 2", "--holders"]),
        (&["--algo", "lamport-clock", "--holders", "2"], &["--holders 2", "deadlock runs"]),
        (&["--algo", "wait-die", "--holders", "5"], &["--holders 5", "1..4"]),
        (&["--algo", "central", "--rate", "5"], &["--rate 5", "poisson"]),
        (&["--algo", "lamport-clock", "--workload", "poisson"], &["--workload poisson", "messages"]),
        (&["--algo", "lamport-clock", "--hold", "2ms"], &["--hold 2ms", "mutex and deadlock"]),
        (&["--algo", "wait-die", "--requesters", "1,2"], &["--requesters 1,2"]),
        (&["--algo", "bully", "--expect", "safety"], &["--expect safety", "agreement"]),
        (&["--algo", "central", "--expect", "agreement"], &["--expect agreement", "safety"]),
        (&["--algo", "central", "--recover", "2@5ms"], &["--recover 2@5ms", "never crashes"]),
        (
            &["--algo", "central", "--crash", "2@5ms", "--recover", "2@1ms"],
            &["--recover 2@1ms", "comes later"],
        ),
        (&["--algo", "central", "--crash", "2@5ms", "--crash", "2@7ms"], &["--crash 2@7ms", "already down"]),
        (&["--algo", "central", "--pause", "2@5ms..5ms"], &["--pause 2@5ms..5ms", "empty"]),
        (&["--algo", "central", "--pause", "2@1ms..9ms", "--pause", "2@5ms..20ms"], &["overlaps"]),
        (&["--algo", "central", "--duration", "1s", "--crash", "2@2s"], &["--crash 2@2s", "after the end"]),
        (&["--algo", "heartbeat", "--pause", "2@11s..12s"], &["--pause 2@11s..12s", "after the end"]),
        (&["--algo", "central", "--partition", "1,2|2,3@1ms..5ms"], &["both sides"]),
        (&["--algo", "chang-roberts", "--initiators", "1,1"], &["--initiators 1,1", "id 1 is named twice"]),
        (&["--algo", "central", "--requesters", "2,2"], &["--requesters 2,2", "twice"]),
    ];
    for (extra, needles) in cases {
        let mut a = vec!["sim"];
        a.extend_from_slice(extra);
        refused(&a, needles);
    }
    // The same flags are fine where they apply.
    for args in [
        &["sim", "--algo", "chang-roberts", "--initiators", "2", "--json"][..],
        &["sim", "--algo", "central", "--entries", "3", "--json"],
        &["sim", "--algo", "central", "--crash", "2@5ms", "--recover", "2@7ms", "--crash", "2@9ms", "--json"],
    ] {
        let out = ringleader(args);
        assert_ne!(out.status.code(), Some(1), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
}

#[test]
fn scenario_values_are_reported_at_their_line_and_field() {
    let dir = std::env::temp_dir().join(format!("ringleader-bad-input-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("lossy.toml");
    std::fs::write(&file, "algorithm = \"central\"\n\n[network]\nloss = 1.5\n").unwrap();
    let path = file.display().to_string();
    refused(
        &["sim", &path],
        &[&format!("{path}:4:8: field `loss` = 1.5: a probability must be between 0 and 1")],
    );
    // A flag overriding the file is reported as the flag.
    refused(&["sim", &path, "--loss", "2"], &["--loss 2: a probability"]);
    let mut f = std::fs::File::create(dir.join("faults.toml")).unwrap();
    writeln!(f, "algorithm = \"central\"\n[faults]\ncrash = [\"2@1ms\"]\nrecover = [\"3@2ms\"]").unwrap();
    let path = dir.join("faults.toml").display().to_string();
    refused(&["sim", &path], &[&format!("{path}:4:12: field `recover` = 3@2ms: node 3 never crashes")]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_os_error_is_said_once() {
    let err = refused(&["sim", "no-such-scenario.toml"], &["no-such-scenario.toml"]);
    assert_eq!(err.matches("No such file").count(), 1, "{err}");
}
