//! `ringleader cluster`: N real nodes on this machine, and a control channel to hurt them.
//!
//! The launcher starts node `i` (ids 1..N) as a child process of the same binary:
//! peers listen on `HOST:PEER_BASE+i`, the HTTP API of node `i` is on `HOST:API_BASE+i`, and
//! the launcher's own control channel is on `HOST:API_BASE` (the port no node uses). Children
//! die with the launcher (Linux parent-death signal); Ctrl-C or SIGTERM stops them all.
//!
//! The control channel speaks one line in, one line out:
//! `kill ID` (SIGKILL: a crash), `restart ID` (kill if running, start again: the node recovers
//! from its data directory), `pause ID` (SIGSTOP: alive but silent), `resume ID` (SIGCONT),
//! `status`. `ringleader cluster ctl kill 3` sends one such line.
//!
//! Node `i` keeps its state in `DATA_DIR/node-i` (stable storage, see `ringleader_net::storage`;
//! `DATA_DIR` defaults to `ringleader-data-API_BASE` in the launcher's working directory). The
//! data is kept: a new launcher with the same command (after a reboot, after `kill -9` of
//! everything) starts its nodes from what they had written, and a `restart` keeps the node's
//! directory too. Only `--wipe-data` deletes it, naming each directory it deletes. A service
//! launcher whose directories are all empty starts a new cluster (`serve --bootstrap` with a
//! random cluster id); otherwise its nodes restart as members, and a node whose directory was
//! lost refuses to start (see `ringleader_service::identity`). With `--trace-dir`, the
//! launcher appends a `crash` record to a node's trace when it kills it (`kill`, `restart`),
//! so that `ringleader verify` knows when the node died.
//!
//! The launcher writes a fresh cluster secret (mode 0600) that every node proves it holds to its
//! peers, and that a control client proves it holds too: the launcher greets each control
//! connection with `ringleader-ctl NONCE`, and the client's line is `HMAC COMMAND` (HMAC-SHA-256
//! over the nonce and the command, see `ringleader_transport::auth`). With `--insecure` there is no
//! secret, the greeting is `ringleader-ctl insecure` and the line is the bare command. A stranger
//! can hold little of it: a line is at most 4 KiB (a longer one is answered with an error and
//! nothing more of it is read), it must come within 3 s of the greeting, and at most 8
//! connections are served at once (one more is answered with an error line and closed).

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use anyhow::{Context as _, bail};
use clap::{Args, Subcommand, ValueEnum};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use tokio::process::Command;
use tokio::sync::oneshot;

