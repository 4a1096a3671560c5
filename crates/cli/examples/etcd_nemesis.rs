//! `etcd_nemesis`: clients taking locks through the service's etcd gRPC API (the `etcd-client`
//! crate: `Lease` and `Lock`) while the service is being faulted, writing through each Lock
//! answer's header revision (the fencing token) to `ringleader fenced-resource`, and recording
//! every operation in the history `ringleader verify --history` checks — the same format and
//! writer as `ringleader service-load` ([`ringleader_client::history`]), so both kinds of
//! client can run side by side on the same locks and be judged together
//! (deploy/nemesis.sh, deploy/service-fault-test.sh).
//!
//! Build: `cargo build -p ringleader --example etcd_nemesis`.
//!
//! What goes into the history, as for `service-load`: a granted Lock (interval and token); an
//! Unlock answered (`ok`); any other outcome (an error, a timeout: the call may have taken effect)
//! as an operation with no return, after which the client ends the session: it revokes the
//! lease (or finds it gone) and records `lease_ended` from the last moment the lease was known
//! alive at the service to the moment the service said it was gone.
//!
//! With `--writers` and `--watchers`, writers put values no other put writes to a few keys
//! under `--kv-prefix` (by default a prefix unique to the run; each put with the revision it was
//! answered at, or no answer) and read those keys back, and watchers watch that prefix from
//! revision 1, resuming after the last revision seen on another endpoint when a stream breaks or
//! goes quiet; `ringleader verify --history` judges the puts and reads for linearizability and
//! the streams against the puts (order, no gap, the right change at each revision).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use clap::Parser;
use etcd_client::{Client, ConnectOptions, Error, LockOptions};
use ringleader_client::history::{HistoryWriter, instant_ns, unix_ns};

/// etcd-client clients taking locks through the gRPC API, recording a history for verify
///
/// N clients each, in turn, take a lease (kept alive every third of its TTL), and under it
/// Lock and Unlock names chosen at random among --locks, failing over between --endpoints,
/// until --seconds are up; with --resource each holder writes through its fencing token.
///
/// Examples:
///   etcd_nemesis --endpoints http://127.0.0.1:2379,http://127.0.0.1:2380 --clients 2 \
///       --locks a,b --seconds 20 --history h.jsonl
///   ringleader verify --history h.jsonl
#[derive(Parser, Debug)]
#[command(verbatim_doc_comment)]
struct Args {
    /// gRPC endpoints (http://HOST:PORT), comma-separated; client i starts with the i-th.
    #[arg(long, value_delimiter = ',', required = true, value_name = "URL")]
    endpoints: Vec<String>,
    /// Concurrent clients, 1..=64.
    #[arg(long, default_value_t = 2, value_name = "N")]
    clients: usize,
    /// Lock names, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "orders", value_name = "NAME[,NAME...]")]
    locks: Vec<String>,
    /// How long the clients start operations, in seconds, 1..=86400.
    #[arg(long, default_value_t = 10, value_name = "SECONDS")]
    seconds: u64,
    /// Each session's lease TTL in seconds, 1..=60.
    #[arg(long, default_value_t = 3, value_name = "SECONDS")]
    ttl: i64,
    /// How long a Lock may wait before the client gives up (its outcome is then unknown), in
    /// milliseconds.
    #[arg(long, default_value_t = 2000, value_name = "MS")]
    acquire_timeout_ms: u64,
    /// The bound on any other call, in milliseconds.
    #[arg(long, default_value_t = 2000, value_name = "MS")]
    request_timeout_ms: u64,
    /// After the run, how long a client may try to confirm that a lease it lost track of is
    /// gone, in seconds.
    #[arg(long, default_value_t = 30, value_name = "SECONDS")]
    settle: u64,
    /// Write through each fencing token to this fenced resource (http://HOST:PORT).
    #[arg(long, value_name = "URL")]
    resource: Option<String>,
    /// Write the history here (JSON lines; created or truncated).
    #[arg(long, value_name = "FILE")]
    history: PathBuf,
    /// Authenticate as `root` with the password in this file (the nodes' API token).
    #[arg(long, value_name = "FILE")]
    password_file: Option<PathBuf>,
    /// The clients' names are PREFIX-1, PREFIX-2, ...
    #[arg(long, default_value = "etcd", value_name = "PREFIX")]
    name_prefix: String,
    /// Clients putting values under --kv-prefix and reading them back, 0..=16 (named
    /// PREFIX-put-1, ...).
    #[arg(long, default_value_t = 0, value_name = "N")]
    writers: usize,
    /// Clients watching --kv-prefix, 0..=16 (named PREFIX-watch-1, ...).
    #[arg(long, default_value_t = 0, value_name = "N")]
    watchers: usize,
    /// The keys the writers put and the watchers watch [default: nemesis/kv/RUN/, RUN unique to
    /// this run, so that a cluster used before holds no key under it].
    #[arg(long, value_name = "PREFIX")]
    kv_prefix: Option<String>,
}

