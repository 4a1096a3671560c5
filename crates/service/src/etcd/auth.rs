//! `etcdserverpb.Auth`: Authenticate, and the check every other call of the gRPC API passes.
//!
//! When the node has an API bearer token (`serve --api-token-file`), the gRPC API asks for it
//! the way etcd asks for a password: one user, [`USER`], whose password is the API token.
//! `Authenticate` with that name and password answers an auth token (derived from the API
//! token, the same on every node that shares it, so a client may fail over with it); every
//! other call must carry it as etcd's `token` metadata, or is refused `UNAUTHENTICATED`. This is
//! what etcd clients send when given a user: `etcd-client`'s `ConnectOptions::with_user("root",
//! TOKEN)`, `etcdctl --user root:TOKEN`. Without an API token, `Authenticate` answers etcd's
//! "authentication is not enabled" and every call passes. Comparisons are in constant time.

use std::sync::Arc;

use ringleader_transport::http::ApiToken;
use subtle::ConstantTimeEq;
use tonic::service::Interceptor;
use tonic::{Request, Response, Status};

use super::Ctx;
use super::pb::etcdserverpb::auth_server::Auth;
use super::pb::etcdserverpb::{AuthenticateRequest, AuthenticateResponse};

/// The one user the gRPC API knows; its password is the node's API token.
pub const USER: &str = "root";

/// What the auth token is derived for (see [`ApiToken::derive`]).
const PURPOSE: &str = "ringleader etcd gRPC auth token v1";

/// The check on every call but `Authenticate`: a tonic interceptor.
#[derive(Clone)]
pub struct Authorizer {
    /// The auth token calls must carry; `None`: no authentication.
    token: Option<Arc<str>>,
}

impl Authorizer {
    /// The check for a node with `api_token` (`None`: every call passes).
    pub fn new(api_token: Option<&ApiToken>) -> Authorizer {
        Authorizer { token: api_token.map(|t| Arc::from(t.derive(PURPOSE))) }
    }
}

impl Interceptor for Authorizer {
    fn call(&mut self, req: Request<()>) -> Result<Request<()>, Status> {
        let Some(want) = &self.token else { return Ok(req) };
        match req.metadata().get("token") {
            None => Err(Status::unauthenticated("etcdserver: user name is empty")),
            Some(v) if bool::from(v.as_bytes().ct_eq(want.as_bytes())) => Ok(req),
            Some(_) => Err(Status::unauthenticated("etcdserver: invalid auth token")),
        }
    }
}

/// The Auth service (Authenticate only).
pub struct AuthApi {
    /// The node, for answer headers.
    pub ctx: Ctx,
    /// The node's API token: the password of [`USER`].
    pub api_token: Option<ApiToken>,
}

#[tonic::async_trait]
impl Auth for AuthApi {
    /// Name [`USER`] and the API token as password → the auth token; anything else →
    /// `INVALID_ARGUMENT` with etcd's message.
    async fn authenticate(
        &self,
        req: Request<AuthenticateRequest>,
    ) -> Result<Response<AuthenticateResponse>, Status> {
        let Some(api_token) = &self.api_token else {
            return Err(Status::failed_precondition("etcdserver: authentication is not enabled"));
        };
        let r = req.into_inner();
        // Both compared, whatever the name, so that the time taken says nothing about either.
        let password_ok = api_token.matches(&r.password);
        if r.name != USER || !password_ok {
            return Err(Status::invalid_argument(
                "etcdserver: authentication failed, invalid user ID or password",
            ));
        }
        Ok(Response::new(AuthenticateResponse {
            header: self.ctx.header(None),
            token: api_token.derive(PURPOSE),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(a: &mut Authorizer, token: Option<&str>) -> Result<(), Status> {
        let mut req = Request::new(());
        if let Some(t) = token {
            req.metadata_mut().insert("token", t.parse().unwrap());
        }
        a.call(req).map(|_| ())
    }

    #[test]
    fn calls_need_the_derived_token_when_the_node_has_an_api_token() {
        let api = ApiToken::new("0123456789abcdef0123").unwrap();
        let mut a = Authorizer::new(Some(&api));
        let good = api.derive(PURPOSE);
        assert_eq!(good.len(), 64);
        assert!(call(&mut a, Some(&good)).is_ok());
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
    fn without_an_api_token_every_call_passes() {
        let mut a = Authorizer::new(None);
        assert!(call(&mut a, None).is_ok());
        assert!(call(&mut a, Some("anything")).is_ok());
    }
}
