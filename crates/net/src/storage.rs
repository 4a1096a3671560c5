//! Stable storage: what a node keeps across a crash (`node --data-dir DIR`).
//!
//! The simulator crashes a node by keeping its state aside and, at recovery, calling
//! [`Process::on_recover`](ringleader_core::Process::on_recover) on that very state; the
//! algorithm then forgets what is volatile and keeps what its textbook puts on stable storage
//! (a fencing counter, a term and a vote). A real node does the same with a file: the driver
//! writes the algorithm's whole state (every algorithm's state is `serde`) to `DIR/state.json`,
//! and a node that starts with such a file loads it and calls `on_recover` on it instead of
//! `on_start`.
//!
//! **Durably before acting.** The driver saves after a handler has run and before it carries out
//! the handler's outbox, so no message, no event and no HTTP answer (a fencing token) leaves the
//! node before the state that produced it is on disk. A save writes a temporary file in `DIR`,
//! `fsync`s it, renames it over `state.json` (atomic on POSIX file systems) and `fsync`s `DIR`,
//! so that after a crash the file holds the old state or the new one, never a mixture.
//!
//! **Only when what survives changed.** Most steps change only volatile state (a heartbeat
//! moves a detector's deadline). [`Storage::save`] therefore compares the state's *recovered
//! form* — a clone on which `on_recover` ran with a fixed context — with the one last written,
//! and writes only when it differs. By the `on_recover` contract the recovered form depends only
//! on what the algorithm keeps on stable storage, so a step that leaves it alone needs no write:
//! recovering from the older file gives the same node.
//!
//! The file also names the format version, the algorithm, the node's id, the membership and the
//! parameters: a node refuses to start on a file written for anything else, or on a file it
//! cannot read, rather than start afresh over it (`--wipe-data` deletes it first, on purpose).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use ringleader_algorithms::PlainAlgorithm;
use ringleader_core::{Context, NodeId, Outbox, Topology, Uid};
use serde::{Deserialize, Serialize};

/// The version of the state file's layout; a file of another version is refused.
pub const FORMAT: u32 = 1;

/// The state file's name inside the data directory.
pub const STATE_FILE: &str = "state.json";

/// What a state file was written for; a node loads only a file written for itself.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    /// [`FORMAT`] when written.
    pub format: u32,
    /// The algorithm's name.
    pub algorithm: String,
    /// The node's id.
    pub id: Uid,
    /// Every member's id, ascending.
    pub members: Vec<Uid>,
    /// The algorithm's parameters as given.
    pub params: BTreeMap<String, String>,
}

/// The state file: its identity and the algorithm's state.
#[derive(Serialize)]
struct FileOut<'a, S> {
    #[serde(flatten)]
    identity: &'a Identity,
    state: &'a S,
}

/// Why stable storage failed.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// A file system operation failed.
    #[error("data dir {}: {what}: {source}", dir.display())]
    Io {
        /// The data directory.
        dir: PathBuf,
        /// What was being done.
        what: &'static str,
        /// Why it failed.
        source: std::io::Error,
    },
    /// The state file is not a readable state file (truncated, edited, not JSON).
    #[error(
        "{}: not a readable ringleader state file ({detail}); the node does not start over it \
         (move it away, or give --wipe-data to start with an empty memory)",
        path.display()
    )]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        detail: String,
    },
    /// The state file was written for another node, algorithm, membership, parameters or format.
    #[error(
        "{}: written for {what} {found}, this node has {expected}; the node does not start over \
         it (use another --data-dir, or give --wipe-data to start with an empty memory)",
        path.display()
    )]
    Foreign {
        /// The file.
        path: PathBuf,
        /// Which field differs.
        what: &'static str,
        /// The file's value.
        found: String,
        /// This node's value.
        expected: String,
    },
    /// The state could not be serialized.
    #[error("serializing the state: {0}")]
    Serialize(String),
}

/// A node's data directory: where its state is written, and what was last written.
pub struct Storage {
    dir: PathBuf,
    identity: Identity,
    /// The recovered form (see the [module](self) documentation) of the state last written.
    last: Option<Vec<u8>>,
}

