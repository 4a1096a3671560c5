//! Verdicts that tell the truth: an eventual property cut off by `--duration` is undecided, not
//! violated; a run that is over proves a liveness failure; a workload never silently stops; runs
//! end when their story is over; operations are counted in the textbook's unit; message totals
//! add up; latency summaries are exact where they can be.

use ringleader_sim::report::{PropertyStatus, Report};
use ringleader_sim::scenario::{Initiators, WorkloadKind};
use ringleader_sim::{RunConfig, RunOptions, run};

const MS: u64 = 1_000_000;

fn go(cfg: &RunConfig) -> Report {
    run(cfg, RunOptions::default()).unwrap().report
}

fn status(r: &Report, property: &str) -> PropertyStatus {
    r.properties.iter().find(|p| p.name == property).unwrap_or_else(|| panic!("no {property}")).status
}

fn cfg(algo: &str, n: u32) -> RunConfig {
    RunConfig::new(algo, n).unwrap()
}

#[test]
fn a_cut_off_mutex_run_leaves_liveness_undecided() {
    // `sim --algo central --entries 10 --duration 20ms`: id 3 asks at 20 ms, the run ends.
    let mut c = cfg("central", 5);
    c.entries = 10;
    c.duration = 20 * MS;
    let r = go(&c);
    assert_eq!(r.stopped, "duration");
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert_eq!(status(&r, "liveness"), PropertyStatus::Undecided);
    assert_eq!(status(&r, "no_starvation"), PropertyStatus::Undecided);
    assert_eq!(status(&r, "safety"), PropertyStatus::Holds);
    let p = r.properties.iter().find(|p| p.name == "liveness").unwrap();
    assert!(p.holds, "undecided is not violated");
    assert!(p.undecided.as_deref().unwrap().contains("asked at 20.000 ms"), "{p:?}");
    assert!(r.as_expected());
    let text = r.human(None);
    assert!(text.contains("UNDECIDED"), "{text}");
    assert!(text.contains("--duration 200ms"), "{text}");
    assert!(!text.contains("deadlock"), "{text}");
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["properties"][1]["status"], "undecided");
    assert_eq!(json["properties"][1]["holds"], true);
    assert_eq!(json["properties"][0]["status"], "holds");
    // Long enough, the same run decides: every property holds.
    c.duration = 200 * MS;
    let r = go(&c);
    assert!(r.undecided.is_empty(), "{:?}", r.undecided);
    assert!(r.properties.iter().all(|p| p.status == PropertyStatus::Holds));
    assert_eq!(r.outcome.mutex().unwrap().entries, 10);
}

#[test]
fn a_cycle_cut_off_before_its_bound_is_undecided() {
    // `sim --algo chandy-misra-haas --plain --holders 2 --entries 100 --duration 20ms`: a cycle closes at 18.709 ms,
    // 1.3 ms before the cut-off; the bound is 5 × 50 ms. Two holders per request (`--holders
    // 2`; one is the default since one holder closes no overlapping cycles).
    let mut c = cfg("chandy-misra-haas", 5);
    c.holders = 2;
    c.entries = 100;
    c.duration = 20 * MS;
    let r = go(&c);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert_eq!(status(&r, "completeness"), PropertyStatus::Undecided);
    assert!(r.undecided[0].detail.contains("bound 250.000 ms"), "{:?}", r.undecided);
    assert!(r.as_expected());
}

#[test]
fn a_detector_cut_off_while_a_pause_is_suspected_is_undecided() {
    // `sim --algo heartbeat --pause 3@9990ms..10000ms`: id 3 resumes at the cut-off.
    let mut c = cfg("heartbeat", 5);
    c.pause = vec!["3@9990ms..10000ms".parse().unwrap()];
    let r = go(&c);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert_eq!(status(&r, "eventual_accuracy"), PropertyStatus::Undecided);
    assert!(r.as_expected());
}

