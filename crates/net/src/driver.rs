//! The driver loop: the one task that owns a node's algorithm state.
//!
//! Every input — a peer's message, a timer, an application request — arrives on one channel
//! and is handled to completion before the next, exactly as the simulator handles one event at
//! a time. After each handler the loop carries out the outbox in order: sends go to the peer's
//! bounded queue, timers are (re)armed on tokio's monotonic clock with a generation number so
//! that a cancelled or re-armed timer never fires stale, events are traced, published to
//! `/events` subscribers and folded into the node's view (leader, term, suspicions, lock).
//!
//! The driver keeps a Lamport clock and a vector clock for the trace: every step (start,
//! delivery, timer, request, send) ticks them, a send carries them in its envelope and a
//! delivery merges them.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::future::Future;
use std::io::Write;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ringleader_algorithms::{Algorithm, ConfigError, Family, Params, Setup, Visitor};
use ringleader_core::trace::{RecordKind, TraceRecord};
use ringleader_core::{Action, Context, Event, Message, NodeId, Outbox, Request, Time, Topology, Uid};
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::metrics::Counters;
use crate::shared::{Input, NodeEvent, PeerLink, Shared, View};
use crate::wire::Envelope;
use crate::{NetError, NodeConfig, NodeHandle, transport};

/// The OS wall clock, ns since the Unix epoch.
pub fn wall_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0)
}

/// A small splitmix64 stream for `Context.random`, seeded from the wall clock and the id.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// Starts a node running algorithm `A` (see [`crate::start`]).
pub struct StartVisitor {
    /// The node's configuration.
    pub cfg: NodeConfig,
}

/// The future [`StartVisitor`] returns.
pub type StartFuture = Pin<Box<dyn Future<Output = Result<NodeHandle, NetError>> + Send>>;

impl Visitor for StartVisitor {
    type Output = StartFuture;
    fn visit<A: Algorithm>(self) -> StartFuture {
        let cfg = self.cfg;
        let prepared = prepare::<A>(&cfg);
        Box::pin(async move {
            let (process, topology, members) = prepared?;
            launch::<A>(cfg, process, topology, members).await
        })
    }
}

/// The parameters of the failure detector an election watches its coordinator with (see
/// `ringleader_algorithms::election::watch`).
const DETECTION_KEYS: [&str; 6] =
    ["heartbeat", "suspect_after", "election_timeout", "phi", "window", "min_std"];

