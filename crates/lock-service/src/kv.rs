//! # The replicated key-value store (etcd's data model)
//!
//! *etcd's v3 data model: "etcd versus other key-value stores" and the API reference
//! (etcd.io/docs/v3.4/learning/data_model, api); Go's `clientv3/concurrency` package, which
//! builds locks and elections out of the transactions below.*
//!
//! ## Keys, revisions, versions
//! A flat, ordered map from byte keys to byte values. Every write happens at a **revision**,
//! and ringleader's revision is the Raft index of the entry that made it: indexes strictly
//! increase, so revisions do too, and every replica computes the same ones. (etcd counts
//! writes; ringleader counts log entries, so revisions skip the entries that write nothing —
//! ticks, lease grants, locks.) Each live key carries etcd's bookkeeping:
//! `create_revision` (the revision that created it since it last did not exist),
//! `mod_revision` (the revision of its latest write), `version` (1 on creation, +1 on every
//! put; a delete removes the key, and a later put starts again at 1) and `lease` (0: none).
//! A transaction's writes all share its entry's revision.
//!
//! ## Leases
//! A put may attach the key to a live lease of the state machine; the key then lives as long as
//! the lease. When the lease is revoked or expires, every key attached to it is deleted at the
//! revision of the entry that ended the lease, producing DELETE events like any delete. A put
//! with an unknown lease is refused, changing nothing.
//!
//! ## Transactions
//! A [`Txn`] compares keys against values (version, create or mod revision, value, lease; equal,
//! greater, less, not equal; a compare over a range holds when it holds for every key in it)
//! and applies the `success` list of requests if every compare holds, else the `failure` list.
//! A lone put or delete is a transaction without compares. Requests are checked before anything
//! is written (an unknown lease, an `ignore_value` on a missing key), so a refused transaction
//! changes nothing.
//!
//! ## The event history
//! Every write appends [`KeyEvent`]s (PUT with the new record, DELETE with the key and its
//! revision; both with the previous record) to a bounded history: at most `history_limit`
//! events, dropped oldest revision first and whole revisions at a time. The history serves
//! watches from a past start revision and reads at a past revision (the state at revision `r`
//! is today's state with the later events undone). `first_kept` is the lowest revision from
//! which the history is complete; a watch or read from before it is "compacted", as in etcd
//! after a compaction. The history is part of the serialized state, so a restored snapshot
//! serves the same reads and watches.
//!
//! Everything is kept in ordered maps and a queue: the iteration order is part of the state.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde::{Deserialize, Serialize};

/// A lease's id: the Raft index of the entry that granted it. Keys may be attached to a
/// lease (`Put` with `lease`) and are deleted when it ends. Defined here, where the store needs
/// it, and re-exported by [`super::state`], which grants and ends leases.
pub type LeaseId = u64;

/// A revision: the Raft index of the entry that made a write.
pub type Revision = u64;

/// How many events the history keeps by default.
pub const DEFAULT_HISTORY_LIMIT: usize = 10_000;

/// The most requests a transaction may hold in each branch (etcd's default `--max-txn-ops`).
pub const MAX_TXN_OPS: usize = 128;

/// What one stored record (a live key or a record inside a history event) counts in
/// [`KvStore::bytes`] and [`KvStore::history_bytes`] beyond its key and value: its revisions,
/// version and lease, and the maps' own bookkeeping, roughly.
pub const RECORD_OVERHEAD: u64 = 64;

/// The most the history keeps, in bytes of records ([`KvStore::history_bytes`]), besides
/// its limit in events: the oldest revisions go first, and the newest revision always stays.
/// A replicated constant (every replica trims alike), so that the history's memory stays
/// bounded whatever the values' sizes.
pub const HISTORY_BYTES_LIMIT: u64 = 64 * 1024 * 1024;

/// What `kv` counts in [`KvStore::bytes`].
fn record_bytes(kv: &KeyValue) -> u64 {
    (kv.key.len() + kv.value.len()) as u64 + RECORD_OVERHEAD
}

/// What an event counts in [`KvStore::bytes`]: its record and its previous record.
fn event_bytes(e: &KeyEvent) -> u64 {
    record_bytes(&e.kv) + e.prev_kv.as_ref().map_or(0, record_bytes)
}

/// One live key and its bookkeeping (etcd's `mvccpb.KeyValue`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct KeyValue {
    /// The key.
    pub key: Vec<u8>,
    /// The revision that created the key (since it last did not exist).
    pub create_revision: Revision,
    /// The revision of the key's latest write.
    pub mod_revision: Revision,
    /// 1 on creation, +1 on every put.
    pub version: u64,
    /// The value.
    pub value: Vec<u8>,
    /// The lease the key is attached to (0: none).
    pub lease: LeaseId,
}

/// A PUT or a DELETE.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum EventKind {
    /// A key was created or changed.
    Put,
    /// A key was deleted.
    Delete,
}

/// One change of one key.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct KeyEvent {
    /// What happened.
    pub kind: EventKind,
    /// The record after a put; after a delete, only `key` and `mod_revision` (the delete's
    /// revision) are set, as etcd reports it.
    pub kv: KeyValue,
    /// The record before the change, if the key existed.
    pub prev_kv: Option<KeyValue>,
}

/// The order of a range's answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SortOrder {
    /// By key, ascending (unless the target is not the key: then ascending by the target).
    #[default]
    None,
    /// Ascending by the target.
    Ascend,
    /// Descending by the target.
    Descend,
}

/// What a range's answer is sorted by.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SortTarget {
    /// The key.
    #[default]
    Key,
    /// The version.
    Version,
    /// The create revision.
    Create,
    /// The mod revision.
    Mod,
    /// The value.
    Value,
}

