//! What the service's data directories survive, tried as an operator would: `cluster --service`
//! relaunched after `kill -9` of everything keeps the acknowledged lock; a node whose directory
//! was lost refuses to start (no second holder); the lost disk is replaced by removing the
//! member and adding it back empty with `--join`; a restored old copy is refused once the
//! leader's heartbeat proves it; a damaged `raft.redb` gives one line and exit 1. Waits are
//! bounded polls, never fixed sleeps.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{call, free_base, spawn, try_call, until};

/// This module's lane of loopback ports ([`common::free_base`]).
const LANE: u16 = 56;

const LIMIT: Duration = Duration::from_secs(30);

fn post(port: u16, path: &str, body: Value) -> (u16, Value) {
    call(port, "POST", path, Some(body))
}

fn status(port: u16) -> Option<Value> {
    let (code, body) = try_call(port, "GET", "/status", None)?;
    (code == 200).then_some(body)
}

/// Waits until the nodes on `ports` name one leader; returns its id.
fn leader(ports: &[u16]) -> u64 {
    until(LIMIT, "an agreed leader", || {
        let leaders: Vec<Option<u64>> =
            ports.iter().map(|&p| status(p).and_then(|s| s["leader"].as_u64())).collect();
        let l = (*leaders.first()?)?;
        leaders.iter().all(|x| *x == Some(l)).then_some(l)
    })
}

fn grant(port: u16) -> u64 {
    let (code, body) = post(port, "/v1/lease/grant", json!({ "ttl_ms": 600_000 }));
    assert_eq!(code, 200, "{body}");
    body["lease"].as_u64().unwrap()
}

/// Asserts that lock `name` is held by `holder` (its lease and fencing token), and that a
/// try-lock by a new lease through `port` is refused.
fn still_held(port: u16, name: &str, holder: &Value) {
    let view = until(LIMIT, "a linearizable read of the lock", || {
        let (code, view) = try_call(port, "GET", &format!("/v1/lock/{name}"), None)?;
        (code == 200).then_some(view)
    });
    assert_eq!(&view["holder"], holder, "{view}");
    let other = grant(port);
    let (code, busy) = post(port, "/v1/lock/acquire", json!({ "name": name, "lease": other, "wait": false }));
    assert_eq!((code, busy["reason"].as_str()), (409, Some("busy")), "a second holder: {busy}");
}

fn write_secret(path: &Path) {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path).unwrap();
    writeln!(f, "{}", "5a".repeat(32)).unwrap();
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ringleader-durability-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `ringleader cluster --service --nodes 3`, relaunched with the same command.
struct Launcher {
    api: u16,
    peer: u16,
    dir: PathBuf,
    child: Option<Child>,
    launches: u32,
}

impl Launcher {
    fn launch(&mut self) {
        self.launches += 1;
        let log = std::fs::File::create(self.dir.join(format!("launch-{}.err", self.launches))).unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_ringleader"));
        cmd.args(["cluster", "--service", "--nodes", "3"])
            .args(["--api-base-port", &self.api.to_string(), "--peer-base-port", &self.peer.to_string()])
            .arg("--data-dir")
            .arg(self.dir.join("data"))
            .arg("--secret-file")
            .arg(self.dir.join("cluster.secret"))
            .stdout(Stdio::null())
            .stderr(log);
        self.child = Some(spawn(&mut cmd));
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(self.dir.join(format!("launch-{}.err", self.launches))).unwrap_or_default()
    }

    /// `kill -9` of the launcher: its nodes die with it (parent-death signal).
    fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        for id in 1..=3 {
            until(LIMIT, "the node's API is gone", || status(self.api + id).is_none().then_some(()));
        }
    }
}

