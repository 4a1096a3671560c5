//! `etcdserverpb.Auth`: users, roles and permissions (etcd's auth model), and the check every
//! other call of the gRPC API passes.
//!
//! Who a call comes from ([`crate::users::Principal`]), established by [`Authorizer`] on every
//! call but `Authenticate`:
//!
//! - etcd's `token` metadata: the token `Authenticate` answered for a user's name and password
//!   (while auth is enabled), or, on a node with an API token (`serve --api-token-file`), the
//!   token derived from it, which `Authenticate` answers for the name [`USER`] and the API token
//!   as password (the same on every node that shares the API token, so a client may fail over
//!   with it) and which speaks as root. This is what etcd clients send when given a user:
//!   `etcd-client`'s `ConnectOptions::with_user`, `etcdctl --user NAME:PASSWORD`;
//! - else, on a node without an API token, the common name of the client certificate (as
//!   etcd with `--client-cert-auth`); a node with an API token asks every call for a token, as
//!   its HTTP API asks every request for a bearer;
//! - else nobody. On a node with an API token, or while auth is enabled, nobody is refused
//!   `UNAUTHENTICATED`; a token the node does not know always is.
//!
//! What the caller may then do is checked once, in the operations layer ([`crate::ops`]). The
//! management calls need root while auth is enabled (anyone may call them while it is
//! disabled, as in etcd); passwords are hashed on this node ([`crate::users::hash_password`])
//! and only the hash is replicated. Comparisons are in constant time.

use std::sync::Arc;

use ringleader_lock_service::auth::{Access, AuthOp, Permission};
use subtle::ConstantTimeEq;
use tonic::service::Interceptor;
use tonic::{Request, Response, Status};

use super::pb::authpb::permission::Type as PermType;
use super::pb::etcdserverpb::auth_server::Auth;
use super::pb::etcdserverpb::*;
use super::{Ctx, caller_of, op_status};
use crate::ops::{self, Caller};
use crate::users::{AuthFailed, Need, Principal, Users};

/// The user the API token speaks as over this API.
pub const USER: &str = "root";

/// What the auth token is derived for (see [`ringleader_transport::http::ApiToken::derive`]).
const PURPOSE: &str = "ringleader etcd gRPC auth token v1";

/// The check on every call but `Authenticate`: a tonic interceptor that puts the caller's
/// [`Principal`] in the request's extensions.
#[derive(Clone)]
pub struct Authorizer {
    users: Arc<Users>,
    /// The auth token derived from the API token; `None`: the node has no API token.
    root_token: Option<Arc<str>>,
}

impl Authorizer {
    /// The check for a node with these users (and their API token).
    pub fn new(users: Arc<Users>) -> Authorizer {
        let root_token = users.api_token().map(|t| Arc::from(t.derive(PURPOSE)));
        Authorizer { users, root_token }
    }

    /// Who `req` comes from, or why it is refused.
    fn identify<T>(&self, req: &Request<T>) -> Result<Principal, Status> {
        let required = self.root_token.is_some() || self.users.enabled();
        if let Some(v) = req.metadata().get("token") {
            let presented = v.as_bytes();
            if let Some(root) = &self.root_token
                && bool::from(presented.ct_eq(root.as_bytes()))
            {
                return Ok(Principal::Root);
            }
            let user = std::str::from_utf8(presented).ok().and_then(|t| self.users.session(t));
            return match user {
                Some(user) => Ok(Principal::User(user)),
                None if required => Err(Status::unauthenticated("etcdserver: invalid auth token")),
                // etcd ignores tokens while auth is disabled.
                None => Ok(Principal::Nobody),
            };
        }
        // A node with an API token asks every call for a token (as its HTTP API asks for a
        // bearer); otherwise a client certificate names its user.
        let cert = match self.root_token {
            Some(_) => None,
            None => req.peer_certs().and_then(|c| c.first().and_then(|d| Users::identify_certificate(d))),
        };
        match cert {
            Some(principal) => Ok(principal),
            None if required => Err(Status::unauthenticated("etcdserver: user name is empty")),
            None => Ok(Principal::Nobody),
        }
    }
}

impl Interceptor for Authorizer {
    fn call(&mut self, mut req: Request<()>) -> Result<Request<()>, Status> {
        let principal = self.identify(&req)?;
        req.extensions_mut().insert(principal);
        Ok(req)
    }
}

