//! The discrete-event engine: virtual time, one event queue, one seeded generator.
//!
//! Events wait in an [`EventQueue`] (a calendar of time buckets in front of a binary heap)
//! ordered by (virtual time, sequence number); the sequence number breaks ties in scheduling
//! order, so runs are deterministic. Every random choice — latencies,
//! loss, duplication, workloads, the randomness handed to processes — comes from one
//! Xoshiro256++ stream seeded by `--seed`.
//!
//! One step = one event taken from the queue: a delivery, a timer, an application request or a
//! fault. The process's handler runs, its outbox is carried out in order, the checker sees every
//! emitted event, and the trace (when asked for) gets one record per thing that happened.
//!
//! The hot path allocates nothing per event: the outbox buffer is reused, messages live inline
//! in the queue entries, timers are a short per-node list, and tracing costs one branch when off.

use std::collections::BTreeMap;

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use ringleader_algorithms::{Algorithm, Info, Params, Setup};
use ringleader_core::trace::{RecordKind, TraceRecord};
use ringleader_core::{Action, Context, Event, Message, NodeId, Outbox, Request, Time, Topology, Uid};

use crate::checkers::{self, Checker, Stamp, Status, Violations, World};
use crate::clock::Clock;
use crate::network::{Cut, Network};
use crate::queue::EventQueue;
use crate::scenario::{Initiators, RunConfig};
use crate::trace::Tracer;
use crate::workload::{Scheduled, Workload};
use crate::workload_deadlock::{DeadlockWorkload, Step, Tick};
use crate::{SimError, topologies};

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
    /// A timer of the deadlock workload.
    Tick(NodeId, Tick),
}

/// The scheduled items of algorithm `A`.
type ItemOf<A> = Item<<A as ringleader_core::Process>::Msg, <A as ringleader_core::Process>::Timer>;

/// How many events ahead the engine prefetches the receiver's state.
const PREFETCH_DISTANCE: usize = 6;

/// Message counters, by kind.
#[derive(Clone, Debug, Default)]
pub struct Counters {
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
}

impl Counters {
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
    status: Vec<Status>,
    timers: Vec<Vec<(A::Timer, u64)>>,
    deferred: BTreeMap<NodeId, Vec<(u64, ItemOf<A>)>>,
    /// Items a paused node deferred, rescheduled on resume: new sequence number → message id.
    renumbered: BTreeMap<u64, u64>,
    clocks: Option<Vec<Clock>>,
    queue: EventQueue<ItemOf<A>>,
    seq: u64,
    now: Time,
    step: u64,
    rng: Xoshiro256PlusPlus,
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
    workload: Option<Workload>,
    deadlock: Option<DeadlockWorkload>,
    checker: Box<dyn Checker + Send>,
    violations: Violations,
    counters: Counters,
    out: Outbox<A::Msg, A::Timer>,
    tracer: Option<Tracer>,
    stop: Stop,
    /// Buffer for the clock readings handed to the checker (clock families only).
    readings: Vec<Time>,
}

