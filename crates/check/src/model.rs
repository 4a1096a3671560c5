//! The adapter: any [`PlainAlgorithm`] as a stateright [`Model`](stateright::Model) (the trait impl
//! is in `search`).
//!
//! A [`State`] is every process's own state, the messages in flight, the armed timers, who is
//! crashed, what the application may still ask, and what each node has *reported* (the
//! observable events the simulator's checkers judge). A [`Step`] is one thing that may happen
//! next; [`CheckModel::steps`] lists every one of them, so the checker explores every order.

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};

use ringleader_algorithms::{Family, Info, Params, PlainAlgorithm, Setup};
use ringleader_core::time::MILLISECOND;
use ringleader_core::trace::{RecordKind, TraceRecord};
use ringleader_core::{
    Command, Context, Event, Message, NodeId, Outbox, PlainState, Process, Request, Time, Topology, Uid,
};
use ringleader_judge::checkers::mutex::fencing_regression;
use ringleader_judge::checkers::{NodeStatus, World};
use ringleader_judge::trace::Tracer;

use crate::network::{InFlight, NetworkKind, Packet};
use crate::property::ModelProperty;

/// What to explore: the system, its network, its faults and what the application may ask.
#[derive(Clone, Debug)]
pub struct Bounds {
    /// Number of nodes; position `i` holds uid `i + 1`.
    pub nodes: u32,
    /// What the network may do with messages.
    pub network: NetworkKind,
    /// How many crashes may happen in one execution (any node, at any moment).
    pub crashes: u32,
    /// Whether a crashed node may recover (`Process::on_recover`), at any moment.
    pub recover: bool,
    /// Election family: the positions that may be asked to start an election, once each, at
    /// any moment.
    pub initiators: Vec<NodeId>,
    /// Mutex family: the positions that may ask for the critical section.
    pub requesters: Vec<NodeId>,
    /// Mutex family: how many times each requester may ask (Acquire) in one execution.
    pub acquires: u32,
    /// Algorithm parameters (`--param k=v`).
    pub params: BTreeMap<String, String>,
    /// The delay bound handed to the algorithm's configuration (its timeouts are derived from
    /// it, but the model ignores durations: a timer may fire at any moment).
    pub max_delay: Time,
}

impl Bounds {
    /// The default exploration of `nodes` nodes: unordered reliable network, no crashes, every
    /// node may start one election; every node but position 0 may ask once for the critical
    /// section (position 0 is the coordinator of the centralized algorithms, as in the
    /// simulator's default sequential workload).
    pub fn new(nodes: u32) -> Bounds {
        Bounds {
            nodes,
            network: NetworkKind::Unordered,
            crashes: 0,
            recover: false,
            initiators: (0..nodes).collect(),
            requesters: (1..nodes).collect(),
            acquires: 1,
            params: BTreeMap::new(),
            max_delay: MILLISECOND,
        }
    }
}

/// One thing that may happen next.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Step<M, T> {
    /// The application asks `node` something.
    Request {
        /// Position asked.
        node: NodeId,
        /// What it is asked.
        request: Request,
    },
    /// The network delivers a message.
    Deliver(Packet<M>),
    /// The network loses a message (lossy network, or its receiver is down).
    Drop(Packet<M>),
    /// An armed timer of `node` fires (durations are ignored: any armed timer may fire now).
    Timer {
        /// Position.
        node: NodeId,
        /// The timer.
        timer: T,
    },
    /// `node` crashes: it loses its timers and receives nothing until it recovers.
    Crash(NodeId),
    /// `node` recovers: `Process::on_recover` runs.
    Recover(NodeId),
}

/// The step type of algorithm `A`.
pub type StepOf<A> = Step<<A as Process>::Msg, <A as Process>::Timer>;

