//! The algorithms that run on arbitrary graphs, on every shape `--graph` offers.
//!
//! - YoYo on grids, lines, stars, balanced and random trees, and edge-list files: the minimum id
//!   is elected and known by all, every election property holds, setup costs exactly 2m, the
//!   announcement exactly 2m − n + 1, and YoYo proper stays within its essay's bound
//!   2m + 2m(⌈log2 n⌉ + 1) in at most ⌈log2 n⌉ + 1 iterations.
//! - Raymond on lines, stars, random trees and tree files (positions numbered at random, so a
//!   parent is not always the smaller neighbour): safe, live, starvation-free and fenced under
//!   every workload, and under `sequential` every entry costs exactly 2·d (d the tree distance
//!   from the previous holder to the requester), hence at most 2·diameter — 2(N − 1) on a line.

use crate::common;

use proptest::prelude::*;
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand::{Rng, RngExt};
use rand_xoshiro::Xoshiro256PlusPlus;
use ringleader_algorithms::election::yoyo::YoYo;
use ringleader_algorithms::mutex::raymond::Raymond;
use ringleader_core::trace::RecordKind;
use ringleader_core::{Event, NodeId, Topology};
use ringleader_judge::trace::Tracer;
use ringleader_sim::notation::Latency;
use ringleader_sim::scenario::{IdArrangement, Initiators, WorkloadKind};
use ringleader_sim::topologies::{EdgeList, Shape, parse_edge_list};
use ringleader_sim::{RunConfig, Simulation, Stop};

/// Hop distances from `from` to every position.
fn distances(t: &Topology, from: NodeId) -> Vec<u64> {
    let mut d = vec![u64::MAX; t.len() as usize];
    let mut queue = std::collections::VecDeque::from([from]);
    d[from as usize] = 0;
    while let Some(x) = queue.pop_front() {
        for y in t.neighbors(x) {
            if d[y as usize] == u64::MAX {
                d[y as usize] = d[x as usize] + 1;
                queue.push_back(y);
            }
        }
    }
    d
}

fn diameter(t: &Topology) -> u64 {
    (0..t.len()).map(|p| *distances(t, p).iter().max().unwrap()).max().unwrap()
}

/// A random connected graph on `n` positions written as an edge-list file's text (a random tree
/// over shuffled positions plus `extra` random edges, pairs in random order, with comments and
/// blank lines), and read back through the parser.
fn edge_list_file(n: u32, extra: u32, seed: u64) -> Shape {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut order: Vec<u32> = (1..=n).collect();
    order.shuffle(&mut rng);
    let mut pairs: Vec<(u32, u32)> =
        (1..n as usize).map(|i| (order[rng.random_range(0..i)], order[i])).collect();
    let max = n as u64 * (n as u64 - 1) / 2;
    let mut tries = 0;
    while (pairs.len() as u64) < (n as u64 - 1 + extra as u64).min(max) && tries < 10_000 {
        tries += 1;
        let (a, b) = (rng.random_range(1..=n), rng.random_range(1..=n));
        if a != b && !pairs.iter().any(|&(x, y)| (x, y) == (a, b) || (x, y) == (b, a)) {
            pairs.push((a, b));
        }
    }
    pairs.shuffle(&mut rng);
    let mut text = format!("# {n} positions, {} edges\n\n", pairs.len());
    for (i, (a, b)) in pairs.iter().enumerate() {
        let (a, b) = if rng.next_u32() % 2 == 0 { (a, b) } else { (b, a) };
        text += &format!("{a}\t{b}{}\n", if i % 5 == 0 { "   # a comment" } else { "" });
    }
    let edges = parse_edge_list(&text, n).unwrap_or_else(|e| panic!("{e}\n{text}"));
    Shape::File(EdgeList { path: "generated.txt".into(), edges })
}

