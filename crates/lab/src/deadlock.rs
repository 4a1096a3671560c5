//! The deadlock family's client: the application's lock table, which decides who waits for
//! whom.
//!
//! Every node runs `entries` transactions one after the other. A transaction holds the node's
//! own resource from its start to its commit and, `hold` after its start, asks for resources
//! other transactions hold — *hold and wait*:
//!
//! ```text
//!   thinking ──begin──▶ holding ──(hold) want{holders}──▶ blocked
//!   blocked ──each holder commits: grant{holder}──▶ … ──last one──▶ running
//!   running ──(hold) commit: grant to every waiter──▶ thinking ──(gap + think)──▶ begin
//!   blocked ──(give_up) the client gives up: abort──▶ thinking (its waiters are granted)
//!   any phase ──the node reports aborted (a victim)──▶ thinking (its waiters are granted)
//! ```
//!
//! Which holders a request names is drawn with the run's seed: 1..=`holders` of them; with
//! probability `cycles` one is chosen among the nodes that already (transitively) wait for the
//! requester, closing a cycle; the others among busy nodes that do not. A request that finds
//! nobody busy to wait for runs at once. Only a running transaction commits, so a cycle of
//! blocked nodes never dissolves by itself: it is a deadlock, until a node reports `aborted`.
//!
//! As in the simulator's deadlock workload, a node that commits stays thinking for more than
//! twice the latency bound before it can block again (`gap`), so that a probe sent along an
//! edge before it was granted reaches a node that is no longer blocked in that wait
//! (Chandy-Misra-Haas's side condition, without the node tracking who waits for it).

use rand::RngExt;
use rand_xoshiro::Xoshiro256PlusPlus;

/// Where a node's transaction is, as the lock table sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Between transactions: holds nothing.
    Thinking,
    /// In a transaction, holding its resource, request not made yet.
    Holding,
    /// In a transaction, waiting for holders.
    Blocked,
    /// In a transaction, holding everything it needs, about to commit.
    Running,
    /// Out of transactions (or crashed): holds nothing, forever.
    Done,
}

/// The lock table: phases, waits, and transactions left.
#[derive(Clone, Debug)]
pub(crate) struct LockTable {
    pub phase: Vec<Phase>,
    /// Positions each node waits for.
    pub waits: Vec<Vec<usize>>,
    /// Transactions each node has yet to begin.
    pub remaining: Vec<u32>,
    /// Bumped when a transaction ends early (abort, give-up), so that its pending timers are
    /// stale.
    pub epoch: Vec<u64>,
    /// Requests that named at least one holder.
    pub requests: u64,
}

impl LockTable {
    pub fn new(n: usize, entries: u32) -> LockTable {
        LockTable {
            phase: vec![Phase::Thinking; n],
            waits: vec![Vec::new(); n],
            remaining: vec![entries; n],
            epoch: vec![0; n],
            requests: 0,
        }
    }

    /// True while `x` is in a transaction (holds its resource).
    pub fn busy(&self, x: usize) -> bool {
        matches!(self.phase[x], Phase::Holding | Phase::Blocked | Phase::Running)
    }

    /// Nodes that wait for `target`, directly or transitively.
    fn waiting_on(&self, target: usize) -> Vec<bool> {
        let n = self.phase.len();
        let mut reach = vec![false; n];
        reach[target] = true;
        let mut changed = true;
        while changed {
            changed = false;
            for x in 0..n {
                if !reach[x] && self.waits[x].iter().any(|&h| reach[h]) {
                    reach[x] = true;
                    changed = true;
                }
            }
        }
        reach[target] = false;
        reach
    }

    /// The holders `j`'s request names (sorted; empty when nobody busy can be waited for).
    pub fn choose_holders(
        &self,
        j: usize,
        rng: &mut Xoshiro256PlusPlus,
        cycles: f64,
        max_holders: u32,
    ) -> Vec<usize> {
        let n = self.phase.len();
        let ancestors = self.waiting_on(j);
        let mut closing: Vec<usize> = (0..n).filter(|&x| ancestors[x]).collect();
        let mut safe: Vec<usize> = (0..n).filter(|&x| x != j && self.busy(x) && !ancestors[x]).collect();
        let k = rng.random_range(1..=max_holders.max(1)) as usize;
        let mut holders = Vec::with_capacity(k);
        if !closing.is_empty() && rng.random_bool(cycles.clamp(0.0, 1.0)) {
            holders.push(closing.swap_remove(rng.random_range(0..closing.len())));
        }
        while holders.len() < k && !safe.is_empty() {
            holders.push(safe.swap_remove(rng.random_range(0..safe.len())));
        }
        if holders.is_empty() && !closing.is_empty() && (0..n).all(|x| x == j || self.busy(x)) {
            // Everybody else is busy and waits for j: any request closes a cycle.
            holders.push(closing.swap_remove(rng.random_range(0..closing.len())));
        }
        holders.sort_unstable();
        holders
    }

