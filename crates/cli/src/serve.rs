//! `ringleader serve`: one node of the coordination service (leases, locks, elections on
//! raft-rs), with its durable log in a data directory and its HTTP API.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, bail};
use clap::Args;
use ringleader_lock_service::planted::Planted;
use ringleader_lock_service::state::DeadlockPolicy;
use ringleader_service::server::ServerConfig;

/// Run one node of the coordination service: leases, named locks and elections on Raft
///
/// With no flags: a one-node service, API on http://127.0.0.1:4100, log in
/// ./ringleader-service-data. Clients: `ringleader lock`, `elect`, `lease`, the Rust client
/// crate, or curl (docs/SERVICE-API.md). Three local nodes at once:
/// `ringleader cluster --service --nodes 3`.
///
/// Examples:
///   ringleader serve
///   ringleader serve --id 1 --listen 127.0.0.1:4201 --api 127.0.0.1:4101 \
///       --peer 2=127.0.0.1:4202 --peer 3=127.0.0.1:4203 \
///       --data-dir node-1 --secret-file cluster.secret --bootstrap --cluster-id prod
///   curl -s localhost:4100/status
///
/// With TLS on every listener (etcd's flags; docs/SERVICE.md, "Deploying with TLS"):
///   ringleader serve ... --cert-file node-1.pem --key-file node-1-key.pem \
///       --trusted-ca-file ca.pem --client-cert-auth \
///       --peer-cert-file node-1.pem --peer-key-file node-1-key.pem --peer-trusted-ca-file ca.pem
///
/// The data directory keeps the log and the directory's identity (cluster id, node id). A
/// member of a multi-node cluster starts only from its own log: the first start of a new
/// cluster says --bootstrap (every member), a new member says --join, and a restart needs
/// neither (drop --bootstrap after the first start). A member whose directory was lost is refused; replace it (docs/SERVICE.md).
///
/// Adding a node to a running cluster: start it with --join, the cluster's id (`cluster` in
/// `GET /status`) and every current member as --peer (`ringleader member list` prints them),
/// then add it from any member:
///   ringleader serve --id 4 --listen 127.0.0.1:4204 --api 127.0.0.1:4104 --join \
///       --cluster-id prod --peer 1=127.0.0.1:4201 --peer 2=127.0.0.1:4202 \
///       --peer 3=127.0.0.1:4203 --data-dir node-4 --secret-file cluster.secret
///   ringleader member add 4 127.0.0.1:4204 --endpoints http://127.0.0.1:4101
#[derive(Args, Debug, Clone)]
#[command(verbatim_doc_comment)]
pub struct ServeArgs {
    /// This node's id (from 1; also its Raft id).
    #[arg(long, default_value_t = 1, value_name = "ID")]
    pub id: u64,
    /// Where to accept peer connections (host:port).
    #[arg(long, default_value = "127.0.0.1:4200", value_name = "ADDR")]
    pub listen: String,
    /// Where to serve the HTTP API (host:port).
    #[arg(long, default_value = "127.0.0.1:4100", value_name = "ADDR")]
    pub api: String,
    /// Also serve the etcd-compatible gRPC API (leases, locks, elections; docs/ETCD.md) on
    /// this host:port. Off by default; loopback only unless TLS (--cert-file, --key-file) with
    /// client authentication (--client-cert-auth, or --api-token-file: clients then
    /// authenticate as user root with the token as password), or --insecure.
    #[arg(long, value_name = "ADDR")]
    pub grpc: Option<String>,
    /// Another member as ID=HOST:PORT (repeatable). None: a one-node service.
    #[arg(long, value_name = "ID=HOST:PORT")]
    pub peer: Vec<String>,
    /// Another member's HTTP API as ID=HOST:PORT (repeatable): a request this node cannot
    /// get committed is refused 503 naming the leader's API (`leader_url`), and clients that
    /// have that endpoint try it next. Without it the refusal names the leader's id only.
    #[arg(long, value_name = "ID=HOST:PORT")]
    pub peer_api: Vec<String>,
    /// Join a running cluster whose current members are the --peer flags: start with no
    /// configuration, never campaign, and wait to be added (`ringleader member add`); the
    /// leader then sends a snapshot. Needs --cluster-id. Harmless on restarts (ignored once
    /// the log is not new).
    #[arg(long, conflicts_with = "bootstrap")]
    pub join: bool,
    /// The first start of a new cluster: the empty data directory takes the members (this node
    /// and the --peer flags) as the cluster's first configuration. Changes nothing once the
    /// directory holds the node's log; drop it after the first start, so that a node whose
    /// directory is lost refuses to start rather than found a new cluster.
    #[arg(long)]
    pub bootstrap: bool,
    /// The cluster's id (1-64 letters, digits, '.', '_', '-'): taken by a new data directory,
    /// checked against an existing one's. Needed with --join, and with --bootstrap when there
    /// are peers (the same on every member); a one-node service draws a random one.
    #[arg(long, value_name = "ID")]
    pub cluster_id: Option<String>,
    /// The directory of the durable Raft log (created if missing; a restarted node recovers
    /// from it).
    #[arg(long, default_value = "ringleader-service-data", value_name = "DIR")]
    pub data_dir: PathBuf,
    /// The cluster secret (hex, as `ringleader cluster` writes it): peers must prove they hold
    /// it. Needed when there are peers, unless --insecure.
    #[arg(long, value_name = "FILE")]
    pub secret_file: Option<PathBuf>,
    /// Clients of the HTTP API must send `Authorization: Bearer TOKEN` with the token in this
    /// file (at least 16 visible characters). An API on a non-loopback address needs TLS and
    /// client authentication (this token, or --client-cert-auth) unless --insecure.
    #[arg(long, value_name = "FILE")]
    pub api_token_file: Option<PathBuf>,
    /// Let listeners beyond the loopback go without TLS: the HTTP and gRPC APIs without TLS or
    /// client authentication, peer links without mutual TLS. Without --secret-file, every
    /// peer's hello is believed too.
    #[arg(long)]
    pub insecure: bool,
    /// This node's certificate (PEM, with its chain) for the client APIs, HTTP and gRPC, which
    /// then serve TLS only (https://). Needs --key-file. As etcd's flag.
    #[arg(long, value_name = "FILE")]
    pub cert_file: Option<PathBuf>,
    /// The private key of --cert-file (PEM).
    #[arg(long, value_name = "FILE")]
    pub key_file: Option<PathBuf>,
    /// The CA (PEM) the client APIs verify client certificates with; with --client-cert-auth
    /// every client must present one it signed.
    #[arg(long, value_name = "FILE")]
    pub trusted_ca_file: Option<PathBuf>,
    /// Refuse clients of the HTTP and gRPC APIs without a certificate signed by
    /// --trusted-ca-file (mutual TLS, as etcd's flag).
    #[arg(long)]
    pub client_cert_auth: bool,
    /// This node's certificate (PEM) for peer links (mutual TLS): it must name the host other
    /// members dial (--listen / --peer address). Needs --peer-key-file and
    /// --peer-trusted-ca-file.
    #[arg(long, value_name = "FILE")]
    pub peer_cert_file: Option<PathBuf>,
    /// The private key of --peer-cert-file (PEM).
    #[arg(long, value_name = "FILE")]
    pub peer_key_file: Option<PathBuf>,
    /// The CA (PEM) peers' certificates are verified with, both ways.
    #[arg(long, value_name = "FILE")]
    pub peer_trusted_ca_file: Option<PathBuf>,
    /// Local time between two Raft ticks, 1ms..1s.
    #[arg(long, default_value = "10ms", value_name = "TIME")]
    pub tick: String,
    /// Ticks without a leader before a follower campaigns (the election timeout is drawn from
    /// [E, 2E) ticks), 2..1000.
    #[arg(long, default_value_t = 10, value_name = "E")]
    pub election_ticks: usize,
    /// Ticks between a leader's heartbeats (below --election-ticks).
    #[arg(long, default_value_t = 2, value_name = "H")]
    pub heartbeat_ticks: usize,
    /// After an involuntary loss (an expired lease), a lock is not granted again for this
    /// long (Chubby's lock-delay).
    #[arg(long, default_value = "0ms", value_name = "TIME")]
    pub lock_delay: String,
    /// What a wait that would close a cycle of the wait-for graph does: report, wait-die or
    /// wound-wait.
    #[arg(long, default_value = "report", value_name = "POLICY")]
    pub deadlock: String,
    /// Applied entries between two snapshots (the log is compacted behind them). The loop
    /// stops for the compaction (about 65 µs an entry on the 2-core test machine), so a small
    /// interval keeps each stop short.
    #[arg(long, default_value_t = 1_000, value_name = "N")]
    pub snapshot_every: u64,
    /// A request not committed within this is answered 503 (try another node).
    #[arg(long, default_value = "5s", value_name = "TIME")]
    pub request_timeout: String,
    /// The largest write the etcd API takes (a Put or a Txn as encoded), in bytes, 1024..=64Mi;
    /// a larger one is refused "etcdserver: request is too large" (etcd's flag and default,
    /// 1.5 MiB).
    #[arg(long, default_value_t = ringleader_service::server::DEFAULT_MAX_REQUEST_BYTES, value_name = "BYTES")]
    pub max_request_bytes: usize,
    /// The backend quota, in bytes: a write that would take the key-value store past it is
    /// refused (etcd API: RESOURCE_EXHAUSTED "etcdserver: mvcc: database space exceeded"; HTTP
    /// API: 507 no_space) and raises the NOSPACE alarm; reads and deletes still work (etcd's
    /// flag and default, 2 GiB).
    #[arg(long, default_value_t = ringleader_service::server::DEFAULT_QUOTA_BACKEND_BYTES, value_name = "BYTES")]
    pub quota_backend_bytes: u64,
    /// Seed of the election-timeout draws [default: from the OS].
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Plant this bug in the replicated state machine, to prove that a checker catches it
    /// (deploy/nemesis.sh; names: --list-planted). Only the test build has planted bugs
    /// (the lock service's `planted` feature); any other build refuses the flag.
    #[arg(long, value_name = "NAME")]
    pub planted: Option<String>,
    /// Print the names --planted takes, one a line, and exit (exit 1 in a build without
    /// planted bugs).
    #[arg(long)]
    pub list_planted: bool,
}

