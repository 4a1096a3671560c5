//! `v3lockpb.Lock`: Lock (blocking, FIFO) and Unlock.
//!
//! Lock acquires the named lock for the request's lease and answers once it holds it, with the
//! key `NAME/LEASEHEX` (etcd's format) and, in the header's `revision`, the lock's fencing
//! token: the Raft index of the entry that granted it, strictly increasing per name. A Lock
//! whose client cancels (or whose connection drops) while it waits withdraws its wait. Unlock
//! takes the key back, releases, and — as etcd's Unlock, a delete — succeeds when the lease no
//! longer holds the lock.

use ringleader_lock_service::state::{LeaseId, Notice, Op, Reply, StateMachine};
use serde_json::{Value, json};
use tonic::{Request, Response, Status};

use super::pb::v3lockpb::lock_server::Lock;
use super::pb::v3lockpb::{LockRequest, LockResponse, UnlockRequest, UnlockResponse};
use super::{
    Ctx, Heard, Withdraw, key_of, lease_id, lease_not_found, name_of, next_notice, parse_key, unavailable,
};

/// The Lock service.
pub struct LockApi(pub Ctx);

impl LockApi {
    /// Answers a grant after checking again that the lease still holds the lock.
    async fn deliver(
        &self,
        name: &str,
        lease: LeaseId,
        fencing: u64,
    ) -> Result<Response<LockResponse>, Status> {
        let n = name.to_string();
        let held = self
            .0
            .node
            .local(Box::new(move |m: &StateMachine| json!(m.holder(&n) == Some((lease, fencing)))))
            .await
            .map_err(unavailable)?;
        if held != json!(true) {
            return Err(Status::aborted(format!(
                "lease {lease:x} lost lock {name:?} before the grant was delivered (expired or revoked)"
            )));
        }
        Ok(Response::new(LockResponse { header: self.0.header(Some(fencing)), key: key_of(name, lease) }))
    }
}

#[tonic::async_trait]
impl Lock for LockApi {
    async fn lock(&self, req: Request<LockRequest>) -> Result<Response<LockResponse>, Status> {
        let req = req.into_inner();
        let name = name_of("lock name", &req.name)?;
        let lease = lease_id("lease", req.lease)?;
        let node = &self.0.node;
        // Subscribed before proposing, so that the grant's notice cannot be missed. Notices of
        // entries up to the Acquire's own are older than this request: a node still applying
        // an earlier grant and release of the same lease and name (a client's previous Lock
        // and Unlock, answered by another node) publishes them after the Acquire is proposed,
        // and they answered that earlier Lock, not this one.
        super::check_space(node, ringleader_lock_service::kv::put_growth(name.len() + 17, 0))?;
        let mut rx = node.notices.subscribe();
        let op = Op::Acquire { name: name.clone(), lease, request: 0, wait: true };
        let (queued_at, applied) = node.propose_at(op).await.map_err(unavailable)?;
        match applied.reply {
            Reply::Acquired { fencing } => return self.deliver(&name, lease, fencing).await,
            Reply::Queued { .. } => {}
            Reply::NoSuchLease => return Err(lease_not_found()),
            Reply::Aborted => {
                return Err(Status::aborted(
                    "wait-die refused the wait: an older lease holds the lock; retry later",
                ));
            }
            other => return Err(Status::internal(format!("unexpected reply {other:?}"))),
        }
        let mut withdraw = Withdraw::new(node.clone(), Op::Release { name: name.clone(), lease });
        loop {
            match next_notice(&mut rx).await? {
                Heard::Check => {
                    let n = name.clone();
                    let v = node
                        .local(Box::new(move |m: &StateMachine| {
                            json!({ "alive": m.lease(lease).is_some(), "holder": m.holder(&n) })
                        }))
                        .await
                        .map_err(unavailable)?;
                    if v["alive"] == json!(false) {
                        withdraw.disarm();
                        return Err(lease_not_found());
                    }
                    if let Some(h) = v["holder"].as_array()
                        && h.first().and_then(Value::as_u64) == Some(lease)
                    {
                        withdraw.disarm();
                        let fencing = h.get(1).and_then(Value::as_u64).unwrap_or(0);
                        return self.deliver(&name, lease, fencing).await;
                    }
                }
                Heard::Notice(p) if p.0 <= queued_at => {}
                Heard::Notice(p) => match &p.1 {
                    Notice::Granted { name: n, lease: l, fencing, .. } if *n == name && *l == lease => {
                        withdraw.disarm();
                        return self.deliver(&name, lease, *fencing).await;
                    }
                    Notice::Aborted { name: n, lease: l, .. } if *n == name && *l == lease => {
                        withdraw.disarm();
                        return Err(Status::aborted(
                            "wait-die dropped the wait: an older lease got the lock; retry later",
                        ));
                    }
                    Notice::LeaseExpired { lease: l, .. } if *l == lease => {
                        withdraw.disarm();
                        return Err(lease_not_found());
                    }
                    _ => {}
                },
            }
        }
    }

    async fn unlock(&self, req: Request<UnlockRequest>) -> Result<Response<UnlockResponse>, Status> {
        let key = req.into_inner().key;
        let (name, lease) = parse_key(&key).ok_or_else(|| {
            Status::invalid_argument(format!(
                "key {:?} is not a lock key from Lock (NAME/LEASEHEX)",
                String::from_utf8_lossy(&key)
            ))
        })?;
        let ctx = &self.0;
        match ctx.node.propose(Op::Release { name, lease }).await.map_err(unavailable)?.reply {
            // etcd's Unlock deletes the key, which succeeds whether or not it still exists.
            Reply::Done | Reply::NoSuchLease | Reply::Refused { .. } => {
                Ok(Response::new(UnlockResponse { header: ctx.applied_header().await }))
            }
            other => Err(Status::internal(format!("unexpected reply {other:?}"))),
        }
    }
}