#[test]
fn a_run_that_is_over_with_a_request_waiting_violates_liveness() {
    // `sim --algo ricart-agrawala --nodes 4 --crash 2@0 --entries 4`: the sequential workload
    // skips the crashed id 2 and asks id 3, which waits for id 2's reply forever.
    let mut c = cfg("ricart-agrawala", 4);
    c.entries = 4;
    c.crash = vec!["2@0".parse().unwrap()];
    let r = go(&c);
    assert_eq!(r.stopped, "quiescent");
    assert_eq!(status(&r, "liveness"), PropertyStatus::Violated);
    assert!(r.violations[0].detail.contains("id 3 asked"), "{:?}", r.violations);
    let w = r.workload.as_ref().unwrap();
    assert_eq!((w.asked, w.issued, w.lost), (4, 1, 1));
    assert!(w.shortfall.is_some());
    assert!(!r.as_expected());
}

#[test]
fn a_workload_that_cannot_issue_what_was_asked_says_so() {
    let mut c = cfg("central", 3);
    c.entries = 4;
    c.crash = vec!["2@0".parse().unwrap(), "3@0".parse().unwrap()];
    let r = go(&c);
    let w = r.workload.as_ref().unwrap();
    assert_eq!((w.asked, w.issued), (4, 0));
    assert_eq!(w.shortfall.as_deref(), Some("every requester crashed"));
    let text = r.human(None);
    assert!(!text.contains("OK: every property holds"), "{text}");
    assert!(text.contains("INCOMPLETE"), "{text}");
    // A requester that crashes while it waits: the next live one is asked.
    let mut c = cfg("central", 4);
    c.entries = 6;
    c.hold = 5 * MS;
    c.crash = vec!["3@4ms".parse().unwrap()];
    let r = go(&c);
    assert_eq!(r.outcome.mutex().unwrap().entries, 6, "{}", r.human(None));
    assert!(r.workload.as_ref().unwrap().shortfall.is_none());
}

#[test]
fn an_election_run_stops_after_a_short_steady_state() {
    // `sim --algo majority`: elected in 3 ms; heartbeats only after that.
    let r = go(&cfg("majority", 5));
    assert_eq!(r.stopped, "steady");
    assert!(r.outcome.election().unwrap().agreed);
    assert!(r.sim_time < 1_000.0, "{} ms", r.sim_time);
    assert!(r.messages.sent < 1_000, "{}", r.messages.sent);
    assert!(r.properties.iter().all(|p| p.status == PropertyStatus::Holds));
    // A mutex run with detection traffic stops once its workload is done.
    let mut c = cfg("central-timeout", 4);
    c.params.insert("failover".into(), "true".into());
    c.entries = 5;
    let r = go(&c);
    assert_ne!(r.stopped, "duration", "{}", r.human(None));
    assert_eq!(r.outcome.mutex().unwrap().entries, 5);
    // Detectors' stories are their heartbeats: they run to the cut-off.
    assert_eq!(go(&cfg("heartbeat", 3)).stopped, "duration");
}

#[test]
fn one_bully_election_is_one_operation_of_the_textbook_count() {
    // Highest (8) crashed, the lowest detects: N² − N − 1 = 55 messages, one election.
    let mut c = cfg("bully", 8);
    c.crash = vec!["8@0".parse().unwrap()];
    c.initiators = Initiators::Lowest;
    let r = go(&c);
    assert_eq!(r.messages.sent, 55);
    assert_eq!(r.per_operation.unit, "election");
    assert_eq!(r.per_operation.operations, 1);
    assert_eq!(r.per_operation.messages_mean, 55.0);
    assert!(r.human(None).contains("per op     1 election, 55.00 messages each"));
    // Every process starting at once is still one election.
    let mut c = cfg("chang-roberts", 6);
    c.initiators = Initiators::All;
    assert_eq!(go(&c).per_operation.operations, 1);
    // A crash of the coordinator and a re-election: two.
    let mut c = cfg("bully", 5);
    c.initiators = Initiators::Lowest;
    c.params.insert("heartbeat".into(), "5ms".into());
    c.crash = vec!["5@50ms".parse().unwrap()];
    let r = go(&c);
    assert_eq!(r.outcome.election().unwrap().leader, Some(4));
    assert_eq!(r.per_operation.operations, 2, "{}", r.human(None));
    assert!(r.human(None).contains("detection excluded: heartbeat"));
}