/// Runs YoYo on `shape`; asserts the properties, the leader, the exact setup and announcement
/// counts and the essay's bounds; returns (m, messages of YoYo proper, iterations).
fn yoyo(
    n: u32,
    shape: &Shape,
    seed: u64,
    ids: IdArrangement,
    all: bool,
    latency: Latency,
) -> (u64, u64, u64) {
    let mut cfg = RunConfig::new("yoyo", n).unwrap();
    cfg.graph = Some(shape.clone());
    cfg.seed = seed;
    cfg.ids = ids;
    cfg.initiators = if all { Initiators::All } else { Initiators::Lowest };
    cfg.latency = latency;
    cfg.max_delay = cfg.latency.bound();
    let what = format!("{shape} n={n} seed={seed} {ids:?} all={all} {:?}", cfg.latency);
    let mut sim = Simulation::<YoYo>::new(&cfg, None).unwrap();
    sim.run(&mut |_| {});
    let m = sim.topology().edge_count();
    assert_eq!(m, shape.edge_count(n, None), "{what}");
    assert_eq!(sim.stopped(), Stop::Quiescent, "{what}");
    let (proper, iterations) = common::check_yoyo(&sim, m, &what);
    (m, proper, iterations)
}

fn shape() -> impl Strategy<Value = Shape> {
    prop_oneof![
        Just(Shape::Grid),
        Just(Shape::Line),
        Just(Shape::Star),
        Just(Shape::RandomTree),
        Just(Shape::Tree),
    ]
}

fn ids() -> impl Strategy<Value = IdArrangement> {
    prop_oneof![Just(IdArrangement::Ascending), Just(IdArrangement::Descending), Just(IdArrangement::Random)]
}

fn latency() -> impl Strategy<Value = Latency> {
    prop_oneof![
        Just(Latency::Constant(1_000_000)),
        Just(Latency::Uniform(1_000_000, 9_000_000)),
        Just(Latency::Exponential(2_000_000)),
    ]
}

/// Sends between consecutive entries, and the holder before and after each (positions):
/// under `sequential` every entry's messages are its own.
fn entries(records: &[ringleader_core::trace::TraceRecord]) -> Vec<(NodeId, NodeId, u64)> {
    let (mut holder, mut sends, mut out) = (0, 0, Vec::new());
    for r in records {
        match r.kind {
            RecordKind::Send => sends += 1,
            RecordKind::Emit if matches!(r.event, Some(Event::Entered { .. })) => {
                let at = r.node.unwrap();
                out.push((holder, at, sends));
                (holder, sends) = (at, 0);
            }
            _ => {}
        }
    }
    out
}

/// Raymond under `sequential` with `requesters` (uids, in turn): every property holds, and
/// every entry costs exactly twice the tree distance from the previous holder to the requester.
/// Returns the topology and the per-entry costs.
fn raymond_sequential(
    n: u32,
    shape: &Shape,
    seed: u64,
    requesters: Option<Vec<u64>>,
    k: u64,
) -> (Topology, Vec<u64>) {
    let mut cfg = RunConfig::new("raymond", n).unwrap();
    cfg.graph = Some(shape.clone());
    cfg.seed = seed;
    cfg.workload = Some(WorkloadKind::Sequential);
    cfg.entries = k;
    cfg.requesters = requesters;
    let what = format!("{shape} n={n} seed={seed} requesters={:?}", cfg.requesters);
    let mut sim =
        Simulation::<Raymond>::new(&cfg, Some(Tracer::new(n as usize, None, true).unwrap())).unwrap();
    sim.run(&mut |_| {});
    assert!(sim.violations().is_empty(), "{what}: {:?}", sim.violations().list());
    let records = sim.take_tracer().unwrap().finish().unwrap().records;
    let t = sim.topology().clone();
    let per_entry = entries(&records);
    assert_eq!(per_entry.len() as u64, k, "{what}");
    let bound = 2 * diameter(&t);
    let costs: Vec<u64> = per_entry
        .iter()
        .map(|&(from, to, cost)| {
            assert_eq!(cost, 2 * distances(&t, from)[to as usize], "{what}: entry at {to} after {from}");
            assert!(cost <= bound, "{what}: {cost} > 2·diameter = {bound}");
            cost
        })
        .collect();
    (t, costs)
}

