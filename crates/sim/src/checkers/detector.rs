//! Failure-detector properties and measurements.
//!
//! A monitor reports `Suspect{node}` and `Trust{node}`; the checker knows who really crashed.
//! - **completeness** (end of run): every crashed process (crashed and not recovered) is
//!   suspected by every live process — strong completeness;
//! - **eventual_accuracy** (end of run): no live process is suspected by a live process — the
//!   mistakes an asynchronous detector makes must at least be corrected (◇P). Paused processes
//!   are alive: suspecting them is a mistake.
//!
//! Measurements (outcome fields):
//! - `false_suspicions`: `Suspect{p}` while p is alive (crashed = no, paused or slow = yes);
//! - `detections`: first suspicion of a crashed process by a live monitor, per crash;
//! - `missed`: (monitor, crash) pairs where the crashed process recovered, or the run ended,
//!   before the monitor suspected it;
//! - `waiting_ms`: total time crashed processes went unsuspected, summed over live monitors
//!   (suspicion, recovery or end of run minus crash time) — the "cost of waiting" of seed 003;
//! - `mistake_ms`: total time live processes spent wrongly suspected, summed over monitors;
//! - latency `detection_time`: crash → first suspicion, per (monitor, crash).

use ringleader_core::{Event, NodeId, Time};

use super::{Checker, FamilyReport, Latencies, Stamp, Violations, World};

/// Who suspects whom, and since when.
#[derive(Clone, Debug)]
pub struct DetectorChecker {
    /// suspected[monitor][target]: suspected since.
    suspected: Vec<Vec<Option<Time>>>,
    /// Crash time of each crashed process.
    crashed_at: Vec<Option<Time>>,
    /// detected[monitor][target]: this monitor suspected the target since its last crash.
    detected: Vec<Vec<bool>>,
    false_suspicions: u64,
    detections: u64,
    missed: u64,
    waiting: Time,
    mistakes: Time,
    detection: Latencies,
}

impl DetectorChecker {
    /// A checker for `n` processes.
    pub fn new(n: usize) -> Self {
        DetectorChecker {
            suspected: vec![vec![None; n]; n],
            crashed_at: vec![None; n],
            detected: vec![vec![false; n]; n],
            false_suspicions: 0,
            detections: 0,
            missed: 0,
            waiting: 0,
            mistakes: 0,
            detection: Latencies::default(),
        }
    }

    /// Ends the wrong-suspicion interval of `monitor` on `target` at `now`, if any.
    fn end_mistake(&mut self, monitor: usize, target: usize, now: Time) {
        if self.crashed_at[target].is_none()
            && let Some(since) = self.suspected[monitor][target]
        {
            self.mistakes += now.saturating_sub(since);
        }
    }

    /// Closes the undetected window of `target`'s crash for every monitor that missed it.
    fn close_crash(&mut self, w: &World, target: usize, now: Time) {
        let Some(at) = self.crashed_at[target] else { return };
        for m in 0..self.suspected.len() {
            if m != target && w.alive(m as NodeId) && !self.detected[m][target] {
                self.missed += 1;
                self.waiting += now.saturating_sub(at);
            }
        }
    }
}

impl Checker for DetectorChecker {
    fn properties(&self) -> Vec<&'static str> {
        vec!["completeness", "eventual_accuracy"]
    }

    fn on_event(&mut self, w: &World, node: NodeId, event: &Event, at: Stamp, _v: &mut Violations) {
        let m = node as usize;
        match *event {
            Event::Suspect { node: target } => {
                let t = target as usize;
                if self.suspected[m][t].is_some() {
                    return;
                }
                self.suspected[m][t] = Some(at.time);
                match self.crashed_at[t] {
                    Some(crash) if !self.detected[m][t] => {
                        self.detected[m][t] = true;
                        self.detections += 1;
                        self.waiting += at.time - crash;
                        self.detection.record(at.time - crash);
                    }
                    Some(_) => {}
                    None => self.false_suspicions += 1,
                }
                let _ = w;
            }
            Event::Trust { node: target } => {
                let t = target as usize;
                self.end_mistake(m, t, at.time);
                self.suspected[m][t] = None;
            }
            _ => {}
        }
    }

    fn on_crash(&mut self, _w: &World, node: NodeId, at: Stamp, _v: &mut Violations) {
        let t = node as usize;
        for m in 0..self.suspected.len() {
            // The crashed monitor's own opinions die with it.
            self.end_mistake(t, m, at.time);
            self.suspected[t][m] = None;
            // Suspicions of the crashed process stop being mistakes now.
            self.end_mistake(m, t, at.time);
            if self.suspected[m][t].is_some() {
                self.suspected[m][t] = Some(at.time);
            }
            self.detected[m][t] = self.suspected[m][t].is_some();
        }
        self.crashed_at[t] = Some(at.time);
    }

    fn on_recover(&mut self, w: &World, node: NodeId, at: Stamp, _v: &mut Violations) {
        let t = node as usize;
        self.close_crash(w, t, at.time);
        self.crashed_at[t] = None;
        for m in 0..self.suspected.len() {
            if self.suspected[m][t].is_some() {
                self.suspected[m][t] = Some(at.time);
            }
        }
    }

    fn finish(&mut self, w: &World, at: Stamp, v: &mut Violations) {
        let n = self.suspected.len();
        for t in 0..n {
            self.close_crash(w, t, at.time);
            for m in 0..n {
                if w.alive(m as NodeId) && m != t {
                    self.end_mistake(m, t, at.time);
                }
            }
        }
        for t in 0..n {
            for m in 0..n {
                if m == t || !w.alive(m as NodeId) {
                    continue;
                }
                if !w.alive(t as NodeId) && self.suspected[m][t].is_none() {
                    v.record("completeness", at, || {
                        format!("id {} crashed and id {} never suspected it", w.uids[t], w.uids[m])
                    });
                }
                if w.alive(t as NodeId) && self.suspected[m][t].is_some() {
                    v.record("eventual_accuracy", at, || {
                        format!("id {} still suspects id {}, which is alive", w.uids[m], w.uids[t])
                    });
                }
            }
        }
    }

    fn report(&self, _w: &World) -> FamilyReport {
        let mut r = FamilyReport { operations: self.detections, ..FamilyReport::default() };
        r.outcome.insert("false_suspicions".into(), self.false_suspicions.into());
        r.outcome.insert("detections".into(), self.detections.into());
        r.outcome.insert("missed".into(), self.missed.into());
        r.outcome.insert("waiting_ms".into(), (self.waiting as f64 / 1e6).into());
        r.outcome.insert("mistake_ms".into(), (self.mistakes as f64 / 1e6).into());
        if let Some(p) = self.detection.summary() {
            r.latencies.insert("detection_time".into(), p);
        }
        r
    }
}
