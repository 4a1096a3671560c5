//! [`Client`]: endpoints, failover, and the requests that need no session.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::ClientError;
use crate::events::{LeaseEvents, Observe};

/// How long a connection attempt may take before the next endpoint is tried.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_millis(500);

/// How long a request that does not wait at the server may take in all (a node that is cut off
/// from its majority answers 503 after its own request timeout, which should be shorter).
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// How long one endpoint is given before the next is tried: a request that does not wait at the
/// server gets this long at each endpoint (within its own bound), and before a request that is
/// not safe to send twice (a grant) or that waits at the server (an acquire), the endpoint must
/// answer `GET /health` within it. A node that is hung (stopped, swapping) accepts connections
/// but answers nothing; without this bound every client of it would wait for it.
pub const DEFAULT_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(2);

/// How much longer than its `timeout_ms` the client waits for a blocking request's answer.
const WAIT_SLACK: Duration = Duration::from_secs(5);

/// A blocking client of the coordination service. Cheap to clone (clones share the endpoint
/// they last reached).
#[derive(Clone, Debug)]
pub struct Client {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    endpoints: Vec<String>,
    /// The index of the endpoint that answered last: the first one tried next time.
    current: AtomicUsize,
    agent: ureq::Agent,
    rounds: usize,
    request_timeout: Duration,
    /// How long one endpoint is given (see [`DEFAULT_ATTEMPT_TIMEOUT`]).
    attempt_timeout: Duration,
    /// Sent as `Authorization: Bearer TOKEN` when set.
    token: Option<Token>,
    /// What https endpoints are verified with (`None`: an https endpoint is refused).
    tls: Option<ClientTls>,
    /// The connect timeout the agent was built with (rebuilt with the TLS configuration).
    connect_timeout: Duration,
    /// This client's idempotency session (random, in `1..2^63`) and the sequence number of its
    /// next request that carries a key (shared by every clone).
    session: u64,
    seq: Arc<AtomicU64>,
    /// The keys of the leases this client was granted or told about, by lease id (shared by
    /// every clone): sent with every request that acts on the lease.
    keys: Arc<Mutex<BTreeMap<u64, LeaseKey>>>,
}

/// A lease's key (64 hex digits), kept out of `Debug` output.
#[derive(Clone)]
struct LeaseKey(String);

impl std::fmt::Debug for LeaseKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LeaseKey(redacted)")
    }
}

/// What a client verifies `https://` servers with: only the CA it is given (no system roots),
/// and the client certificate it presents, if any (a node started with `--client-cert-auth`).
///
/// A server whose certificate that CA did not sign, or that does not name the endpoint's host,
/// is refused during the TLS handshake: before any request, and so before any bearer token, is
/// sent ([`ClientError::Untrusted`]).
#[derive(Clone)]
pub struct ClientTls {
    config: ureq::tls::TlsConfig,
}

impl std::fmt::Debug for ClientTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClientTls(…)")
    }
}

impl ClientTls {
    /// From PEM text: the CA certificate(s), and optionally a client certificate chain and its
    /// private key.
    pub fn from_pem(ca: &[u8], identity: Option<(&[u8], &[u8])>) -> Result<ClientTls, ClientError> {
        use ureq::tls::{Certificate, ClientCert, PemItem, PrivateKey, RootCerts};
        let mut roots = Vec::new();
        for item in ureq::tls::parse_pem(ca) {
            match item {
                Ok(PemItem::Certificate(c)) => roots.push(c),
                Ok(_) => {}
                Err(e) => return Err(ClientError::Tls(format!("the CA file is not PEM: {e}"))),
            }
        }
        if roots.is_empty() {
            return Err(ClientError::Tls(
                "the CA file holds no certificate (expected -----BEGIN CERTIFICATE-----)".into(),
            ));
        }
        let client = match identity {
            None => None,
            Some((cert, key)) => {
                let chain: Vec<Certificate<'static>> = ureq::tls::parse_pem(cert)
                    .filter_map(|i| match i {
                        Ok(PemItem::Certificate(c)) => Some(c),
                        _ => None,
                    })
                    .collect();
                if chain.is_empty() {
                    return Err(ClientError::Tls("the client certificate file holds no certificate".into()));
                }
                let key = PrivateKey::from_pem(key).map_err(|e| {
                    ClientError::Tls(format!("the client key file holds no private key: {e}"))
                })?;
                Some(ClientCert::new_with_certs(&chain, key))
            }
        };
        let config = ureq::tls::TlsConfig::builder()
            .root_certs(RootCerts::new_with_certs(&roots))
            .client_cert(client)
            .unversioned_rustls_crypto_provider(std::sync::Arc::new(rustls::crypto::ring::default_provider()))
            .build();
        Ok(ClientTls { config })
    }

