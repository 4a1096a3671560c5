//! # Operations: the service's blocking protocols, written once for both APIs
//!
//! The HTTP API ([`crate::http`]) and the etcd gRPC API ([`crate::etcd`]) are translations:
//! a request becomes an operation here, and the operation's typed answer or [`OpError`] becomes
//! their wire format. What an operation does over the replicated state machine lives here once:
//!
//! - **subscribe before proposing**, so that the notice answering a wait cannot be missed;
//!   notices of entries up to the proposal's own answered earlier requests (a client's previous
//!   lock and release of the same lease and name, answered by another node, can be published
//!   here after this proposal) and are skipped;
//! - **wait on notices** of later entries, and every [`LEASE_CHECK`] (or after the notice
//!   stream lagged) look at the applied state itself: a lease that expired while the notice was
//!   missed ends the wait, a grant that was missed answers it;
//! - **withdraw** a wait its client gave up (a timeout, a cancelled call, a dropped
//!   connection): the wait is released (a lock) or resigned (a candidacy), so the FIFO queue
//!   does not hand the lock to a requester that is gone;
//! - **check the grant again** on this node's applied state before answering: a later entry
//!   may already have taken it away, and a client told "you hold it" must hold it.
//!
//! Answers and errors are typed: nothing crosses the server loop as untyped data
//! ([`Node::local`] and [`Node::read`] return what their closure returns).
//!
//! ## Who may do what
//!
//! Every operation takes its [`Caller`]: the principal the API established ([`crate::users`]:
//! the API token is root, a user by a token or a client certificate's name, or nobody) and the
//! lease key it showed. [`permit`] is the one check of users and roles: while auth is enabled a
//! caller must be someone, locks and elections named `NAME` need `write` on the keys `NAME/…`
//! (as etcd writes them), the key-value store's ranges need what [`permit_txn`] lists, and
//! changes to users, roles and membership need root; while auth is disabled it lets everything
//! through, as etcd does.
//!
//! A lease is owned. One granted through the HTTP API is a capability: its grant answers a
//! [`LeaseKey`], a 256-bit secret that only the grantee sees, and the replicated state keeps its
//! SHA-256 digest ([`Owner::Key`]). One granted through the etcd gRPC API while auth is enabled
//! belongs to its user ([`Owner::User`]; root may act on it too). Every operation on a lease —
//! keep-alive, revoke, acquire, release, campaign, proclaim, resign, a put that attaches a key
//! — passes [`authorize`] first, whichever API it came through: the lease id alone, as
//! `GET /v1/lock/NAME` shows it, acts on nothing ([`OpError::NotOwner`]). A lease's owner never
//! changes after its grant and lease ids are never reused, so checking it on this node's
//! applied state before proposing is as good as checking it at apply time. Leases granted
//! through the etcd gRPC API while auth is disabled have no owner: as in etcd without auth,
//! whoever can call the API may act on them.

use std::sync::Arc;

use ringleader_core::Time;
use ringleader_lock_service::auth::{Access, AuthOp};
use ringleader_lock_service::kv::{RequestOp, Txn};
use ringleader_lock_service::state::{
    Candidate, IdempotencyKey, KeyDigest, LeaseId, Notice, Op, Owner, Refusal, Reply, StateMachine,
};
use sha2::Digest as _;
use subtle::ConstantTimeEq;
use tokio::sync::broadcast::Receiver;
use tokio::sync::broadcast::error::RecvError;
use tokio::time::Instant;

use crate::server::{ChangeRefused, MemberChange, Members, NoSpace, Node, Published, Unavailable};
use crate::users::{self, AuthFailed, Denied, Need, Principal};

/// How often a blocked operation looks at the applied state itself (see the module doc).
pub const LEASE_CHECK: std::time::Duration = std::time::Duration::from_millis(500);

