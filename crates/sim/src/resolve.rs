//! From a scenario to a run: [`Scenario::resolve`] checks every value (once, in
//! [`crate::input`]) and fills in the defaults, and [`RunConfig::repro`] writes the run back as
//! the command line that replays it, with the flags of [`crate::settings`] (adding `--plain`
//! when [`crate::stories`] says a story would otherwise come back).

use std::path::PathBuf;

use ringleader_core::Uid;

use crate::notation::{Latency, format_duration};
use crate::scenario::{
    Initiators, RunConfig, Scenario, ScenarioError, WorkloadKind, default_duration, default_initiators,
};
use crate::settings;
use crate::topologies::{self, Shape};

impl Scenario {
    /// Fills in defaults and checks every value.
    pub fn resolve(self, source: Option<PathBuf>) -> Result<RunConfig, ScenarioError> {
        let Some(algorithm) = self.algorithm.clone() else {
            return Err(ScenarioError::NoAlgorithm);
        };
        let Some(info) = ringleader_registry::find(&algorithm) else {
            let known = ringleader_registry::all().iter().map(|i| i.name).collect();
            return Err(ScenarioError::UnknownAlgorithm { name: algorithm, known });
        };
        let nodes = self.nodes.unwrap_or(settings::NODES.default_number() as u32);
        let end = self.duration.map(|d| d.0).unwrap_or(default_duration(info.family));
        crate::input::check(&self, &info, nodes, end)?;
        // A node id that does not exist, blamed on its flag or on its line in the file.
        let blame = crate::settings::Blame::new(&self);
        let check_uid = |u: Uid, key: &str, value: String, element: bool| -> Result<(), ScenarioError> {
            if u == 0 || u > nodes as Uid {
                Err(blame.error(
                    key,
                    &value,
                    element,
                    &format!("node id {u} does not exist (ids are 1..{nodes})"),
                ))
            } else {
                Ok(())
            }
        };
        let initiators = self.initiators.clone().unwrap_or(default_initiators(info.family));
        if let Initiators::Ids(ids) = &initiators {
            for &u in ids {
                check_uid(u, "initiators", initiators.to_string(), false)?;
            }
        }
        for a in self.faults.crash.iter() {
            check_uid(a.uid, "faults.crash", a.to_string(), true)?;
        }
        for a in self.faults.recover.iter() {
            check_uid(a.uid, "faults.recover", a.to_string(), true)?;
        }
        for p in self.faults.pause.iter() {
            check_uid(p.uid, "faults.pause", p.to_string(), true)?;
        }
        for p in self.faults.partition.iter() {
            for &u in p.left.iter().chain(&p.right) {
                check_uid(u, "faults.partition", p.to_string(), true)?;
            }
        }
        let requesters = match self.workload.requesters.clone() {
            None | Some(Initiators::All) => None,
            Some(Initiators::Ids(ids)) => {
                let written = Initiators::Ids(ids.clone()).to_string();
                for &u in &ids {
                    check_uid(u, "workload.requesters", written.clone(), false)?;
                }
                Some(ids)
            }
            Some(other) => {
                return Err(ScenarioError::Flag {
                    flag: settings::REQUESTERS.flag.into(),
                    value: other.to_string(),
                    reason: "give ids like 2,3,4 (or all)".into(),
                });
            }
        };
        // Every range was checked by `input::check`, once: what is left is to fill in defaults.
        let loss = self.network.loss.unwrap_or_else(|| settings::LOSS.default_number());
        let dup = self.network.dup.unwrap_or_else(|| settings::DUP.default_number());
        let latency = self.network.latency.unwrap_or_default();
        let max_delay = self.network.max_delay.map(|d| d.0).unwrap_or_else(|| latency.bound());
        let workload_kind = match (self.workload.kind, info.family) {
            (Some(k), _) => Some(k),
            (None, ringleader_algorithms::Family::Mutex) => Some(WorkloadKind::Sequential),
            (None, ringleader_algorithms::Family::Clock) => Some(WorkloadKind::Messages),
            (None, _) => None,
        };
        let rate = self.workload.rate.unwrap_or_else(|| settings::RATE.default_number());
        let cycles = self.workload.cycles.unwrap_or_else(|| settings::CYCLES.default_number());
        let holders = self.workload.holders.unwrap_or(info.workload_holders);
        let fanout = self.workload.fanout.unwrap_or_else(|| settings::FANOUT.default_number() as u32);
        for v in &self.expect.violations {
            if v.parse::<ringleader_judge::checkers::Property>().is_err() {
                return Err(ScenarioError::UnknownProperty {
                    name: v.clone(),
                    known: ringleader_judge::checkers::ALL_PROPERTIES,
                });
            }
        }
        let graph = match self.graph {
            None => None,
            Some(spec) => Some(spec.load(nodes)?),
        };
        topologies::check(info.topology, &algorithm, nodes, graph.as_ref(), self.edges)?;
        // The algorithm's own default shape is no choice: the report and repro line omit it.
        let graph = graph.filter(|g| Shape::default_for(info.topology).as_ref() != Some(g));
        let params = self
            .params
            .into_iter()
            .map(|(k, v)| {
                let s = match v {
                    toml::Value::String(s) => s,
                    other => other.to_string(),
                };
                (k, s)
            })
            .collect();
        Ok(RunConfig {
            name: self.name,
            description: self.description,
            algorithm,
            nodes,
            seed: self.seed.unwrap_or_else(|| settings::SEED.default_number() as u64),
            ids: self.ids.unwrap_or_default(),
            initiators,
            duration: end,
            edges: self.edges,
            graph,
            params,
            latency,
            loss,
            dup,
            fifo: self.network.fifo.unwrap_or(false),
            max_delay,
            max_delay_given: self.network.max_delay.is_some(),
            crash: self.faults.crash,
            recover: self.faults.recover,
            pause: self.faults.pause,
            partition: self.faults.partition,
            workload: workload_kind,
            entries: self.workload.entries.unwrap_or_else(|| settings::ENTRIES.default_number() as u64),
            hold: self.workload.hold.map_or_else(|| settings::HOLD.default_time(), |d| d.0),
            rate,
            requesters,
            cycles,
            fanout,
            holders,
            clock_offset: self.clocks.offset.map_or_else(|| settings::CLOCK_OFFSET.default_time(), |d| d.0),
            clock_drift_ppm: self
                .clocks
                .drift_ppm
                .unwrap_or_else(|| settings::DRIFT_PPM.default_number() as u32),
            clock_slew_ppm: self
                .clocks
                .slew_ppm
                .unwrap_or_else(|| settings::SLEW_PPM.default_number() as u32),
            clock_step_forward: self.clocks.step_forward.unwrap_or(false),
            expect: self.expect.violations.into_iter().collect(),
            source,
        })
    }
}

