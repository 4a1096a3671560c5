//! The windowed engine: one run split across threads, with the same trace on any number of them.
//!
//! `--threads T` splits the positions into T contiguous shards, one per thread. Each shard has
//! its own event queue and runs its nodes' events; a message to another shard's node waits in a
//! mailbox until the end of the round. What keeps the threads apart is the network's *lookahead*
//! `L`, the least delay any message can have (`constant:d` gives `d`, `uniform:a..b` gives `a`):
//! an event at time `t` can affect another shard no earlier than `t + L`, and no earlier than
//! `t + h·L` when the topology is not complete and the event's node is `h` links from the nearest
//! node of another shard (a ring shard's middle is far from its ends). Every round, each shard
//! publishes the earliest time anything it holds can reach another shard; shard `i` may then run
//! every event earlier than its *horizon*, the least of the other shards' figures
//! (Chandy–Misra–Bryant conservative synchronisation, in rounds). The horizon shrinks while the
//! shard runs: once it sends a message that arrives at `s` in another shard, an answer could come
//! back `h·L` later. A shard alone with its events (the million-node ring's last lap, say) runs
//! far ahead in one round. Counting links is only sound if sends follow them: a send between
//! positions that are not linked stops the run with an error.
//!
//! **Why the trace does not depend on the thread count.** Three things of the serial engine
//! depend on the order in which one thread happens to schedule events, and are replaced here:
//!
//! 1. *Tie-breaking.* An event's key is `(time, k·2³² + origin)`: `origin` is the node that
//!    scheduled it and `k` a Lamport counter of that node, raised past the key of every event
//!    the node handles. So the key is a function of the node's own history, and anything a node
//!    schedules for the instant it is at sorts after the event that scheduled it: every shard
//!    pops its events in increasing key order, and the global order of the run is the merge of
//!    the shards' orders by key. One thread or many, each node sees the same events in the same
//!    order.
//! 2. *Randomness.* Nothing draws from a shared stream: a handler's `cx.random`, a message's
//!    latency, loss and duplication, and the workload's waiting times are hashed from the seed
//!    and the key of the event that draws them.
//! 3. *Observers.* The checker and the tracer see the run in key order: each shard journals the
//!    keys of the events it ran and what they showed (requests, emitted events, trace records);
//!    between rounds, the journal entries earlier than every shard's next event are merged by
//!    key, numbered (a step is an event's place in the global order) and handed over.
//!
//! **What runs serially, and why** ([`refusal`]): the failure-detector and clock families (their
//! checkers sample every clock at once and their stories are periodic global traffic), the
//! deadlock family (its workload keeps one lock table for all nodes), fault plans (a crash
//! changes what every checker judges by), physical clocks with offsets or drift, latency models
//! that can draw a zero delay (no lookahead), and the `sequential` request pattern (it waits for
//! the whole network to go quiet). A run whose algorithm sends failure-detection traffic is
//! stopped with an error, since only the serial engine can see the steady state that ends it.
//! The `saturated` and `poisson` patterns run with one change: each requester's share of
//! `--entries` is fixed up front (requester i of r gets the entries between i·E/r and
//! (i+1)·E/r), because a global count would tie the threads together.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use rand::SeedableRng;
use rand_distr::{Distribution, Exp};
use rand_xoshiro::{SplitMix64, Xoshiro256PlusPlus};
use ringleader_algorithms::{Algorithm, Family};
use ringleader_core::trace::{RecordKind, TraceRecord};
use ringleader_core::{Command, Context, Event, Message, NodeId, Outbox, Request, Time, Topology, Uid};

use super::{Item, ItemOf, MessageCounts, Progress, Simulation, Stop, with_drop, with_message};
use crate::SimError;
use crate::network::{Network, Sampler};
use crate::notation::Latency;
use crate::queue::EventQueue;
use crate::scenario::{RunConfig, WorkloadKind};
use crate::streams::{SALT_HANDLER, SALT_NETWORK, SALT_START, SALT_WORKLOAD, mix};

/// Why `cfg` cannot run on the windowed engine, or `None` with its lookahead.
pub fn refusal(cfg: &RunConfig, family: Family) -> Result<Time, String> {
    match family {
        Family::Election | Family::Mutex => {}
        Family::Clock | Family::Detector => {
            return Err("clock and failure-detector runs sample every node at once".into());
        }
        Family::Deadlock => return Err("the deadlock workload keeps one lock table for all nodes".into()),
    }
    if !(cfg.crash.is_empty() && cfg.recover.is_empty() && cfg.pause.is_empty() && cfg.partition.is_empty()) {
        return Err("a fault plan changes what the checker judges every node by".into());
    }
    if cfg.clock_offset > 0 || cfg.clock_drift_ppm > 0 {
        return Err("physical clocks with offsets or drift are not simulated per shard".into());
    }
    if cfg.workload == Some(WorkloadKind::Sequential) {
        return Err("the sequential pattern waits for the whole network to go quiet".into());
    }
    match cfg.latency {
        Latency::Constant(d) if d > 0 => Ok(d),
        Latency::Uniform(a, _) if a > 0 => Ok(a),
        _ => Err(format!(
            "latency {} can deliver with no delay, so no shard can run ahead of another (use \
             constant:D or uniform:A..B with A > 0)",
            cfg.latency
        )),
    }
}

