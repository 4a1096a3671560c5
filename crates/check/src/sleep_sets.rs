//! # Partial-order reduction: depth-first search with sleep sets
//!
//! Most of a message-passing system's interleavings differ only in the order of steps that do
//! not touch each other: node 1 receiving a REQUEST and node 2 receiving a REPLY end in the same
//! state whichever happens first. A search that explores both orders computes, hashes and looks
//! up the same successor twice; on Ricart-Agrawala with 4 nodes asking twice the full
//! depth-first search generates about five states for each distinct one. *Sleep sets*
//! (Godefroid, *Partial-Order Methods for the Verification of Concurrent Systems*, LNCS 1032,
//! 1996, chapter 5) skip the second order.
//!
//! ## Independence
//!
//! Two steps are **independent** in a state when both are enabled there, neither disables the
//! other, and taking them in either order ends in the same state. Here, two steps are declared
//! independent when
//!
//! - both run one node's handler (a request, a delivery or a timer: not a loss, a crash or a
//!   recovery, which are never declared independent of anything), at **different nodes**; and
//! - not both report `Entered`.
//!
//! Why that suffices, field by field of [`State`]: a handler changes only its node's process
//! state and its node's record (`nodes[i]`: timers, requests left, belief, holding, waiting); it
//! removes only the packet it receives (addressed to its node) and adds only packets its node
//! sends, which commute in the network (a multiset of packets on unordered links; on ordered
//! links a delivery takes a link's head and a send appends to a link's tail). The step of another
//! node stays enabled: its packet, timers and requests are not touched. What is left are the
//! global fields: `started` is only ever set to true (either order sets it), and `last_fencing`
//! and `fencing_broken` follow the *order* of the `Entered` reports, so two steps that both report
//! `Entered` are dependent. Whether a step reports `Entered` is a fact of its node's state and its
//! input, both unchanged by independent steps, so it is noted once, when the step is taken.
//!
//! ## Sleep sets
//!
//! Each state on the search's path carries a **sleep set**: steps enabled there that need not be
//! taken, because a state they lead to was (or will be) reached another way. When the search
//! has explored step `t` from state `s`, the steps it explores next from `s` put `t` to sleep in
//! their successors if they are independent of `t`: taking `t` after them reaches what taking
//! `t` first reached. A successor's sleep set is the parent's, plus the siblings explored before,
//! kept only where independent of the step taken. Sleep sets prune *steps*, not states: every
//! reachable state is still visited (Godefroid's theorem 5.2), so every property judged in a
//! state — the safety properties, and the end-of-run ones judged where nothing else can happen —
//! gets the verdict of the full search; only the number of generated states falls.
//!
//! ## With a table of states seen
//!
//! A state reached again by another path may arrive with a *smaller* sleep set, i.e. with steps
//! to take that its first visit skipped. The table therefore keeps, for each state, the sleep
//! set it was explored under (Godefroid, Holzmann and Pirottin, *State-space caching revisited*,
//! FMSD 7, 1995): a visit whose sleep set contains the stored one has nothing to add and stops;
//! otherwise it explores the stored steps it does not have asleep, and the stored set becomes
//! the intersection of the two. A sleep set is stored as a bit mask over the state's enabled
//! steps in [`CheckModel::steps`]'s order (fixed for a state); a step past the 64th is never
//! put to sleep (less pruning, never less exploring).
//!
//! ## Checked, not only argued
//!
//! Since every state is visited, the reduced search must count exactly the distinct states of
//! the full one: `crates/check/tests/it/search_orders.rs` compares the counts and the verdicts
//! with the breadth-first search for every algorithm the checker takes, on several networks and
//! with crashes. A wrong independence claim shows there as a missing state; the unit tests below
//! plant two and see the states go missing.
//!
//! ## On several threads
//!
//! Each worker searches depth-first from a job (a state, the steps to take there and its sleep
//! set). An idle worker raises a flag; a busy one hands it half the steps left at the lowest
//! frame of its path that has two or more, with that frame's sleep set as it stands. The table
//! is shared: whichever worker's visit of a state clears a step from the stored sleep set takes
//! that step, so every step enabled and not asleep is taken once by someone. The states
//! visited, and so the verdicts and the count of distinct states, do not depend on the number
//! of threads; which path is found first for a property, and how many states are generated,
//! do. Counterexamples are real paths (replayed into the simulator's trace), found depth-first,
//! so not necessarily the shortest.

