//! Searches of infinite state spaces stop cleanly at a budget and say so.

use ringleader_check::{Bounds, Options, check, unbounded_reason};

#[test]
fn a_state_budget_stops_an_infinite_search() {
    let opts = Options { max_states: Some(20_000), ..Options::default() };
    let out = check("bully", Bounds::new(3), &opts).expect("the model configures");
    assert!(!out.complete);
    assert_eq!(out.bounded_by.as_deref(), Some("the state budget of 20000 states"));
    assert!(out.states >= 20_000, "{} states", out.states);
    // Counterexamples found before the stop are still rebuilt and replayed.
    let u = out.property("uniqueness").unwrap();
    assert!(!u.holds);
    assert_eq!(u.length, Some(3));
}

#[test]
fn a_memory_budget_halts_the_search_and_paths_still_rebuild() {
    // One byte: the first look at the resident memory halts the search.
    let opts = Options { max_memory: Some(1), ..Options::default() };
    let out = check("bully", Bounds::new(3), &opts).expect("the model configures");
    assert!(!out.complete);
    assert_eq!(out.bounded_by.as_deref(), Some("the memory budget of 0 MiB"));
    // Whatever was discovered before the halt replays (the halted model offers no actions, so
    // rebuilding a path on it would fail).
    for p in out.properties.iter().filter(|p| p.length.is_some()) {
        assert_eq!(p.steps.len(), p.length.unwrap(), "{}", p.name);
    }
}

#[test]
fn a_time_budget_halts_an_infinite_search_and_says_so() {
    let opts = Options { max_time: Some(std::time::Duration::from_millis(300)), ..Options::default() };
    let out = check("bully", Bounds::new(3), &opts).expect("the model configures");
    assert!(!out.complete);
    assert_eq!(out.bounded_by.as_deref(), Some("the time budget of 300ms"));
    assert!(out.seconds >= 0.3, "{} s", out.seconds);
    assert_eq!(out.property("uniqueness").unwrap().length, Some(3));
}

#[test]
fn finite_spaces_are_complete_and_unbounded_ones_are_named() {
    let out = check("central", Bounds::new(3), &Options { max_memory: Some(1 << 40), ..Options::default() })
        .expect("the model configures");
    assert!(out.complete);
    assert_eq!(out.bounded_by, None);
    assert!(unbounded_reason("bully").is_some());
    assert!(unbounded_reason("central").is_none());
}

/// Stateright ends a search as soon as every property is decided. Lamport's algorithm on
/// unordered links (it needs FIFO) breaks safety, fencing and liveness, and reaches an entry,
/// long before the space is exhausted: that search must not claim to have seen every state.
/// `exhaustive` explores the rest and reaches the same verdicts.
#[test]
fn a_search_stopped_once_every_property_is_decided_is_not_complete() {
    let early = check("lamport", Bounds::new(3), &Options::default()).expect("the model configures");
    assert!(early.decided_early);
    assert!(!early.complete);
    assert_eq!(early.bounded_by, None);
    let full = check("lamport", Bounds::new(3), &Options { exhaustive: true, ..Options::default() })
        .expect("the model configures");
    assert!(!full.decided_early);
    assert!(full.complete);
    assert_eq!(full.unique_states, 15_799);
    assert!(early.unique_states < full.unique_states, "{} states", early.unique_states);
    let verdicts = |o: &ringleader_check::CheckReport| -> Vec<(&str, bool, Option<usize>)> {
        o.properties.iter().map(|p| (p.name, p.holds, p.length)).collect()
    };
    assert_eq!(verdicts(&early), verdicts(&full));
    assert!(early.properties.iter().all(|p| p.holds == (p.kind == "sometimes")));
}
