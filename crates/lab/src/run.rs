//! The bench's loop: the network, the faults and the clients, one action at a time.
//!
//! Everything the bench will do is an `Action` in one queue ordered by (time, sequence
//! number): a delivery, a client operation, a node's timer, a fault. In lockstep the loop takes
//! the first action, moves the virtual clock to its time, carries it out and — when it handed
//! a node an input — waits until that node is done before it takes the next one (see
//! `Lab::settle`). In real time the clock is the wall clock: the loop carries out every
//! action that is due and otherwise waits for the nodes' output until the next one is.
//!
//! What the nodes write is judged as it arrives: a message to another node is counted, traced
//! and scheduled through the network model; an answer to a client becomes the event the
//! family's checker judges (`acquire_ok` is `Entered`, the client's `release` is `Exited`, a
//! `leader` answer or report is `Leader`).

use std::collections::BTreeMap;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use ringleader_algorithms::LeaderRule;
use ringleader_core::trace::{RecordKind, TraceRecord};
use ringleader_core::{Event, NodeId, Request, Time, Uid};
use ringleader_judge::checkers::{self, Checker, Moment, NodeStatus, Property, Violations, World};
use ringleader_judge::trace::Tracer;
use ringleader_sim::network::{Cut, Network};
use serde_json::{Value, json};

use crate::LabError;
use crate::config::{LabConfig, LabFamily};
use crate::deadlock::{LockTable, Phase, ProbeBounds};
use crate::nodes::{Nodes, Output};
use crate::protocol::{self, LAB, Message, client_name, node_name};
use crate::report::{Cost, LabReport, PropertyVerdict, Verdict};
use crate::textbook::Textbook;

/// How long a node may take to answer `init`.
const INIT_TIMEOUT: Duration = Duration::from_secs(10);
/// In lockstep, how long a node that writes the end-of-step marker may take to write it.
const STEP_TIMEOUT: Duration = Duration::from_secs(10);
/// At most this many notes (error answers, unexpected replies) are kept.
const MAX_NOTES: usize = 20;

/// Something the bench will do.
#[derive(Clone, Debug)]
enum Action {
    /// Hand `msg` (sent by `from`) to `to`.
    Deliver { from: usize, to: usize, msg: Message, trace_id: u64 },
    /// Mutex: the client of `node` asks for the section.
    Acquire(usize),
    /// Mutex: the client of `node` leaves the section.
    Release(usize),
    /// Election: `node` is told to start an election.
    StartElection(usize),
    /// Election: `node` is asked whom it believes is the coordinator.
    AskLeader(usize),
    /// Clock: `node` is asked for a local event.
    Local(usize),
    /// Clock: `node` is asked to send a message to the second node.
    SendTo(usize, usize),
    /// A `lab_timer` of `node` fires.
    Timer { node: usize, tag: Value },
    /// The process of `node` is killed.
    Crash(usize),
    /// The process of `node` starts again, in the same directory.
    Recover(usize),
    /// `node`'s inputs are held until `until`.
    Pause { node: usize, until: Time },
    /// `node` takes inputs again.
    Resume(usize),
    /// Partition `index` starts (true) or heals (false).
    Cut(usize, bool),
    /// Deadlock: `node` begins a transaction (if its epoch is still `epoch`).
    Begin { node: usize, epoch: u64 },
    /// Deadlock: `node`'s transaction asks for what others hold (`want`).
    Ask { node: usize, epoch: u64 },
    /// Deadlock: `node`'s running transaction commits and grants its waiters.
    Commit { node: usize, epoch: u64 },
    /// Deadlock: `node`'s client gives up waiting (`abort`).
    GiveUp { node: usize, epoch: u64 },
    /// Deadlock: `node` is told that `holder` granted what it waited for (`grant`).
    Grant { node: usize, holder: usize },
}

/// What the client of a mutex node is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Client {
    Idle,
    Acquiring(u64),
    Holding,
    Releasing(u64),
}

/// Runs `cfg` and judges it.
pub fn run(cfg: &LabConfig) -> Result<LabReport, LabError> {
    cfg.validate()?;
    let mut lab = Lab::new(cfg)?;
    // Every process starts before any is initialised: their start-up times overlap.
    for node in 0..lab.n {
        lab.nodes.start(node)?;
    }
    for node in 0..lab.n {
        lab.init(node)?;
    }
    lab.began = Instant::now();
    lab.plan();
    let cut_off = lab.main_loop()?;
    lab.finish(cut_off)
}

struct Lab<'a> {
    cfg: &'a LabConfig,
    n: usize,
    uids: Vec<Uid>,
    status: Vec<NodeStatus>,
    paused_until: Vec<Time>,
    nodes: Nodes,
    rx: Receiver<Output>,
    queue: BTreeMap<(Time, u64), Action>,
    seq: u64,
    now: Time,
    began: Instant,
    network: Network,
    rng: Xoshiro256PlusPlus,
    tracer: Tracer,
    step: u64,
    checker: Box<dyn Checker + Send>,
    violations: Violations,
    rule: LeaderRule,
    textbook: Option<Textbook>,
    client: Vec<Client>,
    remaining: Vec<u32>,
    asked: Vec<Option<u64>>,
    belief: Vec<Option<(Uid, u64)>>,
    awaiting_init: Vec<Option<u64>>,
    /// Clock: the pending `local`, `send_to` or `read` of each node.
    clock_op: Vec<Option<u64>>,
    /// Clock: the last message each node sent (its trace id), and the message each node is
    /// being read after.
    last_sent: Vec<Option<u64>>,
    receiving: Vec<Option<u64>>,
    next_msg_id: u64,
    fencing_seen: bool,
    synthetic_fencing: u64,
    messages: u64,
    by_kind: BTreeMap<String, u64>,
    dropped: u64,
    next_trace_id: u64,
    marker: Vec<bool>,
    done: Vec<bool>,
    /// Lines written to each node's current process that it has not marked with `lab_done` yet.
    unmarked: Vec<u64>,
    notes: Vec<String>,
    process_died: bool,
    asked_at_end: bool,
    /// Deadlock: the application's lock table.
    table: LockTable,
    /// Deadlock: how long a node that released stays out of transactions, at least (more than
    /// twice the latency bound).
    gap: Time,
    /// Deadlock: Chandy-Misra-Haas's probe bounds over the run's wait-for history.
    probes: ProbeBounds,
}

