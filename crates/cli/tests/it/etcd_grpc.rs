//! The etcd-compatible gRPC API on real processes: `ringleader cluster --service
//! --grpc-base-port G` starts three `ringleader serve` nodes, node i serving etcd's v3 gRPC on
//! G+i, and the real Rust `etcd-client` crate talks to them (docs/ETCD.md). Every wait is
//! bounded; a wait for a state is a poll with a deadline, never a fixed sleep.

use std::future::Future;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use etcd_client::{
    Client, Compare, CompareOp, ConnectOptions, DeleteOptions, Error, EventType, GetOptions,
    LeaseTimeToLiveOptions, LockOptions, ProclaimOptions, PutOptions, ResignOptions, SortOrder, SortTarget,
    Txn, TxnOp, TxnOpResponse, WatchOptions, WatchResponse, WatchStream,
};
use tonic::Code;

use crate::common::{FORK, call, free_base};

/// This module's lane of loopback ports ([`common::free_base`]).
const LANE: u16 = 16;

/// The longest any one call may take.
const BOUND: Duration = Duration::from_secs(20);

/// Awaits `f`, failing the test after [`BOUND`].
async fn within<T>(what: &str, f: impl Future<Output = T>) -> T {
    tokio::time::timeout(BOUND, f).await.unwrap_or_else(|_| panic!("{what}: no answer within {BOUND:?}"))
}

/// The gRPC status of a failed call.
fn status(e: Error) -> tonic::Status {
    match e {
        Error::GRpcStatus(s) => s,
        other => panic!("expected a gRPC status, got {other}"),
    }
}

struct Cluster {
    child: Child,
    /// The HTTP API's base port (node i serves it on `api + i`).
    api: u16,
    grpc: u16,
    dir: PathBuf,
}

impl Cluster {
    /// Three nodes with the gRPC API, once every node names the same Raft leader.
    async fn start() -> Cluster {
        Cluster::start_with(&[]).await
    }

    /// As [`Cluster::start`], with `serve_args` passed to every `ringleader serve`.
    async fn start_with(serve_args: &[&str]) -> Cluster {
        let n = 3u16;
        let (api, peer, grpc) = (free_base(n, LANE), free_base(n, LANE), free_base(n, LANE));
        let dir = std::env::temp_dir().join(format!("ringleader-etcd-{}-{grpc}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_ringleader"));
        cmd.args(["cluster", "--service", "--nodes", &n.to_string()])
            .args(["--api-base-port", &api.to_string(), "--peer-base-port", &peer.to_string()])
            .args(["--grpc-base-port", &grpc.to_string()])
            .arg("--data-dir")
            .arg(dir.join("data"))
            .arg("--secret-file")
            .arg(dir.join("cluster.secret"))
            .args(serve_args.iter().map(|a| format!("--serve-arg={a}")))
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let child = {
            let _held = FORK.lock().unwrap_or_else(|e| e.into_inner());
            cmd.spawn().expect("the ringleader binary starts")
        };
        let c = Cluster { child, api, grpc, dir };
        c.agreed_leader().await;
        c
    }

    fn endpoint(&self, id: u16) -> String {
        format!("http://127.0.0.1:{}", self.grpc + id)
    }

    /// A client of node `id` alone.
    async fn client(&self, id: u16) -> Client {
        within("connect", Client::connect([self.endpoint(id)], None)).await.expect("etcd-client connects")
    }

    /// The node (1..=3) that leads, once all agree on one.
    async fn leader_node(&self) -> u16 {
        let leader = self.agreed_leader().await;
        for id in 1..=3 {
            let status = within("status", self.client(id).await.status()).await.unwrap();
            if status.header().map(|h| h.member_id()) == Some(leader) {
                return id;
            }
        }
        panic!("no node reports the leader's member id {leader} as its own")
    }

