//! Writing the trace: JSON lines, with Lamport and vector timestamps computed by the driver.
//!
//! The driver, not the algorithm, stamps every record, by the rules of
//! [`ringleader_core::stamp`]: each local event (a timer, a request, an emitted event) ticks the
//! node's clocks; a send ticks and attaches the stamp to the message; a delivery takes the
//! maximum with the attached stamp and ticks. Vector timestamps are kept only for runs of at
//! most [`MAX_VECTOR_NODES`] nodes.
//!
//! A tracer that keeps records in memory may keep only some ([`Keep`]): a page draws a bounded
//! part of a run, and a run of millions of steps must not hold every record until the end to
//! have it cut then. [`Keep::First`] keeps the first records; once such a tracer neither writes
//! nor keeps any more, [`Tracer::record_with`] does not even build a record. [`Keep::Rest`] is
//! the second look at a deterministic run whose length the first look counted: it keeps the
//! faults and violations of the middle and the records of the end, and stamps every record on
//! the way (a record's stamps depend on all before it), building only those it keeps. The
//! simulator puts the two together for a page that shows how a long run began, what went wrong
//! and how it ended. Every record is counted ([`Tracer::recorded`]) and every hole between kept
//! records reported ([`Gap`]), so what is drawn can say what it left out.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use ringleader_core::NodeId;
use ringleader_core::stamp::{LogicalClocks, Stamp};
use ringleader_core::trace::{Gap, RecordKind, TraceRecord};

/// Above this many nodes, records carry no vector timestamp (it would be O(N) per line).
pub const MAX_VECTOR_NODES: usize = 64;

/// Which records a tracer keeps in memory, by their sequence number (0 for the run's first record).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keep {
    /// The first `limit` records (`usize::MAX`: all of them).
    First(usize),
    /// The records from `tail_from` on, and before that the first `marks` faults and violations
    /// numbered `after` or more (a run's first `after` records were kept by an earlier look).
    Rest {
        /// Sequence number of the first record this look may keep.
        after: u64,
        /// At most this many faults and violations between `after` and `tail_from`.
        marks: usize,
        /// Sequence number of the first record of the end, kept whatever its kind.
        tail_from: u64,
    },
}

/// Stamps records and writes them to a file, keeps them in memory, or both.
#[derive(Debug)]
pub struct Tracer {
    sink: Option<BufWriter<File>>,
    kept: Option<Kept>,
    recorded: u64,
    faults_left_out: u64,
    clocks: Vec<LogicalClocks>,
    in_flight: HashMap<u64, Stamp>,
    error: Option<std::io::Error>,
}

impl Tracer {
    /// A tracer for `n` nodes writing to `path` (if any) and keeping records (if `keep`; all
    /// of them unless [`Tracer::keep`] says otherwise).
    pub fn new(n: usize, path: Option<&Path>, keep: bool) -> std::io::Result<Tracer> {
        let sink = match path {
            Some(p) => Some(BufWriter::new(File::create(p)?)),
            None => None,
        };
        Ok(Tracer {
            sink,
            kept: keep.then(|| Kept::new(Keep::First(usize::MAX))),
            recorded: 0,
            faults_left_out: 0,
            clocks: (0..n).map(|me| LogicalClocks::new(me, n, n <= MAX_VECTOR_NODES)).collect(),
            in_flight: HashMap::new(),
            error: None,
        })
    }

    /// Keeps in memory only the records `keep` says (the file, if any, still gets them all);
    /// the rest are counted, not kept, and [`KeptTrace::gaps`] says where they were.
    pub fn keep(mut self, keep: Keep) -> Tracer {
        if let Some(k) = self.kept.as_mut() {
            *k = Kept::new(keep);
        }
        self
    }

    /// How many records were handed to the tracer, kept or not.
    pub fn recorded(&self) -> u64 {
        self.recorded
    }

    /// How many faults and violations were handed to the tracer and not kept in memory (what a
    /// second look, [`Keep::Rest`], would find in the middle).
    pub fn faults_left_out(&self) -> u64 {
        self.faults_left_out
    }

    /// True while a record could still be written to the file or kept in memory.
    pub fn wants_records(&self) -> bool {
        self.sink.is_some() || self.kept.as_ref().is_some_and(Kept::open)
    }

    /// Counts one record of `kind` at `node` (carrying message `msg_id`, if any) and, if it is
    /// written or kept, builds it with `make`, stamps and records it. A record neither written
    /// nor kept still moves the clocks when later kept records need them ([`Keep::Rest`]).
    pub fn record_with(
        &mut self,
        kind: RecordKind,
        node: Option<NodeId>,
        msg_id: Option<u64>,
        make: impl FnOnce() -> TraceRecord,
    ) {
        let seq = self.recorded;
        let keep = self.kept.as_ref().is_some_and(|k| k.wants(seq, kind));
        if self.sink.is_some() || keep {
            self.record(make());
        } else {
            self.recorded += 1;
            self.faults_left_out += u64::from(kind.is_fault_or_violation());
            if self.kept.as_ref().is_some_and(Kept::open) {
                self.advance(kind, node, msg_id);
            }
        }
    }

