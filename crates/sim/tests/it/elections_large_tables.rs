//! The measured tables of `docs/ELECTIONS-LARGE.md`, printed as Markdown. Ignored by default
//! (the 100,000-node rows take a while); regenerate with
//! `cargo test -p ringleader-sim --test it -- --ignored --nocapture --test-threads 1 elections_large_tables::`.

use ringleader_algorithms::election::superpeer_geometric::{SuperPeerGeometric, distance};
use ringleader_algorithms::election::yoyo::YoYo;
use ringleader_core::{Message, Process};
use ringleader_sim::scenario::{IdArrangement, Initiators};
use ringleader_sim::{RunConfig, RunOptions, Simulation, run};

fn log2_ceil(n: u64) -> u64 {
    n.next_power_of_two().trailing_zeros() as u64
}

#[test]
#[ignore]
fn table_hirschberg_sinclair() {
    println!("| N | ids | PROBE | REPLY | PROBE+REPLY | 8N(1+⌈log2 N⌉) | ratio | ELECTED |");
    println!("|---:|---|---:|---:|---:|---:|---:|---:|");
    for n in [8u32, 16, 100, 128, 1000, 1024, 10000] {
        for ids in [IdArrangement::Ascending, IdArrangement::Descending, IdArrangement::Random] {
            let mut cfg = RunConfig::new("hirschberg-sinclair", n).unwrap();
            cfg.ids = ids;
            cfg.initiators = Initiators::All;
            let r = run(&cfg, RunOptions::default()).unwrap().report;
            assert!(r.violations.is_empty());
            let k = &r.messages.by_kind;
            let bound = 8 * n as u64 * (1 + log2_ceil(n as u64));
            let e = k["probe"] + k["reply"];
            println!(
                "| {n} | {} | {} | {} | {e} | {bound} | {:.2} | {} |",
                ids.name(),
                k["probe"],
                k["reply"],
                e as f64 / bound as f64,
                k["elected"]
            );
        }
    }
}

#[test]
#[ignore]
fn table_yoyo() {
    println!(
        "| n | m | setup | yo | yes | no | YoYo proper | 2m+2m(⌈log2 n⌉+1) | iterations | ⌈log2 n⌉+1 | coordinator (2m−n+1) |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (n, m) in [(100u32, 200u64), (100, 400), (1000, 2000), (1000, 4000), (10000, 20000), (10000, 40000)] {
        let mut cfg = RunConfig::new("yoyo", n).unwrap();
        cfg.edges = Some(m);
        cfg.ids = IdArrangement::Random;
        let mut sim = Simulation::<YoYo>::new(&cfg, None).unwrap();
        sim.run(&mut |_| {});
        assert!(sim.violations().is_empty());
        let c = |kind: &str| {
            sim.counters().sent_by_kind
                [<YoYo as Process>::Msg::KINDS.iter().position(|k| *k == kind).unwrap()]
        };
        let leader = sim.uids().iter().position(|&u| u == 1).unwrap();
        let proper = c("setup") + c("yo") + c("yes") + c("no");
        println!(
            "| {n} | {m} | {} | {} | {} | {} | {proper} | {} | {} | {} | {} |",
            c("setup"),
            c("yo"),
            c("yes"),
            c("no"),
            2 * m + 2 * m * (log2_ceil(n as u64) + 1),
            sim.states()[leader].iterations(),
            log2_ceil(n as u64) + 1,
            c("coordinator")
        );
    }
}

#[test]
#[ignore]
fn table_superpeer_dht() {
    println!(
        "| N | target 2^k | super-peers | fraction | lookup | found | join | messages/node | rounds | messages/round | load max | load mean | distance mean (‰ block) |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for n in [1000u32, 10000, 100000] {
        let r = run(&RunConfig::new("superpeer-dht", n).unwrap(), RunOptions::default()).unwrap().report;
        assert!(r.violations.is_empty());
        let (k, o) = (&r.messages.by_kind, r.outcome.super_peers().unwrap());
        println!(
            "| {n} | {} | {} | {:.4} | {} | {} | {} | {:.2} | {} | {:.0} | {} | {:.1} | {:.0} |",
            o.target,
            o.super_peers,
            o.fraction,
            k["lookup"],
            k["found"],
            k["join"],
            r.messages.sent as f64 / n as f64,
            o.rounds,
            r.per_operation.messages_mean,
            o.load_max,
            o.load_mean,
            o.distance_mean
        );
    }
}

#[test]
#[ignore]
fn table_superpeer_geometric() {
    println!(
        "| N | tokens | rounds | converged (ms) | gossip | token | pull | join | resign | messages/round | messages/node | load max | load mean | distance mean / max (‰ s) | min spacing (s) | losses |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for n in [1000u32, 10000, 100000] {
        let cfg = RunConfig::new("superpeer-geometric", n).unwrap();
        let mut sim = Simulation::<SuperPeerGeometric>::new(&cfg, None).unwrap();
        sim.run(&mut |_| {});
        assert!(sim.violations().is_empty());
        let (_, fam) = sim.checker_report();
        let o = &fam.outcome.fields();
        let c = |kind: &str| {
            sim.counters().sent_by_kind
                [<SuperPeerGeometric as Process>::Msg::KINDS.iter().position(|k| *k == kind).unwrap()]
        };
        let target = o["target"].as_u64().unwrap();
        let sps: Vec<(u32, u32)> =
            sim.states().iter().filter(|s| s.is_super_peer()).map(|s| s.position()).collect();
        let mut min = f64::INFINITY;
        for (i, &a) in sps.iter().enumerate() {
            for &b in &sps[i + 1..] {
                min = min.min(distance(a, b));
            }
        }
        let sent = sim.counters().sent();
        let rounds = o["rounds"].as_u64().unwrap();
        println!(
            "| {n} | {target} | {rounds} | {} | {} | {} | {} | {} | {} | {:.0} | {:.1} | {} | {:.1} | {:.0} / {} | {:.2} | {} |",
            o["converged_ms"],
            c("gossip"),
            c("token"),
            c("pull"),
            c("join"),
            c("resign"),
            sent as f64 / rounds as f64,
            sent as f64 / n as f64,
            o["load_max"],
            o["load_mean"].as_f64().unwrap(),
            o["distance_mean"].as_f64().unwrap(),
            o["distance_max"],
            min * (target as f64).sqrt(),
            o["super_peer_losses"]
        );
    }
}
