//! The discrete-event engine: virtual time, one event queue, seeded random streams.
//!
//! Events wait in an [`EventQueue`] (a calendar of time buckets in front of a binary heap)
//! ordered by (virtual time, sequence number); the sequence number breaks ties in scheduling
//! order, so runs are deterministic. Every random choice — the layout, the clocks, the workloads,
//! each message's loss, latency and duplication, the randomness handed to processes — comes
//! from a Xoshiro256++ stream derived from `--seed`, one per purpose and, for messages and
//! handler calls, one per node (`crate::streams`): one node's extra draw moves no other node's.
//!
//! One step = one event taken from the queue: a delivery, a timer, an application request, a
//! fault or a workload's own timer. The loop ([`Simulation::run`]) reads as its concerns: *pop*
//! the next item, *handle* it (`handle`: the process's handler runs, or the fault strikes),
//! *carry out* the outbox in order (`apply`), *judge* (the checker sees every request, fault and
//! emitted event through `judge`, with the global view built in one place), and let the
//! [`Workload`]s react; the trace (when asked for) gets one record per thing that happened.
//!
//! The hot path allocates nothing per event: the outbox buffer is reused, messages live inline
//! in the queue entries, timers are a short per-node list, and tracing costs one branch when off.

use std::collections::BTreeMap;

use rand_xoshiro::Xoshiro256PlusPlus;
use ringleader_algorithms::{Algorithm, Family, Info, Params, Setup};
use ringleader_core::trace::{RecordKind, TraceRecord};
use ringleader_core::{Command, Context, Event, Message, NodeId, Outbox, Request, Time, Topology, Uid};
use ringleader_judge::checkers::{self, Checker, Moment, NodeStatus, Property, Violations, World};
use ringleader_judge::trace::Tracer;

use crate::clock::Clock;
use crate::network::{Cut, Network};
use crate::queue::EventQueue;
use crate::scenario::{Initiators, RunConfig, WorkloadKind};
use crate::workload::clock::ClockWorkload;
use crate::workload::deadlock::DeadlockWorkload;
use crate::workload::election::ElectionWorkload;
use crate::workload::mutex::MutexWorkload;
use crate::workload::{Cx, Stimulus, Tally, Tick, Workload};
use crate::{SimError, streams, topologies};

pub mod windowed;

/// A fault of the plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    Crash(NodeId),
    Recover(NodeId),
    Pause(NodeId),
    Resume(NodeId),
    Cut(usize),
    Heal(usize),
}

/// Something scheduled to happen.
#[derive(Debug)]
enum Item<M, T> {
    Deliver {
        from: NodeId,
        to: NodeId,
        msg: M,
    },
    Timer {
        node: NodeId,
        timer: T,
        generation: u64,
    },
    Request(Box<(NodeId, Request)>),
    Fault(Fault),
    /// A timer a workload (by its index) set for itself.
    Tick {
        workload: u8,
        node: NodeId,
        tick: Tick,
    },
}

impl<M, T> Item<M, T> {
    /// True for the items of the run's story (requests, faults, workload timers) rather than
    /// of the algorithm (messages, timers).
    fn is_story(&self) -> bool {
        matches!(self, Item::Request(_) | Item::Fault(_) | Item::Tick { .. })
    }
}

/// The scheduled items of algorithm `A`.
type ItemOf<A> = Item<<A as ringleader_core::Process>::Msg, <A as ringleader_core::Process>::Timer>;

/// Puts `item` in the queue at `time` with the next sequence number (also a message's id),
/// counting it in `scripted` when it is part of the run's story.
fn enqueue<M, T>(
    queue: &mut EventQueue<Item<M, T>>,
    seq: &mut u64,
    scripted: &mut u64,
    time: Time,
    item: Item<M, T>,
) -> u64 {
    if item.is_story() {
        *scripted += 1;
    }
    let id = *seq;
    *seq += 1;
    queue.push(time, id, item);
    id
}

/// Fills the message fields of a send or delivery record: the other end, the message's id,
/// kind and body (both engines write them alike).
fn with_message<M: Message>(r: &mut TraceRecord, peer: NodeId, id: u64, msg: &M) {
    r.peer = Some(peer);
    r.msg_id = Some(id);
    r.msg_kind = Some(msg.kind().into());
    r.msg = serde_json::to_value(msg).ok();
}

/// Fills a drop record: the sender, the message's id and kind, and why it was dropped.
fn with_drop(r: &mut TraceRecord, from: NodeId, id: u64, kind: &str, reason: &str) {
    r.peer = Some(from);
    r.msg_id = Some(id);
    r.msg_kind = Some(kind.into());
    r.detail = Some(reason.into());
}

/// How many events ahead the engine prefetches the receiver's state.
const PREFETCH_DISTANCE: usize = 6;

