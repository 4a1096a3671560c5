//! `v3electionpb.Election`: Campaign (blocking), Proclaim, Leader, Observe (a stream), Resign.
//!
//! A candidate's [`LeaderKey`] is `{name, key: NAME/LEASEHEX, rev: index of its campaign entry,
//! lease}`; Proclaim and Resign find the candidate by `name` and `lease`. The leader is
//! reported as a key-value record whose `create_revision` and `mod_revision` are both the
//! campaign's index (the service does not keep the index of the latest proclaim) and whose
//! `version` is 1. Values must be UTF-8 (the service keeps them as text).

use std::pin::Pin;

use futures_util::Stream;
use ringleader_lock_service::state::{Candidate, Notice, StateMachine};
use tokio::sync::broadcast::error::RecvError;
use tonic::{Request, Response, Status};

use super::pb::mvccpb::KeyValue;
use super::pb::v3electionpb::election_server::Election;
use super::pb::v3electionpb::{
    CampaignRequest, CampaignResponse, LeaderKey, LeaderRequest, LeaderResponse, ProclaimRequest,
    ProclaimResponse, ResignRequest, ResignResponse,
};
use super::{Ctx, caller_of, key_of, lease_id, name_of, op_status, unavailable};
use crate::ops::{self, OpError, Until};
use crate::users::Need;
use ringleader_lock_service::auth::Access;

/// The Election service.
pub struct ElectionApi(pub Ctx);

fn value_of(bytes: Vec<u8>) -> Result<String, Status> {
    if bytes.len() > crate::http::MAX_VALUE {
        return Err(Status::invalid_argument(format!(
            "value must be at most {} bytes",
            crate::http::MAX_VALUE
        )));
    }
    String::from_utf8(bytes)
        .map_err(|_| Status::invalid_argument("value must be UTF-8 (ringleader keeps values as text)"))
}

fn leader_key(name: &str, c: &Candidate) -> LeaderKey {
    LeaderKey {
        name: name.as_bytes().to_vec(),
        key: key_of(name, c.lease),
        rev: c.index as i64,
        lease: c.lease as i64,
    }
}

fn kv(name: &str, c: &Candidate) -> KeyValue {
    KeyValue {
        key: key_of(name, c.lease),
        create_revision: c.index as i64,
        mod_revision: c.index as i64,
        version: 1,
        value: c.value.clone().into_bytes(),
        lease: c.lease as i64,
    }
}

/// The election's name and the candidate's lease from a [`LeaderKey`].
fn candidate_of(key: Option<LeaderKey>) -> Result<(String, u64), Status> {
    let key = key.ok_or_else(|| Status::invalid_argument("leader: a LeaderKey from Campaign is required"))?;
    Ok((name_of("leader name", &key.name)?, lease_id("leader lease", key.lease)?))
}

type ObserveStream = Pin<Box<dyn Stream<Item = Result<LeaderResponse, Status>> + Send>>;

#[tonic::async_trait]
impl Election for ElectionApi {
    /// Blocks until the lease leads the election or its lease ends; a campaign whose client
    /// cancels while it waits is withdrawn (resigned).
    async fn campaign(&self, req: Request<CampaignRequest>) -> Result<Response<CampaignResponse>, Status> {
        let who = caller_of(&req)?;
        let req = req.into_inner();
        let election = name_of("election name", &req.name)?;
        let lease = lease_id("lease", req.lease)?;
        let value = value_of(req.value)?;
        let ctx = &self.0;
        let leader = ops::campaign(&ctx.node, &election, lease, &who, value, Until::Answered)
            .await
            .map_err(op_status)?;
        let leader = Some(leader_key(&election, &leader));
        Ok(Response::new(CampaignResponse { header: ctx.applied_header().await, leader }))
    }