/// Why an operation did not give its answer.
#[derive(Debug, thiserror::Error)]
pub enum OpError {
    /// The node could not get the operation committed or read (no leader, no majority,
    /// stopping, removed).
    #[error(transparent)]
    Unavailable(#[from] Unavailable),
    /// The write would take the store past its quota.
    #[error(transparent)]
    NoSpace(#[from] NoSpace),
    /// The lease does not exist (never granted, expired or revoked).
    #[error("lease {0} not found (expired or revoked)")]
    NoSuchLease(LeaseId),
    /// The caller did not show the key the lease's grant answered, or is not the user who
    /// was granted it.
    #[error(
        "lease {0} needs the key its grant answered (or its grantee); the lease id alone acts on nothing"
    )]
    NotOwner(LeaseId),
    /// Auth is enabled and the caller is nobody, or may not do this.
    #[error(transparent)]
    Denied(#[from] Denied),
    /// A membership change was refused.
    #[error(transparent)]
    Members(#[from] ChangeRefused),
    /// A lock asked for without waiting is held by another lease.
    #[error("lock {name:?} is held by another lease")]
    Busy {
        /// The lock.
        name: String,
    },
    /// The lock is in its lock-delay after an involuntary loss.
    #[error("lock {name:?} is in its lock-delay after an involuntary loss; try again later")]
    LockDelay {
        /// The lock.
        name: String,
        /// When the delay ends, on the replicated clock.
        until: Time,
    },
    /// Wait-die refused the wait: an older lease holds the lock.
    #[error("wait-die refused the wait: an older lease holds the lock; retry later")]
    WaitRefused,
    /// Wait-die dropped the wait: an older lease got the lock first.
    #[error("wait-die dropped the wait: an older lease got the lock; retry later")]
    WaitDropped,
    /// The state machine refused the operation.
    #[error(transparent)]
    Refused(Refusal),
    /// The wait reached its deadline; it was withdrawn.
    #[error("{0}")]
    TimedOut(Waited),
    /// The lease was granted the lock, but a later entry took it away before the answer.
    #[error("lease {lease} lost lock {name:?} before the grant was delivered")]
    LostLock {
        /// The lock.
        name: String,
        /// The lease it was granted to.
        lease: LeaseId,
    },
    /// Only an election's leader may proclaim.
    #[error("lease {lease} does not lead {election:?}; only the leader may proclaim")]
    NotLeader {
        /// The election.
        election: String,
        /// The lease that is not its leader.
        lease: LeaseId,
    },
    /// The candidate was elected, but its candidacy ended before the answer.
    #[error("the candidacy ended before the answer was delivered")]
    LostElection,
    /// A reply the operation never expects (a defect: the state machine and this layer
    /// disagree).
    #[error("unexpected reply {0:?}")]
    Unexpected(Reply),
}

/// What a timed-out wait was waiting for.
#[derive(Debug)]
pub enum Waited {
    /// A lock.
    Lock(String),
    /// Leadership of an election, for a lease.
    Election(String, LeaseId),
}

impl std::fmt::Display for Waited {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Waited::Lock(name) => {
                write!(f, "lock {name:?} was not granted within the timeout; the wait was withdrawn")
            }
            Waited::Election(election, lease) => write!(
                f,
                "lease {lease} did not become leader of {election:?} within the timeout; the candidacy was withdrawn"
            ),
        }
    }
}

/// How long a blocking operation may wait.
#[derive(Clone, Copy, Debug)]
pub enum Until {
    /// Until it is answered or its caller goes away (the etcd API: a gRPC call's own deadline
    /// or cancellation ends it).
    Answered,
    /// Until this instant, then the wait is withdrawn and [`OpError::TimedOut`] answered.
    Deadline(Instant),
}

/// A lock granted: the fencing token of the entry that granted it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grant {
    /// The fencing token (the granting entry's index, strictly increasing per name).
    pub fencing: u64,
}

/// The secret a lease's grant answers: 32 random bytes, written as 64 hex digits. Whoever
/// shows it may act on the lease; its [`Debug`] form never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct LeaseKey([u8; 32]);

/// Why a text is not a lease key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("a lease key is the 64 hex digits its grant answered")]
pub struct BadLeaseKey;

impl LeaseKey {
    /// A new key from the operating system's random source.
    pub fn random() -> Result<LeaseKey, getrandom::Error> {
        let mut k = [0; 32];
        getrandom::fill(&mut k)?;
        Ok(LeaseKey(k))
    }