    /// From PEM files: `ca` (`--cacert`), and `cert` with `key` (`--cert`, `--key`) when a
    /// client certificate is presented. Each error names the flag and the file.
    pub fn from_files(
        ca: &std::path::Path,
        identity: Option<(&std::path::Path, &std::path::Path)>,
    ) -> Result<ClientTls, ClientError> {
        let read = |flag: &str, path: &std::path::Path| {
            std::fs::read(path).map_err(|e| ClientError::Tls(format!("{flag} {}: {e}", path.display())))
        };
        let ca_pem = read("--cacert", ca)?;
        fn named(flag: &str, path: &std::path::Path, e: ClientError) -> ClientError {
            match e {
                ClientError::Tls(why) => ClientError::Tls(format!("{flag} {}: {why}", path.display())),
                other => other,
            }
        }
        match identity {
            None => ClientTls::from_pem(&ca_pem, None).map_err(|e| named("--cacert", ca, e)),
            Some((cert, key)) => {
                let (c, k) = (read("--cert", cert)?, read("--key", key)?);
                ClientTls::from_pem(&ca_pem, None).map_err(|e| named("--cacert", ca, e))?;
                ClientTls::from_pem(&ca_pem, Some((&c, &k))).map_err(|e| named("--cert/--key", cert, e))
            }
        }
    }

    /// The ureq TLS configuration, for a caller that makes its own agent.
    pub fn ureq_config(&self) -> ureq::tls::TlsConfig {
        self.config.clone()
    }

    /// A ureq TLS configuration that trusts no server: an agent without a CA fails closed on
    /// `https://` rather than trusting anything.
    pub fn trust_nothing() -> ureq::tls::TlsConfig {
        ureq::tls::TlsConfig::builder()
            .root_certs(ureq::tls::RootCerts::Specific(std::sync::Arc::new(Vec::new())))
            .unversioned_rustls_crypto_provider(std::sync::Arc::new(rustls::crypto::ring::default_provider()))
            .build()
    }
}

/// Why `endpoint` cannot be used with `tls` (`None`: it can): an `https://` endpoint needs a
/// CA to verify it with, and with one an `http://` endpoint is refused (a bearer token would
/// go out in the clear, to a server nobody verified).
pub fn check_scheme(endpoint: &str, tls: bool) -> Result<(), ClientError> {
    match (endpoint.starts_with("https://"), tls) {
        (true, false) => Err(ClientError::Tls(format!(
            "{endpoint}: an https endpoint needs the CA to verify the server with (--cacert FILE); \
             no server is trusted without it"
        ))),
        (false, true) => Err(ClientError::Tls(format!(
            "{endpoint}: plain http with --cacert given; use https:// endpoints (the server is verified only over TLS)"
        ))),
        _ => Ok(()),
    }
}

/// A bearer token, kept out of `Debug` output.
#[derive(Clone)]
struct Token(String);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(redacted)")
    }
}

/// What a node says about itself and the cluster (`GET /status`).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct Status {
    /// This node's id (`0..N-1`).
    pub id: u64,
    /// The node id of the Raft leader this node knows, if any.
    pub leader: Option<u64>,
    /// The Raft term.
    pub term: u64,
    /// `leader`, `follower`, `candidate` or `pre_candidate`.
    pub role: String,
    /// The last log index applied to the state machine.
    pub applied: u64,
    /// The last committed log index.
    pub commit: u64,
    /// The cluster's node ids.
    pub members: Vec<u64>,
    /// True once this node was removed from the cluster (it serves nothing any more).
    #[serde(default)]
    pub removed: bool,
}

/// One member of the cluster.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct Member {
    /// Its node id.
    pub id: u64,
    /// Its peer address (`host:port`; empty if the answering node never learnt it).
    pub peer: String,
}

/// The cluster's members as one node knows them (`GET /v1/members`).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct Members {
    /// The voters, by id.
    pub members: Vec<Member>,
    /// The learners (added, not promoted yet), by id.
    #[serde(default)]
    pub learners: Vec<Member>,
    /// The log index the answering node had applied.
    pub applied: u64,
}