/// Message counters, by kind.
#[derive(Clone, Debug, Default)]
pub struct MessageCounts {
    /// Sends per kind index.
    pub sent_by_kind: Vec<u64>,
    /// Sends of detection messages (heartbeats …), included in `sent_by_kind`.
    pub detection: u64,
    /// Detection sends per kind index.
    pub detection_by_kind: Vec<u64>,
    /// Bursts per kind index: runs of sends of one kind by one node at one instant (a
    /// broadcast is one burst), e.g. Berkeley's rounds are its POLL bursts.
    pub bursts_by_kind: Vec<u64>,
    /// The (sender, time) of the last burst of each kind.
    last_burst: Vec<Option<(NodeId, Time)>>,
    /// Messages delivered.
    pub delivered: u64,
    /// Messages dropped (lost, cut, or addressed to a crashed node).
    pub dropped: u64,
    /// Copies the network made of sent messages (`--dup`), delivered or dropped as sends are.
    pub duplicated: u64,
}

impl MessageCounts {
    /// Zero counts for a message type of `kinds` kinds.
    pub fn for_kinds(kinds: usize) -> Self {
        MessageCounts {
            sent_by_kind: vec![0; kinds],
            detection_by_kind: vec![0; kinds],
            bursts_by_kind: vec![0; kinds],
            last_burst: vec![None; kinds],
            ..MessageCounts::default()
        }
    }

    /// All sends.
    pub fn sent(&self) -> u64 {
        self.sent_by_kind.iter().sum()
    }
}

/// Progress of a long run, for a progress bar.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    /// Steps so far.
    pub step: u64,
    /// Virtual time now.
    pub now: Time,
    /// The run's time limit.
    pub duration: Time,
    /// Events waiting.
    pub queued: usize,
}

/// Why a run stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// Nothing left to happen.
    Quiescent,
    /// Steady state: nothing but detection traffic (heartbeats, ACKs and the timers that send
    /// them) for [`Simulation::steady_window`], with no fault, request or algorithm message
    /// still to come. Judged like quiescence: the run's story is over.
    Steady,
    /// The time limit was reached with events still pending.
    Duration,
}

/// The shortest steady state that ends a run (see [`Stop::Steady`]).
pub const STEADY_MIN: Time = 100_000_000;

/// How many times the longest timer the run ever set a steady state must last.
pub const STEADY_TIMER_FACTOR: Time = 4;

/// A run of algorithm `A`.
pub struct Simulation<A: Algorithm> {
    /// The configuration.
    pub cfg: RunConfig,
    /// The algorithm's description.
    pub info: Info,
    uids: Vec<Uid>,
    topology: Topology,
    states: Vec<A>,
    status: Vec<NodeStatus>,
    timers: Vec<Vec<(A::Timer, u64)>>,
    deferred: BTreeMap<NodeId, Vec<(u64, ItemOf<A>)>>,
    /// Items a paused node deferred, rescheduled on resume: new sequence number → message id.
    renumbered: BTreeMap<u64, u64>,
    clocks: Option<Vec<Clock>>,
    queue: EventQueue<ItemOf<A>>,
    seq: u64,
    now: Time,
    step: u64,
    /// Each workload's own random stream (see `crate::streams`).
    workload_rngs: Vec<Xoshiro256PlusPlus>,
    /// How many draws each node has made of its network and handler streams.
    draws: streams::Counters,
    net: Network,
    in_flight: u64,
    /// Messages in flight that are not detection traffic.
    algo_in_flight: u64,
    /// Requests, faults and workload timers in the queue (the story still to come).
    scripted: u64,
    /// Virtual time of the last step that was not detection traffic.
    last_progress: Time,
    /// The longest timer delay set so far (virtual).
    longest_timer: Time,
    /// What the application does: at most one workload per kind of story (election
    /// initiators, a request pattern or the clock schedule, the deadlock transactions).
    workloads: Vec<Box<dyn Workload>>,
    checker: Box<dyn Checker + Send>,
    violations: Violations,
    counters: MessageCounts,
    out: Outbox<A::Msg, A::Timer>,
    tracer: Option<Tracer>,
    stop: Stop,
    /// Buffer for the clock readings handed to the checker (clock families only).
    readings: Vec<Time>,
    /// Requests the request pattern issued, when the windowed engine ran it (each requester's
    /// share was its own there, so the workload object did not count them).
    windowed_issued: Option<u64>,
}