    /// The key written as `text` (64 hex digits, either case).
    pub fn parse(text: &str) -> Result<LeaseKey, BadLeaseKey> {
        let t = text.as_bytes();
        if t.len() != 64 {
            return Err(BadLeaseKey);
        }
        let mut k = [0; 32];
        for (i, pair) in t.chunks(2).enumerate() {
            let hex = std::str::from_utf8(pair).map_err(|_| BadLeaseKey)?;
            k[i] = u8::from_str_radix(hex, 16).map_err(|_| BadLeaseKey)?;
        }
        Ok(LeaseKey(k))
    }

    /// Its SHA-256 digest, what the replicated state keeps.
    pub fn digest(&self) -> KeyDigest {
        sha2::Sha256::digest(self.0).into()
    }
}

impl std::fmt::Display for LeaseKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl std::fmt::Debug for LeaseKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LeaseKey(..)")
    }
}

/// Checks that `who` may act on `lease`: while auth is enabled it must be someone; a lease
/// granted with a key needs that key; one granted by a user needs that user or root (while
/// auth is enabled); one granted with neither needs nothing more. A lease this node has not
/// applied yet (granted through another node a moment ago) is looked up with a linearizable
/// read. Errors: [`OpError::Denied`], [`OpError::NoSuchLease`], [`OpError::NotOwner`].
pub async fn authorize(node: &Node, who: &Caller, lease: LeaseId) -> Result<(), OpError> {
    permit(node, who, &Need::Someone)?;
    let owner = match node.lease_owners.get(lease) {
        Some(owner) => owner,
        None => {
            let owner_of = move |m: &StateMachine| m.lease(lease).map(|l| l.owner.clone());
            let owner = match node.local(owner_of).await? {
                Some(owner) => owner,
                None => node.read(owner_of).await?.1.ok_or(OpError::NoSuchLease(lease))?,
            };
            node.lease_owners.insert(lease, owner.clone());
            owner
        }
    };
    let allowed = match owner {
        None => true,
        Some(Owner::Key(want)) => who.lease_key.as_ref().is_some_and(|k| bool::from(k.digest().ct_eq(&want))),
        Some(Owner::User(user)) => {
            let store = node.users.view();
            !store.enabled()
                || who.principal == Principal::User(user)
                || users::is_admin(&store, &who.principal)
        }
    };
    if allowed { Ok(()) } else { Err(OpError::NotOwner(lease)) }
}

/// Checks that `who` may do what `need` asks ([`crate::users`]: everything while auth is
/// disabled).
pub fn permit(node: &Node, who: &Caller, need: &Need) -> Result<(), OpError> {
    Ok(node.users.permit(&who.principal, need)?)
}

/// Who is asking, with what: the principal the API established and the lease key shown, if
/// any.
#[derive(Clone, Debug)]
pub struct Caller {
    /// Who the request comes from.
    pub principal: Principal,
    /// The key of the lease it acts on, when it showed one.
    pub lease_key: Option<LeaseKey>,
}

impl Caller {
    /// `principal`, showing no lease key.
    pub fn new(principal: Principal) -> Caller {
        Caller { principal, lease_key: None }
    }

    /// This caller, showing `key`.
    pub fn with_key(self, key: Option<LeaseKey>) -> Caller {
        Caller { lease_key: key, ..self }
    }
}

/// A lease granted: its id, its time to live and, when it was granted with one, its key.
#[derive(Clone, Debug)]
pub struct Granted {
    /// The lease id (the index of its grant's entry).
    pub lease: LeaseId,
    /// Its time to live.
    pub ttl: Time,
    /// The key acting on it takes (`None`: granted without one).
    pub key: Option<LeaseKey>,
}

