//! What a run accepts: the range of every numeric input (a simple range is declared with its
//! setting in [`crate::settings`] and checked here, once; a rule that involves other settings
//! is written here), the flags each family reads, fault plans that can happen, and the memory
//! a run would need — checked before anything is built, so that bad input gets one line naming
//! what was wrong and what is allowed.
//!
//! Every range keeps a run finite: virtual time is bounded by `--duration`, and no input can
//! make the events per unit of virtual time unbounded (timer periods have a floor, clock rates
//! stay positive, latencies and rates have ceilings).
//!
//! A value read from a scenario file is reported at its file, line and column with its field
//! name (`s.toml:4:8: field `loss` = 1.5: …`); a value given as a flag is reported as the flag
//! (`--loss 1.5: …`).

use std::collections::BTreeMap;

use ringleader_algorithms::{Family, Info, LeaderRule};
use ringleader_core::{Time, Uid};

use crate::notation::{Latency, format_duration};
use crate::scenario::{Initiators, Scenario, ScenarioError, WorkloadKind};
use crate::settings::{self, Blame};

const SECOND: Time = 1_000_000_000;
/// The largest one-way delay a latency law may produce (its bound): one minute.
pub const MAX_LATENCY: Time = 60 * SECOND;
/// The largest σ of a log-normal latency (its 99.99th percentile is median·e^(3.72σ)).
pub const MAX_SIGMA: f64 = 3.0;

pub use crate::settings::{MAX_DRIFT_PPM, MAX_DURATION, MAX_ENTRIES, MAX_HOLD, MAX_NODES, MAX_RATE};

/// The memory a run may be estimated to need before it is refused: 4 GiB.
pub const MEMORY_LIMIT: u64 = 4 << 30;
/// The longest a run may be estimated to spend building its nodes before its first event
/// ([`startup_estimate`]) before it is refused: ten minutes.
pub const STARTUP_LIMIT_SECONDS: f64 = 600.0;

/// The properties a run of `info` may judge (what `--expect` may name).
pub fn properties_of(info: &Info) -> &'static [&'static str] {
    if info.leader_rule == LeaderRule::Set {
        return &["coverage", "fraction", "balanced_load"];
    }
    if info.linearizable {
        return &[
            "safety",
            "liveness",
            "no_starvation",
            "fencing",
            "fifo",
            "timestamp_order",
            "linearizable",
        ];
    }
    match info.family {
        Family::Election => &["agreement", "validity", "uniqueness", "termination"],
        Family::Mutex => &["safety", "liveness", "no_starvation", "fencing", "fifo", "timestamp_order"],
        Family::Clock => &["clock_condition", "strong_clock_condition", "monotonic", "make_rebuilds"],
        Family::Deadlock => &["soundness", "completeness", "single_victim", "no_deadlock", "no_starvation"],
        Family::Detector => &["completeness", "eventual_accuracy"],
    }
}

/// Estimated peak memory of a run of `info` on `n` nodes, in bytes, before anything is built.
///
/// Most algorithms keep O(1) or O(degree) state per node. Some keep O(N) state per node, or
/// put O(N²) messages in flight at once, so the whole run needs O(N²) bytes; maekawa keeps
/// each node's grid quorum of 2√N − 1 ids, O(N√N). Each algorithm declares its coefficients
/// beside its code ([`ringleader_algorithms::Algorithm::FOOTPRINT`]: bytes per pair of nodes,
/// per node and quorum member), measured as peak RSS with `/usr/bin/time -f %M` on the default
/// run and rounded up (docs/PERFORMANCE.md has the figures).
///
/// Every run also has per-node state, queues and checkers: ≈ 2 KB per node.
pub fn memory_estimate(info: &Info, n: u32) -> u64 {
    let n = n as u64;
    let footprint = info.footprint;
    let quorum = 2 * n.isqrt() + 1;
    footprint
        .bytes_per_pair
        .saturating_mul(n)
        .saturating_mul(n)
        .saturating_add(footprint.bytes_per_quorum_member.saturating_mul(n).saturating_mul(quorum))
        .saturating_add(2048 * n)
}

/// How a run's memory grows with N, for the refusal's message.
fn memory_growth(info: &Info) -> &'static str {
    if info.footprint.bytes_per_quorum_member > 0 {
        "its quorums grow as N√N"
    } else {
        "its state or messages grow as N²"
    }
}