/// The parameter sets to try, in order, for an algorithm of `family` given `params`, each with
/// the keys the driver added (which the algorithm must read for the set to be taken), and the
/// index of the set whose error is reported when none configures.
///
/// On a real node an election watches its coordinator by default: with no `heartbeat` and no
/// `detector` given, `detector=heartbeat heartbeat=`[`crate::DEFAULT_HEARTBEAT`] is added for
/// the elections that read them. `detector=none` switches detection off (`heartbeat=0`) and
/// cannot be combined with a detector's settings.
type Candidates = (Vec<(BTreeMap<String, String>, Vec<&'static str>)>, usize);

fn detection_candidates(family: Family, params: &BTreeMap<String, String>) -> Result<Candidates, NetError> {
    let plain = (params.clone(), vec![]);
    if family != Family::Election {
        return Ok((vec![plain], 0));
    }
    let with = |drop: &[&str], add: &[(&'static str, &str)]| {
        let mut m = params.clone();
        for k in drop {
            m.remove(*k);
        }
        for (k, v) in add {
            m.insert(k.to_string(), v.to_string());
        }
        (m, add.iter().map(|(k, _)| *k).collect::<Vec<_>>())
    };
    match params.get("detector").map(|d| d.trim()) {
        Some("none") => {
            let off = |k: &&str| *k == "heartbeat" && params[*k].trim().trim_end_matches("ms").trim() == "0";
            if let Some(k) = DETECTION_KEYS.iter().find(|k| params.contains_key(**k) && !off(k)) {
                return Err(NetError::Config(format!(
                    "parameter `{k}` contradicts detector=none (no failure detector runs); drop one of them"
                )));
            }
            // The algorithm's own `none` if it has one, else heartbeat=0; an election without a
            // detector accepts `none` as what it already is.
            let mut plain_none = params.clone();
            plain_none.remove("detector");
            Ok((vec![plain, with(&["detector"], &[("heartbeat", "0")]), (plain_none, vec![])], 1))
        }
        Some(_) if !params.contains_key("heartbeat") => {
            Ok((vec![with(&[], &[("heartbeat", crate::DEFAULT_HEARTBEAT)]), plain], 0))
        }
        None if !params.contains_key("heartbeat") => Ok((
            vec![with(&[], &[("detector", "heartbeat"), ("heartbeat", crate::DEFAULT_HEARTBEAT)]), plain],
            0,
        )),
        _ => Ok((vec![plain], 0)),
    }
}

/// Configures the algorithm (synchronously: parameters are not `Sync`) and builds the node's
/// initial state.
fn prepare<A: Algorithm>(cfg: &NodeConfig) -> Result<(A, Topology, Vec<Uid>), NetError> {
    use rand_xoshiro::rand_core::SeedableRng;
    let members = cfg.members();
    let n = members.len() as u32;
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(0);
    let topology =
        A::TOPOLOGY.default_topology(n, None, &mut rng).map_err(|e| NetError::Config(e.to_string()))?;
    let (candidates, report) = detection_candidates(A::FAMILY, &cfg.params)?;
    let mut errors = Vec::new();
    for (values, added) in candidates {
        let params = Params::new(values);
        let setup =
            Setup { uids: &members, topology: &topology, params: &params, max_delay: cfg.max_delay, seed: 1 };
        let config = match ringleader_algorithms::configure::<A>(&setup) {
            Ok(c) => c,
            Err(ConfigError::Unknown { keys, .. }) if added.iter().any(|k| keys.iter().any(|u| u == k)) => {
                // This algorithm does not read what the driver added: try the next set.
                errors.push(NetError::Config(format!("{} reads no failure-detector parameters", A::NAME)));
                continue;
            }
            Err(e @ ConfigError::Unknown { .. }) => return Err(e.into()),
            Err(e) => {
                errors.push(e.into());
                continue;
            }
        };
        let me = members.iter().position(|&u| u == cfg.id).expect("own id is a member") as NodeId;
        return Ok((A::new(me, &config, &setup), topology, members));
    }
    let n = errors.len();
    Err(errors.into_iter().nth(report.min(n - 1)).expect("at least one candidate"))
}

async fn launch<A: Algorithm>(
    cfg: NodeConfig,
    process: A,
    topology: Topology,
    members: Vec<Uid>,
) -> Result<NodeHandle, NetError> {
    let me = members.iter().position(|&u| u == cfg.id).expect("own id is a member") as NodeId;
    let listener = tokio::net::TcpListener::bind(cfg.listen)
        .await
        .map_err(|source| NetError::Io { what: format!("listen on {}", cfg.listen), source })?;
    let listen =
        listener.local_addr().map_err(|source| NetError::Io { what: "listen address".into(), source })?;
    let api_listener = match cfg.api {
        Some(addr) => Some(
            tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|source| NetError::Io { what: format!("HTTP API on {addr}"), source })?,
        ),
        None => None,
    };
    let trace = match &cfg.trace {
        Some(path) => Some(std::io::BufWriter::new(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|source| NetError::Io { what: format!("trace {}", path.display()), source })?,
        )),
        None => None,
    };

    let (input_tx, input_rx) = mpsc::channel::<Input<A::Msg, A::Timer>>(4096);
    let (api_tx, mut api_rx) = mpsc::channel::<Input<Infallible, Infallible>>(256);
    let mut writers = Vec::new();
    let peers: Vec<Option<PeerLink>> = members
        .iter()
        .enumerate()
        .map(|(pos, &id)| {
            if id == cfg.id {
                return None;
            }
            let addr = cfg.peers.iter().find(|p| p.0 == id).expect("peer is a member").1.clone();
            let (tx, rx) = mpsc::channel(cfg.queue_capacity);
            writers.push((pos, rx));
            Some(PeerLink { id, position: pos as NodeId, addr, connected: AtomicBool::new(false), queue: tx })
        })
        .collect();
    let (events, _) = broadcast::channel(1024);
    let shared = Arc::new(Shared {
        id: cfg.id,
        position: me,
        members: members.clone(),
        algorithm: A::NAME,
        family: A::FAMILY,
        counters: Counters::default(),
        view: Mutex::new(View::default()),
        events,
        peers,
        api_tx,
    });
    let shutdown = CancellationToken::new();
    let stopped = CancellationToken::new();

    // Outbound writers and the inbound listener.
    for (pos, rx) in writers {
        tokio::spawn(transport::writer(shared.clone(), pos, rx, cfg.clone(), shutdown.clone()));
    }
    tokio::spawn(transport::listen::<A::Msg, A::Timer>(
        listener,
        shared.clone(),
        input_tx.clone(),
        cfg.clone(),
        shutdown.clone(),
    ));
    // API requests are forwarded into the typed input channel.
    {
        let input_tx = input_tx.clone();
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            loop {
                let item = tokio::select! {
                    _ = shutdown.cancelled() => return,
                    item = api_rx.recv() => item,
                };
                let Some(item) = item else { return };
                if input_tx.send(item.widen()).await.is_err() {
                    return;
                }
            }
        });
    }
    if A::FAMILY == Family::Election && cfg.elect_at_start {
        let shared = shared.clone();
        let input_tx = input_tx.clone();
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            let settle = tokio::time::Instant::now() + crate::ELECTION_SETTLE;
            let connected =
                |s: &Shared| s.peers.iter().flatten().all(|p| p.connected.load(Ordering::Relaxed));
            while !connected(&shared) && tokio::time::Instant::now() < settle {
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    _ = tokio::time::sleep(Duration::from_millis(5)) => {}
                }
            }
            // A node that joins a running cluster hears its coordinator's heartbeat in this
            // while and does not disturb it with an election.
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(crate::ELECTION_QUIET) => {}
            }
            let _ = input_tx.send(Input::ElectAtStart).await;
        });
    }
    let api = match api_listener {
        Some(l) => {
            let addr = l.local_addr().ok();
            tokio::spawn(crate::api::serve(l, shared.clone(), shutdown.clone()));
            addr
        }
        None => None,
    };

    let driver = Driver::<A> {
        process,
        topology,
        members,
        me,
        shared: shared.clone(),
        input_tx,
        timers: BTreeMap::new(),
        generation: 0,
        clock_offset: 0,
        rng: SplitMix(wall_ns() ^ cfg.id.rotate_left(32)),
        lamport: 0,
        vector: vec![0; shared.members.len()],
        step: 0,
        next_msg_id: 0,
        trace,
        acquire: None,
        release_pending: false,
        out: Outbox::new(),
    };
    tokio::spawn(driver.run(input_rx, shutdown.clone(), stopped.clone()));
    Ok(NodeHandle { listen, api, shared, shutdown, stopped })
}

