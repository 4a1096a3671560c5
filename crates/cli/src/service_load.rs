//! `ringleader service-load`: clients taking and releasing locks through the coordination
//! service while it is being faulted, recording every operation in the JSON-lines history that
//! `ringleader verify --history` checks for linearizability
//! (`ringleader_judge::linearizability::lock`).
//!
//! Each client is a thread with its own [`Client`] (failing over between the endpoints) and,
//! in turn, a series of [`Session`]s (leases kept alive in the background). Under one session
//! it acquires a lock (with a timeout), writes through its fencing token to the resource if one
//! is given, holds it a moment, and releases it. What goes into the history:
//!
//! - an acquire that was granted: its interval and `{"token": F}`; one the service refused
//!   for sure (408 `timeout`: the wait was withdrawn while the lease lived) is left out, as an
//!   operation that did nothing; any other failure (no node answered, the connection broke
//!   after the request was sent, the lease was lost) is an acquire with no `return_ns`: it may
//!   or may not have taken effect;
//! - a release that was answered: its interval and `"ok"`; any failure: no `return_ns`;
//! - after an outcome it does not know, the client ends the session (the lease is revoked, or
//!   found gone) and records `lease_ended` for that lock, from the moment the lease could first
//!   have ended at a correct service to the moment the service said it was gone. That is the
//!   later of the last moment the lease was known alive (the send time of its last successful
//!   keep-alive, or of the last granted acquire) and the end of the session's trust in it
//!   (`valid_until`: the service keeps a lease its TTL after a keep-alive, less a few ticks, and
//!   the session trusts it a tenth of the TTL less), unless the client revoked it before. A session whose lease
//!   cannot be confirmed gone within the settle time gets a `lease_ended` with no return.
//!
//! Times are nanoseconds on one monotonic clock, offset to the Unix epoch at the first use.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use clap::Args;
use ringleader_client::history::{HistoryWriter, instant_ns, unix_ns};
use ringleader_client::{Client, ClientError, Session};
use serde::Serialize;
use serde_json::{Value, json};

use crate::service_client::{parse_name, parse_ttl, parse_wait};

/// Clients taking locks through the service, recording a history for verify (test tooling)
///
/// N clients (threads) each hold a lease and take and release locks chosen at random among
/// --locks, failing over between --endpoints, until --duration is up. Every acquire, release
/// and lease end is appended to --history (JSON lines) for `ringleader verify --history`; an
/// operation whose outcome is unknown (timeout, connection lost) is recorded without a return.
/// With --resource, each holder writes through its fencing token to that URL
/// (`ringleader fenced-resource`) while it holds the lock.
///
/// Examples:
///   ringleader service-load --endpoints http://127.0.0.1:4101,http://127.0.0.1:4102 \
///       --clients 4 --locks a,b --duration 20s --history h.jsonl
///   ringleader verify --history h.jsonl
#[derive(Args, Debug, Clone)]
#[command(verbatim_doc_comment)]
pub struct ServiceLoadArgs {
    /// Service nodes, comma-separated; client i starts with the i-th (mod their number).
    #[arg(long, required = true, value_delimiter = ',', value_name = "URL[,URL...]")]
    pub endpoints: Vec<String>,
    /// Concurrent clients (threads), 1..=256.
    #[arg(long, default_value_t = 4, value_name = "N")]
    pub clients: usize,
    /// Lock names, comma-separated.
    #[arg(long, default_value = "orders", value_delimiter = ',', value_name = "NAME[,NAME...]",
          value_parser = parse_name)]
    pub locks: Vec<String>,
    /// How long the clients run.
    #[arg(long, default_value = "10s", value_name = "TIME", value_parser = parse_wait)]
    pub duration: Duration,
    /// Append the history here (JSON lines; the file is created or truncated).
    #[arg(long, value_name = "FILE")]
    pub history: PathBuf,
    /// Write through each fencing token to this fenced resource (http://HOST:PORT).
    #[arg(long, value_name = "URL")]
    pub resource: Option<String>,
    /// Each session's lease TTL.
    #[arg(long, default_value = "3s", value_name = "TIME", value_parser = parse_ttl)]
    pub ttl: Duration,
    /// How long an acquire waits at the service before it gives up (408).
    #[arg(long, default_value = "2s", value_name = "TIME", value_parser = parse_wait)]
    pub acquire_timeout: Duration,
    /// How long a holder keeps the lock (after its write).
    #[arg(long, default_value = "10ms", value_name = "TIME", value_parser = parse_wait)]
    pub hold: Duration,
    /// The bound on a request that does not wait at the service, per endpoint tried.
    #[arg(long, default_value = "2s", value_name = "TIME", value_parser = parse_wait)]
    pub request_timeout: Duration,
    /// After the run, how long a client may try to confirm that a lease it lost track of is
    /// gone.
    #[arg(long, default_value = "30s", value_name = "TIME", value_parser = parse_wait)]
    pub settle: Duration,
    /// Extra clients that each, in turn, take a lock, pause past their lease without renewing
    /// it (as a holder stopped by a long GC pause would) and then write through their old
    /// token: the fenced resource must refuse such a write once a later holder wrote. Needs
    /// --resource.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub stale_writers: usize,
    /// The service nodes' API bearer token, from this file (nodes started with
    /// `--api-token-file`).
    #[arg(long, value_name = "FILE")]
    pub api_token_file: Option<PathBuf>,
    #[command(flatten)]
    pub tls: crate::service_client::TlsArgs,
    /// Print the tally as one JSON line instead of text.
    #[arg(long)]
    pub json: bool,
}

