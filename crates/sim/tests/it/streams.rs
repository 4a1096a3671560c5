//! One random stream per purpose: what one node draws does not move another node's draws.

use ringleader_core::trace::RecordKind;
use ringleader_sim::scenario::RunConfig;
use ringleader_sim::{RunOptions, run};

const MS: u64 = 1_000_000;

/// Node at position 1's sends to the nodes that stay up: (send time, destination, delivery time
/// or `None` when lost), in order.
fn sends_of_position_1(crash_4: bool) -> Vec<(u64, u32, Option<u64>)> {
    let mut cfg = RunConfig::new("heartbeat", 5).unwrap();
    cfg.seed = 11;
    cfg.latency = "uniform:1ms..9ms".parse().unwrap();
    cfg.loss = 0.05;
    cfg.duration = 500 * MS;
    if crash_4 {
        cfg.crash = vec!["4@20ms".parse().unwrap()];
    }
    let records = run(&cfg, RunOptions { keep_trace: true, ..Default::default() }).unwrap().records;
    let fate = |id: u64| {
        records.iter().find(|r| r.msg_id == Some(id) && r.kind != RecordKind::Send).map(|r| match r.kind {
            RecordKind::Deliver => Some(r.time_ns),
            _ => None,
        })
    };
    records
        .iter()
        .filter(|r| r.kind == RecordKind::Send && r.node == Some(1) && r.peer != Some(3))
        .map(|r| (r.time_ns, r.peer.unwrap(), fate(r.msg_id.unwrap()).flatten()))
        .collect()
}

/// Crashing id 4 at 20 ms removes every draw it would have made afterwards (its handler calls,
/// its heartbeats' latencies and losses). With one stream for the whole run every later draw of
/// every node would shift; with a stream per node and purpose, node 1's messages to the nodes
/// that stay up leave at the same times, arrive at the same times and are lost alike.
#[test]
fn one_nodes_draws_leave_another_nodes_latencies_and_losses_alone() {
    let (alone, beside_a_crash) = (sends_of_position_1(false), sends_of_position_1(true));
    assert!(alone.len() > 100, "{} sends: the run tests too little", alone.len());
    assert!(alone.iter().any(|s| s.2.is_none()), "no loss: the run does not test the loss draws");
    assert_eq!(alone, beside_a_crash);
}
