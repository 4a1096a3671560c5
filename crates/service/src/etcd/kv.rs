//! `etcdserverpb.KV`: Range, Put, DeleteRange, Txn on the replicated key-value store
//! ([`ringleader_lock_service::kv`]).
//!
//! Writes (Put, DeleteRange, Txn) are proposed through Raft as one [`Op::Txn`] each; the
//! header's `revision` of their answer is the revision they wrote at: the Raft index of their
//! entry (what the concurrency package takes as its key's create revision). A Range is a
//! linearizable read on the same path as the other linearizable reads, or, with
//! `serializable`, a read of the answering node's applied state; its header's revision is the
//! applied index the read saw. `Compact` is not served (the history is bounded instead, see
//! docs/ETCD.md), nor are nested transactions.

use ringleader_lock_service::kv::{
    self as store, Compare, CompareResult, CompareTarget, KvError, RangeResult, RequestOp, ResponseOp,
    SortOrder, SortTarget, Txn, TxnResult,
};
use ringleader_lock_service::state::{Op, Reply, StateMachine};
use tonic::{Request, Response, Status};

use super::pb::etcdserverpb::kv_server::Kv;
use super::pb::etcdserverpb::{
    self as pb, DeleteRangeRequest, DeleteRangeResponse, PutRequest, PutResponse, RangeRequest,
    RangeResponse, TxnRequest, TxnResponse,
};
use super::pb::mvccpb;
use super::{Ctx, caller_of, op_status, unavailable};
use crate::ops::{self, Caller};
use crate::users::Need;
use ringleader_lock_service::auth::Access;

/// The KV service.
pub struct KvApi(pub Ctx);

/// etcd's status for a refused key-value request.
pub fn kv_status(e: &KvError) -> Status {
    match e {
        KvError::LeaseNotFound => Status::not_found(e.to_string()),
        KvError::Compacted { .. } | KvError::FutureRevision => Status::out_of_range(e.to_string()),
        _ => Status::invalid_argument(e.to_string()),
    }
}

fn revision_of(what: &str, v: i64) -> Result<u64, Status> {
    u64::try_from(v).map_err(|_| Status::invalid_argument(format!("{what} {v}: must not be negative")))
}

/// A record as etcd's `mvccpb.KeyValue`.
pub fn kv_pb(kv: store::KeyValue) -> mvccpb::KeyValue {
    mvccpb::KeyValue {
        key: kv.key,
        create_revision: kv.create_revision as i64,
        mod_revision: kv.mod_revision as i64,
        version: kv.version as i64,
        value: kv.value,
        lease: kv.lease as i64,
    }
}

fn range_req(r: RangeRequest) -> Result<store::RangeRequest, Status> {
    use pb::range_request::{SortOrder as O, SortTarget as T};
    Ok(store::RangeRequest {
        limit: revision_of("limit", r.limit)?,
        revision: revision_of("revision", r.revision)?,
        sort_order: match r.sort_order() {
            O::None => SortOrder::None,
            O::Ascend => SortOrder::Ascend,
            O::Descend => SortOrder::Descend,
        },
        sort_target: match r.sort_target() {
            T::Key => SortTarget::Key,
            T::Version => SortTarget::Version,
            T::Create => SortTarget::Create,
            T::Mod => SortTarget::Mod,
            T::Value => SortTarget::Value,
        },
        keys_only: r.keys_only,
        count_only: r.count_only,
        min_mod_revision: revision_of("min_mod_revision", r.min_mod_revision)?,
        max_mod_revision: revision_of("max_mod_revision", r.max_mod_revision)?,
        min_create_revision: revision_of("min_create_revision", r.min_create_revision)?,
        max_create_revision: revision_of("max_create_revision", r.max_create_revision)?,
        key: r.key,
        range_end: r.range_end,
    })
}

fn put_req(p: PutRequest) -> Result<store::PutRequest, Status> {
    Ok(store::PutRequest {
        lease: super::lease_or_none(p.lease)?,
        key: p.key,
        value: p.value,
        prev_kv: p.prev_kv,
        ignore_value: p.ignore_value,
        ignore_lease: p.ignore_lease,
    })
}

fn delete_req(d: DeleteRangeRequest) -> store::DeleteRangeRequest {
    store::DeleteRangeRequest { key: d.key, range_end: d.range_end, prev_kv: d.prev_kv }
}

