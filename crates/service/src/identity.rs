//! A data directory's identity: the cluster and the node its Raft log belongs to.
//!
//! A Raft node that forgets what it wrote (a lost volume, a deleted or restored directory) is
//! not a slow node: it may vote twice in one term, or help elect a leader that lacks
//! acknowledged entries, and then a lock can have two holders. So a node must know, before it
//! speaks to anyone, whether the directory it was given is its own, whole, log. The file
//! `identity` beside the log records `cluster=ID` and `node=N`; it is written once, when the
//! node first bootstraps a cluster or joins one (write, fsync, rename, fsync of the directory),
//! and checked at every start ([`establish`]):
//!
//! - a directory with no log (missing, empty, deleted) starts only as a node that knows it is
//!   new: the first start of a new cluster (`--bootstrap`, or a one-node service with no
//!   peers) or a new member (`--join`). A member of a multi-node cluster started without either
//!   is refused: its data is gone, and the cure is to remove it and add it back empty;
//! - a directory of another node id, or of another cluster id than `--cluster-id`, is refused;
//! - `--bootstrap` and `--join` change nothing once the directory holds this node's log (a
//!   static command, as in docker-compose, keeps them across restarts). The price: a node
//!   whose directory was lost and that is started again *with* `--bootstrap` cannot tell that
//!   from a first start; only commands without it are protected (the launcher passes it only
//!   when every node's directory is empty);
//! - a log with no identity file (written by an older build) is refused until `--cluster-id`
//!   names the cluster it belongs to.
//!
//! A log that is behind what it recorded as committed is refused by [`crate::disk::DiskLog::open`];
//! one behind what the leader knows it acknowledged is refused when the leader's heartbeat says
//! so (see the server).
//!
//! The cluster id travels in every peer's hello (the protocol name is `lock-service/3/ID`), so
//! nodes of two clusters never exchange a message. A one-node bootstrap draws a random id
//! (getrandom); a multi-node bootstrap is given one with `--cluster-id`, the same on every
//! node (`ringleader cluster --service` passes a random one). A joining node is told it with
//! `--cluster-id` (`GET /status` of any member shows it as `cluster`).

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The name of the identity file in the data directory.
pub const FILE_NAME: &str = "identity";

/// The longest cluster id accepted.
pub const MAX_CLUSTER_ID_LEN: usize = 64;

/// Which cluster and which node a data directory belongs to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    /// The cluster's id (letters, digits, `.`, `_`, `-`).
    pub cluster: String,
    /// This node's id.
    pub node: u64,
}

/// How the node was told to start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StartMode {
    /// The first start of a new cluster (`--bootstrap`).
    Bootstrap,
    /// A new member of a running cluster (`--join`).
    Join,
    /// Neither: a restart of a member, whose directory must hold its log (a node with no peers
    /// may still bootstrap a one-node service).
    Restart,
}

/// What the data directory's log holds, as found before the identity is checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogState {
    /// No log file.
    Missing,
    /// A log that never recorded anything (no term, no vote, no entry, no snapshot): a first
    /// start that stopped before its identity was written.
    Pristine,
    /// A log with data in it.
    Holding,
}

/// Why a node refuses its data directory; each message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    /// The identity file could not be read or written.
    #[error("cannot {what} {path}: {source}; check the directory's permissions and free space")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
    /// The identity file does not parse.
    #[error(
        "{path} is damaged ({detail}); it must hold the lines cluster=ID and node=N: restore it from the node's \
         backup, or replace the node (docs/SERVICE.md, \"Replacing a lost disk\")"
    )]
    Damaged {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        detail: String,
    },
    /// The directory belongs to another node.
    #[error(
        "{dir} belongs to node {found} of cluster {cluster}, not to node {id}: give this node its own --data-dir, \
         or start it as --id {found}"
    )]
    OtherNode {
        /// The directory.
        dir: PathBuf,
        /// The node id in the directory.
        found: u64,
        /// The cluster id in the directory.
        cluster: String,
        /// The id this node was given.
        id: u64,
    },
    /// The directory belongs to another cluster.
    #[error(
        "{dir} belongs to cluster {found}, not to --cluster-id {given}: give the right --data-dir, or drop \
         --cluster-id to start as a member of {found}"
    )]
    OtherCluster {
        /// The directory.
        dir: PathBuf,
        /// The cluster id in the directory.
        found: String,
        /// The cluster id given.
        given: String,
    },
    /// A member of a multi-node cluster found no log in its directory.
    #[error(
        "{dir} holds no Raft log, but node {id} is started as a member of a running cluster: if its data was \
         lost, remove it (`ringleader member remove {id}`) and add it back empty with --join (docs/SERVICE.md, \
         \"Replacing a lost disk\"); if this is the first start of a new cluster, give --bootstrap"
    )]
    NoLog {
        /// The directory.
        dir: PathBuf,
        /// This node's id.
        id: u64,
    },
    /// The identity file is there but the log is gone.
    #[error(
        "{dir} is node {id}'s directory in cluster {cluster} but its Raft log raft.redb is missing: the log was \
         lost; remove the node (`ringleader member remove {id}`) and add it back empty with --join \
         (docs/SERVICE.md, \"Replacing a lost disk\")"
    )]
    LogMissing {
        /// The directory.
        dir: PathBuf,
        /// The node id.
        id: u64,
        /// The cluster id.
        cluster: String,
    },
    /// A log written before directories had an identity.
    #[error(
        "{dir} holds a Raft log but no identity file (an older build wrote it): give --cluster-id NAME, the same \
         on every member, once to adopt it"
    )]
    Unadopted {
        /// The directory.
        dir: PathBuf,
    },
    /// The nodes of a new multi-node cluster must be told its id, the same on every one.
    #[error(
        "--bootstrap with --peer needs --cluster-id ID, the same on every member (any name, or `openssl rand -hex 16`)"
    )]
    BootstrapWithoutClusterId,
    /// A joining node must be told its cluster's id.
    #[error(
        "--join needs --cluster-id ID, the running cluster's id (`cluster` in GET /status of any member)"
    )]
    JoinWithoutClusterId,
    /// A cluster id that is not allowed.
    #[error("--cluster-id {0:?}: allowed are 1 to {MAX_CLUSTER_ID_LEN} letters, digits, '.', '_' or '-'")]
    BadClusterId(String),
}