impl Storage {
    /// Opens (creating it if needed) the data directory `dir` of the node `identity` describes;
    /// with `wipe`, deletes its state file first. Returns the storage and the state the file
    /// holds, if any.
    pub fn open<A: PlainAlgorithm>(
        dir: &Path,
        identity: Identity,
        wipe: bool,
    ) -> Result<(Storage, Option<A>), StorageError> {
        let io = |what| move |source| StorageError::Io { dir: dir.to_path_buf(), what, source };
        // The owner's alone (mode 0700, and so are the parents it makes): the state says who
        // holds a lock and which fencing token comes next. The state file is 0600 (tempfile's).
        {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(io("creating it"))?;
        }
        let path = dir.join(STATE_FILE);
        if wipe {
            match std::fs::remove_file(&path) {
                Ok(()) => sync_dir(dir).map_err(io("syncing it"))?,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io("deleting the state file (--wipe-data)")(e)),
            }
        }
        let storage = Storage { dir: dir.to_path_buf(), identity, last: None };
        let text = match std::fs::read(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((storage, None)),
            Err(e) => return Err(io("reading the state file")(e)),
        };
        let state = storage.parse::<A>(&path, &text)?;
        Ok((storage, Some(state)))
    }

    /// Checks a state file's identity and reads its state.
    fn parse<A: PlainAlgorithm>(&self, path: &Path, text: &[u8]) -> Result<A, StorageError> {
        let corrupt = |detail: String| StorageError::Corrupt { path: path.to_path_buf(), detail };
        let mut doc: serde_json::Value = serde_json::from_slice(text).map_err(|e| corrupt(e.to_string()))?;
        let format =
            doc.get("format").and_then(|f| f.as_u64()).ok_or_else(|| corrupt("no format version".into()))?;
        let foreign = |what, found: String, expected: String| StorageError::Foreign {
            path: path.to_path_buf(),
            what,
            found,
            expected,
        };
        if format != FORMAT as u64 {
            return Err(foreign("format version", format.to_string(), FORMAT.to_string()));
        }
        let state =
            doc.as_object_mut().and_then(|o| o.remove("state")).ok_or_else(|| corrupt("no state".into()))?;
        let found: Identity = serde_json::from_value(doc).map_err(|e| corrupt(e.to_string()))?;
        let me = &self.identity;
        if found.algorithm != me.algorithm {
            return Err(foreign("algorithm", found.algorithm, me.algorithm.clone()));
        }
        if found.id != me.id {
            return Err(foreign("id", found.id.to_string(), me.id.to_string()));
        }
        if found.members != me.members {
            return Err(foreign("members", format!("{:?}", found.members), format!("{:?}", me.members)));
        }
        if found.params != me.params {
            return Err(foreign("parameters", format!("{:?}", found.params), format!("{:?}", me.params)));
        }
        serde_json::from_value(state)
            .map_err(|e| corrupt(format!("the state does not fit {}: {e}", me.algorithm)))
    }

    /// Marks `state` as already on disk (the state just loaded), so that the next save writes
    /// only if what survives a crash changes.
    pub fn loaded<A: PlainAlgorithm>(
        &mut self,
        state: &A,
        me: NodeId,
        uids: &[Uid],
        topology: &Topology,
    ) -> Result<(), StorageError> {
        self.last = Some(recovered_form(state, me, uids, topology)?);
        Ok(())
    }

    /// Writes `state` durably if its recovered form differs from the last one written; returns
    /// whether it wrote. `me`, `uids` and `topology` are the node's position, membership and
    /// communication graph.
    pub fn save<A: PlainAlgorithm>(
        &mut self,
        state: &A,
        me: NodeId,
        uids: &[Uid],
        topology: &Topology,
    ) -> Result<bool, StorageError> {
        let form = recovered_form(state, me, uids, topology)?;
        if self.last.as_ref() == Some(&form) {
            return Ok(false);
        }
        let bytes = serde_json::to_vec(&FileOut { identity: &self.identity, state })
            .map_err(|e| StorageError::Serialize(e.to_string()))?;
        self.write(&bytes)?;
        self.last = Some(form);
        Ok(true)
    }

    /// Replaces the state file with `bytes`: temporary file, fsync, rename, fsync of the
    /// directory.
    fn write(&self, bytes: &[u8]) -> Result<(), StorageError> {
        let io = |what: &'static str| {
            let dir = self.dir.clone();
            move |source| StorageError::Io { dir, what, source }
        };
        let mut tmp = tempfile::Builder::new()
            .prefix(".state-")
            .tempfile_in(&self.dir)
            .map_err(io("creating a temporary file"))?;
        tmp.write_all(bytes).map_err(io("writing the state"))?;
        tmp.as_file().sync_all().map_err(io("syncing the state"))?;
        tmp.persist(self.dir.join(STATE_FILE)).map_err(|e| io("renaming the state file")(e.error))?;
        sync_dir(&self.dir).map_err(io("syncing the directory"))
    }

    /// The data directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// The serialized state the node at position `me` would have right after recovering from
/// `state` at local time 0 with randomness 0 (the actions `on_recover` asks for are dropped).
fn recovered_form<A: PlainAlgorithm>(
    state: &A,
    me: NodeId,
    uids: &[Uid],
    topology: &Topology,
) -> Result<Vec<u8>, StorageError> {
    let mut copy = state.clone();
    let mut out: Outbox<A::Msg, A::Timer> = Outbox::new();
    let cx = Context { me, uids, topology, now: 0, random: 0 };
    copy.on_recover(&cx, &mut out);
    serde_json::to_vec(&copy).map_err(|e| StorageError::Serialize(e.to_string()))
}

