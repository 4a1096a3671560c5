//! Depth-first search and symmetry reduction give the verdicts of the breadth-first search.

use crate::common::simulator_judges;
use ringleader_algorithms::mutex::suzuki_kasami::SuzukiKasami;
use ringleader_check::{Bounds, NetworkKind, Options, Search, check, symmetry};
use ringleader_judge::checkers::Property;

fn all_request(nodes: u32, acquires: u32) -> Bounds {
    let mut b = Bounds::new(nodes);
    b.requesters = (0..nodes).collect();
    b.acquires = acquires;
    b
}

fn exhaustive(search: Search, symmetry: bool) -> Options {
    Options { exhaustive: true, search, symmetry, ..Options::default() }
}

fn verdicts(out: &ringleader_check::CheckReport) -> Vec<(&'static str, bool)> {
    out.properties.iter().map(|p| (p.name, p.holds)).collect()
}

#[test]
fn depth_first_visits_the_same_states_and_gives_the_same_verdicts() {
    for (algo, bounds) in [("ricart-agrawala", all_request(3, 1)), ("central-timeout", Bounds::new(3))] {
        let bfs = check(algo, bounds.clone(), &exhaustive(Search::BreadthFirst, false)).unwrap();
        let dfs = check(algo, bounds, &exhaustive(Search::DepthFirst, false)).unwrap();
        assert!(bfs.complete && dfs.complete, "{algo}");
        assert_eq!(bfs.unique_states, dfs.unique_states, "{algo}");
        assert_eq!(verdicts(&bfs), verdicts(&dfs), "{algo}");
        assert!(bfs.shortest && !dfs.shortest, "{algo}");
        assert_eq!(dfs.search, Search::DepthFirst);
    }
}

#[test]
fn a_depth_first_counterexample_replays_and_ends_in_the_violation() {
    // central-timeout's two-holder story: the depth-first path may be longer than the shortest
    // (the breadth-first one), but it is a real path: the simulator's own checker, fed its trace,
    // finds two holders too.
    let shortest = check("central-timeout", Bounds::new(3), &Options::default()).unwrap();
    let out = check("central-timeout", Bounds::new(3), &exhaustive(Search::DepthFirst, false)).unwrap();
    let safety = out.property("safety").unwrap();
    assert!(!safety.holds);
    assert!(safety.length >= shortest.property("safety").unwrap().length, "{:?}", safety.length);
    assert!(safety.detail.as_deref().unwrap_or("").contains("holds"), "{:?}", safety.detail);
    assert!(simulator_judges(&out, "safety").has(Property::Safety));
}

#[test]
fn a_symmetric_search_finds_what_the_full_search_finds() {
    // Suzuki-Kasami on lossy links: a lost REQUEST or token leaves a requester waiting forever.
    // Exploring one state per class of rotations (3,719 of 4,482) finds that violation too, on a
    // real path of the unreduced system: the simulator's checker, fed its trace, judges the
    // requester still waiting when nothing else can happen (its no-starvation property: another
    // node may have entered meanwhile).
    let mut bounds = all_request(3, 1);
    bounds.network = NetworkKind::Lossy;
    let full = check("suzuki-kasami", bounds.clone(), &exhaustive(Search::BreadthFirst, false)).unwrap();
    let sym = check("suzuki-kasami", bounds, &exhaustive(Search::DepthFirst, true)).unwrap();
    assert_eq!((full.unique_states, sym.unique_states), (4_482, 3_719));
    assert_eq!(verdicts(&full), verdicts(&sym));
    let liveness = sym.property("liveness").unwrap();
    assert!(!liveness.holds);
    assert!(liveness.detail.as_deref().unwrap_or("").contains("waits forever"), "{:?}", liveness.detail);
    let judged = simulator_judges(&sym, "liveness");
    assert!(judged.has(Property::Liveness) || judged.has(Property::NoStarvation));
}