/// Launch N local nodes, or control a running launcher (`cluster ctl kill 3`)
///
/// Examples:
///   ringleader cluster --nodes 5 --algo central --api-base-port 8000
///   ringleader cluster ctl kill 3            (another terminal)
///   ringleader cluster ctl restart 3
///   ringleader cluster ctl pause 2 ; ringleader cluster ctl resume 2
#[derive(Args, Debug)]
#[command(verbatim_doc_comment, args_conflicts_with_subcommands = true)]
pub struct ClusterArgs {
    /// Control a running launcher instead of starting one.
    #[command(subcommand)]
    pub ctl: Option<ClusterCmd>,
    /// Number of nodes (ids 1..N).
    #[arg(long, default_value_t = 5, value_name = "N")]
    pub nodes: u64,
    /// Algorithm to run (see `ringleader list`).
    #[arg(long, value_name = "NAME")]
    pub algo: Option<String>,
    /// Algorithm parameter (repeatable).
    #[arg(long, value_name = "KEY=VALUE", value_parser = crate::sim::parse_param)]
    pub param: Vec<(String, String)>,
    /// Node i serves its HTTP API on API_BASE+i; the launcher's control channel is on API_BASE.
    #[arg(long, default_value_t = 8000, value_name = "PORT")]
    pub api_base_port: u16,
    /// Node i accepts peer connections on PEER_BASE+i.
    #[arg(long, default_value_t = 7000, value_name = "PORT")]
    pub peer_base_port: u16,
    /// The loopback address to bind.
    #[arg(long, default_value = "127.0.0.1", value_name = "IP")]
    pub host: String,
    /// Write node i's trace to DIR/node-i.jsonl.
    #[arg(long, value_name = "DIR")]
    pub trace_dir: Option<PathBuf>,
    /// The delay bound algorithms may assume (passed to every node).
    #[arg(long, value_name = "TIME")]
    pub max_delay: Option<String>,
    /// Elections: nodes do not elect by themselves at start (passed to every node).
    #[arg(long)]
    pub no_elect_at_start: bool,
    /// Where to write the cluster secret [default: cluster-API_BASE.secret in a directory of
    /// this user's alone: $XDG_RUNTIME_DIR/ringleader, else ~/.cache/ringleader].
    #[arg(long, value_name = "FILE")]
    pub secret_file: Option<PathBuf>,
    /// No secret: nodes believe every peer's hello and the control channel obeys anyone.
    #[arg(long)]
    pub insecure: bool,
    /// Every node's HTTP API requires `Authorization: Bearer TOKEN` with the token in this file
    /// (needed with a non-loopback --host unless --insecure); with --service, clients of the
    /// etcd gRPC API authenticate as user root with the token as password.
    #[arg(long, value_name = "FILE")]
    pub api_token_file: Option<PathBuf>,
    /// Node i keeps its state in DIR/node-i (stable storage; a restarted node recovers from it)
    /// [default: ringleader-data-API_BASE in the working directory].
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Delete every node's data directory (DIR/node-i: its state, or the service's Raft log)
    /// before starting, and print each one deleted. By default the data is kept: the nodes
    /// recover from what a previous launcher left.
    #[arg(long)]
    pub wipe_data: bool,
    /// Accepted for old scripts; the data is kept by default.
    #[arg(long, hide = true, conflicts_with = "wipe_data")]
    pub keep_data: bool,
    /// No stable storage: a restarted node starts with an empty memory (`on_start`).
    #[arg(long, conflicts_with_all = ["data_dir", "keep_data", "wipe_data"])]
    pub no_data_dir: bool,
    /// Start nodes of the coordination service (`ringleader serve`: leases, locks and
    /// elections on Raft) instead of an algorithm's nodes. Node i's `GET /status` names the
    /// Raft leader's id in `leader`.
    #[arg(long, conflicts_with_all = ["algo", "param", "trace_dir", "max_delay", "no_elect_at_start", "no_data_dir"])]
    pub service: bool,
    /// With --service: an argument passed to every `ringleader serve` (repeatable), e.g.
    /// --serve-arg=--tick=5ms.
    #[arg(long, requires = "service", value_name = "ARG", allow_hyphen_values = true)]
    pub serve_arg: Vec<String>,
    /// With --service: node i also serves the etcd-compatible gRPC API on GRPC_BASE+i
    /// (docs/ETCD.md).
    #[arg(long, requires = "service", value_name = "PORT")]
    pub grpc_base_port: Option<u16>,
    /// With --service: TLS everywhere, with a throwaway CA made at launch. The HTTP and gRPC
    /// APIs serve https and require a client certificate (--client-cert-auth), peers use
    /// mutual TLS. The client's files are DATA_DIR/tls/ca.pem, client.pem and client-key.pem;
    /// the launcher prints the flags to give (`ringleader lock` and etcdctl alike).
    #[arg(long, requires = "service")]
    pub tls: bool,
}

/// The secret file a launcher whose control channel listens on `port` writes by default, in
/// [`private_secret_dir`].
pub fn default_secret_file(port: u16) -> anyhow::Result<PathBuf> {
    Ok(private_secret_dir()?.join(format!("cluster-{port}.secret")))
}

/// A directory for default secrets that no other local user can have made or can read:
/// `$XDG_RUNTIME_DIR/ringleader` (the per-user runtime directory), else
/// `$HOME/.cache/ringleader`; created with mode 0700, and refused unless it is this user's
/// and closed to others. (A shared `/tmp` path could be made first by another user, who would
/// then own the file the secret goes to, or stop the launcher.)
pub fn private_secret_dir() -> anyhow::Result<PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    let dir = match (env("XDG_RUNTIME_DIR"), env("HOME")) {
        (Some(run), _) => run.join("ringleader"),
        (None, Some(home)) => home.join(".cache").join("ringleader"),
        (None, None) => anyhow::bail!(
            "neither XDG_RUNTIME_DIR nor HOME is set: give the cluster secret a path with --secret-file"
        ),
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .with_context(|| format!("creating {} for the cluster secret", dir.display()))?;
    let meta = std::fs::symlink_metadata(&dir).with_context(|| format!("{}", dir.display()))?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if !meta.is_dir() || meta.uid() != me || meta.mode() & 0o077 != 0 {
        anyhow::bail!(
            "{} is not a private directory of this user (owner {}, mode {:o}): give the cluster secret \
             a path with --secret-file",
            dir.display(),
            meta.uid(),
            meta.mode() & 0o777
        );
    }
    Ok(dir)
}

