//! Properties of the simulator and of the first two algorithms, over many seeds and plans.

use std::collections::BTreeMap;

use proptest::prelude::*;
use ringleader_core::trace::RecordKind;
use ringleader_sim::notation::{Latency, Pause};
use ringleader_sim::scenario::{IdArrangement, Initiators, WorkloadKind};
use ringleader_sim::{RunConfig, RunOptions, run};

fn chang_roberts(n: u32, ids: IdArrangement, seed: u64) -> RunConfig {
    let mut cfg = RunConfig::new("chang-roberts", n).unwrap();
    cfg.ids = ids;
    cfg.initiators = Initiators::All;
    cfg.seed = seed;
    cfg
}

fn harmonic(n: u32) -> f64 {
    (1..=n).map(|k| 1.0 / k as f64).sum()
}

/// Over random arrangements with every process initiating, Chang-Roberts sends N·H_N ELECTION
/// messages on average. The tolerance is four standard errors of the sample mean, computed from
/// the sample itself (the count is heavy-tailed, so no fixed tolerance would be honest).
#[test]
fn chang_roberts_mean_election_messages_is_n_h_n() {
    for n in [16u32, 64] {
        let runs = 1500;
        let counts: Vec<f64> = (0..runs)
            .map(|seed| {
                let r = run(&chang_roberts(n, IdArrangement::Random, seed), RunOptions::default()).unwrap();
                assert_eq!(r.report.outcome.election().unwrap().leader, Some(n as u64), "the maximum wins");
                r.report.messages.by_kind["election"] as f64
            })
            .collect();
        let mean = counts.iter().sum::<f64>() / runs as f64;
        let var = counts.iter().map(|c| (c - mean).powi(2)).sum::<f64>() / (runs as f64 - 1.0);
        let se = (var / runs as f64).sqrt();
        let expected = n as f64 * harmonic(n);
        assert!(
            (mean - expected).abs() < 4.0 * se,
            "N = {n}: mean {mean:.2}, N·H_N = {expected:.2}, se {se:.2}"
        );
    }
}

#[test]
fn chang_roberts_best_and_worst_arrangements_for_many_n() {
    // Alone on the ring, the initiator decides locally: no message at all.
    let alone = run(&chang_roberts(1, IdArrangement::Ascending, 1), RunOptions::default()).unwrap().report;
    assert_eq!(alone.messages.sent, 0);
    assert!(alone.properties.iter().all(|p| p.holds));
    for n in 2..=40u32 {
        let asc = run(&chang_roberts(n, IdArrangement::Ascending, 1), RunOptions::default()).unwrap().report;
        let desc =
            run(&chang_roberts(n, IdArrangement::Descending, 1), RunOptions::default()).unwrap().report;
        let n64 = n as u64;
        assert_eq!(asc.messages.by_kind["election"], 2 * n64 - 1, "best case, N = {n}");
        assert_eq!(desc.messages.by_kind["election"], n64 * (n64 + 1) / 2, "worst case, N = {n}");
        assert_eq!(asc.messages.by_kind["elected"], n64);
        assert!(asc.properties.iter().chain(&desc.properties).all(|p| p.holds));
        // A single initiator whose predecessor holds the maximum: 3N − 1 in total.
        let mut one = chang_roberts(n, IdArrangement::Ascending, 1);
        one.initiators = Initiators::Ids(vec![1]);
        let r = run(&one, RunOptions::default()).unwrap().report;
        assert_eq!(r.messages.sent, 3 * n64 - 1, "N = {n}");
        // A single initiator holding the maximum: 2N.
        one.initiators = Initiators::Ids(vec![n64]);
        assert_eq!(run(&one, RunOptions::default()).unwrap().report.messages.sent, 2 * n64);
    }
}

#[test]
fn chang_roberts_without_its_assumptions_is_caught() {
    // A crashed process breaks the ring: the election never terminates.
    let mut cfg = chang_roberts(6, IdArrangement::Ascending, 1);
    cfg.crash = vec!["3@0".parse().unwrap()];
    let r = run(&cfg, RunOptions::default()).unwrap().report;
    assert!(r.violations.iter().any(|v| v.property.name() == "termination"), "{:?}", r.violations);
    assert!(!r.as_expected());
}

#[test]
fn central_is_exactly_three_messages_per_sequential_entry() {
    for n in 2..=12u32 {
        for entries in [1u64, 7, 25] {
            let mut cfg = RunConfig::new("central", n).unwrap();
            cfg.entries = entries;
            let r = run(&cfg, RunOptions::default()).unwrap().report;
            assert_eq!(r.messages.sent, 3 * entries, "N = {n}, E = {entries}");
            assert_eq!(r.outcome.mutex().unwrap().entries, entries);
            assert!(r.properties.iter().all(|p| p.holds), "{:?}", r.violations);
        }
    }
}