fn duration(flag: &str, text: &str) -> anyhow::Result<Duration> {
    let ns = ringleader_algorithms::params::parse_duration(text)
        .with_context(|| format!("{flag} {text:?}: expected a duration such as 10ms or 2s"))?;
    Ok(Duration::from_nanos(ns))
}

impl ServeArgs {
    /// The address of the etcd-compatible gRPC API, if it is asked for.
    pub fn grpc_addr(&self) -> anyhow::Result<Option<std::net::SocketAddr>> {
        let Some(text) = &self.grpc else { return Ok(None) };
        let addr = crate::node::resolve(text, "--grpc")?;
        let authenticated =
            self.cert_file.is_some() && (self.client_cert_auth || self.api_token_file.is_some());
        if !addr.ip().is_loopback() && !self.insecure && !authenticated {
            bail!(
                "--grpc {addr}: a non-loopback etcd gRPC API needs TLS (--cert-file, --key-file) and client \
                 authentication (--client-cert-auth, or --api-token-file: clients authenticate as root with \
                 the token); bind a loopback address, or give --insecure to serve it on the network anyway"
            );
        }
        Ok(Some(addr))
    }

    /// The client APIs' TLS files, if any (each flag checked for its partners).
    pub fn tls_files(&self) -> anyhow::Result<Option<ringleader_transport::tls::ServerFiles>> {
        match (&self.cert_file, &self.key_file) {
            (None, None) => {
                if self.trusted_ca_file.is_some() || self.client_cert_auth {
                    bail!(
                        "--trusted-ca-file and --client-cert-auth need TLS: give --cert-file and --key-file too"
                    );
                }
                Ok(None)
            }
            (Some(_), None) => bail!("--cert-file needs --key-file (the certificate's private key)"),
            (None, Some(_)) => bail!("--key-file needs --cert-file (the certificate it is the key of)"),
            (Some(cert), Some(key)) => {
                if self.client_cert_auth && self.trusted_ca_file.is_none() {
                    bail!(
                        "--client-cert-auth needs --trusted-ca-file (the CA client certificates are verified with)"
                    );
                }
                Ok(Some(ringleader_transport::tls::ServerFiles {
                    cert: cert.clone(),
                    key: key.clone(),
                    trusted_ca: self.trusted_ca_file.clone(),
                    client_cert_auth: self.client_cert_auth,
                }))
            }
        }
    }