/// A read of a key or a range of keys (etcd's `RangeRequest`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RangeRequest {
    /// The key, or the first key of the range.
    pub key: Vec<u8>,
    /// Empty: the key alone; `[0]`: every key from `key` on; otherwise the end (excluded).
    pub range_end: Vec<u8>,
    /// The most records to answer (0: no limit).
    pub limit: u64,
    /// The revision to read at (0: the latest).
    pub revision: Revision,
    /// The order of the answer.
    pub sort_order: SortOrder,
    /// What it is sorted by.
    pub sort_target: SortTarget,
    /// Answer keys without values.
    pub keys_only: bool,
    /// Answer only the count.
    pub count_only: bool,
    /// Only records with `mod_revision >=` this (0: no bound).
    pub min_mod_revision: Revision,
    /// Only records with `mod_revision <=` this (0: no bound).
    pub max_mod_revision: Revision,
    /// Only records with `create_revision >=` this (0: no bound).
    pub min_create_revision: Revision,
    /// Only records with `create_revision <=` this (0: no bound).
    pub max_create_revision: Revision,
}

/// The answer to a [`RangeRequest`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RangeResult {
    /// The records, filtered, sorted and limited.
    pub kvs: Vec<KeyValue>,
    /// True if the limit cut records off.
    pub more: bool,
    /// How many keys the range holds (before filters and limit).
    pub count: u64,
}

/// A write of one key (etcd's `PutRequest`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PutRequest {
    /// The key.
    pub key: Vec<u8>,
    /// The value.
    pub value: Vec<u8>,
    /// The lease to attach the key to (0: none).
    pub lease: LeaseId,
    /// Answer the record before the put.
    pub prev_kv: bool,
    /// Keep the key's current value (the key must exist; `value` must be empty).
    pub ignore_value: bool,
    /// Keep the key's current lease (the key must exist; `lease` must be 0).
    pub ignore_lease: bool,
}

/// A delete of a key or a range (etcd's `DeleteRangeRequest`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct DeleteRangeRequest {
    /// The key, or the first key of the range.
    pub key: Vec<u8>,
    /// As [`RangeRequest::range_end`].
    pub range_end: Vec<u8>,
    /// Answer the deleted records.
    pub prev_kv: bool,
}

/// One request of a transaction.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RequestOp {
    /// A read.
    Range(RangeRequest),
    /// A write.
    Put(PutRequest),
    /// A delete.
    DeleteRange(DeleteRangeRequest),
}

/// The answer to one [`RequestOp`].
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ResponseOp {
    /// A read's records.
    Range(RangeResult),
    /// A put's previous record, if asked for and the key existed.
    Put {
        /// The record before the put.
        prev_kv: Option<KeyValue>,
    },
    /// How many keys a delete removed, and (if asked for) their records.
    DeleteRange {
        /// The number of keys deleted.
        deleted: u64,
        /// Their records before the delete, if asked for.
        prev_kvs: Vec<KeyValue>,
    },
}

/// What a compare looks at, with the operand.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CompareTarget {
    /// The version (0: missing).
    Version(i64),
    /// The create revision (0: missing).
    Create(i64),
    /// The mod revision (0: missing).
    Mod(i64),
    /// The value, compared as bytes (a missing key never matches).
    Value(Vec<u8>),
    /// The lease (0: none or missing).
    Lease(i64),
}

/// How a compare relates the key's field to the operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CompareResult {
    /// Equal.
    Equal,
    /// The field is greater.
    Greater,
    /// The field is less.
    Less,
    /// Not equal.
    NotEqual,
}

/// One condition of a transaction (etcd's `Compare`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Compare {
    /// The key, or the first key of the range.
    pub key: Vec<u8>,
    /// As [`RangeRequest::range_end`]: the compare must hold for every key in the range.
    pub range_end: Vec<u8>,
    /// The field and its operand.
    pub target: CompareTarget,
    /// The relation.
    pub result: CompareResult,
}

/// A transaction (etcd's `TxnRequest`); a lone put or delete is one without compares.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Txn {
    /// The conditions, all of which must hold for `success` to apply.
    pub compare: Vec<Compare>,
    /// The requests applied if every compare holds.
    pub success: Vec<RequestOp>,
    /// The requests applied otherwise.
    pub failure: Vec<RequestOp>,
}

/// What a put of a key of `key` bytes and a value of `value` bytes adds to [`KvStore::bytes`]
/// at most: its live record. (The backend quota also counts a lease grant, a lock or a
/// candidacy as a put of its name and value, as etcd, which stores them as keys, does.)
pub fn put_growth(key: usize, value: usize) -> u64 {
    (key + value) as u64 + RECORD_OVERHEAD
}

impl Txn {
    /// How much a transaction may add to [`KvStore::bytes`] at most, counting what it writes
    /// (its puts, [`put_growth`]; a put over an existing key frees the old record, and a value
    /// kept with `ignore_value` is not counted). Reads and deletes add nothing. The larger
    /// branch counts.
    pub fn growth(&self) -> u64 {
        let branch = |ops: &[RequestOp]| -> u64 {
            ops.iter()
                .map(|op| match op {
                    RequestOp::Put(p) => put_growth(p.key.len(), p.value.len()),
                    _ => 0,
                })
                .sum()
        };
        branch(&self.success).max(branch(&self.failure))
    }
}

/// The outcome of a transaction.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TxnResult {
    /// True if every compare held (the `success` list was applied).
    pub succeeded: bool,
    /// The answers of the applied list, in order.
    pub responses: Vec<ResponseOp>,
}

/// Why a request was refused (nothing changed); the messages are etcd's.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, thiserror::Error)]
pub enum KvError {
    /// A put named a lease that does not exist.
    #[error("etcdserver: requested lease not found")]
    LeaseNotFound,
    /// A read or watch from a revision the history no longer holds.
    #[error("etcdserver: mvcc: required revision has been compacted")]
    Compacted {
        /// The lowest revision that may be read or watched from.
        first_kept: Revision,
    },
    /// A read at a revision not yet written.
    #[error("etcdserver: mvcc: required revision is a future revision")]
    FutureRevision,
    /// An empty key.
    #[error("etcdserver: key is not provided")]
    EmptyKey,
    /// `ignore_value` or `ignore_lease` on a key that does not exist.
    #[error("etcdserver: key not found")]
    KeyNotFound,
    /// A value given with `ignore_value`.
    #[error("etcdserver: value is provided")]
    ValueProvided,
    /// A lease given with `ignore_lease`.
    #[error("etcdserver: lease is provided")]
    LeaseProvided,
    /// More requests than [`MAX_TXN_OPS`] in a branch.
    #[error("etcdserver: too many operations in txn request")]
    TooManyOps,
}

