//! The durable Raft log: raft-rs's [`Storage`] on one embedded redb file.
//!
//! raft-rs leaves persistence to its user, under one contract: what a `Ready` carries (a
//! snapshot, new log entries, a new hard state) must be on stable storage before the node sends
//! the messages of that `Ready` or acts on it. A node that voted, crashed and forgot its vote
//! could vote twice in one term. [`DiskLog`] keeps the log, the hard state (term, vote, commit),
//! the conf state and the latest snapshot in `DIR/raft.redb`, and writes each [`LogUpdate`] —
//! everything one `Ready` carries — in **one** redb write transaction committed with fsync
//! (group commit: one fsync for any number of entries). A `Ready` whose only news is a higher
//! commit index writes nothing: the commit index is kept in memory and written with the next
//! durable update, as etcd does.
//!
//! The semantics mirror raft-rs's in-memory `MemStorage`, with three deliberate differences:
//!
//! - bad input is a typed [`DiskError`] where `MemStorage` panics (an append that would leave a
//!   gap or overwrite a compacted entry, a compaction past the log's end, a read past it);
//! - after [`DiskLog::compact`], the term of the last dropped entry stays available to
//!   [`Storage::term`] (the trait's contract: `term(first_index() - 1)` answers), where
//!   `MemStorage` only remembers the term at its last snapshot;
//! - [`Storage::snapshot`] returns the stored snapshot, data included, which the node recorded
//!   with [`DiskLog::create_snapshot`] or received in a [`LogUpdate`]; `MemStorage` makes up an
//!   empty one at its commit index.
//!
//! On disk: a metadata table (format version, hard state, conf state, snapshot, the index and
//! term of the last compacted entry) and an entry table keyed by Raft index, values in raft's
//! own protobuf encoding. In memory, besides the small metadata, only the term of each entry on
//! disk is cached (raft asks for terms on every append it matches); entries are read from disk.
//! After a restart the disk is the only truth: [`DiskLog::open`] rebuilds the cache from it.

use std::collections::VecDeque;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use protobuf::Message;
use raft::eraftpb::{ConfState, Entry, HardState, Snapshot, SnapshotMetadata};
use raft::{GetEntriesContext, RaftState, Storage, StorageError};
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition, TableError};
use ringleader_lock_service::replica::StableLog;

/// The name of the log's file inside the directory given to [`DiskLog::open`].
pub const FILE_NAME: &str = "raft.redb";

/// The on-disk format this build writes and reads; a file of another version is refused. 2: a
/// lease's grant and its snapshot carry its owner (the digest of its key). 3: the owner may be
/// a user, and the state machine carries the auth store (users, roles, permissions). 4: a
/// lease in a snapshot records whether the next tick counts toward it.
pub const FORMAT_VERSION: u64 = 4;

/// The name of the file a new log is built in before it is renamed to [`FILE_NAME`], so that a
/// crash during creation never leaves a `raft.redb` without a format version.
const NEW_FILE_NAME: &str = "raft.redb.new";

/// Metadata: the format version, hard state, conf state, snapshot and compaction point.
const META: TableDefinition<&str, &[u8]> = TableDefinition::new("ringleader_raft_meta");
/// The log: Raft index to the protobuf encoding of its [`Entry`].
const ENTRIES: TableDefinition<u64, &[u8]> = TableDefinition::new("ringleader_raft_entries");

const KEY_FORMAT_VERSION: &str = "format_version";
const KEY_HARD_STATE: &str = "hard_state";
const KEY_CONF_STATE: &str = "conf_state";
const KEY_SNAPSHOT: &str = "snapshot";
/// The index and term of the last entry dropped from the log, 16 bytes little-endian.
const KEY_TRUNCATED: &str = "truncated";

/// Everything one Raft `Ready` asks to persist, written by [`DiskLog::persist`] in one
/// transaction: the snapshot first (it replaces the log up to its index), then the entries,
/// then the hard state.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LogUpdate {
    /// A snapshot received from the leader (`Ready::snapshot`), if it is not empty.
    pub snapshot: Option<Snapshot>,
    /// New entries (`Ready::entries`), with consecutive indexes; appending at index `i` drops
    /// every entry from `i` on first (a conflicting suffix).
    pub entries: Vec<Entry>,
    /// The new hard state (`Ready::hs`), if it changed.
    pub hard_state: Option<HardState>,
}

impl LogUpdate {
    /// Whether the update carries nothing to persist.
    pub fn is_empty(&self) -> bool {
        self.snapshot.is_none() && self.entries.is_empty() && self.hard_state.is_none()
    }
}

