//! # The lock service's replicated state machine
//!
//! *Lamport, "Time, clocks, and the ordering of events in a distributed system", CACM 21(7),
//! 1978 (replicated state machines); Schneider, "Implementing fault-tolerant services using the
//! state machine approach", ACM Computing Surveys 22(4), 1990; Burrows, "The Chubby lock service
//! for loosely-coupled distributed systems", OSDI 2006 (lock-delay, sequencers); Kleppmann, "How
//! to do distributed locking", 2016 (fencing tokens); etcd's lease, lock and election APIs.*
//!
//! ## What it is
//! The coordination service keeps leases, named locks and elections in one data structure that
//! every replica holds. Consensus (Raft) orders the commands, [`Op`]s, into a log; every replica
//! applies the committed entries, in log order, to its own [`StateMachine`] with
//! [`StateMachine::apply`]. The machine is pure: no clock, no randomness, no I/O, no knowledge
//! of Raft beyond the entry's index. Same entries in the same order give the same state, the
//! same [`Reply`] to the proposer and the same [`Notice`]s for everyone else, on every replica.
//! Everything here is kept in ordered maps and queues, so iteration order is part of the
//! state, not of the process that runs it.
//!
//! ## Time is replicated, as elapsed ticks
//! A lease must expire at the same point of the log on every replica, so expiry cannot read a
//! replica's clock. Nor can it read the leader's clock as an absolute value: leader clocks differ,
//! and a new leader's clock is not comparable with the old one's. The leader instead measures,
//! on its own clock, how much time passed since its previous tick (or since it became leader),
//! and proposes [`Op::Tick`]` { elapsed }`. The replicated time [`StateMachine::now`] is the sum
//! of committed `elapsed` values. A new leader continues from the replicated time where the old
//! one stopped, so a lease's remaining time survives a change of leader and is never reset to
//! its full TTL. What is lost is only the time between the old leader's last committed tick and
//! the new leader's first: the election's duration. Counting only leader-measured elapsed time
//! can therefore *lengthen* a lease by that much, never shorten it — the safe direction for
//! mutual exclusion: a holder that believes its lease alive for `ttl` from its last keep-alive
//! (measured on its own clock, minus a margin for clock-rate drift) is never contradicted by
//! the service granting its locks to someone else earlier.
//!
//! A tick's `elapsed` is measured from the leader's *previous* tick, so part of it passed before
//! any grant or keep-alive committed between the two. Counting that part would end a lease up
//! to one tick interval before `ttl` has passed since its client asked (a nemesis run measured
//! a 3 s lease ending after 2.959 s). So the first tick after a grant or keep-alive does not
//! count toward that lease: its deadline moves on by the same `elapsed`. A lease therefore lasts
//! at least `ttl` of the leader's time from the moment it was granted or renewed, and at most
//! one tick interval more.
//!
//! ## The fencing-token rule
//! A lock's fencing token is the Raft index of the entry whose application granted it: the
//! [`Op::Acquire`] that found the lock free, or the [`Op::Release`], [`Op::Revoke`] or
//! [`Op::Tick`] whose application handed it over to the first waiter. Indexes strictly
//! increase and a lock changes hands at most once per entry, so tokens strictly increase per
//! name; a storage service that remembers the highest token it has seen refuses a write from a
//! holder that was superseded (a paused process, a lease that expired under it).
//!
//! Chubby's lock-delay completes the picture for resources that do not check tokens: a lock
//! released *involuntarily* (its lease expired, or it was wounded) is not granted again before
//! `now + lock_delay`, so that a holder that has not yet noticed the loss has time to stop. A
//! voluntary release (or a revoke, which the lease's owner asked for) hands over at once.
//!
//! ## The rules
//! 1. `now` is the sum of `Tick.elapsed`. A lease's deadline is `now + ttl` at its grant or its
//!    latest keep-alive, and the first tick after either moves it on by that tick's `elapsed`
//!    (that tick does not count toward the lease). A tick expires every lease whose deadline is
//!    `<= now`, in lease-id order.
//! 2. An expired or revoked lease releases every lock it holds and leaves every waiter queue and
//!    every election it is in. A lock released involuntarily is not granted again before
//!    `now + lock_delay`; the first tick at or after that time hands it over.
//! 3. A named lock has one holder and a waiter queue; a release grants the *first* waiter only
//!    (no thundering herd). A try-lock (`wait: false`) on a held name is refused, never queued.
//! 4. Fencing token = the index of the entry that granted the lock, strictly increasing per name.
//! 5. An operation by an unknown or expired lease is refused ([`Reply::NoSuchLease`]) and changes
//!    nothing. A keep-alive renews the deadline to `now + ttl`.
//! 6. Elections, in etcd's model: a campaign queues a candidate (lease, value, index); the leader
//!    is the earliest live candidate; a campaign is answered [`Reply::Elected`] if it leads at
//!    once, else [`Reply::CampaignQueued`], and a later [`Notice::LeaderChanged`] says who leads.
//!    Only the leader may proclaim a new value. Resign removes the candidate. Every change of
//!    (leader, value), including to no leader, gives exactly one `LeaderChanged`.
//! 7. Deadlocks across locks (below).
//! 8. Queries are pure reads.
//! 9. The whole state serializes; a machine restored from its serialized form applies the rest
//!    of the log exactly as the original does.
//! 10. A command may carry an [`IdempotencyKey`] (a client session and a sequence number, Ongaro's
//!     dissertation, §6.3): [`StateMachine::apply_once`] applies it at most once. A key seen
//!     before is answered [`Reply::Duplicate`] with the first application's reply and changes
//!     nothing; so a client (or a node on its behalf) may propose a request again whenever it
//!     cannot tell whether it was applied. The table of answers is part of the state (so of
//!     every snapshot) and bounded: the latest [`SESSION_REPLIES`] replies per session, the
//!     [`SESSIONS`] most recently active sessions. A key older than the replies kept for its
//!     session is refused ([`Refusal::Forgotten`]: applied or not, it is not applied now); a
//!     session pushed out of the table forgets its keys, which is the one case where a retry
//!     could apply twice (after more than [`SESSIONS`] other sessions were active since).
//!
//! ## Deadlocks
//! A lease that waits on a name waits for that name's holder: the *wait-for graph* has an edge
//! from waiter to holder ([`StateMachine::wait_for_edges`]). A lease may hold several names and
//! wait for several, so cycles are possible. Chandy, Misra and Haas ("Distributed deadlock
//! detection", ACM TOCS 1(2), 1983) is the message-passing detector the project already has, for
//! a graph spread across processes; here the whole graph is in one replicated place, so finding
//! a cycle is a local graph search (breadth-first, in lease-id order, so the same on every
//! replica). A cycle is listed starting from its smallest lease id, in wait-for order. What
//! happens is the configured [`DeadlockPolicy`]:
//!
//! - **Report** (detection): the wait is queued anyway and [`Notice::Deadlock`]` { victim: None }`
//!   names the cycle; recovery (a release, a revoke, an expiry) is left to the clients. A cycle is
//!   reported when it closes, whether by an acquire or by a hand-over that makes the remaining
//!   waiters of a name wait for its new holder.
//! - **WaitDie** and **WoundWait** (prevention; Rosenkrantz, Stearns and Lewis, "System level
//!   concurrency control for distributed database systems", ACM TODS 3(2), 1978), with the
//!   lease id as timestamp (lower = older). Prevention is a rule on *every* wait, not a reaction
//!   to a cycle: it keeps every edge of the graph pointing one way in age, so no cycle can ever
//!   form. That is the choice made here; a [`Notice::Deadlock`] is added only when the wait
//!   refused or the holder wounded would actually have closed a cycle.
//!   - *WaitDie*: a requester waits only if it is older than the holder; otherwise its acquire is
//!     refused with [`Reply::Aborted`] (it "dies"; it may retry with the same lease and so keeps
//!     its age). Every edge points from older to younger. A hand-over creates waits too — the
//!     remaining waiters now wait for the new holder — so after a hand-over every remaining
//!     waiter younger than the new holder dies, with [`Notice::Aborted`].
//!   - *WoundWait*: a requester older than the holder wounds it: the holder loses the lock
//!     ([`Notice::Lost`] with [`LossReason::Wounded`]; lock-delay applies) and the lock goes to the
//!     next waiter; a younger requester waits. Every edge points from younger to older. For the
//!     hand-over to keep that, the queue is served *oldest first* under this policy: serving a
//!     younger waiter before an older one would make the older wait for a younger holder, which
//!     the rule answers by wounding it at once. This is the one exception to rule 3's
//!     first-come order, and it is why the requester that wounds is the next to be granted.
//!
//! ## Costs
//! Every operation is a few ordered-map operations; an expiry or revoke scans the locks and
//! elections (`O(locks + candidates)`), a cycle search is a breadth-first search of the wait-for
//! graph (`O(edges)`), built on demand from the locks.
//!
//! ## Assumptions and flaws
//! The leader proposes ticks often enough that expiry is timely; between ticks no lease expires,
//! so an expiry is applied up to one tick interval plus the commit latency after its deadline
//! (again the safe direction). Clients must keep their own local deadline shorter than the TTL
//! to account for clock-rate drift. Under `Report` a deadlock persists until a client breaks it.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use ringleader_core::{NodeId, Time};
use serde::{Deserialize, Serialize};

use crate::auth::{AuthOp, AuthRefusal, AuthStore};

use crate::kv::{KeyEvent, KvError, KvStore, Revision, Txn, TxnResult};
use crate::planted::Planted;

pub use crate::kv::LeaseId;
/// A client's request id, chosen by the proposing node; echoed in notices.
pub type RequestId = u64;
/// How many replies the state machine keeps per client session ([`IdempotencyKey`]): a retry
/// of an older request is refused ([`Refusal::Forgotten`]).
pub const SESSION_REPLIES: usize = 64;
/// How many client sessions the state machine remembers; the least recently active one is
/// forgotten first.
pub const SESSIONS: usize = 1024;

/// A request's identity for deduplication (rule 10): the client session that made it and its
/// sequence number there. A session is any number its client chose, unique among the clients
/// of one cluster: a random one for a client of the service's API; a node proposing for the
/// clients it serves uses [`IdempotencyKey::node`]. Sequence numbers start anywhere and
/// increase with each new request of the session; a retry carries the key of the request it
/// repeats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct IdempotencyKey {
    /// The client session.
    pub client: u64,
    /// The request's sequence number in the session.
    pub seq: u64,
}

impl IdempotencyKey {
    /// The key of request `request` that node `origin` proposes in its `incarnation`-th life:
    /// session `2^63 + origin·2^32 + incarnation mod 2^32` (the top bit set, which a client's
    /// random session has with probability one half, so a collision needs the same 63 bits).
    pub fn node(origin: NodeId, incarnation: u64, request: RequestId) -> IdempotencyKey {
        let client = (1 << 63) | (u64::from(origin) << 32) | (incarnation & 0xffff_ffff);
        IdempotencyKey { client, seq: request }
    }
}

/// The lock service's fencing token: the Raft index of the entry whose application granted a
/// lock (the textbook algorithms' (epoch, counter) token is `ringleader_core::FencingToken`).
pub type GrantIndex = u64;

/// The SHA-256 digest of a lease's key: the secret its grant answered, which only the
/// grantee holds. The state keeps the digest, never the key; the service's operations layer
/// checks a caller's key against it before acting on the lease.
pub type KeyDigest = [u8; 32];