struct Driver<A: Algorithm> {
    process: A,
    topology: Topology,
    members: Vec<Uid>,
    me: NodeId,
    shared: Arc<Shared>,
    input_tx: mpsc::Sender<Input<A::Msg, A::Timer>>,
    timers: BTreeMap<A::Timer, u64>,
    generation: u64,
    clock_offset: i64,
    rng: SplitMix,
    lamport: u64,
    vector: Vec<u64>,
    step: u64,
    next_msg_id: u64,
    trace: Option<std::io::BufWriter<std::fs::File>>,
    acquire: Option<oneshot::Sender<Result<u64, String>>>,
    release_pending: bool,
    out: Outbox<A::Msg, A::Timer>,
}

impl<A: Algorithm> Driver<A> {
    async fn run(
        mut self,
        mut rx: mpsc::Receiver<Input<A::Msg, A::Timer>>,
        shutdown: CancellationToken,
        stopped: CancellationToken,
    ) {
        let mut start = self.record(RecordKind::Start);
        start.detail = Some(format!(
            "algorithm={} members={}",
            A::NAME,
            self.members.iter().map(|u| u.to_string()).collect::<Vec<_>>().join(",")
        ));
        self.tick();
        start.lamport = Some(self.lamport);
        start.vector = Some(self.vector.clone());
        self.write(&start);
        self.with_cx(|p, cx, out| p.on_start(cx, out));
        self.flush();
        loop {
            let input = tokio::select! {
                _ = shutdown.cancelled() => break,
                input = rx.recv() => input,
            };
            let Some(input) = input else { break };
            self.handle(input);
            // Handle whatever else is already queued before flushing the trace.
            while let Ok(input) = rx.try_recv() {
                self.handle(input);
            }
            self.flush();
        }
        self.flush();
        stopped.cancel();
    }

