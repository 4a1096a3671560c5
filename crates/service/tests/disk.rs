//! The durable Raft log against its contract: what is persisted reads back, survives a restart,
//! truncates and compacts as raft-rs's `MemStorage` does, refuses bad files and bad input with a
//! typed error, and answers `raft::Storage` like `MemStorage` over one long deterministic run.

use std::path::Path;

use raft::eraftpb::{ConfState, Entry, HardState, Snapshot};
use raft::storage::MemStorage;
use raft::{GetEntriesContext, Storage, StorageError};
use ringleader_service::disk::{DiskError, DiskLog, FILE_NAME, FORMAT_VERSION, LogUpdate};

fn entry(index: u64, term: u64) -> Entry {
    Entry {
        index,
        term,
        data: format!("command {index} of term {term}").into_bytes().into(),
        ..Entry::default()
    }
}

fn entries(from: u64, to: u64, term: u64) -> Vec<Entry> {
    (from..=to).map(|i| entry(i, term)).collect()
}

fn hard_state(term: u64, vote: u64, commit: u64) -> HardState {
    HardState { term, vote, commit, ..HardState::default() }
}

fn conf_state(voters: &[u64]) -> ConfState {
    ConfState { voters: voters.to_vec(), ..ConfState::default() }
}

fn snapshot(index: u64, term: u64, voters: &[u64], data: &str) -> Snapshot {
    let mut s = Snapshot { data: data.as_bytes().to_vec().into(), ..Snapshot::default() };
    let meta = s.mut_metadata();
    meta.index = index;
    meta.term = term;
    meta.set_conf_state(conf_state(voters));
    s
}

fn read(log: &impl Storage, low: u64, high: u64, max: Option<u64>) -> raft::Result<Vec<Entry>> {
    log.entries(low, high, max, GetEntriesContext::empty(false))
}

fn append(log: &mut DiskLog, es: Vec<Entry>) {
    log.persist(&LogUpdate { entries: es, ..LogUpdate::default() }).unwrap();
}

fn compacted<T>() -> raft::Result<T> {
    Err(raft::Error::Store(StorageError::Compacted))
}

fn unavailable<T>() -> raft::Result<T> {
    Err(raft::Error::Store(StorageError::Unavailable))
}

#[test]
fn appended_entries_and_hard_state_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = DiskLog::open(dir.path()).unwrap();
    assert_eq!((log.first_index(), log.last_index()), (Ok(1), Ok(0)));
    assert_eq!(log.term(0), Ok(0));
    assert_eq!(log.initial_state().unwrap().hard_state, HardState::default());
    assert_eq!(read(&log, 1, 1, None), Ok(vec![]));

    let written = entries(1, 5, 1);
    log.persist(&LogUpdate {
        snapshot: None,
        entries: written.clone(),
        hard_state: Some(hard_state(1, 2, 3)),
    })
    .unwrap();
    assert_eq!((log.first_index(), log.last_index()), (Ok(1), Ok(5)));
    assert_eq!(read(&log, 1, 6, None), Ok(written.clone()));
    assert_eq!(read(&log, 2, 4, None), Ok(written[1..3].to_vec()));
    assert_eq!(log.term(5), Ok(1));
    assert_eq!(log.term(6), unavailable());
    assert_eq!(read(&log, 1, 7, None), unavailable());
    assert_eq!(log.initial_state().unwrap().hard_state, hard_state(1, 2, 3));

    // max_size: the first entry always, then whole entries while the total fits.
    let size = u64::from(protobuf::Message::compute_size(&written[0]));
    assert_eq!(read(&log, 1, 6, Some(0)), Ok(written[..1].to_vec()));
    assert_eq!(read(&log, 1, 6, Some(2 * size)), Ok(written[..2].to_vec()));
    assert_eq!(read(&log, 1, 6, Some(2 * size + 1)), Ok(written[..2].to_vec()));
    assert_eq!(read(&log, 1, 6, Some(raft::NO_LIMIT)), Ok(written));
}