impl RunConfig {
    /// A configuration with every default, for `algorithm` on `nodes` nodes.
    pub fn new(algorithm: &str, nodes: u32) -> Result<RunConfig, ScenarioError> {
        Scenario { algorithm: Some(algorithm.into()), nodes: Some(nodes), ..Scenario::default() }
            .resolve(None)
    }

    /// The command line that reproduces this run exactly, without the scenario file.
    pub fn repro(&self) -> String {
        let mut s = format!(
            "ringleader sim --algo {} {} {} {} {} {} {}",
            self.algorithm,
            settings::NODES.flag,
            self.nodes,
            settings::SEED.flag,
            self.seed,
            settings::IDS.flag,
            self.ids.name()
        );
        let family = ringleader_registry::find(&self.algorithm).map(|i| i.family);
        // Every choice that differs from the default is written, `--initiators none` included.
        if let Some(f) = family
            && self.initiators != default_initiators(f)
        {
            s += &format!(" {} {}", settings::INITIATORS.flag, shell_word(&self.initiators.to_string()));
        }
        for a in &self.crash {
            s += &format!(" {} {a}", settings::CRASH.flag);
        }
        for a in &self.recover {
            s += &format!(" {} {a}", settings::RECOVER.flag);
        }
        for p in &self.pause {
            s += &format!(" {} {p}", settings::PAUSE.flag);
        }
        for p in &self.partition {
            s += &format!(" {} '{p}'", settings::PARTITION.flag);
        }
        if self.latency != Latency::default() {
            s += &format!(" {} {}", settings::LATENCY.flag, self.latency);
        }
        if self.loss > 0.0 {
            s += &format!(" {} {}", settings::LOSS.flag, self.loss);
        }
        if self.dup > 0.0 {
            s += &format!(" {} {}", settings::DUP.flag, self.dup);
        }
        if self.fifo {
            s += &format!(" {}", settings::FIFO.flag);
        }
        if self.max_delay_given {
            s += &format!(" {} {}", settings::MAX_DELAY.flag, format_duration(self.max_delay));
        }
        if family.is_none_or(|f| self.duration != default_duration(f)) {
            s += &format!(" {} {}", settings::DURATION.flag, format_duration(self.duration));
        }
        if let Some(g) = &self.graph {
            s += &format!(" {} {}", settings::GRAPH.flag, shell_word(&g.to_string()));
        }
        if let Some(e) = self.edges {
            s += &format!(" {} {e}", settings::EDGES.flag);
        }
        if let Some(w) = self.workload {
            s += &format!(
                " {} {} {} {}",
                settings::WORKLOAD.flag,
                w.name(),
                settings::ENTRIES.flag,
                self.entries
            );
            // The messages workload holds nothing.
            if w != WorkloadKind::Messages {
                s += &format!(" {} {}", settings::HOLD.flag, format_duration(self.hold));
            }
            if matches!(w, WorkloadKind::Poisson | WorkloadKind::Messages) {
                s += &format!(" {} {}", settings::RATE.flag, self.rate);
            }
            if w == WorkloadKind::Messages && self.fanout != 1 {
                s += &format!(" {} {}", settings::FANOUT.flag, self.fanout);
            }
            if let Some(r) = &self.requesters {
                s += &format!(" {} {}", settings::REQUESTERS.flag, Initiators::Ids(r.clone()));
            }
        }
        if self.workload.is_none()
            && ringleader_registry::find(&self.algorithm)
                .is_some_and(|i| i.family == ringleader_algorithms::Family::Deadlock)
        {
            s += &format!(
                " {} {} {} {}",
                settings::ENTRIES.flag,
                self.entries,
                settings::HOLD.flag,
                format_duration(self.hold)
            );
        }
        if self.cycles != settings::CYCLES.default_number() {
            s += &format!(" {} {}", settings::CYCLES.flag, self.cycles);
        }
        // The deadlock workload's holders per request (each algorithm declares its default); no
        // other run reads them.
        let deadlock = ringleader_registry::find(&self.algorithm)
            .filter(|i| i.family == ringleader_algorithms::Family::Deadlock);
        if let Some(info) = deadlock
            && self.holders != info.workload_holders
        {
            s += &format!(" {} {}", settings::HOLDERS.flag, self.holders);
        }
        if self.clock_offset > 0 {
            s += &format!(" {} {}", settings::CLOCK_OFFSET.flag, format_duration(self.clock_offset));
        }
        if self.clock_drift_ppm > 0 {
            s += &format!(" {} {}", settings::DRIFT_PPM.flag, self.clock_drift_ppm);
        }
        if self.clock_slew_ppm != settings::SLEW_PPM.default_number() as u32 {
            s += &format!(" {} {}", settings::SLEW_PPM.flag, self.clock_slew_ppm);
        }
        if self.clock_step_forward {
            s += &format!(" {}", settings::STEP_FORWARD.flag);
        }
        for (k, v) in &self.params {
            s += &format!(" --param {}", shell_word(&format!("{k}={v}")));
        }
        for v in &self.expect {
            s += &format!(" {} {}", settings::EXPECT.flag, shell_word(v));
        }
        // A run without its algorithm's default story (a scenario file, or flags that set a
        // story's setting back to the generic value) must not get it back on replay.
        if crate::stories::needs_plain(self, &s) {
            s += " --plain";
        }
        s
    }
}

/// `word`, single-quoted when a shell would split or expand it.
fn shell_word(word: &str) -> String {
    if word.chars().all(|c| c.is_ascii_alphanumeric() || "-_.,:/=+@%".contains(c)) {
        word.into()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}
