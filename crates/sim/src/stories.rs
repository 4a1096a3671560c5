//! Default stories: what `ringleader sim --algo X` runs when no flag says otherwise.
//!
//! The generic defaults (5 nodes, no fault, perfect clocks, one hour) show some algorithms
//! doing nothing worth watching: clock synchronisation with clocks that already agree, a
//! failure detector with nobody failing, a coordinator timeout that never fires. So each
//! algorithm that needs one has a *story* here — the settings, written as a scenario file would
//! write them, that make its default run show what the algorithm is for. This table is the one
//! place where they are chosen; `docs/` lists them per family.
//!
//! Rules:
//! - A story fills only the settings the user left unset (flags, or a scenario file's fields),
//!   setting by setting; the fault plan is one setting (any `--crash`, `--recover`, `--pause`
//!   or `--partition` replaces the story's whole plan) and so is the list of expected
//!   violations.
//! - Stories apply to command-line runs only: a scenario file tells its own story, and
//!   `--plain` asks for the generic defaults. Library users ([`crate::RunConfig::new`]), the
//!   model checker, `table` and `bench` never see them.
//! - The repro line writes every value the run used that differs from the generic default,
//!   and adds `--plain` when a story value was overridden back to a generic one, so that
//!   replaying it never reapplies a story the run did not have.

use crate::scenario::{RunConfig, Scenario, ScenarioError};

/// The story of `algorithm` on `n` nodes as scenario-file text, or `None` when the generic
/// defaults already show the algorithm (or no algorithm has that name). `n` is the node count
/// the run will have (the user's, else the story's own, else 5): a story that crashes "the
/// highest id" names it.
pub fn text(algorithm: &str, n: u32) -> Option<String> {
    STORIES.iter().find(|(name, _)| *name == algorithm).and_then(|(_, story)| story(n))
}

/// A story: the scenario-file text for a run on `n` nodes, or `None` when the generic defaults
/// already show the algorithm on that many.
type Story = fn(u32) -> Option<String>;

/// No story: the generic defaults already show the algorithm.
fn none(_: u32) -> Option<String> {
    None
}

/// Clock synchronisation with clocks that start apart and drift, on a jittery network.
fn clocks(_: u32) -> Option<String> {
    Some(
        "duration = \"60s\"\n\
         [network]\nlatency = \"uniform:0.8ms..1.2ms\"\n\
         [clocks]\noffset = \"10ms\"\ndrift_ppm = 20\n\
         [workload]\nentries = 0\n"
            .into(),
    )
}

/// A failure detector's run: a pause (a false suspicion, then trust again) and a crash (a true
/// one).
fn detector(n: u32) -> Option<String> {
    (n >= 2).then(|| {
        format!(
            "duration = \"3s\"\n\
             [network]\nlatency = \"uniform:1ms..3ms\"\n\
             [faults]\npause = [\"{p}@1s..1.2s\"]\ncrash = [\"{n}@2s\"]\n",
            p = (n / 2 + 1).min(n.saturating_sub(1)).max(1)
        )
    })
}

