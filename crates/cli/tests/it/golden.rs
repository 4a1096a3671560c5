//! Golden outputs: a refactor keeps behaviour byte for byte.
//!
//! Several hundred commands (every scenario with its JSON report, trace and Mermaid diagram;
//! every algorithm's default and text report; algorithms × seeds × fault flags; `table --json`;
//! `check --json` for the documented model-checking cases) are run, and a SHA-256 of what each
//! wrote is compared with `tests/golden/outputs.tsv`. The wall-clock fields of a report
//! (`wall_seconds`, the checker's `seconds` and `states_per_second`) are removed first.
//!
//! A behaviour change is made in its own commit, which re-records the file:
//!
//! ```sh
//! RINGLEADER_BLESS=1 cargo test -p ringleader --test it -- golden::
//! git diff crates/cli/tests/golden/outputs.tsv   # every changed line is an intended change
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use sha2::{Digest, Sha256};

const MANIFEST: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/outputs.tsv");

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One command whose outputs are compared: its name in the manifest and its arguments.
struct Case {
    name: String,
    args: Vec<String>,
    /// Also hash the files written by `--trace` and `--mermaid`.
    files: bool,
}

fn case(name: impl Into<String>, args: &str, files: bool) -> Case {
    Case { name: name.into(), args: args.split_whitespace().map(str::to_string).collect(), files }
}

fn algorithms() -> Vec<(String, String)> {
    let out = Command::new(env!("CARGO_BIN_EXE_ringleader")).arg("list").output().unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            Some((w.next()?.to_string(), w.next()?.to_string()))
        })
        .collect()
}