/// One replicated command. `Op`s come out of the Raft log in commit order.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Op {
    /// The leader's clock advanced by `elapsed` since its previous Tick (or since it became
    /// leader): the replicated time moves forward by that much and leases whose deadline passed
    /// expire. Replicated time is the sum of committed elapsed values, so a new leader
    /// continues from where the old one stopped: a lease's remaining time survives a leader
    /// change and is never reset to its full TTL (etcd issues #9395/#13294 are what to avoid).
    Tick {
        /// Time that passed on the leader's clock since its previous tick.
        elapsed: Time,
    },
    /// Grant a new lease of `ttl`, for a client served by node `origin`; its id is the entry's
    /// index.
    Grant {
        /// How long the lease lives without a keep-alive (more than zero).
        ttl: Time,
        /// The node that serves the lease's client and delivers its notices.
        origin: NodeId,
        /// The proposer's request id.
        request: RequestId,
        /// Who may act on the lease (`None`: whoever names it, as etcd's leases without
        /// auth).
        owner: Option<Owner>,
    },
    /// Renew `lease`: its deadline becomes `now + ttl`.
    KeepAlive {
        /// The lease to renew.
        lease: LeaseId,
    },
    /// End `lease` now: it releases its locks and leaves its queues and elections.
    Revoke {
        /// The lease to end.
        lease: LeaseId,
    },
    /// Acquire lock `name` for `lease`. `wait: false` is try-lock (refused at once if held).
    Acquire {
        /// The lock's name (not empty).
        name: String,
        /// The lease that will hold it.
        lease: LeaseId,
        /// The proposer's request id, echoed in the [`Notice::Granted`] of a queued request.
        request: RequestId,
        /// Whether to queue when the lock is held (`false`: try-lock).
        wait: bool,
    },
    /// The holder releases, or a waiter gives up (timed acquire expiring): removes `lease`
    /// from the holder slot or from the waiter queue of `name`.
    Release {
        /// The lock's name.
        name: String,
        /// The lease that holds it or waits for it.
        lease: LeaseId,
    },
    /// Become a candidate in `election` with `value`.
    Campaign {
        /// The election's name (not empty).
        election: String,
        /// The candidate's lease.
        lease: LeaseId,
        /// The value the candidate announces when it leads.
        value: String,
        /// The proposer's request id, echoed in the candidate.
        request: RequestId,
    },
    /// The leader of `election` announces a new value.
    Proclaim {
        /// The election's name.
        election: String,
        /// The leader's lease.
        lease: LeaseId,
        /// The new value.
        value: String,
    },
    /// `lease` stops being a candidate (or the leader) of `election`.
    Resign {
        /// The election's name.
        election: String,
        /// The candidate's lease.
        lease: LeaseId,
    },

    // ----- the key-value store -----
    /// A transaction on the key-value store (a lone put or delete is one without compares).
    Txn {
        /// The transaction.
        txn: Txn,
    },

    // ----- users, roles and permissions -----
    /// A change to the auth store ([`crate::auth`]).
    Auth {
        /// The change.
        op: AuthOp,
    },
}

/// Who may act on a lease besides an administrator.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Owner {
    /// Whoever shows the key whose SHA-256 digest this is (a grant through the HTTP API
    /// answers the key to its grantee only).
    Key(KeyDigest),
    /// The authenticated user who granted it (a grant through the etcd API while auth is
    /// enabled).
    User(String),
}

/// What the state machine does when a wait would close a cycle of the wait-for graph, or, for
/// the prevention schemes, on every wait.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DeadlockPolicy {
    /// Detection only: queue the wait and report the cycle ([`Notice::Deadlock`] without a
    /// victim).
    #[default]
    Report,
    /// Wait-die: a requester waits only for younger holders (higher lease id); a younger
    /// requester is refused ([`Reply::Aborted`]).
    WaitDie,
    /// Wound-wait: an older requester takes the lock from a younger holder
    /// ([`LossReason::Wounded`]); a younger requester waits. Queues are served oldest first.
    WoundWait,
}

/// Why an operation was refused without changing anything (other than a lease or lock reason,
/// which have replies of their own).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, thiserror::Error)]
pub enum Refusal {
    /// A grant asked for a zero TTL.
    #[error("a lease's ttl must be more than zero")]
    ZeroTtl,
    /// A lock or election name was empty.
    #[error("a lock or election name must not be empty")]
    EmptyName,
    /// A release named a lock the lease neither holds nor waits for.
    #[error("the lease neither holds nor waits for this lock; only its holder or a waiter may release it")]
    NotHolder,
    /// A resign named an election the lease is not a candidate in.
    #[error("the lease is not a candidate in this election; only a candidate may resign")]
    NotCandidate,
    /// A request whose [`IdempotencyKey`] is older than the replies kept for its session: it
    /// may or may not have been applied before, and is not applied now.
    #[error(
        "the request is older than the replies kept for its client session; it may or may not have been applied, and was not applied again"
    )]
    Forgotten,
    /// An auth change was refused.
    #[error(transparent)]
    Auth(AuthRefusal),
}

/// The direct answer to the proposer of an entry.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Reply {
    /// The operation took effect and has nothing more to say (tick, revoke, release, proclaim,
    /// resign).
    Done,
    /// A new lease `lease` (the entry's index) lives for `ttl`.
    Granted {
        /// The new lease's id.
        lease: LeaseId,
        /// Its time to live.
        ttl: Time,
    },
    /// The lease was renewed; it now has `ttl_left` to live.
    KeptAlive {
        /// Time left before it expires (its full TTL).
        ttl_left: Time,
    },
    /// The lease holds the lock, with this fencing token (an acquire by the holder repeats its
    /// token).
    Acquired {
        /// The lock's fencing token.
        fencing: GrantIndex,
    },
    /// The request waits; `position` waiters will be served before it (0: next in line).
    Queued {
        /// How many waiters are ahead of it in the order the queue is served.
        position: usize,
    },
    /// A try-lock found the lock held by another lease.
    Busy,
    /// A try-lock found the lock free but in its lock-delay: nobody gets it before `until`.
    LockDelay {
        /// The replicated time from which the lock may be granted again.
        until: Time,
    },
    /// Wait-die refused the wait: the requester is younger than the holder (it may retry).
    Aborted,
    /// The lease is unknown or has expired; nothing changed.
    NoSuchLease,
    /// The campaign made the lease the leader at once.
    Elected,
    /// The campaign is queued behind an earlier candidate; a [`Notice::LeaderChanged`] will say
    /// when it leads.
    CampaignQueued,
    /// A proclaim by a lease that does not lead the election; nothing changed.
    NotLeader,
    /// The operation was refused for `reason`; nothing changed.
    Refused {
        /// Why.
        reason: Refusal,
    },
    /// A transaction on the key-value store was applied at `revision` (the entry's index).
    Txn {
        /// The entry's index: the revision of the transaction's writes.
        revision: Revision,
        /// Which branch applied and its answers.
        result: TxnResult,
    },
    /// A transaction was refused; nothing changed.
    KvRefused {
        /// Why (etcd's message).
        error: KvError,
    },
    /// The request's [`IdempotencyKey`] was applied before: nothing changed, and `first` is
    /// what its first application answered.
    Duplicate {
        /// The reply of the first application.
        first: Box<Reply>,
    },
}

impl Reply {
    /// The reply itself, or for a [`Reply::Duplicate`] the first application's reply.
    pub fn original(self) -> Reply {
        match self {
            Reply::Duplicate { first } => *first,
            other => other,
        }
    }
}

/// Why a lease lost a lock it held.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum LossReason {
    /// Its lease expired.
    Expired,
    /// Its lease was revoked.
    Revoked,
    /// An older requester took it (wound-wait).
    Wounded,
}

/// A candidate of an election.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Candidate {
    /// The candidate's lease.
    pub lease: LeaseId,
    /// The node that serves the lease's client.
    pub origin: NodeId,
    /// The value it announces.
    pub value: String,
    /// The index of its campaign entry: candidates lead in this order.
    pub index: u64,
    /// The request id of its (latest) campaign.
    pub request: RequestId,
}

/// What happened to others because of an entry. Each notice names the lease concerned and the
/// node (`origin`) that serves its client, which is the node that delivers it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Notice {
    /// A waiter was granted lock `name`.
    Granted {
        /// The lock.
        name: String,
        /// The new holder.
        lease: LeaseId,
        /// The node serving the new holder.
        origin: NodeId,
        /// The request id of its acquire.
        request: RequestId,
        /// Its fencing token (this entry's index).
        fencing: GrantIndex,
    },
    /// `lease` lost lock `name` it held.
    Lost {
        /// The lock.
        name: String,
        /// The former holder.
        lease: LeaseId,
        /// The node serving the former holder.
        origin: NodeId,
        /// Why.
        reason: LossReason,
    },
    /// Wait-die dropped a waiter of lock `name`: a hand-over gave the lock to an older lease,
    /// which a younger one may not wait for.
    Aborted {
        /// The lock.
        name: String,
        /// The waiter dropped.
        lease: LeaseId,
        /// The node serving it.
        origin: NodeId,
        /// The request id of its acquire.
        request: RequestId,
    },
    /// `lease` expired.
    LeaseExpired {
        /// The lease.
        lease: LeaseId,
        /// The node serving its client.
        origin: NodeId,
    },
    /// The leader of `election`, or its value, changed; `None`: the election has no leader.
    LeaderChanged {
        /// The election.
        election: String,
        /// The new leader and its value.
        leader: Option<Candidate>,
    },
    /// Keys changed: the events of one entry (a transaction, or the keys of leases that
    /// ended), in the order they happened; their revision is the entry's index.
    KeyEvents {
        /// The events.
        events: Vec<KeyEvent>,
    },
    /// Key changes were made that no [`Notice::KeyEvents`] reported and that the key-value
    /// history no longer holds: this node installed a snapshot whose history starts at
    /// `first_kept`, after revisions it had not applied. A watcher must be cancelled (it can
    /// watch again from `first_kept`). Published by the server when it installs a snapshot
    /// ([`crate::replica::Host::restored`]), never by applying an entry.
    HistoryGap {
        /// The first revision the history holds.
        first_kept: u64,
    },
    /// A cycle of the wait-for graph, from its smallest lease id in wait-for order, and the
    /// lease sacrificed to break it (`None` under [`DeadlockPolicy::Report`]).
    Deadlock {
        /// The leases of the cycle, each waiting for the next and the last for the first.
        cycle: Vec<LeaseId>,
        /// The requester refused (wait-die) or the holder wounded (wound-wait).
        victim: Option<LeaseId>,
    },
}

/// The result of applying one entry: the reply to its proposer and the notices for others.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Applied {
    /// The direct answer to the proposer.
    pub reply: Reply,
    /// What happened to others, in the order it happened.
    pub notices: Vec<Notice>,
}

/// Why [`StateMachine::apply`] refused an entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum ApplyError {
    /// The entry's index is not above the last applied one.
    #[error(
        "entry index {index} is not above the last applied index {last_applied}; indexes must strictly increase"
    )]
    IndexNotAbove {
        /// The index given.
        index: u64,
        /// The last index applied.
        last_applied: u64,
    },
}

/// A live lease.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Lease {
    /// Its time to live, as granted.
    pub ttl: Time,
    /// The replicated time at which it expires unless kept alive.
    pub deadline: Time,
    /// Granted or kept alive since the last tick: the next tick does not count toward it, and
    /// moves its deadline on by its `elapsed` instead (rule 1).
    pub uncounted: bool,
    /// The node that serves its client.
    pub origin: NodeId,
    /// Who may act on it (`None`: whoever names it).
    pub owner: Option<Owner>,
}

/// A lock's holder.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
struct Holder {
    lease: LeaseId,
    fencing: GrantIndex,
}

/// A queued acquire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
struct Waiter {
    lease: LeaseId,
    request: RequestId,
}

/// One named lock: its holder, its waiters in arrival order, and the time before which it may
/// not be granted (lock-delay). A lock with no holder, no waiter and no delay is not kept.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
struct Lock {
    holder: Option<Holder>,
    waiters: VecDeque<Waiter>,
    delay_until: Time,
    /// The token a released holder had, kept only for the planted bug
    /// [`Planted::FencingReused`]; not part of the replicated state.
    #[serde(skip)]
    released_token: Option<GrantIndex>,
}

/// The bookkeeping of one entry's application: its index, the notices so far, the locks whose
/// hand-over must be checked, and the leader of each touched election before the entry.
struct Step {
    index: u64,
    notices: Vec<Notice>,
    touched_locks: BTreeSet<String>,
    leaders_before: BTreeMap<String, Option<(LeaseId, String)>>,
    key_events: Vec<KeyEvent>,
}

/// The replicated state: leases, named locks and elections, and the replicated time.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct StateMachine {
    lock_delay: Time,
    policy: DeadlockPolicy,
    now: Time,
    last_applied: u64,
    leases: BTreeMap<LeaseId, Lease>,
    locks: BTreeMap<String, Lock>,
    elections: BTreeMap<String, Vec<Candidate>>,
    kv: KvStore,
    sessions: Sessions,
    auth: AuthStore,
    /// A bug planted by a test build ([`Planted`]); not part of the replicated state.
    #[serde(skip)]
    planted: Option<Planted>,
}