#[test]
fn a_depth_first_search_takes_no_depth_bound() {
    // It marks a state seen at the first path that reaches it; with a bound, a state first
    // reached by a path longer than the bound would be skipped when a shorter path reaches it.
    let opts = Options { depth: Some(5), ..exhaustive(Search::DepthFirst, false) };
    let err = check("ricart-agrawala", Bounds::new(3), &opts).unwrap_err().to_string();
    assert!(err.contains("--depth 5 with a depth-first search"), "{err}");
    let opts = Options { depth: Some(5), ..exhaustive(Search::BreadthFirst, true) };
    assert!(check("suzuki-kasami", Bounds::new(3), &opts).is_err());
}

#[test]
fn suzuki_kasami_commutes_with_every_rotation() {
    // Every reachable state: 3 nodes asking once with a crash and a recovery (10,875 states;
    // 8,570 on FIFO links; 34,558 on lossy links), 3 nodes asking twice (58,933), on both
    // reliable networks; 4 nodes asking once (125,157). (Under duplication the token itself is
    // duplicated and the space has no practical end.)
    for (nodes, acquires, crash, networks) in [
        (3, 1, true, &[NetworkKind::Unordered, NetworkKind::Ordered, NetworkKind::Lossy][..]),
        (3, 2, false, &[NetworkKind::Unordered, NetworkKind::Ordered]),
        (4, 1, false, &[NetworkKind::Unordered]),
    ] {
        for &network in networks {
            let mut b = all_request(nodes, acquires);
            b.network = network;
            b.crashes = u32::from(crash);
            b.recover = crash;
            let states = symmetry::verify::<SuzukiKasami>(b, None).unwrap();
            assert!(states > 5_000, "{nodes} nodes: only {states} states checked");
        }
    }
}

#[test]
fn a_renaming_that_is_not_a_symmetry_is_caught() {
    // Swapping positions 1 and 2 of four is not a rotation: Suzuki-Kasami's exit scan visits
    // the peers in ring order from the leaving node, and the swap changes that order.
    let err = symmetry::verify::<SuzukiKasami>(all_request(4, 1), Some(vec![vec![0, 2, 1, 3]])).unwrap_err();
    assert!(err.contains("does not commute"), "{err}");
}

#[test]
fn symmetry_reduction_keeps_the_verdicts_and_explores_fewer_states() {
    let b = all_request(4, 1);
    let full = check("suzuki-kasami", b.clone(), &exhaustive(Search::DepthFirst, false)).unwrap();
    let reduced = check("suzuki-kasami", b, &exhaustive(Search::DepthFirst, true)).unwrap();
    assert!(full.complete && reduced.complete);
    assert_eq!(verdicts(&full), verdicts(&reduced));
    assert!(verdicts(&full).iter().all(|(_, holds)| *holds), "{:?}", verdicts(&full));
    assert_eq!(reduced.symmetry, Some("rotations"));
    // 125,157 reachable states fall in 75,849 classes of rotations. Four rotations could give
    // four times fewer; the token starts at position 0, so many states have no rotated twin
    // (the token still at 1, 2 or 3 with no entry yet is unreachable).
    assert_eq!((full.unique_states, reduced.unique_states), (125_157, 75_849));
}

#[test]
fn an_algorithm_that_compares_ids_is_refused_symmetry() {
    let err = check("ricart-agrawala", Bounds::new(3), &exhaustive(Search::DepthFirst, true))
        .unwrap_err()
        .to_string();
    assert!(err.contains("declares no symmetry") && err.contains("suzuki-kasami"), "{err}");
}

/// Every algorithm the checker takes whose state space is finite.
fn finite_plain_algorithms() -> Vec<&'static str> {
    ringleader_registry::all()
        .iter()
        .map(|i| i.name)
        .filter(|n| ringleader_registry::is_plain(n) && ringleader_check::unbounded_reason(n).is_none())
        .collect()
}