/// The most events a shard runs in one round.
const ROUND_EVENTS: usize = 1 << 16;

/// An event's place in the run's order: (time, Lamport counter · 2³² + origin).
type Key = (Time, u64);

/// What an event showed that the checker or the tracer must see, in key order.
enum Note {
    /// A request reached its node (the checker's `on_request`, then the trace record).
    Request(NodeId, Request),
    /// A node emitted an event (the checker's `on_event`, then the trace record).
    Emit(NodeId, Event),
    /// Any other trace record (its step is filled in when it is released).
    Trace(Box<TraceRecord>),
}

/// A shard's record of the events it ran and what they showed, not yet released.
#[derive(Default)]
struct Journal {
    /// The key of every event run, in order.
    keys: Vec<(Time, u64)>,
    /// What those events showed, each with its event's key.
    notes: Vec<(Time, u64, Note)>,
}

impl Journal {
    /// Moves the entries whose key is below `frontier` into `into`.
    fn seal(&mut self, frontier: Key, into: &mut Journal) {
        let k = self.keys.partition_point(|&key| key < frontier);
        if k == self.keys.len() {
            into.keys.append(&mut self.keys);
        } else {
            into.keys.extend(self.keys.drain(..k));
        }
        let k = self.notes.partition_point(|&(t, s, _)| (t, s) < frontier);
        into.notes.extend(self.notes.drain(..k));
    }
}

/// What every shard reads and nobody changes.
struct Env<'a> {
    uids: &'a [Uid],
    topology: &'a Topology,
    seed: u64,
    n: u64,
    /// First position of each shard, and `n` at the end.
    bounds: Vec<NodeId>,
    lookahead: Time,
    duration: Time,
    /// The mutual-exclusion pattern, if the run has one: kind, hold, rate.
    pattern: Option<(WorkloadKind, Time, f64)>,
    /// Whether the network draws randomness (latency, loss or duplication).
    random_network: bool,
    tracing: bool,
    /// Whether lookahead counts links ([`Env::hops_in`]): a topology other than the complete
    /// graph, split into more than one shard. Sends must then follow the topology's links.
    by_links: bool,
    /// On a graph topology, each node's [`Env::hops_in`] (found by breadth-first search).
    graph_hops: Vec<u32>,
}

impl Env<'_> {
    /// The shard that runs `node`.
    fn owner(&self, node: NodeId) -> usize {
        owner_of(&self.bounds, node)
    }

    /// The fewest links a message needs from `node`, of the shard `first..end`, to reach a node
    /// of another shard: each link takes at least the lookahead, so an event at `node` at `t`
    /// cannot reach another shard before `t + hops · L` (`u32::MAX`: it never can).
    #[inline]
    fn hops_in(&self, first: NodeId, end: NodeId, node: NodeId) -> u32 {
        match self.topology {
            Topology::Complete { .. } => 1,
            Topology::Ring { .. } => end - node,
            Topology::BiRing { .. } => (end - node).min(node - first + 1),
            Topology::Graph { .. } => self.graph_hops[node as usize],
        }
    }
}

/// The shard of `node`, given each shard's first position (and `n` at the end).
fn owner_of(bounds: &[NodeId], node: NodeId) -> usize {
    bounds.partition_point(|&b| b <= node) - 1
}

/// Breadth-first search from the nodes with a neighbour in another shard: each node's fewest
/// links to another shard (`u32::MAX` where none leads out).
fn graph_hops(topology: &Topology, bounds: &[NodeId]) -> Vec<u32> {
    let n = topology.len() as usize;
    let owner = |x: NodeId| owner_of(bounds, x);
    let mut hops = vec![u32::MAX; n];
    let mut frontier: Vec<NodeId> =
        (0..n as NodeId).filter(|&x| topology.neighbors(x).any(|y| owner(y) != owner(x))).collect();
    for &x in &frontier {
        hops[x as usize] = 1;
    }
    let mut depth = 1;
    while !frontier.is_empty() {
        depth += 1;
        let mut next = Vec::new();
        for &x in &frontier {
            for y in topology.neighbors(x) {
                if hops[y as usize] == u32::MAX && owner(y) == owner(x) {
                    hops[y as usize] = depth;
                    next.push(y);
                }
            }
        }
        frontier = next;
    }
    hops
}

/// An event waiting for its shard.
type Entry<A> = (Time, u64, ItemOf<A>);

