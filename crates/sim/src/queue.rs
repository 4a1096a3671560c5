//! The event queue: a calendar of time buckets in front of a binary heap.
//!
//! Events are ordered by (time, sequence number). Almost every event a simulation schedules
//! lands within a few message delays of "now", so the queue keeps a sliding window of
//! [`BUCKETS`] buckets, each `2^shift` ns wide, covering at least twice the latency bound.
//! Pushing into the window is an append; a bucket is sorted once, when the clock reaches it, and
//! then drained from its head. A bitmap of occupied buckets makes skipping empty ones cheap.
//! Events beyond the window (long timers, fault plans) wait in a binary heap and move into the
//! window as it slides.
//!
//! With constant latency every event of a ring step lands in the same bucket already in order,
//! so the queue does O(1) work per event; with random latencies each bucket holds a few events
//! and sorting them is cheap and cache-friendly — both far cheaper than a million-entry heap.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

use ringleader_core::Time;

/// Buckets in the window (a power of two).
pub const BUCKETS: usize = 4096;

/// Emptied buckets' storage kept for reuse: enough for every bucket a random latency keeps
/// busy at once (about a thousand on the million-node ring with `uniform:1ms..2ms`), so that a
/// filling bucket seldom grows from nothing. The pool holds no more than the peak of storage in
/// use, so memory still follows the events in flight.
const POOL: usize = 1024;

/// An item with its key.
#[derive(Debug)]
struct Keyed<T> {
    time: Time,
    seq: u64,
    item: T,
}

impl<T> Keyed<T> {
    fn key(&self) -> (Time, u64) {
        (self.time, self.seq)
    }
}

impl<T> PartialEq for Keyed<T> {
    fn eq(&self, o: &Self) -> bool {
        self.key() == o.key()
    }
}
impl<T> Eq for Keyed<T> {}
impl<T> PartialOrd for Keyed<T> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<T> Ord for Keyed<T> {
    /// Reversed: the max-heap pops the earliest key.
    fn cmp(&self, o: &Self) -> Ordering {
        o.key().cmp(&self.key())
    }
}

#[derive(Debug)]
struct Bucket<T> {
    items: VecDeque<Keyed<T>>,
    /// True while the bucket is being drained (it was sorted when the clock reached it).
    sorted: bool,
}

impl<T> Default for Bucket<T> {
    fn default() -> Self {
        Bucket { items: VecDeque::new(), sorted: false }
    }
}

/// A priority queue of items keyed by (time, sequence), for times that never go backwards
/// below the last popped time.
#[derive(Debug)]
pub struct EventQueue<T> {
    shift: u32,
    buckets: Vec<Bucket<T>>,
    occupied: Vec<u64>,
    /// Absolute index (time >> shift) of the window's first bucket.
    cur: u64,
    in_window: usize,
    /// Items at or beyond `cur + BUCKETS` (absolute index).
    overflow: BinaryHeap<Keyed<T>>,
    len: usize,
    /// Storage of emptied buckets, reused by the next bucket that fills.
    pool: Vec<VecDeque<Keyed<T>>>,
}

impl<T> EventQueue<T> {
    /// A queue whose window covers at least `2 × horizon` ns.
    pub fn new(horizon: Time) -> Self {
        let want = horizon.saturating_mul(2).max(1);
        let mut shift = 0;
        while ((BUCKETS as u64) << shift) < want && shift < 40 {
            shift += 1;
        }
        EventQueue {
            shift,
            buckets: (0..BUCKETS).map(|_| Bucket::default()).collect(),
            occupied: vec![0; BUCKETS / 64],
            cur: 0,
            in_window: 0,
            overflow: BinaryHeap::new(),
            len: 0,
            pool: Vec::new(),
        }
    }

