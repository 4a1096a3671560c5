//! The Raft log as the simulator keeps it: what a replica has written to stable storage.
//!
//! raft-rs asks its host for a [`raft::Storage`]: the hard state (term, vote, commit), the
//! configuration, the last snapshot and the entries after it. [`MemoryLog`] is that storage
//! held in the process's own state, with the same meaning as a disk: the replica writes a
//! [`Ready`](raft::Ready)'s entries and hard state here *before* it sends the messages that
//! depend on them, and a crash keeps exactly what is here (the simulator keeps the crashed
//! state aside; [`LockService`](crate::process::LockService)'s `on_recover` rebuilds its
//! Raft node and state machine from this log and forgets everything else).
//!
//! Unlike raft-rs's own `MemStorage` (shared behind `Arc<RwLock>`), this is a plain value, and
//! its snapshot carries the state machine's serialised form, so a follower that fell behind a
//! compaction catches up from it. The semantics mirror `MemStorage`'s: appending at index `i`
//! drops every entry from `i` on first (a conflicting suffix), compaction keeps the snapshot's
//! term for `term()` at its index.

use raft::eraftpb::{ConfState, Entry, HardState, Snapshot, SnapshotMetadata};
use raft::{GetEntriesContext, RaftState, StorageError};

/// A replica's stable storage, in memory (see the module documentation).
#[derive(Clone, Debug, Default)]
pub struct MemoryLog {
    hard_state: HardState,
    conf_state: ConfState,
    /// The last snapshot: its metadata (index, term, configuration) and the state machine's
    /// serialised form at that index.
    snapshot: Snapshot,
    /// Entries after the snapshot, contiguous.
    entries: Vec<Entry>,
}

impl MemoryLog {
    /// A fresh log for a cluster whose voters are `voters` (Raft ids).
    pub fn new(voters: Vec<u64>) -> MemoryLog {
        let mut log = MemoryLog::default();
        log.conf_state.voters = voters.clone();
        log.snapshot.mut_metadata().mut_conf_state().voters = voters;
        log
    }

    /// The index of the first entry still kept (one past the snapshot).
    pub fn first(&self) -> u64 {
        self.snapshot.get_metadata().index + 1
    }

    /// The index of the last entry (the snapshot's index when no entry follows it).
    pub fn last(&self) -> u64 {
        self.entries.last().map_or(self.snapshot.get_metadata().index, |e| e.index)
    }

    /// The hard state last written.
    pub fn hard_state(&self) -> &HardState {
        &self.hard_state
    }

    /// The last snapshot written.
    pub fn last_snapshot(&self) -> &Snapshot {
        &self.snapshot
    }

    /// Number of entries kept after the snapshot.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when no entry follows the snapshot.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Writes `entries`, dropping any kept entry at or after the first one's index (a
    /// conflicting suffix the leader overwrote). Entries before the snapshot are ignored.
    pub fn append(&mut self, entries: &[Entry]) {
        let Some(first) = entries.first() else { return };
        let start = first.index.max(self.first());
        let skip = (start - first.index) as usize;
        if skip >= entries.len() {
            return;
        }
        let keep = start.saturating_sub(self.first()) as usize;
        self.entries.truncate(keep.min(self.entries.len()));
        self.entries.extend_from_slice(&entries[skip..]);
    }

    /// Writes the hard state.
    pub fn set_hard_state(&mut self, hs: HardState) {
        self.hard_state = hs;
    }

    /// Records that entries up to `commit` are committed.
    pub fn set_commit(&mut self, commit: u64) {
        self.hard_state.commit = commit;
    }

    /// Installs a snapshot received from the leader: it replaces the whole log (entries up to
    /// and after its index are dropped: the leader sends what follows).
    pub fn install_snapshot(&mut self, snapshot: Snapshot) {
        let meta = snapshot.get_metadata();
        if meta.index < self.snapshot.get_metadata().index {
            return;
        }
        self.hard_state.term = self.hard_state.term.max(meta.term);
        self.hard_state.commit = self.hard_state.commit.max(meta.index);
        self.conf_state = meta.get_conf_state().clone();
        self.entries.clear();
        self.snapshot = snapshot;
    }

    /// Takes a snapshot at `index` (applied, so committed and kept) holding `data`, and drops the
    /// entries up to it (log compaction). Does nothing for an index outside the kept entries.
    pub fn compact(&mut self, index: u64, data: Vec<u8>) {
        if index < self.first() || index > self.last() {
            return;
        }
        let term = self.entries[(index - self.first()) as usize].term;
        let mut meta = SnapshotMetadata { index, term, ..Default::default() };
        meta.set_conf_state(self.conf_state.clone());
        let mut snapshot = Snapshot::default();
        snapshot.set_metadata(meta);
        snapshot.data = data.into();
        let drop = (index + 1 - self.first()) as usize;
        self.entries.drain(..drop);
        self.snapshot = snapshot;
    }
}

