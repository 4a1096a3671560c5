//! `ringleader bench-service`: lock throughput and latency of a running coordination service —
//! ours, or etcd through its JSON gateway, so that both are measured by the same client in one
//! run (`docs/service-bench.sh` starts both).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use clap::{Args, ValueEnum};
use serde_json::{Value, json};

/// Measure a running lock service: throughput, or hand-over after a holder dies
///
/// --measure throughput (default): each client takes one lease, then acquires and releases a
/// lock in a loop until the time is up; client i uses lock name i mod NAMES. One operation is
/// one acquire plus one release.
///
/// --measure handover: TRIALS times, a holder takes a lease of --ttl, acquires a lock and keeps
/// the lease alive every third of the TTL while a waiter (with a long lease of its own) blocks
/// in acquire of the same name; then the holder dies just after a keep-alive was answered (it
/// stops talking: no release, no revoke). The figure is the time from that death to the
/// waiter's grant, which a lease service can bring down to the TTL itself.
///
/// --measure floor: no service is spoken to. Times, SAMPLES times each, a 4 KiB append synced
/// with fdatasync in --data-dir, one Raft append persisted as a node persists it (redb, one
/// fsync) in --data-dir, and a 64-byte round trip over loopback TCP; then prints the least an
/// uncontended lock+unlock can take from them (two commits and two client round trips). Give
/// the file system the service's data directories are on.
///
/// The same client speaks to etcd (v3 JSON gateway, /v3/lock/lock) with --target etcd; etcd
/// refuses lease TTLs under its minimum (about 2 s with its default election timeout) by
/// raising them, so compare at --ttl 2s.
///
/// Examples:
///   ringleader cluster --service --nodes 3 --api-base-port 4100 &
///   ringleader bench-service --endpoints http://127.0.0.1:4101 --clients 8 --names 1
///   ringleader bench-service --endpoints http://127.0.0.1:4101 --measure handover --ttl 300ms
///   ringleader bench-service --target etcd --endpoints http://127.0.0.1:2379 --clients 8
///   ringleader bench-service --measure floor --data-dir /var/lib/ringleader
#[derive(Args, Debug, Clone)]
#[command(verbatim_doc_comment)]
pub struct BenchServiceArgs {
    /// What the endpoints run.
    #[arg(long, value_enum, default_value_t = Target::Ringleader)]
    pub target: Target,
    /// Base URLs, comma-separated; client i uses endpoint i mod their number.
    #[arg(long, default_value = "http://127.0.0.1:4100", value_delimiter = ',', value_name = "URL")]
    pub endpoints: Vec<String>,
    /// Concurrent clients (threads), 1..=1024.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub clients: usize,
    /// Distinct lock names, 1..=clients.
    #[arg(long, default_value_t = 1, value_name = "K")]
    pub names: usize,
    /// How long to measure (throughput).
    #[arg(long, default_value = "5s", value_name = "TIME")]
    pub duration: String,
    /// What to measure.
    #[arg(long, value_enum, default_value_t = Measure::Throughput)]
    pub measure: Measure,
    /// The dying holder's lease TTL (handover), 100ms..=60s; etcd takes whole seconds.
    #[arg(long, default_value = "2s", value_name = "TIME")]
    pub ttl: String,
    /// Hand-overs to measure (handover), 1..=1000.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub trials: usize,
    /// Where to measure the disk (floor): a directory on the data directories' file system.
    /// A scratch directory is made inside it and removed afterwards.
    #[arg(long, default_value = ".", value_name = "DIR")]
    pub data_dir: std::path::PathBuf,
    /// Samples of each kind (floor), 1..=100000.
    #[arg(long, default_value_t = 500, value_name = "N")]
    pub samples: usize,
    /// Print one JSON line instead of text.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub tls: crate::service_client::TlsArgs,
}

/// The service the endpoints run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Target {
    Ringleader,
    Etcd,
}

/// What `bench-service` measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Measure {
    /// Lock+unlock operations per second and their latency.
    Throughput,
    /// The time from a lock holder's death to the next holder's grant.
    Handover,
    /// The machine's floor: a durable append and a loopback round trip (no service).
    Floor,
}

/// One client's connection to one endpoint.
struct Session {
    agent: ureq::Agent,
    base: String,
    target: Target,
    lease: String,
    /// The key acting on a ringleader lease takes (`Null` for etcd's).
    key: Value,
    /// The lease's TTL as the service granted it.
    ttl: Duration,
}

fn post(agent: &ureq::Agent, url: &str, body: &Value) -> anyhow::Result<Value> {
    let mut r = agent
        .post(url)
        .header("content-type", "application/json")
        .send(body.to_string())
        .with_context(|| format!("POST {url}"))?;
    let status = r.status().as_u16();
    let text = r.body_mut().read_to_string()?;
    if status != 200 {
        bail!("POST {url}: {status} {text}");
    }
    Ok(serde_json::from_str(&text)?)
}

