//! The run settings: every knob of a simulated run that a scenario file's field and a
//! `ringleader sim` flag both set — its size, seed and layout, the network, the fault plan, the
//! workload, the clocks and the expected violations — each declared once, in [`ALL`].
//!
//! A [`Setting`] holds the scenario field, the flag, the name of the flag's value, the unit,
//! the allowed range with what an out-of-range value is told, the default and the `--help`
//! text. From it come: the flag an input error names ([`flag_of`]), the range checks of
//! [`crate::input`] (each range checked once, there), the flag names of the repro line
//! ([`crate::RunConfig::repro`]) and the command line's `--help` for those flags. The scenario
//! file's fields themselves are the serde structs of [`crate::scenario`], whose keys the
//! table names; a test checks that every key is a field there.
//!
//! Settings whose rule involves more than their own value — the latency law and the delay
//! bound, the fault plan against the node ids and the duration, the workload flags a family
//! reads — keep that rule in [`crate::input`]; their range here is [`Range::Rule`].

use ringleader_core::Time;

use crate::scenario::{Origin, Scenario, ScenarioError};

const SECOND: Time = 1_000_000_000;
const HOUR: Time = 3_600 * SECOND;

/// The most nodes a run may have.
pub const MAX_NODES: u32 = 1_000_000;
/// The longest `--duration`: one day of virtual time.
pub const MAX_DURATION: Time = 24 * HOUR;
/// The most critical-section entries, transactions or clock events one run may request.
pub const MAX_ENTRIES: u64 = 10_000_000;
/// The longest `--hold` and `--clock-offset`: one hour.
pub const MAX_HOLD: Time = HOUR;
/// The highest `--rate`, requests or events per second per node.
pub const MAX_RATE: f64 = 1_000_000.0;
/// The largest `--drift-ppm`: 10 % (a clock never runs backwards or stops).
pub const MAX_DRIFT_PPM: u32 = 100_000;

/// Builds input errors that name the flag, or the file position when the value came from the
/// scenario file.
pub(crate) struct Blame<'a> {
    origin: Option<&'a Origin>,
    from_flags: &'a std::collections::BTreeSet<String>,
}

impl<'a> Blame<'a> {
    pub(crate) fn new(s: &'a Scenario) -> Self {
        Blame { origin: s.origin.as_ref(), from_flags: &s.overridden }
    }

    /// `value` of field `key` is wrong because `reason`; `element` when the value is one
    /// element of a list (a fault, say).
    pub(crate) fn error(&self, key: &str, value: &str, element: bool, reason: &str) -> ScenarioError {
        if !self.from_flags.contains(key)
            && let Some(origin) = self.origin
            && let Some((line, column)) = origin.locate(key, element.then_some(value))
        {
            let leaf = key.rsplit('.').next().unwrap_or(key);
            return ScenarioError::Parse {
                path: origin.path.clone(),
                line,
                column,
                message: format!("field `{leaf}` = {value}: {reason}"),
            };
        }
        ScenarioError::Flag { flag: flag_of(key), value: value.into(), reason: reason.into() }
    }
}

/// What a setting's value counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// A probability, 0 to 1.
    Probability,
    /// A time with its unit (`250us`, `1.5ms`, `2s`; a bare number is ms).
    Time,
    /// A count (nodes, entries, edges, destinations).
    Count,
    /// Events per second per node.
    PerSecond,
    /// Parts per million.
    Ppm,
    /// Node ids, or a choice of nodes (`all`, `lowest`, `2,3,4`).
    Ids,
    /// One of named choices, or a spec written in its own notation (a latency law, a shape).
    Choice,
    /// A plan entry (`ID@TIME`, `ID@FROM..TO`), repeatable.
    Plan,
    /// A switch: the flag alone sets it.
    Switch,
}

/// The values a setting allows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Range {
    /// From `min` to `max`, both included.
    Closed(f64, f64),
    /// Above `min`, up to and including `max`.
    AboveAtMost(f64, f64),
    /// A rule of its own in [`crate::input`] (it depends on other settings: the node count,
    /// the latency, the duration, the family), or any value of its type.
    Rule,
}