/// What every client shares.
struct Plan {
    endpoints: Vec<String>,
    locks: Vec<String>,
    ttl: Duration,
    acquire_timeout: Duration,
    request_timeout: Duration,
    resource: Option<(ureq::Agent, String)>,
    password: Option<String>,
    deadline: Instant,
    settle_deadline: Instant,
}

/// What one client did.
#[derive(Default, Debug, Clone, Copy)]
struct Tally {
    sessions: u64,
    grant_failures: u64,
    sessions_lost: u64,
    granted: u64,
    released: u64,
    unknown: u64,
    writes_accepted: u64,
    writes_rejected: u64,
    writes_failed: u64,
    writes_skipped: u64,
    unconfirmed: u64,
}

impl Tally {
    fn add(&mut self, o: &Tally) {
        self.sessions += o.sessions;
        self.grant_failures += o.grant_failures;
        self.sessions_lost += o.sessions_lost;
        self.granted += o.granted;
        self.released += o.released;
        self.unknown += o.unknown;
        self.writes_accepted += o.writes_accepted;
        self.writes_rejected += o.writes_rejected;
        self.writes_failed += o.writes_failed;
        self.writes_skipped += o.writes_skipped;
        self.unconfirmed += o.unconfirmed;
    }
}

/// A connection to one endpoint at a time, moving on to the next after a failure.
struct Conn {
    plan: Arc<Plan>,
    at: usize,
    client: Option<Client>,
}

impl Conn {
    fn new(plan: Arc<Plan>, start: usize) -> Conn {
        Conn { plan, at: start, client: None }
    }

    /// The client for the current endpoint, connecting (bounded) if need be.
    async fn get(&mut self) -> Result<&mut Client, Error> {
        if self.client.is_none() {
            let mut opts = ConnectOptions::new().with_connect_timeout(self.plan.request_timeout);
            if let Some(p) = &self.plan.password {
                opts = opts.with_user("root", p.clone());
            }
            let endpoint = self.plan.endpoints[self.at % self.plan.endpoints.len()].clone();
            let c = tokio::time::timeout(self.plan.request_timeout, Client::connect([endpoint], Some(opts)))
                .await
                .map_err(|_| Error::InvalidArgs("connect timed out".into()))?;
            match c {
                Ok(c) => self.client = Some(c),
                Err(e) => {
                    self.fail();
                    return Err(e);
                }
            }
        }
        Ok(self.client.as_mut().expect("connected above"))
    }

    /// The current endpoint failed: the next call goes to the next one.
    fn fail(&mut self) {
        self.client = None;
        self.at += 1;
    }
}