impl<A: Algorithm> Simulation<A> {
    /// Prepares a run: lays out ids and topology, configures the processes, builds the network
    /// and the clocks, and schedules the fault plan ([`Simulation::run`] starts the workloads).
    pub fn new(cfg: &RunConfig, tracer: Option<Tracer>) -> Result<Self, SimError> {
        let info = Info::of::<A>();
        let n = cfg.nodes;
        let (uids, topology) = Self::layout(cfg, &mut streams::layout(cfg.seed))?;
        let states = Self::processes(cfg, &uids, &topology)?;
        let position = Self::positions(cfg, &uids);
        let net = Self::network(cfg, &position);
        let clocks = Self::clocks(cfg, &mut streams::clocks(cfg.seed));
        let workloads = Self::workloads(cfg, &info, &uids, &position);
        let workload_rngs = (0..workloads.len()).map(|i| streams::workload(cfg.seed, i)).collect();
        let mut sim = Simulation {
            cfg: cfg.clone(),
            info,
            checker: checkers::for_algorithm(&info, n as usize),
            uids,
            topology,
            states,
            status: vec![NodeStatus::Up; n as usize],
            timers: vec![Vec::new(); n as usize],
            deferred: BTreeMap::new(),
            renumbered: BTreeMap::new(),
            clocks,
            queue: EventQueue::new(cfg.latency.bound()),
            seq: 0,
            now: 0,
            step: 0,
            workload_rngs,
            draws: streams::Counters::new(n),
            net,
            in_flight: 0,
            algo_in_flight: 0,
            scripted: 0,
            last_progress: 0,
            longest_timer: 0,
            workloads,
            violations: Violations::default(),
            counters: MessageCounts::for_kinds(<A::Msg as Message>::KINDS.len()),
            out: Outbox::new(),
            tracer,
            stop: Stop::Quiescent,
            readings: Vec::new(),
            windowed_issued: None,
        };
        // Faults first, so that a crash at time 0 precedes the requests made at time 0 (the
        // workloads start in `run`, which the windowed engine replaces with its own start).
        sim.schedule_faults(&position);
        Ok(sim)
    }

    /// The uids by position (in the run's arrangement) and the communication graph (in the
    /// run's shape, or the algorithm's default).
    fn layout(cfg: &RunConfig, rng: &mut Xoshiro256PlusPlus) -> Result<(Vec<Uid>, Topology), SimError> {
        let uids = cfg.ids.uids(cfg.nodes, rng);
        let topology =
            topologies::build_shape(A::TOPOLOGY, A::NAME, cfg.nodes, cfg.graph.as_ref(), cfg.edges, rng)
                .map_err(SimError::from)?;
        Ok((uids, topology))
    }

    /// Configures the algorithm ([`ringleader_algorithms::configure`]) and builds every
    /// process's initial state.
    fn processes(cfg: &RunConfig, uids: &[Uid], topology: &Topology) -> Result<Vec<A>, SimError> {
        let params = Params::new(cfg.params.clone());
        let setup = Setup { uids, topology, params: &params, max_delay: cfg.max_delay, seed: cfg.seed };
        let config = ringleader_algorithms::configure::<A>(&setup)?;
        Ok((0..cfg.nodes).map(|i| A::new(i, &config, &setup)).collect())
    }

    /// Position by uid, for the configuration's uids (faults, initiators, requesters); left
    /// empty on a large run that names no uid.
    fn positions(cfg: &RunConfig, uids: &[Uid]) -> BTreeMap<Uid, NodeId> {
        if cfg.nodes <= 1 << 16
            || !cfg.crash.is_empty()
            || !cfg.partition.is_empty()
            || !cfg.pause.is_empty()
            || !cfg.recover.is_empty()
            || matches!(cfg.initiators, Initiators::Ids(_))
            || cfg.requesters.is_some()
        {
            uids.iter().enumerate().map(|(i, &u)| (u, i as NodeId)).collect()
        } else {
            BTreeMap::new()
        }
    }

    /// The network model, with the partitions of the fault plan (all inactive at the start).
    fn network(cfg: &RunConfig, position: &BTreeMap<Uid, NodeId>) -> Network {
        let side = |v: &[Uid]| {
            let mut s: Vec<NodeId> = v.iter().map(|u| position[u]).collect();
            s.sort_unstable();
            s
        };
        let cuts = cfg
            .partition
            .iter()
            .map(|p| Cut { left: side(&p.left), right: side(&p.right), one_way: p.one_way, active: false })
            .collect();
        Network::new(&cfg.latency, cfg.loss, cfg.dup, cfg.fifo, cuts)
    }

    /// Every node's physical clock, when the run has offsets or drift.
    fn clocks(cfg: &RunConfig, rng: &mut Xoshiro256PlusPlus) -> Option<Vec<Clock>> {
        (cfg.clock_offset > 0 || cfg.clock_drift_ppm > 0).then(|| {
            use rand::RngExt;
            let (o, d) = (cfg.clock_offset as i64, cfg.clock_drift_ppm as i64);
            // Offsets spread over ±o around o rather than around 0, so that no clock reads below
            // zero near the start (readings are unsigned); pairwise skews are the same.
            (0..cfg.nodes)
                .map(|_| {
                    Clock::new(o + rng.random_range(-o..=o), rng.random_range(-d..=d))
                        .with_correction(cfg.clock_slew_ppm, cfg.clock_step_forward)
                })
                .collect()
        })
    }

