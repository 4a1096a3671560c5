//! The durable Raft log's write and read cost: `cargo bench -p ringleader-service --bench disk`.
//!
//! `persist` writes one Raft `Ready` per iteration — entries of 100 bytes of data and a new
//! hard state — in one redb transaction committed with fsync. With 1 entry per `Ready` the
//! time per iteration is the time per fsync; with 16 (group commit) the same fsync carries 16
//! entries. divan's items/s is entries per second; 1 / (time per iteration) is fsyncs per
//! second. The log lives under the target directory (a real disk, not a tmpfs), and grows
//! without compaction during a run. `read` fetches 16 entries from a 10,000-entry log, as
//! raft does to send an append. docs/SERVICE.md records the figures.

use divan::Bencher;
use divan::counter::ItemsCount;
use raft::eraftpb::{Entry, HardState};
use raft::{GetEntriesContext, Storage};
use ringleader_service::disk::{DiskLog, LogUpdate};

fn main() {
    divan::main();
}

/// The bytes of data in each entry.
const ENTRY_BYTES: usize = 100;

fn entry(index: u64) -> Entry {
    Entry { index, term: 1, data: vec![(index % 251) as u8; ENTRY_BYTES].into(), ..Entry::default() }
}

fn ready(first: u64, count: u64) -> LogUpdate {
    LogUpdate {
        snapshot: None,
        entries: (first..first + count).map(entry).collect(),
        hard_state: Some(HardState {
            term: 1,
            vote: 1,
            commit: first.saturating_sub(1),
            ..HardState::default()
        }),
    }
}

fn bench_dir() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

/// One `Ready` with `entries_per_ready` entries of 100 bytes, persisted with one fsync.
#[divan::bench(args = [1, 16], sample_count = 40, sample_size = 5)]
fn persist(bencher: Bencher, entries_per_ready: u64) {
    let dir = bench_dir();
    let mut log = DiskLog::open(dir.path()).unwrap();
    let mut next = 1;
    bencher.counter(ItemsCount::new(entries_per_ready)).bench_local(|| {
        log.persist(&ready(next, entries_per_ready)).unwrap();
        next += entries_per_ready;
    });
}

/// Reading 16 entries (as raft does to send an append) from a 10,000-entry log.
#[divan::bench(sample_count = 40, sample_size = 100)]
fn read(bencher: Bencher) {
    let dir = bench_dir();
    let mut log = DiskLog::open(dir.path()).unwrap();
    for first in (1..10_000).step_by(1_000) {
        log.persist(&ready(first, 1_000)).unwrap();
    }
    let mut low = 1;
    bencher.counter(ItemsCount::new(16u64)).bench_local(|| {
        let got = log.entries(low, low + 16, None, GetEntriesContext::empty(false)).unwrap();
        low = low % 9_000 + 16;
        got
    });
}
