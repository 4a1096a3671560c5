//! Exact message counts of Lamport, Ricart-Agrawala, Roucairol-Carvalho, Maekawa, Suzuki-Kasami
//! and Raymond under the `sequential` workload (one request at a time, requesters 1, 2, … in
//! turn; node 0 holds the token / is the tree root), against the textbook formulas that
//! `ringleader table` prints (Lamport, CACM 1978; Ricart & Agrawala, CACM 1981; Carvalho &
//! Roucairol, CACM 1983; Maekawa, ACM TOCS 1985; Suzuki & Kasami, ACM TOCS 1985; Raymond, ACM
//! TOCS 1989). Messages to oneself are local steps and are not counted.

use ringleader_analysis::table::formulas;
use ringleader_sim::scenario::WorkloadKind;
use ringleader_sim::{RunConfig, RunOptions, run};

/// Runs `algo` on `nodes` nodes with `entries` sequential entries; returns the report.
fn sequential(algo: &str, nodes: u32, entries: u64, requesters: Option<Vec<u64>>) -> ringleader_sim::Report {
    let mut cfg = RunConfig::new(algo, nodes).unwrap();
    cfg.workload = Some(WorkloadKind::Sequential);
    cfg.entries = entries;
    cfg.requesters = requesters;
    let r = run(&cfg, RunOptions::default()).unwrap().report;
    assert!(r.violations.is_empty(), "{algo}: {:?}", r.violations);
    assert_eq!(r.outcome.mutex().unwrap().entries, entries, "{algo}");
    r
}

/// The messages of each of the first `entries` entries (the workload is deterministic and
/// isolates every entry, so entry k costs messages(k) − messages(k − 1)).
fn per_entry(algo: &str, nodes: u32, entries: u64) -> Vec<u64> {
    let totals: Vec<u64> = (0..=entries)
        .map(|k| if k == 0 { 0 } else { sequential(algo, nodes, k, None).messages.sent })
        .collect();
    totals.windows(2).map(|w| w[1] - w[0]).collect()
}

#[test]
fn nine_nodes_ten_entries_cost_the_textbook_totals() {
    assert_eq!(sequential("ricart-agrawala", 9, 10, None).messages.sent, 160);
    assert_eq!(sequential("lamport", 9, 10, None).messages.sent, 240);
    assert_eq!(sequential("suzuki-kasami", 9, 10, None).messages.sent, 90);
    let m = sequential("maekawa", 9, 10, None);
    assert_eq!(m.messages.sent, 120);
    for (kind, n) in
        [("request", 40), ("reply", 40), ("release", 40), ("inquire", 0), ("yield", 0), ("failed", 0)]
    {
        assert_eq!(m.messages.by_kind[kind], n, "maekawa {kind}");
    }
    // The same numbers from the formulas, kind by kind.
    for (algo, want) in [
        ("ricart-agrawala", formulas::ricart_agrawala(9, 10)),
        ("lamport", formulas::lamport(9, 10)),
        ("suzuki-kasami", formulas::suzuki_kasami(9, 10)),
        ("maekawa", formulas::maekawa(9, 10)),
        ("central", formulas::central(10)),
        ("token-ring", formulas::token_ring(9, 10)),
        ("raymond", formulas::raymond(9, 10)),
    ] {
        let r = sequential(algo, 9, 10, None);
        assert_eq!(r.messages.sent - r.messages.detection, want.total, "{algo}");
        for &(kind, n) in &want.kinds {
            assert_eq!(r.messages.by_kind[kind], n, "{algo} {kind}");
        }
    }
}

#[test]
fn every_entry_costs_the_formula_for_every_size() {
    for n in 2..=12u32 {
        let k = n as u64 - 1;
        let n64 = u64::from(n);
        assert_eq!(per_entry("ricart-agrawala", n, 4), vec![2 * k; 4], "ricart-agrawala, N = {n}");
        assert_eq!(per_entry("ricart-agrawala", n, 4), vec![formulas::ricart_agrawala(n64, 1).total; 4]);
        assert_eq!(per_entry("lamport", n, 4), vec![3 * k; 4], "lamport, N = {n}");
        assert_eq!(per_entry("lamport", n, 4), vec![formulas::lamport(n64, 1).total; 4]);
        if n > 2 {
            assert_eq!(per_entry("suzuki-kasami", n, 4), vec![n as u64; 4], "suzuki-kasami, N = {n}");
            assert_eq!(
                sequential("suzuki-kasami", n, 4, None).messages.sent,
                formulas::suzuki_kasami(n64, 4).total
            );
        }
    }
    // With two nodes node 1 is the only requester: after fetching the token it keeps it.
    assert_eq!(per_entry("suzuki-kasami", 2, 4), vec![2, 0, 0, 0]);
    // Maekawa on square grids: K = 2√N − 1 including oneself, 3(K − 1) messages per entry.
    for side in 2..=4u64 {
        let n = (side * side) as u32;
        let k = 2 * side - 1;
        assert_eq!(per_entry("maekawa", n, 4), vec![3 * (k - 1); 4], "maekawa, N = {n}");
        assert_eq!(formulas::maekawa(u64::from(n), 4).total, 4 * 3 * (k - 1));
    }
}

