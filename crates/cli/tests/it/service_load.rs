//! `ringleader service-load` against a real three-node `cluster --service`, writing through a
//! `ringleader fenced-resource`: the history it records passes `ringleader verify --history`,
//! with and without the Raft leader killed and restarted mid-run. No Docker (that is
//! deploy/service-fault-test.sh). Waits are bounded polls.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use crate::common::{free_base, spawn, until};

/// This module's lane of loopback ports ([`common::free_base`]).
const LANE: u16 = 48;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ringleader"))
}

fn get(port: u16, path: &str) -> Option<serde_json::Value> {
    let agent: ureq::Agent =
        ureq::Agent::config_builder().timeout_global(Some(Duration::from_secs(2))).build().into();
    let mut r = agent.get(&format!("http://127.0.0.1:{port}{path}")).call().ok()?;
    serde_json::from_str(&r.body_mut().read_to_string().ok()?).ok()
}

/// Sends SIGTERM to a child and reaps it.
fn stop(child: &mut Child) {
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let _ = child.wait();
}

/// Three service nodes, a fenced resource, and a scratch directory.
struct Rig {
    cluster: Child,
    resource: Child,
    api: u16,
    resource_port: u16,
    dir: PathBuf,
}

impl Rig {
    fn start(name: &str) -> Rig {
        let (api, peer, res) = (free_base(3, LANE), free_base(3, LANE), free_base(0, LANE));
        let dir = std::env::temp_dir().join(format!("ringleader-load-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let cluster = spawn(
            bin()
                .args(["cluster", "--service", "--nodes", "3"])
                .args(["--api-base-port", &api.to_string(), "--peer-base-port", &peer.to_string()])
                .arg("--data-dir")
                .arg(dir.join("data"))
                .arg("--secret-file")
                .arg(dir.join("cluster.secret"))
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        );
        let resource = spawn(
            bin()
                .args(["fenced-resource", "--listen", &format!("127.0.0.1:{res}"), "--log"])
                .arg(dir.join("writes.jsonl"))
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        );
        let rig = Rig { cluster, resource, api, resource_port: res, dir };
        rig.leader(&[]);
        until(Duration::from_secs(10), "the fenced resource", || get(res, "/stats"));
        rig
    }

    /// The leader every node outside `down` names.
    fn leader(&self, down: &[u16]) -> u16 {
        until(Duration::from_secs(30), "an agreed leader", || {
            let leaders: Vec<Option<u64>> = (1..=3u16)
                .filter(|i| !down.contains(i))
                .map(|i| get(self.api + i, "/status").and_then(|s| s["leader"].as_u64()))
                .collect();
            match leaders.first() {
                Some(Some(l)) if leaders.iter().all(|x| *x == Some(*l)) && !down.contains(&(*l as u16)) => {
                    Some(*l as u16)
                }
                _ => None,
            }
        })
    }

    fn ctl(&self, action: &str, id: u16) {
        let out = bin()
            .args(["cluster", "ctl", action, &id.to_string(), "--ctl", &format!("127.0.0.1:{}", self.api)])
            .arg("--secret-file")
            .arg(self.dir.join("cluster.secret"))
            .output()
            .unwrap();
        assert!(out.status.success(), "ctl {action} {id}: {}", String::from_utf8_lossy(&out.stdout));
    }

    fn history(&self) -> PathBuf {
        self.dir.join("history.jsonl")
    }

    /// `service-load` for `seconds` against the three nodes, started in the background.
    fn load(&self, seconds: u32) -> Child {
        self.load_with(seconds, &["--ttl", "2s"])
    }

    /// [`Rig::load`] with extra flags.
    fn load_with(&self, seconds: u32, extra: &[&str]) -> Child {
        let endpoints: Vec<String> = (1..=3).map(|i| format!("http://127.0.0.1:{}", self.api + i)).collect();
        spawn(
            bin()
                .args(["service-load", "--endpoints", &endpoints.join(","), "--clients", "4"])
                .args(["--locks", "a,b", "--duration", &format!("{seconds}s")])
                .args(extra)
                .args(["--resource", &format!("http://127.0.0.1:{}", self.resource_port)])
                .arg("--history")
                .arg(self.history())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped()),
        )
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        stop(&mut self.resource);
        stop(&mut self.cluster);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// `verify --history` on `path`, and its report; the report must say how many operations.
fn verify(path: &Path) -> (Output, String) {
    let out = bin().args(["verify", "--history"]).arg(path).output().unwrap();
    let report = text(&out);
    (out, report)
}

fn granted(path: &Path) -> usize {
    std::fs::read_to_string(path).unwrap_or_default().lines().filter(|l| l.contains("\"token\"")).count()
}

#[test]
fn a_recorded_history_passes_verify_and_the_resource_accepted_every_token_in_order() {
    let rig = Rig::start("plain");
    let load = rig.load(2);
    let out = load.wait_with_output().unwrap();
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("acquires granted") && said.contains("resource writes"), "{said}");
    assert!(granted(&rig.history()) >= 4, "a few locks were granted in 2 s: {said}");

    let (out, report) = verify(&rig.history());
    assert_eq!(out.status.code(), Some(0), "{report}");
    assert!(report.contains("OK: linearizable"), "{report}");

    let check =
        bin().args(["fenced-resource", "--check"]).arg(rig.dir.join("writes.jsonl")).output().unwrap();
    let checked = text(&check);
    assert_eq!(check.status.code(), Some(0), "{checked}");
    assert!(checked.contains("never went backwards") && !checked.contains(" 0 writes accepted"), "{checked}");

    tampering_is_caught(&rig);
}

#[test]
fn the_leader_killed_and_restarted_mid_run_leaves_a_linearizable_history() {
    let rig = Rig::start("kill");
    let load = rig.load(4);
    // Once the clients are taking locks, the Raft leader dies, and comes back from its log.
    until(Duration::from_secs(10), "the first grants", || (granted(&rig.history()) >= 2).then_some(()));
    let leader = rig.leader(&[]);
    rig.ctl("kill", leader);
    rig.leader(&[leader]);
    rig.ctl("restart", leader);
    let out = load.wait_with_output().unwrap();
    let said = text(&out);
    assert!(out.status.success(), "{said}");

    let (out, report) = verify(&rig.history());
    assert_eq!(out.status.code(), Some(0), "{report}\n{said}");
    assert!(report.contains("OK: linearizable"), "{report}");
}

/// The check is not vacuous: in `rig`'s history, a grant moved to overlap another holder's is
/// caught.
fn tampering_is_caught(rig: &Rig) {
    let history = std::fs::read_to_string(rig.history()).unwrap();
    let mut lines: Vec<serde_json::Value> =
        history.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    // Two grants of the same lock: the later one is made to return before the earlier one's
    // release was even sent, with a larger token.
    let grants: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i]["op"] == "acquire" && lines[i]["lock"] == "a" && lines[i]["result"].is_object())
        .collect();
    assert!(grants.len() >= 2, "{history}");
    let (first, second) = (grants[0], grants[1]);
    let at = lines[first]["return_ns"].as_u64().unwrap() + 1;
    lines[second]["invoke_ns"] = at.into();
    lines[second]["return_ns"] = (at + 1).into();
    let release = (0..lines.len())
        .find(|&i| {
            i > first
                && lines[i]["op"] == "release"
                && lines[i]["client"] == lines[first]["client"]
                && lines[i]["lock"] == "a"
        })
        .unwrap();
    lines[release]["invoke_ns"] = (at + 10).into();
    lines[release]["return_ns"] = (at + 11).into();
    let tampered = rig.dir.join("tampered.jsonl");
    std::fs::write(&tampered, lines.iter().map(|l| l.to_string() + "\n").collect::<String>()).unwrap();
    let (out, report) = verify(&tampered);
    assert_eq!(out.status.code(), Some(2), "{report}");
    assert!(report.contains("VIOLATED"), "{report}");
}

/// A holder paused past its lease (it stops renewing, then writes through its old token) is
/// refused by the fenced resource once the next holder wrote, and the history stays
/// linearizable: the service handed the lock over only after the lease ended.
#[test]
fn a_holder_paused_past_its_lease_is_refused_by_the_fence() {
    let rig = Rig::start("stale");
    let load = rig.load_with(5, &["--ttl", "1s", "--stale-writers", "1"]);
    let out = load.wait_with_output().unwrap();
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    let refused: u64 = said
        .split("stale writers (paused past their lease): ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no stale-writer tally: {said}"));
    assert!(refused >= 1, "the fence refused no stale write: {said}");

    let (out, report) = verify(&rig.history());
    assert_eq!(out.status.code(), Some(0), "{report}");
    let check =
        bin().args(["fenced-resource", "--check"]).arg(rig.dir.join("writes.jsonl")).output().unwrap();
    assert_eq!(check.status.code(), Some(0), "{}", text(&check));
}