/// The answers kept for deduplication (rule 10).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
struct Sessions {
    clients: BTreeMap<u64, Session>,
    /// (index of the session's latest request, session), least recently active first.
    by_use: BTreeSet<(u64, u64)>,
}

/// One client session's answers.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
struct Session {
    /// Sequence numbers below this one are forgotten.
    floor: u64,
    /// The replies to the latest requests, by sequence number.
    replies: BTreeMap<u64, Reply>,
    /// The index of the session's latest request.
    last_used: u64,
}

impl Sessions {
    /// What a request with `key` was answered before: `Some(Duplicate)` or `Some(Refused
    /// Forgotten)` when it must not be applied, `None` when it is new.
    fn seen(&self, key: IdempotencyKey) -> Option<Reply> {
        let session = self.clients.get(&key.client)?;
        if let Some(first) = session.replies.get(&key.seq) {
            return Some(Reply::Duplicate { first: Box::new(first.clone()) });
        }
        (key.seq < session.floor).then_some(Reply::Refused { reason: Refusal::Forgotten })
    }

    /// Marks `key`'s session active at `index`, and records `reply` when it is the first answer to `key`.
    fn record(&mut self, key: IdempotencyKey, index: u64, reply: Option<&Reply>) {
        let session = self.clients.entry(key.client).or_default();
        self.by_use.remove(&(session.last_used, key.client));
        session.last_used = index;
        self.by_use.insert((index, key.client));
        if let Some(reply) = reply {
            session.replies.insert(key.seq, reply.clone());
            while session.replies.len() > SESSION_REPLIES {
                let (oldest, _) = session.replies.pop_first().expect("more than one");
                session.floor = session.floor.max(oldest + 1);
            }
        }
        while self.clients.len() > SESSIONS {
            let (_, client) = self.by_use.pop_first().expect("one per session");
            self.clients.remove(&client);
        }
    }
}

impl Default for StateMachine {
    /// No lock-delay, deadlocks reported.
    fn default() -> Self {
        StateMachine::new(0, DeadlockPolicy::Report)
    }
}

impl StateMachine {
    /// An empty state at replicated time 0: a lock released involuntarily is not granted again
    /// for `lock_delay`, and waits that would deadlock are handled by `policy`.
    pub fn new(lock_delay: Time, policy: DeadlockPolicy) -> Self {
        StateMachine {
            lock_delay,
            policy,
            now: 0,
            last_applied: 0,
            leases: BTreeMap::new(),
            locks: BTreeMap::new(),
            elections: BTreeMap::new(),
            kv: KvStore::default(),
            sessions: Sessions::default(),
            auth: AuthStore::default(),
            planted: None,
        }
    }

    /// This machine with `planted` planted (see [`Planted`]; nothing outside a test build).
    pub fn with_planted(mut self, planted: Option<Planted>) -> Self {
        self.planted = planted;
        self
    }

    /// This machine with a key-value store whose event history keeps at most `history_limit`
    /// events (see [`KvStore`]); only for a machine that has applied nothing yet.
    pub fn with_history_limit(mut self, history_limit: usize) -> Self {
        self.kv = KvStore::new(history_limit);
        self
    }

    /// Applies the committed entry at Raft index `index`. Refuses, changing nothing, an index
    /// not above the last applied one.
    pub fn apply(&mut self, index: u64, op: &Op) -> Result<Applied, ApplyError> {
        if index <= self.last_applied {
            return Err(ApplyError::IndexNotAbove { index, last_applied: self.last_applied });
        }
        self.last_applied = index;
        let mut step = Step {
            index,
            notices: Vec::new(),
            touched_locks: BTreeSet::new(),
            leaders_before: BTreeMap::new(),
            key_events: Vec::new(),
        };
        let reply = match op {
            Op::Tick { elapsed } => self.tick(*elapsed, &mut step),
            Op::Grant { ttl, origin, owner, .. } => self.grant(*ttl, *origin, owner.clone(), index),
            Op::KeepAlive { lease } => self.keep_alive(*lease),
            Op::Revoke { lease } => {
                if self.leases.contains_key(lease) {
                    self.drop_lease(*lease, LossReason::Revoked, &mut step);
                    Reply::Done
                } else {
                    Reply::NoSuchLease
                }
            }
            Op::Acquire { name, lease, request, wait } => {
                self.acquire(name, *lease, *request, *wait, &mut step)
            }
            Op::Release { name, lease } => self.release(name, *lease, &mut step),
            Op::Campaign { election, lease, value, request } => {
                self.campaign(election, *lease, value, *request, &mut step)
            }
            Op::Proclaim { election, lease, value } => self.proclaim(election, *lease, value, &mut step),
            Op::Resign { election, lease } => self.resign(election, *lease, &mut step),
            Op::Txn { txn } => {
                let leases = &self.leases;
                match self.kv.txn(index, txn, &|l| leases.contains_key(&l)) {
                    Ok((result, events)) => {
                        step.key_events.extend(events);
                        Reply::Txn { revision: index, result }
                    }
                    Err(error) => Reply::KvRefused { error },
                }
            }
            Op::Auth { op } => match self.auth.apply(op) {
                Ok(()) => Reply::Done,
                Err(reason) => Reply::Refused { reason: Refusal::Auth(reason) },
            },
        };
        self.settle(&mut step);
        if Planted::active(self.planted, Planted::WatchSkips) && index.is_multiple_of(32) {
            step.key_events.clear();
        }
        if !step.key_events.is_empty() {
            step.notices.push(Notice::KeyEvents { events: std::mem::take(&mut step.key_events) });
        }
        Ok(Applied { reply, notices: step.notices })
    }

    /// Applies the committed entry at Raft index `index` whose command `op` carries `key`
    /// (rule 10): at most once per key. Without a key, [`StateMachine::apply`].
    pub fn apply_once(
        &mut self,
        index: u64,
        key: Option<IdempotencyKey>,
        op: &Op,
    ) -> Result<Applied, ApplyError> {
        let Some(key) = key else { return self.apply(index, op) };
        if index <= self.last_applied {
            return Err(ApplyError::IndexNotAbove { index, last_applied: self.last_applied });
        }
        if let Some(reply) = self.sessions.seen(key) {
            self.last_applied = index;
            self.sessions.record(key, index, None);
            return Ok(Applied { reply, notices: Vec::new() });
        }
        let applied = self.apply(index, op)?;
        self.sessions.record(key, index, Some(&applied.reply));
        Ok(applied)
    }

    // ----- queries -----

    /// The replicated time: the sum of every committed tick's `elapsed`.
    pub fn now(&self) -> Time {
        self.now
    }

    /// The index of the last entry applied (0 before the first).
    pub fn last_applied(&self) -> u64 {
        self.last_applied
    }

    /// The users, roles and permissions, and whether auth is enabled.
    pub fn auth(&self) -> &AuthStore {
        &self.auth
    }

    /// The lock-delay this machine was built with.
    pub fn lock_delay(&self) -> Time {
        self.lock_delay
    }

    /// The deadlock policy this machine was built with.
    pub fn policy(&self) -> DeadlockPolicy {
        self.policy
    }

    /// The holder of lock `name` and its fencing token, if it is held.
    pub fn holder(&self, name: &str) -> Option<(LeaseId, GrantIndex)> {
        let h = self.locks.get(name)?.holder?;
        Some((h.lease, h.fencing))
    }

    /// The leases waiting for lock `name`, in the order they will be served.
    pub fn waiters(&self, name: &str) -> Vec<LeaseId> {
        match self.locks.get(name) {
            Some(lock) => self.service_order(lock),
            None => Vec::new(),
        }
    }

    /// The time lease `lease` has left, if it is live.
    pub fn time_to_live(&self, lease: LeaseId) -> Option<Time> {
        Some(self.leases.get(&lease)?.deadline.saturating_sub(self.now))
    }

    /// The live leases, by id.
    pub fn leases(&self) -> Vec<LeaseId> {
        self.leases.keys().copied().collect()
    }

    /// Live lease `lease`, if any.
    pub fn lease(&self, lease: LeaseId) -> Option<&Lease> {
        self.leases.get(&lease)
    }

    /// The names of the locks that are held, waited for or in their lock-delay.
    pub fn locks(&self) -> Vec<String> {
        self.locks.keys().cloned().collect()
    }

    /// The leader of `election` (its earliest live candidate), if any.
    pub fn leader(&self, election: &str) -> Option<Candidate> {
        self.elections.get(election)?.first().cloned()
    }

    /// The candidates of `election`, leader first, in campaign order.
    pub fn candidates(&self, election: &str) -> &[Candidate] {
        self.elections.get(election).map_or(&[], |c| c.as_slice())
    }

    /// The key-value store.
    pub fn kv(&self) -> &KvStore {
        &self.kv
    }

    /// The edges of the wait-for graph, `(waiter, holder)`, sorted.
    pub fn wait_for_edges(&self) -> Vec<(LeaseId, LeaseId)> {
        let mut edges = BTreeSet::new();
        for lock in self.locks.values() {
            if let Some(h) = lock.holder {
                for w in &lock.waiters {
                    edges.insert((w.lease, h.lease));
                }
            }
        }
        edges.into_iter().collect()
    }

    // ----- leases -----

    fn tick(&mut self, elapsed: Time, step: &mut Step) -> Reply {
        let elapsed = if Planted::active(self.planted, Planted::FastClock) { elapsed * 4 } else { elapsed };
        self.now = self.now.saturating_add(elapsed);
        for lease in self.leases.values_mut().filter(|l| l.uncounted) {
            lease.deadline = lease.deadline.saturating_add(elapsed);
            lease.uncounted = false;
        }
        let expired: Vec<LeaseId> =
            self.leases.iter().filter(|(_, l)| l.deadline <= self.now).map(|(id, _)| *id).collect();
        for lease in expired {
            self.drop_lease(lease, LossReason::Expired, step);
        }
        // Every pending hand-over whose lock-delay has passed happens now.
        step.touched_locks.extend(self.locks.keys().cloned());
        Reply::Done
    }

    fn grant(&mut self, ttl: Time, origin: NodeId, owner: Option<Owner>, index: u64) -> Reply {
        if ttl == 0 {
            return Reply::Refused { reason: Refusal::ZeroTtl };
        }
        let deadline = self.now.saturating_add(ttl);
        self.leases.insert(index, Lease { ttl, deadline, uncounted: true, origin, owner });
        Reply::Granted { lease: index, ttl }
    }

    fn keep_alive(&mut self, lease: LeaseId) -> Reply {
        let now = self.now;
        match self.leases.get_mut(&lease) {
            Some(l) => {
                l.deadline = now.saturating_add(l.ttl);
                l.uncounted = true;
                Reply::KeptAlive { ttl_left: l.ttl }
            }
            None => Reply::NoSuchLease,
        }
    }

    /// Ends a live lease: it loses every lock it holds, leaves every queue and every election.
    fn drop_lease(&mut self, lease: LeaseId, reason: LossReason, step: &mut Step) {
        let Some(record) = self.leases.remove(&lease) else {
            return;
        };
        let origin = record.origin;
        if reason == LossReason::Expired {
            step.notices.push(Notice::LeaseExpired { lease, origin });
        }
        let events = self.kv.drop_lease(step.index, lease);
        step.key_events.extend(events);
        let names: Vec<String> = self.locks.keys().cloned().collect();
        for name in names {
            let involuntary = reason == LossReason::Expired;
            let lock_delay = self.lock_delay;
            let now = self.now;
            let Some(lock) = self.locks.get_mut(&name) else {
                continue;
            };
            let mut touched = false;
            if lock.holder.is_some_and(|h| h.lease == lease) {
                lock.holder = None;
                if involuntary {
                    lock.delay_until = lock.delay_until.max(now.saturating_add(lock_delay));
                }
                step.notices.push(Notice::Lost { name: name.clone(), lease, origin, reason });
                touched = true;
            }
            let before = lock.waiters.len();
            lock.waiters.retain(|w| w.lease != lease);
            touched |= lock.waiters.len() != before;
            if touched {
                step.touched_locks.insert(name);
            }
        }
        let elections: Vec<String> = self
            .elections
            .iter()
            .filter(|(_, c)| c.iter().any(|c| c.lease == lease))
            .map(|(name, _)| name.clone())
            .collect();
        for election in elections {
            self.touch_election(&election, step);
            if let Some(candidates) = self.elections.get_mut(&election) {
                candidates.retain(|c| c.lease != lease);
            }
        }
    }

    // ----- locks -----

