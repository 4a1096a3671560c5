//! No crate of the workspace has an import cycle between its modules.
//!
//! For every crate under `crates/`, each source file is a module (`a/b.rs` and `a/b/mod.rs` are
//! `a::b`). Every `crate::…` and `super::…` path in a module's code (comments and the trailing
//! `#[cfg(test)]` module left out) is an edge from that module to the module the path names.
//! An edge between a module and one of its ancestors is structure, not an import (a parent
//! declares and re-exports its children; a child uses its parent's items), so it is skipped;
//! any other edge `a → b` is lifted to the two siblings under their lowest common ancestor that
//! contain `a` and `b`. Under every parent the siblings must then form an acyclic graph: a
//! module that two others share is a leaf of its own.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Module path (segments below the crate root) → the code of its file.
fn modules(src: &Path) -> BTreeMap<Vec<String>, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(src).unwrap();
            let mut segments: Vec<String> = rel.iter().map(|s| s.to_string_lossy().into_owned()).collect();
            let file = segments.pop().unwrap();
            let stem = file.trim_end_matches(".rs");
            if !matches!(stem, "mod" | "lib" | "main") || !segments.is_empty() && stem != "mod" {
                segments.push(stem.to_string());
            }
            // A binary next to the library (`src/bin/x.rs`) is a root of its own: skip it.
            if segments.first().is_some_and(|s| s == "bin") {
                continue;
            }
            out.insert(segments, code(&std::fs::read_to_string(&path).unwrap()));
        }
    }
    out
}

/// The code of a source file: comments removed, and the unit-test module at its end left out.
fn code(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        if line.trim() == "#[cfg(test)]" {
            break;
        }
        let line = match line.find("//") {
            Some(i) => &line[..i],
            None => line,
        };
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Every path in a use tree that starts at `rest` (just after `crate::` or `super::`):
/// `a::b`, `a::{b, c::d}`, `{a, b}`.
fn use_tree(rest: &str) -> Vec<Vec<String>> {
    fn tree(s: &mut std::iter::Peekable<std::str::Chars>, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
        let mut path = prefix;
        loop {
            while s.peek().is_some_and(|c| c.is_whitespace()) {
                s.next();
            }
            if s.peek() == Some(&'{') {
                s.next();
                loop {
                    tree(s, path.clone(), out);
                    while s.peek().is_some_and(|c| c.is_whitespace()) {
                        s.next();
                    }
                    match s.next() {
                        Some(',') => {
                            while s.peek().is_some_and(|c| c.is_whitespace()) {
                                s.next();
                            }
                            if s.peek() == Some(&'}') {
                                s.next();
                                return;
                            }
                        }
                        _ => return,
                    }
                }
            }
            let mut ident = String::new();
            while let Some(&c) = s.peek() {
                if c.is_alphanumeric() || c == '_' {
                    ident.push(c);
                    s.next();
                } else {
                    break;
                }
            }
            if ident.is_empty() {
                out.push(path);
                return;
            }
            path.push(ident);
            let mut look = s.clone();
            if look.next() == Some(':') && look.next() == Some(':') {
                s.next();
                s.next();
            } else {
                out.push(path);
                return;
            }
        }
    }
    let mut out = Vec::new();
    tree(&mut rest.chars().peekable(), Vec::new(), &mut out);
    out
}

/// The longest prefix of `path` that is a module of `mods`.
fn module_of(path: &[String], mods: &BTreeMap<Vec<String>, String>) -> Vec<String> {
    (0..=path.len()).rev().map(|k| path[..k].to_vec()).find(|p| mods.contains_key(p)).unwrap_or_default()
}

/// The module edges of one crate, lifted to siblings: parent → (from child, to child).
fn sibling_edges(mods: &BTreeMap<Vec<String>, String>) -> BTreeMap<Vec<String>, BTreeSet<(String, String)>> {
    let mut edges: BTreeMap<Vec<String>, BTreeSet<(String, String)>> = BTreeMap::new();
    for (module, code) in mods {
        let mut targets = Vec::new();
        for (i, _) in code.match_indices("crate::") {
            let before = code[..i].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
                continue;
            }
            targets.extend(use_tree(&code[i + "crate::".len()..]));
        }
        for (i, _) in code.match_indices("super::") {
            let before = code[..i].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') || module.is_empty() {
                continue;
            }
            let parent = &module[..module.len() - 1];
            for p in use_tree(&code[i + "super::".len()..]) {
                targets.push(parent.iter().cloned().chain(p).collect());
            }
        }
        for target in targets {
            let to = module_of(&target, mods);
            let common = module.iter().zip(&to).take_while(|(a, b)| a == b).count();
            if common == module.len() || common == to.len() {
                continue; // the same module, or an ancestor and its descendant
            }
            edges
                .entry(module[..common].to_vec())
                .or_default()
                .insert((module[common].clone(), to[common].clone()));
        }
    }
    edges
}

