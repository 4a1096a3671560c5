//! `Algorithm::admits` never refuses an honest message: a real node refuses what no correct
//! sender could have sent, so in the simulator, whose nodes do not lie, every delivered message
//! must be admitted — under loss, duplication, reordering, crashes and recoveries alike.
//!
//! The simulator never asks `admits`; here each algorithm runs wrapped in [`Checked`], which
//! asks it of every message delivered, on the receiver's state just before delivery (as a real
//! node does), and keeps the refusals and the number of messages checked per kind. The sweep
//! then asserts that nothing was refused and that every kind of message was checked.

use ringleader_algorithms::mutex::{
    lamport::Lamport, maekawa::Maekawa, quorum::Quorum, raymond::Raymond, ricart_agrawala::RicartAgrawala,
    roucairol_carvalho::RoucairolCarvalho, suzuki_kasami::SuzukiKasami, token_ring::TokenRing,
};
use ringleader_algorithms::{Algorithm, Family, LeaderRule, ParamError, PlainAlgorithm, Setup, TopologyKind};
use ringleader_core::{Context, Message, NodeId, Outbox, Process, Request, Uid};
use ringleader_sim::notation::Latency;
use ringleader_sim::scenario::WorkloadKind;
use ringleader_sim::{RunConfig, Simulation};
use serde::{Deserialize, Serialize};

/// Algorithm `A`, asking `A::admits` of every message before `A` handles it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
struct Checked<A> {
    inner: A,
    /// Messages checked, by kind index.
    checked: Vec<u64>,
    /// Every refusal: sender, message and reason.
    refused: Vec<String>,
}

impl<A: PlainAlgorithm> Process for Checked<A> {
    type Msg = A::Msg;
    type Timer = A::Timer;

    fn on_start(&mut self, cx: &Context, out: &mut Outbox<A::Msg, A::Timer>) {
        self.inner.on_start(cx, out);
    }

    fn on_message(&mut self, cx: &Context, from: NodeId, msg: A::Msg, out: &mut Outbox<A::Msg, A::Timer>) {
        self.checked[msg.kind_index()] += 1;
        if let Err(why) = self.inner.admits(from, &msg) {
            self.refused.push(format!("{} refused {msg:?} from {from}: {why}", cx.me));
        }
        self.inner.on_message(cx, from, msg, out);
    }

    fn on_timer(&mut self, cx: &Context, timer: A::Timer, out: &mut Outbox<A::Msg, A::Timer>) {
        self.inner.on_timer(cx, timer, out);
    }

    fn on_request(&mut self, cx: &Context, req: Request, out: &mut Outbox<A::Msg, A::Timer>) {
        self.inner.on_request(cx, req, out);
    }

    fn on_recover(&mut self, cx: &Context, out: &mut Outbox<A::Msg, A::Timer>) {
        self.inner.on_recover(cx, out);
    }

    fn leader(&self) -> Option<Uid> {
        self.inner.leader()
    }

    fn in_critical_section(&self) -> bool {
        self.inner.in_critical_section()
    }
}

impl<A: PlainAlgorithm> Algorithm for Checked<A> {
    const NAME: &'static str = A::NAME;
    const FAMILY: Family = A::FAMILY;
    const SUMMARY: &'static str = A::SUMMARY;
    const TOPOLOGY: TopologyKind = A::TOPOLOGY;
    const LEADER_RULE: LeaderRule = A::LEADER_RULE;
    const PREVENTION: bool = A::PREVENTION;
    type Config = A::Config;

    fn admits(&self, from: NodeId, msg: &A::Msg) -> Result<(), &'static str> {
        self.inner.admits(from, msg)
    }

    fn configure(setup: &Setup) -> Result<A::Config, ParamError> {
        A::configure(setup)
    }

    fn new(me: NodeId, config: &A::Config, setup: &Setup) -> Self {
        Checked {
            inner: A::new(me, config, setup),
            checked: vec![0; A::Msg::KINDS.len()],
            refused: Vec::new(),
        }
    }

    fn final_outcome(states: &[Self], live: &[bool]) -> Vec<(&'static str, f64)> {
        let inner: Vec<A> = states.iter().map(|s| s.inner.clone()).collect();
        A::final_outcome(&inner, live)
    }
}

/// A small deterministic generator for the sweep plans (splitmix64).
struct Plan(u64);

impl Plan {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n
    }
}

/// Runs per algorithm.
const RUNS: u64 = 60;

