//! `ringleader node`: one real node, from flags or a TOML file.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{Context as _, bail};
use clap::Args;
use ringleader_core::Uid;
use ringleader_net::NodeConfig;
use serde::Deserialize;

/// Run one real node over TCP with an HTTP API
///
/// Flags override the configuration file field by field.
///
/// Ids are the algorithm's uids; a node's position is the rank of its id among all members.
///
/// Examples:
///   ringleader node --id 1 --listen 127.0.0.1:7001 --peer 2=127.0.0.1:7002 --peer 3=127.0.0.1:7003 \
///       --algo central --api 127.0.0.1:8001 --trace node-1.jsonl --secret-file cluster.secret
///   ringleader node --config node-1.toml
///
/// A configuration file holds the same fields:
///   id = 1
///   listen = "127.0.0.1:7001"
///   peers = ["2=127.0.0.1:7002", "3=127.0.0.1:7003"]
///   algorithm = "central"
///   api = "127.0.0.1:8001"
///   trace = "node-1.jsonl"
///   max_delay = "20ms"
///   secret_file = "cluster.secret"
///   api_token_file = "api.token"
///   data_dir = "node-1.data"
///   [params]
///   coordinator = 0
// The doc comment above is also `--help` text: its TOML `[params]` is not a link.
#[allow(rustdoc::broken_intra_doc_links)]
#[derive(Args, Debug, Default, Clone)]
#[command(verbatim_doc_comment)]
pub struct NodeArgs {
    /// A TOML configuration file.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// This node's id.
    #[arg(long, value_name = "ID")]
    pub id: Option<Uid>,
    /// Where to accept peer connections (host:port).
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
    /// A peer as ID=HOST:PORT (repeatable).
    #[arg(long, value_name = "ID=HOST:PORT")]
    pub peer: Vec<String>,
    /// Algorithm to run (see `ringleader list`).
    #[arg(long, value_name = "NAME")]
    pub algo: Option<String>,
    /// Algorithm parameter (repeatable), e.g. --param coordinator=0.
    #[arg(long, value_name = "KEY=VALUE", value_parser = crate::sim::parse_param)]
    pub param: Vec<(String, String)>,
    /// Where to serve the HTTP API (host:port).
    #[arg(long, value_name = "ADDR")]
    pub api: Option<String>,
    /// Write the JSON-lines trace here (appended to, so a restarted node continues it).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// The one-way delay bound algorithms may assume (Ttrans), 100us..60s [default: 20ms].
    #[arg(long, value_name = "TIME")]
    pub max_delay: Option<String>,
    /// Maximum frame size in bytes, 1024..16777216 [default: 65536].
    #[arg(long, value_name = "BYTES")]
    pub max_frame: Option<usize>,
    /// Capacity of each peer's outgoing queue, in messages, 1..1000000 [default: 4096].
    #[arg(long, value_name = "N")]
    pub queue: Option<usize>,
    /// Maximum simultaneous inbound connections of proven peers (one per peer id), 1..65536
    /// [default: 64]; connections still in their handshake are capped apart (64).
    #[arg(long, value_name = "N")]
    pub max_connections: Option<usize>,
    /// Maximum simultaneous HTTP API connections (SSE subscribers included), 1..65536
    /// [default: 256]; one more is answered 503 and closed.
    #[arg(long, value_name = "N")]
    pub api_max_connections: Option<usize>,
    /// Close an API connection whose client reads nothing of a response for this long
    /// (100ms..3600s) [default: 30s]. Hidden: tests set it short.
    #[arg(long, value_name = "TIME", hide = true)]
    pub api_write_stall_timeout: Option<String>,
    /// Elections: do not start one by themselves once the peers are connected (elections
    /// still start on `POST /election` and when the failure detector suspects the leader).
    #[arg(long)]
    pub no_elect_at_start: bool,
    /// The cluster secret (hex, mode 0600, as `ringleader cluster` writes it): peers must prove
    /// they hold it.
    #[arg(long, value_name = "FILE")]
    pub secret_file: Option<PathBuf>,
    /// Clients of the HTTP API must send `Authorization: Bearer TOKEN` with the token in this
    /// file (at least 16 visible characters); required to serve the API on a non-loopback
    /// address unless --insecure.
    #[arg(long, value_name = "FILE")]
    pub api_token_file: Option<PathBuf>,
    /// Run without a cluster secret: every peer's hello is believed, and the API may listen
    /// beyond the loopback without a token.
    #[arg(long)]
    pub insecure: bool,
    /// Stable storage: keep the algorithm's state in DIR (written durably before the node acts
    /// on it) and, when DIR holds one, recover from it (a restart is a crash and a recovery).
    /// Without it the node forgets everything when it stops.
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Delete the state in --data-dir before starting: start with an empty memory on purpose.
    #[arg(long)]
    pub wipe_data: bool,
}