/// Grants a lease of `ttl` (more than zero), owned by `key` when given, else (while auth is
/// enabled) by the user asking (see the module doc), applied at most once under the client's
/// idempotency key `retry`.
pub async fn grant(
    node: &Node,
    ttl: Time,
    who: &Caller,
    key: Option<LeaseKey>,
    retry: Option<IdempotencyKey>,
) -> Result<Granted, OpError> {
    permit(node, who, &Need::Someone)?;
    check_space(node, "", "")?;
    let owner = match (&key, &who.principal) {
        (Some(k), _) => Some(Owner::Key(k.digest())),
        (None, _) if !node.users.enabled() => None,
        (None, Principal::Root) => Some(Owner::User(ringleader_lock_service::auth::ROOT.to_string())),
        (None, Principal::User(u)) => Some(Owner::User(u.clone())),
        (None, Principal::Nobody) => None,
    };
    let op = Op::Grant { ttl, origin: node.me, request: 0, owner };
    match node.propose_keyed(op, retry).await?.1.reply {
        Reply::Granted { lease, ttl } => Ok(Granted { lease, ttl, key }),
        Reply::Refused { reason } => Err(OpError::Refused(reason)),
        other => Err(OpError::Unexpected(other)),
    }
}

/// Renews `lease` (its time to live starts again) and answers the time to live.
pub async fn keep_alive(
    node: &Node,
    lease: LeaseId,
    who: &Caller,
    retry: Option<IdempotencyKey>,
) -> Result<Time, OpError> {
    authorize(node, who, lease).await?;
    match node.propose_keyed(Op::KeepAlive { lease }, retry).await?.1.reply {
        Reply::KeptAlive { ttl_left } => Ok(ttl_left),
        Reply::NoSuchLease => Err(OpError::NoSuchLease(lease)),
        other => Err(OpError::Unexpected(other)),
    }
}

/// Ends `lease` now: its locks are released, its waits and candidacies withdrawn.
pub async fn revoke(
    node: &Node,
    lease: LeaseId,
    who: &Caller,
    retry: Option<IdempotencyKey>,
) -> Result<(), OpError> {
    authorize(node, who, lease).await?;
    match node.propose_keyed(Op::Revoke { lease }, retry).await?.1.reply {
        Reply::Done => Ok(()),
        Reply::NoSuchLease => Err(OpError::NoSuchLease(lease)),
        other => Err(OpError::Unexpected(other)),
    }
}

/// Releases lock `name` held by `lease`, or withdraws the lease's wait for it.
pub async fn release(
    node: &Node,
    name: &str,
    lease: LeaseId,
    who: &Caller,
    retry: Option<IdempotencyKey>,
) -> Result<(), OpError> {
    permit(node, who, &Need::name(Access::Write, name))?;
    authorize(node, who, lease).await?;
    match node.propose_keyed(Op::Release { name: name.to_string(), lease }, retry).await?.1.reply {
        Reply::Done => Ok(()),
        Reply::NoSuchLease => Err(OpError::NoSuchLease(lease)),
        Reply::Refused { reason } => Err(OpError::Refused(reason)),
        other => Err(OpError::Unexpected(other)),
    }
}

/// The leader of `election`, `lease`, announces `value`.
pub async fn proclaim(
    node: &Node,
    election: &str,
    lease: LeaseId,
    value: String,
    who: &Caller,
    retry: Option<IdempotencyKey>,
) -> Result<(), OpError> {
    permit(node, who, &Need::name(Access::Write, election))?;
    authorize(node, who, lease).await?;
    check_space(node, election, &value)?;
    let op = Op::Proclaim { election: election.to_string(), lease, value };
    match node.propose_keyed(op, retry).await?.1.reply {
        Reply::Done => Ok(()),
        Reply::NotLeader => Err(OpError::NotLeader { election: election.to_string(), lease }),
        Reply::NoSuchLease => Err(OpError::NoSuchLease(lease)),
        Reply::Refused { reason } => Err(OpError::Refused(reason)),
        other => Err(OpError::Unexpected(other)),
    }
}

/// `lease` stops being a candidate (or the leader) of `election`.
pub async fn resign(
    node: &Node,
    election: &str,
    lease: LeaseId,
    who: &Caller,
    retry: Option<IdempotencyKey>,
) -> Result<(), OpError> {
    permit(node, who, &Need::name(Access::Write, election))?;
    authorize(node, who, lease).await?;
    match node.propose_keyed(Op::Resign { election: election.to_string(), lease }, retry).await?.1.reply {
        Reply::Done => Ok(()),
        Reply::NoSuchLease => Err(OpError::NoSuchLease(lease)),
        Reply::Refused { reason } => Err(OpError::Refused(reason)),
        other => Err(OpError::Unexpected(other)),
    }
}