/// A command for a running launcher.
#[derive(Subcommand, Debug)]
pub enum ClusterCmd {
    /// Send one control command to a running launcher.
    Ctl {
        /// kill | restart | pause | resume | status
        #[arg(value_enum)]
        action: CtlAction,
        /// The node id (not for status).
        id: Option<u64>,
        /// The launcher's control address (`cluster` prints it: the API base port on 127.0.0.1).
        #[arg(long, default_value = "127.0.0.1:8000", value_name = "ADDR")]
        ctl: String,
        /// The cluster secret [default: the launcher's default for the control port].
        #[arg(long, value_name = "FILE")]
        secret_file: Option<PathBuf>,
    },
}

/// A control command's action. (The variants carry no doc comments: clap would list them in
/// `--help`; the argument's own help names them.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum CtlAction {
    Kill,
    Restart,
    Pause,
    Resume,
    Status,
}

impl CtlAction {
    /// The word on the control channel.
    pub fn name(self) -> &'static str {
        match self {
            CtlAction::Kill => "kill",
            CtlAction::Restart => "restart",
            CtlAction::Pause => "pause",
            CtlAction::Resume => "resume",
            CtlAction::Status => "status",
        }
    }

    /// The action a control-channel word names.
    pub fn from_word(word: &str) -> Option<CtlAction> {
        [CtlAction::Kill, CtlAction::Restart, CtlAction::Pause, CtlAction::Resume, CtlAction::Status]
            .into_iter()
            .find(|a| a.name() == word)
    }
}

/// One node's child process.
#[derive(Default)]
struct Slot {
    pid: Option<i32>,
    paused: bool,
    exited: Option<oneshot::Receiver<()>>,
}

struct Launcher {
    args: ClusterArgs,
    /// Node i's data directory is `data_dir/node-i` (none: `--no-data-dir`).
    data_dir: Option<PathBuf>,
    /// Service only: the cluster id of a new cluster, when every data directory was empty at
    /// launch; its nodes' first start is `serve --bootstrap`.
    bootstrap: Option<String>,
    /// The secret file and the secret (none with `--insecure`).
    secret: Option<(PathBuf, ringleader_transport::auth::Secret)>,
    /// `--tls`: the generated CA and certificates.
    tls: Option<crate::tls_gen::ClusterTls>,
    algo: String,
    exe: PathBuf,
    slots: Mutex<Vec<Slot>>,
}

impl Launcher {
    /// The slot table, locked. A task that panicked while holding it leaves plain data (pids
    /// and flags, each written whole), so the table is used as it stands, never refused.
    fn slots(&self) -> MutexGuard<'_, Vec<Slot>> {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The arguments of `ringleader node` for node `id`.
    fn node_command(&self, cmd: &mut Command, id: u64) {
        let a = &self.args;
        let port = |base: u16, i: u64| base as u64 + i;
        cmd.arg("node")
            .args(["--id", &id.to_string()])
            .args(["--listen", &format!("{}:{}", a.host, port(a.peer_base_port, id))])
            .args(["--algo", &self.algo])
            .args(["--api", &format!("{}:{}", a.host, port(a.api_base_port, id))]);
        for j in (1..=a.nodes).filter(|&j| j != id) {
            cmd.args(["--peer", &format!("{j}={}:{}", a.host, port(a.peer_base_port, j))]);
        }
        for (k, v) in &a.param {
            cmd.args(["--param", &format!("{k}={v}")]);
        }
        if let Some(d) = &a.max_delay {
            cmd.args(["--max-delay", d]);
        }
        if a.no_elect_at_start {
            cmd.arg("--no-elect-at-start");
        }
        match &self.secret {
            Some((path, _)) => {
                cmd.arg("--secret-file").arg(path);
            }
            None => {
                cmd.arg("--insecure");
            }
        }
        if let Some(token) = &a.api_token_file {
            cmd.arg("--api-token-file").arg(token);
        }
        if let Some(dir) = &a.trace_dir {
            cmd.arg("--trace").arg(dir.join(format!("node-{id}.jsonl")));
        }
        if let Some(dir) = &self.data_dir {
            cmd.arg("--data-dir").arg(dir.join(format!("node-{id}")));
        }
    }

