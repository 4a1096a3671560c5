//! The crate rules of docs/ARCHITECTURE.md ("What each crate may depend on") hold, and its
//! crate graph (the Mermaid graph and the list) is the manifests' graph.
//!
//! Each workspace crate's `[dependencies]` (normal dependencies: what a user's build links) are
//! read from its `Cargo.toml`. A crate's closure is itself and every workspace crate it reaches
//! through them; a rule names what must not appear among the closure's crates or among their
//! direct dependencies (so `raft` reached through a workspace crate counts; a third-party
//! crate's own dependencies are not followed).
//!
//! The rules come from two places: a table here (with the reasons), and the document's own
//! table, read from docs/ARCHITECTURE.md — a crate's direct ringleader dependencies must be among
//! the crates its "may depend on" cell names, and its closure must hold nothing its "must not
//! depend on" cell names — so that the document cannot drift from the manifests. The tests named
//! `…_is_found` show each check failing on a crafted graph.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// One rule: `krate`'s closure must not contain any of `forbidden`. `why` is printed when it does.
struct Rule<'a> {
    krate: &'a str,
    forbidden: &'a [&'a str],
    why: &'a str,
}

const DRIVERS: [&str; 5] =
    ["ringleader-sim", "ringleader-check", "ringleader-net", "ringleader-service", "ringleader"];

/// The rules, as docs/ARCHITECTURE.md states them.
fn rules() -> Vec<Rule<'static>> {
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
            forbidden: &[
                "ringleader-sim",
                "ringleader-check",
                "ringleader-lab",
                "ringleader-net",
                "stateright",
            ],
            why: "the server links no simulator, no model checker and not the textbook-node driver",
        },
        Rule {
            krate: "ringleader-transport",
            forbidden: &[
                "ringleader-core",
                "ringleader-algorithms",
                "ringleader-lock-service",
                "ringleader-registry",
                "ringleader-judge",
                "ringleader-net",
                "raft",
                "protobuf",
                "redb",
            ],
            why: "the peer transport carries bytes between real nodes: it knows no algorithm, no Raft, no trace",
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
    let mut out: Vec<String> = rules.iter().flat_map(|rule| broken_for(graph, rule.krate, rule)).collect();
    out.sort();
    out.dedup();
    out
}