    fn handle(&mut self, input: Input<A::Msg, A::Timer>) {
        match input {
            Input::Message { from, env } => {
                Counters::bump(&self.shared.counters.messages_received);
                self.lamport = self.lamport.max(env.lamport);
                for (mine, theirs) in self.vector.iter_mut().zip(&env.vector) {
                    *mine = (*mine).max(*theirs);
                }
                self.tick();
                let mut r = self.record(RecordKind::Deliver);
                r.peer = Some(from);
                r.msg_id = Some(env.msg_id);
                r.msg_kind = Some(env.msg.kind().to_string());
                r.msg = serde_json::to_value(&env.msg).ok();
                self.write(&r);
                self.with_cx(|p, cx, out| p.on_message(cx, from, env.msg, out));
            }
            Input::Timer { timer, generation } => {
                if self.timers.get(&timer) != Some(&generation) {
                    return;
                }
                self.timers.remove(&timer);
                Counters::bump(&self.shared.counters.timers_fired);
                self.tick();
                let mut r = self.record(RecordKind::Timer);
                r.timer = Some(format!("{timer:?}"));
                self.write(&r);
                self.with_cx(|p, cx, out| p.on_timer(cx, timer, out));
            }
            Input::Request(req) => self.request(req),
            Input::ElectAtStart => {
                let electing = self.shared.view.lock().expect("view lock").electing;
                if self.process.leader().is_none() && !electing {
                    self.request(Request::StartElection);
                }
            }
            Input::Acquire(reply) => {
                let view = self.shared.view.lock().expect("view lock").clone();
                if let Some(f) = view.holding {
                    let _ = reply.send(Err(format!(
                        "this node already holds the lock (fencing {f}); DELETE /lock first"
                    )));
                } else if view.waiting && self.acquire.as_ref().is_some_and(|w| !w.is_closed()) {
                    let _ =
                        reply.send(Err("another client of this node is already waiting for the lock".into()));
                } else if view.waiting {
                    // The previous client gave up; the algorithm still waits: hand the grant to this one.
                    self.acquire = Some(reply);
                } else {
                    self.acquire = Some(reply);
                    self.shared.view.lock().expect("view lock").waiting = true;
                    self.request(Request::Acquire);
                }
            }
            Input::Release(reply) => {
                let holding = self.shared.view.lock().expect("view lock").holding;
                match holding {
                    Some(f) => {
                        self.request(Request::Release);
                        self.shared.view.lock().expect("view lock").holding = None;
                        let _ = reply.send(Ok(f));
                    }
                    None => {
                        let _ = reply.send(Err("this node does not hold the lock".into()));
                    }
                }
            }
        }
    }

    fn request(&mut self, req: Request) {
        Counters::bump(&self.shared.counters.requests);
        self.tick();
        let mut r = self.record(RecordKind::Request);
        r.request = Some(req.clone());
        self.write(&r);
        self.with_cx(|p, cx, out| p.on_request(cx, req, out));
    }

    fn tick(&mut self) {
        self.step += 1;
        self.lamport += 1;
        self.vector[self.me as usize] += 1;
    }

    fn now(&self) -> Time {
        (wall_ns() as i64).saturating_add(self.clock_offset).max(0) as Time
    }

    /// Runs one handler with a fresh context, then carries out its outbox.
    fn with_cx(&mut self, f: impl FnOnce(&mut A, &Context, &mut Outbox<A::Msg, A::Timer>)) {
        let cx = Context {
            me: self.me,
            uids: &self.members,
            topology: &self.topology,
            now: self.now(),
            random: self.rng.next(),
        };
        f(&mut self.process, &cx, &mut self.out);
        let actions: Vec<_> = self.out.drain().collect();
        for action in actions {
            self.act(action);
        }
        if std::mem::take(&mut self.release_pending) {
            self.shared.view.lock().expect("view lock").holding = None;
            self.request(Request::Release);
        }
        let leader = self.process.leader();
        if leader.is_some() {
            let mut view = self.shared.view.lock().expect("view lock");
            if view.leader != leader {
                view.leader = leader;
                Counters::bump(&self.shared.counters.leader_changes);
            }
        }
    }

