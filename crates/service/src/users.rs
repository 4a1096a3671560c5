//! # Who is calling, and what they may do
//!
//! etcd's auth model on this node ([`ringleader_lock_service::auth`] keeps the replicated users,
//! roles and permissions). This module holds what is the node's own:
//!
//! - **who the caller is** ([`Principal`]): the holder of the node's API token
//!   (`--api-token-file`, or over the etcd API the token derived from it) is
//!   [`Principal::Root`]; a user is named by a token that
//!   [`Users::authenticate`] handed out for its password, or by the common name of the client
//!   certificate it presented (as etcd does with `--client-cert-auth`); anyone else is
//!   [`Principal::Nobody`];
//! - **the tokens** handed out: signed, not stored (as etcd's JWT tokens): the user's name, an
//!   expiry five minutes on (etcd's default `--auth-token-ttl`), a fingerprint of the user's
//!   password hash, and an HMAC-SHA-256 tag over them keyed by the cluster secret, so that every
//!   member accepts a token any member handed out (etcd's clients send one token to every
//!   endpoint) and a password change ends the tokens of the old one. A node without a cluster
//!   secret (`--insecure`) keys them with a random key of its own: its tokens work on it alone;
//! - **passwords**: hashed with Argon2id on the node that takes them (the replicated state
//!   only ever holds the PHC string), verified against it in constant time; a name without a
//!   user is checked against a dummy hash, so the time taken does not tell which names exist;
//! - **the view** of the replicated auth store, published by the server loop whenever an entry
//!   changes it, which every check reads without a round trip through the loop.
//!
//! While auth is disabled (etcd's default) every caller may do everything the API token lets it
//! reach. Once enabled, [`Users::permit`] is the one check: a caller must be someone, root
//! (the API token, or a user with the role `root`) may do everything, and a user may read or
//! write the key ranges its roles allow. Locks and elections are checked as the keys etcd would
//! write for them: lock `db` needs `write` on the prefix `db/`, reading an election's leader
//! `read` on its prefix. The check runs on this node's applied state: a permission revoked a
//! moment ago through another node holds here once this node applies the change.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use parking_lot::Mutex;
use ringleader_lock_service::auth::{Access, AuthStore};
use ringleader_transport::auth::{Secret, hex, unhex};
use ringleader_transport::http::ApiToken;
use sha2::Digest as _;

/// How long a token lives (etcd's default `--auth-token-ttl`).
pub const TOKEN_TTL: Duration = Duration::from_secs(300);

/// How many password hashings (Argon2: 19 MiB and a thread each) a node runs at once.
pub const HASHING_AT_ONCE: usize = 4;

/// What a token's tag is computed for (the cluster secret keys other things too).
const TOKEN_LABEL: &[u8] = b"ringleader auth token v1";

/// Who a request comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Principal {
    /// The node's administrator: the API token's holder.
    Root,
    /// A user of the auth store.
    User(String),
    /// Nobody in particular (no token, no client certificate).
    Nobody,
}

/// What a request needs to be allowed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Need {
    /// Only to be someone (lease grants and reads of lease state, the cluster's status).
    Someone,
    /// `Read` or `Write` on the keys `[key, range_end)` (etcd's encoding).
    Keys {
        /// Read or write.
        access: Access,
        /// The range's first key.
        key: Vec<u8>,
        /// Its end.
        range_end: Vec<u8>,
    },
    /// The role `root`: auth and membership changes.
    Admin,
}

impl Need {
    /// `access` on the one key `key`.
    pub fn key(access: Access, key: &[u8]) -> Need {
        Need::Keys { access, key: key.to_vec(), range_end: Vec::new() }
    }

    /// `access` on the keys etcd writes for lock or election `name`: the prefix `name/`.
    pub fn name(access: Access, name: &str) -> Need {
        let key = format!("{name}/").into_bytes();
        let range_end = prefix_end(&key);
        Need::Keys { access, key, range_end }
    }
}

/// The end of the range of keys that start with `prefix` (etcd's `GetPrefixRangeEnd`).
pub fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

/// Why a request was not allowed. The messages are etcd's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Denied {
    /// Auth is enabled and the caller is nobody.
    #[error("etcdserver: user name is empty")]
    Unauthenticated,
    /// The caller may not do this.
    #[error("etcdserver: permission denied")]
    PermissionDenied,
}

