//! A service node: one [`Replica`] over a [`DiskLog`], its peers over the authenticated TCP
//! transport of real nodes, and the HTTP API ([`crate::http`]).
//!
//! One task owns the replica (the *loop*, `run_loop`). Everything else talks to it through
//! channels: the transport's readers hand it peer messages, HTTP handlers send it
//! [`Command`]s and wait on a oneshot for the answer, and it publishes every applied
//! [`Notice`] on a broadcast channel that blocked requests and watch streams listen to.
//!
//! Each turn of the loop takes one input, then everything else already waiting (up to a bound),
//! and only then drives the replica: all the proposals and messages of a turn share one
//! `Ready`, so one fsync (group commit).
//!
//! The loop is the replica's [`Host`]: messages go into the peer queues, applied entries of this
//! node's own proposals answer their waiting requests, and a linearizable read is answered once
//! the entry its ReadIndex names has been applied.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use raft::StateRole;
use raft::eraftpb::Message as RaftMessage;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use ringleader_algorithms::Family;
use ringleader_algorithms::service::lock_service::Msg;
use ringleader_algorithms::service::replica::{Host, Proposal, Replica, ReplicaError, Settings, Submit};
use ringleader_algorithms::service::state::{Applied, DeadlockPolicy, Notice, Op, RequestId, StateMachine};
use ringleader_core::{NodeId, Time};
use ringleader_net::auth::Secret;
use ringleader_net::metrics::Counters;
use ringleader_net::shared::{EventLog, Input, PeerLink, Shared, View};
use ringleader_net::wire::Envelope;
use ringleader_net::{NodeConfig, transport};
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::disk::{DiskError, DiskLog};

/// The name the service's peers say in their hello: only service nodes talk to service nodes.
pub const PROTOCOL: &str = "lock-service";

/// Everything one service node needs to start.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// This node's id, from 1 (`1..=N` in a cluster started together; it is also its Raft
    /// id).
    pub id: u64,
    /// Every member's id and peer address (`host:port`), this node included.
    pub members: Vec<(u64, String)>,
    /// Where to accept peer connections.
    pub listen: SocketAddr,
    /// Where to serve the HTTP API.
    pub api: SocketAddr,
    /// The directory of the durable Raft log (created if missing).
    pub data_dir: PathBuf,
    /// The cluster secret peers prove they hold; `None`: peers are believed (`--insecure`).
    pub secret: Option<Secret>,
    /// Local time between two Raft ticks.
    pub tick: Duration,
    /// Ticks without a leader before a follower campaigns.
    pub election_ticks: usize,
    /// Ticks between a leader's heartbeats.
    pub heartbeat_ticks: usize,
    /// How often the leader moves the replicated clock while leases exist.
    pub clock_every: Duration,
    /// Applied entries between two snapshots.
    pub snapshot_every: u64,
    /// After an involuntary loss, a lock is not granted again for this long.
    pub lock_delay: Duration,
    /// What a wait that would close a wait-for cycle does.
    pub policy: DeadlockPolicy,
    /// A request not committed (or a read not confirmed) within this is answered 503.
    pub request_timeout: Duration,
    /// A proposal not seen applied after this is proposed again (a leader change drops it).
    pub retry: Duration,
    /// The seed of the election-timeout draws (`None`: from the OS).
    pub seed: Option<u64>,
}

impl ServerConfig {
    /// A configuration with the defaults for everything but identity, membership and places.
    pub fn new(
        id: u64,
        members: Vec<(u64, String)>,
        listen: SocketAddr,
        api: SocketAddr,
        data_dir: PathBuf,
    ) -> Self {
        ServerConfig {
            id,
            members,
            listen,
            api,
            data_dir,
            secret: None,
            tick: Duration::from_millis(10),
            election_ticks: 10,
            heartbeat_ticks: 2,
            clock_every: Duration::from_millis(20),
            snapshot_every: 10_000,
            lock_delay: Duration::ZERO,
            policy: DeadlockPolicy::Report,
            request_timeout: Duration::from_secs(5),
            retry: Duration::from_millis(400),
            seed: None,
        }
    }