fn compare(c: pb::Compare) -> Compare {
    use pb::compare::{CompareResult as R, CompareTarget as T, TargetUnion as U};
    let int = |u: &Option<U>, want: fn(&U) -> Option<i64>| u.as_ref().and_then(want).unwrap_or(0);
    let u = &c.target_union;
    let target = match c.target() {
        T::Version => CompareTarget::Version(int(u, |u| if let U::Version(v) = u { Some(*v) } else { None })),
        T::Create => {
            CompareTarget::Create(int(u, |u| if let U::CreateRevision(v) = u { Some(*v) } else { None }))
        }
        T::Mod => CompareTarget::Mod(int(u, |u| if let U::ModRevision(v) = u { Some(*v) } else { None })),
        T::Lease => CompareTarget::Lease(int(u, |u| if let U::Lease(v) = u { Some(*v) } else { None })),
        T::Value => CompareTarget::Value(match u {
            Some(U::Value(v)) => v.clone(),
            _ => Vec::new(),
        }),
    };
    let result = match c.result() {
        R::Equal => CompareResult::Equal,
        R::Greater => CompareResult::Greater,
        R::Less => CompareResult::Less,
        R::NotEqual => CompareResult::NotEqual,
    };
    Compare { key: c.key, range_end: c.range_end, target, result }
}

fn request_op(op: pb::RequestOp) -> Result<RequestOp, Status> {
    use pb::request_op::Request as R;
    match op.request {
        Some(R::RequestRange(r)) => Ok(RequestOp::Range(range_req(r)?)),
        Some(R::RequestPut(p)) => Ok(RequestOp::Put(put_req(p)?)),
        Some(R::RequestDeleteRange(d)) => Ok(RequestOp::DeleteRange(delete_req(d))),
        Some(R::RequestTxn(_)) => Err(Status::invalid_argument(
            "ringleader does not serve nested transactions (RequestOp.request_txn); flatten the transaction",
        )),
        None => Err(Status::invalid_argument("a RequestOp must hold a range, put or delete_range request")),
    }
}

/// A transaction from the wire; a branch that writes one key twice is refused as etcd refuses
/// it.
pub fn txn_of(t: TxnRequest) -> Result<Txn, Status> {
    let txn = Txn {
        compare: t.compare.into_iter().map(compare).collect(),
        success: t.success.into_iter().map(request_op).collect::<Result<_, _>>()?,
        failure: t.failure.into_iter().map(request_op).collect::<Result<_, _>>()?,
    };
    check_duplicates(&txn.success)?;
    check_duplicates(&txn.failure)?;
    Ok(txn)
}

/// etcd's rule for one branch of a transaction (`checkIntervals`): no key is put twice, and no
/// key put is also inside a range the branch deletes — the outcome would hang on the order.
fn check_duplicates(ops: &[RequestOp]) -> Result<(), Status> {
    let duplicate = || Status::invalid_argument("etcdserver: duplicate key given in txn request");
    let mut puts = std::collections::BTreeSet::new();
    for op in ops {
        if let RequestOp::Put(p) = op
            && !puts.insert(p.key.as_slice())
        {
            return Err(duplicate());
        }
    }
    for op in ops {
        if let RequestOp::DeleteRange(d) = op {
            let inside = |k: &[u8]| match d.range_end.as_slice() {
                [] => k == d.key.as_slice(),
                [0] => k >= d.key.as_slice(),
                end => k >= d.key.as_slice() && k < end,
            };
            if puts.iter().any(|k| inside(k)) {
                return Err(duplicate());
            }
        }
    }
    Ok(())
}

fn range_pb(ctx: &Ctx, revision: u64, r: RangeResult) -> RangeResponse {
    RangeResponse {
        header: ctx.header(Some(revision)),
        kvs: r.kvs.into_iter().map(kv_pb).collect(),
        more: r.more,
        count: r.count as i64,
    }
}

fn response_pb(ctx: &Ctx, revision: u64, r: ResponseOp) -> pb::ResponseOp {
    use pb::response_op::Response as R;
    let header = ctx.header(Some(revision));
    let response = match r {
        ResponseOp::Range(r) => R::ResponseRange(range_pb(ctx, revision, r)),
        ResponseOp::Put { prev_kv } => R::ResponsePut(PutResponse { header, prev_kv: prev_kv.map(kv_pb) }),
        ResponseOp::DeleteRange { deleted, prev_kvs } => R::ResponseDeleteRange(DeleteRangeResponse {
            header,
            deleted: deleted as i64,
            prev_kvs: prev_kvs.into_iter().map(kv_pb).collect(),
        }),
    };
    pb::ResponseOp { response: Some(response) }
}

