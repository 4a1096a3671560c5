//! The crate rules of docs/ARCHITECTURE.md ("What each crate may depend on") hold.
//!
//! Each workspace crate's `[dependencies]` (normal dependencies: what a user's build links) are
//! read from its `Cargo.toml`. A crate's closure is itself and every workspace crate it reaches
//! through them; a rule names what must not appear among the closure's crates or among their
//! direct dependencies (so `raft` reached through a workspace crate counts; a third-party
//! crate's own dependencies are not followed). The last test shows the check failing on a
//! crafted graph.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// One rule: `krate`'s closure must not contain any of `forbidden`. `why` is printed when it does.
struct Rule {
    krate: &'static str,
    forbidden: &'static [&'static str],
    why: &'static str,
}

const DRIVERS: [&str; 5] =
    ["ringleader-sim", "ringleader-check", "ringleader-net", "ringleader-service", "ringleader"];

/// The rules, as docs/ARCHITECTURE.md states them.
fn rules() -> Vec<Rule> {
    let mut rules = vec![
        Rule {
            krate: "ringleader-core",
            forbidden: &[
                "ringleader-algorithms",
                "ringleader-judge",
                "ringleader-lock-service",
                "ringleader-registry",
                "ringleader-viz",
            ],
            why: "the process contract depends on no other ringleader crate",
        },
        Rule {
            krate: "ringleader-algorithms",
            forbidden: &[
                "raft",
                "protobuf",
                "redb",
                "tokio",
                "stateright",
                "ringleader-lock-service",
                "ringleader-registry",
                "ringleader-judge",
            ],
            why: "a textbook algorithm links no Raft library, no I/O runtime and does not know how it is judged",
        },
        Rule {
            krate: "ringleader-lock-service",
            forbidden: &["tokio", "redb", "ringleader-judge", "ringleader-registry"],
            why: "the replicated core is sans-IO: the simulator and the server bring the I/O",
        },
        Rule {
            krate: "ringleader-judge",
            forbidden: &["tokio", "stateright", "ringleader-lock-service", "ringleader-registry"],
            why: "the judge runs no driver",
        },
        Rule {
            krate: "ringleader-viz",
            forbidden: &["ringleader-algorithms", "ringleader-judge"],
            why: "the viewer draws any trace",
        },
        Rule {
            krate: "ringleader-client",
            forbidden: &["ringleader-core", "ringleader-algorithms", "tokio", "raft"],
            why: "a user's client links only what it needs to talk HTTP",
        },
        Rule {
            krate: "ringleader-sim",
            forbidden: &[
                "ringleader-check",
                "ringleader-net",
                "ringleader-viz",
                "ringleader-service",
                "tokio",
            ],
            why: "the simulator runs no real network",
        },
        Rule {
            krate: "ringleader-check",
            forbidden: &["ringleader-sim", "ringleader-net", "ringleader-service", "tokio"],
            why: "the model checker shares no driver",
        },
        Rule {
            krate: "ringleader-net",
            forbidden: &["ringleader-sim", "ringleader-check", "ringleader-service"],
            why: "a real node links no simulator",
        },
        Rule {
            krate: "ringleader-service",
            forbidden: &["ringleader-sim", "ringleader-check", "ringleader-lab", "stateright"],
            why: "the server links no simulator and no model checker",
        },
        Rule {
            krate: "ringleader-lab",
            forbidden: &["ringleader-net", "ringleader-service", "tokio"],
            why: "the lab routes learners' messages itself",
        },
    ];
    // Registry: the table, nothing that runs it.
    rules.push(Rule {
        krate: "ringleader-registry",
        forbidden: &DRIVERS,
        why: "the registry is a table, not a driver",
    });
    rules
}

/// Crate name → its normal dependencies' names, for every crate under `crates/`.
fn workspace_graph() -> BTreeMap<String, BTreeSet<String>> {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut graph = BTreeMap::new();
    for entry in std::fs::read_dir(crates).unwrap() {
        let manifest = entry.unwrap().path().join("Cargo.toml");
        if let Ok(text) = std::fs::read_to_string(&manifest) {
            let (name, deps) = parse_manifest(&text);
            graph.insert(name, deps);
        }
    }
    graph
}

/// The package name and the `[dependencies]` keys of one manifest (enough TOML for ours: one
/// key per line, `name.workspace = true` or `name = …`).
fn parse_manifest(text: &str) -> (String, BTreeSet<String>) {
    let mut name = String::new();
    let mut deps = BTreeSet::new();
    let mut section = "";
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line;
            continue;
        }
        let key = line.split(['=', '.', ' ']).next().unwrap_or("");
        if key.is_empty() || key.starts_with('#') {
            continue;
        }
        match section {
            "[package]" if key == "name" => {
                name = line.split('"').nth(1).unwrap_or_default().to_string();
            }
            "[dependencies]" => {
                deps.insert(key.to_string());
            }
            _ => {}
        }
    }
    (name, deps)
}

/// Every rule broken by `graph`, one line each.
fn broken(graph: &BTreeMap<String, BTreeSet<String>>, rules: &[Rule]) -> Vec<String> {
    let mut out = Vec::new();
    for rule in rules {
        assert!(
            graph.contains_key(rule.krate),
            "a rule names {}, which is not a workspace crate",
            rule.krate
        );
        // The closure over workspace crates, remembering how each was reached.
        let mut via: BTreeMap<&str, Vec<&str>> = BTreeMap::from([(rule.krate, vec![rule.krate])]);
        let mut stack = vec![rule.krate];
        while let Some(k) = stack.pop() {
            for dep in &graph[k] {
                let path = [via[k].clone(), vec![dep.as_str()]].concat();
                if rule.forbidden.contains(&dep.as_str()) {
                    out.push(format!("{}: {} ({})", rule.krate, path.join(" → "), rule.why));
                }
                if graph.contains_key(dep.as_str()) && !via.contains_key(dep.as_str()) {
                    via.insert(dep, path);
                    stack.push(dep);
                }
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

#[test]
fn every_crate_keeps_the_rules_of_the_architecture_document() {
    let graph = workspace_graph();
    assert!(graph.len() >= 14, "read {} crates: the manifest reader lost some", graph.len());
    let broken = broken(&graph, &rules());
    assert!(broken.is_empty(), "crate rules broken:\n{}", broken.join("\n"));
}

#[test]
fn the_textbook_algorithms_link_no_raft_and_the_lock_service_does() {
    let graph = workspace_graph();
    assert!(graph["ringleader-lock-service"].contains("raft"));
    assert!(!graph["ringleader-algorithms"].contains("raft"));
}

#[test]
fn a_forbidden_dependency_reached_through_another_crate_is_found() {
    let mut graph = workspace_graph();
    // Plant one: the textbook algorithms depend on the registry (which reaches raft).
    graph.get_mut("ringleader-algorithms").unwrap().insert("ringleader-registry".into());
    let broken = broken(&graph, &rules());
    assert!(broken.iter().any(|l| l.contains("ringleader-algorithms → ringleader-registry")), "{broken:?}");
    assert!(
        broken.iter().any(|l| l.contains("→ ringleader-lock-service → raft")),
        "raft reached through the registry is not found: {broken:?}"
    );
}
