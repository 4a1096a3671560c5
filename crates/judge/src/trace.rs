//! Writing the trace: JSON lines, with Lamport and vector timestamps computed by the driver.
//!
//! The driver, not the algorithm, stamps every record: each local event (a timer, a request,
//! an emitted event) ticks the node's Lamport clock and its own vector entry; a send ticks and
//! attaches the stamp to the message; a delivery takes the maximum with the attached stamp and
//! ticks. Vector timestamps are kept only for runs of at most [`MAX_VECTOR_NODES`] nodes.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use ringleader_core::trace::{RecordKind, TraceRecord};

/// Above this many nodes, records carry no vector timestamp (it would be O(N) per line).
pub const MAX_VECTOR_NODES: usize = 64;

/// Stamps records and writes them to a file, keeps them in memory, or both.
#[derive(Debug)]
pub struct Tracer {
    sink: Option<BufWriter<File>>,
    kept: Option<Vec<TraceRecord>>,
    lamport: Vec<u64>,
    vector: Option<Vec<Vec<u64>>>,
    in_flight: HashMap<u64, (u64, Option<Vec<u64>>)>,
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
            lamport: vec![0; n],
            vector: (n <= MAX_VECTOR_NODES).then(|| vec![vec![0; n]; n]),
            in_flight: HashMap::new(),
            error: None,
        })
    }

    fn tick(&mut self, node: usize) {
        self.lamport[node] += 1;
        if let Some(v) = self.vector.as_mut() {
            v[node][node] += 1;
        }
    }

    /// Stamps `rec` (by its kind and node) and records it.
    pub fn record(&mut self, mut rec: TraceRecord) {
        if let Some(node) = rec.node.map(|n| n as usize) {
            match rec.kind {
                RecordKind::Send => {
                    self.tick(node);
                    if let Some(id) = rec.msg_id {
                        let v = self.vector.as_ref().map(|v| v[node].clone());
                        self.in_flight.insert(id, (self.lamport[node], v));
                    }
                }
                RecordKind::Deliver => {
                    if let Some((l, v)) = rec.msg_id.and_then(|id| self.in_flight.remove(&id)) {
                        self.lamport[node] = self.lamport[node].max(l);
                        if let (Some(mine), Some(theirs)) = (self.vector.as_mut(), v) {
                            for (a, b) in mine[node].iter_mut().zip(theirs) {
                                *a = (*a).max(b);
                            }
                        }
                    }
                    self.tick(node);
                }
                RecordKind::Drop => {
                    if let Some(id) = rec.msg_id {
                        self.in_flight.remove(&id);
                    }
                }
                RecordKind::Timer | RecordKind::Request | RecordKind::Emit => self.tick(node),
                _ => {}
            }
            rec.lamport = Some(self.lamport[node]);
            rec.vector = self.vector.as_ref().map(|v| v[node].clone());
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
        if let Some(k) = self.kept.as_mut() {
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
