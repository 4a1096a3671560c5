//! `etcdserverpb.Lease`: Grant, Revoke, KeepAlive (a stream), TimeToLive, Leases.
//!
//! etcd's TTLs are whole seconds; the service's are kept in nanoseconds of replicated time. A
//! TimeToLive's remaining TTL is rounded up, so a live lease never shows 0.

use std::pin::Pin;

use futures_util::Stream;
use ringleader_core::Time;
use ringleader_lock_service::state::StateMachine;
use tonic::{Request, Response, Status, Streaming};

use super::pb::etcdserverpb::lease_server::Lease;
use super::pb::etcdserverpb::{
    LeaseGrantRequest, LeaseGrantResponse, LeaseKeepAliveRequest, LeaseKeepAliveResponse, LeaseLeasesRequest,
    LeaseLeasesResponse, LeaseRevokeRequest, LeaseRevokeResponse, LeaseStatus, LeaseTimeToLiveRequest,
    LeaseTimeToLiveResponse,
};
use super::{Ctx, caller_of, key_of, lease_id, op_status, unavailable};
use crate::ops::{self, OpError};
use crate::users::Need;

/// The longest lease TTL, in seconds (the HTTP API's bound).
pub const MAX_TTL_S: i64 = (crate::http::MAX_MS / 1000) as i64;

const SECOND: Time = 1_000_000_000;

/// Whole seconds, rounded up.
fn seconds_up(t: Time) -> i64 {
    t.div_ceil(SECOND) as i64
}

/// The Lease service.
pub struct LeaseApi(pub Ctx);

type KeepAliveStream = Pin<Box<dyn Stream<Item = Result<LeaseKeepAliveResponse, Status>> + Send>>;

#[tonic::async_trait]
impl Lease for LeaseApi {
    async fn lease_grant(
        &self,
        req: Request<LeaseGrantRequest>,
    ) -> Result<Response<LeaseGrantResponse>, Status> {
        let who = caller_of(&req)?;
        let req = req.into_inner();
        if req.id != 0 {
            return Err(Status::invalid_argument(format!(
                "lease ID {}: ringleader chooses lease ids; send ID 0",
                req.id
            )));
        }
        if req.ttl > MAX_TTL_S {
            return Err(Status::out_of_range("etcdserver: too large lease TTL"));
        }
        if req.ttl <= 0 {
            return Err(Status::invalid_argument(format!(
                "TTL {}: a lease's TTL must be 1..={MAX_TTL_S} seconds",
                req.ttl
            )));
        }
        let ctx = &self.0;
        // etcd's clients have no way to carry a lease key: a lease granted here has none, and
        // while auth is enabled belongs to the user who granted it.
        let granted =
            ops::grant(&ctx.node, req.ttl as Time * SECOND, &who, None, None).await.map_err(op_status)?;
        Ok(Response::new(LeaseGrantResponse {
            header: ctx.applied_header().await,
            id: granted.lease as i64,
            ttl: seconds_up(granted.ttl),
            error: String::new(),
        }))
    }

    async fn lease_revoke(
        &self,
        req: Request<LeaseRevokeRequest>,
    ) -> Result<Response<LeaseRevokeResponse>, Status> {
        let who = caller_of(&req)?;
        let lease = lease_id("lease ID", req.into_inner().id)?;
        let ctx = &self.0;
        ops::revoke(&ctx.node, lease, &who, None).await.map_err(op_status)?;
        Ok(Response::new(LeaseRevokeResponse { header: ctx.applied_header().await }))
    }

    type LeaseKeepAliveStream = KeepAliveStream;

    /// Each request renews its lease and is answered in order; an unknown lease is answered
    /// with TTL 0, as etcd does.
    async fn lease_keep_alive(
        &self,
        req: Request<Streaming<LeaseKeepAliveRequest>>,
    ) -> Result<Response<Self::LeaseKeepAliveStream>, Status> {
        let ctx = self.0.clone();
        let who = caller_of(&req)?;
        let requests = req.into_inner();
        let stream = futures_util::stream::unfold((requests, ctx), move |(mut requests, ctx)| {
            let who = who.clone();
            async move {
                let req = match requests.message().await {
                    Ok(Some(r)) => r,
                    Ok(None) | Err(_) => return None,
                };
                let answer = async {
                    let lease = lease_id("lease ID", req.id)?;
                    let ttl = match ops::keep_alive(&ctx.node, lease, &who, None).await {
                        Ok(ttl_left) => seconds_up(ttl_left),
                        Err(OpError::NoSuchLease(_)) => 0,
                        Err(e) => return Err(op_status(e)),
                    };
                    Ok(LeaseKeepAliveResponse { header: ctx.applied_header().await, id: req.id, ttl })
                }
                .await;
                Some((answer, (requests, ctx)))
            }
        });
        Ok(Response::new(Box::pin(stream)))
    }

    /// A linearizable read. An unknown lease is answered with TTL −1, as etcd does. `keys`
    /// lists the KV keys attached to the lease (what etcd lists), then the locks the lease
    /// holds or waits for, as lock keys.
    async fn lease_time_to_live(
        &self,
        req: Request<LeaseTimeToLiveRequest>,
    ) -> Result<Response<LeaseTimeToLiveResponse>, Status> {
        let ctx = &self.0;
        ops::permit(&ctx.node, &caller_of(&req)?, &Need::Someone).map_err(op_status)?;
        let req = req.into_inner();
        let lease = lease_id("lease ID", req.id)?;
        let (index, found) = ctx
            .node
            .read(move |m: &StateMachine| {
                let l = m.lease(lease)?;
                let locks = m
                    .locks()
                    .into_iter()
                    .filter(|n| m.holder(n).map(|h| h.0) == Some(lease) || m.waiters(n).contains(&lease))
                    .map(|n| key_of(&n, lease));
                let keys: Vec<Vec<u8>> = m.kv().keys_of_lease(lease).into_iter().chain(locks).collect();
                Some((l.ttl, l.deadline.saturating_sub(m.now()), keys))
            })
            .await
            .map_err(unavailable)?;
        let header = ctx.header(Some(index));
        let Some((ttl, left, keys)) = found else {
            return Ok(Response::new(LeaseTimeToLiveResponse {
                header,
                id: req.id,
                ttl: -1,
                granted_ttl: 0,
                keys: Vec::new(),
            }));
        };
        let keys = if req.keys { keys } else { Vec::new() };
        Ok(Response::new(LeaseTimeToLiveResponse {
            header,
            id: req.id,
            ttl: seconds_up(left),
            granted_ttl: seconds_up(ttl),
            keys,
        }))
    }

    /// A linearizable read of every live lease.
    async fn lease_leases(
        &self,
        req: Request<LeaseLeasesRequest>,
    ) -> Result<Response<LeaseLeasesResponse>, Status> {
        let ctx = &self.0;
        ops::permit(&ctx.node, &caller_of(&req)?, &Need::Someone).map_err(op_status)?;
        let (index, ids) = ctx.node.read(|m: &StateMachine| m.leases()).await.map_err(unavailable)?;
        let leases = ids.into_iter().map(|id| LeaseStatus { id: id as i64 }).collect();
        Ok(Response::new(LeaseLeasesResponse { header: ctx.header(Some(index)), leases }))
    }
}