    /// Number of items waiting.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when nothing waits.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    fn place(&mut self, k: Keyed<T>) {
        let slot = ((k.time >> self.shift) as usize) & (BUCKETS - 1);
        let b = &mut self.buckets[slot];
        if b.items.capacity() == 0
            && let Some(storage) = self.pool.pop()
        {
            b.items = storage;
        }
        if b.sorted {
            let key = k.key();
            let at = b.items.partition_point(|x| x.key() < key);
            b.items.insert(at, k);
        } else {
            b.items.push_back(k);
        }
        self.occupied[slot / 64] |= 1 << (slot % 64);
        self.in_window += 1;
    }

    /// Adds `item` at (`time`, `seq`). `time` must not be before the last popped time.
    #[inline]
    pub fn push(&mut self, time: Time, seq: u64, item: T) {
        self.len += 1;
        let abs = time >> self.shift;
        debug_assert!(abs >= self.cur, "time went backwards");
        if abs < self.cur + BUCKETS as u64 {
            self.place(Keyed { time, seq, item });
        } else {
            self.overflow.push(Keyed { time, seq, item });
        }
    }

    /// Moves the overflow items that the window now covers into their buckets.
    fn migrate(&mut self) {
        let end = self.cur + BUCKETS as u64;
        while self.overflow.peek().is_some_and(|k| (k.time >> self.shift) < end) {
            let k = self.overflow.pop().expect("peeked");
            self.place(k);
        }
    }

    /// Advances `cur` to the first occupied bucket of the window (there is one).
    fn advance_to_occupied(&mut self) {
        let start = (self.cur as usize) & (BUCKETS - 1);
        let words = BUCKETS / 64;
        for step in 0..=words {
            let w = ((start / 64) + step) % words;
            let mut word = self.occupied[w];
            if step == 0 {
                word &= !0u64 << (start % 64);
            }
            if word != 0 {
                let slot = w * 64 + word.trailing_zeros() as usize;
                self.cur += ((slot + BUCKETS - start) % BUCKETS) as u64;
                return;
            }
        }
        unreachable!("the window holds items but no bucket is marked occupied");
    }

    /// The item `ahead` places after the next one, if it already sits in the bucket being
    /// drained (a cheap look-ahead the engine uses to prefetch the receiver's state).
    #[inline]
    pub fn peek_ahead(&self, ahead: usize) -> Option<&T> {
        let b = &self.buckets[(self.cur as usize) & (BUCKETS - 1)];
        if b.sorted { b.items.get(ahead).map(|k| &k.item) } else { None }
    }

    /// The key (time, seq) of the earliest item, if any, without moving the window: items may
    /// still be pushed at any time not before the last one popped (the windowed engine asks this
    /// between rounds, before the messages of other shards arrive).
    #[inline]
    pub fn peek_key(&self) -> Option<(Time, u64)> {
        if self.len == 0 {
            return None;
        }
        // The bucket being drained, if any, holds the earliest items in order.
        let b = &self.buckets[(self.cur as usize) & (BUCKETS - 1)];
        if b.sorted
            && let Some(k) = b.items.front()
        {
            return Some(k.key());
        }
        let window = (self.in_window > 0).then(|| {
            let start = (self.cur as usize) & (BUCKETS - 1);
            let words = BUCKETS / 64;
            let slot = (0..=words)
                .find_map(|step| {
                    let w = ((start / 64) + step) % words;
                    let mut word = self.occupied[w];
                    if step == 0 {
                        word &= !0u64 << (start % 64);
                    }
                    (word != 0).then(|| w * 64 + word.trailing_zeros() as usize)
                })
                .expect("the window holds items");
            let b = &self.buckets[slot];
            if b.sorted { b.items.front().map(Keyed::key) } else { b.items.iter().map(Keyed::key).min() }
        });
        let overflow = self.overflow.peek().map(Keyed::key);
        window.flatten().into_iter().chain(overflow).min()
    }

    /// Slides the window to the bucket holding the earliest item and sorts that bucket if the
    /// clock just reached it; returns its slot. The queue must not be empty.
    #[inline]
    fn front_bucket(&mut self) -> usize {
        if self.in_window == 0 {
            self.cur = self.overflow.peek().expect("len > 0").time >> self.shift;
            self.migrate();
        }
        let before = self.cur;
        self.advance_to_occupied();
        if self.cur != before {
            // Everything newly covered lies beyond the bucket found.
            self.migrate();
        }
        let slot = (self.cur as usize) & (BUCKETS - 1);
        let b = &mut self.buckets[slot];
        if !b.sorted {
            // Keys are unique (the sequence number breaks ties), so an unstable sort gives the one
            // order a stable sort would, faster.
            b.items.make_contiguous().sort_unstable_by_key(Keyed::key);
            b.sorted = true;
        }
        slot
    }

    /// Removes and returns the earliest (time, seq, item).
    #[inline]
    pub fn pop(&mut self) -> Option<(Time, u64, T)> {
        if self.len == 0 {
            return None;
        }
        let slot = self.front_bucket();
        let b = &mut self.buckets[slot];
        let k = b.items.pop_front().expect("occupied bucket");
        if b.items.is_empty() {
            // Hand the storage back to the pool: the clock cycles through thousands of buckets
            // but only a few hold events at once, so only those few own memory.
            let storage = std::mem::take(&mut b.items);
            if self.pool.len() < POOL {
                self.pool.push(storage);
            }
            b.sorted = false;
            self.occupied[slot / 64] &= !(1 << (slot % 64));
        }
        self.in_window -= 1;
        self.len -= 1;
        Some((k.time, k.seq, k.item))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The queue pops in exactly (time, seq) order, like a binary heap, under any
        /// interleaving of pushes (never before the last pop) and pops.
        #[test]
        fn pops_in_time_then_sequence_order(
            horizon in 1u64..5_000,
            ops in proptest::collection::vec((0u8..3, 0u64..20_000_000), 1..400),
        ) {
            let mut q = EventQueue::new(horizon);
            let mut model = BinaryHeap::new();
            let (mut now, mut seq) = (0u64, 0u64);
            for (op, delay) in ops {
                if op < 2 {
                    let delay = if op == 0 { delay % (2 * horizon + 1) } else { delay };
                    q.push(now + delay, seq, seq);
                    model.push(std::cmp::Reverse((now + delay, seq)));
                    seq += 1;
                } else {
                    let popped = q.pop();
                    if let Some((_, s, i)) = popped {
                        prop_assert_eq!(s, i);
                    }
                    let got = popped.map(|(t, s, _)| (t, s));
                    let want = model.pop().map(|r| r.0);
                    prop_assert_eq!(got, want);
                    if let Some((t, _)) = got { now = t; }
                }
                prop_assert_eq!(q.len(), model.len());
            }
            while let Some(want) = model.pop() {
                let (t, s, _) = q.pop().expect("same length");
                prop_assert_eq!((t, s), want.0);
            }
            prop_assert!(q.pop().is_none());
        }
    }
}