/// Only a term, a vote, entries or a snapshot must be synced (raft-rs's `Ready::must_sync`): a
/// hard state that moves only the commit index is kept in memory and reaches the disk with the
/// next durable update, so a restart may find an older commit index, never an older vote.
#[test]
fn a_commit_index_alone_is_not_synced_and_a_vote_is() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut log = DiskLog::open(dir.path()).unwrap();
        let first =
            LogUpdate { entries: entries(1, 3, 1), hard_state: Some(hard_state(1, 2, 1)), snapshot: None };
        log.persist(&first).unwrap();
        log.persist(&LogUpdate { hard_state: Some(hard_state(1, 2, 3)), ..LogUpdate::default() }).unwrap();
        assert_eq!(log.hard_state(), &hard_state(1, 2, 3));
        assert_eq!(log.initial_state().unwrap().hard_state, hard_state(1, 2, 3));
    }
    {
        let mut log = DiskLog::open(dir.path()).unwrap();
        assert_eq!(log.hard_state(), &hard_state(1, 2, 1), "the commit index alone was not synced");
        assert_eq!(log.last_index(), Ok(3), "the entries were");
        log.persist(&LogUpdate { hard_state: Some(hard_state(2, 3, 3)), ..LogUpdate::default() }).unwrap();
    }
    let log = DiskLog::open(dir.path()).unwrap();
    assert_eq!(log.hard_state(), &hard_state(2, 3, 3), "a new term and vote are synced, with the commit");
}

#[test]
fn a_restart_reopens_the_same_hard_state_entries_snapshot_and_conf_state() {
    let dir = tempfile::tempdir().unwrap();
    let (state, first, last, stored, snap);
    {
        let mut log = DiskLog::open(dir.path()).unwrap();
        log.persist(&LogUpdate {
            snapshot: Some(snapshot(4, 2, &[1, 2, 3], "state machine at 4")),
            entries: entries(5, 9, 3),
            hard_state: Some(hard_state(3, 1, 7)),
        })
        .unwrap();
        log.set_conf_state(conf_state(&[1, 2, 3, 4])).unwrap();
        state = log.initial_state().unwrap();
        (first, last) = (log.first_index().unwrap(), log.last_index().unwrap());
        stored = read(&log, first, last + 1, None).unwrap();
        snap = log.snapshot(0, 2).unwrap();
    }
    let log = DiskLog::open(dir.path()).unwrap();
    let again = log.initial_state().unwrap();
    assert_eq!(again.hard_state, hard_state(3, 1, 7));
    assert_eq!(again.hard_state, state.hard_state);
    assert_eq!(again.conf_state, conf_state(&[1, 2, 3, 4]));
    assert_eq!((first, last), (5, 9));
    assert_eq!((log.first_index(), log.last_index()), (Ok(5), Ok(9)));
    assert_eq!(read(&log, 5, 10, None), Ok(stored));
    assert_eq!(log.term(4), Ok(2));
    assert_eq!(log.snapshot(0, 2), Ok(snap.clone()));
    assert_eq!(&snap.data[..], b"state machine at 4");
    assert_eq!(snap.get_metadata().get_conf_state(), &conf_state(&[1, 2, 3]));
}

#[test]
fn appending_inside_the_log_truncates_the_conflicting_suffix() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = DiskLog::open(dir.path()).unwrap();
    append(&mut log, entries(1, 6, 1));
    append(&mut log, entries(3, 4, 2));
    let expected = [entries(1, 2, 1), entries(3, 4, 2)].concat();
    assert_eq!(log.last_index(), Ok(4));
    assert_eq!(read(&log, 1, 5, None), Ok(expected.clone()));
    assert_eq!(log.term(5), unavailable());
    drop(log);
    // The dropped suffix is gone from disk too.
    let mut log = DiskLog::open(dir.path()).unwrap();
    assert_eq!(log.last_index(), Ok(4));
    assert_eq!(read(&log, 1, 5, None), Ok(expected));
    // Overwriting with a longer run replaces and extends.
    append(&mut log, entries(4, 7, 3));
    assert_eq!(log.last_index(), Ok(7));
    assert_eq!(log.term(3), Ok(2));
    assert_eq!(log.term(4), Ok(3));
    drop(log);
    let log = DiskLog::open(dir.path()).unwrap();
    let expected = [entries(1, 2, 1), entries(3, 3, 2), entries(4, 7, 3)].concat();
    assert_eq!(read(&log, 1, 8, None), Ok(expected));
}