impl Range {
    /// Whether `v` lies in the range (a NaN never does; a [`Range::Rule`] is checked
    /// elsewhere).
    pub fn contains(self, v: f64) -> bool {
        match self {
            Range::Closed(min, max) => (min..=max).contains(&v),
            Range::AboveAtMost(min, max) => v > min && v <= max,
            Range::Rule => true,
        }
    }
}

/// One run setting.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Setting {
    /// The scenario file's field, `section.leaf` or `leaf` (`network.loss`, `nodes`).
    pub key: &'static str,
    /// The command-line flag (`--loss`).
    pub flag: &'static str,
    /// The name of the flag's value in `--help` (`P`); `None` for a switch.
    pub value_name: Option<&'static str>,
    /// What the value counts.
    pub unit: Unit,
    /// The allowed values.
    pub range: Range,
    /// What an out-of-range value is told, after the flag or field and the value.
    pub out_of_range: &'static str,
    /// The default, as `--help` writes it; `None` for a switch or a list.
    pub default: Option<&'static str>,
    /// The `--help` text, ending with the range and the default.
    pub help: &'static str,
}

impl Setting {
    /// The flag without its dashes (`loss`), as clap's `long` takes it.
    pub fn long(&self) -> &'static str {
        self.flag.trim_start_matches('-')
    }

    /// Checks `value` (`shown` as the user wrote it or as the run shows it) against the
    /// range, blaming the flag or the file position.
    pub(crate) fn check(&self, blame: &Blame, value: f64, shown: &str) -> Result<(), ScenarioError> {
        if self.range.contains(value) {
            Ok(())
        } else {
            Err(blame.error(self.key, shown, false, self.out_of_range))
        }
    }

    /// The default's value, as the table writes it: the text before any comma (the rest
    /// explains it), `None` for a setting without one.
    fn default_text(&self) -> Option<&'static str> {
        self.default.map(|d| d.split(',').next().unwrap_or(d).trim())
    }

    /// The default of a numeric setting, read from the table (`--loss`'s 0, `--rate`'s 10).
    /// Every numeric default parses: `every_default_a_run_fills_in_parses_and_is_in_range`.
    pub fn default_number(&self) -> f64 {
        self.default_text()
            .and_then(|d| d.parse().ok())
            .unwrap_or_else(|| panic!("the settings table gives {} a numeric default", self.flag))
    }

    /// The default of a time setting, read from the table (`--hold`'s 1ms).
    pub fn default_time(&self) -> Time {
        self.default_text()
            .and_then(|d| d.parse::<crate::scenario::TimeSpan>().ok())
            .map(|t| t.0)
            .unwrap_or_else(|| panic!("the settings table gives {} a time default", self.flag))
    }

    /// [`Setting::check`] of a time, shown with its unit.
    pub(crate) fn check_time(&self, blame: &Blame, t: Time) -> Result<(), ScenarioError> {
        self.check(blame, t as f64, &crate::notation::format_duration(t))
    }
}

/// Declares a setting: its help text ends with its default (when it has one), written once.
macro_rules! setting {
    (@opt) => { None };
    (@opt $d:literal) => { Some($d) };
    (@ $key:literal, $flag:literal, $value:expr, $unit:ident, $range:expr, $why:expr, $help:literal
     $(, default $default:literal $(, then $after:literal)?)?) => {
        Setting {
            key: $key,
            flag: $flag,
            value_name: $value,
            unit: Unit::$unit,
            range: $range,
            out_of_range: $why,
            default: setting!(@opt $($default)?),
            help: concat!($help $(, " [default: ", $default, "]" $(, $after)?)?),
        }
    };
    (ranged $key:literal, $flag:literal, $value:literal, $unit:ident, $range:expr, $why:literal, $help:literal
     $($rest:tt)*) => {
        setting!(@ $key, $flag, Some($value), $unit, $range, $why, $help $($rest)*)
    };
    (rule $key:literal, $flag:literal, $value:literal, $unit:ident, $help:literal $($rest:tt)*) => {
        setting!(@ $key, $flag, Some($value), $unit, Range::Rule, "", $help $($rest)*)
    };
    (switch $key:literal, $flag:literal, $help:literal) => {
        setting!(@ $key, $flag, None, Switch, Range::Rule, "", $help)
    };
}