/// One thread's part of the run: the positions `first..first + states.len()`.
struct Shard<'s, A: Algorithm> {
    index: usize,
    first: NodeId,
    states: &'s mut [A],
    timers: Vec<Vec<(A::Timer, u64)>>,
    /// Each node's Lamport counter: the `k` of the next key it hands out.
    lamport: Vec<u64>,
    /// Acquisitions each node has still to ask for (mutual-exclusion patterns).
    quota: Vec<u64>,
    queue: EventQueue<ItemOf<A>>,
    net: Network,
    counters: MessageCounts,
    /// Messages this shard sent less those it received (a message sent here may arrive in
    /// another shard, so only the sum over shards is the run's count in flight).
    in_flight: i64,
    issued: u64,
    /// Messages for other shards, by shard, until the round ends.
    outgoing: Vec<Vec<Entry<A>>>,
    horizon: Time,
    /// Pending events by their node's hops to another shard (only when [`Env::by_links`]).
    pending_by_hops: Vec<u32>,
    /// No pending event has fewer hops than this (it may be stale low until
    /// [`Shard::fewest_hops`] settles it).
    least_hops: u32,
    journal: Journal,
    out: Outbox<A::Msg, A::Timer>,
    /// Time of the last event run.
    last_time: Time,
    /// Why the run cannot go on here, if something the engine does not model happened.
    unsupported: Option<String>,
}

impl<'s, A: Algorithm> Shard<'s, A> {
    fn local(&self, node: NodeId) -> usize {
        (node - self.first) as usize
    }

    /// A fresh key for something `node` schedules: its Lamport counter above, its position below.
    fn next_key(&mut self, node: NodeId) -> u64 {
        let i = self.local(node);
        let k = self.lamport[i];
        self.lamport[i] += 1;
        if k > u64::from(u32::MAX) {
            self.unsupported.get_or_insert_with(|| {
                "a node's Lamport counter passed 2^32 (the windowed engine keys events in 64 bits)".into()
            });
        }
        (k << 32) | u64::from(node)
    }

    fn end(&self) -> NodeId {
        self.first + self.states.len() as NodeId
    }

    /// Counts a pending event at `node` in (`delta` = 1) or out (`delta` = −1).
    #[inline]
    fn count_pending(&mut self, env: &Env, node: NodeId, delta: i32) {
        if env.by_links {
            let h = env.hops_in(self.first, self.end(), node);
            if h != u32::MAX {
                let slot = &mut self.pending_by_hops[h as usize];
                *slot = slot.wrapping_add_signed(delta);
                if delta > 0 {
                    self.least_hops = self.least_hops.min(h);
                }
            }
        }
    }

    /// The fewest hops of any pending event (settling [`Shard::least_hops`]); 1 when lookahead
    /// does not count links.
    fn fewest_hops(&mut self, env: &Env) -> u32 {
        if !env.by_links {
            return 1;
        }
        let counts = &self.pending_by_hops;
        while (self.least_hops as usize) < counts.len() && counts[self.least_hops as usize] == 0 {
            self.least_hops += 1;
        }
        if self.least_hops as usize >= counts.len() { u32::MAX } else { self.least_hops }
    }

    /// Puts an event at one of this shard's nodes in its queue.
    fn enqueue(&mut self, env: &Env, node: NodeId, time: Time, seq: u64, item: ItemOf<A>) {
        self.count_pending(env, node, 1);
        self.queue.push(time, seq, item);
    }

    /// Puts an event in the queue of the shard that runs `node`.
    fn route(&mut self, env: &Env, node: NodeId, time: Time, seq: u64, item: ItemOf<A>) {
        if node.wrapping_sub(self.first) < self.states.len() as NodeId {
            self.enqueue(env, node, time, seq, item);
        } else {
            let owner = env.owner(node);
            // An answer from that shard could come back once it has crossed back.
            let hops = env.hops_in(env.bounds[owner], env.bounds[owner + 1], node);
            let back = time.saturating_add(env.lookahead.saturating_mul(u64::from(hops.max(1))));
            self.horizon = self.horizon.min(back);
            self.outgoing[owner].push((time, seq, item));
        }
    }

    fn note(&mut self, time: Time, seq: u64, note: Note) {
        self.journal.notes.push((time, seq, note));
    }

    fn trace(
        &mut self,
        env: &Env,
        time: Time,
        seq: u64,
        kind: RecordKind,
        node: NodeId,
        fill: impl FnOnce(&mut TraceRecord),
    ) {
        if env.tracing {
            let mut r = TraceRecord::new(0, time, kind);
            r.node = Some(node);
            r.uid = Some(env.uids[node as usize]);
            fill(&mut r);
            self.note(time, seq, Note::Trace(Box::new(r)));
        }
    }

    /// Runs the events earlier than the horizon, at most [`ROUND_EVENTS`] of them (a shard may
    /// always stop early; stopping bounds its journal when it runs alone).
    fn run_until(&mut self, env: &Env) {
        for _ in 0..ROUND_EVENTS {
            match self.queue.peek_key() {
                Some((time, _)) if time < self.horizon => {}
                _ => return,
            }
            self.prefetch_upcoming();
            let (time, seq, item) = self.queue.pop().expect("peeked");
            self.count_pending(env, item_node(&item), -1);
            self.step(env, time, seq, item);
        }
    }