/// The configuration file.
#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields)]
struct NodeFile {
    id: Option<Uid>,
    listen: Option<String>,
    #[serde(default)]
    peers: Vec<String>,
    algorithm: Option<String>,
    #[serde(default)]
    params: BTreeMap<String, toml::Value>,
    api: Option<String>,
    trace: Option<PathBuf>,
    max_delay: Option<String>,
    max_frame: Option<usize>,
    queue: Option<usize>,
    max_connections: Option<usize>,
    api_max_connections: Option<usize>,
    secret_file: Option<PathBuf>,
    api_token_file: Option<PathBuf>,
    data_dir: Option<PathBuf>,
}

pub(crate) fn resolve(addr: &str, what: &str) -> anyhow::Result<SocketAddr> {
    use std::net::ToSocketAddrs;
    addr.to_socket_addrs()
        .with_context(|| format!("{what} {addr:?}: expected HOST:PORT"))?
        .next()
        .with_context(|| format!("{what} {addr:?}: the name resolves to no address"))
}

pub(crate) fn parse_peer(s: &str) -> anyhow::Result<(Uid, String)> {
    let (id, addr) = s.split_once('=').with_context(|| format!("peer {s:?}: expected ID=HOST:PORT"))?;
    let id: Uid =
        id.trim().parse().with_context(|| format!("peer {s:?}: the id must be a positive integer"))?;
    let addr = addr.trim();
    if addr.rsplit_once(':').is_none_or(|(_, p)| p.parse::<u16>().is_err()) {
        bail!("peer {s:?}: expected ID=HOST:PORT");
    }
    Ok((id, addr.to_string()))
}