impl<'a> Lab<'a> {
    fn new(cfg: &'a LabConfig) -> Result<Lab<'a>, LabError> {
        let n = cfg.nodes as usize;
        let (nodes, rx) = Nodes::new(&cfg.command, n, cfg.dir.as_deref())?;
        let pos = |u: Uid| (u - 1) as NodeId;
        let cuts = cfg
            .partitions
            .iter()
            .map(|p| Cut {
                left: p.left.iter().map(|&u| pos(u)).collect(),
                right: p.right.iter().map(|&u| pos(u)).collect(),
                one_way: p.one_way,
                active: false,
            })
            .collect();
        let tracer =
            Tracer::new(n, cfg.trace.as_deref(), cfg.keep_records).map_err(|source| LabError::Io {
                what: format!(
                    "creating the trace {}",
                    cfg.trace.as_deref().unwrap_or(std::path::Path::new("")).display()
                ),
                source,
            })?;
        let textbook = cfg
            .algo_like
            .as_deref()
            .and_then(|a| Textbook::of(a, cfg.family, n as u64, cfg.initiators.len() as u64));
        let rule = textbook.as_ref().map_or(LeaderRule::Max, |t| t.rule);
        Ok(Lab {
            cfg,
            n,
            uids: (1..=n as Uid).collect(),
            status: vec![NodeStatus::Up; n],
            paused_until: vec![0; n],
            nodes,
            rx,
            queue: BTreeMap::new(),
            seq: 0,
            now: 0,
            began: Instant::now(),
            network: Network::new(&cfg.latency, cfg.loss, cfg.dup, false, cuts),
            rng: Xoshiro256PlusPlus::seed_from_u64(cfg.seed),
            tracer,
            step: 0,
            checker: checkers::for_family(cfg.family.family(), n),
            violations: Violations::default(),
            rule,
            textbook,
            client: vec![Client::Idle; n],
            remaining: vec![0; n],
            asked: vec![None; n],
            belief: vec![None; n],
            awaiting_init: vec![None; n],
            clock_op: vec![None; n],
            last_sent: vec![None; n],
            receiving: vec![None; n],
            next_msg_id: 0,
            fencing_seen: false,
            synthetic_fencing: 0,
            messages: 0,
            by_kind: BTreeMap::new(),
            dropped: 0,
            next_trace_id: 0,
            marker: vec![false; n],
            done: vec![false; n],
            unmarked: vec![0; n],
            notes: Vec::new(),
            process_died: false,
            asked_at_end: false,
            table: LockTable::new(n, cfg.entries),
            gap: 2 * cfg.latency.bound() + 1,
            probes: ProbeBounds::new(n),
        })
    }

    fn name(&self, node: usize) -> String {
        node_name(self.uids[node])
    }

    fn at(&mut self, time: Time, action: Action) {
        self.seq += 1;
        self.queue.insert((time, self.seq), action);
    }

    fn msg_id(&mut self) -> u64 {
        self.next_msg_id += 1;
        self.next_msg_id
    }

    fn note(&mut self, text: String) {
        if self.notes.len() < MAX_NOTES {
            self.notes.push(text);
        }
    }

    fn trace(
        &mut self,
        kind: RecordKind,
        node: Option<usize>,
        msg_id: Option<u64>,
        fill: impl FnOnce(&mut TraceRecord),
    ) {
        let (step, now) = (self.step, self.now);
        let uid = node.map(|n| self.uids[n]);
        let node = node.map(|n| n as NodeId);
        self.tracer.record_with(kind, node, msg_id, || {
            let mut r = TraceRecord::new(step, now, kind);
            r.node = node;
            r.uid = uid;
            r.msg_id = msg_id;
            fill(&mut r);
            r
        });
    }

    /// Calls the checker with the world as it is now, and traces any violation it found.
    fn judge(&mut self, call: impl FnOnce(&mut dyn Checker, &World, Moment, &mut Violations)) {
        let before = self.violations.len();
        let world = World { uids: &self.uids, status: &self.status, rule: self.rule };
        let at = Moment { time: self.now, step: self.step };
        call(self.checker.as_mut(), &world, at, &mut self.violations);
        let found: Vec<_> = self.violations.list()[before..].to_vec();
        for v in found {
            self.trace(RecordKind::Violation, None, None, |r| {
                r.property = Some(v.property.name().into());
                r.detail = Some(v.detail.clone());
            });
        }
    }

    fn emit(&mut self, node: usize, event: Event) {
        let e = event.clone();
        self.trace(RecordKind::Emit, Some(node), None, |r| r.event = Some(e));
        self.judge(|c, w, at, v| c.on_event(w, node as NodeId, &event, at, v));
    }

    fn request(&mut self, node: usize, request: Request) {
        let q = request.clone();
        self.trace(RecordKind::Request, Some(node), None, |r| r.request = Some(q));
        self.judge(|c, w, at, v| c.on_request(w, node as NodeId, &request, at, v));
    }

    /// Writes `body` to `node` from `src`, after clearing its end-of-step flag.
    fn write(&mut self, node: usize, src: &str, body: Value) {
        let line = json!({"src": src, "dest": self.name(node), "body": body}).to_string();
        self.done[node] = false;
        self.unmarked[node] += 1;
        self.nodes.send(node, &line);
    }

    /// Sends `init` to `node`'s new process and waits for its `init_ok`.
    fn init(&mut self, node: usize) -> Result<(), LabError> {
        let id = self.msg_id();
        let ids: Vec<String> = self.uids.iter().map(|&u| node_name(u)).collect();
        let name = self.name(node);
        self.awaiting_init[node] = Some(id);
        self.write(node, "c0", json!({"type": "init", "msg_id": id, "node_id": name, "node_ids": ids}));
        let deadline = Instant::now() + INIT_TIMEOUT;
        while self.awaiting_init[node].is_some() && self.status[node] != NodeStatus::Crashed {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(out) => self.pump(out)?,
                Err(_) => {
                    return Err(LabError::NoInit {
                        node: name,
                        seconds: INIT_TIMEOUT.as_secs(),
                        stderr: self
                            .nodes
                            .last_stderr(node)
                            .map(|l| format!("; its stderr: {l}"))
                            .unwrap_or_default(),
                    });
                }
            }
        }
        if self.awaiting_init[node].is_some() {
            return Err(LabError::NoInit {
                node: name,
                seconds: INIT_TIMEOUT.as_secs(),
                stderr: self.nodes.last_stderr(node).map(|l| format!("; it exited: {l}")).unwrap_or_default(),
            });
        }
        self.trace(RecordKind::Start, Some(node), None, |_| {});
        self.settle(node)
    }