    /// Hints the CPU to fetch the state of the node that receives a message a few events from
    /// now (as the serial engine does: the receiver's cache miss is most of a step's cost).
    #[inline]
    fn prefetch_upcoming(&self) {
        #[cfg(target_arch = "x86_64")]
        if let Some(Item::Deliver { to, .. }) = self.queue.peek_ahead(super::PREFETCH_DISTANCE) {
            let i = self.local(*to);
            let state = self.states.as_ptr().wrapping_add(i) as *const i8;
            let counter = self.lamport.as_ptr().wrapping_add(i) as *const i8;
            // SAFETY: prefetching is a hint; it never faults and reads nothing observable.
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(state);
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(counter);
            }
        }
    }

    /// Runs one event.
    fn step(&mut self, env: &Env, time: Time, seq: u64, item: ItemOf<A>) {
        self.journal.keys.push((time, seq));
        self.last_time = time;
        let node = item_node(&item);
        let i = self.local(node);
        self.lamport[i] = self.lamport[i].max((seq >> 32) + 1);
        match item {
            Item::Deliver { from, to, msg } => {
                self.in_flight -= 1;
                self.counters.delivered += 1;
                self.trace(env, time, seq, RecordKind::Deliver, to, |r| with_message(r, from, seq, &msg));
                self.call(env, time, seq, mix(env.seed ^ SALT_HANDLER, seq), to, |p, cx, out| {
                    p.on_message(cx, from, msg, out)
                });
            }
            Item::Timer { node, timer, generation } => {
                let list = &mut self.timers[i];
                let Some(idx) = list.iter().position(|(t, g)| *t == timer && *g == generation) else {
                    return;
                };
                list.swap_remove(idx);
                self.trace(env, time, seq, RecordKind::Timer, node, |r| r.timer = Some(format!("{timer:?}")));
                self.call(env, time, seq, mix(env.seed ^ SALT_HANDLER, seq), node, |p, cx, out| {
                    p.on_timer(cx, timer, out)
                });
            }
            Item::Request(b) => {
                let (node, req) = *b;
                self.note(time, seq, Note::Request(node, req.clone()));
                self.call(env, time, seq, mix(env.seed ^ SALT_HANDLER, seq), node, |p, cx, out| {
                    p.on_request(cx, req, out)
                });
            }
            Item::Fault(_) | Item::Tick { .. } => unreachable!("matched above"),
        }
    }

    /// Runs one handler of `node` and carries out its outbox.
    fn call(
        &mut self,
        env: &Env,
        time: Time,
        seq: u64,
        random: u64,
        node: NodeId,
        f: impl FnOnce(&mut A, &Context, &mut Outbox<A::Msg, A::Timer>),
    ) {
        let cx = Context { me: node, uids: env.uids, topology: env.topology, now: time, random };
        let i = self.local(node);
        f(&mut self.states[i], &cx, &mut self.out);
        self.apply(env, time, seq, node);
    }

    fn apply(&mut self, env: &Env, time: Time, seq: u64, node: NodeId) {
        let mut out = std::mem::take(&mut self.out);
        for command in out.drain() {
            match command {
                Command::Send { to, msg } => self.send(env, time, seq, node, to, msg),
                Command::SetTimer { timer, after } => {
                    let generation = self.next_key(node);
                    let i = self.local(node);
                    let list = &mut self.timers[i];
                    match list.iter_mut().find(|(t, _)| *t == timer) {
                        Some(slot) => slot.1 = generation,
                        None => list.push((timer.clone(), generation)),
                    }
                    self.enqueue(
                        env,
                        node,
                        time + after,
                        generation,
                        Item::Timer { node, timer, generation },
                    );
                }
                Command::CancelTimer(timer) => {
                    let i = self.local(node);
                    self.timers[i].retain(|(t, _)| *t != timer)
                }
                Command::Emit(event) => self.emit(env, time, seq, node, event),
                Command::AdjustClock(_) => {
                    self.unsupported.get_or_insert_with(|| "a process adjusted its clock".into());
                }
            }
        }
        self.out = out;
    }

    fn send(&mut self, env: &Env, time: Time, seq: u64, from: NodeId, to: NodeId, msg: A::Msg) {
        let k = msg.kind_index();
        self.counters.sent_by_kind[k] += 1;
        if msg.is_detection() {
            self.unsupported.get_or_insert_with(|| {
                format!(
                    "{} sends failure-detection traffic ({}), whose steady state only the serial \
                     engine can end",
                    A::NAME,
                    msg.kind()
                )
            });
        }
        if env.by_links && !env.topology.is_link(from, to) {
            self.unsupported.get_or_insert_with(|| {
                format!(
                    "{} sent from position {from} to {to}, not a link of its {} topology (the \
                     windowed engine's lookahead follows the links)",
                    A::NAME,
                    env.topology.name()
                )
            });
        }
        let id = self.next_key(from);
        self.trace(env, time, seq, RecordKind::Send, from, |r| with_message(r, to, id, &msg));
        let mut rng = env.random_network.then(|| SplitMix64::seed_from_u64(mix(env.seed ^ SALT_NETWORK, id)));
        let at = match (&mut rng, &self.net.latency) {
            (None, Sampler::Constant(d)) => Some(time + d),
            (Some(rng), _) => self.net.schedule(rng, time, from, to),
            (None, _) => unreachable!("a random latency draws randomness"),
        };
        let Some(at) = at else {
            self.counters.dropped += 1;
            self.trace(env, time, seq, RecordKind::Drop, to, |r| with_drop(r, from, id, msg.kind(), "lost"));
            return;
        };
        let dup = rng.as_mut().is_some_and(|rng| self.net.duplicate(rng)).then(|| msg.clone());
        self.in_flight += 1;
        self.route(env, to, at, id, Item::Deliver { from, to, msg });
        if let (Some(copy), Some(rng)) = (dup, rng.as_mut()) {
            let at2 = self.net.schedule(rng, time, from, to).unwrap_or(at);
            let id2 = self.next_key(from);
            self.trace(env, time, seq, RecordKind::Send, from, |r| {
                with_message(r, to, id2, &copy);
                r.detail = Some("duplicate".into());
            });
            self.counters.duplicated += 1;
            self.in_flight += 1;
            self.route(env, to, at2, id2, Item::Deliver { from, to, msg: copy });
        }
    }

    /// `node` reported `event`: noted for the checker, and the request pattern reacts (on the
    /// node's own queue, so the shard needs nobody else).
    fn emit(&mut self, env: &Env, time: Time, seq: u64, node: NodeId, event: Event) {
        let reaction = match (&event, env.pattern) {
            (Event::Entered { .. }, Some((kind, hold, _))) => {
                let key = self.next_key(node);
                let hold = match kind {
                    WorkloadKind::Poisson => exponential(env.seed, key, hold as f64),
                    _ => hold,
                };
                Some((time + hold, key, Request::Release))
            }
            (Event::Exited, Some((kind, _, rate))) if self.quota[self.local(node)] > 0 => {
                let i = self.local(node);
                self.quota[i] -= 1;
                self.issued += 1;
                let key = self.next_key(node);
                let wait = match kind {
                    WorkloadKind::Poisson => exponential(env.seed, key, 1e9 / rate),
                    _ => 0,
                };
                Some((time + wait, key, Request::Acquire))
            }
            _ => None,
        };
        self.note(time, seq, Note::Emit(node, event));
        if let Some((at, key, request)) = reaction {
            self.enqueue(env, node, at, key, Item::Request(Box::new((node, request))));
        }
    }
}