/// What one client did.
#[derive(Debug, Default, Clone, Copy, Serialize)]
pub struct ClientTally {
    /// Leases granted (sessions started).
    pub sessions: u64,
    /// Lease grants that failed (no node answered in time).
    pub grant_failures: u64,
    /// Sessions the client stopped trusting or the service expired while in use.
    pub sessions_lost: u64,
    /// Acquires granted.
    pub granted: u64,
    /// Acquires the service answered 408 (the wait was withdrawn): not in the history.
    pub timeouts: u64,
    /// Releases answered.
    pub released: u64,
    /// Writes the resource accepted.
    pub writes_accepted: u64,
    /// Writes the resource rejected as stale (409).
    pub writes_rejected: u64,
    /// Writes that got no answer from the resource.
    pub writes_failed: u64,
    /// Writes skipped because the session was no longer trusted when the lock was granted.
    pub writes_skipped: u64,
    /// Leases lost track of whose end could not be confirmed within the settle time.
    pub unconfirmed: u64,
    /// Stale writers' writes after their lease ran out that the resource refused.
    pub stale_rejected: u64,
    /// Stale writers' writes after their lease ran out that the resource accepted (nobody
    /// had written with a later token yet: the fence has nothing to refuse).
    pub stale_accepted: u64,
}

impl ClientTally {
    fn add(&mut self, o: &ClientTally) {
        self.sessions += o.sessions;
        self.grant_failures += o.grant_failures;
        self.sessions_lost += o.sessions_lost;
        self.granted += o.granted;
        self.timeouts += o.timeouts;
        self.released += o.released;
        self.writes_accepted += o.writes_accepted;
        self.writes_rejected += o.writes_rejected;
        self.writes_failed += o.writes_failed;
        self.writes_skipped += o.writes_skipped;
        self.unconfirmed += o.unconfirmed;
        self.stale_rejected += o.stale_rejected;
        self.stale_accepted += o.stale_accepted;
    }
}

/// What every client shares.
struct Plan {
    locks: Vec<String>,
    ttl: Duration,
    acquire_timeout: Duration,
    hold: Duration,
    resource: Option<(ureq::Agent, String)>,
    /// The `Authorization` header value for raw requests to the service, if it asks one.
    bearer: Option<String>,
    /// When the clients stop starting operations.
    deadline: Instant,
    /// When a client stops trying to confirm a lease is gone.
    settle_deadline: Instant,
}

/// Whether writing through the token reached the resource, and what it said.
enum Wrote {
    Accepted,
    Rejected,
    Failed,
}