impl NodeArgs {
    /// The node configuration: the file, overridden by the flags.
    pub fn to_config(&self) -> anyhow::Result<NodeConfig> {
        let file: NodeFile = match &self.config {
            Some(p) => {
                let text = std::fs::read_to_string(p).with_context(|| format!("{}", p.display()))?;
                toml::from_str(&text)
                    .map_err(|e| anyhow::anyhow!("{}: {}", p.display(), e.message().trim()))?
            }
            None => NodeFile::default(),
        };
        let id = self.id.or(file.id).context("missing --id (this node's id)")?;
        let listen = self.listen.clone().or(file.listen).context("missing --listen HOST:PORT")?;
        let listen = resolve(&listen, "--listen")?;
        let algo =
            self.algo.clone().or(file.algorithm).context("missing --algo NAME (see `ringleader list`)")?;
        let peer_specs = if self.peer.is_empty() { file.peers } else { self.peer.clone() };
        let peers = peer_specs.iter().map(|s| parse_peer(s)).collect::<anyhow::Result<Vec<_>>>()?;
        let mut cfg = NodeConfig::new(id, listen, peers, &algo);
        for (k, v) in file.params {
            let v = match v {
                toml::Value::String(s) => s,
                other => other.to_string(),
            };
            cfg.params.insert(k, v);
        }
        cfg.params.extend(self.param.iter().cloned());
        if let Some(api) = self.api.clone().or(file.api) {
            cfg.api = Some(resolve(&api, "--api")?);
        }
        cfg.trace = self.trace.clone().or(file.trace);
        if let Some(d) = self.max_delay.clone().or(file.max_delay) {
            cfg.max_delay = ringleader_algorithms::params::parse_duration(&d)
                .with_context(|| format!("--max-delay {d:?}: expected a duration such as 50ms"))?;
            if !(100_000..=60_000_000_000).contains(&cfg.max_delay) {
                bail!("--max-delay {d}: give 100us..60s (algorithms derive their timeouts from it)");
            }
        }
        if let Some(m) = self.max_frame.or(file.max_frame) {
            if !(1_024..=16 << 20).contains(&m) {
                bail!("--max-frame {m}: give 1024..16777216 bytes");
            }
            cfg.max_frame = m;
        }
        if let Some(q) = self.queue.or(file.queue) {
            if !(1..=1_000_000).contains(&q) {
                bail!("--queue {q}: give 1..1000000 messages per peer");
            }
            cfg.queue_capacity = q;
        }
        if let Some(c) = self.max_connections.or(file.max_connections) {
            if !(1..=65_536).contains(&c) {
                bail!("--max-connections {c}: give 1..65536");
            }
            cfg.max_connections = c;
        }
        if let Some(c) = self.api_max_connections.or(file.api_max_connections) {
            if !(1..=65_536).contains(&c) {
                bail!("--api-max-connections {c}: give 1..65536");
            }
            cfg.api_max_connections = c;
        }
        if let Some(d) = &self.api_write_stall_timeout {
            let ns = ringleader_algorithms::params::parse_duration(d).with_context(|| {
                format!("--api-write-stall-timeout {d:?}: expected a duration such as 30s")
            })?;
            let t = std::time::Duration::from_nanos(ns);
            if !(std::time::Duration::from_millis(100)..=std::time::Duration::from_secs(3600)).contains(&t) {
                bail!("--api-write-stall-timeout {d}: give 100ms..=3600s");
            }
            cfg.api_write_stall_timeout = t;
        }
        cfg.elect_at_start = !self.no_elect_at_start;
        cfg.insecure_api = self.insecure;
        if let Some(path) = self.api_token_file.clone().or(file.api_token_file) {
            cfg.api_token = Some(ringleader_net::api::ApiToken::read_file(&path)?);
        }
        cfg.data_dir = self.data_dir.clone().or(file.data_dir);
        if self.wipe_data && cfg.data_dir.is_none() {
            bail!("--wipe-data needs --data-dir DIR (the directory whose state to delete)");
        }
        cfg.wipe_data = self.wipe_data;
        match (self.secret_file.clone().or(file.secret_file), self.insecure) {
            (Some(_), true) => bail!("--secret-file and --insecure contradict each other; give one"),
            (Some(path), false) => cfg.secret = Some(ringleader_net::auth::Secret::read_file(&path)?),
            (None, true) => {}
            (None, false) => bail!(
                "no cluster secret: give --secret-file FILE (`ringleader cluster` writes one) or \
                 --insecure to believe every peer"
            ),
        }
        Ok(cfg)
    }
}

/// Runs the node until Ctrl-C or SIGTERM.
pub fn run(args: NodeArgs) -> crate::CommandResult {
    let cfg = args.to_config()?;
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    rt.block_on(async move {
        let id = cfg.id;
        let algo = cfg.algorithm.clone();
        let handle = ringleader_net::start(cfg).await?;
        eprintln!(
            "[id {id}] {algo} node listening on {}{}",
            handle.listen,
            handle.api.map(|a| format!(", HTTP API on http://{a}")).unwrap_or_default()
        );
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
            // The node stopped by itself: its stable storage failed (the error is printed).
            _ = handle.stopped.cancelled() => bail!("[id {id}] the node stopped: its stable storage failed"),
        }
        eprintln!("[id {id}] stopping");
        handle.shutdown.cancel();
        handle.stopped.cancelled().await;
        Ok(crate::ExitStatus::Ok)
    })
}
