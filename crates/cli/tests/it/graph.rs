//! `ringleader sim --graph`: which shapes each algorithm takes, the one-line errors when it
//! takes none, the `graph` field of the JSON report and the repro line, and an edge-list file.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn ringleader_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ringleader"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("ringleader runs")
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

/// A scratch directory holding `files`.
fn scratch(tag: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ringleader-graph-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
    }
    dir
}

fn sim_json(dir: &Path, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["sim", "--json"];
    all.extend_from_slice(args);
    let out = ringleader_in(dir, &all);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

#[test]
fn every_wrong_graph_is_one_line_naming_what_is_allowed() {
    let dir = scratch(
        "errors",
        &[
            ("g.txt", "# ten positions\n1 2\n2 3\n\n3 11\n"),
            ("apart.txt", "1 2\n2 3\n3 4\n4 5\n5 6\n7 8\n"),
            ("loop.txt", "1 2\n2 2\n"),
            ("twice.txt", "1 2\n2 3\n3 2\n"),
            ("pair.txt", "1 2 3\n"),
            ("bad.toml", "algorithm = \"yoyo\"\nnodes = 9\ngraph = \"hexagon\"\n"),
        ],
    );
    let petersen = format!("file:{}", fixture("petersen.txt").display());
    let cases: Vec<(Vec<&str>, String)> = vec![
        (
            vec!["--algo", "raymond", "--nodes", "9", "--graph", "grid"],
            "error: --graph grid: raymond needs a tree (tree, line, star, random-tree, or a file holding a tree); \
             the 3×3 grid has 12 edges, a tree on 9 nodes has 8"
                .into(),
        ),
        (
            vec!["--algo", "raymond", "--nodes", "10", "--graph", "grid"],
            "error: --graph grid: raymond needs a tree (tree, line, star, random-tree, or a file holding a tree); \
             the 3×4 grid (last row 2 of 4) has 13 edges, a tree on 10 nodes has 9"
                .into(),
        ),
        (
            vec!["--algo", "raymond", "--nodes", "10", "--graph", &petersen],
            format!(
                "error: --graph {petersen}: raymond needs a tree (tree, line, star, random-tree, or a file holding \
                 a tree); the file holds 15 edges, a tree on 10 nodes has 9"
            ),
        ),
        (
            vec!["--algo", "raymond", "--nodes", "10", "--graph", "random"],
            "error: --graph random: raymond needs a tree (tree, line, star, random-tree, or a file holding a tree); \
             the random graph has 20 edges (2N by default; --edges 9 makes a random tree), a tree on 10 nodes has 9"
                .into(),
        ),
        (
            vec!["--algo", "yoyo", "--nodes", "10", "--graph", "file:g.txt"],
            "error: --graph file:g.txt: line 5: position 11 is outside 1..10".into(),
        ),
        (
            vec!["--algo", "yoyo", "--nodes", "8", "--graph", "file:apart.txt"],
            "error: --graph file:apart.txt: the graph is not connected (positions 7, 8 cannot reach 1)".into(),
        ),
        (
            vec!["--algo", "yoyo", "--nodes", "3", "--graph", "file:loop.txt"],
            "error: --graph file:loop.txt: line 2: 2 2 joins a position to itself".into(),
        ),
        (
            vec!["--algo", "yoyo", "--nodes", "3", "--graph", "file:twice.txt"],
            "error: --graph file:twice.txt: line 3: the edge 3 2 is already on line 2".into(),
        ),
        (
            vec!["--algo", "yoyo", "--nodes", "3", "--graph", "file:pair.txt"],
            "error: --graph file:pair.txt: line 1: expected two positions \"A B\", found \"1 2 3\"".into(),
        ),
        (
            vec!["--algo", "yoyo", "--nodes", "3", "--graph", "file:none.txt"],
            "error: --graph file:none.txt: cannot read it: No such file or directory (os error 2)".into(),
        ),
        (
            vec!["--algo", "chang-roberts", "--nodes", "9", "--graph", "grid"],
            "error: --graph grid: chang-roberts runs on a ring and takes no --graph".into(),
        ),
        (
            vec!["--algo", "hirschberg-sinclair", "--graph", "line"],
            "error: --graph line: hirschberg-sinclair runs on a bidirectional ring and takes no --graph".into(),
        ),
        (
            vec!["--algo", "ricart-agrawala", "--graph", "star"],
            "error: --graph star: ricart-agrawala runs on a complete graph and takes no --graph".into(),
        ),
        (
            vec!["--algo", "token-ring", "--edges", "9"],
            "error: --edges 9: token-ring runs on a ring and takes no --edges".into(),
        ),
        (
            vec!["--algo", "yoyo", "--nodes", "9", "--graph", "grid", "--edges", "12"],
            "error: --edges 12: only --graph random takes an edge count, and yoyo runs on --graph grid".into(),
        ),
        (
            vec!["--algo", "raymond", "--nodes", "9", "--edges", "8"],
            "error: --edges 8: only --graph random takes an edge count, and raymond runs on --graph tree (its default)"
                .into(),
        ),
        (
            vec!["--algo", "yoyo", "--nodes", "10", "--edges", "8"],
            "error: --edges 8: a connected graph on 10 nodes has between 9 and 45 edges".into(),
        ),
        (
            vec!["--algo", "yoyo", "--graph", "hexagon"],
            "error: invalid value 'hexagon' for '--graph <SHAPE>': unknown shape \"hexagon\"; allowed: random, grid, \
             tree, line, star, random-tree, file:PATH (see --help)"
                .into(),
        ),
        (
            vec!["bad.toml"],
            "error: bad.toml:3:9: field `graph`: unknown shape \"hexagon\"; allowed: random, grid, tree, line, star, \
             random-tree, file:PATH"
                .into(),
        ),
    ];
    for (args, want) in cases {
        let mut all = vec!["sim"];
        all.extend_from_slice(&args);
        let out = ringleader_in(&dir, &all);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert_eq!(err.trim_end(), want, "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}: nothing on stdout");
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn the_report_and_repro_carry_a_chosen_graph_and_replay_it() {
    let dir = scratch("repro", &[]);
    for args in [
        vec!["--algo", "yoyo", "--nodes", "30", "--graph", "grid", "--ids", "random", "--seed", "4"],
        vec!["--algo", "yoyo", "--nodes", "30", "--graph", "random-tree", "--ids", "random", "--seed", "4"],
        vec![
            "--algo",
            "raymond",
            "--nodes",
            "12",
            "--graph",
            "star",
            "--workload",
            "poisson",
            "--entries",
            "20",
        ],
        vec![
            "--algo",
            "raymond",
            "--nodes",
            "12",
            "--graph",
            "random",
            "--edges",
            "11",
            "--workload",
            "saturated",
        ],
    ] {
        let mut first = sim_json(&dir, &args);
        let shape = args[args.iter().position(|a| *a == "--graph").unwrap() + 1];
        assert_eq!(first["graph"], shape, "{args:?}");
        let repro = first["repro"].as_str().unwrap().to_string();
        assert!(repro.contains(&format!(" --graph {shape}")), "{repro}");
        let words: Vec<&str> = repro.split_whitespace().skip(2).collect();
        let mut again = sim_json(&dir, &words);
        first.as_object_mut().unwrap().remove("wall_seconds");
        again.as_object_mut().unwrap().remove("wall_seconds");
        assert_eq!(first, again, "{repro} replays the run");
    }
    // The default shapes are no choice: no `graph` field, no --graph in the repro line.
    for args in [
        vec!["--algo", "yoyo", "--nodes", "30", "--graph", "random"],
        vec!["--algo", "raymond", "--nodes", "12", "--graph", "tree"],
        vec!["--algo", "chang-roberts", "--nodes", "5"],
    ] {
        let r = sim_json(&dir, &args);
        assert!(r.get("graph").is_none(), "{args:?}: {r}");
        assert!(!r["repro"].as_str().unwrap().contains("--graph"), "{args:?}");
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn yoyo_elects_the_minimum_on_the_petersen_fixture_and_raymond_runs_on_a_tree_file() {
    let dir = scratch(
        "files",
        &[("spider.txt", "# a spider: legs 1-2-3, 1-4-5, 1-6-7\n2 1\n3 2\n1 4\n5 4\n6 1\n7 6\n")],
    );
    let petersen = format!("file:{}", fixture("petersen.txt").display());
    // m = 15: setup 2m = 30, the announcement 2m − n + 1 = 21, YoYo proper within
    // 2m + 2m(⌈log2 10⌉ + 1) = 180.
    for seed in 1..=20 {
        let seed = seed.to_string();
        let r = sim_json(
            &dir,
            &["--algo", "yoyo", "--nodes", "10", "--graph", &petersen, "--ids", "random", "--seed", &seed],
        );
        assert_eq!(r["graph"], petersen);
        assert_eq!(r["outcome"]["leader"], 1, "seed {seed}");
        assert!(r["properties"].as_array().unwrap().iter().all(|p| p["holds"] == true), "seed {seed}");
        let k = &r["messages"]["by_kind"];
        assert_eq!(k["setup"], 30);
        assert_eq!(k["coordinator"], 21);
        let proper: u64 = ["setup", "yo", "yes", "no"].iter().map(|x| k[x].as_u64().unwrap()).sum();
        assert!(proper <= 180, "seed {seed}: {proper}");
    }
    // The spider's legs are 2 long: every entry of requesters 2..7 in turn costs 2·distance,
    // 2 (1→2), 2 (2→3), 6 (3→4), 2 (4→5), 6 (5→6), 2 (6→7): 20 messages.
    let r = sim_json(
        &dir,
        &[
            "--algo",
            "raymond",
            "--nodes",
            "7",
            "--graph",
            "file:spider.txt",
            "--workload",
            "sequential",
            "--entries",
            "6",
        ],
    );
    assert_eq!(r["messages"]["sent"], 20);
    assert_eq!(r["outcome"]["entries"], 6);
    assert!(r["properties"].as_array().unwrap().iter().all(|p| p["holds"] == true));
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn help_describes_graph_and_edges() {
    let out = ringleader_in(Path::new("."), &["sim", "--help"]);
    let help = String::from_utf8_lossy(&out.stdout);
    for needle in ["--graph <SHAPE>", "random-tree", "file:PATH", "--edges <M>", "--graph random only"] {
        assert!(help.contains(needle), "--help should mention {needle}");
    }
}