#[test]
fn compaction_keeps_the_term_at_its_boundary() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = DiskLog::open(dir.path()).unwrap();
    append(&mut log, [entries(1, 4, 1), entries(5, 10, 2)].concat());
    log.compact(6).unwrap();
    assert_eq!((log.first_index(), log.last_index()), (Ok(6), Ok(10)));
    assert_eq!(log.term(5), Ok(2), "the last dropped entry's term");
    assert_eq!(log.term(4), compacted());
    assert_eq!(read(&log, 5, 7, None), compacted());
    assert_eq!(read(&log, 6, 11, None), Ok(entries(6, 10, 2)));
    // At or below the first index: nothing to do.
    log.compact(3).unwrap();
    log.compact(6).unwrap();
    assert_eq!(log.first_index(), Ok(6));
    // Past the end of the log: refused, with the allowed range.
    let error = log.compact(12).unwrap_err();
    assert!(matches!(error, DiskError::CompactBeyondLog { upto: 12, last_index: 10 }));
    assert_eq!(error.to_string(), "cannot compact up to 12: the log ends at 10 (allowed: up to 10 + 1)");
    drop(log);

    // The compaction point survives a restart; compacting everything keeps the last term.
    let mut log = DiskLog::open(dir.path()).unwrap();
    assert_eq!((log.first_index(), log.last_index()), (Ok(6), Ok(10)));
    assert_eq!(log.term(5), Ok(2));
    log.compact(11).unwrap();
    assert_eq!((log.first_index(), log.last_index()), (Ok(11), Ok(10)));
    assert_eq!(log.term(10), Ok(2));
    assert_eq!(log.term(9), compacted());
    assert_eq!(read(&log, 11, 11, None), Ok(vec![]));
    let error = log.persist(&LogUpdate { entries: entries(10, 11, 3), ..LogUpdate::default() }).unwrap_err();
    assert_eq!(
        error.to_string(),
        "cannot append at index 10: entries below 11 are compacted (allowed: 11 to the last index + 1)"
    );
    append(&mut log, entries(11, 12, 3));
    drop(log);
    let log = DiskLog::open(dir.path()).unwrap();
    assert_eq!((log.first_index(), log.last_index()), (Ok(11), Ok(12)));
    assert_eq!(log.term(10), Ok(2));
    assert_eq!(read(&log, 11, 13, None), Ok(entries(11, 12, 3)));
}

#[test]
fn a_snapshot_replaces_the_log_up_to_its_index() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = DiskLog::open(dir.path()).unwrap();
    append(&mut log, entries(1, 5, 1));
    log.persist(&LogUpdate { hard_state: Some(hard_state(4, 3, 5)), ..LogUpdate::default() }).unwrap();
    // A snapshot past the log, with entries after it in the same Ready.
    log.persist(&LogUpdate {
        snapshot: Some(snapshot(8, 3, &[1, 2, 3], "eight")),
        entries: entries(9, 10, 4),
        hard_state: None,
    })
    .unwrap();
    assert_eq!((log.first_index(), log.last_index()), (Ok(9), Ok(10)));
    assert_eq!(log.term(8), Ok(3));
    assert_eq!(log.term(7), compacted());
    assert_eq!(read(&log, 9, 11, None), Ok(entries(9, 10, 4)));
    let state = log.initial_state().unwrap();
    // The term stays the higher one; the commit moves to the snapshot.
    assert_eq!(state.hard_state, hard_state(4, 3, 8));
    assert_eq!(state.conf_state, conf_state(&[1, 2, 3]));
    assert_eq!(log.snapshot(0, 1).unwrap().get_metadata().index, 8);
    assert_eq!(&log.snapshot(8, 1).unwrap().data[..], b"eight");
    assert_eq!(log.snapshot(9, 1), Err(raft::Error::Store(StorageError::SnapshotTemporarilyUnavailable)));

    // A snapshot inside the log also drops the entries after it (MemStorage does the same).
    log.persist(&LogUpdate { snapshot: Some(snapshot(9, 4, &[1, 2], "nine")), ..LogUpdate::default() })
        .unwrap();
    assert_eq!((log.first_index(), log.last_index()), (Ok(10), Ok(9)));
    assert_eq!(log.initial_state().unwrap().conf_state, conf_state(&[1, 2]));

    // An older snapshot is refused, and nothing of its update is written.
    let error = log
        .persist(&LogUpdate {
            snapshot: Some(snapshot(7, 3, &[1], "seven")),
            entries: vec![],
            hard_state: Some(hard_state(9, 9, 9)),
        })
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "snapshot at index 7 is out of date: the log already starts at 10 (allowed: 10 or later)"
    );
    assert_eq!(log.hard_state(), &hard_state(4, 3, 9));
    drop(log);
    let log = DiskLog::open(dir.path()).unwrap();
    assert_eq!(log.hard_state(), &hard_state(4, 3, 9));
    assert_eq!(&log.snapshot(0, 1).unwrap().data[..], b"nine");
}