impl KvApi {
    /// Proposes `txn` for `who` once it may run it ([`ops::permit_txn`]); the revision it was
    /// applied at and its outcome.
    async fn propose(&self, who: &Caller, txn: Txn) -> Result<(u64, TxnResult), Status> {
        ops::permit_txn(&self.0.node, who, &txn).await.map_err(op_status)?;
        match self.0.node.propose(Op::Txn { txn }).await.map_err(unavailable)?.reply {
            Reply::Txn { revision, result } => Ok((revision, result)),
            Reply::KvRefused { error } => Err(kv_status(&error)),
            other => Err(Status::internal(format!("unexpected reply {other:?}"))),
        }
    }
}

#[tonic::async_trait]
impl Kv for KvApi {
    async fn range(&self, req: Request<RangeRequest>) -> Result<Response<RangeResponse>, Status> {
        let who = caller_of(&req)?;
        let req = req.into_inner();
        let serializable = req.serializable;
        let r = range_req(req)?;
        let need = Need::Keys { access: Access::Read, key: r.key.clone(), range_end: r.range_end.clone() };
        ops::permit(&self.0.node, &who, &need).map_err(op_status)?;
        let query = move |m: &StateMachine| {
            let applied = m.last_applied();
            (applied, m.kv().range(&r, applied))
        };
        let node = &self.0.node;
        let (revision, result) = if serializable {
            node.local(query).await.map_err(unavailable)?
        } else {
            node.read(query).await.map_err(unavailable)?.1
        };
        let result = result.map_err(|e| kv_status(&e))?;
        Ok(Response::new(range_pb(&self.0, revision, result)))
    }

    async fn put(&self, req: Request<PutRequest>) -> Result<Response<PutResponse>, Status> {
        let who = caller_of(&req)?;
        let req = req.into_inner();
        super::too_large(&self.0.node, prost::Message::encoded_len(&req))?;
        let put = put_req(req)?;
        let txn = Txn { success: vec![RequestOp::Put(put)], ..Txn::default() };
        super::check_space(&self.0.node, txn.growth())?;
        let (revision, mut result) = self.propose(&who, txn).await?;
        let prev_kv = match result.responses.pop() {
            Some(ResponseOp::Put { prev_kv }) => prev_kv.map(kv_pb),
            _ => None,
        };
        Ok(Response::new(PutResponse { header: self.0.header(Some(revision)), prev_kv }))
    }

    async fn delete_range(
        &self,
        req: Request<DeleteRangeRequest>,
    ) -> Result<Response<DeleteRangeResponse>, Status> {
        let who = caller_of(&req)?;
        let d = delete_req(req.into_inner());
        let (revision, mut result) =
            self.propose(&who, Txn { success: vec![RequestOp::DeleteRange(d)], ..Txn::default() }).await?;
        let (deleted, prev_kvs) = match result.responses.pop() {
            Some(ResponseOp::DeleteRange { deleted, prev_kvs }) => (deleted, prev_kvs),
            _ => (0, Vec::new()),
        };
        Ok(Response::new(DeleteRangeResponse {
            header: self.0.header(Some(revision)),
            deleted: deleted as i64,
            prev_kvs: prev_kvs.into_iter().map(kv_pb).collect(),
        }))
    }

    async fn txn(&self, req: Request<TxnRequest>) -> Result<Response<TxnResponse>, Status> {
        let who = caller_of(&req)?;
        let req = req.into_inner();
        super::too_large(&self.0.node, prost::Message::encoded_len(&req))?;
        let txn = txn_of(req)?;
        if txn.growth() > 0 {
            super::check_space(&self.0.node, txn.growth())?;
        }
        let (revision, result) = self.propose(&who, txn).await?;
        Ok(Response::new(TxnResponse {
            header: self.0.header(Some(revision)),
            succeeded: result.succeeded,
            responses: result.responses.into_iter().map(|r| response_pb(&self.0, revision, r)).collect(),
        }))
    }
}
