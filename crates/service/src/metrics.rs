//! What a service node counts, and its OpenMetrics exposition (`GET /metrics`).
//!
//! The loop counts proposals and their latency (from the request reaching the loop to its entry
//! applied), leader changes and snapshots sent and received; [`Timed`] measures each write of a
//! `Ready` to the log (one fsync); the HTTP API counts the requests it refuses, by reason. The
//! gauges (term, commit and applied index, leases, locks) are read when the page is scraped.
//! The families are built with prometheus-client, as the textbook nodes' are
//! (`ringleader_net::api::exposition`); the page's content type is the transport's
//! ([`OPENMETRICS_CONTENT_TYPE`](ringleader_transport::http::OPENMETRICS_CONTENT_TYPE)).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use raft::eraftpb::{ConfState, Entry, HardState, Snapshot};
use ringleader_lock_service::replica::StableLog;
use ringleader_lock_service::state::StateMachine;

/// The counters and histograms a service node keeps (shared by its loop and its API).
#[derive(Debug)]
pub struct ServiceMetrics {
    /// Client proposals handed to Raft (retries not counted).
    pub proposals: AtomicU64,
    /// Proposals handed to Raft again because they were not seen applied within the retry
    /// interval (a leader change, or a message lost on the way to the leader).
    pub proposals_retried: AtomicU64,
    /// Seconds from a proposal reaching the loop to its entry applied on this node.
    pub proposal_seconds: Histogram,
    /// Seconds per write of one `Ready` to the log (one fsync).
    pub fsync_seconds: Histogram,
    /// Times the Raft leader this node knows changed.
    pub leader_changes: AtomicU64,
    /// Raft snapshots this node sent to a follower.
    pub snapshots_sent: AtomicU64,
    /// Raft snapshots this node received from a leader.
    pub snapshots_received: AtomicU64,
    /// HTTP requests refused, by the `reason` of their answer.
    pub rejected: Family<Vec<(String, String)>, Counter>,
}

impl Default for ServiceMetrics {
    fn default() -> Self {
        ServiceMetrics {
            proposals: AtomicU64::new(0),
            proposals_retried: AtomicU64::new(0),
            // 0.1 ms … 3.3 s, doubling.
            proposal_seconds: Histogram::new(exponential_buckets(0.0001, 2.0, 16)),
            // 10 µs … 0.33 s, doubling.
            fsync_seconds: Histogram::new(exponential_buckets(0.00001, 2.0, 16)),
            leader_changes: AtomicU64::new(0),
            snapshots_sent: AtomicU64::new(0),
            snapshots_received: AtomicU64::new(0),
            rejected: Family::default(),
        }
    }
}

impl ServiceMetrics {
    /// Counts one refused request.
    pub fn reject(&self, reason: &str) {
        self.rejected.get_or_create(&vec![("reason".to_string(), reason.to_string())]).inc();
    }
}

/// What the state machine holds, counted for the exposition.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Holdings {
    /// Live leases.
    pub leases: u64,
    /// Locks with a holder.
    pub locks_held: u64,
    /// Leases queued for a lock.
    pub locks_waiting: u64,
}

impl Holdings {
    /// Counts `m`'s leases and locks.
    pub fn of(m: &StateMachine) -> Holdings {
        let locks = m.locks();
        Holdings {
            leases: m.leases().len() as u64,
            locks_held: locks.iter().filter(|n| m.holder(n).is_some()).count() as u64,
            locks_waiting: locks.iter().map(|n| m.waiters(n).len() as u64).sum(),
        }
    }
}

/// Where a node stands in Raft, as its `/status` shows it: what the gauges of [`exposition`] read.
/// (A type of its own, so that the server's loop and its metrics do not import each other.)
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RaftPosition {
    /// The node's id.
    pub id: u64,
    /// The Raft term.
    pub term: u64,
    /// The leader the node knows, if any.
    pub leader: Option<u64>,
    /// The highest index known committed.
    pub commit: u64,
    /// The highest index applied.
    pub applied: u64,
}

