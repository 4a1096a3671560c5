//! Failure-detector properties and measurements.
//!
//! A monitor reports `Suspect{node}` and `Trust{node}`; the checker knows who really crashed.
//! - **completeness** (end of run): every crashed process (crashed and not recovered) is
//!   suspected by every live process — strong completeness;
//! - **eventual_accuracy** (end of run): no live process is suspected by a live process — the
//!   mistakes an asynchronous detector makes must at least be corrected (◇P). Paused processes
//!   are alive: suspecting them is a mistake.
//!
//! Both are eventual. A detector's heartbeats never stop, so its run ends at `--duration`: a
//! crash not suspected yet, or a live process still suspected, at that cut-off leaves the
//! property *undecided* (with what was pending and since when), not violated.
//!
//! Measurements (outcome fields):
//! - `false_suspicions`: `Suspect{p}` while p is alive (crashed = no, paused or slow = yes);
//! - `detections`: first suspicion of a crashed process by a live monitor, per crash (a
//!   monitor that already suspected it when it crashed counts, with no latency sample);
//! - `missed`: (monitor, crash) pairs where the crashed process recovered, or the run ended,
//!   before the monitor suspected it;
//! - `waiting_ms`: total time crashed processes went unsuspected, summed over live monitors
//!   (suspicion, recovery or end of run, minus the crash — or the monitor's own recovery if it
//!   was down too) — the "cost of waiting" (docs/DETECTORS.md);
//! - `mistake_ms`: total time live processes spent wrongly suspected, summed over monitors;
//! - latency `detection_time`: crash (or the monitor's recovery) → first suspicion, per
//!   (monitor, crash).

use std::collections::BTreeMap;

use ringleader_core::{Event, NodeId, Time};

use super::{Checker, FamilyReport, Latencies, Moment, Property, Violations, World};
use crate::outcome::{DetectorOutcome, Outcome};

/// Who suspects whom, and since when.
#[derive(Clone, Debug)]
pub struct DetectorChecker {
    /// suspected[monitor][target]: suspected since.
    suspected: Vec<Vec<Option<Time>>>,
    /// Whether each process is crashed now.
    crashed: Vec<bool>,
    /// When each process last crashed.
    crashed_at: Vec<Time>,
    /// undetected[monitor][target]: the target is crashed and this live monitor has not
    /// suspected it yet, since this time (the crash, or the monitor's own recovery).
    undetected: Vec<Vec<Option<Time>>>,
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
            crashed: vec![false; n],
            crashed_at: vec![0; n],
            undetected: vec![vec![None; n]; n],
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
        if !self.crashed[target]
            && let Some(since) = self.suspected[monitor][target]
        {
            self.mistakes += now.saturating_sub(since);
        }
    }

    /// Ends an undetected window without a detection (`missed` counts it when the target came
    /// back or the run ended; a monitor that crashes simply stops watching).
    fn end_window(&mut self, monitor: usize, target: usize, now: Time, missed: bool) {
        if let Some(since) = self.undetected[monitor][target].take() {
            self.waiting += now.saturating_sub(since);
            self.missed += missed as u64;
        }
    }
}

impl Checker for DetectorChecker {
    fn properties(&self) -> Vec<Property> {
        vec![Property::Completeness, Property::EventualAccuracy]
    }

    fn on_event(&mut self, _w: &World, node: NodeId, event: &Event, at: Moment, _v: &mut Violations) {
        let m = node as usize;
        match *event {
            Event::Suspect { node: target } => {
                let t = target as usize;
                if self.suspected[m][t].is_some() {
                    return;
                }
                self.suspected[m][t] = Some(at.time);
                if let Some(since) = self.undetected[m][t].take() {
                    self.detections += 1;
                    self.waiting += at.time - since;
                    self.detection.record(at.time - since);
                } else if !self.crashed[t] {
                    self.false_suspicions += 1;
                }
            }
            Event::Trust { node: target } => {
                let t = target as usize;
                self.end_mistake(m, t, at.time);
                self.suspected[m][t] = None;
            }
            _ => {}
        }
    }

    fn on_crash(&mut self, w: &World, node: NodeId, at: Moment, _v: &mut Violations) {
        let t = node as usize;
        for m in 0..self.suspected.len() {
            if m == t {
                continue;
            }
            // The crashed monitor's own opinions and watches die with it.
            self.end_mistake(t, m, at.time);
            self.suspected[t][m] = None;
            self.end_window(t, m, at.time, false);
            // Suspicions of the crashed process stop being mistakes now.
            self.end_mistake(m, t, at.time);
            if self.suspected[m][t].is_some() {
                // Already (wrongly) suspected: detected the moment it crashed.
                self.suspected[m][t] = Some(at.time);
                self.detections += 1;
            } else if w.alive(m as NodeId) {
                self.undetected[m][t] = Some(at.time);
            }
        }
        self.crashed[t] = true;
        self.crashed_at[t] = at.time;
    }

    fn on_recover(&mut self, _w: &World, node: NodeId, at: Moment, _v: &mut Violations) {
        let t = node as usize;
        self.crashed[t] = false;
        for m in 0..self.suspected.len() {
            if m == t {
                continue;
            }
            self.end_window(m, t, at.time, true);
            if self.suspected[m][t].is_some() {
                self.suspected[m][t] = Some(at.time);
            }
            // The recovered monitor starts watching the processes that are down.
            if self.crashed[m] {
                self.undetected[t][m] = Some(at.time);
            }
        }
    }

    fn finish(&mut self, w: &World, at: Moment, v: &mut Violations) {
        let n = self.suspected.len();
        for m in 0..n {
            for t in 0..n {
                self.end_window(m, t, at.time, true);
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
                    let since = self.crashed_at[t];
                    v.pending(Property::Completeness, at, since, || {
                        format!(
                            "id {} crashed at {:.3} ms and id {} has not suspected it",
                            w.uids[t],
                            since as f64 / 1e6,
                            w.uids[m]
                        )
                    });
                }
                if w.alive(t as NodeId)
                    && let Some(since) = self.suspected[m][t]
                {
                    v.pending(Property::EventualAccuracy, at, since, || {
                        format!(
                            "id {} still suspects id {}, which is alive, since {:.3} ms",
                            w.uids[m],
                            w.uids[t],
                            since as f64 / 1e6
                        )
                    });
                }
            }
        }
    }

    fn report(&self, _w: &World) -> FamilyReport {
        let outcome = Outcome::Detector(DetectorOutcome {
            detections: self.detections,
            false_suspicions: self.false_suspicions,
            missed: self.missed,
            mistake_ms: self.mistakes as f64 / 1e6,
            waiting_ms: self.waiting as f64 / 1e6,
        });
        let mut r =
            FamilyReport { outcome, operations: self.detections, unfinished: 0, latencies: BTreeMap::new() };
        if let Some(p) = self.detection.summary() {
            r.latencies.insert("detection_time".into(), p);
        }
        r
    }
}