/// What can go wrong opening, reading or writing the durable log.
#[derive(Debug, thiserror::Error)]
pub enum DiskError {
    /// The log's directory could not be created or synced.
    #[error("cannot prepare the Raft log directory {path}: {source}")]
    Directory {
        /// The directory.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
    /// The file is not a database redb can open: corrupt, truncated, unreadable or locked.
    #[error("cannot open the Raft log {path}: {source}")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// redb's error.
        source: redb::Error,
    },
    /// redb gave up on the file (it panicked: a truncated file, a damaged header or page).
    #[error("the Raft log {path} is damaged: {detail}")]
    Damaged {
        /// The file.
        path: PathBuf,
        /// What redb said.
        detail: String,
    },
    /// The log ends before the commit index its own hard state records: entries it once held
    /// and counted as committed are gone (a restored old copy, a truncated file that still
    /// opens). raft-rs would panic on it; the node refuses to start instead.
    #[error(
        "the Raft log {path} ends at index {last_index} but records index {commit} as committed (its log starts \
         at {first_index}): entries it acknowledged are gone"
    )]
    BehindCommit {
        /// The file.
        path: PathBuf,
        /// The recorded commit index.
        commit: u64,
        /// The first index the log holds.
        first_index: u64,
        /// The last index the log holds.
        last_index: u64,
    },
    /// The file is a redb database, but not a ringleader Raft log (no format version in it).
    #[error("{path} is not a ringleader Raft log: it has no format version (expected format {expected})")]
    Foreign {
        /// The file.
        path: PathBuf,
        /// The format this build reads.
        expected: u64,
    },
    /// The file is a ringleader Raft log of another format version.
    #[error("{path} holds Raft log format {found}; this build reads format {expected} only")]
    FormatVersion {
        /// The file.
        path: PathBuf,
        /// The version in the file.
        found: u64,
        /// The version this build reads.
        expected: u64,
    },
    /// A value on disk does not decode, or the entries on disk are not one contiguous run.
    #[error("the Raft log's {what} on disk is corrupt: {detail}")]
    Corrupt {
        /// Which value.
        what: &'static str,
        /// What was wrong with it.
        detail: String,
    },
    /// A value could not be encoded for writing.
    #[error("cannot encode the Raft log's {what}: {detail}")]
    Encode {
        /// Which value.
        what: &'static str,
        /// The encoder's error.
        detail: String,
    },
    /// redb failed to read or write (an I/O error, a full disk).
    #[error("the Raft log's store failed: {0}")]
    Store(#[source] redb::Error),
    /// Appended entries do not have consecutive indexes.
    #[error("appended entries must have consecutive indexes, but {index} follows {previous}")]
    NotConsecutive {
        /// The index of the earlier entry.
        previous: u64,
        /// The index that should have been `previous + 1`.
        index: u64,
    },
    /// An append starts below the first index: it would overwrite compacted entries.
    #[error(
        "cannot append at index {index}: entries below {first_index} are compacted (allowed: {first_index} to the last index + 1)"
    )]
    AppendCompacted {
        /// The first appended index.
        index: u64,
        /// The log's first index.
        first_index: u64,
    },
    /// An append starts past the last index + 1: it would leave a gap.
    #[error(
        "cannot append at index {index}: the log ends at {last_index}, so the next entry must be at most {last_index} + 1"
    )]
    AppendGap {
        /// The first appended index.
        index: u64,
        /// The log's last index.
        last_index: u64,
    },
    /// A snapshot is older than the log's first index.
    #[error(
        "snapshot at index {index} is out of date: the log already starts at {first_index} (allowed: {first_index} or later)"
    )]
    SnapshotOutOfDate {
        /// The snapshot's index.
        index: u64,
        /// The log's first index.
        first_index: u64,
    },
    /// A snapshot was asked for at an index the log cannot describe.
    #[error(
        "cannot take a snapshot at index {index}: allowed from {lowest} (the latest snapshot or compaction point) to {commit} (the commit index)"
    )]
    SnapshotIndex {
        /// The index asked for.
        index: u64,
        /// The lowest index allowed.
        lowest: u64,
        /// The commit index, the highest allowed.
        commit: u64,
    },
    /// A compaction was asked past the end of the log.
    #[error("cannot compact up to {upto}: the log ends at {last_index} (allowed: up to {last_index} + 1)")]
    CompactBeyondLog {
        /// The index asked for.
        upto: u64,
        /// The log's last index.
        last_index: u64,
    },
}