#[test]
fn clocks_count_rounds_and_polls() {
    let mut c = cfg("berkeley", 4);
    c.clock_drift_ppm = 100;
    c.params.insert("period".into(), "1s".into());
    c.duration = 4_500 * MS;
    let r = go(&c);
    assert_eq!(r.per_operation.unit, "round");
    assert_eq!(r.per_operation.operations, 5);
    assert_eq!(r.per_operation.messages_mean, 9.0, "3(N−1) per round");
    let mut c = cfg("ntp", 4);
    c.params.insert("period".into(), "1s".into());
    c.duration = 4_500 * MS;
    let r = go(&c);
    assert_eq!(r.per_operation.unit, "poll");
    assert_eq!(r.per_operation.operations, 15);
    assert_eq!(r.per_operation.messages_mean, 2.0);
}

#[test]
fn sent_is_delivered_plus_dropped_plus_in_flight() {
    let mut cut = cfg("central", 5);
    cut.entries = 10;
    cut.duration = 20 * MS;
    let mut lossy = cfg("central-timeout", 6);
    lossy.workload = Some(WorkloadKind::Poisson);
    lossy.loss = 0.05;
    lossy.dup = 0.05;
    lossy.pause = vec!["3@5ms..300ms".parse().unwrap()];
    lossy.crash = vec!["4@40ms".parse().unwrap()];
    lossy.duration = 200 * MS;
    let mut beats = cfg("heartbeat", 4);
    beats.pause = vec!["2@95ms..200ms".parse().unwrap()];
    beats.duration = 100 * MS;
    for (c, cut_in_flight) in [(cut, true), (lossy, false), (beats, true)] {
        let m = go(&c).messages;
        assert_eq!(m.sent + m.duplicated, m.delivered + m.dropped + m.in_flight, "{}: {m:?}", c.algorithm);
        assert_eq!(m.in_flight > 0, cut_in_flight, "{}: {m:?}", c.algorithm);
    }
}

#[test]
fn latency_summaries_are_exact_at_the_ends() {
    use ringleader_judge::checkers::Latencies;
    let mut one = Latencies::default();
    one.record(6_000_639);
    let p = one.summary().unwrap();
    assert_eq!((p.min, p.p50, p.p99, p.max, p.mean), (6.000639, 6.000639, 6.000639, 6.000639, 6.000639));
    let mut many = Latencies::default();
    for x in [1_234_567u64, 2_000_001, 9_999_999, 10_000_001] {
        many.record(x);
    }
    let p = many.summary().unwrap();
    assert_eq!((p.min, p.max, p.count), (1.234567, 10.000001, 4));
    assert_eq!(p.mean, (1_234_567.0 + 2_000_001.0 + 9_999_999.0 + 10_000_001.0) / 4.0 / 1e6);
    for q in [p.p50, p.p90, p.p99] {
        assert!((p.min..=p.max).contains(&q), "{p:?}");
    }
}

/// A link that duplicates and loses messages never makes a run run away: every algorithm, five
/// nodes, 10 % duplication and 5 % loss for 500 ms stays within a few thousand messages. (Before
/// the token ring discarded copies of a pass it had already received, each duplicated TOKEN
/// became a token of its own and their number grew with every lap: 7,879 events by 200 ms.)
#[test]
fn duplication_and_loss_never_make_a_run_run_away() {
    for info in ringleader_registry::all() {
        let mut c = cfg(info.name, 5);
        c.dup = 0.1;
        c.loss = 0.05;
        c.latency = "lognormal:1ms,0.5".parse().unwrap();
        c.duration = 500 * MS;
        let r = go(&c);
        assert!(r.messages.sent < 5_000, "{}: {} messages in 500 ms", info.name, r.messages.sent);
    }
}