    /// Mutual TLS between peers, if asked for (all three peer flags, or none).
    pub fn peer_tls(&self) -> anyhow::Result<Option<ringleader_transport::tls::PeerTls>> {
        match (&self.peer_cert_file, &self.peer_key_file, &self.peer_trusted_ca_file) {
            (None, None, None) => Ok(None),
            (Some(cert), Some(key), Some(ca)) => {
                Ok(Some(ringleader_transport::tls::PeerTls::from_files(cert, key, ca)?))
            }
            _ => bail!(
                "peer TLS needs all three of --peer-cert-file, --peer-key-file and --peer-trusted-ca-file"
            ),
        }
    }

    /// The server's configuration.
    pub fn to_config(&self) -> anyhow::Result<ServerConfig> {
        if self.id == 0 {
            bail!("--id 0: node ids start at 1");
        }
        let listen = crate::node::resolve(&self.listen, "--listen")?;
        let api = crate::node::resolve(&self.api, "--api")?;
        self.grpc_addr()?;
        let mut members = vec![(self.id, listen.to_string())];
        for p in &self.peer {
            members.push(crate::node::parse_peer(p)?);
        }
        let mut cfg = ServerConfig::new(self.id, members, listen, api, self.data_dir.clone());
        for p in &self.peer_api {
            let (id, addr) = crate::node::parse_peer(p).map_err(|e| anyhow::anyhow!("--peer-api: {e}"))?;
            if id == self.id {
                bail!("--peer-api {p:?}: that is this node (its API is --api); give the other members'");
            }
            let scheme = if self.cert_file.is_some() { "https" } else { "http" };
            cfg.client_urls.insert(id, format!("{scheme}://{addr}"));
        }
        cfg.insecure_api = self.insecure;
        cfg.tls = self.tls_files()?;
        if let Some(files) = &cfg.tls {
            // Checked now, for a one-line error before anything is bound.
            ringleader_transport::tls::server_config(files, &[])?;
        }
        cfg.peer_tls = self.peer_tls()?;
        if let Some(path) = &self.api_token_file {
            cfg.api_token = Some(ringleader_transport::http::ApiToken::read_file(path)?);
        }
        cfg.secret = match (&self.secret_file, self.insecure) {
            // Kept under mutual TLS too (docs/SERVICE.md, "Deploying with TLS"), and with
            // --insecure, which only lets plain TCP go beyond the loopback.
            (Some(path), _) => Some(ringleader_transport::auth::Secret::read_file(path)?),
            (None, true) => None,
            (None, false) if self.peer.is_empty() => None,
            (None, false) => bail!(
                "no cluster secret: give --secret-file FILE (`ringleader cluster --service` writes one) or \
                 --insecure to believe every peer"
            ),
        };
        cfg.tick = duration("--tick", &self.tick)?;
        cfg.election_ticks = self.election_ticks;
        cfg.heartbeat_ticks = self.heartbeat_ticks;
        cfg.lock_delay = duration("--lock-delay", &self.lock_delay)?;
        cfg.policy = match self.deadlock.as_str() {
            "report" => DeadlockPolicy::Report,
            "wait-die" => DeadlockPolicy::WaitDie,
            "wound-wait" => DeadlockPolicy::WoundWait,
            other => bail!("--deadlock {other:?}: give report, wait-die or wound-wait"),
        };
        cfg.snapshot_every = self.snapshot_every;
        cfg.request_timeout = duration("--request-timeout", &self.request_timeout)?;
        // Rule 4 of the replica: a proposal dropped by a leader change is proposed again after
        // two election timeouts.
        cfg.retry = cfg.tick * (2 * self.election_ticks as u32);
        cfg.clock_every = cfg.tick * 2;
        cfg.seed = self.seed;
        cfg.max_request_bytes = self.max_request_bytes;
        cfg.quota_backend_bytes = self.quota_backend_bytes;
        cfg.join = self.join;
        cfg.bootstrap = self.bootstrap;
        cfg.cluster_id = self.cluster_id.clone();
        if let Some(name) = &self.planted {
            cfg.planted = Some(Planted::parse(name).map_err(|e| anyhow::anyhow!("--planted {e}"))?);
        }
        cfg.validate()?;
        Ok(cfg)
    }
}