    /// Queues the faults and the clients' first operations.
    fn plan(&mut self) {
        let cfg = self.cfg;
        let pos = |u: Uid| (u - 1) as usize;
        for (i, p) in cfg.partitions.iter().enumerate() {
            self.at(p.from, Action::Cut(i, true));
            self.at(p.to, Action::Cut(i, false));
        }
        for p in &cfg.pauses {
            self.at(p.from, Action::Pause { node: pos(p.uid), until: p.to });
            self.at(p.to, Action::Resume(pos(p.uid)));
        }
        for a in &cfg.crashes {
            self.at(a.time, Action::Crash(pos(a.uid)));
        }
        for a in &cfg.recoveries {
            self.at(a.time, Action::Recover(pos(a.uid)));
        }
        match cfg.family {
            LabFamily::Mutex => {
                for (k, u) in cfg.requester_uids().into_iter().enumerate() {
                    let node = pos(u);
                    self.remaining[node] = cfg.entries;
                    if cfg.entries > 0 {
                        self.at(k as Time * cfg.think, Action::Acquire(node));
                    }
                }
            }
            LabFamily::Clock => {
                use rand::RngExt;
                // Round i: node k acts at i·think + k·think/N; a coin (the seed's) chooses a
                // local event or a send to another node, drawn uniformly.
                let n = self.n as Time;
                for i in 0..Time::from(cfg.events) {
                    for node in 0..self.n {
                        let t = i * cfg.think + node as Time * cfg.think / n;
                        if self.n > 1 && self.rng.random_bool(0.5) {
                            let mut to = self.rng.random_range(0..self.n - 1);
                            if to >= node {
                                to += 1;
                            }
                            self.at(t, Action::SendTo(node, to));
                        } else {
                            self.at(t, Action::Local(node));
                        }
                    }
                }
            }
            LabFamily::Election => {
                for &u in &cfg.initiators {
                    self.at(cfg.start, Action::StartElection(pos(u)));
                }
            }
            LabFamily::Deadlock => {
                let n = self.n as Time;
                for node in 0..self.n {
                    self.at(node as Time * cfg.think / n, Action::Begin { node, epoch: 0 });
                }
            }
        }
    }

    /// Carries out actions until nothing is left (false) or the time limit (true: cut off).
    fn main_loop(&mut self) -> Result<bool, LabError> {
        loop {
            if self.messages >= self.cfg.max_messages {
                self.notes.push(format!(
                    "cut off after {} messages between the nodes (--max-messages {}) at {} ms",
                    self.messages,
                    self.cfg.max_messages,
                    self.now as f64 / 1e6
                ));
                return Ok(true);
            }
            if self.cfg.lockstep {
                let Some((&(t, _), _)) = self.queue.first_key_value() else {
                    if self.ask_at_end() {
                        continue;
                    }
                    return Ok(false);
                };
                if t > self.cfg.duration {
                    self.now = self.cfg.duration;
                    return Ok(true);
                }
                let (_, action) = self.queue.pop_first().expect("a first action");
                self.now = self.now.max(t);
                self.step += 1;
                self.act(action)?;
            } else {
                self.now = self.began.elapsed().as_nanos() as Time;
                if self.now > self.cfg.duration {
                    return Ok(true);
                }
                let next = self.queue.first_key_value().map(|(&(t, _), _)| t);
                if let Some(t) = next.filter(|&t| t <= self.now) {
                    let _ = t;
                    let (_, action) = self.queue.pop_first().expect("a first action");
                    self.step += 1;
                    self.act(action)?;
                    continue;
                }
                let wait =
                    next.map_or(self.cfg.quiet, |t| Duration::from_nanos(t - self.now).min(self.cfg.quiet));
                match self.rx.recv_timeout(wait) {
                    Ok(out) => self.pump(out)?,
                    Err(RecvTimeoutError::Timeout) => {
                        // Silence is not the end while a node that marks its steps has not
                        // marked the last line it was given: it is still working (or was
                        // descheduled), and ending now would judge a run that is not over. It
                        // ends when it marks the line, or the run reaches --duration (cut off).
                        if next.is_none() && !self.still_working() && !self.ask_at_end() {
                            return Ok(false);
                        }
                    }
                    Err(RecvTimeoutError::Disconnected) => return Ok(false),
                }
            }
        }
    }