    /// `j` stops holding its resource: the nodes that waited for it (in position order), each
    /// with whether it now has everything it waited for.
    pub fn release(&mut self, j: usize) -> Vec<(usize, bool)> {
        let mut granted = Vec::new();
        for x in 0..self.waits.len() {
            if let Some(i) = self.waits[x].iter().position(|&h| h == j) {
                self.waits[x].remove(i);
                let unblocked = self.waits[x].is_empty() && self.phase[x] == Phase::Blocked;
                if unblocked {
                    self.phase[x] = Phase::Running;
                }
                granted.push((x, unblocked));
            }
        }
        granted
    }
}

/// Chandy-Misra-Haas's message bounds over a run (`--algo-like chandy-misra-haas`), from the
/// lock table's history: an initiation (one per blocking request) sends at most one probe per
/// wait-for edge, and only along edges that exist while it travels — those alive when it
/// began or created later; a cycle of length L reported by an initiator took at least L probes
/// of that initiator's wait (its probes share no hop with another initiation's, and two cycles
/// one initiation finds may share a prefix, so each initiation counts its longest).
#[derive(Clone, Debug, Default)]
pub(crate) struct ProbeBounds {
    /// Per blocking request: the edges alive once it was made, and the edges created so far.
    requests: Vec<(u64, u64)>,
    /// Edges created so far.
    created: u64,
    /// Per (initiator, its wait number): the longest cycle it reported.
    reported: std::collections::BTreeMap<(usize, u64), u64>,
    /// Blocking requests each node has made (its wait number).
    pub waits: Vec<u64>,
}

impl ProbeBounds {
    pub fn new(n: usize) -> ProbeBounds {
        ProbeBounds { waits: vec![0; n], ..Default::default() }
    }

    /// `node` made a blocking request naming `holders`; `table` already holds its edges.
    pub fn request(&mut self, node: usize, holders: usize, table: &LockTable) {
        self.waits[node] += 1;
        self.created += holders as u64;
        let alive = table.waits.iter().map(|w| w.len() as u64).sum();
        self.requests.push((alive, self.created));
    }

    /// `node` reported a cycle of `len` nodes in its current wait.
    pub fn reported(&mut self, node: usize, len: usize) {
        let e = self.reported.entry((node, self.waits[node])).or_default();
        *e = (*e).max(len as u64);
    }

    /// The least and the most probes the run allows.
    pub fn bounds(&self) -> (u64, u64) {
        let low = self.reported.values().sum();
        let high = self.requests.iter().map(|&(alive, upto)| alive + (self.created - upto)).sum();
        (low, high)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn a_request_closes_a_cycle_only_through_its_waiters() {
        let mut t = LockTable::new(3, 1);
        t.phase = vec![Phase::Blocked, Phase::Blocked, Phase::Holding];
        t.waits[0] = vec![1];
        t.waits[1] = vec![2];
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        // Node 2's only candidates wait for it: with cycles = 1 it closes 0 → 1 → 2 → 0 or 1 → 2 → 1.
        let h = t.choose_holders(2, &mut rng, 1.0, 1);
        assert!(h == vec![0] || h == vec![1], "{h:?}");
        // Node 1 finishing grants node 0, which runs.
        t.phase[1] = Phase::Running;
        t.waits[1].clear();
        assert_eq!(t.release(1), vec![(0, true)]);
        assert_eq!(t.phase[0], Phase::Running);
        // Nobody busy: nothing to wait for.
        let idle = LockTable::new(2, 1);
        assert!(idle.choose_holders(0, &mut rng, 1.0, 2).is_empty());
    }

    /// Two nodes waiting for each other: the first initiation may use its own edge and the
    /// one created after it (2), the second only the two alive (2); each reported the cycle
    /// of 2, so 4 .. 4. A third request, later, adds its edge to the others' allowance only
    /// for the initiations still open to it — here, all of them (the bound is a ceiling).
    #[test]
    fn probe_bounds_count_edges_alive_or_created_later_and_the_longest_cycle_per_initiation() {
        let mut t = LockTable::new(3, 1);
        let mut b = ProbeBounds::new(3);
        t.waits[0] = vec![1];
        b.request(0, 1, &t);
        t.waits[1] = vec![0];
        b.request(1, 1, &t);
        b.reported(0, 2);
        b.reported(1, 2);
        b.reported(1, 2);
        assert_eq!(b.bounds(), (4, 4));
        t.waits[2] = vec![0];
        b.request(2, 1, &t);
        assert_eq!(b.bounds(), (4, 3 + 3 + 3));
    }
}