fn b64(s: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(s)
}

impl Session {
    fn open(base: &str, target: Target, tls: &ureq::tls::TlsConfig) -> anyhow::Result<Session> {
        Session::with_ttl(base, target, Duration::from_secs(30), tls)
    }

    /// A session whose lease lives `ttl` unless kept alive (etcd: whole seconds, at least 1).
    fn with_ttl(
        base: &str,
        target: Target,
        ttl: Duration,
        tls: &ureq::tls::TlsConfig,
    ) -> anyhow::Result<Session> {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .tls_config(tls.clone())
            .timeout_global(Some(Duration::from_secs(30)))
            .build()
            .into();
        let (lease, key, granted_ms) = match target {
            Target::Ringleader => {
                let v = post(
                    &agent,
                    &format!("{base}/v1/lease/grant"),
                    &json!({ "ttl_ms": ttl.as_millis() as u64 }),
                )?;
                let ttl_ms = v["ttl_ms"].as_u64().context("the grant has no ttl_ms")?;
                (v["lease"].to_string(), v["key"].clone(), ttl_ms)
            }
            Target::Etcd => {
                let secs = ttl.as_secs_f64().ceil().max(1.0) as u64;
                let v = post(&agent, &format!("{base}/v3/lease/grant"), &json!({ "TTL": secs.to_string() }))?;
                let id = v["ID"].as_str().map(str::to_string).context("etcd's grant has no ID")?;
                // The gateway writes 64-bit integers as strings; etcd may raise a short TTL.
                let granted = v["TTL"].as_str().and_then(|t| t.parse::<u64>().ok()).unwrap_or(secs);
                (id, Value::Null, granted * 1000)
            }
        };
        let ttl = Duration::from_millis(granted_ms);
        Ok(Session { agent, base: base.to_string(), target, lease, key, ttl })
    }

    /// Acquires `name`, waiting in its queue; returns what releases it.
    fn acquire(&self, name: &str) -> anyhow::Result<Value> {
        match self.target {
            Target::Ringleader => {
                let lease: u64 = self.lease.parse()?;
                let body = json!({ "name": name, "lease": lease, "key": self.key });
                post(&self.agent, &format!("{}/v1/lock/acquire", self.base), &body)?;
                Ok(body)
            }
            Target::Etcd => {
                let body = json!({ "name": b64(name), "lease": self.lease });
                let v = post(&self.agent, &format!("{}/v3/lock/lock", self.base), &body)?;
                let key = v["key"].as_str().context("etcd's lock answer has no key")?;
                Ok(json!({ "key": key }))
            }
        }
    }

    /// Releases what [`Session::acquire`] returned.
    fn release(&self, held: &Value) -> anyhow::Result<()> {
        let path = match self.target {
            Target::Ringleader => "v1/lock/release",
            Target::Etcd => "v3/lock/unlock",
        };
        post(&self.agent, &format!("{}/{path}", self.base), held)?;
        Ok(())
    }

    /// One acquire and one release of `name`.
    fn lock_unlock(&self, name: &str) -> anyhow::Result<()> {
        let held = self.acquire(name)?;
        self.release(&held)
    }

    /// Renews the session's lease once.
    fn keep_alive(&self) -> anyhow::Result<()> {
        match self.target {
            Target::Ringleader => {
                let lease: u64 = self.lease.parse()?;
                let body = json!({ "lease": lease, "key": self.key });
                post(&self.agent, &format!("{}/v1/lease/keepalive", self.base), &body)?;
            }
            Target::Etcd => {
                post(
                    &self.agent,
                    &format!("{}/v3/lease/keepalive", self.base),
                    &json!({ "ID": self.lease }),
                )?;
            }
        }
        Ok(())
    }
}