#[test]
fn yoyo_on_the_3x3_grid_costs_exactly() {
    // Ascending ids on 0 1 2 / 3 4 5 / 6 7 8: every edge points right or down, position 0 is the
    // only source. Setup 2m = 24, one YO- wave (one value per edge, 12) and its votes (12 YES);
    // the announcement costs 2m − n + 1 = 16.
    let mut cfg = RunConfig::new("yoyo", 9).unwrap();
    cfg.graph = Some(Shape::Grid);
    let r = ringleader_sim::run(&cfg, Default::default()).unwrap().report;
    assert_eq!(r.graph.as_deref(), Some("grid"));
    let by_kind: Vec<(&str, u64)> = r.messages.by_kind.iter().map(|(k, &v)| (k.as_str(), v)).collect();
    assert_eq!(by_kind, [("coordinator", 16), ("no", 0), ("setup", 24), ("yes", 12), ("yo", 12)]);
    assert_eq!(r.outcome.election().unwrap().leader, Some(1));
    assert!(r.properties.iter().all(|p| p.holds));
    assert!(r.repro.contains(" --graph grid"), "{}", r.repro);
}

#[test]
fn the_grid_scenario_measures_what_it_says() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/yoyo-grid.toml");
    let cfg = ringleader_sim::Scenario::load(&path).unwrap().resolve(None).unwrap();
    assert_eq!((cfg.nodes, cfg.graph.clone()), (400, Some(Shape::Grid)));
    let (m, proper, _) =
        yoyo(cfg.nodes, &Shape::Grid, cfg.seed, cfg.ids, false, Latency::Constant(1_000_000));
    assert_eq!(m, 760);
    assert_eq!(proper, 5020);
    let r = ringleader_sim::run(&cfg, Default::default()).unwrap().report;
    assert_eq!(r.messages.by_kind["setup"], 1520);
    assert_eq!(r.messages.by_kind["coordinator"], 1121);
    assert_eq!(r.outcome.election().unwrap().leader, Some(1));
}

#[test]
fn yoyo_on_every_shape_for_every_small_n() {
    for n in 1..=40 {
        for shape in [Shape::Grid, Shape::Line, Shape::Star, Shape::RandomTree, Shape::Tree] {
            for ids in [IdArrangement::Ascending, IdArrangement::Descending, IdArrangement::Random] {
                yoyo(n, &shape, n as u64, ids, false, Latency::Constant(1_000_000));
            }
        }
    }
}