/// What the checkers know of one node: its fault status, its armed timers, what the
/// application may still ask of it, and what it has reported.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ModelNode<T: Ord> {
    /// Crashed (until it recovers).
    pub crashed: bool,
    /// Armed timers (a timer is armed or not; re-arming is the same state).
    pub timers: BTreeSet<T>,
    /// Requests the application may still make (StartElection or Acquire).
    pub requests_left: u32,
    /// The coordinator and term the node last reported (`Event::Leader`).
    pub belief: Option<(Uid, u64)>,
    /// Reported `Event::Entered` and not yet `Event::Exited`.
    pub holding: bool,
    /// Asked to Acquire and has not entered yet.
    pub waiting: bool,
}

/// The global state of the model.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct State<A: PlainState> {
    /// Each process's own state, by position.
    pub procs: Vec<A>,
    /// What the driver and the checkers know of each node, by position.
    pub nodes: Vec<ModelNode<A::Timer>>,
    /// Messages in flight.
    pub network: InFlight<A::Msg>,
    /// Crashes so far.
    pub crashes: u32,
    /// Some node reported `ElectionStarted`.
    pub started: bool,
    /// The fencing token of the last entry.
    pub last_fencing: Option<u64>,
    /// The first entry whose fencing token was not above the previous one: (node, token,
    /// previous).
    pub fencing_broken: Option<(NodeId, u64, u64)>,
}

/// Algorithm `A` under [`Bounds`], as a stateright model.
pub struct CheckModel<A: PlainAlgorithm> {
    /// What is explored.
    pub bounds: Bounds,
    /// The algorithm's description.
    pub info: Info,
    /// Uid by position.
    pub uids: Vec<Uid>,
    /// The topology the algorithm is written for.
    pub topology: Topology,
    config: A::Config,
    /// Properties already discovered, one bit per [`ModelProperty::bit`] (see
    /// [`CheckModel::latch_always`]); `None` when not latching (the explorer).
    latched: Option<AtomicU64>,
    /// Once set, no state has successors: the search drains what it holds and ends (a budget
    /// ran out). Shared with whoever watches the run.
    pub halt: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// Explore every reachable state even after every property is decided
    /// ([`crate::Options::exhaustive`]).
    pub exhaustive: bool,
}

/// The handlers' outbox type of `A`.
type Out<A> = Outbox<<A as Process>::Msg, <A as Process>::Timer>;

thread_local! {
    /// Set when a handler run on this thread reports `Entered` (see
    /// [`CheckModel::apply_noting_entry`]).
    static ENTERED: Cell<bool> = const { Cell::new(false) };
}

impl<A: PlainAlgorithm> CheckModel<A> {
    /// Configures `A` under `bounds`; a bad parameter or bound is a one-line error.
    pub fn new(bounds: Bounds) -> Result<Self, crate::CheckError> {
        let n = bounds.nodes;
        if !(1..=16).contains(&n) {
            return Err(crate::CheckError::Nodes(n));
        }
        if let Some(&p) = bounds.initiators.iter().chain(&bounds.requesters).find(|&&p| p >= n) {
            return Err(crate::CheckError::NoSuchPosition { position: p, nodes: n });
        }
        let uids: Vec<Uid> = (1..=n as Uid).collect();
        let mut rng = <rand_xoshiro::Xoshiro256PlusPlus as rand::SeedableRng>::seed_from_u64(1);
        let topology = A::TOPOLOGY.default_topology(n, None, &mut rng)?;
        let params = Params::new(bounds.params.clone());
        let setup =
            Setup { uids: &uids, topology: &topology, params: &params, max_delay: bounds.max_delay, seed: 1 };
        let config = ringleader_algorithms::configure::<A>(&setup)?;
        Ok(CheckModel {
            bounds,
            info: Info::of::<A>(),
            uids,
            topology,
            config,
            latched: Some(AtomicU64::new(0)),
            halt: Default::default(),
            exhaustive: false,
        })
    }

