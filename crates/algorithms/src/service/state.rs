//! Placeholder of the replicated state machine (replaced by the full one): leases and named
//! locks only, enough for the replica to run.
#![allow(missing_docs)]

use std::collections::{BTreeMap, VecDeque};

use ringleader_core::{NodeId, Time};
use serde::{Deserialize, Serialize};

pub type LeaseId = u64;
pub type RequestId = u64;

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Op {
    Tick { elapsed: Time },
    Grant { ttl: Time, origin: NodeId, request: RequestId },
    KeepAlive { lease: LeaseId },
    Revoke { lease: LeaseId },
    Acquire { name: String, lease: LeaseId, request: RequestId, wait: bool },
    Release { name: String, lease: LeaseId },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    Granted { lease: LeaseId, ttl: Time },
    KeptAlive { ttl_left: Time },
    Acquired { fencing: u64 },
    Queued { position: usize },
    NoSuchLease,
    Done,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Notice {
    Granted { name: String, lease: LeaseId, origin: NodeId, request: RequestId, fencing: u64 },
    LeaseExpired { lease: LeaseId, origin: NodeId },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Applied {
    pub reply: Reply,
    pub notices: Vec<Notice>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
struct Lease {
    origin: NodeId,
    ttl: Time,
    deadline: Time,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
struct Lock {
    holder: Option<(LeaseId, u64)>,
    waiters: VecDeque<(LeaseId, RequestId)>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct StateMachine {
    now: Time,
    last_applied: u64,
    leases: BTreeMap<LeaseId, Lease>,
    locks: BTreeMap<String, Lock>,
}

impl StateMachine {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn now(&self) -> Time {
        self.now
    }

    pub fn last_applied(&self) -> u64 {
        self.last_applied
    }

    pub fn has_leases(&self) -> bool {
        !self.leases.is_empty()
    }

    pub fn holder(&self, name: &str) -> Option<(LeaseId, u64)> {
        self.locks.get(name).and_then(|l| l.holder)
    }

    pub fn apply(&mut self, index: u64, op: &Op) -> Applied {
        self.last_applied = index;
        let mut notices = Vec::new();
        let reply = match op {
            Op::Tick { elapsed } => {
                self.now += elapsed;
                let now = self.now;
                let dead: Vec<LeaseId> =
                    self.leases.iter().filter(|(_, l)| l.deadline <= now).map(|(&id, _)| id).collect();
                for id in dead {
                    self.end_lease(id, index, &mut notices);
                }
                Reply::Done
            }
            Op::Grant { ttl, origin, .. } => {
                self.leases.insert(index, Lease { origin: *origin, ttl: *ttl, deadline: self.now + ttl });
                Reply::Granted { lease: index, ttl: *ttl }
            }
            Op::KeepAlive { lease } => match self.leases.get_mut(lease) {
                Some(l) => {
                    l.deadline = self.now + l.ttl;
                    Reply::KeptAlive { ttl_left: l.ttl }
                }
                None => Reply::NoSuchLease,
            },
            Op::Revoke { lease } => {
                if self.leases.contains_key(lease) {
                    self.end_lease(*lease, index, &mut notices);
                    Reply::Done
                } else {
                    Reply::NoSuchLease
                }
            }
            Op::Acquire { name, lease, request, .. } => {
                if !self.leases.contains_key(lease) {
                    return Applied { reply: Reply::NoSuchLease, notices };
                }
                let lock = self.locks.entry(name.clone()).or_default();
                match lock.holder {
                    None => {
                        lock.holder = Some((*lease, index));
                        Reply::Acquired { fencing: index }
                    }
                    Some((h, f)) if h == *lease => Reply::Acquired { fencing: f },
                    Some(_) => {
                        if let Some(p) = lock.waiters.iter().position(|w| w.0 == *lease) {
                            Reply::Queued { position: p }
                        } else {
                            lock.waiters.push_back((*lease, *request));
                            Reply::Queued { position: lock.waiters.len() - 1 }
                        }
                    }
                }
            }
            Op::Release { name, lease } => {
                self.release(name, *lease, index, &mut notices);
                Reply::Done
            }
        };
        Applied { reply, notices }
    }

    fn end_lease(&mut self, id: LeaseId, index: u64, notices: &mut Vec<Notice>) {
        let Some(l) = self.leases.remove(&id) else { return };
        notices.push(Notice::LeaseExpired { lease: id, origin: l.origin });
        let names: Vec<String> = self.locks.keys().cloned().collect();
        for name in names {
            self.release(&name, id, index, notices);
        }
    }

    fn release(&mut self, name: &str, lease: LeaseId, index: u64, notices: &mut Vec<Notice>) {
        let Some(lock) = self.locks.get_mut(name) else { return };
        lock.waiters.retain(|w| w.0 != lease);
        if lock.holder.map(|h| h.0) != Some(lease) {
            return;
        }
        lock.holder = None;
        while let Some((next, request)) = lock.waiters.pop_front() {
            if let Some(l) = self.leases.get(&next) {
                lock.holder = Some((next, index));
                notices.push(Notice::Granted {
                    name: name.to_string(),
                    lease: next,
                    origin: l.origin,
                    request,
                    fencing: index,
                });
                break;
            }
        }
    }
}
