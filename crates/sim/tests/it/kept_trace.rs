//! A page's part of a long run: with `keep_at_most`, the run's beginning, the faults and
//! violations of its middle and its end, each record exactly as the whole trace has it, and the
//! gaps between them counted.

use ringleader_core::trace::{Gap, RecordKind};
use ringleader_sim::notation::Pause;
use ringleader_sim::scenario::WorkloadKind;
use ringleader_sim::{RunConfig, RunOptions, RunResult, run};

/// The central-timeout story: id 2 paused while it holds, a second holder granted (a violation).
fn paused_holder() -> RunConfig {
    let mut cfg = RunConfig::new("central-timeout", 3).unwrap();
    cfg.params.insert("timeout".into(), "10ms".into());
    cfg.workload = Some(WorkloadKind::Saturated);
    cfg.entries = 2;
    cfg.requesters = Some(vec![2, 3]);
    cfg.hold = 5_000_000;
    cfg.pause = vec![Pause { uid: 2, from: 2_500_000, to: 100_000_000 }];
    cfg.expect.insert("safety".into());
    cfg
}

fn traced(cfg: &RunConfig, keep_at_most: Option<usize>, threads: Option<usize>) -> RunResult {
    run(cfg, RunOptions { keep_trace: true, keep_at_most, threads, ..RunOptions::default() }).unwrap()
}

#[test]
fn a_bounded_page_keeps_the_beginning_the_faults_and_violations_and_the_end_exactly() {
    let cfg = paused_holder();
    let whole = traced(&cfg, None, None);
    let total = whole.records.len();
    assert!(whole.gaps.is_empty());
    let middle = |k: RecordKind| whole.records[4..total - 3].iter().filter(|r| r.kind == k).count();
    assert_eq!(
        (middle(RecordKind::Pause), middle(RecordKind::Violation)),
        (1, 1),
        "the story's pause and violation are in the middle"
    );

    // A bound of 8: the first 4 records, up to 2 faults or violations of the middle, the end.
    let part = traced(&cfg, Some(8), None);
    assert_eq!(part.total_records, total as u64);
    assert_eq!(part.records.len(), 8);
    assert_eq!(&part.records[..4], &whole.records[..4]);
    let kinds: Vec<RecordKind> = part.records[4..6].iter().map(|r| r.kind).collect();
    assert!(kinds.iter().all(|k| k.is_fault_or_violation()), "{kinds:?}");
    assert_eq!(&part.records[6..], &whole.records[total - 2..], "the end, stamps and all");
    // Each kept record is the whole trace's record at the place the gaps say.
    let mut seq = 0;
    let mut gaps = part.gaps.iter().peekable();
    for (at, rec) in part.records.iter().enumerate() {
        if let Some(Gap { left_out, .. }) = gaps.next_if(|g| g.at == at) {
            seq += *left_out as usize;
        }
        assert_eq!(rec, &whole.records[seq], "record {at} is the run's record {seq}");
        seq += 1;
    }
    assert_eq!(seq, total, "the gaps and the kept records add up to the run");
    assert_eq!(part.report.properties, whole.report.properties, "the report is the whole run's");
}

#[test]
fn the_windowed_engine_keeps_the_same_part_on_any_number_of_threads() {
    let mut cfg = RunConfig::new("ricart-agrawala", 4).unwrap();
    cfg.workload = Some(WorkloadKind::Saturated);
    cfg.entries = 3;
    let whole = traced(&cfg, None, Some(1));
    let one = traced(&cfg, Some(10), Some(1));
    let two = traced(&cfg, Some(10), Some(2));
    assert_eq!(one.records.len(), 10);
    assert_eq!(
        one.gaps,
        [Gap { at: 5, left_out: whole.records.len() as u64 - 10 }],
        "no faults: the first 5 and the last 5"
    );
    assert_eq!(&one.records[5..], &whole.records[whole.records.len() - 5..]);
    assert_eq!((&one.records, &one.gaps), (&two.records, &two.gaps));
}

#[test]
fn a_run_that_fits_is_kept_whole() {
    let cfg = paused_holder();
    let whole = traced(&cfg, None, None);
    let part = traced(&cfg, Some(whole.records.len()), None);
    assert_eq!(part.records, whole.records);
    assert!(part.gaps.is_empty());
}