    fn act(&mut self, action: Action<A::Msg, A::Timer>) {
        match action {
            Action::Send { to, msg } => self.send(to, msg),
            Action::SetTimer { timer, after } => {
                self.generation += 1;
                let generation = self.generation;
                self.timers.insert(timer.clone(), generation);
                let tx = self.input_tx.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_nanos(after)).await;
                    let _ = tx.send(Input::Timer { timer, generation }).await;
                });
            }
            Action::CancelTimer(timer) => {
                self.timers.remove(&timer);
            }
            Action::Emit(event) => self.emit(event),
            Action::AdjustClock(delta) => {
                // Applied as an offset on the wall clock the algorithm reads.
                self.clock_offset = self.clock_offset.saturating_add(delta);
            }
        }
    }

    fn send(&mut self, to: NodeId, msg: A::Msg) {
        self.tick();
        self.next_msg_id += 1;
        let msg_id = (self.shared.id << 40) | self.next_msg_id;
        let mut r = self.record(RecordKind::Send);
        r.peer = Some(to);
        r.msg_id = Some(msg_id);
        r.msg_kind = Some(msg.kind().to_string());
        r.msg = serde_json::to_value(&msg).ok();
        self.write(&r);
        if to == self.me {
            // A message to oneself is delivered through the input queue like any other.
            let env = Envelope { msg_id, lamport: self.lamport, vector: self.vector.clone(), msg };
            if self.input_tx.try_send(Input::Message { from: to, env }).is_err() {
                self.drop_record(to, msg_id, "input queue full");
            }
            return;
        }
        let Some(Some(link)) = self.shared.peers.get(to as usize) else {
            self.drop_record(to, msg_id, "no such position");
            return;
        };
        let env = Envelope { msg_id, lamport: self.lamport, vector: self.vector.clone(), msg };
        if link.queue.try_send(crate::wire::encode(&env)).is_err() {
            Counters::bump(&self.shared.counters.messages_dropped_queue_full);
            self.drop_record(to, msg_id, "outgoing queue full");
        }
    }

    fn drop_record(&mut self, to: NodeId, msg_id: u64, why: &str) {
        let mut r = self.record(RecordKind::Drop);
        r.peer = Some(to);
        r.msg_id = Some(msg_id);
        r.detail = Some(why.into());
        self.write(&r);
    }

    fn emit(&mut self, event: Event) {
        Counters::bump(&self.shared.counters.events);
        let mut r = self.record(RecordKind::Emit);
        r.event = Some(event.clone());
        self.write(&r);
        let mut release_now = false;
        {
            let mut view = self.shared.view.lock().expect("view lock");
            match &event {
                Event::ElectionStarted => view.electing = true,
                Event::Leader { leader, term } => {
                    if view.leader != Some(*leader) {
                        Counters::bump(&self.shared.counters.leader_changes);
                    }
                    view.leader = Some(*leader);
                    view.term = Some(*term);
                    view.electing = false;
                }
                Event::LeaderLost => view.leader = None,
                Event::Suspect { node } => {
                    view.suspected.insert(*node);
                }
                Event::Trust { node } => {
                    view.suspected.remove(node);
                }
                Event::Entered { fencing } => {
                    Counters::bump(&self.shared.counters.lock_grants);
                    view.waiting = false;
                    view.holding = Some(*fencing);
                    let delivered = self.acquire.take().is_some_and(|w| w.send(Ok(*fencing)).is_ok());
                    if !delivered {
                        // Nobody waits for this grant any more (the client timed out): give it back.
                        release_now = true;
                    }
                }
                Event::Exited => {
                    Counters::bump(&self.shared.counters.lock_releases);
                    view.holding = None;
                }
                _ => {}
            }
        }
        let _ = self.shared.events.send(NodeEvent { id: self.shared.id, time_ns: wall_ns(), event });
        if release_now {
            self.release_pending = true;
        }
    }

    fn record(&self, kind: RecordKind) -> TraceRecord {
        let mut r = TraceRecord::new(self.step, wall_ns(), kind);
        r.node = Some(self.me);
        r.uid = Some(self.shared.id);
        r.lamport = Some(self.lamport);
        r.vector = Some(self.vector.clone());
        r
    }

    fn write(&mut self, r: &TraceRecord) {
        if let Some(w) = self.trace.as_mut() {
            let ok = serde_json::to_writer(&mut *w, r).is_ok() && w.write_all(b"\n").is_ok();
            if !ok {
                eprintln!("[id {}] trace write failed; tracing stops", self.shared.id);
                self.trace = None;
            }
        }
    }

    fn flush(&mut self) {
        if let Some(w) = self.trace.as_mut() {
            let _ = w.flush();
        }
    }
}