/// Every algorithm by its `--algo` name, with its story. The stories are scenario files —
/// fault plans, workloads, clocks, expected violations — which are the simulator's notions,
/// not the algorithms': so they are kept here, in one table, rather than beside each
/// algorithm. A test checks that the table names exactly the registered algorithms, so that
/// a new algorithm says here whether it has a story.
const STORIES: &[(&str, Story)] = &[
    ("chang-roberts", none),
    // The textbook run: the coordinator is elected, crashes, the others notice (heartbeats)
    // and elect the next highest id.
    ("bully", |n| {
        Some(format!(
            "duration = \"300ms\"\nparams = {{ detector = \"heartbeat\" }}\n\
             [faults]\ncrash = [\"{n}@50ms\"]\n"
        ))
    }),
    ("ring", none),
    ("ring-min", none),
    // Raft-style terms never go quiet: a short steady state after the election.
    ("majority", |_| Some("duration = \"300ms\"\n".into())),
    ("hirschberg-sinclair", none),
    // On five nodes the random graph has 2N = 10 edges: the complete graph. Twelve nodes give
    // 24 of 66 possible edges.
    ("yoyo", |_| Some("nodes = 12\n".into())),
    // Enough nodes for several super-peers (1 % and 2 % of 500).
    ("superpeer-dht", |_| Some("nodes = 500\n".into())),
    ("superpeer-geometric", |_| Some("nodes = 500\n".into())),
    ("central", none),
    // The coordinator's holder timeout fires on a holder that is slow, not dead: two holders
    // at once, the flaw declared expected.
    ("central-timeout", |_| {
        Some(
            "nodes = 3\nparams = { timeout = \"10ms\" }\n\
             [workload]\nkind = \"saturated\"\nentries = 2\nrequesters = \"2,3\"\nhold = \"5ms\"\n\
             [faults]\npause = [\"2@2.5ms..100ms\"]\n\
             [expect]\nviolations = [\"safety\"]\n"
                .into(),
        )
    }),
    ("token-ring", none),
    ("quorum", none),
    ("lamport", none),
    ("ricart-agrawala", none),
    ("roucairol-carvalho", none),
    ("maekawa", none),
    ("suzuki-kasami", none),
    ("raymond", none),
    ("lamport-clock", none),
    ("vector-clock", none),
    ("cristian", clocks),
    ("berkeley", clocks),
    ("ntp", clocks),
    // The editor's clock behind the builder's (seed 7 draws it so): make skips a rebuild.
    ("make", |_| {
        Some(
            "nodes = 2\nseed = 7\nduration = \"2s\"\n[clocks]\noffset = \"10ms\"\n\
             [expect]\nviolations = [\"make_rebuilds\"]\n"
                .into(),
        )
    }),
    // The phantom deadlock of `scenarios/cmh-phantom-deadlock.toml`, shown on purpose: a
    // process gives up its wait while a probe of the cycle it was on is in flight, and the
    // probe comes back to report a cycle that no longer exists. Declared expected.
    ("chandy-misra-haas", |_| {
        Some(
            "nodes = 4\nseed = 17\nparams = { give_up = \"5ms\", resolve = false }\n\
             [workload]\nentries = 10\nhold = \"1ms\"\ncycles = 0.8\nholders = 1\n\
             [expect]\nviolations = [\"soundness\"]\n"
                .into(),
        )
    }),
    ("wait-die", none),
    ("wound-wait", none),
    ("heartbeat", detector),
    ("phi-accrual", detector),
    ("lock-service", none),
];

/// The story of `algorithm` for a run whose node count the user set to `nodes` (if at all).
pub fn story(algorithm: &str, nodes: Option<u32>) -> Result<Option<Scenario>, ScenarioError> {
    let own_nodes = match text(algorithm, nodes.unwrap_or(5)) {
        None => return Ok(None),
        Some(t) => Scenario::parse(&t, &format!("<default story of {algorithm}>"))?.nodes,
    };
    let n = nodes.or(own_nodes).unwrap_or(5);
    match text(algorithm, n) {
        None => Ok(None),
        Some(t) => Scenario::parse(&t, &format!("<default story of {algorithm}>")).map(Some),
    }
}