/// The Auth service.
pub struct AuthApi {
    /// The node, for answer headers and its users.
    pub ctx: Ctx,
    /// The principal check of the calls other than `Authenticate`.
    pub check: Authorizer,
}

impl AuthApi {
    /// The caller of a management call (which the interceptor did not see).
    fn caller<T>(&self, req: &mut Request<T>) -> Result<Caller, Status> {
        let principal = self.check.identify(req)?;
        req.extensions_mut().insert(principal);
        caller_of(req)
    }

    /// Applies `op` for the caller of `req` (root while auth is enabled).
    async fn administer<T>(
        &self,
        req: &mut Request<T>,
        op: AuthOp,
    ) -> Result<Option<ResponseHeader>, Status> {
        let who = self.caller(req)?;
        ops::administer(&self.ctx.node, &who, op).await.map_err(op_status)?;
        Ok(self.ctx.applied_header().await)
    }

    /// A password's hash (`None`: no password), hashed off the async threads.
    async fn hash(&self, password: String) -> Result<Option<String>, Status> {
        ops::hash_password(&self.ctx.node, password).await.map_err(|e| Status::internal(e.to_string()))
    }

    /// Checks that the caller of `req` may read the auth store (root while auth is enabled).
    fn may_read(&self, req: &mut Request<impl Send>) -> Result<(), Status> {
        let who = self.caller(req)?;
        ops::permit(&self.ctx.node, &who, &Need::Admin).map_err(op_status)
    }
}

fn access_of(t: i32) -> Result<Access, Status> {
    match PermType::try_from(t) {
        Ok(PermType::Read) => Ok(Access::Read),
        Ok(PermType::Write) => Ok(Access::Write),
        Ok(PermType::Readwrite) => Ok(Access::ReadWrite),
        Err(_) => Err(Status::invalid_argument(format!(
            "permission type {t}: etcd's are 0 (read), 1 (write), 2 (readwrite)"
        ))),
    }
}

fn perm_type(a: Access) -> i32 {
    match a {
        Access::Read => PermType::Read as i32,
        Access::Write => PermType::Write as i32,
        Access::ReadWrite => PermType::Readwrite as i32,
    }
}

#[tonic::async_trait]
impl Auth for AuthApi {
    /// A user's name and password (while auth is enabled), or [`USER`] and the API token → a
    /// token; anything else → `INVALID_ARGUMENT` with etcd's message.
    async fn authenticate(
        &self,
        req: Request<AuthenticateRequest>,
    ) -> Result<Response<AuthenticateResponse>, Status> {
        let r = req.into_inner();
        let node = &self.ctx.node;
        // The API token's holder first, both compared whatever the name, so that the time
        // taken says nothing about either.
        if let Some(api_token) = node.users.api_token() {
            let password_ok = api_token.matches(&r.password);
            if r.name == USER && password_ok {
                return Ok(Response::new(AuthenticateResponse {
                    header: self.ctx.header(None),
                    token: api_token.derive(PURPOSE),
                }));
            }
        }
        match ops::authenticate(node, r.name, r.password).await {
            Ok(token) => Ok(Response::new(AuthenticateResponse { header: self.ctx.header(None), token })),
            Err(AuthFailed::NotEnabled) if node.users.api_token().is_some() => {
                Err(Status::invalid_argument(AuthFailed::Invalid.to_string()))
            }
            Err(e @ AuthFailed::NotEnabled) => Err(Status::failed_precondition(e.to_string())),
            Err(e @ AuthFailed::Invalid) => Err(Status::invalid_argument(e.to_string())),
        }
    }

    async fn auth_enable(
        &self,
        mut req: Request<AuthEnableRequest>,
    ) -> Result<Response<AuthEnableResponse>, Status> {
        let header = self.administer(&mut req, AuthOp::Enable).await?;
        Ok(Response::new(AuthEnableResponse { header }))
    }

    async fn auth_disable(
        &self,
        mut req: Request<AuthDisableRequest>,
    ) -> Result<Response<AuthDisableResponse>, Status> {
        let header = self.administer(&mut req, AuthOp::Disable).await?;
        Ok(Response::new(AuthDisableResponse { header }))
    }

    async fn auth_status(
        &self,
        mut req: Request<AuthStatusRequest>,
    ) -> Result<Response<AuthStatusResponse>, Status> {
        self.caller(&mut req)?;
        let store = self.ctx.node.users.view();
        Ok(Response::new(AuthStatusResponse {
            header: self.ctx.header(None),
            enabled: store.enabled(),
            auth_revision: store.revision(),
        }))
    }