    /// Checks the configuration; the error says what is wrong and what is allowed.
    pub fn validate(&self) -> Result<(), ServeError> {
        let bad = |what: String| Err(ServeError::Config(what));
        let mut ids: Vec<u64> = self.members.iter().map(|m| m.0).collect();
        ids.sort_unstable();
        if ids.first() == Some(&0) {
            return bad("node ids start at 1".into());
        }
        if ids.windows(2).any(|w| w[0] == w[1]) {
            return bad("a member id appears twice in --peer/--members; ids must be distinct".into());
        }
        if !ids.contains(&self.id) {
            return bad(format!("this node's id {} is not among the members {ids:?}", self.id));
        }
        if ids.len() > 255 {
            return bad("at most 255 members".into());
        }
        if self.tick < Duration::from_millis(1) || self.tick > Duration::from_secs(1) {
            return bad("--tick must be 1ms..=1s".into());
        }
        if !(2..=1000).contains(&self.election_ticks) {
            return bad("--election-ticks must be 2..=1000".into());
        }
        if self.heartbeat_ticks == 0 || self.heartbeat_ticks >= self.election_ticks {
            return bad(format!(
                "--heartbeat-ticks must be 1..{} (below --election-ticks)",
                self.election_ticks
            ));
        }
        if self.snapshot_every == 0 {
            return bad("--snapshot-every must be at least 1".into());
        }
        if self.request_timeout < self.tick * 2 {
            return bad("--request-timeout must be at least two ticks".into());
        }
        Ok(())
    }

    fn settings(&self) -> Settings {
        Settings {
            election_ticks: self.election_ticks,
            heartbeat_ticks: self.heartbeat_ticks,
            clock_every: self.clock_every.as_nanos() as Time,
            snapshot_every: self.snapshot_every,
            lock_delay: self.lock_delay.as_nanos() as Time,
            policy: self.policy,
        }
    }
}

/// Why a service node could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The configuration is invalid.
    #[error("{0}")]
    Config(String),
    /// The durable log could not be opened or written.
    #[error("the Raft log in {dir}: {source}")]
    Disk {
        /// The data directory.
        dir: PathBuf,
        /// What went wrong.
        source: Box<DiskError>,
    },
    /// The replica failed (storage, a corrupt snapshot, raft-rs refusing the log).
    #[error("replica: {0}")]
    Replica(Box<ReplicaError<DiskError>>),
    /// A socket or a file could not be opened.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The OS error.
        source: std::io::Error,
    },
}

impl From<ReplicaError<DiskError>> for ServeError {
    fn from(e: ReplicaError<DiskError>) -> ServeError {
        ServeError::Replica(Box::new(e))
    }
}

/// Why a request could not be served.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Unavailable {
    /// Not committed within the request timeout (no leader, no majority).
    #[error("not committed within {0:?}: no leader or no majority reachable; try another node")]
    Timeout(Duration),
    /// The node is stopping.
    #[error("the node is stopping")]
    Stopping,
}

/// A question about the state machine, answered in the loop.
pub type Query = Box<dyn FnOnce(&StateMachine) -> serde_json::Value + Send>;

/// What HTTP handlers ask of the loop.
pub enum Command {
    /// Propose `op`; the answer is the applied result.
    Propose {
        /// The operation.
        op: Op,
        /// Where the result goes.
        reply: oneshot::Sender<Result<Applied, Unavailable>>,
    },
    /// A linearizable read: `query` runs once a ReadIndex confirmed by a majority is applied;
    /// the answer carries the applied index it saw.
    Read {
        /// The question.
        query: Query,
        /// Where the answer goes.
        reply: oneshot::Sender<Result<(u64, serde_json::Value), Unavailable>>,
    },
    /// A read of this node's own state machine, without a round trip (a check before
    /// answering, not a linearizable read).
    Local {
        /// The question.
        query: Query,
        /// Where the answer goes.
        reply: oneshot::Sender<serde_json::Value>,
    },
}

/// What `/status` shows, kept up to date by the loop.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Status {
    /// This node's id.
    pub id: u64,
    /// The id of the Raft leader this node knows.
    pub leader: Option<u64>,
    /// The current term.
    pub term: u64,
    /// `leader`, `follower`, `candidate` or `pre_candidate`.
    pub role: &'static str,
    /// The last applied index.
    pub applied: u64,
    /// The highest index known committed.
    pub commit: u64,
    /// The voters' ids.
    pub members: Vec<u64>,
}

/// An applied entry's notice, with the entry's index.
pub type Published = Arc<(u64, Notice)>;