#[test]
fn a_snapshot_created_by_the_node_is_served_to_followers() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = DiskLog::open(dir.path()).unwrap();
    assert_eq!(log.snapshot(0, 2), Err(raft::Error::Store(StorageError::SnapshotTemporarilyUnavailable)));
    log.set_conf_state(conf_state(&[1, 2, 3])).unwrap();
    log.persist(&LogUpdate {
        entries: [entries(1, 3, 1), entries(4, 6, 2)].concat(),
        hard_state: Some(hard_state(2, 1, 5)),
        ..LogUpdate::default()
    })
    .unwrap();
    let error = log.create_snapshot(6, b"six".to_vec()).unwrap_err();
    assert_eq!(
        error.to_string(),
        "cannot take a snapshot at index 6: allowed from 1 (the latest snapshot or compaction point) to 5 (the commit index)"
    );
    log.create_snapshot(5, b"five".to_vec()).unwrap();
    log.compact(6).unwrap();
    let snap = log.snapshot(0, 2).unwrap();
    assert_eq!((snap.get_metadata().index, snap.get_metadata().term), (5, 2));
    assert_eq!(snap.get_metadata().get_conf_state(), &conf_state(&[1, 2, 3]));
    assert_eq!(&snap.data[..], b"five");
    drop(log);
    let log = DiskLog::open(dir.path()).unwrap();
    assert_eq!(log.snapshot(0, 2), Ok(snap));
    assert_eq!(log.first_index(), Ok(6));
}

#[test]
fn bad_appends_are_refused_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = DiskLog::open(dir.path()).unwrap();
    append(&mut log, entries(1, 3, 1));
    let gap = LogUpdate {
        entries: entries(5, 6, 1),
        hard_state: Some(hard_state(7, 7, 7)),
        ..LogUpdate::default()
    };
    assert_eq!(
        log.persist(&gap).unwrap_err().to_string(),
        "cannot append at index 5: the log ends at 3, so the next entry must be at most 3 + 1"
    );
    let holes = LogUpdate { entries: vec![entry(4, 1), entry(6, 1)], ..LogUpdate::default() };
    assert_eq!(
        log.persist(&holes).unwrap_err().to_string(),
        "appended entries must have consecutive indexes, but 6 follows 4"
    );
    assert_eq!(log.last_index(), Ok(3));
    assert_eq!(log.hard_state(), &HardState::default());
    drop(log);
    let log = DiskLog::open(dir.path()).unwrap();
    assert_eq!(log.last_index(), Ok(3));
    assert_eq!(log.hard_state(), &HardState::default());
}

fn open_error(dir: &Path) -> DiskError {
    DiskLog::open(dir).unwrap_err()
}

#[test]
fn a_corrupt_file_is_refused_with_a_typed_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(FILE_NAME);
    std::fs::write(&path, vec![0x5a; 8192]).unwrap();
    let error = open_error(dir.path());
    assert!(matches!(error, DiskError::Unreadable { .. }), "{error:?}");
    let message = error.to_string();
    assert!(message.starts_with(&format!("cannot open the Raft log {}: ", path.display())), "{message}");
    assert!(!message.contains('\n'), "{message}");

    // A real log whose bytes were overwritten in the middle.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(FILE_NAME);
    {
        let mut log = DiskLog::open(dir.path()).unwrap();
        append(&mut log, entries(1, 50, 1));
    }
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.truncate(100);
    std::fs::write(&path, &bytes).unwrap();
    let error = open_error(dir.path());
    assert!(matches!(error, DiskError::Unreadable { .. }), "{error:?}");
}