/// One run of the sweep: 3–6 nodes, a heavy workload, random latencies on non-FIFO links;
/// two runs in three lose and duplicate messages, and two in three crash a node and recover it.
fn config(algo: &str, plan: &mut Plan, seed: u64) -> RunConfig {
    let nodes = 3 + plan.below(4) as u32;
    let mut cfg = RunConfig::new(algo, nodes).unwrap();
    cfg.seed = seed;
    cfg.workload = Some(if plan.below(2) == 0 { WorkloadKind::Saturated } else { WorkloadKind::Poisson });
    cfg.entries = 3 + plan.below(6);
    cfg.hold = 100_000 + plan.below(2_000_000);
    cfg.rate = 200.0;
    let lo = 50_000 + plan.below(500_000);
    cfg.latency = Latency::Uniform(lo, lo + plan.below(3_000_000));
    cfg.max_delay = cfg.latency.bound();
    cfg.fifo = false;
    if plan.below(3) != 0 {
        cfg.loss = 0.05;
        cfg.dup = 0.05;
    }
    if plan.below(3) != 0 {
        let victim = 1 + plan.below(u64::from(nodes));
        let at = plan.below(15_000);
        cfg.crash = vec![format!("{victim}@{at}us").parse().unwrap()];
        cfg.recover = vec![format!("{victim}@{}us", at + 1 + plan.below(20_000)).parse().unwrap()];
    }
    cfg
}

/// Runs the sweep for `A`; asserts nothing was refused and every message kind was checked.
/// Returns the messages checked per kind.
fn sweep<A: PlainAlgorithm>() -> Vec<u64> {
    let mut plan = Plan(0xAD_517);
    let mut checked = vec![0u64; A::Msg::KINDS.len()];
    for seed in 0..RUNS {
        let cfg = config(A::NAME, &mut plan, seed);
        let mut sim = Simulation::<Checked<A>>::new(&cfg, None).unwrap();
        sim.run(&mut |_| {});
        for s in sim.states() {
            assert!(s.refused.is_empty(), "{}: {}", cfg.repro(), s.refused.join("; "));
            checked.iter_mut().zip(&s.checked).for_each(|(c, k)| *c += k);
        }
    }
    for (kind, n) in A::Msg::KINDS.iter().zip(&checked) {
        assert!(*n > 0, "{}: no {kind} was delivered in {RUNS} runs", A::NAME);
    }
    eprintln!("{}: {RUNS} runs, checked {:?} of kinds {:?}", A::NAME, checked, A::Msg::KINDS);
    checked
}

#[test]
fn token_ring_admits_every_honest_message() {
    sweep::<TokenRing>();
}

#[test]
fn suzuki_kasami_admits_every_honest_message() {
    sweep::<SuzukiKasami>();
}

#[test]
fn raymond_admits_every_honest_message() {
    sweep::<Raymond>();
}

#[test]
fn ricart_agrawala_admits_every_honest_message() {
    sweep::<RicartAgrawala>();
}

#[test]
fn lamport_admits_every_honest_message() {
    sweep::<Lamport>();
}

#[test]
fn roucairol_carvalho_admits_every_honest_message() {
    sweep::<RoucairolCarvalho>();
}

#[test]
fn maekawa_admits_every_honest_message() {
    sweep::<Maekawa>();
}

#[test]
fn quorum_admits_every_honest_message() {
    sweep::<Quorum>();
}

/// The check can fail: a forged message delivered by hand is counted and refused.
#[test]
fn a_forged_message_is_recorded_as_refused() {
    use ringleader_algorithms::mutex::suzuki_kasami::Msg;
    let uids = [1, 2, 3];
    let topology = ringleader_core::Topology::Complete { n: 3 };
    let params = ringleader_algorithms::Params::default();
    let setup = Setup { uids: &uids, topology: &topology, params: &params, max_delay: 1_000_000, seed: 1 };
    <Checked<SuzukiKasami>>::configure(&setup).unwrap();
    let mut p = <Checked<SuzukiKasami>>::new(1, &(), &setup);
    let cx = Context { me: 1, uids: &uids, topology: &topology, now: 0, random: 0 };
    p.on_message(&cx, 0, Msg::Request { sn: 0 }, &mut Outbox::new());
    assert_eq!(p.checked, vec![1, 0]);
    assert_eq!(
        p.refused,
        vec!["1 refused Request { sn: 0 } from 0: a REQUEST numbered 0: request numbers start at 1"]
    );
}