/// Estimated wall-clock seconds a run of `info` spends building `n` nodes before the first
/// event, when that cost is more than linear (0 otherwise): the algorithm's declared
/// nanoseconds per N³ ([`ringleader_algorithms::Footprint::startup_ns_per_n3`]; the lock
/// service's Raft replicas, measured in docs/PERFORMANCE.md).
pub fn startup_estimate(info: &Info, n: u32) -> f64 {
    let n = n as f64;
    info.footprint.startup_ns_per_n3 as f64 * n * n * n / 1e9
}

/// The most nodes worth starting interactively (the playground refuses more; `sim` warns):
/// where [`startup_estimate`] passes 2 seconds.
pub fn interactive_nodes(info: &Info) -> Option<u32> {
    (startup_estimate(info, MAX_NODES) > 2.0).then(|| largest_below(|n| startup_estimate(info, n) <= 2.0))
}

/// The largest N in 1..=MAX_NODES for which `fits(N)` holds (`fits` is monotone, and holds
/// at 1).
fn largest_below(fits: impl Fn(u32) -> bool) -> u32 {
    let (mut lo, mut hi) = (1u32, MAX_NODES);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lo
}

/// `x` seconds as "N s", "N min" or "N h".
pub fn seconds(x: f64) -> String {
    if x >= 7200.0 {
        format!("{:.0} h", x / 3600.0)
    } else if x >= 120.0 {
        format!("{:.0} min", x / 60.0)
    } else {
        format!("{x:.0} s")
    }
}

fn bytes(b: u64) -> String {
    if b >= 1 << 30 {
        format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64)
    } else {
        format!("{} MiB", b.div_ceil(1 << 20))
    }
}