    /// The same model without latches: every state reports every property as it is (for the
    /// interactive explorer, where states are visited in any order).
    pub fn unlatched(mut self) -> Self {
        self.latched = None;
        self
    }

    /// Judges the `always` property `p` in one state: `violation` says why it is violated
    /// there, if it is. After the first violation the property reports "holds" everywhere, so
    /// that the checker keeps the first counterexample found — with a breadth-first search on
    /// one thread, a shortest one.
    pub fn latch_always(&self, p: ModelProperty, violation: impl FnOnce() -> Option<String>) -> bool {
        let Some(latched) = &self.latched else { return violation().is_none() };
        let bit = p.bit();
        if latched.load(Ordering::Relaxed) & bit != 0 {
            return true;
        }
        let holds = violation().is_none();
        if !holds {
            latched.fetch_or(bit, Ordering::Relaxed);
        }
        holds
    }

    /// Judges the `sometimes` property `p` in one state; after the first state that reaches
    /// it, reports "not reached" everywhere (see [`CheckModel::latch_always`]).
    pub fn latch_sometimes(&self, p: ModelProperty, reached: impl FnOnce() -> bool) -> bool {
        let Some(latched) = &self.latched else { return reached() };
        let bit = p.bit();
        if latched.load(Ordering::Relaxed) & bit != 0 {
            return false;
        }
        let yes = reached();
        if yes {
            latched.fetch_or(bit, Ordering::Relaxed);
        }
        yes
    }

    fn setup_params(&self) -> Params {
        Params::new(self.bounds.params.clone())
    }

    /// The state before anything happens: every node constructed and started.
    pub fn initial(&self, mut rec: Option<&mut Recording>) -> State<A> {
        let params = self.setup_params();
        let setup = Setup {
            uids: &self.uids,
            topology: &self.topology,
            params: &params,
            max_delay: self.bounds.max_delay,
            seed: 1,
        };
        let n = self.bounds.nodes;
        let left = |p: NodeId| match self.info.family {
            Family::Election => u32::from(self.bounds.initiators.contains(&p)),
            Family::Mutex if self.bounds.requesters.contains(&p) => self.bounds.acquires,
            _ => 0,
        };
        let mut s = State {
            procs: (0..n).map(|i| A::new(i, &self.config, &setup)).collect(),
            nodes: (0..n)
                .map(|p| ModelNode {
                    crashed: false,
                    timers: BTreeSet::new(),
                    requests_left: left(p),
                    belief: None,
                    holding: false,
                    waiting: false,
                })
                .collect(),
            network: InFlight::default(),
            crashes: 0,
            started: false,
            last_fencing: None,
            fencing_broken: None,
        };
        for node in 0..n {
            if let Some(r) = rec.as_deref_mut() {
                r.record(RecordKind::Start, Some(node), |_| {});
            }
            self.call(&mut s, node, rec.as_deref_mut(), |p, cx, out| p.on_start(cx, out));
        }
        s
    }

    /// Runs one handler of `node` and carries out its outbox. The clock reads 0 (only timers
    /// measure time) and the step's randomness is fixed per node (randomness is not explored).
    fn call(
        &self,
        s: &mut State<A>,
        node: NodeId,
        mut rec: Option<&mut Recording>,
        f: impl FnOnce(&mut A, &Context, &mut Out<A>),
    ) {
        let cx = Context {
            me: node,
            uids: &self.uids,
            topology: &self.topology,
            now: 0,
            random: 0x9E37_79B9_7F4A_7C15 ^ node as u64,
        };
        let mut out = Out::<A>::new();
        f(&mut s.procs[node as usize], &cx, &mut out);
        for command in out.drain() {
            match command {
                Command::Send { to, msg } => {
                    if let Some(r) = rec.as_deref_mut() {
                        r.send(node, to, &msg);
                    }
                    s.network.send(self.bounds.network, Packet::new(node, to, msg));
                }
                Command::SetTimer { timer, .. } => {
                    s.nodes[node as usize].timers.insert(timer);
                }
                Command::CancelTimer(timer) => {
                    s.nodes[node as usize].timers.remove(&timer);
                }
                Command::Emit(event) => {
                    self.observe(s, node, &event);
                    if let Some(r) = rec.as_deref_mut() {
                        r.record(RecordKind::Emit, Some(node), |x| x.event = Some(event));
                    }
                }
                Command::AdjustClock(_) => {}
            }
        }
    }

