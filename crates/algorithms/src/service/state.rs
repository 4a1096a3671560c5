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
//!    latest keep-alive. A tick expires every lease whose deadline is `<= now`, in lease-id order.
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
//! so the replicated time lags the leader's by up to one tick interval plus the commit latency
//! (again the safe direction). Clients must keep their own local deadline shorter than the TTL
//! to account for clock-rate drift. Under `Report` a deadlock persists until a client breaks it.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use ringleader_core::{NodeId, Time};
use serde::{Deserialize, Serialize};

/// A lease id: the Raft index of the entry that granted it (unique, increasing).
pub type LeaseId = u64;
/// A client's request id, chosen by the proposing node; echoed in notices.
pub type RequestId = u64;
/// A fencing token: the Raft index of the entry whose application granted a lock.
pub type FencingToken = u64;

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
        fencing: FencingToken,
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
        fencing: FencingToken,
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
    /// The node that serves its client.
    pub origin: NodeId,
}

/// A lock's holder.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
struct Holder {
    lease: LeaseId,
    fencing: FencingToken,
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
}

/// The bookkeeping of one entry's application: its index, the notices so far, the locks whose
/// hand-over must be checked, and the leader of each touched election before the entry.
struct Step {
    index: u64,
    notices: Vec<Notice>,
    touched_locks: BTreeSet<String>,
    leaders_before: BTreeMap<String, Option<(LeaseId, String)>>,
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
        }
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
        };
        let reply = match op {
            Op::Tick { elapsed } => self.tick(*elapsed, &mut step),
            Op::Grant { ttl, origin, .. } => self.grant(*ttl, *origin, index),
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
        };
        self.settle(&mut step);
        Ok(Applied { reply, notices: step.notices })
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

    /// The lock-delay this machine was built with.
    pub fn lock_delay(&self) -> Time {
        self.lock_delay
    }

    /// The deadlock policy this machine was built with.
    pub fn policy(&self) -> DeadlockPolicy {
        self.policy
    }

    /// The holder of lock `name` and its fencing token, if it is held.
    pub fn holder(&self, name: &str) -> Option<(LeaseId, FencingToken)> {
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
        self.now = self.now.saturating_add(elapsed);
        let expired: Vec<LeaseId> =
            self.leases.iter().filter(|(_, l)| l.deadline <= self.now).map(|(id, _)| *id).collect();
        for lease in expired {
            self.drop_lease(lease, LossReason::Expired, step);
        }
        // Every pending hand-over whose lock-delay has passed happens now.
        step.touched_locks.extend(self.locks.keys().cloned());
        Reply::Done
    }

    fn grant(&mut self, ttl: Time, origin: NodeId, index: u64) -> Reply {
        if ttl == 0 {
            return Reply::Refused { reason: Refusal::ZeroTtl };
        }
        let deadline = self.now.saturating_add(ttl);
        self.leases.insert(index, Lease { ttl, deadline, origin });
        Reply::Granted { lease: index, ttl }
    }

    fn keep_alive(&mut self, lease: LeaseId) -> Reply {
        let now = self.now;
        match self.leases.get_mut(&lease) {
            Some(l) => {
                l.deadline = now.saturating_add(l.ttl);
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
        if lock.holder.is_some_and(|h| h.lease == lease) {
            lock.holder = None;
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
        if lock.holder.is_none()
            && now >= lock.delay_until
            && let Some(&next) = self.service_order(lock).first()
            && let Some(lock) = self.locks.get_mut(name)
            && let Some(at) = lock.waiters.iter().position(|w| w.lease == next)
        {
            if let Some(w) = lock.waiters.remove(at) {
                lock.holder = Some(Holder { lease: w.lease, fencing: step.index });
                let origin = self.leases.get(&w.lease).map_or(0, |l| l.origin);
                step.notices.push(Notice::Granted {
                    name: name.to_string(),
                    lease: w.lease,
                    origin,
                    request: w.request,
                    fencing: step.index,
                });
                self.after_hand_over(name, w.lease, policy, step);
            }
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