impl DiskError {
    /// What the operator should do about this error, in one clause: free space, make the
    /// directory writable, or restore or replace the node's data. Nothing acknowledged is lost
    /// by stopping: an entry is acknowledged only once written.
    pub fn advice(&self) -> &'static str {
        const REPLACE: &str = "restore the directory from a backup of this node, or replace the node: remove it \
                               (`ringleader member remove ID`) and add it back empty with --join (docs/SERVICE.md, \
                               \"Replacing a lost disk\")";
        let io_kind = match self {
            DiskError::Store(redb::Error::Io(e))
            | DiskError::Unreadable { source: redb::Error::Io(e), .. } => Some(e.kind()),
            DiskError::Directory { source, .. } => Some(source.kind()),
            _ => None,
        };
        match io_kind {
            Some(io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded) => {
                "the disk is full: free space on it and restart the node (what it acknowledged is on disk)"
            }
            Some(io::ErrorKind::ReadOnlyFilesystem | io::ErrorKind::PermissionDenied) => {
                "the directory is not writable: make it writable (or remount it read-write) and restart the node"
            }
            Some(_) => {
                "check the disk (dmesg) and restart the node; if the error stays, restore or replace it"
            }
            None => match self {
                DiskError::Unreadable { source: redb::Error::DatabaseAlreadyOpen, .. } => {
                    "another process has it open: stop that process, or give this node its own --data-dir"
                }
                DiskError::FormatVersion { .. } => "run the build that wrote it, or replace the node",
                DiskError::Store(redb::Error::PreviousIo) => "an earlier write failed: restart the node",
                _ => REPLACE,
            },
        }
    }
}

/// Wraps any of redb's errors as [`DiskError::Store`].
fn store(error: impl Into<redb::Error>) -> DiskError {
    DiskError::Store(error.into())
}

fn encode(what: &'static str, message: &impl Message) -> Result<Vec<u8>, DiskError> {
    message.write_to_bytes().map_err(|e| DiskError::Encode { what, detail: e.to_string() })
}

fn decode<M: Message>(what: &'static str, bytes: &[u8]) -> Result<M, DiskError> {
    M::parse_from_bytes(bytes).map_err(|e| DiskError::Corrupt { what, detail: e.to_string() })
}

fn truncated_bytes(index: u64, term: u64) -> [u8; 16] {
    let mut bytes = [0; 16];
    bytes[..8].copy_from_slice(&index.to_le_bytes());
    bytes[8..].copy_from_slice(&term.to_le_bytes());
    bytes
}

/// Turns a [`DiskError`] met while answering raft into raft's storage error.
fn to_raft(error: DiskError) -> raft::Error {
    raft::Error::Store(StorageError::Other(Box::new(error)))
}

/// raft-rs's [`Storage`] on disk: the Raft log, hard state, conf state and latest snapshot of
/// one replica, in `DIR/raft.redb` (see the module documentation).
pub struct DiskLog {
    db: Database,
    path: PathBuf,
    hard_state: HardState,
    conf_state: ConfState,
    /// The stored snapshot's metadata (its data stays on disk); index 0 when there is none.
    snapshot_metadata: SnapshotMetadata,
    /// The index of the last entry dropped from the log (by a snapshot or a compaction).
    truncated_index: u64,
    /// That entry's term.
    truncated_term: u64,
    /// The term of each entry on disk, the first at `truncated_index + 1`.
    terms: VecDeque<u64>,
}

impl std::fmt::Debug for DiskLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DiskLog")
            .field("path", &self.path)
            .field("hard_state", &self.hard_state)
            .field("conf_state", &self.conf_state)
            .field("snapshot_index", &self.snapshot_metadata.index)
            .field("first_index", &self.first())
            .field("last_index", &self.last())
            .finish()
    }
}