    /// Updates what the checkers know from an event `node` reported.
    fn observe(&self, s: &mut State<A>, node: NodeId, event: &Event) {
        let v = &mut s.nodes[node as usize];
        match *event {
            Event::ElectionStarted => s.started = true,
            Event::Leader { leader, term } => v.belief = Some((leader, term)),
            Event::LeaderLost => v.belief = None,
            Event::Entered { fencing } => {
                ENTERED.set(true);
                v.holding = true;
                v.waiting = false;
                if let Some(prev) = fencing_regression(s.last_fencing, fencing) {
                    s.fencing_broken.get_or_insert((node, fencing, prev));
                }
                s.last_fencing = Some(fencing);
            }
            Event::Exited => v.holding = false,
            _ => {}
        }
    }

    /// Carries out `step`; false when it is not possible in `s`.
    pub fn apply(&self, s: &mut State<A>, step: StepOf<A>, mut rec: Option<&mut Recording>) -> bool {
        if let Some(r) = rec.as_deref_mut() {
            r.step += 1;
        }
        let kind = self.bounds.network;
        match step {
            Step::Request { node, request } => {
                let v = &mut s.nodes[node as usize];
                match request {
                    Request::Acquire | Request::StartElection => {
                        v.requests_left = v.requests_left.saturating_sub(1);
                        if request == Request::Acquire && !v.holding {
                            v.waiting = true;
                        }
                    }
                    _ => {}
                }
                if let Some(r) = rec.as_deref_mut() {
                    let q = request.clone();
                    r.record(RecordKind::Request, Some(node), |x| x.request = Some(q));
                }
                self.call(s, node, rec, |p, cx, out| p.on_request(cx, request, out));
            }
            Step::Deliver(e) => {
                if s.nodes[e.to as usize].crashed || !s.network.deliver(kind, &e) {
                    return false;
                }
                if let Some(r) = rec.as_deref_mut() {
                    r.deliver(e.from, e.to, &e.msg);
                }
                let from = e.from;
                self.call(s, e.to, rec, |p, cx, out| p.on_message(cx, from, e.msg, out));
            }
            Step::Drop(e) => {
                if !s.network.remove(&e) {
                    return false;
                }
                if let Some(r) = rec.as_deref_mut() {
                    let why = if s.nodes[e.to as usize].crashed { "receiver crashed" } else { "lost" };
                    r.drop(e.from, e.to, &e.msg, why);
                }
            }
            Step::Timer { node, timer } => {
                if !s.nodes[node as usize].timers.remove(&timer) {
                    return false;
                }
                if let Some(r) = rec.as_deref_mut() {
                    let name = format!("{timer:?}");
                    r.record(RecordKind::Timer, Some(node), |x| x.timer = Some(name));
                }
                self.call(s, node, rec, |p, cx, out| p.on_timer(cx, timer, out));
            }
            Step::Crash(node) => {
                let v = &mut s.nodes[node as usize];
                v.crashed = true;
                v.timers.clear();
                v.belief = None;
                v.holding = false;
                v.waiting = false;
                s.crashes += 1;
                if let Some(r) = rec {
                    r.record(RecordKind::Crash, Some(node), |_| {});
                }
            }
            Step::Recover(node) => {
                let v = &mut s.nodes[node as usize];
                v.crashed = false;
                v.belief = None;
                if let Some(r) = rec.as_deref_mut() {
                    r.record(RecordKind::Recover, Some(node), |_| {});
                }
                self.call(s, node, rec, |p, cx, out| p.on_recover(cx, out));
            }
        }
        true
    }