fn cases() -> Vec<Case> {
    let mut cases = Vec::new();
    let mut scenarios: Vec<PathBuf> = std::fs::read_dir(root().join("scenarios"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    scenarios.sort();
    for path in scenarios {
        let stem = path.file_stem().unwrap().to_string_lossy().to_string();
        let big = stem.contains("100000") || stem.contains("10000");
        let p = path.display();
        cases.push(case(format!("scenario/{stem}/json"), &format!("sim {p} --json"), !big));
        cases.push(case(format!("scenario/{stem}/text"), &format!("sim {p}"), false));
    }
    let faults: [(&str, &str); 6] = [
        ("none", ""),
        ("loss", "--loss 0.05 --duration 1s"),
        ("crash", "--crash 1@5ms --duration 1s"),
        ("pause", "--pause 1@2ms..40ms --duration 1s"),
        ("dup", "--dup 0.1 --latency uniform:1ms..3ms --duration 300ms"),
        ("partition", "--partition 1,2|3,4@3ms..30ms --nodes 5 --duration 1s"),
    ];
    for (algo, _family) in algorithms() {
        cases.push(case(format!("default/{algo}/text"), &format!("sim --algo {algo}"), false));
        cases.push(case(format!("default/{algo}/files"), &format!("sim --algo {algo} --json"), true));
        for seed in 1..=3 {
            for (fault, flags) in faults {
                cases.push(case(
                    format!("grid/{algo}/seed{seed}/{fault}"),
                    &format!("sim --algo {algo} --seed {seed} --json {flags}"),
                    false,
                ));
            }
        }
    }
    cases.push(case("table/json", "table --json", false));
    cases.push(case("table/text", "table", false));
    for args in [
        "check --algo central-timeout --nodes 3",
        "check --algo central-timeout --nodes 3 --network ordered",
        "check --algo central --nodes 3",
        "check --algo central --nodes 3 --acquires 2",
        "check --algo central --nodes 3 --crashes 1",
        "check --algo chang-roberts --nodes 3",
        "check --algo chang-roberts --nodes 3 --network ordered",
        "check --algo chang-roberts --nodes 3 --network lossy",
        "check --algo chang-roberts --nodes 3 --crashes 1",
        "check --algo bully --nodes 3 --depth 4",
        "check --algo token-ring --nodes 3 --depth 5",
        "check --algo maekawa --nodes 3 --requesters all --param deadlock_handling=false",
        "check --algo lamport --nodes 3 --network unordered",
    ] {
        cases.push(case(format!("check/{}/json", args.replace(' ', "_")), &format!("{args} --json"), false));
        cases.push(case(format!("check/{}/mermaid", args.replace(' ', "_")), args, true));
    }
    cases
}

/// Removes the fields that measure the machine rather than the run.
fn strip_wall_clock(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(map) => {
            for key in ["wall_seconds", "seconds", "states_per_second", "elapsed_seconds"] {
                map.remove(key);
            }
            map.values_mut().for_each(strip_wall_clock);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(strip_wall_clock),
        _ => {}
    }
}

/// A line with every number of seconds (`0.002 s`, `1.5 s)`) replaced by `_`.
fn without_seconds(line: &str) -> String {
    let words: Vec<&str> = line.split(' ').collect();
    let mut kept = Vec::with_capacity(words.len());
    for (i, w) in words.iter().enumerate() {
        let seconds = words.get(i + 1).is_some_and(|next| next.trim_end_matches([',', ')', ';']) == "s");
        kept.push(if seconds && w.parse::<f64>().is_ok() { "_" } else { w });
    }
    kept.join(" ")
}

fn hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// Runs one case; the digests of what it wrote, by output name.
fn run(c: &Case, dir: &Path) -> Vec<(String, String)> {
    let mut args = c.args.clone();
    let (trace, mermaid) = (dir.join("t.jsonl"), dir.join("m.mmd"));
    if c.files {
        args.extend(["--trace".into(), trace.display().to_string()]);
        args.extend(["--mermaid".into(), mermaid.display().to_string()]);
    }
    let out = Command::new(env!("CARGO_BIN_EXE_ringleader"))
        .args(&args)
        .current_dir(root())
        .output()
        .expect("ringleader runs");
    let stdout = match serde_json::from_slice::<serde_json::Value>(&out.stdout) {
        Ok(mut v) if args.iter().any(|a| a == "--json") => {
            strip_wall_clock(&mut v);
            serde_json::to_vec_pretty(&v).unwrap()
        }
        // Text reports print the wall time on a line of their own, or as "0.002 s" among the
        // model checker's counts.
        _ => String::from_utf8_lossy(&out.stdout)
            .replace(&dir.display().to_string(), "DIR")
            .lines()
            .filter(|l| !l.contains("wall") && !l.contains("states/s"))
            .map(without_seconds)
            .collect::<Vec<_>>()
            .join("\n")
            .into_bytes(),
    };
    let mut digests = vec![
        (format!("{}#exit", c.name), out.status.code().unwrap_or(-1).to_string()),
        (format!("{}#stdout", c.name), hex(&stdout)),
    ];
    if !out.status.success() {
        digests.push((format!("{}#stderr", c.name), hex(&out.stderr)));
    }
    if c.files {
        for (what, path) in [("trace", &trace), ("mermaid", &mermaid)] {
            let bytes = std::fs::read(path).unwrap_or_default();
            digests.push((format!("{}#{what}", c.name), hex(&bytes)));
        }
    }
    digests
}

#[test]
fn outputs_match_the_recorded_golden_outputs() {
    let cases = cases();
    let next = Mutex::new(0usize);
    let results = Mutex::new(BTreeMap::new());
    let commands = Mutex::new(BTreeMap::new());
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    std::thread::scope(|s| {
        for t in 0..threads {
            let (cases, next, results, commands) = (&cases, &next, &results, &commands);
            s.spawn(move || {
                let dir = std::env::temp_dir().join(format!("ringleader-golden-{}-{t}", std::process::id()));
                std::fs::create_dir_all(&dir).unwrap();
                loop {
                    let i = {
                        let mut n = next.lock().unwrap();
                        *n += 1;
                        *n - 1
                    };
                    let Some(c) = cases.get(i) else { break };
                    let digests = run(c, &dir);
                    commands.lock().unwrap().insert(c.name.clone(), c.args.join(" "));
                    results.lock().unwrap().extend(digests);
                }
                let _ = std::fs::remove_dir_all(&dir);
            });
        }
    });
    let results = results.into_inner().unwrap();
    let commands = commands.into_inner().unwrap();
    let actual: String = results.iter().map(|(k, v)| format!("{k}\t{v}\n")).collect();
    if std::env::var_os("RINGLEADER_BLESS").is_some() {
        std::fs::create_dir_all(Path::new(MANIFEST).parent().unwrap()).unwrap();
        std::fs::write(MANIFEST, &actual).unwrap();
        return;
    }
    let recorded = std::fs::read_to_string(MANIFEST).expect("golden outputs recorded (RINGLEADER_BLESS=1)");
    let recorded: BTreeMap<&str, &str> = recorded.lines().filter_map(|l| l.split_once('\t')).collect();
    let mut differences = Vec::new();
    for (key, digest) in &results {
        if recorded.get(key.as_str()) != Some(&digest.as_str()) {
            let name = key.split('#').next().unwrap();
            differences.push(format!("{key}: ringleader {}", commands[name]));
        }
    }
    for key in recorded.keys() {
        if !results.contains_key(*key) {
            differences.push(format!("{key}: recorded but no longer run"));
        }
    }
    assert!(
        differences.is_empty(),
        "{} output(s) differ from the golden record (an intended change re-records with \
         RINGLEADER_BLESS=1):\n{}",
        differences.len(),
        differences.join("\n")
    );
}
