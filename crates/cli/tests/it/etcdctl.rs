//! Debian's `etcdctl` (package `etcd-client`, etcd v3.4) against a three-node
//! `ringleader cluster --service --grpc-base-port G`: put, get, del, watch, lease, txn, and the
//! locks and elections that etcdctl builds out of KV transactions and watches (Go's
//! `clientv3/concurrency`). Every wait is for an event (a line of output, an exit) with a bound;
//! nothing sleeps.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};

use crate::common::{FORK, free_base};

/// This module's lane of loopback ports ([`common::free_base`]).
const LANE: u16 = 40;

/// The longest any one step may take.
const BOUND: Duration = Duration::from_secs(20);

/// The `etcdctl` binary; the tests fail, naming the package, when it is missing.
fn etcdctl() -> PathBuf {
    let found = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join("etcdctl"))
        .find(|p| p.is_file());
    found.expect(
        "etcdctl is not installed: install Debian's package `etcd-client` (apt-get install etcd-client)",
    )
}

struct Cluster {
    child: std::process::Child,
    endpoints: String,
    /// The HTTP API's base port (node `i` serves on `api + i`).
    api: u16,
    dir: PathBuf,
}

impl Cluster {
    /// Three nodes with the gRPC API, once a put through etcdctl succeeds.
    async fn start() -> Cluster {
        let n = 3u16;
        let (api, peer, grpc) = (free_base(n, LANE), free_base(n, LANE), free_base(n, LANE));
        let dir = std::env::temp_dir().join(format!("ringleader-etcdctl-{}-{grpc}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_ringleader"));
        cmd.args(["cluster", "--service", "--nodes", &n.to_string()])
            .args(["--api-base-port", &api.to_string(), "--peer-base-port", &peer.to_string()])
            .args(["--grpc-base-port", &grpc.to_string()])
            .arg("--data-dir")
            .arg(dir.join("data"))
            .arg("--secret-file")
            .arg(dir.join("cluster.secret"))
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let child = {
            let _held = FORK.lock().unwrap_or_else(|e| e.into_inner());
            cmd.spawn().expect("the ringleader binary starts")
        };
        let endpoints = (1..=n).map(|i| format!("127.0.0.1:{}", grpc + i)).collect::<Vec<_>>().join(",");
        let c = Cluster { child, endpoints, api, dir };
        let t0 = Instant::now();
        loop {
            let out = c.command(&["--command-timeout=2s", "put", "ready", "1"]).output().await.unwrap();
            if out.status.success() {
                break;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(40),
                "the cluster took no put within 40s: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        c
    }

    /// `etcdctl --endpoints=… ARGS`, stdout and stderr piped, killed when dropped.
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(etcdctl());
        cmd.env("ETCDCTL_API", "3")
            .arg(format!("--endpoints={}", self.endpoints))
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        // SAFETY: only async-signal-safe calls between fork and exec. A test runner started in
        // the background of a non-interactive shell has SIGINT ignored, and a child inherits
        // that: `etcdctl watch` (which relies on SIGINT's default action) would never end on
        // the SIGINT `interrupt` sends. Give every etcdctl the default action back.
        unsafe {
            cmd.pre_exec(|| {
                libc::signal(libc::SIGINT, libc::SIG_DFL);
                Ok(())
            });
        }
        cmd
    }

    /// Runs `etcdctl ARGS` to its end (bounded) and returns its stdout; fails on an error exit.
    ///
    /// A command the service answered "not committed within …; try another node" (its request
    /// timeout passed, as it can on a loaded machine right after a membership change) is run
    /// again, as the message asks, up to three times in all.
    async fn run(&self, args: &[&str]) -> String {
        let mut out = None;
        for _ in 0..3 {
            let o = tokio::time::timeout(BOUND, self.command(args).output())
                .await
                .unwrap_or_else(|_| panic!("etcdctl {args:?}: no exit within {BOUND:?}"))
                .unwrap();
            let again =
                !o.status.success() && String::from_utf8_lossy(&o.stderr).contains("not committed within");
            out = Some(o);
            if !again {
                break;
            }
        }
        let out = out.expect("one attempt");
        assert!(
            out.status.success(),
            "etcdctl {args:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// Runs `etcdctl ARGS` to its end (bounded), requires it to fail, and returns its stderr.
    async fn fails(&self, args: &[&str]) -> String {
        let out = tokio::time::timeout(BOUND, self.command(args).output())
            .await
            .unwrap_or_else(|_| panic!("etcdctl {args:?}: no exit within {BOUND:?}"))
            .unwrap();
        assert!(
            !out.status.success(),
            "etcdctl {args:?} succeeded: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        String::from_utf8(out.stderr).unwrap()
    }

    /// Spawns `etcdctl ARGS` and returns it with its stdout's lines.
    fn spawn(&self, args: &[&str]) -> (Child, Lines<BufReader<ChildStdout>>) {
        let mut child = {
            let _held = FORK.lock().unwrap_or_else(|e| e.into_inner());
            self.command(args).spawn().unwrap()
        };
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        (child, lines)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // SAFETY: signalling our own child.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The next line a spawned etcdctl prints (bounded).
async fn line(lines: &mut Lines<BufReader<ChildStdout>>, what: &str) -> String {
    tokio::time::timeout(BOUND, lines.next_line())
        .await
        .unwrap_or_else(|_| panic!("{what}: no line within {BOUND:?}"))
        .unwrap()
        .unwrap_or_else(|| panic!("{what}: etcdctl ended its output"))
}

/// Sends SIGINT to a spawned etcdctl and waits for its exit (bounded).
async fn interrupt(child: &mut Child, what: &str) {
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id().expect("still running") as i32, libc::SIGINT) };
    tokio::time::timeout(BOUND, child.wait())
        .await
        .unwrap_or_else(|_| panic!("{what}: no exit within {BOUND:?} of SIGINT"))
        .unwrap();
}

/// The header revision in `etcdctl -w json` output.
fn json_revision(out: &str) -> i64 {
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"));
    v["header"]["revision"].as_i64().unwrap_or_else(|| panic!("no header revision in {out}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn put_get_del_watch_lease_and_txn() {
    let c = Cluster::start().await;
    assert_eq!(c.run(&["put", "k", "v1"]).await, "OK\n");
    assert_eq!(c.run(&["get", "k"]).await, "k\nv1\n");
    for k in ["p/a", "p/b"] {
        c.run(&["put", k, k]).await;
    }
    assert_eq!(c.run(&["get", "--prefix", "p/"]).await, "p/a\np/a\np/b\np/b\n");
    assert_eq!(c.run(&["get", "--prefix", "--keys-only", "p/"]).await, "p/a\n\np/b\n\n");
    assert_eq!(c.run(&["del", "--prefix", "p/"]).await, "2\n");
    assert_eq!(c.run(&["get", "--prefix", "p/"]).await, "");

    // Watch from the revision of a put: no race between the watch and the write.
    let r = json_revision(&c.run(&["put", "-w", "json", "w", "first"]).await);
    let (mut watch, mut out) = c.spawn(&["watch", "w", "--rev", &r.to_string()]);
    for expected in ["PUT", "w", "first"] {
        assert_eq!(line(&mut out, "watch").await, expected);
    }
    c.run(&["put", "w", "second"]).await;
    c.run(&["del", "w"]).await;
    for expected in ["PUT", "w", "second", "DELETE", "w"] {
        assert_eq!(line(&mut out, "watch").await, expected);
    }
    interrupt(&mut watch, "watch").await;

    // A lease, a key attached to it, and its revoke.
    let granted = c.run(&["lease", "grant", "30"]).await;
    let id = granted.split_whitespace().nth(1).unwrap_or_else(|| panic!("{granted}")).to_string();
    assert!(granted.ends_with("granted with TTL(30s)\n"), "{granted}");
    c.run(&["put", "--lease", &id, "leased", "v"]).await;
    assert_eq!(c.run(&["get", "leased"]).await, "leased\nv\n");
    c.run(&["lease", "revoke", &id]).await;
    assert_eq!(c.run(&["get", "leased"]).await, "");

    // A transaction read from stdin: compares, a blank line, success requests, a blank line,
    // failure requests.
    let txn = |input: &'static str| {
        let mut cmd = c.command(&["txn"]);
        cmd.stdin(Stdio::piped());
        async move {
            let mut child = cmd.spawn().unwrap();
            child.stdin.take().unwrap().write_all(input.as_bytes()).await.unwrap();
            let out = tokio::time::timeout(BOUND, child.wait_with_output()).await.unwrap().unwrap();
            assert!(out.status.success(), "txn: {}", String::from_utf8_lossy(&out.stderr));
            String::from_utf8(out.stdout).unwrap()
        }
    };
    assert_eq!(txn("value(\"k\") = \"v1\"\n\nput k v2\n\nput k never\n\n").await, "SUCCESS\n\nOK\n");
    assert_eq!(txn("value(\"k\") = \"v1\"\n\nput k never\n\nget k\n\n").await, "FAILURE\n\nk\nv2\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_excludes_and_hands_over_in_order() {
    let c = Cluster::start().await;
    // A holds the lock (etcdctl prints the lock's key once it holds it).
    let (mut a, mut a_out) = c.spawn(&["lock", "L"]);
    let a_key = line(&mut a_out, "lock A").await;
    assert!(a_key.starts_with("L/"), "{a_key}");
    // B queues: its key appears under the lock's prefix, after A's, and B prints nothing.
    let (mut b, mut b_out) = c.spawn(&["lock", "L"]);
    let t0 = Instant::now();
    let b_key = loop {
        let keys = c.run(&["get", "--prefix", "--keys-only", "L/"]).await;
        let keys: Vec<&str> = keys.lines().filter(|l| !l.is_empty()).collect();
        if keys.len() == 2 {
            break keys.into_iter().find(|k| *k != a_key).unwrap().to_string();
        }
        assert!(t0.elapsed() < BOUND, "B never queued: {keys:?}");
    };
    let early = tokio::time::timeout(Duration::from_millis(1), b_out.next_line()).await;
    assert!(early.is_err(), "B printed while A held the lock: {early:?}");
    interrupt(&mut a, "lock A").await;
    assert_eq!(line(&mut b_out, "lock B").await, b_key);
    interrupt(&mut b, "lock B").await;
    assert_eq!(c.run(&["get", "--prefix", "L/"]).await, "", "the lock keys are gone after unlock");

    // `lock NAME cmd`: three concurrent holders run their command one after the other.
    let file = c.dir.join("critical.log");
    let script = format!("echo start $$ >> {0}; echo end $$ >> {0}", file.display());
    let runs: Vec<_> = (0..3)
        .map(|_| {
            let mut cmd = c.command(&["lock", "M", "--", "sh", "-c", &script]);
            tokio::spawn(async move { tokio::time::timeout(BOUND, cmd.output()).await })
        })
        .collect();
    for run in runs {
        let out = run.await.unwrap().expect("lock M ends within the bound").unwrap();
        assert!(out.status.success(), "lock M: {}", String::from_utf8_lossy(&out.stderr));
    }
    let log = std::fs::read_to_string(&file).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 6, "{log}");
    for pair in lines.chunks(2) {
        let (s, e) = (pair[0].strip_prefix("start "), pair[1].strip_prefix("end "));
        assert!(s.is_some() && s == e, "critical sections overlapped:\n{log}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elect_campaigns_observes_and_resigns_on_sigint() {
    let c = Cluster::start().await;
    let (mut first, mut first_out) = c.spawn(&["elect", "E", "p1"]);
    let leader = line(&mut first_out, "elect p1").await;
    assert!(leader.starts_with("E/"), "{leader}");
    assert_eq!(line(&mut first_out, "elect p1").await, "p1");
    let (mut observer, mut seen) = c.spawn(&["elect", "-l", "E"]);
    assert_eq!(line(&mut seen, "observe").await, leader);
    assert_eq!(line(&mut seen, "observe").await, "p1");
    let (mut second, mut second_out) = c.spawn(&["elect", "E", "p2"]);
    // The second candidate's key appears behind the leader's.
    let t0 = Instant::now();
    loop {
        let keys = c.run(&["get", "--prefix", "--keys-only", "E/"]).await;
        if keys.lines().filter(|l| !l.is_empty()).count() == 2 {
            break;
        }
        assert!(t0.elapsed() < BOUND, "the second candidate never queued: {keys}");
    }
    interrupt(&mut first, "elect p1").await; // resigns
    let next = line(&mut second_out, "elect p2").await;
    assert!(next.starts_with("E/") && next != leader, "{next}");
    assert_eq!(line(&mut second_out, "elect p2").await, "p2");
    assert_eq!(line(&mut seen, "observe").await, next);
    assert_eq!(line(&mut seen, "observe").await, "p2");
    interrupt(&mut second, "elect p2").await;
    interrupt(&mut observer, "observe").await;
}

/// One request to node 1's HTTP API with `Authorization: Bearer TOKEN` (when given): status
/// and JSON body.
fn http(
    c: &Cluster,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: serde_json::Value,
) -> (u16, serde_json::Value) {
    let url = format!("http://127.0.0.1:{}{path}", c.api + 1);
    let agent: ureq::Agent =
        ureq::Agent::config_builder().http_status_as_error(false).timeout_global(Some(BOUND)).build().into();
    let auth = token.map(|t| format!("Bearer {t}"));
    let response = match (method, auth) {
        ("POST", Some(a)) => agent
            .post(&url)
            .header("authorization", &a)
            .header("content-type", "application/json")
            .send(body.to_string()),
        ("POST", None) => agent.post(&url).header("content-type", "application/json").send(body.to_string()),
        ("GET", Some(a)) => agent.get(&url).header("authorization", &a).call(),
        ("GET", None) => agent.get(&url).call(),
        ("DELETE", Some(a)) => agent.delete(&url).header("authorization", &a).call(),
        (m, _) => panic!("this helper speaks GET, POST and DELETE (with a token), not {m}"),
    };
    let mut response = response.unwrap_or_else(|e| panic!("{method} {path}: {e}"));
    let status = response.status().as_u16();
    let text = response.body_mut().read_to_string().unwrap();
    (status, serde_json::from_str(&text).unwrap_or(serde_json::Value::Null))
}

/// etcd's documented auth workflow, with Debian's etcdctl: a root user, a role with a
/// permission on a prefix, a user in it, `auth enable` (etcdctl makes the `root` role when the
/// server says it is missing); then every request needs a user, a user reaches only its
/// prefix, its leases are its own, only root changes membership, and the same users work over
/// the HTTP API.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn users_and_roles_as_etcds_documentation_sets_them_up() {
    let c = Cluster::start().await;
    c.run(&["user", "add", "root:rootpw"]).await;
    c.run(&["role", "add", "app"]).await;
    c.run(&["role", "grant-permission", "app", "readwrite", "app/", "--prefix=true"]).await;
    for user in ["alice:alicepw", "bob:bobpw"] {
        c.run(&["user", "add", user]).await;
        c.run(&["user", "grant-role", user.split(':').next().unwrap(), "app"]).await;
    }
    assert_eq!(c.run(&["auth", "enable"]).await, "Authentication Enabled\n");

    // Nobody may do anything; a wrong password gets nothing.
    assert!(c.fails(&["get", "app/k"]).await.contains("user name is empty"));
    let wrong = c.fails(&["--user", "alice:nope", "get", "app/k"]).await;
    assert!(wrong.contains("authentication failed"), "{wrong}");

    // Alice writes and reads under her prefix, and nowhere else.
    let alice = ["--user", "alice:alicepw"];
    c.run(&[&alice[..], &["put", "app/k", "v"]].concat()).await;
    assert_eq!(c.run(&[&alice[..], &["get", "app/k"]].concat()).await, "app/k\nv\n");
    let denied = c.fails(&[&alice[..], &["put", "other", "v"]].concat()).await;
    assert!(denied.contains("permission denied"), "{denied}");
    assert!(c.fails(&[&alice[..], &["get", "", "--prefix"]].concat()).await.contains("permission denied"));

    // Her lease is hers: bob, in the same role, cannot revoke it nor attach a key to it.
    let granted = c.run(&[&alice[..], &["lease", "grant", "60"]].concat()).await;
    let id = granted.split_whitespace().nth(1).unwrap_or_else(|| panic!("{granted}")).to_string();
    let bob = ["--user", "bob:bobpw"];
    let not_his = c.fails(&[&bob[..], &["lease", "revoke", &id]].concat()).await;
    assert!(not_his.contains("the lease id alone acts on nothing"), "{not_his}");
    c.fails(&[&bob[..], &["put", "--lease", &id, "app/b", "v"]].concat()).await;
    c.run(&[&alice[..], &["put", "--lease", &id, "app/a", "v"]].concat()).await;
    c.run(&[&alice[..], &["lease", "revoke", &id]].concat()).await;
    assert_eq!(c.run(&[&alice[..], &["get", "app/a"]].concat()).await, "");

    // Only root sees and changes the users.
    assert!(c.fails(&[&alice[..], &["user", "list"]].concat()).await.contains("permission denied"));
    assert_eq!(c.run(&["--user", "root:rootpw", "user", "list"]).await, "alice\nbob\nroot\n");

    // The same users over the HTTP API: a token for a password, then locks under the prefix
    // only, and membership changes by root only.
    let (status, answer) = http(
        &c,
        "POST",
        "/v1/auth/authenticate",
        None,
        serde_json::json!({"name": "alice", "password": "alicepw"}),
    );
    assert_eq!(status, 200, "{answer}");
    let token = answer["token"].as_str().unwrap().to_string();
    let (status, _) = http(&c, "GET", "/v1/lock/app%2Fdb", None, serde_json::Value::Null);
    assert_eq!(status, 401, "nobody is refused");
    let (status, lease) =
        http(&c, "POST", "/v1/lease/grant", Some(&token), serde_json::json!({"ttl_ms": 60_000}));
    assert_eq!(status, 200, "{lease}");
    let acquire =
        |name: &str| serde_json::json!({"name": name, "lease": lease["lease"], "key": lease["key"]});
    let (status, answer) = http(&c, "POST", "/v1/lock/acquire", Some(&token), acquire("app/db"));
    assert_eq!(status, 200, "{answer}");
    let (status, answer) = http(&c, "POST", "/v1/lock/acquire", Some(&token), acquire("db"));
    assert_eq!((status, answer["reason"].as_str()), (403, Some("permission_denied")), "{answer}");
    let phantom = serde_json::json!({"id": 9, "peer": "127.0.0.1:1"});
    let (status, answer) = http(&c, "POST", "/v1/members", Some(&token), phantom.clone());
    assert_eq!((status, answer["reason"].as_str()), (403, Some("permission_denied")), "{answer}");
    let (_, root) = http(
        &c,
        "POST",
        "/v1/auth/authenticate",
        None,
        serde_json::json!({"name": "root", "password": "rootpw"}),
    );
    let root = root["token"].as_str().unwrap().to_string();
    let (status, answer) = http(&c, "POST", "/v1/members", Some(&root), phantom);
    // Root passes the check; the phantom never comes, so it stays a learner.
    assert_eq!((status, answer["reason"].as_str()), (409, Some("learner_not_ready")), "root may: {answer}");
    let (status, answer) = http(&c, "DELETE", "/v1/members/9", Some(&token), serde_json::Value::Null);
    assert_eq!((status, answer["reason"].as_str()), (403, Some("permission_denied")), "{answer}");
    let (status, answer) = http(&c, "DELETE", "/v1/members/9", Some(&root), serde_json::Value::Null);
    assert_eq!(status, 200, "{answer}");

    // The CLI verbs as a user (`--user NAME:PASSWORD`): a lock under a prefix the role has,
    // and nothing elsewhere or as nobody.
    let root = ["--user", "root:rootpw"];
    c.run(&[&root[..], &["role", "grant-permission", "app", "readwrite", "job/", "--prefix=true"]].concat())
        .await;
    let endpoint = format!("http://127.0.0.1:{}", c.api + 1);
    let lock = |name: &str, user: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_ringleader"));
        cmd.args(["lock", name, "--endpoints", &endpoint]).args(user).args(["--", "true"]).kill_on_drop(true);
        async move { tokio::time::timeout(BOUND, cmd.output()).await.expect("ringleader lock ends").unwrap() }
    };
    let out = lock("job", &["--user", "alice:alicepw"]).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = lock("other", &["--user", "alice:alicepw"]).await;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("permission denied"), "{err}");
    let out = lock("job", &[]).await;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("user name is empty"), "{err}");
    let out = lock("job", &["--user", "alice:wrong"]).await;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("refused the name and password"), "{err}");

    // Root turns auth off, and anyone may again.
    c.run(&["--user", "root:rootpw", "auth", "disable"]).await;
    assert_eq!(c.run(&["get", "app/k"]).await, "app/k\nv\n");
}