/// How long a membership change may take before the client gives up on it.
const CHANGE_TIMEOUT: Duration = Duration::from_secs(15);

/// A lease as granted or kept alive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
pub struct LeaseGrant {
    /// The lease id.
    pub lease: u64,
    /// Its time to live, in milliseconds.
    pub ttl_ms: u64,
}

/// A grant's answer, key included.
#[derive(Deserialize)]
struct Granted {
    lease: u64,
    ttl_ms: u64,
    #[serde(default)]
    key: Option<String>,
}

/// A lease's time to live and what remains of it (`GET /v1/lease/ID`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
pub struct LeaseInfo {
    /// The lease id.
    pub lease: u64,
    /// Its time to live, in milliseconds.
    pub ttl_ms: u64,
    /// What remains of it on the service's clock, in milliseconds.
    pub remaining_ms: u64,
}

/// An election's leader.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct Leader {
    /// The leader's lease.
    pub lease: u64,
    /// The value it campaigned with or last proclaimed.
    pub value: String,
    /// The log index of its candidacy (grows with every new leader).
    pub index: u64,
}

/// Whether a request can be sent again after a failure that may have happened after it was
/// sent.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Retry {
    /// Only if the request certainly was not sent (connection failed) or was answered 503.
    IfUnsent,
    /// On any transport failure: sending it twice does what sending it once does.
    Always,
}

/// How a request went at one endpoint.
enum Attempt<T> {
    /// The node answered (anything but 503).
    Done(T),
    /// The node answered 503 `unavailable`: it could not commit the request. It may name the
    /// leader's endpoint (`leader_url`), tried next when it is one of the client's endpoints.
    Unavailable(Option<String>),
    /// The request certainly did not reach the node.
    Unsent,
    /// It may have reached the node.
    Failed(String),
    /// The server was not verified (TLS refused its certificate): nothing was sent.
    Untrusted(String),
}

/// A plain answer: its status and body.
type Answer = (u16, String);