    /// Moves `node`'s clocks for one record of `kind` (the rules of [`ringleader_core::stamp`]).
    fn advance(&mut self, kind: RecordKind, node: Option<NodeId>, msg_id: Option<u64>) {
        let Some(node) = node.map(|n| n as usize) else { return };
        match kind {
            RecordKind::Send => match msg_id {
                Some(id) => {
                    let stamp = self.clocks[node].send();
                    self.in_flight.insert(id, stamp);
                }
                None => self.clocks[node].tick(),
            },
            RecordKind::Deliver => {
                let sent = msg_id.and_then(|id| self.in_flight.remove(&id));
                self.clocks[node].receive(sent.as_ref());
            }
            RecordKind::Drop => {
                if let Some(id) = msg_id {
                    self.in_flight.remove(&id);
                }
            }
            RecordKind::Timer | RecordKind::Request | RecordKind::Emit => self.clocks[node].tick(),
            _ => {}
        }
    }

    /// Stamps `rec` (by its kind and node) and records it: writes it to the file, if any, and
    /// keeps it, if the tracer keeps records and [`Keep`] takes this one.
    pub fn record(&mut self, mut rec: TraceRecord) {
        let seq = self.recorded;
        self.recorded += 1;
        self.advance(rec.kind, rec.node, rec.msg_id);
        if let Some(node) = rec.node {
            self.clocks[node as usize].write_to(&mut rec);
        }
        if let Some(sink) = self.sink.as_mut()
            && self.error.is_none()
        {
            let r = serde_json::to_writer(&mut *sink, &rec)
                .map_err(std::io::Error::from)
                .and_then(|_| sink.write_all(b"\n"));
            if let Err(e) = r {
                self.error = Some(e);
            }
        }
        match self.kept.as_mut() {
            Some(k) if k.wants(seq, rec.kind) => k.push(seq, rec),
            Some(_) => self.faults_left_out += u64::from(rec.kind.is_fault_or_violation()),
            None => {}
        }
    }

    /// Flushes the file and returns the kept records; the first write error, if any.
    pub fn finish(mut self) -> std::io::Result<KeptTrace> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        if let Some(mut s) = self.sink.take() {
            s.flush()?;
        }
        Ok(self.kept.map(Kept::into_trace).unwrap_or_default())
    }
}

/// The records a tracer kept, in the run's order, and where it left some out.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KeptTrace {
    /// The kept records.
    pub records: Vec<TraceRecord>,
    /// The holes between kept records, in order. Records left out after the last kept one
    /// ([`Keep::First`]) make no gap: the run's count says how many followed.
    pub gaps: Vec<Gap>,
}

impl KeptTrace {
    /// This trace followed by `rest`, which a [`Keep::Rest`] look kept after this one's records.
    pub fn followed_by(mut self, rest: KeptTrace) -> KeptTrace {
        let at = self.records.len();
        self.gaps.extend(rest.gaps.into_iter().map(|g| Gap { at: g.at + at, ..g }));
        self.records.extend(rest.records);
        self
    }
}

/// The kept records with their sequence numbers.
#[derive(Debug)]
struct Kept {
    keep: Keep,
    records: Vec<TraceRecord>,
    seqs: Vec<u64>,
    marks: usize,
}

impl Kept {
    fn new(keep: Keep) -> Kept {
        Kept { keep, records: Vec::new(), seqs: Vec::new(), marks: 0 }
    }

    /// True while a later record could still be kept.
    fn open(&self) -> bool {
        match self.keep {
            Keep::First(limit) => self.records.len() < limit,
            Keep::Rest { .. } => true,
        }
    }

    /// True when record `seq` of `kind` is kept.
    fn wants(&self, seq: u64, kind: RecordKind) -> bool {
        match self.keep {
            Keep::First(limit) => self.records.len() < limit,
            Keep::Rest { after, marks, tail_from } => {
                seq >= tail_from || (seq >= after && kind.is_fault_or_violation() && self.marks < marks)
            }
        }
    }

    fn push(&mut self, seq: u64, rec: TraceRecord) {
        if let Keep::Rest { tail_from, .. } = self.keep
            && seq < tail_from
        {
            self.marks += 1;
        }
        self.records.push(rec);
        self.seqs.push(seq);
    }

