//! # Linearizability: is a concurrent history explained by some sequential one?
//!
//! A client history records, for every operation, when a client *invoked* it, when it saw the
//! *return* (if it ever did) and what came back. The history is **linearizable** (Herlihy &
//! Wing, "Linearizability: A Correctness Condition for Concurrent Objects", TOPLAS 1990) when
//! each operation can be given a single point in time between its invocation and its return at
//! which it took effect, such that the operations taken in the order of those points are a legal
//! run of the object's sequential specification (the [`Model`]) producing exactly the outputs
//! observed. Operations that never returned (the client crashed, the run ended, a request timed
//! out) may have taken effect at any point after their invocation, or not at all.
//!
//! Deciding it is NP-complete in general (Gibbons & Korach, SIAM J. Comput. 1997), so the checker
//! searches, with a bound on the work:
//!
//! - **Wing & Gong's search** (Wing & Gong, "Testing and Verifying Concurrent Objects", JPDC
//!   1993): keep the invocations and returns in time order; repeatedly pick an operation whose
//!   invocation comes before the first return still waiting (it is *minimal*: nothing had to
//!   precede it in real time), apply it to the model, and remove it; when the model refuses
//!   every candidate, undo the last choice (backtrack). Every completed operation removed is a
//!   linearization found.
//! - **Lowe's memoisation** (Lowe, "Testing for Linearizability", Concurrency and Computation
//!   2017): two branches that have linearized the same *set* of operations and reached the same
//!   model state have the same future, so each (set, state) pair is explored once. This is what
//!   makes the search practical on histories of thousands of operations; it is the algorithm of
//!   Knossos (Kingsbury, for Jepsen) and Porcupine (Athalye, 2017). This implementation is
//!   written from the papers.
//! - **Partitions** (P-compositionality, Horn & Kroening, FORTE 2015): linearizability is
//!   *local* (Herlihy & Wing, theorem 1) — a history of independent objects is linearizable iff
//!   each object's sub-history is — so a model may give each operation a partition key (a lock
//!   name) and each partition is searched alone.
//!
//! ## Verdicts
//!
//! [`check`] answers [`LinearizabilityVerdict::Linearizable`], [`LinearizabilityVerdict::Violated`]
//! with a [`Witness`], or [`LinearizabilityVerdict::Undecided`] when a partition's search used up
//! its budget of steps (a step is one candidate tried or one backtrack): running out of budget
//! never reads as a violation.
//!
//! The witness is meant for a human. Histories are *prefix-closed* (if a history is
//! linearizable, so is every prefix of it, where the operations still open at the cut become
//! operations that never returned), so after a violation the checker bisects over the return
//! times for the **shortest prefix that cannot be linearized**: its last return is the
//! operation that could not be explained, and the witness shows it, the operations concurrent
//! with it, and the longest partial linearization the search found in that prefix.
//!
//! ## Conventions
//!
//! - Times are integers (ns). An invocation and a return at the same instant are taken as
//!   concurrent (the invocation is ordered first): the permissive reading, which never makes a
//!   violation out of a tie.
//! - An operation without a return time never returned; its output is `None` and the model's
//!   [`Model::step`] is asked what the operation would have done with *some* output. It may also
//!   be left out of the linearization altogether.
//! - The search is deterministic: the same history gives the same verdict, witness and step
//!   count. Its memo is a hash set used for membership only.

pub mod kv;
pub mod lock;

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::hash::Hash;

/// The default search budget per partition, in steps: generous for the simulator's histories
/// (a few hundred operations on one lock take a few thousand steps) and bounded at a few
/// seconds on a pathological one.
pub const DEFAULT_BUDGET: u64 = 1_000_000;

/// A sequential specification: the object's states and what each operation does to them.
pub trait Model {
    /// A state of the object (compared and hashed by the memo).
    type State: Clone + Eq + Hash + fmt::Debug;
    /// What an operation asks.
    type Input: Clone + fmt::Debug;
    /// What an operation answers.
    type Output: Clone + fmt::Debug;

    /// The state before any operation.
    fn init(&self) -> Self::State;

    /// The state after `input` applied to `state` answered `output`, or `None` when the object
    /// could not have answered that in that state. `output` is `None` for an operation that
    /// never returned: answer the state after the operation with whatever output it could have
    /// had (the weakest constraint on what follows), or `None` if it could not take effect.
    fn step(
        &self,
        state: &Self::State,
        input: &Self::Input,
        output: Option<&Self::Output>,
    ) -> Option<Self::State>;

