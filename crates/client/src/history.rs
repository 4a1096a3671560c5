//! Recording what a client saw of the service's locks, for `ringleader verify --history`: one
//! JSON line per operation (`acquire`, `release`, `lease_ended`), with its invocation and (when
//! known) return times on one clock, in the format `ringleader_judge::linearizability::lock`
//! reads. Shared by `ringleader service-load` (HTTP clients) and the etcd gRPC nemesis client
//! (`crates/cli/examples/etcd_nemesis.rs`), so that both write histories one checker reads.
//! Puts, reads and watch streams go into the same file (`put`, `get`, `watch_start`,
//! `watch_event`), in the formats `ringleader_judge::watch` and
//! `ringleader_judge::linearizability::kv` read.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Instant, SystemTime};

use serde::Serialize;
use serde_json::{Value, json};

/// The process's history clock: (Unix nanoseconds, the instant they were read).
fn base() -> &'static (u64, Instant) {
    static BASE: OnceLock<(u64, Instant)> = OnceLock::new();
    BASE.get_or_init(|| {
        let unix = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
        (u64::try_from(unix.as_nanos()).unwrap_or(u64::MAX), Instant::now())
    })
}

/// `at` on the history clock (an instant before the clock's base reads as the base).
pub fn instant_ns(at: Instant) -> u64 {
    let (unix, start) = *base();
    let since = u64::try_from(at.saturating_duration_since(start).as_nanos()).unwrap_or(u64::MAX);
    unix.saturating_add(since)
}

/// Now on the history clock: Unix nanoseconds, never going backwards within the process.
pub fn unix_ns() -> u64 {
    instant_ns(Instant::now())
}

/// One line of a lock history, as `ringleader verify --history` reads it.
#[derive(Debug, Serialize)]
struct Line<'a> {
    client: &'a str,
    op: &'a str,
    lock: &'a str,
    lease: u64,
    invoke_ns: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    return_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<Value>,
    /// The node (1-based, in the clients' endpoint list) that answered a grant; not judged.
    #[serde(skip_serializing_if = "Option::is_none")]
    node: Option<u64>,
}

/// Appends lock operations to a history, one JSON line each, flushed line by line (a history
/// cut short by a crash is still readable). Shared by the client threads.
pub struct HistoryWriter<W: Write> {
    out: Mutex<W>,
    operations: AtomicU64,
    unknown: AtomicU64,
}

impl<W: Write> HistoryWriter<W> {
    /// A writer appending to `out`.
    pub fn new(out: W) -> Self {
        HistoryWriter { out: Mutex::new(out), operations: AtomicU64::new(0), unknown: AtomicU64::new(0) }
    }

