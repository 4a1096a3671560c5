//! Token ring, quorum voting and the centralized coordinator's failover: exact message counts
//! under the light-load workload, and safety / liveness / no starvation over seeded sweeps with
//! random latencies, both heavy workloads and the crash plans each algorithm claims to tolerate.
//!
//! The sweeps run 10,000 seeded runs per algorithm (small N, few entries); time them with
//! `cargo test -p ringleader-sim --test it -- --nocapture mutex_ring_quorum_failover::`.

use ringleader_sim::notation::Latency;
use ringleader_sim::scenario::WorkloadKind;
use ringleader_sim::{Report, RunConfig, RunOptions, run};

fn sequential(algo: &str, nodes: u32, entries: u64, params: &[(&str, &str)]) -> Report {
    let mut cfg = RunConfig::new(algo, nodes).unwrap();
    cfg.workload = Some(WorkloadKind::Sequential);
    cfg.entries = entries;
    for (k, v) in params {
        cfg.params.insert(k.to_string(), v.to_string());
    }
    run(&cfg, RunOptions::default()).unwrap().report
}

fn kind(r: &Report, k: &str) -> u64 {
    r.messages.by_kind[k]
}

fn assert_clean(r: &Report) {
    assert!(r.violations.is_empty(), "{}: {:?}", r.repro, r.violations);
}

#[test]
fn central_costs_thirty_messages_for_ten_entries_on_nine_nodes_with_or_without_failover() {
    let r = sequential("central", 9, 10, &[]);
    assert_eq!(r.messages.sent, 30);
    assert_clean(&r);
    // Failover only probes a coordinator that keeps a participant waiting longer than a probe
    // period: under light load it costs nothing.
    let f = sequential("central", 9, 10, &[("failover", "true")]);
    assert_eq!(f.messages.sent, 30);
    assert_eq!(f.outcome.mutex().unwrap().entries, 10);
    assert_clean(&f);
}

/// Token-ring messages for the sequential workload, from the parking rule: a requester `j`
/// with the token parked at `p ≠ j` sends one REQUEST, the token travels `d(p, j)` hops to it
/// and then an idle lap of `N` hops back to `j`, where it parks; with the token parked at `j`
/// itself the entry costs only the lap.
fn token_ring_expected(n: u32, entries: u64) -> (u64, u64) {
    let requesters: Vec<u32> = if n > 1 { (1..n).collect() } else { vec![0] };
    let (mut token, mut request, mut parked) = (0u64, 0u64, 0u32);
    for e in 0..entries as usize {
        let j = requesters[e % requesters.len()];
        if j != parked {
            request += 1;
            token += u64::from((j + n - parked) % n);
        }
        token += u64::from(n);
        parked = j;
    }
    (token, request)
}

#[test]
fn token_ring_sequential_counts_for_nine_nodes_ten_entries() {
    let r = sequential("token-ring", 9, 10, &[]);
    // Requesters 1..8, 1, 2: ten REQUESTs, 8·(1 + 9) + (2 + 9) + (1 + 9) = 101 TOKEN hops.
    assert_eq!(kind(&r, "token"), 101);
    assert_eq!(kind(&r, "request"), 10);
    assert_eq!(kind(&r, "ack"), 101, "every TOKEN hop is acknowledged");
    assert_eq!(r.messages.detection, 101);
    assert_eq!(r.per_operation.messages_mean, 11.1);
    assert_eq!(r.outcome.mutex().unwrap().entries, 10);
    assert_clean(&r);
    assert_eq!(token_ring_expected(9, 10), (101, 10));
}

#[test]
fn token_ring_sequential_counts_follow_the_parking_rule_for_every_size() {
    for n in 1..=12u32 {
        for entries in [1, 3, 2 * u64::from(n) + 1] {
            let r = sequential("token-ring", n, entries, &[]);
            let (token, request) = token_ring_expected(n, entries);
            if n == 1 {
                assert_eq!(r.messages.sent, 0, "alone, the token never moves");
            } else {
                assert_eq!(
                    (kind(&r, "token"), kind(&r, "request")),
                    (token, request),
                    "N = {n}, {entries} entries"
                );
                assert_eq!(kind(&r, "ack"), token);
            }
            assert_eq!(r.outcome.mutex().unwrap().entries, entries);
            assert_clean(&r);
        }
    }
}