    fn acquire(
        &mut self,
        name: &str,
        lease: LeaseId,
        request: RequestId,
        wait: bool,
        step: &mut Step,
    ) -> Reply {
        if name.is_empty() {
            return Reply::Refused { reason: Refusal::EmptyName };
        }
        if !self.leases.contains_key(&lease) {
            return Reply::NoSuchLease;
        }
        let now = self.now;
        // Touched so that settling forgets the entry again if nothing ends up in it.
        step.touched_locks.insert(name.to_string());
        let lock = self.locks.entry(name.to_string()).or_default();
        if let Some(h) = lock.holder
            && h.lease == lease
        {
            return Reply::Acquired { fencing: h.fencing };
        }
        if !wait {
            return match lock.holder {
                Some(_) => Reply::Busy,
                None if now < lock.delay_until => Reply::LockDelay { until: lock.delay_until },
                None => {
                    // Free and out of its delay: granted at once (and its queue is empty,
                    // since a free lock past its delay has been handed over).
                    step.touched_locks.insert(name.to_string());
                    self.enqueue(name, lease, request);
                    self.settle(step);
                    self.acquire_outcome(name, lease, step)
                }
            };
        }
        if let Some(w) = lock.waiters.iter_mut().find(|w| w.lease == lease) {
            // A repeated acquire by a waiter keeps its place; the notice answers the latest.
            w.request = request;
            return self.acquire_outcome(name, lease, step);
        }
        if let Some(h) = lock.holder {
            let cycle = self.cycle_through(lease, h.lease);
            match self.policy {
                DeadlockPolicy::Report => {
                    if let Some(cycle) = cycle {
                        step.notices.push(Notice::Deadlock { cycle, victim: None });
                    }
                }
                DeadlockPolicy::WaitDie => {
                    if lease > h.lease {
                        if let Some(cycle) = cycle {
                            step.notices.push(Notice::Deadlock { cycle, victim: Some(lease) });
                        }
                        return Reply::Aborted;
                    }
                }
                DeadlockPolicy::WoundWait => {
                    if lease < h.lease {
                        if let Some(cycle) = cycle {
                            step.notices.push(Notice::Deadlock { cycle, victim: Some(h.lease) });
                        }
                        self.wound(name, step);
                    }
                }
            }
        }
        step.touched_locks.insert(name.to_string());
        self.enqueue(name, lease, request);
        self.settle(step);
        self.acquire_outcome(name, lease, step)
    }

    /// Adds `lease` at the back of `name`'s queue.
    fn enqueue(&mut self, name: &str, lease: LeaseId, request: RequestId) {
        self.locks.entry(name.to_string()).or_default().waiters.push_back(Waiter { lease, request });
    }

    /// The reply to an acquire by `lease` once its entry has settled: held (the hand-over's
    /// notice to the requester itself is dropped, the reply says it), queued, or dropped by
    /// wait-die.
    fn acquire_outcome(&self, name: &str, lease: LeaseId, step: &mut Step) -> Reply {
        let own = |n: &Notice| match n {
            Notice::Granted { name: g, lease: l, .. } | Notice::Aborted { name: g, lease: l, .. } => {
                g == name && *l == lease
            }
            _ => false,
        };
        step.notices.retain(|n| !own(n));
        if let Some((holder, fencing)) = self.holder(name)
            && holder == lease
        {
            return Reply::Acquired { fencing };
        }
        match self.waiters(name).iter().position(|w| *w == lease) {
            Some(position) => Reply::Queued { position },
            None => Reply::Aborted,
        }
    }

    fn release(&mut self, name: &str, lease: LeaseId, step: &mut Step) -> Reply {
        if name.is_empty() {
            return Reply::Refused { reason: Refusal::EmptyName };
        }
        if !self.leases.contains_key(&lease) {
            return Reply::NoSuchLease;
        }
        let not_holder = Reply::Refused { reason: Refusal::NotHolder };
        let Some(lock) = self.locks.get_mut(name) else {
            return not_holder;
        };
        if let Some(h) = lock.holder.filter(|h| h.lease == lease) {
            lock.holder = None;
            if Planted::active(self.planted, Planted::FencingReused) {
                lock.released_token = Some(h.fencing);
            }
        } else if let Some(at) = lock.waiters.iter().position(|w| w.lease == lease) {
            lock.waiters.remove(at);
        } else {
            return not_holder;
        }
        step.touched_locks.insert(name.to_string());
        Reply::Done
    }

    /// Wound-wait: the holder of `name` loses it; lock-delay applies.
    fn wound(&mut self, name: &str, step: &mut Step) {
        let delay_until = self.now.saturating_add(self.lock_delay);
        let Some(lock) = self.locks.get_mut(name) else {
            return;
        };
        let Some(h) = lock.holder.take() else {
            return;
        };
        lock.delay_until = lock.delay_until.max(delay_until);
        let origin = self.leases.get(&h.lease).map_or(0, |l| l.origin);
        step.notices.push(Notice::Lost {
            name: name.to_string(),
            lease: h.lease,
            origin,
            reason: LossReason::Wounded,
        });
        step.touched_locks.insert(name.to_string());
    }

    /// The waiters of `lock` in the order they are served: arrival order, or oldest first
    /// under wound-wait.
    fn service_order(&self, lock: &Lock) -> Vec<LeaseId> {
        let mut order: Vec<LeaseId> = lock.waiters.iter().map(|w| w.lease).collect();
        if self.policy == DeadlockPolicy::WoundWait {
            order.sort_unstable();
        }
        order
    }

    /// Hands over every touched lock that is free, past its delay and waited for; drops locks
    /// with nothing left to keep; reports every change of an election's leader.
    fn settle(&mut self, step: &mut Step) {
        let names = std::mem::take(&mut step.touched_locks);
        for name in names {
            self.hand_over(&name, step);
        }
        let elections = std::mem::take(&mut step.leaders_before);
        for (election, before) in elections {
            let leader = self.leader(&election);
            let after = leader.as_ref().map(|c| (c.lease, c.value.clone()));
            if before != after {
                step.notices.push(Notice::LeaderChanged { election: election.clone(), leader });
            }
            if self.elections.get(&election).is_some_and(|c| c.is_empty()) {
                self.elections.remove(&election);
            }
        }
    }

    /// Grants lock `name` to the next waiter if it is free and past its delay, applying the
    /// deadlock policy to the waits the hand-over creates; forgets the lock if nothing is left.
    fn hand_over(&mut self, name: &str, step: &mut Step) {
        let now = self.now;
        let policy = self.policy;
        let Some(lock) = self.locks.get(name) else {
            return;
        };
        if (lock.holder.is_none() || Planted::active(self.planted, Planted::GrantWhileHeld))
            && now >= lock.delay_until
            && let Some(&next) = self.service_order(lock).first()
            && let Some(lock) = self.locks.get_mut(name)
            && let Some(at) = lock.waiters.iter().position(|w| w.lease == next)
            && let Some(w) = lock.waiters.remove(at)
        {
            let fencing = match lock.released_token.take() {
                Some(token) if Planted::active(self.planted, Planted::FencingReused) => token,
                _ => step.index,
            };
            lock.holder = Some(Holder { lease: w.lease, fencing });
            let origin = self.leases.get(&w.lease).map_or(0, |l| l.origin);
            step.notices.push(Notice::Granted {
                name: name.to_string(),
                lease: w.lease,
                origin,
                request: w.request,
                fencing,
            });
            self.after_hand_over(name, w.lease, policy, step);
        }
        if let Some(lock) = self.locks.get(name)
            && lock.holder.is_none()
            && lock.waiters.is_empty()
            && now >= lock.delay_until
        {
            self.locks.remove(name);
        }
    }

    /// The remaining waiters of `name` now wait for `holder`: report the cycles this closes, or
    /// (wait-die) drop the waiters younger than the holder. Wound-wait needs nothing: it serves
    /// the oldest waiter, so every remaining one is younger.
    fn after_hand_over(&mut self, name: &str, holder: LeaseId, policy: DeadlockPolicy, step: &mut Step) {
        let Some(lock) = self.locks.get(name) else {
            return;
        };
        let waiters: Vec<Waiter> = lock.waiters.iter().copied().collect();
        match policy {
            DeadlockPolicy::Report => {
                for w in waiters {
                    if let Some(cycle) = self.cycle_through(w.lease, holder) {
                        step.notices.push(Notice::Deadlock { cycle, victim: None });
                    }
                }
            }
            DeadlockPolicy::WaitDie => {
                let (stay, die): (Vec<Waiter>, Vec<Waiter>) =
                    waiters.into_iter().partition(|w| w.lease < holder);
                if let Some(lock) = self.locks.get_mut(name) {
                    lock.waiters = stay.into_iter().collect();
                }
                for w in die {
                    let origin = self.leases.get(&w.lease).map_or(0, |l| l.origin);
                    step.notices.push(Notice::Aborted {
                        name: name.to_string(),
                        lease: w.lease,
                        origin,
                        request: w.request,
                    });
                }
            }
            DeadlockPolicy::WoundWait => {}
        }
    }

    /// The cycle that the edge `waiter → holder` closes (or has closed), if the wait-for graph
    /// has a path from `holder` back to `waiter`: the shortest such path, found breadth-first in
    /// lease-id order, listed from its smallest lease id in wait-for order.
    fn cycle_through(&self, waiter: LeaseId, holder: LeaseId) -> Option<Vec<LeaseId>> {
        if waiter == holder {
            return Some(vec![waiter]);
        }
        let mut out: BTreeMap<LeaseId, BTreeSet<LeaseId>> = BTreeMap::new();
        for (w, h) in self.wait_for_edges() {
            out.entry(w).or_default().insert(h);
        }
        let mut parent: BTreeMap<LeaseId, LeaseId> = BTreeMap::new();
        let mut queue = VecDeque::from([holder]);
        let mut seen = BTreeSet::from([holder]);
        while let Some(at) = queue.pop_front() {
            if at == waiter {
                // Path holder → … → waiter; the edge waiter → holder closes it.
                let mut path = vec![waiter];
                let mut cur = waiter;
                while let Some(&up) = parent.get(&cur) {
                    cur = up;
                    path.push(cur);
                }
                path.reverse();
                // `path` is in wait-for order starting at `holder`; rotate to the smallest.
                let start = path.iter().enumerate().min_by_key(|(_, l)| **l).map_or(0, |(i, _)| i);
                path.rotate_left(start);
                return Some(path);
            }
            for next in out.get(&at).into_iter().flatten() {
                if seen.insert(*next) {
                    parent.insert(*next, at);
                    queue.push_back(*next);
                }
            }
        }
        None
    }

    // ----- elections -----

    /// Remembers the leader of `election` before this entry changes it (once per entry).
    fn touch_election(&self, election: &str, step: &mut Step) {
        if !step.leaders_before.contains_key(election) {
            let before = self.leader(election).map(|c| (c.lease, c.value));
            step.leaders_before.insert(election.to_string(), before);
        }
    }

    fn campaign(
        &mut self,
        election: &str,
        lease: LeaseId,
        value: &str,
        request: RequestId,
        step: &mut Step,
    ) -> Reply {
        if election.is_empty() {
            return Reply::Refused { reason: Refusal::EmptyName };
        }
        let Some(origin) = self.leases.get(&lease).map(|l| l.origin) else {
            return Reply::NoSuchLease;
        };
        self.touch_election(election, step);
        let candidates = self.elections.entry(election.to_string()).or_default();
        if let Some(c) = candidates.iter_mut().find(|c| c.lease == lease) {
            // A repeated campaign keeps its place and takes the new value (etcd's behaviour).
            c.value = value.to_string();
            c.request = request;
        } else {
            candidates.push(Candidate {
                lease,
                origin,
                value: value.to_string(),
                index: step.index,
                request,
            });
        }
        if candidates.first().is_some_and(|c| c.lease == lease) {
            Reply::Elected
        } else {
            Reply::CampaignQueued
        }
    }

    fn proclaim(&mut self, election: &str, lease: LeaseId, value: &str, step: &mut Step) -> Reply {
        if election.is_empty() {
            return Reply::Refused { reason: Refusal::EmptyName };
        }
        if !self.leases.contains_key(&lease) {
            return Reply::NoSuchLease;
        }
        if self.leader(election).is_none_or(|c| c.lease != lease) {
            return Reply::NotLeader;
        }
        self.touch_election(election, step);
        if let Some(leader) = self.elections.get_mut(election).and_then(|c| c.first_mut()) {
            leader.value = value.to_string();
        }
        Reply::Done
    }

