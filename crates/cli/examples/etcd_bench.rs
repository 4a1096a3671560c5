//! `etcd_bench`: lock throughput, failover and hand-over of an etcd v3 gRPC endpoint — etcd
//! itself or a ringleader cluster started with `--grpc-base-port` — measured by the same client
//! (the `etcd-client` crate), so that both can be compared in one run (`docs/etcd-bench.sh`).
//!
//! Build: `cargo build --release -p ringleader --example etcd_bench`.

use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use clap::{Parser, ValueEnum};
use etcd_client::{Client, LockOptions};
use hdrhistogram::Histogram;

/// Measure an etcd v3 gRPC lock service: throughput, failover or hand-over
///
/// --measure throughput (default): each client (its own connections, to every endpoint, over
/// which etcd-client spreads its requests) takes one lease, then calls Lock and Unlock in a loop until the time is up; client i
/// uses lock name i mod NAMES. One operation is one Lock plus one Unlock.
///
/// --measure failover: TRIALS times, find the leader (Maintenance.Status on every endpoint),
/// grant a lease through another endpoint, run --kill with {leader} replaced by the leader's
/// endpoint number (1-based), and time until a Lock+Unlock through that other endpoint
/// succeeds; then run --restart and wait until every endpoint names the same leader.
///
/// --measure handover: TRIALS times, a holder (endpoint 1) takes a lease of --ttl seconds and
/// a lock, a waiter (endpoint 2) blocks in Lock on the same name, the holder keeps its lease
/// alive twice (every third of the TTL) and dies just after the second answer. The figure is
/// the time from that death to the waiter's grant; a lease service can bring it down to the TTL.
///
/// --measure leader: print the endpoint of the node every endpoint names leader.
///
/// --measure load: write --keys keys (`key-00000000` = `value-0000000000`, …) in transactions
/// of 128 puts (etcd's --max-txn-ops), --clients of them at once (each its own connection, to
/// endpoint i mod their number), and print how long it took: a fast way to fill a store.
///
/// Examples:
///   etcd_bench --endpoints http://127.0.0.1:2379 --clients 8 --names 1
///   etcd_bench --endpoints http://127.0.0.1:2379,http://127.0.0.1:2380 --measure handover --ttl 2
///   etcd_bench --endpoints E1,E2,E3 --measure failover --trials 20 \
///       --kill 'kill -9 $(cat pid-{leader})' --restart './start-node {leader}'
#[derive(Parser, Debug)]
#[command(verbatim_doc_comment)]
struct Args {
    /// gRPC endpoints (http://HOST:PORT), comma-separated.
    #[arg(long, value_delimiter = ',', required = true, value_name = "URL")]
    endpoints: Vec<String>,
    /// What to measure.
    #[arg(long, value_enum, default_value_t = Measure::Throughput)]
    measure: Measure,
    /// Concurrent clients (throughput), 1..=256.
    #[arg(long, default_value_t = 1, value_name = "N")]
    clients: usize,
    /// Distinct lock names (throughput), 1..=clients.
    #[arg(long, default_value_t = 1, value_name = "K")]
    names: usize,
    /// How long to measure (throughput), in seconds, 1..=3600.
    #[arg(long, default_value_t = 5, value_name = "SECONDS")]
    seconds: u64,
    /// The dying holder's lease TTL in seconds (handover), 1..=60; etcd may raise it to its
    /// minimum, and the figure uses the TTL granted.
    #[arg(long, default_value_t = 2, value_name = "SECONDS")]
    ttl: i64,
    /// Trials (failover, handover), 1..=1000.
    #[arg(long, default_value_t = 10, value_name = "N")]
    trials: usize,
    /// Shell command that kills the leader (failover); {leader} is its endpoint number.
    #[arg(long, value_name = "CMD")]
    kill: Option<String>,
    /// Shell command that starts the killed node again (failover); {leader} as in --kill.
    #[arg(long, value_name = "CMD")]
    restart: Option<String>,
    /// Keys to write (load), 1..=100000000.
    #[arg(long, default_value_t = 10_000, value_name = "N")]
    keys: u64,
    /// Printed at the start of the result line.
    #[arg(long, default_value = "", value_name = "TEXT")]
    label: String,
}