/// `--nodes`.
pub const NODES: Setting = setting!(ranged
    "nodes", "--nodes", "N", Count, Range::Closed(1.0, MAX_NODES as f64),
    "a run has at least 1 and at most 1000000 nodes",
    "Number of nodes, 1..1000000", default "5",
    then ". Algorithms whose state or messages grow as N² (bully, lamport, suzuki-kasami, vector-clock, \
          chandy-misra-haas, heartbeat, phi-accrual) are refused up front when their estimated memory exceeds 4 GiB"
);
/// `--seed`.
pub const SEED: Setting = setting!(rule
    "seed", "--seed", "S", Count,
    "Seed of the run's random streams (one per purpose and node, derived from it), any 64-bit number",
    default "1"
);
/// `--ids`.
pub const IDS: Setting = setting!(rule
    "ids", "--ids", "ARRANGEMENT", Choice, "How ids are laid out over positions", default "ascending"
);
/// `--initiators`.
pub const INITIATORS: Setting = setting!(rule
    "initiators", "--initiators", "WHO", Ids,
    "Who starts an election at time 0: all, lowest, highest, none, or ids like 3 or 1,4 \
     (lowest/highest mean the lowest/highest live id); elections only",
    default "lowest"
);
/// `--crash`.
pub const CRASH: Setting = setting!(rule
    "faults.crash", "--crash", "ID@TIME", Plan,
    "Crash node ID at TIME (repeatable), e.g. --crash 7@0; TIME at most --duration, and a node already down \
     cannot crash again"
);
/// `--recover`.
pub const RECOVER: Setting = setting!(rule
    "faults.recover", "--recover", "ID@TIME", Plan,
    "Recover node ID at TIME (repeatable); the node must be down (crashed earlier)"
);
/// `--pause`.
pub const PAUSE: Setting = setting!(rule
    "faults.pause", "--pause", "ID@FROM..TO", Plan,
    "Pause node ID (slow, not dead) from FROM to TO (repeatable), e.g. --pause 3@10ms..200ms; FROM before TO \
     and before the end, pauses of one node do not overlap"
);
/// `--partition`.
pub const PARTITION: Setting = setting!(rule
    "faults.partition", "--partition", "A,B|C,D@FROM..TO", Plan,
    "Cut A,B from C,D from FROM to TO (repeatable); A,B>C,D cuts one way only. Each id once, FROM before TO \
     and before the end"
);
/// `--loss`.
pub const LOSS: Setting = setting!(ranged
    "network.loss", "--loss", "P", Probability, Range::Closed(0.0, 1.0),
    "a probability must be between 0 and 1",
    "Probability that a message is lost, 0..1", default "0"
);
/// `--dup`.
pub const DUP: Setting = setting!(ranged
    "network.dup", "--dup", "P", Probability, Range::Closed(0.0, 1.0),
    "a probability must be between 0 and 1",
    "Probability that a message is delivered twice, 0..1", default "0"
);
/// `--latency`.
pub const LATENCY: Setting = setting!(rule
    "network.latency", "--latency", "SPEC", Choice,
    "One-way latency: constant:D, uniform:A..B, exponential:MEAN, normal:MEAN,SD, lognormal:MEDIAN,SIGMA \
     (SIGMA 0..3); its bound (maximum, or 99.99th percentile) at most 60s",
    default "constant:1ms"
);
/// `--fifo`.
pub const FIFO: Setting =
    setting!(switch "network.fifo", "--fifo", "Deliver messages on each link in the order they were sent");