/// Runs `f` on the connection within `bound`; a failure or timeout moves the connection on.
async fn call<T, F>(conn: &mut Conn, bound: Duration, f: F) -> Result<T, Error>
where
    F: AsyncFnOnce(&mut Client) -> Result<T, Error>,
{
    let answer = tokio::time::timeout(bound, async {
        let c = conn.get().await?;
        f(c).await
    })
    .await
    .unwrap_or_else(|_| Err(Error::InvalidArgs("timed out".into())));
    if answer.is_err() {
        conn.fail();
    }
    answer
}

/// Whether `e` is the service saying the lease does not exist (revoked or expired).
fn lease_gone(e: &Error) -> bool {
    match e {
        Error::GRpcStatus(s) => s.code() == tonic::Code::NotFound,
        Error::LeaseKeepAliveError(m) => m.contains("not found"),
        _ => false,
    }
}

/// The lease's state as the keep-alive task sees it.
struct Kept {
    /// The send time of the last keep-alive answered with a positive TTL.
    last_ok: Instant,
    /// The service said the lease is gone.
    gone: bool,
    /// The session is over: the task stops.
    stop: bool,
}

/// Who keeps a lease alive, for the `lease_gone` record.
struct Seen {
    hist: Arc<History>,
    name: String,
}

/// Keeps `lease` alive every third of the TTL until told to stop or the lease is gone.
async fn keep_alive(plan: Arc<Plan>, start: usize, lease: i64, kept: Arc<Mutex<Kept>>, seen: Arc<Seen>) {
    let mut conn = Conn::new(Arc::clone(&plan), start);
    let period = plan.ttl / 3;
    loop {
        let next = kept.lock().unwrap().last_ok + period;
        tokio::time::sleep_until(next.into()).await;
        loop {
            if kept.lock().unwrap().stop {
                return;
            }
            let sent = Instant::now();
            match call(&mut conn, plan.request_timeout, async |c| c.lease_keep_alive(lease).await.map(|_| ()))
                .await
            {
                Ok(()) => {
                    kept.lock().unwrap().last_ok = sent;
                    break;
                }
                Err(e) if lease_gone(&e) => {
                    let last_ok = {
                        let mut k = kept.lock().unwrap();
                        k.gone = true;
                        k.last_ok
                    };
                    // Nobody revoked it (the session revokes only after stopping this task).
                    let _ = seen.hist.lease_gone(
                        &seen.name,
                        lease as u64,
                        instant_ns(last_ok),
                        plan.ttl.as_millis() as u64,
                        unix_ns(),
                    );
                    return;
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }
}

/// Whether the session may still trust its lease: the service answered a keep-alive sent
/// less than 0.9 TTL ago.
fn trusted(kept: &Mutex<Kept>, ttl: Duration) -> bool {
    let k = kept.lock().unwrap();
    !k.gone && k.last_ok.elapsed() < ttl - ttl / 10
}

/// A small xorshift generator for the lock choice (not for anything that needs quality).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

async fn write_through(plan: &Plan, client: &str, lock: &str, token: u64, t: &mut Tally) {
    let Some((agent, url)) = &plan.resource else { return };
    let (agent, url) = (agent.clone(), format!("{url}/write"));
    let body = serde_json::json!({ "lock": lock, "token": token, "client": client }).to_string();
    let status = tokio::task::spawn_blocking(move || {
        agent.post(&url).header("content-type", "application/json").send(body).map(|r| r.status().as_u16())
    })
    .await;
    match status {
        Ok(Ok(200)) => t.writes_accepted += 1,
        Ok(Ok(409)) => t.writes_rejected += 1,
        _ => t.writes_failed += 1,
    }
}

/// Revokes `lease` (any endpoint) until the service says it is gone or the settle time is up;
/// the moment it said so.
///
/// "No such lease" is evidence that the service ended the lease only while no earlier revoke of
/// this client may have taken effect: a revoke that timed out or was cut off (its node paused,
/// partitioned, or removed from the cluster before answering) may have been applied, and the
/// next attempt then hears the client's own revoke. Such an answer ends the lease without a
/// `lease_gone` record.
async fn confirm_gone(
    conn: &mut Conn,
    plan: &Plan,
    lease: i64,
    seen: &Seen,
    last_ok: Instant,
) -> std::io::Result<Option<u64>> {
    let mut revoke_may_have_landed = false;
    while Instant::now() < plan.settle_deadline {
        match call(conn, plan.request_timeout, async |c| c.lease_revoke(lease).await.map(|_| ())).await {
            Ok(()) => return Ok(Some(unix_ns())),
            Err(e) if lease_gone(&e) => {
                let now = unix_ns();
                if !revoke_may_have_landed {
                    // Gone before this client ended it: it must have lived its TTL.
                    seen.hist.lease_gone(
                        &seen.name,
                        lease as u64,
                        instant_ns(last_ok),
                        plan.ttl.as_millis() as u64,
                        now,
                    )?;
                }
                return Ok(Some(now));
            }
            Err(_) => {
                revoke_may_have_landed = true;
                tokio::time::sleep(Duration::from_millis(200)).await
            }
        }
    }
    Ok(None)
}

async fn client_run(
    i: usize,
    plan: Arc<Plan>,
    hist: Arc<HistoryWriter<std::io::BufWriter<std::fs::File>>>,
    name: String,
) -> std::io::Result<Tally> {
    let mut t = Tally::default();
    let mut rng = Rng(unix_ns().wrapping_mul(0x9e37_79b9_7f4a_7c15).wrapping_add(i as u64) | 1);
    let mut conn = Conn::new(Arc::clone(&plan), i);
    let ttl_s = plan.ttl.as_secs() as i64;
    while Instant::now() < plan.deadline {
        let sent = Instant::now();
        let lease =
            match call(&mut conn, plan.request_timeout, async |c| c.lease_grant(ttl_s, None).await).await {
                Ok(g) => g.id(),
                Err(_) => {
                    // Nothing is held under a lease whose grant failed: it expires by itself.
                    t.grant_failures += 1;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
        t.sessions += 1;
        let lease_u = lease as u64;
        let kept = Arc::new(Mutex::new(Kept { last_ok: sent, gone: false, stop: false }));
        let seen = Arc::new(Seen { hist: Arc::clone(&hist), name: name.clone() });
        let keeper =
            tokio::spawn(keep_alive(Arc::clone(&plan), i + 1, lease, Arc::clone(&kept), Arc::clone(&seen)));
        // The last moment the lease was known alive at the service (a lower bound).
        let mut alive_ns = instant_ns(sent);
        let mut unknown: Option<String> = None;
        while unknown.is_none() && Instant::now() < plan.deadline && trusted(&kept, plan.ttl) {
            let lock = plan.locks[rng.below(plan.locks.len())].clone();
            let invoked = unix_ns();
            let opts = LockOptions::new().with_lease(lease);
            let l = lock.clone();
            match call(&mut conn, plan.acquire_timeout, async move |c| c.lock(l, Some(opts)).await).await {
                Ok(answer) => {
                    let token = answer.header().map(|h| h.revision()).unwrap_or(0) as u64;
                    let node = (conn.at % plan.endpoints.len() + 1) as u64;
                    hist.acquire_granted_by(&name, lease_u, &lock, invoked, (unix_ns(), token), node)?;
                    t.granted += 1;
                    alive_ns = alive_ns.max(invoked);
                    if trusted(&kept, plan.ttl) {
                        write_through(&plan, &name, &lock, token, &mut t).await;
                    } else {
                        t.writes_skipped += 1;
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    let key = answer.key().to_vec();
                    let invoked = unix_ns();
                    match call(&mut conn, plan.request_timeout, async move |c| c.unlock(key).await).await {
                        Ok(_) => {
                            hist.release(&name, lease_u, &lock, invoked, Some(unix_ns()))?;
                            t.released += 1;
                            alive_ns = alive_ns.max(invoked);
                        }
                        Err(_) => {
                            hist.release(&name, lease_u, &lock, invoked, None)?;
                            t.unknown += 1;
                            unknown = Some(lock);
                        }
                    }
                }
                Err(_) => {
                    // Refused, timed out or cut off: it may or may not have taken effect.
                    hist.acquire(&name, lease_u, &lock, invoked, None)?;
                    t.unknown += 1;
                    unknown = Some(lock);
                }
            }
        }
        let lost = !trusted(&kept, plan.ttl);
        if lost {
            t.sessions_lost += 1;
        }
        let (last_ok, heard_gone) = {
            let mut k = kept.lock().unwrap();
            k.stop = true;
            alive_ns = alive_ns.max(instant_ns(k.last_ok));
            (k.last_ok, k.gone)
        };
        keeper.abort();
        match unknown {
            Some(lock) => {
                // A keep-alive that heard it gone wrote its lease_gone already.
                let gone = if heard_gone {
                    Some(unix_ns())
                } else {
                    confirm_gone(&mut conn, &plan, lease, &seen, last_ok).await?
                };
                if gone.is_none() {
                    t.unconfirmed += 1;
                }
                hist.lease_ended(&name, lease_u, &lock, alive_ns.min(gone.unwrap_or(u64::MAX)), gone)?;
            }
            None => {
                let _ =
                    call(&mut conn, plan.request_timeout, async |c| c.lease_revoke(lease).await.map(|_| ()))
                        .await;
            }
        }
    }
    Ok(t)
}

/// The history file every task appends to.
type History = HistoryWriter<std::io::BufWriter<std::fs::File>>;

/// What the writers and watchers did, summed over them.
#[derive(Default)]
struct KvTally {
    puts: u64,
    puts_unknown: u64,
    reads: u64,
    events: u64,
    streams: u64,
}

impl KvTally {
    fn add(&mut self, o: &KvTally) {
        self.puts += o.puts;
        self.puts_unknown += o.puts_unknown;
        self.reads += o.reads;
        self.events += o.events;
        self.streams += o.streams;
    }
}

/// Puts `NAME-SEQ` to one of four keys under the prefix, then reads another of them, one call at
/// a time, until the deadline. The writers share the keys and start on different endpoints, so
/// a read answered from a replica that has not heard of a put another writer saw acknowledged
/// is a stale read, which the key-value checker names.
async fn writer_run(
    i: usize,
    plan: Arc<Plan>,
    hist: Arc<History>,
    name: String,
    prefix: String,
) -> std::io::Result<KvTally> {
    let mut conn = Conn::new(Arc::clone(&plan), i);
    let mut t = KvTally::default();
    let mut seq = 0u64;
    while Instant::now() < plan.deadline {
        seq += 1;
        let key = format!("{prefix}k{}", seq % 4);
        let value = format!("{name}-{seq}");
        let invoke = unix_ns();
        let answer = call(&mut conn, plan.request_timeout, async |c: &mut Client| {
            c.put(key.as_str(), value.as_str(), None).await
        })
        .await;
        let revision =
            answer.ok().and_then(|r| r.header().map(|h| h.revision())).and_then(|r| u64::try_from(r).ok());
        // At most about 100 puts and reads a second per writer: enough revisions for the
        // watchers, without crowding out the lock clients on a small machine.
        let pause = match revision {
            Some(r) => {
                t.puts += 1;
                hist.put(&name, &key, &value, invoke, Some((unix_ns(), r)))?;
                Duration::from_millis(10)
            }
            None => {
                t.puts_unknown += 1;
                hist.put(&name, &key, &value, invoke, None)?;
                Duration::from_millis(100)
            }
        };
        let key = format!("{prefix}k{}", (seq + 2) % 4);
        let invoke = unix_ns();
        let answer =
            call(&mut conn, plan.request_timeout, async |c: &mut Client| c.get(key.as_str(), None).await)
                .await;
        if let Ok(r) = answer {
            let value = r.kvs().first().map(|kv| String::from_utf8_lossy(kv.value()).into_owned());
            hist.get(&name, &key, value.as_deref(), invoke, unix_ns())?;
            t.reads += 1;
        }
        tokio::time::sleep(pause).await;
    }
    Ok(t)
}

/// Watches the prefix from revision 1 until two request timeouts past the deadline (so that it
/// sees the writers' last puts), recording every event; a stream
/// that fails, ends or stays quiet for the request timeout is resumed on the next endpoint after
/// the last revision seen. A stream cancelled because its start was compacted starts a new
/// watcher name (what it missed is not a gap of the old one).
async fn watcher_run(
    i: usize,
    plan: Arc<Plan>,
    hist: Arc<History>,
    name: String,
    prefix: String,
) -> std::io::Result<KvTally> {
    let mut conn = Conn::new(Arc::clone(&plan), i);
    let mut t = KvTally::default();
    let mut next: i64 = 1;
    let mut life = 1;
    let stop = plan.deadline + plan.request_timeout * 2;
    while Instant::now() < stop {
        let opts = etcd_client::WatchOptions::new().with_prefix().with_start_revision(next);
        let opened = call(&mut conn, plan.request_timeout, async |c: &mut Client| {
            c.watch(prefix.as_str(), Some(opts)).await
        })
        .await;
        let Ok(mut stream) = opened else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let who = if life == 1 { name.clone() } else { format!("{name}#{life}") };
        hist.watch_start(&who, &prefix, next as u64)?;
        t.streams += 1;
        loop {
            let left = stop.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            match tokio::time::timeout(plan.request_timeout.min(left), stream.message()).await {
                Ok(Ok(Some(resp))) => {
                    if resp.canceled() {
                        if resp.compact_revision() > 0 {
                            next = resp.compact_revision();
                            life += 1;
                        }
                        break;
                    }
                    for e in resp.events() {
                        let Some(kv) = e.kv() else { continue };
                        if e.event_type() != etcd_client::EventType::Put {
                            continue;
                        }
                        let (key, value) =
                            (String::from_utf8_lossy(kv.key()), String::from_utf8_lossy(kv.value()));
                        hist.watch_event(&who, &key, &value, kv.mod_revision() as u64)?;
                        t.events += 1;
                        next = kv.mod_revision() + 1;
                    }
                }
                _ => {
                    conn.fail();
                    break;
                }
            }
        }
    }
    Ok(t)
}

#[tokio::main]
async fn main() {
    if let Err(e) = run(Args::parse()).await {
        eprintln!("etcd_nemesis: {e:#}");
        std::process::exit(1);
    }
}

async fn run(args: Args) -> anyhow::Result<()> {
    for e in &args.endpoints {
        if !e.starts_with("http://") {
            bail!("--endpoints {e:?}: expected http://HOST:PORT");
        }
    }
    if !(1..=64).contains(&args.clients) {
        bail!("--clients {}: give 1..=64", args.clients);
    }
    if args.locks.iter().any(|l| l.is_empty()) {
        bail!("--locks: lock names must not be empty");
    }
    if !(1..=60).contains(&args.ttl) {
        bail!("--ttl {}: give 1..=60 seconds", args.ttl);
    }
    if args.writers > 16 || args.watchers > 16 {
        bail!("--writers {} --watchers {}: give 0..=16 each", args.writers, args.watchers);
    }
    let kv_prefix =
        args.kv_prefix.clone().unwrap_or_else(|| format!("nemesis/kv/{}-{}/", unix_ns(), std::process::id()));
    if kv_prefix.is_empty() {
        bail!("--kv-prefix: give a non-empty key prefix");
    }
    if !(1..=86400).contains(&args.seconds) {
        bail!("--seconds {}: give 1..=86400", args.seconds);
    }
    let resource = match &args.resource {
        Some(url) if url.starts_with("http://") => {
            let agent: ureq::Agent = ureq::Agent::config_builder()
                .http_status_as_error(false)
                .timeout_global(Some(Duration::from_secs(2)))
                .build()
                .into();
            Some((agent, url.trim_end_matches('/').to_string()))
        }
        Some(url) => bail!("--resource {url:?}: expected http://HOST:PORT"),
        None => None,
    };
    let password = match &args.password_file {
        Some(f) => Some(
            std::fs::read_to_string(f)
                .with_context(|| format!("--password-file {}", f.display()))?
                .trim()
                .to_string(),
        ),
        None => None,
    };
    let file = std::fs::File::create(&args.history)
        .with_context(|| format!("--history {}", args.history.display()))?;
    let hist = Arc::new(HistoryWriter::new(std::io::BufWriter::new(file)));
    let start = Instant::now();
    let plan = Arc::new(Plan {
        endpoints: args.endpoints.clone(),
        locks: args.locks.clone(),
        ttl: Duration::from_secs(args.ttl as u64),
        acquire_timeout: Duration::from_millis(args.acquire_timeout_ms),
        request_timeout: Duration::from_millis(args.request_timeout_ms),
        resource,
        password,
        deadline: start + Duration::from_secs(args.seconds),
        settle_deadline: start + Duration::from_secs(args.seconds + args.settle),
    });
    let mut tasks = Vec::new();
    for i in 0..args.clients {
        let name = format!("{}-{}", args.name_prefix, i + 1);
        tasks.push(tokio::spawn(client_run(i, Arc::clone(&plan), Arc::clone(&hist), name)));
    }
    // Writers and watchers, each task tagged with its role.
    let mut kv_tasks = Vec::new();
    for (role, n) in [("put", args.writers), ("watch", args.watchers)] {
        for i in 0..n {
            let name = format!("{}-{role}-{}", args.name_prefix, i + 1);
            let (plan, hist, prefix) = (Arc::clone(&plan), Arc::clone(&hist), kv_prefix.clone());
            let task = match role {
                "put" => tokio::spawn(writer_run(i, plan, hist, name, prefix)),
                _ => tokio::spawn(watcher_run(i, plan, hist, name, prefix)),
            };
            kv_tasks.push((role, task));
        }
    }
    let mut total = Tally::default();
    for task in tasks {
        total.add(&task.await.context("a client task panicked")?.context("writing the history")?);
    }
    let mut kv = KvTally::default();
    for (role, task) in kv_tasks {
        kv.add(
            &task.await.with_context(|| format!("a {role} task panicked"))?.context("writing the history")?,
        );
    }
    let elapsed = start.elapsed().as_secs_f64();
    if args.writers + args.watchers > 0 {
        println!(
            "etcd_nemesis: {} writers: {} puts answered, {} unknown, {} reads answered; {} watchers: {} events over {} streams",
            args.writers, kv.puts, kv.puts_unknown, kv.reads, args.watchers, kv.events, kv.streams
        );
    }
    println!(
        "etcd_nemesis: {} clients, {elapsed:.1} s: {} Locks granted, {} Unlocks answered, {} outcomes unknown; \
         {} sessions ({} lost, {} grants failed, {} lease ends never confirmed)",
        args.clients,
        total.granted,
        total.released,
        total.unknown,
        total.sessions,
        total.sessions_lost,
        total.grant_failures,
        total.unconfirmed
    );
    if args.resource.is_some() {
        println!(
            "etcd_nemesis: resource writes: {} accepted, {} rejected as stale, {} failed, {} skipped (lease no longer trusted)",
            total.writes_accepted, total.writes_rejected, total.writes_failed, total.writes_skipped
        );
    }
    println!(
        "etcd_nemesis: history {}: {} operations, {} with an unknown outcome",
        args.history.display(),
        hist.operations(),
        hist.unknown()
    );
    if total.granted == 0 {
        bail!("no lock was granted in {elapsed:.1} s: is the service up at {}?", args.endpoints.join(","));
    }
    Ok(())
}