    /// The arguments of `ringleader serve` for node `id`; `first`: the launcher's first start
    /// of it (of a new cluster: `--bootstrap`).
    fn service_command(&self, cmd: &mut Command, id: u64, first: bool) -> anyhow::Result<()> {
        let a = &self.args;
        let port = |base: u16, i: u64| base as u64 + i;
        cmd.arg("serve")
            .args(["--id", &id.to_string()])
            .args(["--listen", &format!("{}:{}", a.host, port(a.peer_base_port, id))])
            .args(["--api", &format!("{}:{}", a.host, port(a.api_base_port, id))]);
        if let Some(g) = a.grpc_base_port {
            cmd.args(["--grpc", &format!("{}:{}", a.host, port(g, id))]);
        }
        for j in (1..=a.nodes).filter(|&j| j != id) {
            cmd.args(["--peer", &format!("{j}={}:{}", a.host, port(a.peer_base_port, j))]);
            cmd.args(["--peer-api", &format!("{j}={}:{}", a.host, port(a.api_base_port, j))]);
        }
        match &self.secret {
            Some((path, _)) => cmd.arg("--secret-file").arg(path),
            None => cmd.arg("--insecure"),
        };
        if let Some(token) = &a.api_token_file {
            cmd.arg("--api-token-file").arg(token);
        }
        if let Some(tls) = &self.tls {
            cmd.arg("--cert-file").arg(tls.node_cert(id)).arg("--key-file").arg(tls.node_key(id));
            cmd.arg("--trusted-ca-file").arg(tls.ca()).arg("--client-cert-auth");
            cmd.arg("--peer-cert-file").arg(tls.node_cert(id)).arg("--peer-key-file").arg(tls.node_key(id));
            cmd.arg("--peer-trusted-ca-file").arg(tls.ca());
        }
        let dir = self
            .data_dir
            .as_ref()
            .context("the service always keeps its log on disk")?
            .join(format!("node-{id}"));
        cmd.arg("--data-dir").arg(dir);
        if let (true, Some(cluster)) = (first, &self.bootstrap) {
            cmd.args(["--bootstrap", "--cluster-id", cluster]);
        }
        cmd.args(&a.serve_arg);
        Ok(())
    }