/// The node an event happens at.
fn item_node<M, T>(item: &Item<M, T>) -> NodeId {
    match item {
        Item::Deliver { to, .. } => *to,
        Item::Timer { node, .. } => *node,
        Item::Request(b) => b.0,
        Item::Fault(_) | Item::Tick { .. } => {
            unreachable!("the windowed engine schedules no faults or ticks")
        }
    }
}

/// An exponential wait of mean `mean` drawn for the event keyed `key`.
fn exponential(seed: u64, key: u64, mean: f64) -> Time {
    if mean <= 0.0 {
        return 0;
    }
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(mix(seed ^ SALT_WORKLOAD, key));
    Exp::new(1.0 / mean).map(|d| d.sample(&mut rng).round() as Time).unwrap_or(0)
}

/// A barrier the threads spin on: a round of the ring's last lap lasts a microsecond, far less
/// than a futex wake-up.
struct SpinBarrier {
    parties: usize,
    arrived: AtomicUsize,
    generation: AtomicUsize,
    poisoned: AtomicBool,
}

/// Poisons the barrier if its thread unwinds (a process's handler panicked, say).
struct PanicGuard<'a>(&'a SpinBarrier);

impl Drop for PanicGuard<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.poisoned.store(true, Ordering::Release);
        }
    }
}

impl SpinBarrier {
    fn new(parties: usize) -> Self {
        SpinBarrier {
            parties,
            arrived: AtomicUsize::new(0),
            generation: AtomicUsize::new(0),
            poisoned: AtomicBool::new(false),
        }
    }

    /// Waits for every party. Panics if another party's thread panicked (see [`PanicGuard`]),
    /// so that one failing shard stops the run instead of leaving the others spinning.
    fn wait(&self) {
        let generation = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.parties {
            self.arrived.store(0, Ordering::Relaxed);
            self.generation.fetch_add(1, Ordering::Release);
            return;
        }
        let mut spins = 0u32;
        while self.generation.load(Ordering::Acquire) == generation {
            if self.poisoned.load(Ordering::Acquire) {
                panic!("another shard of the windowed run panicked");
            }
            if spins < 1 << 12 {
                std::hint::spin_loop();
                spins += 1;
            } else {
                std::thread::yield_now();
            }
        }
    }
}