/// A running service node: what the HTTP API needs, and how to stop it.
pub struct Node {
    /// This node's position in the replica's numbering (its id − 1): the `origin` of its
    /// leases.
    pub me: NodeId,
    /// Commands to the loop.
    pub commands: mpsc::Sender<Command>,
    /// Every applied notice, in log order.
    pub notices: broadcast::Sender<Published>,
    /// The status, as of the loop's last turn.
    pub status: Arc<Mutex<Status>>,
    /// The transport's counters (authentication failures, dropped messages, …).
    pub shared: Arc<Shared>,
    /// How long a request may wait for its commit.
    pub request_timeout: Duration,
    /// Cancelled to stop the node.
    pub shutdown: CancellationToken,
}

impl Node {
    /// Proposes `op` and waits for its result.
    pub async fn propose(&self, op: Op) -> Result<Applied, Unavailable> {
        let (reply, rx) = oneshot::channel();
        self.commands.send(Command::Propose { op, reply }).await.map_err(|_| Unavailable::Stopping)?;
        rx.await.map_err(|_| Unavailable::Stopping)?
    }

    /// A linearizable read.
    pub async fn read(&self, query: Query) -> Result<(u64, serde_json::Value), Unavailable> {
        let (reply, rx) = oneshot::channel();
        self.commands.send(Command::Read { query, reply }).await.map_err(|_| Unavailable::Stopping)?;
        rx.await.map_err(|_| Unavailable::Stopping)?
    }

    /// A read of this node's applied state.
    pub async fn local(&self, query: Query) -> Result<serde_json::Value, Unavailable> {
        let (reply, rx) = oneshot::channel();
        self.commands.send(Command::Local { query, reply }).await.map_err(|_| Unavailable::Stopping)?;
        rx.await.map_err(|_| Unavailable::Stopping)
    }
}

/// A started node: its addresses and its end.
pub struct Running {
    /// The node, for the API.
    pub node: Arc<Node>,
    /// The bound peer address.
    pub listen: SocketAddr,
    /// The bound API address.
    pub api: SocketAddr,
    /// Resolves when the loop stopped, with its error if it failed.
    pub done: tokio::task::JoinHandle<Result<(), ServeError>>,
}

/// Reads and increments the incarnation kept beside the log (request ids restart with each
/// life; see [`Proposal::incarnation`]). Written with fsync and an atomic rename.
fn next_incarnation(dir: &Path) -> Result<u64, ServeError> {
    let path = dir.join("incarnation");
    let io = |what: &str, source| ServeError::Io { what: format!("{what} {}", path.display()), source };
    let previous = match std::fs::read_to_string(&path) {
        Ok(text) => text.trim().parse::<u64>().map_err(|_| {
            ServeError::Config(format!(
                "{} holds {:?}, not a number; restore or delete it",
                path.display(),
                text.trim()
            ))
        })?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
        Err(e) => return Err(io("read", e)),
    };
    let next = previous + 1;
    let tmp = dir.join("incarnation.new");
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&tmp).map_err(|e| io("write", e))?;
        writeln!(f, "{next}").map_err(|e| io("write", e))?;
        f.sync_all().map_err(|e| io("sync", e))?;
    }
    std::fs::rename(&tmp, &path).map_err(|e| io("rename", e))?;
    Ok(next)
}

