//! `ringleader quorum-risk` through the binary: the reference values, the Monte Carlo and
//! protocol-level estimates, and the input errors.

use std::process::{Command, Output};

fn ringleader(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ringleader")).args(args).output().expect("ringleader runs")
}

fn json(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["quorum-risk", "--json"];
    all.extend_from_slice(args);
    let out = ringleader(&all);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

#[test]
fn reference_values_are_exact() {
    let out = ringleader(&["quorum-risk", "--p", "0.0001", "--n", "32", "--m", "24"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("P_v          7.349e-59"), "{text}");
    let j = json(&["--p", "0.05", "--n", "7", "--m", "4"]);
    assert_eq!(j["p_v"], "0.1855");
    assert_eq!(j["p_v_exact"], "0.18549375");
    assert_eq!(j["intersection"], 1);
    let j = json(&["--p", "1e-4", "--n", "32", "--m", "24"]);
    assert_eq!(j["p_v"], "7.349e-59");
    assert!(
        j["p_v_exact"]
            .as_str()
            .unwrap()
            .starts_with("0.0000000000000000000000000000000000000000000000000000000000734917416615880854")
    );
}

#[test]
fn monte_carlo_agrees_with_the_exact_value() {
    let j = json(&["--p", "0.05", "--n", "7", "--m", "4", "--monte-carlo", "200000", "--seed", "3"]);
    let mc = &j["monte_carlo"];
    assert_eq!(mc["runs"], 200_000);
    assert_eq!(mc["contains_exact"], true, "{mc}");
    let est = mc["estimate"].as_f64().unwrap();
    assert!((est - 0.18549375).abs() < 0.005, "{est}");
}

#[test]
fn protocol_level_simulation_of_the_staged_race_matches_the_formula() {
    let j = json(&["--p", "0.05", "--n", "7", "--m", "4", "--protocol", "400", "--seed", "5"]);
    let p = &j["protocol"];
    assert_eq!(p["race"], "staged");
    assert_eq!(p["model_exact"], "0.1855");
    assert_eq!(p["contains_model"], true, "{p}");
    assert!(p["violations"].as_u64().unwrap() > 0);
    // Without the staged race the first participant holds all n votes: m of the n must reset.
    let j = json(&["--p", "0.5", "--n", "3", "--m", "2", "--protocol", "300", "--race", "none"]);
    let p = &j["protocol"];
    assert_eq!(p["model_exact"], "0.5");
    assert_eq!(p["contains_model"], true, "{p}");
    // P = 0: never; P = 1: always.
    let never = json(&["--p", "0", "--n", "5", "--m", "3", "--protocol", "20"]);
    assert_eq!(never["protocol"]["violations"], 0);
    assert_eq!(never["p_v"], "0");
    let always = json(&["--p", "1", "--n", "5", "--m", "3", "--protocol", "20"]);
    assert_eq!(always["protocol"]["violations"], 20);
    assert_eq!(always["p_v"], "1");
}

#[test]
fn bad_input_is_one_line_and_exit_one() {
    for (args, needle) in [
        (vec!["--p", "1.5", "--n", "7", "--m", "4"], "between 0 and 1"),
        (vec!["--p", "-0.1", "--n", "7", "--m", "4"], "--p"),
        (vec!["--p", "abc", "--n", "7", "--m", "4"], "not a decimal"),
        (vec!["--p", "0.1", "--n", "7", "--m", "3"], "m > n/2"),
        (vec!["--p", "0.1", "--n", "7", "--m", "8"], "cannot exceed"),
        (vec!["--p", "0.1", "--n", "0", "--m", "0"], "the number of coordinators must be 1.."),
    ] {
        let mut all = vec!["quorum-risk"];
        all.extend_from_slice(&args);
        let out = ringleader(&all);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}
