//! `etcdserverpb.Maintenance`: Status, enough for clients to check a node and find the leader,
//! and Alarm, which lists (and disarms) the `NOSPACE` alarm of the backend quota.

use std::sync::atomic::Ordering;

use tonic::{Request, Response, Status};

use super::pb::etcdserverpb::alarm_request::AlarmAction;
use super::pb::etcdserverpb::maintenance_server::Maintenance;
use super::pb::etcdserverpb::{
    AlarmMember, AlarmRequest, AlarmResponse, AlarmType, StatusRequest, StatusResponse,
};
use super::{Ctx, VERSION};

/// The Maintenance service.
pub struct MaintenanceApi(pub Ctx);

impl MaintenanceApi {
    /// This member's alarms: `NOSPACE` while it is raised.
    fn alarms(&self) -> Vec<AlarmMember> {
        let node = &self.0.node;
        if node.nospace.load(Ordering::Relaxed) {
            vec![AlarmMember { member_id: node.me as u64 + 1, alarm: AlarmType::Nospace as i32 }]
        } else {
            Vec::new()
        }
    }
}

#[tonic::async_trait]
impl Maintenance for MaintenanceApi {
    /// The node's view: `leader` is the Raft leader's member id (0 when none is known),
    /// `raftIndex` the commit index, `raftAppliedIndex` the applied index, `dbSize` and
    /// `dbSizeInUse` the key-value store's size as the backend quota counts it, `errors` the
    /// raised alarms in etcd's words.
    async fn status(&self, _req: Request<StatusRequest>) -> Result<Response<StatusResponse>, Status> {
        let ctx = &self.0;
        let s = ctx.node.status.lock().clone();
        let errors =
            self.alarms().iter().map(|a| format!("memberID:{} alarm:NOSPACE ", a.member_id)).collect();
        let size = i64::try_from(s.store_bytes).unwrap_or(i64::MAX);
        Ok(Response::new(StatusResponse {
            header: ctx.header(None),
            version: VERSION.to_string(),
            db_size: size,
            leader: s.leader.unwrap_or(0),
            raft_index: s.commit,
            raft_term: s.term,
            raft_applied_index: s.applied,
            errors,
            db_size_in_use: size,
            is_learner: false,
        }))
    }

    /// GET lists this member's alarms; DEACTIVATE of `NOSPACE` (or of every alarm) disarms it
    /// (`etcdctl alarm disarm`); ACTIVATE is refused: only the quota raises `NOSPACE`. Unlike
    /// etcd's, the alarm is this member's own (not replicated), and it does not itself refuse
    /// writes: a write is refused while it would not fit under the quota, alarm or not.
    async fn alarm(&self, req: Request<AlarmRequest>) -> Result<Response<AlarmResponse>, Status> {
        let req = req.into_inner();
        let node = &self.0.node;
        let mine = req.member_id == 0 || req.member_id == node.me as u64 + 1;
        let alarms = self.alarms();
        match req.action() {
            AlarmAction::Get => {}
            AlarmAction::Activate => {
                return Err(Status::invalid_argument(
                    "ringleader raises alarms itself (NOSPACE, when a write would pass --quota-backend-bytes); \
                     they cannot be activated by a client",
                ));
            }
            AlarmAction::Deactivate => {
                if mine && matches!(req.alarm(), AlarmType::Nospace | AlarmType::None) {
                    node.nospace.store(false, Ordering::Relaxed);
                }
            }
        }
        Ok(Response::new(AlarmResponse { header: self.0.header(None), alarms }))
    }
}