impl<A: Algorithm> Simulation<A> {
    /// Prepares a run: builds ids, topology, clocks and processes, schedules faults and workload.
    pub fn new(cfg: &RunConfig, tracer: Option<Tracer>) -> Result<Self, SimError> {
        let info = Info::of::<A>();
        let n = cfg.nodes;
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(cfg.seed);
        let uids = topologies::uids(n, cfg.ids, &mut rng);
        let topology =
            topologies::build_shape(A::TOPOLOGY, A::NAME, n, cfg.graph.as_ref(), cfg.edges, &mut rng)
                .map_err(SimError::Topology)?;
        let params = Params::new(cfg.params.clone());
        let setup = Setup {
            uids: &uids,
            topology: &topology,
            params: &params,
            max_delay: cfg.max_delay,
            seed: cfg.seed,
        };
        let config = A::configure(&setup)
            .map_err(|source| SimError::Param { algorithm: A::NAME, source: Box::new(source) })?;
        if let Some(key) = params.unknown().into_iter().next() {
            let allowed = params.asked();
            return Err(SimError::UnknownParameter {
                key,
                algorithm: A::NAME,
                takes: if allowed.is_empty() { "no parameters".into() } else { allowed.join(", ") },
            });
        }
        let states: Vec<A> = (0..n).map(|i| A::new(i, &config, &setup)).collect();
        let position: BTreeMap<Uid, NodeId> = if n <= 1 << 16
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
        };
        let pos = |u: Uid| position[&u];
        let mut cuts = Vec::new();
        for p in &cfg.partition {
            let side = |v: &[Uid]| {
                let mut s: Vec<NodeId> = v.iter().map(|&u| pos(u)).collect();
                s.sort_unstable();
                s
            };
            cuts.push(Cut { left: side(&p.left), right: side(&p.right), one_way: p.one_way, active: false });
        }
        let net = Network::new(&cfg.latency, cfg.loss, cfg.dup, cfg.fifo, cuts);
        let clocks = (cfg.clock_offset > 0 || cfg.clock_drift_ppm > 0).then(|| {
            use rand::RngExt;
            let (o, d) = (cfg.clock_offset as i64, cfg.clock_drift_ppm as i64);
            // Offsets spread over ±o around o rather than around 0, so that no clock reads below
            // zero near the start (readings are unsigned); pairwise skews are the same.
            (0..n)
                .map(|_| {
                    Clock::new(o + rng.random_range(-o..=o), rng.random_range(-d..=d))
                        .with_correction(cfg.clock_slew_ppm, cfg.clock_step_forward)
                })
                .collect()
        });
        let mut sim = Simulation {
            cfg: cfg.clone(),
            info,
            checker: checkers::for_algorithm(&info, n as usize),
            uids,
            topology,
            states,
            status: vec![Status::Up; n as usize],
            timers: vec![Vec::new(); n as usize],
            deferred: BTreeMap::new(),
            renumbered: BTreeMap::new(),
            clocks,
            queue: EventQueue::new(cfg.latency.bound()),
            seq: 0,
            now: 0,
            step: 0,
            rng,
            net,
            in_flight: 0,
            algo_in_flight: 0,
            scripted: 0,
            last_progress: 0,
            longest_timer: 0,
            workload: cfg.workload.map(|k| {
                let requesters = cfg.requesters.as_ref().map(|r| r.iter().map(|&u| pos(u)).collect());
                Workload::new(k, n, requesters, cfg.entries, cfg.hold, cfg.rate).with_fanout(cfg.fanout)
            }),
            deadlock: (info.family == ringleader_algorithms::Family::Deadlock).then(|| {
                DeadlockWorkload::new(n, cfg.entries, cfg.hold, cfg.fanout, cfg.cycles, cfg.max_delay)
            }),
            violations: Violations::default(),
            counters: Counters {
                sent_by_kind: vec![0; <A::Msg as Message>::KINDS.len()],
                detection_by_kind: vec![0; <A::Msg as Message>::KINDS.len()],
                bursts_by_kind: vec![0; <A::Msg as Message>::KINDS.len()],
                last_burst: vec![None; <A::Msg as Message>::KINDS.len()],
                ..Counters::default()
            },
            out: Outbox::new(),
            tracer,
            stop: Stop::Quiescent,
            readings: Vec::new(),
        };
        // Faults first, so that a crash at time 0 precedes the requests made at time 0.
        for a in &cfg.crash {
            sim.schedule(a.time, Item::Fault(Fault::Crash(pos(a.uid))));
        }
        for a in &cfg.recover {
            sim.schedule(a.time, Item::Fault(Fault::Recover(pos(a.uid))));
        }
        for p in &cfg.pause {
            sim.schedule(p.from, Item::Fault(Fault::Pause(pos(p.uid))));
            sim.schedule(p.to, Item::Fault(Fault::Resume(pos(p.uid))));
        }
        for (i, p) in cfg.partition.iter().enumerate() {
            sim.schedule(p.from, Item::Fault(Fault::Cut(i)));
            sim.schedule(p.to, Item::Fault(Fault::Heal(i)));
        }
        let dead_at_start: Vec<NodeId> = cfg
            .crash
            .iter()
            .filter(|a| a.time == 0 && !cfg.recover.iter().any(|r| r.uid == a.uid && r.time == 0))
            .map(|a| pos(a.uid))
            .collect();
        let live_at_start = |i: NodeId| !dead_at_start.contains(&i);
        let initiators: Vec<NodeId> = match &cfg.initiators {
            Initiators::None => Vec::new(),
            Initiators::All => (0..n).filter(|&i| live_at_start(i)).collect(),
            Initiators::Lowest => (0..n)
                .filter(|&i| live_at_start(i))
                .min_by_key(|&i| sim.uids[i as usize])
                .into_iter()
                .collect(),
            Initiators::Highest => (0..n)
                .filter(|&i| live_at_start(i))
                .max_by_key(|&i| sim.uids[i as usize])
                .into_iter()
                .collect(),
            Initiators::Ids(ids) => ids.iter().map(|&u| pos(u)).collect(),
        };
        for node in initiators {
            sim.schedule(0, Item::Request(Box::new((node, Request::StartElection))));
        }
        if let Some(mut w) = sim.workload.take() {
            for s in w.initial(&mut sim.rng, &sim.status) {
                sim.schedule_request(s);
            }
            sim.workload = Some(w);
        }
        if let Some(mut w) = sim.deadlock.take() {
            let steps = w.initial(&mut sim.rng);
            sim.deadlock = Some(w);
            sim.schedule_steps(steps);
        }
        Ok(sim)
    }

    /// Schedules `item` at `time`; its sequence number (which is also a message's id) orders
    /// it after everything scheduled before at the same time.
    fn schedule(&mut self, time: Time, item: ItemOf<A>) -> u64 {
        if matches!(item, Item::Request(_) | Item::Fault(_) | Item::Tick(..)) {
            self.scripted += 1;
        }
        let seq = self.seq;
        self.seq += 1;
        self.queue.push(time, seq, item);
        seq
    }

    fn schedule_request(&mut self, (time, node, req): Scheduled) {
        self.schedule(time, Item::Request(Box::new((node, req))));
    }

    fn schedule_steps(&mut self, steps: Vec<(Time, Step)>) {
        for (time, step) in steps {
            match step {
                Step::Ask(node, req) => self.schedule(time, Item::Request(Box::new((node, req)))),
                Step::Tick(node, tick) => self.schedule(time, Item::Tick(node, tick)),
            };
        }
    }

    fn stamp(&self) -> Stamp {
        Stamp { time: self.now, step: self.step }
    }

    /// The local clock reading of `node` now.
    pub fn local_time(&self, node: NodeId) -> Time {
        match &self.clocks {
            Some(c) => c[node as usize].read(self.now),
            None => self.now,
        }
    }

    fn trace(&mut self, kind: RecordKind, node: Option<NodeId>, fill: impl FnOnce(&mut TraceRecord)) {
        if let Some(t) = self.tracer.as_mut() {
            let mut r = TraceRecord::new(self.step, self.now, kind);
            r.node = node;
            r.uid = node.map(|n| self.uids[n as usize]);
            fill(&mut r);
            t.record(r);
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
            random: self.rng.next_u64(),
        };
        f(&mut self.states[node as usize], &cx, &mut self.out);
        self.apply(node);
    }

    fn apply(&mut self, node: NodeId) {
        let mut out = std::mem::take(&mut self.out);
        for action in out.drain() {
            match action {
                Action::Send { to, msg } => self.send(node, to, msg),
                Action::SetTimer { timer, after } => {
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
                Action::CancelTimer(timer) => self.timers[node as usize].retain(|(t, _)| *t != timer),
                Action::Emit(event) => self.emit(node, event),
                Action::AdjustClock(delta) => {
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
        if self.tracer.is_some() {
            let (kind, value) = (msg.kind(), serde_json::to_value(&msg).ok());
            self.trace(RecordKind::Send, Some(from), |r| {
                r.peer = Some(to);
                r.msg_id = Some(id);
                r.msg_kind = Some(kind.into());
                r.msg = value;
            });
        }
        match self.net.schedule(&mut self.rng, self.now, from, to) {
            None => {
                self.counters.dropped += 1;
                let kind = msg.kind();
                self.seq += 1;
                self.trace(RecordKind::Drop, Some(to), |r| {
                    r.peer = Some(from);
                    r.msg_id = Some(id);
                    r.msg_kind = Some(kind.into());
                    r.detail = Some("lost".into());
                });
            }
            Some(at) => {
                let dup = self.net.duplicate(&mut self.rng).then(|| msg.clone());
                self.in_flight += 1;
                self.algo_in_flight += u64::from(!detection);
                self.schedule(at, Item::Deliver { from, to, msg });
                if let Some(copy) = dup {
                    let at2 = self.net.schedule(&mut self.rng, self.now, from, to).unwrap_or(at);
                    let id2 = self.seq;
                    if self.tracer.is_some() {
                        let (kind, value) = (copy.kind(), serde_json::to_value(&copy).ok());
                        self.trace(RecordKind::Send, Some(from), |r| {
                            r.peer = Some(to);
                            r.msg_id = Some(id2);
                            r.msg_kind = Some(kind.into());
                            r.msg = value;
                            r.detail = Some("duplicate".into());
                        });
                    }
                    self.in_flight += 1;
                    self.algo_in_flight += u64::from(!detection);
                    self.schedule(at2, Item::Deliver { from, to, msg: copy });
                }
            }
        }
    }

    fn emit(&mut self, node: NodeId, event: Event) {
        self.last_progress = self.now;
        let at = self.stamp();
        let world = World { uids: &self.uids, status: &self.status, rule: self.info.leader_rule };
        self.checker.on_event(&world, node, &event, at, &mut self.violations);
        if let Some(mut w) = self.workload.take() {
            match event {
                Event::Entered { .. } => {
                    let s = w.on_entered(node, self.now, &mut self.rng);
                    self.schedule_request(s);
                }
                Event::Exited => {
                    if let Some(s) = w.on_exited(node, self.now, &mut self.rng) {
                        self.schedule_request(s);
                    }
                }
                _ => {}
            }
            self.workload = Some(w);
        }
        if event == Event::Aborted
            && let Some(mut w) = self.deadlock.take()
        {
            let steps = w.on_aborted(node, self.now, &mut self.rng);
            self.deadlock = Some(w);
            self.schedule_steps(steps);
        }
        if self.tracer.is_some() {
            self.trace(RecordKind::Emit, Some(node), |r| r.event = Some(event));
        }
    }

    /// Keeps an input of a paused node until it resumes (with its sequence number, so that a
    /// message keeps its id).
    fn defer(&mut self, node: NodeId, seq: u64, item: ItemOf<A>) {
        self.deferred.entry(node).or_default().push((seq, item));
    }

    fn process(&mut self, seq: u64, item: ItemOf<A>) {
        let id = if self.renumbered.is_empty() { seq } else { self.renumbered.remove(&seq).unwrap_or(seq) };
        match item {
            Item::Deliver { from, to, msg } => {
                if self.status[to as usize] == Status::Crashed || self.net.is_cut(from, to) {
                    self.in_flight -= 1;
                    self.algo_in_flight -= u64::from(!msg.is_detection());
                    self.counters.dropped += 1;
                    let reason = if self.status[to as usize] == Status::Crashed {
                        "receiver crashed"
                    } else {
                        "partition"
                    };
                    let kind = msg.kind();
                    self.trace(RecordKind::Drop, Some(to), |r| {
                        r.peer = Some(from);
                        r.msg_id = Some(id);
                        r.msg_kind = Some(kind.into());
                        r.detail = Some(reason.into());
                    });
                    return;
                }
                if self.status[to as usize] == Status::Paused {
                    self.defer(to, id, Item::Deliver { from, to, msg });
                    return;
                }
                self.in_flight -= 1;
                self.algo_in_flight -= u64::from(!msg.is_detection());
                self.counters.delivered += 1;
                if self.tracer.is_some() {
                    let (kind, value) = (msg.kind(), serde_json::to_value(&msg).ok());
                    self.trace(RecordKind::Deliver, Some(to), |r| {
                        r.peer = Some(from);
                        r.msg_id = Some(id);
                        r.msg_kind = Some(kind.into());
                        r.msg = value;
                    });
                }
                self.call(to, |p, cx, out| p.on_message(cx, from, msg, out));
            }
            Item::Timer { node, timer, generation } => {
                if self.status[node as usize] == Status::Crashed {
                    return;
                }
                let Some(idx) =
                    self.timers[node as usize].iter().position(|(t, g)| *t == timer && *g == generation)
                else {
                    return;
                };
                if self.status[node as usize] == Status::Paused {
                    self.defer(node, id, Item::Timer { node, timer, generation });
                    return;
                }
                self.timers[node as usize].swap_remove(idx);
                if self.tracer.is_some() {
                    let name = format!("{timer:?}");
                    self.trace(RecordKind::Timer, Some(node), |r| r.timer = Some(name));
                }
                self.call(node, |p, cx, out| p.on_timer(cx, timer, out));
            }
            Item::Request(b) => {
                let node = b.0;
                self.last_progress = self.now;
                if self.status[node as usize] == Status::Crashed {
                    // A workload request to a crashed node is lost: the workload hears of it,
                    // so that a sequential pattern asks the next live requester instead.
                    if b.1 == Request::Acquire
                        && let Some(w) = self.workload.as_mut()
                    {
                        w.on_lost(node);
                    }
                    return;
                }
                if self.status[node as usize] == Status::Paused {
                    self.defer(node, id, Item::Request(b));
                    return;
                }
                let (node, req) = *b;
                let at = self.stamp();
                let world = World { uids: &self.uids, status: &self.status, rule: self.info.leader_rule };
                self.checker.on_request(&world, node, &req, at, &mut self.violations);
                if self.tracer.is_some() {
                    let rq = req.clone();
                    self.trace(RecordKind::Request, Some(node), |r| r.request = Some(rq));
                }
                self.call(node, |p, cx, out| p.on_request(cx, req, out));
            }
            Item::Fault(f) => {
                self.last_progress = self.now;
                self.fault(f)
            }
            Item::Tick(node, tick) => {
                if let Some(mut w) = self.deadlock.take() {
                    let steps = w.on_tick(node, tick, self.now, &mut self.rng);
                    self.deadlock = Some(w);
                    self.schedule_steps(steps);
                }
            }
        }
    }

    fn fault(&mut self, f: Fault) {
        let at = self.stamp();
        match f {
            Fault::Crash(node) => {
                if self.status[node as usize] == Status::Crashed {
                    return;
                }
                self.status[node as usize] = Status::Crashed;
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
                if let Some(w) = self.workload.as_mut() {
                    w.on_crash(node);
                }
                self.trace(RecordKind::Crash, Some(node), |_| {});
                let world = World { uids: &self.uids, status: &self.status, rule: self.info.leader_rule };
                self.checker.on_crash(&world, node, at, &mut self.violations);
            }
            Fault::Recover(node) => {
                if self.status[node as usize] != Status::Crashed {
                    return;
                }
                self.status[node as usize] = Status::Up;
                self.trace(RecordKind::Recover, Some(node), |_| {});
                let world = World { uids: &self.uids, status: &self.status, rule: self.info.leader_rule };
                self.checker.on_recover(&world, node, at, &mut self.violations);
                self.call(node, |p, cx, out| p.on_recover(cx, out));
            }
            Fault::Pause(node) => {
                if self.status[node as usize] == Status::Up {
                    self.status[node as usize] = Status::Paused;
                    self.trace(RecordKind::Pause, Some(node), |_| {});
                }
            }
            Fault::Resume(node) => {
                if self.status[node as usize] == Status::Paused {
                    self.status[node as usize] = Status::Up;
                    self.trace(RecordKind::Resume, Some(node), |_| {});
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
                self.trace(if active { RecordKind::Partition } else { RecordKind::Heal }, None, |r| {
                    r.detail = Some(text)
                });
            }
        }
    }

    fn trace_new_violations(&mut self, before: usize) {
        if self.tracer.is_some() && self.violations.len() > before {
            let new: Vec<_> = self.violations.list()[before..].to_vec();
            for v in new {
                self.trace(RecordKind::Violation, None, |r| {
                    r.property = Some(v.property.into());
                    r.detail = Some(v.detail.clone());
                });
            }
        }
    }

    /// Hints the CPU to fetch the state of a node that receives a message a few events from now:
    /// on a large ring consecutive deliveries touch scattered nodes, and the cache miss on the
    /// receiver's state is most of the cost of a step.
    #[inline]
    fn prefetch_upcoming(&self) {
        #[cfg(target_arch = "x86_64")]
        if let Some(Item::Deliver { to, .. }) = self.queue.peek_ahead(PREFETCH_DISTANCE) {
            let p = self.states.as_ptr().wrapping_add(*to as usize) as *const i8;
            // SAFETY: prefetching is a hint; it never faults and reads nothing observable.
            unsafe { std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p) };
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
            let at = Stamp { time: t, step: self.step };
            let world = World { uids: &self.uids, status: &self.status, rule: self.info.leader_rule };
            self.checker.on_clocks(&world, &self.readings, at, &mut self.violations);
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
        use ringleader_algorithms::Family;
        self.scripted == 0
            && self.algo_in_flight == 0
            && matches!(self.info.family, Family::Election | Family::Mutex | Family::Deadlock)
            && time.saturating_sub(self.last_progress) >= self.steady_window()
            && self.workload.as_ref().is_none_or(|w| !w.is_waiting())
    }

    /// Every node's status now (up, crashed, paused), by position.
    pub fn status(&self) -> &[Status] {
        &self.status
    }

    /// Messages sent and not yet delivered or dropped (a paused receiver's inbox included).
    pub fn in_flight(&self) -> u64 {
        self.in_flight
    }

    /// The workload's summary (mutual-exclusion request patterns only).
    pub fn workload(&self) -> Option<&Workload> {
        self.workload.as_ref()
    }

    /// Runs to quiescence or to the time limit, reporting progress every 65,536 steps.
    pub fn run(&mut self, progress: &mut dyn FnMut(Progress)) {
        for node in 0..self.uids.len() as NodeId {
            self.trace(RecordKind::Start, Some(node), |_| {});
            self.call(node, |p, cx, out| p.on_start(cx, out));
        }
        let sampling = self.checker.clock_sample_period().filter(|&p| p > 0);
        let mut next_sample: Time = 0;
        while let Some((time, seq, item)) = self.queue.pop() {
            if let Some(period) = sampling {
                let before = self.violations.len();
                self.sample_clocks(time.min(self.cfg.duration), period, &mut next_sample);
                self.trace_new_violations(before);
            }
            let story = matches!(item, Item::Request(_) | Item::Fault(_) | Item::Tick(..));
            if story {
                self.scripted -= 1;
            }
            if time > self.cfg.duration {
                self.now = self.cfg.duration;
                self.stop = Stop::Duration;
                break;
            }
            if !story && self.steady_at(time) {
                self.now = time;
                self.stop = Stop::Steady;
                break;
            }
            self.now = time;
            self.step += 1;
            self.prefetch_upcoming();
            let before = self.violations.len();
            self.process(seq, item);
            if let Some(w) = self.workload.as_mut()
                && let Some(s) = w.after_step(self.algo_in_flight, self.now, &self.status)
            {
                self.schedule_request(s);
            }
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
        let world = World { uids: &self.uids, status: &self.status, rule: self.info.leader_rule };
        self.checker.finish(&world, at, &mut self.violations);
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
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Violations found.
    pub fn violations(&self) -> &Violations {
        &self.violations
    }

    /// The checker's properties, outcome and latencies.
    pub fn checker_report(&self) -> (Vec<&'static str>, checkers::FamilyReport) {
        let world = self.world();
        let mut report = self.checker.report(&world);
        let live: Vec<bool> = (0..self.states.len() as NodeId).map(|i| world.alive(i)).collect();
        for (key, value) in A::final_outcome(&self.states, &live) {
            report.outcome.insert(key.into(), value.into());
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