/// What the threads share between rounds.
struct Rendezvous<A: Algorithm> {
    barrier: SpinBarrier,
    /// Each shard's earliest event after the round's messages arrived: its time (`u64::MAX`:
    /// none), its key's second half, and the earliest time anything it holds can reach another
    /// shard.
    next: Vec<(AtomicU64, AtomicU64, AtomicU64)>,
    /// Messages from shard `i` to shard `j` at `mail[i][j]`.
    mail: Vec<Vec<Mutex<Vec<Entry<A>>>>>,
    /// Events waiting in each shard's queue, for progress reports.
    queued: Vec<AtomicUsize>,
    /// Journal entries handed to the observer, per shard.
    sealed: Vec<Mutex<Journal>>,
    /// Set by a shard that met something it does not model.
    unsupported: Mutex<Option<String>>,
    halted: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl<A: Algorithm> Rendezvous<A> {
    /// The earliest time anything of another shard can reach `me` (`me`'s horizon); and the key
    /// of the earliest event of all (the frontier: nothing still to come sorts before it).
    fn horizon_and_frontier(&self, me: usize) -> (Time, Key) {
        let mut others = u64::MAX;
        let mut all = (u64::MAX, u64::MAX);
        for (j, (time, seq, reach)) in self.next.iter().enumerate() {
            let key = (time.load(Ordering::Acquire), seq.load(Ordering::Acquire));
            all = all.min(key);
            if j != me {
                others = others.min(reach.load(Ordering::Acquire));
            }
        }
        (others, all)
    }
}

impl<A: Algorithm> Simulation<A> {
    /// Runs on the windowed engine with `threads` threads (see the module's essay): the same run
    /// whatever `threads` is, but not the run the serial engine gives for the same seed.
    pub fn run_windowed(
        &mut self,
        threads: usize,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<(), SimError> {
        let lookahead = refusal(&self.cfg, self.info.family).map_err(SimError::Windowed)?;
        let n = self.uids.len();
        let threads = threads.clamp(1, n.max(1));
        let pattern = match self.cfg.workload {
            Some(kind @ (WorkloadKind::Saturated | WorkloadKind::Poisson))
                if self.info.family == Family::Mutex =>
            {
                Some((kind, self.cfg.hold, self.cfg.rate))
            }
            _ => None,
        };
        // The shards own the states and read the membership and the graph; the observer keeps
        // `self` (checker, tracer, violations) for the whole run.
        let mut states = std::mem::take(&mut self.states);
        let uids = self.uids.clone();
        let topology = std::mem::replace(&mut self.topology, Topology::from_edges(0, &[]));
        let bounds: Vec<NodeId> = (0..=threads).map(|i| (n * i / threads) as NodeId).collect();
        let env = Env {
            uids: &uids,
            topology: &topology,
            seed: self.cfg.seed,
            n: n as u64,
            bounds: bounds.clone(),
            lookahead,
            duration: self.cfg.duration,
            pattern,
            random_network: !matches!(self.cfg.latency, Latency::Constant(_))
                || self.cfg.loss > 0.0
                || self.cfg.dup > 0.0,
            tracing: self.tracer.is_some(),
            by_links: threads > 1 && !matches!(topology, Topology::Complete { .. }),
            graph_hops: match &topology {
                Topology::Graph { .. } if threads > 1 => graph_hops(&topology, &bounds),
                _ => Vec::new(),
            },
        };
        let result = self.run_shards(&env, &mut states, progress);
        drop(env);
        self.states = states;
        self.topology = topology;
        result
    }

    /// Splits the states into shards, starts them, runs the rounds and gathers the totals.
    fn run_shards(
        &mut self,
        env: &Env,
        states: &mut [A],
        progress: &mut dyn FnMut(Progress),
    ) -> Result<(), SimError> {
        let threads = env.bounds.len() - 1;
        let mut shards = self.make_shards(env, states);
        let start_notes = self.start_shards(env, &mut shards);
        let rv = Rendezvous::<A> {
            barrier: SpinBarrier::new(threads),
            next: (0..threads)
                .map(|_| (AtomicU64::new(u64::MAX), AtomicU64::new(u64::MAX), AtomicU64::new(u64::MAX)))
                .collect(),
            mail: (0..threads).map(|_| (0..threads).map(|_| Mutex::new(Vec::new())).collect()).collect(),
            queued: (0..threads).map(|_| AtomicUsize::new(0)).collect(),
            sealed: (0..threads).map(|_| Mutex::new(Journal::default())).collect(),
            unsupported: Mutex::new(None),
            halted: AtomicBool::new(false),
        };
        for shard in &mut shards {
            for (j, out) in shard.outgoing.iter_mut().enumerate() {
                lock(&rv.mail[shard.index][j]).append(out);
            }
        }
        for note in start_notes {
            self.observe(0, 0, note);
        }
        let mut released = Released::default();
        let mut rest = shards.into_iter();
        let mut own = rest.next().expect("one shard at least");
        let (last, mut shards) = std::thread::scope(|scope| {
            let handles: Vec<_> = rest
                .map(|mut shard| {
                    let rv = &rv;
                    scope.spawn(move || {
                        let _guard = PanicGuard(&rv.barrier);
                        let mut previous = (0, 0);
                        while let Some(frontier) = round(&mut shard, env, rv, previous) {
                            previous = frontier;
                            rv.barrier.wait();
                        }
                        shard.journal.seal((u64::MAX, u64::MAX), &mut lock(&rv.sealed[shard.index]));
                        shard
                    })
                })
                .collect();
            let guard = PanicGuard(&rv.barrier);
            let mut previous = (0, 0);
            while let Some(frontier) = round(&mut own, env, &rv, previous) {
                self.release(&mut released, &rv, progress, frontier);
                previous = frontier;
                rv.barrier.wait();
            }
            own.journal.seal((u64::MAX, u64::MAX), &mut lock(&rv.sealed[0]));
            drop(guard);
            let mut shards = vec![own];
            shards.extend(handles.into_iter().map(|h| h.join().expect("a shard's thread panicked")));
            (rv.next.iter().map(|(t, _, _)| t.load(Ordering::Acquire)).min().unwrap_or(u64::MAX), shards)
        });
        if let Some(reason) = lock(&rv.unsupported).take() {
            return Err(SimError::Windowed(reason));
        }
        self.release(&mut released, &rv, progress, (u64::MAX, u64::MAX));
        self.gather(&mut shards, released.steps, last);
        Ok(())
    }

    /// One shard per thread, over contiguous positions.
    fn make_shards<'s>(&self, env: &Env, mut states: &'s mut [A]) -> Vec<Shard<'s, A>> {
        let threads = env.bounds.len() - 1;
        let kinds = <A::Msg as Message>::KINDS.len();
        (0..threads)
            .map(|index| {
                let len = (env.bounds[index + 1] - env.bounds[index]) as usize;
                let (mine, rest) = std::mem::take(&mut states).split_at_mut(len);
                states = rest;
                Shard {
                    index,
                    first: env.bounds[index],
                    states: mine,
                    timers: vec![Vec::new(); len],
                    lamport: vec![0; len],
                    quota: vec![0; len],
                    queue: EventQueue::new(self.cfg.latency.bound()),
                    net: Network::new(
                        &self.cfg.latency,
                        self.cfg.loss,
                        self.cfg.dup,
                        self.cfg.fifo,
                        Vec::new(),
                    ),
                    counters: MessageCounts::for_kinds(kinds),
                    in_flight: 0,
                    issued: 0,
                    outgoing: (0..threads).map(|_| Vec::new()).collect(),
                    horizon: 0,
                    pending_by_hops: if env.by_links { vec![0; len + 2] } else { Vec::new() },
                    least_hops: u32::MAX,
                    journal: Journal::default(),
                    out: Outbox::new(),
                    last_time: 0,
                    unsupported: None,
                }
            })
            .collect()
    }