impl DiskLog {
    /// Opens the log in `dir` (`dir/raft.redb`), creating the directory and an empty log if
    /// there is none. Refuses a file redb cannot open ([`DiskError::Unreadable`]), a redb file
    /// that is not a ringleader Raft log ([`DiskError::Foreign`]) and one of another format
    /// version ([`DiskError::FormatVersion`]).
    ///
    /// redb asserts, rather than reports, some damage (a file shorter than its header says):
    /// such a panic while opening becomes [`DiskError::Damaged`], without a backtrace. A log
    /// whose recorded commit index lies outside the entries it holds is
    /// [`DiskError::BehindCommit`] (raft-rs would panic on it).
    pub fn open(dir: &Path) -> Result<DiskLog, DiskError> {
        let directory_error = |source| DiskError::Directory { path: dir.to_path_buf(), source };
        private_dir(dir).map_err(directory_error)?;
        let path = dir.join(FILE_NAME);
        if !path.try_exists().map_err(directory_error)? {
            create_fresh(dir, &path)?;
        }
        // The log is the owner's alone, whatever made it (an older version, a copy): another
        // local user who could read it would read every key and lease; one who could write it
        // could hand out locks.
        set_mode(&path, 0o600).map_err(directory_error)?;
        let log = quietly(&path, || {
            let mut db = Database::open(&path)
                .map_err(|e| DiskError::Unreadable { path: path.clone(), source: e.into() })?;
            // redb verifies checksums only when it recovers from an unclean shutdown; a page
            // damaged on a file closed cleanly would be read as it is. A full check at start
            // (one pass over the file) refuses a file it cannot repair. A file it repaired was
            // rolled back to its last complete commit: every commit is made durable (fsync)
            // before the node acts on it, so what was rolled back was never acknowledged, and a
            // log that lost acknowledged entries all the same is refused later (its commit
            // index outside its entries, or a leader counting more entries as replicated here).
            match db.check_integrity() {
                Ok(true) => {}
                Ok(false) => eprintln!(
                    "warning: {}: redb repaired the file (rolled back to its last complete commit)",
                    path.display()
                ),
                Err(e) => return Err(DiskError::Unreadable { path: path.clone(), source: e.into() }),
            }
            load(db, path.clone())
        })?;
        log.check_commit()?;
        Ok(log)
    }

    /// Whether the log never recorded anything: no term, vote, commit, entry or snapshot.
    pub fn is_pristine(&self) -> bool {
        self.hard_state == HardState::default() && self.last() == 0 && self.snapshot_metadata.index == 0
    }

    /// raft-rs's start-up rule, checked rather than asserted: a recorded commit index lies
    /// between the compaction point and the last entry.
    fn check_commit(&self) -> Result<(), DiskError> {
        let commit = self.hard_state.commit;
        if self.hard_state == HardState::default() || (self.truncated_index..=self.last()).contains(&commit) {
            return Ok(());
        }
        Err(DiskError::BehindCommit {
            path: self.path.clone(),
            commit,
            first_index: self.first(),
            last_index: self.last(),
        })
    }

    /// The file the log lives in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The persisted hard state (term, vote, commit).
    pub fn hard_state(&self) -> &HardState {
        &self.hard_state
    }

    /// The persisted conf state (voters, learners).
    pub fn conf_state(&self) -> &ConfState {
        &self.conf_state
    }

    /// The metadata of the stored snapshot; index 0 when there is none.
    pub fn snapshot_metadata(&self) -> &SnapshotMetadata {
        &self.snapshot_metadata
    }

    fn first(&self) -> u64 {
        self.truncated_index + 1
    }

    fn last(&self) -> u64 {
        self.truncated_index + self.terms.len() as u64
    }

