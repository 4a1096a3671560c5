//! Super-peer elections: the checker's properties (coverage, fraction, balanced load) hold over
//! many geometries, and the counts that follow from the rules are exact.

use ringleader_algorithms::election::superpeer_dht::SuperPeerDht;
use ringleader_algorithms::election::superpeer_geometric::{SuperPeerGeometric, distance};
use ringleader_core::Message;
use ringleader_sim::{RunConfig, RunOptions, Simulation, run};

fn config(algo: &str, n: u32, salt: u64) -> RunConfig {
    let mut cfg = RunConfig::new(algo, n).unwrap();
    cfg.params.insert("salt".into(), salt.to_string());
    cfg.seed = salt;
    cfg
}

fn sent<P: ringleader_algorithms::Algorithm>(sim: &Simulation<P>, kind: &str) -> u64 {
    let i = P::Msg::KINDS.iter().position(|k| *k == kind).unwrap();
    sim.counters().sent_by_kind[i]
}

#[test]
fn dht_super_peers_are_the_owners_of_the_reserved_keys() {
    for (n, salts) in [(1u32, 1u64), (2, 3), (10, 10), (100, 10), (1000, 5), (5000, 2)] {
        for salt in 0..salts {
            let cfg = config("superpeer-dht", n, salt);
            let mut sim = Simulation::<SuperPeerDht>::new(&cfg, None).unwrap();
            sim.run(&mut |_| {});
            let what = format!("n={n} salt={salt}");
            assert!(sim.violations().is_empty(), "{what}: {:?}", sim.violations().list());
            let sps = sim.states().iter().filter(|s| s.is_super_peer()).count() as u64;
            let target = ((n as f64 * 0.01).ceil().max(1.0).log2().ceil() as u32).min(31);
            assert!(sps <= 1 << target && 2 * sps >= 1 << target, "{what}: {sps} super-peers");
            // Every other node joins its super-peer exactly once, and super-peers count them.
            assert_eq!(sent(&sim, "join"), n as u64 - sps, "{what}");
            let clients: u64 = sim.states().iter().map(|s| s.clients() as u64).sum();
            assert_eq!(clients, n as u64 - sps, "{what}");
            // A FOUND answers each lookup that left its origin; a lookup hop count stays ≤ m.
            assert!(sent(&sim, "found") <= n as u64 - sps, "{what}");
            assert!(sent(&sim, "lookup") <= 32 * (n as u64 - sps), "{what}");
        }
    }
}

#[test]
fn dht_report_carries_the_outcome() {
    let r = run(&config("superpeer-dht", 2000, 4), RunOptions::default()).unwrap().report;
    assert!(r.violations.is_empty());
    assert_eq!(r.outcome.super_peers().unwrap().target, 32);
    // 32 super-peers on the ring average exactly one block apart, so the closest two are at
    // most one block apart, and never on the same id.
    let o = r.outcome.super_peers().unwrap();
    let spacing = o.min_spacing.expect("min_spacing in the outcome");
    assert!(spacing > 0.0 && spacing <= 1.0, "{spacing}");
    let sps = o.super_peers;
    assert!((16..=32).contains(&sps));
    assert!(o.load_max <= 4 * (2000 - sps).div_ceil(sps));
    assert!(r.properties.iter().all(|p| p.holds));
    assert_eq!(r.properties.len(), 3);
}

/// The smallest distance between two super-peers, in units of the ideal spacing 1/√T.
fn min_spacing(sim: &Simulation<SuperPeerGeometric>, target: u32) -> f64 {
    let sps: Vec<(u32, u32)> =
        sim.states().iter().filter(|s| s.is_super_peer()).map(|s| s.position()).collect();
    let mut min = f64::INFINITY;
    for (i, &a) in sps.iter().enumerate() {
        for &b in &sps[i + 1..] {
            min = min.min(distance(a, b));
        }
    }
    min * (target as f64).sqrt()
}

#[test]
fn geometric_tokens_settle_apart_and_everyone_is_served() {
    for (n, salts) in [(50u32, 6u64), (200, 6), (1000, 4), (3000, 2)] {
        for salt in 0..salts {
            let cfg = config("superpeer-geometric", n, salt);
            let mut sim = Simulation::<SuperPeerGeometric>::new(&cfg, None).unwrap();
            sim.run(&mut |_| {});
            let what = format!("n={n} salt={salt}");
            assert!(sim.violations().is_empty(), "{what}: {:?}", sim.violations().list());
            assert_eq!(sim.stopped(), ringleader_sim::Stop::Quiescent, "{what}");
            let target = (n as f64 * 0.02).ceil() as u32;
            // Tokens are never lost nor duplicated, and every holder settled.
            assert_eq!(sim.states().iter().filter(|s| s.holds_token()).count() as u32, target, "{what}");
            assert_eq!(sim.states().iter().filter(|s| s.is_super_peer()).count() as u32, target, "{what}");
            if target > 1 {
                let spacing = min_spacing(&sim, target);
                assert!(spacing >= 0.45, "{what}: super-peers {spacing:.3} spacings apart");
                // The report carries the same figure, computed by the driver from the states.
                let (_, report) = sim.checker_report();
                let reported = report
                    .outcome
                    .super_peers()
                    .and_then(|o| o.min_spacing)
                    .expect("min_spacing in the outcome");
                assert!(
                    (reported - spacing).abs() < 1e-12,
                    "{what}: reported {reported}, measured {spacing}"
                );
            }
        }
    }
}

#[test]
fn bad_parameters_are_rejected_with_the_allowed_range() {
    let mut cfg = config("superpeer-geometric", 10, 0);
    cfg.params.insert("fanout".into(), "20".into());
    let err = run(&cfg, RunOptions::default()).unwrap_err().to_string();
    assert!(err.contains("fanout") && err.contains("1..=neighbours"), "{err}");
    let mut cfg = config("superpeer-dht", 10, 0);
    cfg.params.insert("fraction".into(), "0".into());
    let err = run(&cfg, RunOptions::default()).unwrap_err().to_string();
    assert!(err.contains("fraction") && err.contains("(0, 1]"), "{err}");
}