    /// Whether a live node that writes `lab_done` has lines it has not marked yet (one mark per
    /// line, as the protocol asks; a node that never writes one is judged by silence alone).
    fn still_working(&self) -> bool {
        (0..self.status.len())
            .any(|i| self.status[i] != NodeStatus::Crashed && self.marker[i] && self.unmarked[i] > 0)
    }

    /// Elections: once everything is quiet, every live node is asked `leader?` (once).
    fn ask_at_end(&mut self) -> bool {
        if self.cfg.family != LabFamily::Election || self.asked_at_end {
            return false;
        }
        self.asked_at_end = true;
        for node in 0..self.n {
            if self.status[node] != NodeStatus::Crashed {
                self.at(self.now, Action::AskLeader(node));
            }
        }
        true
    }

    /// In lockstep, waits until `node` is done with its input: it wrote `lab_done` (once a
    /// node has written one, the bench waits for it at every step, up to [`STEP_TIMEOUT`]),
    /// or it stayed silent for the quiet period. Other nodes' output meanwhile is taken too.
    fn settle(&mut self, node: usize) -> Result<(), LabError> {
        if !self.cfg.lockstep {
            return Ok(());
        }
        let deadline = Instant::now() + STEP_TIMEOUT;
        loop {
            if self.status[node] == NodeStatus::Crashed || (self.marker[node] && self.done[node]) {
                return Ok(());
            }
            let wait = if self.marker[node] {
                deadline.saturating_duration_since(Instant::now())
            } else {
                self.cfg.quiet
            };
            match self.rx.recv_timeout(wait) {
                Ok(out) => self.pump(out)?,
                Err(_) if self.marker[node] => {
                    return Err(LabError::NoMarker {
                        node: self.name(node),
                        seconds: STEP_TIMEOUT.as_secs(),
                    });
                }
                Err(_) => return Ok(()),
            }
        }
    }

    /// Takes one report of a reader thread.
    fn pump(&mut self, out: Output) -> Result<(), LabError> {
        if !self.cfg.lockstep {
            self.now = self.began.elapsed().as_nanos() as Time;
        }
        match out {
            Output::Line { node, incarnation, line } => {
                if incarnation != self.nodes.incarnation(node) || self.status[node] == NodeStatus::Crashed {
                    return Ok(());
                }
                self.on_line(node, &line)
            }
            Output::Closed { node, incarnation } => {
                if incarnation == self.nodes.incarnation(node) && self.status[node] != NodeStatus::Crashed {
                    let how = self.nodes.reap(node).unwrap_or_default();
                    let why = self
                        .nodes
                        .last_stderr(node)
                        .map(|l| format!("; its stderr: {l}"))
                        .unwrap_or_default();
                    let text = format!(
                        "{} exited on its own at {:.3} ms ({how}){why}",
                        self.name(node),
                        self.now as f64 / 1e6
                    );
                    self.note(text);
                    self.process_died = true;
                    self.crashed(node, "exited on its own");
                }
                Ok(())
            }
        }
    }

    fn protocol_error(&self, node: usize, why: String, line: &str) -> LabError {
        LabError::Protocol { node: self.name(node), why, line: protocol::shorten(line) }
    }

    /// One line `node` wrote.
    fn on_line(&mut self, node: usize, line: &str) -> Result<(), LabError> {
        let msg = protocol::parse(line).map_err(|why| self.protocol_error(node, why, line))?;
        if msg.src != self.name(node) {
            return Err(self.protocol_error(
                node,
                format!("src is {:?}; a node writes its own id ({}) as src", msg.src, self.name(node)),
                line,
            ));
        }
        if msg.dest == LAB {
            return self.lab_message(node, &msg, line);
        }
        if let Some(to) = protocol::parse_node(&msg.dest, self.cfg.nodes) {
            self.route(node, (to - 1) as usize, msg);
            return Ok(());
        }
        if msg.dest.starts_with('c') {
            return self.answer(node, &msg, line);
        }
        Err(self.protocol_error(
            node,
            format!(
                "destination {:?} is neither a node (n1..n{}), a client (cK) nor lab",
                msg.dest, self.cfg.nodes
            ),
            line,
        ))
    }

