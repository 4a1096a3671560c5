//! Token copies never repeat a fencing token: a duplicating link cannot make a second token
//! (token ring, Raymond, Suzuki-Kasami discard copies), and the token ring's copy sent past a
//! successor whose ACK was lost is a new generation, fenced apart from the skipped node's.

use ringleader_core::Event;
use ringleader_core::trace::RecordKind;
use ringleader_sim::report::PropertyStatus;
use ringleader_sim::scenario::WorkloadKind;
use ringleader_sim::{RunConfig, RunOptions, run};

/// The fencing tokens of every entry of a run, in order, and whether every property held.
fn entries(cfg: &RunConfig) -> (Vec<u64>, Vec<String>) {
    let r = run(cfg, RunOptions { keep_trace: true, ..RunOptions::default() }).unwrap();
    let fencing = r
        .records
        .iter()
        .filter(|rec| rec.kind == RecordKind::Emit)
        .filter_map(|rec| match rec.event {
            Some(Event::Entered { fencing }) => Some(fencing),
            _ => None,
        })
        .collect();
    let violated = r.report.properties.iter().filter(|p| p.status == PropertyStatus::Violated);
    (fencing, violated.map(|p| p.name.clone()).collect())
}

fn repeated(fencing: &[u64]) -> Option<u64> {
    let mut sorted = fencing.to_vec();
    sorted.sort_unstable();
    sorted.windows(2).find(|w| w[0] == w[1]).map(|w| w[0])
}

#[test]
fn duplicating_links_make_no_second_token() {
    for (algo, workload) in [
        ("token-ring", WorkloadKind::Saturated),
        ("raymond", WorkloadKind::Saturated),
        ("raymond", WorkloadKind::Poisson),
        ("suzuki-kasami", WorkloadKind::Saturated),
        ("suzuki-kasami", WorkloadKind::Poisson),
    ] {
        for seed in 7_001..7_021 {
            let mut c = RunConfig::new(algo, 6).unwrap();
            c.seed = seed;
            c.dup = 0.3;
            c.workload = Some(workload);
            c.entries = 30;
            let (fencing, violated) = entries(&c);
            assert_eq!(fencing.len(), 30, "{algo} seed {seed}");
            assert!(violated.is_empty(), "{algo} {workload:?} seed {seed}: {violated:?}");
            assert_eq!(repeated(&fencing), None, "{algo} seed {seed}");
        }
    }
}

#[test]
fn a_token_ring_copy_sent_past_a_lost_ack_is_fenced_apart() {
    // Lossy links: ACKs are lost, live successors are removed and skipped, two holders may
    // overlap (safety is violated, as documented) — but no fencing token is ever repeated.
    let mut unsafe_runs = 0;
    for seed in 8_001..8_061 {
        let mut c = RunConfig::new("token-ring", 5).unwrap();
        c.seed = seed;
        c.loss = 0.05;
        c.workload = Some(WorkloadKind::Saturated);
        c.entries = 40;
        let (fencing, violated) = entries(&c);
        assert_eq!(repeated(&fencing), None, "seed {seed}: a fencing token entered twice");
        unsafe_runs += usize::from(violated.iter().any(|p| p == "safety"));
    }
    assert!(unsafe_runs > 0, "the lossy runs show the documented overlap");
}