    fn write(&self, line: &Line<'_>) -> std::io::Result<()> {
        let text = serde_json::to_string(line).map_err(std::io::Error::other)?;
        self.write_text(&text)?;
        self.operations.fetch_add(1, Ordering::Relaxed);
        if line.return_ns.is_none() {
            self.unknown.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    fn write_text(&self, text: &str) -> std::io::Result<()> {
        let mut out = self.out.lock().unwrap_or_else(|p| p.into_inner());
        writeln!(out, "{text}")?;
        out.flush()
    }

    /// A put of `value` (unique to this put) to `key` by `client`, invoked at `invoke_ns`;
    /// `returned` is (return time, the revision the service answered), `None` when the outcome
    /// is unknown.
    pub fn put(
        &self,
        client: &str,
        key: &str,
        value: &str,
        invoke_ns: u64,
        returned: Option<(u64, u64)>,
    ) -> std::io::Result<()> {
        let mut line =
            json!({ "client": client, "op": "put", "key": key, "value": value, "invoke_ns": invoke_ns });
        if let Some((at, revision)) = returned {
            line["return_ns"] = json!(at.max(invoke_ns));
            line["revision"] = json!(revision);
        } else {
            self.unknown.fetch_add(1, Ordering::Relaxed);
        }
        self.write_text(&line.to_string())?;
        self.operations.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// A read of `key` by `client`, invoked at `invoke_ns` and answered at `return_ns` with
    /// `value` (`None`: the key was absent). Reads without an answer are not recorded: they
    /// changed nothing and prove nothing.
    pub fn get(
        &self,
        client: &str,
        key: &str,
        value: Option<&str>,
        invoke_ns: u64,
        return_ns: u64,
    ) -> std::io::Result<()> {
        let line = json!({ "client": client, "op": "get", "key": key, "value": value, "invoke_ns": invoke_ns, "return_ns": return_ns.max(invoke_ns) });
        self.write_text(&line.to_string())?;
        self.operations.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// `client` opened a watch of the keys under `prefix` from `revision` on (a first stream, or
    /// one resumed after the last event seen).
    pub fn watch_start(&self, client: &str, prefix: &str, revision: u64) -> std::io::Result<()> {
        let line = json!({ "client": client, "op": "watch_start", "prefix": prefix, "revision": revision, "time_ns": unix_ns() });
        self.write_text(&line.to_string())
    }

    /// `client`, which did not end `lease`, heard it was gone at `gone_ns`; the last keep-alive
    /// (or the grant) answered alive was sent at `alive_ns`, and the lease's TTL is `ttl_ms`.
    pub fn lease_gone(
        &self,
        client: &str,
        lease: u64,
        alive_ns: u64,
        ttl_ms: u64,
        gone_ns: u64,
    ) -> std::io::Result<()> {
        let line = json!({ "client": client, "op": "lease_gone", "lease": lease, "alive_ns": alive_ns, "ttl_ms": ttl_ms, "gone_ns": gone_ns });
        self.write_text(&line.to_string())
    }

    /// `client`'s watch reported that `key` was set to `value` at `revision`.
    pub fn watch_event(&self, client: &str, key: &str, value: &str, revision: u64) -> std::io::Result<()> {
        let line = json!({ "client": client, "op": "watch_event", "key": key, "value": value, "revision": revision, "time_ns": unix_ns() });
        self.write_text(&line.to_string())
    }

    /// An acquire by `client` under `lease`, invoked at `invoke_ns`; `returned` is (return
    /// time, fencing token) when it was granted, `None` when its outcome is unknown.
    pub fn acquire(
        &self,
        client: &str,
        lease: u64,
        lock: &str,
        invoke_ns: u64,
        returned: Option<(u64, u64)>,
    ) -> std::io::Result<()> {
        self.acquire_line(client, lease, lock, invoke_ns, returned, None)
    }

    /// A granted acquire, as [`HistoryWriter::acquire`], with the node that answered it (1-based,
    /// in the clients' endpoint list): deploy/nemesis.sh reads the latest one to find a lock
    /// holder's node to fault.
    pub fn acquire_granted_by(
        &self,
        client: &str,
        lease: u64,
        lock: &str,
        invoke_ns: u64,
        returned: (u64, u64),
        node: u64,
    ) -> std::io::Result<()> {
        self.acquire_line(client, lease, lock, invoke_ns, Some(returned), Some(node))
    }

    fn acquire_line(
        &self,
        client: &str,
        lease: u64,
        lock: &str,
        invoke_ns: u64,
        returned: Option<(u64, u64)>,
        node: Option<u64>,
    ) -> std::io::Result<()> {
        self.write(&Line {
            client,
            op: "acquire",
            lock,
            lease,
            invoke_ns,
            return_ns: returned.map(|r| r.0.max(invoke_ns)),
            result: returned.map(|(_, token)| json!({ "token": token })),
            node,
        })
    }

    /// A release; `return_ns` is `None` when its outcome is unknown.
    pub fn release(
        &self,
        client: &str,
        lease: u64,
        lock: &str,
        invoke_ns: u64,
        return_ns: Option<u64>,
    ) -> std::io::Result<()> {
        self.done("release", client, lease, lock, invoke_ns, return_ns)
    }

    /// The end of `lease`, as far as `lock` goes: it ended after `invoke_ns` (the last moment it
    /// was known alive) and before `return_ns` (when the service said it was gone; `None`:
    /// never confirmed).
    pub fn lease_ended(
        &self,
        client: &str,
        lease: u64,
        lock: &str,
        invoke_ns: u64,
        return_ns: Option<u64>,
    ) -> std::io::Result<()> {
        self.done("lease_ended", client, lease, lock, invoke_ns, return_ns)
    }

    fn done(
        &self,
        op: &str,
        client: &str,
        lease: u64,
        lock: &str,
        invoke_ns: u64,
        return_ns: Option<u64>,
    ) -> std::io::Result<()> {
        let return_ns = return_ns.map(|r| r.max(invoke_ns));
        let result = return_ns.map(|_| json!("ok"));
        self.write(&Line { client, op, lock, lease, invoke_ns, return_ns, result, node: None })
    }

    /// The output, once every line is written.
    pub fn into_inner(self) -> W {
        self.out.into_inner().unwrap_or_else(|p| p.into_inner())
    }

    /// Operations written so far.
    pub fn operations(&self) -> u64 {
        self.operations.load(Ordering::Relaxed)
    }

    /// Of them, operations with an unknown outcome (no return).
    pub fn unknown(&self) -> u64 {
        self.unknown.load(Ordering::Relaxed)
    }
}
