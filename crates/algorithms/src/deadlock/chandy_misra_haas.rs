//! # Chandy-Misra-Haas: edge-chasing deadlock detection, AND model (1983)
//!
//! *Chandy, Misra and Haas, "Distributed deadlock detection", ACM TOCS 1(2), 1983;
//! Tanenbaum & van Steen, Distributed Systems (distributed deadlock detection); Coulouris et al.,
//! Distributed Systems: Concepts and Design (edge chasing).*
//!
//! ## The idea
//! A process that must wait for resources held by others is *blocked*; the global wait-for
//! graph (WFG) has an edge P_j → P_k while P_j waits for a resource P_k holds. In the AND model a
//! blocked process needs *all* the resources it asked for, so a cycle in the WFG is a deadlock.
//! Nobody sees the whole graph, so a blocked process chases its own edges: it sends a special
//! *probe* along them, blocked processes pass it on along theirs, and if the probe ever comes
//! back to the process that started it, that process sits on a cycle.
//!
//! ## The rules — probe(i, j, k): initiated for P_i, sent by P_j, to P_k
//! 1. When P_i becomes blocked (request `WaitFor{holders}`), it sends probe(i, i, k) to every
//!    holder P_k it waits for.
//! 2. When P_k receives probe(i, j, k):
//!    - k = i and P_i is still blocked in the same wait: **deadlock** — P_i reports
//!      `DeadlockDetected{cycle}`;
//!    - otherwise, if P_k is blocked and has not yet forwarded this initiation of P_i
//!      (`dependent_k(i)` is false): mark it and send probe(i, k, m) to every P_m it waits for;
//!    - otherwise discard it (P_k is running and will release what P_j waits for).
//! 3. Resolution (`resolve = true`, the default): exactly one *victim* per cycle, the process
//!    with the highest id on it. The detector handles it itself if it is the victim, otherwise it
//!    sends ABORT(cycle) to the victim; the victim accepts only if it is still blocked in the very
//!    wait the probe went through, and then **it** reports `DeadlockDetected{cycle}` and aborts.
//!    With `confirm = true` it first sends CONFIRM once around the cycle — each process passes it
//!    on only if it is still in the wait the probe recorded and still waits for its successor —
//!    and reports and aborts when CONFIRM comes back.
//!    Two probes can come back for one cycle (a probe started before the cycle closed may cross
//!    the closing edge after it did); letting the victim report makes that one report and one
//!    victim, where reporting at every returning initiator would report a cycle the first
//!    victim has already broken. An aborted process withdraws its waits and releases what it
//!    holds (the workload restarts it later). With `resolve = false` the initiator reports, as
//!    in the paper, and nothing is broken.
//!
//! ```text
//!   running ──WaitFor{holders} / probe(i,i,k) to each holder──▶ blocked
//!   blocked ──StopWaiting for the last holder──▶ running
//!   blocked ──own probe returns──▶ DeadlockDetected ──victim: Aborted──▶ running
//! ```
//!
//! Two details the textbook presentations leave open, made explicit here:
//! - **Initiations are numbered.** Each probe carries the path it took, as (process, wait
//!   number) pairs; `path[0]` is the initiator and the number of its wait. "Has not yet
//!   forwarded" is per initiation (`seen[i]` holds the latest wait number of P_i forwarded), so a
//!   new wait of P_i is chased again while stale probes of an old wait are dropped.
//! - **The path names the cycle**, so the report lists it and the victim can be chosen.
//!
//! ## Costs
//! Every process forwards a given initiation at most once, along each of its out-edges once:
//! **an initiation sends at most e probes, e the number of WFG edges reachable from the
//! initiator**. A cycle of length L whose last edge closes it costs exactly L probes for the
//! detection made by the closer (measured in `crates/sim/tests/it/deadlock.rs` and
//! `docs/DEADLOCK.md`); resolving it adds one ABORT when the detector is not the victim (and L
//! CONFIRM with `confirm = true`).
//!
//! ## Assumptions
//! Reliable channels (order does not matter); no crashes; and the textbook's side condition —
//! P_k forwards probe(i, j, k) only while it still holds what P_j waits for. Nodes here do not
//! track who waits for them, so the simulator's deadlock workload guarantees it instead: a
//! process that releases stays running for longer than the delay bound before it can block
//! again, so a probe sent along an edge that has since been granted finds it running and dies.
//!
//! ## Known flaws
//! Sound only while requests are never withdrawn. If a process on the cycle aborts for another
//! reason (here: `give_up = T`, a process that waited T gives up, the "timeout" reflex)
//! while a probe is in flight, the probe still comes back and reports a **phantom deadlock**: a
//! cycle that no longer exists. `scenarios/cmh-phantom-deadlock.toml` shows it; the deadlock
//! checker's `soundness` property catches it. Resolution withdraws requests too: with
//! overlapping cycles, the victim of one cycle also breaks another whose victim is already
//! chosen; its report is a phantom and the second abort is needless (the `single_victim`
//! property counts those). The optional CONFIRM round was meant to catch them (a process that
//! aborted has a new wait number, or none); measured, it does not pay: it delays every abort
//! by a round, more detections overlap, and the phantoms stay as frequent while messages grow
//! by a quarter (docs/DEADLOCK.md). It is off by default.