    /// A message to the bench itself.
    fn lab_message(&mut self, node: usize, msg: &Message, line: &str) -> Result<(), LabError> {
        match msg.kind() {
            protocol::DONE => {
                self.marker[node] = true;
                self.done[node] = true;
                self.unmarked[node] = self.unmarked[node].saturating_sub(1);
            }
            "lab_timer" => {
                let Some(ms) =
                    msg.body.get("after_ms").and_then(Value::as_f64).filter(|m| m.is_finite() && *m >= 0.0)
                else {
                    return Err(self.protocol_error(
                        node,
                        "lab_timer needs \"after_ms\", a number ≥ 0".into(),
                        line,
                    ));
                };
                let tag = msg.body.get("tag").cloned().unwrap_or(Value::Null);
                let at = self.now + (ms * 1e6).round() as Time;
                self.at(at, Action::Timer { node, tag });
            }
            "leader" => self.on_leader(node, &msg.body, line)?,
            "deadlock" if self.cfg.family == LabFamily::Deadlock => {
                let cycle = match msg.body.get("cycle") {
                    Some(Value::Array(items)) if !items.is_empty() => items
                        .iter()
                        .map(|v| protocol::uid_of(v, self.cfg.nodes).map(|u| (u - 1) as NodeId))
                        .collect::<Option<Vec<NodeId>>>(),
                    _ => None,
                };
                let Some(cycle) = cycle else {
                    return Err(self.protocol_error(
                        node,
                        format!(
                            "deadlock needs \"cycle\", a non-empty list of node ids 1..{n} or names n1..n{n}, in wait-for order",
                            n = self.cfg.nodes
                        ),
                        line,
                    ));
                };
                self.probes.reported(node, cycle.len());
                self.emit(node, Event::DeadlockDetected { cycle });
            }
            "aborted" if self.cfg.family == LabFamily::Deadlock => {
                self.emit(node, Event::Aborted);
                if self.table.busy(node) {
                    self.table.waits[node].clear();
                    self.end_transaction(node);
                }
            }
            other => {
                let deadlock =
                    if self.cfg.family == LabFamily::Deadlock { ", deadlock, aborted" } else { "" };
                return Err(self.protocol_error(
                    node,
                    format!("lab takes lab_done, lab_timer, leader{deadlock}, not {other:?}"),
                    line,
                ));
            }
        }
        Ok(())
    }

    /// `from` sent `msg` to `to`: counted, traced, and put through the network model.
    fn route(&mut self, from: usize, to: usize, msg: Message) {
        self.messages += 1;
        self.last_sent[from] = Some(self.next_trace_id + 1);
        *self.by_kind.entry(msg.kind().to_string()).or_default() += 1;
        self.next_trace_id += 1;
        let id = self.next_trace_id;
        let (kind, body) = (msg.kind().to_string(), msg.body.clone());
        self.trace(RecordKind::Send, Some(from), Some(id), |r| {
            r.peer = Some(to as NodeId);
            r.msg_kind = Some(kind);
            r.msg = Some(body);
        });
        let (f, t) = (from as NodeId, to as NodeId);
        if self.network.is_cut(f, t) {
            self.drop_message(from, to, id, "partition");
            return;
        }
        match self.network.schedule(&mut self.rng, self.now, f, t) {
            None => self.drop_message(from, to, id, "lost"),
            Some(at) => {
                if self.network.duplicate(&mut self.rng) {
                    let again = at + self.network.latency.sample(&mut self.rng);
                    self.at(again, Action::Deliver { from, to, msg: msg.clone(), trace_id: id });
                }
                self.at(at, Action::Deliver { from, to, msg, trace_id: id });
            }
        }
    }

    fn drop_message(&mut self, from: usize, to: usize, id: u64, reason: &str) {
        self.dropped += 1;
        self.trace(RecordKind::Drop, Some(to), Some(id), |r| {
            r.peer = Some(from as NodeId);
            r.detail = Some(reason.to_string());
        });
    }

    /// `node` answered a client (or `init`).
    fn answer(&mut self, node: usize, msg: &Message, line: &str) -> Result<(), LabError> {
        let reply_to = msg.in_reply_to();
        match msg.kind() {
            "init_ok" if reply_to.is_some() && reply_to == self.awaiting_init[node] => {
                self.awaiting_init[node] = None;
            }
            "acquire_ok" if self.client[node] == Client::Acquiring(reply_to.unwrap_or(0)) => {
                self.client[node] = Client::Holding;
                let fencing = match msg.body.get("fencing").and_then(Value::as_u64) {
                    Some(t) => {
                        self.fencing_seen = true;
                        t
                    }
                    None => {
                        self.synthetic_fencing += 1;
                        self.synthetic_fencing
                    }
                };
                self.emit(node, Event::Entered { fencing });
                self.at(self.now + self.cfg.hold, Action::Release(node));
            }
            "release_ok" if self.client[node] == Client::Releasing(reply_to.unwrap_or(0)) => {
                self.finish_entry(node);
            }
            "start_election_ok" | "want_ok" | "grant_ok" | "abort_ok" => {}
            "local_ok" | "send_to_ok" | "value" if reply_to.is_some() && reply_to == self.clock_op[node] => {
                self.clock_op[node] = None;
                let (lamport, vector) = self.clock_value(node, &msg.body, line)?;
                let event = match msg.kind() {
                    "local_ok" => Event::Stamped { lamport, vector },
                    "send_to_ok" => match self.last_sent[node].take() {
                        Some(message) => Event::StampedMessage { message, receive: false, lamport, vector },
                        None => {
                            return Err(self.protocol_error(
                                node,
                                "send_to_ok, but the node sent no message".into(),
                                line,
                            ));
                        }
                    },
                    _ => match self.receiving[node].take() {
                        Some(message) => Event::StampedMessage { message, receive: true, lamport, vector },
                        None => Event::Stamped { lamport, vector },
                    },
                };
                self.emit(node, event);
            }
            "leader" if reply_to.is_some() && reply_to == self.asked[node] => {
                self.asked[node] = None;
                self.on_leader(node, &msg.body, line)?;
            }
            "error" => {
                let code = msg.body.get("code").and_then(Value::as_u64).unwrap_or(0);
                let text = msg.body.get("text").and_then(Value::as_str).unwrap_or("").to_string();
                let note = format!(
                    "{} answered with error {code} {text:?} at {:.3} ms",
                    self.name(node),
                    self.now as f64 / 1e6
                );
                self.note(note);
                match self.client[node] {
                    // The client keeps asking: the request stands (the checker still counts
                    // its wait from the first acquire).
                    Client::Acquiring(id) if reply_to == Some(id) => {
                        self.client[node] = Client::Idle;
                        self.at(self.now + self.cfg.think, Action::Acquire(node));
                    }
                    Client::Releasing(id) if reply_to == Some(id) => self.finish_entry(node),
                    _ => {}
                }
            }
            other => {
                let note = format!("{} sent {other:?} to {} unasked", self.name(node), msg.dest);
                self.note(note);
            }
        }
        Ok(())
    }