#[test]
fn quorum_costs_three_messages_per_coordinator_per_entry() {
    // Participants 6..9 are not coordinators (coordinators are positions 0..5): 3n = 15 each.
    let mut cfg = RunConfig::new("quorum", 9).unwrap();
    cfg.entries = 10;
    cfg.params.insert("coordinators".into(), "5".into());
    cfg.requesters = Some(vec![6, 7, 8, 9]);
    let r = run(&cfg, RunOptions::default()).unwrap().report;
    assert_eq!(r.messages.sent, 150);
    for k in ["request", "grant", "release"] {
        assert_eq!(kind(&r, k), 50, "{k}: n per entry");
    }
    assert_clean(&r);
    // Default: every node is a coordinator, so a participant's own vote is local: 3(n − 1).
    let all = sequential("quorum", 9, 10, &[]);
    assert_eq!(all.messages.sent, 10 * 3 * 8);
    assert_clean(&all);
    // Five coordinators, requesters 1..8, 1, 2: 3·4 for the coordinators 1..4, 3·5 for the others.
    let five = sequential("quorum", 9, 10, &[("coordinators", "5")]);
    assert_eq!(five.messages.sent, 4 * 12 + 4 * 15 + 2 * 12);
    assert_clean(&five);
    // One coordinator and a quorum of one is the centralized algorithm: 3 per entry.
    let one = sequential("quorum", 9, 10, &[("coordinators", "1")]);
    assert_eq!(one.messages.sent, 30);
}

#[test]
fn bad_parameters_are_refused_with_one_line() {
    for (algo, k, v, needle) in [
        ("quorum", "quorum", "2", "need n/2 < m <= n"),
        ("quorum", "quorum", "6", "need n/2 < m <= n"),
        ("quorum", "coordinators", "0", "between 1 and"),
        ("token-ring", "regen_timeout", "0", "`regen_timeout`"),
        ("central", "failover", "maybe", "failover"),
    ] {
        let mut cfg = RunConfig::new(algo, 5).unwrap();
        cfg.params.insert(k.into(), v.into());
        let e = run(&cfg, RunOptions::default()).unwrap_err().to_string();
        assert!(e.contains(needle) && !e.contains('\n'), "{algo} {k}={v}: {e}");
    }
}

/// A small deterministic generator for the sweep plans (splitmix64).
struct Plan(u64);