fn latency() -> impl Strategy<Value = Latency> {
    prop_oneof![
        (1u64..3_000_000).prop_map(Latency::Constant),
        (1u64..2_000_000, 0u64..5_000_000).prop_map(|(a, d)| Latency::Uniform(a, a + d)),
        (1u64..3_000_000).prop_map(Latency::Exponential),
        (1u64..3_000_000, 0.1f64..1.5).prop_map(|(m, s)| Latency::LogNormal(m, s)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Same seed and scenario → byte-identical trace and identical report (but wall time).
    #[test]
    fn runs_are_deterministic(seed in any::<u64>(), n in 2u32..9, lat in latency(), loss in 0.0f64..0.2, pause_at in 0u64..20) {
        let mut cfg = RunConfig::new("central-timeout", n).unwrap();
        cfg.seed = seed;
        cfg.latency = lat;
        cfg.loss = loss;
        cfg.workload = Some(WorkloadKind::Poisson);
        cfg.entries = 20;
        cfg.duration = 10_000_000_000;
        cfg.pause = vec![Pause { uid: n as u64, from: pause_at * 1_000_000, to: (pause_at + 30) * 1_000_000 }];
        let opts = || RunOptions { keep_trace: true, ..RunOptions::default() };
        let a = run(&cfg, opts()).unwrap();
        let b = run(&cfg, opts()).unwrap();
        prop_assert_eq!(&a.records, &b.records);
        let (mut ra, mut rb) = (a.report.clone(), b.report.clone());
        ra.wall_seconds = 0.0;
        rb.wall_seconds = 0.0;
        prop_assert_eq!(ra, rb);
    }

    /// The centralized coordinator is safe, live, starvation-free, FIFO and fenced whatever the
    /// latencies, the load and slow (paused) participants — as long as nothing crashes and
    /// nothing is lost, which is what it assumes.
    #[test]
    fn central_holds_every_property_under_its_assumptions(
        seed in any::<u64>(), n in 2u32..8, lat in latency(), saturated in any::<bool>(), pauses in proptest::collection::vec((2u64..8, 0u64..50, 1u64..80), 0..3),
    ) {
        let mut cfg = RunConfig::new("central", n).unwrap();
        cfg.seed = seed;
        cfg.latency = lat;
        cfg.workload = Some(if saturated { WorkloadKind::Saturated } else { WorkloadKind::Poisson });
        cfg.entries = 3 * n as u64;
        cfg.pause = pauses.into_iter().filter(|p| p.0 <= n as u64).map(|(uid, from, len)| Pause { uid, from: from * 1_000_000, to: (from + len) * 1_000_000 }).collect();
        let r = run(&cfg, RunOptions::default()).unwrap().report;
        prop_assert!(r.properties.iter().all(|p| p.holds), "{:?} (repro: {})", r.violations, r.repro);
        prop_assert_eq!(r.outcome.mutex().unwrap().entries, 3 * n as u64);
    }

    /// Every delivery and every drop in a trace links back to exactly one earlier send.
    #[test]
    fn trace_links_each_delivery_to_its_send(seed in any::<u64>(), lat in latency(), loss in 0.0f64..0.3, dup in 0.0f64..0.3) {
        let mut cfg = RunConfig::new("central", 5).unwrap();
        cfg.seed = seed;
        cfg.latency = lat;
        cfg.loss = loss;
        cfg.dup = dup;
        cfg.workload = Some(WorkloadKind::Saturated);
        cfg.entries = 10;
        cfg.duration = 5_000_000_000;
        let r = run(&cfg, RunOptions { keep_trace: true, ..RunOptions::default() }).unwrap();
        let mut sends: BTreeMap<u64, (u64, u32)> = BTreeMap::new();
        let mut arrived = 0;
        for rec in &r.records {
            match rec.kind {
                RecordKind::Send => { prop_assert!(sends.insert(rec.msg_id.unwrap(), (rec.step, rec.peer.unwrap())).is_none()); }
                RecordKind::Deliver | RecordKind::Drop => {
                    let (step, to) = sends.get(&rec.msg_id.unwrap()).copied().expect("a send for every arrival");
                    prop_assert!(step <= rec.step);
                    prop_assert_eq!(to, rec.node.unwrap());
                    arrived += 1;
                }
                _ => {}
            }
        }
        prop_assert_eq!(arrived as u64, r.report.messages.delivered + r.report.messages.dropped);
    }
}

#[test]
fn a_different_seed_with_random_latency_gives_a_different_trace() {
    let mut cfg = chang_roberts(10, IdArrangement::Random, 1);
    cfg.latency = Latency::Uniform(1_000_000, 5_000_000);
    let a = run(&cfg, RunOptions { keep_trace: true, ..RunOptions::default() }).unwrap().records;
    cfg.seed = 2;
    let b = run(&cfg, RunOptions { keep_trace: true, ..RunOptions::default() }).unwrap().records;
    assert_ne!(a, b);
}
