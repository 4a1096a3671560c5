//! Every ShiViz log `ringleader` writes obeys ShiViz's rules (`ringleader_viz::shiviz::check`:
//! each host's own count starts at 1 and grows by 1, no clock goes back, every entry names an
//! existing event whose clock it covers): the simulator's logs of every algorithm and every
//! scenario of up to 64 nodes, and the merged log of a real cluster (`verify --shiviz`), whose
//! nodes' own stamps break the rules.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common;

const LANE: u16 = 56;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ringleader"))
}

fn out_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ringleader-shiviz-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn scenario(name: &str) -> String {
    format!("{}/../../scenarios/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// `ringleader sim ARGS --shiviz FILE`: the log, checked by ShiViz's rules (`None`: the run has
/// more nodes than a log holds, and `sim` said so).
fn try_sim_log(args: &[&str], file: &Path) -> Option<String> {
    let out = bin().arg("sim").args(args).arg("--shiviz").arg(file).output().expect("ringleader runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.code() == Some(1) && stderr.contains("a ShiViz log holds at most 64") {
        return None;
    }
    assert!(
        out.status.code() == Some(0) || out.status.code() == Some(2),
        "sim {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log = std::fs::read_to_string(file).unwrap();
    let events = ringleader_viz::shiviz::check(&log).unwrap_or_else(|e| panic!("sim {args:?}: {e}"));
    assert!(events > 0, "sim {args:?}: an empty log");
    Some(log)
}

fn sim_log(args: &[&str], file: &Path) -> String {
    try_sim_log(args, file).unwrap_or_else(|| panic!("sim {args:?}: no log"))
}

/// The `nodes` a scenario file asks for (5 when it names none).
fn scenario_nodes(path: &Path) -> u64 {
    let doc: toml::Table = std::fs::read_to_string(path).unwrap().parse().unwrap();
    doc.get("nodes").and_then(|v| v.as_integer()).unwrap_or(5) as u64
}

#[test]
fn every_simulator_log_obeys_shiviz_s_rules() {
    let dir = out_dir("sim");
    let list = bin().arg("list").output().expect("list");
    let algorithms: Vec<String> = String::from_utf8_lossy(&list.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect();
    assert!(algorithms.len() >= 25, "{algorithms:?}");
    let mut refused = Vec::new();
    for algo in &algorithms {
        if try_sim_log(&["--algo", algo], &dir.join(format!("{algo}.log"))).is_none() {
            refused.push(algo.as_str());
        }
    }
    // Only the large-scale elections' default runs (hundreds of nodes) are refused.
    assert_eq!(refused, ["superpeer-dht", "superpeer-geometric"]);
    let mut scenarios: Vec<PathBuf> = std::fs::read_dir(scenario(""))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml") && scenario_nodes(p) <= 64)
        .collect();
    scenarios.sort();
    assert!(scenarios.len() >= 40);
    for s in &scenarios {
        let name = s.file_stem().unwrap().to_string_lossy().to_string();
        sim_log(&[s.to_str().unwrap()], &dir.join(format!("{name}.log")));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Faults and the first violation are events of the log: a pause and the safety violation of
/// the central-timeout story, a partition and its heal, a crash and a recovery.
#[test]
fn faults_and_the_first_violation_are_in_the_simulator_s_log() {
    let dir = out_dir("faults");
    let log = sim_log(&[&scenario("central-timeout-paused-holder.toml")], &dir.join("ct.log"));
    assert!(log.contains("P1 (id 2) is paused\n"), "{log}");
    assert!(log.contains("P1 (id 2) resumes\n"), "{log}");
    assert_eq!(log.matches("\nchecker VIOLATION safety: ").count(), 1, "the first violation, once: {log}");
    let log = sim_log(&[&scenario("bully-partition-split-brain.toml")], &dir.join("split.log"));
    assert!(log.contains("\nnetwork partition ") && log.contains("\nnetwork heal "), "{log}");
    let log = sim_log(&[&scenario("bully-recovery-bullies-back.toml")], &dir.join("recovery.log"));
    assert!(log.contains(" crashes\n") && log.contains(" recovers\n"), "{log}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Three real bully nodes on loopback elect a leader; `verify --shiviz` merges their traces into
/// a log ShiViz loads (the nodes' own vector stamps count records the log leaves out).
#[test]
fn a_real_cluster_s_merged_log_obeys_shiviz_s_rules() {
    let dir = out_dir("cluster");
    let (n, api, peer) = (3u16, common::free_base(3, LANE), common::free_base(3, LANE));
    let mut cmd = bin();
    cmd.args(["cluster", "--nodes", &n.to_string(), "--algo", "bully"])
        .args(["--api-base-port", &api.to_string(), "--peer-base-port", &peer.to_string()])
        .arg("--trace-dir")
        .arg(&dir)
        .arg("--no-data-dir")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = common::spawn(&mut cmd);
    let traces: Vec<PathBuf> = (1..=n).map(|i| dir.join(format!("node-{i}.jsonl"))).collect();
    // Every node has reported the leader.
    common::until(Duration::from_secs(30), "every node knows the leader", || {
        traces
            .iter()
            .all(|t| std::fs::read_to_string(t).unwrap_or_default().contains("\"event\":\"leader\""))
            .then_some(())
    });
    // SAFETY: signalling our own child (the nodes stop cleanly and flush their traces).
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let _ = child.wait();
    let log_file = dir.join("real.log");
    let out = bin().arg("verify").args(&traces).arg("--shiviz").arg(&log_file).output().unwrap();
    assert!(out.status.code() == Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let log = std::fs::read_to_string(&log_file).unwrap();
    let events = ringleader_viz::shiviz::check(&log).unwrap_or_else(|e| panic!("verify --shiviz: {e}"));
    assert!(events > 6, "{log}");
    for host in ["P0", "P1", "P2"] {
        assert!(log.contains(&format!("\n{host} {{")), "{host} has events: {log}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