/// The OpenMetrics text of node `status.id`: its counters, histograms and gauges, every family
/// prefixed `ringleader_service_` and labelled with the node's `id`.
pub fn exposition(m: &ServiceMetrics, status: &RaftPosition, holdings: Holdings) -> String {
    use prometheus_client::metrics::counter::ConstCounter;
    use prometheus_client::metrics::gauge::ConstGauge;
    use prometheus_client::registry::{Registry, Unit};
    use std::borrow::Cow;
    let labels = [(Cow::Borrowed("id"), Cow::Owned(status.id.to_string()))];
    let mut r = Registry::with_prefix_and_labels("ringleader_service", labels.into_iter());
    let int = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
    r.register("term", "The Raft term", ConstGauge::new(int(status.term)));
    r.register(
        "leader",
        "The Raft leader this node knows (0: none)",
        ConstGauge::new(int(status.leader.unwrap_or(0))),
    );
    r.register(
        "leader_changes",
        "Times the Raft leader this node knows changed",
        ConstCounter::new(load(&m.leader_changes)),
    );
    r.register("commit_index", "The highest log index known committed", ConstGauge::new(int(status.commit)));
    r.register("applied_index", "The highest log index applied", ConstGauge::new(int(status.applied)));
    r.register(
        "apply_lag",
        "Committed entries not yet applied (commit index minus applied index)",
        ConstGauge::new(int(status.commit.saturating_sub(status.applied))),
    );
    r.register("proposals", "Client proposals handed to Raft", ConstCounter::new(load(&m.proposals)));
    r.register(
        "proposals_retried",
        "Proposals handed to Raft again, not seen applied within the retry interval",
        ConstCounter::new(load(&m.proposals_retried)),
    );
    r.register_with_unit(
        "proposal_latency",
        "From a proposal reaching the node to its entry applied",
        Unit::Seconds,
        m.proposal_seconds.clone(),
    );
    r.register_with_unit(
        "fsync_latency",
        "One write of a Raft Ready to the log, fsync included",
        Unit::Seconds,
        m.fsync_seconds.clone(),
    );
    r.register("leases", "Live leases", ConstGauge::new(int(holdings.leases)));
    r.register("locks_held", "Locks with a holder", ConstGauge::new(int(holdings.locks_held)));
    r.register("locks_waiting", "Leases queued for a lock", ConstGauge::new(int(holdings.locks_waiting)));
    r.register(
        "snapshots_sent",
        "Raft snapshots sent to followers",
        ConstCounter::new(load(&m.snapshots_sent)),
    );
    r.register(
        "snapshots_received",
        "Raft snapshots received from a leader",
        ConstCounter::new(load(&m.snapshots_received)),
    );
    r.register("rejected_requests", "HTTP requests refused, by reason", m.rejected.clone());
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = prometheus_client::encoding::text::encode(&mut out, &r);
    out
}

/// A log whose `Ready` writes are timed into [`ServiceMetrics::fsync_seconds`]; everything else
/// passes through.
pub struct Timed<L> {
    /// The log.
    pub inner: L,
    /// Where the write times go.
    pub fsync_seconds: Histogram,
}

impl<L: raft::Storage> raft::Storage for Timed<L> {
    fn initial_state(&self) -> raft::Result<raft::RaftState> {
        self.inner.initial_state()
    }

    fn entries(
        &self,
        low: u64,
        high: u64,
        max_size: impl Into<Option<u64>>,
        context: raft::GetEntriesContext,
    ) -> raft::Result<Vec<Entry>> {
        self.inner.entries(low, high, max_size, context)
    }

    fn term(&self, idx: u64) -> raft::Result<u64> {
        self.inner.term(idx)
    }

    fn first_index(&self) -> raft::Result<u64> {
        self.inner.first_index()
    }

    fn last_index(&self) -> raft::Result<u64> {
        self.inner.last_index()
    }

    fn snapshot(&self, request_index: u64, to: u64) -> raft::Result<Snapshot> {
        self.inner.snapshot(request_index, to)
    }
}

impl<L: StableLog> StableLog for Timed<L> {
    type Error = L::Error;

    fn persist(
        &mut self,
        snapshot: Option<&Snapshot>,
        entries: &[Entry],
        hard_state: Option<&HardState>,
    ) -> Result<(), Self::Error> {
        let t0 = Instant::now();
        let r = self.inner.persist(snapshot, entries, hard_state);
        if snapshot.is_some() || !entries.is_empty() || hard_state.is_some() {
            self.fsync_seconds.observe(t0.elapsed().as_secs_f64());
        }
        r
    }

    fn set_commit(&mut self, commit: u64) -> Result<(), Self::Error> {
        self.inner.set_commit(commit)
    }

    fn set_conf_state(&mut self, conf_state: ConfState) -> Result<(), Self::Error> {
        self.inner.set_conf_state(conf_state)
    }

    fn snapshot_and_compact(&mut self, index: u64, data: Vec<u8>) -> Result<(), Self::Error> {
        self.inner.snapshot_and_compact(index, data)
    }

    fn first_kept(&self) -> u64 {
        self.inner.first_kept()
    }

    fn latest_snapshot(&self) -> Result<Snapshot, Self::Error> {
        self.inner.latest_snapshot()
    }
}