use std::hash::BuildHasher;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use ringleader_algorithms::PlainAlgorithm;
use ringleader_core::NodeId;
use stateright::{Expectation, Property};

use crate::model::{CheckModel, State, Step, StepOf};
use crate::{Found, Options, PROGRESS_EVERY, Progress, resident_memory};

/// A budget that ended the search before every reachable state was visited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cut {
    /// `--max-memory`.
    Memory,
    /// `--max-time`.
    Time,
    /// `--max-states`.
    States,
}

/// A step asleep, with what independence needs to know of it.
#[derive(Clone)]
struct Slept<A: PlainAlgorithm> {
    step: StepOf<A>,
    acts: Actor,
}

/// Who a step runs at, for the independence relation.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Actor {
    /// The node whose handler runs; `None` for losses, crashes and recoveries (dependent on
    /// every step).
    node: Option<NodeId>,
    /// The step reported `Entered`.
    enters: bool,
}

impl Actor {
    fn of<M, T>(step: &Step<M, T>, enters: bool) -> Actor {
        let node = match step {
            Step::Request { node, .. } | Step::Timer { node, .. } => Some(*node),
            Step::Deliver(p) => Some(p.to),
            Step::Drop(_) | Step::Crash(_) | Step::Recover(_) => None,
        };
        Actor { node, enters }
    }

    /// The independence relation of the module documentation.
    fn independent(self, other: Actor) -> bool {
        match (self.node, other.node) {
            (Some(a), Some(b)) => a != b && !(self.enters && other.enters),
            _ => false,
        }
    }
}

/// One state on a worker's path.
struct Frame<A: PlainAlgorithm> {
    state: State<A>,
    /// The step that led here from the frame below (`None` for a job's first frame, whose path
    /// is the job's prefix).
    via: Option<StepOf<A>>,
    steps: Vec<StepOf<A>>,
    /// Indexes into `steps` still to take, last first.
    todo: Vec<usize>,
    /// The sleep set: grows with each step taken from here.
    sleep: Vec<Slept<A>>,
}

/// Steps to take from one state: the first frame of a worker's path, and the steps that lead
/// to it from the initial state.
struct Job<A: PlainAlgorithm> {
    prefix: Vec<StepOf<A>>,
    frame: Frame<A>,
}

/// The fingerprints of the states seen, each with the sleep set it was explored under (as a mask
/// over its enabled steps), in 64 shards by the fingerprint's top bits so that workers rarely
/// wait for each other. Each shard is an open-addressing table (linear probing, doubled at
/// three quarters full; zero marks an empty slot, and a state whose hash is zero is stored as
/// one).
struct Seen {
    shards: Vec<Mutex<Shard>>,
}

struct Shard {
    slots: Vec<(u64, u64)>,
    len: usize,
}

impl Seen {
    fn new() -> Seen {
        Seen { shards: (0..64).map(|_| Mutex::new(Shard { slots: vec![(0, 0); 1 << 10], len: 0 })).collect() }
    }

    fn shard(&self, fp: u64) -> std::sync::MutexGuard<'_, Shard> {
        self.shards[(fp >> 58) as usize].lock().unwrap_or_else(|e| e.into_inner())
    }

    /// True when `fp` was seen and every step enabled there has been taken: any visit can stop
    /// there without listing the steps.
    fn settled(&self, fp: u64) -> bool {
        self.shard(fp).find(fp) == Some(0)
    }

    /// Records a visit of `fp` under sleep mask `asleep`: whether the state is new, and the mask
    /// stored before (all ones for a new state). The stored mask becomes the intersection.
    fn visit(&self, fp: u64, asleep: u64) -> (bool, u64) {
        self.shard(fp).visit(fp, asleep)
    }
}