    /// A clock answer's `value`: a number (Lamport) or a list of numbers (vector).
    fn clock_value(&self, node: usize, body: &Value, line: &str) -> Result<(u64, Vec<u64>), LabError> {
        match body.get("value") {
            Some(Value::Number(x)) if x.as_u64().is_some() => Ok((x.as_u64().unwrap_or(0), Vec::new())),
            Some(Value::Array(items)) if items.len() == self.n && items.iter().all(Value::is_u64) => {
                Ok((0, items.iter().filter_map(Value::as_u64).collect()))
            }
            _ => Err(self.protocol_error(
                node,
                format!("\"value\" must be a whole number (Lamport) or a list of {} (vector)", self.n),
                line,
            )),
        }
    }

    fn finish_entry(&mut self, node: usize) {
        self.client[node] = Client::Idle;
        self.remaining[node] = self.remaining[node].saturating_sub(1);
        if self.remaining[node] > 0 {
            self.at(self.now + self.cfg.think, Action::Acquire(node));
        }
    }

    /// `node` says whom it believes is the coordinator (an answer to `leader?` or a report).
    fn on_leader(&mut self, node: usize, body: &Value, line: &str) -> Result<(), LabError> {
        let leader = body.get("leader").unwrap_or(&Value::Null);
        let belief = if leader.is_null() {
            None
        } else {
            let Some(uid) = protocol::uid_of(leader, self.cfg.nodes) else {
                return Err(self.protocol_error(
                    node,
                    format!(
                        "\"leader\" must be a node id 1..{n}, a name n1..n{n}, or null",
                        n = self.cfg.nodes
                    ),
                    line,
                ));
            };
            Some((uid, body.get("term").and_then(Value::as_u64).unwrap_or(0)))
        };
        if belief == self.belief[node] {
            return Ok(());
        }
        self.belief[node] = belief;
        match belief {
            Some((leader, term)) => self.emit(node, Event::Leader { leader, term }),
            None => self.emit(node, Event::LeaderLost),
        }
        Ok(())
    }

    /// Marks `node` crashed (killed by the bench, or ended on its own).
    fn crashed(&mut self, node: usize, why: &str) {
        self.status[node] = NodeStatus::Crashed;
        self.client[node] = Client::Idle;
        self.asked[node] = None;
        self.belief[node] = None;
        let why = why.to_string();
        self.trace(RecordKind::Crash, Some(node), None, |r| r.detail = Some(why));
        self.judge(|c, w, at, v| c.on_crash(w, node as NodeId, at, v));
        if self.cfg.family == LabFamily::Deadlock && self.table.phase[node] != Phase::Done {
            // A crashed node's transaction is gone: what it held is free, and it begins no other.
            self.table.waits[node].clear();
            self.grant_waiters(node);
            self.table.phase[node] = Phase::Done;
        }
    }

    /// Deadlock: `node` stops holding its resource: every node that waited for it is granted
    /// (a `grant` queued now), and runs once it has everything.
    fn grant_waiters(&mut self, node: usize) {
        for (x, unblocked) in self.table.release(node) {
            self.request(x, Request::StopWaiting { holder: node as NodeId });
            self.at(self.now, Action::Grant { node: x, holder: node });
            if unblocked {
                let epoch = self.table.epoch[x];
                self.at(self.now + self.cfg.hold, Action::Commit { node: x, epoch });
            }
        }
    }

    /// Deadlock: `node`'s transaction ends (committed, aborted or given up): its waiters are
    /// granted and it begins its next one after the gap and the think time.
    fn end_transaction(&mut self, node: usize) {
        self.grant_waiters(node);
        self.table.phase[node] = Phase::Thinking;
        self.table.epoch[node] += 1;
        let epoch = self.table.epoch[node];
        self.at(self.now + self.gap + self.cfg.think, Action::Begin { node, epoch });
    }

    /// True when an input for `node` must wait: it is paused (the action is queued again for
    /// its resumption) or crashed (the action is dropped).
    fn held(&mut self, node: usize, action: &Action) -> bool {
        match self.status[node] {
            NodeStatus::Up => false,
            NodeStatus::Crashed => true,
            NodeStatus::Paused => {
                let until = self.paused_until[node].max(self.now);
                self.at(until, action.clone());
                true
            }
        }
    }

