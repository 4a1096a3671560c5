//! Membership changes on a running service: `ringleader serve` processes on loopback, a fourth
//! started with `--join` and added through `POST /v1/members`, a member (the leader) removed
//! through `DELETE /v1/members/ID`, and the `member` verb. Waits are bounded polls, never fixed
//! sleeps.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::{call, free_base, spawn, try_call, until};

/// This module's lane of loopback ports ([`common::free_base`]).
const LANE: u16 = 48;

/// Nodes started one by one as `ringleader serve` processes.
struct Cluster {
    api: u16,
    peer: u16,
    dir: PathBuf,
    nodes: Vec<(u16, Child)>,
}

impl Cluster {
    /// Nodes `1..=n`, one cluster.
    fn start(n: u16) -> Cluster {
        let (api, peer) = (free_base(5, LANE), free_base(5, LANE));
        let dir = std::env::temp_dir().join(format!("ringleader-membership-{}-{api}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        write_secret(&dir.join("cluster.secret"));
        let mut c = Cluster { api, peer, dir, nodes: Vec::new() };
        let all: Vec<u16> = (1..=n).collect();
        for id in 1..=n {
            c.serve(id, &all, false);
        }
        c.leader(&all);
        c
    }

    fn port(&self, id: u16) -> u16 {
        self.api + id
    }

    fn peer_addr(&self, id: u16) -> String {
        format!("127.0.0.1:{}", self.peer + id)
    }

    /// Starts node `id` knowing the members `members` (itself included).
    fn serve(&mut self, id: u16, members: &[u16], join: bool) {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_ringleader"));
        cmd.args(["serve", "--id", &id.to_string(), "--listen", &self.peer_addr(id)])
            .args(["--api", &format!("127.0.0.1:{}", self.port(id))])
            .arg("--data-dir")
            .arg(self.dir.join(format!("node-{id}")))
            .arg("--secret-file")
            .arg(self.dir.join("cluster.secret"))
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        for &m in members.iter().filter(|&&m| m != id) {
            cmd.args(["--peer", &format!("{m}={}", self.peer_addr(m))]);
        }
        if join {
            // The joiner is told the cluster's id, which any member's status shows.
            let member = self.nodes.first().expect("a running member").0;
            let status = self.status(member).expect("the member answers");
            cmd.args(["--join", "--cluster-id", status["cluster"].as_str().expect("a cluster id")]);
        } else if !self.dir.join(format!("node-{id}")).exists() {
            cmd.args(["--bootstrap", "--cluster-id", "membership-test"]);
        }
        let child = spawn(&mut cmd);
        self.nodes.push((id, child));
        until(Duration::from_secs(20), "the node's API answers", || self.status(id));
    }

    /// Stops node `id` (SIGTERM) and waits for it.
    fn stop(&mut self, id: u16) {
        let Some(i) = self.nodes.iter().position(|(n, _)| *n == id) else { return };
        let (_, mut child) = self.nodes.remove(i);
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let _ = child.wait();
    }

    fn status(&self, id: u16) -> Option<Value> {
        let (code, body) = try_call(self.port(id), "GET", "/status", None)?;
        (code == 200).then_some(body)
    }

    /// Waits until every node of `ids` names the same leader, one of `ids`.
    fn leader(&self, ids: &[u16]) -> u16 {
        until(Duration::from_secs(30), "an agreed leader", || {
            let leaders: Vec<Option<u64>> =
                ids.iter().map(|&i| self.status(i).and_then(|s| s["leader"].as_u64())).collect();
            let l = (*leaders.first()?)?;
            (leaders.iter().all(|x| *x == Some(l)) && ids.contains(&(l as u16))).then_some(l as u16)
        })
    }

    /// Waits until every node of `ids` has `members` in its configuration and all have applied
    /// the same index; returns it.
    fn converged(&self, ids: &[u16], members: &[u64]) -> u64 {
        until(Duration::from_secs(30), "the nodes agree on the members and applied index", || {
            let st: Vec<Value> = ids.iter().map(|&i| self.status(i)).collect::<Option<_>>()?;
            let applied = st[0]["applied"].as_u64()?;
            st.iter()
                .all(|s| s["members"] == json!(members) && s["applied"].as_u64() == Some(applied))
                .then_some(applied)
        })
    }

    fn grant(&self, id: u16) -> u64 {
        let (code, body) = call(self.port(id), "POST", "/v1/lease/grant", Some(json!({ "ttl_ms": 10_000 })));
        assert_eq!(code, 200, "{body}");
        body["lease"].as_u64().unwrap()
    }

    fn acquire(&self, id: u16, name: &str, lease: u64) -> (u16, Value) {
        call(self.port(id), "POST", "/v1/lock/acquire", Some(json!({ "name": name, "lease": lease })))
    }

    /// `ringleader ARGS` with the endpoints of nodes `ids`.
    fn verb(&self, ids: &[u16], args: &[&str]) -> std::process::Output {
        let endpoints =
            ids.iter().map(|&i| format!("http://127.0.0.1:{}", self.port(i))).collect::<Vec<_>>().join(",");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_ringleader"));
        cmd.args(args).args(["--endpoints", &endpoints]).stdout(Stdio::piped()).stderr(Stdio::piped());
        spawn(&mut cmd).wait_with_output().unwrap()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let ids: Vec<u16> = self.nodes.iter().map(|(id, _)| *id).collect();
        for id in ids {
            self.stop(id);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn write_secret(path: &Path) {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path).unwrap();
    writeln!(f, "{}", "5a".repeat(32)).unwrap();
}

fn member_ids(body: &Value) -> Vec<u64> {
    body["members"].as_array().unwrap().iter().map(|m| m["id"].as_u64().unwrap()).collect()
}

#[test]
fn a_fourth_node_joins_catches_up_serves_a_lock_and_the_leader_leaves() {
    let mut c = Cluster::start(3);
    // Some history first, so that the new node has a state to catch up with.
    let a = c.grant(1);
    assert_eq!(c.acquire(1, "before", a).0, 200);

    // Node 4 starts knowing the members, but is none: it waits and never campaigns.
    c.serve(4, &[1, 2, 3, 4], true);
    let waiting = c.status(4).unwrap();
    assert_eq!(waiting["members"], json!([]), "{waiting}");
    let (code, body) =
        call(c.port(4), "POST", "/v1/members", Some(json!({ "id": 5, "peer": "127.0.0.1:1" })));
    assert_eq!((code, body["reason"].as_str()), (503, Some("not_member")), "{body}");

    // Added through a follower's API: the answer comes once the change is applied there.
    let leader = c.leader(&[1, 2, 3]);
    let follower = (1..=3).find(|&i| i != leader).unwrap();
    let t0 = Instant::now();
    let (code, body) =
        call(c.port(follower), "POST", "/v1/members", Some(json!({ "id": 4, "peer": c.peer_addr(4) })));
    assert_eq!(code, 200, "{body}");
    assert_eq!(member_ids(&body), [1, 2, 3, 4], "{body}");
    let added = t0.elapsed();
    c.converged(&[1, 2, 3, 4], &[1, 2, 3, 4]);
    eprintln!("add answered after {added:?}; node 4 caught up after {:?}", t0.elapsed());
    for id in 1..=4 {
        let (code, body) = call(c.port(id), "GET", "/v1/members", None);
        assert_eq!(code, 200, "{body}");
        let peers: Vec<&str> =
            body["members"].as_array().unwrap().iter().map(|m| m["peer"].as_str().unwrap()).collect();
        let want: Vec<String> = (1..=4).map(|i| c.peer_addr(i)).collect();
        assert_eq!(peers, want, "node {id}: {body}");
    }
    // Adding it again at the same address is a retry: nothing changes.
    let (code, again) =
        call(c.port(leader), "POST", "/v1/members", Some(json!({ "id": 4, "peer": c.peer_addr(4) })));
    assert_eq!((code, member_ids(&again)), (200, vec![1, 2, 3, 4]), "{again}");

    // Node 4 caught up with the state: the lock taken before it joined is held.
    let (_, view) = call(c.port(4), "GET", "/v1/lock/before", None);
    assert_eq!(view["holder"]["lease"], json!(a), "{view}");
    // A lock through node 4.
    let b = c.grant(4);
    let (code, got) = c.acquire(4, "after", b);
    assert_eq!(code, 200, "{got}");

    // The leader is removed through its own API; the others elect one of themselves.
    let t0 = Instant::now();
    let (code, body) = call(c.port(leader), "DELETE", &format!("/v1/members/{leader}"), None);
    assert_eq!(code, 200, "{body}");
    let rest: Vec<u16> = (1..=4).filter(|&i| i != leader).collect();
    let rest_ids: Vec<u64> = rest.iter().map(|&i| i as u64).collect();
    assert_eq!(member_ids(&body), rest_ids, "{body}");
    let new = c.leader(&rest);
    assert_ne!(new, leader);
    eprintln!("leader {leader} removed; {new} leads the rest after {:?}", t0.elapsed());
    c.converged(&rest, &rest_ids);
    let gone = until(Duration::from_secs(10), "the removed node says so", || {
        c.status(leader).filter(|s| s["removed"] == json!(true))
    });
    assert_ne!(gone["role"], "candidate", "{gone}");
    let (code, refused) = call(c.port(leader), "POST", "/v1/lease/grant", Some(json!({ "ttl_ms": 1000 })));
    assert_eq!((code, refused["reason"].as_str()), (503, Some("removed")), "{refused}");
    assert!(!refused["error"].as_str().unwrap().contains('\n'));

    // The rest serve: the lock taken through node 4 is handed on through another node.
    let other = *rest.iter().find(|&&i| i != 4).unwrap();
    let d = c.grant(other);
    let port = c.port(other);
    let waiter = std::thread::spawn(move || {
        call(port, "POST", "/v1/lock/acquire", Some(json!({ "name": "after", "lease": d })))
    });
    until(Duration::from_secs(10), "the waiter queues", || {
        (call(c.port(new), "GET", "/v1/lock/after", None).1["waiters"] == json!([d])).then_some(())
    });
    let (code, body) =
        call(c.port(4), "POST", "/v1/lock/release", Some(json!({ "name": "after", "lease": b })));
    assert_eq!(code, 200, "{body}");
    let (code, next) = waiter.join().unwrap();
    assert_eq!(code, 200, "{next}");
    assert!(next["fencing"].as_u64() > got["fencing"].as_u64());

    // Node 4 restarts with no --peer flags at all: its address table was kept beside its log.
    c.stop(4);
    c.serve(4, &[4], false);
    let before = c.converged(&rest, &rest_ids);
    let e = c.grant(new);
    assert_eq!(c.acquire(new, "restart", e).0, 200);
    let after = c.converged(&rest, &rest_ids);
    assert!(after > before);
}

#[test]
fn membership_requests_that_cannot_be_made_get_one_line_and_a_reason() {
    let c = Cluster::start(3);
    for (method, path, body, code, reason) in [
        ("DELETE", "/v1/members/9", None, 404, "unknown_member"),
        ("DELETE", "/v1/members/one", None, 400, "bad_request"),
        ("DELETE", "/v1/members/0", None, 400, "bad_request"),
        ("POST", "/v1/members", Some(json!({ "id": 0, "peer": "127.0.0.1:4204" })), 400, "bad_request"),
        ("POST", "/v1/members", Some(json!({ "id": 4, "peer": "no-port" })), 400, "bad_request"),
        ("POST", "/v1/members", Some(json!({ "id": 4 })), 400, "bad_request"),
        ("POST", "/v1/members", Some(json!({ "id": 2, "peer": "127.0.0.1:1" })), 409, "already_member"),
    ] {
        let (got, answer) = call(c.port(1), method, path, body);
        assert_eq!((got, answer["reason"].as_str()), (code, Some(reason)), "{method} {path}: {answer}");
        let line = answer["error"].as_str().unwrap();
        assert!(!line.is_empty() && !line.contains('\n'), "{line:?}");
    }

    // The verb: a list, and one line on stderr with status 1 for what cannot be done.
    let list = c.verb(&[1, 2, 3], &["member", "list"]);
    assert!(list.status.success(), "{}", String::from_utf8_lossy(&list.stderr));
    let want: String = (1..=3).map(|i| format!("{i} {}\n", c.peer_addr(i))).collect();
    assert_eq!(String::from_utf8_lossy(&list.stdout), want);
    for args in [&["member", "remove", "9"][..], &["member", "add", "2", "127.0.0.1:1"]] {
        let out = c.verb(&[1, 2, 3], args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
    let out = c.verb(&[1], &["member", "add", "0", "127.0.0.1:1"]);
    assert!(!out.status.success());

    // A follower removed through the `member` verb learns its removal and stops; the two
    // others go on.
    let leader = c.leader(&[1, 2, 3]);
    let follower = (1..=3).find(|&i| i != leader).unwrap();
    let rest: Vec<u16> = (1..=3).filter(|&i| i != follower).collect();
    let out = c.verb(&[leader], &["member", "remove", &follower.to_string()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let want: String = rest.iter().map(|&i| format!("{i} {}\n", c.peer_addr(i))).collect();
    assert_eq!(String::from_utf8_lossy(&out.stdout), want);
    until(Duration::from_secs(10), "the removed follower says so", || {
        c.status(follower).filter(|s| s["removed"] == json!(true) && s["role"] == "removed")
    });
    let rest_ids: Vec<u64> = rest.iter().map(|&i| i as u64).collect();
    c.converged(&rest, &rest_ids);
    let a = c.grant(rest[1]);
    assert_eq!(c.acquire(rest[0], "two", a).0, 200);

    // A one-node cluster cannot remove its last member.
    drop(c);
    let solo = Cluster::start(1);
    let (code, answer) = call(solo.port(1), "DELETE", "/v1/members/1", None);
    assert_eq!((code, answer["reason"].as_str()), (409, Some("last_member")), "{answer}");
}

/// Members that never come cannot take the quorum away: a new member is added as a learner
/// (it receives the log and counts toward no quorum) and promoted only once the node handling
/// the request is connected to it and the started voters would still be a majority. Phantoms
/// stay learners (409 `learner_not_ready` after the request's timeout), the cluster keeps
/// committing with them, and they can be removed.
#[test]
fn members_that_never_come_cannot_take_the_quorum_away() {
    let c = Cluster::start(3);
    c.converged(&[1, 2, 3], &[1, 2, 3]);
    for id in [4, 5] {
        let phantom = json!({ "id": id, "peer": "127.0.0.1:1" });
        let (code, answer) = call(c.port(1), "POST", "/v1/members", Some(phantom));
        assert_eq!((code, answer["reason"].as_str()), (409, Some("learner_not_ready")), "{answer}");
    }
    let (_, members) = call(c.port(2), "GET", "/v1/members", None);
    assert_eq!(member_ids(&members), [1, 2, 3], "{members}");
    let learners: Vec<u64> =
        members["learners"].as_array().unwrap().iter().map(|m| m["id"].as_u64().unwrap()).collect();
    assert_eq!(learners, [4, 5], "{members}");
    // Two phantoms beside three voters: 3 of 5 would be a majority, but they never vote, so the
    // cluster commits as before, and they can go.
    let lease = c.grant(2);
    assert_eq!(c.acquire(3, "with-phantoms", lease).0, 200);
    for id in [5, 4] {
        let (code, answer) = call(c.port(1), "DELETE", &format!("/v1/members/{id}"), None);
        assert_eq!(code, 200, "removing phantom {id}: {answer}");
    }
    c.converged(&[1, 2, 3], &[1, 2, 3]);
}