/// What `etcd_bench` measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Measure {
    /// Lock+Unlock operations per second and their latency.
    Throughput,
    /// Leader killed -> the first Lock+Unlock that succeeds.
    Failover,
    /// A lock holder's death -> the next holder's grant.
    Handover,
    /// Print the endpoint of the node every endpoint names leader (for scripts).
    Leader,
    /// Write --keys keys in transactions of 128 puts, --clients at once.
    Load,
}

/// The longest any single call may take before the measurement gives up.
const BOUND: Duration = Duration::from_secs(30);

#[tokio::main]
async fn main() {
    let args = Args::parse();
    if let Err(e) = run(args).await {
        eprintln!("etcd_bench: {e:#}");
        std::process::exit(1);
    }
}

async fn run(args: Args) -> anyhow::Result<()> {
    for e in &args.endpoints {
        if !e.starts_with("http://") {
            bail!("--endpoints {e:?}: expected http://HOST:PORT");
        }
    }
    if !(1..=1000).contains(&args.trials) {
        bail!("--trials {}: give 1..=1000", args.trials);
    }
    let line = match args.measure {
        Measure::Throughput => throughput(&args).await?,
        Measure::Failover => failover(&args).await?,
        Measure::Handover => handover(&args).await?,
        Measure::Load => load(&args).await?,
        Measure::Leader => {
            let leader = wait_agreed(&args.endpoints).await?;
            println!("{}", args.endpoints[leader - 1]);
            return Ok(());
        }
    };
    if args.label.is_empty() {
        println!("{line}");
    } else {
        println!("{:<36} {line}", args.label);
    }
    Ok(())
}

/// Awaits `f` for at most [`BOUND`].
async fn bounded<T>(
    what: &str,
    f: impl std::future::Future<Output = Result<T, etcd_client::Error>>,
) -> anyhow::Result<T> {
    match tokio::time::timeout(BOUND, f).await {
        Ok(r) => r.with_context(|| what.to_string()),
        Err(_) => bail!("{what}: no answer within {BOUND:?}"),
    }
}

/// Puts per transaction in [`load`] (etcd's default `--max-txn-ops`).
const LOAD_BATCH: u64 = 128;

/// Writes `args.keys` keys in transactions of [`LOAD_BATCH`] puts, `args.clients` at once.
async fn load(args: &Args) -> anyhow::Result<String> {
    if !(1..=100_000_000).contains(&args.keys) {
        bail!("--keys {}: give 1..=100000000", args.keys);
    }
    if !(1..=256).contains(&args.clients) {
        bail!("--clients {}: give 1..=256", args.clients);
    }
    let batches = args.keys.div_ceil(LOAD_BATCH);
    let next = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let t0 = Instant::now();
    let mut tasks = Vec::new();
    for i in 0..args.clients {
        let mut c = connect(&args.endpoints[i % args.endpoints.len()]).await?;
        let (next, keys) = (next.clone(), args.keys);
        tasks.push(tokio::spawn(async move {
            loop {
                let b = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if b >= batches {
                    return anyhow::Ok(());
                }
                let puts = (b * LOAD_BATCH..keys.min((b + 1) * LOAD_BATCH))
                    .map(|k| etcd_client::TxnOp::put(format!("key-{k:08}"), format!("value-{k:010}"), None))
                    .collect::<Vec<_>>();
                bounded("txn", c.txn(etcd_client::Txn::new().and_then(puts))).await?;
            }
        }));
    }
    for t in tasks {
        t.await??;
    }
    let secs = t0.elapsed().as_secs_f64();
    Ok(format!(
        "wrote {} keys in {batches} transactions of up to {LOAD_BATCH} puts, {} clients, in {secs:.1} s ({:.0} keys/s)",
        args.keys,
        args.clients,
        args.keys as f64 / secs
    ))
}

async fn connect(endpoint: &str) -> anyhow::Result<Client> {
    bounded(&format!("connect to {endpoint}"), Client::connect([endpoint], None)).await
}

fn ms(h: &Histogram<u64>, q: f64) -> f64 {
    h.value_at_quantile(q) as f64 / 1000.0
}

