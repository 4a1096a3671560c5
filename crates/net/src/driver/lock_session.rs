//! The state of a node's HTTP lock session: the clients waiting in arrival order, the client
//! holding the lock with its lease, and which peers a request cannot do without. What the driver
//! does with it is in [`lock`](super::lock).

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use ringleader_core::NodeId;
use subtle::ConstantTimeEq;
use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::shared::{Grant, LockRefusal};

/// Which peers a request for the section cannot do without: a request of this node stays
/// unanswered for good while one of them is down.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Needs {
    /// Every peer's permission (Ricart-Agrawala, Lamport).
    Every,
    /// The coordinator's grant (`central`, `central-timeout` without failover), at this
    /// position.
    Coordinator(NodeId),
    /// Not known (token and quorum algorithms, a coordinator that fails over, this node being
    /// the coordinator): waiting clients are answered by their timeout.
    Unknown,
}

impl Needs {
    /// What `algorithm` with `params` at position `me` needs.
    pub fn of(algorithm: &str, params: &BTreeMap<String, String>, me: NodeId) -> Needs {
        match algorithm {
            "ricart-agrawala" | "lamport" => Needs::Every,
            "central" | "central-timeout" if params.get("failover").is_none_or(|f| f.trim() != "true") => {
                let coordinator = params.get("coordinator").and_then(|c| c.trim().parse().ok()).unwrap_or(0);
                if coordinator == me { Needs::Unknown } else { Needs::Coordinator(coordinator) }
            }
            _ => Needs::Unknown,
        }
    }

    pub(super) fn includes(self, p: NodeId) -> bool {
        match self {
            Needs::Every => true,
            Needs::Coordinator(c) => c == p,
            Needs::Unknown => false,
        }
    }

    pub(super) fn describe(self) -> &'static str {
        match self {
            Needs::Every => "it needs every peer's permission",
            Needs::Coordinator(_) => "it needs the coordinator's grant",
            Needs::Unknown => "",
        }
    }
}

/// A lock handle: 128 random bits from the OS, as 32 hex digits.
pub(super) fn new_handle() -> Result<String, LockRefusal> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|_| LockRefusal::NoRandomness)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// A client waiting for the lock.
pub(super) struct Waiter {
    pub(super) ttl: Duration,
    pub(super) reply: oneshot::Sender<Result<Grant, LockRefusal>>,
    pub(super) since: Instant,
}

/// The client holding the lock.
pub(super) struct Holder {
    pub(super) grant: Grant,
    pub(super) granted_at: Instant,
    /// The generation of its lease timer.
    pub(super) lease: u64,
    pub(super) timer: tokio::task::JoinHandle<()>,
}

impl Holder {
    pub(super) fn owns(&self, handle: &str) -> bool {
        self.grant.handle.as_bytes().ct_eq(handle.as_bytes()).into()
    }
}

/// The lock session of one node (see the [`lock`](super::lock) module's documentation).
pub struct LockSession {
    pub(super) needs: Needs,
    pub(super) queue: VecDeque<Waiter>,
    pub(super) holder: Option<Holder>,
    /// The algorithm has a request for the section outstanding.
    pub(super) requested: bool,
    /// The algorithm granted the section with this fencing token during the current step.
    pub(super) entered: Option<u64>,
    /// A grant nobody took: release it after the current step.
    pub(super) release_pending: bool,
    /// The last lease generation handed out.
    pub(super) lease: u64,
}

impl LockSession {
    /// A session for an algorithm whose requests need `needs`.
    pub fn new(needs: Needs) -> LockSession {
        LockSession {
            needs,
            queue: VecDeque::new(),
            holder: None,
            requested: false,
            entered: None,
            release_pending: false,
            lease: 0,
        }
    }

    /// The algorithm granted the section with `fencing`; the driver hands it to a client once
    /// the step is over (`Driver::settle_lock`, in [`lock`](super::lock)).
    pub(super) fn granted(&mut self, fencing: u64) {
        self.entered = Some(fencing);
    }
}