#[test]
fn a_truncated_or_scattered_corrupt_log_is_a_typed_error_without_a_panic() {
    // Cut after its header: redb asserts on the length; the open turns that into an error.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(FILE_NAME);
    {
        let mut log = DiskLog::open(dir.path()).unwrap();
        append(&mut log, entries(1, 200, 1));
    }
    let len = std::fs::metadata(&path).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(len / 3).unwrap();
    let error = open_error(dir.path());
    assert!(matches!(error, DiskError::Damaged { .. } | DiskError::Unreadable { .. }), "{error:?}");
    let message = error.to_string();
    assert!(message.contains(&path.display().to_string()) && !message.contains('\n'), "{message}");
    assert!(error.advice().contains("--join"), "{}", error.advice());

    // Every page after the header overwritten in its middle.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(FILE_NAME);
    {
        let mut log = DiskLog::open(dir.path()).unwrap();
        append(&mut log, entries(1, 200, 1));
    }
    let mut bytes = std::fs::read(&path).unwrap();
    for page in bytes.chunks_mut(4096).skip(1) {
        let (mid, len) = (page.len() / 2, page.len());
        page[mid..(mid + 64).min(len)].fill(0xa5);
    }
    std::fs::write(&path, &bytes).unwrap();
    let error = open_error(dir.path());
    assert!(
        matches!(error, DiskError::Damaged { .. } | DiskError::Unreadable { .. } | DiskError::Store(_)),
        "{error:?}"
    );
}

#[test]
fn a_log_that_ends_before_its_recorded_commit_is_refused_at_open() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut log = DiskLog::open(dir.path()).unwrap();
        let update = LogUpdate {
            entries: entries(1, 10, 1),
            hard_state: Some(hard_state(1, 1, 10)),
            ..LogUpdate::default()
        };
        log.persist(&update).unwrap();
        // Entries 6..=10 replaced by one entry 6: the log no longer holds what it counted
        // committed (raft-rs would panic on it when the node starts).
        log.persist(&LogUpdate { entries: entries(6, 6, 2), ..LogUpdate::default() }).unwrap();
    }
    let error = open_error(dir.path());
    let DiskError::BehindCommit { commit, last_index, .. } = error else { panic!("{error:?}") };
    assert_eq!((commit, last_index), (10, 6));
}

#[test]
fn a_foreign_redb_file_or_another_format_version_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(FILE_NAME);
    {
        let db = redb::Database::create(&path).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let table: redb::TableDefinition<&str, u64> = redb::TableDefinition::new("accounts");
            txn.open_table(table).unwrap().insert("alice", 3).unwrap();
        }
        txn.commit().unwrap();
    }
    let error = open_error(dir.path());
    assert!(matches!(error, DiskError::Foreign { expected: FORMAT_VERSION, .. }), "{error:?}");
    assert_eq!(
        error.to_string(),
        format!(
            "{} is not a ringleader Raft log: it has no format version (expected format {FORMAT_VERSION})",
            path.display()
        )
    );

    // A ringleader log of a format this build does not read.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(FILE_NAME);
    drop(DiskLog::open(dir.path()).unwrap());
    {
        let db = redb::Database::open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let meta: redb::TableDefinition<&str, &[u8]> = redb::TableDefinition::new("ringleader_raft_meta");
            let mut table = txn.open_table(meta).unwrap();
            table.insert("format_version", (FORMAT_VERSION + 1).to_le_bytes().as_slice()).unwrap();
        }
        txn.commit().unwrap();
    }
    let error = open_error(dir.path());
    assert!(
        matches!(error, DiskError::FormatVersion { found, expected: FORMAT_VERSION, .. } if found == FORMAT_VERSION + 1),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        format!(
            "{} holds Raft log format {}; this build reads format {FORMAT_VERSION} only",
            path.display(),
            FORMAT_VERSION + 1
        )
    );
}