/// Starts a node: opens (or creates) its log, binds its sockets, connects to its peers and
/// runs its loop until `shutdown`. The API's listener is bound and handed back for
/// [`crate::start`] to serve.
pub async fn start(cfg: ServerConfig) -> Result<(Running, tokio::net::TcpListener), ServeError> {
    cfg.validate()?;
    std::fs::create_dir_all(&cfg.data_dir)
        .map_err(|source| ServeError::Io { what: format!("create {}", cfg.data_dir.display()), source })?;
    let disk = |source| ServeError::Disk { dir: cfg.data_dir.clone(), source: Box::new(source) };
    let mut log = DiskLog::open(&cfg.data_dir).map_err(disk)?;
    let mut ids: Vec<u64> = cfg.members.iter().map(|m| m.0).collect();
    ids.sort_unstable();
    if log.conf_state().voters.is_empty() && log.hard_state().term == 0 {
        // A new log: the cluster's first configuration is the member list (node ids are
        // Raft ids).
        let cs = raft::eraftpb::ConfState { voters: ids.clone(), ..Default::default() };
        log.set_conf_state(cs).map_err(disk)?;
    }
    let incarnation = next_incarnation(&cfg.data_dir)?;
    let me = (cfg.id - 1) as NodeId;
    let replica = Replica::new(me, incarnation, cfg.settings(), log)?;

    let listener = tokio::net::TcpListener::bind(cfg.listen)
        .await
        .map_err(|source| ServeError::Io { what: format!("listen for peers on {}", cfg.listen), source })?;
    let listen =
        listener.local_addr().map_err(|source| ServeError::Io { what: "peer address".into(), source })?;
    let api_listener = tokio::net::TcpListener::bind(cfg.api)
        .await
        .map_err(|source| ServeError::Io { what: format!("HTTP API on {}", cfg.api), source })?;
    let api =
        api_listener.local_addr().map_err(|source| ServeError::Io { what: "API address".into(), source })?;

    // The transport of real nodes, reused: uids are the node ids, positions their order.
    let mut net = NodeConfig::new(
        cfg.id,
        listen,
        cfg.members.iter().filter(|m| m.0 != cfg.id).map(|m| (m.0, m.1.clone())).collect(),
        PROTOCOL,
    );
    net.secret = cfg.secret.clone();
    net.max_frame = 8 * 1024 * 1024;
    let (input_tx, input_rx) = mpsc::channel::<Input<Msg, ()>>(4096);
    let (api_tx, _api_rx) = mpsc::channel(1);
    let mut writers = Vec::new();
    let peers: Vec<Option<PeerLink>> = ids
        .iter()
        .enumerate()
        .map(|(pos, &id)| {
            if id == cfg.id {
                return None;
            }
            let addr = cfg.members.iter().find(|m| m.0 == id).map(|m| m.1.clone()).unwrap_or_default();
            let (tx, rx) = mpsc::channel(net.queue_capacity);
            writers.push((pos, rx));
            Some(PeerLink {
                id,
                position: pos as NodeId,
                addr,
                connected: AtomicBool::new(false),
                down_since_ns: AtomicU64::new(0),
                queue: tx,
            })
        })
        .collect();
    let (events, _) = broadcast::channel(16);
    let shared = Arc::new(Shared {
        id: cfg.id,
        position: ids.iter().position(|&i| i == cfg.id).unwrap_or(0) as NodeId,
        members: ids.clone(),
        algorithm: PROTOCOL,
        family: Family::Mutex,
        counters: Counters::default(),
        view: Mutex::new(View::default()),
        events,
        event_log: Mutex::new(EventLog::default()),
        lock_times: Default::default(),
        api_connections: Default::default(),
        peers,
        api_tx,
    });
    let shutdown = CancellationToken::new();
    for (pos, rx) in writers {
        tokio::spawn(transport::writer(shared.clone(), pos, rx, net.clone(), shutdown.clone()));
    }
    tokio::spawn(transport::listen::<Msg, ()>(listener, shared.clone(), input_tx, net, shutdown.clone()));

    let (commands_tx, commands_rx) = mpsc::channel(4096);
    let (notices, _) = broadcast::channel(65_536);
    let status = Arc::new(Mutex::new(Status { id: cfg.id, ..Status::default() }));
    let node = Arc::new(Node {
        me,
        commands: commands_tx,
        notices: notices.clone(),
        status: status.clone(),
        shared: shared.clone(),
        request_timeout: cfg.request_timeout,
        shutdown: shutdown.clone(),
    });
    let seed = cfg.seed.unwrap_or_else(|| {
        let mut b = [0u8; 8];
        let _ = getrandom::fill(&mut b);
        u64::from_le_bytes(b)
    });
    let state = LoopState {
        cfg: cfg.clone(),
        shared,
        notices,
        status,
        rng: Xoshiro256PlusPlus::seed_from_u64(seed),
        started: Instant::now(),
        pending: BTreeMap::new(),
        next_request: 0,
        reads: BTreeMap::new(),
        next_read: 0,
        msg_count: 0,
    };
    let done = tokio::spawn(run_loop(replica, state, input_rx, commands_rx, shutdown.clone()));
    Ok((Running { node, listen, api, done }, api_listener))
}

/// A proposal of this node's waiting to be seen applied.
struct Pending {
    proposal: Proposal,
    reply: Option<oneshot::Sender<Result<Applied, Unavailable>>>,
    first_sent: Instant,
    last_sent: Instant,
}

/// A linearizable read waiting for its ReadIndex, then for that index to be applied.
struct PendingRead {
    query: Query,
    reply: oneshot::Sender<Result<(u64, serde_json::Value), Unavailable>>,
    first_sent: Instant,
    last_sent: Instant,
    /// The index the read may be answered from, once the leader confirmed it.
    index: Option<u64>,
}