    /// The partition `input` belongs to (an object, e.g. a lock name); operations of different
    /// partitions are checked independently. Default: a single partition.
    fn partition(&self, _input: &Self::Input) -> String {
        String::new()
    }

    /// One line describing an operation, for witnesses. Default: its `Debug` forms.
    fn describe(&self, input: &Self::Input, output: Option<&Self::Output>) -> String {
        match output {
            Some(o) => format!("{input:?} -> {o:?}"),
            None => format!("{input:?} -> (no return)"),
        }
    }
}

/// One operation of a history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Operation<I, O> {
    /// Who performed it (for witnesses).
    pub client: String,
    /// What it asked.
    pub input: I,
    /// What it answered; `None` when it never returned.
    pub output: Option<O>,
    /// When it was invoked (ns).
    pub call: u64,
    /// When its answer was seen (ns); `None` when it never returned.
    pub ret: Option<u64>,
}

/// Why a history is not linearizable, for a human.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Witness {
    /// The partition (e.g. lock name) that cannot be linearized.
    pub partition: String,
    /// The shortest prefix of the partition's history that cannot be linearized ends at this
    /// time (ns): the return of [`Witness::culprit`].
    pub prefix_end: u64,
    /// How many operations that prefix holds (invoked by `prefix_end`).
    pub prefix_ops: usize,
    /// The operation that could not be explained: the last return of the shortest prefix.
    pub culprit: String,
    /// The operations concurrent with the culprit that had not been linearized when the search
    /// got stuck on it.
    pub concurrent: Vec<String>,
    /// The longest partial linearization found in that prefix (at most its last
    /// [`WITNESS_TAIL`] operations, oldest first), after which the culprit cannot be placed.
    pub linearized: Vec<String>,
    /// How many operations that partial linearization had in all.
    pub linearized_len: usize,
}

/// How many operations of the longest partial linearization a witness shows.
pub const WITNESS_TAIL: usize = 8;

impl fmt::Display for Witness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = if self.partition.is_empty() { String::new() } else { format!("{:?}: ", self.partition) };
        write!(
            f,
            "{name}the history up to {:.3} ms ({} operations) cannot be linearized: no order explains {}",
            self.prefix_end as f64 / 1e6,
            self.prefix_ops,
            self.culprit
        )?;
        if self.linearized_len > 0 {
            let skipped = self.linearized_len - self.linearized.len();
            write!(
                f,
                "; it cannot follow the longest linearization found ({} operations{}: {})",
                self.linearized_len,
                if skipped > 0 { format!(", the last {}", self.linearized.len()) } else { String::new() },
                self.linearized.join(", ")
            )?;
        }
        if !self.concurrent.is_empty() {
            write!(f, "; still unplaced and concurrent with it: {}", self.concurrent.join(", "))?;
        }
        Ok(())
    }
}

/// What the checker concluded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LinearizabilityVerdict {
    /// Some order explains the whole history.
    Linearizable,
    /// No order does; the witness says where.
    Violated(Box<Witness>),
    /// A partition's search ran out of budget before deciding (no violation found).
    Undecided {
        /// The partition left undecided.
        partition: String,
        /// Steps spent on it.
        steps: u64,
    },
}

impl fmt::Display for LinearizabilityVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LinearizabilityVerdict::Linearizable => f.write_str("linearizable"),
            LinearizabilityVerdict::Violated(w) => write!(f, "NOT linearizable: {w}"),
            LinearizabilityVerdict::Undecided { partition, steps } => write!(
                f,
                "undecided: the search of {} ran out of its budget after {steps} steps without finding a violation",
                if partition.is_empty() { "the history".to_string() } else { format!("{partition:?}") }
            ),
        }
    }
}

/// The result of a search with statistics.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checked {
    /// The verdict.
    pub verdict: LinearizabilityVerdict,
    /// Operations checked.
    pub operations: usize,
    /// Partitions checked.
    pub partitions: usize,
    /// Search steps spent in all (the witness's bisection included).
    pub steps: u64,
}

