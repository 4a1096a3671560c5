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
fn finite_spaces_are_complete_and_unbounded_ones_are_named() {
    let out = check("central", Bounds::new(3), &Options { max_memory: Some(1 << 40), ..Options::default() })
        .expect("the model configures");
    assert!(out.complete);
    assert_eq!(out.bounded_by, None);
    assert!(unbounded_reason("bully").is_some());
    assert!(unbounded_reason("central").is_none());
}