    async fn user_add(
        &self,
        mut req: Request<AuthUserAddRequest>,
    ) -> Result<Response<AuthUserAddResponse>, Status> {
        self.may_read(&mut req)?;
        let r = req.get_mut();
        let no_password = r.options.as_ref().is_some_and(|o| o.no_password);
        let password = std::mem::take(&mut r.password);
        if !r.hashed_password.is_empty() {
            return Err(Status::invalid_argument(
                "hashedPassword: etcd's bcrypt hashes are not taken; send the password, which the node hashes",
            ));
        }
        if !no_password && password.is_empty() {
            return Err(Status::invalid_argument(
                "etcdserver: password must not be empty (or add the user with no password)",
            ));
        }
        let password = if no_password { None } else { self.hash(password).await? };
        let name = r.name.clone();
        let header = self.administer(&mut req, AuthOp::UserAdd { name, password }).await?;
        Ok(Response::new(AuthUserAddResponse { header }))
    }

    async fn user_get(
        &self,
        mut req: Request<AuthUserGetRequest>,
    ) -> Result<Response<AuthUserGetResponse>, Status> {
        self.may_read(&mut req)?;
        let store = self.ctx.node.users.view();
        let user = store
            .user(&req.get_ref().name)
            .ok_or_else(|| Status::failed_precondition("etcdserver: user name not found"))?;
        let roles = user.roles.iter().cloned().collect();
        Ok(Response::new(AuthUserGetResponse { header: self.ctx.header(None), roles }))
    }

    async fn user_list(
        &self,
        mut req: Request<AuthUserListRequest>,
    ) -> Result<Response<AuthUserListResponse>, Status> {
        self.may_read(&mut req)?;
        let users = self.ctx.node.users.view().user_names().map(String::from).collect();
        Ok(Response::new(AuthUserListResponse { header: self.ctx.header(None), users }))
    }

    async fn user_delete(
        &self,
        mut req: Request<AuthUserDeleteRequest>,
    ) -> Result<Response<AuthUserDeleteResponse>, Status> {
        let name = req.get_ref().name.clone();
        let header = self.administer(&mut req, AuthOp::UserDelete { name }).await?;
        Ok(Response::new(AuthUserDeleteResponse { header }))
    }

    async fn user_change_password(
        &self,
        mut req: Request<AuthUserChangePasswordRequest>,
    ) -> Result<Response<AuthUserChangePasswordResponse>, Status> {
        self.may_read(&mut req)?;
        let r = req.get_mut();
        if !r.hashed_password.is_empty() {
            return Err(Status::invalid_argument(
                "hashedPassword: etcd's bcrypt hashes are not taken; send the password, which the node hashes",
            ));
        }
        let password = self.hash(std::mem::take(&mut r.password)).await?;
        let name = r.name.clone();
        let header = self.administer(&mut req, AuthOp::UserChangePassword { name, password }).await?;
        Ok(Response::new(AuthUserChangePasswordResponse { header }))
    }

    async fn user_grant_role(
        &self,
        mut req: Request<AuthUserGrantRoleRequest>,
    ) -> Result<Response<AuthUserGrantRoleResponse>, Status> {
        let AuthUserGrantRoleRequest { user, role } = req.get_ref().clone();
        let header = self.administer(&mut req, AuthOp::UserGrantRole { user, role }).await?;
        Ok(Response::new(AuthUserGrantRoleResponse { header }))
    }

    async fn user_revoke_role(
        &self,
        mut req: Request<AuthUserRevokeRoleRequest>,
    ) -> Result<Response<AuthUserRevokeRoleResponse>, Status> {
        let AuthUserRevokeRoleRequest { name, role } = req.get_ref().clone();
        let header = self.administer(&mut req, AuthOp::UserRevokeRole { user: name, role }).await?;
        Ok(Response::new(AuthUserRevokeRoleResponse { header }))
    }

    async fn role_add(
        &self,
        mut req: Request<AuthRoleAddRequest>,
    ) -> Result<Response<AuthRoleAddResponse>, Status> {
        let name = req.get_ref().name.clone();
        let header = self.administer(&mut req, AuthOp::RoleAdd { name }).await?;
        Ok(Response::new(AuthRoleAddResponse { header }))
    }