impl Plan {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Victim chooser: given the plan and the node count, the uid to crash (it never requests).
type Victim = fn(&mut Plan, u32) -> Option<u64>;

/// One sweep run: 2–5 nodes (at least `min_nodes`), a heavy workload, random latencies, and
/// perhaps a crash of a node that never requests.
fn sweep_config(algo: &str, plan: &mut Plan, seed: u64, min_nodes: u32, victim: Victim) -> RunConfig {
    let nodes = min_nodes + plan.below(4) as u32;
    let mut cfg = RunConfig::new(algo, nodes).unwrap();
    cfg.seed = seed;
    cfg.workload = Some(if plan.below(2) == 0 { WorkloadKind::Saturated } else { WorkloadKind::Poisson });
    cfg.entries = 3 + plan.below(6);
    cfg.hold = 100_000 + plan.below(2_000_000);
    cfg.rate = 200.0;
    let lo = 50_000 + plan.below(500_000);
    let hi = lo + plan.below(3_000_000);
    cfg.latency = Latency::Uniform(lo, hi);
    cfg.max_delay = cfg.latency.bound();
    if let Some(victim_uid) = victim(plan, nodes) {
        cfg.crash = vec![format!("{victim_uid}@{}us", plan.below(15_000)).parse().unwrap()];
        cfg.requesters = Some((1..=u64::from(nodes)).filter(|&u| u != victim_uid).collect());
    }
    cfg
}

fn sweep(algo: &str, runs: u64, min_nodes: u32, victim: Victim, params: &[(&str, &str)]) {
    let start = std::time::Instant::now();
    let mut plan = Plan(0x5eed);
    let (mut entries, mut crashed) = (0u64, 0u64);
    for seed in 0..runs {
        let mut cfg = sweep_config(algo, &mut plan, seed, min_nodes, victim);
        crashed += u64::from(!cfg.crash.is_empty());
        for (k, v) in params {
            cfg.params.insert(k.to_string(), v.to_string());
        }
        let r = run(&cfg, RunOptions::default()).unwrap().report;
        assert!(r.violations.is_empty(), "{}: {:?}", r.repro, r.violations);
        assert_eq!(r.per_operation.operations, cfg.entries, "every request served: {}", r.repro);
        entries += r.per_operation.operations;
    }
    assert!(crashed > runs / 4, "the crash plans ran ({crashed})");
    eprintln!("{algo}: {runs} runs, {entries} entries, {crashed} with a crash, {:.2?}", start.elapsed());
}

#[test]
fn token_ring_is_safe_live_and_fair_over_ten_thousand_runs() {
    // A third of the runs crash a node that never asks (it only forwards the token): it is
    // skipped and removed. Not id 1, where the token starts parked: a token lost with its
    // holder is regenerated by a timeout rule that several waiters may fire together (two
    // tokens — the documented flaw the scenarios show), so holders never crash here.
    sweep(
        "token-ring",
        10_000,
        2,
        |p, n| (n >= 3 && p.below(2) == 0).then(|| 2 + p.below(u64::from(n - 1))),
        &[],
    );
}

#[test]
fn quorum_is_safe_live_and_fair_over_ten_thousand_runs() {
    // A third of the runs crash (for good) a coordinator that never asks; m of the other n − 1
    // are still up. Crash-and-recover breaks safety by design: see quorum-risk.
    sweep("quorum", 10_000, 3, |p, n| (p.below(3) == 0).then(|| 1 + p.below(u64::from(n))), &[]);
}

#[test]
fn central_failover_is_safe_live_and_fair_over_ten_thousand_runs() {
    // Half of the runs crash the coordinator (id 1, which never asks) at a random time; the
    // waiting participants make the highest id take over.
    sweep("central", 10_000, 3, |p, _| (p.below(2) == 0).then_some(1), &[("failover", "true")]);
}

fn scenario(file: &str) -> RunConfig {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios").join(file);
    ringleader_sim::Scenario::load(&path).unwrap().resolve(Some(path)).unwrap()
}

#[test]
fn failover_scenario_keeps_the_holder_and_serves_the_queued_requests() {
    let r = run(&scenario("central-failover.toml"), RunOptions::default()).unwrap().report;
    assert_clean(&r);
    assert_eq!(r.outcome.mutex().unwrap().entries, 6, "every queued request was served");
    assert_eq!(r.outcome.mutex().unwrap().coordinator_takeovers, Some(1));
    assert_eq!(kind(&r, "holding"), 1, "the holder told the new coordinator");
    assert_eq!(kind(&r, "coordinator"), 5, "announced to the 4 others, once more to a late TAKEOVER");
    // Without failover the same crash starves the waiting participants.
    let mut cfg = scenario("central-failover.toml");
    cfg.params.clear();
    let r = run(&cfg, RunOptions::default()).unwrap().report;
    assert!(r.violations.iter().any(|v| v.property.name() == "no_starvation"), "{:?}", r.violations);
}

#[test]
fn a_recovered_coordinator_polls_and_serves_the_requests_its_crash_forgot() {
    let r = run(&scenario("central-coordinator-recovers.toml"), RunOptions::default()).unwrap().report;
    assert_clean(&r);
    assert_eq!(r.outcome.mutex().unwrap().entries, 6, "every request was served");
    assert_eq!(r.outcome.mutex().unwrap().max_concurrent_holders, 1);
    assert_eq!(kind(&r, "poll"), 3, "one POLL to each of the three others");
    assert_eq!(kind(&r, "status"), 3, "one STATUS from each");
    assert_eq!(kind(&r, "request"), 6, "nobody asked twice for one entry");
    // central-timeout (holds of 5 ms, below its 10 ms timeout) recovers the same way.
    let mut cfg = scenario("central-coordinator-recovers.toml");
    cfg.algorithm = "central-timeout".into();
    let r = run(&cfg, RunOptions::default()).unwrap().report;
    assert_clean(&r);
    assert_eq!(r.outcome.mutex().unwrap().entries, 6);
    assert_eq!((kind(&r, "poll"), kind(&r, "status")), (3, 3));
    // The same crash without the recovery starves the requests it forgot.
    let mut cfg = scenario("central-coordinator-recovers.toml");
    cfg.recover.clear();
    let r = run(&cfg, RunOptions::default()).unwrap().report;
    assert!(r.violations.iter().any(|v| v.property.name() == "no_starvation"), "{:?}", r.violations);
    assert_eq!(kind(&r, "poll"), 0);
}

#[test]
fn token_ring_scenarios_regenerate_once_and_the_slow_holder_makes_two_tokens() {
    let lost = run(&scenario("token-ring-lost-token.toml"), RunOptions::default()).unwrap().report;
    assert_clean(&lost);
    assert_eq!(lost.outcome.mutex().unwrap().tokens_regenerated, Some(1));
    let two = run(&scenario("token-ring-two-tokens.toml"), RunOptions::default()).unwrap().report;
    assert_eq!(two.outcome.mutex().unwrap().tokens_regenerated, Some(1));
    assert_eq!(two.outcome.mutex().unwrap().max_concurrent_holders, 2);
    assert!(two.as_expected());
    let skip = run(&scenario("token-ring-skip-crashed.toml"), RunOptions::default()).unwrap().report;
    assert_clean(&skip);
    assert_eq!(skip.outcome.mutex().unwrap().suspicions, Some(1));
    assert_eq!(skip.outcome.mutex().unwrap().entries, 16);
}

#[test]
fn quorum_violation_needs_the_forgetful_reset() {
    let r = run(&scenario("quorum-forgetful-coordinator.toml"), RunOptions::default()).unwrap().report;
    assert_eq!(r.outcome.mutex().unwrap().max_concurrent_holders, 2);
    // The same staged race without the crash and recovery of c4: p2 waits its turn.
    let mut cfg = scenario("quorum-forgetful-coordinator.toml");
    cfg.crash.clear();
    cfg.recover.clear();
    cfg.expect.clear();
    let r = run(&cfg, RunOptions::default()).unwrap().report;
    assert_clean(&r);
    assert_eq!(r.outcome.mutex().unwrap().entries, 2);
}
