//! What a lab run is: the learner's program, the family's workload, the network and the faults.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use ringleader_core::{Time, Uid};
use ringleader_sim::notation::{At, Latency, Partition, Pause, format_duration};

use crate::LabError;
pub use crate::family::LabFamily;

/// One lab run.
#[derive(Clone, Debug)]
pub struct LabConfig {
    /// The family, which decides the client operations and the checker.
    pub family: LabFamily,
    /// The node program's command line, run by `sh -c` in the node's working directory
    /// (relative paths in it are resolved against the directory the bench runs in).
    pub command: String,
    /// Processes, named `n1`..`nN` (uids 1..N).
    pub nodes: u32,
    /// Seed of the network model.
    pub seed: u64,
    /// One-way latency of node-to-node messages.
    pub latency: Latency,
    /// Loss probability.
    pub loss: f64,
    /// Duplication probability.
    pub dup: f64,
    /// Partitions (uids).
    pub partitions: Vec<Partition>,
    /// Pauses: the node's inputs wait until it resumes.
    pub pauses: Vec<Pause>,
    /// Crashes: the process is killed.
    pub crashes: Vec<At>,
    /// Recoveries: the process starts again in the same directory.
    pub recoveries: Vec<At>,
    /// Mutex: critical-section entries per requester.
    pub entries: u32,
    /// Mutex: the requesters (uids); all nodes when empty.
    pub requesters: Vec<Uid>,
    /// Mutex: how long a client holds the section.
    pub hold: Time,
    /// Mutex: how long a client waits between a release and its next acquire; the requesters'
    /// first acquires are this far apart too.
    pub think: Time,
    /// Clock: client operations (`local` or `send_to`, drawn with the seed) per node.
    pub events: u32,
    /// Deadlock: probability that a request closes a wait-for cycle.
    pub cycles: f64,
    /// Deadlock: the most holders one request waits for.
    pub holders: u32,
    /// Deadlock: a client that has waited this long gives up (`abort`); never when `None`.
    pub give_up: Option<Time>,
    /// Election: the nodes sent `start_election` (uids).
    pub initiators: Vec<Uid>,
    /// Election: when the initiators are told to start.
    pub start: Time,
    /// The algorithm the learner says theirs is like: the textbook cost and the election rule.
    pub algo_like: Option<String>,
    /// One input at a time on a virtual clock, instead of real time.
    pub lockstep: bool,
    /// Lockstep, for nodes without the end-of-step marker: how long a node must stay silent
    /// to be done with its input.
    pub quiet: Duration,
    /// The run's time limit (virtual in lockstep, wall-clock otherwise): a run still busy then
    /// is cut off, and eventual properties are undecided.
    pub duration: Time,
    /// The most messages the nodes may send each other in a run: a run that reaches it is cut
    /// off (a node that floods the network ends as a run that was too long, not as a bench
    /// that never finishes).
    pub max_messages: u64,
    /// Where to write the trace (JSON lines).
    pub trace: Option<PathBuf>,
    /// Keep the trace in memory (for a page).
    pub keep_records: bool,
    /// The nodes' working directories go under it (kept); a fresh temporary directory, removed
    /// after the run, otherwise.
    pub dir: Option<PathBuf>,
}

impl LabConfig {
    /// A run of `command` for `family` on `nodes` processes with every other setting at its
    /// default: seed 1, constant 1 ms latency, no faults, 2 entries (mutex) or transactions
    /// (deadlock) per node held 1 ms with 2 ms between, deadlock requests closing a cycle with
    /// probability 0.5 and naming one holder, node 1 the only initiator, real time, 10 s.
    pub fn new(family: LabFamily, command: &str, nodes: u32) -> LabConfig {
        LabConfig {
            family,
            command: command.to_string(),
            nodes,
            seed: 1,
            latency: Latency::Constant(1_000_000),
            loss: 0.0,
            dup: 0.0,
            partitions: Vec::new(),
            pauses: Vec::new(),
            crashes: Vec::new(),
            recoveries: Vec::new(),
            entries: 2,
            requesters: Vec::new(),
            hold: 1_000_000,
            think: 2_000_000,
            events: 6,
            cycles: 0.5,
            holders: 1,
            give_up: None,
            initiators: vec![1],
            start: 0,
            algo_like: None,
            lockstep: false,
            quiet: Duration::from_millis(20),
            duration: 10_000_000_000,
            max_messages: 100_000,
            trace: None,
            keep_records: false,
            dir: None,
        }
    }

