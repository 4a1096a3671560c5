//! What a run ended with, typed per family: the outcome each family's checker measures
//! ([`crate::checkers::Checker::report`]) and the run report prints under `"outcome"`.

use ringleader_core::Uid;
use serde::{Deserialize, Serialize};

/// A family's result: what the property checker measured, typed per family. Serialised, it is
/// one flat JSON object (`"outcome": {"agreed": true, "leader": 5}`), its fields in
/// alphabetical order, an absent optional field left out.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Outcome {
    /// A leader election.
    Election(ElectionOutcome),
    /// A super-peer election (a set of leaders).
    SuperPeers(SuperPeerOutcome),
    /// Mutual exclusion.
    Mutex(MutexOutcome),
    /// Physical clocks (and the `make` story).
    PhysicalClock(PhysicalClockOutcome),
    /// Logical clocks.
    LogicalClock(LogicalClockOutcome),
    /// Deadlock prevention (wait-die, wound-wait).
    DeadlockPrevention(PreventionOutcome),
    /// Deadlock detection.
    DeadlockDetection(DetectionOutcome),
    /// A failure detector.
    Detector(DetectorOutcome),
}

/// What a leader election ended with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ElectionOutcome {
    /// Every live node believes in the same leader.
    pub agreed: bool,
    /// From the first election's start to the last leader announcement, in ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub election_ms: Option<f64>,
    /// The leader every live node agrees on, if they do.
    pub leader: Option<Uid>,
}

/// What a super-peer election ended with (distances in thousandths of the algorithm's unit).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuperPeerOutcome {
    /// When the set of super-peers last changed, in ms.
    pub converged_ms: f64,
    /// The largest distance from a client to its super-peer.
    pub distance_max: u64,
    /// The mean distance from a client to its super-peer.
    pub distance_mean: f64,
    /// Super-peers among the live nodes.
    pub fraction: f64,
    /// The most clients one super-peer serves.
    pub load_max: u64,
    /// Clients per super-peer.
    pub load_mean: f64,
    /// The smallest spacing between two super-peers, relative to the algorithm's target
    /// spacing (when there are two).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_spacing: Option<f64>,
    /// Gossip rounds.
    pub rounds: u64,
    /// Super-peers lost (crashed or demoted).
    pub super_peer_losses: u64,
    /// Super-peers at the end.
    pub super_peers: u64,
    /// The number of super-peers the algorithm aims at.
    pub target: u32,
}

/// What mutual exclusion ended with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MutexOutcome {
    /// A coordinator took over from a crashed one (when any did).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coordinator_takeovers: Option<u64>,
    /// Critical-section entries.
    pub entries: u64,
    /// The most processes in the critical section at once.
    pub max_concurrent_holders: u64,
    /// The most entries that overtook a waiting request.
    pub max_overtaken: u64,
    /// Suspicions of a crashed process (when any).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspicions: Option<u64>,
    /// Tokens regenerated (when any were).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_regenerated: Option<u64>,
}

/// What physical clock synchronisation ended with (skews in ms).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PhysicalClockOutcome {
    /// Clock adjustments made.
    pub adjustments: u64,
    /// Adjustments that set a clock back.
    pub backward_steps: u64,
    /// The largest skew in the second half of the run.
    pub max_skew_after: f64,
    /// The largest skew before the first adjustment.
    pub max_skew_before: f64,
    /// `make`: rebuilds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rebuilds: Option<u64>,
    /// The largest skew per slice of the run: (end of the slice in s, skew in ms), when any
    /// adjustment was made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skew_timeline: Option<Vec<(f64, f64)>>,
    /// `make`: rebuilds skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skips: Option<u64>,
}

/// What a logical clock ended with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogicalClockOutcome {
    /// Ordered pairs of stamped events checked against happened-before.
    pub pairs_checked: u64,
    /// Stamped events.
    pub stamped_events: u64,
    /// Receives whose send was not seen (when any).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unmatched_receives: Option<u64>,
}