/// Why a name and password were not accepted. One message for both (etcd's), so the answer
/// does not tell which names exist.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AuthFailed {
    /// Auth is disabled and the node has no API token: there is nothing to authenticate to.
    #[error("etcdserver: authentication is not enabled")]
    NotEnabled,
    /// No such user, no password, or a wrong one.
    #[error("etcdserver: authentication failed, invalid user ID or password")]
    Invalid,
}

/// A password that could not be hashed (the operating system's random source failed).
#[derive(Debug, thiserror::Error)]
#[error("could not hash the password: {0}")]
pub struct HashError(String);

impl From<String> for HashError {
    fn from(e: String) -> HashError {
        HashError(e)
    }
}

impl From<tokio::task::JoinError> for HashError {
    fn from(e: tokio::task::JoinError) -> HashError {
        HashError(e.to_string())
    }
}

/// The node's view of the auth store, its tokens and its API token (see the module doc).
pub struct Users {
    view: Mutex<Arc<AuthStore>>,
    /// What signs the tokens: the cluster secret, or a key of this node's own.
    token_key: Secret,
    api_token: Option<ApiToken>,
    /// Turns for password hashing ([`HASHING_AT_ONCE`]).
    pub hashing: tokio::sync::Semaphore,
}

impl Users {
    /// A node's users before its state machine was read (auth disabled), with its API token
    /// and the cluster secret that signs tokens (`None`: a random key of its own).
    pub fn new(api_token: Option<ApiToken>, secret: Option<Secret>) -> Users {
        let token_key = secret.unwrap_or_else(Secret::generate);
        Users {
            view: Mutex::default(),
            token_key,
            api_token,
            hashing: tokio::sync::Semaphore::new(HASHING_AT_ONCE),
        }
    }

    /// The node's API token, if it has one.
    pub fn api_token(&self) -> Option<&ApiToken> {
        self.api_token.as_ref()
    }

    /// The auth store as this node last applied it.
    pub fn view(&self) -> Arc<AuthStore> {
        self.view.lock().clone()
    }

    /// Publishes `store` when it moved past the view (the server loop calls this after
    /// applying entries and after restoring a snapshot).
    pub fn publish(&self, store: &AuthStore) {
        let mut view = self.view.lock();
        if view.revision() != store.revision() {
            *view = Arc::new(store.clone());
        }
    }

    /// Whether auth is enabled on this node's applied state.
    pub fn enabled(&self) -> bool {
        self.view.lock().enabled()
    }

    /// Who a bearer credential names: the API token is root, a live token the user it was
    /// handed to. `None`: no such credential.
    pub fn identify(&self, presented: &str) -> Option<Principal> {
        if self.api_token.as_ref().is_some_and(|t| t.matches(presented)) {
            return Some(Principal::Root);
        }
        self.session(presented).map(Principal::User)
    }

    /// The user a live token [`Users::authenticate`] handed out (on any member) names: its tag
    /// checks, it has not expired, and the user's password is the one it was handed out for.
    pub fn session(&self, presented: &str) -> Option<String> {
        let mut parts = presented.split('.');
        let (user, expiry, fingerprint, tag) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() {
            return None;
        }
        let tag = unhex(tag)?;
        if !self.token_key.verify(
            TOKEN_LABEL,
            &[user.as_bytes(), expiry.as_bytes(), fingerprint.as_bytes()],
            &tag,
        ) {
            return None;
        }
        if expiry.parse::<u64>().ok()? < unix_now() {
            return None;
        }
        let user = String::from_utf8(unhex(user)?).ok()?;
        let hash = self.view().user(&user)?.password.clone()?;
        (password_fingerprint(&hash) == fingerprint).then_some(user)
    }

    /// The principal of a client certificate (DER): the user its subject's common name names.
    /// `None` when it has no common name or cannot be read.
    pub fn identify_certificate(der: &[u8]) -> Option<Principal> {
        let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
        let cn = cert.subject().iter_common_name().next()?.as_str().ok()?;
        Some(Principal::User(cn.to_string()))
    }

    /// Checks `name` and `password` against the auth store (while auth is enabled) and answers
    /// a new token for the user. Hashing is slow on purpose: call it off the async threads.
    pub fn authenticate(&self, name: &str, password: &str) -> Result<String, AuthFailed> {
        let store = self.view();
        if !store.enabled() {
            return Err(AuthFailed::NotEnabled);
        }
        let hash = store.user(name).and_then(|u| u.password.clone());
        match hash {
            Some(hash) if verify(password, Some(&hash)) => Ok(self.issue(name, &hash)),
            Some(_) => Err(AuthFailed::Invalid),
            None => {
                verify(password, None);
                Err(AuthFailed::Invalid)
            }
        }
    }