impl super::replica::StableLog for MemoryLog {
    type Error = std::convert::Infallible;

    fn persist(
        &mut self,
        snapshot: Option<&Snapshot>,
        entries: &[Entry],
        hard_state: Option<&HardState>,
    ) -> Result<(), Self::Error> {
        if let Some(s) = snapshot {
            self.install_snapshot(s.clone());
        }
        self.append(entries);
        if let Some(hs) = hard_state {
            self.set_hard_state(hs.clone());
        }
        Ok(())
    }

    fn set_commit(&mut self, commit: u64) -> Result<(), Self::Error> {
        MemoryLog::set_commit(self, commit);
        Ok(())
    }

    fn set_conf_state(&mut self, conf_state: ConfState) -> Result<(), Self::Error> {
        self.conf_state = conf_state;
        Ok(())
    }

    fn snapshot_and_compact(&mut self, index: u64, data: Vec<u8>) -> Result<(), Self::Error> {
        self.compact(index, data);
        Ok(())
    }

    fn first_kept(&self) -> u64 {
        self.first()
    }

    fn latest_snapshot(&self) -> Result<Snapshot, Self::Error> {
        Ok(self.snapshot.clone())
    }
}

impl raft::Storage for MemoryLog {
    fn initial_state(&self) -> raft::Result<RaftState> {
        Ok(RaftState { hard_state: self.hard_state.clone(), conf_state: self.conf_state.clone() })
    }

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
        if high > self.last() + 1 || low > high {
            return Err(raft::Error::Store(StorageError::Unavailable));
        }
        let lo = (low - self.first()) as usize;
        let hi = (high - self.first()) as usize;
        let mut out = self.entries[lo..hi].to_vec();
        raft::util::limit_size(&mut out, max_size.into());
        Ok(out)
    }

    fn term(&self, idx: u64) -> raft::Result<u64> {
        let meta = self.snapshot.get_metadata();
        if idx == meta.index {
            return Ok(meta.term);
        }
        if idx < self.first() {
            return Err(raft::Error::Store(StorageError::Compacted));
        }
        if idx > self.last() {
            return Err(raft::Error::Store(StorageError::Unavailable));
        }
        Ok(self.entries[(idx - self.first()) as usize].term)
    }

    fn first_index(&self) -> raft::Result<u64> {
        Ok(self.first())
    }

    fn last_index(&self) -> raft::Result<u64> {
        Ok(self.last())
    }

    fn snapshot(&self, _request_index: u64, _to: u64) -> raft::Result<Snapshot> {
        Ok(self.snapshot.clone())
    }
}

#[cfg(test)]
mod tests {
    use raft::Storage;

    use super::*;

    fn entry(index: u64, term: u64) -> Entry {
        Entry { index, term, ..Default::default() }
    }

    #[test]
    fn appending_over_a_conflicting_suffix_replaces_it() {
        let mut log = MemoryLog::new(vec![1, 2, 3]);
        log.append(&[entry(1, 1), entry(2, 1), entry(3, 1)]);
        log.append(&[entry(2, 2)]);
        assert_eq!(log.last(), 2);
        assert_eq!(log.term(2).unwrap(), 2);
        assert_eq!(log.term(1).unwrap(), 1);
    }

    #[test]
    fn compaction_keeps_the_snapshot_term_and_refuses_older_reads() {
        let mut log = MemoryLog::new(vec![1]);
        log.append(&[entry(1, 1), entry(2, 1), entry(3, 2), entry(4, 2)]);
        log.compact(3, b"state".to_vec());
        assert_eq!(log.first(), 4);
        assert_eq!(log.term(3).unwrap(), 2);
        assert!(matches!(log.term(2), Err(raft::Error::Store(StorageError::Compacted))));
        let got = log.entries(4, 5, None, GetEntriesContext::empty(false)).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(&log.snapshot(0, 0).unwrap().data[..], b"state");
    }

    #[test]
    fn an_installed_snapshot_replaces_the_log() {
        let mut log = MemoryLog::new(vec![1, 2]);
        log.append(&[entry(1, 1), entry(2, 1)]);
        let mut snap = Snapshot::default();
        snap.mut_metadata().index = 10;
        snap.mut_metadata().term = 3;
        log.install_snapshot(snap);
        assert_eq!((log.first(), log.last()), (11, 10));
        assert_eq!(log.hard_state().commit, 10);
        assert_eq!(log.term(10).unwrap(), 3);
    }
}
