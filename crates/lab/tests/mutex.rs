//! The lab bench on mutual exclusion, with real Python processes: the example node passes with
//! the textbook's 2(N−1) messages per entry, a node without deferral is caught, lockstep
//! repeats a run byte for byte, and crashes, recoveries and protocol errors do what they say.
//!
//! The runs wait on the nodes' answers with bounded timeouts (the bench's own); nothing sleeps.

use std::path::PathBuf;

use ringleader_core::trace::RecordKind;
use ringleader_lab::report::Verdict;
use ringleader_lab::{LabConfig, LabError, LabFamily, run};
use ringleader_sim::notation::Latency;

fn path(rel: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel).display().to_string()
}

fn example() -> String {
    format!("python3 {}", path("../../lab/examples/mutex_ra.py"))
}

fn verdict<'a>(r: &'a ringleader_lab::LabReport, name: &str) -> &'a Verdict {
    &r.properties.iter().find(|p| p.name == name).unwrap_or_else(|| panic!("no {name}")).verdict
}

fn contended(command: &str, seed: u64) -> LabConfig {
    let mut c = LabConfig::new(LabFamily::Mutex, command, 3);
    c.lockstep = true;
    c.seed = seed;
    c.latency = Latency::Uniform(1_000_000, 10_000_000);
    c.entries = 3;
    c.hold = 5_000_000;
    c.think = 1_000_000;
    c
}

#[test]
fn the_example_ricart_agrawala_passes_with_2_n_minus_1_messages_per_entry() {
    let mut c = LabConfig::new(LabFamily::Mutex, &example(), 5);
    c.lockstep = true;
    c.algo_like = Some("ricart-agrawala".into());
    let r = run(&c).unwrap();
    assert!(r.ok(), "{}", r.render());
    assert_eq!(r.operations, 10);
    assert_eq!(r.messages, 10 * 2 * 4);
    assert_eq!(r.by_kind["request"], 40);
    assert_eq!(r.by_kind["reply"], 40);
    let cost = r.cost.as_ref().unwrap();
    assert_eq!(cost.verdict, "exact");
    assert!(r.cost_line().unwrap().contains("yours 8 per entry"), "{}", r.render());
    assert!(r.cost_line().unwrap().contains("textbook 2(N−1) = 8"), "{}", r.render());
    assert_eq!(*verdict(&r, "safety"), Verdict::Holds);
    assert_eq!(*verdict(&r, "liveness"), Verdict::Holds);
    assert!(matches!(verdict(&r, "fencing"), Verdict::NotJudged { .. }));
    // In real time too.
    c.lockstep = false;
    let r = run(&c).unwrap();
    assert!(r.ok(), "{}", r.render());
    assert_eq!(r.messages, 80);
}

/// In real time, a node silent for longer than the quiet period is not taken for finished while
/// it has not marked its last line with `lab_done`: a node that works 60 ms on every line (a
/// descheduled one, on a busy machine) is waited for, and judged on the whole run. (Ending at
/// the first 20 ms of silence judged `no_starvation` on a run that was not over.)
#[test]
fn a_slow_node_in_real_time_is_waited_for_not_taken_for_finished() {
    let slow = format!("python3 {}", path("tests/nodes/mutex_ra_slow.py"));
    let mut c = LabConfig::new(LabFamily::Mutex, &slow, 3);
    c.entries = 3;
    assert!(!c.lockstep && c.quiet < std::time::Duration::from_millis(60));
    let r = run(&c).unwrap();
    assert!(r.ok(), "{}", r.render());
    assert_eq!(r.operations, 9, "three entries for each of the three nodes: {}", r.render());
    assert_eq!(*verdict(&r, "liveness"), Verdict::Holds);
}

#[test]
fn the_example_keeps_safety_under_contention_on_every_seed() {
    for seed in 1..=4 {
        let r = run(&contended(&example(), seed)).unwrap();
        assert!(r.ok(), "seed {seed}: {}", r.render());
        assert_eq!(r.operations, 9);
    }
}

#[test]
fn ricart_agrawala_that_does_not_defer_while_requesting_lets_two_in() {
    let buggy = format!("python3 {}", path("tests/nodes/mutex_ra_no_defer.py"));
    let r = run(&contended(&buggy, 1)).unwrap();
    let Verdict::Violated { detail, .. } = verdict(&r, "safety") else {
        panic!("not caught: {}", r.render())
    };
    assert!(detail.contains("entered the critical section while"), "{detail}");
    assert!(!r.ok());
    assert!(r.repro.contains("--seed 1") && r.repro.contains("--lockstep"), "{}", r.repro);
    assert!(r.render().contains("repro: ringleader lab run --family mutex"));
}

#[test]
fn lockstep_repeats_a_run_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let traces: Vec<Vec<u8>> = (0..2)
        .map(|i| {
            let mut c = contended(&example(), 3);
            let t = dir.path().join(format!("trace{i}.jsonl"));
            c.trace = Some(t.clone());
            run(&c).unwrap();
            std::fs::read(t).unwrap()
        })
        .collect();
    assert!(traces[0].len() > 1000);
    assert_eq!(traces[0], traces[1]);
}