    /// Refuses what cannot run, with one line naming the setting and what is allowed.
    pub fn validate(&self) -> Result<(), LabError> {
        let bad = |s: String| Err(LabError::Config(s));
        if !(1..=64).contains(&self.nodes) {
            return bad(format!("--nodes {}: the lab runs 1 to 64 processes", self.nodes));
        }
        if self.command.trim().is_empty() {
            return bad("--bin is empty: give the node program's command line".into());
        }
        for (name, p) in [("--loss", self.loss), ("--dup", self.dup)] {
            if !(0.0..=1.0).contains(&p) {
                return bad(format!("{name} {p}: a probability is between 0 and 1"));
            }
        }
        let n = Uid::from(self.nodes);
        let check = |what: &str, uid: Uid| {
            if uid == 0 || uid > n {
                Err(LabError::Config(format!("{what}: there is no node {uid} (ids are 1..{n})")))
            } else {
                Ok(())
            }
        };
        for a in self.crashes.iter().chain(&self.recoveries) {
            check(&format!("crash/recover {a}"), a.uid)?;
        }
        for p in &self.pauses {
            check(&format!("--pause {p}"), p.uid)?;
        }
        for p in &self.partitions {
            for &u in p.left.iter().chain(&p.right) {
                check(&format!("--partition {p}"), u)?;
            }
        }
        for &u in &self.requesters {
            check("--requesters", u)?;
        }
        for &u in &self.initiators {
            check("--initiators", u)?;
        }
        if !(0.0..=1.0).contains(&self.cycles) {
            return bad(format!("--cycles {}: a probability is between 0 and 1", self.cycles));
        }
        if self.holders == 0 {
            return bad("--holders 0: a request waits for at least one holder".into());
        }
        if self.max_messages == 0 {
            return bad("--max-messages 0: at least 1".into());
        }
        if self.family == LabFamily::Clock && !self.lockstep {
            return bad("--family clock needs --lockstep: each receive is read (read → value) before anything else happens".into());
        }
        if let Some(a) = &self.algo_like
            && !crate::textbook::names(self.family).contains(&a.as_str())
        {
            return bad(format!(
                "--algo-like {a}: the lab knows the textbook costs of [{}] for {}",
                crate::textbook::names(self.family).join(", "),
                self.family.name()
            ));
        }
        Ok(())
    }

    /// The requesters' uids (all nodes when none were named).
    pub fn requester_uids(&self) -> Vec<Uid> {
        if self.requesters.is_empty() {
            (1..=Uid::from(self.nodes)).collect()
        } else {
            self.requesters.clone()
        }
    }

    /// The command line that repeats this run (lockstep runs repeat exactly with a node that
    /// writes the end-of-step marker).
    pub fn repro(&self) -> String {
        let mut s = format!(
            "ringleader lab run --family {} --bin '{}' --nodes {} --seed {}",
            self.family.name(),
            self.command.replace('\'', r"'\''"),
            self.nodes,
            self.seed
        );
        let default = LabConfig::new(self.family, &self.command, self.nodes);
        if self.latency != default.latency {
            let _ = write!(s, " --latency {}", self.latency);
        }
        if self.loss > 0.0 {
            let _ = write!(s, " --loss {}", self.loss);
        }
        if self.dup > 0.0 {
            let _ = write!(s, " --dup {}", self.dup);
        }
        for p in &self.partitions {
            let _ = write!(s, " --partition '{p}'");
        }
        for p in &self.pauses {
            let _ = write!(s, " --pause {p}");
        }
        for a in &self.crashes {
            let _ = write!(s, " --crash {a}");
        }
        for a in &self.recoveries {
            let _ = write!(s, " --recover {a}");
        }
        let list = |v: &[Uid]| v.iter().map(|u| u.to_string()).collect::<Vec<_>>().join(",");
        match self.family {
            LabFamily::Mutex => {
                if self.entries != default.entries {
                    let _ = write!(s, " --entries {}", self.entries);
                }
                if !self.requesters.is_empty() {
                    let _ = write!(s, " --requesters {}", list(&self.requesters));
                }
                if self.hold != default.hold {
                    let _ = write!(s, " --hold {}", format_duration(self.hold));
                }
                if self.think != default.think {
                    let _ = write!(s, " --think {}", format_duration(self.think));
                }
            }
            LabFamily::Clock => {
                if self.events != default.events {
                    let _ = write!(s, " --events {}", self.events);
                }
                if self.think != default.think {
                    let _ = write!(s, " --think {}", format_duration(self.think));
                }
            }
            LabFamily::Deadlock => {
                if self.entries != default.entries {
                    let _ = write!(s, " --entries {}", self.entries);
                }
                if self.hold != default.hold {
                    let _ = write!(s, " --hold {}", format_duration(self.hold));
                }
                if self.think != default.think {
                    let _ = write!(s, " --think {}", format_duration(self.think));
                }
                if self.cycles != default.cycles {
                    let _ = write!(s, " --cycles {}", self.cycles);
                }
                if self.holders != default.holders {
                    let _ = write!(s, " --holders {}", self.holders);
                }
                if let Some(t) = self.give_up {
                    let _ = write!(s, " --give-up {}", format_duration(t));
                }
            }
            LabFamily::Election => {
                if self.initiators != default.initiators {
                    let _ = write!(s, " --initiators {}", list(&self.initiators));
                }
                if self.start != default.start {
                    let _ = write!(s, " --start {}", format_duration(self.start));
                }
            }
        }
        if let Some(a) = &self.algo_like {
            let _ = write!(s, " --algo-like {a}");
        }
        if self.duration != default.duration {
            let _ = write!(s, " --duration {}", format_duration(self.duration));
        }
        if self.max_messages != default.max_messages {
            let _ = write!(s, " --max-messages {}", self.max_messages);
        }
        if self.lockstep {
            s.push_str(" --lockstep");
        }
        s
    }
}