/// `--max-delay`.
pub const MAX_DELAY: Setting = setting!(rule
    "network.max_delay", "--max-delay", "TIME", Time,
    "The delay bound algorithms may assume (Ttrans in timeouts), from the latency's bound to 60s",
    default "the latency's bound"
);
/// `--duration`.
pub const DURATION: Setting = setting!(ranged
    "duration", "--duration", "TIME", Time, Range::AboveAtMost(0.0, MAX_DURATION as f64),
    "the run's virtual time must be above 0 and at most 86400s",
    "Stop runs that never go quiet after this much virtual time, above 0 and at most 24h",
    default "1h = 3600s; 10s for failure detectors"
);
/// `--graph`.
pub const GRAPH: Setting = setting!(rule
    "graph", "--graph", "SHAPE", Choice,
    "The communication graph, for algorithms that run on arbitrary graphs (yoyo: any shape) or trees (raymond: \
     tree, line, star, random-tree, or a file holding a tree); ring and complete-graph algorithms take none. \
     SHAPE: random (a random connected graph with --edges edges), grid (⌊√N⌋ rows filled row by row, \
     4-neighbour), tree (balanced binary, rooted at position 1), line, star (position 1 in the middle), \
     random-tree (each position joins a uniformly chosen earlier one), or file:PATH (one `A B` pair of 1-based \
     positions per line, # comments; N is --nodes)",
    default "random for graph algorithms, tree for tree algorithms"
);
/// `--edges`.
pub const EDGES: Setting = setting!(rule
    "edges", "--edges", "M", Count,
    "Edges of the random connected graph (--graph random only), between N − 1 and N(N − 1)/2",
    default "2N, or N(N − 1)/2 when smaller"
);
/// `--workload`.
pub const WORKLOAD: Setting = setting!(rule
    "workload.kind", "--workload", "KIND", Choice,
    "Workload: sequential, saturated, poisson (mutual exclusion); messages (clocks: local events and sends)",
    default "sequential for mutex, messages for clock algorithms",
    then ". Elections and detectors have no workload and take none of the workload flags"
);
/// `--entries`.
pub const ENTRIES: Setting = setting!(ranged
    "workload.entries", "--entries", "E", Count, Range::Closed(0.0, MAX_ENTRIES as f64),
    "entries must be 0..10000000",
    "Critical-section entries (mutex), transactions (deadlock) or events (messages workload) to request in \
     total, 0..10000000",
    default "10"
);
/// `--hold`.
pub const HOLD: Setting = setting!(ranged
    "workload.hold", "--hold", "TIME", Time, Range::Closed(0.0, MAX_HOLD as f64),
    "a hold time must be 0..3600s",
    "Time a holder stays in the critical section (mean, under poisson; the mean hold and think time of \
     deadlock transactions), 0..1h; mutex and deadlock runs",
    default "1ms"
);
/// `--rate`.
pub const RATE: Setting = setting!(ranged
    "workload.rate", "--rate", "R", PerSecond, Range::AboveAtMost(0.0, MAX_RATE),
    "requests per second per node must be above 0 and at most 1000000",
    "Requests (poisson) or events (clock messages workload) per second per node, above 0 and at most 1000000",
    default "10"
);
/// `--requesters`.
pub const REQUESTERS: Setting = setting!(rule
    "workload.requesters", "--requesters", "IDS", Ids,
    "Which ids make requests (mutex and clock runs), each once, e.g. 2,3,4",
    default "all; all but node 0 under sequential"
);
/// `--cycles`.
pub const CYCLES: Setting = setting!(ranged
    "workload.cycles", "--cycles", "P", Probability, Range::Closed(0.0, 1.0),
    "a probability must be between 0 and 1",
    "Deadlock workload: probability that a request closes a wait-for cycle, 0..1", default "0.3"
);
/// `--fanout` (1..N−1: its range depends on the node count, checked in [`crate::input`]).
pub const FANOUT: Setting = setting!(rule
    "workload.fanout", "--fanout", "K", Count,
    "Destinations of each send event (messages workload of clock runs), 1..N−1", default "1"
);
/// `--holders` (1..N−1: its range depends on the node count, checked in [`crate::input`]).
pub const HOLDERS: Setting = setting!(rule
    "workload.holders", "--holders", "K", Count,
    "Deadlock workload: the most holders one request waits for, 1..N−1",
    default "2, 1 for chandy-misra-haas (each algorithm declares its own)"
);
/// `--clock-offset`.
pub const CLOCK_OFFSET: Setting = setting!(ranged
    "clocks.offset", "--clock-offset", "TIME", Time, Range::Closed(0.0, MAX_HOLD as f64),
    "an offset must be 0..3600s",
    "Draw each node's initial clock offset uniformly from ±TIME, 0..1h", default "0"
);
/// `--drift-ppm`.
pub const DRIFT_PPM: Setting = setting!(ranged
    "clocks.drift_ppm", "--drift-ppm", "PPM", Ppm, Range::Closed(0.0, MAX_DRIFT_PPM as f64),
    "drift must be 0..100000 ppm (10 %), so that no clock stops or runs backwards",
    "Draw each node's clock drift uniformly from ±PPM parts per million, 0..100000 (10 %)", default "0"
);
/// `--slew-ppm`.
pub const SLEW_PPM: Setting = setting!(ranged
    "clocks.slew_ppm", "--slew-ppm", "PPM", Ppm, Range::Closed(1.0, crate::clock::MAX_SLEW_PPM as f64),
    "a slew rate must be 1..500000 ppm, so that a slewing clock never stops or runs backwards",
    "Slew clock corrections in at PPM parts per million, 1..500000",
    default "500, the `adjtime` rate: 0.5 ms per second"
);
/// `--step-forward`.
pub const STEP_FORWARD: Setting = setting!(switch
    "clocks.step_forward", "--step-forward",
    "Let a forward clock correction step at once (a backward one always slews: a clock never reads a time it \
     has already shown)"
);
/// `--expect`.
pub const EXPECT: Setting = setting!(rule
    "expect.violations", "--expect", "PROPERTY", Choice,
    "A property of the algorithm's family whose violation the run is expected to find (repeatable)"
);

