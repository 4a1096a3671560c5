//! `v3lockpb.Lock`: Lock (blocking, FIFO) and Unlock.
//!
//! Lock acquires the named lock for the request's lease and answers once it holds it, with the
//! key `NAME/LEASEHEX` (etcd's format) and, in the header's `revision`, the lock's fencing
//! token: the Raft index of the entry that granted it, strictly increasing per name. A Lock
//! whose client cancels (or whose connection drops) while it waits withdraws its wait. Unlock
//! takes the key back, releases, and — as etcd's Unlock, a delete — succeeds when the lease no
//! longer holds the lock.

use tonic::{Request, Response, Status};

use super::pb::v3lockpb::lock_server::Lock;
use super::pb::v3lockpb::{LockRequest, LockResponse, UnlockRequest, UnlockResponse};
use super::{Ctx, caller_of, key_of, lease_id, name_of, op_status, parse_key};
use crate::ops::{self, OpError, Until};

/// The Lock service.
pub struct LockApi(pub Ctx);

#[tonic::async_trait]
impl Lock for LockApi {
    /// Blocks in the lock's FIFO queue ([`ops::acquire`]); a call cancelled while it waits
    /// (its deadline, or a dropped connection) drops the future, which withdraws the wait.
    async fn lock(&self, req: Request<LockRequest>) -> Result<Response<LockResponse>, Status> {
        let who = caller_of(&req)?;
        let req = req.into_inner();
        let name = name_of("lock name", &req.name)?;
        let lease = lease_id("lease", req.lease)?;
        let grant =
            ops::acquire(&self.0.node, &name, lease, &who, true, Until::Answered).await.map_err(op_status)?;
        Ok(Response::new(LockResponse {
            header: self.0.header(Some(grant.fencing)),
            key: key_of(&name, lease),
        }))
    }

    async fn unlock(&self, req: Request<UnlockRequest>) -> Result<Response<UnlockResponse>, Status> {
        let who = caller_of(&req)?;
        let key = req.into_inner().key;
        let (name, lease) = parse_key(&key).ok_or_else(|| {
            Status::invalid_argument(format!(
                "key {:?} is not a lock key from Lock (NAME/LEASEHEX)",
                String::from_utf8_lossy(&key)
            ))
        })?;
        let ctx = &self.0;
        match ops::release(&ctx.node, &name, lease, &who, None).await {
            // etcd's Unlock deletes the key, which succeeds whether or not it still exists.
            Ok(()) | Err(OpError::NoSuchLease(_) | OpError::Refused(_)) => {
                Ok(Response::new(UnlockResponse { header: ctx.applied_header().await }))
            }
            Err(e) => Err(op_status(e)),
        }
    }
}