/// Where `krate`'s closure in `graph` holds what `rule` forbids, one line per path.
fn broken_for(graph: &BTreeMap<String, BTreeSet<String>>, krate: &str, rule: &Rule) -> Vec<String> {
    assert!(graph.contains_key(krate), "a rule names {krate}, which is not a workspace crate");
    let mut out = Vec::new();
    // The closure over workspace crates, remembering how each was reached.
    let mut via: BTreeMap<&str, Vec<&str>> = BTreeMap::from([(krate, vec![krate])]);
    let mut stack = vec![krate];
    while let Some(k) = stack.pop() {
        for dep in &graph[k] {
            let path = [via[k].clone(), vec![dep.as_str()]].concat();
            if rule.forbidden.contains(&dep.as_str()) {
                out.push(format!("{krate}: {} ({})", path.join(" → "), rule.why));
            }
            if graph.contains_key(dep.as_str()) && !via.contains_key(dep.as_str()) {
                via.insert(dep, path);
                stack.push(dep);
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

/// The text of docs/ARCHITECTURE.md.
fn architecture() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/ARCHITECTURE.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The package name of a crate as the document names it (`cli` is the package `ringleader`).
fn package(short: &str) -> String {
    match short.trim() {
        "cli" => "ringleader".to_string(),
        s => format!("ringleader-{s}"),
    }
}

/// Third-party crates a "must not depend on" cell forbids by name: the word, and the crate.
const EXTERNAL_NAMES: [(&str, &str); 5] = [
    ("tokio", "tokio"),
    ("raft-rs", "raft"),
    ("protobuf", "protobuf"),
    ("redb", "redb"),
    ("stateright", "stateright"),
];

/// One row of the document's table: the crate, the ringleader crates it may depend on directly
/// (`None`: anything), and what its closure must not hold.
struct DocRow {
    krate: String,
    may: Option<BTreeSet<String>>,
    must_not: BTreeSet<String>,
}

/// The rows of the table "What each crate may depend on". In a cell, a workspace crate is named
/// in backquotes; "every (other) ringleader crate" or "any other ringleader crate" forbids them
/// all; the third-party crates of [`EXTERNAL_NAMES`] are named by their word.
fn doc_rows(doc: &str, workspace: &BTreeSet<String>) -> Vec<DocRow> {
    let section = doc.split("## What each crate may depend on").nth(1).expect("the table's section");
    let section = section.split("\n## ").next().unwrap_or(section);
    let quoted = |cell: &str| -> BTreeSet<String> {
        cell.split('`').skip(1).step_by(2).map(package).filter(|p| workspace.contains(p)).collect()
    };
    let mut rows = Vec::new();
    for line in section.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        assert!(cells.len() >= 4, "a table row with fewer than three cells: {line}");
        let krate = package(cells[1].trim_matches('`'));
        let may = (!cells[2].starts_with("everything")).then(|| quoted(cells[2]));
        let mut must_not = quoted(cells[3]);
        if cells[3].contains("ringleader crate")
            && (cells[3].contains("every") || cells[3].contains("any other"))
        {
            must_not.extend(workspace.iter().filter(|w| **w != krate).cloned());
        }
        for (word, name) in EXTERNAL_NAMES {
            if cells[3].contains(word) {
                must_not.insert(name.to_string());
            }
        }
        rows.push(DocRow { krate, may, must_not });
    }
    rows
}

/// Every way `graph` breaks the document's table, one line each.
fn broken_doc_rules(graph: &BTreeMap<String, BTreeSet<String>>, rows: &[DocRow]) -> Vec<String> {
    let workspace: BTreeSet<String> = graph.keys().cloned().collect();
    let mut out = Vec::new();
    for krate in &workspace {
        if !rows.iter().any(|r| &r.krate == krate) {
            out.push(format!("{krate} has no row in the table"));
        }
    }
    for row in rows {
        let Some(deps) = graph.get(&row.krate) else {
            out.push(format!("the table has a row for {}, which is not a workspace crate", row.krate));
            continue;
        };
        if let Some(may) = &row.may {
            for dep in deps.iter().filter(|d| workspace.contains(*d) && !may.contains(*d)) {
                out.push(format!("{} depends on {dep}, which its row does not allow", row.krate));
            }
        }
        let forbidden: Vec<&str> = row.must_not.iter().map(String::as_str).collect();
        let rule =
            Rule { krate: "", forbidden: &forbidden, why: "its row in docs/ARCHITECTURE.md forbids it" };
        out.extend(broken_for(graph, &row.krate, &rule));
    }
    out
}

/// The arrows of the document's Mermaid graph, as (crate, dependency) package names.
fn mermaid_edges(doc: &str) -> Vec<(String, String)> {
    let block = doc.split("```mermaid").nth(1).and_then(|b| b.split("```").next()).expect("a mermaid block");
    let mut names = BTreeMap::new();
    for line in block.lines().map(str::trim) {
        if let Some((id, rest)) = line.split_once("[\"") {
            let label = rest.split(['<', '"']).next().unwrap_or("");
            let name = if label == "ringleader (cli)" { "ringleader" } else { label };
            names.insert(id.trim().to_string(), name.to_string());
        }
    }
    block
        .lines()
        .filter_map(|l| l.split_once("-->"))
        .map(|(a, b)| {
            let name = |id: &str| names.get(id.trim()).cloned().unwrap_or_else(|| panic!("no node {id:?}"));
            (name(a), name(b))
        })
        .collect()
}

/// The arrows of the document's list ("The same graph as a list"), as (crate, dependency)
/// package names; a crate that depends on none of ours is listed with no arrow.
fn list_edges(doc: &str) -> (Vec<(String, String)>, BTreeSet<String>) {
    let after = doc.split("The same graph as a list").nth(1).expect("the list");
    let block = after.split("```text").nth(1).and_then(|b| b.split("```").next()).expect("a text block");
    let (mut edges, mut listed) = (Vec::new(), BTreeSet::new());
    for line in block.lines().filter(|l| l.contains('→')) {
        let (lhs, rhs) = line.split_once('→').unwrap();
        for a in lhs.split(',').map(package) {
            listed.insert(a.clone());
            if rhs.contains("no ringleader crate") {
                continue;
            }
            for b in rhs.split(',').map(package) {
                listed.insert(b.clone());
                edges.push((a.clone(), b));
            }
        }
    }
    (edges, listed)
}

/// Every way a drawing of the graph (`edges`) differs from `graph`: an arrow that is not a
/// direct dependency, a direct dependency the arrows do not reach, a crate not drawn.
fn graph_differences(
    what: &str,
    graph: &BTreeMap<String, BTreeSet<String>>,
    edges: &[(String, String)],
    drawn: &BTreeSet<String>,
) -> Vec<String> {
    let mut out = Vec::new();
    for (a, b) in edges {
        if !graph.get(a).is_some_and(|deps| deps.contains(b)) {
            out.push(format!("{what}: {a} → {b} is not a dependency in {a}'s Cargo.toml"));
        }
    }
    for (krate, deps) in graph {
        if !drawn.contains(krate) {
            out.push(format!("{what}: {krate} is missing"));
        }
        let mut reached = BTreeSet::new();
        let mut stack = vec![krate.clone()];
        while let Some(k) = stack.pop() {
            for (_, b) in edges.iter().filter(|(a, _)| *a == k) {
                if reached.insert(b.clone()) {
                    stack.push(b.clone());
                }
            }
        }
        for dep in deps.iter().filter(|d| graph.contains_key(*d) && !reached.contains(*d)) {
            out.push(format!("{what}: {krate} depends on {dep}, which its arrows do not reach"));
        }
    }
    out
}

#[test]
fn every_crate_keeps_the_rules_of_the_architecture_documents_table() {
    let graph = workspace_graph();
    let workspace = graph.keys().cloned().collect();
    let rows = doc_rows(&architecture(), &workspace);
    let broken = broken_doc_rules(&graph, &rows);
    assert!(broken.is_empty(), "docs/ARCHITECTURE.md's table is broken:\n{}", broken.join("\n"));
}

#[test]
fn the_architecture_documents_graph_and_list_are_the_manifests_graph() {
    let graph = workspace_graph();
    let doc = architecture();
    let mermaid = mermaid_edges(&doc);
    let drawn = mermaid.iter().flat_map(|(a, b)| [a.clone(), b.clone()]).collect();
    let mut diff = graph_differences("the Mermaid graph", &graph, &mermaid, &drawn);
    let (list, listed) = list_edges(&doc);
    diff.extend(graph_differences("the list", &graph, &list, &listed));
    assert!(diff.is_empty(), "docs/ARCHITECTURE.md's graph is not the manifests':\n{}", diff.join("\n"));
}

#[test]
fn a_dependency_the_documents_table_does_not_allow_is_found() {
    let mut graph = workspace_graph();
    let workspace = graph.keys().cloned().collect();
    let rows = doc_rows(&architecture(), &workspace);
    // Plant one: the service depends on the textbook-node driver again.
    graph.get_mut("ringleader-service").unwrap().insert("ringleader-net".into());
    let broken = broken_doc_rules(&graph, &rows);
    assert!(
        broken
            .iter()
            .any(|l| l == "ringleader-service depends on ringleader-net, which its row does not allow"),
        "{broken:?}"
    );
    assert!(broken.iter().any(|l| l.contains("ringleader-service → ringleader-net")), "{broken:?}");
    // And one forbidden by name: the transport reaches raft through the lock service.
    let mut graph = workspace_graph();
    graph.get_mut("ringleader-transport").unwrap().insert("ringleader-lock-service".into());
    let broken = broken_doc_rules(&graph, &rows);
    assert!(broken.iter().any(|l| l.contains("→ ringleader-lock-service → raft")), "{broken:?}");
}

#[test]
fn a_drawing_that_differs_from_the_manifests_is_found() {
    let mut graph = workspace_graph();
    graph.get_mut("ringleader-viz").unwrap().insert("ringleader-judge".into());
    let (list, listed) = list_edges(&architecture());
    let diff = graph_differences("the list", &graph, &list, &listed);
    assert_eq!(diff, ["the list: ringleader-viz depends on ringleader-judge, which its arrows do not reach"]);
    graph.get_mut("ringleader-viz").unwrap().remove("ringleader-judge");
    graph.get_mut("ringleader-service").unwrap().remove("ringleader-transport");
    let diff = graph_differences("the list", &graph, &list, &listed);
    assert!(diff.contains(&"the list: ringleader-service → ringleader-transport is not a dependency in ringleader-service's Cargo.toml".to_string()), "{diff:?}");
}