    /// [`CheckModel::apply`], also saying whether the step reported `Entered` (the one report
    /// whose order between nodes the state keeps: see [`crate::sleep_sets`]); `None` when the
    /// step is not possible in `s`.
    pub(crate) fn apply_noting_entry(&self, s: &mut State<A>, step: StepOf<A>) -> Option<bool> {
        ENTERED.set(false);
        self.apply(s, step, None).then(|| ENTERED.get())
    }

    /// Every step possible in `s`, in a fixed order: requests, deliveries, timers, drops,
    /// crashes, recoveries.
    pub fn steps(&self, s: &State<A>, steps: &mut Vec<StepOf<A>>) {
        self.progress_steps(s, steps);
        let kind = self.bounds.network;
        for e in s.network.deliverable(kind) {
            if kind == NetworkKind::Lossy || s.nodes[e.to as usize].crashed {
                steps.push(Step::Drop(e.clone()));
            }
        }
        if s.crashes < self.bounds.crashes {
            for (p, v) in s.nodes.iter().enumerate() {
                if !v.crashed {
                    steps.push(Step::Crash(p as NodeId));
                }
            }
        }
    }

    /// The steps that make progress: requests, deliveries, timers and recoveries (not losses
    /// nor crashes).
    fn progress_steps(&self, s: &State<A>, steps: &mut Vec<StepOf<A>>) {
        for (p, v) in s.nodes.iter().enumerate() {
            let node = p as NodeId;
            if v.crashed {
                continue;
            }
            match self.info.family {
                Family::Election if v.requests_left > 0 => {
                    steps.push(Step::Request { node, request: Request::StartElection })
                }
                Family::Mutex if v.holding => steps.push(Step::Request { node, request: Request::Release }),
                Family::Mutex if v.requests_left > 0 && !v.waiting => {
                    steps.push(Step::Request { node, request: Request::Acquire })
                }
                _ => {}
            }
        }
        let kind = self.bounds.network;
        for e in s.network.deliverable(kind) {
            if !s.nodes[e.to as usize].crashed {
                steps.push(Step::Deliver(e.clone()));
            }
        }
        for (p, v) in s.nodes.iter().enumerate() {
            if !v.crashed {
                for t in &v.timers {
                    steps.push(Step::Timer { node: p as NodeId, timer: t.clone() });
                }
            }
        }
        if self.bounds.recover {
            for (p, v) in s.nodes.iter().enumerate() {
                if v.crashed {
                    steps.push(Step::Recover(p as NodeId));
                }
            }
        }
    }

    /// True when nothing but losses and crashes can happen any more: no request the application
    /// may still make, no message a live node may receive, no armed timer, no recovery. The
    /// end-of-run properties (termination, agreement, validity, liveness) are judged here, as
    /// the simulator judges them when its queue runs dry.
    pub fn quiescent(&self, s: &State<A>) -> bool {
        let mut steps = Vec::new();
        self.progress_steps(s, &mut steps);
        steps.is_empty()
    }

    /// The fault status of every node, as the simulator's checkers read it.
    pub fn status(&self, s: &State<A>) -> Vec<NodeStatus> {
        s.nodes.iter().map(|v| if v.crashed { NodeStatus::Crashed } else { NodeStatus::Up }).collect()
    }

    /// The global view the simulator's checkers take, over `status`.
    pub fn world<'a>(&'a self, status: &'a [NodeStatus]) -> World<'a> {
        World { uids: &self.uids, status, rule: self.info.leader_rule }
    }