    /// Starts node `id`; `first`: the launcher's first start of it (a `restart` is not).
    fn spawn(self: &Arc<Self>, id: u64, first: bool) -> anyhow::Result<()> {
        let mut cmd = Command::new(&self.exe);
        if self.args.service {
            self.service_command(&mut cmd, id, first)?;
        } else {
            self.node_command(&mut cmd, id);
        }
        cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).kill_on_drop(true);
        // SAFETY: prctl is async-signal-safe; the closure allocates nothing.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let mut child = cmd.spawn().with_context(|| format!("starting node {id}"))?;
        let pid = child.id().map(|p| p as i32);
        for (stream, is_err) in [
            (child.stdout.take().map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Unpin + Send>), false),
            (child.stderr.take().map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Unpin + Send>), true),
        ] {
            if let Some(s) = stream {
                tokio::spawn(async move {
                    let mut lines = BufReader::new(s).lines();
                    while let Ok(Some(line)) = lines.next_line().await {
                        if is_err {
                            eprintln!("[node {id}] {line}");
                        } else {
                            println!("[node {id}] {line}");
                        }
                    }
                });
            }
        }
        let (tx, rx) = oneshot::channel();
        {
            let mut slots = self.slots();
            slots[id as usize] = Slot { pid, paused: false, exited: Some(rx) };
        }
        let me = self.clone();
        tokio::spawn(async move {
            let status = child.wait().await;
            eprintln!(
                "[cluster] node {id} exited: {}",
                status.map(|s| s.to_string()).unwrap_or_else(|e| e.to_string())
            );
            let mut slots = me.slots();
            if slots[id as usize].pid == pid {
                slots[id as usize].pid = None;
                slots[id as usize].paused = false;
            }
            let _ = tx.send(());
        });
        Ok(())
    }

    async fn kill(&self, id: u64, signal: i32) -> bool {
        let (pid, exited) = {
            let mut slots = self.slots();
            let s = &mut slots[id as usize];
            (s.pid, s.exited.take())
        };
        let Some(pid) = pid else { return false };
        let killed_ns = ringleader_net::driver::wall_ns();
        // SAFETY: signalling our own child by pid.
        unsafe {
            libc::kill(pid, signal);
            libc::kill(pid, libc::SIGCONT);
        }
        if let Some(rx) = exited {
            let _ = rx.await;
        }
        if signal == libc::SIGKILL
            && let Some(dir) = &self.args.trace_dir
        {
            // Ids are 1..N, so node `id` is at position id - 1.
            let path = dir.join(format!("node-{id}.jsonl"));
            let detail = "killed by the cluster launcher (SIGKILL)";
            if let Err(e) = ringleader_net::verify::record_crash(
                &path,
                (id - 1) as ringleader_core::NodeId,
                id,
                killed_ns,
                detail,
            ) {
                eprintln!("[cluster] could not record node {id}'s crash in {}: {e}", path.display());
            }
        }
        true
    }

    /// Sends `signal` to node `id`; returns its pid, or `None` when it is not running.
    fn signal(&self, id: u64, signal: i32, paused: bool) -> Option<i32> {
        let mut slots = self.slots();
        let s = &mut slots[id as usize];
        let pid = s.pid?;
        // SAFETY: signalling our own child by pid.
        unsafe { libc::kill(pid, signal) };
        s.paused = paused;
        Some(pid)
    }

    /// Pauses node `id` and returns once every thread of it is stopped.
    ///
    /// SIGSTOP is asynchronous inside a multi-threaded process: the kernel wakes one thread to
    /// take the signal, and only when that thread runs does it stop the others. Until then a
    /// worker woken by the network still runs the algorithm (seen: a GRANT sent 0.9 ms after
    /// `kill` returned, on a loaded machine). So "ok paused" waits until `/proc` shows every
    /// thread stopped (`T`), for at most two seconds.
    async fn pause(&self, id: u64) -> Result<(), String> {
        let Some(pid) = self.signal(id, libc::SIGSTOP, true) else {
            return Err(format!("node {id} is not running"));
        };
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(2);
        while !all_threads_stopped(pid) {
            if tokio::time::Instant::now() >= deadline {
                return Err(format!("node {id} (pid {pid}) did not stop within 2 s"));
            }
            tokio::time::sleep(std::time::Duration::from_micros(200)).await;
        }
        Ok(())
    }

    async fn control(self: &Arc<Self>, line: &str) -> String {
        let words: Vec<&str> = line.split_whitespace().collect();
        let id = match words.get(1).map(|w| w.parse::<u64>()) {
            Some(Ok(id)) if (1..=self.args.nodes).contains(&id) => Some(id),
            Some(_) => return format!("error: node id must be 1..{}", self.args.nodes),
            None => None,
        };
        let Some(action) = words.first().and_then(|w| CtlAction::from_word(w)) else {
            return "error: commands are kill ID, restart ID, pause ID, resume ID, status".into();
        };
        match (action, id) {
            (CtlAction::Status, _) => {
                let slots = self.slots();
                let parts: Vec<String> = (1..=self.args.nodes)
                    .map(|i| {
                        let s = &slots[i as usize];
                        let state = match (s.pid, s.paused) {
                            (None, _) => "down".to_string(),
                            (Some(p), true) => format!("paused(pid {p})"),
                            (Some(p), false) => format!("up(pid {p})"),
                        };
                        format!("{i}={state}")
                    })
                    .collect();
                format!("ok {}", parts.join(" "))
            }
            (CtlAction::Kill, Some(id)) => {
                if self.kill(id, libc::SIGKILL).await {
                    format!("ok killed {id}")
                } else {
                    format!("error: node {id} is not running")
                }
            }
            (CtlAction::Restart, Some(id)) => {
                self.kill(id, libc::SIGKILL).await;
                match self.spawn(id, false) {
                    Ok(()) => format!("ok restarted {id}"),
                    Err(e) => format!("error: {e:#}"),
                }
            }
            (CtlAction::Pause, Some(id)) => match self.pause(id).await {
                Ok(()) => format!("ok paused {id}"),
                Err(e) => format!("error: {e}"),
            },
            (CtlAction::Resume, Some(id)) => {
                if self.signal(id, libc::SIGCONT, false).is_some() {
                    format!("ok resumed {id}")
                } else {
                    format!("error: node {id} is not running")
                }
            }
            (CtlAction::Kill | CtlAction::Restart | CtlAction::Pause | CtlAction::Resume, None) => {
                format!("error: {} needs a node id", action.name())
            }
        }
    }
}

/// Whether every thread of `pid` is stopped (state `T` or `t` in `/proc/PID/task/*/stat`).
/// A process that is gone counts as stopped: there is nothing left to run.
fn all_threads_stopped(pid: i32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return true };
    tasks.filter_map(|t| t.ok()).all(|t| {
        let stat = std::fs::read_to_string(t.path().join("stat")).unwrap_or_default();
        // The state follows the command name, which is in parentheses and may hold spaces.
        match stat.rsplit_once(") ").and_then(|(_, rest)| rest.chars().next()) {
            Some(state) => matches!(state, 'T' | 't' | 'Z' | 'X'),
            None => true,
        }
    })
}