/// `fsync`s a directory, so that a rename inside it survives a crash.
fn sync_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use ringleader_algorithms::mutex::central::{CentralCoordinator, Msg};
    use ringleader_core::{Process, Request};

    use super::*;
    use crate::NodeConfig;

    type Central = CentralCoordinator<false>;

    struct Node {
        state: Central,
        me: NodeId,
        topology: Topology,
        members: Vec<Uid>,
        identity: Identity,
    }

    /// Node `id` of a three-node `central` cluster, fresh.
    fn node(id: Uid) -> Node {
        let peers =
            [1, 2, 3].into_iter().filter(|&p| p != id).map(|p| (p, format!("127.0.0.1:{p}"))).collect();
        let cfg = NodeConfig::new(id, "127.0.0.1:0".parse().unwrap(), peers, "central");
        let (state, topology, members) = crate::driver::launch::prepare::<Central>(&cfg).unwrap();
        let identity = Identity {
            format: FORMAT,
            algorithm: "central".into(),
            id,
            members: members.clone(),
            params: BTreeMap::new(),
        };
        Node { state, me: (id - 1) as NodeId, topology, members, identity }
    }

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("ringleader-storage-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn writes_only_when_what_survives_changes_and_reads_it_back() {
        let d = dir("writes");
        let mut n = node(1);
        let (mut s, loaded) = Storage::open::<Central>(&d, n.identity.clone(), false).unwrap();
        assert!(loaded.is_none(), "an empty directory holds no state");
        assert!(s.save(&n.state, n.me, &n.members, &n.topology).unwrap(), "the first save writes");
        assert!(!s.save(&n.state, n.me, &n.members, &n.topology).unwrap(), "nothing changed");
        // The coordinator (position 0) grants: its fencing counter is on stable storage.
        let mut out = Outbox::new();
        let c = Context { me: n.me, uids: &n.members, topology: &n.topology, now: 1, random: 1 };
        n.state.on_message(&c, 1, Msg::Request, &mut out);
        assert!(
            out.commands()
                .iter()
                .any(|a| matches!(a, ringleader_core::Command::Send { msg: Msg::Grant { .. }, .. }))
        );
        assert!(s.save(&n.state, n.me, &n.members, &n.topology).unwrap(), "a grant changes the counter");
        let (_, loaded) = Storage::open::<Central>(&d, n.identity.clone(), false).unwrap();
        assert_eq!(loaded.as_ref(), Some(&n.state), "the file holds the state last saved");
        // A participant that asks for the section changes only volatile state.
        let mut p = node(2);
        let (mut s2, _) = Storage::open::<Central>(&d.join("p"), p.identity.clone(), false).unwrap();
        assert!(s2.save(&p.state, p.me, &p.members, &p.topology).unwrap());
        let mut out = Outbox::new();
        let before = p.state.clone();
        let c = Context { me: p.me, uids: &p.members, topology: &p.topology, now: 1, random: 1 };
        p.state.on_request(&c, Request::Acquire, &mut out);
        assert_ne!(p.state, before);
        assert!(!s2.save(&p.state, p.me, &p.members, &p.topology).unwrap(), "waiting is volatile");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_foreign_or_corrupt_file_is_refused_and_wiping_is_explicit() {
        let d = dir("foreign");
        let n = node(1);
        let (mut s, _) = Storage::open::<Central>(&d, n.identity.clone(), false).unwrap();
        s.save(&n.state, n.me, &n.members, &n.topology).unwrap();
        let refused =
            |identity: Identity| Storage::open::<Central>(&d, identity, false).err().unwrap().to_string();
        let other = |f: &dyn Fn(&mut Identity)| {
            let mut i = n.identity.clone();
            f(&mut i);
            refused(i)
        };
        assert!(other(&|i| i.id = 2).contains("written for id 1, this node has 2"));
        assert!(other(&|i| i.algorithm = "bully".into()).contains("written for algorithm central"));
        assert!(other(&|i| i.members = vec![1, 2, 3, 4]).contains("written for members [1, 2, 3]"));
        assert!(
            other(&|i| {
                i.params.insert("failover".into(), "true".into());
            })
            .contains("parameters")
        );
        let text = std::fs::read_to_string(d.join(STATE_FILE)).unwrap();
        std::fs::write(d.join(STATE_FILE), text.replace("\"format\":1", "\"format\":7")).unwrap();
        let e = refused(n.identity.clone());
        assert!(e.contains("written for format version 7, this node has 1"), "{e}");
        std::fs::write(d.join(STATE_FILE), &text[..text.len() / 2]).unwrap();
        let e = refused(n.identity.clone());
        assert!(e.contains("not a readable ringleader state file") && e.contains("--wipe-data"), "{e}");
        assert!(!e.contains('\n'), "one line: {e}");
        let (_, loaded) = Storage::open::<Central>(&d, n.identity.clone(), true).unwrap();
        assert!(loaded.is_none(), "--wipe-data starts with an empty memory");
        assert!(!d.join(STATE_FILE).exists());
        let _ = std::fs::remove_dir_all(&d);
    }
}