    /// The workload's first requests, then every process's start, in position order; returns
    /// what the starts showed (all at step 0, as in the serial engine).
    fn start_shards(&self, env: &Env, shards: &mut [Shard<A>]) -> Vec<Note> {
        let cfg = &self.cfg;
        let position = Self::positions(cfg, env.uids);
        let ask = |shards: &mut [Shard<A>], node: NodeId, request: Request, wait_mean: Option<f64>| {
            let shard = &mut shards[env.owner(node)];
            let key = shard.next_key(node);
            let at = wait_mean.map_or(0, |mean| exponential(env.seed, key, mean));
            shard.enqueue(env, node, at, key, Item::Request(Box::new((node, request))));
        };
        for node in Self::initiators(cfg, env.uids, &position) {
            ask(shards, node, Request::StartElection, None);
        }
        if let Some((kind, _, rate)) = env.pattern {
            let requesters: Vec<NodeId> = match &cfg.requesters {
                Some(r) => r.iter().map(|u| position[u]).collect(),
                None => (0..env.n as NodeId).collect(),
            };
            // Requester i's share: the entries between i·E/r and (i+1)·E/r, so that a remainder
            // spreads over the requesters (and the shards) instead of piling on the first ones.
            let (e, r) = (u128::from(cfg.entries), requesters.len().max(1) as u128);
            let upto = |i: usize| (i as u128 * e / r) as u64;
            for (i, &node) in requesters.iter().enumerate() {
                let share = upto(i + 1) - upto(i);
                if share == 0 {
                    continue;
                }
                let shard = &mut shards[env.owner(node)];
                let local = shard.local(node);
                shard.quota[local] += share - 1;
                shard.issued += 1;
                let wait = (kind == WorkloadKind::Poisson).then(|| 1e9 / rate);
                ask(shards, node, Request::Acquire, wait);
            }
        }
        let mut notes = Vec::new();
        for shard in shards.iter_mut() {
            for node in env.bounds[shard.index]..env.bounds[shard.index + 1] {
                shard.trace(env, 0, 0, RecordKind::Start, node, |_| {});
                let random = mix(env.seed ^ SALT_START, u64::from(node));
                shard.call(env, 0, 0, random, node, |p, cx, out| p.on_start(cx, out));
            }
            notes.extend(shard.journal.notes.drain(..).map(|(_, _, note)| note));
        }
        notes
    }

    /// Hands the checker and the tracer every event sealed so far (all those earlier than
    /// `frontier`'s round), numbered in key order.
    fn release(
        &mut self,
        released: &mut Released,
        rv: &Rendezvous<A>,
        progress: &mut dyn FnMut(Progress),
        frontier: Key,
    ) {
        let mut sealed: Vec<MutexGuard<'_, Journal>> = rv.sealed.iter().map(lock).collect();
        if sealed.iter().any(|j| !j.notes.is_empty()) {
            // Each shard's notes are in key order already: merge them, taking the earliest head
            // each time (the notes of one event come from one shard, in the order it made them).
            let mut heads: Vec<_> =
                sealed.iter_mut().map(|j| std::mem::take(&mut j.notes).into_iter().peekable()).collect();
            let mut before = vec![0usize; sealed.len()];
            let mut current = None;
            let mut step = 0;
            while let Some(j) = (0..heads.len())
                .filter_map(|j| heads[j].peek().map(|&(t, s, _)| ((t, s), j)))
                .min()
                .map(|(_, j)| j)
            {
                let (time, seq, note) = heads[j].next().expect("peeked");
                if current != Some((time, seq)) {
                    for (j, journal) in sealed.iter().enumerate() {
                        before[j] += journal.keys[before[j]..].partition_point(|&k| k < (time, seq));
                    }
                    step = released.steps + before.iter().sum::<usize>() as u64 + 1;
                    current = Some((time, seq));
                }
                self.observe(time, step, note);
            }
        }
        for journal in &mut sealed {
            released.steps += journal.keys.len() as u64;
            journal.keys.clear();
        }
        if released.steps >= released.reported + (1 << 16) {
            released.reported = released.steps;
            progress(Progress {
                step: released.steps,
                now: frontier.0.min(self.cfg.duration),
                duration: self.cfg.duration,
                queued: rv.queued.iter().map(|q| q.load(Ordering::Relaxed)).sum(),
            });
        }
    }