/// Runs `ringleader cluster`.
pub fn run(args: ClusterArgs) -> crate::CommandResult {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    rt.block_on(async move {
        if let Some(ClusterCmd::Ctl { action, id, ctl, secret_file }) = &args.ctl {
            return ctl_send(*action, *id, ctl, secret_file.as_deref()).await;
        }
        launch(args).await
    })
}

/// How long either end of a control connection waits for the other's line.
const CTL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The longest control line either end accepts: a command with its HMAC, or an answer, is
/// far shorter. A longer line is refused without being read further.
const CTL_MAX_LINE: u64 = 4096;

/// The most control connections the launcher serves at once; one more is answered with an
/// error line and closed.
const CTL_MAX_CONNECTIONS: usize = 8;

/// How long the launcher waits for a connection's command once it has greeted it (`cluster
/// ctl` sends it at once): a connection that says nothing holds its slot no longer.
const CTL_COMMAND_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

async fn read_line_timeout<R: tokio::io::AsyncBufRead + Unpin>(r: &mut R) -> anyhow::Result<String> {
    read_line_within(r, CTL_TIMEOUT).await
}

/// Reads one line of at most [`CTL_MAX_LINE`] bytes within `limit`; a longer line is refused
/// once its first `CTL_MAX_LINE + 1` bytes are read, and nothing more of it is read.
async fn read_line_within<R: tokio::io::AsyncBufRead + Unpin>(
    r: &mut R,
    limit: std::time::Duration,
) -> anyhow::Result<String> {
    use tokio::io::AsyncReadExt;
    let mut line = String::new();
    let mut bounded = r.take(CTL_MAX_LINE + 1);
    tokio::time::timeout(limit, bounded.read_line(&mut line))
        .await
        .context("the other end of the control channel went silent")??;
    if line.len() as u64 > CTL_MAX_LINE {
        anyhow::bail!("a control line longer than {CTL_MAX_LINE} bytes");
    }
    Ok(line.trim().to_string())
}

async fn ctl_send(
    action: CtlAction,
    id: Option<u64>,
    addr: &str,
    secret_file: Option<&std::path::Path>,
) -> crate::CommandResult {
    let command = match id {
        Some(id) => format!("{} {id}", action.name()),
        None => action.name().to_string(),
    };
    let stream = tokio::net::TcpStream::connect(addr)
        .await
        .with_context(|| format!("no cluster launcher at {addr} (start one with `ringleader cluster`)"))?;
    let (r, mut w) = stream.into_split();
    let mut r = BufReader::new(r);
    let greeting = read_line_timeout(&mut r).await?;
    let line = match greeting.strip_prefix("ringleader-ctl ") {
        Some("insecure") => command,
        Some(nonce) => {
            let path = match secret_file {
                Some(p) => p.to_path_buf(),
                None => {
                    let port = addr.rsplit_once(':').and_then(|(_, p)| p.parse::<u16>().ok());
                    default_secret_file(port.with_context(|| format!("--ctl {addr:?}: expected HOST:PORT"))?)?
                }
            };
            let secret = ringleader_transport::auth::Secret::read_file(&path)?;
            let mac =
                secret.mac(ringleader_transport::auth::CONTROL, &[nonce.as_bytes(), command.as_bytes()]);
            format!("{} {command}", ringleader_transport::auth::hex(&mac))
        }
        None => bail!("{addr} is not a ringleader cluster control channel"),
    };
    w.write_all(format!("{line}\n").as_bytes()).await?;
    let answer = read_line_timeout(&mut r).await?;
    println!("{answer}");
    Ok(if answer.starts_with("ok") { crate::ExitStatus::Ok } else { crate::ExitStatus::Input })
}

/// Checks a control line `HMAC COMMAND` against the nonce of this connection; returns the
/// command.
fn authenticate<'a>(
    secret: &ringleader_transport::auth::Secret,
    nonce: &str,
    line: &'a str,
) -> Option<&'a str> {
    let (mac, command) = line.split_once(' ')?;
    let tag = ringleader_transport::auth::unhex(mac)?;
    secret
        .verify(ringleader_transport::auth::CONTROL, &[nonce.as_bytes(), command.as_bytes()], &tag)
        .then_some(command)
}