/// The key-value store: live keys, which keys each lease holds, and the event history.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "KvStoreData")]
pub struct KvStore {
    keys: BTreeMap<Vec<u8>, KeyValue>,
    by_lease: BTreeMap<LeaseId, BTreeSet<Vec<u8>>>,
    history: VecDeque<(Revision, KeyEvent)>,
    history_limit: usize,
    first_kept: Revision,
    /// [`KvStore::bytes`], kept up to date by every change; not serialized (recounted when a
    /// store is read back).
    #[serde(skip_serializing)]
    bytes: u64,
    /// [`KvStore::history_bytes`], likewise.
    #[serde(skip_serializing)]
    history_bytes: u64,
}

/// A [`KvStore`] as serialized: everything but its byte count, which is recounted.
#[derive(Deserialize)]
struct KvStoreData {
    keys: BTreeMap<Vec<u8>, KeyValue>,
    by_lease: BTreeMap<LeaseId, BTreeSet<Vec<u8>>>,
    history: VecDeque<(Revision, KeyEvent)>,
    history_limit: usize,
    first_kept: Revision,
}

impl From<KvStoreData> for KvStore {
    fn from(d: KvStoreData) -> KvStore {
        let bytes = d.keys.values().map(record_bytes).sum::<u64>();
        let history_bytes = d.history.iter().map(|(_, e)| event_bytes(e)).sum::<u64>();
        KvStore {
            keys: d.keys,
            by_lease: d.by_lease,
            history: d.history,
            history_limit: d.history_limit,
            first_kept: d.first_kept,
            bytes,
            history_bytes,
        }
    }
}

impl Default for KvStore {
    fn default() -> Self {
        KvStore::new(DEFAULT_HISTORY_LIMIT)
    }
}

/// Whether `key` lies in the range `[start, end)` as etcd reads `range_end`.
pub fn in_range(key: &[u8], start: &[u8], end: &[u8]) -> bool {
    if end.is_empty() {
        key == start
    } else if end == [0] {
        key >= start
    } else {
        key >= start && key < end
    }
}

fn compare_holds(c: &Compare, kv: Option<&KeyValue>) -> bool {
    use std::cmp::Ordering;
    let zero = KeyValue::default();
    let ord: Ordering = match &c.target {
        CompareTarget::Value(v) => match kv {
            Some(kv) => kv.value.as_slice().cmp(v.as_slice()),
            None => return false,
        },
        CompareTarget::Version(v) => (kv.unwrap_or(&zero).version as i64).cmp(v),
        CompareTarget::Create(v) => (kv.unwrap_or(&zero).create_revision as i64).cmp(v),
        CompareTarget::Mod(v) => (kv.unwrap_or(&zero).mod_revision as i64).cmp(v),
        CompareTarget::Lease(v) => (kv.unwrap_or(&zero).lease as i64).cmp(v),
    };
    match c.result {
        CompareResult::Equal => ord == Ordering::Equal,
        CompareResult::Greater => ord == Ordering::Greater,
        CompareResult::Less => ord == Ordering::Less,
        CompareResult::NotEqual => ord != Ordering::Equal,
    }
}

impl KvStore {
    /// An empty store whose history keeps at most `history_limit` events (at least 1).
    pub fn new(history_limit: usize) -> Self {
        KvStore {
            keys: BTreeMap::new(),
            by_lease: BTreeMap::new(),
            history: VecDeque::new(),
            history_limit: history_limit.max(1),
            first_kept: 1,
            bytes: 0,
            history_bytes: 0,
        }
    }

    /// The store's size as the backend quota counts it (etcd's database size in use): the
    /// keys and values of the live records, plus [`RECORD_OVERHEAD`] per record. A delete
    /// makes room at once. (The history is bounded apart: [`KvStore::history_bytes`].)
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// What the history's records take, counted as [`KvStore::bytes`] counts them (an event
    /// counts its record and its previous record); at most [`HISTORY_BYTES_LIMIT`] unless its
    /// newest revision alone is larger.
    pub fn history_bytes(&self) -> u64 {
        self.history_bytes
    }

    /// The lowest revision reads and watches may start from (etcd's compact revision).
    pub fn first_kept(&self) -> Revision {
        self.first_kept
    }

    /// How many events the history keeps at most.
    pub fn history_limit(&self) -> usize {
        self.history_limit
    }

    /// How many events the history holds now.
    pub fn history_len(&self) -> usize {
        self.history.len()
    }

    /// The live record of `key`.
    pub fn get(&self, key: &[u8]) -> Option<&KeyValue> {
        self.keys.get(key)
    }

    /// The number of live keys.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// True if no key lives.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The keys attached to `lease`, in key order.
    pub fn keys_of_lease(&self, lease: LeaseId) -> Vec<Vec<u8>> {
        self.by_lease.get(&lease).map(|k| k.iter().cloned().collect()).unwrap_or_default()
    }