    /// The checker and the tracer see one note, at its event's time and step.
    fn observe(&mut self, time: Time, step: u64, note: Note) {
        self.now = time;
        self.step = step;
        let at = self.stamp();
        let before = self.violations.len();
        match note {
            Note::Request(node, req) => {
                self.judge(|c, w, v| c.on_request(w, node, &req, at, v));
                self.trace(RecordKind::Request, Some(node), None, |r| r.request = Some(req));
            }
            Note::Emit(node, event) => {
                self.judge(|c, w, v| c.on_event(w, node, &event, at, v));
                self.trace(RecordKind::Emit, Some(node), None, |r| r.event = Some(event));
            }
            Note::Trace(mut record) => {
                if let Some(t) = self.tracer.as_mut() {
                    record.step = step;
                    t.record_with(record.kind, record.node, record.msg_id, || *record);
                }
            }
        }
        self.trace_new_violations(before);
    }

    /// The run is over: the shards' totals become the run's, and the checker judges the end.
    fn gather(&mut self, shards: &mut [Shard<A>], steps: u64, next: Time) {
        let kinds = <A::Msg as Message>::KINDS.len();
        let mut counters = MessageCounts::for_kinds(kinds);
        let (mut in_flight, mut issued, mut last) = (0i64, 0, 0);
        for shard in shards.iter() {
            for (total, v) in counters.sent_by_kind.iter_mut().zip(&shard.counters.sent_by_kind) {
                *total += v;
            }
            counters.delivered += shard.counters.delivered;
            counters.dropped += shard.counters.dropped;
            counters.duplicated += shard.counters.duplicated;
            in_flight += shard.in_flight;
            issued += shard.issued;
            last = last.max(shard.last_time);
        }
        self.counters = counters;
        self.in_flight = in_flight.max(0) as u64;
        self.algo_in_flight = self.in_flight;
        self.windowed_issued = Some(issued);
        self.queue = EventQueue::new(1);
        self.step = steps;
        if next == u64::MAX {
            self.stop = Stop::Quiescent;
            self.now = last;
        } else {
            self.stop = Stop::Duration;
            self.now = self.cfg.duration;
        }
        self.finish(None, 0);
    }
}

/// How far the observer got.
#[derive(Default)]
struct Released {
    /// Events released so far (the step of the last one).
    steps: u64,
    /// The step count at which progress was last reported.
    reported: u64,
}

/// One round of a shard: take the messages other shards sent it, seal what it journaled before
/// the last frontier, publish its earliest event, then (once every shard has) run its events up
/// to its horizon and post what it sends to other shards. `None` once the run is over: no event
/// left, the next one after the time limit, or a shard met something it does not model.
fn round<A: Algorithm>(shard: &mut Shard<A>, env: &Env, rv: &Rendezvous<A>, previous: Key) -> Option<Key> {
    let me = shard.index;
    for from in 0..rv.mail.len() {
        if from != me {
            for (time, seq, item) in lock(&rv.mail[from][me]).drain(..) {
                shard.enqueue(env, item_node(&item), time, seq, item);
            }
        }
    }
    shard.journal.seal(previous, &mut lock(&rv.sealed[me]));
    if let Some(reason) = shard.unsupported.take() {
        lock(&rv.unsupported).get_or_insert(reason);
        rv.halted.store(true, Ordering::Release);
    }
    let (time, seq) = shard.queue.peek_key().unwrap_or((u64::MAX, u64::MAX));
    let hops = shard.fewest_hops(env);
    let reach = time.saturating_add(env.lookahead.saturating_mul(u64::from(hops)));
    rv.next[me].0.store(time, Ordering::Release);
    rv.next[me].1.store(seq, Ordering::Release);
    rv.next[me].2.store(reach, Ordering::Release);
    rv.queued[me].store(shard.queue.len(), Ordering::Relaxed);
    rv.barrier.wait();
    let (horizon, frontier) = rv.horizon_and_frontier(me);
    if frontier.0 == u64::MAX || frontier.0 > env.duration || rv.halted.load(Ordering::Acquire) {
        return None;
    }
    shard.horizon = horizon.min(env.duration + 1);
    shard.run_until(env);
    for (j, out) in shard.outgoing.iter_mut().enumerate() {
        if !out.is_empty() {
            lock(&rv.mail[me][j]).append(out);
        }
    }
    Some(frontier)
}