    /// The run's workloads, in the order they start: the election initiators, the request
    /// pattern or the clock schedule, the deadlock transactions.
    fn workloads(
        cfg: &RunConfig,
        info: &Info,
        uids: &[Uid],
        position: &BTreeMap<Uid, NodeId>,
    ) -> Vec<Box<dyn Workload>> {
        let n = cfg.nodes;
        let pos = |u: &Uid| position[u];
        let mut workloads: Vec<Box<dyn Workload>> = Vec::new();
        let initiators = Self::initiators(cfg, uids, position);
        if !initiators.is_empty() {
            workloads.push(Box::new(ElectionWorkload::new(initiators)));
        }
        if let Some(kind) = cfg.workload {
            let requesters = cfg.requesters.as_ref().map(|r| r.iter().map(pos).collect());
            workloads.push(match kind {
                WorkloadKind::Messages => {
                    Box::new(ClockWorkload::new(n, requesters, cfg.entries, cfg.rate, cfg.fanout))
                }
                _ => Box::new(MutexWorkload::new(kind, n, requesters, cfg.entries, cfg.hold, cfg.rate)),
            });
        }
        if info.family == Family::Deadlock {
            workloads.push(Box::new(DeadlockWorkload::new(
                n,
                cfg.entries,
                cfg.hold,
                cfg.holders,
                cfg.cycles,
                cfg.max_delay,
            )));
        }
        workloads
    }

    /// The positions that start an election at time 0: of the nodes alive at the start, all,
    /// the lowest or the highest uid; or the uids named.
    fn initiators(cfg: &RunConfig, uids: &[Uid], position: &BTreeMap<Uid, NodeId>) -> Vec<NodeId> {
        let n = cfg.nodes;
        let dead_at_start: Vec<NodeId> = cfg
            .crash
            .iter()
            .filter(|a| a.time == 0 && !cfg.recover.iter().any(|r| r.uid == a.uid && r.time == 0))
            .map(|a| position[&a.uid])
            .collect();
        let live_at_start = |i: &NodeId| !dead_at_start.contains(i);
        match &cfg.initiators {
            Initiators::None => Vec::new(),
            Initiators::All => (0..n).filter(live_at_start).collect(),
            Initiators::Lowest => {
                (0..n).filter(live_at_start).min_by_key(|&i| uids[i as usize]).into_iter().collect()
            }
            Initiators::Highest => {
                (0..n).filter(live_at_start).max_by_key(|&i| uids[i as usize]).into_iter().collect()
            }
            Initiators::Ids(ids) => ids.iter().map(|u| position[u]).collect(),
        }
    }

    /// Schedules the fault plan: crashes, recoveries, pauses and partitions.
    fn schedule_faults(&mut self, position: &BTreeMap<Uid, NodeId>) {
        let cfg = self.cfg.clone();
        for a in &cfg.crash {
            self.schedule(a.time, Item::Fault(Fault::Crash(position[&a.uid])));
        }
        for a in &cfg.recover {
            self.schedule(a.time, Item::Fault(Fault::Recover(position[&a.uid])));
        }
        for p in &cfg.pause {
            self.schedule(p.from, Item::Fault(Fault::Pause(position[&p.uid])));
            self.schedule(p.to, Item::Fault(Fault::Resume(position[&p.uid])));
        }
        for (i, p) in cfg.partition.iter().enumerate() {
            self.schedule(p.from, Item::Fault(Fault::Cut(i)));
            self.schedule(p.to, Item::Fault(Fault::Heal(i)));
        }
    }

    /// Schedules `item` at `time`; its sequence number (which is also a message's id) orders
    /// it after everything scheduled before at the same time.
    fn schedule(&mut self, time: Time, item: ItemOf<A>) -> u64 {
        enqueue(&mut self.queue, &mut self.seq, &mut self.scripted, time, item)
    }

    /// Runs `f` on workload `i`, scheduling what it asks for as it asks (in order; nothing is
    /// buffered, so a million initiators cost only their queue entries).
    fn drive(&mut self, i: usize, f: impl FnOnce(&mut dyn Workload, &mut Cx)) {
        let Simulation { queue, seq, scripted, workload_rngs, status, workloads, now, .. } = self;
        let mut schedule = |time: Time, stimulus: Stimulus| {
            let item = match stimulus {
                Stimulus::Ask(node, request) => Item::Request(Box::new((node, request))),
                Stimulus::Tick(node, tick) => Item::Tick { workload: i as u8, node, tick },
            };
            enqueue(queue, seq, scripted, time, item);
        };
        f(workloads[i].as_mut(), &mut Cx::new(*now, &mut workload_rngs[i], status, &mut schedule));
    }

    /// Runs `f` on every workload, in order.
    fn drive_all(&mut self, mut f: impl FnMut(&mut dyn Workload, &mut Cx)) {
        for i in 0..self.workloads.len() {
            self.drive(i, &mut f);
        }
    }

    /// Hands the checker what happened, with the global view it judges by.
    fn judge(&mut self, f: impl FnOnce(&mut dyn Checker, &World, &mut Violations)) {
        let world = World { uids: &self.uids, status: &self.status, rule: self.info.leader_rule };
        f(self.checker.as_mut(), &world, &mut self.violations);
    }

    fn stamp(&self) -> Moment {
        Moment { time: self.now, step: self.step }
    }

    /// The local clock reading of `node` now.
    pub fn local_time(&self, node: NodeId) -> Time {
        match &self.clocks {
            Some(c) => c[node as usize].read(self.now),
            None => self.now,
        }
    }