use ringleader_core::{Context, Event, Message, NodeId, Outbox, Process, Request, Time};
use serde::{Deserialize, Serialize};

use crate::{Algorithm, Family, ParamError, Setup};

/// Chandy-Misra-Haas messages.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// probe(i, j, k): initiated for `initiator`, sent by `sender`, to `receiver`.
    Probe {
        /// P_i, whose wait is being chased.
        initiator: NodeId,
        /// P_j, the blocked process passing it on.
        sender: NodeId,
        /// P_k, a process P_j waits for.
        receiver: NodeId,
        /// The processes the probe went through, with the number of the wait each was in;
        /// `path[0]` is the initiator.
        path: Vec<(NodeId, u64)>,
    },
    /// ABORT: the receiver is the victim of the detected cycle `path` (the probe's path,
    /// initiator first, with the wait number of each process).
    Abort {
        /// The cycle as the probe found it.
        path: Vec<(NodeId, u64)>,
    },
    /// CONFIRM: the victim checks, before aborting, that the cycle is still there: `path`
    /// starts at the victim, `hop` is the receiver's index in it (`path.len()`: back home).
    Confirm {
        /// The cycle, victim first, with the wait number of each process.
        path: Vec<(NodeId, u64)>,
        /// Index of the receiver in `path`.
        hop: u32,
    },
}

impl Message for Msg {
    const KINDS: &'static [&'static str] = &["probe", "abort", "confirm"];
    fn kind_index(&self) -> usize {
        match self {
            Msg::Probe { .. } => 0,
            Msg::Abort { .. } => 1,
            Msg::Confirm { .. } => 2,
        }
    }
}

/// Chandy-Misra-Haas timers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
pub enum Timer {
    /// `give_up` only: wait number `wait` has lasted `give_up`; withdraw it.
    GiveUp {
        /// The wait the timer watches.
        wait: u64,
    },
}

/// Validated parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Config {
    /// Abort one victim per detected cycle (`resolve`, default true); false only reports.
    pub resolve: bool,
    /// Withdraw a wait after this long (`give_up`, default 0 = never): the phantom-maker.
    pub give_up: Time,
    /// Before aborting, the victim sends CONFIRM once around the cycle (`confirm`, default
    /// false): every process on it must still be in the same wait.
    pub confirm: bool,
}