impl Shard {
    fn find(&self, fp: u64) -> Option<u64> {
        let mask = self.slots.len() - 1;
        let mut i = (fp as usize) & mask;
        loop {
            match self.slots[i] {
                (0, _) => return None,
                (f, stored) if f == fp => return Some(stored),
                _ => i = (i + 1) & mask,
            }
        }
    }

    fn visit(&mut self, fp: u64, asleep: u64) -> (bool, u64) {
        if 4 * (self.len + 1) > 3 * self.slots.len() {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        let mut i = (fp as usize) & mask;
        loop {
            match self.slots[i] {
                (0, _) => {
                    self.slots[i] = (fp, asleep);
                    self.len += 1;
                    return (true, u64::MAX);
                }
                (f, stored) if f == fp => {
                    self.slots[i].1 = stored & asleep;
                    return (false, stored);
                }
                _ => i = (i + 1) & mask,
            }
        }
    }

    fn grow(&mut self) {
        let doubled = vec![(0, 0); 2 * self.slots.len()];
        advise_huge_pages(&doubled);
        let old = std::mem::replace(&mut self.slots, doubled);
        let mask = self.slots.len() - 1;
        for (fp, sleep) in old.into_iter().filter(|(fp, _)| *fp != 0) {
            let mut i = (fp as usize) & mask;
            while self.slots[i].0 != 0 {
                i = (i + 1) & mask;
            }
            self.slots[i] = (fp, sleep);
        }
    }
}

/// Asks the kernel to back `slots` with 2 MiB pages where it can (Linux's transparent huge
/// pages). A table of tens of millions of states is read at random: with 4 KiB pages nearly
/// every lookup misses the TLB as well as the cache, and the lookups were a quarter of a large
/// search's time. Advice only; nothing happens elsewhere, or for a table under 4 MiB.
fn advise_huge_pages<T>(slots: &[T]) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let start = slots.as_ptr() as usize;
        let end = start + std::mem::size_of_val(slots);
        let aligned = start.next_multiple_of(HUGE);
        if end >= aligned + HUGE {
            let len = (end - aligned) / HUGE * HUGE;
            // SAFETY: madvise only tells the kernel how to back pages this allocation owns
            // (the range lies inside it); it neither reads nor changes their contents.
            unsafe { libc::madvise(aligned as *mut libc::c_void, len, libc::MADV_HUGEPAGE) };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = slots;
}

/// The state's fingerprint: a fixed-seed 64-bit hash, never zero.
fn fingerprint<A: PlainAlgorithm>(s: &State<A>) -> u64 {
    foldhash::quality::FixedState::with_seed(0x5eed_5e75).hash_one(s).max(1)
}

/// What the workers share.
struct Shared<'m, A: PlainAlgorithm> {
    model: &'m CheckModel<A>,
    props: &'m [Property<CheckModel<A>>],
    independent: fn(Actor, Actor) -> bool,
    exhaustive: bool,
    threads: usize,
    seen: Seen,
    generated: AtomicUsize,
    unique: AtomicUsize,
    depth: AtomicUsize,
    discoveries: Mutex<Vec<Option<Vec<StepOf<A>>>>>,
    /// Set when the search must end: a budget is spent, or every property is decided.
    stop: AtomicBool,
    /// An idle worker waits for a job: a busy one gives away part of its path's work.
    hungry: AtomicBool,
    pool: Mutex<Pool<A>>,
    /// Wakes waiting workers (a job, or the end).
    wake: Condvar,
    /// Wakes the watcher (the end).
    over: Condvar,
}

/// Jobs waiting for a worker, and whether the search is over.
struct Pool<A: PlainAlgorithm> {
    jobs: Vec<Job<A>>,
    idle: usize,
    done: bool,
}

/// The search itself on `opts.threads` workers: `props` judged in every state visited, budgets
/// read from `opts`, `progress` called every [`PROGRESS_EVERY`].
pub(crate) fn search<A: PlainAlgorithm>(
    model: &CheckModel<A>,
    props: &[Property<CheckModel<A>>],
    opts: &Options,
    progress: &mut dyn FnMut(&Progress),
) -> Found<A> {
    search_with(model, props, opts, progress, Actor::independent)
}

