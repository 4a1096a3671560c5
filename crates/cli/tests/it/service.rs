//! The coordination service on real processes: `ringleader cluster --service` starts three
//! `ringleader serve` nodes on loopback, and clients speak the HTTP API (docs/SERVICE-API.md)
//! to them. Waits are bounded polls, never fixed sleeps.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common;
use crate::common::{AGENT, call, free_base, spawn, try_call};

/// This module's lane of loopback ports ([`common::free_base`]).
const LANE: u16 = 32;

fn post(port: u16, path: &str, body: Value) -> (u16, Value) {
    call(port, "POST", path, Some(body))
}

struct Service {
    child: Child,
    api: u16,
    n: u16,
    dir: PathBuf,
}

impl Service {
    fn start(n: u16) -> Service {
        Service::start_with(n, &[])
    }

    /// As [`Service::start`], with `serve_args` passed to every `ringleader serve`.
    fn start_with(n: u16, serve_args: &[&str]) -> Service {
        let api = free_base(n, LANE);
        let peer = free_base(n, LANE);
        let dir = std::env::temp_dir().join(format!("ringleader-service-{}-{api}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_ringleader"));
        cmd.args(["cluster", "--service", "--nodes", &n.to_string()])
            .args(["--api-base-port", &api.to_string(), "--peer-base-port", &peer.to_string()])
            .arg("--data-dir")
            .arg(dir.join("data"))
            .arg("--secret-file")
            .arg(dir.join("cluster.secret"))
            .args(serve_args.iter().map(|a| format!("--serve-arg={a}")))
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        std::fs::create_dir_all(&dir).unwrap();
        let s = Service { child: spawn(&mut cmd), api, n, dir };
        s.leader(&[], Duration::from_secs(30));
        s
    }

    fn port(&self, id: u16) -> u16 {
        self.api + id
    }

    fn status(&self, id: u16) -> Option<Value> {
        let (code, body) = try_call(self.port(id), "GET", "/status", None)?;
        (code == 200).then_some(body)
    }