impl Drop for Launcher {
    fn drop(&mut self) {
        if let Some(child) = &self.child {
            // SAFETY: signalling our own child.
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        }
        if let Some(mut child) = self.child.take() {
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn a_relaunch_after_kill_9_keeps_the_lock_and_a_node_whose_directory_was_lost_refuses_to_start() {
    let (api, peer) = (free_base(3, LANE), free_base(3, LANE));
    let mut l = Launcher { api, peer, dir: scratch("relaunch"), child: None, launches: 0 };
    l.launch();
    let ports = [api + 1, api + 2, api + 3];
    leader(&ports);
    let lease = grant(api + 1);
    let (code, got) = post(api + 1, "/v1/lock/acquire", json!({ "name": "precious", "lease": lease }));
    assert_eq!(code, 200, "{got}");
    let holder = json!({ "lease": lease, "fencing": got["fencing"] });

    // Everything killed, then the same command: the lock, its lease and its token are kept.
    l.kill9();
    l.launch();
    leader(&ports);
    still_held(api + 2, "precious", &holder);
    let (code, kept) = call(api + 3, "GET", &format!("/v1/lease/{lease}"), None);
    assert_eq!(code, 200, "the lease survived: {kept}");

    // Everything killed again, and node 3's directory lost: node 3 refuses to start (one line,
    // exit 1) and nodes 1 and 2 still hold the lock for its one holder.
    l.kill9();
    std::fs::remove_dir_all(l.dir.join("data/node-3")).unwrap();
    l.launch();
    let refusal = until(LIMIT, "node 3 refuses to start", || {
        let err = l.stderr();
        err.contains("[cluster] node 3 exited: exit status: 1").then_some(err)
    });
    let line: Vec<&str> = refusal.lines().filter(|l| l.starts_with("[node 3]")).collect();
    assert_eq!(line.len(), 1, "{refusal}");
    assert!(line[0].contains("holds no Raft log") && line[0].contains("--join"), "{refusal}");
    assert!(!l.dir.join("data/node-3/raft.redb").exists(), "the refused node created nothing");
    leader(&ports[..2]);
    still_held(api + 1, "precious", &holder);
}

/// `ringleader serve` processes, started one by one.
struct Nodes {
    api: u16,
    peer: u16,
    dir: PathBuf,
    running: Vec<(u16, Child)>,
}

impl Nodes {
    fn command(&self, id: u16, flags: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_ringleader"));
        cmd.args(["serve", "--id", &id.to_string(), "--listen", &format!("127.0.0.1:{}", self.peer + id)])
            .args(["--api", &format!("127.0.0.1:{}", self.api + id)])
            .arg("--data-dir")
            .arg(self.dir.join(format!("node-{id}")))
            .arg("--secret-file")
            .arg(self.dir.join("cluster.secret"))
            .args(flags);
        for m in (1..=3).filter(|&m| m != id) {
            cmd.args(["--peer", &format!("{m}=127.0.0.1:{}", self.peer + m)]);
        }
        cmd
    }

    fn start(&mut self, id: u16, flags: &[&str]) {
        let mut cmd = self.command(id, flags);
        cmd.stdout(Stdio::null()).stderr(Stdio::null());
        self.running.push((id, spawn(&mut cmd)));
        until(LIMIT, "the node's API answers", || status(self.api + id));
    }

    /// Starts node `id` expecting it to refuse: its stderr, after it exited 1.
    fn refused(&self, id: u16, flags: &[&str]) -> String {
        let mut cmd = self.command(id, flags);
        cmd.stdout(Stdio::null()).stderr(Stdio::piped());
        let out = spawn(&mut cmd).wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
        assert!(!err.contains("panicked"), "{err}");
        err
    }

    fn kill(&mut self, id: u16) {
        let Some(i) = self.running.iter().position(|(n, _)| *n == id) else { return };
        let (_, mut child) = self.running.remove(i);
        let _ = child.kill();
        let _ = child.wait();
    }

    /// Waits for node `id` to exit by itself; its exit code.
    fn exits(&mut self, id: u16) -> Option<i32> {
        let i = self.running.iter().position(|(n, _)| *n == id).unwrap();
        let code = until(LIMIT, "the node exits", || self.running[i].1.try_wait().unwrap().map(|s| s.code()));
        self.running.remove(i);
        code
    }
}

impl Drop for Nodes {
    fn drop(&mut self) {
        for (_, mut child) in std::mem::take(&mut self.running) {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn three_nodes(name: &str) -> Nodes {
    let (api, peer) = (free_base(3, LANE), free_base(3, LANE));
    let dir = scratch(name);
    write_secret(&dir.join("cluster.secret"));
    let mut nodes = Nodes { api, peer, dir, running: Vec::new() };
    for id in 1..=3 {
        nodes.start(id, &["--bootstrap", "--cluster-id", "durability-test", "--snapshot-every", "50"]);
    }
    leader(&[api + 1, api + 2, api + 3]);
    nodes
}

#[test]
fn a_lost_disk_is_replaced_by_removing_the_member_and_adding_it_back_empty() {
    let mut n = three_nodes("replace");
    let api = n.api;
    let lease = grant(api + 1);
    let (code, got) = post(api + 1, "/v1/lock/acquire", json!({ "name": "precious", "lease": lease }));
    assert_eq!(code, 200, "{got}");
    let holder = json!({ "lease": lease, "fencing": got["fencing"] });
    for _ in 0..120 {
        grant(api + 1);
    }
    // Requests proposed by node 3 in its first life: the state machine keeps their replies
    // under node 3's request keys.
    let first_life: Vec<u64> = (0..3).map(|_| grant(api + 3)).collect();

    // Node 3's disk is lost: started again as a member, it refuses.
    n.kill(3);
    std::fs::remove_dir_all(n.dir.join("node-3")).unwrap();
    let err = n.refused(3, &[]);
    assert!(err.contains("holds no Raft log") && err.contains("member remove 3"), "{err}");
    // Told a wrong cluster id as a joiner of a directory it does not have: still no start
    // without the id.
    let err = n.refused(3, &["--join"]);
    assert!(err.contains("--join needs --cluster-id"), "{err}");

    // The procedure: remove the member, start it empty with --join, add it back. The leader
    // sends it a snapshot; a snapshot lost on the way (the new member's link not up yet) must
    // be reported to raft-rs (`report_snapshot`), or the member waits for it forever.
    // (Node 3 may have been the leader: the others elect one first, and a removal asked
    // during that election is asked again, as an operator would.)
    let target = replace_member_3(&mut n, api);
    assert!(target > 120, "{target}");
    until(LIMIT, "node 3 catches up", || {
        let three = status(api + 3)?;
        (three["members"] == json!([1, 2, 3]) && three["applied"].as_u64()? >= target).then_some(())
    });

    // Node 3's new life proposes under request keys of its own: its first grants are new
    // leases, not its first life's answered again (a fresh directory whose incarnation counted
    // from 1 again reused the first life's keys).
    let new_life: Vec<u64> = (0..3).map(|_| grant(api + 3)).collect();
    for l in &new_life {
        assert!(!first_life.contains(l), "node 3's new life was answered {l}, a lease of its first life");
    }

    // Node 3 holds the history: with node 2 gone, nodes 1 and 3 still know the one holder.
    n.kill(2);
    leader(&[api + 1, api + 3]);
    still_held(api + 3, "precious", &holder);
}

/// The operator's procedure for node 3's lost disk, once nodes 1 and 2 are up: wait for their
/// leader, remove member 3 (again if asked during an election), start node 3 empty with
/// `--join`, add it back. Returns what node 1 had applied once the addition was done: caught
/// up means applied at least that (the replicated clock keeps adding entries).
fn replace_member_3(n: &mut Nodes, api: u16) -> u64 {
    leader(&[api + 1, api + 2]);
    until(LIMIT, "member 3 removed", || {
        (call(api + 1, "DELETE", "/v1/members/3", None).0 == 200).then_some(())
    });
    n.start(3, &["--join", "--cluster-id", "durability-test"]);
    // Added as a learner, promoted once it caught up: while it takes its snapshot the answer is
    // 409 `learner_not_ready`, and the operator asks again (as `deploy/nemesis.sh` does). A
    // change the leader dropped (it had not yet applied the removal just made) is answered 503
    // `unavailable` after the request timeout, which also says to ask again.
    until(LIMIT, "member 3 added back and promoted", || {
        let (code, body) =
            post(api + 1, "/v1/members", json!({ "id": 3, "peer": format!("127.0.0.1:{}", n.peer + 3) }));
        match (code, body["reason"].as_str()) {
            (200, _) => Some(()),
            (409, Some("learner_not_ready")) | (503, Some("unavailable")) => None,
            _ => panic!("adding member 3 back: {code} {body}"),
        }
    });
    status(api + 1).unwrap()["applied"].as_u64().unwrap()
}

/// A snapshot travels as one peer message: one larger than the transport's frame limit (8 MiB
/// until the limit followed the backend quota) was refused by the writer, the connection reset,
/// the snapshot sent again, and the new member never caught up.
#[test]
fn a_replaced_member_catches_up_from_a_snapshot_larger_than_eight_mib() {
    let (api, peer, grpc) = (free_base(3, LANE), free_base(3, LANE), free_base(3, LANE));
    let dir = scratch("big-snapshot");
    write_secret(&dir.join("cluster.secret"));
    let mut n = Nodes { api, peer, dir, running: Vec::new() };
    for id in 1..=3 {
        let grpc_addr = format!("127.0.0.1:{}", grpc + id);
        n.start(
            id,
            &[
                "--bootstrap",
                "--cluster-id",
                "durability-test",
                "--snapshot-every",
                "50",
                "--grpc",
                &grpc_addr,
            ],
        );
    }
    leader(&[api + 1, api + 2, api + 3]);
    // Seven values of 1.4 MB: the store and its history make a snapshot of about 20 MB.
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let endpoint = format!("http://127.0.0.1:{}", grpc + 1);
        let mut c = etcd_client::Client::connect([endpoint], None).await.expect("etcd-client connects");
        for i in 0..7 {
            c.put(format!("big-{i}"), vec![b'x'; 1_400_000], None).await.expect("a 1.4 MB put");
        }
    });

    n.kill(3);
    std::fs::remove_dir_all(n.dir.join("node-3")).unwrap();
    let target = replace_member_3(&mut n, api);
    let three = until(LIMIT, "node 3 catches up from the large snapshot", || {
        let three = status(api + 3)?;
        (three["members"] == json!([1, 2, 3]) && three["applied"].as_u64()? >= target).then_some(three)
    });
    // It holds the values (the store's size as the quota counts it).
    assert!(three["store_bytes"].as_u64().unwrap() >= 7 * 1_400_000, "{three}");
}

#[test]
fn a_restored_old_copy_is_refused_once_the_leader_proves_it_is_behind() {
    let mut n = three_nodes("restored");
    let api = n.api;
    let leader_id = leader(&[api + 1, api + 2, api + 3]) as u16;
    let victim = if leader_id == 3 { 2 } else { 3 };
    // A copy of the victim's directory, taken while it is stopped.
    n.kill(victim);
    let copy = n.dir.join("copy");
    std::fs::create_dir_all(&copy).unwrap();
    let victim_dir = n.dir.join(format!("node-{victim}"));
    for entry in std::fs::read_dir(&victim_dir).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), copy.join(entry.file_name())).unwrap();
    }
    n.start(victim, &[]);
    for _ in 0..30 {
        grant(api + leader_id);
    }
    until(LIMIT, "the victim acknowledged the new entries", || {
        let (l, v) = (status(api + leader_id)?, status(api + victim)?);
        (v["applied"] == l["applied"]).then_some(())
    });
    // The old copy put back: the leader's next heartbeat proves it lost acknowledged entries.
    n.kill(victim);
    std::fs::remove_dir_all(&victim_dir).unwrap();
    std::fs::rename(&copy, &victim_dir).unwrap();
    let mut cmd = n.command(victim, &[]);
    let err_path = n.dir.join("victim.err");
    cmd.stdout(Stdio::null()).stderr(std::fs::File::create(&err_path).unwrap());
    n.running.push((victim, spawn(&mut cmd)));
    assert_eq!(n.exits(victim), Some(1));
    let err = std::fs::read_to_string(&err_path).unwrap();
    assert!(err.contains("an old or emptied copy") && err.contains("--join"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// One `ringleader serve` node with no peers, its log in `dir`.
fn single(dir: &Path, api: u16) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ringleader"));
    cmd.args(["serve", "--api", &format!("127.0.0.1:{api}"), "--listen", &format!("127.0.0.1:{}", api + 1)])
        .arg("--data-dir")
        .arg(dir);
    cmd
}

/// Starts `cmd` expecting it to refuse with one line on stderr, naming `file`, and exit 1.
fn refuses(cmd: &mut Command, file: &Path) -> String {
    cmd.stdout(Stdio::null()).stderr(Stdio::piped());
    let out = spawn(cmd).wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(!err.contains("panicked") && !err.contains("backtrace"), "{err}");
    assert!(err.contains(&file.display().to_string()), "names {}: {err}", file.display());
    err
}

/// A log with some history: a node started, `n` leases granted (ttl 10 min), the node stopped.
fn with_history(dir: &Path, api: u16, n: usize) -> Vec<u64> {
    let mut child = spawn(single(dir, api).stdout(Stdio::null()).stderr(Stdio::null()));
    until(LIMIT, "the node answers", || status(api));
    let leases = (0..n).map(|_| grant(api)).collect();
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let _ = child.wait();
    leases
}

#[test]
fn a_truncated_or_corrupt_log_gives_one_line_and_exit_1() {
    let base = scratch("corrupt");
    let api = free_base(1, LANE);

    let dir = base.join("truncated");
    with_history(&dir, api, 50);
    let file = dir.join("raft.redb");
    let len = std::fs::metadata(&file).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(&file).unwrap().set_len(len / 3).unwrap();
    let err = refuses(&mut single(&dir, api), &file);
    assert!(err.contains("--join") && err.contains("backup"), "says what to do: {err}");

    let dir = base.join("scattered");
    with_history(&dir, api, 50);
    let file = dir.join("raft.redb");
    let mut bytes = std::fs::read(&file).unwrap();
    for page in bytes.chunks_mut(4096).skip(1) {
        let (mid, len) = (page.len() / 2, page.len());
        page[mid..(mid + 64).min(len)].fill(0xa5);
    }
    std::fs::write(&file, &bytes).unwrap();
    refuses(&mut single(&dir, api), &file);

    // A damaged identity file, and a directory of another node.
    let dir = base.join("identity");
    with_history(&dir, api, 1);
    std::fs::write(dir.join("identity"), "cluster=x\nnode=two\n").unwrap();
    refuses(&mut single(&dir, api), &dir.join("identity"));
    std::fs::write(dir.join("identity"), "cluster=x\nnode=2\n").unwrap();
    let err = refuses(&mut single(&dir, api), &dir);
    assert!(err.contains("belongs to node 2"), "{err}");
    let _ = std::fs::remove_dir_all(&base);
}

/// A full disk and a read-only directory, on a small tmpfs (needs root and `mount`; skipped
/// with a message otherwise): the node stops, or refuses to start, with one line saying what
/// to do; once there is room again it restarts with every lease it acknowledged.
#[test]
fn a_full_disk_or_a_read_only_directory_stops_the_node_with_one_line_and_loses_nothing() {
    let base = scratch("full");
    let mount = base.join("tmpfs");
    std::fs::create_dir_all(&mount).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=3m", "tmpfs"])
        .arg(&mount)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        eprintln!("skipped: cannot mount a tmpfs here (needs root and mount)");
        return;
    }
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    let _unmount = Unmount(mount.clone());
    let api = free_base(1, LANE);
    let dir = mount.join("node");
    let err_path = base.join("node.err");
    let mut cmd = single(&dir, api);
    cmd.stdout(Stdio::null()).stderr(std::fs::File::create(&err_path).unwrap());
    let mut child = spawn(&mut cmd);
    until(LIMIT, "the node answers", || status(api));
    // Fill the file system, then write until the node stops.
    let filler = mount.join("filler");
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&filler).unwrap();
        let chunk = vec![0u8; 64 * 1024];
        while f.write_all(&chunk).is_ok() {}
        let _ = f.sync_all();
    }
    let mut acknowledged = Vec::new();
    for _ in 0..2000 {
        match try_call(api, "POST", "/v1/lease/grant", Some(json!({ "ttl_ms": 600_000 }))) {
            Some((200, body)) => acknowledged.push(body["lease"].as_u64().unwrap()),
            _ => break,
        }
    }
    let code = until(LIMIT, "the node stops", || child.try_wait().unwrap().map(|s| s.code()));
    assert_eq!(code, Some(1));
    let err = std::fs::read_to_string(&err_path).unwrap();
    assert!(err.contains("disk is full") && err.contains("raft.redb"), "{err}");
    assert!(!err.contains("panicked"), "{err}");

    // Room again: the node restarts with every lease it acknowledged.
    std::fs::remove_file(&filler).unwrap();
    let mut child = spawn(single(&dir, api).stdout(Stdio::null()).stderr(Stdio::null()));
    until(LIMIT, "the node answers again", || status(api));
    for lease in &acknowledged {
        let (code, body) = call(api, "GET", &format!("/v1/lease/{lease}"), None);
        assert_eq!(code, 200, "acknowledged lease {lease} lost: {body}");
    }
    println!("full disk: {} leases acknowledged before the node stopped, all kept", acknowledged.len());
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let _ = child.wait();

    // The file system read-only: the node refuses to start.
    assert!(Command::new("mount").args(["-o", "remount,ro"]).arg(&mount).status().unwrap().success());
    let err = refuses(&mut single(&dir, api), &dir.join("raft.redb"));
    assert!(err.contains("not writable"), "{err}");
    drop(_unmount);
    let _ = std::fs::remove_dir_all(&base);
}