    /// Polls Maintenance.Status on every node until all name the same leader.
    async fn agreed_leader(&self) -> u64 {
        let t0 = Instant::now();
        loop {
            let mut leaders = Vec::new();
            for id in 1..=3 {
                let answer = match Client::connect([self.endpoint(id)], None).await {
                    Ok(mut c) => tokio::time::timeout(Duration::from_secs(2), c.status()).await.ok(),
                    Err(_) => None,
                };
                leaders.push(answer.and_then(|r| r.ok()).map(|s| s.leader()).unwrap_or(0));
            }
            if leaders[0] != 0 && leaders.iter().all(|&l| l == leaders[0]) {
                return leaders[0];
            }
            assert!(t0.elapsed() < Duration::from_secs(30), "no agreed leader within 30s: {leaders:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
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

/// Polls `lease`'s TimeToLive on `client` until its keys include `key` (a lock it holds or
/// waits for).
async fn until_queued(client: &mut Client, lease: i64, key: &[u8]) {
    let t0 = Instant::now();
    loop {
        let r = within(
            "time-to-live",
            client.lease_time_to_live(lease, Some(LeaseTimeToLiveOptions::new().with_keys())),
        )
        .await
        .unwrap();
        if r.keys().iter().any(|k| k == key) {
            return;
        }
        assert!(t0.elapsed() < BOUND, "lease {lease:x} never queued for {:?}", String::from_utf8_lossy(key));
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lease_grant_keep_alive_time_to_live_and_revoke() {
    let c = Cluster::start().await;
    let mut one = c.client(1).await;
    let mut two = c.client(2).await;

    let granted = within("grant", one.lease_grant(10, None)).await.unwrap();
    let id = granted.id();
    assert!(id > 0);
    assert_eq!(granted.ttl(), 10);
    let h = granted.header().expect("a header");
    assert_eq!(h.member_id(), 1, "node 1 answered");
    assert!(h.revision() >= id, "revision {} is an applied index at or past the grant {id}", h.revision());
    assert!(h.raft_term() > 0 && h.cluster_id() != 0);

    // Another node sees it (a linearizable read), with its granted TTL.
    let ttl = within("ttl", two.lease_time_to_live(id, None)).await.unwrap();
    assert_eq!((ttl.id(), ttl.granted_ttl()), (id, 10));
    assert!((1..=10).contains(&ttl.ttl()), "remaining {}", ttl.ttl());
    let leases = within("leases", two.leases()).await.unwrap();
    assert!(leases.leases().iter().any(|l| l.id() == id));

    // Keep-alive over the bidirectional stream.
    let (mut keeper, mut stream) = within("keep-alive", two.lease_keep_alive(id)).await.unwrap();
    for _ in 0..2 {
        within("keep-alive", keeper.keep_alive()).await.unwrap();
        let r = within("keep-alive answer", stream.message()).await.unwrap().expect("an answer");
        assert_eq!((r.id(), r.ttl()), (id, 10));
    }

    // Revoked: gone everywhere; etcd's answers for a lease it does not know.
    within("revoke", one.lease_revoke(id)).await.unwrap();
    assert_eq!(within("ttl", two.lease_time_to_live(id, None)).await.unwrap().ttl(), -1);
    keeper.keep_alive().await.unwrap();
    let r = within("keep-alive answer", stream.message()).await.unwrap().expect("an answer");
    assert_eq!(r.ttl(), 0, "a keep-alive of an unknown lease answers TTL 0");
    let e = status(within("revoke again", one.lease_revoke(id)).await.unwrap_err());
    assert_eq!((e.code(), e.message()), (Code::NotFound, "etcdserver: requested lease not found"));
    let e =
        status(within("lock", one.lock("db", Some(LockOptions::new().with_lease(id)))).await.unwrap_err());
    assert_eq!(e.code(), Code::NotFound, "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locks_block_hand_over_in_order_and_fence_with_increasing_revisions() {
    let c = Cluster::start().await;
    let mut one = c.client(1).await;
    let two = c.client(2).await;
    let three = c.client(3).await;
    let a = within("grant", one.lease_grant(30, None)).await.unwrap().id();
    let b = within("grant", one.lease_grant(30, None)).await.unwrap().id();

    let got_a = within("lock A", one.lock("db", Some(LockOptions::new().with_lease(a)))).await.unwrap();
    assert_eq!(got_a.key(), format!("db/{a:x}").as_bytes(), "etcd's key format NAME/LEASEHEX");
    let fence_a = got_a.header().unwrap().revision();
    assert!(fence_a > 0);

    // B, through another node, blocks behind A.
    let mut b_client = two.clone();
    let waiter_b =
        tokio::spawn(async move { b_client.lock("db", Some(LockOptions::new().with_lease(b))).await });
    until_queued(&mut one, b, format!("db/{b:x}").as_bytes()).await;
    assert!(!waiter_b.is_finished(), "B must wait while A holds the lock");

    // A unlocks with its key: B gets the lock, with a larger fencing revision.
    within("unlock A", one.unlock(got_a.key())).await.unwrap();
    let got_b = within("lock B", waiter_b).await.unwrap().expect("B locks after A unlocks");
    assert_eq!(got_b.key(), format!("db/{b:x}").as_bytes());
    let fence_b = got_b.header().unwrap().revision();
    assert!(fence_b > fence_a, "fencing revisions increase: {fence_a} then {fence_b}");

    // A third locker waits; revoking B's lease hands it over.
    let mut a_client = three.clone();
    let waiter_a =
        tokio::spawn(async move { a_client.lock("db", Some(LockOptions::new().with_lease(a))).await });
    until_queued(&mut one, a, format!("db/{a:x}").as_bytes()).await;
    assert!(!waiter_a.is_finished());
    within("revoke B", one.lease_revoke(b)).await.unwrap();
    let again_a = within("lock A again", waiter_a).await.unwrap().expect("A locks once B's lease is revoked");
    let fence_a2 = again_a.header().unwrap().revision();
    assert!(fence_a2 > fence_b, "{fence_b} then {fence_a2}");
    within("unlock A", one.unlock(again_a.key())).await.unwrap();

    // A holder whose lease expires (D, TTL 1 s, never kept alive) hands over to the waiter.
    let d = within("grant", one.lease_grant(1, None)).await.unwrap().id();
    let other = format!("expiring-{d}");
    let got_d = within("lock D", one.lock(other.clone(), Some(LockOptions::new().with_lease(d)))).await;
    let fence_d = match got_d {
        Ok(r) => r.header().unwrap().revision(),
        Err(e) => panic!("D should get the free lock before its 1 s lease runs out: {e}"),
    };
    let mut a_client = three.clone();
    let name = other.clone();
    let waiter =
        tokio::spawn(async move { a_client.lock(name, Some(LockOptions::new().with_lease(a))).await });
    let got =
        within("lock after expiry", waiter).await.unwrap().expect("the waiter gets the lock when D expires");
    assert!(got.header().unwrap().revision() > fence_d);
    let ttl = within("ttl", one.lease_time_to_live(d, None)).await.unwrap();
    assert_eq!(ttl.ttl(), -1, "D expired");

    // A waiter whose call is cancelled withdraws: its key leaves the queue at once, long before
    // its lease would expire.
    let e = within("grant", one.lease_grant(60, None)).await.unwrap().id();
    let mut e_client = two.clone();
    let name = other.clone();
    let waiter =
        tokio::spawn(async move { e_client.lock(name, Some(LockOptions::new().with_lease(e))).await });
    let e_key = format!("{other}/{e:x}").into_bytes();
    until_queued(&mut one, e, &e_key).await;
    waiter.abort();
    let t0 = Instant::now();
    loop {
        let opts = Some(LeaseTimeToLiveOptions::new().with_keys());
        let r = within("time-to-live", one.lease_time_to_live(e, opts)).await.unwrap();
        if r.keys().is_empty() {
            break;
        }
        assert!(t0.elapsed() < BOUND, "the cancelled waiter is still queued: {:?}", r.keys());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    // Unlock of a key that is not a lock key is refused with one line.
    let e = status(within("unlock", one.unlock("no-lease-here")).await.unwrap_err());
    assert_eq!(e.code(), Code::InvalidArgument, "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_clients_given_every_endpoint_contend_for_one_lock_and_each_grant_is_exclusive() {
    use std::sync::{Arc, Mutex};
    const CLIENTS: usize = 8;
    const ROUNDS: usize = 25;
    let c = Cluster::start().await;
    let endpoints: Vec<String> = (1..=3).map(|i| c.endpoint(i)).collect();
    // Who holds the lock as the clients see it, and every grant's fencing revision in the order
    // the critical sections ran.
    let holder: Arc<Mutex<Option<usize>>> = Arc::default();
    let fences: Arc<Mutex<Vec<i64>>> = Arc::default();
    let mut tasks = Vec::new();
    for me in 0..CLIENTS {
        let (endpoints, holder, fences) = (endpoints.clone(), holder.clone(), fences.clone());
        tasks.push(tokio::spawn(async move {
            let mut client = within("connect", Client::connect(endpoints, None)).await.expect("connects");
            let lease = within("grant", client.lease_grant(30, None)).await.unwrap().id();
            for round in 0..ROUNDS {
                // Every call may land on any node: a Lock after an Unlock answered by another
                // node reaches a node that may still be applying the previous grant.
                let got =
                    within("lock", client.lock("contended", Some(LockOptions::new().with_lease(lease))))
                        .await
                        .unwrap_or_else(|e| panic!("client {me} round {round}: Lock failed: {e}"));
                {
                    let mut h = holder.lock().unwrap();
                    assert_eq!(*h, None, "client {me} was granted the lock while client {h:?} held it");
                    *h = Some(me);
                    fences.lock().unwrap().push(got.header().unwrap().revision());
                }
                // The critical section spans a round trip, so that an overlapping grant would be
                // seen.
                within("read", client.get("contended-data", None)).await.unwrap();
                *holder.lock().unwrap() = None;
                within("unlock", client.unlock(got.key())).await.unwrap();
            }
            within("revoke", client.lease_revoke(lease)).await.unwrap();
        }));
    }
    for t in tasks {
        within("a contending client", t).await.unwrap();
    }
    let fences = fences.lock().unwrap().clone();
    assert_eq!(fences.len(), CLIENTS * ROUNDS);
    assert!(fences.windows(2).all(|w| w[0] < w[1]), "fencing revisions must strictly increase: {fences:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_before_the_first_write_answer_and_a_txn_writing_a_key_twice_is_refused() {
    let c = Cluster::start().await;
    for id in 1..=3 {
        let mut client = c.client(id).await;
        let r = within("get", client.get("nothing-yet", None)).await.unwrap();
        assert!(r.kvs().is_empty());
        let opts = Some(GetOptions::new().with_serializable());
        let r = within("serializable get", client.get("nothing-yet", opts)).await;
        assert!(r.unwrap_or_else(|e| panic!("node {id}: {e}")).kvs().is_empty());
    }
    let mut one = c.client(1).await;
    for ops in [
        vec![TxnOp::put("k", "1", None), TxnOp::put("k", "2", None)],
        vec![TxnOp::put("k/a", "1", None), TxnOp::delete("k/", Some(DeleteOptions::new().with_prefix()))],
    ] {
        let e = status(within("txn", one.txn(Txn::new().and_then(ops))).await.unwrap_err());
        assert_eq!(
            (e.code(), e.message()),
            (Code::InvalidArgument, "etcdserver: duplicate key given in txn request")
        );
    }
    let got = within("get", one.get("k", Some(GetOptions::new().with_prefix()))).await.unwrap();
    assert!(got.kvs().is_empty(), "a refused transaction writes nothing");

    // etcd's default request-size limit, 1.5 MiB.
    let e = status(within("big put", one.put("big", vec![b'x'; 1600 * 1024], None)).await.unwrap_err());
    assert_eq!((e.code(), e.message()), (Code::InvalidArgument, "etcdserver: request is too large"));
    within("put under the limit", one.put("big", vec![b'x'; 1400 * 1024], None)).await.unwrap();
    let ops = vec![TxnOp::put("k", "1", None), TxnOp::put("l", "2", None)];
    within("txn", one.txn(Txn::new().and_then(ops))).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn campaign_leader_observe_proclaim_and_resign() {
    let c = Cluster::start().await;
    let mut one = c.client(1).await;
    let mut two = c.client(2).await;
    let l1 = within("grant", one.lease_grant(30, None)).await.unwrap().id();
    let l2 = within("grant", one.lease_grant(30, None)).await.unwrap().id();

    let e = status(within("leader", two.leader("jobs")).await.unwrap_err());
    assert_eq!((e.code(), e.message()), (Code::NotFound, "election: no leader"));

    let won = within("campaign 1", one.campaign("jobs", "alpha", l1)).await.unwrap();
    let key1 = won.leader().expect("a leader key").clone();
    assert_eq!((key1.name(), key1.lease()), (&b"jobs"[..], l1));
    assert_eq!(key1.key(), format!("jobs/{l1:x}").as_bytes());
    assert!(key1.rev() > 0);

    let mut observe = within("observe", two.observe("jobs")).await.unwrap();
    let first = within("observe first", observe.message()).await.unwrap().expect("the current leader");
    assert_eq!(first.kv().unwrap().value(), b"alpha");

    // The second candidate, through node 3, blocks while the first leads.
    let mut three = c.client(3).await;
    let waiter = tokio::spawn(async move { three.campaign("jobs", "beta", l2).await });

    within("proclaim", one.proclaim("alpha-2", Some(ProclaimOptions::new().with_leader(key1.clone()))))
        .await
        .unwrap();
    let changed = within("observe proclaim", observe.message()).await.unwrap().expect("a change");
    assert_eq!(changed.kv().unwrap().value(), b"alpha-2");
    let leader = within("leader", two.leader("jobs")).await.unwrap();
    assert_eq!((leader.kv().unwrap().value(), leader.kv().unwrap().lease()), (&b"alpha-2"[..], l1));
    assert!(!waiter.is_finished(), "the second candidate waits while the first leads");

    within("resign", one.resign(Some(ResignOptions::new().with_leader(key1.clone())))).await.unwrap();
    let won2 =
        within("campaign 2", waiter).await.unwrap().expect("the second candidate leads after the resign");
    assert_eq!(won2.leader().unwrap().lease(), l2);
    let next = within("observe resign", observe.message()).await.unwrap().expect("a change");
    assert_eq!((next.kv().unwrap().value(), next.kv().unwrap().lease()), (&b"beta"[..], l2));

    let e = status(
        within("stale proclaim", one.proclaim("late", Some(ProclaimOptions::new().with_leader(key1))))
            .await
            .unwrap_err(),
    );
    assert_eq!((e.code(), e.message()), (Code::FailedPrecondition, "election: not leader"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_and_member_list_answer_and_other_methods_are_unimplemented_by_name() {
    let c = Cluster::start().await;
    let mut two = c.client(2).await;
    let s = within("status", two.status()).await.unwrap();
    assert!((1..=3).contains(&s.leader()), "leader {}", s.leader());
    assert!(s.version().starts_with("3.5"), "{}", s.version());
    assert_eq!(s.header().unwrap().member_id(), 2);
    let members = within("member list", two.member_list()).await.unwrap();
    let mut ids: Vec<u64> = members.members().iter().map(|m| m.id()).collect();
    ids.sort_unstable();
    assert_eq!(ids, [1, 2, 3]);
    let me = members.members().iter().find(|m| m.id() == 2).unwrap();
    assert_eq!(me.client_urls(), [c.endpoint(2)]);
    for m in members.members() {
        let [url] = m.peer_urls() else { panic!("member {} has peer URLs {:?}", m.id(), m.peer_urls()) };
        assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    }

    let e = status(within("compact", two.compact(1, None)).await.unwrap_err());
    assert_eq!(e.code(), Code::Unimplemented);
    assert!(e.message().contains("etcdserverpb.KV/Compact"), "{}", e.message());
    let e = status(within("defragment", two.defragment()).await.unwrap_err());
    assert_eq!(e.code(), Code::Unimplemented);
    assert!(e.message().contains("etcdserverpb.Maintenance/Defragment"), "{}", e.message());
}

/// The header revision of a write.
fn rev(h: Option<&etcd_client::ResponseHeader>) -> i64 {
    h.expect("a header").revision()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn put_get_delete_and_txn_keep_etcds_revisions_and_versions() {
    let c = Cluster::start().await;
    let mut one = c.client(1).await;
    let r1 = rev(within("put", one.put("a", "1", None)).await.unwrap().header());
    assert!(r1 > 0);
    let put = within("put", one.put("a", "2", Some(PutOptions::new().with_prev_key()))).await.unwrap();
    let r2 = rev(put.header());
    assert!(r2 > r1, "{r2} > {r1}");
    assert_eq!(put.prev_key().unwrap().value(), b"1");
    let got = within("get", one.get("a", None)).await.unwrap();
    let a = &got.kvs()[0];
    assert_eq!((a.value(), a.create_revision(), a.mod_revision(), a.version()), (&b"2"[..], r1, r2, 2));
    assert!(rev(got.header()) >= r2);
    let old = within("get at r1", one.get("a", Some(GetOptions::new().with_revision(r1)))).await.unwrap();
    assert_eq!(old.kvs()[0].value(), b"1");
    let e = status(
        within("get future", one.get("a", Some(GetOptions::new().with_revision(r2 + 1_000_000))))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        (e.code(), e.message()),
        (Code::OutOfRange, "etcdserver: mvcc: required revision is a future revision")
    );

    for k in ["p/x", "p/y", "p/z", "q"] {
        within("put", one.put(k, k, None)).await.unwrap();
    }
    let all = within("prefix", one.get("p/", Some(GetOptions::new().with_prefix()))).await.unwrap();
    let keys: Vec<&[u8]> = all.kvs().iter().map(|kv| kv.key()).collect();
    assert_eq!(keys, [&b"p/x"[..], b"p/y", b"p/z"]);
    assert_eq!(all.count(), 3);
    let last =
        GetOptions::new().with_prefix().with_sort(SortTarget::Create, SortOrder::Descend).with_limit(1);
    let last = within("last create", one.get("p/", Some(last))).await.unwrap();
    assert_eq!((last.kvs()[0].key(), last.more(), last.count()), (&b"p/z"[..], true, 3));
    let counted = within("count", one.get("p/", Some(GetOptions::new().with_prefix().with_count_only())))
        .await
        .unwrap();
    assert_eq!((counted.kvs().len(), counted.count()), (0, 3));
    let del = within("delete", one.delete("p/", Some(DeleteOptions::new().with_prefix().with_prev_key())))
        .await
        .unwrap();
    assert_eq!((del.deleted(), del.prev_kvs().len()), (3, 3));
    assert_eq!(within("get", one.get("p/", Some(GetOptions::new().with_prefix()))).await.unwrap().count(), 0);

    // The concurrency package's lock step: create the key if it does not exist, else read it.
    let mine = Txn::new()
        .when([Compare::create_revision("a", CompareOp::Equal, 0)])
        .and_then([TxnOp::put("a", "3", None)])
        .or_else([TxnOp::get("a", None)]);
    let t = within("txn", one.txn(mine)).await.unwrap();
    assert!(!t.succeeded());
    let TxnOpResponse::Get(g) = &t.op_responses()[0] else { panic!("{:?}", t.op_responses()) };
    assert_eq!(g.kvs()[0].create_revision(), r1);
    let fresh = Txn::new()
        .when([
            Compare::create_revision("b", CompareOp::Equal, 0),
            Compare::value("a", CompareOp::Equal, "2"),
        ])
        .and_then([TxnOp::put("b", "x", None), TxnOp::put("c", "y", None)]);
    let t = within("txn", one.txn(fresh)).await.unwrap();
    assert!(t.succeeded());
    let rt = rev(t.header());
    for k in ["b", "c"] {
        let kv = within("get", one.get(k, None)).await.unwrap().kvs()[0].clone();
        assert_eq!(
            (kv.create_revision(), kv.mod_revision()),
            (rt, rt),
            "a transaction's writes share its revision"
        );
    }
    let e = status(
        within("put", one.put("z", "v", Some(PutOptions::new().with_lease(123_456_789)))).await.unwrap_err(),
    );
    assert_eq!((e.code(), e.message()), (Code::NotFound, "etcdserver: requested lease not found"));
    let nested = Txn::new().and_then([TxnOp::txn(Txn::new())]);
    assert_eq!(status(within("nested", one.txn(nested)).await.unwrap_err()).code(), Code::InvalidArgument);

    // Another node reads the same, linearizably.
    let mut three = c.client(3).await;
    let got = within("get on 3", three.get("b", None)).await.unwrap();
    assert_eq!(got.kvs()[0].mod_revision(), rt);
}

/// The next watch response, within the bound.
async fn next(stream: &mut WatchStream) -> WatchResponse {
    within("watch response", stream.message()).await.unwrap().expect("the watch stream stays open")
}

/// One watch event as `(type, key, value, mod revision)`.
type Seen = (EventType, String, String, i64);

/// A response's events.
fn events(r: &WatchResponse) -> Vec<Seen> {
    r.events()
        .iter()
        .map(|e| {
            let kv = e.kv().unwrap();
            (
                e.event_type(),
                kv.key_str().unwrap().to_string(),
                kv.value_str().unwrap().to_string(),
                kv.mod_revision(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_from_a_start_revision_and_a_prefix_sees_every_event_in_order() {
    let c = Cluster::start().await;
    let mut one = c.client(1).await;
    let r1 = rev(within("put", one.put("w/a", "1", None)).await.unwrap().header());
    let r2 = rev(within("put", one.put("w/b", "2", None)).await.unwrap().header());
    within("put", one.put("elsewhere", "0", None)).await.unwrap();
    let mut two = c.client(2).await;
    let opts = WatchOptions::new().with_prefix().with_start_revision(r1).with_prev_key();
    let mut stream = within("watch", two.watch("w/", Some(opts))).await.unwrap();
    let created = next(&mut stream).await;
    assert!(created.created() && !created.canceled());
    let mut seen = Vec::new();
    while seen.len() < 2 {
        seen.extend(events(&next(&mut stream).await));
    }
    assert_eq!(
        seen,
        [(EventType::Put, "w/a".into(), "1".into(), r1), (EventType::Put, "w/b".into(), "2".into(), r2)]
    );
    let r3 = rev(within("put", one.put("w/a", "3", None)).await.unwrap().header());
    let r4 = rev(within("delete", one.delete("w/b", None)).await.unwrap().header());
    let got = next(&mut stream).await;
    assert_eq!(events(&got), [(EventType::Put, "w/a".into(), "3".into(), r3)]);
    assert_eq!(rev(got.header()), r3);
    assert_eq!(got.events()[0].prev_kv().unwrap().value(), b"1");
    let got = next(&mut stream).await;
    assert_eq!(events(&got), [(EventType::Delete, "w/b".into(), "".into(), r4)]);
    assert_eq!(got.events()[0].prev_kv().unwrap().value(), b"2");

    // A second watcher on the same stream: one key, from now on, deletes only.
    stream
        .watch("w/a", Some(WatchOptions::new().with_filters([etcd_client::WatchFilterType::NoPut])))
        .await
        .unwrap();
    let created = next(&mut stream).await;
    assert!(created.created());
    let second = created.watch_id();
    within("put", one.put("w/a", "4", None)).await.unwrap(); // the first watcher only
    let r6 = rev(within("delete", one.delete("w/a", None)).await.unwrap().header());
    let mut by_watcher: Vec<(i64, Vec<Seen>)> = Vec::new();
    while by_watcher.len() < 3 {
        let r = next(&mut stream).await;
        by_watcher.push((r.watch_id(), events(&r)));
    }
    let of_second: Vec<_> = by_watcher.iter().filter(|(id, _)| *id == second).collect();
    assert_eq!(of_second.len(), 1, "{by_watcher:?}");
    assert_eq!(of_second[0].1, [(EventType::Delete, "w/a".into(), "".into(), r6)]);
}

/// What a live watcher on node 2 saw of 200 puts made on node 1, as an etcd client records it
/// (`ringleader_client::history`), judged by `ringleader_judge::watch`: nothing missing from the
/// real build; with the planted bug `watch-skips` (every 32nd revision's changes left out of the
/// notice to live watchers), a gap, named.
async fn watched_puts(c: &Cluster) -> Option<ringleader_judge::watch::WatchViolation> {
    let hist = ringleader_client::history::HistoryWriter::new(Vec::new());
    let mut two = c.client(2).await;
    let mut stream = within("watch", two.watch("w/", Some(WatchOptions::new().with_prefix()))).await.unwrap();
    let created = next(&mut stream).await;
    assert!(created.created() && !created.canceled());
    hist.watch_start("watcher", "w/", rev(created.header()) as u64 + 1).unwrap();
    let mut one = c.client(1).await;
    let mut last = 0;
    for i in 0..200 {
        let (key, value) = (format!("w/k{}", i % 4), format!("v{i}"));
        let invoke = ringleader_client::history::unix_ns();
        last = rev(within("put", one.put(key.as_str(), value.as_str(), None)).await.unwrap().header());
        hist.put("writer", &key, &value, invoke, Some((ringleader_client::history::unix_ns(), last as u64)))
            .unwrap();
    }
    // Every event up to the last put's revision, or what came before the stream fell quiet for
    // two seconds (the last one may be a skipped revision).
    let mut seen = 0;
    while seen < last {
        let Ok(got) = tokio::time::timeout(Duration::from_secs(2), stream.message()).await else { break };
        for (_, key, value, revision) in events(&got.unwrap().expect("the watch stream stays open")) {
            hist.watch_event("watcher", &key, &value, revision as u64).unwrap();
            seen = revision;
        }
    }
    let text = String::from_utf8(hist.into_inner()).unwrap();
    ringleader_judge::watch::check(&ringleader_judge::watch::parse_history(&text).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_that_misses_a_change_is_caught_by_the_watch_checker() {
    let c = Cluster::start().await;
    assert_eq!(watched_puts(&c).await, None, "the real build");
    drop(c);
    let list =
        Command::new(env!("CARGO_BIN_EXE_ringleader")).args(["serve", "--list-planted"]).output().unwrap();
    if !list.status.success() {
        // A build without planted bugs (`cargo test -p ringleader` alone; the workspace's test
        // build has them): `serve_takes_a_planted_bug_in_the_test_build` checks the refusal.
        eprintln!("this build has no planted bugs: the watch-skips half is left out");
        return;
    }
    let c = Cluster::start_with(&["--planted=watch-skips"]).await;
    let v = watched_puts(&c).await.expect("watch-skips leaves a gap");
    assert_eq!(v.property, "watch_gap", "{v}");
}

/// The pid of node `id`'s `ringleader serve` process (its data directory is this cluster's).
fn serve_pid(c: &Cluster, id: u16) -> u32 {
    let dir = c.dir.join("data").join(format!("node-{id}"));
    let want = dir.to_string_lossy().to_string();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else { continue };
        let args: Vec<String> =
            cmdline.split(|&b| b == 0).map(|a| String::from_utf8_lossy(a).to_string()).collect();
        if args.iter().any(|a| a == "serve") && args.iter().any(|a| a == &want) {
            return pid;
        }
    }
    panic!("no `ringleader serve` process over {want}")
}

/// A counter of node `id`'s metrics page (`GET /metrics` on its API).
fn metric(c: &Cluster, id: u16, name: &str) -> u64 {
    use std::io::{Read as _, Write as _};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", c.api + id)).unwrap();
    s.set_read_timeout(Some(BOUND)).unwrap();
    write!(s, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").unwrap();
    let mut page = String::new();
    s.read_to_string(&mut page).unwrap();
    page.lines()
        .find(|l| l.split([' ', '{']).next().is_some_and(|n| n.ends_with(name)))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in the metrics of node {id}"))
}

/// A follower stopped (SIGSTOP) while 600 puts commit, with a snapshot every 10 entries, is
/// sent a snapshot by the leader when it resumes: it never applies those entries one by one
/// (200 were not enough: the leader's 256 messages in flight, held in the stopped follower's
/// socket buffer, carried them all).
/// The watcher it served before it stopped still sees every put, in order: the server
/// publishes the changes a snapshot brought from its history (before, they were silently
/// missed: the nemesis's long run found the gap).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watcher_on_a_follower_that_installs_a_snapshot_misses_no_change() {
    let c = Cluster::start_with(&["--snapshot-every=10"]).await;
    let leader = c.leader_node().await;
    let follower = if leader == 1 { 2 } else { 1 };
    let mut watching = c.client(follower).await;
    let mut stream =
        within("watch", watching.watch("s/", Some(WatchOptions::new().with_prefix()))).await.unwrap();
    assert!(next(&mut stream).await.created());
    let pid = serve_pid(&c, follower).to_string();
    let before = metric(&c, follower, "snapshots_received_total");
    assert!(Command::new("kill").args(["-STOP", &pid]).status().unwrap().success());
    let mut writer = c.client(leader).await;
    let mut revisions = Vec::new();
    for i in 0..600 {
        let (key, value) = (format!("s/k{}", i % 3), format!("v{i}"));
        let put = within("put", writer.put(key.as_str(), value.as_str(), None)).await;
        revisions.push(rev(put.unwrap().header()));
    }
    assert!(Command::new("kill").args(["-CONT", &pid]).status().unwrap().success());
    let mut seen = Vec::new();
    while seen.len() < revisions.len() {
        let r = next(&mut stream).await;
        assert!(!r.canceled(), "the watch was cancelled: {}", r.cancel_reason());
        seen.extend(events(&r).into_iter().map(|e| e.3));
    }
    assert_eq!(seen, revisions);
    assert!(
        metric(&c, follower, "snapshots_received_total") > before,
        "the follower caught up without a snapshot: the test proved nothing"
    );
}

/// 200 puts on the leader, each read back at once on a follower, as an etcd client records
/// them (`ringleader_client::history`), judged by `ringleader_judge::linearizability::kv`. The
/// real build reads through ReadIndex and is linearizable. With the planted bug `stale-read`
/// the follower answers from its own state machine, which learns of a commit only from the
/// leader's next message: some read misses the put acknowledged before it began.
async fn reads_after_puts(c: &Cluster) -> ringleader_judge::linearizability::LinearizabilityVerdict {
    use ringleader_client::history::{HistoryWriter, unix_ns};
    use ringleader_judge::linearizability::{DEFAULT_BUDGET, kv};
    let leader = c.leader_node().await;
    let follower = if leader == 1 { 2 } else { 1 };
    let hist = HistoryWriter::new(Vec::new());
    let (mut writer, mut reader) = (c.client(leader).await, c.client(follower).await);
    for i in 0..200 {
        let value = format!("v{i}");
        let invoke = unix_ns();
        let r = rev(within("put", writer.put("r/k", value.as_str(), None)).await.unwrap().header());
        hist.put("writer", "r/k", &value, invoke, Some((unix_ns(), r as u64))).unwrap();
        let invoke = unix_ns();
        let got = within("get", reader.get("r/k", None)).await.unwrap();
        let seen = got.kvs().first().map(|kv| String::from_utf8_lossy(kv.value()).into_owned());
        hist.get("reader", "r/k", seen.as_deref(), invoke, unix_ns()).unwrap();
    }
    let text = String::from_utf8(hist.into_inner()).unwrap();
    kv::check_kv_history(&kv::parse_history(&text).unwrap(), DEFAULT_BUDGET).verdict
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_read_is_caught_by_the_key_value_checker() {
    use ringleader_judge::linearizability::LinearizabilityVerdict;
    let c = Cluster::start().await;
    assert_eq!(reads_after_puts(&c).await, LinearizabilityVerdict::Linearizable, "the real build");
    drop(c);
    let list =
        Command::new(env!("CARGO_BIN_EXE_ringleader")).args(["serve", "--list-planted"]).output().unwrap();
    if !list.status.success() {
        eprintln!("this build has no planted bugs: the stale-read half is left out");
        return;
    }
    let c = Cluster::start_with(&["--planted=stale-read"]).await;
    match reads_after_puts(&c).await {
        LinearizabilityVerdict::Violated(w) => assert!(w.to_string().contains("get -> "), "{w}"),
        v => panic!("stale-read was not caught: {v}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_attached_to_a_lease_vanishes_when_the_lease_is_revoked() {
    let c = Cluster::start().await;
    let mut one = c.client(1).await;
    let lease = within("grant", one.lease_grant(30, None)).await.unwrap().id();
    let r1 = rev(within("put", one.put("leased", "v", Some(PutOptions::new().with_lease(lease))))
        .await
        .unwrap()
        .header());
    within("put", one.put("kept", "v", None)).await.unwrap();
    let got = within("get", one.get("leased", None)).await.unwrap();
    assert_eq!(got.kvs()[0].lease(), lease);
    // `etcdctl lease timetolive --keys`: the keys attached to the lease.
    let opts = Some(LeaseTimeToLiveOptions::new().with_keys());
    let ttl = within("time-to-live", one.lease_time_to_live(lease, opts)).await.unwrap();
    assert_eq!(ttl.keys(), [b"leased".to_vec()]);
    let mut stream =
        within("watch", one.watch("leased", Some(WatchOptions::new().with_start_revision(r1 + 1))))
            .await
            .unwrap();
    assert!(next(&mut stream).await.created());
    within("revoke", one.lease_revoke(lease)).await.unwrap();
    let got = next(&mut stream).await;
    let ev = events(&got);
    assert_eq!(ev.len(), 1);
    assert_eq!((ev[0].0, ev[0].1.as_str()), (EventType::Delete, "leased"));
    assert_eq!(within("get", one.get("leased", None)).await.unwrap().count(), 0);
    assert_eq!(within("get", one.get("kept", None)).await.unwrap().count(), 1);
}

/// A lease granted through the HTTP API answers a key, and the etcd API asks for it too: with
/// the lease id alone (what `GET /v1/lock/NAME` shows), Unlock, LeaseRevoke and Lock are
/// refused PERMISSION_DENIED and the holder keeps its lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_granted_over_http_cannot_be_acted_on_over_grpc_without_its_key() {
    let c = Cluster::start().await;
    let api = c.api + 1;
    let lease = tokio::task::spawn_blocking(move || {
        let (code, g) = call(api, "POST", "/v1/lease/grant", Some(serde_json::json!({ "ttl_ms": 60_000 })));
        assert_eq!(code, 200, "{g}");
        let lease = g["lease"].as_u64().unwrap();
        let body = serde_json::json!({ "name": "victim", "lease": lease });
        let (code, got) = call(api, "POST", "/v1/lock/acquire", Some(body));
        assert_eq!(code, 200, "{got}");
        lease
    })
    .await
    .unwrap();
    let mut one = c.client(2).await;
    let key = format!("victim/{lease:x}");
    let e = within("unlock", one.unlock(key.as_str())).await.unwrap_err();
    assert_eq!(status(e).code(), Code::PermissionDenied);
    let e = within("revoke", one.lease_revoke(lease as i64)).await.unwrap_err();
    assert_eq!(status(e).code(), Code::PermissionDenied);
    let e = within("lock", one.lock("other", Some(LockOptions::new().with_lease(lease as i64))))
        .await
        .unwrap_err();
    assert_eq!(status(e).code(), Code::PermissionDenied);
    let (code, view) =
        tokio::task::spawn_blocking(move || call(api, "GET", "/v1/lock/victim", None)).await.unwrap();
    assert_eq!((code, &view["holder"]["lease"]), (200, &serde_json::json!(lease)), "{view}");
}

#[test]
fn the_grpc_api_binds_loopback_only_unless_authenticated_or_insecure() {
    let out = Command::new(env!("CARGO_BIN_EXE_ringleader"))
        .args(["serve", "--grpc", "0.0.0.0:0", "--data-dir"])
        .arg(std::env::temp_dir().join(format!("ringleader-etcd-refused-{}", std::process::id())))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--grpc") && err.contains("--api-token-file") && err.contains("--insecure"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
}

/// A one-node service with an API token, its gRPC API on loopback (beyond it, the API would
/// need TLS as well: `tls.rs`).
struct Authenticated {
    child: Child,
    endpoint: String,
    token: String,
    dir: PathBuf,
}

impl Authenticated {
    fn start() -> Authenticated {
        let base = free_base(3, LANE);
        let dir = std::env::temp_dir().join(format!("ringleader-etcd-auth-{}-{base}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let token = format!("token-{}-{base}-0123456789", std::process::id());
        crate::common::write_private(&dir.join("api.token"), &token);
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_ringleader"));
        cmd.args(["serve", "--listen", &format!("127.0.0.1:{}", base + 1)])
            .args(["--api", &format!("127.0.0.1:{}", base + 2), "--grpc", &format!("127.0.0.1:{}", base + 3)])
            .arg("--api-token-file")
            .arg(dir.join("api.token"))
            .arg("--data-dir")
            .arg(dir.join("data"))
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let child = {
            let _held = FORK.lock().unwrap_or_else(|e| e.into_inner());
            cmd.spawn().expect("the ringleader binary starts")
        };
        Authenticated { child, endpoint: format!("http://127.0.0.1:{}", base + 3), token, dir }
    }

    /// Connects as `user` with `password`: etcd-client authenticates while connecting.
    async fn connect(&self, user: &str, password: &str) -> Result<Client, Error> {
        let opts = ConnectOptions::new().with_user(user, password);
        within("connect", Client::connect([self.endpoint.as_str()], Some(opts))).await
    }

    /// Polls until the node answers an authenticated Status naming itself leader.
    async fn ready(&self) -> Client {
        let t0 = Instant::now();
        loop {
            if let Ok(mut c) = self.connect("root", &self.token).await
                && let Ok(Ok(s)) = tokio::time::timeout(Duration::from_secs(2), c.status()).await
                && s.leader() == 1
            {
                return c;
            }
            assert!(t0.elapsed() < BOUND, "the node did not answer an authenticated Status within {BOUND:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for Authenticated {
    fn drop(&mut self) {
        // SAFETY: signalling our own child.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_an_api_token_every_call_needs_root_authenticated_with_it() {
    let node = Authenticated::start();
    let mut root = node.ready().await;
    let lease = within("grant", root.lease_grant(10, None)).await.unwrap().id();
    let held = within("lock", root.lock("db", Some(LockOptions::new().with_lease(lease)))).await.unwrap();
    assert!(held.header().unwrap().revision() > 0);
    within("unlock", root.unlock(held.key())).await.unwrap();

    // No user: every call but Authenticate is refused, with etcd's message.
    let mut anonymous = within("connect", Client::connect([node.endpoint.as_str()], None)).await.unwrap();
    for e in [
        status(within("status", anonymous.status()).await.unwrap_err()),
        status(within("grant", anonymous.lease_grant(10, None)).await.unwrap_err()),
        status(
            within("lock", anonymous.lock("db", Some(LockOptions::new().with_lease(lease))))
                .await
                .unwrap_err(),
        ),
    ] {
        assert_eq!((e.code(), e.message()), (Code::Unauthenticated, "etcdserver: user name is empty"));
    }

    // A wrong password, or another user with the right one: authentication fails.
    for (user, password) in [("root", "not-the-token-0123456789"), ("alice", node.token.as_str())] {
        let e = status(node.connect(user, password).await.err().expect("authentication fails"));
        assert_eq!(
            (e.code(), e.message()),
            (Code::InvalidArgument, "etcdserver: authentication failed, invalid user ID or password"),
            "{user}"
        );
    }
    within("revoke", root.lease_revoke(lease)).await.unwrap();
}

/// etcd's request limit and backend quota (`--max-request-bytes`, `--quota-backend-bytes`): a
/// put over the limit is refused as too large; puts that would take the store past the quota
/// are refused RESOURCE_EXHAUSTED "database space exceeded" and raise NOSPACE, which
/// Maintenance.Alarm lists and Status reports; the store's size stays under the quota; reads
/// and deletes still work, a delete makes room, and a disarmed alarm is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_past_the_quota_are_refused_with_nospace_and_reads_and_deletes_still_work() {
    use etcd_client::{AlarmAction, AlarmOptions, AlarmType};
    const QUOTA: i64 = 256 * 1024;
    let c = Cluster::start_with(&["--quota-backend-bytes=262144", "--max-request-bytes=65536"]).await;
    let mut one = c.client(1).await;

    let e = status(within("put", one.put("big", vec![7u8; 70 * 1024], None)).await.unwrap_err());
    assert_eq!((e.code(), e.message()), (Code::InvalidArgument, "etcdserver: request is too large"));

    let value = vec![1u8; 30 * 1024];
    let mut stored = 0;
    let refusal = loop {
        assert!(stored < 20, "20 puts of 30 KiB fit under a quota of 256 KiB");
        match within("put", one.put(format!("k{stored}"), value.clone(), None)).await {
            Ok(_) => stored += 1,
            Err(e) => break status(e),
        }
    };
    assert_eq!(refusal.code(), Code::ResourceExhausted, "{refusal:?}");
    assert_eq!(refusal.message(), "etcdserver: mvcc: database space exceeded");
    assert_eq!(stored, 8, "8 puts of 30 KiB (and 66 bytes of key and overhead) fit under 256 KiB");

    let s = within("status", one.status()).await.unwrap();
    assert!(s.db_size() > 0 && s.db_size() <= QUOTA, "db size {} within the quota", s.db_size());
    assert!(s.errors().iter().any(|e| e.contains("NOSPACE")), "{:?}", s.errors());
    let alarms = within("alarm list", one.alarm(AlarmAction::Get, AlarmType::None, None)).await.unwrap();
    let listed: Vec<(u64, AlarmType)> = alarms.alarms().iter().map(|a| (a.member_id(), a.alarm())).collect();
    assert_eq!(listed, [(1, AlarmType::Nospace)]);

    let got = within("get", one.get("k0", None)).await.unwrap();
    assert_eq!(got.kvs()[0].value(), &value[..], "reads still work");
    let deleted = within("delete", one.delete("k0", None)).await.unwrap();
    assert_eq!(deleted.deleted(), 1, "deletes still work");
    within("put", one.put("k0", value.clone(), None)).await.expect("a delete made room for one more");

    let mut opts = AlarmOptions::new();
    opts.with_member(1);
    within("disarm", one.alarm(AlarmAction::Deactivate, AlarmType::Nospace, Some(opts))).await.unwrap();
    let alarms = within("alarm list", one.alarm(AlarmAction::Get, AlarmType::None, None)).await.unwrap();
    assert!(alarms.alarms().is_empty(), "disarmed, yet {} alarms listed", alarms.alarms().len());
}

/// etcd-client with users and roles: root sets them up through the Auth API and enables auth;
/// then nobody may call, a user given every endpoint locks under its prefix round after round
/// (its token, handed out by one member, is taken by every member), is refused elsewhere, and
/// owns its lease: another user of the same role cannot revoke it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn users_lock_under_their_prefix_on_every_endpoint_and_own_their_leases() {
    use etcd_client::Permission;
    let c = Cluster::start().await;
    let endpoints: Vec<String> = (1..=3).map(|i| c.endpoint(i)).collect();
    let mut admin = c.client(1).await;
    within("user add", admin.user_add("root", "rootpw", None)).await.unwrap();
    within("grant root", admin.user_grant_role("root", "root")).await.unwrap();
    within("role add", admin.role_add("app")).await.unwrap();
    let perm = Permission::read_write("app/").with_prefix();
    within("grant permission", admin.role_grant_permission("app", perm)).await.unwrap();
    for user in ["alice", "bob"] {
        within("user add", admin.user_add(user, format!("{user}pw"), None)).await.unwrap();
        within("grant app", admin.user_grant_role(user, "app")).await.unwrap();
    }
    within("auth enable", admin.auth_enable()).await.unwrap();

    let e = status(within("anonymous get", admin.get("app/k", None)).await.unwrap_err());
    assert_eq!((e.code(), e.message()), (Code::Unauthenticated, "etcdserver: user name is empty"));

    let as_user = |user: &str| {
        let opts = ConnectOptions::new().with_user(user, format!("{user}pw"));
        Client::connect(endpoints.clone(), Some(opts))
    };
    let mut alice = within("connect", as_user("alice")).await.unwrap();
    let lease = within("grant", alice.lease_grant(30, None)).await.unwrap().id();
    for round in 0..6 {
        let got = within("lock", alice.lock("app/db", Some(LockOptions::new().with_lease(lease))))
            .await
            .unwrap_or_else(|e| panic!("round {round}: {e}"));
        within("unlock", alice.unlock(got.key())).await.unwrap();
    }
    let e = status(
        within("lock", alice.lock("db", Some(LockOptions::new().with_lease(lease)))).await.unwrap_err(),
    );
    assert_eq!((e.code(), e.message()), (Code::PermissionDenied, "etcdserver: permission denied"));

    let mut bob = within("connect", as_user("bob")).await.unwrap();
    let e = status(within("revoke", bob.lease_revoke(lease)).await.unwrap_err());
    assert_eq!(e.code(), Code::PermissionDenied, "{e}");
    within("revoke", alice.lease_revoke(lease)).await.unwrap();
    let wrong = Some(ConnectOptions::new().with_user("alice", "nope"));
    let refused = within("wrong password", Client::connect(endpoints.clone(), wrong)).await;
    let e = status(refused.err().expect("a wrong password is refused"));
    assert_eq!(e.code(), Code::InvalidArgument, "{e}");
}
