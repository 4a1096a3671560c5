//! What the integration tests that start real `ringleader` processes on loopback share: port
//! ranges that do not collide, spawning children without leaking probe sockets into them, and
//! bounded polls. Every test module of this binary uses a part of it.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::process::{Child, Command};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

/// Held while this test process holds probe sockets ([`free_base`]) or forks a child.
///
/// Tests run on several threads, and a child forked by one thread inherits every socket the
/// process has open until it execs, close-on-exec or not. A probe listener inherited that way
/// keeps a port "listening" for a moment after `free_base` dropped it, so another test's first
/// poll connects to it and is then reset. Forking and probing under one lock removes the window.
pub static FORK: Mutex<()> = Mutex::new(());

/// Starts `cmd` while no port probe is open.
pub fn spawn(cmd: &mut Command) -> Child {
    let _held = FORK.lock().unwrap_or_else(|e| e.into_inner());
    cmd.spawn().expect("the ringleader binary starts")
}

/// A base with `n + 1` free consecutive ports, below the ephemeral range (32768..) so that
/// client sockets never take them. Ranges handed out in one process never overlap; `lane`
/// (0..64, one per test module) keeps the ranges of different modules apart as well.
pub fn free_base(n: u16, lane: u16) -> u16 {
    let _held = FORK.lock().unwrap_or_else(|e| e.into_inner());
    static NEXT: std::sync::atomic::AtomicU16 = std::sync::atomic::AtomicU16::new(0);
    let seed = (std::process::id() % 300) as u16;
    loop {
        let k = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        assert!(k < 600, "no free port range");
        let base = 20000 + (seed * 64 + k * 64 + lane) % 12000;
        let held: Vec<_> = (0..=n).filter_map(|i| TcpListener::bind(("127.0.0.1", base + i)).ok()).collect();
        if held.len() == n as usize + 1 {
            RANGES.lock().unwrap_or_else(|e| e.into_inner()).push((base, base + n));
            return base;
        }
    }
}

/// Polls `f` every 10 ms until it gives `Some`, failing the test after `limit`.
pub fn until<T>(limit: Duration, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let t0 = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(t0.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

thread_local! {
    /// One HTTP agent per test thread: answers of any status come back as answers, and no call
    /// waits longer than 30 s.
    pub static AGENT: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .into();
}

/// The port ranges [`free_base`] handed out, first and last port: one per cluster.
static RANGES: Mutex<Vec<(u16, u16)>> = Mutex::new(Vec::new());

/// The lease keys the service's grants answered, by the first port of their cluster's range
/// and lease id.
static LEASE_KEYS: Mutex<BTreeMap<(u16, u64), String>> = Mutex::new(BTreeMap::new());

/// The first port of the range `port` lies in (the port itself when it was not handed out).
fn cluster_of(port: u16) -> u16 {
    let ranges = RANGES.lock().unwrap_or_else(|e| e.into_inner());
    ranges.iter().rev().find(|(first, last)| (*first..=*last).contains(&port)).map_or(port, |r| r.0)
}

/// A lease's key, as its grant through [`try_call`] answered it.
pub fn lease_key(port: u16, lease: u64) -> Option<String> {
    LEASE_KEYS.lock().unwrap_or_else(|e| e.into_inner()).get(&(cluster_of(port), lease)).cloned()
}

/// One JSON request to a node's HTTP API on loopback: its status and body (`Null` when the
/// body is not JSON), or `None` when the node cannot be reached.
///
/// It plays the lease's grantee, as a real client does: the key a grant answers is kept, and a
/// body that names a lease and no `key` gets the lease's key added. A test that plays someone
/// else sends `"key": null` (no key) or a wrong one.
pub fn try_call(port: u16, method: &str, path: &str, mut body: Option<Value>) -> Option<(u16, Value)> {
    let url = format!("http://127.0.0.1:{port}{path}");
    if let Some(b) = body.as_mut()
        && b.get("key").is_none()
        && let Some(lease) = b.get("lease").and_then(Value::as_u64)
        && let Some(key) = lease_key(port, lease)
    {
        b["key"] = Value::String(key);
    }
    let response = AGENT.with(|a| match (method, body) {
        ("GET", _) => a.get(&url).call(),
        ("DELETE", _) => a.delete(&url).call(),
        ("POST", Some(b)) => a.post(&url).header("content-type", "application/json").send(b.to_string()),
        ("POST", None) => a.post(&url).send_empty(),
        (other, _) => panic!("the tests speak GET, POST and DELETE, not {other}"),
    });
    let mut response = response.ok()?;
    let status = response.status().as_u16();
    let text = response.body_mut().read_to_string().ok()?;
    let answer: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    if path == "/v1/lease/grant"
        && let (Some(lease), Some(key)) = (answer["lease"].as_u64(), answer["key"].as_str())
    {
        LEASE_KEYS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert((cluster_of(port), lease), key.to_string());
    }
    Some((status, answer))
}

/// [`try_call`], failing the test when the node cannot be reached.
pub fn call(port: u16, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    try_call(port, method, path, body)
        .unwrap_or_else(|| panic!("service node on port {port} unreachable: {method} {path}"))
}

/// Writes a credential file (an API token, a secret) as its owner alone may read it (0600), as
/// the nodes require.
pub fn write_private(path: &std::path::Path, contents: impl AsRef<[u8]>) {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let _ = std::fs::remove_file(path);
    let mut f = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path).unwrap();
    f.write_all(contents.as_ref()).unwrap();
}
