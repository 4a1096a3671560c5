//! The lab bench on logical clocks: the example Lamport clock keeps the clock condition on
//! every seed, one that forgets the max on receive is caught; the family needs lockstep.

use std::path::PathBuf;

use ringleader_lab::report::Verdict;
use ringleader_lab::{LabConfig, LabFamily, run};
use ringleader_sim::notation::Latency;

fn python(rel: &str) -> String {
    format!("python3 {}", PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel).display())
}

fn clocks(command: &str, seed: u64) -> LabConfig {
    let mut c = LabConfig::new(LabFamily::Clock, command, 4);
    c.lockstep = true;
    c.seed = seed;
    c.latency = Latency::Uniform(1_000_000, 10_000_000);
    c.events = 20;
    c
}

fn clock_condition(r: &ringleader_lab::LabReport) -> &Verdict {
    &r.properties.iter().find(|p| p.name == "clock_condition").expect("judged").verdict
}

#[test]
fn the_example_lamport_clock_keeps_the_clock_condition() {
    for seed in 1..=3 {
        let r = run(&clocks(&python("../../lab/examples/clock_lamport.py"), seed)).unwrap();
        assert!(r.ok(), "seed {seed}: {}", r.render());
        assert_eq!(*clock_condition(&r), Verdict::Holds);
        assert!(r.messages > 10, "{}", r.render());
    }
}

#[test]
fn a_lamport_clock_that_forgets_the_max_is_caught() {
    let r = run(&clocks(&python("tests/nodes/clock_lamport_no_max.py"), 1)).unwrap();
    let Verdict::Violated { detail, .. } = clock_condition(&r) else { panic!("not caught: {}", r.render()) };
    assert!(detail.contains("receive of") && detail.contains("is not below"), "{detail}");
    assert!(r.repro.contains("--family clock") && r.repro.contains("--events 20"), "{}", r.repro);
}

#[test]
fn clocks_need_lockstep() {
    let mut c = clocks(&python("../../lab/examples/clock_lamport.py"), 1);
    c.lockstep = false;
    assert!(run(&c).unwrap_err().to_string().contains("--family clock needs --lockstep"));
}