/// Checks `history` against `model`, spending at most `budget` steps per partition.
pub fn check<M: Model>(model: &M, history: &[Operation<M::Input, M::Output>], budget: u64) -> Checked {
    let mut parts: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, op) in history.iter().enumerate() {
        parts.entry(model.partition(&op.input)).or_default().push(i);
    }
    let mut steps = 0;
    let mut undecided = None;
    for (name, ops) in &parts {
        let ops: Vec<Operation<M::Input, M::Output>> = ops.iter().map(|&i| history[i].clone()).collect();
        let r = search(model, &ops, budget);
        steps += r.steps;
        match r.outcome {
            SearchEnd::Ok => {}
            SearchEnd::OutOfBudget => {
                if undecided.is_none() {
                    undecided =
                        Some(LinearizabilityVerdict::Undecided { partition: name.clone(), steps: r.steps });
                }
            }
            SearchEnd::Stuck { .. } => {
                let (witness, more) = explain(model, name, &ops, budget);
                steps += more;
                return Checked {
                    verdict: LinearizabilityVerdict::Violated(Box::new(witness)),
                    operations: history.len(),
                    partitions: parts.len(),
                    steps,
                };
            }
        }
    }
    Checked {
        verdict: undecided.unwrap_or(LinearizabilityVerdict::Linearizable),
        operations: history.len(),
        partitions: parts.len(),
        steps,
    }
}

/// The history cut at time `t`: operations invoked after it are gone, those returning after it
/// never returned.
fn prefix<I: Clone, O: Clone>(ops: &[Operation<I, O>], t: u64) -> Vec<Operation<I, O>> {
    ops.iter()
        .filter(|o| o.call <= t)
        .map(|o| {
            let mut o = o.clone();
            if o.ret.is_some_and(|r| r > t) {
                o.ret = None;
                o.output = None;
            }
            o
        })
        .collect()
}