    fn act(&mut self, action: Action) -> Result<(), LabError> {
        match action {
            Action::Deliver { from, to, ref msg, trace_id } => {
                if self.status[to] == NodeStatus::Crashed {
                    self.drop_message(from, to, trace_id, "the destination is crashed");
                    return Ok(());
                }
                if self.held(to, &action) {
                    return Ok(());
                }
                self.trace(RecordKind::Deliver, Some(to), Some(trace_id), |r| {
                    r.peer = Some(from as NodeId);
                    r.msg_kind = Some(msg.kind().to_string());
                });
                self.done[to] = false;
                self.unmarked[to] += 1;
                self.nodes.send(to, &msg.line());
                self.settle(to)?;
                if self.cfg.family == LabFamily::Clock && self.status[to] == NodeStatus::Up {
                    // The receive's timestamp: read before anything else happens at `to`.
                    let id = self.msg_id();
                    self.clock_op[to] = Some(id);
                    self.receiving[to] = Some(trace_id);
                    let c = client_name(self.uids[to]);
                    self.write(to, &c, json!({"type": "read", "msg_id": id}));
                    self.settle(to)?;
                }
            }
            Action::Acquire(node) => {
                if self.held(node, &action) {
                    return Ok(());
                }
                let id = self.msg_id();
                self.client[node] = Client::Acquiring(id);
                self.request(node, Request::Acquire);
                let c = client_name(self.uids[node]);
                self.write(node, &c, json!({"type": "acquire", "msg_id": id}));
                self.settle(node)?;
            }
            Action::Release(node) => {
                if self.client[node] != Client::Holding || self.held(node, &action) {
                    return Ok(());
                }
                let id = self.msg_id();
                self.client[node] = Client::Releasing(id);
                self.request(node, Request::Release);
                // The client left the section when it sent release: the section it saw ends here.
                self.emit(node, Event::Exited);
                let c = client_name(self.uids[node]);
                self.write(node, &c, json!({"type": "release", "msg_id": id}));
                self.settle(node)?;
            }
            Action::StartElection(node) => {
                if self.held(node, &action) {
                    return Ok(());
                }
                let id = self.msg_id();
                self.request(node, Request::StartElection);
                self.emit(node, Event::ElectionStarted);
                let c = client_name(self.uids[node]);
                self.write(node, &c, json!({"type": "start_election", "msg_id": id}));
                self.settle(node)?;
            }
            Action::AskLeader(node) => {
                if self.held(node, &action) {
                    return Ok(());
                }
                let id = self.msg_id();
                self.asked[node] = Some(id);
                let c = client_name(self.uids[node]);
                self.write(node, &c, json!({"type": "leader?", "msg_id": id}));
                self.settle(node)?;
            }
            Action::Local(node) => {
                if self.held(node, &action) {
                    return Ok(());
                }
                let id = self.msg_id();
                self.clock_op[node] = Some(id);
                self.request(node, Request::Local);
                let c = client_name(self.uids[node]);
                self.write(node, &c, json!({"type": "local", "msg_id": id}));
                self.settle(node)?;
            }
            Action::SendTo(node, to) => {
                if self.held(node, &action) {
                    return Ok(());
                }
                let id = self.msg_id();
                self.clock_op[node] = Some(id);
                self.last_sent[node] = None;
                self.request(node, Request::SendTo { to: to as NodeId });
                let (c, dest) = (client_name(self.uids[node]), self.name(to));
                self.write(node, &c, json!({"type": "send_to", "msg_id": id, "to": dest}));
                self.settle(node)?;
            }
            Action::Timer { node, ref tag } => {
                if self.held(node, &action) {
                    return Ok(());
                }
                let t = tag.clone();
                self.trace(RecordKind::Timer, Some(node), None, |r| r.timer = Some(t.to_string()));
                self.write(node, LAB, json!({"type": "lab_timeout", "tag": tag}));
                self.settle(node)?;
            }
            Action::Crash(node) => {
                if self.status[node] != NodeStatus::Crashed {
                    self.nodes.kill(node);
                    self.crashed(node, "crashed");
                }
            }
            Action::Recover(node) => {
                if self.status[node] == NodeStatus::Crashed {
                    self.status[node] = NodeStatus::Up;
                    self.trace(RecordKind::Recover, Some(node), None, |_| {});
                    self.judge(|c, w, at, v| c.on_recover(w, node as NodeId, at, v));
                    self.nodes.start(node)?;
                    self.unmarked[node] = 0;
                    self.init(node)?;
                    if self.cfg.family == LabFamily::Mutex && self.remaining[node] > 0 {
                        self.at(self.now + self.cfg.think, Action::Acquire(node));
                    }
                }
            }
            Action::Pause { node, until } => {
                if self.status[node] == NodeStatus::Up {
                    self.status[node] = NodeStatus::Paused;
                    self.paused_until[node] = until;
                    self.trace(RecordKind::Pause, Some(node), None, |_| {});
                }
            }
            Action::Resume(node) => {
                if self.status[node] == NodeStatus::Paused {
                    self.status[node] = NodeStatus::Up;
                    self.trace(RecordKind::Resume, Some(node), None, |_| {});
                }
            }
            Action::Begin { node, epoch } => {
                if epoch != self.table.epoch[node] || self.table.phase[node] != Phase::Thinking {
                    return Ok(());
                }
                if self.table.remaining[node] == 0 {
                    self.table.phase[node] = Phase::Done;
                    return Ok(());
                }
                self.table.remaining[node] -= 1;
                self.table.phase[node] = Phase::Holding;
                self.at(self.now + self.cfg.hold, Action::Ask { node, epoch });
            }
            Action::Ask { node, epoch } => {
                if epoch != self.table.epoch[node]
                    || self.table.phase[node] != Phase::Holding
                    || self.held(node, &action)
                {
                    return Ok(());
                }
                let holders =
                    self.table.choose_holders(node, &mut self.rng, self.cfg.cycles, self.cfg.holders);
                if holders.is_empty() {
                    self.table.phase[node] = Phase::Running;
                    self.at(self.now + self.cfg.hold, Action::Commit { node, epoch });
                    return Ok(());
                }
                self.table.requests += 1;
                self.table.phase[node] = Phase::Blocked;
                self.table.waits[node] = holders.clone();
                self.probes.request(node, holders.len(), &self.table);
                self.request(
                    node,
                    Request::WaitFor { holders: holders.iter().map(|&h| h as NodeId).collect() },
                );
                let id = self.msg_id();
                let names: Vec<String> = holders.iter().map(|&h| self.name(h)).collect();
                let c = client_name(self.uids[node]);
                self.write(node, &c, json!({"type": "want", "msg_id": id, "holders": names}));
                if let Some(after) = self.cfg.give_up {
                    self.at(self.now + after, Action::GiveUp { node, epoch });
                }
                self.settle(node)?;
            }
            Action::Commit { node, epoch } => {
                if epoch == self.table.epoch[node] && self.table.phase[node] == Phase::Running {
                    self.end_transaction(node);
                }
            }
            Action::GiveUp { node, epoch } => {
                if epoch != self.table.epoch[node]
                    || self.table.phase[node] != Phase::Blocked
                    || self.held(node, &action)
                {
                    return Ok(());
                }
                for holder in std::mem::take(&mut self.table.waits[node]) {
                    self.request(node, Request::StopWaiting { holder: holder as NodeId });
                }
                let id = self.msg_id();
                let c = client_name(self.uids[node]);
                self.write(node, &c, json!({"type": "abort", "msg_id": id}));
                self.end_transaction(node);
                self.settle(node)?;
            }
            Action::Grant { node, holder } => {
                if self.held(node, &action) {
                    return Ok(());
                }
                let id = self.msg_id();
                let (c, h) = (client_name(self.uids[node]), self.name(holder));
                self.write(node, &c, json!({"type": "grant", "msg_id": id, "holder": h}));
                self.settle(node)?;
            }
            Action::Cut(i, active) => {
                self.network.cuts[i].active = active;
                let what = self.cfg.partitions[i].to_string();
                let kind = if active { RecordKind::Partition } else { RecordKind::Heal };
                self.trace(kind, None, None, |r| r.detail = Some(what));
            }
        }
        Ok(())
    }

