//! The leader hint on real nodes: a follower that cannot reach the leader (its link to the
//! leader cut, a one-way partition: the leader's heartbeats still reach it) refuses a request
//! 503 naming the leader's id and API URL, and a client that has that URL among its endpoints
//! goes there next, out of turn. Waits are bounded polls, never fixed sleeps.

use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{call, free_base, spawn, try_call, until};

/// This module's lane of loopback ports ([`crate::common::free_base`]).
const LANE: u16 = 24;

/// A TCP relay to `target` that can be cut: [`Relay::cut`] shuts its connections down before it
/// returns, and later ones are closed as soon as they are accepted. The relayed direction is
/// one node's link to a peer (the transport dials one connection per direction), so cutting it
/// is a one-way partition.
struct Relay {
    port: u16,
    cut: Arc<AtomicBool>,
    open: Arc<Mutex<Vec<TcpStream>>>,
}

impl Relay {
    fn start(target: u16) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let cut = Arc::new(AtomicBool::new(false));
        let open: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let (flag, streams) = (cut.clone(), open.clone());
        std::thread::spawn(move || {
            for inbound in listener.incoming() {
                let Ok(inbound) = inbound else { return };
                let Ok(outbound) = TcpStream::connect(("127.0.0.1", target)) else { continue };
                {
                    // Checked under the lock that `cut` takes: a connection is either listed
                    // before the cut (and shut by it) or closed here.
                    let mut list = streams.lock().unwrap();
                    if flag.load(Ordering::SeqCst) {
                        continue;
                    }
                    list.push(inbound.try_clone().unwrap());
                    list.push(outbound.try_clone().unwrap());
                }
                for (from, to) in [(&inbound, &outbound), (&outbound, &inbound)] {
                    let (mut from, mut to) = (from.try_clone().unwrap(), to.try_clone().unwrap());
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut from, &mut to);
                        let _ = from.shutdown(Shutdown::Both);
                        let _ = to.shutdown(Shutdown::Both);
                    });
                }
            }
        });
        Relay { port, cut, open }
    }

    fn cut(&self) {
        let list = self.open.lock().unwrap();
        self.cut.store(true, Ordering::SeqCst);
        for s in list.iter() {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

/// An endpoint that accepts connections and never answers (a hung node), counting them.
fn silent_endpoint() -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in listener.incoming().flatten() {
            seen.fetch_add(1, Ordering::SeqCst);
            held.push(s);
        }
    });
    (port, count)
}

struct Nodes {
    dir: PathBuf,
    children: Vec<Child>,
}

impl Drop for Nodes {
    fn drop(&mut self) {
        for c in &mut self.children {
            // SAFETY: signalling our own child.
            unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn status(port: u16) -> Option<Value> {
    let (code, body) = try_call(port, "GET", "/status", None)?;
    (code == 200).then_some(body)
}

#[test]
fn a_follower_cut_from_the_leader_names_it_and_the_client_goes_there_next() {
    let (api, peer) = (free_base(4, LANE), free_base(4, LANE));
    let dir = std::env::temp_dir().join(format!("ringleader-leader-hint-{}-{api}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut nodes = Nodes { dir: dir.clone(), children: Vec::new() };
    // Node 1 reaches nodes 2 and 3 through relays; they reach it directly.
    let relays = [Relay::start(peer + 2), Relay::start(peer + 3)];
    for id in 1..=3u16 {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_ringleader"));
        cmd.args(["serve", "--id", &id.to_string(), "--insecure", "--bootstrap", "--cluster-id", "hint"])
            .args(["--listen", &format!("127.0.0.1:{}", peer + id)])
            .args(["--api", &format!("127.0.0.1:{}", api + id)])
            .arg("--data-dir")
            .arg(dir.join(format!("node-{id}")))
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        for j in (1..=3u16).filter(|&j| j != id) {
            let peer_port = if id == 1 { relays[j as usize - 2].port } else { peer + j };
            cmd.args(["--peer", &format!("{j}=127.0.0.1:{peer_port}")]);
            cmd.args(["--peer-api", &format!("{j}=127.0.0.1:{}", api + j)]);
        }
        if id == 1 {
            // Node 1 campaigns last (1 s without a leader, not 100 ms), so that 2 or 3 leads,
            // and gives up on a request after 1 s.
            cmd.args(["--election-ticks", "100", "--request-timeout", "1s"]);
        }
        nodes.children.push(spawn(&mut cmd));
    }
    let leader = until(Duration::from_secs(30), "nodes 1-3 agree on a leader", || {
        let ls: Vec<Option<u64>> =
            (1..=3).map(|i| status(api + i).and_then(|s| s["leader"].as_u64())).collect();
        let l = ls[0]?;
        ls.iter().all(|x| *x == Some(l)).then_some(l as u16)
    });
    assert!(leader != 1, "node 1 was given a long election timeout so that another node leads");
    relays[leader as usize - 2].cut();

    // Node 1 still hears the leader (its heartbeats come on the leader's own link), but what
    // it forwards is lost: its answer names the leader.
    let (code, body) = call(api + 1, "POST", "/v1/lease/grant", Some(json!({ "ttl_ms": 5000 })));
    assert_eq!(code, 503, "{body}");
    assert_eq!(body["reason"], "unavailable", "{body}");
    assert_eq!(body["leader"], json!(leader), "{body}");
    assert_eq!(body["leader_url"], json!(format!("http://127.0.0.1:{}", api + leader)), "{body}");
    let error = body["error"].as_str().unwrap();
    assert!(error.contains(&format!("the leader is node {leader} at http://127.0.0.1:")), "{error}");

    // A client given node 1, a hung node, and the leader, in that order: node 1's hint sends it
    // to the leader, past the hung node (which would have held it for the 2 s attempt bound).
    let (hung, hung_count) = silent_endpoint();
    let endpoints = [api + 1, hung, api + leader].map(|p| format!("http://127.0.0.1:{p}")).join(",");
    let out = spawn(
        Command::new(env!("CARGO_BIN_EXE_ringleader"))
            .args(["lease", "grant", "--ttl", "5s", "--endpoints", &endpoints])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    )
    .wait_with_output()
    .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        hung_count.load(Ordering::SeqCst),
        0,
        "the client tried the hung endpoint before the hinted leader"
    );
}