    /// Persists what one Raft `Ready` carries, in one write transaction committed with fsync:
    /// the snapshot (it replaces the log up to its index, sets the conf state, and raises the
    /// hard state's term and commit to it, as `MemStorage::apply_snapshot` does), then the
    /// entries (dropping any conflicting suffix), then the hard state. Either all of it is
    /// durable when this returns `Ok`, or none of it is written. An empty update writes nothing.
    pub fn persist(&mut self, update: &LogUpdate) -> Result<(), DiskError> {
        if update.is_empty() {
            return Ok(());
        }
        // A hard state that moves only the commit index need not be synced (raft-rs's
        // `Ready::must_sync` and etcd's `MustSync` rule): every entry up to it is already durable,
        // and a restarted node learns the commit index from the leader again. Syncing it would
        // put a second fsync between a quorum's acknowledgement and the leader's apply. It is
        // kept in memory and written with the next update that must be durable.
        if update.snapshot.is_none()
            && update.entries.is_empty()
            && let Some(new) = &update.hard_state
            && new.term == self.hard_state.term
            && new.vote == self.hard_state.vote
        {
            self.hard_state.commit = self.hard_state.commit.max(new.commit);
            return Ok(());
        }
        // Check everything before writing anything.
        let (mut first, mut last) = (self.first(), self.last());
        if let Some(snapshot) = &update.snapshot {
            let index = snapshot.get_metadata().index;
            if index < first {
                return Err(DiskError::SnapshotOutOfDate { index, first_index: first });
            }
            (first, last) = (index + 1, index);
        }
        check_entries(&update.entries, first, last)?;

        let mut hard_state = self.hard_state.clone();
        let mut conf_state = None;
        let txn = self.db.begin_write().map_err(store)?;
        {
            let mut meta = txn.open_table(META).map_err(store)?;
            let mut entries = txn.open_table(ENTRIES).map_err(store)?;
            if let Some(snapshot) = &update.snapshot {
                let metadata = snapshot.get_metadata();
                entries.retain(|_, _| false).map_err(store)?;
                meta.insert(KEY_SNAPSHOT, encode("snapshot", snapshot)?.as_slice()).map_err(store)?;
                let truncated = truncated_bytes(metadata.index, metadata.term);
                meta.insert(KEY_TRUNCATED, truncated.as_slice()).map_err(store)?;
                let conf = metadata.get_conf_state();
                meta.insert(KEY_CONF_STATE, encode("conf state", conf)?.as_slice()).map_err(store)?;
                conf_state = Some(conf.clone());
                hard_state.term = hard_state.term.max(metadata.term);
                hard_state.commit = metadata.index;
            }
            if let Some(tail) = update.entries.last() {
                // Inserting overwrites the entries at the same indexes; what lies past the new
                // tail is the rest of the conflicting suffix.
                if tail.index < last {
                    entries.retain_in(tail.index + 1.., |_, _| false).map_err(store)?;
                }
                for entry in &update.entries {
                    entries.insert(entry.index, encode("entry", entry)?.as_slice()).map_err(store)?;
                }
            }
            if let Some(new) = &update.hard_state {
                hard_state = new.clone();
            }
            if update.snapshot.is_some() || update.hard_state.is_some() {
                meta.insert(KEY_HARD_STATE, encode("hard state", &hard_state)?.as_slice()).map_err(store)?;
            }
        }
        txn.commit().map_err(store)?;

        // Durable: now the cache follows.
        if let Some(snapshot) = &update.snapshot {
            let metadata = snapshot.get_metadata();
            self.truncated_index = metadata.index;
            self.truncated_term = metadata.term;
            self.terms.clear();
            self.snapshot_metadata = metadata.clone();
        }
        if let Some(conf) = conf_state {
            self.conf_state = conf;
        }
        if let Some(head) = update.entries.first() {
            self.terms.truncate((head.index - self.first()) as usize);
            self.terms.extend(update.entries.iter().map(|e| e.term));
        }
        self.hard_state = hard_state;
        Ok(())
    }

    /// Drops the entries below `upto` (log compaction, after the state machine has applied
    /// them and, normally, a snapshot covers them). The term of the last dropped entry stays
    /// available to [`Storage::term`]. Compacting at or below the first index does nothing;
    /// `upto` may be at most the last index + 1.
    pub fn compact(&mut self, upto: u64) -> Result<(), DiskError> {
        if upto <= self.first() {
            return Ok(());
        }
        if upto > self.last() + 1 {
            return Err(DiskError::CompactBeyondLog { upto, last_index: self.last() });
        }
        let dropped = (upto - self.first()) as usize;
        let truncated_index = upto - 1;
        let truncated_term = self.terms[dropped - 1];
        let txn = self.db.begin_write().map_err(store)?;
        {
            let mut meta = txn.open_table(META).map_err(store)?;
            let mut entries = txn.open_table(ENTRIES).map_err(store)?;
            entries.retain_in(..upto, |_, _| false).map_err(store)?;
            let truncated = truncated_bytes(truncated_index, truncated_term);
            meta.insert(KEY_TRUNCATED, truncated.as_slice()).map_err(store)?;
        }
        txn.commit().map_err(store)?;
        self.terms.drain(..dropped);
        self.truncated_index = truncated_index;
        self.truncated_term = truncated_term;
        Ok(())
    }

    /// Persists a new conf state (after a membership change is applied).
    pub fn set_conf_state(&mut self, conf_state: ConfState) -> Result<(), DiskError> {
        let txn = self.db.begin_write().map_err(store)?;
        {
            let mut meta = txn.open_table(META).map_err(store)?;
            meta.insert(KEY_CONF_STATE, encode("conf state", &conf_state)?.as_slice()).map_err(store)?;
        }
        txn.commit().map_err(store)?;
        self.conf_state = conf_state;
        Ok(())
    }