/// Writes through `token`; `stale` declares a write past the lease on purpose (the resource logs
/// it, and its judge does not count such a write accepted before the newer holder wrote).
fn write_through(agent: &ureq::Agent, url: &str, client: &str, lock: &str, token: u64, stale: bool) -> Wrote {
    let body = json!({ "lock": lock, "token": token, "client": client, "stale": stale }).to_string();
    match agent.post(&format!("{url}/write")).header("content-type", "application/json").send(body) {
        Ok(r) if r.status().as_u16() == 200 => Wrote::Accepted,
        Ok(r) if r.status().as_u16() == 409 => Wrote::Rejected,
        _ => Wrote::Failed,
    }
}

/// Revokes `lease` until the service says it is gone (revoked, or unknown) or the settle time
/// is up; the moment it said so.
fn confirm_gone(client: &Client, lease: u64, until: Instant) -> Option<u64> {
    loop {
        match client.revoke(lease) {
            Ok(()) | Err(ClientError::NoSuchLease) => return Some(unix_ns()),
            Err(_) if Instant::now() >= until => return None,
            Err(_) => std::thread::sleep(Duration::from_millis(200)),
        }
    }
}

/// A small xorshift generator: which lock a client takes next.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// One client's run: sessions in turn until the deadline.
fn client_run<W: Write>(
    name: &str,
    seed: u64,
    client: &Client,
    plan: &Plan,
    hist: &HistoryWriter<W>,
) -> std::io::Result<ClientTally> {
    let mut t = ClientTally::default();
    let mut rng = Rng(seed | 1);
    while Instant::now() < plan.deadline {
        let sent = unix_ns();
        let session = match Session::new(client, plan.ttl) {
            Ok(s) => s,
            Err(_) => {
                // Nothing can be held under a lease whose grant failed: it expires by itself.
                t.grant_failures += 1;
                std::thread::sleep(Duration::from_millis(100));
                continue;
            }
        };
        t.sessions += 1;
        let lease = session.lease();
        // The last moment the lease was known alive at the service (a lower bound).
        let mut alive_ns = sent;
        // The lock of an operation whose outcome is unknown: the session ends after it.
        let mut unknown: Option<String> = None;
        while unknown.is_none() && Instant::now() < plan.deadline && session.is_alive() {
            let lock = plan.locks[rng.below(plan.locks.len())].as_str();
            let invoked = unix_ns();
            match session.lock(lock, Some(plan.acquire_timeout)) {
                Ok(guard) => {
                    let token = guard.fencing();
                    hist.acquire(name, lease, lock, invoked, Some((unix_ns(), token)))?;
                    t.granted += 1;
                    // The service checked the lease held the lock before answering.
                    alive_ns = alive_ns.max(invoked);
                    if let Some((agent, url)) = &plan.resource {
                        if session.is_alive() {
                            match write_through(agent, url, name, lock, token, false) {
                                Wrote::Accepted => t.writes_accepted += 1,
                                Wrote::Rejected => t.writes_rejected += 1,
                                Wrote::Failed => t.writes_failed += 1,
                            }
                        } else {
                            t.writes_skipped += 1;
                        }
                    }
                    if !plan.hold.is_zero() {
                        std::thread::sleep(plan.hold);
                    }
                    let invoked = unix_ns();
                    match guard.release() {
                        Ok(()) => {
                            hist.release(name, lease, lock, invoked, Some(unix_ns()))?;
                            t.released += 1;
                            alive_ns = alive_ns.max(invoked);
                        }
                        Err(_) => {
                            hist.release(name, lease, lock, invoked, None)?;
                            unknown = Some(lock.to_string());
                        }
                    }
                }
                // The wait was withdrawn while the lease lived: nothing happened.
                Err(ClientError::Timeout) => t.timeouts += 1,
                Err(_) => {
                    hist.acquire(name, lease, lock, invoked, None)?;
                    unknown = Some(lock.to_string());
                }
            }
        }
        // valid_until = (send time of the last successful keep-alive) + ttl - ttl/10.
        let ttl = session.ttl();
        let trusted_until = instant_ns(session.valid_until());
        if let Some(kept) = session.valid_until().checked_sub(ttl - ttl / 10) {
            alive_ns = alive_ns.max(instant_ns(kept));
        }
        if !session.is_alive() {
            t.sessions_lost += 1;
        }
        let closing = unix_ns();
        let closed = session.close();
        if let Some(lock) = unknown {
            let gone = match closed {
                Ok(()) | Err(ClientError::NoSuchLease) => Some(unix_ns()),
                Err(_) => confirm_gone(client, lease, plan.settle_deadline),
            };
            if gone.is_none() {
                t.unconfirmed += 1;
            }
            // A correct service keeps a lease at least its TTL after the keep-alive was sent,
            // less its replicated clock's lag (a few ticks); the session trusts it until a tenth
            // of the TTL before that. So the lease cannot have ended before the session stopped
            // trusting it, unless this client revoked it first (close, sent at `closing`): a
            // service that ends leases early (the planted `fast-clock`) shows as a lock granted
            // to another holder while this one still held it.
            let from = alive_ns.max(trusted_until.min(closing));
            hist.lease_ended(name, lease, &lock, from.min(gone.unwrap_or(u64::MAX)), gone)?;
        }
    }
    Ok(t)
}

