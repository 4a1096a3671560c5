//! Deadlock detection and prevention over randomly generated wait-for workloads.
//!
//! - Chandy-Misra-Haas (report only, nothing withdrawn) reports exactly the real deadlocks,
//!   with no phantom and none left unreported, over hundreds of seeds and three sizes;
//! - every initiation sends at most one probe per wait-for edge (the bound e), and a simple
//!   cycle of length L costs exactly L probes for the detection;
//! - with resolution, every deadlock is broken and no cycle is left;
//! - wait-die and wound-wait never let a cycle of waits form, and nothing starves.

use std::collections::{BTreeMap, BTreeSet};

use ringleader_core::trace::RecordKind;
use ringleader_core::{Event, NodeId, Request};
use ringleader_sim::notation::Latency;
use ringleader_sim::report::{DetectionOutcome, PreventionOutcome};
use ringleader_sim::{RunConfig, RunOptions, run};

fn config(algo: &str, n: u32, seed: u64, entries: u64, holders: u32, cycles: f64) -> RunConfig {
    let mut cfg = RunConfig::new(algo, n).unwrap();
    cfg.seed = seed;
    cfg.entries = entries;
    cfg.holders = holders;
    cfg.cycles = cycles;
    cfg.latency = Latency::Uniform(500_000, 2_000_000);
    cfg.max_delay = 2_000_000;
    cfg
}

fn detection(r: &ringleader_sim::Report) -> &DetectionOutcome {
    r.outcome.detection().unwrap_or_else(|| panic!("a detection outcome: {:?}", r.outcome))
}

fn prevention(r: &ringleader_sim::Report) -> &PreventionOutcome {
    r.outcome.prevention().unwrap_or_else(|| panic!("a prevention outcome: {:?}", r.outcome))
}

#[test]
fn chandy_misra_haas_reports_exactly_the_real_deadlocks() {
    let mut real_total = 0;
    for n in [3u32, 5, 8] {
        for seed in 0..150 {
            let mut cfg = config("chandy-misra-haas", n, seed, 40, 2, 0.4);
            cfg.params.insert("resolve".into(), "false".into());
            let r = run(&cfg, RunOptions::default()).unwrap().report;
            assert!(r.violations.is_empty(), "n {n} seed {seed}: {:?}", r.violations);
            let real = detection(&r).deadlocks_real;
            assert_eq!(detection(&r).deadlocks_reported, real, "{}", r.repro);
            assert_eq!(detection(&r).phantom_reports, 0, "n {n} seed {seed}");
            assert_eq!(r.messages.by_kind["abort"], 0);
            real_total += real;
        }
    }
    assert!(real_total >= 300, "the workload made only {real_total} deadlocks");
}

/// Replays the trace: the wait-for graph from requests and aborts, probes by initiation.
struct ProbeAudit {
    /// initiation (initiator, wait) → probes sent
    per_initiation: BTreeMap<(NodeId, u64), u64>,
    /// initiation → cycle length of the report it produced
    reported: BTreeMap<(NodeId, u64), usize>,
}