    async fn proclaim(&self, req: Request<ProclaimRequest>) -> Result<Response<ProclaimResponse>, Status> {
        let who = caller_of(&req)?;
        let req = req.into_inner();
        let (election, lease) = candidate_of(req.leader)?;
        let value = value_of(req.value)?;
        let ctx = &self.0;
        match ops::proclaim(&ctx.node, &election, lease, value, &who, None).await {
            Ok(()) => Ok(Response::new(ProclaimResponse { header: ctx.applied_header().await })),
            Err(OpError::NotLeader { .. }) => Err(Status::failed_precondition("election: not leader")),
            Err(e) => Err(op_status(e)),
        }
    }

    /// A linearizable read; an election without a leader is etcd's NotFound "election: no
    /// leader".
    async fn leader(&self, req: Request<LeaderRequest>) -> Result<Response<LeaderResponse>, Status> {
        let who = caller_of(&req)?;
        let election = name_of("election name", &req.into_inner().name)?;
        let ctx = &self.0;
        ops::permit(&ctx.node, &who, &Need::name(Access::Read, &election)).map_err(op_status)?;
        let e = election.clone();
        let (index, leader) =
            ctx.node.read(move |m: &StateMachine| m.leader(&e)).await.map_err(unavailable)?;
        match leader {
            Some(c) => Ok(Response::new(LeaderResponse {
                header: ctx.header(Some(index)),
                kv: Some(kv(&election, &c)),
            })),
            None => Err(Status::not_found("election: no leader")),
        }
    }

    type ObserveStream = ObserveStream;

    /// The current leader (a linearizable read), if any, then every change of leader or value
    /// after the index that read saw, in log order. Moments without a leader are not sent (as
    /// etcd's Observe). A subscriber that falls behind gets ABORTED and observes again.
    async fn observe(&self, req: Request<LeaderRequest>) -> Result<Response<Self::ObserveStream>, Status> {
        let who = caller_of(&req)?;
        let election = name_of("election name", &req.into_inner().name)?;
        let ctx = self.0.clone();
        ops::permit(&ctx.node, &who, &Need::name(Access::Read, &election)).map_err(op_status)?;
        let rx = ctx.node.notices.subscribe();
        let e = election.clone();
        let (seen, leader) =
            ctx.node.read(move |m: &StateMachine| m.leader(&e)).await.map_err(unavailable)?;
        let first: Vec<Result<LeaderResponse, Status>> = leader
            .map(|c| Ok(LeaderResponse { header: ctx.header(Some(seen)), kv: Some(kv(&election, &c)) }))
            .into_iter()
            .collect();
        let rest = futures_util::stream::unfold(Some(rx), move |rx| {
            let (name, ctx) = (election.clone(), ctx.clone());
            async move {
                let mut rx = rx?;
                loop {
                    match rx.recv().await {
                        Ok(p) => {
                            if let (index, Notice::LeaderChanged { election, leader: Some(c) }) = &*p
                                && *election == name
                                && *index > seen
                            {
                                let r = LeaderResponse {
                                    header: ctx.header(Some(*index)),
                                    kv: Some(kv(&name, c)),
                                };
                                return Some((Ok(r), Some(rx)));
                            }
                        }
                        Err(RecvError::Lagged(_)) => {
                            return Some((
                                Err(Status::aborted("the observer fell behind; observe again")),
                                None,
                            ));
                        }
                        Err(RecvError::Closed) => return None,
                    }
                }
            }
        });
        let stream = futures_util::StreamExt::chain(futures_util::stream::iter(first), rest);
        Ok(Response::new(Box::pin(stream)))
    }

    /// Removes the candidate; as etcd's Resign, succeeds when it is no longer a candidate.
    async fn resign(&self, req: Request<ResignRequest>) -> Result<Response<ResignResponse>, Status> {
        let who = caller_of(&req)?;
        let (election, lease) = candidate_of(req.into_inner().leader)?;
        let ctx = &self.0;
        match ops::resign(&ctx.node, &election, lease, &who, None).await {
            // As etcd's Resign (a delete), it succeeds when there is nothing to resign.
            Ok(()) | Err(OpError::NoSuchLease(_) | OpError::Refused(_)) => {
                Ok(Response::new(ResignResponse { header: ctx.applied_header().await }))
            }
            Err(e) => Err(op_status(e)),
        }
    }
}