/// A stale writer's run: in turn, grant a lease, acquire a lock under it (raw HTTP, so nothing
/// keeps the lease alive), pause for one and a half TTLs, write through the token, and confirm
/// the lease gone. Its history is an acquire and a `lease_ended` (from the grant's acquire to
/// the confirmation): the checker sees a holder whose lease ended, never an overlap.
fn stale_writer_run<W: Write>(
    name: &str,
    seed: u64,
    client: &Client,
    plan: &Plan,
    hist: &HistoryWriter<W>,
) -> std::io::Result<ClientTally> {
    let mut t = ClientTally::default();
    let mut rng = Rng(seed | 1);
    let Some((agent, url)) = &plan.resource else { return Ok(t) };
    while Instant::now() + plan.ttl * 3 / 2 < plan.deadline {
        let Ok(grant) = client.grant(plan.ttl) else {
            t.grant_failures += 1;
            std::thread::sleep(Duration::from_millis(100));
            continue;
        };
        t.sessions += 1;
        let lock = plan.locks[rng.below(plan.locks.len())].as_str();
        let invoked = unix_ns();
        let body = json!({ "name": lock, "lease": grant.lease, "key": client.lease_key(grant.lease), "timeout_ms": plan.acquire_timeout.min(Duration::from_secs(1)).as_millis() as u64 });
        let mut request = agent
            .post(&format!("{}/v1/lock/acquire", client.current_endpoint()))
            .header("content-type", "application/json");
        if let Some(bearer) = &plan.bearer {
            request = request.header("authorization", bearer);
        }
        let answer = request.send(body.to_string());
        let token = match answer {
            Ok(mut r) if r.status().as_u16() == 200 => {
                let text = r.body_mut().read_to_string().unwrap_or_default();
                let v: Value = serde_json::from_str(&text).unwrap_or_default();
                v["fencing"].as_u64()
            }
            // Refused for sure (timeout, lease unknown): nothing happened.
            Ok(r) if r.status().is_client_error() => {
                t.timeouts += 1;
                continue;
            }
            _ => None,
        };
        hist.acquire(name, grant.lease, lock, invoked, token.map(|f| (unix_ns(), f)))?;
        if let Some(token) = token {
            t.granted += 1;
            // The pause: the lease runs out, a waiter is granted the lock and writes.
            std::thread::sleep(plan.ttl * 3 / 2);
            match write_through(agent, url, name, lock, token, true) {
                Wrote::Rejected => t.stale_rejected += 1,
                Wrote::Accepted => t.stale_accepted += 1,
                Wrote::Failed => t.writes_failed += 1,
            }
        }
        let gone = confirm_gone(client, grant.lease, plan.settle_deadline);
        if gone.is_none() {
            t.unconfirmed += 1;
        }
        hist.lease_ended(name, grant.lease, lock, invoked.min(gone.unwrap_or(u64::MAX)), gone)?;
    }
    Ok(t)
}