/// Runs `ringleader bench-service`.
pub fn run(args: BenchServiceArgs) -> crate::CommandResult {
    if args.measure == Measure::Floor {
        return floor(&args);
    }
    if !(1..=1024).contains(&args.clients) {
        bail!("--clients {}: give 1..=1024", args.clients);
    }
    if args.names == 0 || args.names > args.clients {
        bail!("--names {}: give 1..={} (at most one name per client)", args.names, args.clients);
    }
    if args.endpoints.is_empty() {
        bail!("--endpoints: give at least one URL");
    }
    args.tls.check(&args.endpoints)?;
    let tls = args.tls.ureq_config()?;
    if args.measure == Measure::Handover {
        return handover(&args, &tls);
    }
    let ns = ringleader_algorithms::params::parse_duration(&args.duration)
        .with_context(|| format!("--duration {:?}: expected a duration such as 5s", args.duration))?;
    let duration = Duration::from_nanos(ns);
    let sessions: Vec<Session> = (0..args.clients)
        .map(|i| {
            Session::open(args.endpoints[i % args.endpoints.len()].trim_end_matches('/'), args.target, &tls)
        })
        .collect::<anyhow::Result<_>>()?;
    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let handles: Vec<_> = sessions
        .into_iter()
        .enumerate()
        .map(|(i, s)| {
            let name = format!("bench-{}", i % args.names);
            let stop = stop.clone();
            std::thread::spawn(move || -> anyhow::Result<hdrhistogram::Histogram<u64>> {
                let mut h = hdrhistogram::Histogram::<u64>::new(3)?;
                while !stop.load(Ordering::Relaxed) {
                    let t = Instant::now();
                    s.lock_unlock(&name)?;
                    h.record(t.elapsed().as_micros() as u64)?;
                }
                Ok(h)
            })
        })
        .collect();
    std::thread::sleep(duration);
    stop.store(true, Ordering::Relaxed);
    let mut all = hdrhistogram::Histogram::<u64>::new(3)?;
    for h in handles {
        let h = h.join().map_err(|_| anyhow::anyhow!("a client thread panicked"))??;
        all.add(h)?;
    }
    let elapsed = start.elapsed().as_secs_f64();
    let ops = all.len();
    let rate = ops as f64 / elapsed;
    let (p50, p99) =
        (all.value_at_quantile(0.5) as f64 / 1000.0, all.value_at_quantile(0.99) as f64 / 1000.0);
    let target = target_name(args.target);
    if args.json {
        println!(
            "{}",
            json!({ "target": target, "clients": args.clients, "names": args.names, "ops": ops,
                    "seconds": elapsed, "ops_per_s": rate, "p50_ms": p50, "p99_ms": p99 })
        );
    } else {
        println!(
            "{target}: {} clients, {} names: {ops} lock+unlock in {elapsed:.1} s = {rate:.0} ops/s; latency p50 {p50:.2} ms, p99 {p99:.2} ms",
            args.clients, args.names
        );
    }
    Ok(crate::ExitStatus::Ok)
}

fn target_name(target: Target) -> &'static str {
    match target {
        Target::Ringleader => "ringleader",
        Target::Etcd => "etcd",
    }
}

/// `--measure handover`: the time from a holder's death to the next holder's grant.
/// `--measure floor`: see [`ringleader_service::floor`].
fn floor(args: &BenchServiceArgs) -> crate::CommandResult {
    use ringleader_service::floor::{fdatasync_append, loopback_round_trip, raft_append};
    if !(1..=100_000).contains(&args.samples) {
        bail!("--samples {}: give 1..=100000", args.samples);
    }
    let dir = &args.data_dir;
    if !dir.is_dir() {
        bail!(
            "--data-dir {}: not a directory (give one on the data directories' file system)",
            dir.display()
        );
    }
    let n = args.samples;
    let fsync = fdatasync_append(dir, n).with_context(|| format!("fdatasync in {}", dir.display()))?;
    let raft = raft_append(dir, n).with_context(|| format!("Raft append in {}", dir.display()))?;
    let rtt = loopback_round_trip(n).context("loopback round trip")?;
    // Nanoseconds, three significant digits, as the other measures keep their latencies.
    let histogram = |s: &[Duration]| -> anyhow::Result<hdrhistogram::Histogram<u64>> {
        let mut h = hdrhistogram::Histogram::<u64>::new(3)?;
        for d in s {
            h.record(d.as_nanos() as u64)?;
        }
        Ok(h)
    };
    let (fsync, raft, rtt) = (histogram(&fsync)?, histogram(&raft)?, histogram(&rtt)?);
    let p = |h: &hdrhistogram::Histogram<u64>, q: f64| h.value_at_quantile(q) as f64 / 1e6;
    // Two commits and two client round trips; on 3 nodes each commit also waits for a
    // follower's append, which runs while the leader's does, and its answer (a round trip).
    let one_node = 2.0 * p(&raft, 0.5) + 2.0 * p(&rtt, 0.5);
    let three_nodes = one_node + 2.0 * p(&rtt, 0.5);
    if args.json {
        let q = |h: &hdrhistogram::Histogram<u64>| json!({ "p50_ms": p(h, 0.5), "p99_ms": p(h, 0.99) });
        println!(
            "{}",
            json!({
                "measure": "floor", "data_dir": dir.display().to_string(), "samples": n,
                "fdatasync_4k": q(&fsync), "raft_append": q(&raft), "loopback_rtt": q(&rtt),
                "lock_unlock_floor_ms": { "one_node": one_node, "three_nodes": three_nodes },
            })
        );
        return Ok(crate::ExitStatus::Ok);
    }
    let line = |what: &str, s: &hdrhistogram::Histogram<u64>| {
        println!("  {what:<42} p50 {:>7.3} ms   p99 {:>7.3} ms", p(s, 0.5), p(s, 0.99));
    };
    println!("the floor under the service, {n} samples each:");
    line(&format!("fdatasync of a 4 KiB append ({})", dir.display()), &fsync);
    line("one Raft append through redb (one fsync)", &raft);
    line("loopback TCP round trip (64 bytes)", &rtt);
    println!(
        "  an uncontended lock+unlock takes at least {one_node:.2} ms on 1 node ({:.0}/s for one client), \
         {three_nodes:.2} ms on 3 nodes ({:.0}/s): two commits (a Raft append each, plus a peer round trip \
         on 3 nodes) and two client round trips, at the p50s",
        1e3 / one_node,
        1e3 / three_nodes
    );
    Ok(crate::ExitStatus::Ok)
}