#[test]
fn a_log_open_elsewhere_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let _first = DiskLog::open(dir.path()).unwrap();
    let error = open_error(dir.path());
    assert!(
        matches!(&error, DiskError::Unreadable { source: redb::Error::DatabaseAlreadyOpen, .. }),
        "{error:?}"
    );
}

#[test]
fn a_directory_in_place_of_the_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(FILE_NAME)).unwrap();
    let error = open_error(dir.path());
    assert!(matches!(error, DiskError::Unreadable { .. }), "{error:?}");
}

/// A small deterministic generator (SplitMix64): the differential run is the same every time.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `[low, high]`.
    fn between(&mut self, low: u64, high: u64) -> u64 {
        low + self.next() % (high - low + 1)
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

/// Compares every `raft::Storage` answer of the two stores. The one deliberate difference:
/// after a compaction `DiskLog` still knows the term of the last dropped entry
/// (`compacted_term`), where `MemStorage` answers `Compacted` unless that index is its
/// snapshot's; and `MemStorage` keeps its snapshot's term below that point.
fn assert_same(
    step: usize,
    disk: &DiskLog,
    mem: &MemStorage,
    compacted_term: Option<(u64, u64)>,
    snapshot_index: u64,
) {
    let (first, last) = (mem.first_index().unwrap(), mem.last_index().unwrap());
    assert_eq!(disk.first_index(), Ok(first), "step {step}");
    assert_eq!(disk.last_index(), Ok(last), "step {step}");
    let (d, m) = (disk.initial_state().unwrap(), mem.initial_state().unwrap());
    assert_eq!(d.hard_state, m.hard_state, "step {step}");
    assert_eq!(d.conf_state, m.conf_state, "step {step}");
    for idx in 0..=last + 2 {
        let (d, m) = (disk.term(idx), mem.term(idx));
        if idx + 1 == first && m == compacted() {
            let (at, term) = compacted_term.expect("MemStorage forgets only after a compaction");
            assert_eq!(at, idx, "step {step}");
            assert_eq!(d, Ok(term), "step {step}: term({idx})");
        } else if idx + 1 < first && idx == snapshot_index {
            assert_eq!(d, compacted(), "step {step}: term({idx})");
            assert!(m.is_ok(), "step {step}: term({idx})");
        } else {
            assert_eq!(d, m, "step {step}: term({idx})");
        }
    }
    if first <= last {
        let total = read(mem, first, last + 1, None).unwrap();
        let one = u64::from(protobuf::Message::compute_size(&total[0]));
        for max in [None, Some(0), Some(one * 3), Some(one * 3 + one / 2)] {
            for low in first..=last + 1 {
                assert_eq!(
                    read(disk, low, last + 1, max),
                    read(mem, low, last + 1, max),
                    "step {step}: entries({low}, {}, {max:?})",
                    last + 1
                );
            }
            for high in first..=last + 1 {
                assert_eq!(
                    read(disk, first, high, max),
                    read(mem, first, high, max),
                    "step {step}: entries({first}, {high}, {max:?})"
                );
            }
        }
        if first > 1 {
            assert_eq!(read(disk, first - 1, last + 1, None), compacted());
            assert_eq!(read(mem, first - 1, last + 1, None), compacted());
        }
    }
    // MemStorage makes up its snapshot at the commit index: the two agree where that is the
    // snapshot both were given.
    let commit = m.hard_state.commit;
    if snapshot_index > 0 && commit == snapshot_index {
        let (d, m) = (disk.snapshot(0, 2).unwrap(), mem.snapshot(0, 2).unwrap());
        assert_eq!(d.get_metadata().index, m.get_metadata().index, "step {step}");
        assert_eq!(d.get_metadata().term, m.get_metadata().term, "step {step}");
    }
}

#[test]
fn storage_answers_like_mem_storage_over_a_deterministic_run() {
    let dir = tempfile::tempdir().unwrap();
    let mut disk = DiskLog::open(dir.path()).unwrap();
    let mem = MemStorage::new();
    let mut rng = SplitMix(0x5eed_2026);
    let mut term = 1;
    let mut commit = 0;
    let mut compacted_term = None;
    let mut snapshot_index = 0;
    let (mut appends, mut truncations, mut compactions, mut snapshots, mut reopens) = (0, 0, 0, 0, 0);
    for step in 0..400 {
        if step % 40 == 39 {
            // A restart: everything must come back from disk.
            drop(disk);
            disk = DiskLog::open(dir.path()).unwrap();
            reopens += 1;
            assert_same(step, &disk, &mem, compacted_term, snapshot_index);
        }
        let (first, last) = (mem.first_index().unwrap(), mem.last_index().unwrap());
        let mut update = LogUpdate::default();
        let roll = rng.between(0, 99);
        if roll < 6 {
            // A snapshot from the leader, at or past the first index.
            term += rng.between(0, 1);
            let index = rng.between(first, last + 3);
            let voters: Vec<u64> = (1..=rng.between(1, 5)).collect();
            update.snapshot = Some(snapshot(index, term, &voters, &format!("at {index}")));
            commit = index;
            snapshot_index = index;
            compacted_term = None;
            snapshots += 1;
        } else if roll < 14 && first < last {
            // Compaction below the last index (MemStorage forgets its first index when it
            // compacts everything, so the run never does that).
            let upto = rng.between(first + 1, last.min(commit.max(first + 1)));
            let dropped_term = mem.term(upto - 1).unwrap();
            mem.wl().compact(upto).unwrap();
            disk.compact(upto).unwrap();
            compacted_term = Some((upto - 1, dropped_term));
            compactions += 1;
            assert_same(step, &disk, &mem, compacted_term, snapshot_index);
            continue;
        } else if roll < 18 {
            let cs = conf_state(&(1..=rng.between(1, 7)).collect::<Vec<_>>());
            mem.wl().set_conf_state(cs.clone());
            disk.set_conf_state(cs).unwrap();
            assert_same(step, &disk, &mem, compacted_term, snapshot_index);
            continue;
        }
        let (first, last) = match &update.snapshot {
            Some(s) => (s.get_metadata().index + 1, s.get_metadata().index),
            None => (first, last),
        };
        if rng.chance(85) {
            // Mostly at the end; sometimes over an uncommitted suffix, with a newer term (Raft
            // never replaces a committed entry, and a log that lost one is refused at open).
            let start = if last >= first && rng.chance(25) && last > commit {
                term += 1;
                truncations += 1;
                rng.between(first.max(commit + 1), last)
            } else {
                last + 1
            };
            let count = rng.between(1, 6);
            update.entries = (start..start + count)
                .map(|i| {
                    let mut e = entry(i, term);
                    e.data = vec![(i % 251) as u8; rng.between(0, 300) as usize].into();
                    e
                })
                .collect();
            appends += 1;
        }
        let new_last = update.entries.last().map_or(last, |e| e.index);
        if rng.chance(60) {
            commit = rng.between(commit, new_last.max(commit));
            update.hard_state = Some(hard_state(term, rng.between(0, 3), commit));
        }
        if let Some(s) = &update.snapshot {
            mem.wl().apply_snapshot(s.clone()).unwrap();
        }
        mem.wl().append(&update.entries).unwrap();
        if let Some(hs) = &update.hard_state {
            mem.wl().set_hardstate(hs.clone());
        }
        disk.persist(&update).unwrap();
        assert_same(step, &disk, &mem, compacted_term, snapshot_index);
    }
    eprintln!(
        "{appends} appends, {truncations} truncations, {compactions} compactions, {snapshots} snapshots"
    );
    // The run exercised every operation, and more than once.
    assert!(appends > 200, "{appends} appends");
    assert!(truncations > 20, "{truncations} truncations");
    assert!(compactions > 10, "{compactions} compactions");
    assert!(snapshots > 10, "{snapshots} snapshots");
    assert_eq!(reopens, 10);
}

/// A new data directory and its log are the owner's alone; a log left readable by others (an
/// older version, a copy) is made private at the next start.
#[test]
fn the_log_and_its_directory_are_readable_by_their_owner_alone() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("node-1");
    drop(DiskLog::open(&dir).unwrap());
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(mode(&dir.join(FILE_NAME)), 0o600);
    std::fs::set_permissions(dir.join(FILE_NAME), std::fs::Permissions::from_mode(0o644)).unwrap();
    drop(DiskLog::open(&dir).unwrap());
    assert_eq!(mode(&dir.join(FILE_NAME)), 0o600);
}