async fn launch(args: ClusterArgs) -> crate::CommandResult {
    let (algo, family) = if args.service {
        ("lock service".to_string(), "raft-rs")
    } else {
        let Some(algo) = args.algo.clone() else {
            bail!("missing --algo NAME (see `ringleader list`), or --service for the coordination service")
        };
        let Some(info) = ringleader_registry::find(&algo) else {
            let names: Vec<&str> = ringleader_registry::all().iter().map(|i| i.name).collect();
            bail!("unknown algorithm {algo:?}; known: {}", names.join(", "));
        };
        if !ringleader_registry::is_plain(info.name) {
            bail!(
                "{algo:?} does not run as `ringleader node`s: its state holds a library engine; judge it in the \
                 simulator (`sim`, `sweep`), or start the coordination service with `cluster --service`"
            );
        }
        (algo, info.family.name())
    };
    if args.nodes == 0 || args.nodes > 200 {
        bail!("--nodes must be 1..200");
    }
    if args.api_base_port as u64 + args.nodes > 65535
        || args.peer_base_port as u64 + args.nodes > 65535
        || args.grpc_base_port.is_some_and(|g| g as u64 + args.nodes > 65535)
    {
        bail!("port bases leave no room for {} nodes", args.nodes);
    }
    if let Some(dir) = &args.trace_dir {
        std::fs::create_dir_all(dir).with_context(|| format!("{}", dir.display()))?;
    }
    let ctl_addr = format!("{}:{}", args.host, args.api_base_port);
    let ctl = TcpListener::bind(&ctl_addr).await.with_context(|| format!("control channel on {ctl_addr}"))?;
    let exe = std::env::current_exe().context("locating the ringleader binary")?;
    let n = args.nodes;
    let secret = if args.insecure {
        None
    } else {
        let path = match &args.secret_file {
            Some(path) => path.clone(),
            None => default_secret_file(args.api_base_port)?,
        };
        let secret = ringleader_transport::auth::Secret::generate();
        secret.write_file(&path).with_context(|| format!("writing the cluster secret {}", path.display()))?;
        Some((path, secret))
    };
    let data_dir = (!args.no_data_dir).then(|| {
        args.data_dir
            .clone()
            .unwrap_or_else(|| PathBuf::from(format!("ringleader-data-{}", args.api_base_port)))
    });
    if let (true, Some(dir)) = (args.wipe_data, &data_dir) {
        for id in 1..=n {
            let node = dir.join(format!("node-{id}"));
            if node.exists() {
                std::fs::remove_dir_all(&node)
                    .with_context(|| format!("--wipe-data: deleting {}", node.display()))?;
                println!("  --wipe-data: deleted {}", node.display());
            }
        }
    }
    // A service whose directories are all without a log is a new cluster; one with any log is
    // a restart, and a node among them with no log refuses to start (its data was lost).
    let bootstrap = match &data_dir {
        Some(dir) if args.service => {
            let any_log = (1..=n).any(|id| {
                let node = dir.join(format!("node-{id}"));
                node.join(ringleader_service::disk::FILE_NAME).exists()
                    || node.join(ringleader_service::identity::FILE_NAME).exists()
            });
            (!any_log).then(ringleader_service::identity::random_cluster_id)
        }
        _ => None,
    };
    let tls = match (&data_dir, args.tls) {
        (Some(dir), true) => Some(crate::tls_gen::generate(&dir.join("tls"), n, &args.host)?),
        _ => None,
    };
    let scheme = if tls.is_some() { "https" } else { "http" };
    let launcher = Arc::new(Launcher {
        data_dir,
        bootstrap,
        secret,
        tls,
        slots: Mutex::new((0..=n).map(|_| Slot::default()).collect()),
        algo: algo.clone(),
        exe,
        args,
    });
    println!("ringleader cluster: {n} nodes running {algo} ({family})");
    for id in 1..=n {
        launcher.spawn(id, true)?;
        let a = &launcher.args;
        let grpc = a
            .grpc_base_port
            .map(|g| {
                let at = format!("{}:{}", a.host, g as u64 + id);
                if launcher.tls.is_some() {
                    format!("  etcd gRPC https://{at}")
                } else {
                    format!("  etcd gRPC {at}")
                }
            })
            .unwrap_or_default();
        println!(
            "  node {id}: peers {}:{}  api {scheme}://{}:{}{grpc}",
            a.host,
            a.peer_base_port as u64 + id,
            a.host,
            a.api_base_port as u64 + id
        );
    }
    println!("  control: {ctl_addr} (ringleader cluster ctl kill|restart|pause|resume ID --ctl {ctl_addr})");
    match &launcher.data_dir {
        Some(dir) => println!(
            "  data: {}/node-ID ({}; kept across restarts and relaunches, --wipe-data deletes it)",
            dir.display(),
            match &launcher.bootstrap {
                Some(cluster) => format!("a new cluster, id {cluster}"),
                None if launcher.args.service => "the nodes restart from their logs".to_string(),
                None => "the nodes recover from what they wrote, if anything".to_string(),
            }
        ),
        None => println!("  no data dir: a restarted node starts with an empty memory"),
    }
    match &launcher.secret {
        Some((path, _)) => {
            println!("  secret: {} (mode 0600; nodes and `cluster ctl` read it)", path.display())
        }
        None => println!("  insecure: peers and control commands are not authenticated"),
    }
    if let Some(tls) = &launcher.tls {
        println!(
            "  tls: a throwaway CA in {} (mutual TLS between peers; clients need a certificate)",
            tls.dir.display()
        );
        println!("  client flags: {}", tls.client_flags());
    }
    {
        let launcher = launcher.clone();
        tokio::spawn(async move {
            let open = Arc::new(std::sync::atomic::AtomicUsize::new(0));
            loop {
                let (stream, peer) = match ctl.accept().await {
                    Ok(a) => a,
                    Err(e) => {
                        // Out of descriptors, typically: let connections close.
                        eprintln!("[cluster] control channel accept failed: {e}");
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                        continue;
                    }
                };
                if open.load(std::sync::atomic::Ordering::Relaxed) >= CTL_MAX_CONNECTIONS {
                    // One line into a fresh socket's empty buffer: never blocks.
                    let _ = stream.try_write(
                        format!("error: {CTL_MAX_CONNECTIONS} control connections are open already; retry\n")
                            .as_bytes(),
                    );
                    eprintln!(
                        "[cluster] refused a control connection from {peer}: {CTL_MAX_CONNECTIONS} open"
                    );
                    continue;
                }
                open.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let (launcher, open) = (launcher.clone(), open.clone());
                tokio::spawn(async move {
                    control_connection(&launcher, stream).await;
                    open.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
                });
            }
        });
    }
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    eprintln!("[cluster] stopping all nodes");
    for id in 1..=n {
        let stopped =
            tokio::time::timeout(std::time::Duration::from_secs(3), launcher.kill(id, libc::SIGTERM)).await;
        if stopped.is_err() {
            launcher.kill(id, libc::SIGKILL).await;
        }
    }
    Ok(crate::ExitStatus::Ok)
}