/// `user` with its algorithm's story filling the settings it left unset.
///
/// The story's expected violations follow the story's *flaw*: the settings that make the flaw
/// happen — its fault plan, its clocks, its parameters and, when it chose a seed, the seed and
/// everything the seed draws from (a story that needs a seed shows a drawn coincidence). An
/// override of any other setting (more nodes or entries for a story with a fixed fault) keeps
/// the flaw and so keeps the expectation. An override of a flaw setting drops the expectation, and the
/// run's description says which override dropped which violation, so that a run that still
/// shows the flaw is not a surprise.
pub fn apply(user: Scenario) -> Result<Scenario, ScenarioError> {
    let Some(algorithm) = user.algorithm.clone() else { return Ok(user) };
    let Some(mut base) = story(&algorithm, user.nodes)? else { return Ok(user) };
    let f = &user.faults;
    let user_faults =
        !(f.crash.is_empty() && f.recover.is_empty() && f.pause.is_empty() && f.partition.is_empty());
    let story_faults = !(base.faults.crash.is_empty() && base.faults.pause.is_empty());
    // A duration the user chose may end before the story's faults: the story's timeline is
    // then the user's to set, as with a fault flag.
    let user_timeline = user_faults || (user.duration.is_some() && story_faults);
    if user_timeline {
        base.faults = Default::default();
    }
    let (b, u) = (&base, &user);
    let mut dropped_by: Vec<String> = Vec::new();
    if user_timeline && story_faults {
        dropped_by.push(if user_faults { "the fault flags" } else { "--duration" }.into());
    }
    if b.seed.is_some() && u.seed.is_some() {
        dropped_by.push("--seed".into());
    }
    if b.clocks.offset.is_some() && u.clocks.offset.is_some() {
        dropped_by.push("--clock-offset".into());
    }
    if b.clocks.drift_ppm.is_some() && u.clocks.drift_ppm.is_some() {
        dropped_by.push("--drift-ppm".into());
    }
    dropped_by.extend(b.params.keys().filter(|k| u.params.contains_key(*k)).map(|k| format!("--param {k}")));
    // A story that chose its seed shows a flaw the seed draws from everything else the story
    // sets: any override of its settings may draw another run.
    if b.seed.is_some() {
        let drawn = [
            (b.nodes.is_some() && u.nodes.is_some(), "--nodes"),
            (b.duration.is_some() && u.duration.is_some() && !user_timeline, "--duration"),
            (b.network.latency.is_some() && u.network.latency.is_some(), "--latency"),
            (b.workload.kind.is_some() && u.workload.kind.is_some(), "--workload"),
            (b.workload.entries.is_some() && u.workload.entries.is_some(), "--entries"),
            (b.workload.hold.is_some() && u.workload.hold.is_some(), "--hold"),
            (b.workload.cycles.is_some() && u.workload.cycles.is_some(), "--cycles"),
            (b.workload.holders.is_some() && u.workload.holders.is_some(), "--holders"),
            (b.workload.requesters.is_some() && u.workload.requesters.is_some(), "--requesters"),
        ];
        dropped_by.extend(drawn.iter().filter(|(hit, _)| *hit).map(|(_, flag)| flag.to_string()));
    }
    if !b.expect.violations.is_empty() && !dropped_by.is_empty() {
        let mut why = format!(
            "The default story of {algorithm} expects {} to be violated; {} {} the story's flaw, so no violation is declared expected.",
            b.expect.violations.join(", "),
            dropped_by.join(" and "),
            if dropped_by.len() == 1 && dropped_by[0] != "the fault flags" { "changes" } else { "change" },
        );
        if let Some(d) = &user.description {
            why = format!("{d} {why}");
        }
        base.expect = Default::default();
        base.description = Some(why);
    }
    Ok(base.merge(user))
}