/// Acquires lock `name` for `lease`. With `wait`, blocks in the lock's FIFO queue until it is
/// granted, the lease ends, wait-die drops the wait or `until` passes (then the wait is
/// withdrawn); without, answers at once ([`OpError::Busy`] when another lease holds it).
/// Dropping the future while it waits (the client went away) withdraws the wait.
pub async fn acquire(
    node: &Arc<Node>,
    name: &str,
    lease: LeaseId,
    who: &Caller,
    wait: bool,
    until: Until,
) -> Result<Grant, OpError> {
    permit(node, who, &Need::name(Access::Write, name))?;
    authorize(node, who, lease).await?;
    check_space(node, name, "")?;
    let mut rx = node.notices.subscribe();
    let op = Op::Acquire { name: name.to_string(), lease, request: 0, wait };
    let (queued_at, applied) = node.propose_at(op).await?;
    match applied.reply {
        Reply::Acquired { fencing } => return deliver(node, name, lease, fencing).await,
        Reply::Queued { .. } => {}
        Reply::Busy => return Err(OpError::Busy { name: name.to_string() }),
        Reply::LockDelay { until } => return Err(OpError::LockDelay { name: name.to_string(), until }),
        Reply::Aborted => return Err(OpError::WaitRefused),
        Reply::NoSuchLease => return Err(OpError::NoSuchLease(lease)),
        Reply::Refused { reason } => return Err(OpError::Refused(reason)),
        other => return Err(OpError::Unexpected(other)),
    }
    let mut withdraw = Withdraw::armed(node, Op::Release { name: name.to_string(), lease });
    loop {
        match next_notice(&mut rx, until).await? {
            Heard::TimedOut => {
                withdraw.now().await;
                return Err(OpError::TimedOut(Waited::Lock(name.to_string())));
            }
            Heard::Check => {
                let n = name.to_string();
                let (alive, holder) = node.local(move |m| (m.lease(lease).is_some(), m.holder(&n))).await?;
                if !alive {
                    withdraw.disarm();
                    return Err(OpError::NoSuchLease(lease));
                }
                if let Some((l, fencing)) = holder
                    && l == lease
                {
                    withdraw.disarm();
                    return deliver(node, name, lease, fencing).await;
                }
            }
            Heard::Notice(p) if p.0 <= queued_at => {}
            Heard::Notice(p) => match &p.1 {
                Notice::Granted { name: n, lease: l, fencing, .. } if n == name && *l == lease => {
                    withdraw.disarm();
                    return deliver(node, name, lease, *fencing).await;
                }
                Notice::Aborted { name: n, lease: l, .. } if n == name && *l == lease => {
                    withdraw.disarm();
                    return Err(OpError::WaitDropped);
                }
                Notice::LeaseExpired { lease: l, .. } if *l == lease => {
                    withdraw.disarm();
                    return Err(OpError::NoSuchLease(lease));
                }
                _ => {}
            },
        }
    }
}

/// Answers a grant after checking again, on this node's applied state, that `lease` still
/// holds `name` with `fencing` (a later entry may have taken it away).
async fn deliver(node: &Node, name: &str, lease: LeaseId, fencing: u64) -> Result<Grant, OpError> {
    let n = name.to_string();
    if node.local(move |m| m.holder(&n) == Some((lease, fencing))).await? {
        Ok(Grant { fencing })
    } else {
        Err(OpError::LostLock { name: name.to_string(), lease })
    }
}