    /// Records one trace record (built by `fill` only when the tracer writes or keeps it; a
    /// message's `msg_id` is given apart, so that the tracer can stamp a record it does not build).
    fn trace(
        &mut self,
        kind: RecordKind,
        node: Option<NodeId>,
        msg_id: Option<u64>,
        fill: impl FnOnce(&mut TraceRecord),
    ) {
        let (step, now, uids) = (self.step, self.now, &self.uids);
        if let Some(t) = self.tracer.as_mut() {
            t.record_with(kind, node, msg_id, || {
                let mut r = TraceRecord::new(step, now, kind);
                r.node = node;
                r.uid = node.map(|n| uids[n as usize]);
                r.msg_id = msg_id;
                fill(&mut r);
                r
            });
        }
    }

    fn world(&self) -> World<'_> {
        World { uids: &self.uids, status: &self.status, rule: self.info.leader_rule }
    }

    /// Runs one handler of `node` and carries out its outbox.
    fn call(&mut self, node: NodeId, f: impl FnOnce(&mut A, &Context, &mut Outbox<A::Msg, A::Timer>)) {
        let cx = Context {
            me: node,
            uids: &self.uids,
            topology: &self.topology,
            now: match &self.clocks {
                Some(c) => c[node as usize].read(self.now),
                None => self.now,
            },
            random: self.draws.next_node(self.cfg.seed, node),
        };
        f(&mut self.states[node as usize], &cx, &mut self.out);
        self.apply(node);
    }

    fn apply(&mut self, node: NodeId) {
        let mut out = std::mem::take(&mut self.out);
        for command in out.drain() {
            match command {
                Command::Send { to, msg } => self.send(node, to, msg),
                Command::SetTimer { timer, after } => {
                    let after = self.clocks.as_ref().map_or(after, |c| c[node as usize].to_virtual(after));
                    self.longest_timer = self.longest_timer.max(after);
                    let generation = self.seq;
                    let list = &mut self.timers[node as usize];
                    match list.iter_mut().find(|(t, _)| *t == timer) {
                        Some(slot) => slot.1 = generation,
                        None => list.push((timer.clone(), generation)),
                    }
                    self.schedule(self.now + after, Item::Timer { node, timer, generation });
                }
                Command::CancelTimer(timer) => self.timers[node as usize].retain(|(t, _)| *t != timer),
                Command::Emit(event) => self.emit(node, event),
                Command::AdjustClock(delta) => {
                    let n = self.uids.len();
                    let now = self.now;
                    self.clocks.get_or_insert_with(|| {
                        vec![
                            Clock::default()
                                .with_correction(self.cfg.clock_slew_ppm, self.cfg.clock_step_forward);
                            n
                        ]
                    })[node as usize]
                        .adjust(now, delta);
                }
            }
        }
        self.out = out;
    }

    fn send(&mut self, from: NodeId, to: NodeId, msg: A::Msg) {
        let k = msg.kind_index();
        self.counters.sent_by_kind[k] += 1;
        if self.counters.last_burst[k] != Some((from, self.now)) {
            self.counters.last_burst[k] = Some((from, self.now));
            self.counters.bursts_by_kind[k] += 1;
        }
        let detection = msg.is_detection();
        if detection {
            self.counters.detection += 1;
            self.counters.detection_by_kind[k] += 1;
        } else {
            self.last_progress = self.now;
        }
        let id = self.seq;
        self.trace(RecordKind::Send, Some(from), Some(id), |r| with_message(r, to, id, &msg));
        let mut rng = self.draws.next_network(self.cfg.seed, from, self.net.draws());
        match self.net.schedule_with(rng.as_mut(), self.now, from, to) {
            None => {
                self.counters.dropped += 1;
                let kind = msg.kind();
                self.seq += 1;
                self.trace(RecordKind::Drop, Some(to), Some(id), |r| with_drop(r, from, id, kind, "lost"));
            }
            Some(at) => {
                let dup = rng.as_mut().is_some_and(|rng| self.net.duplicate(rng)).then(|| msg.clone());
                self.in_flight += 1;
                self.algo_in_flight += u64::from(!detection);
                self.schedule(at, Item::Deliver { from, to, msg });
                if let Some(copy) = dup {
                    let at2 = self.net.schedule_with(rng.as_mut(), self.now, from, to).unwrap_or(at);
                    let id2 = self.seq;
                    self.trace(RecordKind::Send, Some(from), Some(id2), |r| {
                        with_message(r, to, id2, &copy);
                        r.detail = Some("duplicate".into());
                    });
                    self.counters.duplicated += 1;
                    self.in_flight += 1;
                    self.algo_in_flight += u64::from(!detection);
                    self.schedule(at2, Item::Deliver { from, to, msg: copy });
                }
            }
        }
    }

    /// `node` reported `event`: the checker judges it, then the workloads react.
    fn emit(&mut self, node: NodeId, event: Event) {
        self.last_progress = self.now;
        let at = self.stamp();
        self.judge(|c, w, v| c.on_event(w, node, &event, at, v));
        self.drive_all(|w, cx| w.on_event(node, &event, cx));
        self.trace(RecordKind::Emit, Some(node), None, |r| r.event = Some(event));
    }

    /// Keeps an input of a paused node until it resumes (with its sequence number, so that a
    /// message keeps its id).
    fn defer(&mut self, node: NodeId, seq: u64, item: ItemOf<A>) {
        self.deferred.entry(node).or_default().push((seq, item));
    }

    /// Handles one item: the message, timer or request goes to its process (unless the node is
    /// crashed, or paused: then it waits), the fault strikes, the workload's timer fires.
    fn handle(&mut self, seq: u64, item: ItemOf<A>) {
        let id = if self.renumbered.is_empty() { seq } else { self.renumbered.remove(&seq).unwrap_or(seq) };
        match item {
            Item::Deliver { from, to, msg } => self.deliver(id, from, to, msg),
            Item::Timer { node, timer, generation } => self.fire(id, node, timer, generation),
            Item::Request(b) => self.request(id, b),
            Item::Fault(f) => {
                self.last_progress = self.now;
                self.fault(f)
            }
            Item::Tick { workload, node, tick } => {
                self.drive(workload as usize, |w, cx| w.on_tick(node, tick, cx));
            }
        }
    }

    /// Delivers message `id` to `to`, or drops it (crashed receiver, partition).
    fn deliver(&mut self, id: u64, from: NodeId, to: NodeId, msg: A::Msg) {
        if self.status[to as usize] == NodeStatus::Crashed || self.net.is_cut(from, to) {
            self.in_flight -= 1;
            self.algo_in_flight -= u64::from(!msg.is_detection());
            self.counters.dropped += 1;
            let reason = if self.status[to as usize] == NodeStatus::Crashed {
                "receiver crashed"
            } else {
                "partition"
            };
            let kind = msg.kind();
            self.trace(RecordKind::Drop, Some(to), Some(id), |r| with_drop(r, from, id, kind, reason));
            return;
        }
        if self.status[to as usize] == NodeStatus::Paused {
            self.defer(to, id, Item::Deliver { from, to, msg });
            return;
        }
        self.in_flight -= 1;
        self.algo_in_flight -= u64::from(!msg.is_detection());
        self.counters.delivered += 1;
        self.trace(RecordKind::Deliver, Some(to), Some(id), |r| with_message(r, from, id, &msg));
        self.call(to, |p, cx, out| p.on_message(cx, from, msg, out));
    }

    /// Fires `node`'s timer, unless it was cancelled or re-armed since (another generation).
    fn fire(&mut self, id: u64, node: NodeId, timer: A::Timer, generation: u64) {
        if self.status[node as usize] == NodeStatus::Crashed {
            return;
        }
        let Some(idx) = self.timers[node as usize].iter().position(|(t, g)| *t == timer && *g == generation)
        else {
            return;
        };
        if self.status[node as usize] == NodeStatus::Paused {
            self.defer(node, id, Item::Timer { node, timer, generation });
            return;
        }
        self.timers[node as usize].swap_remove(idx);
        self.trace(RecordKind::Timer, Some(node), None, |r| r.timer = Some(format!("{timer:?}")));
        self.call(node, |p, cx, out| p.on_timer(cx, timer, out));
    }

    /// Hands an application request to its node.
    fn request(&mut self, id: u64, b: Box<(NodeId, Request)>) {
        let node = b.0;
        self.last_progress = self.now;
        if self.status[node as usize] == NodeStatus::Crashed {
            // A workload request to a crashed node is lost: the workloads hear of it, so
            // that a sequential pattern asks the next live requester instead.
            for w in &mut self.workloads {
                w.on_lost(node, &b.1);
            }
            return;
        }
        if self.status[node as usize] == NodeStatus::Paused {
            self.defer(node, id, Item::Request(b));
            return;
        }
        let (node, req) = *b;
        let at = self.stamp();
        self.judge(|c, w, v| c.on_request(w, node, &req, at, v));
        self.trace(RecordKind::Request, Some(node), None, |r| r.request = Some(req.clone()));
        self.call(node, |p, cx, out| p.on_request(cx, req, out));
    }

    fn fault(&mut self, f: Fault) {
        let at = self.stamp();
        match f {
            Fault::Crash(node) => {
                if self.status[node as usize] == NodeStatus::Crashed {
                    return;
                }
                self.status[node as usize] = NodeStatus::Crashed;
                self.timers[node as usize].clear();
                if let Some(items) = self.deferred.remove(&node) {
                    for (_, item) in items {
                        if let Item::Deliver { msg, .. } = item {
                            self.in_flight -= 1;
                            self.algo_in_flight -= u64::from(!msg.is_detection());
                            self.counters.dropped += 1;
                        }
                    }
                }
                for w in &mut self.workloads {
                    w.on_crash(node);
                }
                self.trace(RecordKind::Crash, Some(node), None, |_| {});
                self.judge(|c, w, v| c.on_crash(w, node, at, v));
            }
            Fault::Recover(node) => {
                if self.status[node as usize] != NodeStatus::Crashed {
                    return;
                }
                self.status[node as usize] = NodeStatus::Up;
                self.trace(RecordKind::Recover, Some(node), None, |_| {});
                self.judge(|c, w, v| c.on_recover(w, node, at, v));
                self.call(node, |p, cx, out| p.on_recover(cx, out));
            }
            Fault::Pause(node) => {
                if self.status[node as usize] == NodeStatus::Up {
                    self.status[node as usize] = NodeStatus::Paused;
                    self.trace(RecordKind::Pause, Some(node), None, |_| {});
                }
            }
            Fault::Resume(node) => {
                if self.status[node as usize] == NodeStatus::Paused {
                    self.status[node as usize] = NodeStatus::Up;
                    self.trace(RecordKind::Resume, Some(node), None, |_| {});
                    // Back in the queue at the resume time, in the order they arrived (fresh
                    // sequence numbers); a message keeps its id through `renumbered`.
                    for (id, item) in self.deferred.remove(&node).unwrap_or_default() {
                        let seq = self.schedule(self.now, item);
                        self.renumbered.insert(seq, id);
                    }
                }
            }
            Fault::Cut(i) | Fault::Heal(i) => {
                let active = matches!(f, Fault::Cut(_));
                self.net.cuts[i].active = active;
                let text = self.cfg.partition[i].to_string();
                self.trace(if active { RecordKind::Partition } else { RecordKind::Heal }, None, None, |r| {
                    r.detail = Some(text)
                });
            }
        }
    }

    #[inline]
    fn trace_new_violations(&mut self, before: usize) {
        if self.tracer.is_some() && self.violations.len() > before {
            self.trace_violations_since(before);
        }
    }

    #[cold]
    fn trace_violations_since(&mut self, before: usize) {
        let new: Vec<_> = self.violations.list()[before..].to_vec();
        for v in new {
            self.trace(RecordKind::Violation, None, None, |r| {
                r.property = Some(v.property.name().into());
                r.detail = Some(v.detail.clone());
            });
        }
    }

    /// Hints the CPU to fetch the state (and the draw count) of a node that receives a message a
    /// few events from now:
    /// on a large ring consecutive deliveries touch scattered nodes, and the cache miss on the
    /// receiver's state is most of the cost of a step.
    #[inline]
    fn prefetch_upcoming(&self) {
        #[cfg(target_arch = "x86_64")]
        if let Some(Item::Deliver { to, .. }) = self.queue.peek_ahead(PREFETCH_DISTANCE) {
            use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
            let p = self.states.as_ptr().wrapping_add(*to as usize) as *const i8;
            // SAFETY: prefetching is a hint; it never faults and reads nothing observable.
            unsafe { _mm_prefetch::<{ _MM_HINT_T0 }>(p) };
            // The receiver's draw count, which its handler call reads.
            // SAFETY: as above.
            unsafe { _mm_prefetch::<{ _MM_HINT_T0 }>(self.draws.slot(*to) as *const i8) };
        }
    }

    /// Hands the checker every node's clock reading at each multiple of `period` up to `until`
    /// (clock checkers only). Clocks change only inside steps, so a sample taken between two
    /// steps reads exactly what the nodes' clocks show at that instant.
    fn sample_clocks(&mut self, until: Time, period: Time, next: &mut Time) {
        while *next <= until {
            let t = *next;
            self.readings.clear();
            match &self.clocks {
                Some(c) => self.readings.extend(c.iter().map(|c| c.read(t))),
                None => self.readings.resize(self.uids.len(), t),
            }
            let at = Moment { time: t, step: self.step };
            let readings = std::mem::take(&mut self.readings);
            self.judge(|c, w, v| c.on_clocks(w, &readings, at, v));
            self.readings = readings;
            *next += period;
        }
    }

    /// How long a steady state (only detection traffic) must last to end the run: the longer
    /// of [`STEADY_MIN`] and [`STEADY_TIMER_FACTOR`] times the longest timer set so far, so that
    /// every timeout armed before the last progress has fired (and found nothing to do).
    pub fn steady_window(&self) -> Time {
        STEADY_MIN.max(STEADY_TIMER_FACTOR.saturating_mul(self.longest_timer))
    }

    /// True when the run's story is over at `time` with only detection traffic left: no
    /// request, fault or workload timer to come, no algorithm message in flight, the workload
    /// has nothing more to ask, and nothing but heartbeats for a whole steady window. Clock
    /// and failure-detector runs never stop this way: their story is the periodic traffic.
    fn steady_at(&self, time: Time) -> bool {
        self.scripted == 0
            && self.algo_in_flight == 0
            && matches!(self.info.family, Family::Election | Family::Mutex | Family::Deadlock)
            && time.saturating_sub(self.last_progress) >= self.steady_window()
            && !self.workloads.iter().any(|w| w.is_waiting())
    }

    /// Every node's status now (up, crashed, paused), by position.
    pub fn status(&self) -> &[NodeStatus] {
        &self.status
    }

    /// Messages sent and not yet delivered or dropped (a paused receiver's inbox included).
    pub fn in_flight(&self) -> u64 {
        self.in_flight
    }

    /// How far the run's request pattern got (mutual-exclusion workloads only).
    pub fn workload_tally(&self) -> Option<Tally<'_>> {
        let mut tally = self.workloads.iter().find_map(|w| w.tally())?;
        if let Some(issued) = self.windowed_issued {
            tally.issued = issued;
        }
        Some(tally)
    }

    /// Runs to quiescence or to the time limit, reporting progress every 65,536 steps: the
    /// workloads and the processes start, then, item by item: pop the next item, stop if the
    /// run is over before it, handle it, let the workloads react.
    pub fn run(&mut self, progress: &mut dyn FnMut(Progress)) {
        for i in 0..self.workloads.len() {
            self.drive(i, |w, cx| w.start(cx));
        }
        self.start_processes();
        let sampling = self.checker.clock_sample_period().filter(|&p| p > 0);
        let mut next_sample: Time = 0;
        while let Some((time, seq, item)) = self.queue.pop() {
            if let Some(period) = sampling {
                let before = self.violations.len();
                self.sample_clocks(time.min(self.cfg.duration), period, &mut next_sample);
                self.trace_new_violations(before);
            }
            if self.over_before(time, &item) {
                break;
            }
            self.now = time;
            self.step += 1;
            self.prefetch_upcoming();
            let before = self.violations.len();
            self.handle(seq, item);
            let in_flight = self.algo_in_flight;
            self.drive_all(|w, cx| w.after_step(in_flight, cx));
            self.trace_new_violations(before);
            if self.step & 0xFFFF == 0 {
                progress(Progress {
                    step: self.step,
                    now: self.now,
                    duration: self.cfg.duration,
                    queued: self.queue.len(),
                });
            }
        }
        self.finish(sampling, next_sample);
    }

    /// Every process starts, in position order.
    fn start_processes(&mut self) {
        for node in 0..self.uids.len() as NodeId {
            self.trace(RecordKind::Start, Some(node), None, |_| {});
            self.call(node, |p, cx, out| p.on_start(cx, out));
        }
    }

    /// True when the run is over before the item popped at `time`: it comes after the time
    /// limit, or the run reached a steady state (see [`Stop`]). Sets why it stopped.
    fn over_before(&mut self, time: Time, item: &ItemOf<A>) -> bool {
        let story = item.is_story();
        if story {
            self.scripted -= 1;
        }
        if time > self.cfg.duration {
            self.now = self.cfg.duration;
            self.stop = Stop::Duration;
            return true;
        }
        if !story && self.steady_at(time) {
            self.now = time;
            self.stop = Stop::Steady;
            return true;
        }
        false
    }

    /// The run is over: the last clock samples, then the checker judges the end state.
    fn finish(&mut self, sampling: Option<Time>, mut next_sample: Time) {
        if let Some(period) = sampling {
            // Physical clocks keep drifting when nothing is left to happen (a crashed Berkeley
            // master, say): the observation runs to the end of the run, not to the last event.
            if self.stop == Stop::Quiescent && self.clocks.is_some() && self.now < self.cfg.duration {
                self.now = self.cfg.duration;
            }
            self.sample_clocks(self.now, period, &mut next_sample);
        }
        let before = self.violations.len();
        let at = self.stamp();
        self.violations.set_cut_off(self.stop == Stop::Duration);
        self.judge(|c, w, v| c.finish(w, at, v));
        self.trace_new_violations(before);
    }

    /// The uids by position.
    pub fn uids(&self) -> &[Uid] {
        &self.uids
    }

    /// The communication graph the run was built on.
    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    /// Steps processed.
    pub fn steps(&self) -> u64 {
        self.step
    }

    /// Virtual time reached.
    pub fn now(&self) -> Time {
        self.now
    }

    /// Why the run stopped.
    pub fn stopped(&self) -> Stop {
        self.stop
    }

    /// Message counters.
    pub fn counters(&self) -> &MessageCounts {
        &self.counters
    }

    /// Violations found.
    pub fn violations(&self) -> &Violations {
        &self.violations
    }

    /// The checker's properties, outcome and latencies.
    pub fn checker_report(&self) -> (Vec<Property>, checkers::FamilyReport) {
        let world = self.world();
        let mut report = self.checker.report(&world);
        let live: Vec<bool> = (0..self.states.len() as NodeId).map(|i| world.alive(i)).collect();
        for (key, value) in A::final_outcome(&self.states, &live) {
            let set = report.outcome.set_final(key, value);
            assert!(
                set,
                "{}'s final outcome names {key}, a field its family's outcome does not have",
                A::NAME
            );
        }
        (self.checker.properties(), report)
    }

    /// The process states, by position (for tests and inspection).
    pub fn states(&self) -> &[A] {
        &self.states
    }

    /// Takes the tracer out (to finish the file).
    pub fn take_tracer(&mut self) -> Option<Tracer> {
        self.tracer.take()
    }
}