/// The loop's own state (everything but the replica).
struct LoopState {
    cfg: ServerConfig,
    shared: Arc<Shared>,
    notices: broadcast::Sender<Published>,
    status: Arc<Mutex<Status>>,
    rng: Xoshiro256PlusPlus,
    started: Instant,
    pending: BTreeMap<RequestId, Pending>,
    next_request: RequestId,
    reads: BTreeMap<u64, PendingRead>,
    next_read: u64,
    msg_count: u64,
}

/// The replica's host: the loop's state plus the incarnation to recognise own proposals.
struct ServerHost<'a> {
    state: &'a mut LoopState,
    me: NodeId,
    incarnation: u64,
}

impl Host for ServerHost<'_> {
    fn send(&mut self, to: NodeId, msg: RaftMessage) {
        let s = &mut *self.state;
        let Some(pos) = s.shared.members.iter().position(|&u| u == to as u64 + 1) else { return };
        let Some(Some(link)) = s.shared.peers.get(pos) else { return };
        s.msg_count += 1;
        let msg_id = ((self.me as u64) << 40) | (s.msg_count & ((1 << 40) - 1));
        let env = Envelope { msg_id, lamport: 0, vector: Vec::new(), msg: Msg::new(&msg) };
        if link.queue.try_send(ringleader_net::wire::encode(&env)).is_err() {
            Counters::bump(&s.shared.counters.messages_dropped_queue_full);
        }
    }

    fn applied(&mut self, index: u64, p: &Proposal, applied: Applied, _: &StateMachine, submit: &mut Submit) {
        for n in &applied.notices {
            let _ = self.state.notices.send(Arc::new((index, n.clone())));
        }
        if p.origin != self.me || p.incarnation != self.incarnation {
            return;
        }
        match self.state.pending.remove(&p.request) {
            Some(Pending { reply: Some(reply), .. }) => {
                let _ = reply.send(Ok(applied));
            }
            Some(_) => {}
            None => {
                // A retried proposal committed twice (the original survived a leader change
                // after the retry was sent). Nobody waits for the second application, so what it
                // took is given back: a second lease is revoked, and a lock it granted anew (its
                // token is this entry's index: the first grant had been released meanwhile) is
                // released. The other duplicates are harmless: the state machine answers them as
                // it answered the first.
                use ringleader_algorithms::service::state::Reply;
                let undo = match (&p.op, &applied.reply) {
                    (Op::Grant { .. }, Reply::Granted { lease, .. }) => Some(Op::Revoke { lease: *lease }),
                    (Op::Acquire { name, lease, .. }, Reply::Acquired { fencing }) if *fencing == index => {
                        Some(Op::Release { name: name.clone(), lease: *lease })
                    }
                    _ => None,
                };
                if let Some(op) = undo {
                    let undo = Proposal {
                        origin: self.me,
                        incarnation: self.incarnation,
                        request: Proposal::CLOCK - 1,
                        op,
                    };
                    submit.submit(&undo);
                }
            }
        }
    }

    fn read_ready(&mut self, ctx: &[u8], index: u64) {
        let Ok(bytes) = <[u8; 8]>::try_from(ctx) else { return };
        if let Some(r) = self.state.reads.get_mut(&u64::from_le_bytes(bytes)) {
            r.index = Some(index);
        }
    }
}

/// The loop: inputs in, replica driven, answers out (see the module documentation).
async fn run_loop(
    mut replica: Replica<DiskLog>,
    mut state: LoopState,
    mut peers: mpsc::Receiver<Input<Msg, ()>>,
    mut commands: mpsc::Receiver<Command>,
    shutdown: CancellationToken,
) -> Result<(), ServeError> {
    const BATCH: usize = 1024;
    let mut ticker = tokio::time::interval(state.cfg.tick);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let random = state.rng.next_u64();
    replica.reseed(random);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = ticker.tick() => on_tick(&mut replica, &mut state),
            Some(input) = peers.recv() => on_peer(&mut replica, input),
            Some(cmd) = commands.recv() => on_command(&mut replica, &mut state, cmd),
        }
        // Group commit: everything already waiting joins this turn's Ready.
        for _ in 0..BATCH {
            match peers.try_recv() {
                Ok(input) => on_peer(&mut replica, input),
                Err(_) => break,
            }
        }
        for _ in 0..BATCH {
            match commands.try_recv() {
                Ok(cmd) => on_command(&mut replica, &mut state, cmd),
                Err(_) => break,
            }
        }
        let random = state.rng.next_u64();
        let me = replica.id();
        let incarnation = replica.incarnation();
        let mut host = ServerHost { state: &mut state, me, incarnation };
        tokio::task::block_in_place(|| replica.drive(random, &mut host))?;
        answer_reads(&replica, &mut state);
        publish_status(&replica, &state);
    }
    for (_, p) in std::mem::take(&mut state.pending) {
        if let Some(reply) = p.reply {
            let _ = reply.send(Err(Unavailable::Stopping));
        }
    }
    Ok(())
}