/// Campaigns for `election` with `lease` and `value`: blocks until the lease leads it (the
/// answer is the leader as it stands), the lease ends or `until` passes (then the candidacy is
/// withdrawn). Dropping the future while it waits resigns the candidacy.
pub async fn campaign(
    node: &Arc<Node>,
    election: &str,
    lease: LeaseId,
    who: &Caller,
    value: String,
    until: Until,
) -> Result<Candidate, OpError> {
    permit(node, who, &Need::name(Access::Write, election))?;
    authorize(node, who, lease).await?;
    check_space(node, election, &value)?;
    let mut rx = node.notices.subscribe();
    let op = Op::Campaign { election: election.to_string(), lease, value, request: 0 };
    let (queued_at, applied) = node.propose_at(op).await?;
    match applied.reply {
        Reply::Elected => {
            return leader(node, election).await?.filter(|c| c.lease == lease).ok_or(OpError::LostElection);
        }
        Reply::CampaignQueued => {}
        Reply::NoSuchLease => return Err(OpError::NoSuchLease(lease)),
        Reply::Refused { reason } => return Err(OpError::Refused(reason)),
        other => return Err(OpError::Unexpected(other)),
    }
    let mut withdraw = Withdraw::armed(node, Op::Resign { election: election.to_string(), lease });
    loop {
        match next_notice(&mut rx, until).await? {
            Heard::TimedOut => {
                withdraw.now().await;
                return Err(OpError::TimedOut(Waited::Election(election.to_string(), lease)));
            }
            Heard::Check => {
                if let Some(c) = leader(node, election).await?.filter(|c| c.lease == lease) {
                    withdraw.disarm();
                    return Ok(c);
                }
                if !lease_alive(node, lease).await? {
                    withdraw.disarm();
                    return Err(OpError::NoSuchLease(lease));
                }
            }
            Heard::Notice(p) if p.0 <= queued_at => {}
            Heard::Notice(p) => match &p.1 {
                Notice::LeaderChanged { election: e, leader: Some(c) }
                    if e == election && c.lease == lease =>
                {
                    withdraw.disarm();
                    return Ok(c.clone());
                }
                Notice::LeaseExpired { lease: l, .. } if *l == lease => {
                    withdraw.disarm();
                    return Err(OpError::NoSuchLease(lease));
                }
                _ => {}
            },
        }
    }
}

/// The leader of `election` on this node's applied state (no check: the blocking paths that
/// already checked their caller use it).
async fn leader(node: &Node, election: &str) -> Result<Option<Candidate>, Unavailable> {
    let e = election.to_string();
    node.local(move |m| m.leader(&e)).await
}

/// Whether `lease` exists on this node's applied state.
async fn lease_alive(node: &Node, lease: LeaseId) -> Result<bool, Unavailable> {
    node.local(move |m| m.lease(lease).is_some()).await
}

/// Checks that `who` may run `txn` on the key-value store: `read` on every compared and read
/// range, `write` on every put and deleted range (in both branches, whichever applies), and,
/// for a put that attaches its key to a lease, the right to act on that lease ([`authorize`]).
pub async fn permit_txn(node: &Node, who: &Caller, txn: &Txn) -> Result<(), OpError> {
    let keys = |access, key: &[u8], range_end: &[u8]| Need::Keys {
        access,
        key: key.to_vec(),
        range_end: range_end.to_vec(),
    };
    permit(node, who, &Need::Someone)?;
    for c in &txn.compare {
        permit(node, who, &keys(Access::Read, &c.key, &c.range_end))?;
    }
    for op in txn.success.iter().chain(&txn.failure) {
        match op {
            RequestOp::Range(r) => permit(node, who, &keys(Access::Read, &r.key, &r.range_end))?,
            RequestOp::Put(p) => {
                permit(node, who, &Need::key(Access::Write, &p.key))?;
                if p.lease != 0 {
                    authorize(node, who, p.lease).await?;
                }
            }
            RequestOp::DeleteRange(d) => permit(node, who, &keys(Access::Write, &d.key, &d.range_end))?,
        }
    }
    Ok(())
}