/// Runs `ringleader service-load`.
pub fn run(args: ServiceLoadArgs) -> crate::CommandResult {
    if !(1..=256).contains(&args.clients) {
        bail!("--clients {}: give 1..=256", args.clients);
    }
    if args.locks.is_empty() {
        bail!("--locks: give at least one lock name");
    }
    // The endpoints are checked once here, so that a bad one is one line, not one per thread.
    Client::new(&args.endpoints).context("--endpoints")?;
    args.tls.check(&args.endpoints)?;
    let tls = args.tls.client_tls()?;
    let resource = match &args.resource {
        Some(url) => {
            let url = url.trim_end_matches('/');
            if !url.starts_with("http://") {
                bail!("--resource {url:?}: expected http://HOST:PORT");
            }
            // Also the stale writers' agent for their acquire at the service: its TLS.
            let agent: ureq::Agent = ureq::Agent::config_builder()
                .http_status_as_error(false)
                .tls_config(args.tls.ureq_config()?)
                .timeout_global(Some(Duration::from_secs(2)))
                .build()
                .into();
            Some((agent, url.to_string()))
        }
        None => None,
    };
    if args.stale_writers > 0 && args.resource.is_none() {
        bail!("--stale-writers {}: needs --resource (their stale writes go there)", args.stale_writers);
    }
    if args.stale_writers > 64 {
        bail!("--stale-writers {}: give 0..=64", args.stale_writers);
    }
    let file = std::fs::File::create(&args.history)
        .with_context(|| format!("--history {}", args.history.display()))?;
    let hist = Arc::new(HistoryWriter::new(std::io::BufWriter::new(file)));
    let start = Instant::now();
    let token = args.api_token_file.as_deref().map(crate::service_client::read_token).transpose()?;
    let plan = Arc::new(Plan {
        bearer: token.as_ref().map(|t| format!("Bearer {t}")),
        locks: args.locks.clone(),
        ttl: args.ttl,
        acquire_timeout: args.acquire_timeout,
        hold: args.hold,
        resource,
        deadline: start + args.duration,
        settle_deadline: start + args.duration + args.settle,
    });
    let n = args.endpoints.len();
    let seed = unix_ns();
    let mut threads = Vec::new();
    for i in 0..args.clients + args.stale_writers {
        // Client i starts with endpoint i mod n, so that the load is spread.
        let rotated: Vec<&String> = args.endpoints.iter().cycle().skip(i % n).take(n).collect();
        let mut client = Client::new(rotated)
            .context("--endpoints")?
            .with_request_timeout(args.request_timeout)
            .with_rounds(2);
        if let Some(tls) = &tls {
            client = client.with_tls(tls.clone());
        }
        if let Some(token) = &token {
            client = client.with_bearer_token(token);
        }
        let (plan, hist) = (Arc::clone(&plan), Arc::clone(&hist));
        let stale = i >= args.clients;
        let name =
            if stale { format!("stale-{}", i + 1 - args.clients) } else { format!("client-{}", i + 1) };
        let seed = seed.wrapping_add(0x9e37_79b9_7f4a_7c15u64.wrapping_mul(i as u64 + 1));
        threads.push(
            std::thread::Builder::new()
                .name(name.clone())
                .spawn(move || {
                    if stale {
                        stale_writer_run(&name, seed, &client, &plan, &hist)
                    } else {
                        client_run(&name, seed, &client, &plan, &hist)
                    }
                })
                .context("cannot start a client thread")?,
        );
    }
    let mut total = ClientTally::default();
    for th in threads {
        let t = th
            .join()
            .map_err(|_| anyhow::anyhow!("a client thread panicked"))?
            .with_context(|| format!("--history {}", args.history.display()))?;
        total.add(&t);
    }
    let elapsed = start.elapsed().as_secs_f64();
    let (ops, unknown) = (hist.operations(), hist.unknown());
    if args.json {
        let mut v = serde_json::to_value(total)?;
        v["clients"] = json!(args.clients);
        v["seconds"] = json!(elapsed);
        v["operations"] = json!(ops);
        v["unknown"] = json!(unknown);
        v["history"] = json!(args.history.display().to_string());
        println!("{v}");
    } else {
        println!(
            "service-load: {} clients, {elapsed:.1} s: {} acquires granted, {} released, {} timed out (408); \
             {} sessions ({} lost, {} grants failed)",
            args.clients,
            total.granted,
            total.released,
            total.timeouts,
            total.sessions,
            total.sessions_lost,
            total.grant_failures
        );
        println!(
            "service-load: history {}: {ops} operations, {unknown} with an unknown outcome ({} lease ends never confirmed)",
            args.history.display(),
            total.unconfirmed
        );
        if args.resource.is_some() {
            println!(
                "service-load: resource writes: {} accepted, {} rejected as stale, {} failed, {} skipped (lease no longer trusted)",
                total.writes_accepted, total.writes_rejected, total.writes_failed, total.writes_skipped
            );
        }
        if args.stale_writers > 0 {
            println!(
                "service-load: stale writers (paused past their lease): {} writes refused by the fence, {} accepted (no later holder had written)",
                total.stale_rejected, total.stale_accepted
            );
        }
    }
    if total.granted == 0 {
        bail!("no lock was granted in {elapsed:.1} s: is the service up at {}?", args.endpoints.join(","));
    }
    Ok(crate::ExitStatus::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringleader_judge::linearizability::lock::{LockOp, LockOutput, parse_history};

    fn written(f: impl FnOnce(&HistoryWriter<Vec<u8>>)) -> (String, u64, u64) {
        let h = HistoryWriter::new(Vec::new());
        f(&h);
        let (ops, unknown) = (h.operations(), h.unknown());
        let text = String::from_utf8(h.into_inner()).unwrap();
        (text, ops, unknown)
    }

    #[test]
    fn the_history_writer_writes_what_verify_reads() {
        let (text, ops, unknown) = written(|h| {
            h.acquire("c1", 7, "a", 10, Some((20, 42))).unwrap();
            h.release("c1", 7, "a", 30, Some(40)).unwrap();
            h.acquire("c2", 9, "a", 50, None).unwrap();
            h.release("c2", 9, "a", 60, None).unwrap();
            h.lease_ended("c2", 9, "a", 55, Some(90)).unwrap();
            h.lease_ended("c3", 11, "b", 70, None).unwrap();
        });
        assert_eq!((ops, unknown), (6, 3));
        assert_eq!(text.lines().count(), 6, "{text}");
        let parsed = parse_history(&text).unwrap();
        let ops: Vec<_> =
            parsed.iter().map(|o| (o.input.holder.as_str(), o.input.op, o.output, o.call, o.ret)).collect();
        assert_eq!(
            ops,
            [
                ("c1 (lease 7)", LockOp::Acquire, Some(LockOutput::Granted { token: 42 }), 10, Some(20)),
                ("c1 (lease 7)", LockOp::Release, Some(LockOutput::Done), 30, Some(40)),
                ("c2 (lease 9)", LockOp::Acquire, None, 50, None),
                ("c2 (lease 9)", LockOp::Release, None, 60, None),
                ("c2 (lease 9)", LockOp::LeaseEnded, Some(LockOutput::Done), 55, Some(90)),
                ("c3 (lease 11)", LockOp::LeaseEnded, None, 70, None),
            ]
        );
    }

    #[test]
    fn a_return_is_never_before_its_invocation() {
        // Clock readings taken in a different order (a lower bound computed after the fact)
        // must not make an unreadable line.
        let (text, _, _) = written(|h| {
            h.acquire("c", 1, "a", 100, Some((90, 1))).unwrap();
            h.lease_ended("c", 1, "a", 200, Some(150)).unwrap();
        });
        let parsed = parse_history(&text).unwrap();
        assert_eq!((parsed[0].call, parsed[0].ret), (100, Some(100)));
        assert_eq!((parsed[1].call, parsed[1].ret), (200, Some(200)));
    }

    #[test]
    fn the_history_clock_never_goes_backwards() {
        let a = unix_ns();
        let earlier = Instant::now().checked_sub(Duration::from_secs(1)).map_or(0, instant_ns);
        let b = unix_ns();
        assert!(a <= b && earlier <= a, "{earlier} {a} {b}");
        assert!(a > 1_600_000_000_000_000_000, "Unix nanoseconds: {a}");
    }
}