/// A process of the Chandy-Misra-Haas detector.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct ChandyMisraHaas {
    me: NodeId,
    config_resolve: bool,
    confirm: bool,
    give_up: Time,
    /// The holders this process waits for (non-empty = blocked).
    waiting: Vec<NodeId>,
    /// Waits so far; the current wait's number while blocked.
    wait: u64,
    /// Per initiator: the latest wait number of it this process forwarded (`dependent_k(i)`).
    seen: Vec<u64>,
}

type Out = Outbox<Msg, Timer>;

impl ChandyMisraHaas {
    fn blocked(&self) -> bool {
        !self.waiting.is_empty()
    }

    /// Withdraws the current wait: the process aborts as a victim (`Aborted`) or gives up
    /// after `give_up` (`GaveUp`: a timeout, not a detector's choice).
    fn abort(&mut self, out: &mut Out, event: Event) {
        if self.give_up > 0 {
            out.cancel_timer(Timer::GiveUp { wait: self.wait });
        }
        self.waiting.clear();
        out.emit(event);
    }

    fn send_probes(&self, initiator: NodeId, path: &[(NodeId, u64)], out: &mut Out) {
        for &m in &self.waiting {
            let mut p = Vec::with_capacity(path.len() + 1);
            p.extend_from_slice(path);
            if initiator != self.me {
                p.push((self.me, self.wait));
            }
            out.send(m, Msg::Probe { initiator, sender: self.me, receiver: m, path: p });
        }
    }

    /// Our own probe came back. Without resolution, report. With it, pick the victim (the
    /// highest uid on the cycle) and let it report and abort.
    fn detected(&mut self, cx: &Context, path: Vec<(NodeId, u64)>, out: &mut Out) {
        let cycle: Vec<NodeId> = path.iter().map(|&(n, _)| n).collect();
        if !self.config_resolve {
            out.emit(Event::DeadlockDetected { cycle });
            return;
        }
        let &(victim, _) = path.iter().max_by_key(|&&(n, _)| cx.uid_of(n)).expect("non-empty path");
        if victim == self.me {
            self.chosen(path, out);
        } else {
            out.send(victim, Msg::Abort { path });
        }
    }

    /// This process was chosen as the victim of the cycle `path`: if it is still in the wait
    /// the probe went through, confirm the cycle (or, without confirmation, report and abort).
    fn chosen(&mut self, mut path: Vec<(NodeId, u64)>, out: &mut Out) {
        let Some(at) = path.iter().position(|&(n, _)| n == self.me) else { return };
        if !self.blocked() || path[at].1 != self.wait {
            return;
        }
        path.rotate_left(at);
        if self.confirm && path.len() > 1 {
            if self.waiting.contains(&path[1].0) {
                out.send(path[1].0, Msg::Confirm { path, hop: 1 });
            }
        } else {
            self.victim(path, out);
        }
    }

    /// This process is the victim of the cycle `path`: report it and abort.
    fn victim(&mut self, path: Vec<(NodeId, u64)>, out: &mut Out) {
        out.emit(Event::DeadlockDetected { cycle: path.iter().map(|&(n, _)| n).collect() });
        self.abort(out, Event::Aborted);
    }
}

impl Process for ChandyMisraHaas {
    type Msg = Msg;
    type Timer = Timer;

    fn on_message(&mut self, cx: &Context, _from: NodeId, msg: Msg, out: &mut Out) {
        match msg {
            Msg::Probe { initiator, path, .. } => {
                let Some(&(_, initiation)) = path.first() else { return };
                if !self.blocked() {
                    return;
                }
                if initiator == self.me {
                    if initiation == self.wait {
                        self.detected(cx, path, out);
                    }
                } else if self.seen[initiator as usize] < initiation {
                    self.seen[initiator as usize] = initiation;
                    self.send_probes(initiator, &path, out);
                }
            }
            Msg::Abort { path } => self.chosen(path, out),
            Msg::Confirm { path, hop } => {
                let len = path.len();
                let hop = hop as usize;
                if hop >= len {
                    // Back at the victim: the whole cycle was still there.
                    if path[0].0 == self.me && self.blocked() && path[0].1 == self.wait {
                        self.victim(path, out);
                    }
                } else if path[hop].0 == self.me
                    && self.blocked()
                    && path[hop].1 == self.wait
                    && self.waiting.contains(&path[(hop + 1) % len].0)
                {
                    let next = path[(hop + 1) % len].0;
                    out.send(next, Msg::Confirm { path, hop: hop as u32 + 1 });
                }
            }
        }
    }