/// [`search`] under the independence relation `independent` (the tests give it wrong ones).
fn search_with<A: PlainAlgorithm>(
    model: &CheckModel<A>,
    props: &[Property<CheckModel<A>>],
    opts: &Options,
    progress: &mut dyn FnMut(&Progress),
    independent: fn(Actor, Actor) -> bool,
) -> Found<A> {
    let start = Instant::now();
    let threads = opts.threads.max(1);
    let shared = Shared {
        model,
        props,
        independent,
        exhaustive: opts.exhaustive,
        threads,
        seen: Seen::new(),
        generated: AtomicUsize::new(1),
        unique: AtomicUsize::new(0),
        depth: AtomicUsize::new(0),
        discoveries: Mutex::new(vec![None; props.len()]),
        stop: AtomicBool::new(false),
        hungry: AtomicBool::new(false),
        pool: Mutex::new(Pool { jobs: Vec::new(), idle: 0, done: false }),
        wake: Condvar::new(),
        over: Condvar::new(),
    };
    let mut root = Vec::new();
    let initial = model.initial(None);
    let fp = fingerprint(&initial);
    shared.visit(&[], &mut root, initial, fp, None, Vec::new());
    if let Some(frame) = root.pop() {
        shared.lock_pool().jobs.push(Job { prefix: Vec::new(), frame });
    }
    let mut cut = None;
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| shared.work());
        }
        cut = shared.watch(opts, start, progress);
    });
    Found {
        generated: shared.generated.into_inner(),
        unique: shared.unique.into_inner(),
        steps_deep: shared.depth.into_inner(),
        cut,
        threads,
        paths: shared.discoveries.into_inner().unwrap_or_else(|e| e.into_inner()),
    }
}