/// Checks a cluster id's spelling.
pub fn check_cluster_id(id: &str) -> Result<(), IdentityError> {
    let ok = !id.is_empty()
        && id.len() <= MAX_CLUSTER_ID_LEN
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    if ok { Ok(()) } else { Err(IdentityError::BadClusterId(id.to_string())) }
}

/// A random cluster id: 32 hex digits from the operating system's generator.
pub fn random_cluster_id() -> String {
    let mut bytes = [0u8; 16];
    // Without the OS generator the id is all zeros; it is a name, not a secret.
    let _ = getrandom::fill(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Reads the identity of `dir` (`None` when there is no identity file).
pub fn read(dir: &Path) -> Result<Option<Identity>, IdentityError> {
    let path = dir.join(FILE_NAME);
    let text = match fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(IdentityError::Io { what: "read", path, source }),
    };
    let damaged = |detail: String| IdentityError::Damaged { path: path.clone(), detail };
    let (mut cluster, mut node) = (None, None);
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        match line.split_once('=') {
            Some(("cluster", v)) if check_cluster_id(v.trim()).is_ok() => {
                cluster = Some(v.trim().to_string())
            }
            Some(("node", v)) => {
                node = Some(v.trim().parse::<u64>().map_err(|_| damaged(format!("node {v:?}")))?)
            }
            _ => return Err(damaged(format!("the line {line:?}"))),
        }
    }
    match (cluster, node) {
        (Some(cluster), Some(node)) => Ok(Some(Identity { cluster, node })),
        _ => Err(damaged("a line is missing".into())),
    }
}

/// Writes the identity of `dir` durably: a new file, fsync, rename over `identity`, fsync of
/// the directory.
pub fn write(dir: &Path, identity: &Identity) -> Result<(), IdentityError> {
    let path = dir.join(FILE_NAME);
    let tmp = dir.join("identity.new");
    let io = |what: &'static str, path: &Path| {
        let path = path.to_path_buf();
        move |source| IdentityError::Io { what, path, source }
    };
    {
        let mut f = crate::disk::private_file(&tmp).map_err(io("write", &tmp))?;
        write!(f, "cluster={}\nnode={}\n", identity.cluster, identity.node).map_err(io("write", &tmp))?;
        f.sync_all().map_err(io("sync", &tmp))?;
    }
    fs::rename(&tmp, &path).map_err(io("rename into", &path))?;
    fs::File::open(dir).and_then(|d| d.sync_all()).map_err(io("sync", dir))
}

/// What [`establish`] decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Established {
    /// The directory's identity.
    pub identity: Identity,
    /// The identity is new: write it (after the log is created), and, unless the node joins,
    /// give the log the cluster's first configuration.
    pub new: bool,
}