    /// A new token for `user`, whose password hash is `hash`.
    fn issue(&self, user: &str, hash: &str) -> String {
        let user = hex(user.as_bytes());
        let expiry = (unix_now() + TOKEN_TTL.as_secs()).to_string();
        let fingerprint = password_fingerprint(hash);
        let tag =
            self.token_key.mac(TOKEN_LABEL, &[user.as_bytes(), expiry.as_bytes(), fingerprint.as_bytes()]);
        format!("{user}.{expiry}.{fingerprint}.{}", hex(&tag))
    }

    /// Whether `who` may do what `need` asks, on this node's applied auth store.
    pub fn permit(&self, who: &Principal, need: &Need) -> Result<(), Denied> {
        let store = self.view();
        permit(&store, who, need)
    }
}

impl ringleader_transport::http::BearerCheck for Users {
    fn accepts(&self, presented: &str) -> bool {
        self.identify(presented).is_some()
    }
}

/// [`Users::permit`] on `store`.
pub fn permit(store: &AuthStore, who: &Principal, need: &Need) -> Result<(), Denied> {
    if !store.enabled() {
        return Ok(());
    }
    let name = match who {
        Principal::Root => return Ok(()),
        Principal::Nobody => return Err(Denied::Unauthenticated),
        Principal::User(name) => name,
    };
    if store.user(name).is_none() {
        // A certificate's name that is not a user, or a user deleted since its token.
        return Err(Denied::PermissionDenied);
    }
    let allowed = match need {
        Need::Someone => true,
        Need::Admin => store.is_root(name),
        Need::Keys { access, key, range_end } => store.permits(name, *access, key, range_end),
    };
    if allowed { Ok(()) } else { Err(Denied::PermissionDenied) }
}

/// Whether `who` is an administrator on `store`: root, or anyone while auth is disabled.
pub fn is_admin(store: &AuthStore, who: &Principal) -> bool {
    permit(store, who, &Need::Admin).is_ok()
}

/// `password`'s Argon2id hash, as a PHC string (salt and parameters inside). `None` for an
/// empty password: a user without one (it can only be a certificate's common name).
pub fn hash_password(password: &str) -> Result<Option<String>, HashError> {
    if password.is_empty() {
        return Ok(None);
    }
    let mut salt = [0u8; 16];
    getrandom::fill(&mut salt).map_err(|e| HashError(e.to_string()))?;
    let salt = SaltString::encode_b64(&salt).map_err(|e| HashError(e.to_string()))?;
    let hash = argon2::Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map_err(|e| HashError(e.to_string()))?;
    Ok(Some(hash.to_string()))
}

/// Seconds since the Unix epoch on this node's clock (0 before it).
fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// What a token carries of the password hash it was handed out under: 8 bytes of its SHA-256,
/// in hex (a password change ends the old password's tokens).
fn password_fingerprint(hash: &str) -> String {
    hex(&sha2::Sha256::digest(hash.as_bytes())[..8])
}

/// A hash no password matches, checked when a name has no hash, so that the time taken is the
/// same as for a wrong password.
const DUMMY_HASH: &str =
    "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$Vd9RMZ8zuyVNpzSQC0hkb7VIr6kwNXClBr2SLmVeUR4";