    fn on_timer(&mut self, _cx: &Context, timer: Timer, out: &mut Out) {
        let Timer::GiveUp { wait } = timer;
        if self.blocked() && wait == self.wait {
            self.abort(out, Event::GaveUp);
        }
    }

    fn on_request(&mut self, _cx: &Context, req: Request, out: &mut Out) {
        match req {
            Request::WaitFor { holders } if !self.blocked() => {
                let mut holders: Vec<NodeId> = holders.into_iter().filter(|&h| h != self.me).collect();
                holders.sort_unstable();
                holders.dedup();
                if holders.is_empty() {
                    return;
                }
                self.wait += 1;
                self.waiting = holders;
                if self.give_up > 0 {
                    out.set_timer(Timer::GiveUp { wait: self.wait }, self.give_up);
                }
                self.send_probes(self.me, &[(self.me, self.wait)], out);
            }
            Request::StopWaiting { holder } => {
                if let Some(i) = self.waiting.iter().position(|&h| h == holder) {
                    self.waiting.remove(i);
                    if self.waiting.is_empty() && self.give_up > 0 {
                        out.cancel_timer(Timer::GiveUp { wait: self.wait });
                    }
                }
            }
            _ => {}
        }
    }

    /// A recovered process has lost its waits (its transaction died with it); wait numbers are
    /// kept on stable storage so that old probes stay recognisable.
    fn on_recover(&mut self, _cx: &Context, _out: &mut Out) {
        self.waiting.clear();
    }
}

impl Algorithm for ChandyMisraHaas {
    const NAME: &'static str = "chandy-misra-haas";
    const FAMILY: Family = Family::Deadlock;
    const SUMMARY: &'static str =
        "edge-chasing probe(i, j, k) along the wait-for graph; a returning probe means deadlock";
    /// One resource per request: with two, cycles overlap, and resolving one cycle's victim can
    /// break another whose victim is already told to abort — a phantom report (docs/DEADLOCK.md),
    /// on 11 of 400 seeds at 6 nodes. With one, no two cycles share a process, and 1,600 seeded
    /// runs (3, 4, 6 and 8 nodes) report no phantom; the phantom is the default story's, declared.
    const WORKLOAD_HOLDERS: u32 = 1;
    /// Probe numbers per initiator at every node: ≈ 16 bytes per pair of nodes.
    const FOOTPRINT: crate::Footprint = crate::Footprint::quadratic(16);
    type Config = Config;

    fn configure(setup: &Setup) -> Result<Config, ParamError> {
        Ok(Config {
            resolve: setup.params.get("resolve", true)?,
            give_up: setup.params.duration("give_up", 0)?,
            confirm: setup.params.get("confirm", false)?,
        })
    }