    /// Records a snapshot of the state machine as of the applied entry `index`, with `data` as
    /// its content and the current conf state: [`Storage::snapshot`] returns it from then on
    /// (to send to a follower that lags behind the compacted log). `index` must be committed,
    /// at least 1, and not older than the latest snapshot or compaction point. The log is not compacted:
    /// call [`DiskLog::compact`] for that.
    pub fn create_snapshot(&mut self, index: u64, data: Vec<u8>) -> Result<(), DiskError> {
        let lowest = self.truncated_index.max(self.snapshot_metadata.index).max(1);
        let commit = self.hard_state.commit;
        if index < lowest || index > commit || index > self.last() {
            return Err(DiskError::SnapshotIndex { index, lowest, commit });
        }
        let term = self.term_at(index).ok_or(DiskError::SnapshotIndex { index, lowest, commit })?;
        let mut snapshot = Snapshot { data: data.into(), ..Snapshot::default() };
        let metadata = snapshot.mut_metadata();
        metadata.index = index;
        metadata.term = term;
        metadata.set_conf_state(self.conf_state.clone());
        let txn = self.db.begin_write().map_err(store)?;
        {
            let mut meta = txn.open_table(META).map_err(store)?;
            meta.insert(KEY_SNAPSHOT, encode("snapshot", &snapshot)?.as_slice()).map_err(store)?;
            // With it the commit index kept in memory (at or past `index`): a restarted log must
            // not hold a snapshot beyond its stored commit index.
            meta.insert(KEY_HARD_STATE, encode("hard state", &self.hard_state)?.as_slice()).map_err(store)?;
        }
        txn.commit().map_err(store)?;
        self.snapshot_metadata = snapshot.take_metadata();
        Ok(())
    }

    /// The term of entry `index` if the log knows it: an entry on disk, or the last dropped one.
    fn term_at(&self, index: u64) -> Option<u64> {
        if index == self.truncated_index {
            return Some(self.truncated_term);
        }
        if index < self.first() {
            return None;
        }
        self.terms.get((index - self.first()) as usize).copied()
    }

    /// Reads entries `[low, high)` from disk, at least one and then as many as fit in
    /// `max_size` bytes (raft's `limit_size` rule).
    fn read_entries(&self, low: u64, high: u64, max_size: u64) -> Result<Vec<Entry>, DiskError> {
        let txn = self.db.begin_read().map_err(store)?;
        let table = txn.open_table(ENTRIES).map_err(store)?;
        let mut out = Vec::with_capacity((high - low).min(1024) as usize);
        let mut size = 0u64;
        let missing =
            |index: u64| DiskError::Corrupt { what: "log", detail: format!("entry {index} is missing") };
        for (expected, item) in (low..).zip(table.range(low..high).map_err(store)?) {
            let (key, value) = item.map_err(store)?;
            if key.value() != expected {
                return Err(missing(expected));
            }
            let entry: Entry = decode("entry", value.value())?;
            size += u64::from(entry.compute_size());
            if !out.is_empty() && size > max_size {
                return Ok(out);
            }
            out.push(entry);
        }
        if (out.len() as u64) < high - low {
            return Err(missing(low + out.len() as u64));
        }
        Ok(out)
    }

    fn read_snapshot(&self) -> Result<Snapshot, DiskError> {
        let txn = self.db.begin_read().map_err(store)?;
        let table = txn.open_table(META).map_err(store)?;
        let value = table.get(KEY_SNAPSHOT).map_err(store)?;
        match value {
            Some(bytes) => decode("snapshot", bytes.value()),
            None => Err(DiskError::Corrupt {
                what: "snapshot",
                detail: "its metadata is known but the snapshot is gone".into(),
            }),
        }
    }
}

/// Checks that `entries` are consecutive and may be appended to a log `[first, last]`.
fn check_entries(entries: &[Entry], first: u64, last: u64) -> Result<(), DiskError> {
    let Some(head) = entries.first() else {
        return Ok(());
    };
    for pair in entries.windows(2) {
        if pair[1].index != pair[0].index + 1 {
            return Err(DiskError::NotConsecutive { previous: pair[0].index, index: pair[1].index });
        }
    }
    if head.index < first {
        return Err(DiskError::AppendCompacted { index: head.index, first_index: first });
    }
    if head.index > last + 1 {
        return Err(DiskError::AppendGap { index: head.index, last_index: last });
    }
    Ok(())
}