fn audit(cfg: &RunConfig) -> ProbeAudit {
    let res = run(cfg, RunOptions { keep_trace: true, ..RunOptions::default() }).unwrap();
    assert!(res.report.violations.is_empty(), "{:?}", res.report.violations);
    let n = cfg.nodes as usize;
    let mut waits: Vec<BTreeSet<NodeId>> = vec![BTreeSet::new(); n];
    let mut used: BTreeSet<((NodeId, u64), NodeId, NodeId)> = BTreeSet::new();
    let mut forwarded: BTreeMap<((NodeId, u64), NodeId), u64> = BTreeMap::new();
    let mut current_wait = vec![0u64; n];
    let mut a = ProbeAudit { per_initiation: BTreeMap::new(), reported: BTreeMap::new() };
    for r in &res.records {
        let node = r.node.unwrap_or(0);
        match r.kind {
            RecordKind::Request => match r.request.as_ref().unwrap() {
                Request::WaitFor { holders } if !holders.is_empty() => {
                    waits[node as usize] = holders.iter().copied().collect();
                    current_wait[node as usize] += 1;
                }
                Request::StopWaiting { holder } => {
                    waits[node as usize].remove(holder);
                }
                _ => {}
            },
            RecordKind::Emit => match r.event.as_ref().unwrap() {
                Event::Aborted | Event::GaveUp => waits[node as usize].clear(),
                Event::DeadlockDetected { cycle } => {
                    a.reported.insert((node, current_wait[node as usize]), cycle.len());
                }
                _ => {}
            },
            RecordKind::Send if r.msg_kind.as_deref() == Some("probe") => {
                let p = &r.msg.as_ref().unwrap()["Probe"];
                let initiator = p["initiator"].as_u64().unwrap() as NodeId;
                let wait = p["path"][0][1].as_u64().unwrap();
                let (sender, receiver) =
                    (p["sender"].as_u64().unwrap() as NodeId, p["receiver"].as_u64().unwrap() as NodeId);
                assert_eq!((sender, Some(receiver)), (node, r.peer));
                let key = (initiator, wait);
                // Every probe travels along an edge of the wait-for graph as it is now …
                assert!(
                    waits[sender as usize].contains(&receiver),
                    "probe {key:?} on a missing edge {sender}→{receiver}"
                );
                // … and along each edge at most once per initiation.
                assert!(used.insert((key, sender, receiver)), "probe {key:?} twice on {sender}→{receiver}");
                *a.per_initiation.entry(key).or_default() += 1;
                *forwarded.entry((key, sender)).or_default() += 1;
                // A process forwards an initiation once: at most its out-degree.
                assert!(
                    forwarded[&(key, sender)] as usize
                        <= waits[sender as usize].len().max(cfg.holders as usize)
                );
            }
            _ => {}
        }
    }
    a
}

#[test]
fn every_initiation_sends_at_most_one_probe_per_wait_for_edge() {
    let mut initiations = 0;
    for seed in 0..40 {
        let mut cfg = config("chandy-misra-haas", 6, seed, 40, 3, 0.4);
        cfg.params.insert("resolve".into(), "false".into());
        let a = audit(&cfg);
        initiations += a.per_initiation.len();
        for (key, &count) in &a.per_initiation {
            // e ≤ N · holders edges can exist at once.
            assert!(count <= 6 * 3, "initiation {key:?} sent {count} probes");
        }
    }
    assert!(initiations > 200);
}

#[test]
fn a_simple_cycle_of_length_l_costs_exactly_l_probes() {
    // holders 1: every blocked process waits for exactly one other, so the closer's probe goes
    // once around the cycle and nowhere else.
    let mut detections = 0;
    for seed in 0..60 {
        let mut cfg = config("chandy-misra-haas", 7, seed, 30, 1, 0.5);
        cfg.params.insert("resolve".into(), "false".into());
        let a = audit(&cfg);
        for (key, &len) in &a.reported {
            assert_eq!(a.per_initiation[key], len as u64, "seed {seed} initiation {key:?}");
            detections += 1;
        }
    }
    assert!(detections >= 30, "{detections}");
}

#[test]
fn with_resolution_every_deadlock_is_broken_by_a_victim() {
    let (mut real, mut phantoms, mut victims, mut runs_with_phantoms) = (0, 0, 0, 0);
    for seed in 0..150 {
        let cfg = config("chandy-misra-haas", 6, seed, 40, 2, 0.4);
        let r = run(&cfg, RunOptions::default()).unwrap().report;
        // Completeness always holds: nothing is left deadlocked at the end.
        assert!(r.properties.iter().any(|p| p.name == "completeness" && p.holds), "seed {seed}");
        assert_eq!(r.stopped, "quiescent");
        let ph = detection(&r).phantom_reports;
        phantoms += ph;
        runs_with_phantoms += (ph > 0) as u64;
        real += detection(&r).deadlocks_real;
        victims += detection(&r).victims;
        // One report per victim: the victim reports.
        assert_eq!(detection(&r).reports, detection(&r).victims, "seed {seed}");
        // A run without a phantom has no needless abort: one victim per broken cycle.
        if ph == 0 {
            assert_eq!(detection(&r).needless_aborts, 0, "seed {seed}");
            assert!(r.violations.is_empty(), "seed {seed}: {:?}", r.violations);
        }
    }
    assert!(real >= 200, "{real}");
    assert!(victims <= real + phantoms, "{victims} victims for {real} deadlocks");
    eprintln!(
        "resolution: {real} deadlocks, {victims} victims, {phantoms} phantom reports in {runs_with_phantoms} of 150 runs"
    );
}