/// Checks a user's name and password (while auth is enabled) and answers a new token for it
/// ([`crate::users::Users::authenticate`]; Argon2 runs off the async threads, at most
/// [`users::HASHING_AT_ONCE`] at a time: a flood of attempts waits its turn instead of taking
/// 19 MiB of memory and a thread each).
pub async fn authenticate(node: &Node, name: String, password: String) -> Result<String, AuthFailed> {
    let Ok(_turn) = node.users.hashing.acquire().await else { return Err(AuthFailed::Invalid) };
    let users = node.users.clone();
    tokio::task::spawn_blocking(move || users.authenticate(&name, &password))
        .await
        .unwrap_or(Err(AuthFailed::Invalid))
}

/// A password's hash for the auth store (`None` for an empty one), computed off the async
/// threads, in turn with the other hashings.
pub async fn hash_password(node: &Node, password: String) -> Result<Option<String>, users::HashError> {
    let _turn = node.users.hashing.acquire().await.map_err(|e| users::HashError::from(e.to_string()))?;
    tokio::task::spawn_blocking(move || users::hash_password(&password))
        .await
        .unwrap_or_else(|e| Err(users::HashError::from(e)))
}

/// Applies a change to the users, roles and permissions, or turns auth on or off: root only
/// while auth is enabled, anyone while it is disabled (as in etcd).
pub async fn administer(node: &Node, who: &Caller, op: AuthOp) -> Result<(), OpError> {
    permit(node, who, &Need::Admin)?;
    match node.propose(Op::Auth { op }).await?.reply {
        Reply::Done => Ok(()),
        Reply::Refused { reason } => Err(OpError::Refused(reason)),
        other => Err(OpError::Unexpected(other)),
    }
}

/// Proposes a membership change for `who` (root only while auth is enabled).
pub async fn change_members(node: &Node, who: &Caller, change: MemberChange) -> Result<Members, OpError> {
    permit(node, who, &Need::Admin)?;
    Ok(node.change_members(change).await?)
}

/// Refuses a write that would take the store past the backend quota (a lock or a candidacy
/// counts as a put of its name, the lease's 16 hex digits and a slash, and its value, as etcd
/// stores it).
pub fn check_space(node: &Node, name: &str, value: &str) -> Result<(), NoSpace> {
    node.check_space(ringleader_lock_service::kv::put_growth(name.len() + 17, value.len()))
}

/// Proposes its operation if dropped while armed: a blocked request that ends without its
/// answer (its client cancelled or went away) withdraws its wait.
struct Withdraw {
    node: Arc<Node>,
    op: Option<Op>,
}

impl Withdraw {
    fn armed(node: &Arc<Node>, op: Op) -> Withdraw {
        Withdraw { node: node.clone(), op: Some(op) }
    }

    /// The wait ended as it should: nothing to withdraw.
    fn disarm(&mut self) {
        self.op = None;
    }

    /// Withdraws now and waits until it is applied (or could not be).
    async fn now(&mut self) {
        if let Some(op) = self.op.take() {
            let _ = self.node.propose(op).await;
        }
    }
}

impl Drop for Withdraw {
    fn drop(&mut self) {
        if let Some(op) = self.op.take() {
            let node = self.node.clone();
            tokio::spawn(async move {
                let _ = node.propose(op).await;
            });
        }
    }
}

/// What a blocked operation heard.
enum Heard {
    /// A notice of an applied entry.
    Notice(Published),
    /// Notices were missed (the receiver lagged) or it is time to look at the state itself.
    Check,
    /// The deadline passed.
    TimedOut,
}

/// The next notice; [`Heard::Check`] after [`LEASE_CHECK`] without one or after a lag;
/// [`Heard::TimedOut`] at the deadline.
async fn next_notice(rx: &mut Receiver<Published>, until: Until) -> Result<Heard, Unavailable> {
    let recv = async {
        match tokio::time::timeout(LEASE_CHECK, rx.recv()).await {
            Err(_) | Ok(Err(RecvError::Lagged(_))) => Ok(Heard::Check),
            Ok(Ok(p)) => Ok(Heard::Notice(p)),
            Ok(Err(RecvError::Closed)) => Err(Unavailable::Stopping),
        }
    };
    match until {
        Until::Deadline(d) => tokio::time::timeout_at(d, recv).await.unwrap_or(Ok(Heard::TimedOut)),
        Until::Answered => recv.await,
    }
}
