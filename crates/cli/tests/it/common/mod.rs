//! What the integration tests that start real `ringleader` processes on loopback share: port
//! ranges that do not collide, spawning children without leaking probe sockets into them, and
//! bounded polls. Every test module of this binary uses a part of it.
#![allow(dead_code)]

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

/// One JSON request to a node's HTTP API on loopback: its status and body (`Null` when the
/// body is not JSON), or `None` when the node cannot be reached.
pub fn try_call(port: u16, method: &str, path: &str, body: Option<Value>) -> Option<(u16, Value)> {
    let url = format!("http://127.0.0.1:{port}{path}");
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
    Some((status, serde_json::from_str(&text).unwrap_or(Value::Null)))
}

/// [`try_call`], failing the test when the node cannot be reached.
pub fn call(port: u16, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    try_call(port, method, path, body)
        .unwrap_or_else(|| panic!("service node on port {port} unreachable: {method} {path}"))
}