/// Whether replaying `spelled` (the repro line of `cfg`, without `--plain`) would reapply a
/// story setting the run did not use: a setting the story sets that the line leaves out
/// because the run has the generic default there.
pub fn needs_plain(cfg: &RunConfig, spelled: &str) -> bool {
    let Ok(Some(s)) = story(&cfg.algorithm, Some(cfg.nodes)) else { return false };
    let has = |flag: &str| spelled.contains(&format!(" --{flag} "));
    let f = &s.faults;
    let story_faults =
        !(f.crash.is_empty() && f.recover.is_empty() && f.pause.is_empty() && f.partition.is_empty());
    let run_faults = ["crash", "recover", "pause", "partition"].iter().any(|k| has(k));
    (story_faults && !run_faults)
        || (s.duration.is_some() && !has("duration"))
        || (s.network.latency.is_some() && !has("latency"))
        || (s.clocks.offset.is_some() && !has("clock-offset"))
        || (s.clocks.drift_ppm.is_some() && !has("drift-ppm"))
        || s.params.keys().any(|k| !spelled.contains(&format!(" --param {k}=")))
        || (!s.expect.violations.is_empty() && !has("expect"))
        || (s.graph.is_some() && !has("graph"))
        || (s.edges.is_some() && !has("edges"))
        || (s.workload.kind.is_some() && !has("workload"))
        || (s.workload.requesters.is_some() && !has("requesters"))
        || (s.workload.cycles.is_some() && !has("cycles"))
        || (s.workload.holders.is_some() && !has("holders"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::FaultsSection;

    fn flags(algo: &str) -> Scenario {
        Scenario { algorithm: Some(algo.into()), ..Scenario::default() }
    }

    #[test]
    fn the_table_names_every_registered_algorithm_once() {
        let registered: Vec<&str> = ringleader_registry::all().iter().map(|i| i.name).collect();
        let mut named: Vec<&str> = STORIES.iter().map(|(name, _)| *name).collect();
        assert_eq!(named, registered, "the stories in the order `ringleader list` prints them");
        named.dedup();
        assert_eq!(named.len(), registered.len());
    }

    #[test]
    fn every_story_parses_and_uses_only_settings_the_repro_check_knows() {
        for info in ringleader_registry::all() {
            for n in [1, 2, 5, 9] {
                let Some(s) = story(info.name, Some(n)).unwrap() else { continue };
                let cleared = Scenario {
                    nodes: None,
                    seed: None,
                    duration: None,
                    graph: None,
                    edges: None,
                    params: Default::default(),
                    faults: FaultsSection::default(),
                    clocks: Default::default(),
                    expect: Default::default(),
                    origin: None,
                    overridden: Default::default(),
                    network: crate::scenario::NetworkSection { latency: None, ..s.network.clone() },
                    workload: crate::scenario::WorkloadSection {
                        kind: None,
                        requesters: None,
                        entries: None,
                        hold: None,
                        cycles: None,
                        holders: None,
                        ..s.workload.clone()
                    },
                    ..s.clone()
                };
                assert_eq!(
                    cleared,
                    Scenario::default(),
                    "{}: a story setting needs_plain ignores",
                    info.name
                );
            }
        }
    }

    #[test]
    fn flags_win_setting_by_setting_and_a_fault_replaces_the_whole_plan() {
        let mut user = flags("heartbeat");
        user.nodes = Some(7);
        let s = apply(user).unwrap();
        assert_eq!(s.faults.crash, vec!["7@2s".parse().unwrap()], "the highest id of 7 crashes");
        assert_eq!(s.faults.pause.len(), 1);
        let mut user = flags("heartbeat");
        user.faults.crash = vec!["2@1s".parse().unwrap()];
        let s = apply(user).unwrap();
        assert_eq!(s.faults.crash, vec!["2@1s".parse().unwrap()]);
        assert!(s.faults.pause.is_empty(), "the user's fault plan replaces the story's");
        assert!(s.duration.is_some() && s.network.latency.is_some(), "other settings stay");
        assert_eq!(apply(flags("chang-roberts")).unwrap(), flags("chang-roberts"));
    }

    #[test]
    fn a_story_declares_its_flaw_only_while_the_user_keeps_the_story() {
        let told = apply(flags("central-timeout")).unwrap();
        assert_eq!(told.expect.violations, vec!["safety".to_string()]);
        let mut user = flags("central-timeout");
        user.faults.pause = vec!["2@2.5ms..100ms".parse().unwrap()];
        let s = apply(user).unwrap();
        assert!(s.expect.violations.is_empty());
        assert!(s.description.unwrap().contains("the fault flags change the story's flaw"));
        let mut user = flags("make");
        user.seed = Some(1);
        let s = apply(user).unwrap();
        assert!(s.expect.violations.is_empty());
        assert!(s.description.unwrap().contains("expects make_rebuilds to be violated; --seed changes"));
    }

    /// An override that leaves the flaw alone keeps the expectation with the fault: more
    /// entries or nodes for central-timeout still pause the holder, a longer run of make still
    /// has its skewed clock.
    #[test]
    fn a_story_keeps_its_expectation_while_its_flaw_is_kept() {
        let mut user = flags("central-timeout");
        user.workload.entries = Some(6);
        user.nodes = Some(4);
        let s = apply(user).unwrap();
        assert_eq!(s.expect.violations, vec!["safety".to_string()]);
        assert!(!s.faults.pause.is_empty());
        assert!(s.description.is_none());
        // make's flaw is drawn by its seed: another duration may draw another run.
        let mut user = flags("make");
        user.duration = Some("3s".parse().unwrap());
        let s = apply(user).unwrap();
        assert!(s.expect.violations.is_empty());
        assert!(s.description.unwrap().contains("--duration changes the story's flaw"));
        let mut user = flags("chandy-misra-haas");
        user.workload.holders = Some(2);
        assert!(apply(user).unwrap().expect.violations.is_empty());
        assert_eq!(
            apply(flags("chandy-misra-haas")).unwrap().expect.violations,
            vec!["soundness".to_string()]
        );
    }

    #[test]
    fn the_repro_line_replays_a_run_that_overrode_a_story() {
        // A scenario without faults for heartbeat: replaying without --plain would add the
        // story's crash and pause.
        let plain = Scenario { nodes: Some(5), ..flags("heartbeat") }.resolve(None).unwrap();
        assert!(plain.repro().ends_with(" --plain"), "{}", plain.repro());
        // The story's own run spells everything out: no --plain needed.
        let told = apply(flags("heartbeat")).unwrap().resolve(None).unwrap();
        assert!(!told.repro().contains("--plain"), "{}", told.repro());
        assert!(told.repro().contains(" --crash 5@2s"), "{}", told.repro());
        let chang = flags("chang-roberts").resolve(None).unwrap();
        assert!(!chang.repro().contains("--plain"));
    }
}