    fn live_in_range<'a>(
        &'a self,
        start: &'a [u8],
        end: &'a [u8],
    ) -> impl Iterator<Item = &'a KeyValue> + 'a {
        let it: Box<dyn Iterator<Item = (&Vec<u8>, &KeyValue)>> = if end.is_empty() {
            Box::new(self.keys.get_key_value(start).into_iter())
        } else if end == [0] {
            Box::new(self.keys.range(start.to_vec()..))
        } else if start < end {
            Box::new(self.keys.range(start.to_vec()..end.to_vec()))
        } else {
            Box::new(std::iter::empty())
        };
        it.map(|(_, kv)| kv)
    }

    /// The records in the range at revision `at` (`current`: the latest revision).
    fn records_at(&self, start: &[u8], end: &[u8], at: Revision, current: Revision) -> Vec<KeyValue> {
        if at >= current {
            return self.live_in_range(start, end).cloned().collect();
        }
        // Today's records, with every later event undone: the first event after `at` on a key
        // holds the key's record at `at` as its `prev_kv`.
        let mut records: BTreeMap<Vec<u8>, Option<KeyValue>> = BTreeMap::new();
        let from = self.history.partition_point(|(r, _)| *r <= at);
        for (_, e) in self.history.range(from..) {
            if in_range(&e.kv.key, start, end) && !records.contains_key(&e.kv.key) {
                records.insert(e.kv.key.clone(), e.prev_kv.clone());
            }
        }
        for kv in self.live_in_range(start, end) {
            records.entry(kv.key.clone()).or_insert_with(|| Some(kv.clone()));
        }
        records.into_values().flatten().collect()
    }

    /// Reads a key or a range, at the latest revision `current` or at `req.revision`.
    pub fn range(&self, req: &RangeRequest, current: Revision) -> Result<RangeResult, KvError> {
        if req.key.is_empty() {
            return Err(KvError::EmptyKey);
        }
        let at = if req.revision == 0 { current } else { req.revision };
        if at > current {
            return Err(KvError::FutureRevision);
        }
        // The latest revision is always readable, even before the first write (when it is 0,
        // below `first_kept`).
        if req.revision != 0 && at < self.first_kept {
            return Err(KvError::Compacted { first_kept: self.first_kept });
        }
        let all = self.records_at(&req.key, &req.range_end, at, current);
        let count = all.len() as u64;
        let bound = |v: Revision, min: Revision, max: Revision| v >= min && (max == 0 || v <= max);
        let mut kvs: Vec<KeyValue> = all
            .into_iter()
            .filter(|kv| {
                bound(kv.mod_revision, req.min_mod_revision, req.max_mod_revision)
                    && bound(kv.create_revision, req.min_create_revision, req.max_create_revision)
            })
            .collect();
        let order = match (req.sort_order, req.sort_target) {
            (SortOrder::None, SortTarget::Key) => SortOrder::None,
            (SortOrder::None, _) => SortOrder::Ascend,
            (o, _) => o,
        };
        if order != SortOrder::None {
            // Stable sorts on key-ordered records: ties stay in key order.
            match req.sort_target {
                SortTarget::Key => kvs.sort_by(|a, b| a.key.cmp(&b.key)),
                SortTarget::Version => kvs.sort_by_key(|kv| kv.version),
                SortTarget::Create => kvs.sort_by_key(|kv| kv.create_revision),
                SortTarget::Mod => kvs.sort_by_key(|kv| kv.mod_revision),
                SortTarget::Value => kvs.sort_by(|a, b| a.value.cmp(&b.value)),
            }
            if order == SortOrder::Descend {
                kvs.reverse();
            }
        }
        let mut more = false;
        if req.limit > 0 && kvs.len() as u64 > req.limit {
            kvs.truncate(req.limit as usize);
            more = true;
        }
        if req.count_only {
            kvs.clear();
        } else if req.keys_only {
            for kv in &mut kvs {
                kv.value.clear();
            }
        }
        Ok(RangeResult { kvs, more, count })
    }

    /// True if every compare of `txn` holds on the live keys.
    pub fn compares_hold(&self, compares: &[Compare]) -> bool {
        compares.iter().all(|c| {
            if c.range_end.is_empty() {
                return compare_holds(c, self.keys.get(&c.key));
            }
            let mut kvs = self.live_in_range(&c.key, &c.range_end).peekable();
            if kvs.peek().is_none() {
                return compare_holds(c, None);
            }
            kvs.all(|kv| compare_holds(c, Some(kv)))
        })
    }

    /// Checks a branch of a transaction against the state before it: nothing is written if
    /// any request would be refused.
    fn check(
        &self,
        revision: Revision,
        ops: &[RequestOp],
        lease_alive: &dyn Fn(LeaseId) -> bool,
    ) -> Result<(), KvError> {
        if ops.len() > MAX_TXN_OPS {
            return Err(KvError::TooManyOps);
        }
        for op in ops {
            match op {
                RequestOp::Range(r) if r.key.is_empty() => return Err(KvError::EmptyKey),
                RequestOp::Range(r) if r.revision > revision => return Err(KvError::FutureRevision),
                RequestOp::Range(r) if r.revision != 0 && r.revision < self.first_kept => {
                    return Err(KvError::Compacted { first_kept: self.first_kept });
                }
                RequestOp::DeleteRange(d) if d.key.is_empty() => return Err(KvError::EmptyKey),
                RequestOp::Put(p) => {
                    if p.key.is_empty() {
                        return Err(KvError::EmptyKey);
                    }
                    if p.ignore_value && !p.value.is_empty() {
                        return Err(KvError::ValueProvided);
                    }
                    if p.ignore_lease && p.lease != 0 {
                        return Err(KvError::LeaseProvided);
                    }
                    if (p.ignore_value || p.ignore_lease) && !self.keys.contains_key(&p.key) {
                        return Err(KvError::KeyNotFound);
                    }
                    if p.lease != 0 && !lease_alive(p.lease) {
                        return Err(KvError::LeaseNotFound);
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Applies transaction `txn` at `revision`; `lease_alive` says which leases exist. Returns
    /// the outcome and the events it produced (already in the history). A refused transaction
    /// changes nothing.
    pub fn txn(
        &mut self,
        revision: Revision,
        txn: &Txn,
        lease_alive: &dyn Fn(LeaseId) -> bool,
    ) -> Result<(TxnResult, Vec<KeyEvent>), KvError> {
        if txn.compare.len() > MAX_TXN_OPS {
            return Err(KvError::TooManyOps);
        }
        let succeeded = self.compares_hold(&txn.compare);
        let ops = if succeeded { &txn.success } else { &txn.failure };
        self.check(revision, ops, lease_alive)?;
        // Reads inside the transaction see its earlier writes: they read the live keys (or,
        // at a past revision, the history, which already holds this revision's events).
        let mut responses = Vec::with_capacity(ops.len());
        let mut events = Vec::new();
        for op in ops {
            responses.push(match op {
                // Checked above: the read cannot be refused.
                RequestOp::Range(r) => ResponseOp::Range(self.range(r, revision).unwrap_or_default()),
                RequestOp::Put(p) => {
                    let (prev, e) = self.put(revision, p);
                    self.record(revision, &e);
                    events.push(e);
                    ResponseOp::Put { prev_kv: if p.prev_kv { prev } else { None } }
                }
                RequestOp::DeleteRange(d) => {
                    let keys: Vec<Vec<u8>> =
                        self.live_in_range(&d.key, &d.range_end).map(|kv| kv.key.clone()).collect();
                    let mut prev_kvs = Vec::new();
                    for key in &keys {
                        let e = self.delete(revision, key);
                        self.record(revision, &e);
                        if d.prev_kv {
                            prev_kvs.extend(e.prev_kv.clone());
                        }
                        events.push(e);
                    }
                    ResponseOp::DeleteRange { deleted: keys.len() as u64, prev_kvs }
                }
            });
        }
        self.trim();
        Ok((TxnResult { succeeded, responses }, events))
    }

    fn put(&mut self, revision: Revision, p: &PutRequest) -> (Option<KeyValue>, KeyEvent) {
        let prev = self.keys.get(&p.key).cloned();
        let lease = if p.ignore_lease { prev.as_ref().map_or(0, |kv| kv.lease) } else { p.lease };
        let value = if p.ignore_value {
            prev.as_ref().map(|kv| kv.value.clone()).unwrap_or_default()
        } else {
            p.value.clone()
        };
        let kv = KeyValue {
            key: p.key.clone(),
            create_revision: prev.as_ref().map_or(revision, |kv| kv.create_revision),
            mod_revision: revision,
            version: prev.as_ref().map_or(1, |kv| kv.version + 1),
            value,
            lease,
        };
        if let Some(old) = prev.as_ref().map(|kv| kv.lease).filter(|l| *l != 0 && *l != lease) {
            self.detach(old, &p.key);
        }
        if lease != 0 {
            self.by_lease.entry(lease).or_default().insert(p.key.clone());
        }
        self.bytes += record_bytes(&kv);
        self.bytes -= prev.as_ref().map_or(0, record_bytes);
        self.keys.insert(p.key.clone(), kv.clone());
        (prev.clone(), KeyEvent { kind: EventKind::Put, kv, prev_kv: prev })
    }

    fn delete(&mut self, revision: Revision, key: &[u8]) -> KeyEvent {
        let prev = self.keys.remove(key);
        self.bytes -= prev.as_ref().map_or(0, record_bytes);
        if let Some(l) = prev.as_ref().map(|kv| kv.lease).filter(|l| *l != 0) {
            self.detach(l, key);
        }
        let kv = KeyValue { key: key.to_vec(), mod_revision: revision, ..KeyValue::default() };
        KeyEvent { kind: EventKind::Delete, kv, prev_kv: prev }
    }

    fn detach(&mut self, lease: LeaseId, key: &[u8]) {
        if let Some(keys) = self.by_lease.get_mut(&lease) {
            keys.remove(key);
            if keys.is_empty() {
                self.by_lease.remove(&lease);
            }
        }
    }

    /// Deletes every key attached to `lease` (which ended) at `revision`; returns the events.
    pub fn drop_lease(&mut self, revision: Revision, lease: LeaseId) -> Vec<KeyEvent> {
        let keys = self.by_lease.remove(&lease).unwrap_or_default();
        let events: Vec<KeyEvent> = keys.iter().map(|k| self.delete(revision, k)).collect();
        for e in &events {
            self.record(revision, e);
        }
        self.trim();
        events
    }

    fn record(&mut self, revision: Revision, e: &KeyEvent) {
        self.history_bytes += event_bytes(e);
        self.history.push_back((revision, e.clone()));
    }

    /// Drops the oldest revisions, whole, until the history is within its limits: at most
    /// `history_limit` events, and at most [`HISTORY_BYTES_LIMIT`] bytes unless only the newest
    /// revision is left.
    fn trim(&mut self) {
        while let (Some(&(oldest, _)), Some(&(newest, _))) = (self.history.front(), self.history.back()) {
            let too_many = self.history.len() > self.history_limit;
            let too_big = self.history_bytes > HISTORY_BYTES_LIMIT && oldest != newest;
            if !too_many && !too_big {
                break;
            }
            while self.history.front().is_some_and(|(r, _)| *r == oldest) {
                if let Some((_, e)) = self.history.pop_front() {
                    self.history_bytes -= event_bytes(&e);
                }
            }
            self.first_kept = oldest + 1;
        }
    }

    /// The events from revision `start` on, in order, with their revisions; refused when the
    /// history no longer holds all of them.
    pub fn events_since(&self, start: Revision) -> Result<Vec<(Revision, KeyEvent)>, KvError> {
        if start < self.first_kept {
            return Err(KvError::Compacted { first_kept: self.first_kept });
        }
        let from = self.history.partition_point(|(r, _)| *r < start);
        Ok(self.history.range(from..).cloned().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(key: &str, value: &str) -> RequestOp {
        RequestOp::Put(PutRequest { key: key.into(), value: value.into(), ..Default::default() })
    }

    fn put_lease(key: &str, value: &str, lease: LeaseId) -> RequestOp {
        RequestOp::Put(PutRequest { key: key.into(), value: value.into(), lease, ..Default::default() })
    }

    fn del(key: &str, end: &str) -> RequestOp {
        RequestOp::DeleteRange(DeleteRangeRequest { key: key.into(), range_end: end.into(), prev_kv: true })
    }

    fn get(key: &str) -> RangeRequest {
        RangeRequest { key: key.into(), ..Default::default() }
    }

    fn prefix(key: &str) -> RangeRequest {
        let mut end = key.as_bytes().to_vec();
        *end.last_mut().unwrap() += 1;
        RangeRequest { key: key.into(), range_end: end, ..Default::default() }
    }

    fn all_leases(_: LeaseId) -> bool {
        true
    }

    /// Applies `ops` as one transaction without compares at `rev`.
    fn write(kv: &mut KvStore, rev: Revision, ops: Vec<RequestOp>) -> TxnResult {
        kv.txn(rev, &Txn { success: ops, ..Default::default() }, &all_leases).unwrap().0
    }

    fn keys(r: &RangeResult) -> Vec<String> {
        r.kvs.iter().map(|kv| String::from_utf8(kv.key.clone()).unwrap()).collect()
    }

    #[test]
    fn revisions_versions_and_create_revision_follow_etcd() {
        let mut kv = KvStore::default();
        write(&mut kv, 3, vec![put("a", "1")]);
        write(&mut kv, 5, vec![put("a", "2")]);
        let a = kv.get(b"a").unwrap().clone();
        assert_eq!((a.create_revision, a.mod_revision, a.version, a.value), (3, 5, 2, b"2".to_vec()));
        write(&mut kv, 6, vec![del("a", "")]);
        assert_eq!(kv.get(b"a"), None);
        write(&mut kv, 9, vec![put("a", "3")]);
        let a = kv.get(b"a").unwrap();
        assert_eq!((a.create_revision, a.mod_revision, a.version), (9, 9, 1), "a delete starts the key anew");
    }

    #[test]
    fn a_transactions_writes_share_its_revision() {
        let mut kv = KvStore::default();
        let (r, events) = kv
            .txn(7, &Txn { success: vec![put("a", "1"), put("b", "2")], ..Default::default() }, &all_leases)
            .unwrap();
        assert!(r.succeeded);
        assert_eq!(events.len(), 2);
        assert!(events.iter().all(|e| e.kv.mod_revision == 7 && e.kv.create_revision == 7));
        assert_eq!(kv.history_len(), 2);
    }

    #[test]
    fn put_answers_prev_kv_and_ignore_value_and_ignore_lease_keep_fields() {
        let mut kv = KvStore::default();
        write(&mut kv, 1, vec![put_lease("a", "v", 4)]);
        let p = PutRequest {
            key: "a".into(),
            prev_kv: true,
            ignore_value: true,
            ignore_lease: true,
            ..Default::default()
        };
        let r = write(&mut kv, 2, vec![RequestOp::Put(p)]);
        let ResponseOp::Put { prev_kv: Some(prev) } = &r.responses[0] else { panic!("{r:?}") };
        assert_eq!(prev.value, b"v");
        let a = kv.get(b"a").unwrap();
        assert_eq!((a.value.as_slice(), a.lease, a.version), (&b"v"[..], 4, 2));
        for (p, err) in [
            (PutRequest { key: "zz".into(), ignore_value: true, ..Default::default() }, KvError::KeyNotFound),
            (
                PutRequest { key: "a".into(), value: "x".into(), ignore_value: true, ..Default::default() },
                KvError::ValueProvided,
            ),
            (
                PutRequest { key: "a".into(), lease: 4, ignore_lease: true, ..Default::default() },
                KvError::LeaseProvided,
            ),
            (PutRequest { key: vec![], ..Default::default() }, KvError::EmptyKey),
        ] {
            let txn = Txn { success: vec![RequestOp::Put(p)], ..Default::default() };
            assert_eq!(kv.txn(3, &txn, &all_leases).unwrap_err(), err);
        }
    }

    #[test]
    fn put_with_an_unknown_lease_is_refused_and_changes_nothing() {
        let mut kv = KvStore::default();
        let before = kv.clone();
        let txn = Txn { success: vec![put("a", "1"), put_lease("b", "2", 9)], ..Default::default() };
        assert_eq!(kv.txn(1, &txn, &|l| l != 9).unwrap_err(), KvError::LeaseNotFound);
        assert_eq!(kv, before);
    }

    #[test]
    fn an_ended_lease_deletes_its_keys_with_delete_events() {
        let mut kv = KvStore::default();
        write(&mut kv, 1, vec![put_lease("a", "1", 5), put_lease("b", "2", 5), put_lease("c", "3", 6)]);
        write(&mut kv, 2, vec![put("b", "plain")]); // b leaves lease 5
        assert_eq!(kv.keys_of_lease(5), vec![b"a".to_vec()]);
        let events = kv.drop_lease(4, 5);
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].kind, EventKind::Delete);
        assert_eq!((events[0].kv.key.as_slice(), events[0].kv.mod_revision), (&b"a"[..], 4));
        assert_eq!(events[0].prev_kv.as_ref().unwrap().value, b"1");
        assert_eq!(kv.get(b"a"), None);
        assert!(kv.get(b"b").is_some() && kv.get(b"c").is_some());
        assert!(kv.drop_lease(5, 5).is_empty());
    }

    fn cmp(key: &str, target: CompareTarget, result: CompareResult) -> Compare {
        Compare { key: key.into(), range_end: vec![], target, result }
    }

    #[test]
    fn each_compare_target_and_result() {
        use CompareResult::*;
        use CompareTarget::*;
        let mut kv = KvStore::default();
        write(&mut kv, 2, vec![put_lease("a", "m", 7)]);
        write(&mut kv, 4, vec![put_lease("a", "m", 7)]); // version 2, create 2, mod 4
        let cases = [
            (Version(2), [true, false, false, false]),
            (Version(1), [false, true, false, true]),
            (Create(2), [true, false, false, false]),
            (Create(3), [false, false, true, true]),
            (Mod(4), [true, false, false, false]),
            (Mod(3), [false, true, false, true]),
            (Value(b"m".to_vec()), [true, false, false, false]),
            (Value(b"z".to_vec()), [false, false, true, true]),
            (Value(b"a".to_vec()), [false, true, false, true]),
            (Lease(7), [true, false, false, false]),
            (Lease(0), [false, true, false, true]),
        ];
        for (target, expect) in cases {
            for (result, want) in [Equal, Greater, Less, NotEqual].into_iter().zip(expect) {
                assert_eq!(
                    kv.compares_hold(&[cmp("a", target.clone(), result)]),
                    want,
                    "{target:?} {result:?}"
                );
            }
        }
        // A missing key compares as zeros, and never matches a value.
        assert!(kv.compares_hold(&[cmp("nope", Create(0), Equal)]));
        assert!(!kv.compares_hold(&[cmp("nope", Value(vec![]), Equal)]));
        assert!(!kv.compares_hold(&[cmp("nope", Value(vec![]), NotEqual)]));
    }

    #[test]
    fn a_compare_over_a_range_must_hold_for_every_key_and_picks_the_branch() {
        use CompareResult::*;
        let mut kv = KvStore::default();
        write(&mut kv, 1, vec![put("p/a", "1"), put("p/b", "2"), put("q", "9")]);
        let over = |v: &str, r| Compare {
            key: "p/".into(),
            range_end: "p0".into(),
            target: CompareTarget::Value(v.into()),
            result: r,
        };
        assert!(kv.compares_hold(&[over("0", Greater)]));
        assert!(!kv.compares_hold(&[over("1", Greater)]));
        let txn = Txn {
            compare: vec![over("1", Greater)],
            success: vec![put("s", "")],
            failure: vec![put("f", "")],
        };
        let (r, _) = kv.txn(2, &txn, &all_leases).unwrap();
        assert!(!r.succeeded);
        assert!(kv.get(b"f").is_some() && kv.get(b"s").is_none());
    }

    #[test]
    fn range_forms_filters_sorting_limit_and_count() {
        let mut kv = KvStore::default();
        write(&mut kv, 1, vec![put("k/c", "1")]);
        write(&mut kv, 2, vec![put("k/a", "3")]);
        write(&mut kv, 3, vec![put("k/b", "2"), put("z", "0")]);
        write(&mut kv, 4, vec![put("k/c", "4")]);
        assert_eq!(keys(&kv.range(&get("k/a"), 4).unwrap()), ["k/a"]);
        assert_eq!(keys(&kv.range(&prefix("k/"), 4).unwrap()), ["k/a", "k/b", "k/c"]);
        let from = RangeRequest { key: "k/b".into(), range_end: vec![0], ..Default::default() };
        assert_eq!(keys(&kv.range(&from, 4).unwrap()), ["k/b", "k/c", "z"]);
        let all = RangeRequest { key: vec![0], range_end: vec![0], ..Default::default() };
        assert_eq!(kv.range(&all, 4).unwrap().count, 4);
        // FirstCreate / LastCreate, as the concurrency package asks.
        let first = RangeRequest {
            sort_target: SortTarget::Create,
            sort_order: SortOrder::Ascend,
            limit: 1,
            ..prefix("k/")
        };
        let r = kv.range(&first, 4).unwrap();
        assert_eq!((keys(&r), r.more, r.count), (vec!["k/c".to_string()], true, 3));
        let last = RangeRequest { sort_order: SortOrder::Descend, ..first.clone() };
        assert_eq!(keys(&kv.range(&last, 4).unwrap()), ["k/b"]);
        let max_create = RangeRequest { max_create_revision: 2, ..last };
        assert_eq!(keys(&kv.range(&max_create, 4).unwrap()), ["k/a"]);
        // A target other than the key sorts ascending even without an order.
        let by_value = RangeRequest { sort_target: SortTarget::Value, ..prefix("k/") };
        assert_eq!(keys(&kv.range(&by_value, 4).unwrap()), ["k/b", "k/a", "k/c"]);
        let by_mod =
            RangeRequest { sort_target: SortTarget::Mod, sort_order: SortOrder::Descend, ..prefix("k/") };
        assert_eq!(keys(&kv.range(&by_mod, 4).unwrap()), ["k/c", "k/b", "k/a"]);
        let by_version =
            RangeRequest { sort_target: SortTarget::Version, sort_order: SortOrder::Descend, ..prefix("k/") };
        assert_eq!(keys(&kv.range(&by_version, 4).unwrap())[0], "k/c");
        let mods = RangeRequest { min_mod_revision: 3, ..prefix("k/") };
        assert_eq!(keys(&kv.range(&mods, 4).unwrap()), ["k/b", "k/c"]);
        let mods = RangeRequest { max_mod_revision: 2, ..prefix("k/") };
        assert_eq!(keys(&kv.range(&mods, 4).unwrap()), ["k/a"]);
        let creates = RangeRequest { min_create_revision: 2, ..prefix("k/") };
        assert_eq!(keys(&kv.range(&creates, 4).unwrap()), ["k/a", "k/b"]);
        let limited = RangeRequest { limit: 2, ..prefix("k/") };
        let r = kv.range(&limited, 4).unwrap();
        assert_eq!((keys(&r), r.more, r.count), (vec!["k/a".to_string(), "k/b".to_string()], true, 3));
        let r = kv.range(&RangeRequest { keys_only: true, ..prefix("k/") }, 4).unwrap();
        assert!(r.kvs.iter().all(|kv| kv.value.is_empty()) && r.kvs.len() == 3);
        let r = kv.range(&RangeRequest { count_only: true, ..prefix("k/") }, 4).unwrap();
        assert_eq!((r.kvs.len(), r.count), (0, 3));
        assert_eq!(kv.range(&get(""), 4).unwrap_err(), KvError::EmptyKey);
    }

    #[test]
    fn historical_reads_undo_later_events() {
        let mut kv = KvStore::default();
        write(&mut kv, 1, vec![put("a", "1")]);
        write(&mut kv, 3, vec![put("a", "2"), put("b", "x")]);
        write(&mut kv, 5, vec![del("b", "")]);
        write(&mut kv, 6, vec![put("c", "y")]);
        let at = |rev| {
            let r = kv
                .range(
                    &RangeRequest { key: vec![0], range_end: vec![0], revision: rev, ..Default::default() },
                    6,
                )
                .unwrap();
            r.kvs
                .iter()
                .map(|kv| format!("{}={}", kv.key[0] as char, kv.value[0] as char))
                .collect::<Vec<_>>()
        };
        assert_eq!(at(1), ["a=1"]);
        assert_eq!(at(2), ["a=1"]);
        assert_eq!(at(3), ["a=2", "b=x"]);
        assert_eq!(at(5), ["a=2"]);
        assert_eq!(at(6), ["a=2", "c=y"]);
        assert_eq!(
            kv.range(&RangeRequest { revision: 7, ..get("a") }, 6).unwrap_err(),
            KvError::FutureRevision
        );
    }

    #[test]
    fn the_history_keeps_whole_revisions_within_its_limit() {
        let mut kv = KvStore::new(3);
        write(&mut kv, 1, vec![put("a", "1")]);
        write(&mut kv, 2, vec![put("a", "2"), put("b", "1")]);
        assert_eq!((kv.history_len(), kv.first_kept()), (3, 1));
        write(&mut kv, 4, vec![put("c", "1")]); // 4 events: revision 1 goes
        assert_eq!((kv.history_len(), kv.first_kept()), (3, 2));
        write(&mut kv, 5, vec![put("d", "1")]); // revision 2 goes, both its events
        assert_eq!((kv.history_len(), kv.first_kept()), (2, 3));
        assert_eq!(kv.events_since(2).unwrap_err(), KvError::Compacted { first_kept: 3 });
        let since: Vec<Revision> = kv.events_since(3).unwrap().iter().map(|(r, _)| *r).collect();
        assert_eq!(since, [4, 5]);
        assert_eq!(
            kv.range(&RangeRequest { revision: 2, ..get("a") }, 5).unwrap_err(),
            KvError::Compacted { first_kept: 3 }
        );
        assert_eq!(kv.range(&RangeRequest { revision: 3, ..get("a") }, 5).unwrap().kvs[0].value, b"2");
    }

    #[test]
    fn too_many_operations_are_refused() {
        let mut kv = KvStore::default();
        let txn = Txn {
            success: (0..=MAX_TXN_OPS).map(|i| put(&format!("k{i}"), "")).collect(),
            ..Default::default()
        };
        assert_eq!(kv.txn(1, &txn, &all_leases).unwrap_err(), KvError::TooManyOps);
        assert!(kv.is_empty());
    }

    /// The byte count follows every change (puts, overwrites, deletes, lease ends, history
    /// trimming), equals a recount, and is recounted when a store is read back.
    #[test]
    fn the_byte_count_follows_every_change_and_survives_serialization() {
        let recount = |kv: &KvStore| {
            (
                kv.keys.values().map(record_bytes).sum::<u64>(),
                kv.history.iter().map(|(_, e)| event_bytes(e)).sum::<u64>(),
            )
        };
        let mut kv = KvStore::new(4);
        assert_eq!(kv.bytes(), 0);
        let one = Txn { success: vec![put("a", "12345")], ..Default::default() };
        assert_eq!(one.growth(), 6 + RECORD_OVERHEAD);
        kv.txn(1, &one, &all_leases).unwrap();
        assert_eq!(kv.bytes(), one.growth(), "a new key: its live record");
        assert_eq!(kv.history_bytes(), one.growth(), "and its event");
        let steps: Vec<Txn> = vec![
            Txn { success: vec![put("a", "1234567890")], ..Default::default() },
            Txn { success: vec![put_lease("b", "x", 9), put("c", "yy")], ..Default::default() },
            Txn { success: vec![del("a", "")], ..Default::default() },
            Txn { success: vec![del("b", "d")], ..Default::default() },
        ];
        for (i, t) in steps.iter().enumerate() {
            kv.txn(i as u64 + 2, t, &all_leases).unwrap();
            assert_eq!((kv.bytes(), kv.history_bytes()), recount(&kv), "after step {i}");
        }
        kv.txn(6, &Txn { success: vec![put_lease("e", "v", 7)], ..Default::default() }, &all_leases).unwrap();
        kv.drop_lease(7, 7);
        assert_eq!((kv.bytes(), kv.history_bytes()), recount(&kv), "after a lease ended");
        assert_eq!(kv.bytes(), 0, "every key was deleted or went with its lease");
        assert!(kv.history_len() <= 4, "trimmed");
        let json = serde_json::to_string(&kv).unwrap();
        assert!(!json.contains("bytes"), "the count is not serialized: {json}");
        let back: KvStore = serde_json::from_str(&json).unwrap();
        assert_eq!((back.bytes(), back.history_bytes()), (kv.bytes(), kv.history_bytes()));
        assert_eq!(back, kv);
    }

    /// The history keeps at most HISTORY_BYTES_LIMIT bytes, oldest revisions first, and always
    /// its newest revision.
    #[test]
    fn the_history_is_bounded_in_bytes_and_keeps_its_newest_revision() {
        let mut kv = KvStore::default();
        let big = "x".repeat((HISTORY_BYTES_LIMIT / 3) as usize);
        for r in 1..=4 {
            write(&mut kv, r, vec![put(&format!("k{r}"), &big)]);
            assert!(kv.history_bytes() <= HISTORY_BYTES_LIMIT, "revision {r}: {}", kv.history_bytes());
        }
        assert_eq!(kv.first_kept(), 3, "revisions 1-2 went; 3-4 (2/3 of the limit and a bit) stay");
        // Revision 5 alone is over the limit: everything older goes, it stays.
        write(&mut kv, 5, vec![del("k1", ""), del("k2", ""), del("k3", ""), del("k4", "")]);
        assert!(kv.history_bytes() > HISTORY_BYTES_LIMIT);
        assert_eq!((kv.history_len(), kv.first_kept()), (4, 5), "only the newest revision is left");
        assert!(kv.is_empty());
        assert_eq!(kv.bytes(), 0);
    }
}
