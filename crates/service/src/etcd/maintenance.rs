//! `etcdserverpb.Maintenance`: Status, enough for clients to check a node and find the leader.

use tonic::{Request, Response, Status};

use super::pb::etcdserverpb::maintenance_server::Maintenance;
use super::pb::etcdserverpb::{StatusRequest, StatusResponse};
use super::{Ctx, VERSION};

/// The Maintenance service.
pub struct MaintenanceApi(pub Ctx);

#[tonic::async_trait]
impl Maintenance for MaintenanceApi {
    /// The node's view: `leader` is the Raft leader's member id (0 when none is known),
    /// `raftIndex` the commit index, `raftAppliedIndex` the applied index. The database sizes
    /// are 0: the service keeps no key-value store.
    async fn status(&self, _req: Request<StatusRequest>) -> Result<Response<StatusResponse>, Status> {
        let ctx = &self.0;
        let s = ctx.node.status.lock().map(|s| s.clone()).unwrap_or_default();
        Ok(Response::new(StatusResponse {
            header: ctx.header(None),
            version: VERSION.to_string(),
            db_size: 0,
            leader: s.leader.unwrap_or(0),
            raft_index: s.commit,
            raft_term: s.term,
            raft_applied_index: s.applied,
            errors: Vec::new(),
            db_size_in_use: 0,
            is_learner: false,
        }))
    }
}