/// Serves one control connection: the greeting, one command line (bounded in length and in
/// time, authenticated with the secret), one answer.
async fn control_connection(launcher: &Arc<Launcher>, stream: tokio::net::TcpStream) {
    let (r, mut w) = stream.into_split();
    let nonce = ringleader_transport::auth::hex(&ringleader_transport::auth::nonce());
    let greeting = if launcher.secret.is_some() { nonce.as_str() } else { "insecure" };
    if w.write_all(format!("ringleader-ctl {greeting}\n").as_bytes()).await.is_err() {
        return;
    }
    let line = match read_line_within(&mut BufReader::new(r), CTL_COMMAND_TIMEOUT).await {
        Ok(line) => line,
        Err(e) => {
            eprintln!("[cluster] refused a control connection: {e:#}");
            let _ = w.write_all(format!("error: {e:#}\n").as_bytes()).await;
            return;
        }
    };
    let answer = match &launcher.secret {
        None => launcher.control(&line).await,
        Some((_, secret)) => match authenticate(secret, &nonce, &line) {
            Some(command) => launcher.control(command).await,
            None => "error: not authenticated (the command must carry the cluster secret's HMAC; \
                     `ringleader cluster ctl` does this)"
                .to_string(),
        },
    };
    eprintln!("[cluster] {line} -> {answer}");
    let _ = w.write_all(format!("{answer}\n").as_bytes()).await;
}

#[cfg(test)]
mod tests {
    use super::{CTL_MAX_LINE, read_line_timeout};

    #[tokio::test]
    async fn a_control_line_is_read_whole_up_to_its_bound_and_refused_beyond() {
        let ok = format!("{}\n", "k".repeat(CTL_MAX_LINE as usize - 1));
        assert_eq!(read_line_timeout(&mut ok.as_bytes()).await.unwrap().len(), CTL_MAX_LINE as usize - 1);
        let huge = "k".repeat(64 << 20);
        let err = read_line_timeout(&mut huge.as_bytes()).await.unwrap_err().to_string();
        assert!(err.contains("longer than 4096 bytes"), "{err}");
    }
}