impl<A: PlainAlgorithm> Shared<'_, A> {
    fn lock_pool(&self) -> std::sync::MutexGuard<'_, Pool<A>> {
        self.pool.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Ends the search: workers stop at their next look, waiting ones wake.
    fn halt(&self) {
        self.stop.store(true, Ordering::Relaxed);
        let mut pool = self.lock_pool();
        pool.done = true;
        self.wake.notify_all();
        self.over.notify_all();
    }

    /// The caller's loop while the workers run: reports progress, and ends the search at a
    /// budget. Returns the budget that ended it, if one did.
    fn watch(&self, opts: &Options, start: Instant, progress: &mut dyn FnMut(&Progress)) -> Option<Cut> {
        let mut last_report = Instant::now();
        let mut pool = self.lock_pool();
        while !pool.done {
            // Short waits first: most checks end within milliseconds.
            let nap = if start.elapsed().as_millis() < 200 { 1 } else { 50 };
            pool =
                self.over.wait_timeout(pool, Duration::from_millis(nap)).unwrap_or_else(|e| e.into_inner()).0;
            if pool.done {
                break;
            }
            drop(pool);
            let memory = resident_memory();
            let generated = self.generated.load(Ordering::Relaxed);
            let cut = if opts.max_memory.zip(memory).is_some_and(|(limit, m)| m > limit) {
                Some(Cut::Memory)
            } else if opts.max_time.is_some_and(|t| start.elapsed() > t) {
                Some(Cut::Time)
            } else if opts.max_states.is_some_and(|n| generated >= n) {
                Some(Cut::States)
            } else {
                None
            };
            if cut.is_some() {
                self.halt();
                return cut;
            }
            if last_report.elapsed() >= PROGRESS_EVERY {
                last_report = Instant::now();
                progress(&Progress {
                    states: generated,
                    unique_states: self.unique.load(Ordering::Relaxed),
                    depth: self.depth.load(Ordering::Relaxed),
                    seconds: start.elapsed().as_secs_f64(),
                    memory,
                });
            }
            pool = self.lock_pool();
        }
        None
    }

    /// One worker: takes jobs until none is left.
    fn work(&self) {
        while let Some(job) = self.next_job() {
            self.explore(job);
        }
    }

    /// The next job; `None` once every worker is idle with no job left, or the search halted.
    fn next_job(&self) -> Option<Job<A>> {
        let mut pool = self.lock_pool();
        loop {
            if pool.done {
                return None;
            }
            if let Some(job) = pool.jobs.pop() {
                return Some(job);
            }
            pool.idle += 1;
            if pool.idle == self.threads {
                pool.done = true;
                self.wake.notify_all();
                self.over.notify_all();
                return None;
            }
            self.hungry.store(true, Ordering::Relaxed);
            pool = self.wake.wait(pool).unwrap_or_else(|e| e.into_inner());
            pool.idle -= 1;
        }
    }

    /// Depth-first from the job's state, until its steps are all taken or the search halts.
    fn explore(&self, job: Job<A>) {
        let Job { prefix, frame } = job;
        let mut stack = vec![frame];
        let mut taken = 0usize;
        while let Some(top) = stack.last_mut() {
            let Some(i) = top.todo.pop() else {
                stack.pop();
                continue;
            };
            let step = top.steps[i].clone();
            let mut next = top.state.clone();
            let Some(enters) = self.model.apply_noting_entry(&mut next, step.clone()) else { continue };
            let acts = Actor::of(&step, enters);
            let fp = fingerprint(&next);
            // Most successors are states whose every step was taken: stop before building
            // their sleep set or listing their steps.
            let settled = self.seen.settled(fp);
            let independent = self.independent;
            let sleep: Vec<Slept<A>> = if settled {
                Vec::new()
            } else {
                top.sleep.iter().filter(|u| independent(u.acts, acts)).cloned().collect()
            };
            top.sleep.push(Slept { step: step.clone(), acts });
            if !settled {
                self.visit(&prefix, &mut stack, next, fp, Some(step), sleep);
            }
            taken += 1;
            if taken.is_multiple_of(256) {
                self.generated.fetch_add(256, Ordering::Relaxed);
                if self.stop.load(Ordering::Relaxed) {
                    return;
                }
                if self.hungry.load(Ordering::Relaxed) {
                    self.give_away(&prefix, &mut stack);
                }
            }
        }
        self.generated.fetch_add(taken % 256, Ordering::Relaxed);
    }

    /// Hands half the steps left at the lowest frame that has any to an idle worker (the lowest
    /// frame's steps lead to the largest parts of the space). The job's sleep set is the frame's
    /// as it is now: the steps this worker takes later there are not added to it, which only
    /// means less pruning.
    fn give_away(&self, prefix: &[StepOf<A>], stack: &mut [Frame<A>]) {
        let Some(k) = stack.iter().position(|f| f.todo.len() >= 2) else { return };
        let frame = &mut stack[k];
        let half = frame.todo.len() / 2;
        // The front of `todo` is taken last: give that end away.
        let todo: Vec<usize> = frame.todo.drain(..half).collect();
        let job = Job {
            prefix: prefix.iter().cloned().chain(stack[1..=k].iter().filter_map(|f| f.via.clone())).collect(),
            frame: Frame {
                state: stack[k].state.clone(),
                via: None,
                steps: stack[k].steps.clone(),
                todo,
                sleep: stack[k].sleep.clone(),
            },
        };
        let mut pool = self.lock_pool();
        pool.jobs.push(job);
        self.hungry.store(false, Ordering::Relaxed);
        self.wake.notify_one();
    }

    /// Arrives at `state` (fingerprint `fp`) by `via` with sleep set `sleep`: judges it if it is
    /// new, and pushes a frame when it has steps to take (the steps enabled, less those asleep
    /// here and those a visit before has taken).
    #[allow(clippy::too_many_arguments)]
    fn visit(
        &self,
        prefix: &[StepOf<A>],
        stack: &mut Vec<Frame<A>>,
        state: State<A>,
        fp: u64,
        via: Option<StepOf<A>>,
        sleep: Vec<Slept<A>>,
    ) {
        let mut steps = Vec::new();
        self.model.steps(&state, &mut steps);
        // The sleep set as a mask over `steps`; a step past the 64th (or, defensively, one not
        // enabled here) is not kept asleep.
        let mut asleep = 0u64;
        let mut kept = Vec::with_capacity(sleep.len());
        for u in sleep {
            if let Some(i) = steps.iter().position(|s| *s == u.step)
                && i < 64
            {
                asleep |= 1 << i;
                kept.push((i, u));
            }
        }
        let (new, before) = self.seen.visit(fp, asleep);
        if new {
            self.unique.fetch_add(1, Ordering::Relaxed);
            self.depth.fetch_max(prefix.len() + stack.len(), Ordering::Relaxed);
            self.judge(prefix, stack, &state, via.as_ref());
        }
        // Steps 64 and beyond are never stored asleep: a first visit takes them all.
        let mut todo: Vec<usize> = if new { (64..steps.len()).rev().collect() } else { Vec::new() };
        todo.extend((0..steps.len().min(64)).rev().filter(|&i| before & !asleep & (1 << i) != 0));
        if todo.is_empty() {
            return;
        }
        // Asleep here: what this visit has asleep and the table still has (a visit before may
        // have taken some of these steps, with sleep sets of its own).
        let sleep = kept.into_iter().filter(|(i, _)| before & (1 << i) != 0).map(|(_, u)| u).collect();
        stack.push(Frame { state, via, steps, todo, sleep });
    }

    /// Judges every property not yet discovered in a newly visited `state`, the path to it being
    /// `prefix`, the stack's steps and `via`; halts the search once every property is decided
    /// (unless it must be exhaustive).
    fn judge(&self, prefix: &[StepOf<A>], stack: &[Frame<A>], state: &State<A>, via: Option<&StepOf<A>>) {
        let found: Vec<usize> = (self.props.iter().enumerate())
            .filter(|(_, p)| {
                let holds = (p.condition)(self.model, state);
                match p.expectation {
                    Expectation::Always => !holds,
                    Expectation::Sometimes => holds,
                    // The checker declares no eventually-properties.
                    Expectation::Eventually => false,
                }
            })
            .map(|(i, _)| i)
            .collect();
        if found.is_empty() {
            return;
        }
        let mut discoveries = self.discoveries.lock().unwrap_or_else(|e| e.into_inner());
        for i in found {
            if discoveries[i].is_none() {
                let mut path = prefix.to_vec();
                path.extend(stack.iter().filter_map(|f| f.via.clone()));
                path.extend(via.cloned());
                discoveries[i] = Some(path);
            }
        }
        let decided = discoveries.iter().all(Option::is_some);
        drop(discoveries);
        if decided && !self.exhaustive {
            self.halt();
        }
    }
}