/// Every run setting, in the order `ringleader sim --help` lists them.
pub const ALL: &[Setting] = &[
    NODES,
    SEED,
    IDS,
    INITIATORS,
    CRASH,
    RECOVER,
    PAUSE,
    PARTITION,
    LOSS,
    DUP,
    LATENCY,
    FIFO,
    MAX_DELAY,
    DURATION,
    GRAPH,
    EDGES,
    WORKLOAD,
    ENTRIES,
    HOLD,
    RATE,
    REQUESTERS,
    CYCLES,
    FANOUT,
    HOLDERS,
    CLOCK_OFFSET,
    DRIFT_PPM,
    SLEW_PPM,
    STEP_FORWARD,
    EXPECT,
];

/// The setting of scenario field `key`.
pub fn of_key(key: &str) -> Option<&'static Setting> {
    ALL.iter().find(|s| s.key == key)
}

/// The flag that sets scenario field `key` (`--algo` for `algorithm`, the algorithm's name).
pub fn flag_of(key: &str) -> String {
    match of_key(key) {
        Some(s) => s.flag.into(),
        None if key == "algorithm" => "--algo".into(),
        None => format!("--{}", key.rsplit('.').next().unwrap_or(key).replace('_', "-")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notation::format_duration;
    use crate::scenario::Scenario;

    /// The out-of-range texts are literals (so that the table is plain data); they name the
    /// limits the ranges are built from.
    #[test]
    fn out_of_range_texts_name_the_limits() {
        let fmt = format_duration;
        assert_eq!(NODES.out_of_range, format!("a run has at least 1 and at most {MAX_NODES} nodes"));
        assert_eq!(
            DURATION.out_of_range,
            format!("the run's virtual time must be above 0 and at most {}", fmt(MAX_DURATION))
        );
        assert_eq!(ENTRIES.out_of_range, format!("entries must be 0..{MAX_ENTRIES}"));
        assert_eq!(HOLD.out_of_range, format!("a hold time must be 0..{}", fmt(MAX_HOLD)));
        assert_eq!(
            RATE.out_of_range,
            format!("requests per second per node must be above 0 and at most {MAX_RATE}")
        );
        assert_eq!(CLOCK_OFFSET.out_of_range, format!("an offset must be 0..{}", fmt(MAX_HOLD)));
        assert_eq!(
            DRIFT_PPM.out_of_range,
            format!("drift must be 0..{MAX_DRIFT_PPM} ppm (10 %), so that no clock stops or runs backwards")
        );
        assert_eq!(
            SLEW_PPM.out_of_range,
            format!(
                "a slew rate must be 1..{} ppm, so that a slewing clock never stops or runs backwards",
                crate::clock::MAX_SLEW_PPM
            )
        );
        for s in ALL {
            assert_eq!(s.range == Range::Rule, s.out_of_range.is_empty(), "{}", s.flag);
        }
    }

    /// Every key is a field of the scenario file, and every flag is named once.
    #[test]
    fn every_key_is_a_scenario_field_and_every_flag_is_named_once() {
        let fields = serde_json::to_value(Scenario::default()).unwrap();
        for (i, s) in ALL.iter().enumerate() {
            let field = s.key.split('.').try_fold(&fields, |v, k| v.get(k));
            assert!(field.is_some(), "{} is no field of a scenario", s.key);
            assert!(ALL[i + 1..].iter().all(|t| t.flag != s.flag && t.key != s.key), "{} twice", s.flag);
            assert_eq!(flag_of(s.key), s.flag);
        }
    }

    /// A scenario that sets every field of the file.
    const EVERY_FIELD: &str = r#"
name = "n"
description = "d"
algorithm = "central"
nodes = 4
seed = 7
ids = "descending"
initiators = "1,4"
duration = "2s"
edges = 5
graph = "grid"
params = { timeout = "10ms" }
[network]
latency = "uniform:1ms..2ms"
loss = 0.1
dup = 0.2
fifo = true
max_delay = "3ms"
[faults]
crash = ["1@4ms"]
recover = ["1@8ms"]
pause = ["2@2.5ms..100ms"]
partition = ["1,2|3,4@20ms..100ms"]
[workload]
kind = "poisson"
entries = 3
hold = "5ms"
rate = 10.0
requesters = "2,3"
cycles = 0.5
fanout = 2
holders = 3
[clocks]
offset = "1ms"
drift_ppm = 100
slew_ppm = 400
step_forward = true
[expect]
violations = ["safety"]
"#;

    /// `Scenario::merge` names the fields it overlays one by one; this holds that list to the
    /// structs and to the table: a scenario that sets every field comes through a merge onto an
    /// empty one intact, and every setting it carries is recorded as the flags'.
    #[test]
    fn a_merge_takes_every_field_the_flags_set() {
        fn unset(v: &serde_json::Value, at: &str, out: &mut Vec<String>) {
            match v {
                serde_json::Value::Null => out.push(at.into()),
                serde_json::Value::Array(a) if a.is_empty() => out.push(at.into()),
                serde_json::Value::Object(m) => {
                    for (k, v) in m {
                        unset(v, &format!("{at}.{k}"), out);
                    }
                }
                _ => {}
            }
        }
        let every = Scenario::parse(EVERY_FIELD, "every.toml").unwrap();
        let value = serde_json::to_value(&every).unwrap();
        let mut missing = Vec::new();
        unset(&value, "", &mut missing);
        assert!(missing.is_empty(), "EVERY_FIELD leaves {missing:?} unset");
        let merged = Scenario::default().merge(Scenario { origin: None, ..every });
        assert_eq!(serde_json::to_value(&merged).unwrap(), value);
        for s in ALL {
            assert!(merged.overridden.contains(s.key), "{} is not recorded as set by a flag", s.key);
        }
    }

    /// `--nodes`' help names the algorithms whose memory grows as N², as they declare it.
    #[test]
    fn the_nodes_help_names_every_quadratic_algorithm() {
        let mut quadratic: Vec<&str> = ringleader_registry::all()
            .iter()
            .filter(|i| i.footprint.bytes_per_pair > 0)
            .map(|i| i.name)
            .collect();
        let list =
            NODES.help.split_once("grow as N² (").and_then(|(_, rest)| rest.split_once(')')).unwrap().0;
        let mut listed: Vec<&str> = list.split(", ").collect();
        quadratic.sort();
        listed.sort();
        assert_eq!(listed, quadratic);
    }

    /// An out-of-range value of every ranged setting, as a flag and as a scenario file's field,
    /// gets the table's error.
    #[test]
    fn an_out_of_range_value_gets_the_tables_error() {
        let hours = |h: u64| format_duration(h * 3_600_000_000_000);
        let cases: &[(Setting, &str, String)] = &[
            (NODES, "algorithm = \"central\"\nnodes = 0\n", "0".into()),
            (LOSS, "algorithm = \"central\"\n[network]\nloss = 1.5\n", "1.5".into()),
            (DUP, "algorithm = \"central\"\n[network]\ndup = -0.5\n", "-0.5".into()),
            (DURATION, "algorithm = \"central\"\nduration = \"25h\"\n", hours(25)),
            (ENTRIES, "algorithm = \"central\"\n[workload]\nentries = 10000001\n", "10000001".into()),
            (HOLD, "algorithm = \"central\"\n[workload]\nhold = \"2h\"\n", hours(2)),
            (RATE, "algorithm = \"central\"\n[workload]\nkind = \"poisson\"\nrate = 0.0\n", "0".into()),
            (CYCLES, "algorithm = \"chandy-misra-haas\"\n[workload]\ncycles = 1.5\n", "1.5".into()),
            (CLOCK_OFFSET, "algorithm = \"cristian\"\n[clocks]\noffset = \"2h\"\n", hours(2)),
            (DRIFT_PPM, "algorithm = \"cristian\"\n[clocks]\ndrift_ppm = 100001\n", "100001".into()),
            (SLEW_PPM, "algorithm = \"cristian\"\n[clocks]\nslew_ppm = 0\n", "0".into()),
        ];
        let ranged: Vec<&str> = ALL.iter().filter(|s| s.range != Range::Rule).map(|s| s.flag).collect();
        let tested: Vec<&str> = cases.iter().map(|c| c.0.flag).collect();
        assert_eq!(tested, ranged, "one case per ranged setting, in the table's order");
        for (setting, text, shown) in cases {
            let file = Scenario::parse(text, "s.toml").unwrap();
            let leaf = setting.key.rsplit('.').next().unwrap();
            let err = file.clone().resolve(None).unwrap_err().to_string();
            let said = format!("field `{leaf}` = {shown}: {}", setting.out_of_range);
            assert!(err.starts_with("s.toml:") && err.ends_with(&said), "{err}");
            let flags = Scenario { origin: None, ..file };
            let err = flags.resolve(None).unwrap_err().to_string();
            assert_eq!(err, format!("{} {shown}: {}", setting.flag, setting.out_of_range));
        }
    }

    /// The defaults a run fills in come from the table: each parses, lies in its setting's
    /// range, and is what a scenario that says nothing resolves to.
    #[test]
    fn every_default_a_run_fills_in_parses_and_is_in_range() {
        for s in [NODES, SEED, LOSS, DUP, ENTRIES, RATE, CYCLES, FANOUT, HOLDERS, DRIFT_PPM, SLEW_PPM] {
            assert!(s.range.contains(s.default_number()), "{}", s.flag);
        }
        for s in [HOLD, CLOCK_OFFSET] {
            assert!(s.range.contains(s.default_time() as f64), "{}", s.flag);
        }
        assert_eq!(
            LATENCY.default.map(|d| d.parse::<crate::notation::Latency>().ok()),
            Some(Some(crate::notation::Latency::default()))
        );
        assert_eq!(SLEW_PPM.default_number() as u32, crate::clock::SLEW_PPM);
        let run = crate::scenario::RunConfig::new("ricart-agrawala", 5).unwrap();
        assert_eq!(
            (run.seed, run.loss, run.dup, run.entries, run.hold, run.rate, run.clock_slew_ppm),
            (1, 0.0, 0.0, 10, 1_000_000, 10.0, 500)
        );
        let cmh = crate::scenario::RunConfig::new("chandy-misra-haas", 5).unwrap();
        let wfg = crate::scenario::RunConfig::new("wait-die", 5).unwrap();
        assert_eq!((cmh.holders, wfg.holders), (1, HOLDERS.default_number() as u32));
    }
}