/// A cycle in `edges`, if any, as the list of its nodes.
fn cycle(edges: &BTreeSet<(String, String)>) -> Option<Vec<String>> {
    let mut next: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (a, b) in edges {
        next.entry(a).or_default().push(b);
    }
    // Depth-first search; 1 = on the current path, 2 = done.
    fn visit<'a>(
        n: &'a str,
        next: &BTreeMap<&'a str, Vec<&'a str>>,
        mark: &mut BTreeMap<&'a str, u8>,
        path: &mut Vec<&'a str>,
    ) -> Option<Vec<String>> {
        match mark.get(n) {
            Some(2) => return None,
            Some(1) => {
                let from = path.iter().position(|&p| p == n).unwrap();
                return Some(path[from..].iter().chain([&n]).map(|s| s.to_string()).collect());
            }
            _ => {}
        }
        mark.insert(n, 1);
        path.push(n);
        for &m in next.get(n).into_iter().flatten() {
            if let Some(c) = visit(m, next, mark, path) {
                return Some(c);
            }
        }
        path.pop();
        mark.insert(n, 2);
        None
    }
    let mut mark = BTreeMap::new();
    let nodes: Vec<&str> = next.keys().copied().collect();
    nodes.into_iter().find_map(|n| visit(n, &next, &mut mark, &mut Vec::new()))
}

fn crates_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

#[test]
fn no_crate_has_a_module_import_cycle() {
    let mut found = Vec::new();
    let mut crates = 0;
    for entry in std::fs::read_dir(crates_dir()).unwrap() {
        let src = entry.unwrap().path().join("src");
        if !src.is_dir() {
            continue;
        }
        crates += 1;
        let mods = modules(&src);
        for (parent, edges) in sibling_edges(&mods) {
            if let Some(c) = cycle(&edges) {
                let under = if parent.is_empty() { "the root".into() } else { parent.join("::") };
                found.push(format!("{} (under {under}): {}", src.display(), c.join(" → ")));
            }
        }
    }
    assert!(crates >= 9, "only {crates} crates found under {}", crates_dir().display());
    assert!(found.is_empty(), "module import cycles:\n{}", found.join("\n"));
}

/// The check finds a cycle where there is one, lifted to siblings, and not where there is none.
#[test]
fn the_check_sees_a_cycle_between_siblings_and_ignores_ancestors() {
    let m = |files: &[(&str, &str)]| -> BTreeMap<Vec<String>, String> {
        files
            .iter()
            .map(|(p, c)| {
                let path = if p.is_empty() { vec![] } else { p.split("::").map(String::from).collect() };
                (path, code(c))
            })
            .collect()
    };
    let cyclic = m(&[
        ("", "mod a; mod b; pub use a::X;"),
        ("a", "use crate::b::deep::{Y, Z};"),
        ("b", "pub mod deep;"),
        ("b::deep", "use crate::{Setup, a::X};\nuse super::super::Setup;"),
    ]);
    let edges = sibling_edges(&cyclic);
    assert_eq!(edges.len(), 1, "{edges:?}");
    assert!(cycle(&edges[&vec![]]).is_some());
    let acyclic = m(&[
        ("", "mod a; mod b; pub use a::X;"),
        ("a", "use crate::b::deep::{Y, Z};\nuse crate::Setup;"),
        ("b", "pub mod deep; use super::Setup;"),
        ("b::deep", "// crate::a::X is only named in a comment\nuse super::Y;"),
    ]);
    let edges = sibling_edges(&acyclic);
    assert!(edges.values().all(|e| cycle(e).is_none()), "{edges:?}");
    let tree = use_tree("a::{b, c::{d, e}}, f");
    assert_eq!(tree, [vec!["a", "b"], vec!["a", "c", "d"], vec!["a", "c", "e"]]);
}
