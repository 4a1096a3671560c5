//! The lab bench on elections, with real Python processes: the example Chang-Roberts and bully
//! nodes pass with textbook counts, a bully that does not answer ELECTION elects two
//! coordinators, a Chang-Roberts that forwards smaller ids sends more than N(N+1)/2 + N.

use std::path::PathBuf;

use ringleader_lab::report::Verdict;
use ringleader_lab::{LabConfig, LabFamily, LabReport, run};
use ringleader_sim::notation::{At, Latency};

fn python(rel: &str) -> String {
    format!("python3 {}", PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel).display())
}

fn verdict<'a>(r: &'a LabReport, name: &str) -> &'a Verdict {
    &r.properties.iter().find(|p| p.name == name).unwrap_or_else(|| panic!("no {name}")).verdict
}

fn election(command: &str, n: u32, like: &str, initiators: Vec<u64>) -> LabConfig {
    let mut c = LabConfig::new(LabFamily::Election, command, n);
    c.lockstep = true;
    c.algo_like = Some(like.into());
    c.initiators = initiators;
    c
}

#[test]
fn the_example_chang_roberts_elects_the_maximum_with_textbook_counts() {
    let cr = python("../../lab/examples/election_cr.py");
    // One initiator, its predecessor holds the maximum: 3N−1; the maximum alone: 2N.
    for (initiators, total) in [(vec![1], 14), (vec![5], 10), (vec![1, 2, 3, 4, 5], 14)] {
        let r = run(&election(&cr, 5, "chang-roberts", initiators.clone())).unwrap();
        assert!(r.ok(), "{initiators:?}: {}", r.render());
        assert_eq!((r.operations, r.messages), (1, total), "{initiators:?}: {}", r.render());
        assert_eq!(r.by_kind["elected"], 5);
        assert_eq!(r.outcome["leader"], 5, "{}", r.render());
    }
    let mut c = election(&cr, 5, "chang-roberts", vec![1, 2, 3, 4, 5]);
    c.latency = Latency::Uniform(1_000_000, 10_000_000);
    for seed in 1..=3 {
        c.seed = seed;
        let r = run(&c).unwrap();
        assert!(r.ok(), "seed {seed}: {}", r.render());
    }
}

#[test]
fn the_example_bully_costs_n2_minus_n_minus_1_when_the_lowest_detects() {
    let bully = python("../../lab/examples/election_bully.py");
    let mut c = election(&bully, 4, "bully", vec![1]);
    c.crashes = vec![At { uid: 4, time: 0 }];
    let r = run(&c).unwrap();
    assert!(r.ok(), "{}", r.render());
    assert_eq!(r.messages, 11, "{}", r.render());
    assert_eq!(r.cost.as_ref().unwrap().verdict, "within");
    assert_eq!((r.by_kind["election"], r.by_kind["answer"], r.by_kind["coordinator"]), (6, 3, 2));
    assert_eq!(r.outcome["leader"], 3);
    // The second highest detects: N−1.
    c.initiators = vec![3];
    let r = run(&c).unwrap();
    assert!(r.ok(), "{}", r.render());
    assert_eq!(r.messages, 3, "{}", r.render());
}

#[test]
fn a_bully_that_does_not_answer_election_elects_two_coordinators() {
    let mut c = election(&python("tests/nodes/bully_no_answer.py"), 4, "bully", vec![1]);
    c.crashes = vec![At { uid: 4, time: 0 }];
    let r = run(&c).unwrap();
    let Verdict::Violated { detail, .. } = verdict(&r, "uniqueness") else {
        panic!("not caught: {}", r.render())
    };
    assert!(detail.contains("believe they are coordinator"), "{detail}");
    assert!(!r.ok());
    assert!(
        r.render().contains("repro: ringleader lab run --family election") && r.repro.contains("--crash 4@0")
    );
}

#[test]
fn a_chang_roberts_that_forwards_smaller_ids_costs_more_than_the_textbook_allows() {
    let c = election(
        &python("tests/nodes/chang_roberts_forwards_smaller.py"),
        5,
        "chang-roberts",
        vec![1, 2, 3, 4, 5],
    );
    let r = run(&c).unwrap();
    // Every ELECTION goes all the way round: N² + N = 30, above N(N+1)/2 + N = 20.
    assert_eq!(r.messages, 30, "{}", r.render());
    assert_eq!(r.cost.as_ref().unwrap().verdict, "above");
    assert!(r.properties.iter().all(|p| p.verdict.ok()), "only the cost is wrong: {}", r.render());
    assert!(!r.ok());
    assert!(r.cost_line().unwrap().contains("yours 30 per election"), "{}", r.render());
}

#[test]
fn a_run_cut_off_before_agreement_leaves_termination_undecided() {
    let mut c = election(&python("../../lab/examples/election_bully.py"), 4, "bully", vec![1]);
    c.crashes = vec![At { uid: 4, time: 0 }];
    c.duration = 10_000_000;
    let r = run(&c).unwrap();
    assert!(r.cut_off);
    assert!(matches!(verdict(&r, "termination"), Verdict::Undecided { .. }), "{}", r.render());
    assert!(r.ok());
}