    fn new(me: NodeId, config: &Config, setup: &Setup) -> Self {
        ChandyMisraHaas {
            me,
            config_resolve: config.resolve,
            confirm: config.confirm,
            give_up: config.give_up,
            waiting: Vec::new(),
            wait: 0,
            seen: vec![0; setup.uids.len()],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestSystem;
    use ringleader_core::harness::Harness;

    fn node(me: NodeId, params: &[(&str, &str)]) -> Harness<ChandyMisraHaas> {
        params.iter().fold(TestSystem::new(3), |w, (k, v)| w.param(k, v)).node(me)
    }

    /// `me` of three, blocked (first wait) on `holders`.
    fn blocked(me: NodeId, holders: &[NodeId], params: &[(&str, &str)]) -> Harness<ChandyMisraHaas> {
        let mut p = node(me, params);
        p.request(Request::WaitFor { holders: holders.to_vec() });
        p
    }

    fn probe(initiator: NodeId, sender: NodeId, receiver: NodeId, path: &[(NodeId, u64)]) -> Msg {
        Msg::Probe { initiator, sender, receiver, path: path.to_vec() }
    }

    const CYCLE: [(NodeId, u64); 3] = [(0, 1), (1, 1), (2, 1)];

    /// Rule 1: a process that blocks sends probe(i, i, k) to every holder it waits for.
    #[test]
    fn rule_1_blocking_sends_a_probe_to_every_holder() {
        let mut p = node(0, &[]);
        let step = p.request(Request::WaitFor { holders: vec![2, 1, 0, 1] });
        assert_eq!(step.sent(), vec![(1, probe(0, 0, 1, &[(0, 1)])), (2, probe(0, 0, 2, &[(0, 1)]))]);
    }

    /// Rule 2: a blocked process forwards an initiation once along its own edges; a running one
    /// discards it; the initiator's own probe back, in the same wait, is a deadlock.
    #[test]
    fn rule_2_probes_are_forwarded_once_discarded_when_running_and_detect_on_return() {
        let mut p = blocked(1, &[2], &[]);
        let step = p.deliver(0, probe(0, 0, 1, &[(0, 1)]));
        assert_eq!(step.sent(), vec![(2, probe(0, 1, 2, &[(0, 1), (1, 1)]))]);
        assert!(p.deliver(0, probe(0, 0, 1, &[(0, 1)])).is_empty(), "already forwarded");
        assert!(node(2, &[]).deliver(1, probe(0, 1, 2, &[(0, 1), (1, 1)])).is_empty(), "running");

        let mut i = blocked(0, &[1], &[("resolve", "false")]);
        let step = i.deliver(2, probe(0, 2, 0, &CYCLE));
        assert_eq!(step.emitted(), vec![Event::DeadlockDetected { cycle: vec![0, 1, 2] }]);
        assert!(step.sent().is_empty());
        assert!(i.deliver(2, probe(0, 2, 0, &[(0, 7), (1, 1), (2, 1)])).is_empty(), "a stale wait");
    }

    /// Rule 3: one victim per cycle, the highest id: the detector sends it ABORT; the victim,
    /// still in that wait, reports and aborts (with `confirm`, after a CONFIRM round).
    #[test]
    fn rule_3_the_highest_id_on_the_cycle_is_the_one_victim() {
        let mut i = blocked(0, &[1], &[]);
        let step = i.deliver(2, probe(0, 2, 0, &CYCLE));
        assert_eq!(step.sent(), vec![(2, Msg::Abort { path: CYCLE.to_vec() })]);
        assert!(step.emitted().is_empty(), "the victim reports");

        let mut v = blocked(2, &[0], &[]);
        let step = v.deliver(0, Msg::Abort { path: CYCLE.to_vec() });
        assert_eq!(step.emitted(), vec![Event::DeadlockDetected { cycle: vec![2, 0, 1] }, Event::Aborted]);
        assert!(v.deliver(0, Msg::Abort { path: CYCLE.to_vec() }).is_empty(), "no longer blocked");

        let mut c = blocked(2, &[0], &[("confirm", "true")]);
        let rotated = vec![(2, 1), (0, 1), (1, 1)];
        assert_eq!(
            c.deliver(0, Msg::Abort { path: CYCLE.to_vec() }).sent(),
            vec![(0, Msg::Confirm { path: rotated.clone(), hop: 1 })]
        );
        let step = c.deliver(1, Msg::Confirm { path: rotated, hop: 3 });
        assert_eq!(step.emitted(), vec![Event::DeadlockDetected { cycle: vec![2, 0, 1] }, Event::Aborted]);
    }
}
