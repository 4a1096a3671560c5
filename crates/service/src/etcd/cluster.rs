//! `etcdserverpb.Cluster`: MemberList, enough for clients to connect.
//!
//! Member ids are the service's node ids (1..N). A member's peer URL is its Raft transport's
//! address; only the answering node knows its own client (gRPC) URL, so the others' are empty.

use tonic::{Request, Response, Status};

use super::Ctx;
use super::pb::etcdserverpb::cluster_server::Cluster;
use super::pb::etcdserverpb::{Member, MemberListRequest, MemberListResponse};

/// The Cluster service.
pub struct ClusterApi(pub Ctx);

#[tonic::async_trait]
impl Cluster for ClusterApi {
    async fn member_list(
        &self,
        _req: Request<MemberListRequest>,
    ) -> Result<Response<MemberListResponse>, Status> {
        let ctx = &self.0;
        let me = ctx.node.me as u64 + 1;
        // The members and their peer addresses as this node's loop knows them (its applied
        // configuration and the address table beside its log).
        let known = ctx.node.members().await.map_err(super::unavailable)?;
        let members = known
            .members
            .into_iter()
            .map(|m| Member {
                id: m.id,
                name: format!("node-{}", m.id),
                peer_ur_ls: if m.peer.is_empty() { Vec::new() } else { vec![format!("http://{}", m.peer)] },
                client_ur_ls: if m.id == me { vec![format!("http://{}", ctx.addr)] } else { Vec::new() },
                is_learner: false,
            })
            .collect();
        Ok(Response::new(MemberListResponse { header: ctx.header(None), members }))
    }
}