    fn resign(&mut self, election: &str, lease: LeaseId, step: &mut Step) -> Reply {
        if election.is_empty() {
            return Reply::Refused { reason: Refusal::EmptyName };
        }
        if !self.leases.contains_key(&lease) {
            return Reply::NoSuchLease;
        }
        if !self.candidates(election).iter().any(|c| c.lease == lease) {
            return Reply::Refused { reason: Refusal::NotCandidate };
        }
        self.touch_election(election, step);
        if let Some(candidates) = self.elections.get_mut(election) {
            candidates.retain(|c| c.lease != lease);
        }
        Reply::Done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A machine and the next index to apply at.
    struct Log {
        sm: StateMachine,
        next: u64,
    }

    impl Log {
        fn new(lock_delay: Time, policy: DeadlockPolicy) -> Self {
            Log { sm: StateMachine::new(lock_delay, policy), next: 1 }
        }

        /// Applies `op` at the next index.
        fn apply(&mut self, op: Op) -> Applied {
            let index = self.next;
            self.next += 1;
            self.sm.apply(index, &op).unwrap()
        }

        /// Grants a lease of `ttl` for node `origin`; returns its id.
        fn lease(&mut self, ttl: Time, origin: NodeId) -> LeaseId {
            let index = self.next;
            let applied = self.apply(Op::Grant { ttl, origin, request: index, owner: None });
            assert_eq!(applied.reply, Reply::Granted { lease: index, ttl });
            index
        }

        fn tick(&mut self, elapsed: Time) -> Applied {
            self.apply(Op::Tick { elapsed })
        }

        fn acquire(&mut self, name: &str, lease: LeaseId, wait: bool) -> Applied {
            let request = 1000 + self.next;
            self.apply(Op::Acquire { name: name.into(), lease, request, wait })
        }

        fn release(&mut self, name: &str, lease: LeaseId) -> Applied {
            self.apply(Op::Release { name: name.into(), lease })
        }

        fn campaign(&mut self, election: &str, lease: LeaseId, value: &str) -> Applied {
            let request = 1000 + self.next;
            self.apply(Op::Campaign { election: election.into(), lease, value: value.into(), request })
        }
    }

    fn quiet(reply: Reply) -> Applied {
        Applied { reply, notices: vec![] }
    }

    fn lost(name: &str, lease: LeaseId, origin: NodeId, reason: LossReason) -> Notice {
        Notice::Lost { name: name.into(), lease, origin, reason }
    }

    fn granted(name: &str, lease: LeaseId, origin: NodeId, request: RequestId, fencing: u64) -> Notice {
        Notice::Granted { name: name.into(), lease, origin, request, fencing }
    }

    // Rule 1: now = sum of Tick.elapsed; deadline = now at grant or keep-alive + ttl, and the
    // first tick after either moves it on by its elapsed; a tick expires every lease with
    // deadline <= now, in lease-id order.
    #[test]
    fn rule_1_replicated_time_is_the_sum_of_ticks_and_expiry_goes_by_lease_id() {
        let mut log = Log::new(0, DeadlockPolicy::Report);
        let a = log.lease(10, 7); // index 1, deadline 10
        // The leader measured this tick partly before the grant: it does not count toward a.
        log.tick(4);
        assert_eq!(log.sm.now(), 4);
        assert_eq!(log.sm.time_to_live(a), Some(10)); // deadline 14
        let b = log.lease(3, 8); // index 3, deadline 7
        let c = log.lease(2, 9); // index 4, deadline 6
        assert_eq!(log.tick(0), quiet(Reply::Done)); // b's and c's first tick: nothing moves
        assert_eq!(log.sm.time_to_live(c), Some(2));
        // A new leader's first tick continues from the replicated time: a's remaining time is
        // what it was, not its full ttl.
        assert_eq!(log.tick(1), quiet(Reply::Done));
        assert_eq!(log.sm.time_to_live(a), Some(9));
        assert_eq!(log.sm.time_to_live(c), Some(1));
        // Both b (deadline 7) and c (deadline 6) are reached at 7: expired in id order, b first.
        let applied = log.tick(2);
        assert_eq!(
            applied.notices,
            vec![Notice::LeaseExpired { lease: b, origin: 8 }, Notice::LeaseExpired { lease: c, origin: 9 },]
        );
        assert_eq!(log.sm.now(), 7);
        assert_eq!(log.sm.leases(), vec![a]);
        // A deadline exactly reached expires.
        assert_eq!(log.tick(6), quiet(Reply::Done));
        assert_eq!(log.tick(1).notices, vec![Notice::LeaseExpired { lease: a, origin: 7 }]);
        assert_eq!(log.sm.leases(), Vec::<LeaseId>::new());
    }

    // Rule 2: an expired lease releases every lock it holds and leaves every waiter queue and
    // every election it is in.
    #[test]
    fn rule_2_an_expired_lease_releases_its_locks_and_leaves_queues_and_elections() {
        let mut log = Log::new(0, DeadlockPolicy::Report);
        let a = log.lease(5, 1);
        let b = log.lease(100, 2);
        let c = log.lease(100, 3);
        log.acquire("x", a, true); // a holds x
        log.acquire("y", b, true); // b holds y
        log.acquire("y", a, true); // a waits for y
        let waiting = log.acquire("x", c, true); // c waits for x
        assert_eq!(waiting.reply, Reply::Queued { position: 0 });
        log.campaign("e", a, "va");
        log.campaign("e", c, "vc");
        let c_campaign = log.sm.candidates("e")[1].clone();
        log.tick(0); // the first tick after a grant does not count toward it (rule 1)
        let tick = log.next;
        let applied = log.tick(5);
        assert_eq!(
            applied.notices,
            vec![
                Notice::LeaseExpired { lease: a, origin: 1 },
                lost("x", a, 1, LossReason::Expired),
                granted("x", c, 3, 1007, tick),
                Notice::LeaderChanged { election: "e".into(), leader: Some(c_campaign) },
            ]
        );
        assert_eq!(log.sm.holder("x"), Some((c, tick)));
        assert_eq!(log.sm.waiters("y"), Vec::<LeaseId>::new());
        assert_eq!(log.sm.candidates("e").len(), 1);
    }

    // Rule 2: a lock released involuntarily is not granted again before now + lock_delay; the
    // first tick at or after that time hands it over.
    #[test]
    fn rule_2_lock_delay_holds_an_involuntarily_released_lock_until_a_tick_reaches_it() {
        let mut log = Log::new(10, DeadlockPolicy::Report);
        let a = log.lease(5, 1);
        let b = log.lease(100, 2);
        let c = log.lease(100, 3);
        log.acquire("x", a, true);
        log.acquire("x", b, true);
        log.tick(0); // the first tick after a grant does not count toward it (rule 1)
        let applied = log.tick(5); // now 5: a expires, x is delayed until 15
        assert_eq!(
            applied.notices,
            vec![Notice::LeaseExpired { lease: a, origin: 1 }, lost("x", a, 1, LossReason::Expired),]
        );
        assert_eq!(log.sm.holder("x"), None);
        assert_eq!(log.sm.waiters("x"), vec![b]);
        assert_eq!(log.acquire("x", c, false), quiet(Reply::LockDelay { until: 15 }));
        assert_eq!(log.acquire("x", c, true), quiet(Reply::Queued { position: 1 }));
        assert_eq!(log.tick(9), quiet(Reply::Done)); // now 14: still delayed
        assert_eq!(log.sm.holder("x"), None);
        let tick = log.next;
        let applied = log.tick(1); // now 15: handed over to the first waiter only
        assert_eq!(applied.notices, vec![granted("x", b, 2, 1000 + 5, tick)]);
        assert_eq!(log.sm.holder("x"), Some((b, tick)));
        assert_eq!(log.sm.waiters("x"), vec![c]);
    }

    // Rule 2: a lock-delay with nobody waiting still keeps a newcomer out until it passes.
    #[test]
    fn rule_2_lock_delay_applies_to_a_newcomer_when_nobody_waits() {
        let mut log = Log::new(10, DeadlockPolicy::Report);
        let a = log.lease(5, 1);
        let b = log.lease(100, 2);
        log.acquire("x", a, true);
        log.tick(0); // the first tick after a grant does not count toward it (rule 1)
        log.tick(5);
        assert_eq!(log.sm.locks(), vec!["x".to_string()]);
        assert_eq!(log.acquire("x", b, false), quiet(Reply::LockDelay { until: 15 }));
        log.tick(10); // now 15: the delay passed, nobody waited; the lock is forgotten
        assert_eq!(log.sm.locks(), Vec::<String>::new());
        let at = log.next;
        assert_eq!(log.acquire("x", b, false), quiet(Reply::Acquired { fencing: at }));
    }

    // Rule 2: a revoke releases at once (voluntary: no lock-delay), with `Lost { Revoked }`.
    #[test]
    fn rule_2_a_revoke_releases_everything_at_once() {
        let mut log = Log::new(10, DeadlockPolicy::Report);
        let a = log.lease(100, 1);
        let b = log.lease(100, 2);
        log.acquire("x", a, true);
        log.acquire("y", a, true);
        log.acquire("x", b, true);
        log.campaign("e", a, "v");
        let at = log.next;
        let applied = log.apply(Op::Revoke { lease: a });
        assert_eq!(applied.reply, Reply::Done);
        assert_eq!(
            applied.notices,
            vec![
                lost("x", a, 1, LossReason::Revoked),
                lost("y", a, 1, LossReason::Revoked),
                granted("x", b, 2, 1000 + 5, at),
                Notice::LeaderChanged { election: "e".into(), leader: None },
            ]
        );
        assert_eq!(log.sm.holder("x"), Some((b, at)));
        assert_eq!(log.sm.holder("y"), None);
        assert_eq!(log.sm.leader("e"), None);
        assert_eq!(log.apply(Op::Revoke { lease: a }), quiet(Reply::NoSuchLease));
    }

    // Rule 3: one holder, a FIFO queue, a release grants the first waiter only; a try-lock on
    // a held name is refused and never queued.
    #[test]
    fn rule_3_a_release_grants_the_first_waiter_only_and_try_lock_never_queues() {
        let mut log = Log::new(0, DeadlockPolicy::Report);
        let a = log.lease(100, 1);
        let b = log.lease(100, 2);
        let c = log.lease(100, 3);
        let d = log.lease(100, 4);
        assert_eq!(log.acquire("x", a, true), quiet(Reply::Acquired { fencing: 5 }));
        assert_eq!(log.acquire("x", b, true), quiet(Reply::Queued { position: 0 }));
        assert_eq!(log.acquire("x", c, true), quiet(Reply::Queued { position: 1 }));
        assert_eq!(log.acquire("x", d, false), quiet(Reply::Busy));
        assert_eq!(log.sm.waiters("x"), vec![b, c]);
        let applied = log.release("x", a);
        assert_eq!(applied.reply, Reply::Done);
        assert_eq!(applied.notices, vec![granted("x", b, 2, 1006, 9)]);
        assert_eq!(log.sm.holder("x"), Some((b, 9)));
        assert_eq!(log.sm.waiters("x"), vec![c]);
        // A waiter that gives up leaves the queue; nobody is granted.
        assert_eq!(log.release("x", c), quiet(Reply::Done));
        assert_eq!(log.sm.waiters("x"), Vec::<LeaseId>::new());
        // The holder's repeated acquire repeats its token.
        assert_eq!(log.acquire("x", b, true), quiet(Reply::Acquired { fencing: 9 }));
    }

    // Rule 4: the fencing token is the index of the entry that granted the lock.
    #[test]
    fn rule_4_the_fencing_token_is_the_index_of_the_granting_entry() {
        let mut log = Log::new(0, DeadlockPolicy::Report);
        let a = log.lease(100, 1);
        let b = log.lease(100, 2);
        log.next = 40;
        assert_eq!(log.acquire("x", a, true), quiet(Reply::Acquired { fencing: 40 }));
        log.acquire("x", b, true);
        log.next = 90;
        assert_eq!(log.release("x", a).notices, vec![granted("x", b, 2, 1041, 90)]);
        assert_eq!(log.sm.holder("x"), Some((b, 90)));
    }

    /// A small deterministic generator (xorshift64*), for the long random sequences below.
    struct Gen(u64);

    impl Gen {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
        }
    }