async fn throughput(args: &Args) -> anyhow::Result<String> {
    if !(1..=256).contains(&args.clients) {
        bail!("--clients {}: give 1..=256", args.clients);
    }
    if !(1..=args.clients).contains(&args.names) {
        bail!("--names {}: give 1..=clients ({})", args.names, args.clients);
    }
    if !(1..=3600).contains(&args.seconds) {
        bail!("--seconds {}: give 1..=3600", args.seconds);
    }
    let run_id = std::process::id();
    // Connect and take the leases first: the clock starts when every client is ready.
    let mut ready = Vec::new();
    for i in 0..args.clients {
        // Every endpoint, as etcd-client is normally used: the client spreads its requests
        // over them, and a follower forwards to the leader.
        let mut c = bounded("connect", Client::connect(&args.endpoints, None)).await?;
        let lease = bounded("LeaseGrant", c.lease_grant(60, None)).await?.id();
        ready.push((c, lease, format!("bench-{run_id}-{}", i % args.names)));
    }
    let start = Instant::now();
    let deadline = start + Duration::from_secs(args.seconds);
    let mut tasks = Vec::new();
    for (mut c, lease, name) in ready {
        tasks.push(tokio::spawn(async move {
            let mut h = Histogram::<u64>::new(3)?;
            while Instant::now() < deadline {
                let t = Instant::now();
                let held = bounded("Lock", c.lock(name.as_str(), Some(LockOptions::new().with_lease(lease))))
                    .await?;
                bounded("Unlock", c.unlock(held.key())).await?;
                h.record(t.elapsed().as_micros() as u64)?;
            }
            let _ = c.lease_revoke(lease).await;
            anyhow::Ok(h)
        }));
    }
    let mut all = Histogram::<u64>::new(3)?;
    for t in tasks {
        all.add(t.await.context("a client task panicked")??)?;
    }
    let secs = start.elapsed().as_secs_f64();
    Ok(format!(
        "{} clients, {} names: {:.0} lock+unlock/s, p50 {:.2} ms, p99 {:.2} ms ({} ops in {secs:.1} s)",
        args.clients,
        args.names,
        all.len() as f64 / secs,
        ms(&all, 0.5),
        ms(&all, 0.99),
        all.len()
    ))
}

/// The 1-based number of the endpoint that is the leader, when every endpoint answers Status
/// and they all name the same leader.
async fn agreed_leader(endpoints: &[String]) -> Option<usize> {
    let mut leader = None;
    let mut found = None;
    for (i, e) in endpoints.iter().enumerate() {
        let answer = tokio::time::timeout(Duration::from_secs(1), async {
            let mut c = Client::connect([e.as_str()], None).await?;
            c.status().await
        })
        .await
        .ok()?
        .ok()?;
        let id = answer.header().map(|h| h.member_id())?;
        let l = answer.leader();
        if l == 0 || leader.is_some_and(|x| x != l) {
            return None;
        }
        leader = Some(l);
        if id == l {
            found = Some(i + 1);
        }
    }
    found
}