fn on_peer(replica: &mut Replica<DiskLog>, input: Input<Msg, ()>) {
    if let Input::Message { env, .. } = input
        && let Some(m) = env.msg.decode()
    {
        replica.step(m);
    }
}

fn on_command(replica: &mut Replica<DiskLog>, state: &mut LoopState, cmd: Command) {
    let now = Instant::now();
    match cmd {
        Command::Propose { op, reply } => {
            let request = state.next_request;
            state.next_request += 1;
            let proposal = Proposal { origin: replica.id(), incarnation: replica.incarnation(), request, op };
            replica.submit(&proposal);
            state
                .pending
                .insert(request, Pending { proposal, reply: Some(reply), first_sent: now, last_sent: now });
        }
        Command::Read { query, reply } => {
            let ctx = state.next_read;
            state.next_read += 1;
            replica.read_index(ctx.to_le_bytes().to_vec());
            state
                .reads
                .insert(ctx, PendingRead { query, reply, first_sent: now, last_sent: now, index: None });
        }
        Command::Local { query, reply } => {
            let _ = reply.send(query(replica.machine()));
        }
    }
}

/// A tick: the replica's clock, then requests to propose again or give up.
fn on_tick(replica: &mut Replica<DiskLog>, state: &mut LoopState) {
    replica.tick(state.started.elapsed().as_nanos() as Time);
    let now = Instant::now();
    let (retry, timeout) = (state.cfg.retry, state.cfg.request_timeout);
    state.pending.retain(|_, p| {
        if now.duration_since(p.first_sent) >= timeout {
            if let Some(reply) = p.reply.take() {
                let _ = reply.send(Err(Unavailable::Timeout(timeout)));
            }
            // Kept without a waiter while it may still commit, so that a late duplicate grant
            // is still recognised; forgotten after twice the timeout.
            return now.duration_since(p.first_sent) < 2 * timeout;
        }
        if now.duration_since(p.last_sent) >= retry {
            p.last_sent = now;
            replica.submit(&p.proposal);
        }
        true
    });
    let reads: Vec<u64> = state.reads.keys().copied().collect();
    for ctx in reads {
        let r = state.reads.get_mut(&ctx).expect("listed");
        if now.duration_since(r.first_sent) >= timeout {
            let r = state.reads.remove(&ctx).expect("listed");
            let _ = r.reply.send(Err(Unavailable::Timeout(timeout)));
        } else if r.index.is_none() && now.duration_since(r.last_sent) >= retry {
            r.last_sent = now;
            replica.read_index(ctx.to_le_bytes().to_vec());
        }
    }
}

/// Answers the reads whose confirmed index is applied.
fn answer_reads(replica: &Replica<DiskLog>, state: &mut LoopState) {
    let applied = replica.machine().last_applied();
    let ready: Vec<u64> =
        state.reads.iter().filter(|(_, r)| r.index.is_some_and(|i| i <= applied)).map(|(k, _)| *k).collect();
    for ctx in ready {
        let r = state.reads.remove(&ctx).expect("listed");
        let _ = r.reply.send(Ok((applied, (r.query)(replica.machine()))));
    }
}

fn publish_status(replica: &Replica<DiskLog>, state: &LoopState) {
    let role = match replica.role() {
        StateRole::Leader => "leader",
        StateRole::Follower => "follower",
        StateRole::Candidate => "candidate",
        StateRole::PreCandidate => "pre_candidate",
    };
    let mut s = state.status.lock().expect("status lock");
    s.leader = replica.leader().map(|p| p as u64 + 1);
    s.term = replica.term();
    s.role = role;
    s.applied = replica.machine().last_applied();
    s.commit = replica.commit();
    s.members = replica.voters().into_iter().map(|p| p as u64 + 1).collect();
}