#[test]
fn a_crash_kills_the_process_and_a_recovery_restarts_it_in_the_same_directory() {
    let dir = tempfile::tempdir().unwrap();
    let command = format!("sh -c 'echo start >> starts.log; exec {}'", example());
    let mut c = LabConfig::new(LabFamily::Mutex, &command, 3);
    c.lockstep = true;
    c.dir = Some(dir.path().to_path_buf());
    c.crashes = vec!["3@2500us".parse().unwrap()];
    c.recoveries = vec!["3@20ms".parse().unwrap()];
    c.keep_records = true;
    let r = run(&c).unwrap();
    let starts = |n: u32| std::fs::read_to_string(dir.path().join(format!("n{n}/starts.log"))).unwrap();
    assert_eq!(starts(1).lines().count(), 1);
    assert_eq!(starts(3).lines().count(), 2);
    assert!(!r.process_died, "{}", r.render());
    let at_3: Vec<RecordKind> =
        r.records.iter().filter(|x| x.uid == Some(3) && x.kind != RecordKind::Send).map(|x| x.kind).collect();
    let crash = at_3.iter().position(|&k| k == RecordKind::Crash).expect("a crash record");
    assert_eq!(at_3.iter().filter(|&&k| k == RecordKind::Start).count(), 2, "{at_3:?}");
    let recover = at_3.iter().position(|&k| k == RecordKind::Recover).expect("a recover record");
    assert!(crash < recover && at_3[recover + 1] == RecordKind::Start, "{at_3:?}");
}

#[test]
fn a_node_that_breaks_the_protocol_gets_one_clear_line() {
    let mut c = LabConfig::new(LabFamily::Mutex, "sh -c 'read line; echo hello'", 2);
    c.lockstep = true;
    let e = run(&c).unwrap_err();
    assert!(matches!(e, LabError::Protocol { .. }), "{e}");
    let text = e.to_string();
    assert!(text.contains("n1 broke the protocol: not JSON") && text.contains("line: hello"), "{text}");
    let c = LabConfig::new(LabFamily::Mutex, "true", 2);
    let e = run(&c).unwrap_err();
    assert!(matches!(e, LabError::NoInit { .. }), "{e}");
}

#[test]
fn bad_settings_are_refused_with_what_is_allowed() {
    let mut c = LabConfig::new(LabFamily::Mutex, &example(), 3);
    c.algo_like = Some("paxos".into());
    let e = run(&c).unwrap_err().to_string();
    assert!(e.contains("--algo-like paxos") && e.contains("ricart-agrawala"), "{e}");
    c.algo_like = None;
    c.crashes = vec!["7@1ms".parse().unwrap()];
    let e = run(&c).unwrap_err().to_string();
    assert!(e.contains("no node 7"), "{e}");
    assert!("paxos".parse::<LabFamily>().unwrap_err().contains("mutex, election, clock and deadlock"));
}

#[test]
fn the_tutorials_ricart_agrawala_written_from_docs_lab_passes_grade_with_2_n_minus_1() {
    let doc = std::fs::read_to_string(path("../../docs/LAB.md")).unwrap();
    let code =
        doc.split("```python\n").nth(1).and_then(|rest| rest.split("```").next()).expect("a python block");
    assert!(code.lines().count() <= 70, "the tutorial's node stays short");
    let dir = tempfile::tempdir().unwrap();
    let node = dir.path().join("ra.py");
    std::fs::write(&node, code).unwrap();
    let g = ringleader_lab::grade::GradeConfig {
        family: LabFamily::Mutex,
        command: format!("python3 {}", node.display()),
        nodes: 4,
        algo_like: Some("ricart-agrawala".into()),
        seeds: 3,
        quiet: std::time::Duration::from_millis(20),
        scenarios: Vec::new(),
    };
    let card = ringleader_lab::grade::grade(&g).unwrap();
    assert!(card.ok, "{}", card.render());
    assert_eq!(card.textbook.as_deref(), Some("2(N−1) = 6 per entry"));
    assert!(
        card.runs.iter().all(|r| r.per_operation == Some(6.0) && r.cost.as_deref() == Some("exact")),
        "{}",
        card.render()
    );
    // The same grade catches the mistake the tutorial plants.
    let broken = code.replace("if holding or (requesting and my_request < theirs):", "if holding:");
    assert_ne!(broken, code);
    std::fs::write(&node, broken).unwrap();
    let card = ringleader_lab::grade::grade(&g).unwrap();
    assert!(!card.ok);
    let safety = card.properties.iter().find(|p| p.name == "safety").unwrap();
    assert!(
        safety.first_failure.as_ref().is_some_and(|f| f.repro.contains("--lockstep")),
        "{}",
        card.render()
    );
}