async fn wait_agreed(endpoints: &[String]) -> anyhow::Result<usize> {
    let until = Instant::now() + BOUND;
    loop {
        if let Some(l) = agreed_leader(endpoints).await {
            return Ok(l);
        }
        if Instant::now() > until {
            bail!("the endpoints did not agree on a leader within {BOUND:?}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn shell(cmd: &str, leader: usize) -> anyhow::Result<()> {
    let cmd = cmd.replace("{leader}", &leader.to_string());
    let status = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(&cmd)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .await
        .with_context(|| format!("cannot run {cmd:?}"))?;
    if !status.success() {
        bail!("{cmd:?} failed: {status}");
    }
    Ok(())
}

async fn failover(args: &Args) -> anyhow::Result<String> {
    let (Some(kill), Some(restart)) = (&args.kill, &args.restart) else {
        bail!("--measure failover needs --kill and --restart");
    };
    let n = args.endpoints.len();
    if n < 3 {
        bail!("--measure failover: give at least 3 endpoints (a majority must survive)");
    }
    let mut h = Histogram::<u64>::new(3)?;
    for trial in 0..args.trials {
        let leader = wait_agreed(&args.endpoints).await?;
        let other = leader % n + 1;
        let mut c = connect(&args.endpoints[other - 1]).await?;
        let lease = bounded("LeaseGrant", c.lease_grant(10, None)).await?.id();
        let name = format!("failover-{}-{trial}", std::process::id());
        let t0 = Instant::now();
        shell(kill, leader).await?;
        loop {
            if t0.elapsed() > BOUND {
                bail!("trial {trial}: no Lock+Unlock succeeded within {BOUND:?} of the kill");
            }
            let attempt = tokio::time::timeout(Duration::from_secs(1), async {
                let held = c.lock(name.as_str(), Some(LockOptions::new().with_lease(lease))).await?;
                c.unlock(held.key()).await
            })
            .await;
            match attempt {
                Ok(Ok(_)) => break,
                // Connection refused and the like answer at once: do not spin.
                Ok(Err(_)) => tokio::time::sleep(Duration::from_millis(2)).await,
                Err(_) => {}
            }
        }
        h.record(t0.elapsed().as_micros() as u64)?;
        let _ = c.lease_revoke(lease).await;
        shell(restart, leader).await?;
        wait_agreed(&args.endpoints).await?;
    }
    Ok(format!(
        "leader kill -> Lock+Unlock again, {} trials: p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms",
        args.trials,
        ms(&h, 0.5),
        ms(&h, 0.99),
        h.max() as f64 / 1000.0
    ))
}

async fn handover(args: &Args) -> anyhow::Result<String> {
    if !(1..=60).contains(&args.ttl) {
        bail!("--ttl {}: give 1..=60 seconds", args.ttl);
    }
    let holder_at = &args.endpoints[0];
    let waiter_at = &args.endpoints[1 % args.endpoints.len()];
    let mut h = Histogram::<u64>::new(3)?;
    let mut granted_ttl = args.ttl;
    for trial in 0..args.trials {
        let name = format!("handover-{}-{trial}", std::process::id());
        let mut holder = connect(holder_at).await?;
        let lease = bounded("LeaseGrant", holder.lease_grant(args.ttl, None)).await?;
        granted_ttl = lease.ttl();
        let ttl = Duration::from_secs(granted_ttl.max(1) as u64);
        bounded("Lock (holder)", holder.lock(name.as_str(), Some(LockOptions::new().with_lease(lease.id()))))
            .await?;
        let mut waiter = connect(waiter_at).await?;
        let wl = bounded("LeaseGrant", waiter.lease_grant(60, None)).await?.id();
        let wname = name.clone();
        let waiting = tokio::spawn(async move {
            let held = bounded(
                "Lock (waiter)",
                waiter.lock(wname.as_str(), Some(LockOptions::new().with_lease(wl))),
            )
            .await;
            let at = Instant::now();
            let held = held?;
            let _ = waiter.unlock(held.key()).await;
            let _ = waiter.lease_revoke(wl).await;
            anyhow::Ok(at)
        });
        // Two keep-alive periods: the waiter is queued by then. The holder dies just after the
        // second keep-alive was answered: its lease has a whole TTL left.
        let (mut keeper, mut answers) =
            bounded("LeaseKeepAlive", holder.lease_keep_alive(lease.id())).await?;
        for _ in 0..2 {
            tokio::time::sleep(ttl / 3).await;
            bounded("keep-alive", keeper.keep_alive()).await?;
            bounded("keep-alive answer", answers.message()).await?;
        }
        let died = Instant::now();
        drop((keeper, answers, holder));
        let granted = tokio::time::timeout(ttl * 4 + BOUND, waiting)
            .await
            .map_err(|_| anyhow::anyhow!("trial {trial}: the waiter was not granted the lock in time"))?
            .context("the waiter task panicked")??;
        h.record(granted.duration_since(died).as_micros() as u64)?;
    }
    let ttl_ms = granted_ttl as f64 * 1000.0;
    let max = h.max() as f64 / 1000.0;
    Ok(format!(
        "holder death -> next holder, TTL {ttl_ms:.0} ms, {} trials: p50 {:.0} ms, p99 {:.0} ms, max {max:.0} ms (max - TTL = {:+.0} ms)",
        args.trials,
        ms(&h, 0.5),
        ms(&h, 0.99),
        max - ttl_ms
    ))
}