#[test]
fn raymond_on_a_line_and_a_star_costs_twice_the_distance() {
    // Requesters 1, 2, …, 8 in turn (positions), the token starting at 0.
    // Line 0–1–…–8: each next requester is one hop on (2 messages), except the tenth entry,
    // which walks back from 8 to 1: 2·7 = 14. The diameter is N − 1 = 8, the bound 16.
    let (line, costs) = raymond_sequential(9, &Shape::Line, 1, None, 10);
    assert_eq!(diameter(&line), 8);
    assert_eq!(costs, [2, 2, 2, 2, 2, 2, 2, 2, 14, 2]);
    // Star around 0: the first entry is one hop away, every later one two (leaf → 0 → leaf).
    let (star, costs) = raymond_sequential(9, &Shape::Star, 1, None, 10);
    assert_eq!(diameter(&star), 2);
    assert_eq!(costs, [2, 4, 4, 4, 4, 4, 4, 4, 4, 4]);
    // Alternating the two ends of a line of 20 costs the diameter, 2·19 = 38, every time.
    let (_, costs) = raymond_sequential(20, &Shape::Line, 1, Some(vec![20, 1]), 6);
    assert_eq!(costs, [38; 6]);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn yoyo_elects_the_minimum_within_its_bound_on_every_shape(
        shape in shape(), n in 1u32..150, seed in any::<u64>(), ids in ids(), all in any::<bool>(), lat in latency(),
    ) {
        yoyo(n, &shape, seed, ids, all, lat);
    }

    #[test]
    fn yoyo_elects_the_minimum_within_its_bound_on_edge_list_files(
        n in 2u32..80, extra in 0u32..160, graph_seed in any::<u64>(), seed in any::<u64>(), ids in ids(),
        all in any::<bool>(), lat in latency(),
    ) {
        yoyo(n, &edge_list_file(n, extra, graph_seed), seed, ids, all, lat);
    }

    #[test]
    fn raymond_entries_cost_twice_the_distance_on_every_tree(
        which in 0u8..4, n in 2u32..40, graph_seed in any::<u64>(), seed in any::<u64>(),
        order in proptest::collection::vec(any::<u64>(), 1..12), k in 1u64..25,
    ) {
        let shape = match which {
            0 => Shape::Line,
            1 => Shape::Star,
            2 => Shape::RandomTree,
            _ => edge_list_file(n, 0, graph_seed),
        };
        let requesters: Vec<u64> = order.iter().map(|x| 1 + x % n as u64).collect();
        let (t, _) = raymond_sequential(n, &shape, seed, Some(requesters), k);
        if shape == Shape::Line {
            prop_assert_eq!(diameter(&t), n as u64 - 1);
        }
    }

    #[test]
    fn raymond_holds_every_property_on_every_tree_under_load(
        which in 0u8..4, n in 2u32..30, graph_seed in any::<u64>(), seed in any::<u64>(),
        saturated in any::<bool>(), lat in latency(),
    ) {
        let shape = match which {
            0 => Shape::Line,
            1 => Shape::Star,
            2 => Shape::RandomTree,
            _ => edge_list_file(n, 0, graph_seed),
        };
        let mut cfg = RunConfig::new("raymond", n).unwrap();
        cfg.graph = Some(shape.clone());
        cfg.seed = seed;
        cfg.latency = lat;
        cfg.workload = Some(if saturated { WorkloadKind::Saturated } else { WorkloadKind::Poisson });
        cfg.entries = 40;
        let r = ringleader_sim::run(&cfg, Default::default()).unwrap().report;
        prop_assert!(r.violations.is_empty(), "{}: {:?}", r.repro, r.violations);
        prop_assert_eq!(&r.outcome.mutex().unwrap().entries, &40, "{}", r.repro);
        prop_assert_eq!(&r.outcome.mutex().unwrap().max_concurrent_holders, &1, "{}", r.repro);
        for p in ["safety", "liveness", "no_starvation", "fencing"] {
            prop_assert!(r.properties.iter().any(|q| q.name == p && q.holds), "{p}: {}", r.repro);
        }
    }
}

/// The table of `docs/ELECTIONS-LARGE.md` (random ids, seed 1, one initiator, constant 1 ms):
/// `cargo test -p ringleader-sim --test it -- --ignored --nocapture graph_shapes::`.
#[test]
#[ignore]
fn table_yoyo_shapes() {
    println!("| graph | n | m | YoYo proper | per edge | 2m+2m(⌈log2 n⌉+1) | iterations | ⌈log2 n⌉+1 |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for shape in [Shape::Random, Shape::Grid, Shape::Line, Shape::RandomTree, Shape::Star] {
        for n in [100u32, 1000, 10_000] {
            let (m, proper, iterations) =
                yoyo(n, &shape, 1, IdArrangement::Random, false, Latency::Constant(1_000_000));
            let log = common::log2_ceil(n as u64);
            println!(
                "| {shape} | {n} | {m} | {proper} | {:.2} | {} | {iterations} | {} |",
                proper as f64 / m as f64,
                2 * m + 2 * m * (log + 1),
                log + 1
            );
        }
    }
}