fn handover(args: &BenchServiceArgs, tls: &ureq::tls::TlsConfig) -> crate::CommandResult {
    let ttl_ns = ringleader_algorithms::params::parse_duration(&args.ttl)
        .with_context(|| format!("--ttl {:?}: expected a duration such as 300ms", args.ttl))?;
    let ttl = Duration::from_nanos(ttl_ns);
    if !(Duration::from_millis(100)..=Duration::from_secs(60)).contains(&ttl) {
        bail!("--ttl {}: give 100ms..=60s", args.ttl);
    }
    if !(1..=1000).contains(&args.trials) {
        bail!("--trials {}: give 1..=1000", args.trials);
    }
    // The holder and the waiter speak to different nodes when there are several: the waiter
    // learns of the death through the replicated log, as a client elsewhere would.
    let holder_at = args.endpoints[0].trim_end_matches('/').to_string();
    let waiter_at = args.endpoints[1 % args.endpoints.len()].trim_end_matches('/').to_string();
    let mut h = hdrhistogram::Histogram::<u64>::new(3)?;
    let mut granted_ttl = ttl;
    for trial in 0..args.trials {
        let name = format!("handover-{}-{trial}", std::process::id());
        let holder = Session::with_ttl(&holder_at, args.target, ttl, tls)?;
        granted_ttl = holder.ttl;
        let ttl = holder.ttl;
        holder.acquire(&name)?;
        let (granted_tx, granted_rx) = std::sync::mpsc::channel();
        // A fresh waiter each trial: its 30 s lease is never kept alive.
        let w = Session::open(&waiter_at, args.target, tls)?;
        let waiting = std::thread::spawn(move || -> anyhow::Result<()> {
            let held = w.acquire(&name);
            let at = Instant::now();
            let held = held.inspect_err(|e| {
                let _ = granted_tx.send(Err(anyhow::anyhow!("the waiter's acquire failed: {e:#}")));
            })?;
            let _ = granted_tx.send(Ok(at));
            w.release(&held)
        });
        // Two keep-alive periods: the waiter is queued by then, and the lease is in its steady
        // state. The holder dies just after the second keep-alive was answered: its lease has
        // a whole TTL left, the worst moment to die.
        std::thread::sleep(ttl / 3);
        holder.keep_alive()?;
        std::thread::sleep(ttl / 3);
        holder.keep_alive()?;
        let died = Instant::now();
        drop(holder);
        let granted = granted_rx.recv_timeout(ttl * 4 + Duration::from_secs(10)).map_err(|_| {
            anyhow::anyhow!("trial {trial}: the waiter was not granted the lock within 4 TTLs + 10 s")
        })?;
        let granted = granted.with_context(|| format!("trial {trial}"))?;
        waiting.join().map_err(|_| anyhow::anyhow!("the waiting thread panicked"))??;
        h.record(granted.duration_since(died).as_micros() as u64)?;
    }
    let q = |x: f64| h.value_at_quantile(x) as f64 / 1000.0;
    let (p50, p99, max) = (q(0.5), q(0.99), h.max() as f64 / 1000.0);
    let ttl_ms = granted_ttl.as_secs_f64() * 1000.0;
    let target = target_name(args.target);
    if args.json {
        println!(
            "{}",
            json!({ "target": target, "measure": "handover", "ttl_ms": ttl_ms, "trials": args.trials,
                    "p50_ms": p50, "p99_ms": p99, "max_ms": max })
        );
    } else {
        println!(
            "{target}: holder death -> next holder, TTL {ttl_ms:.0} ms, {} trials: p50 {p50:.0} ms, p99 {p99:.0} ms, max {max:.0} ms (max - TTL = {:+.0} ms)",
            args.trials,
            max - ttl_ms
        );
    }
    Ok(crate::ExitStatus::Ok)
}
