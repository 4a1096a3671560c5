//! The lab bench on deadlock detection, with real Python processes: the example
//! Chandy-Misra-Haas node reports every real cycle and no phantom on every seed; a node that
//! reports a deadlock on every wait is caught by soundness, one that never passes probes on by
//! completeness; a client that gives up withdraws its waits; bad reports are one-line errors.

use std::path::PathBuf;

use ringleader_lab::report::Verdict;
use ringleader_lab::{LabConfig, LabError, LabFamily, run};
use ringleader_sim::notation::Latency;

fn python(rel: &str) -> String {
    format!("python3 {}", PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel).display())
}

fn example() -> String {
    python("../../lab/examples/deadlock_cmh.py")
}

fn deadlocks(command: &str, seed: u64) -> LabConfig {
    let mut c = LabConfig::new(LabFamily::Deadlock, command, 4);
    c.lockstep = true;
    c.seed = seed;
    c.cycles = 1.0;
    c
}

fn verdict<'a>(r: &'a ringleader_lab::LabReport, name: &str) -> &'a Verdict {
    &r.properties.iter().find(|p| p.name == name).unwrap_or_else(|| panic!("no {name}")).verdict
}

#[test]
fn the_example_reports_every_real_cycle_and_no_phantom() {
    let mut found = 0;
    for seed in 1..=4 {
        let mut c = deadlocks(&example(), seed);
        if seed > 2 {
            c.latency = Latency::Uniform(1_000_000, 10_000_000);
            c.holders = 2;
            c.entries = 3;
        }
        let r = run(&c).unwrap();
        assert!(r.ok(), "seed {seed}: {}", r.render());
        assert_eq!(*verdict(&r, "soundness"), Verdict::Holds, "{}", r.render());
        assert_eq!(*verdict(&r, "completeness"), Verdict::Holds, "{}", r.render());
        assert_eq!(r.outcome["deadlocks_real"], r.outcome["deadlocks_reported"], "{}", r.render());
        assert_eq!(r.outcome["phantom_reports"], 0);
        found += r.outcome["deadlocks_real"].as_u64().unwrap();
        assert!(r.by_kind.get("probe").copied().unwrap_or(0) > 0, "{}", r.render());
    }
    assert!(found >= 3, "the workload makes cycles: {found}");
}

#[test]
fn with_cycles_left_to_chance_every_report_is_real() {
    // cycles = 0: a request closes a cycle only when every other node is busy and waits for
    // the requester; a report of any other cycle would be a phantom.
    let mut c = deadlocks(&example(), 1);
    c.cycles = 0.0;
    c.entries = 3;
    let r = run(&c).unwrap();
    assert!(r.ok(), "{}", r.render());
    assert_eq!(r.outcome["deadlocks_real"], r.outcome["deadlocks_reported"], "{}", r.render());
    assert_eq!(r.outcome["phantom_reports"], 0);
}

#[test]
fn a_node_that_reports_every_wait_is_caught_by_soundness() {
    let r = run(&deadlocks(&python("tests/nodes/deadlock_reports_every_wait.py"), 1)).unwrap();
    let Verdict::Violated { detail, .. } = verdict(&r, "soundness") else {
        panic!("not caught: {}", r.render())
    };
    assert!(detail.contains("phantom deadlock"), "{detail}");
    assert!(!r.ok());
    assert!(r.repro.contains("--family deadlock") && r.repro.contains("--cycles 1"), "{}", r.repro);
}

#[test]
fn a_node_that_never_passes_probes_on_is_caught_by_completeness() {
    let r = run(&deadlocks(&python("tests/nodes/deadlock_cmh_no_forward.py"), 1)).unwrap();
    let Verdict::Violated { detail, .. } = verdict(&r, "completeness") else {
        panic!("not caught: {}", r.render())
    };
    assert!(detail.contains("the cycle closed by id") && detail.contains("reported"), "{detail}");
    assert_eq!(*verdict(&r, "soundness"), Verdict::Holds);
}

#[test]
fn a_client_that_gives_up_withdraws_its_waits_and_the_run_repeats() {
    let mut c = deadlocks(&example(), 2);
    c.give_up = Some(3_000_000);
    c.keep_records = true;
    let a = run(&c).unwrap();
    // Withdrawn waits break cycles: nothing stays deadlocked, nothing unreported is left.
    assert_eq!(*verdict(&a, "completeness"), Verdict::Holds, "{}", a.render());
    assert!(a.repro.contains("--give-up 3ms"), "{}", a.repro);
    let b = run(&c).unwrap();
    assert_eq!(a.records, b.records, "lockstep repeats the run");
}

#[test]
fn a_bad_report_is_a_protocol_error() {
    let node = "python3 -c \"import json,sys\nfor l in sys.stdin:\n m=json.loads(l); b=m['body']\n if b['type']=='init': print(json.dumps({'src':b['node_id'],'dest':m['src'],'body':{'type':'init_ok','in_reply_to':b['msg_id']}}),flush=True)\n elif b['type']=='want': print(json.dumps({'src':m['dest'],'dest':'lab','body':{'type':'deadlock','cycle':[]}}),flush=True)\"";
    let err = run(&deadlocks(node, 1)).unwrap_err();
    assert!(matches!(err, LabError::Protocol { .. }), "{err}");
    assert!(err.to_string().contains("deadlock needs \"cycle\""), "{err}");
}

/// `--algo-like chandy-misra-haas`: the example stays within the run's probe bounds (at least
/// the longest cycle each initiation reports, at most one probe per wait-for edge it can
/// reach) on every seed; a node that passes on every probe, not once per initiation, sends
/// more than one probe per edge and is caught by the cost.
#[test]
fn probes_are_counted_against_chandy_misra_haas_s_bounds() {
    let mut compared = 0;
    for seed in 1..=4 {
        let mut c = deadlocks(&example(), seed);
        c.algo_like = Some("chandy-misra-haas".into());
        c.holders = 2;
        c.entries = 3;
        let r = run(&c).unwrap();
        let cost = r.cost.as_ref().expect("a cost");
        assert!(cost.ok(), "seed {seed}: {}", r.render());
        assert!(cost.textbook.low <= cost.messages && cost.messages <= cost.textbook.high, "{}", r.render());
        if cost.verdict == "within" || cost.verdict == "exact" {
            compared += 1;
        }
    }
    assert!(compared >= 2, "the runs detected deadlocks to compare: {compared}");
    let mut caught = None;
    for seed in 1..=8 {
        let mut c = deadlocks(&python("tests/nodes/deadlock_cmh_floods.py"), seed);
        c.algo_like = Some("chandy-misra-haas".into());
        c.holders = 2;
        c.entries = 3;
        // The flood doubles at every hop: the message cap cuts the run off.
        c.max_messages = 2_000;
        let r = run(&c).unwrap();
        if r.cost.as_ref().is_some_and(|k| k.verdict == "above") {
            caught = Some(r);
            break;
        }
    }
    let r = caught.expect("the flooding node is caught by the cost on some seed");
    assert!(!r.ok());
    assert!(r.render().contains("chandy-misra-haas"), "{}", r.render());
    assert!(r.notes.iter().any(|n| n.contains("--max-messages 2000")), "{}", r.render());
    assert!(r.repro.contains("--max-messages 2000"), "{}", r.repro);
}