/// The token ring under duplication keeps one token per generation: the messages it sends
/// stay of the order of its workload (`sim --algo token-ring --nodes 5 --loss 0.05 --dup 0.1
/// --latency lognormal:1ms,0.5 --duration 2s`).
#[test]
fn a_duplicated_token_ring_run_ends_with_its_story() {
    let mut c = cfg("token-ring", 5);
    c.dup = 0.1;
    c.loss = 0.05;
    c.latency = "lognormal:1ms,0.5".parse().unwrap();
    c.duration = 2_000 * MS;
    let r = go(&c);
    assert!(r.messages.sent < 1_000, "{} messages", r.messages.sent);
}

/// A majority of the lock service's nodes crashed with no recovery planned: nothing can ever
/// commit again, so the run says that no progress is possible (since the last of those
/// crashes) instead of advising a longer run. With a recovery planned after the end, or a
/// minority down, it claims nothing.
#[test]
fn a_majority_down_for_good_says_no_progress_is_possible_and_nothing_less_does() {
    let base = || {
        let mut c = cfg("lock-service", 3);
        c.workload = Some(WorkloadKind::Saturated);
        c.entries = 50;
        c.duration = 2000 * MS;
        c.crash = vec!["2@0".parse().unwrap(), "3@300ms".parse().unwrap()];
        c
    };
    let r = go(&base());
    assert_eq!(r.stopped, "duration");
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert_eq!(status(&r, "no_starvation"), PropertyStatus::Undecided);
    let why = r.no_progress.as_deref().expect("no progress is proven");
    assert_eq!(
        why,
        "after 300.000 ms: 2 of 3 nodes crashed (ids 2, 3) with no recovery planned, and lock-service completes nothing without a majority (2) up"
    );
    let text = r.human(None);
    assert!(text.contains(&format!("verdict    NO PROGRESS POSSIBLE {why}; ")), "{text}");
    assert!(!text.contains("longer --duration"), "{text}");

    let mut later = base();
    later.recover = vec!["3@5s".parse().unwrap()];
    let r = go(&later);
    assert_eq!(status(&r, "no_starvation"), PropertyStatus::Undecided);
    assert_eq!(r.no_progress, None, "a recovery is planned after the end");
    assert!(r.human(None).contains("try a longer --duration"));

    let mut minority = base();
    minority.crash.pop();
    minority.duration = 100 * MS;
    let r = go(&minority);
    assert!(!r.undecided.is_empty(), "cut off early");
    assert_eq!(r.no_progress, None, "a majority is up");
}

/// Suzuki-Kasami's token dies with its crashed holder (a recovered process no longer has it),
/// and nothing regenerates it: with the holder crashed and its recovery planned after the end,
/// the run is cut off, but no message is in flight and no node holds the token, so it says that
/// no progress is possible. Raymond's recovered holder keeps its token: the same plan proves
/// nothing there, and the run advises a longer one.
#[test]
fn a_lost_token_with_no_regeneration_says_no_progress_is_possible_and_a_kept_one_does_not() {
    let plan = |algo: &str| {
        let mut c = cfg(algo, 3);
        c.workload = Some(WorkloadKind::Saturated);
        c.entries = 20;
        c.duration = 2000 * MS;
        c.crash = vec!["1@0".parse().unwrap()];
        c.recover = vec!["1@5s".parse().unwrap()];
        c
    };
    let r = go(&plan("suzuki-kasami"));
    assert_eq!(r.stopped, "duration");
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert_eq!(status(&r, "no_starvation"), PropertyStatus::Undecided);
    let why = r.no_progress.as_deref().expect("the lost token is proven");
    assert_eq!(
        why,
        "at 2000.000 ms: the token is held by no node and carried by no message in flight, and suzuki-kasami never regenerates it"
    );
    let text = r.human(None);
    assert!(text.contains(&format!("verdict    NO PROGRESS POSSIBLE {why}; ")), "{text}");
    assert!(!text.contains("longer --duration"), "{text}");

    let r = go(&plan("raymond"));
    assert_eq!(status(&r, "no_starvation"), PropertyStatus::Undecided);
    assert_eq!(r.no_progress, None, "the crashed holder keeps the token through its recovery");
    assert!(r.human(None).contains("try a longer --duration"));

    let r = go(&plan("token-ring"));
    assert_eq!(r.no_progress, None, "the token ring regenerates its token");
}