#[test]
fn wait_die_and_wound_wait_never_deadlock_and_never_starve() {
    for algo in ["wait-die", "wound-wait"] {
        let (mut aborts, mut requests) = (0, 0);
        for n in [3u32, 6, 9] {
            for seed in 0..120 {
                let cfg = config(algo, n, seed, 40, 2, 0.5);
                let r = run(&cfg, RunOptions::default()).unwrap().report;
                assert!(r.violations.is_empty(), "{algo} n {n} seed {seed}: {:?}", r.violations);
                let names: Vec<&str> = r.properties.iter().map(|p| p.name.as_str()).collect();
                assert_eq!(names, ["no_deadlock", "no_starvation"], "{algo} n {n} seed {seed}");
                assert_eq!(r.stopped, "quiescent");
                // Every abort is followed by a restart with the same timestamp.
                assert_eq!(prevention(&r).aborts, prevention(&r).restarts, "{algo} n {n} seed {seed}");
                assert_eq!(prevention(&r).deadlocks_real, 0);
                aborts += prevention(&r).aborts;
                requests += prevention(&r).requests;
            }
        }
        assert!(aborts > 100, "{algo}: only {aborts} aborts — the workload did not conflict");
        eprintln!("{algo}: {aborts} aborts for {requests} requests");
    }
}

#[test]
fn the_checker_catches_a_deadlock_that_prevention_would_have_stopped() {
    // The same workload under the detector, without resolution, does deadlock: the prevention
    // tests above are not vacuous.
    let mut cfg = config("chandy-misra-haas", 6, 3, 40, 2, 0.5);
    cfg.params.insert("resolve".into(), "false".into());
    let r = run(&cfg, RunOptions::default()).unwrap().report;
    assert!(detection(&r).deadlocks_real > 0);
}

/// A process that gives up its wait after `give_up` (a timeout) emits `GaveUp`, not
/// `Aborted`: it is no victim of the detector, so `single_victim` does not judge it, even when
/// it waits for a crashed holder and so is on no cycle. Without resolution nothing is ever a
/// victim and the property always holds; with it, a needless victim still needs a phantom
/// report (the cycle a give-up broke).
#[test]
fn a_wait_given_up_after_a_timeout_is_no_victim() {
    use ringleader_sim::notation::At;
    let ms = 1_000_000;
    let (mut gave_up, mut runs) = (0, 0);
    for (crash, resolve) in
        [(None, "false"), (Some((1, 5)), "false"), (Some((3, 2)), "false"), (Some((2, 7)), "true")]
    {
        for seed in 2..42 {
            let mut cfg = config("chandy-misra-haas", 5, seed, 12, 1, 0.8);
            cfg.params.insert("give_up".into(), "5ms".into());
            cfg.params.insert("resolve".into(), resolve.into());
            cfg.crash = crash.map(|(uid, t)| At { uid, time: t * ms }).into_iter().collect();
            let r = run(&cfg, RunOptions::default()).unwrap().report;
            let d = detection(&r);
            gave_up += d.gave_up;
            runs += 1;
            let single = r.properties.iter().find(|p| p.name == "single_victim").unwrap();
            if resolve == "false" {
                assert_eq!(d.victims, 0, "{}", r.repro);
                assert!(single.holds, "{}: {:?}", r.repro, r.violations);
            } else if !single.holds {
                assert!(d.phantom_reports > 0, "a needless victim without a phantom: {}", r.repro);
            }
        }
    }
    assert!(gave_up >= runs, "only {gave_up} waits given up in {runs} runs");
}