#[test]
fn sleep_sets_visit_every_state_of_the_full_search_and_generate_fewer() {
    // Sleep sets prune steps, never states: with the independence relation of
    // `ringleader_check::sleep_sets`, the reduced search must count exactly the distinct states
    // of the breadth-first one and give the same verdicts. A step declared independent that is
    // not shows here as a missing state.
    let mut compared = 0;
    let (mut full_generated, mut por_generated) = (0, 0);
    for algo in finite_plain_algorithms() {
        for network in NetworkKind::ALL {
            for crashes in [0, 1] {
                let mut b = Bounds::new(3);
                b.network = network;
                b.crashes = crashes;
                let budget = Options { max_states: Some(100_000), ..exhaustive(Search::BreadthFirst, false) };
                let bfs = check(algo, b.clone(), &budget).unwrap();
                if !bfs.complete {
                    continue;
                }
                let por = check(algo, b, &exhaustive(Search::SleepSets, false)).unwrap();
                let what = format!("{algo}, {}, {crashes} crash", network.name());
                assert!(por.complete, "{what}");
                assert_eq!(por.unique_states, bfs.unique_states, "{what}");
                assert_eq!(verdicts(&por), verdicts(&bfs), "{what}");
                assert!(
                    por.states <= bfs.states,
                    "{what}: {} generated, {} without sleep sets",
                    por.states,
                    bfs.states
                );
                assert_eq!(por.search, Search::SleepSets);
                compared += 1;
                full_generated += bfs.states;
                por_generated += por.states;
            }
        }
    }
    assert!(compared >= 50, "only {compared} configurations compared");
    assert!(
        por_generated < full_generated,
        "{por_generated} generated with sleep sets, {full_generated} without"
    );
}

#[test]
fn sleep_sets_halve_the_states_generated_on_four_nodes_on_any_number_of_threads() {
    // Ricart-Agrawala, 4 nodes, 3 requesters once: 232,298 states. Without sleep sets every
    // state generates each of its successors (1,071,728 generated); with them, on one thread,
    // 523,555. On two threads the workers' sleep sets are smaller where they split the work,
    // but the states are the same.
    let b = Bounds::new(4);
    let full = check("ricart-agrawala", b.clone(), &exhaustive(Search::DepthFirst, false)).unwrap();
    let por = check("ricart-agrawala", b.clone(), &exhaustive(Search::SleepSets, false)).unwrap();
    assert_eq!((full.unique_states, full.states), (232_298, 1_071_728));
    assert_eq!((por.unique_states, por.states), (232_298, 523_555));
    let two =
        check("ricart-agrawala", b, &Options { threads: 2, ..exhaustive(Search::SleepSets, false) }).unwrap();
    assert!(two.complete && two.threads == 2);
    assert_eq!(two.unique_states, 232_298);
    assert_eq!(verdicts(&two), verdicts(&full));
}

#[test]
fn a_sleep_set_counterexample_replays_and_ends_in_the_violation() {
    let out = check("central-timeout", Bounds::new(3), &exhaustive(Search::SleepSets, false)).unwrap();
    let safety = out.property("safety").unwrap();
    assert!(!safety.holds && !out.shortest);
    assert!(safety.detail.as_deref().unwrap_or("").contains("holds"), "{:?}", safety.detail);
    assert!(simulator_judges(&out, "safety").has(Property::Safety));
}

#[test]
fn the_sleep_set_search_takes_no_depth_bound_nor_symmetry() {
    let opts = Options { depth: Some(5), ..exhaustive(Search::SleepSets, false) };
    let err = check("ricart-agrawala", Bounds::new(3), &opts).unwrap_err().to_string();
    assert!(err.contains("--depth 5 with a depth-first search"), "{err}");
    let err =
        check("suzuki-kasami", Bounds::new(3), &exhaustive(Search::SleepSets, true)).unwrap_err().to_string();
    assert!(err.contains("--symmetry with --search por"), "{err}");
}