    /// Replays `steps` from the initial state, recording the trace in the simulator's format.
    /// Returns the recording and the final state; `None` if a step is not possible.
    pub fn replay(&self, steps: &[StepOf<A>]) -> Option<(Recording, State<A>)> {
        let mut rec = Recording::new(&self.uids, self.bounds.network == NetworkKind::Duplicating);
        let mut s = self.initial(Some(&mut rec));
        for step in steps {
            if !self.apply(&mut s, step.clone(), Some(&mut rec)) {
                return None;
            }
        }
        Some((rec, s))
    }
}

/// A trace being recorded while a counterexample is replayed: the simulator's records, stamped
/// by its [`Tracer`]; the step number is the position in the path and time is 1 ms per step.
pub struct Recording {
    tracer: Tracer,
    uids: Vec<Uid>,
    /// The current step (0 for the start).
    pub step: u64,
    next_id: u64,
    in_flight: Vec<(NodeId, NodeId, serde_json::Value, u64)>,
    keep_delivered: bool,
}

impl Recording {
    /// An empty recording for nodes with `uids`; `keep_delivered` for a duplicating network,
    /// where a delivered message stays in flight.
    pub fn new(uids: &[Uid], keep_delivered: bool) -> Recording {
        Recording {
            tracer: Tracer::new(uids.len(), None, true).expect("an in-memory tracer opens no file"),
            uids: uids.to_vec(),
            step: 0,
            next_id: 0,
            in_flight: Vec::new(),
            keep_delivered,
        }
    }

    fn record(&mut self, kind: RecordKind, node: Option<NodeId>, fill: impl FnOnce(&mut TraceRecord)) {
        let mut r = TraceRecord::new(self.step, self.step * MILLISECOND, kind);
        r.node = node;
        r.uid = node.map(|n| self.uids[n as usize]);
        fill(&mut r);
        self.tracer.record(r);
    }

    fn send<M: Message>(&mut self, from: NodeId, to: NodeId, msg: &M) {
        let id = self.next_id;
        self.next_id += 1;
        let value = serde_json::to_value(msg).unwrap_or_default();
        self.in_flight.push((from, to, value.clone(), id));
        self.record(RecordKind::Send, Some(from), |r| {
            r.peer = Some(to);
            r.msg_id = Some(id);
            r.msg_kind = Some(msg.kind().into());
            r.msg = Some(value);
        });
    }

    fn take_id(&mut self, from: NodeId, to: NodeId, value: &serde_json::Value, keep: bool) -> Option<u64> {
        let i = self.in_flight.iter().position(|(f, t, v, _)| (*f, *t) == (from, to) && v == value)?;
        let id = self.in_flight[i].3;
        if !keep {
            self.in_flight.remove(i);
        }
        Some(id)
    }

    fn deliver<M: Message>(&mut self, from: NodeId, to: NodeId, msg: &M) {
        let value = serde_json::to_value(msg).unwrap_or_default();
        let id = self.take_id(from, to, &value, self.keep_delivered);
        self.record(RecordKind::Deliver, Some(to), |r| {
            r.peer = Some(from);
            r.msg_id = id;
            r.msg_kind = Some(msg.kind().into());
            r.msg = Some(value);
        });
    }

    fn drop<M: Message>(&mut self, from: NodeId, to: NodeId, msg: &M, why: &str) {
        let value = serde_json::to_value(msg).unwrap_or_default();
        let id = self.take_id(from, to, &value, false);
        self.record(RecordKind::Drop, Some(to), |r| {
            r.peer = Some(from);
            r.msg_id = id;
            r.msg_kind = Some(msg.kind().into());
            r.detail = Some(why.into());
        });
    }

    /// Adds a violation record of `property` at the current step.
    pub fn violation(&mut self, property: &str, detail: String) {
        let p = property.to_string();
        self.record(RecordKind::Violation, None, |r| {
            r.property = Some(p);
            r.detail = Some(detail);
        });
    }

    /// The records.
    pub fn finish(self) -> Vec<TraceRecord> {
        self.tracer.finish().expect("an in-memory tracer cannot fail").records
    }
}
