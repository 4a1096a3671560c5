//! `ringleader bench-service`: lock throughput and latency of a running coordination service —
//! ours, or etcd through its JSON gateway, so that both are measured by the same client in one
//! run (`docs/service-bench.sh` starts both).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use clap::{Args, ValueEnum};
use serde_json::{Value, json};

/// Measure lock+unlock throughput and latency against running service nodes
///
/// Each client takes one lease, then acquires and releases a lock in a loop until the time is
/// up; client i uses lock name i mod NAMES. One operation is one acquire plus one release.
/// The same client speaks to etcd (v3 JSON gateway, /v3/lock/lock) with --target etcd.
///
/// Examples:
///   ringleader cluster --service --nodes 3 --api-base-port 4100 &
///   ringleader bench-service --endpoints http://127.0.0.1:4101 --clients 8 --names 1
///   ringleader bench-service --target etcd --endpoints http://127.0.0.1:2379 --clients 8
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
    /// How long to measure.
    #[arg(long, default_value = "5s", value_name = "TIME")]
    pub duration: String,
    /// Print one JSON line instead of text.
    #[arg(long)]
    pub json: bool,
}

/// The service the endpoints run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Target {
    Ringleader,
    Etcd,
}

/// One client's connection to one endpoint.
struct Session {
    agent: ureq::Agent,
    base: String,
    target: Target,
    lease: String,
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
    fn open(base: &str, target: Target) -> anyhow::Result<Session> {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(30)))
            .build()
            .into();
        let lease = match target {
            Target::Ringleader => {
                post(&agent, &format!("{base}/v1/lease/grant"), &json!({ "ttl_ms": 30_000 }))?["lease"]
                    .to_string()
            }
            Target::Etcd => {
                let v = post(&agent, &format!("{base}/v3/lease/grant"), &json!({ "TTL": 30 }))?;
                v["ID"].as_str().map(str::to_string).context("etcd's grant has no ID")?
            }
        };
        Ok(Session { agent, base: base.to_string(), target, lease })
    }

    /// One acquire and one release of `name`.
    fn lock_unlock(&self, name: &str) -> anyhow::Result<()> {
        match self.target {
            Target::Ringleader => {
                let lease: u64 = self.lease.parse()?;
                let body = json!({ "name": name, "lease": lease });
                post(&self.agent, &format!("{}/v1/lock/acquire", self.base), &body)?;
                post(&self.agent, &format!("{}/v1/lock/release", self.base), &body)?;
            }
            Target::Etcd => {
                let body = json!({ "name": b64(name), "lease": self.lease });
                let v = post(&self.agent, &format!("{}/v3/lock/lock", self.base), &body)?;
                let key = v["key"].as_str().context("etcd's lock answer has no key")?;
                post(&self.agent, &format!("{}/v3/lock/unlock", self.base), &json!({ "key": key }))?;
            }
        }
        Ok(())
    }
}

/// Runs `ringleader bench-service`.
pub fn run(args: BenchServiceArgs) -> crate::Outcome {
    if !(1..=1024).contains(&args.clients) {
        bail!("--clients {}: give 1..=1024", args.clients);
    }
    if args.names == 0 || args.names > args.clients {
        bail!("--names {}: give 1..={} (at most one name per client)", args.names, args.clients);
    }
    if args.endpoints.is_empty() {
        bail!("--endpoints: give at least one URL");
    }
    let ns = ringleader_algorithms::params::parse_duration(&args.duration)
        .with_context(|| format!("--duration {:?}: expected a duration such as 5s", args.duration))?;
    let duration = Duration::from_nanos(ns);
    let sessions: Vec<Session> = (0..args.clients)
        .map(|i| Session::open(args.endpoints[i % args.endpoints.len()].trim_end_matches('/'), args.target))
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
    let target = match args.target {
        Target::Ringleader => "ringleader",
        Target::Etcd => "etcd",
    };
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
