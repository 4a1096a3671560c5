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
        let mut ids = ctx.node.status.lock().map(|s| s.members.clone()).unwrap_or_default();
        if ids.is_empty() {
            ids = ctx.node.shared.members.clone();
        }
        let members = ids
            .into_iter()
            .map(|id| {
                let peer =
                    ctx.node.shared.peers.iter().flatten().find(|p| p.id == id).map(|p| p.addr.clone());
                Member {
                    id,
                    name: format!("node-{id}"),
                    peer_ur_ls: peer.map(|a| vec![format!("http://{a}")]).unwrap_or_default(),
                    client_ur_ls: if id == me { vec![format!("http://{}", ctx.addr)] } else { Vec::new() },
                    is_learner: false,
                }
            })
            .collect();
        Ok(Response::new(MemberListResponse { header: ctx.header(None), members }))
    }
}