/// Checks `s` for `info` before defaults are filled in: numeric ranges, flags the family does
/// not read, the fault plan, expected properties and the memory estimate. Only what the user
/// gave (in the file or as flags) is judged: defaults are not the user's choice.
pub(crate) fn check(s: &Scenario, info: &Info, nodes: u32, duration: Time) -> Result<(), ScenarioError> {
    let blame = Blame::new(s);
    let family = info.family;
    let name = info.name;
    let fmt = format_duration;

    // Size.
    settings::NODES.check(&blame, nodes.into(), &nodes.to_string())?;
    let need = memory_estimate(info, nodes);
    if need > MEMORY_LIMIT {
        let largest = largest_below(|n| memory_estimate(info, n) <= MEMORY_LIMIT);
        return Err(blame.error(
            "nodes",
            &nodes.to_string(),
            false,
            &format!(
                "{name} needs about {} on {nodes} nodes ({}); the limit is {}, which allows at most {largest} nodes",
                bytes(need),
                memory_growth(info),
                bytes(MEMORY_LIMIT)
            ),
        ));
    }
    let startup = startup_estimate(info, nodes);
    if startup > STARTUP_LIMIT_SECONDS {
        let largest = largest_below(|n| startup_estimate(info, n) <= STARTUP_LIMIT_SECONDS);
        return Err(blame.error(
            "nodes",
            &nodes.to_string(),
            false,
            &format!(
                "{name} would spend about {} building {nodes} nodes before its first event (its start-up grows \
                 as N³); runs estimated above {} are refused, which allows at most {largest} nodes",
                seconds(startup),
                seconds(STARTUP_LIMIT_SECONDS)
            ),
        ));
    }

    // Time.
    if let Some(d) = s.duration {
        settings::DURATION.check_time(&blame, d.0)?;
    }

    // Network.
    if let Some(l) = &s.network.latency {
        if let Latency::LogNormal(_, sigma) = l
            && *sigma > MAX_SIGMA
        {
            return Err(blame.error(
                "network.latency",
                &l.to_string(),
                false,
                &format!("SIGMA must be 0..{MAX_SIGMA}"),
            ));
        }
        if l.bound() > MAX_LATENCY {
            return Err(blame.error(
                "network.latency",
                &l.to_string(),
                false,
                &format!(
                    "its bound is {}; one-way delays may reach at most {} (a mean or median that large is not a \
                     network)",
                    fmt(l.bound()),
                    fmt(MAX_LATENCY)
                ),
            ));
        }
    }
    for (setting, p) in [
        (settings::LOSS, s.network.loss),
        (settings::DUP, s.network.dup),
        (settings::CYCLES, s.workload.cycles),
    ] {
        if let Some(p) = p {
            setting.check(&blame, p, &p.to_string())?;
        }
    }
    if let Some(m) = s.network.max_delay {
        let latency = s.network.latency.clone().unwrap_or_default();
        let bound = latency.bound();
        if m.0 < bound || m.0 > MAX_LATENCY {
            let law = if matches!(latency, Latency::Constant(_) | Latency::Uniform(..)) {
                "its maximum"
            } else {
                "its 99.99th percentile (mean + 6 sd, 10 × the exponential mean)"
            };
            return Err(blame.error(
                "network.max_delay",
                &fmt(m.0),
                false,
                &format!(
                    "the delay bound algorithms assume must be at least the latency's bound ({law}: {} for {latency}) \
                     and at most {}",
                    fmt(bound),
                    fmt(MAX_LATENCY)
                ),
            ));
        }
    }

    // Flags the family reads.
    let not_for = |key: &str, value: String, what: &str| {
        let article = if family == Family::Election { "an" } else { "a" };
        Err(blame.error(
            key,
            &value,
            false,
            &format!("{name} is {article} {} algorithm and {what}", family.name()),
        ))
    };
    if let Some(i) = &s.initiators
        && family != Family::Election
    {
        return not_for(
            "initiators",
            i.to_string(),
            "has no election to start (only elections take --initiators)",
        );
    }
    let kind = s.workload.kind;
    if let Some(k) = kind {
        let fits = match family {
            Family::Mutex => k != WorkloadKind::Messages,
            Family::Clock => k == WorkloadKind::Messages,
            _ => false,
        };
        if !fits {
            let allowed = match family {
                Family::Mutex => "takes sequential, saturated or poisson",
                Family::Clock => "takes only the messages workload",
                _ => "has no --workload",
            };
            return not_for("workload.kind", k.name().into(), allowed);
        }
    }
    // The workload the run will have (the family's default when none is given).
    let kind = kind.or(match family {
        Family::Mutex => Some(WorkloadKind::Sequential),
        Family::Clock => Some(WorkloadKind::Messages),
        _ => None,
    });
    let workload_family = matches!(family, Family::Mutex | Family::Clock | Family::Deadlock);
    if let Some(e) = s.workload.entries {
        if !workload_family {
            return not_for(
                "workload.entries",
                e.to_string(),
                "has no workload (--entries is for mutex, clock and deadlock runs)",
            );
        }
        settings::ENTRIES.check(&blame, e as f64, &e.to_string())?;
    }
    if let Some(h) = s.workload.hold {
        if !matches!(family, Family::Mutex | Family::Deadlock) {
            return not_for(
                "workload.hold",
                fmt(h.0),
                "holds nothing (--hold is for mutex and deadlock runs)",
            );
        }
        settings::HOLD.check_time(&blame, h.0)?;
    }
    if let Some(r) = s.workload.rate {
        if !matches!(kind, Some(WorkloadKind::Poisson | WorkloadKind::Messages)) {
            return not_for(
                "workload.rate",
                r.to_string(),
                "its workload has no rate (--rate is for --workload poisson and clock runs)",
            );
        }
        settings::RATE.check(&blame, r, &r.to_string())?;
    }
    if let Some(r) = &s.workload.requesters
        && !matches!(family, Family::Mutex | Family::Clock)
    {
        return not_for(
            "workload.requesters",
            r.to_string(),
            "has no requesters (--requesters is for mutex and clock runs)",
        );
    }
    if let Some(c) = s.workload.cycles
        && family != Family::Deadlock
    {
        return not_for(
            "workload.cycles",
            c.to_string(),
            "has no transactions (--cycles is for deadlock runs)",
        );
    }
    if let Some(f) = s.workload.fanout {
        if family == Family::Deadlock {
            return not_for(
                "workload.fanout",
                f.to_string(),
                "sends no messages of a workload (--fanout is the destinations of a clock run's send \
                 events; the holders a deadlock request waits for are --holders)",
            );
        }
        if family != Family::Clock {
            return not_for("workload.fanout", f.to_string(), "reads no fanout (--fanout is for clock runs)");
        }
        if f == 0 || f >= nodes.max(2) {
            return Err(blame.error(
                "workload.fanout",
                &f.to_string(),
                false,
                &format!("must be 1..{} (other nodes)", nodes.saturating_sub(1).max(1)),
            ));
        }
    }
    if let Some(h) = s.workload.holders {
        if family != Family::Deadlock {
            return not_for(
                "workload.holders",
                h.to_string(),
                "has no transactions (--holders is for deadlock runs)",
            );
        }
        if h == 0 || h >= nodes.max(2) {
            return Err(blame.error(
                "workload.holders",
                &h.to_string(),
                false,
                &format!("must be 1..{} (other nodes)", nodes.saturating_sub(1).max(1)),
            ));
        }
    }
    if let Some(o) = s.clocks.offset {
        settings::CLOCK_OFFSET.check_time(&blame, o.0)?;
    }
    if let Some(d) = s.clocks.drift_ppm {
        settings::DRIFT_PPM.check(&blame, d.into(), &d.to_string())?;
    }
    if let Some(r) = s.clocks.slew_ppm {
        settings::SLEW_PPM.check(&blame, r.into(), &r.to_string())?;
    }
    let properties = properties_of(info);
    for v in &s.expect.violations {
        if ringleader_judge::checkers::ALL_PROPERTIES.contains(&v.as_str())
            && !properties.contains(&v.as_str())
        {
            return Err(blame.error(
                "expect.violations",
                v,
                true,
                &format!("{name} is not judged by this property; its properties: {}", properties.join(", ")),
            ));
        }
    }

    // Id lists name each node once.
    let once = |key: &str, ids: &[Uid], shown: String| -> Result<(), ScenarioError> {
        let mut seen = std::collections::BTreeSet::new();
        match ids.iter().find(|u| !seen.insert(**u)) {
            Some(u) => Err(blame.error(key, &shown, false, &format!("id {u} is named twice"))),
            None => Ok(()),
        }
    };
    if let Some(Initiators::Ids(ids)) = &s.initiators {
        once("initiators", ids, Initiators::Ids(ids.clone()).to_string())?;
    }
    if let Some(Initiators::Ids(ids)) = &s.workload.requesters {
        once("workload.requesters", ids, Initiators::Ids(ids.clone()).to_string())?;
    }

    // The fault plan can happen.
    let f = &s.faults;
    let after_end = |key: &str, shown: String, t: Time| -> Result<(), ScenarioError> {
        if t > duration {
            Err(blame.error(
                key,
                &shown,
                true,
                &format!("{} is after the end of the run ({}; see --duration)", fmt(t), fmt(duration)),
            ))
        } else {
            Ok(())
        }
    };
    // Per node, its crashes and recoveries in time order must alternate, starting with a crash.
    let mut plan: BTreeMap<Uid, Vec<(Time, bool, String)>> = BTreeMap::new();
    for a in &f.crash {
        after_end("faults.crash", a.to_string(), a.time)?;
        plan.entry(a.uid).or_default().push((a.time, true, a.to_string()));
    }
    for a in &f.recover {
        after_end("faults.recover", a.to_string(), a.time)?;
        plan.entry(a.uid).or_default().push((a.time, false, a.to_string()));
    }
    for (uid, events) in &mut plan {
        // At equal times a recovery sorts first, so that `crash 3@5ms, recover 3@5ms` is
        // reported as a recovery of a node that is not down.
        events.sort_by_key(|e| (e.0, e.1));
        let mut down: Option<&str> = None;
        for (_, crash, shown) in events.iter() {
            match (crash, down) {
                (true, Some(earlier)) => {
                    return Err(blame.error(
                        "faults.crash",
                        shown,
                        true,
                        &format!("node {uid} is already down (crashed at {earlier} and not recovered)"),
                    ));
                }
                (false, None) => {
                    let reason = match f.crash.iter().find(|c| c.uid == *uid) {
                        Some(c) => format!(
                            "node {uid} is not down then (its crash {c} comes later): a recovery follows a crash"
                        ),
                        None => {
                            format!("node {uid} never crashes: a recovery follows a crash of the same node")
                        }
                    };
                    return Err(blame.error("faults.recover", shown, true, &reason));
                }
                (true, None) => down = Some(shown),
                (false, Some(_)) => down = None,
            }
        }
    }
    let mut pauses: BTreeMap<Uid, Vec<(Time, Time, String)>> = BTreeMap::new();
    for p in &f.pause {
        if p.from >= p.to {
            return Err(blame.error(
                "faults.pause",
                &p.to_string(),
                true,
                "the pause is empty (FROM must be before TO)",
            ));
        }
        after_end("faults.pause", p.to_string(), p.from)?;
        pauses.entry(p.uid).or_default().push((p.from, p.to, p.to_string()));
    }
    for list in pauses.values_mut() {
        list.sort();
        for w in list.windows(2) {
            if w[1].0 < w[0].1 {
                return Err(blame.error(
                    "faults.pause",
                    &w[1].2,
                    true,
                    &format!("it overlaps the pause {}", w[0].2),
                ));
            }
        }
    }
    for p in &f.partition {
        let shown = p.to_string();
        if p.from >= p.to {
            return Err(blame.error(
                "faults.partition",
                &shown,
                true,
                "the partition is empty (FROM must be before TO)",
            ));
        }
        after_end("faults.partition", shown.clone(), p.from)?;
        let mut ids = p.left.clone();
        ids.extend(&p.right);
        once("faults.partition", &ids, shown)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Origin;

    fn info(name: &str) -> Info {
        ringleader_registry::find(name).expect("a registered algorithm")
    }

    #[test]
    fn the_memory_estimate_refuses_quadratic_state_only() {
        assert!(memory_estimate(&info("lamport"), 100_000) > MEMORY_LIMIT);
        assert!(memory_estimate(&info("phi-accrual"), 100_000) > MEMORY_LIMIT);
        assert!(memory_estimate(&info("chang-roberts"), MAX_NODES) <= MEMORY_LIMIT);
        assert!(memory_estimate(&info("ricart-agrawala"), 100_000) <= MEMORY_LIMIT);
    }

    /// maekawa's quorums grow as N√N: 10⁵ nodes fit (≈ 0.3 GB measured), 10⁶ do not (each of
    /// them holds 2,001 ids), and the largest allowed size is found exactly.
    #[test]
    fn maekawa_is_refused_where_its_quorums_outgrow_the_limit() {
        assert!(memory_estimate(&info("maekawa"), 100_000) <= MEMORY_LIMIT);
        assert!(memory_estimate(&info("maekawa"), MAX_NODES) > MEMORY_LIMIT);
        let largest = largest_below(|n| memory_estimate(&info("maekawa"), n) <= MEMORY_LIMIT);
        assert!(memory_estimate(&info("maekawa"), largest) <= MEMORY_LIMIT);
        assert!(memory_estimate(&info("maekawa"), largest + 1) > MEMORY_LIMIT);
        assert!((300_000..400_000).contains(&largest), "{largest}");
    }

    /// lock-service's N³ start-up: interactive up to a few hundred nodes, refused where it
    /// would pass ten minutes; algorithms without a superlinear start-up are never bounded.
    #[test]
    fn the_startup_estimate_bounds_lock_service_only() {
        let interactive = interactive_nodes(&info("lock-service")).expect("lock-service is bounded");
        assert!((200..1_000).contains(&interactive), "{interactive}");
        assert!(startup_estimate(&info("lock-service"), interactive) <= 2.0);
        assert!(startup_estimate(&info("lock-service"), interactive + 1) > 2.0);
        assert!(startup_estimate(&info("lock-service"), 1_000) < STARTUP_LIMIT_SECONDS);
        assert!(startup_estimate(&info("lock-service"), 5_000) > STARTUP_LIMIT_SECONDS);
        assert_eq!(interactive_nodes(&info("maekawa")), None);
        assert_eq!(startup_estimate(&info("ricart-agrawala"), MAX_NODES), 0.0);
    }

    #[test]
    fn fields_are_found_in_their_section() {
        let o = Origin {
            path: "s.toml".into(),
            text:
                "algorithm = \"central\"\n[network]\nloss = 1.5\n[faults]\ncrash = [\"2@1ms\", \"3@5ms\"]\n"
                    .into(),
        };
        assert_eq!(o.locate("network.loss", None), Some((3, 8)));
        assert_eq!(o.locate("faults.crash", Some("3@5ms")), Some((5, 19)));
        assert_eq!(o.locate("loss", None), None);
    }
}