    const NAMES: [&str; 4] = ["a", "b", "c", "d"];
    const ELECTIONS: [&str; 2] = ["e", "f"];

    /// A random op over a few names and elections, mostly by live leases, sometimes by a lease
    /// that never existed.
    fn random_op(g: &mut Gen, sm: &StateMachine) -> Op {
        let leases = sm.leases();
        let lease = if leases.is_empty() || g.below(10) == 0 {
            g.below(5000) + 5000
        } else {
            leases[g.below(leases.len() as u64) as usize]
        };
        let name = NAMES[g.below(NAMES.len() as u64) as usize].to_string();
        let election = ELECTIONS[g.below(2) as usize].to_string();
        let request = g.below(1000);
        match g.below(14) {
            0 | 1 => Op::Tick { elapsed: g.below(4) },
            2 | 3 => Op::Grant { ttl: g.below(12), origin: g.below(3) as NodeId, request, owner: None },
            4 => Op::KeepAlive { lease },
            5 => Op::Revoke { lease },
            6..=8 => Op::Acquire { name, lease, request, wait: g.below(4) != 0 },
            9 | 10 => {
                // Mostly by the holder, so that locks change hands; sometimes by anyone.
                let lease = match sm.holder(&name) {
                    Some((holder, _)) if g.below(3) != 0 => holder,
                    _ => lease,
                };
                Op::Release { name, lease }
            }
            11 => Op::Campaign { election, lease, value: format!("v{}", g.below(3)), request },
            12 => Op::Proclaim { election, lease, value: format!("v{}", g.below(3)) },
            _ => Op::Resign { election, lease },
        }
    }

    /// The machine's internal invariants, checked after every entry of the random runs.
    fn check_invariants(sm: &StateMachine) {
        for (name, lock) in &sm.locks {
            if let Some(h) = lock.holder {
                assert!(sm.leases.contains_key(&h.lease), "{name}: dead holder");
                assert!(lock.waiters.iter().all(|w| w.lease != h.lease));
            } else {
                assert!(
                    lock.waiters.is_empty() || sm.now < lock.delay_until,
                    "{name}: free, past its delay, and waited for"
                );
            }
            assert!(lock.holder.is_some() || !lock.waiters.is_empty() || sm.now < lock.delay_until);
            assert!(lock.waiters.iter().all(|w| sm.leases.contains_key(&w.lease)));
        }
        for candidates in sm.elections.values() {
            assert!(!candidates.is_empty());
            assert!(candidates.iter().all(|c| sm.leases.contains_key(&c.lease)));
            assert!(candidates.windows(2).all(|w| w[0].index < w[1].index));
        }
        for (w, h) in sm.wait_for_edges() {
            match sm.policy {
                DeadlockPolicy::WaitDie => assert!(w < h, "wait-die edge {w} -> {h}"),
                DeadlockPolicy::WoundWait => assert!(w > h, "wound-wait edge {w} -> {h}"),
                DeadlockPolicy::Report => {}
            }
        }
    }