    fn into_trace(self) -> KeptTrace {
        let mut next = match self.keep {
            Keep::First(_) => 0,
            Keep::Rest { after, .. } => after,
        };
        let mut gaps = Vec::new();
        for (at, &seq) in self.seqs.iter().enumerate() {
            if seq > next {
                gaps.push(Gap { at, left_out: seq - next });
            }
            next = seq + 1;
        }
        KeptTrace { records: self.records, gaps }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timer(step: u64) -> TraceRecord {
        let mut r = TraceRecord::new(step, step, RecordKind::Timer);
        r.node = Some(0);
        r
    }

    #[test]
    fn a_capped_tracer_keeps_the_first_records_counts_them_all_and_stops_building_them() {
        let mut t = Tracer::new(1, None, true).unwrap().keep(Keep::First(3));
        let mut built = 0;
        for step in 0..10 {
            t.record_with(RecordKind::Timer, Some(0), None, || {
                built += 1;
                timer(step)
            });
        }
        assert_eq!(t.recorded(), 10);
        assert_eq!(built, 3, "no record is built once none would be kept");
        assert!(!t.wants_records());
        let kept = t.finish().unwrap();
        assert!(kept.gaps.is_empty(), "only the first records: the count says what followed");
        let kept = kept.records;
        assert_eq!(kept.iter().map(|r| r.step).collect::<Vec<_>>(), [0, 1, 2]);
        assert_eq!(kept.iter().map(|r| r.lamport).collect::<Vec<_>>(), [Some(1), Some(2), Some(3)]);
    }

    #[test]
    fn a_capped_tracer_still_writes_every_record_to_its_file() {
        let path = std::env::temp_dir().join(format!("ringleader-trace-cap-{}.jsonl", std::process::id()));
        let mut t = Tracer::new(1, Some(&path), true).unwrap().keep(Keep::First(2));
        for step in 0..5 {
            t.record_with(RecordKind::Timer, Some(0), None, || timer(step));
        }
        assert!(t.wants_records(), "the file still wants every record");
        assert_eq!(t.recorded(), 5);
        assert_eq!(t.finish().unwrap().records.len(), 2);
        let text = std::fs::read_to_string(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        let lamports: Vec<u64> =
            text.lines().map(|l| serde_json::from_str::<TraceRecord>(l).unwrap().lamport.unwrap()).collect();
        assert_eq!(lamports, [1, 2, 3, 4, 5]);
    }

    #[test]
    fn an_uncapped_tracer_keeps_everything() {
        let mut t = Tracer::new(1, None, true).unwrap();
        for step in 0..5 {
            t.record(timer(step));
        }
        assert_eq!(t.recorded(), 5);
        let kept = t.finish().unwrap();
        assert_eq!((kept.records.len(), kept.gaps.len()), (5, 0));
    }

    #[test]
    fn a_second_look_keeps_the_faults_and_violations_of_the_middle_and_the_end() {
        let run = |keep: Keep| {
            let mut t = Tracer::new(1, None, true).unwrap().keep(keep);
            let mut built = 0;
            for step in 0..100 {
                let mut r = timer(step);
                if [10, 20, 30, 99].contains(&step) {
                    r.kind = if step == 20 { RecordKind::Violation } else { RecordKind::Crash };
                }
                t.record_with(r.kind, r.node, None, || {
                    built += 1;
                    r
                });
            }
            assert_eq!(t.recorded(), 100);
            let faults = t.faults_left_out();
            ((t.finish().unwrap(), faults), built)
        };
        let (first, built_first) = run(Keep::First(4));
        assert_eq!(first.1, 4, "crashes at 10, 30 and 99 and the violation at 20 were left out");
        let (rest, built_rest) = run(Keep::Rest { after: 4, marks: 2, tail_from: 98 });
        assert_eq!((built_first, built_rest), (4, 4), "only the kept records are built");
        let kept = first.0.followed_by(rest.0);
        let steps: Vec<u64> = kept.records.iter().map(|r| r.step).collect();
        assert_eq!(steps, [0, 1, 2, 3, 10, 20, 98, 99], "the third fault of the middle found the marks full");
        assert_eq!(
            kept.gaps,
            [Gap { at: 4, left_out: 6 }, Gap { at: 5, left_out: 9 }, Gap { at: 6, left_out: 77 }]
        );
        let lamports: Vec<Option<u64>> = kept.records.iter().map(|r| r.lamport).collect();
        // Timers tick the clock, faults and violations do not: the crash at step 10 reads the ten
        // timers before it, step 98 the 96 timers of steps 0 to 98 that were not faults.
        let expected = [1, 2, 3, 4, 10, 19, 96, 96].map(Some);
        assert_eq!(lamports, expected, "every record was stamped on the second look, built or not");
        let left_out: u64 = kept.gaps.iter().map(|g| g.left_out).sum();
        assert_eq!(left_out + kept.records.len() as u64, 100);
    }
}