/// What deadlock prevention ended with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PreventionOutcome {
    /// Transactions aborted.
    pub aborts: u64,
    /// Deadlocks the scheme let happen.
    pub deadlocks_real: u64,
    /// Always 0: prevention reports nothing.
    pub deadlocks_reported: u64,
    /// Requests made.
    pub requests: u64,
    /// Transactions restarted.
    pub restarts: u64,
}

/// What deadlock detection ended with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DetectionOutcome {
    /// Deadlocks that formed.
    pub deadlocks_real: u64,
    /// Deadlocks reported (phantoms included).
    pub deadlocks_reported: u64,
    /// Waits given up after a timeout (`give_up`): withdrawn, not victims of a detection.
    pub gave_up: u64,
    /// Victims aborted although their cycle was already gone.
    pub needless_aborts: u64,
    /// Reports of a cycle that was not there.
    pub phantom_reports: u64,
    /// Reports.
    pub reports: u64,
    /// Requests made.
    pub requests: u64,
    /// Victims aborted.
    pub victims: u64,
}

/// What a failure detector ended with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DetectorOutcome {
    /// Crashes detected.
    pub detections: u64,
    /// Live processes suspected.
    pub false_suspicions: u64,
    /// Crashes never detected.
    pub missed: u64,
    /// Time live processes were suspected, summed over monitors, in ms.
    pub mistake_ms: f64,
    /// Time crashed processes went unsuspected, summed over monitors, in ms.
    pub waiting_ms: f64,
}

impl Outcome {
    /// Sets `key` to `value`, a measure the driver takes over the processes' final states
    /// (`Algorithm::final_outcome`); false when this outcome has no such field.
    pub fn set_final(&mut self, key: &str, value: f64) -> bool {
        match (self, key) {
            (Outcome::SuperPeers(o), "min_spacing") => {
                o.min_spacing = Some(value);
                true
            }
            _ => false,
        }
    }

    /// The fields by name, in alphabetical order (what the JSON object holds).
    pub fn fields(&self) -> serde_json::Map<String, serde_json::Value> {
        match serde_json::to_value(self) {
            Ok(serde_json::Value::Object(m)) => m,
            _ => serde_json::Map::new(),
        }
    }

    /// The numeric fields as numbers, by name.
    pub fn numbers(&self) -> Vec<(String, f64)> {
        self.fields().into_iter().filter_map(|(k, v)| Some((k, v.as_f64()?))).collect()
    }

    /// A leader election's outcome.
    pub fn election(&self) -> Option<&ElectionOutcome> {
        match self {
            Outcome::Election(o) => Some(o),
            _ => None,
        }
    }

    /// A super-peer election's outcome.
    pub fn super_peers(&self) -> Option<&SuperPeerOutcome> {
        match self {
            Outcome::SuperPeers(o) => Some(o),
            _ => None,
        }
    }

    /// Mutual exclusion's outcome.
    pub fn mutex(&self) -> Option<&MutexOutcome> {
        match self {
            Outcome::Mutex(o) => Some(o),
            _ => None,
        }
    }

    /// A physical clock's outcome.
    pub fn physical_clock(&self) -> Option<&PhysicalClockOutcome> {
        match self {
            Outcome::PhysicalClock(o) => Some(o),
            _ => None,
        }
    }

    /// A logical clock's outcome.
    pub fn logical_clock(&self) -> Option<&LogicalClockOutcome> {
        match self {
            Outcome::LogicalClock(o) => Some(o),
            _ => None,
        }
    }

    /// Deadlock prevention's outcome.
    pub fn prevention(&self) -> Option<&PreventionOutcome> {
        match self {
            Outcome::DeadlockPrevention(o) => Some(o),
            _ => None,
        }
    }

    /// Deadlock detection's outcome.
    pub fn detection(&self) -> Option<&DetectionOutcome> {
        match self {
            Outcome::DeadlockDetection(o) => Some(o),
            _ => None,
        }
    }

    /// A failure detector's outcome.
    pub fn detector(&self) -> Option<&DetectorOutcome> {
        match self {
            Outcome::Detector(o) => Some(o),
            _ => None,
        }
    }
}