/// Runs the node until Ctrl-C or SIGTERM.
pub fn run(args: ServeArgs) -> crate::CommandResult {
    if args.list_planted {
        if !Planted::available() {
            bail!(
                "--list-planted: this build has no planted bugs (only the test build has them: the lock \
                 service's `planted` feature)"
            );
        }
        for p in Planted::ALL {
            println!("{}", p.name());
        }
        return Ok(crate::ExitStatus::Ok);
    }
    ringleader_transport::tls::install_default_provider();
    let cfg = args.to_config()?;
    let grpc = args.grpc_addr()?;
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    rt.block_on(async move {
        let id = cfg.id;
        let n = cfg.members.len();
        let join = cfg.join;
        let dir = cfg.data_dir.clone();
        let planted = cfg.planted;
        let scheme = cfg.scheme();
        let peer_tls = cfg.peer_tls.is_some();
        let (running, grpc) = ringleader_service::start_with_grpc(cfg, grpc).await?;
        let grpc = grpc.map(|a| format!(", etcd gRPC API on {scheme}://{a}")).unwrap_or_default();
        let cluster = running.node.status.lock().cluster.clone();
        eprintln!(
            "[id {id}] lock service node of cluster {cluster} ({n} member{}) peers on {}{}, HTTP API on {scheme}://{}{grpc}, log in {}",
            if n == 1 { "" } else { "s" },
            running.listen,
            if peer_tls { " (mutual TLS)" } else { "" },
            running.api,
            dir.display()
        );
        if let Some(p) = planted {
            eprintln!("[id {id}] PLANTED BUG {}: this node is wrong on purpose (a test of the checkers)", p.name());
        }
        if join {
            eprintln!(
                "[id {id}] joining: waiting to be added (`ringleader member add {id} {}`)",
                running.listen
            );
        }
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        let mut done = running.done;
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
            r = &mut done => {
                match r {
                    Ok(Ok(())) => bail!("[id {id}] the node stopped"),
                    Ok(Err(e)) => bail!("[id {id}] the node stopped: {e}"),
                    Err(e) => bail!("[id {id}] the node's loop failed: {e}"),
                }
            }
        }
        eprintln!("[id {id}] stopping");
        running.node.shutdown.cancel();
        let _ = done.await;
        Ok(crate::ExitStatus::Ok)
    })
}