/// Bisects for the shortest prefix that cannot be linearized and builds the witness from it.
fn explain<M: Model>(
    model: &M,
    name: &str,
    ops: &[Operation<M::Input, M::Output>],
    budget: u64,
) -> (Witness, u64) {
    let mut returns: Vec<u64> = ops.iter().filter_map(|o| o.ret).collect();
    returns.sort_unstable();
    returns.dedup();
    let mut steps = 0;
    // The whole history fails; find the first return time whose prefix fails. A prefix whose
    // search runs out of budget counts as passing (the bisection then errs long, never short).
    let (mut lo, mut hi) = (0usize, returns.len().saturating_sub(1));
    while lo < hi {
        let mid = (lo + hi) / 2;
        let r = search(model, &prefix(ops, returns[mid]), budget);
        steps += r.steps;
        if matches!(r.outcome, SearchEnd::Stuck { .. }) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    let end = returns.get(lo).copied().unwrap_or(u64::MAX);
    let cut = prefix(ops, end);
    let r = search(model, &cut, budget);
    steps += r.steps;
    let show = |o: &Operation<M::Input, M::Output>| shown(model, o);
    let (culprit, concurrent, linearized) = match r.outcome {
        SearchEnd::Stuck { culprit, unplaced, linearized } => (culprit, unplaced, linearized),
        // Unreachable when the whole history failed (prefix closure); keep a readable answer.
        _ => (ops.len().saturating_sub(1), Vec::new(), Vec::new()),
    };
    let tail = linearized.len().saturating_sub(WITNESS_TAIL);
    let witness = Witness {
        partition: name.to_string(),
        prefix_end: end,
        prefix_ops: cut.len(),
        culprit: cut.get(culprit).map(show).unwrap_or_default(),
        concurrent: concurrent.iter().filter(|&&i| i != culprit).map(|&i| show(&cut[i])).collect(),
        linearized: linearized[tail..].iter().map(|&i| show(&cut[i])).collect(),
        linearized_len: linearized.len(),
    };
    (witness, steps)
}

/// How one partition's search ended.
enum SearchEnd {
    Ok,
    OutOfBudget,
    /// Not linearizable: at the deepest point reached, `linearized` (op indices, in order) had
    /// been placed and the return of `culprit` could not be passed; `unplaced` were the ops
    /// invoked but not placed there.
    Stuck {
        culprit: usize,
        unplaced: Vec<usize>,
        linearized: Vec<usize>,
    },
}

struct Searched {
    outcome: SearchEnd,
    steps: u64,
}

/// A set of operation indices, hashed by the memo.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Bits(Vec<u64>);

impl Bits {
    fn new(n: usize) -> Bits {
        Bits(vec![0; n.div_ceil(64)])
    }
    fn set(&mut self, i: usize) {
        self.0[i / 64] |= 1 << (i % 64);
    }
    fn clear(&mut self, i: usize) {
        self.0[i / 64] &= !(1 << (i % 64));
    }
}

/// An invocation or a return in the time-ordered, doubly linked list of the search.
#[derive(Clone, Copy)]
struct Entry {
    op: usize,
    call: bool,
}

/// Wing & Gong's search with Lowe's memo over one partition.
fn search<M: Model>(model: &M, ops: &[Operation<M::Input, M::Output>], budget: u64) -> Searched {
    let n = ops.len();
    // Entries sorted by time; at equal times invocations first (ties are concurrent), then by
    // operation index for determinism. A missing return is at the end of time.
    let mut order: Vec<(u64, u8, usize)> = Vec::with_capacity(2 * n);
    for (i, o) in ops.iter().enumerate() {
        order.push((o.call, 0, i));
        order.push((o.ret.unwrap_or(u64::MAX), 1, i));
    }
    order.sort_unstable();
    // Node 0 is the head sentinel, node k + 1 is order[k]; `NIL` ends the list.
    const NIL: usize = usize::MAX;
    let len = order.len() + 1;
    let mut entries = vec![Entry { op: usize::MAX, call: false }; len];
    let mut next = vec![NIL; len];
    let mut prev = vec![NIL; len];
    let mut ret_node = vec![0usize; n];
    for (k, &(_, kind, op)) in order.iter().enumerate() {
        entries[k + 1] = Entry { op, call: kind == 0 };
        if kind == 1 {
            ret_node[op] = k + 1;
        }
    }
    for i in 0..len {
        next[i] = if i + 1 < len { i + 1 } else { NIL };
        prev[i] = if i > 0 { i - 1 } else { NIL };
    }
    let unlink = |next: &mut Vec<usize>, prev: &mut Vec<usize>, i: usize| {
        let (p, q) = (prev[i], next[i]);
        next[p] = q;
        if q != NIL {
            prev[q] = p;
        }
    };
    let relink = |next: &mut Vec<usize>, prev: &mut Vec<usize>, i: usize| {
        let (p, q) = (prev[i], next[i]);
        next[p] = i;
        if q != NIL {
            prev[q] = i;
        }
    };

    let mut remaining = ops.iter().filter(|o| o.ret.is_some()).count();
    let mut state = model.init();
    let mut placed = Bits::new(n);
    let mut memo: HashSet<(Bits, M::State)> = HashSet::new();
    // (call node, state before it) of each placed operation, in placement order.
    let mut stack: Vec<(usize, M::State)> = Vec::new();
    let mut deepest: Option<(usize, usize, Vec<usize>, Vec<usize>)> = None;
    let mut steps = 0u64;
    let mut cur = next[0];
    loop {
        if remaining == 0 {
            return Searched { outcome: SearchEnd::Ok, steps };
        }
        steps += 1;
        if steps > budget {
            return Searched { outcome: SearchEnd::OutOfBudget, steps: steps - 1 };
        }
        let e = if cur == NIL { Entry { op: usize::MAX, call: false } } else { entries[cur] };
        if e.call {
            let o = &ops[e.op];
            if let Some(after) = model.step(&state, &o.input, o.output.as_ref()) {
                placed.set(e.op);
                if memo.insert((placed.clone(), after.clone())) {
                    let before = std::mem::replace(&mut state, after);
                    stack.push((cur, before));
                    if o.ret.is_some() {
                        remaining -= 1;
                    }
                    unlink(&mut next, &mut prev, cur);
                    unlink(&mut next, &mut prev, ret_node[e.op]);
                    cur = next[0];
                    continue;
                }
                placed.clear(e.op);
            }
            cur = next[cur];
        } else {
            // A return whose operation is not placed: nothing later may be placed before it.
            if e.op != usize::MAX && deepest.as_ref().is_none_or(|d| stack.len() > d.0) {
                let mut unplaced = Vec::new();
                let mut i = next[0];
                while i != NIL && i != cur {
                    if entries[i].call {
                        unplaced.push(entries[i].op);
                    }
                    i = next[i];
                }
                unplaced.push(e.op);
                let line = stack.iter().map(|&(c, _)| entries[c].op).collect();
                deepest = Some((stack.len(), e.op, unplaced, line));
            }
            let Some((call, before)) = stack.pop() else {
                let (_, culprit, unplaced, linearized) = deepest.unwrap_or((0, 0, Vec::new(), Vec::new()));
                return Searched { outcome: SearchEnd::Stuck { culprit, unplaced, linearized }, steps };
            };
            let op = entries[call].op;
            state = before;
            placed.clear(op);
            if ops[op].ret.is_some() {
                remaining += 1;
            }
            relink(&mut next, &mut prev, ret_node[op]);
            relink(&mut next, &mut prev, call);
            cur = next[call];
        }
    }
}

/// One operation as a violation's excerpt shows it: client, what it did, and its interval in
/// ms (`…` for a call that never returned).
pub(crate) fn shown<M: Model>(model: &M, o: &Operation<M::Input, M::Output>) -> String {
    let ret = o.ret.map(|r| format!("{:.3}", r as f64 / 1e6)).unwrap_or_else(|| "…".into());
    format!(
        "{} {} [{:.3}, {ret}] ms",
        o.client,
        model.describe(&o.input, o.output.as_ref()),
        o.call as f64 / 1e6
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A register of integers: write(v) → (), read() → v.
    struct Register;

    #[derive(Clone, Debug, PartialEq, Eq)]
    enum RegOp {
        Write(u64),
        Read,
    }

    impl Model for Register {
        type State = u64;
        type Input = RegOp;
        type Output = u64;
        fn init(&self) -> u64 {
            0
        }
        fn step(&self, s: &u64, input: &RegOp, output: Option<&u64>) -> Option<u64> {
            match input {
                RegOp::Write(v) => Some(*v),
                RegOp::Read => match output {
                    Some(o) if o != s => None,
                    _ => Some(*s),
                },
            }
        }
    }

    fn op(
        client: &str,
        input: RegOp,
        output: Option<u64>,
        call: u64,
        ret: Option<u64>,
    ) -> Operation<RegOp, u64> {
        Operation { client: client.into(), input, output, call, ret }
    }

    fn w(c: &str, v: u64, call: u64, ret: u64) -> Operation<RegOp, u64> {
        op(c, RegOp::Write(v), Some(0), call, Some(ret))
    }

    fn r(c: &str, v: u64, call: u64, ret: u64) -> Operation<RegOp, u64> {
        op(c, RegOp::Read, Some(v), call, Some(ret))
    }

    fn verdict(h: &[Operation<RegOp, u64>]) -> LinearizabilityVerdict {
        check(&Register, h, DEFAULT_BUDGET).verdict
    }

    #[test]
    fn a_sequential_history_that_follows_the_model_is_linearizable() {
        let h = [w("a", 1, 0, 1), r("b", 1, 2, 3), w("a", 2, 4, 5), r("b", 2, 6, 7)];
        assert_eq!(verdict(&h), LinearizabilityVerdict::Linearizable);
        assert_eq!(verdict(&[]), LinearizabilityVerdict::Linearizable);
    }

    #[test]
    fn a_stale_read_after_a_completed_write_is_not_linearizable() {
        let h = [w("a", 1, 0, 10), r("b", 0, 20, 30)];
        let LinearizabilityVerdict::Violated(wit) = verdict(&h) else { panic!("expected a violation") };
        assert!(wit.culprit.starts_with("b Read -> 0"), "{wit}");
        assert_eq!(wit.prefix_end, 30);
        assert_eq!(wit.linearized, ["a Write(1) -> 0 [0.000, 0.000] ms"], "{wit}");
    }

    #[test]
    fn concurrent_operations_may_take_effect_in_either_order() {
        // The read overlaps the write: it may see the old or the new value.
        assert_eq!(verdict(&[w("a", 1, 0, 10), r("b", 0, 5, 15)]), LinearizabilityVerdict::Linearizable);
        assert_eq!(verdict(&[w("a", 1, 0, 10), r("b", 1, 5, 15)]), LinearizabilityVerdict::Linearizable);
        // Two overlapping reads may not disagree about the order of two writes they both follow.
        let h = [w("a", 1, 0, 10), w("b", 2, 0, 10), r("c", 1, 20, 30), r("d", 2, 40, 50)];
        assert!(matches!(verdict(&h), LinearizabilityVerdict::Violated(_)));
        let h = [w("a", 1, 0, 10), w("b", 2, 0, 10), r("c", 1, 20, 30), r("d", 1, 40, 50)];
        assert_eq!(verdict(&h), LinearizabilityVerdict::Linearizable);
        // A tie between a return and an invocation counts as overlap.
        assert_eq!(verdict(&[w("a", 1, 0, 10), r("b", 0, 10, 20)]), LinearizabilityVerdict::Linearizable);
    }

    #[test]
    fn an_operation_that_never_returned_may_or_may_not_have_taken_effect() {
        let pending = op("a", RegOp::Write(1), None, 0, None);
        assert_eq!(
            verdict(&[pending.clone(), r("b", 0, 5, 6), r("b", 1, 7, 8)]),
            LinearizabilityVerdict::Linearizable
        );
        assert_eq!(verdict(&[pending.clone(), r("b", 0, 5, 6)]), LinearizabilityVerdict::Linearizable);
        // It takes effect after its invocation, not before, and not twice.
        let late = op("a", RegOp::Write(1), None, 5, None);
        assert!(matches!(verdict(&[r("b", 1, 0, 1), late]), LinearizabilityVerdict::Violated(_)));
        let h = [pending, r("b", 1, 5, 6), r("b", 0, 7, 8)];
        assert!(matches!(verdict(&h), LinearizabilityVerdict::Violated(_)));
    }

    #[test]
    fn the_witness_is_the_shortest_failing_prefix() {
        // Fine until the stale read at 30..40; later operations do not enter the witness.
        let mut h = vec![w("a", 1, 0, 10), r("b", 1, 12, 14), w("a", 2, 16, 20), r("c", 1, 30, 40)];
        for k in 0..20 {
            h.push(w("a", 3, 100 + 10 * k, 105 + 10 * k));
        }
        let LinearizabilityVerdict::Violated(wit) = verdict(&h) else { panic!() };
        assert_eq!((wit.prefix_end, wit.prefix_ops), (40, 4));
        assert!(wit.culprit.starts_with("c Read -> 1"), "{wit}");
        assert_eq!(wit.linearized_len, 3);
        let text = wit.to_string();
        assert!(text.contains("cannot be linearized") && text.contains("c Read -> 1"), "{text}");
    }

    #[test]
    fn over_budget_the_verdict_is_undecided_never_violated() {
        // Many concurrent writes followed by an impossible read: refuting it needs every order.
        let mut h: Vec<_> = (1..=12).map(|v| w(&format!("c{v}"), v, 0, 100)).collect();
        h.push(r("z", 99, 200, 300));
        let c = check(&Register, &h, 50);
        assert_eq!(c.verdict, LinearizabilityVerdict::Undecided { partition: String::new(), steps: 50 });
        assert!(matches!(check(&Register, &h, DEFAULT_BUDGET).verdict, LinearizabilityVerdict::Violated(_)));
    }

    /// Registers by name: one partition each.
    struct Registers;

    impl Model for Registers {
        type State = u64;
        type Input = (String, RegOp);
        type Output = u64;
        fn init(&self) -> u64 {
            0
        }
        fn step(&self, s: &u64, input: &(String, RegOp), output: Option<&u64>) -> Option<u64> {
            Register.step(s, &input.1, output)
        }
        fn partition(&self, input: &(String, RegOp)) -> String {
            input.0.clone()
        }
    }

    #[test]
    fn partitions_are_checked_alone() {
        let on = |k: &str, o: Operation<RegOp, u64>| Operation {
            client: o.client,
            input: (k.to_string(), o.input),
            output: o.output,
            call: o.call,
            ret: o.ret,
        };
        let h = [on("x", w("a", 1, 0, 10)), on("y", r("b", 0, 20, 30)), on("x", r("b", 1, 40, 50))];
        let c = check(&Registers, &h, DEFAULT_BUDGET);
        assert_eq!((c.verdict, c.partitions), (LinearizabilityVerdict::Linearizable, 2));
        let h = [on("x", w("a", 1, 0, 10)), on("y", r("b", 1, 20, 30))];
        let LinearizabilityVerdict::Violated(wit) = check(&Registers, &h, DEFAULT_BUDGET).verdict else {
            panic!()
        };
        assert_eq!(wit.partition, "y");
    }
}