    // Rule 4: fencing tokens strictly increase per name, over long random sequences, under
    // every policy, with and without lock-delay.
    #[test]
    fn rule_4_fencing_tokens_strictly_increase_per_name_over_random_runs() {
        let mut grants = 0;
        let mut hand_overs = 0;
        for policy in [DeadlockPolicy::Report, DeadlockPolicy::WaitDie, DeadlockPolicy::WoundWait] {
            for (seed, lock_delay) in [(1u64, 0), (2, 3), (3, 0), (4, 5)] {
                let mut g = Gen(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
                let mut sm = StateMachine::new(lock_delay, policy);
                let mut last: BTreeMap<String, u64> = BTreeMap::new();
                let mut holders: BTreeMap<String, Option<(LeaseId, u64)>> = BTreeMap::new();
                for index in 1..=3000 {
                    let op = random_op(&mut g, &sm);
                    let applied = sm.apply(index, &op).unwrap();
                    // Grants announced (hand-overs): a lock changes hands at most once per entry.
                    let mut fresh: BTreeMap<String, u64> = BTreeMap::new();
                    for n in &applied.notices {
                        if let Notice::Granted { name, fencing, .. } = n {
                            let again = fresh.insert(name.clone(), *fencing);
                            assert_eq!(again, None, "{name} granted twice at {index}");
                            hand_overs += 1;
                        }
                    }
                    // Grants seen in the state (hand-overs and acquires of a free lock).
                    for name in NAMES {
                        let now = sm.holder(name);
                        let before = holders.insert(name.to_string(), now).flatten();
                        if let Some((_, fencing)) = now
                            && now != before
                        {
                            assert_eq!(fencing, index, "a new holder's token is the entry's index");
                            fresh.insert(name.to_string(), fencing);
                        }
                    }
                    for (name, fencing) in fresh {
                        assert_eq!(fencing, index);
                        let prev = last.insert(name.clone(), fencing).unwrap_or(0);
                        assert!(fencing > prev, "{name}: token {fencing} after {prev}");
                        grants += 1;
                    }
                    check_invariants(&sm);
                }
            }
        }
        // The runs exercise hand-overs, not only first grants.
        assert!(grants > 1000, "only {grants} grants");
        assert!(hand_overs > 300, "only {hand_overs} hand-overs");
    }

    // Rule 5: an operation by an unknown or expired lease is refused and changes nothing.
    #[test]
    fn rule_5_an_unknown_or_expired_lease_is_refused_and_changes_nothing() {
        let mut log = Log::new(0, DeadlockPolicy::Report);
        let a = log.lease(2, 1);
        let b = log.lease(100, 2);
        log.acquire("x", b, true);
        log.campaign("e", b, "v");
        log.tick(0); // the first tick after a grant does not count toward it (rule 1)
        log.tick(2); // a expires
        for lease in [a, 999] {
            for op in [
                Op::KeepAlive { lease },
                Op::Revoke { lease },
                Op::Acquire { name: "x".into(), lease, request: 1, wait: true },
                Op::Acquire { name: "y".into(), lease, request: 1, wait: false },
                Op::Release { name: "x".into(), lease },
                Op::Campaign { election: "e".into(), lease, value: "w".into(), request: 1 },
                Op::Proclaim { election: "e".into(), lease, value: "w".into() },
                Op::Resign { election: "e".into(), lease },
            ] {
                let mut before = log.sm.clone();
                let applied = log.apply(op.clone());
                assert_eq!(applied, quiet(Reply::NoSuchLease), "{op:?}");
                before.last_applied = log.sm.last_applied();
                assert_eq!(before, log.sm, "{op:?} changed the state");
            }
        }
    }

    // Rule 5: a keep-alive renews the deadline to now + ttl.
    #[test]
    fn rule_5_keep_alive_renews_the_deadline_to_now_plus_ttl() {
        let mut log = Log::new(0, DeadlockPolicy::Report);
        let a = log.lease(10, 1);
        log.tick(0); // the first tick after a grant does not count toward it (rule 1)
        log.tick(7);
        assert_eq!(log.sm.time_to_live(a), Some(3));
        assert_eq!(log.apply(Op::KeepAlive { lease: a }), quiet(Reply::KeptAlive { ttl_left: 10 }));
        assert_eq!(log.sm.time_to_live(a), Some(10));
        assert_eq!(log.sm.lease(a).map(|l| l.deadline), Some(17));
        // Nor does the first tick after a keep-alive: the deadline moves on by its elapsed.
        assert_eq!(log.tick(2), quiet(Reply::Done));
        assert_eq!(log.sm.lease(a).map(|l| l.deadline), Some(19));
        assert_eq!(log.tick(9), quiet(Reply::Done));
        assert_eq!(log.tick(1).notices, vec![Notice::LeaseExpired { lease: a, origin: 1 }]);
    }

    // Rule 6: a campaign queues a candidate; the leader is the earliest live candidate; only
    // the leader proclaims; resign removes; every change of (leader, value) gives exactly one
    // LeaderChanged, including to no leader.
    #[test]
    fn rule_6_elections_follow_etcd_and_every_change_is_noticed_once() {
        let mut log = Log::new(0, DeadlockPolicy::Report);
        let a = log.lease(100, 1);
        let b = log.lease(5, 2);
        let applied = log.campaign("e", a, "va");
        let ca = Candidate { lease: a, origin: 1, value: "va".into(), index: 3, request: 1003 };
        assert_eq!(applied.reply, Reply::Elected);
        assert_eq!(
            applied.notices,
            vec![Notice::LeaderChanged { election: "e".into(), leader: Some(ca.clone()) }]
        );
        assert_eq!(log.campaign("e", b, "vb"), quiet(Reply::CampaignQueued));
        let cb = log.sm.candidates("e")[1].clone();
        assert_eq!((cb.lease, cb.index, cb.value.as_str()), (b, 4, "vb"));
        // Only the leader proclaims.
        let proclaim = |lease, value: &str| Op::Proclaim { election: "e".into(), lease, value: value.into() };
        assert_eq!(log.apply(proclaim(b, "x")), quiet(Reply::NotLeader));
        let applied = log.apply(proclaim(a, "va2"));
        let ca2 = Candidate { value: "va2".into(), ..ca.clone() };
        assert_eq!(applied.reply, Reply::Done);
        assert_eq!(
            applied.notices,
            vec![Notice::LeaderChanged { election: "e".into(), leader: Some(ca2.clone()) }]
        );
        // Proclaiming the same value changes nothing: no notice.
        assert_eq!(log.apply(proclaim(a, "va2")), quiet(Reply::Done));
        // A repeated campaign by the leader keeps its place and proclaims its new value.
        let applied = log.campaign("e", a, "va3");
        assert_eq!(applied.reply, Reply::Elected);
        assert_eq!(log.sm.leader("e").map(|c| (c.lease, c.index, c.value)), Some((a, 3, "va3".into())));
        assert_eq!(applied.notices.len(), 1);
        // Resign by the leader: b leads.
        let resign = |lease| Op::Resign { election: "e".into(), lease };
        let applied = log.apply(resign(a));
        assert_eq!(applied.reply, Reply::Done);
        assert_eq!(
            applied.notices,
            vec![Notice::LeaderChanged { election: "e".into(), leader: Some(cb.clone()) }]
        );
        assert_eq!(log.apply(resign(a)), quiet(Reply::Refused { reason: Refusal::NotCandidate }));
        // b expires: no leader.
        log.tick(0); // the first tick after a grant does not count toward it (rule 1)
        let applied = log.tick(5);
        assert_eq!(
            applied.notices,
            vec![
                Notice::LeaseExpired { lease: b, origin: 2 },
                Notice::LeaderChanged { election: "e".into(), leader: None },
            ]
        );
        assert_eq!(log.sm.leader("e"), None);
        assert!(log.sm.candidates("e").is_empty());
    }

    // Rule 6: a queued candidate that resigns changes nothing observable: no notice.
    #[test]
    fn rule_6_a_follower_resigning_gives_no_notice() {
        let mut log = Log::new(0, DeadlockPolicy::Report);
        let a = log.lease(100, 1);
        let b = log.lease(100, 2);
        log.campaign("e", a, "va");
        log.campaign("e", b, "vb");
        let applied = log.apply(Op::Resign { election: "e".into(), lease: b });
        assert_eq!(applied, quiet(Reply::Done));
        assert_eq!(log.sm.candidates("e").len(), 1);
    }

    /// Leases 1, 2, 3 each holding one lock (l1, l2, l3), for the deadlock tests.
    fn three_holders(policy: DeadlockPolicy) -> Log {
        let mut log = Log::new(0, policy);
        for origin in 1..=3 {
            let lease = log.lease(100, origin);
            assert_eq!(lease, u64::from(origin));
        }
        for lease in 1..=3 {
            let name = format!("l{lease}");
            assert_eq!(log.acquire(&name, lease, true).reply, Reply::Acquired { fencing: log.next - 1 });
        }
        log
    }

    // Rule 7 (Report): a wait that closes a cycle is queued and the cycle reported, from its
    // smallest lease id in wait-for order.
    #[test]
    fn rule_7_report_queues_the_wait_and_lists_the_cycle_from_its_smallest_lease() {
        let mut log = three_holders(DeadlockPolicy::Report);
        assert_eq!(log.acquire("l3", 1, true), quiet(Reply::Queued { position: 0 })); // 1 -> 3
        assert_eq!(log.acquire("l2", 3, true), quiet(Reply::Queued { position: 0 })); // 3 -> 2
        let applied = log.acquire("l1", 2, true); // 2 -> 1 closes 1 -> 3 -> 2 -> 1
        assert_eq!(applied.reply, Reply::Queued { position: 0 });
        assert_eq!(applied.notices, vec![Notice::Deadlock { cycle: vec![1, 3, 2], victim: None }]);
        assert_eq!(log.sm.wait_for_edges(), vec![(1, 3), (2, 1), (3, 2)]);
    }

    // Rule 7 (Report): a cycle that a hand-over closes is reported too.
    #[test]
    fn rule_7_report_a_cycle_closed_by_a_hand_over() {
        let mut log = three_holders(DeadlockPolicy::Report);
        // 2 and 3 wait for l1; 2 also waits for l3 (held by 3).
        log.acquire("l1", 2, true);
        log.acquire("l1", 3, true);
        assert_eq!(log.acquire("l3", 2, true).notices, vec![]);
        // 1 releases l1: 2 gets it, and 3 now waits for 2 while 2 waits for 3.
        let at = log.next;
        let applied = log.release("l1", 1);
        assert_eq!(
            applied.notices,
            vec![granted("l1", 2, 2, 1007, at), Notice::Deadlock { cycle: vec![2, 3], victim: None },]
        );
    }

    // Rule 7 (WaitDie): a younger requester is refused (Aborted), with a Deadlock notice when
    // its wait would have closed a cycle; an older one waits.
    #[test]
    fn rule_7_wait_die_refuses_a_younger_requester_and_queues_an_older_one() {
        let mut log = three_holders(DeadlockPolicy::WaitDie);
        assert_eq!(log.acquire("l3", 1, true), quiet(Reply::Queued { position: 0 })); // 1 -> 3
        assert_eq!(log.acquire("l2", 1, true), quiet(Reply::Queued { position: 0 })); // 1 -> 2
        // 3 is younger than 2: it dies, no cycle would close.
        assert_eq!(log.acquire("l2", 3, true), quiet(Reply::Aborted));
        // 3 asks for l1 (held by 1, which waits for 3): younger, dies, and a cycle would close.
        let applied = log.acquire("l1", 3, true);
        assert_eq!(applied.reply, Reply::Aborted);
        assert_eq!(applied.notices, vec![Notice::Deadlock { cycle: vec![1, 3], victim: Some(3) }]);
        assert_eq!(log.sm.wait_for_edges(), vec![(1, 2), (1, 3)]);
    }

    // Rule 7 (WaitDie): after a hand-over, the remaining waiters younger than the new holder
    // die (Notice::Aborted); older ones keep waiting.
    #[test]
    fn rule_7_wait_die_applies_to_the_waits_a_hand_over_creates() {
        let mut log = Log::new(0, DeadlockPolicy::WaitDie);
        let leases: Vec<LeaseId> = (1..=4).map(|o| log.lease(100, o)).collect();
        let [a, b, c, d] = leases[..] else { unreachable!() };
        log.acquire("x", d, true); // d (youngest) holds
        log.acquire("x", b, true);
        log.acquire("x", c, true);
        log.acquire("x", a, true);
        assert_eq!(log.sm.waiters("x"), vec![b, c, a]);
        let at = log.next;
        let applied = log.release("x", d);
        assert_eq!(
            applied.notices,
            vec![
                granted("x", b, 2, 1006, at),
                Notice::Aborted { name: "x".into(), lease: c, origin: 3, request: 1007 },
            ]
        );
        assert_eq!(log.sm.waiters("x"), vec![a]);
    }

    // Rule 7 (WoundWait): an older requester wounds a younger holder and is granted next; a
    // younger requester waits.
    #[test]
    fn rule_7_wound_wait_an_older_requester_wounds_the_younger_holder() {
        let mut log = three_holders(DeadlockPolicy::WoundWait);
        // 3 is younger than 2: it waits.
        assert_eq!(log.acquire("l2", 3, true), quiet(Reply::Queued { position: 0 })); // 3 -> 2
        // 2 asks for l3 (held by 3, which waits for 2): older, wounds 3, a cycle would close.
        let at = log.next;
        let applied = log.acquire("l3", 2, true);
        assert_eq!(applied.reply, Reply::Acquired { fencing: at });
        assert_eq!(
            applied.notices,
            vec![
                Notice::Deadlock { cycle: vec![2, 3], victim: Some(3) },
                lost("l3", 3, 3, LossReason::Wounded),
            ]
        );
        assert_eq!(log.sm.holder("l3"), Some((2, at)));
        assert_eq!(log.sm.wait_for_edges(), vec![(3, 2)]);
    }

    // Rule 7 (WoundWait): wounding is involuntary, so lock-delay applies; the queue is served
    // oldest first.
    #[test]
    fn rule_7_wound_wait_serves_the_oldest_waiter_after_the_lock_delay() {
        let mut log = Log::new(4, DeadlockPolicy::WoundWait);
        let leases: Vec<LeaseId> = (1..=4).map(|o| log.lease(100, o)).collect();
        let [a, b, c, d] = leases[..] else { unreachable!() };
        log.acquire("x", c, true); // c holds
        assert_eq!(log.acquire("x", d, true), quiet(Reply::Queued { position: 0 }));
        let applied = log.acquire("x", b, true); // older than c: wounds it
        assert_eq!(applied.reply, Reply::Queued { position: 0 });
        assert_eq!(applied.notices, vec![lost("x", c, 3, LossReason::Wounded)]);
        assert_eq!(log.acquire("x", a, true), quiet(Reply::Queued { position: 0 }));
        assert_eq!(log.sm.waiters("x"), vec![a, b, d]);
        assert_eq!(log.tick(3), quiet(Reply::Done));
        let at = log.next;
        assert_eq!(log.tick(1).notices, vec![granted("x", a, 1, 1008, at)]);
        assert_eq!(log.sm.waiters("x"), vec![b, d]);
    }

    // Rule 7: under the prevention policies every wait-for edge points one way in age, so no
    // cycle ever forms (checked by `check_invariants` in the random runs); under Report the
    // same runs do produce deadlocks.
    #[test]
    fn rule_7_prevention_keeps_the_wait_for_graph_acyclic_and_report_finds_cycles() {
        let mut counts = BTreeMap::new();
        for policy in [DeadlockPolicy::Report, DeadlockPolicy::WaitDie, DeadlockPolicy::WoundWait] {
            let mut g = Gen(0x5eed);
            let mut sm = StateMachine::new(0, policy);
            let mut deadlocks = 0;
            let mut victims = 0;
            for index in 1..=4000 {
                let op = random_op(&mut g, &sm);
                let applied = sm.apply(index, &op).unwrap();
                if applied.reply == Reply::Aborted {
                    victims += 1;
                }
                for n in &applied.notices {
                    if matches!(n, Notice::Aborted { .. } | Notice::Lost { reason: LossReason::Wounded, .. })
                    {
                        victims += 1;
                    }
                    if let Notice::Deadlock { cycle, victim } = n {
                        deadlocks += 1;
                        assert!(cycle.len() >= 2);
                        assert_eq!(cycle.iter().min(), cycle.first());
                        assert_eq!(victim.is_some(), policy != DeadlockPolicy::Report);
                    }
                }
                check_invariants(&sm);
                if policy != DeadlockPolicy::Report {
                    for &(w, _) in &sm.wait_for_edges() {
                        assert_eq!(sm.cycle_through_from(w), None);
                    }
                }
            }
            counts.insert(format!("{policy:?}"), (deadlocks, victims));
        }
        // Report finds cycles and sacrifices nobody; prevention sacrifices (aborts, wounds).
        assert!(counts["Report"].0 > 0 && counts["Report"].1 == 0, "{counts:?}");
        assert!(counts["WaitDie"].1 > 20 && counts["WoundWait"].1 > 20, "{counts:?}");
    }

    impl StateMachine {
        /// A cycle through `lease` in the current graph, if any.
        fn cycle_through_from(&self, lease: LeaseId) -> Option<Vec<LeaseId>> {
            self.wait_for_edges()
                .into_iter()
                .filter(|(w, _)| *w == lease)
                .find_map(|(w, h)| self.cycle_through(w, h))
        }
    }

    // Rule 8: queries are pure reads of the state.
    #[test]
    fn rule_8_queries_read_the_state() {
        let mut log = Log::new(0, DeadlockPolicy::Report);
        let a = log.lease(10, 1);
        let b = log.lease(20, 2);
        log.tick(3);
        log.acquire("x", a, true);
        log.acquire("x", b, true);
        log.campaign("e", b, "vb");
        let before = log.sm.clone();
        assert_eq!(log.sm.now(), 3);
        assert_eq!(log.sm.last_applied(), 6);
        assert_eq!(log.sm.holder("x"), Some((a, 4)));
        assert_eq!(log.sm.holder("nope"), None);
        assert_eq!(log.sm.waiters("x"), vec![b]);
        assert_eq!(log.sm.time_to_live(a), Some(10)); // the tick was its first (rule 1)
        assert_eq!(log.sm.time_to_live(99), None);
        assert_eq!(log.sm.leases(), vec![a, b]);
        assert_eq!(log.sm.leader("e").map(|c| c.lease), Some(b));
        assert_eq!(log.sm.candidates("none"), &[] as &[Candidate]);
        assert_eq!(log.sm.wait_for_edges(), vec![(b, a)]);
        assert_eq!(log.sm.locks(), vec!["x".to_string()]);
        assert_eq!(before, log.sm);
    }

    // Rule 9: a machine restored from its serialized form applies the rest of the log exactly
    // as the original: split the log at every point.
    #[test]
    fn rule_9_a_restored_snapshot_applies_the_rest_of_the_log_identically() {
        for policy in [DeadlockPolicy::Report, DeadlockPolicy::WaitDie, DeadlockPolicy::WoundWait] {
            let mut g = Gen(0xfeed);
            let mut sm = StateMachine::new(2, policy);
            let mut log: Vec<(u64, Op)> = Vec::new();
            let mut applied: Vec<Applied> = Vec::new();
            let mut snapshots: Vec<String> = Vec::new();
            let mut index = 0;
            for _ in 0..300 {
                snapshots.push(serde_json::to_string(&sm).unwrap());
                index += 1 + g.below(2); // indexes may skip (entries that are not commands)
                let op = random_op(&mut g, &sm);
                applied.push(sm.apply(index, &op).unwrap());
                log.push((index, op));
            }
            for (split, snapshot) in snapshots.iter().enumerate() {
                let mut restored: StateMachine = serde_json::from_str(snapshot).unwrap();
                for (k, (index, op)) in log.iter().enumerate().skip(split) {
                    assert_eq!(restored.apply(*index, op).unwrap(), applied[k], "split {split}, entry {k}");
                }
                assert_eq!(restored, sm, "split {split}");
            }
        }
    }

    /// A random operation of the random runs, a third of them transactions on a few keys.
    fn random_kv_op(g: &mut Gen, sm: &StateMachine) -> Op {
        use crate::kv::{
            Compare, CompareResult, CompareTarget, DeleteRangeRequest, PutRequest, RangeRequest, RequestOp,
        };
        if g.below(3) != 0 {
            return random_op(g, sm);
        }
        let leases = sm.leases();
        let key = |g: &mut Gen| format!("k/{}", g.below(4)).into_bytes();
        let request = |g: &mut Gen| match g.below(4) {
            0 => RequestOp::Range(RangeRequest {
                key: key(g),
                range_end: b"k0".to_vec(),
                ..Default::default()
            }),
            1 => RequestOp::DeleteRange(DeleteRangeRequest { key: key(g), range_end: vec![], prev_kv: true }),
            _ => {
                let lease = match g.below(3) {
                    0 if !leases.is_empty() => leases[g.below(leases.len() as u64) as usize],
                    1 => 9999,
                    _ => 0,
                };
                RequestOp::Put(PutRequest {
                    key: key(g),
                    value: vec![g.below(3) as u8],
                    lease,
                    prev_kv: true,
                    ..Default::default()
                })
            }
        };
        let compare = (0..g.below(2))
            .map(|_| Compare {
                key: key(g),
                range_end: vec![],
                target: CompareTarget::Version(g.below(3) as i64),
                result: CompareResult::Equal,
            })
            .collect();
        let success = (0..1 + g.below(3)).map(|_| request(g)).collect();
        let failure = (0..g.below(2)).map(|_| request(g)).collect();
        Op::Txn { txn: Txn { compare, success, failure } }
    }

    // Rule 9 with the key-value store: keys, leases attached to keys, and a history short
    // enough to be trimmed; every key's lease is live after every entry.
    #[test]
    fn rule_9_a_restored_snapshot_with_keys_applies_the_rest_of_the_log_identically() {
        let mut g = Gen(0xbeef);
        let mut sm = StateMachine::new(2, DeadlockPolicy::Report).with_history_limit(8);
        let mut log: Vec<(u64, Op)> = Vec::new();
        let mut applied: Vec<Applied> = Vec::new();
        let mut snapshots: Vec<Vec<u8>> = Vec::new();
        let mut index = 0;
        let mut writes = 0;
        for _ in 0..400 {
            snapshots.push(postcard::to_allocvec(&sm).unwrap());
            index += 1 + g.below(2);
            let op = random_kv_op(&mut g, &sm);
            let a = sm.apply(index, &op).unwrap();
            writes += a.notices.iter().filter(|n| matches!(n, Notice::KeyEvents { .. })).count();
            for key in sm
                .kv()
                .range(
                    &crate::kv::RangeRequest { key: vec![0], range_end: vec![0], ..Default::default() },
                    index,
                )
                .unwrap()
                .kvs
            {
                assert!(
                    key.lease == 0 || sm.lease(key.lease).is_some(),
                    "key {:?} outlived lease {}",
                    key.key,
                    key.lease
                );
            }
            assert!(sm.kv().history_len() <= 8);
            applied.push(a);
            log.push((index, op));
        }
        assert!(writes > 50, "the run wrote only {writes} times");
        assert!(sm.kv().first_kept() > 1, "the history was never trimmed");
        for (split, snapshot) in snapshots.iter().enumerate() {
            let mut restored: StateMachine = postcard::from_bytes(snapshot).unwrap();
            for (k, (index, op)) in log.iter().enumerate().skip(split) {
                assert_eq!(restored.apply(*index, op).unwrap(), applied[k], "split {split}, entry {k}");
            }
            assert_eq!(restored, sm, "split {split}");
        }
    }

    #[test]
    fn a_revoked_or_expired_lease_deletes_its_keys_at_that_entry() {
        use crate::kv::{EventKind, PutRequest, RequestOp};
        let mut log = Log::new(0, DeadlockPolicy::Report);
        let a = log.lease(10, 1);
        let b = log.lease(3, 1);
        let put = |key: &str, lease| Op::Txn {
            txn: Txn {
                success: vec![RequestOp::Put(PutRequest { key: key.into(), lease, ..Default::default() })],
                ..Default::default()
            },
        };
        let r = log.apply(put("x", a));
        assert!(matches!(r.reply, Reply::Txn { revision: 3, .. }), "{r:?}");
        log.apply(put("y", b));
        assert_eq!(log.apply(put("z", 77)).reply, Reply::KvRefused { error: KvError::LeaseNotFound });
        log.tick(0); // the first tick after a grant does not count toward it (rule 1)
        let expiry = log.tick(3); // entry 7: b expires
        let Some(Notice::KeyEvents { events }) = expiry.notices.last() else { panic!("{expiry:?}") };
        assert_eq!(events.len(), 1);
        assert_eq!(
            (events[0].kind, events[0].kv.key.as_slice(), events[0].kv.mod_revision),
            (EventKind::Delete, &b"y"[..], 7)
        );
        let revoke = log.apply(Op::Revoke { lease: a }); // entry 8
        assert_eq!(
            revoke.notices,
            vec![Notice::KeyEvents {
                events: vec![crate::kv::KeyEvent {
                    kind: EventKind::Delete,
                    kv: crate::kv::KeyValue { key: b"x".to_vec(), mod_revision: 8, ..Default::default() },
                    prev_kv: Some(crate::kv::KeyValue {
                        key: b"x".to_vec(),
                        create_revision: 3,
                        mod_revision: 3,
                        version: 1,
                        value: vec![],
                        lease: a
                    }),
                }]
            }]
        );
        assert!(log.sm.kv().is_empty());
    }

    impl Log {
        /// Applies `op` carrying `key` at the next index.
        fn once(&mut self, key: IdempotencyKey, op: Op) -> Applied {
            let index = self.next;
            self.next += 1;
            self.sm.apply_once(index, Some(key), &op).unwrap()
        }
    }

    // Rule 10: a release proposed again after the holder released and acquired anew is a
    // duplicate: it does not take the new grant away (without the key it does).
    #[test]
    fn rule_10_a_retried_request_is_applied_once_and_answered_as_the_first() {
        for dedup in [true, false] {
            let mut log = Log::new(0, DeadlockPolicy::Report);
            let a = log.lease(100, 1);
            let b = log.lease(100, 2);
            let key = |seq| IdempotencyKey::node(1, 0, seq);
            let acquire = |request| Op::Acquire { name: "x".into(), lease: a, request, wait: true };
            let release = Op::Release { name: "x".into(), lease: a };
            assert_eq!(log.once(key(1), acquire(1)).reply, Reply::Acquired { fencing: 3 });
            assert_eq!(log.acquire("x", b, true).reply, Reply::Queued { position: 0 });
            let first = log.once(key(2), release.clone()); // b is granted
            assert_eq!(first.notices, vec![granted("x", b, 2, 1004, 5)]);
            log.release("x", b);
            assert_eq!(log.once(key(3), acquire(3)).reply, Reply::Acquired { fencing: 7 });
            let before = log.sm.clone();
            let again = if dedup { log.once(key(2), release.clone()) } else { log.apply(release.clone()) };
            if dedup {
                assert_eq!(again, quiet(Reply::Duplicate { first: Box::new(first.reply.clone()) }));
                assert_eq!(again.reply.original(), Reply::Done);
                assert_eq!(log.sm.holder("x"), Some((a, 7)));
                assert_eq!(log.sm.last_applied(), 8);
                log.sm.last_applied = before.last_applied;
                log.sm.sessions = before.sessions.clone();
                assert_eq!(log.sm, before, "a duplicate changes nothing but the index and its session's use");
            } else {
                assert_eq!(log.sm.holder("x"), None, "without a key the retry releases the new grant");
            }
        }
    }

    // Rule 10 and rule 9: the answers are part of the state, so a machine restored from a
    // snapshot still recognises a retry.
    #[test]
    fn rule_10_a_restored_snapshot_still_recognises_a_retry() {
        let mut log = Log::new(0, DeadlockPolicy::Report);
        let key = IdempotencyKey { client: 42, seq: 7 };
        let granted =
            log.once(key, Op::Grant { ttl: 10, origin: 1, request: 7, owner: Some(Owner::Key([7; 32])) });
        let mut restored: StateMachine =
            postcard::from_bytes(&postcard::to_allocvec(&log.sm).unwrap()).unwrap();
        let again = restored
            .apply_once(
                2,
                Some(key),
                &Op::Grant { ttl: 10, origin: 1, request: 7, owner: Some(Owner::Key([7; 32])) },
            )
            .unwrap();
        assert_eq!(again.reply, Reply::Duplicate { first: Box::new(granted.reply) });
        assert_eq!(restored.leases(), vec![1]);
    }

    // Rule 10's bounds: a session keeps its latest SESSION_REPLIES replies (an older key is
    // refused, not applied), and the table its SESSIONS most recently active sessions (a
    // forgotten session's key is applied again: the documented limit).
    #[test]
    fn rule_10_the_table_of_answers_is_bounded() {
        let mut log = Log::new(0, DeadlockPolicy::Report);
        let tick = Op::Tick { elapsed: 1 };
        for seq in 0..=SESSION_REPLIES as u64 {
            log.once(IdempotencyKey { client: 1, seq }, tick.clone());
        }
        assert_eq!(log.sm.sessions.clients[&1].replies.len(), SESSION_REPLIES);
        let old = log.once(IdempotencyKey { client: 1, seq: 0 }, tick.clone());
        assert_eq!(old, quiet(Reply::Refused { reason: Refusal::Forgotten }));
        let kept = log.once(IdempotencyKey { client: 1, seq: 1 }, tick.clone());
        assert_eq!(kept.reply, Reply::Duplicate { first: Box::new(Reply::Done) });
        let now = log.sm.now();
        for client in 2..=SESSIONS as u64 + 1 {
            log.once(IdempotencyKey { client, seq: 0 }, tick.clone());
        }
        assert_eq!(log.sm.sessions.clients.len(), SESSIONS);
        assert_eq!(log.sm.sessions.by_use.len(), SESSIONS);
        assert!(!log.sm.sessions.clients.contains_key(&1), "the least recently active session goes first");
        let before = log.sm.now();
        log.once(IdempotencyKey { client: 1, seq: 1 }, tick.clone());
        assert_eq!(log.sm.now(), before + 1, "a forgotten session's retry is applied again");
        assert_eq!(before, now + SESSIONS as u64);
        assert_eq!(
            Refusal::Forgotten.to_string(),
            "the request is older than the replies kept for its client session; it may or may not have been applied, and was not applied again"
        );
    }

    #[test]
    fn apply_refuses_an_index_not_above_the_last_and_changes_nothing() {
        let mut log = Log::new(0, DeadlockPolicy::Report);
        log.lease(10, 1);
        let before = log.sm.clone();
        for index in [0, 1] {
            let err = log.sm.apply(index, &Op::Tick { elapsed: 5 }).unwrap_err();
            assert_eq!(err, ApplyError::IndexNotAbove { index, last_applied: 1 });
        }
        assert_eq!(
            ApplyError::IndexNotAbove { index: 1, last_applied: 1 }.to_string(),
            "entry index 1 is not above the last applied index 1; indexes must strictly increase"
        );
        assert_eq!(before, log.sm);
    }

    #[test]
    fn odd_inputs_are_refused_or_harmless() {
        let mut log = Log::new(u64::MAX, DeadlockPolicy::Report);
        // Zero ttl: refused, no lease.
        assert_eq!(
            log.apply(Op::Grant { ttl: 0, origin: 1, request: 1, owner: None }),
            quiet(Reply::Refused { reason: Refusal::ZeroTtl })
        );
        assert_eq!(log.sm.leases(), Vec::<LeaseId>::new());
        let a = log.lease(u64::MAX, 1);
        let b = log.lease(3, 2);
        // Tick 0 moves nothing.
        assert_eq!(log.tick(0), quiet(Reply::Done));
        assert_eq!(log.sm.now(), 0);
        // Empty names.
        let empty = quiet(Reply::Refused { reason: Refusal::EmptyName });
        assert_eq!(log.acquire("", a, true), empty);
        assert_eq!(log.release("", a), empty);
        assert_eq!(log.campaign("", a, "v"), empty);
        // Release by a non-holder, of a lock nobody holds, and of a held one.
        let not_holder = quiet(Reply::Refused { reason: Refusal::NotHolder });
        assert_eq!(log.release("x", a), not_holder);
        log.acquire("x", a, true);
        assert_eq!(log.release("x", b), not_holder);
        // A repeated waiting acquire keeps its place (and a try-lock by a waiter is Busy).
        assert_eq!(log.acquire("x", b, true), quiet(Reply::Queued { position: 0 }));
        assert_eq!(log.acquire("x", b, true), quiet(Reply::Queued { position: 0 }));
        assert_eq!(log.acquire("x", b, false), quiet(Reply::Busy));
        assert_eq!(log.sm.waiters("x"), vec![b]);
        // Duplicate campaign keeps one candidate.
        log.campaign("e", b, "v");
        log.campaign("e", b, "v");
        assert_eq!(log.sm.candidates("e").len(), 1);
        // Proclaim in an election that does not exist.
        assert_eq!(
            log.apply(Op::Proclaim { election: "none".into(), lease: a, value: "v".into() }),
            quiet(Reply::NotLeader)
        );
        // Time saturates instead of overflowing; a's deadline (u64::MAX) is reached.
        let applied = log.tick(u64::MAX);
        assert_eq!(log.sm.now(), u64::MAX);
        assert_eq!(applied.notices[0], Notice::LeaseExpired { lease: a, origin: 1 });
        assert_eq!(log.sm.leases(), Vec::<LeaseId>::new());
        assert_eq!(log.tick(u64::MAX), quiet(Reply::Done));
        // Refusals have one clear line each.
        assert_eq!(Refusal::ZeroTtl.to_string(), "a lease's ttl must be more than zero");
    }
}