impl Client {
    /// A client of the nodes at `endpoints` (base URLs such as `http://127.0.0.1:4100`).
    pub fn new<I, S>(endpoints: I) -> Result<Client, ClientError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut list = Vec::new();
        for e in endpoints {
            list.push(normalize(e.as_ref())?);
        }
        if list.is_empty() {
            return Err(ClientError::BadEndpoint(String::new()));
        }
        let mut b = [0u8; 8];
        getrandom::fill(&mut b)
            .map_err(|e| ClientError::Protocol(format!("no random idempotency session: {e}")))?;
        let session = (u64::from_le_bytes(b) >> 1).max(1);
        Ok(Client {
            inner: Arc::new(Inner {
                endpoints: list,
                current: AtomicUsize::new(0),
                agent: agent(DEFAULT_CONNECT_TIMEOUT, None),
                rounds: 1,
                request_timeout: DEFAULT_REQUEST_TIMEOUT,
                attempt_timeout: DEFAULT_ATTEMPT_TIMEOUT,
                token: None,
                tls: None,
                connect_timeout: DEFAULT_CONNECT_TIMEOUT,
                session,
                seq: Arc::new(AtomicU64::new(1)),
                keys: Arc::default(),
            }),
        })
    }

    /// The same client with another connect timeout (default [`DEFAULT_CONNECT_TIMEOUT`]).
    pub fn with_connect_timeout(self, timeout: Duration) -> Client {
        self.rebuild(|i| {
            i.agent = agent(timeout, i.tls.as_ref());
            i.connect_timeout = timeout;
        })
    }

    /// The same client verifying `https://` endpoints with `tls` (and presenting its client
    /// certificate). Without it an `https://` endpoint is refused; with it, an `http://` one is.
    pub fn with_tls(self, tls: ClientTls) -> Client {
        self.rebuild(|i| {
            i.agent = agent(i.connect_timeout, Some(&tls));
            i.tls = Some(tls);
        })
    }

    /// The same client trying every endpoint `rounds` times (at least once) before a request
    /// fails with [`ClientError::Unavailable`] (default 1).
    pub fn with_rounds(self, rounds: usize) -> Client {
        self.rebuild(|i| i.rounds = rounds.max(1))
    }

    /// The same client with another bound on requests that do not wait at the server (default
    /// [`DEFAULT_REQUEST_TIMEOUT`]).
    pub fn with_request_timeout(self, timeout: Duration) -> Client {
        self.rebuild(|i| i.request_timeout = timeout)
    }

    /// The same client giving each endpoint `timeout` before trying the next (default
    /// [`DEFAULT_ATTEMPT_TIMEOUT`]).
    pub fn with_attempt_timeout(self, timeout: Duration) -> Client {
        self.rebuild(|i| i.attempt_timeout = timeout.max(Duration::from_millis(1)))
    }

    /// The same client sending `Authorization: Bearer TOKEN` with every request (a service
    /// node started with `--api-token-file`).
    pub fn with_bearer_token(self, token: &str) -> Client {
        let token = Token(token.trim().to_string());
        self.rebuild(|i| i.token = Some(token))
    }

    /// `request` with the bearer token, when this client has one.
    fn authorized<B>(&self, request: ureq::RequestBuilder<B>) -> ureq::RequestBuilder<B> {
        match &self.inner.token {
            Some(Token(t)) => request.header("authorization", format!("Bearer {t}")),
            None => request,
        }
    }

    fn rebuild(self, change: impl FnOnce(&mut Inner)) -> Client {
        let mut inner = Inner {
            endpoints: self.inner.endpoints.clone(),
            current: AtomicUsize::new(self.inner.current.load(Ordering::Relaxed)),
            agent: self.inner.agent.clone(),
            rounds: self.inner.rounds,
            request_timeout: self.inner.request_timeout,
            attempt_timeout: self.inner.attempt_timeout,
            token: self.inner.token.clone(),
            tls: self.inner.tls.clone(),
            connect_timeout: self.inner.connect_timeout,
            session: self.inner.session,
            seq: Arc::clone(&self.inner.seq),
            keys: Arc::clone(&self.inner.keys),
        };
        change(&mut inner);
        Client { inner: Arc::new(inner) }
    }

    /// The endpoints, as normalized (no trailing `/`).
    pub fn endpoints(&self) -> &[String] {
        &self.inner.endpoints
    }

    /// The endpoint tried first by the next request: the one that answered last.
    pub fn current_endpoint(&self) -> &str {
        &self.inner.endpoints[self.inner.current.load(Ordering::Relaxed) % self.inner.endpoints.len()]
    }

    /// `GET /status` of the node that answers.
    pub fn status(&self) -> Result<Status, ClientError> {
        self.get("/status")
    }

    /// The members as the answering node knows them.
    pub fn members(&self) -> Result<Members, ClientError> {
        self.get("/v1/members")
    }

    /// Adds node `id`, reached by its peers at `peer` (`host:port`), and returns the members
    /// once the change is applied. Adding a member again at the same address changes nothing.
    pub fn add_member(&self, id: u64, peer: &str) -> Result<Members, ClientError> {
        let body = json!({ "id": id, "peer": peer });
        self.call_bounded("POST", "/v1/members", Some(body), Some(CHANGE_TIMEOUT), Retry::IfUnsent)
    }

    /// Removes node `id` and returns the members once the change is applied.
    pub fn remove_member(&self, id: u64) -> Result<Members, ClientError> {
        self.call_bounded("DELETE", &format!("/v1/members/{id}"), None, Some(CHANGE_TIMEOUT), Retry::IfUnsent)
    }

    /// Grants a lease of `ttl` (whole milliseconds, at least 1).
    ///
    /// The grant carries an idempotency key ([`Client::next_idempotency_key`]): when an
    /// endpoint fails after the request may have reached it (a node that hangs, a connection
    /// cut), the same grant is sent to the next endpoint with the same key, and the service
    /// applies it at most once — a retry of a grant that was applied answers with the same
    /// lease.
    ///
    /// The client draws the lease's key (a retry must answer the same one), sends it with the
    /// grant, and from then on with every request that acts on the lease: the service lets no
    /// one without it act on the lease. [`Client::lease_key`] hands it to another process.
    pub fn grant(&self, ttl: Duration) -> Result<LeaseGrant, ClientError> {
        let ttl_ms = whole_ms(ttl).max(1);
        let retry = self.next_idempotency_key();
        let mut b = [0u8; 32];
        getrandom::fill(&mut b).map_err(|e| ClientError::Protocol(format!("no random lease key: {e}")))?;
        let key: String = b.iter().map(|x| format!("{x:02x}")).collect();
        let body = json!({ "ttl_ms": ttl_ms, "key": key });
        let g: Granted = self.call_keyed("POST", "/v1/lease/grant", Some(body), Some(&retry))?;
        if g.key.as_deref().is_some_and(|k| k != key) {
            return Err(ClientError::Protocol(format!(
                "lease {} was granted with another key than sent",
                g.lease
            )));
        }
        self.keys().insert(g.lease, LeaseKey(key));
        Ok(LeaseGrant { lease: g.lease, ttl_ms: g.ttl_ms })
    }

    /// Acts on `lease`, granted elsewhere, with `key`, the key its grant answered (what
    /// [`Client::lease_key`] gives in the process that was granted it).
    pub fn use_lease_key(&self, lease: u64, key: &str) {
        self.keys().insert(lease, LeaseKey(key.trim().to_string()));
    }

    /// The key of `lease`, if this client was granted it or told it.
    pub fn lease_key(&self, lease: u64) -> Option<String> {
        self.keys().get(&lease).map(|k| k.0.clone())
    }

    fn keys(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, LeaseKey>> {
        // The map is only inserted into and read: a panic elsewhere cannot leave it half-done.
        self.inner.keys.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `body`, a request that acts on `lease`, with the lease's key when this client has it.
    pub(crate) fn with_lease_key(&self, lease: u64, mut body: Value) -> Value {
        if let Some(k) = self.keys().get(&lease) {
            body["key"] = json!(k.0);
        }
        body
    }

    /// A new idempotency key of this client's session, as the `Idempotency-Key` header takes
    /// it (`SESSION:SEQ`, docs/SERVICE-API.md): send it with a write and with every retry of that
    /// write, so that the service applies the write at most once.
    pub fn next_idempotency_key(&self) -> String {
        format!("{}:{}", self.inner.session, self.inner.seq.fetch_add(1, Ordering::Relaxed))
    }

    /// A write sent with the idempotency key `key` (when given): retried on every endpoint,
    /// even after a failure that may have happened after it was sent, under the client's
    /// request timeout.
    fn call_keyed<T: DeserializeOwned>(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
        key: Option<&str>,
    ) -> Result<T, ClientError> {
        self.call_full(method, path, body, Some(self.inner.request_timeout), Retry::Always, key)
    }

    /// Keeps `lease` alive once (its time to live starts again).
    pub fn keep_alive(&self, lease: u64) -> Result<LeaseGrant, ClientError> {
        self.post("/v1/lease/keepalive", self.with_lease_key(lease, json!({ "lease": lease })), Retry::Always)
    }

    /// Revokes `lease`: every lock it holds is released, every candidacy withdrawn.
    pub fn revoke(&self, lease: u64) -> Result<(), ClientError> {
        let body = self.with_lease_key(lease, json!({ "lease": lease }));
        self.post::<Value>("/v1/lease/revoke", body, Retry::Always)?;
        self.keys().remove(&lease);
        Ok(())
    }

    /// `lease`'s time to live and what remains of it.
    pub fn time_to_live(&self, lease: u64) -> Result<LeaseInfo, ClientError> {
        self.get(&format!("/v1/lease/{lease}"))
    }

    /// The leader of `election`, if it has one.
    pub fn leader(&self, election: &str) -> Result<Option<Leader>, ClientError> {
        #[derive(Deserialize)]
        struct Answer {
            leader: Option<Leader>,
        }
        let a: Answer = self.get(&format!("/v1/election/{}", path_segment(election)?))?;
        Ok(a.leader)
    }

    /// The leaders of `election` as they change: first the current one, then every change
    /// (`None` when it has none). The iterator ends when the stream does.
    pub fn observe(&self, election: &str) -> Result<Observe, ClientError> {
        let body = self.stream(&format!("/v1/election/{}/observe", path_segment(election)?))?;
        Ok(Observe::new(body))
    }

    /// What happens to `lease`: locks granted and lost, waits aborted, deadlocks, its end.
    pub fn watch(&self, lease: u64) -> Result<LeaseEvents, ClientError> {
        let body = self.stream(&format!("/v1/lease/{lease}/watch"))?;
        Ok(LeaseEvents::new(body))
    }

    pub(crate) fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T, ClientError> {
        self.call("GET", path, None, self.inner.request_timeout, Retry::Always)
    }

    pub(crate) fn post<T: DeserializeOwned>(
        &self,
        path: &str,
        body: Value,
        retry: Retry,
    ) -> Result<T, ClientError> {
        self.call("POST", path, Some(body), self.inner.request_timeout, retry)
    }

    /// A POST that waits at the server up to `wait` (or without bound when `None`).
    pub(crate) fn post_waiting<T: DeserializeOwned>(
        &self,
        path: &str,
        body: Value,
        wait: Option<Duration>,
    ) -> Result<T, ClientError> {
        let bound = wait.map(|w| w + WAIT_SLACK);
        self.call_bounded("POST", path, Some(body), bound, Retry::Always)
    }

    /// Whether the node at `base` answers `GET /health` within the attempt timeout: `None`
    /// when it does, else the attempt's outcome (not sent; or the server was not verified).
    fn answers<T>(&self, base: &str) -> Option<Attempt<T>> {
        let url = format!("{base}/health");
        let probe =
            self.inner.agent.get(&url).config().timeout_global(Some(self.inner.attempt_timeout)).build();
        match probe.call() {
            Ok(r) if r.status().is_success() => None,
            Ok(_) => Some(Attempt::Unsent),
            Err(e) => match classify::<T>(e) {
                Attempt::Untrusted(why) => Some(Attempt::Untrusted(why)),
                _ => Some(Attempt::Unsent),
            },
        }
    }

    fn call<T: DeserializeOwned>(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
        timeout: Duration,
        retry: Retry,
    ) -> Result<T, ClientError> {
        self.call_bounded(method, path, body, Some(timeout), retry)
    }

    fn call_bounded<T: DeserializeOwned>(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
        timeout: Option<Duration>,
        retry: Retry,
    ) -> Result<T, ClientError> {
        self.call_full(method, path, body, timeout, retry, None)
    }

    fn call_full<T: DeserializeOwned>(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
        timeout: Option<Duration>,
        retry: Retry,
        key: Option<&str>,
    ) -> Result<T, ClientError> {
        let text = body.map(|b| b.to_string());
        // A request bounded by the client's own request timeout does not wait at the server: it
        // gets the attempt timeout at each endpoint. One that waits, or that must not be sent
        // twice, first asks the endpoint whether it answers at all.
        let waits = timeout.is_none_or(|t| t > self.inner.request_timeout);
        let probe = waits || retry == Retry::IfUnsent;
        let timeout = if probe { timeout } else { timeout.map(|t| t.min(self.inner.attempt_timeout)) };
        let (status, answer) = self.failover(retry, |base| {
            if probe && let Some(not) = self.answers(base) {
                return not;
            }
            let url = format!("{base}{path}");
            let result = match &text {
                Some(t) => {
                    let mut r = self
                        .authorized(self.inner.agent.post(&url))
                        .header("content-type", "application/json");
                    if let Some(k) = key {
                        r = r.header("idempotency-key", k);
                    }
                    r.config().timeout_global(timeout).build().send(t.as_bytes())
                }
                None if method == "DELETE" => self
                    .authorized(self.inner.agent.delete(&url))
                    .config()
                    .timeout_global(timeout)
                    .build()
                    .call(),
                None => {
                    debug_assert_eq!(method, "GET");
                    self.authorized(self.inner.agent.get(&url))
                        .config()
                        .timeout_global(timeout)
                        .build()
                        .call()
                }
            };
            match result {
                Ok(r) => read_answer(r),
                Err(e) => classify(e),
            }
        })?;
        decode(status, &answer)
    }

    fn stream(&self, path: &str) -> Result<ureq::Body, ClientError> {
        let answer = self.failover(Retry::Always, |base| {
            if let Some(not) = self.answers(base) {
                return not;
            }
            let url = format!("{base}{path}");
            match self.authorized(self.inner.agent.get(&url)).header("accept", "text/event-stream").call() {
                Ok(r) if r.status().is_success() => Attempt::Done(Ok(r.into_body())),
                Ok(r) => match read_answer(r) {
                    Attempt::Done(a) => Attempt::Done(Err(a)),
                    Attempt::Unavailable(hint) => Attempt::Unavailable(hint),
                    Attempt::Unsent => Attempt::Unsent,
                    Attempt::Untrusted(why) => Attempt::Untrusted(why),
                    Attempt::Failed(why) => Attempt::Failed(why),
                },
                Err(e) => classify(e),
            }
        })?;
        answer.map_err(|(status, body)| match decode::<Value>(status, &body) {
            Err(e) => e,
            Ok(_) => ClientError::Protocol(format!("status {status} where an event stream was expected")),
        })
    }

    /// Runs `attempt` on the endpoints in turn, starting with the current one, until one answers
    /// with something other than 503 (or, under [`Retry::IfUnsent`], until one fails after the
    /// request may have reached it).
    ///
    /// A 503 that names the leader's endpoint (the leader hint) sends the next attempt there,
    /// out of turn, when that endpoint is one of this client's and is not the one that answered:
    /// a client never goes to a host it was not given. Each endpoint is jumped to at most once
    /// per request, so hints cannot make it loop; the turns then go on after the hinted one.
    fn failover<T>(
        &self,
        retry: Retry,
        mut attempt: impl FnMut(&str) -> Attempt<T>,
    ) -> Result<T, ClientError> {
        for e in &self.inner.endpoints {
            check_scheme(e, self.inner.tls.is_some())?;
        }
        let n = self.inner.endpoints.len();
        let start = self.inner.current.load(Ordering::Relaxed);
        let mut untrusted: Option<(String, String)> = None;
        let mut tried: Vec<String> = Vec::new();
        let mut hinted: Vec<usize> = Vec::new();
        let mut i = start % n;
        let mut attempts = 0;
        // Every endpoint `rounds` times, plus one attempt per hint followed.
        while attempts < n * self.inner.rounds + hinted.len() {
            attempts += 1;
            let base = &self.inner.endpoints[i];
            if !tried.contains(base) {
                tried.push(base.clone());
            }
            let next = (i + 1) % n;
            match attempt(base) {
                Attempt::Done(answer) => {
                    self.inner.current.store(i, Ordering::Relaxed);
                    return Ok(answer);
                }
                Attempt::Unavailable(Some(url)) => {
                    let leader =
                        normalize(&url).ok().and_then(|u| self.inner.endpoints.iter().position(|e| *e == u));
                    i = match leader {
                        Some(j) if j != i && !hinted.contains(&j) => {
                            hinted.push(j);
                            j
                        }
                        _ => next,
                    };
                    continue;
                }
                Attempt::Unavailable(None) | Attempt::Unsent => {}
                Attempt::Untrusted(why) => {
                    untrusted.get_or_insert((base.clone(), why));
                }
                Attempt::Failed(_) if retry == Retry::Always => {}
                Attempt::Failed(why) => {
                    // The next request starts with another node.
                    self.inner.current.store(next, Ordering::Relaxed);
                    return Err(ClientError::Protocol(format!(
                        "{base} failed after the request was sent ({why}); it may or may not have been applied"
                    )));
                }
            }
            i = next;
        }
        // The next request starts with the endpoint after the first one tried.
        self.inner.current.store((start + 1) % n, Ordering::Relaxed);
        if let Some((endpoint, reason)) = untrusted {
            return Err(ClientError::Untrusted { endpoint, reason });
        }
        Err(ClientError::Unavailable { tried })
    }
}

/// Reads a whole answer; a 503's `leader_url`, when it has one, is kept as the leader hint.
fn read_answer(mut r: ureq::http::Response<ureq::Body>) -> Attempt<Answer> {
    let status = r.status().as_u16();
    match r.body_mut().read_to_string() {
        Ok(body) if status == 503 => Attempt::Unavailable(leader_hint(&body)),
        Ok(s) => Attempt::Done((status, s)),
        Err(e) => Attempt::Failed(e.to_string()),
    }
}

/// The `leader_url` of a 503's JSON body, if it names one.
fn leader_hint(body: &str) -> Option<String> {
    let v: Value = serde_json::from_str(body).ok()?;
    v.get("leader_url")?.as_str().map(str::to_string)
}

/// The answer's body as `T`, or the error a non-2xx status stands for.
fn decode<T: DeserializeOwned>(status: u16, body: &str) -> Result<T, ClientError> {
    if !(200..300).contains(&status) {
        return Err(ClientError::from_response(status, body));
    }
    serde_json::from_str(body)
        .map_err(|e| ClientError::Protocol(format!("malformed answer ({e}): {body:.200}")))
}

/// Whether a transport error happened before the request could reach the node.
fn classify<T>(e: ureq::Error) -> Attempt<T> {
    use ureq::Error as E;
    use ureq::Timeout as T;
    match e {
        E::HostNotFound | E::ConnectionFailed | E::Timeout(T::Connect | T::Resolve) => Attempt::Unsent,
        E::Rustls(e) => Attempt::Untrusted(e.to_string()),
        E::Tls(e) => Attempt::Untrusted(e.to_string()),
        E::Io(io) if io.get_ref().is_some_and(|inner| inner.is::<rustls::Error>()) => {
            Attempt::Untrusted(io.to_string())
        }
        E::Io(io)
            if matches!(
                io.kind(),
                std::io::ErrorKind::ConnectionRefused
                    | std::io::ErrorKind::AddrNotAvailable
                    | std::io::ErrorKind::HostUnreachable
                    | std::io::ErrorKind::NetworkUnreachable
            ) =>
        {
            Attempt::Unsent
        }
        other => Attempt::Failed(other.to_string()),
    }
}

fn agent(connect_timeout: Duration, tls: Option<&ClientTls>) -> ureq::Agent {
    let config = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_connect(Some(connect_timeout))
        .tls_config(tls.map(ClientTls::ureq_config).unwrap_or_else(ClientTls::trust_nothing))
        .build();
    ureq::Agent::new_with_config(config)
}

/// `http://HOST:PORT` or `https://HOST:PORT`, with any trailing `/` removed; anything else is
/// refused.
fn normalize(endpoint: &str) -> Result<String, ClientError> {
    let e = endpoint.trim().trim_end_matches('/');
    let bad = || ClientError::BadEndpoint(endpoint.to_string());
    let rest = e.strip_prefix("http://").or_else(|| e.strip_prefix("https://")).ok_or_else(bad)?;
    let (host, port) = rest.rsplit_once(':').ok_or_else(bad)?;
    if host.is_empty() || host.contains('/') || port.parse::<u16>().is_err() {
        return Err(bad());
    }
    Ok(e.to_string())
}

/// `name` as one URL path segment; names are plain (no `/`, `?`, `#`, `%`, space or control).
pub(crate) fn path_segment(name: &str) -> Result<&str, ClientError> {
    if name.is_empty() {
        return Err(ClientError::BadRequest("empty name: give a lock or election name".into()));
    }
    if name.chars().any(|c| matches!(c, '/' | '?' | '#' | '%' | ' ') || c.is_control()) {
        return Err(ClientError::BadRequest(format!(
            "name {name:?} has a character that cannot be in a URL path ('/', '?', '#', '%', space, control)"
        )));
    }
    Ok(name)
}

/// `d` in whole milliseconds, rounded up (a wait of 0.5 ms is a wait of 1 ms), saturating.
pub(crate) fn whole_ms(d: Duration) -> u64 {
    u64::try_from(d.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_http_host_port() {
        assert_eq!(normalize("http://127.0.0.1:4100/").unwrap(), "http://127.0.0.1:4100");
        assert_eq!(normalize(" http://node-1:80 ").unwrap(), "http://node-1:80");
        for bad in ["127.0.0.1:4100", "ftp://a:1", "http://a", "http://:1", "http://a:99999", "https://a:1/x"]
        {
            assert!(matches!(normalize(bad), Err(ClientError::BadEndpoint(_))), "{bad}");
        }
        assert_eq!(normalize("https://node-1:443/").unwrap(), "https://node-1:443");
        assert!(matches!(Client::new(Vec::<String>::new()), Err(ClientError::BadEndpoint(_))));
        // No CA, no https; a CA, no plain http.
        assert!(matches!(check_scheme("https://a:1", false), Err(ClientError::Tls(_))));
        assert!(matches!(check_scheme("http://a:1", true), Err(ClientError::Tls(_))));
        assert!(check_scheme("https://a:1", true).is_ok() && check_scheme("http://a:1", false).is_ok());
    }

    #[test]
    fn names_are_one_path_segment() {
        assert_eq!(path_segment("db-1.primary").unwrap(), "db-1.primary");
        for bad in ["", "a/b", "a b", "a?b", "a%20", "a\nb"] {
            assert!(matches!(path_segment(bad), Err(ClientError::BadRequest(_))), "{bad:?}");
        }
    }

    #[test]
    fn milliseconds_round_up() {
        assert_eq!(whole_ms(Duration::from_micros(1)), 1);
        assert_eq!(whole_ms(Duration::from_millis(1500)), 1500);
        assert_eq!(whole_ms(Duration::ZERO), 0);
    }
}