#[cfg(test)]
mod tests {
    use ringleader_algorithms::mutex::central::CentralTimeout;
    use ringleader_algorithms::mutex::ricart_agrawala::RicartAgrawala;
    use stateright::Model as _;

    use super::*;
    use crate::Bounds;

    /// Distinct states the sleep-set search visits on `A` with 3 nodes, every node asking once,
    /// under `independent`.
    fn unique<A: PlainAlgorithm>(independent: fn(Actor, Actor) -> bool) -> usize {
        let mut bounds = Bounds::new(3);
        bounds.requesters = vec![0, 1, 2];
        let model = CheckModel::<A>::new(bounds).unwrap();
        let props = model.properties();
        let opts = Options { exhaustive: true, ..Options::default() };
        search_with(&model, &props, &opts, &mut |_| {}, independent).unique
    }

    #[test]
    fn two_steps_of_one_node_are_dependent() {
        // Declared independent, a node's second handler step is put to sleep after its first,
        // and the states only the other order reaches are lost.
        let wrong = |a: Actor, b: Actor| a.node.is_some() && b.node.is_some() && !(a.enters && b.enters);
        let right = unique::<RicartAgrawala>(Actor::independent);
        let lost = unique::<RicartAgrawala>(wrong);
        assert!(lost < right, "{lost} states with the wrong relation, {right} with the right one");
    }

    #[test]
    fn two_entries_are_dependent() {
        // The model keeps the last fencing token entered with: two entries at different nodes
        // (central-timeout lets two nodes hold at once) end in different states in either order.
        let wrong = |a: Actor, b: Actor| matches!((a.node, b.node), (Some(x), Some(y)) if x != y);
        let right = unique::<CentralTimeout>(Actor::independent);
        let lost = unique::<CentralTimeout>(wrong);
        assert!(lost < right, "{lost} states with the wrong relation, {right} with the right one");
    }
}