    /// Judges the end of the run and builds the report.
    fn finish(mut self, cut_off: bool) -> Result<LabReport, LabError> {
        self.violations.set_cut_off(cut_off);
        self.judge(|c, w, at, v| c.finish(w, at, v));
        let world = World { uids: &self.uids, status: &self.status, rule: self.rule };
        let family = self.checker.report(&world);
        let operations = family.operations;
        let properties = self
            .checker
            .properties()
            .into_iter()
            .map(|p| {
                let verdict = if let Some(v) = self.violations.list().iter().find(|v| v.property == p) {
                    Verdict::Violated { detail: v.detail.clone(), step: v.step, time_ms: v.time }
                } else if let Some(u) = self.violations.undecided_of(p) {
                    Verdict::Undecided { detail: u.detail.clone() }
                } else if p == Property::Monotonic {
                    Verdict::NotJudged { reason: "the lab reads no physical clocks".into() }
                } else if p == Property::Fencing && !self.fencing_seen {
                    Verdict::NotJudged { reason: "the node reports no fencing tokens".into() }
                } else {
                    Verdict::Holds
                };
                PropertyVerdict { name: p.name().to_string(), verdict }
            })
            .collect();
        let probes = self.probes.bounds();
        let cost = self.textbook.clone().map(|mut textbook| {
            if textbook.per_run {
                (textbook.low, textbook.high) = probes;
            }
            let verdict = if self.cfg.loss > 0.0 || self.cfg.dup > 0.0 {
                "not compared (the network lost or duplicated messages)".to_string()
            } else if operations == 0 {
                "not compared (no operation completed)".to_string()
            } else {
                textbook.verdict(self.messages, operations).to_string()
            };
            Cost { textbook, messages: self.messages, operations, verdict }
        });
        let violation_window = self.violations.list().first().map(|v| (v.step, v.until_step));
        let wall_ms = self.began.elapsed().as_secs_f64() * 1e3;
        let what = format!(
            "writing the trace {}",
            self.cfg.trace.as_deref().unwrap_or(std::path::Path::new("")).display()
        );
        let records = self.tracer.finish().map_err(|source| LabError::Io { what, source })?.records;
        Ok(LabReport {
            family: self.cfg.family.name().to_string(),
            nodes: self.cfg.nodes,
            seed: self.cfg.seed,
            lockstep: self.cfg.lockstep,
            steps: self.step,
            time_ms: self.now as f64 / 1e6,
            wall_ms,
            cut_off,
            operations,
            messages: self.messages,
            by_kind: self.by_kind,
            dropped: self.dropped,
            per_operation: (operations > 0).then(|| self.messages as f64 / operations as f64),
            properties,
            cost,
            notes: self.notes,
            process_died: self.process_died,
            outcome: serde_json::to_value(&family.outcome).unwrap_or(Value::Null),
            repro: self.cfg.repro(),
            records,
            violation_window,
        })
    }
}