/// Whether `password` matches `hash` (a dummy one when `None`, answering false).
fn verify(password: &str, hash: Option<&str>) -> bool {
    let Ok(parsed) = PasswordHash::new(hash.unwrap_or(DUMMY_HASH)) else { return false };
    let ok = argon2::Argon2::default().verify_password(password.as_bytes(), &parsed).is_ok();
    ok && hash.is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringleader_lock_service::auth::{AuthOp, Permission, ROOT};

    /// A store with root enabled and `alice` allowed to write under `locks/`.
    fn store() -> AuthStore {
        let mut s = AuthStore::default();
        let ops = [
            AuthOp::UserAdd { name: ROOT.into(), password: hash_password("rootpw").unwrap() },
            AuthOp::UserGrantRole { user: ROOT.into(), role: ROOT.into() },
            AuthOp::UserAdd { name: "alice".into(), password: hash_password("alicepw").unwrap() },
            AuthOp::RoleAdd { name: "app".into() },
            AuthOp::UserGrantRole { user: "alice".into(), role: "app".into() },
            AuthOp::RoleGrantPermission {
                role: "app".into(),
                permission: Permission {
                    access: Access::Write,
                    key: b"locks/".to_vec(),
                    range_end: prefix_end(b"locks/"),
                },
            },
            AuthOp::Enable,
        ];
        for op in &ops {
            s.apply(op).unwrap();
        }
        s
    }

    #[test]
    fn while_disabled_anyone_may_do_anything() {
        let s = AuthStore::default();
        assert_eq!(permit(&s, &Principal::Nobody, &Need::Admin), Ok(()));
    }

    #[test]
    fn once_enabled_nobody_may_do_nothing() {
        let s = store();
        assert_eq!(permit(&s, &Principal::Nobody, &Need::Someone), Err(Denied::Unauthenticated));
    }

    #[test]
    fn a_lock_name_is_checked_as_the_prefix_etcd_writes_for_it() {
        let s = store();
        let alice = Principal::User("alice".into());
        assert_eq!(permit(&s, &alice, &Need::name(Access::Write, "locks/db")), Ok(()));
        assert_eq!(permit(&s, &alice, &Need::name(Access::Write, "db")), Err(Denied::PermissionDenied));
        assert_eq!(permit(&s, &alice, &Need::name(Access::Read, "locks/db")), Err(Denied::PermissionDenied));
    }

    #[test]
    fn only_root_administers() {
        let s = store();
        assert_eq!(permit(&s, &Principal::User("alice".into()), &Need::Admin), Err(Denied::PermissionDenied));
        assert_eq!(permit(&s, &Principal::User(ROOT.into()), &Need::Admin), Ok(()));
        assert_eq!(permit(&s, &Principal::Root, &Need::Admin), Ok(()));
        assert_eq!(
            permit(&s, &Principal::User("mallory".into()), &Need::Someone),
            Err(Denied::PermissionDenied),
            "a name that is no user (a certificate's, a deleted user's) is nobody's"
        );
    }

    #[test]
    fn a_password_checks_against_its_hash_only() {
        let secret = Secret::generate();
        let users = Users::new(None, Some(secret.clone()));
        assert_eq!(users.authenticate("alice", "alicepw"), Err(AuthFailed::NotEnabled));
        let mut s = store();
        users.publish(&s);
        let token = users.authenticate("alice", "alicepw").unwrap();
        assert_eq!(users.identify(&token), Some(Principal::User("alice".into())));
        // Another member with the same cluster secret takes it; one with another does not.
        let member = Users::new(None, Some(secret));
        member.publish(&s);
        assert_eq!(member.session(&token).as_deref(), Some("alice"));
        let stranger = Users::new(None, Some(Secret::generate()));
        stranger.publish(&s);
        assert_eq!(stranger.session(&token), None);
        // A token altered anywhere is refused.
        let mut forged = token.clone().into_bytes();
        forged[0] ^= 1;
        assert_eq!(users.session(&String::from_utf8(forged).unwrap()), None);
        // A password change ends the old password's tokens.
        let pw = AuthOp::UserChangePassword { name: "alice".into(), password: hash_password("new").unwrap() };
        s.apply(&pw).unwrap();
        users.publish(&s);
        assert_eq!(users.session(&token), None);
        let token = users.authenticate("alice", "new").unwrap();
        assert_eq!(users.session(&token).as_deref(), Some("alice"));
        assert_eq!(users.authenticate("alice", "wrong"), Err(AuthFailed::Invalid));
        assert_eq!(users.authenticate("nobody", "alicepw"), Err(AuthFailed::Invalid));
        assert_eq!(users.identify("not-a-token"), None);
        assert!(!verify("x", None), "the dummy hash matches nothing");
    }

    #[test]
    fn the_api_token_is_root() {
        let users = Users::new(Some(ApiToken::new("0123456789abcdef0123").unwrap()), None);
        assert_eq!(users.identify("0123456789abcdef0123"), Some(Principal::Root));
        assert_eq!(users.identify("0123456789abcdef0124"), None);
    }

    #[test]
    fn a_client_certificates_common_name_is_its_user() {
        let mut params = rcgen::CertificateParams::new(vec!["localhost".to_string()]).unwrap();
        params.distinguished_name.push(rcgen::DnType::CommonName, "alice");
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        assert_eq!(Users::identify_certificate(cert.der()), Some(Principal::User("alice".into())));
        assert_eq!(Users::identify_certificate(b"not a certificate"), None);
    }

    #[test]
    fn prefix_ends_as_etcd_computes_them() {
        assert_eq!(prefix_end(b"a/"), b"a0".to_vec());
        assert_eq!(prefix_end(b"a\xff"), b"b".to_vec());
        assert_eq!(prefix_end(b"\xff\xff"), vec![0]);
    }
}
