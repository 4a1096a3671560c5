//! Real nodes: `ringleader cluster` launches five processes on loopback, clients speak HTTP to
//! them, and `ringleader verify` judges the traces. Waits are bounded polls, never fixed sleeps.
//!
//! Every algorithm the issue names runs here: central, ricart-agrawala and token-ring under a
//! lock storm, bully and majority through a leader kill.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::{free_base, spawn};

/// This module's lane of loopback ports ([`common::free_base`]).
const LANE: u16 = 0;

/// Runs `cmd` to completion (started as [`spawn`] does).
fn run(cmd: &mut Command) -> Output {
    spawn(cmd.stdout(Stdio::piped()).stderr(Stdio::piped()))
        .wait_with_output()
        .expect("waiting for ringleader")
}

thread_local! {
    /// Each client thread keeps its connections alive, as a real client would: a new TCP
    /// connection per request churns through ports and, on a loaded machine, meets SYN
    /// retransmissions of a second or more that look like a lost grant.
    static AGENT: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .into();
}

/// One HTTP/1.1 exchange; returns (status, JSON body), or `None` when the node cannot be
/// reached (not listening yet, killed, reset).
fn try_http(port: u16, method: &str, path: &str) -> Option<(u16, serde_json::Value)> {
    let url = format!("http://127.0.0.1:{port}{path}");
    let response = AGENT.with(|a| match method {
        "GET" => a.get(&url).call(),
        "POST" => a.post(&url).header("X-Ringleader", "1").send_empty(),
        "DELETE" => a.delete(&url).header("X-Ringleader", "1").call(),
        other => panic!("the tests speak GET, POST and DELETE, not {other}"),
    });
    let mut response = response.ok()?;
    let status = response.status().as_u16();
    let body = response.body_mut().read_to_string().ok()?;
    Some((status, serde_json::from_str(&body).unwrap_or(serde_json::Value::Null)))
}

/// [`try_http`] to a node that must answer.
fn http(port: u16, method: &str, path: &str) -> (u16, serde_json::Value) {
    try_http(port, method, path)
        .unwrap_or_else(|| panic!("node API on port {port} unreachable: {method} {path}"))
}

/// `DELETE /lock/{handle}` with the handle of `grant` (a `POST /lock` answer).
fn unlock(port: u16, grant: &serde_json::Value) -> (u16, serde_json::Value) {
    let handle = grant["handle"].as_str().unwrap_or_else(|| panic!("a grant has a handle: {grant}"));
    http(port, "DELETE", &format!("/lock/{handle}"))
}

/// Takes the lock at `port` (`POST /lock?timeout=5s`) and releases it; both must answer 200.
fn lock_and_unlock(port: u16) {
    let (code, grant) = http(port, "POST", "/lock?timeout=5s");
    assert_eq!(code, 200, "{grant}");
    let (code, body) = unlock(port, &grant);
    assert_eq!(code, 200, "{body}");
}

struct Cluster {
    child: Child,
    api: u16,
    peer: u16,
    n: u16,
    dir: PathBuf,
}

impl Cluster {
    fn start(algo: &str, n: u16, params: &[&str]) -> Cluster {
        Cluster::start_with(algo, n, params, &[])
    }