    /// Waits until every node not in `down` names the same leader, itself not in `down`.
    fn leader(&self, down: &[u16], limit: Duration) -> u16 {
        let t0 = Instant::now();
        loop {
            let leaders: Vec<Option<u64>> = (1..=self.n)
                .filter(|i| !down.contains(i))
                .map(|i| self.status(i).and_then(|s| s["leader"].as_u64()))
                .collect();
            if let Some(Some(l)) = leaders.first()
                && leaders.iter().all(|x| *x == Some(*l))
                && !down.contains(&(*l as u16))
            {
                return *l as u16;
            }
            assert!(t0.elapsed() < limit, "no agreed leader within {limit:?}: {leaders:?}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn ctl(&self, action: &str, id: u16) {
        let out = Command::new(env!("CARGO_BIN_EXE_ringleader"))
            .args(["cluster", "ctl", action, &id.to_string(), "--ctl", &format!("127.0.0.1:{}", self.api)])
            .arg("--secret-file")
            .arg(self.dir.join("cluster.secret"))
            .output()
            .unwrap();
        assert!(out.status.success(), "ctl {action} {id}: {}", String::from_utf8_lossy(&out.stdout));
    }

    fn grant(&self, id: u16, ttl_ms: u64) -> u64 {
        let (code, body) = post(self.port(id), "/v1/lease/grant", json!({ "ttl_ms": ttl_ms }));
        assert_eq!(code, 200, "{body}");
        body["lease"].as_u64().unwrap()
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        // SAFETY: signalling our own child.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn three_nodes_agree_on_a_leader_and_hand_a_lock_over_in_fifo_order_with_increasing_tokens() {
    let s = Service::start(3);
    let (a, b, c) = (s.grant(1, 10_000), s.grant(2, 10_000), s.grant(3, 10_000));

    // A takes the lock through node 1; a try-lock by B through node 2 is refused.
    let (code, got) = post(s.port(1), "/v1/lock/acquire", json!({ "name": "db", "lease": a }));
    assert_eq!(code, 200, "{got}");
    let first = got["fencing"].as_u64().unwrap();
    let (code, busy) =
        post(s.port(2), "/v1/lock/acquire", json!({ "name": "db", "lease": b, "wait": false }));
    assert_eq!((code, busy["reason"].as_str()), (409, Some("busy")), "{busy}");

    // B, then C, wait at the server; A's release hands the lock to B only.
    let port = s.port(2);
    let waiter_b =
        std::thread::spawn(move || post(port, "/v1/lock/acquire", json!({ "name": "db", "lease": b })));
    let t0 = Instant::now();
    while call(s.port(1), "GET", "/v1/lock/db", None).1["waiters"] != json!([b]) {
        assert!(t0.elapsed() < Duration::from_secs(10), "B never queued");
        std::thread::sleep(Duration::from_millis(5));
    }
    let port = s.port(3);
    let waiter_c =
        std::thread::spawn(move || post(port, "/v1/lock/acquire", json!({ "name": "db", "lease": c })));
    while call(s.port(1), "GET", "/v1/lock/db", None).1["waiters"] != json!([b, c]) {
        assert!(t0.elapsed() < Duration::from_secs(10), "C never queued behind B");
        std::thread::sleep(Duration::from_millis(5));
    }
    let (code, body) = post(s.port(1), "/v1/lock/release", json!({ "name": "db", "lease": a }));
    assert_eq!(code, 200, "{body}");
    let (code, got_b) = waiter_b.join().unwrap();
    assert_eq!(code, 200, "{got_b}");
    let second = got_b["fencing"].as_u64().unwrap();
    assert!(second > first, "tokens increase: {first} then {second}");
    let view = call(s.port(3), "GET", "/v1/lock/db", None).1;
    assert_eq!(view["holder"], json!({ "lease": b, "fencing": second }), "C still waits: {view}");

    // B's lease is revoked: the lock goes to C with a larger token.
    let (code, body) = post(s.port(2), "/v1/lease/revoke", json!({ "lease": b }));
    assert_eq!(code, 200, "{body}");
    let (code, got_c) = waiter_c.join().unwrap();
    assert_eq!(code, 200, "{got_c}");
    assert!(got_c["fencing"].as_u64().unwrap() > second);
}

#[test]
fn a_holder_that_stops_renewing_loses_the_lock_when_its_ttl_runs_out() {
    let s = Service::start(3);
    let waiter = s.grant(2, 10_000);
    let t0 = Instant::now();
    let holder = s.grant(1, 300);
    let (code, got) = post(s.port(1), "/v1/lock/acquire", json!({ "name": "job", "lease": holder }));
    assert_eq!(code, 200, "{got}");
    let (code, next) =
        post(s.port(2), "/v1/lock/acquire", json!({ "name": "job", "lease": waiter, "timeout_ms": 10_000 }));
    assert_eq!(code, 200, "{next}");
    // The first clock step after a grant does not count toward the lease (rule 1 of
    // crates/lock-service/src/state.rs), so no lease ends before its TTL since the grant was
    // asked for; before that rule it could end one `clock_every` (20 ms) early.
    let lived = t0.elapsed();
    assert!(lived >= Duration::from_millis(300), "the holder's lease lived less than its TTL: {lived:?}");
    assert!(next["fencing"].as_u64() > got["fencing"].as_u64());
    let (code, gone) = post(s.port(1), "/v1/lease/keepalive", json!({ "lease": holder }));
    assert_eq!((code, gone["reason"].as_str()), (404, Some("no_such_lease")), "{gone}");
}

#[test]
fn a_blocked_acquire_that_times_out_is_withdrawn_from_the_queue() {
    let s = Service::start(3);
    let (a, b) = (s.grant(1, 10_000), s.grant(1, 10_000));
    assert_eq!(post(s.port(1), "/v1/lock/acquire", json!({ "name": "q", "lease": a })).0, 200);
    let (code, body) =
        post(s.port(2), "/v1/lock/acquire", json!({ "name": "q", "lease": b, "timeout_ms": 200 }));
    assert_eq!((code, body["reason"].as_str()), (408, Some("timeout")), "{body}");
    let view = call(s.port(3), "GET", "/v1/lock/q", None).1;
    assert_eq!(view["waiters"], json!([]), "{view}");
}

#[test]
fn killing_the_leader_elects_another_and_the_lock_keeps_its_token_order() {
    let s = Service::start(3);
    let leader = s.leader(&[], Duration::from_secs(10));
    let other = (1..=3).find(|&i| i != leader).unwrap();
    let a = s.grant(other, 10_000);
    let (code, got) = post(s.port(other), "/v1/lock/acquire", json!({ "name": "x", "lease": a }));
    assert_eq!(code, 200, "{got}");
    assert_eq!(post(s.port(other), "/v1/lock/release", json!({ "name": "x", "lease": a })).0, 200);

    s.ctl("kill", leader);
    let new = s.leader(&[leader], Duration::from_secs(10));
    assert_ne!(new, leader);
    let (code, again) = post(s.port(other), "/v1/lock/acquire", json!({ "name": "x", "lease": a }));
    assert_eq!(code, 200, "the lease survived the leader change: {again}");
    assert!(again["fencing"].as_u64() > got["fencing"].as_u64());

    // The killed node restarts from its log and catches up.
    s.ctl("restart", leader);
    let t0 = Instant::now();
    loop {
        let applied = |i| s.status(i).and_then(|st| st["applied"].as_u64());
        if let (Some(x), Some(y)) = (applied(leader), applied(new))
            && x >= y
        {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(20), "the restarted node never caught up");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn reads_are_served_on_a_fresh_cluster_and_after_a_leader_change_with_nothing_written() {
    // No write at all: the only entry of the term is the leader's empty one, and a read's
    // ReadIndex names it. Every node answers at once (not 503 after the request timeout).
    let s = Service::start(3);
    for id in 1..=3 {
        let (code, body) = call(s.port(id), "GET", "/v1/lock/fresh", None);
        assert_eq!(code, 200, "node {id} on a fresh cluster: {body}");
        assert_eq!(body["holder"], Value::Null);
    }
    let applied = |i: u16| s.status(i).and_then(|st| st["applied"].as_u64()).unwrap_or(0);
    assert!(applied(1) >= 1, "the leader's empty entry counts as applied");

    // A new leader on an idle cluster with no lease (so no clock entries) commits only its
    // own empty entry: reads wait for that one, and are served.
    let leader = s.leader(&[], Duration::from_secs(10));
    s.ctl("kill", leader);
    let new = s.leader(&[leader], Duration::from_secs(10));
    for id in (1..=3).filter(|&i| i != leader) {
        let (code, body) = call(s.port(id), "GET", "/v1/election/idle", None);
        assert_eq!(code, 200, "node {id} after the leader change to {new}: {body}");
    }
}

#[test]
fn elections_name_the_earliest_live_candidate_and_observe_streams_changes() {
    let s = Service::start(3);
    let (a, b) = (s.grant(1, 10_000), s.grant(2, 10_000));
    let (code, won) =
        post(s.port(1), "/v1/election/campaign", json!({ "election": "e", "lease": a, "value": "alpha" }));
    assert_eq!(code, 200, "{won}");
    assert_eq!(won["leader"]["value"], "alpha");
    let port = s.port(2);
    let second = std::thread::spawn(move || {
        post(port, "/v1/election/campaign", json!({ "election": "e", "lease": b, "value": "beta" }))
    });
    let (code, body) =
        post(s.port(3), "/v1/election/proclaim", json!({ "election": "e", "lease": b, "value": "x" }));
    assert_eq!((code, body["reason"].as_str()), (409, Some("not_leader")), "{body}");
    assert_eq!(post(s.port(1), "/v1/election/resign", json!({ "election": "e", "lease": a })).0, 200);
    let (code, won) = second.join().unwrap();
    assert_eq!(code, 200, "{won}");
    assert_eq!(won["leader"]["value"], "beta");
    let (_, now) = call(s.port(3), "GET", "/v1/election/e", None);
    assert_eq!(now["leader"]["lease"], json!(b), "{now}");
}

#[test]
fn bad_requests_get_one_line_and_a_reason() {
    let s = Service::start(1);
    for (path, body, reason) in [
        ("/v1/lease/grant", json!({ "ttl_ms": 0 }), "bad_request"),
        ("/v1/lease/grant", json!({ "ttl": 10 }), "bad_request"),
        ("/v1/lock/acquire", json!({ "name": "", "lease": 1 }), "bad_request"),
        ("/v1/lock/acquire", json!({ "name": "n", "lease": 999_999 }), "no_such_lease"),
        ("/v1/lease/keepalive", json!({ "lease": 42 }), "no_such_lease"),
    ] {
        let (code, answer) = post(s.port(1), path, body);
        assert_eq!(answer["reason"], reason, "{path}: {answer}");
        assert!(code >= 400, "{path}: {code}");
        let line = answer["error"].as_str().unwrap();
        assert!(!line.is_empty() && !line.contains('\n'), "{line:?}");
    }
    let (code, answer) = call(s.port(1), "GET", "/v1/nothing", None);
    assert_eq!((code, answer["reason"].as_str()), (404, Some("not_found")));
}

/// Waits for `child` to end, killing it and failing the test after `limit`.
fn ended_within(mut child: std::process::Child, limit: Duration, what: &str) -> std::process::Output {
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!("{what}: still running after {limit:?}; stderr: {}", String::from_utf8_lossy(&out.stderr));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn clients_fail_over_past_a_hung_first_endpoint() {
    let s = Service::start(3);
    // Node 1, the first endpoint, is stopped: it accepts connections and answers nothing.
    s.ctl("pause", 1);
    s.leader(&[1], Duration::from_secs(20));
    let endpoints =
        (1..=s.n).map(|i| format!("http://127.0.0.1:{}", s.port(i))).collect::<Vec<_>>().join(",");
    let run = |args: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_ringleader"));
        cmd.args(args).env("RINGLEADER_ENDPOINTS", &endpoints).stdout(Stdio::piped()).stderr(Stdio::piped());
        spawn(&mut cmd)
    };
    // The per-attempt bound is 2 s: a client that waited on node 1 for its 10 s request timeout,
    // or for ever, fails the bound below.
    let out = ended_within(run(&["lease", "grant", "--ttl", "5s"]), Duration::from_secs(8), "lease grant");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = ended_within(run(&["lock", "failover", "--", "true"]), Duration::from_secs(8), "lock");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    s.ctl("resume", 1);
}

#[test]
fn lock_stops_its_command_when_the_lock_is_taken_from_its_live_lease() {
    let s = Service::start(3);
    let dir = s.dir.join("lost");
    std::fs::create_dir_all(&dir).unwrap();
    let lease_file = dir.join("lease");
    let term_file = dir.join("term");
    // The command writes its lease, then runs until SIGTERM, which it records.
    let script = format!(
        "trap 'echo term > {term}; exit 3' TERM; echo $RINGLEADER_LEASE $RINGLEADER_LEASE_KEY > {lease}.tmp; \
         mv {lease}.tmp {lease}; \
         while true; do sleep 0.02; done",
        term = term_file.display(),
        lease = lease_file.display()
    );
    let endpoints =
        (1..=s.n).map(|i| format!("http://127.0.0.1:{}", s.port(i))).collect::<Vec<_>>().join(",");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ringleader"));
    cmd.args(["lock", "taken", "--ttl", "600ms", "--", "sh", "-c", &script])
        .env("RINGLEADER_ENDPOINTS", &endpoints)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = spawn(&mut cmd);
    let (lease, key): (u64, String) = common::until(Duration::from_secs(20), "the command's lease", || {
        let text = std::fs::read_to_string(&lease_file).ok()?;
        let (lease, key) = text.trim().split_once(' ')?;
        Some((lease.parse().ok()?, key.to_string()))
    });
    // The command itself releases the lock with its lease's key; the lease lives on (its
    // keep-alives go on).
    let (code, body) =
        post(s.port(2), "/v1/lock/release", json!({ "name": "taken", "lease": lease, "key": key }));
    assert_eq!(code, 200, "{body}");
    let out = ended_within(child, Duration::from_secs(20), "lock after its lock was taken");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("lost lock \"taken\""), "{err}");
    assert_eq!(std::fs::read_to_string(&term_file).unwrap_or_default().trim(), "term", "COMMAND got SIGTERM");
}

/// The metrics page of the node on `port`.
fn metrics(port: u16) -> String {
    AGENT.with(|a| {
        let mut r = a.get(&format!("http://127.0.0.1:{port}/metrics")).call().expect("metrics answer");
        assert_eq!(r.status().as_u16(), 200);
        let kind = r.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
        assert!(kind.starts_with("application/openmetrics-text"), "{kind}");
        r.body_mut().read_to_string().unwrap()
    })
}

/// The value of the sample `name` (with its labels, as written) on a metrics page.
fn sample(page: &str, name: &str) -> f64 {
    page.lines()
        .find_map(|l| l.strip_prefix(name).and_then(|rest| rest.strip_prefix(' ')))
        .unwrap_or_else(|| panic!("no sample {name} in\n{page}"))
        .trim()
        .parse()
        .unwrap()
}

/// An SSE stream opened by hand: the request, then the answer's head.
struct Stream {
    reader: std::io::BufReader<std::net::TcpStream>,
    status: u16,
}

impl Stream {
    fn open(port: u16, path: &str, last_event_id: Option<&str>) -> Stream {
        use std::io::{BufRead, Write};
        let mut tcp = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let resume = last_event_id.map(|id| format!("Last-Event-ID: {id}\r\n")).unwrap_or_default();
        write!(tcp, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{resume}\r\n").unwrap();
        let mut reader = std::io::BufReader::new(tcp);
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let status = line.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
        loop {
            line.clear();
            reader.read_line(&mut line).unwrap();
            if line.trim().is_empty() {
                break;
            }
        }
        Stream { reader, status }
    }

    /// The next event: (event, id, data); keep-alive comments skipped.
    fn next(&mut self) -> (String, String, Value) {
        use std::io::BufRead;
        let (mut event, mut id, mut data) = (String::new(), String::new(), Value::Null);
        loop {
            let mut line = String::new();
            assert!(self.reader.read_line(&mut line).unwrap() > 0, "the stream ended");
            let line = line.trim_end();
            if let Some(v) = line.strip_prefix("event: ").or(line.strip_prefix("event:")) {
                event = v.to_string();
            } else if let Some(v) = line.strip_prefix("id: ").or(line.strip_prefix("id:")) {
                id = v.to_string();
            } else if let Some(v) = line.strip_prefix("data: ").or(line.strip_prefix("data:")) {
                data = serde_json::from_str(v).unwrap_or(Value::Null);
            } else if line.is_empty() && !event.is_empty() {
                return (event, id, data);
            }
        }
    }
}

#[test]
fn health_readiness_metrics_and_every_refusal_answer_json() {
    let s = Service::start(3);
    for id in 1..=3 {
        let (code, body) = call(s.port(id), "GET", "/health", None);
        assert_eq!((code, body["status"].as_str()), (200, Some("alive")), "{body}");
        let (code, body) = call(s.port(id), "GET", "/ready", None);
        assert_eq!((code, body["ready"].as_bool()), (200, Some(true)), "node {id}: {body}");
    }
    let before = metrics(s.port(1));
    let lease = s.grant(1, 10_000);
    let (code, got) = post(s.port(1), "/v1/lock/acquire", json!({ "name": "m", "lease": lease }));
    assert_eq!(code, 200, "{got}");
    let page = metrics(s.port(1));
    assert!(page.ends_with("# EOF\n"), "an OpenMetrics page ends with # EOF");
    let id = r#"{id="1"}"#;
    assert_eq!(
        sample(&page, &format!("ringleader_service_proposals_total{id}"))
            - sample(&before, &format!("ringleader_service_proposals_total{id}")),
        2.0,
        "one grant and one acquire"
    );
    assert_eq!(sample(&page, &format!("ringleader_service_leases{id}")), 1.0);
    assert_eq!(sample(&page, &format!("ringleader_service_locks_held{id}")), 1.0);
    assert_eq!(sample(&page, &format!("ringleader_service_locks_waiting{id}")), 0.0);
    assert!(sample(&page, &format!("ringleader_service_term{id}")) >= 1.0);
    assert!(sample(&page, &format!("ringleader_service_leader_changes_total{id}")) >= 1.0);
    assert!(sample(&page, &format!("ringleader_service_proposal_latency_seconds_count{id}")) >= 2.0);
    assert!(sample(&page, &format!("ringleader_service_fsync_latency_seconds_count{id}")) >= 2.0);
    assert!(sample(&page, &format!("ringleader_service_applied_index{id}")) >= 3.0);
    for family in [
        "apply_lag",
        "commit_index",
        "snapshots_sent_total",
        "snapshots_received_total",
        "proposals_retried_total",
    ] {
        sample(&page, &format!("ringleader_service_{family}{id}"));
    }

    // Refusals: a body over the limit is 413, a wrong method 405, each a JSON line with a reason,
    // counted by reason.
    let big = "x".repeat(100_000);
    let (code, body) = post(s.port(1), "/v1/lock/acquire", json!({ "name": big, "lease": lease }));
    assert_eq!((code, body["reason"].as_str()), (413, Some("too_large")), "{body}");
    let (code, body) = call(s.port(1), "DELETE", "/v1/lock/acquire", None);
    assert_eq!((code, body["reason"].as_str()), (405, Some("method_not_allowed")), "{body}");
    let (code, body) = post(s.port(1), "/v1/lease/keepalive", json!({ "lease": 424_242 }));
    assert_eq!((code, body["reason"].as_str()), (404, Some("no_such_lease")), "{body}");
    let page = metrics(s.port(1));
    for reason in ["too_large", "method_not_allowed", "no_such_lease"] {
        let name = format!(r#"ringleader_service_rejected_requests_total{{id="1",reason="{reason}"}}"#);
        assert_eq!(sample(&page, &name), 1.0, "{reason}");
    }
}

#[test]
fn event_streams_have_their_own_cap_and_health_checks_still_answer() {
    let s = Service::start(1);
    // Half the API's 256 connections may be event streams.
    let streams: Vec<Stream> =
        (0..128).map(|_| Stream::open(s.port(1), "/v1/election/e/observe", None)).collect();
    assert!(streams.iter().all(|st| st.status == 200));
    let (code, body) = call(s.port(1), "GET", "/v1/election/e/observe", None);
    assert_eq!((code, body["reason"].as_str()), (503, Some("too_many_streams")), "{body}");
    assert_eq!(call(s.port(1), "GET", "/health", None).0, 200);
    assert_eq!(call(s.port(1), "GET", "/ready", None).0, 200);
    assert_eq!(call(s.port(1), "GET", "/v1/election/e", None).0, 200);
    assert!(s.grant(1, 10_000) > 0);
}

#[test]
fn streams_carry_ids_and_resume_from_last_event_id() {
    let s = Service::start(3);
    let (a, b) = (s.grant(1, 10_000), s.grant(2, 10_000));
    let (code, won) =
        post(s.port(1), "/v1/election/campaign", json!({ "election": "r", "lease": a, "value": "alpha" }));
    assert_eq!(code, 200, "{won}");
    let mut first = Stream::open(s.port(2), "/v1/election/r/observe", None);
    let (event, id, data) = first.next();
    assert_eq!((event.as_str(), data["leader"]["lease"].as_u64()), ("leader", Some(a)), "{data}");
    let seen: u64 = id.parse().expect("an id that is an entry index");
    drop(first);

    // Resumed at that id: the leader it saw is not sent again; the next change is, with a
    // larger id.
    let mut resumed = Stream::open(s.port(3), "/v1/election/r/observe", Some(&id));
    let port = s.port(2);
    let second = std::thread::spawn(move || {
        post(port, "/v1/election/campaign", json!({ "election": "r", "lease": b, "value": "beta" }))
    });
    assert_eq!(post(s.port(1), "/v1/election/resign", json!({ "election": "r", "lease": a })).0, 200);
    // (The resignation may leave the election empty for a moment, if B's campaign comes after.)
    let mut last = seen;
    loop {
        let (event, id, data) = resumed.next();
        assert_eq!(event, "leader");
        let id: u64 = id.parse().unwrap();
        assert!(id > last, "ids increase: {id} after {last}");
        last = id;
        match data["leader"]["lease"].as_u64() {
            Some(l) if l == b => break,
            None => {}
            other => panic!("the leader it saw was sent again: {other:?}"),
        }
    }
    assert_eq!(second.join().unwrap().0, 200);

    // A lease watch resumed from an id older than what the node applied starts with a reset:
    // the lease's state now.
    let (code, got) = post(s.port(1), "/v1/lock/acquire", json!({ "name": "held", "lease": b }));
    assert_eq!(code, 200, "{got}");
    let mut watch = Stream::open(s.port(1), &format!("/v1/lease/{b}/watch"), Some("1.0"));
    let (event, _, data) = watch.next();
    assert_eq!(event, "reset", "{data}");
    assert_eq!(data["locks"], json!([{ "name": "held", "fencing": got["fencing"] }]), "{data}");
    // Then the stream goes on with ids INDEX.K: a revoked lease loses its lock.
    assert_eq!(post(s.port(2), "/v1/lease/revoke", json!({ "lease": b })).0, 200);
    let (event, id, data) = watch.next();
    assert_eq!((event.as_str(), data["reason"].as_str()), ("lost", Some("revoked")), "{data}");
    let (index, k) = id.split_once('.').expect("INDEX.K");
    assert!(index.parse::<u64>().unwrap() > seen && k.parse::<u64>().is_ok(), "{id}");
}

/// `ringleader ARGS` against the service's three endpoints.
fn verb(s: &Service, args: &[&str]) -> std::process::Output {
    let endpoints =
        (1..=s.n).map(|i| format!("http://127.0.0.1:{}", s.port(i))).collect::<Vec<_>>().join(",");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ringleader"));
    cmd.args(args).env("RINGLEADER_ENDPOINTS", endpoints).stdout(Stdio::piped()).stderr(Stdio::piped());
    spawn(&mut cmd).wait_with_output().unwrap()
}

#[test]
fn lock_runs_a_command_with_its_fencing_token_and_exits_with_its_status() {
    let s = Service::start(3);
    let token = |out: &std::process::Output| -> u64 {
        let text = String::from_utf8_lossy(&out.stdout);
        let line =
            text.lines().find_map(|l| l.strip_prefix("token=")).unwrap_or_else(|| panic!("no token: {text}"));
        line.trim().parse().unwrap()
    };
    let script = "echo token=$RINGLEADER_FENCING_TOKEN; exit 3";
    let first = verb(&s, &["lock", "job", "--ttl", "5s", "--", "sh", "-c", script]);
    assert_eq!(first.status.code(), Some(3), "{}", String::from_utf8_lossy(&first.stderr));
    let second = verb(&s, &["lock", "job", "--ttl", "5s", "--", "sh", "-c", script]);
    assert_eq!(second.status.code(), Some(3));
    assert!(token(&second) > token(&first), "tokens increase across holders");

    // While another lease holds the lock, a timed `lock` exits 1 with one line saying why.
    let holder = s.grant(1, 10_000);
    assert_eq!(post(s.port(1), "/v1/lock/acquire", json!({ "name": "job", "lease": holder })).0, 200);
    let refused = verb(&s, &["lock", "job", "--timeout", "200ms", "--", "true"]);
    assert_eq!(refused.status.code(), Some(1));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

#[test]
fn elect_runs_a_command_while_leader() {
    let s = Service::start(3);
    let out = verb(&s, &["elect", "cron", "--value", "host-a", "--", "sh", "-c", "echo leading; exit 0"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("leading"));
}

/// The service API is guarded as a real node's is: with `--api-token-file` every request needs
/// the bearer token (401 without it, or with another), a loopback API answers only a loopback
/// `Host` (421: DNS rebinding), the `lease` verb sends the token from `--api-token-file`, and a
/// non-loopback `--api` without TLS and client authentication (or --insecure) is refused at
/// start with one line.
#[test]
fn the_api_asks_for_its_bearer_token_and_a_loopback_host() {
    let dir = std::env::temp_dir().join(format!("ringleader-svc-token-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let token_file = dir.join("api.token");
    common::write_private(&token_file, "a-token-of-at-least-16-chars\n");
    let base = free_base(1, LANE);
    let mut child = spawn(
        Command::new(env!("CARGO_BIN_EXE_ringleader"))
            .args([
                "serve",
                "--api",
                &format!("127.0.0.1:{base}"),
                "--listen",
                &format!("127.0.0.1:{}", base + 1),
            ])
            .arg("--data-dir")
            .arg(dir.join("data"))
            .arg("--api-token-file")
            .arg(&token_file)
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let url = format!("http://127.0.0.1:{base}/status");
    let ask = |auth: Option<&str>, host: Option<&str>| -> Option<u16> {
        AGENT.with(|a| {
            let mut r = a.get(&url);
            if let Some(auth) = auth {
                r = r.header("authorization", auth);
            }
            if let Some(host) = host {
                r = r.header("host", host);
            }
            r.call().ok().map(|r| r.status().as_u16())
        })
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while ask(None, None).is_none() {
        assert!(Instant::now() < deadline, "the node never answered");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(ask(None, None), Some(401));
    assert_eq!(ask(Some("Bearer not-the-token-at-all"), None), Some(401));
    assert_eq!(ask(Some("Bearer a-token-of-at-least-16-chars"), None), Some(200));
    assert_eq!(ask(Some("Bearer a-token-of-at-least-16-chars"), Some("evil.example")), Some(421));

    let verb = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_ringleader"))
            .args(["lease", "grant", "--ttl", "5s", "--endpoints", &format!("http://127.0.0.1:{base}")])
            .args(extra)
            .output()
            .unwrap()
    };
    let without = verb(&[]);
    assert_eq!(without.status.code(), Some(1), "{}", String::from_utf8_lossy(&without.stdout));
    let with = verb(&["--api-token-file", token_file.to_str().unwrap()]);
    assert!(with.status.success(), "{}", String::from_utf8_lossy(&with.stderr));
    let _ = child.kill();
    let _ = child.wait();

    let open = Command::new(env!("CARGO_BIN_EXE_ringleader"))
        .args(["serve", "--api", "0.0.0.0:0", "--listen", "127.0.0.1:0"])
        .arg("--data-dir")
        .arg(dir.join("data2"))
        .output()
        .unwrap();
    assert_eq!(open.status.code(), Some(1));
    let err = String::from_utf8_lossy(&open.stderr);
    assert!(
        err.contains("needs TLS") && err.contains("--insecure") && err.trim().lines().count() == 1,
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A POST with an `Idempotency-Key` header.
fn post_keyed(port: u16, path: &str, key: &str, body: Value) -> (u16, Value) {
    let url = format!("http://127.0.0.1:{port}{path}");
    let mut r = AGENT
        .with(|a| {
            a.post(&url)
                .header("content-type", "application/json")
                .header("idempotency-key", key)
                .send(body.to_string())
        })
        .expect("the node answers");
    let status = r.status().as_u16();
    (status, serde_json::from_str(&r.body_mut().read_to_string().unwrap()).unwrap_or(Value::Null))
}

/// A grant retried with its idempotency key, on another node, is applied once: the retry is
/// answered with the first grant's lease, and only one lease exists; a new key grants anew. A
/// malformed key, a node's own session, and a key on an acquire are refused 400.
#[test]
fn a_grant_retried_with_its_idempotency_key_on_another_node_is_applied_once() {
    let s = Service::start(3);
    // Read on node 3, which answers last and so has applied every grant.
    let leases = || sample(&metrics(s.port(3)), "ringleader_service_leases{id=\"3\"}");
    let before = leases();
    let own = "ab".repeat(32);
    let grant = json!({ "ttl_ms": 60_000, "key": own });
    let (code, first) = post_keyed(s.port(1), "/v1/lease/grant", "4242:7", grant.clone());
    assert_eq!(code, 200, "{first}");
    assert_eq!(first["key"], json!(own), "the grant answers the key the client chose");
    let (code, again) = post_keyed(s.port(2), "/v1/lease/grant", "4242:7", grant.clone());
    assert_eq!(code, 200, "{again}");
    assert_eq!(again["lease"], first["lease"], "the retry answers the first grant");
    let (code, other) = post_keyed(s.port(3), "/v1/lease/grant", "4242:8", grant.clone());
    assert_eq!(code, 200, "{other}");
    assert_ne!(other["lease"], first["lease"], "a new key is a new request");
    assert_eq!(leases(), before + 2.0, "two grants applied, not three");

    for bad in ["4242", "x:1", "0:1", "9223372036854775808:1"] {
        let (code, body) = post_keyed(s.port(1), "/v1/lease/grant", bad, grant.clone());
        assert_eq!((code, body["reason"].as_str()), (400, Some("bad_request")), "{bad}: {body}");
    }
    // A retried grant must bring its key: the node could not answer the first grant's key.
    let (code, body) = post_keyed(s.port(1), "/v1/lease/grant", "4242:10", json!({ "ttl_ms": 60_000 }));
    assert_eq!((code, body["reason"].as_str()), (400, Some("bad_request")), "{body}");
    assert!(body["error"].as_str().unwrap_or("").contains("needs a key of its own"), "{body}");
    let acquire = json!({ "name": "k", "lease": first["lease"], "wait": false });
    let (code, body) = post_keyed(s.port(1), "/v1/lock/acquire", "4242:9", acquire);
    assert_eq!((code, body["reason"].as_str()), (400, Some("bad_request")), "{body}");
}

/// A lease is a capability: with its id alone, as `GET /v1/lock/NAME` shows it, or with a
/// wrong key, nobody can release its lock, keep it alive, revoke it, queue or campaign with
/// it, on any node; the grantee, with the key its grant answered, can. (An attacker once
/// released a victim's lock with `{"name":"victim","lease":<id from GET>}` and was granted it
/// while the victim's command still ran.)
#[test]
fn a_lease_id_alone_acts_on_nothing() {
    let s = Service::start(3);
    let victim = s.grant(1, 60_000);
    let (code, got) = post(s.port(1), "/v1/lock/acquire", json!({ "name": "victim", "lease": victim }));
    assert_eq!(code, 200, "{got}");
    let (_, view) = call(s.port(2), "GET", "/v1/lock/victim", None);
    let seen = view["holder"]["lease"].as_u64().expect("GET shows the holder's lease id");
    let attacker = s.grant(2, 60_000);
    let wrong = "00".repeat(32);
    for key in [json!(null), json!(wrong)] {
        let attempts = [
            ("/v1/lock/release", json!({ "name": "victim", "lease": seen, "key": key })),
            ("/v1/lease/revoke", json!({ "lease": seen, "key": key })),
            ("/v1/lease/keepalive", json!({ "lease": seen, "key": key })),
            ("/v1/lock/acquire", json!({ "name": "other", "lease": seen, "key": key, "wait": false })),
            ("/v1/election/campaign", json!({ "election": "e", "lease": seen, "key": key, "value": "x" })),
            ("/v1/election/resign", json!({ "election": "e", "lease": seen, "key": key })),
        ];
        for (path, body) in attempts {
            for node in 1..=3 {
                let (code, answer) = post(s.port(node), path, body.clone());
                assert_eq!(
                    (code, answer["reason"].as_str()),
                    (403, Some("not_owner")),
                    "{path} on {node}: {answer}"
                );
            }
        }
    }
    let (code, body) =
        post(s.port(3), "/v1/lock/acquire", json!({ "name": "victim", "lease": attacker, "wait": false }));
    assert_eq!((code, body["reason"].as_str()), (409, Some("busy")), "the victim still holds it: {body}");
    let (_, view) = call(s.port(3), "GET", "/v1/lock/victim", None);
    assert_eq!(view["holder"]["lease"], json!(victim), "{view}");
    // A malformed key is a bad request, not a refusal to guess at.
    let (code, body) = post(s.port(1), "/v1/lease/keepalive", json!({ "lease": victim, "key": "zz" }));
    assert_eq!((code, body["reason"].as_str()), (400, Some("bad_request")), "{body}");
    // The grantee, with its key (added by `post`, as a client does), acts on it.
    let (code, body) = post(s.port(2), "/v1/lock/release", json!({ "name": "victim", "lease": victim }));
    assert_eq!(code, 200, "{body}");
    assert_eq!(post(s.port(3), "/v1/lease/revoke", json!({ "lease": victim })).0, 200);
}

/// A write whose name and value alone pass the backend quota is refused 507 `no_space`; a
/// smaller one is served.
#[test]
fn a_write_past_the_backend_quota_is_refused_507() {
    let s = Service::start_with(1, &["--quota-backend-bytes=2048"]);
    let lease = s.grant(1, 60_000);
    let big = "v".repeat(4096);
    let (code, body) =
        post(s.port(1), "/v1/election/campaign", json!({ "election": "e", "lease": lease, "value": big }));
    assert_eq!((code, body["reason"].as_str()), (507, Some("no_space")), "{body}");
    assert!(body["error"].as_str().unwrap().contains("backend quota of 2048 bytes"), "{body}");
    let (code, body) = post(
        s.port(1),
        "/v1/election/campaign",
        json!({ "election": "e", "lease": lease, "value": "small" }),
    );
    assert_eq!(code, 200, "{body}");
}

/// `cluster --service --api-token-file F` gives every node's APIs the token: a request without
/// it is refused, one with it (the scheme name in any case, RFC 9110) is served.
#[test]
fn the_launcher_gives_service_nodes_the_api_token_the_scheme_name_is_case_insensitive_and_cross_site_posts_are_refused()
 {
    let api = free_base(1, LANE);
    let peer = free_base(1, LANE);
    let dir = std::env::temp_dir().join(format!("ringleader-service-token-{}-{api}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let token = "service-t0k3n-0123456789";
    common::write_private(&dir.join("api.token"), format!("{token}\n"));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ringleader"));
    cmd.args(["cluster", "--service", "--nodes", "1"])
        .args(["--api-base-port", &api.to_string(), "--peer-base-port", &peer.to_string()])
        .arg("--data-dir")
        .arg(dir.join("data"))
        .arg("--secret-file")
        .arg(dir.join("cluster.secret"))
        .arg("--api-token-file")
        .arg(dir.join("api.token"))
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let s = Service { child: spawn(&mut cmd), api, n: 1, dir };
    let url = format!("http://127.0.0.1:{}/status", s.port(1));
    let get = |auth: Option<String>| {
        AGENT.with(|a| {
            let mut req = a.get(&url);
            if let Some(v) = auth {
                req = req.header("authorization", &v);
            }
            req.call().ok().map(|r| r.status().as_u16())
        })
    };
    let t0 = Instant::now();
    while get(Some(format!("Bearer {token}"))) != Some(200) {
        assert!(t0.elapsed() < Duration::from_secs(30), "the node never served /status with the token");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(get(None), Some(401));
    assert_eq!(get(Some("Bearer wrong-token-0123456789".into())), Some(401));
    assert_eq!(get(Some(format!("bearer {token}"))), Some(200));
    assert_eq!(get(Some(format!("BEARER {token}"))), Some(200));
    // A page on another site cannot make the operator's browser change anything, even with the
    // token (a browser never has it; this shows the refusal comes first).
    let grant = format!("http://127.0.0.1:{}/v1/lease/grant", s.port(1));
    let cross = AGENT.with(|a| {
        a.post(&grant)
            .header("authorization", &format!("Bearer {token}"))
            .header("origin", "http://evil.example")
            .header("content-type", "text/plain")
            .send(r#"{"ttl_ms":3600000}"#)
            .ok()
            .map(|r| r.status().as_u16())
    });
    assert_eq!(cross, Some(403));
    // A form post with no `Origin` (what a page could make a browser send without a
    // preflight) is refused too: every request that changes state takes a JSON body.
    let form = AGENT.with(|a| {
        a.post(&grant)
            .header("authorization", &format!("Bearer {token}"))
            .header("content-type", "text/plain")
            .send(r#"{"ttl_ms":3600000}"#)
            .ok()
            .map(|r| r.status().as_u16())
    });
    assert_eq!(form, Some(400));
}

/// `serve --planted` (deploy/nemesis.sh) reaches the node's state machine in the test build:
/// `--list-planted` names the bugs, and with `fast-clock` planted a lease's remaining time runs
/// down faster than the wall clock, which the real replicated clock never does (it lags the
/// leader's). A build without planted bugs refuses both flags in one line; an unknown name is
/// refused naming the allowed ones.
#[test]
fn serve_takes_a_planted_bug_in_the_test_build() {
    let bin = env!("CARGO_BIN_EXE_ringleader");
    let list = Command::new(bin).args(["serve", "--list-planted"]).output().unwrap();
    if list.status.code() == Some(1) {
        let err = String::from_utf8_lossy(&list.stderr);
        assert!(err.contains("no planted bugs"), "{err}");
        let out = Command::new(bin).args(["serve", "--planted", "fast-clock"]).output().unwrap();
        assert_eq!(out.status.code(), Some(1));
        assert!(String::from_utf8_lossy(&out.stderr).contains("`planted` feature"));
        return;
    }
    assert!(list.status.success(), "{list:?}");
    let names = String::from_utf8_lossy(&list.stdout).to_string();
    assert_eq!(names, "fencing-reused\ngrant-while-held\nfast-clock\nwatch-skips\nstale-read\n");
    let out = Command::new(bin).args(["serve", "--planted", "off-by-one"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--planted \"off-by-one\" is not a planted bug; allowed: fencing-reused"), "{err}");

    let dir = std::env::temp_dir().join(format!("ringleader-svc-planted-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let base = free_base(1, LANE);
    let mut child = spawn(
        Command::new(bin)
            .args(["serve", "--planted", "fast-clock", "--api", &format!("127.0.0.1:{base}")])
            .args(["--listen", &format!("127.0.0.1:{}", base + 1)])
            .arg("--data-dir")
            .arg(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    common::until(Duration::from_secs(30), "the planted node answers", || {
        try_call(base, "GET", "/status", None).filter(|(s, _)| *s == 200)
    });
    let ttl_ms = 60_000u64;
    let t0 = Instant::now();
    let (status, granted) = post(base, "/v1/lease/grant", json!({ "ttl_ms": ttl_ms }));
    assert_eq!(status, 200, "{granted}");
    let lease = granted["lease"].as_u64().unwrap();
    // Until the lease has run down twice as fast as the wall clock since the grant was sent.
    common::until(Duration::from_secs(20), "the lease runs down faster than the wall clock", || {
        let (_, v) = call(base, "GET", &format!("/v1/lease/{lease}"), None);
        let spent = ttl_ms - v["remaining_ms"].as_u64()?;
        (spent >= 2000 && spent as u128 > 2 * t0.elapsed().as_millis()).then_some(())
    });
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
}