thread_local! {
    /// Set while [`quietly`] runs: the panic hook stays silent on this thread.
    static QUIET: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` (opening `path` with redb), turning a panic into [`DiskError::Damaged`]. The
/// process's panic hook is wrapped once so that it stays silent on a thread inside `quietly`
/// and behaves as before everywhere else.
fn quietly<T>(path: &Path, f: impl FnOnce() -> Result<T, DiskError>) -> Result<T, DiskError> {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(|q| q.get()) {
                previous(info);
            }
        }));
    });
    QUIET.with(|q| q.set(true));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    QUIET.with(|q| q.set(false));
    result.unwrap_or_else(|panic| {
        let detail = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "redb stopped on it".into());
        Err(DiskError::Damaged { path: path.to_path_buf(), detail })
    })
}

/// Creates `dir` (and its missing parents) for the owner alone (mode 0700): a node's data
/// directory holds its log, its identity and its members, which no other local user may read
/// or replace. An existing directory keeps its mode (it may be one the operator shares on
/// purpose, or not theirs to change); the files in it are made private one by one.
pub fn private_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

/// Creates (or truncates) `path` for writing, readable and writable by the owner alone (mode
/// 0600, whatever the umask).
pub fn private_file(path: &Path) -> io::Result<fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(path)?;
    f.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
    Ok(f)
}

/// Sets `path`'s permission bits to `mode` unless they are already at most that.
fn set_mode(path: &Path, mode: u32) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let now = fs::metadata(path)?.permissions().mode() & 0o777;
    if now & !mode != 0 {
        fs::set_permissions(path, fs::Permissions::from_mode(mode))?;
    }
    Ok(())
}

/// Builds an empty log with its format version in `dir`, then renames it to `path`.
fn create_fresh(dir: &Path, path: &Path) -> Result<(), DiskError> {
    let directory_error = |source| DiskError::Directory { path: dir.to_path_buf(), source };
    let new = dir.join(NEW_FILE_NAME);
    match fs::remove_file(&new) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(directory_error(e)),
    }
    let unreadable = |e: redb::Error| DiskError::Unreadable { path: new.clone(), source: e };
    let db = Database::create(&new).map_err(|e| unreadable(e.into()))?;
    let txn = db.begin_write().map_err(store)?;
    {
        let mut meta = txn.open_table(META).map_err(store)?;
        meta.insert(KEY_FORMAT_VERSION, FORMAT_VERSION.to_le_bytes().as_slice()).map_err(store)?;
        txn.open_table(ENTRIES).map_err(store)?;
    }
    txn.commit().map_err(store)?;
    drop(db);
    set_mode(&new, 0o600).map_err(directory_error)?;
    fs::rename(&new, path).map_err(directory_error)?;
    // The rename is durable once the directory is synced.
    fs::File::open(dir).and_then(|d| d.sync_all()).map_err(directory_error)
}

/// Reads the whole state of an opened log, refusing a foreign file or another format.
fn load(db: Database, path: PathBuf) -> Result<DiskLog, DiskError> {
    let foreign = || DiskError::Foreign { path: path.clone(), expected: FORMAT_VERSION };
    let txn = db.begin_read().map_err(store)?;
    let meta = match txn.open_table(META) {
        Ok(table) => table,
        Err(TableError::TableDoesNotExist(_) | TableError::TableTypeMismatch { .. }) => {
            return Err(foreign());
        }
        Err(e) => return Err(store(e)),
    };
    let get = |key: &str| -> Result<Option<Vec<u8>>, DiskError> {
        Ok(meta.get(key).map_err(store)?.map(|v| v.value().to_vec()))
    };
    let version = get(KEY_FORMAT_VERSION)?.ok_or_else(foreign)?;
    let version: [u8; 8] = version.as_slice().try_into().map_err(|_| foreign())?;
    let found = u64::from_le_bytes(version);
    if found != FORMAT_VERSION {
        return Err(DiskError::FormatVersion { path: path.clone(), found, expected: FORMAT_VERSION });
    }
    let hard_state = match get(KEY_HARD_STATE)? {
        Some(bytes) => decode("hard state", &bytes)?,
        None => HardState::default(),
    };
    let conf_state = match get(KEY_CONF_STATE)? {
        Some(bytes) => decode("conf state", &bytes)?,
        None => ConfState::default(),
    };
    let snapshot_metadata = match get(KEY_SNAPSHOT)? {
        Some(bytes) => decode::<Snapshot>("snapshot", &bytes)?.take_metadata(),
        None => SnapshotMetadata::default(),
    };
    let (truncated_index, truncated_term) = match get(KEY_TRUNCATED)? {
        Some(bytes) => {
            let bytes: [u8; 16] = bytes.as_slice().try_into().map_err(|_| DiskError::Corrupt {
                what: "compaction point",
                detail: format!("{} bytes where 16 belong", bytes.len()),
            })?;
            let index = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"));
            let term = u64::from_le_bytes(bytes[8..].try_into().expect("8 bytes"));
            (index, term)
        }
        None => (0, 0),
    };
    let entries = match txn.open_table(ENTRIES) {
        Ok(table) => table,
        Err(TableError::TableDoesNotExist(_) | TableError::TableTypeMismatch { .. }) => {
            return Err(foreign());
        }
        Err(e) => return Err(store(e)),
    };
    let mut terms = VecDeque::new();
    for (expected, item) in (truncated_index + 1..).zip(entries.iter().map_err(store)?) {
        let (key, value) = item.map_err(store)?;
        let entry: Entry = decode("entry", value.value())?;
        if key.value() != expected || entry.index != expected {
            return Err(DiskError::Corrupt {
                what: "log",
                detail: format!(
                    "expected entry {expected}, found key {} holding entry {}",
                    key.value(),
                    entry.index
                ),
            });
        }
        terms.push_back(entry.term);
    }
    drop(entries);
    drop(meta);
    drop(txn);
    Ok(DiskLog {
        db,
        path,
        hard_state,
        conf_state,
        snapshot_metadata,
        truncated_index,
        truncated_term,
        terms,
    })
}

/// The replica's view of the disk: each `Ready` is one [`DiskLog::persist`], so one fsync.
impl StableLog for DiskLog {
    type Error = DiskError;

    fn persist(
        &mut self,
        snapshot: Option<&Snapshot>,
        entries: &[Entry],
        hard_state: Option<&HardState>,
    ) -> Result<(), DiskError> {
        let update = LogUpdate {
            snapshot: snapshot.cloned(),
            entries: entries.to_vec(),
            hard_state: hard_state.cloned(),
        };
        DiskLog::persist(self, &update)
    }

    /// Kept in memory and written with the next hard state: a restarted node learns the commit
    /// index from the leader again, so this needs no fsync of its own.
    fn set_commit(&mut self, commit: u64) -> Result<(), DiskError> {
        self.hard_state.commit = self.hard_state.commit.max(commit);
        Ok(())
    }

    fn set_conf_state(&mut self, conf_state: ConfState) -> Result<(), DiskError> {
        DiskLog::set_conf_state(self, conf_state)
    }

    fn snapshot_and_compact(&mut self, index: u64, data: Vec<u8>) -> Result<(), DiskError> {
        self.create_snapshot(index, data)?;
        self.compact(index + 1)
    }

    fn first_kept(&self) -> u64 {
        self.first()
    }

    fn latest_snapshot(&self) -> Result<Snapshot, DiskError> {
        if self.snapshot_metadata.index == 0 {
            return Ok(Snapshot::default());
        }
        self.read_snapshot()
    }
}

impl Storage for DiskLog {
    fn initial_state(&self) -> raft::Result<RaftState> {
        Ok(RaftState::new(self.hard_state.clone(), self.conf_state.clone()))
    }

    /// Entries `[low, high)` from disk, limited to `max_size` bytes but at least one. Every
    /// read is synchronous, whatever the context allows. `low` below the first index is
    /// `Compacted`; `high` past the last index + 1 is `Unavailable` (`MemStorage` panics).
    fn entries(
        &self,
        low: u64,
        high: u64,
        max_size: impl Into<Option<u64>>,
        _context: GetEntriesContext,
    ) -> raft::Result<Vec<Entry>> {
        if low < self.first() {
            return Err(raft::Error::Store(StorageError::Compacted));
        }
        if high > self.last() + 1 {
            return Err(raft::Error::Store(StorageError::Unavailable));
        }
        if low >= high {
            return Ok(Vec::new());
        }
        let max_size = max_size.into().unwrap_or(raft::NO_LIMIT);
        self.read_entries(low, high, max_size).map_err(to_raft)
    }

    /// The term of entry `idx`, for `idx` in `[first_index() - 1, last_index()]`: below that
    /// range `Compacted`, above it `Unavailable`.
    fn term(&self, idx: u64) -> raft::Result<u64> {
        if idx < self.truncated_index {
            return Err(raft::Error::Store(StorageError::Compacted));
        }
        self.term_at(idx).ok_or(raft::Error::Store(StorageError::Unavailable))
    }

    fn first_index(&self) -> raft::Result<u64> {
        Ok(self.first())
    }

    fn last_index(&self) -> raft::Result<u64> {
        Ok(self.last())
    }

    /// The stored snapshot, if there is one at `request_index` or later; otherwise
    /// `SnapshotTemporarilyUnavailable` (the node should call [`DiskLog::create_snapshot`]).
    fn snapshot(&self, request_index: u64, _to: u64) -> raft::Result<Snapshot> {
        let index = self.snapshot_metadata.index;
        if index == 0 || index < request_index {
            return Err(raft::Error::Store(StorageError::SnapshotTemporarilyUnavailable));
        }
        self.read_snapshot().map_err(to_raft)
    }
}
