//! Writing the trace: JSON lines, with Lamport and vector timestamps computed by the driver.
//!
//! The driver, not the algorithm, stamps every record, by the rules of
//! [`ringleader_core::stamp`]: each local event (a timer, a request, an emitted event) ticks the
//! node's clocks; a send ticks and attaches the stamp to the message; a delivery takes the
//! maximum with the attached stamp and ticks. Vector timestamps are kept only for runs of at
//! most [`MAX_VECTOR_NODES`] nodes.
//!
//! A tracer that keeps records in memory may keep only the first ones
//! ([`Tracer::keep_at_most`]): a page or a diagram draws a bounded prefix of a run, and a run of
//! millions of steps must not hold every record until the end to have it cut then. Every record
//! is still counted ([`Tracer::recorded`]), so what is drawn can say what it left out; once a
//! tracer neither writes nor keeps any more, [`Tracer::record_with`] does not even build the
//! record.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use ringleader_core::stamp::{LogicalClocks, Stamp};
use ringleader_core::trace::{RecordKind, TraceRecord};

/// Above this many nodes, records carry no vector timestamp (it would be O(N) per line).
pub const MAX_VECTOR_NODES: usize = 64;

/// Stamps records and writes them to a file, keeps them in memory, or both.
#[derive(Debug)]
pub struct Tracer {
    sink: Option<BufWriter<File>>,
    kept: Option<Vec<TraceRecord>>,
    keep_limit: usize,
    recorded: u64,
    clocks: Vec<LogicalClocks>,
    in_flight: HashMap<u64, Stamp>,
    error: Option<std::io::Error>,
}

impl Tracer {
    /// A tracer for `n` nodes writing to `path` (if any) and keeping records (if `keep`).
    pub fn new(n: usize, path: Option<&Path>, keep: bool) -> std::io::Result<Tracer> {
        let sink = match path {
            Some(p) => Some(BufWriter::new(File::create(p)?)),
            None => None,
        };
        Ok(Tracer {
            sink,
            kept: keep.then(Vec::new),
            keep_limit: usize::MAX,
            recorded: 0,
            clocks: (0..n).map(|me| LogicalClocks::new(me, n, n <= MAX_VECTOR_NODES)).collect(),
            in_flight: HashMap::new(),
            error: None,
        })
    }

    /// Keeps only the first `limit` records in memory (the file, if any, still gets them all);
    /// the rest are counted, not kept.
    pub fn keep_at_most(mut self, limit: usize) -> Tracer {
        self.keep_limit = limit;
        self
    }

    /// How many records were handed to the tracer, kept or not.
    pub fn recorded(&self) -> u64 {
        self.recorded
    }

    /// True while a record would still be written to the file or kept in memory.
    pub fn wants_records(&self) -> bool {
        self.sink.is_some() || self.kept.as_ref().is_some_and(|k| k.len() < self.keep_limit)
    }

    /// Counts one record and, if it would be written or kept, builds it with `make`, stamps and
    /// records it.
    pub fn record_with(&mut self, make: impl FnOnce() -> TraceRecord) {
        if self.wants_records() {
            self.record(make());
        } else {
            self.recorded += 1;
        }
    }

    /// Stamps `rec` (by its kind and node) and records it: writes it to the file, if any, and
    /// keeps it, if records are kept and fewer than the limit are.
    pub fn record(&mut self, mut rec: TraceRecord) {
        self.recorded += 1;
        if let Some(node) = rec.node.map(|n| n as usize) {
            match rec.kind {
                RecordKind::Send => match rec.msg_id {
                    Some(id) => {
                        let stamp = self.clocks[node].send();
                        self.in_flight.insert(id, stamp);
                    }
                    None => self.clocks[node].tick(),
                },
                RecordKind::Deliver => {
                    let sent = rec.msg_id.and_then(|id| self.in_flight.remove(&id));
                    self.clocks[node].receive(sent.as_ref());
                }
                RecordKind::Drop => {
                    if let Some(id) = rec.msg_id {
                        self.in_flight.remove(&id);
                    }
                }
                RecordKind::Timer | RecordKind::Request | RecordKind::Emit => self.clocks[node].tick(),
                _ => {}
            }
            self.clocks[node].write_to(&mut rec);
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
        if let Some(k) = self.kept.as_mut()
            && k.len() < self.keep_limit
        {
            k.push(rec);
        }
    }

    /// Flushes the file and returns the kept records; the first write error, if any.
    pub fn finish(mut self) -> std::io::Result<Vec<TraceRecord>> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        if let Some(mut s) = self.sink.take() {
            s.flush()?;
        }
        Ok(self.kept.unwrap_or_default())
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
        let mut t = Tracer::new(1, None, true).unwrap().keep_at_most(3);
        let mut built = 0;
        for step in 0..10 {
            t.record_with(|| {
                built += 1;
                timer(step)
            });
        }
        assert_eq!(t.recorded(), 10);
        assert_eq!(built, 3, "no record is built once none would be kept");
        assert!(!t.wants_records());
        let kept = t.finish().unwrap();
        assert_eq!(kept.iter().map(|r| r.step).collect::<Vec<_>>(), [0, 1, 2]);
        assert_eq!(kept.iter().map(|r| r.lamport).collect::<Vec<_>>(), [Some(1), Some(2), Some(3)]);
    }

    #[test]
    fn a_capped_tracer_still_writes_every_record_to_its_file() {
        let path = std::env::temp_dir().join(format!("ringleader-trace-cap-{}.jsonl", std::process::id()));
        let mut t = Tracer::new(1, Some(&path), true).unwrap().keep_at_most(2);
        for step in 0..5 {
            t.record_with(|| timer(step));
        }
        assert!(t.wants_records(), "the file still wants every record");
        assert_eq!(t.recorded(), 5);
        assert_eq!(t.finish().unwrap().len(), 2);
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
        assert_eq!(t.finish().unwrap().len(), 5);
    }
}