/// Decides whether node `id`, started in `mode` with `members` (itself included) and
/// optionally told `cluster_id`, may use `dir`, whose identity file holds `found` and whose
/// log is in `log` state (see the module documentation). Writes nothing.
pub fn establish(
    dir: &Path,
    id: u64,
    members: &[(u64, String)],
    mode: StartMode,
    cluster_id: Option<&str>,
    found: Option<Identity>,
    log: LogState,
) -> Result<Established, IdentityError> {
    if let Some(given) = cluster_id {
        check_cluster_id(given)?;
    }
    let dir_buf = || dir.to_path_buf();
    if let Some(found) = found {
        if found.node != id {
            return Err(IdentityError::OtherNode {
                dir: dir_buf(),
                found: found.node,
                cluster: found.cluster,
                id,
            });
        }
        if let Some(given) = cluster_id
            && given != found.cluster
        {
            return Err(IdentityError::OtherCluster {
                dir: dir_buf(),
                found: found.cluster,
                given: given.into(),
            });
        }
        return match log {
            LogState::Missing => {
                Err(IdentityError::LogMissing { dir: dir_buf(), id, cluster: found.cluster })
            }
            _ => Ok(Established { identity: found, new: false }),
        };
    }
    if log == LogState::Holding {
        return match cluster_id {
            // Adopted as it is: the log keeps its configuration.
            Some(given) => {
                Ok(Established { identity: Identity { cluster: given.into(), node: id }, new: false })
            }
            None => Err(IdentityError::Unadopted { dir: dir_buf() }),
        };
    }
    let alone = members.len() <= 1;
    let cluster = match mode {
        StartMode::Join => cluster_id.map(str::to_string).ok_or(IdentityError::JoinWithoutClusterId)?,
        StartMode::Restart if !alone => return Err(IdentityError::NoLog { dir: dir_buf(), id }),
        StartMode::Bootstrap | StartMode::Restart => match cluster_id {
            Some(given) => given.to_string(),
            None if alone => random_cluster_id(),
            None => return Err(IdentityError::BootstrapWithoutClusterId),
        },
    };
    Ok(Established { identity: Identity { cluster, node: id }, new: true })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(n: u64) -> Vec<(u64, String)> {
        (1..=n).map(|i| (i, format!("127.0.0.1:{}", 4200 + i))).collect()
    }

    fn ident(cluster: &str, node: u64) -> Option<Identity> {
        Some(Identity { cluster: cluster.into(), node })
    }

    #[test]
    fn an_empty_directory_starts_only_a_node_that_knows_it_is_new() {
        let d = Path::new("/d");
        let m = members(3);
        let e = establish(d, 2, &m, StartMode::Restart, None, None, LogState::Missing).unwrap_err();
        assert!(matches!(e, IdentityError::NoLog { id: 2, .. }), "{e}");
        assert!(e.to_string().contains("--join") && e.to_string().contains("member remove 2"), "{e}");
        // A pristine log (a first start cut short) counts as empty.
        let e = establish(d, 2, &m, StartMode::Restart, None, None, LogState::Pristine).unwrap_err();
        assert!(matches!(e, IdentityError::NoLog { .. }), "{e}");
        let b = establish(d, 2, &m, StartMode::Bootstrap, Some("prod"), None, LogState::Missing).unwrap();
        assert!(b.new);
        assert_eq!(b.identity, Identity { cluster: "prod".into(), node: 2 });
        let e = establish(d, 2, &m, StartMode::Bootstrap, None, None, LogState::Missing).unwrap_err();
        assert!(matches!(e, IdentityError::BootstrapWithoutClusterId), "{e}");
        let j = establish(d, 2, &m, StartMode::Join, Some("prod"), None, LogState::Missing).unwrap();
        assert_eq!(j.identity, Identity { cluster: "prod".into(), node: 2 });
        let e = establish(d, 2, &m, StartMode::Join, None, None, LogState::Missing).unwrap_err();
        assert!(matches!(e, IdentityError::JoinWithoutClusterId), "{e}");
        // A one-node service bootstraps by itself, with a random id.
        let one = establish(d, 1, &members(1), StartMode::Restart, None, None, LogState::Missing).unwrap();
        assert!(one.new && one.identity.cluster.len() == 32);
    }

    #[test]
    fn a_directory_of_another_node_or_cluster_is_refused() {
        let d = Path::new("/d");
        let m = members(3);
        let again =
            establish(d, 2, &m, StartMode::Bootstrap, None, ident("c", 2), LogState::Holding).unwrap();
        assert!(!again.new, "--bootstrap changes nothing over the node's own log");
        let e = establish(d, 2, &m, StartMode::Restart, None, ident("c", 2), LogState::Missing).unwrap_err();
        assert!(matches!(e, IdentityError::LogMissing { .. }), "{e}");
        let ok = establish(d, 2, &m, StartMode::Join, Some("c"), ident("c", 2), LogState::Holding).unwrap();
        assert!(!ok.new, "--join is harmless on a restart");
        let e = establish(d, 2, &m, StartMode::Restart, None, None, LogState::Holding).unwrap_err();
        assert!(matches!(e, IdentityError::Unadopted { .. }), "{e}");
        let e = establish(d, 2, &m, StartMode::Bootstrap, Some("a b"), None, LogState::Missing).unwrap_err();
        assert!(matches!(e, IdentityError::BadClusterId(_)), "{e}");
    }

    #[test]
    fn the_identity_file_round_trips_and_a_damaged_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read(dir.path()).unwrap(), None);
        let id = Identity { cluster: "abc-1".into(), node: 7 };
        write(dir.path(), &id).unwrap();
        assert_eq!(read(dir.path()).unwrap(), Some(id));
        fs::write(dir.path().join(FILE_NAME), "cluster=abc\nnode=x\n").unwrap();
        assert!(matches!(read(dir.path()), Err(IdentityError::Damaged { .. })));
        fs::write(dir.path().join(FILE_NAME), "cluster=abc\n").unwrap();
        assert!(matches!(read(dir.path()), Err(IdentityError::Damaged { .. })));
    }
}