#[test]
fn roucairol_carvalho_keeps_permissions() {
    // Round 1: each of nodes 1..8 asks all 8 others (16 messages); from round 2 on, node 0's
    // permission (it never asks) is still held: 14.
    let r = sequential("roucairol-carvalho", 9, 10, None);
    assert_eq!(r.messages.sent, 8 * 16 + 2 * 14);
    assert!(r.messages.sent <= 160);
    assert_eq!(per_entry("roucairol-carvalho", 9, 10), [vec![16; 8], vec![14; 2]].concat());
    // One process re-entering: only its first entry asks; the other nine cost nothing.
    assert_eq!(sequential("roucairol-carvalho", 9, 10, Some(vec![2])).messages.sent, 16);
    // Ricart-Agrawala pays 2(N − 1) every time.
    assert_eq!(sequential("ricart-agrawala", 9, 10, Some(vec![2])).messages.sent, 160);
}

#[test]
fn suzuki_kasami_reenters_with_the_token_for_free() {
    // The first entry fetches the token from node 0 (8 REQUESTs + 1 TOKEN); the holder keeps it.
    assert_eq!(sequential("suzuki-kasami", 9, 10, Some(vec![2])).messages.sent, 9);
}

#[test]
fn raymond_costs_twice_the_tree_distance_to_the_token() {
    // Balanced binary tree of 9 nodes rooted at 0 (parent of i is (i − 1)/2), depth 3. The token
    // walks 0→1→2→…→8→1→2; an entry costs 2·distance(previous holder, requester) (REQUESTs up,
    // PRIVILEGE hops down), at most 2 · (2 · depth) = 12.
    let costs = per_entry("raymond", 9, 10);
    assert_eq!(costs, vec![2, 4, 6, 4, 8, 4, 10, 4, 4, 4]);
    for e in 1..=10 {
        assert_eq!(costs[..e as usize].iter().sum::<u64>(), formulas::raymond(9, e).total, "{e} entries");
    }
    let depth = 3;
    assert!(costs.iter().all(|&c| c <= 2 * (2 * depth)));
    assert_eq!(sequential("raymond", 9, 10, None).messages.sent, 50);
    // Bigger trees stay within 4·depth per entry.
    for n in [15u32, 31, 100] {
        let depth = (n as f64).log2().floor() as u64;
        let costs = per_entry("raymond", n, 12);
        assert!(costs.iter().all(|&c| c <= 4 * depth), "N = {n}: {costs:?}");
    }
}

#[test]
fn saturated_load_costs_stay_within_the_textbook_bounds() {
    // Nine processes ask at once and again on every exit, 90 entries, constant 1 ms latency.
    let saturated = |algo: &str| {
        let mut cfg = RunConfig::new(algo, 9).unwrap();
        cfg.workload = Some(WorkloadKind::Saturated);
        cfg.entries = 90;
        let r = run(&cfg, RunOptions::default()).unwrap().report;
        assert!(r.violations.is_empty(), "{algo}: {:?}", r.violations);
        assert_eq!(r.outcome.mutex().unwrap().entries, 90, "{algo}");
        r
    };
    // Permission from all: the load changes nothing.
    assert_eq!(saturated("lamport").messages.sent, 90 * 24);
    assert_eq!(saturated("ricart-agrawala").messages.sent, 90 * 16);
    // Everybody asks back between two entries: Roucairol-Carvalho costs Ricart-Agrawala's 2(N − 1).
    assert_eq!(saturated("roucairol-carvalho").messages.sent, 90 * 16);
    // Maekawa: between 3(K − 1) = 12 and 5(K − 1) = 20 per entry; here 360 REQUEST, REPLY and
    // RELEASE each, plus 352 FAILED (the INQUIREs and YIELDs are all local steps).
    let m = saturated("maekawa");
    assert_eq!(m.messages.sent, 1432);
    assert_eq!(m.messages.by_kind["failed"], 352);
    assert!((12 * 90..=20 * 90).contains(&m.messages.sent));
    // Suzuki-Kasami: N per entry, except node 0's first entry with the token it starts with.
    assert_eq!(saturated("suzuki-kasami").messages.sent, 89 * 9);
    // Raymond: one REQUEST serves a subtree; under 4 per entry.
    let r = saturated("raymond");
    assert_eq!(r.messages.sent, 316);
    assert!(r.messages.sent <= 4 * 90);
}