    /// [`Cluster::start`] with extra launcher flags.
    fn start_with(algo: &str, n: u16, params: &[&str], flags: &[&str]) -> Cluster {
        let api = free_base(n, LANE);
        let peer = free_base(n, LANE);
        let dir = std::env::temp_dir().join(format!("ringleader-net-{algo}-{}-{api}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_ringleader"));
        cmd.args(["cluster", "--nodes", &n.to_string(), "--algo", algo])
            .args(["--api-base-port", &api.to_string(), "--peer-base-port", &peer.to_string()])
            .arg("--trace-dir")
            .arg(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .args(flags);
        if !flags.contains(&"--no-data-dir") {
            cmd.arg("--data-dir").arg(dir.join("data"));
        }
        for p in params {
            cmd.args(["--param", p]);
        }
        let c = Cluster { child: spawn(&mut cmd), api, peer, n, dir };
        // Every node answers and is connected to every peer.
        c.wait_until("all nodes connected", Duration::from_secs(20), || {
            (1..=n).all(|i| {
                c.status(i)
                    .is_some_and(|s| s["peers"].as_array().unwrap().iter().all(|p| p["connected"] == true))
            })
        });
        c
    }

    fn port(&self, id: u16) -> u16 {
        self.api + id
    }

    fn status(&self, id: u16) -> Option<serde_json::Value> {
        let (code, body) = try_http(self.port(id), "GET", "/status")?;
        (code == 200).then_some(body)
    }

    fn wait_until(&self, what: &str, limit: Duration, mut ok: impl FnMut() -> bool) -> Duration {
        let t0 = Instant::now();
        while !ok() {
            assert!(t0.elapsed() < limit, "timed out after {limit:?} waiting for: {what}");
            std::thread::sleep(Duration::from_millis(10));
        }
        t0.elapsed()
    }

    /// Node `id`'s trace records so far (a partial last line is skipped).
    fn trace(&self, id: u16) -> Vec<serde_json::Value> {
        let text = std::fs::read_to_string(self.dir.join(format!("node-{id}.jsonl"))).unwrap_or_default();
        text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
    }

    fn ctl(&self, action: &str, id: u16) {
        let out = run(Command::new(env!("CARGO_BIN_EXE_ringleader")).args([
            "cluster",
            "ctl",
            action,
            &id.to_string(),
            "--ctl",
            &format!("127.0.0.1:{}", self.api),
        ]));
        assert!(out.status.success(), "ctl {action} {id}: {}", String::from_utf8_lossy(&out.stdout));
    }

    /// Stops the launcher (SIGTERM: nodes stop cleanly) and verifies the traces.
    fn stop_and_verify(mut self, down: &[u16]) -> serde_json::Value {
        // SAFETY: signalling our own child.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let _ = self.child.wait();
        let traces: Vec<PathBuf> = (1..=self.n).map(|i| self.dir.join(format!("node-{i}.jsonl"))).collect();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_ringleader"));
        cmd.args(["verify", "--json"]);
        for d in down {
            cmd.args(["--down", &d.to_string()]);
        }
        let out = run(cmd.args(&traces));
        let report: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|_| panic!("verify: {}", String::from_utf8_lossy(&out.stderr)));
        assert_eq!(
            out.status.code(),
            Some(if report["violations"].as_array().unwrap().is_empty() { 0 } else { 2 })
        );
        // Traces with a violation are kept for a look.
        if report["violations"].as_array().unwrap().is_empty() {
            let _ = std::fs::remove_dir_all(&self.dir);
        } else {
            eprintln!("traces kept in {}", self.dir.display());
        }
        report
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Five nodes, five clients (one per node), 1,000 lock acquisitions in all: `verify` finds
/// no overlap, fencing tokens strictly increase in grant order, every request was served.
fn lock_storm(algo: &str, flags: &[&str]) {
    const PER_CLIENT: usize = 200;
    let c = Cluster::start_with(algo, 5, &[], flags);
    let t0 = Instant::now();
    let clients: Vec<_> = (1..=5u16)
        .map(|id| {
            let port = c.port(id);
            std::thread::spawn(move || {
                let mut grants = Vec::new();
                for _ in 0..PER_CLIENT {
                    let start = Instant::now();
                    let (code, body) = http(port, "POST", "/lock?timeout=20s");
                    assert_eq!(code, 200, "{body}");
                    let fencing = body["fencing"].as_u64().unwrap();
                    let (code, body) = unlock(port, &body);
                    assert_eq!(code, 200, "{body}");
                    assert_eq!(body["released"], fencing);
                    grants.push((fencing, start.elapsed()));
                }
                grants
            })
        })
        .collect();
    let mut all: Vec<(u64, Duration)> = clients.into_iter().flat_map(|t| t.join().unwrap()).collect();
    let elapsed = t0.elapsed();
    let mut tokens: Vec<u64> = all.iter().map(|g| g.0).collect();
    tokens.sort_unstable();
    tokens.dedup();
    assert_eq!(tokens.len(), 5 * PER_CLIENT, "every grant has its own fencing token");
    all.sort_by_key(|g| g.1);
    let p = |q: f64| all[((all.len() as f64 * q) as usize).min(all.len() - 1)].1;
    println!(
        "{algo}: {} acquire→release cycles from 5 clients in {elapsed:?}: {:.0}/s, p50 {:?}, p99 {:?}",
        all.len(),
        all.len() as f64 / elapsed.as_secs_f64(),
        p(0.5),
        p(0.99)
    );
    let report = c.stop_and_verify(&[]);
    assert_eq!(report["violations"], serde_json::json!([]), "{report}");
    assert_eq!(report["operations"], 5 * PER_CLIENT as u64);
    assert_eq!(report["outcome"]["max_concurrent_holders"], 1);
    for p in ["safety", "fencing", "no_starvation"] {
        assert!(report["properties"].as_array().unwrap().iter().any(|x| x == p), "{p} checked");
    }
}

#[test]
fn central_lock_storm() {
    lock_storm("central", &[]);
}

#[test]
fn ricart_agrawala_lock_storm() {
    lock_storm("ricart-agrawala", &[]);
}

#[test]
fn token_ring_lock_storm() {
    // Every hop of the token waits for a durable write at its receiver before the ACK leaves,
    // and under load a write took 44 ms here: more than the default ACK timeout (2·Ttrans +
    // 1 ms = 41 ms), so the sender regenerated a live token and two nodes entered with one
    // fencing token; under the whole suite on two cores, a hop once outlasted 100 ms too
    // (ACK timeout 201 ms). The delay bound must cover the disk (docs/NET.md, "Stable
    // storage"); with no loss in this test, a long one costs nothing.
    lock_storm("token-ring", &["--max-delay", "1s"]);
}

/// The one leader every node in `ids` names, if they agree.
fn agreed_leader(c: &Cluster, ids: &[u16]) -> Option<u64> {
    let ls: Vec<Option<u64>> = ids.iter().map(|&i| c.status(i).and_then(|s| s["leader"].as_u64())).collect();
    ls[0].filter(|_| ls.iter().all(|l| *l == ls[0]))
}

/// What [`kill_the_leader`] saw.
struct Failover {
    /// From the start of the wait until every node named the same leader.
    first: Duration,
    /// The leader killed.
    old: u16,
    /// The leader every live node names afterwards.
    new: u64,
    /// From the kill until every live node named `new`.
    failover: Duration,
}

/// Waits until the `n` nodes of `c` agree on a leader, kills it (SIGKILL) and waits until every
/// live node names the same new leader; no request is made.
fn kill_the_leader(c: &Cluster, n: u16) -> Failover {
    let all: Vec<u16> = (1..=n).collect();
    let first = c.wait_until("every node names the same leader", Duration::from_secs(20), || {
        agreed_leader(c, &all).is_some()
    });
    let old = agreed_leader(c, &all).unwrap() as u16;
    c.ctl("kill", old);
    let killed = Instant::now();
    let live: Vec<u16> = all.iter().copied().filter(|&i| i != old).collect();
    c.wait_until("every live node knows the same new leader", Duration::from_secs(30), || {
        agreed_leader(c, &live).is_some_and(|l| l != old as u64)
    });
    Failover { first, old, new: agreed_leader(c, &live).unwrap(), failover: killed.elapsed() }
}

/// Five nodes elect by themselves; the leader is killed (SIGKILL); with no request at all, the
/// followers' failure detector (on by default on real nodes) notices and a new leader becomes
/// known to every live node. Returns the time from the kill until every live node names the
/// same new leader (polled every 10 ms).
fn leader_failover(algo: &str) -> Duration {
    let c = Cluster::start(algo, 5, &[]);
    let Failover { first, old, new, failover } = kill_the_leader(&c, 5);
    println!(
        "{algo}: first election {first:?}; leader {old} killed, every live node knows leader {new} after {failover:?}"
    );
    // Bully and ring elect the highest live id, before and after the kill (majority: any node
    // a majority voted for).
    if algo != "majority" {
        assert_eq!((old, new), (5, 4), "{algo}");
    }
    // verify judges validity by the algorithm's rule (highest live id for bully).
    let report = c.stop_and_verify(&[old]);
    assert_eq!(report["violations"], serde_json::json!([]), "{report}");
    assert!(report["leader_changes"].as_u64().unwrap() >= 9, "{report}");
    failover
}

#[test]
fn chang_roberts_elects_the_highest_id_over_tcp() {
    let c = Cluster::start_with("chang-roberts", 5, &[], &["--no-elect-at-start"]);
    assert_eq!(http(c.port(2), "POST", "/election").0, 202);
    let t = c.wait_until("every node knows leader 5", Duration::from_secs(20), || {
        (1..=5).all(|i| c.status(i).is_some_and(|s| s["leader"] == 5))
    });
    println!("chang-roberts: every node knows leader 5 within {t:?} of POST /election (polled)");
    assert_eq!(c.status(5).unwrap()["role"], "leader");
    assert_eq!(c.status(1).unwrap()["role"], "follower");
    let report = c.stop_and_verify(&[]);
    assert_eq!(report["violations"], serde_json::json!([]), "{report}");
    assert_eq!(report["leader_changes"], 5);
    // The same algorithm, the same textbook count as in the simulator: initiator id 2 on a
    // ring of 5 ascending ids sends 3 ELECTIONs up to id 5, 5 around the ring, 5 ELECTED.
    let sim = run(Command::new(env!("CARGO_BIN_EXE_ringleader")).args([
        "sim",
        "--algo",
        "chang-roberts",
        "--nodes",
        "5",
        "--initiators",
        "2",
        "--json",
    ]));
    let sim: serde_json::Value = serde_json::from_slice(&sim.stdout).unwrap();
    assert_eq!(sim["messages"]["sent"], 13);
    assert_eq!(report["messages"]["sent"], sim["messages"]["sent"]);
    assert_eq!(report["messages"]["delivered"], 13);
}

/// Without `--no-elect-at-start`, an election that watches no coordinator (Chang-Roberts)
/// still elects by itself once its peers are connected.
#[test]
fn chang_roberts_elects_at_start_without_a_request() {
    let c = Cluster::start("chang-roberts", 5, &[]);
    c.wait_until("every node knows leader 5", Duration::from_secs(20), || {
        (1..=5).all(|i| c.status(i).is_some_and(|s| s["leader"] == 5))
    });
    let report = c.stop_and_verify(&[]);
    assert_eq!(report["violations"], serde_json::json!([]), "{report}");
}

#[test]
fn ring_leader_failover() {
    leader_failover("ring");
}

#[test]
fn bully_leader_failover() {
    leader_failover("bully");
}

#[test]
fn majority_leader_failover() {
    leader_failover("majority");
}

/// The elections' failure detector over TCP: with `detector=phi-accrual` nobody is asked to
/// start an election after the kill — each follower's φ-accrual detector, fed by the real
/// arrival times of the leader's heartbeats (every 20 ms; σ floored at 10 ms so that a loaded
/// machine's scheduling hiccups are not taken for a crash), suspects it on its own.
#[test]
fn phi_accrual_notices_a_killed_leader_over_tcp() {
    for algo in ["bully", "majority"] {
        let c = Cluster::start(algo, 5, &["heartbeat=20ms", "detector=phi-accrual", "min_std=10ms"]);
        let old = kill_the_leader(&c, 5).old;
        let report = c.stop_and_verify(&[old]);
        assert_eq!(report["violations"], serde_json::json!([]), "{algo}: {report}");
        assert_ne!(report["outcome"]["leader"], old as u64, "{algo}: {report}");
    }
}

/// The figures of docs/NET.md: time to a new leader after a kill, over 20 trials each.
/// `cargo test -p ringleader --test it -- --ignored --nocapture net::failover_time_distribution`
#[test]
#[ignore = "a measurement (about a minute); run by hand, see docs/NET.md"]
fn failover_time_distribution() {
    for algo in ["bully", "ring", "majority"] {
        let mut times: Vec<Duration> = (0..20).map(|_| leader_failover(algo)).collect();
        times.sort();
        let pct = |q: f64| times[((times.len() as f64 - 1.0) * q).round() as usize];
        println!(
            "{algo}: time to a new leader over {} trials: p50 {:?}, p99 {:?}, max {:?}",
            times.len(),
            pct(0.5),
            pct(0.99),
            times[times.len() - 1]
        );
    }
}

#[test]
fn api_errors_are_json_4xx() {
    let c = Cluster::start("central", 2, &[]);
    let (code, body) = http(c.port(1), "POST", "/election");
    assert_eq!(code, 409);
    assert!(body["error"].as_str().unwrap().contains("holds no elections"));
    for (method, path, want, fragment) in [
        ("POST", "/lock?timeout=soon", 400, "not a duration"),
        ("DELETE", "/lock", 400, "missing lock handle"),
        ("DELETE", "/lock/0123456789abcdef0123456789abcdef", 403, "holds no lock"),
        ("DELETE", "/lock/nope", 400, "malformed lock handle"),
        ("POST", "/lock?ttl=1ms", 400, "ttl 1ms: give 100ms..=3600s"),
        ("POST", "/lock?timeout=1s&timeout=2s", 400, "given twice"),
    ] {
        let (code, body) = http(c.port(1), method, path);
        assert_eq!(code, want, "{method} {path}: {body}");
        assert!(body["error"].as_str().unwrap().contains(fragment), "{method} {path}: {body}");
    }
    let (code, body) = http(c.port(1), "GET", "/nowhere");
    assert_eq!(code, 404);
    assert!(body["error"].as_str().unwrap().contains("GET /status"));
    // A paused coordinator grants nothing: the client's timeout answers 408; after resume the
    // late grant is released at once and the lock is free again.
    c.ctl("pause", 1);
    let (code, _) = http(c.port(2), "POST", "/lock?timeout=200ms");
    assert_eq!(code, 408);
    c.ctl("resume", 1);
    c.wait_until("the late grant is given back", Duration::from_secs(10), || {
        c.status(2).is_some_and(|s| s["counters"]["lock_releases"] == 1)
    });
    // /events streams the grant and the release as server-sent events.
    let mut sse = TcpStream::connect(("127.0.0.1", c.port(2))).unwrap();
    sse.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(sse, "GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
    let mut seen = String::new();
    let mut buf = [0u8; 4096];
    while !seen.contains("text/event-stream") {
        let n = sse.read(&mut buf).unwrap();
        assert!(n > 0, "stream ended: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    lock_and_unlock(c.port(2));
    while !seen.contains("event: exited") {
        let n = sse.read(&mut buf).unwrap();
        assert!(n > 0, "stream ended: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    assert!(seen.contains("event: entered") && seen.contains(r#""event":"entered","fencing":"#), "{seen}");
    drop(sse);
    let report = c.stop_and_verify(&[]);
    assert_eq!(report["violations"], serde_json::json!([]), "{report}");
    assert_eq!(report["operations"], 2);
}

/// Where `cluster` writes its secret by default (the rule of its `--secret-file` help).
fn default_secret_dir() -> PathBuf {
    let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    match env("XDG_RUNTIME_DIR") {
        Some(run) => run.join("ringleader"),
        None => env("HOME").expect("HOME").join(".cache").join("ringleader"),
    }
}

/// The default secret goes to a directory of this user's alone; one that others may enter
/// (made by someone else first, say) is refused before anything starts.
#[test]
fn the_default_secret_directory_must_be_private() {
    use std::os::unix::fs::PermissionsExt;
    let run_dir = std::env::temp_dir().join(format!("ringleader-xdg-{}", std::process::id()));
    let shared = run_dir.join("ringleader");
    std::fs::create_dir_all(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
    let (api, peer) = (free_base(2, LANE), free_base(2, LANE));
    let out = run(Command::new(env!("CARGO_BIN_EXE_ringleader"))
        .args(["cluster", "--nodes", "2", "--algo", "central", "--no-data-dir"])
        .args(["--api-base-port", &api.to_string(), "--peer-base-port", &peer.to_string()])
        .env("XDG_RUNTIME_DIR", &run_dir));
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("is not a private directory of this user") && err.contains("--secret-file"),
        "{err}"
    );
    assert!(!shared.join(format!("cluster-{api}.secret")).exists());
    std::fs::remove_dir_all(&run_dir).unwrap();
}

/// The name of the second OS user the tests below play the attacker with.
const INTRUDER: &str = "rl-intruder";

/// The uid of a second OS user (made with `useradd` if needed), when this process may make
/// one (it runs as root); `None`, with a message saying the test was skipped, otherwise.
fn intruder(test: &str) -> Option<u32> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        println!("{test}: skipped, it needs root to create a second OS user");
        return None;
    }
    let uid = || {
        let out = Command::new("id").args(["-u", INTRUDER]).output().ok()?;
        String::from_utf8_lossy(&out.stdout).trim().parse::<u32>().ok().filter(|_| out.status.success())
    };
    if uid().is_none() {
        // Another test may be making it at the same time: what counts is that it exists after.
        let _ = Command::new("useradd")
            .args(["--system", "--no-create-home", "--shell", "/usr/sbin/nologin", INTRUDER])
            .stderr(Stdio::null())
            .status();
    }
    let found = uid();
    if found.is_none() {
        println!("{test}: skipped, `useradd {INTRUDER}` did not make a second OS user");
    }
    found
}

/// Runs `script` with `sh` as the second OS user (with that user's groups only).
fn as_intruder(script: &str) -> Output {
    Command::new("runuser").args(["-u", INTRUDER, "--", "sh", "-c", script]).output().expect("runuser runs")
}

/// Issue 31 §4, played by a second OS user on the same host: it can neither plant the default
/// secret directory (where a launcher would then write the secret into its hands), nor hand a
/// node a secret file of its own, nor read a running cluster's secret or its nodes' data.
#[test]
fn another_local_user_can_neither_plant_nor_read_the_secret_or_the_data() {
    use std::os::unix::fs::PermissionsExt;
    let Some(uid) = intruder("another_local_user_can_neither_plant_nor_read_the_secret_or_the_data") else {
        return;
    };
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
    // A runtime directory both users may write to, as /tmp is.
    let shared = std::env::temp_dir().join(format!("ringleader-shared-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&shared);
    std::fs::create_dir_all(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    // 1. It makes the launcher's default secret directory first, private to itself.
    let out = as_intruder(&format!("mkdir -m 700 {}/ringleader", shared.display()));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (api, peer) = (free_base(1, LANE), free_base(1, LANE));
    let out = run(Command::new(env!("CARGO_BIN_EXE_ringleader"))
        .args(["cluster", "--nodes", "1", "--algo", "central", "--no-data-dir"])
        .args(["--api-base-port", &api.to_string(), "--peer-base-port", &peer.to_string()])
        .env("XDG_RUNTIME_DIR", &shared));
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("is not a private directory of this user (owner {uid}, mode 700)")),
        "{err}"
    );
    // 2. It writes a secret file of its own, mode 0600, and offers it to a node.
    let planted = shared.join("planted.secret");
    let hex = ringleader_net::auth::Secret::generate().to_hex();
    let out = as_intruder(&format!("umask 077; echo {hex} > {}", planted.display()));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut node = spawn(
        Command::new(env!("CARGO_BIN_EXE_ringleader"))
            .args(["node", "--id", "1", "--listen", "127.0.0.1:0", "--algo", "central", "--secret-file"])
            .arg(&planted)
            .stdout(Stdio::null())
            .stderr(Stdio::piped()),
    );
    let t0 = Instant::now();
    while node.try_wait().unwrap().is_none() {
        if t0.elapsed() > Duration::from_secs(20) {
            let _ = node.kill();
            panic!("the node started with a secret file of another user's");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = node.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains(&format!("owned by uid {uid}, not by this user (uid 0)")), "{err}");
    std::fs::remove_dir_all(&shared).unwrap();
    // 3. A running cluster: its secret and its nodes' data are the launcher's user's alone.
    let c = Cluster::start("central", 2, &[]);
    lock_and_unlock(c.port(1));
    let secret = default_secret_dir().join(format!("cluster-{}.secret", c.api));
    let data = c.dir.join("data");
    let node = data.join("node-1");
    let state = node.join("state.json");
    c.wait_until("node 1 wrote its state", Duration::from_secs(10), || state.exists());
    assert_eq!((mode(&secret), mode(&data), mode(&node), mode(&state)), (0o600, 0o700, 0o700, 0o600));
    // The trace directory is the test's own (0755): the data directory is what keeps it out.
    assert_eq!(mode(&c.dir) & 0o005, 0o005);
    for (what, script) in [
        ("the secret", format!("cat {}", secret.display())),
        ("the data directory", format!("ls {}", data.display())),
        ("node 1's state", format!("cat {}", state.display())),
    ] {
        let out = as_intruder(&script);
        assert!(
            !out.status.success(),
            "the other user read {what}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
}

#[test]
fn node_flags_are_checked() {
    let run = |args: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_ringleader"));
        cmd.args(args);
        if args[0] == "node" && !args.contains(&"--config") {
            cmd.arg("--insecure");
        }
        run(&mut cmd)
    };
    // No secret, no --insecure: refused.
    let out =
        run(&["node", "--id", "1", "--listen", "127.0.0.1:0", "--algo", "central", "--config", "/dev/null"]);
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1));
    assert!(err.contains("no cluster secret") && err.lines().count() == 1, "{err}");
    let out = run(&["node", "--id", "1", "--listen", "127.0.0.1:0", "--algo", "nope"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown algorithm \"nope\""));
    let out = run(&["node", "--id", "1", "--listen", "127.0.0.1:0", "--algo", "central", "--peer", "2"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("expected ID=HOST:PORT"));
    let out = run(&[
        "node",
        "--id",
        "1",
        "--listen",
        "127.0.0.1:0",
        "--algo",
        "central",
        "--peer",
        "1=127.0.0.1:9",
    ]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("appears twice"));
    let out = run(&["node", "--id", "1", "--listen", "127.0.0.1:0", "--algo", "central", "--param", "x=1"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown parameter `x`"));
    let out = run(&["verify", "/nonexistent.jsonl"]);
    assert_eq!(out.status.code(), Some(1));
    let file = std::env::temp_dir().join(format!("ringleader-node-{}.toml", std::process::id()));
    std::fs::write(&file, "id = 1\nlisten = \"127.0.0.1:0\"\nalgorithm = \"central\"\nlisen = 2\n").unwrap();
    // (the unknown field is reported before the missing secret)
    let out = run(&["node", "--config", file.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1));
    assert!(err.contains("unknown field `lisen`") && err.lines().count() == 1, "{err}");
    let _ = std::fs::remove_file(&file);
    // One detector at a time: `detector=none` with a heartbeat period is contradictory.
    let out = run(&[
        "node",
        "--id",
        "1",
        "--listen",
        "127.0.0.1:0",
        "--algo",
        "bully",
        "--param",
        "detector=none",
        "--param",
        "heartbeat=5ms",
    ]);
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1));
    assert!(err.contains("`heartbeat` contradicts detector=none") && err.lines().count() == 1, "{err}");
}

/// The timeout coordinator's flaw on real processes: `central-timeout` re-grants when the holder is silent,
/// and a holder that is only paused (SIGSTOP) overlaps with the next one. `verify` finds it.
#[test]
fn central_timeout_paused_holder_overlaps_and_verify_finds_it() {
    let c = Cluster::start("central-timeout", 3, &["timeout=100ms"]);
    let (code, first) = http(c.port(2), "POST", "/lock?timeout=5s");
    assert_eq!(code, 200, "{first}");
    c.ctl("pause", 2);
    let (code, second) = http(c.port(3), "POST", "/lock?timeout=10s");
    assert_eq!(code, 200, "the coordinator re-granted after 100 ms of silence: {second}");
    assert!(second["fencing"].as_u64() > first["fencing"].as_u64());
    c.ctl("resume", 2);
    assert_eq!(unlock(c.port(2), &first).0, 200, "the paused holder still believed it held");
    assert_eq!(unlock(c.port(3), &second).0, 200);
    let report = c.stop_and_verify(&[]);
    let violated: Vec<&str> =
        report["violations"].as_array().unwrap().iter().map(|v| v[0].as_str().unwrap()).collect();
    assert_eq!(violated, ["safety"], "{report}");
    assert_eq!(report["outcome"]["max_concurrent_holders"], 2);
}

/// A killed and restarted node is redialled by its peers (reconnection with backoff) and serves
/// locks again; `verify` sees the restart as a crash and a recovery.
#[test]
fn a_restarted_node_is_reconnected_and_serves_again() {
    let c = Cluster::start("central", 3, &[]);
    lock_and_unlock(c.port(3));
    c.ctl("kill", 3);
    c.wait_until("nodes 1 and 2 see node 3 gone", Duration::from_secs(10), || {
        (1..=2).all(|i| {
            c.status(i).is_some_and(|s| {
                s["peers"].as_array().unwrap().iter().any(|p| p["id"] == 3 && p["connected"] == false)
            })
        })
    });
    c.ctl("restart", 3);
    c.wait_until("everyone reconnected", Duration::from_secs(20), || {
        (1..=3).all(|i| {
            c.status(i).is_some_and(|s| s["peers"].as_array().unwrap().iter().all(|p| p["connected"] == true))
        })
    });
    assert!(c.status(1).unwrap()["counters"]["reconnects"].as_u64().unwrap() >= 1);
    let (code, body) = http(c.port(3), "POST", "/lock?timeout=5s");
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["fencing"], 2, "the coordinator (id 1) kept its counter");
    assert_eq!(unlock(c.port(3), &body).0, 200);
    let report = c.stop_and_verify(&[]);
    assert_eq!(report["violations"], serde_json::json!([]), "{report}");
    assert_eq!(report["restarts"], 1);
    assert_eq!(report["operations"], 2);
}

/// A stranger on a node's peer port: says hello as `sender`, then sends `msgs` as envelopes.
/// Returns once the node has closed the connection or 5 s passed; the node must not deliver.
fn forge<M: serde::Serialize>(c: &Cluster, to: u16, algorithm: &str, sender: u64, msgs: &[M]) {
    use ringleader_net::wire::{self, Envelope, Hello};
    let mut s = TcpStream::connect(("127.0.0.1", c.peer + to)).expect("peer port");
    let frame = |b: &[u8]| [&(b.len() as u32).to_be_bytes()[..], b].concat();
    let _ = s.write_all(&frame(&wire::encode(&Hello::new(algorithm, sender))));
    for (i, m) in msgs.iter().enumerate() {
        let env =
            Envelope { msg_id: (sender << 40) | i as u64, lamport: 1, vector: vec![0; c.n as usize], msg: m };
        let _ = s.write_all(&frame(&wire::encode(&env)));
    }
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut sink = Vec::new();
    let _ = s.read_to_end(&mut sink);
}

fn counter(c: &Cluster, id: u16, name: &str) -> u64 {
    c.status(id).and_then(|s| s["counters"][name].as_u64()).unwrap_or(0)
}

/// A forged COORDINATOR naming id 99 from a connection claiming to be node 3: refused (the
/// stranger cannot answer the challenge), counted, and nobody follows 99.
#[test]
fn a_forged_coordinator_for_a_stranger_is_refused() {
    use ringleader_algorithms::election::bully::Msg;
    let c = Cluster::start("bully", 3, &[]);
    c.wait_until("every node follows 3", Duration::from_secs(20), || {
        (1..=3).all(|i| c.status(i).is_some_and(|s| s["leader"] == 3))
    });
    forge(&c, 1, "bully", 3, &[Msg::Coordinator(99), Msg::Heartbeat(99)]);
    c.wait_until("node 1 counts the failed proof", Duration::from_secs(20), || {
        counter(&c, 1, "auth_failures") >= 1
    });
    assert_eq!(c.status(1).unwrap()["leader"], 3);
    let report = c.stop_and_verify(&[]);
    assert_eq!(report["violations"], serde_json::json!([]), "{report}");
}

/// A `central` cluster of 3 where node 3 holds the lock (`first`, its grant) and a client of
/// node 2 waits for it (at most 3 s; `waiter` answers with what it got).
fn three_holds_two_waits() -> (Cluster, serde_json::Value, std::thread::JoinHandle<(u16, serde_json::Value)>)
{
    let c = Cluster::start("central", 3, &[]);
    let (code, first) = http(c.port(3), "POST", "/lock?timeout=5s");
    assert_eq!(code, 200, "{first}");
    let port2 = c.port(2);
    let waiter = std::thread::spawn(move || http(port2, "POST", "/lock?timeout=3s"));
    c.wait_until("node 2 waits", Duration::from_secs(20), || {
        c.status(2).is_some_and(|s| s["role"] == "waiting")
    });
    (c, first, waiter)
}

/// Forged RELEASE (claiming to be the holder) and forged GRANT with fencing token 2^32-1
/// (claiming to be the coordinator): both refused; the lock keeps one holder and its tokens.
#[test]
fn forged_release_and_grant_are_refused() {
    use ringleader_algorithms::mutex::central::Msg;
    // Node 2 waits for the lock while a stranger claims to be node 3 releasing it and node 1
    // (the coordinator) granting it to node 2.
    let (c, first, waiter) = three_holds_two_waits();
    forge(&c, 1, "central", 3, &[Msg::Release]);
    forge(&c, 2, "central", 1, &[Msg::Grant { fencing: u32::MAX as u64 }]);
    c.wait_until("both forgeries counted", Duration::from_secs(20), || {
        counter(&c, 1, "auth_failures") >= 1 && counter(&c, 2, "auth_failures") >= 1
    });
    let (code, body) = waiter.join().unwrap();
    assert_ne!(code, 200, "node 2 got the lock while node 3 held it: {body}");
    assert_eq!(c.status(2).unwrap()["holding"], serde_json::Value::Null);
    assert_eq!(unlock(c.port(3), &first).0, 200);
    let (code, body) = http(c.port(1), "POST", "/lock?timeout=5s");
    assert_eq!(code, 200, "{body}");
    assert!(body["fencing"].as_u64().unwrap() < 10, "the forged token jammed nothing: {body}");
    assert_eq!(unlock(c.port(1), &body).0, 200);
    let report = c.stop_and_verify(&[]);
    assert_eq!(report["violations"], serde_json::json!([]), "{report}");
}

/// The control channel obeys only commands carrying the secret's HMAC.
#[test]
fn an_unauthenticated_control_command_is_refused() {
    let c = Cluster::start("central", 2, &[]);
    let mut s = TcpStream::connect(("127.0.0.1", c.api)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"kill 2\n").unwrap();
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    assert!(answer.contains("error: not authenticated"), "{answer}");
    assert!(c.status(2).is_some(), "node 2 still runs");
    c.ctl("kill", 2); // `cluster ctl` reads the secret file
    c.wait_until("node 2 is down", Duration::from_secs(10), || c.status(2).is_none());
}

/// Reads one line (up to `\n`) from a control connection.
fn ctl_line(s: &mut TcpStream) -> String {
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while s.read(&mut byte).unwrap_or(0) == 1 && byte[0] != b'\n' {
        line.push(byte[0]);
    }
    String::from_utf8_lossy(&line).to_string()
}

/// The resident memory of process `pid`, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("the process runs");
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).expect("VmRSS");
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Issue 31 §4: what a stranger can do to the launcher's control port. An endless line is
/// refused after 4 KiB (the launcher used to read 400 MiB of one in 1.7 s) and costs it no
/// memory; a forged HMAC obeys nothing; a ninth connection while eight are open is refused at
/// once; a connection that says nothing is closed within seconds; `cluster ctl` still works.
#[test]
fn the_control_port_bounds_what_a_stranger_can_send_and_hold() {
    let c = Cluster::start_with("central", 1, &[], &["--no-data-dir"]);
    let ctl = ("127.0.0.1", c.api);
    let connect = || {
        let s = TcpStream::connect(ctl).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.set_write_timeout(Some(Duration::from_secs(10))).unwrap();
        s
    };
    let before = rss_kib(c.child.id());
    // An endless line: the launcher stops reading and closes; our writes fail long before the
    // 256 MiB we would send.
    let mut s = connect();
    assert!(ctl_line(&mut s).starts_with("ringleader-ctl "));
    let chunk = vec![b'k'; 1 << 20];
    let mut sent = 0usize;
    let refused = loop {
        match s.write(&chunk) {
            Ok(n) => sent += n,
            Err(e) => {
                assert!(
                    !matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut),
                    "{e}"
                );
                break true;
            }
        }
        if sent >= 256 << 20 {
            break false;
        }
    };
    assert!(refused && sent < 64 << 20, "the launcher took {sent} bytes of one line");
    let grown = rss_kib(c.child.id()).saturating_sub(before);
    assert!(grown < 16 << 10, "the launcher grew by {grown} KiB");
    // A command with a forged HMAC.
    let mut s = connect();
    ctl_line(&mut s);
    s.write_all(format!("{} kill 1\n", "00".repeat(32)).as_bytes()).unwrap();
    assert!(ctl_line(&mut s).contains("error: not authenticated"));
    assert!(c.status(1).is_some(), "node 1 still runs");
    // Eight connections that say nothing fill the control port; a ninth is refused at once.
    let mut held: Vec<TcpStream> = (0..8).map(|_| connect()).collect();
    for s in &mut held {
        assert!(ctl_line(s).starts_with("ringleader-ctl "));
    }
    let t0 = Instant::now();
    let answer = ctl_line(&mut connect());
    assert!(answer.contains("8 control connections are open already"), "{answer:?}");
    assert!(t0.elapsed() < Duration::from_secs(2), "refused after {:?}", t0.elapsed());
    // A silent connection holds its slot for seconds, not for good.
    let answer = ctl_line(&mut held[0]);
    assert!(answer.contains("went silent"), "{answer:?}");
    assert!(t0.elapsed() < Duration::from_secs(8), "closed after {:?}", t0.elapsed());
    drop(held);
    c.wait_until("cluster ctl is served again", Duration::from_secs(10), || {
        run(Command::new(env!("CARGO_BIN_EXE_ringleader")).args([
            "cluster",
            "ctl",
            "status",
            "--ctl",
            &format!("127.0.0.1:{}", c.api),
        ]))
        .status
        .success()
    });
}

/// A loopback API refuses a request whose Host is another site (DNS rebinding).
#[test]
fn a_foreign_host_header_is_refused() {
    let c = Cluster::start("central", 2, &[]);
    let mut s = TcpStream::connect(("127.0.0.1", c.port(1))).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(
        b"POST /lock HTTP/1.1\r\nHost: evil.example\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 421"), "{answer}");
    assert_eq!(c.status(1).unwrap()["holding"], serde_json::Value::Null);
    assert_eq!(counter(&c, 1, "lock_grants"), 0);
}

/// An SSE subscription read from a raw socket: `GET /events` with optional headers.
struct Sse {
    socket: TcpStream,
    seen: String,
}

impl Sse {
    fn open(port: u16, headers: &str) -> Sse {
        let mut socket = TcpStream::connect(("127.0.0.1", port)).unwrap();
        socket.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        write!(socket, "GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n{headers}\r\n").unwrap();
        let mut sse = Sse { socket, seen: String::new() };
        sse.read_until("text/event-stream");
        sse
    }

    /// Reads until `what` has been received (bounded by the socket's read timeout).
    fn read_until(&mut self, what: &str) {
        let mut buf = [0u8; 4096];
        while !self.seen.contains(what) {
            let n = self
                .socket
                .read(&mut buf)
                .unwrap_or_else(|e| panic!("waiting for {what:?}: {e}: {}", self.seen));
            assert!(n > 0, "stream ended before {what:?}: {}", self.seen);
            self.seen.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    }

    /// The (id, event name, data) of every event received so far.
    fn events(&self) -> Vec<(Option<u64>, String, serde_json::Value)> {
        let body = self.seen.split_once("\r\n\r\n").map_or("", |b| b.1);
        let mut out = Vec::new();
        for block in body.split("\n\n") {
            let (mut id, mut name, mut data) = (None, None, None);
            for line in block.lines() {
                // (chunked transfer encoding puts chunk sizes on their own lines)
                if let Some(v) = line.strip_prefix("id: ") {
                    id = v.trim().parse().ok();
                } else if let Some(v) = line.strip_prefix("event: ") {
                    name = Some(v.trim().to_string());
                } else if let Some(v) = line.strip_prefix("data: ") {
                    data = serde_json::from_str(v.trim()).ok();
                }
            }
            if let (Some(name), Some(data)) = (name, data) {
                out.push((id, name, data));
            }
        }
        out
    }
}

/// Issue 13 §4: the clients of one node queue in arrival order instead of being refused. One
/// client holds the lock while eight more arrive one after another (each starts once the node
/// counts the previous one as queued); on release they are served in exactly that order, one
/// grant each, fencing tokens strictly increasing. Then fifty clients of one node ask at the
/// same moment and every one of them gets the lock in turn; `verify` finds one holder at a
/// time across the cluster.
#[test]
fn clients_of_one_node_queue_in_fifo_order() {
    let c = Cluster::start("central", 3, &[]);
    let port = c.port(2);
    let (code, first) = http(port, "POST", "/lock?timeout=5s");
    assert_eq!(code, 200, "{first}");
    let clients: Vec<_> = (1..=8usize)
        .map(|k| {
            let client = std::thread::spawn(move || {
                let (code, grant) = http(port, "POST", "/lock?timeout=20s");
                assert_eq!(code, 200, "client {k}: {grant}");
                let (code, body) = unlock(port, &grant);
                assert_eq!(code, 200, "client {k}: {body}");
                (k, grant["fencing"].as_u64().unwrap())
            });
            c.wait_until(&format!("client {k} is queued"), Duration::from_secs(20), || {
                c.status(2).is_some_and(|s| s["clients_waiting"] == k as u64)
            });
            client
        })
        .collect();
    assert_eq!(c.status(2).unwrap()["role"], "holder");
    assert_eq!(unlock(port, &first).0, 200);
    let mut served: Vec<(usize, u64)> = clients.into_iter().map(|t| t.join().unwrap()).collect();
    served.sort_by_key(|s| s.1);
    let order: Vec<usize> = served.iter().map(|s| s.0).collect();
    assert_eq!(order, (1..=8).collect::<Vec<_>>(), "grants in arrival order: {served:?}");
    assert!(served[0].1 > first["fencing"].as_u64().unwrap());
    assert!(served.windows(2).all(|w| w[0].1 < w[1].1), "{served:?}");
    // Fifty at once (the old API answered 49 of them 409).
    let burst: Vec<_> = (0..50)
        .map(|_| {
            std::thread::spawn(move || {
                let (code, grant) = http(port, "POST", "/lock?timeout=25s");
                assert_eq!(code, 200, "{grant}");
                assert_eq!(unlock(port, &grant).0, 200);
                grant["fencing"].as_u64().unwrap()
            })
        })
        .collect();
    let mut tokens: Vec<u64> = burst.into_iter().map(|t| t.join().unwrap()).collect();
    tokens.sort_unstable();
    tokens.dedup();
    assert_eq!(tokens.len(), 50, "fifty grants, fifty tokens");
    let report = c.stop_and_verify(&[]);
    assert_eq!(report["violations"], serde_json::json!([]), "{report}");
    assert_eq!(report["operations"], 59);
    assert_eq!(report["outcome"]["max_concurrent_holders"], 1);
}

/// Issue 13 §4 and §5: a grant carries a lease. A keep-alive renews it; a holder that stops
/// renewing loses the lock — the node releases it through the algorithm and says so on
/// `/events` (`lock_lost`) — and its handle no longer releases anything. Events carry ids,
/// name nodes by id, and a client that reconnects with `Last-Event-ID` gets what it missed.
#[test]
fn a_lease_not_renewed_loses_the_lock_and_an_event_says_so() {
    let c = Cluster::start("central", 3, &[]);
    let mut sse = Sse::open(c.port(2), "");
    let (code, grant) = http(c.port(2), "POST", "/lock?timeout=5s&ttl=1s");
    assert_eq!(code, 200, "{grant}");
    assert_eq!(grant["ttl_ms"], 1000);
    let handle = grant["handle"].as_str().unwrap().to_string();
    assert_eq!(handle.len(), 32);
    let (code, renewed) = http(c.port(2), "POST", &format!("/lock/{handle}/keepalive"));
    assert_eq!(code, 200, "{renewed}");
    assert_eq!(renewed["fencing"], grant["fencing"]);
    let (code, body) = http(c.port(2), "POST", "/lock/0123456789abcdef0123456789abcdef/keepalive");
    assert_eq!(code, 403, "{body}");
    // Node 3 waits; no more keep-alives: node 2's lease runs out and node 3 is served.
    let (code, next) = http(c.port(3), "POST", "/lock?timeout=10s");
    assert_eq!(code, 200, "{next}");
    assert!(next["fencing"].as_u64() > grant["fencing"].as_u64());
    sse.read_until("event: lock_lost");
    let events = sse.events();
    let lost = events.iter().find(|e| e.1 == "lock_lost").unwrap();
    assert_eq!(lost.2["fencing"], grant["fencing"], "{lost:?}");
    assert_eq!(lost.2["id"], 2);
    assert!(lost.2["reason"].as_str().unwrap().contains("no keep-alive"), "{lost:?}");
    let ids: Vec<u64> = events.iter().map(|e| e.0.expect("every event has an id")).collect();
    assert!(ids.windows(2).all(|w| w[1] == w[0] + 1), "{ids:?}");
    let (code, body) = unlock(c.port(2), &grant);
    assert_eq!(code, 403, "the expired handle releases nothing: {body}");
    assert_eq!(unlock(c.port(3), &next).0, 200);
    drop(sse);
    // Resume after the first event: everything since is replayed, with the same ids.
    let mut resumed = Sse::open(c.port(2), &format!("Last-Event-ID: {}\r\n", ids[0]));
    resumed.read_until("event: lock_lost");
    let replay: Vec<u64> = resumed.events().iter().filter_map(|e| e.0).collect();
    assert_eq!(replay[..ids.len() - 1], ids[1..], "replayed ids");
    // The coordinator's events name the requester by id, not by position.
    let mut coordinator = Sse::open(c.port(1), "Last-Event-ID: 0\r\n");
    coordinator.read_until("event: granted");
    let granted: Vec<u64> = coordinator
        .events()
        .iter()
        .filter(|e| e.1 == "granted")
        .map(|e| e.2["node"].as_u64().unwrap())
        .collect();
    assert_eq!(granted[0], 2, "node 2 (position 1) was granted first: {granted:?}");
    let report = c.stop_and_verify(&[]);
    assert_eq!(report["violations"], serde_json::json!([]), "{report}");
}

/// Issue 13 §4: when a peer the algorithm needs is gone, a waiting client is told which peer
/// and since when instead of waiting out its timeout. Ricart-Agrawala needs every peer's
/// permission: node 2 holds the lock, a client of node 1 waits, node 2 is killed.
#[test]
fn a_waiting_client_is_told_which_peer_is_gone() {
    let c = Cluster::start("ricart-agrawala", 3, &[]);
    let (code, held) = http(c.port(2), "POST", "/lock?timeout=5s");
    assert_eq!(code, 200, "{held}");
    let port1 = c.port(1);
    let waiter = std::thread::spawn(move || {
        let t0 = Instant::now();
        let answer = http(port1, "POST", "/lock?timeout=25s");
        (answer, t0.elapsed())
    });
    c.wait_until("a client of node 1 waits", Duration::from_secs(20), || {
        c.status(1).is_some_and(|s| s["clients_waiting"] == 1)
    });
    c.ctl("kill", 2);
    let ((code, body), waited) = waiter.join().unwrap();
    assert_eq!(code, 503, "{body}");
    assert_eq!(body["peer"], 2, "{body}");
    assert!(body["since_ns"].as_u64().unwrap() > 0, "{body}");
    let error = body["error"].as_str().unwrap();
    assert!(error.contains("needs every peer's permission") && error.contains("peer 2"), "{error}");
    assert!(waited < Duration::from_secs(20), "answered at once, not by the timeout: {waited:?}");
    // A new client is told at once, too.
    let (code, body) = http(c.port(1), "POST", "/lock?timeout=25s");
    assert_eq!(code, 503, "{body}");
    assert_eq!(body["peer"], 2);
}

/// Issue 13 §5: `/metrics` in the OpenMetrics text format, checked line by line: every sample
/// belongs to a family announced with HELP and TYPE, counter samples end in `_total`, the lock
/// wait and hold histograms count the grants, the term, leader and holder gauges are there, and
/// the exposition ends with `# EOF`. `/health` and `/ready` answer.
#[test]
fn metrics_follow_the_prometheus_conventions() {
    let c = Cluster::start("central", 2, &[]);
    for _ in 0..3 {
        lock_and_unlock(c.port(2));
    }
    assert_eq!(http(c.port(2), "GET", "/health"), (200, serde_json::json!({"id": 2, "status": "alive"})));
    let (code, ready) = http(c.port(2), "GET", "/ready");
    assert_eq!(code, 200, "{ready}");
    assert_eq!(ready["ready"], true);
    let url = format!("http://127.0.0.1:{}/metrics", c.port(2));
    let mut response = AGENT.with(|a| a.get(&url).call()).unwrap();
    assert!(
        response
            .headers()
            .get("content-type")
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("application/openmetrics-text"),
    );
    let text = response.body_mut().read_to_string().unwrap();
    assert!(text.ends_with("# EOF\n"), "{text}");
    let mut types: std::collections::BTreeMap<String, String> = Default::default();
    let mut helped = std::collections::BTreeSet::new();
    let mut samples: std::collections::BTreeMap<String, f64> = Default::default();
    for line in text.lines().filter(|l| *l != "# EOF") {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (family, help) = rest.split_once(' ').unwrap();
            assert!(!help.is_empty() && help.ends_with('.'), "{line}");
            assert!(helped.insert(family.to_string()), "HELP twice: {line}");
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (family, kind) = rest.split_once(' ').unwrap();
            assert!(helped.contains(family), "TYPE before HELP: {line}");
            assert!(["counter", "gauge", "histogram"].contains(&kind), "{line}");
            assert!(types.insert(family.to_string(), kind.to_string()).is_none(), "TYPE twice: {line}");
        } else if line.starts_with("# UNIT ") {
        } else {
            let (series, value) = line.rsplit_once(' ').unwrap();
            let value: f64 = value.parse().unwrap_or_else(|_| panic!("not a number: {line}"));
            let name = series.split('{').next().unwrap();
            assert!(series.contains("id=\"2\"") && series.contains("algorithm=\"central\""), "{line}");
            let (family, kind) = types
                .iter()
                .filter(|(f, _)| name.starts_with(f.as_str()))
                .max_by_key(|(f, _)| f.len())
                .unwrap_or_else(|| panic!("sample of no announced family: {line}"));
            let suffix = &name[family.len()..];
            match kind.as_str() {
                "counter" => assert_eq!(suffix, "_total", "{line}"),
                "gauge" => assert_eq!(suffix, "", "{line}"),
                _ => assert!(["_bucket", "_sum", "_count"].contains(&suffix), "{line}"),
            }
            *samples.entry(name.to_string()).or_default() += if suffix == "_bucket" { 0.0 } else { value };
        }
    }
    for (family, kind) in [
        ("ringleader_lock_grants", "counter"),
        ("ringleader_messages_sent", "counter"),
        ("ringleader_leader", "gauge"),
        ("ringleader_term", "gauge"),
        ("ringleader_lock_holder", "gauge"),
        ("ringleader_lock_wait_seconds", "histogram"),
        ("ringleader_lock_hold_seconds", "histogram"),
    ] {
        assert_eq!(types.get(family).map(String::as_str), Some(kind), "{family}: {text}");
    }
    assert_eq!(samples["ringleader_lock_grants_total"], 3.0, "{text}");
    assert_eq!(samples["ringleader_lock_wait_seconds_count"], 3.0, "{text}");
    assert_eq!(samples["ringleader_lock_hold_seconds_count"], 3.0, "{text}");
    assert_eq!(samples["ringleader_lock_holder"], 0.0, "{text}");
}

/// [`try_http`] with `Authorization: Bearer token`.
fn try_http_with_token(port: u16, method: &str, path: &str, token: &str) -> Option<(u16, serde_json::Value)> {
    let url = format!("http://127.0.0.1:{port}{path}");
    let bearer = format!("Bearer {token}");
    let response = AGENT.with(|a| match method {
        "GET" => a.get(&url).header("Authorization", &bearer).call(),
        "POST" => a.post(&url).header("Authorization", &bearer).header("X-Ringleader", "1").send_empty(),
        "DELETE" => a.delete(&url).header("Authorization", &bearer).header("X-Ringleader", "1").call(),
        other => panic!("the tests speak GET, POST and DELETE, not {other}"),
    });
    let mut response = response.ok()?;
    let status = response.status().as_u16();
    let body = response.body_mut().read_to_string().ok()?;
    Some((status, serde_json::from_str(&body).unwrap_or(serde_json::Value::Null)))
}

/// Issue 13 §5 from the command line: `cluster --api-token-file` gives every node the token;
/// without it a request gets 401 (`/health` excepted), with it the API serves; `node` refuses
/// a non-loopback API without a token or `--insecure`.
#[test]
fn the_api_token_reaches_every_node_and_an_open_api_needs_one() {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join(format!("ringleader-token-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let token = "t0k3n-0123456789abcdef";
    let token_file = dir.join("api.token");
    crate::common::write_private(&token_file, format!("{token}\n"));
    let (api, peer) = (free_base(2, LANE), free_base(2, LANE));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ringleader"));
    cmd.args(["cluster", "--nodes", "2", "--algo", "central"])
        .args(["--api-base-port", &api.to_string(), "--peer-base-port", &peer.to_string()])
        .arg("--api-token-file")
        .arg(&token_file)
        .arg("--data-dir")
        .arg(dir.join("data"))
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let c = Cluster { child: spawn(&mut cmd), api, peer, n: 2, dir: dir.clone() };
    c.wait_until("both nodes ready", Duration::from_secs(20), || {
        (1..=2).all(|i| {
            try_http_with_token(c.port(i), "GET", "/ready", token).is_some_and(|(code, _)| code == 200)
        })
    });
    assert_eq!(http(c.port(1), "GET", "/health").0, 200, "/health needs no token");
    let (code, body) = http(c.port(1), "GET", "/status");
    assert_eq!(code, 401, "{body}");
    assert!(body["error"].as_str().unwrap().contains("Authorization: Bearer TOKEN"), "{body}");
    let (code, body) = try_http_with_token(c.port(2), "GET", "/status", "t0k3n-0123456789abcdeX").unwrap();
    assert_eq!(code, 401, "{body}");
    let (code, grant) = try_http_with_token(c.port(2), "POST", "/lock?timeout=5s", token).unwrap();
    assert_eq!(code, 200, "{grant}");
    let path = format!("/lock/{}", grant["handle"].as_str().unwrap());
    assert_eq!(try_http_with_token(c.port(2), "DELETE", &path, token).unwrap().0, 200);
    drop(c);
    // A non-loopback API without a token.
    let secret = dir.join("cluster.secret");
    std::fs::write(&secret, "ab".repeat(32)).unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = run(Command::new(env!("CARGO_BIN_EXE_ringleader"))
        .args(["node", "--id", "1", "--listen", "127.0.0.1:0", "--algo", "central", "--api", "0.0.0.0:0"])
        .arg("--secret-file")
        .arg(&secret));
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("is not a loopback address") && err.lines().count() == 1, "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 13 §4, the coordinator case: `central` needs its coordinator (id 1, position 0); once
/// it is killed, a client of another node is told so at once instead of waiting 25 s.
#[test]
fn a_client_is_told_the_coordinator_is_gone() {
    let c = Cluster::start("central", 3, &[]);
    lock_and_unlock(c.port(3));
    c.ctl("kill", 1);
    c.wait_until("node 3 sees the coordinator gone", Duration::from_secs(10), || {
        c.status(3).is_some_and(|s| {
            s["peers"].as_array().unwrap().iter().any(|p| p["id"] == 1 && p["connected"] == false)
        })
    });
    let t0 = Instant::now();
    let (code, body) = http(c.port(3), "POST", "/lock?timeout=25s");
    assert_eq!(code, 503, "{body}");
    assert_eq!(body["peer"], 1, "{body}");
    assert!(body["error"].as_str().unwrap().contains("needs the coordinator's grant"), "{body}");
    assert!(t0.elapsed() < Duration::from_secs(20));
    // Node 2 never used the coordinator's connection since it was killed: it knows too.
    let (code, body) = http(c.port(2), "POST", "/lock?timeout=25s");
    assert_eq!(code, 503, "{body}");
    let report = c.stop_and_verify(&[1]);
    assert_eq!(report["violations"], serde_json::json!([]), "{report}");
}

/// After a restart of the `central` coordinator, fencing tokens go on increasing: the
/// coordinator recovers its grant counter from its data directory (with an empty memory it
/// issued token 1 a second time).
#[test]
fn a_restarted_central_coordinator_never_repeats_a_fencing_token() {
    let c = Cluster::start("central", 3, &[]);
    let take = |id: u16| {
        let (code, body) = http(c.port(id), "POST", "/lock?timeout=5s");
        assert_eq!(code, 200, "{body}");
        assert_eq!(unlock(c.port(id), &body).0, 200);
        body["fencing"].as_u64().unwrap()
    };
    let before: Vec<u64> = (0..3).map(|_| take(2)).collect();
    assert!(counter(&c, 1, "state_writes") >= 3, "the coordinator wrote its counter");
    c.ctl("restart", 1);
    c.wait_until("everyone reconnected to the coordinator", Duration::from_secs(20), || {
        (1..=3).all(|i| {
            c.status(i).is_some_and(|s| s["peers"].as_array().unwrap().iter().all(|p| p["connected"] == true))
        })
    });
    let after: Vec<u64> = (0..3).map(|_| take(3)).collect();
    println!("central: tokens {before:?} before the coordinator's restart, {after:?} after");
    let all: Vec<u64> = before.iter().chain(&after).copied().collect();
    assert!(all.windows(2).all(|w| w[0] < w[1]), "fencing tokens strictly increase: {all:?}");
    let report = c.stop_and_verify(&[]);
    assert_eq!(report["violations"], serde_json::json!([]), "{report}");
    assert_eq!((report["crashes"].as_u64(), report["restarts"].as_u64()), (Some(1), Some(1)), "{report}");
}

/// Every (voter, term, candidate) in the traces: a granted VOTE sent, or a candidate's own vote
/// (it sent REQUEST_VOTE for the term). Positions, as in the traces.
fn votes(c: &Cluster) -> std::collections::BTreeMap<(u64, u64), std::collections::BTreeSet<u64>> {
    let mut votes: std::collections::BTreeMap<_, std::collections::BTreeSet<u64>> = Default::default();
    for id in 1..=c.n {
        for r in c.trace(id).iter().filter(|r| r["kind"] == "send") {
            let (node, peer) = (r["node"].as_u64().unwrap(), r["peer"].as_u64().unwrap());
            if let Some(v) = r["msg"].get("Vote").filter(|v| v["granted"] == true) {
                votes.entry((node, v["term"].as_u64().unwrap())).or_default().insert(peer);
            } else if let Some(v) = r["msg"].get("RequestVote") {
                votes.entry((node, v["term"].as_u64().unwrap())).or_default().insert(node);
            }
        }
    }
    votes
}

/// A `majority` node that voted in a term, then was killed and restarted, refuses a second
/// candidate's REQUEST_VOTE in that term: its term and vote come back from its data directory.
/// (With an empty memory it took the term from the request and voted again.) The second
/// candidate is a connection on node 2's peer port that says it is node 3 (`--insecure`).
#[test]
fn majority_never_votes_twice_in_a_term_across_a_restart() {
    use ringleader_algorithms::election::majority::Msg;
    use ringleader_net::wire::{self, Envelope, Hello};
    let c = Cluster::start_with("majority", 3, &["detector=none"], &["--no-elect-at-start", "--insecure"]);
    assert_eq!(http(c.port(1), "POST", "/election").0, 202);
    c.wait_until("every node follows 1", Duration::from_secs(20), || {
        (1..=3).all(|i| c.status(i).is_some_and(|s| s["leader"] == 1))
    });
    c.ctl("restart", 2);
    c.wait_until("node 2 is back", Duration::from_secs(20), || c.status(2).is_some());
    let sent_votes =
        |c: &Cluster| c.trace(2).iter().filter(|r| r["kind"] == "send" && r["msg_kind"] == "vote").count();
    let before = sent_votes(&c);
    let mut s = TcpStream::connect(("127.0.0.1", c.peer + 2)).expect("peer port");
    let frame = |b: &[u8]| [&(b.len() as u32).to_be_bytes()[..], b].concat();
    s.write_all(&frame(&wire::encode(&Hello::new("majority", 3)))).unwrap();
    let env =
        Envelope { msg_id: (3 << 40) | 1, lamport: 1, vector: vec![0; 3], msg: Msg::RequestVote { term: 1 } };
    s.write_all(&frame(&wire::encode(&env))).unwrap();
    c.wait_until("node 2 answers the request", Duration::from_secs(20), || sent_votes(&c) > before);
    drop(s);
    let votes = votes(&c);
    assert_eq!(votes.get(&(1, 1)).map(|v| v.len()), Some(1), "node 2 voted in term 1: {votes:?}");
    let twice: Vec<_> = votes.iter().filter(|(_, v)| v.len() > 1).collect();
    assert!(twice.is_empty(), "(voter, term) → candidates, positions: {twice:?}");
    // With no detector the leader sends no heartbeat: the restarted node 2 learns a leader by
    // electing one (term 2), so that every node knows one at the end.
    assert_eq!(http(c.port(2), "POST", "/election").0, 202);
    c.wait_until("every node names the same leader", Duration::from_secs(20), || {
        let ls: Vec<_> = (1..=3).map(|i| c.status(i).and_then(|s| s["leader"].as_u64())).collect();
        ls[0].is_some() && ls.iter().all(|l| *l == ls[0])
    });
    let report = c.stop_and_verify(&[]);
    assert_eq!(report["violations"], serde_json::json!([]), "{report}");
}

/// `cycles` kill -9 and restart cycles of random `majority` nodes while a client keeps asking
/// random nodes to start elections: no node ever votes twice in one term, there is at most one
/// leader per term, and `verify` judges the restarts (crash + recovery) without a violation.
/// Returns the time the cycles took.
fn majority_restart_cycles(cycles: u32) -> Duration {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let c = Cluster::start("majority", 5, &[]);
    let agreed = |c: &Cluster| {
        let ls: Vec<Option<u64>> = (1..=5).map(|i| c.status(i).and_then(|s| s["leader"].as_u64())).collect();
        ls[0].is_some() && ls.iter().all(|l| *l == ls[0])
    };
    c.wait_until("every node names the same leader", Duration::from_secs(20), || agreed(&c));
    let stop = Arc::new(AtomicBool::new(false));
    let load = {
        let (stop, api) = (stop.clone(), c.api);
        std::thread::spawn(move || {
            let mut asked = 0u64;
            while !stop.load(Ordering::Relaxed) {
                for id in 1..=5u16 {
                    if try_http(api + id, "POST", "/election").is_some() {
                        asked += 1;
                    }
                }
                // Paced by the requests themselves (each is a round trip to a node).
            }
            asked
        })
    };
    let t0 = Instant::now();
    let mut x = u64::from(std::process::id());
    for _ in 0..cycles {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let id = 1 + (x >> 33) as u16 % 5;
        c.ctl("restart", id);
        c.wait_until("the restarted node serves", Duration::from_secs(20), || c.status(id).is_some());
    }
    let took = t0.elapsed();
    stop.store(true, Ordering::Relaxed);
    let asked = load.join().unwrap();
    c.wait_until("every node names the same leader at the end", Duration::from_secs(30), || agreed(&c));
    println!("majority: {cycles} kill -9/restart cycles in {took:?} under {asked} election requests");
    let votes = votes(&c);
    let twice: Vec<_> = votes.iter().filter(|(_, v)| v.len() > 1).collect();
    assert!(twice.is_empty(), "(voter, term) → candidates, positions: {twice:?}");
    let report = c.stop_and_verify(&[]);
    assert_eq!(report["violations"], serde_json::json!([]), "{report}");
    assert_eq!(report["crashes"].as_u64(), Some(u64::from(cycles)), "{report}");
    assert_eq!(report["restarts"].as_u64(), Some(u64::from(cycles)), "{report}");
    took
}

/// The issue's 100 cycles: about 3 s on loopback.
#[test]
fn majority_survives_a_hundred_restart_cycles_under_load() {
    majority_restart_cycles(100);
}

/// The cost of stable storage: one client takes and releases the `central` lock 300 times on a
/// participant (node 2; every grant changes the coordinator's fencing counter, so every grant
/// waits for one durable write), with and without `--data-dir`. Prints p50 and p99 of the
/// acquire latency. A measurement, not a check: run with
/// `cargo test -p ringleader --test it -- --ignored --nocapture net::stable_storage_cost`.
#[test]
#[ignore]
fn stable_storage_cost() {
    for flags in [&["--no-data-dir"][..], &[][..]] {
        let c = Cluster::start_with("central", 3, &[], flags);
        let mut waits: Vec<Duration> = (0..300)
            .map(|_| {
                let t = Instant::now();
                let (code, grant) = http(c.port(2), "POST", "/lock?timeout=5s");
                assert_eq!(code, 200, "{grant}");
                let wait = t.elapsed();
                assert_eq!(unlock(c.port(2), &grant).0, 200);
                wait
            })
            .collect();
        waits.sort_unstable();
        let writes = counter(&c, 1, "state_writes");
        println!(
            "central, {}: acquire p50 {:?}, p99 {:?}; coordinator state writes {writes}",
            if flags.is_empty() { "--data-dir" } else { "no data dir" },
            waits[waits.len() / 2],
            waits[waits.len() * 99 / 100]
        );
    }
}

/// A node refuses to start over a state file written for another node or one it cannot read,
/// with one line naming the file and what is wrong; `--wipe-data` starts it afresh on purpose.
#[test]
fn a_node_refuses_a_foreign_or_corrupt_state_file() {
    let dir = std::env::temp_dir().join(format!("ringleader-node-data-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let node = |algo: &str, extra: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_ringleader"));
        cmd.args(["node", "--id", "1", "--listen", "127.0.0.1:0", "--peer", "2=127.0.0.1:9", "--insecure"])
            .args(["--algo", algo, "--data-dir"])
            .arg(&dir)
            .args(extra);
        cmd
    };
    // A first node writes its state at start, and is killed.
    let mut first = spawn(node("central", &[]).stdout(Stdio::null()).stderr(Stdio::null()));
    let t0 = Instant::now();
    while !dir.join("state.json").exists() {
        assert!(t0.elapsed() < Duration::from_secs(20), "the node wrote no state");
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = first.kill();
    let _ = first.wait();
    let refused = |cmd: &mut Command| {
        let out = run(cmd);
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        assert_eq!(err.lines().count(), 1, "{err}");
        err
    };
    let err = refused(&mut node("central-timeout", &[]));
    assert!(
        err.contains("state.json: written for algorithm central, this node has central-timeout"),
        "{err}"
    );
    let text = std::fs::read_to_string(dir.join("state.json")).unwrap();
    std::fs::write(dir.join("state.json"), &text[..text.len() - 3]).unwrap();
    let err = refused(&mut node("central", &[]));
    assert!(err.contains("not a readable ringleader state file") && err.contains("--wipe-data"), "{err}");
    // --wipe-data: the node starts (and writes a fresh state).
    let mut wiped = spawn(node("central", &["--wipe-data"]).stdout(Stdio::null()).stderr(Stdio::null()));
    let t0 = Instant::now();
    while std::fs::read_to_string(dir.join("state.json"))
        .map_or(true, |t| serde_json::from_str::<serde_json::Value>(&t).is_err())
    {
        assert!(t0.elapsed() < Duration::from_secs(20), "the wiped node wrote no state");
        assert!(wiped.try_wait().unwrap().is_none(), "the node with --wipe-data stopped");
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = wiped.kill();
    let _ = wiped.wait();
    let _ = std::fs::remove_dir_all(&dir);
}

/// A connection to node `to`'s peer port that proves it is member `as_id` — it holds the
/// cluster secret: a member that lies, not a stranger — and sends `msgs` in envelopes whose
/// `msg_id` names `claim` as their sender (as a real node's do with its own id).
fn as_member<M: serde::Serialize>(
    c: &Cluster,
    to: u16,
    algorithm: &str,
    as_id: u64,
    claim: u64,
    msgs: &[M],
) -> TcpStream {
    use ringleader_net::auth;
    use ringleader_net::wire::{self, Challenge, Envelope, Hello, Proof};
    let secret_file = default_secret_dir().join(format!("cluster-{}.secret", c.api));
    let secret = auth::Secret::read_file(&secret_file).expect("the cluster secret");
    let mut s = TcpStream::connect(("127.0.0.1", c.peer + to)).expect("peer port");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let frame = |b: &[u8]| [&(b.len() as u32).to_be_bytes()[..], b].concat();
    let nonce = auth::nonce();
    s.write_all(&frame(&wire::encode(&Hello::new(algorithm, as_id).with_nonce(nonce)))).unwrap();
    let mut len = [0u8; 4];
    s.read_exact(&mut len).expect("the node's challenge");
    let mut challenge = vec![0u8; u32::from_be_bytes(len) as usize];
    s.read_exact(&mut challenge).expect("the node's challenge");
    let challenge: Challenge = wire::decode(&challenge).expect("a challenge");
    let ids = auth::ids(as_id, u64::from(to));
    let t = auth::transcript(&nonce, &challenge.nonce, &ids, algorithm);
    s.write_all(&frame(&wire::encode(&Proof { mac: secret.mac(auth::DIALLER, &t) }))).unwrap();
    for (i, m) in msgs.iter().enumerate() {
        let env = Envelope {
            msg_id: (claim << 40) | (1 << 39) | i as u64,
            lamport: 1,
            vector: vec![0; c.n as usize],
            msg: m,
        };
        s.write_all(&frame(&wire::encode(&env))).unwrap();
    }
    s
}

/// How many times node `id`'s trace shows it adopting `leader`.
fn leader_events(c: &Cluster, id: u16, leader: u64) -> usize {
    c.trace(id)
        .iter()
        .filter(|r| r["kind"] == "emit" && r["event"]["event"] == "leader" && r["event"]["leader"] == leader)
        .count()
}

/// An authenticated member sends COORDINATOR(99) and HEARTBEAT(99): 99 is not a member. The
/// node refuses both, counts them, and still follows 3.
#[test]
fn a_member_naming_a_stranger_is_refused() {
    use ringleader_algorithms::election::bully::Msg;
    let c = Cluster::start("bully", 3, &[]);
    c.wait_until("every node follows 3", Duration::from_secs(20), || {
        (1..=3).all(|i| c.status(i).is_some_and(|s| s["leader"] == 3))
    });
    let _conn = as_member(&c, 1, "bully", 2, 2, &[Msg::Coordinator(99), Msg::Heartbeat(99)]);
    c.wait_until("node 1 refuses both, or follows 99", Duration::from_secs(20), || {
        counter(&c, 1, "messages_rejected_stranger") >= 2 || leader_events(&c, 1, 99) > 0
    });
    assert_eq!(leader_events(&c, 1, 99), 0, "node 1 followed 99");
    assert_eq!(c.status(1).unwrap()["leader"], 3);
    assert_eq!(counter(&c, 1, "messages_rejected_stranger"), 2);
    let report = c.stop_and_verify(&[]);
    assert_eq!(report["violations"], serde_json::json!([]), "{report}");
}

/// After the leader 3 is killed and 2 leads, member 1 — authenticated as 1 — sends node 2
/// COORDINATOR(3) and HEARTBEAT(3), claiming to be the dead leader, and an ANSWER in an
/// envelope that names 3 as its sender. All three are refused and counted; node 2 still leads.
#[test]
fn a_member_claiming_another_id_is_refused() {
    use ringleader_algorithms::election::bully::Msg;
    let c = Cluster::start("bully", 3, &[]);
    c.wait_until("every node follows 3", Duration::from_secs(20), || {
        (1..=3).all(|i| c.status(i).is_some_and(|s| s["leader"] == 3))
    });
    c.ctl("kill", 3);
    c.wait_until("nodes 1 and 2 follow 2", Duration::from_secs(20), || {
        (1..=2).all(|i| c.status(i).is_some_and(|s| s["leader"] == 2))
    });
    let before = leader_events(&c, 2, 3);
    let _a = as_member(&c, 2, "bully", 1, 1, &[Msg::Coordinator(3), Msg::Heartbeat(3)]);
    let _b = as_member(&c, 2, "bully", 1, 3, &[Msg::Answer(1)]);
    c.wait_until("node 2 refuses all three, or follows 3", Duration::from_secs(20), || {
        counter(&c, 2, "messages_rejected_sender") >= 3 || leader_events(&c, 2, 3) > before
    });
    assert_eq!(leader_events(&c, 2, 3), before, "node 2 followed the dead node 3 again");
    assert_eq!(c.status(2).unwrap()["leader"], 2);
    assert_eq!(counter(&c, 2, "messages_rejected_sender"), 3);
    // The launcher recorded the kill: no --down needed.
    let report = c.stop_and_verify(&[]);
    assert_eq!(report["violations"], serde_json::json!([]), "{report}");
}

/// Member 3 holds the `central` lock; node 2 waits. Member 3 — authenticated, but not the
/// coordinator — sends node 2 a GRANT with fencing token 2^32-1. Only the coordinator grants:
/// refused and counted; node 2 does not enter; tokens stay small.
#[test]
fn a_member_that_is_not_the_coordinator_cannot_grant() {
    use ringleader_algorithms::mutex::central::Msg;
    let (c, first, waiter) = three_holds_two_waits();
    let _conn = as_member(&c, 2, "central", 3, 3, &[Msg::Grant { fencing: u32::MAX as u64 }]);
    let (code, body) = waiter.join().unwrap();
    assert_ne!(code, 200, "node 2 got the lock while node 3 held it: {body}");
    c.wait_until("node 2 counts the refusal", Duration::from_secs(20), || {
        counter(&c, 2, "messages_rejected_rules") >= 1
    });
    assert_eq!(unlock(c.port(3), &first).0, 200);
    let (code, body) = http(c.port(1), "POST", "/lock?timeout=5s");
    assert_eq!(code, 200, "{body}");
    assert!(body["fencing"].as_u64().unwrap() < 10, "the forged token jammed nothing: {body}");
    assert_eq!(unlock(c.port(1), &body).0, 200);
    let report = c.stop_and_verify(&[]);
    assert_eq!(report["violations"], serde_json::json!([]), "{report}");
}

/// The launcher keeps data by default: `cluster --algo central` killed with `kill -9` (its nodes
/// die with it) and launched again with the same command recovers the coordinator's counter,
/// so no fencing token is issued twice; `--wipe-data` names what it deletes.
#[test]
fn a_relaunched_central_cluster_never_repeats_a_fencing_token() {
    relaunch_never_repeats_a_fencing_token("central");
}

/// The same for the `majority` election: each node's term and vote are on stable storage, so
/// the leader elected after a relaunch has a term above the one elected before the `kill -9`.
#[test]
fn a_relaunched_majority_cluster_elects_in_a_later_term() {
    relaunch_never_repeats_a_fencing_token("majority");
}

fn relaunch_never_repeats_a_fencing_token(algo: &str) {
    let (api, peer) = (free_base(3, LANE), free_base(3, LANE));
    let dir =
        std::env::temp_dir().join(format!("ringleader-net-relaunch-{algo}-{}-{api}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let launch = |extra: &[&str], stdout: Stdio| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_ringleader"));
        cmd.args(["cluster", "--nodes", "3", "--algo", algo, "--insecure"])
            .args(["--api-base-port", &api.to_string(), "--peer-base-port", &peer.to_string()])
            .arg("--data-dir")
            .arg(dir.join("data"))
            .args(extra)
            .stdout(stdout)
            .stderr(Stdio::null());
        spawn(&mut cmd)
    };
    let up = || {
        let t0 = Instant::now();
        while !(1..=3).all(|i| {
            try_http(api + i, "GET", "/status").is_some_and(|(_, s)| {
                s["peers"].as_array().is_some_and(|p| p.iter().all(|p| p["connected"] == true))
            })
        }) {
            assert!(t0.elapsed() < Duration::from_secs(20), "the nodes never connected");
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    let down = || {
        let t0 = Instant::now();
        while (1..=3).any(|i| try_http(api + i, "GET", "/status").is_some()) {
            assert!(t0.elapsed() < Duration::from_secs(20), "the nodes outlived their launcher");
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    let take = |id: u16| {
        let (code, body) = http(api + id, "POST", "/lock?timeout=5s");
        assert_eq!(code, 200, "{body}");
        assert_eq!(unlock(api + id, &body).0, 200);
        body["fencing"].as_u64().unwrap()
    };
    // An election's term: what `majority` keeps on stable storage beside its vote.
    let elect = |id: u16| {
        let (code, body) = http(api + id, "POST", "/election");
        assert_eq!(code, 202, "{body}");
        let t0 = Instant::now();
        loop {
            let seen: Vec<(Option<u64>, Option<u64>)> = (1..=3)
                .filter_map(|i| try_http(api + i, "GET", "/status"))
                .map(|(_, s)| (s["leader"].as_u64(), s["term"].as_u64()))
                .collect();
            if seen.len() == 3 && seen.iter().all(|x| x.0.is_some() && *x == seen[0]) {
                return seen[0].1.expect("a term");
            }
            assert!(t0.elapsed() < Duration::from_secs(20), "no agreed leader: {seen:?}");
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    let mut tokens = Vec::new();
    for round in 0..2 {
        let mut launcher = launch(&[], Stdio::null());
        up();
        if algo == "central" {
            tokens.extend((0..3).map(|_| take(2 + round)));
        } else {
            tokens.push(elect(2 + round));
        }
        let _ = launcher.kill();
        let _ = launcher.wait();
        down();
    }
    println!("{algo}: tokens or terms {tokens:?} across a kill -9 and a relaunch");
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "fencing tokens or terms strictly increase: {tokens:?}");
    if algo != "central" {
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }

    // --wipe-data: each node's directory is deleted, and said so; the counter starts again.
    let mut launcher = launch(&["--wipe-data"], Stdio::piped());
    up();
    let first = take(2);
    let _ = launcher.kill();
    let out = launcher.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    for id in 1..=3 {
        let deleted = format!("--wipe-data: deleted {}", dir.join(format!("data/node-{id}")).display());
        assert!(said.contains(&deleted), "{said}");
    }
    assert_eq!(first, tokens[0], "a wiped coordinator starts over: {tokens:?}");
    down();
    let _ = std::fs::remove_dir_all(&dir);
}