    async fn role_get(
        &self,
        mut req: Request<AuthRoleGetRequest>,
    ) -> Result<Response<AuthRoleGetResponse>, Status> {
        self.may_read(&mut req)?;
        let store = self.ctx.node.users.view();
        let role = store
            .role(&req.get_ref().role)
            .ok_or_else(|| Status::failed_precondition("etcdserver: role name not found"))?;
        let perm = role
            .permissions
            .iter()
            .map(|p| super::pb::authpb::Permission {
                perm_type: perm_type(p.access),
                key: p.key.clone(),
                range_end: p.range_end.clone(),
            })
            .collect();
        Ok(Response::new(AuthRoleGetResponse { header: self.ctx.header(None), perm }))
    }

    async fn role_list(
        &self,
        mut req: Request<AuthRoleListRequest>,
    ) -> Result<Response<AuthRoleListResponse>, Status> {
        self.may_read(&mut req)?;
        let roles = self.ctx.node.users.view().role_names().map(String::from).collect();
        Ok(Response::new(AuthRoleListResponse { header: self.ctx.header(None), roles }))
    }

    async fn role_delete(
        &self,
        mut req: Request<AuthRoleDeleteRequest>,
    ) -> Result<Response<AuthRoleDeleteResponse>, Status> {
        let name = req.get_ref().role.clone();
        let header = self.administer(&mut req, AuthOp::RoleDelete { name }).await?;
        Ok(Response::new(AuthRoleDeleteResponse { header }))
    }

    async fn role_grant_permission(
        &self,
        mut req: Request<AuthRoleGrantPermissionRequest>,
    ) -> Result<Response<AuthRoleGrantPermissionResponse>, Status> {
        let r = req.get_ref().clone();
        let perm = r.perm.ok_or_else(|| Status::invalid_argument("etcdserver: permission not given"))?;
        let permission =
            Permission { access: access_of(perm.perm_type)?, key: perm.key, range_end: perm.range_end };
        let header =
            self.administer(&mut req, AuthOp::RoleGrantPermission { role: r.name, permission }).await?;
        Ok(Response::new(AuthRoleGrantPermissionResponse { header }))
    }

    async fn role_revoke_permission(
        &self,
        mut req: Request<AuthRoleRevokePermissionRequest>,
    ) -> Result<Response<AuthRoleRevokePermissionResponse>, Status> {
        let AuthRoleRevokePermissionRequest { role, key, range_end } = req.get_ref().clone();
        let header = self.administer(&mut req, AuthOp::RoleRevokePermission { role, key, range_end }).await?;
        Ok(Response::new(AuthRoleRevokePermissionResponse { header }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringleader_transport::http::ApiToken;

    fn call(a: &mut Authorizer, token: Option<&str>) -> Result<Principal, Status> {
        let mut req = Request::new(());
        if let Some(t) = token {
            req.metadata_mut().insert("token", t.parse().unwrap());
        }
        a.call(req).map(|r| r.extensions().get::<Principal>().cloned().unwrap())
    }

    #[test]
    fn calls_need_the_derived_token_when_the_node_has_an_api_token() {
        let api = ApiToken::new("0123456789abcdef0123").unwrap();
        let mut a = Authorizer::new(Arc::new(Users::new(Some(api.clone()), None)));
        let good = api.derive(PURPOSE);
        assert_eq!(good.len(), 64);
        assert_eq!(call(&mut a, Some(&good)).unwrap(), Principal::Root);
        let missing = call(&mut a, None).unwrap_err();
        assert_eq!(
            (missing.code(), missing.message()),
            (tonic::Code::Unauthenticated, "etcdserver: user name is empty")
        );
        for bad in ["0123456789abcdef0123", &good[1..], "x"] {
            let e = call(&mut a, Some(bad)).unwrap_err();
            assert_eq!(
                (e.code(), e.message()),
                (tonic::Code::Unauthenticated, "etcdserver: invalid auth token")
            );
        }
        // Another API token derives another auth token.
        let other = ApiToken::new("0123456789abcdef0124").unwrap();
        assert_ne!(other.derive(PURPOSE), good);
    }

    #[test]
    fn without_an_api_token_or_auth_every_call_passes_as_nobody() {
        let mut a = Authorizer::new(Arc::new(Users::new(None, None)));
        assert_eq!(call(&mut a, None).unwrap(), Principal::Nobody);
        assert_eq!(call(&mut a, Some("anything")).unwrap(), Principal::Nobody);
    }
}
