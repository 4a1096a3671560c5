//! Chang-Roberts election on a unidirectional ring, in NeXosim.
//!
//! The peer of `ringleader bench --algo chang-roberts --latency uniform:1ms..2ms`: `n` nodes
//! with the ids 1..=n in a seeded random order, every node initiating at time 0, each message
//! delayed independently by a uniform draw in [1 ms, 2 ms] (nanoseconds, as ringleader draws
//! it), no FIFO order per link. Prints one JSON object: messages delivered, the leader, CPU
//! seconds of the run (building the bench and simulating) and peak resident memory.
//!
//! Usage: `nexosim-ring NODES [SEED]`.

use std::process::ExitCode;
use std::time::Duration;

use nexosim::model::{Context, Model, schedulable};
use nexosim::ports::{EventSinkReader, EventSource, Output, SinkState, event_queue};
use nexosim::simulation::{Mailbox, SimInit};
use nexosim::time::MonotonicTime;
use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};

/// Link delay bounds in nanoseconds: U[1 ms, 2 ms], as `uniform:1ms..2ms` in ringleader.
const MIN_DELAY_NS: u64 = 1_000_000;
const MAX_DELAY_NS: u64 = 2_000_000;

/// Chang-Roberts messages.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
enum Msg {
    /// ELECTION(j): the candidate j travels around the ring.
    Election(u32),
    /// ELECTED(j): j is the leader; travels once around, stops at j.
    Elected(u32),
}

/// What a node reports once the simulation is over.
#[derive(Clone, Copy, Debug)]
struct Report {
    delivered: u64,
    leader: Option<u32>,
}

/// One process on the ring: Chang-Roberts' state, the link to its successor and a generator
/// for the delays of the messages it sends.
#[derive(Serialize, Deserialize)]
struct Node {
    uid: u32,
    participant: bool,
    leader: Option<u32>,
    delivered: u64,
    rng: Xoshiro256PlusPlus,
    /// The link to the successor on the ring.
    to_successor: Output<Msg>,
    /// Where the node reports at the end.
    #[serde(skip)]
    report: Output<Report>,
}

#[Model]
impl Node {
    fn new(uid: u32, seed: u64) -> Self {
        Node {
            uid,
            participant: false,
            leader: None,
            delivered: 0,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            to_successor: Output::default(),
            report: Output::default(),
        }
    }

    /// Every node initiates at time 0.
    #[nexosim(init)]
    async fn init(&mut self, cx: &Context<Self>) {
        self.participant = true;
        self.send(Msg::Election(self.uid), cx);
    }

    /// Sends `msg` to the successor after a random link delay: the node schedules its own
    /// `transmit` input at the delivery time (NeXosim's idiom for a delay; an output port
    /// delivers at once).
    fn send(&mut self, msg: Msg, cx: &Context<Self>) {
        let delay = Duration::from_nanos(self.rng.random_range(MIN_DELAY_NS..=MAX_DELAY_NS));
        cx.schedule_event(delay, schedulable!(Self::transmit), msg)
            .expect("a positive delay is always in the future");
    }

    /// The delay is over: hand the message to the successor.
    #[nexosim(schedulable)]
    async fn transmit(&mut self, msg: Msg) {
        self.to_successor.send(msg).await;
    }

    /// A message from the predecessor arrives.
    pub fn receive(&mut self, msg: Msg, cx: &Context<Self>) {
        self.delivered += 1;
        match msg {
            Msg::Election(j) if j > self.uid => {
                self.participant = true;
                self.send(Msg::Election(j), cx);
            }
            Msg::Election(j) if j < self.uid => {
                if !self.participant {
                    self.participant = true;
                    self.send(Msg::Election(self.uid), cx);
                }
            }
            Msg::Election(_) => {
                self.participant = false;
                self.leader = Some(self.uid);
                self.send(Msg::Elected(self.uid), cx);
            }
            Msg::Elected(j) => {
                if j != self.uid {
                    self.participant = false;
                    self.leader = Some(j);
                    self.send(Msg::Elected(j), cx);
                }
            }
        }
    }

    /// Reports the node's count of delivered messages and the leader it recorded.
    pub async fn report(&mut self) {
        let report = Report { delivered: self.delivered, leader: self.leader };
        self.report.send(report).await;
    }
}

/// Deliveries Chang-Roberts makes on this arrangement when every node initiates at time 0.
///
/// Every node is a participant before any message arrives (delays are at least 1 ms), so
/// ELECTION(j) travels from j to the next larger id and is discarded there, whatever the
/// delays; the maximum's travels the whole ring, and ELECTED(max) n hops more.
fn implied_deliveries(uids: &[u32]) -> u64 {
    let n = uids.len();
    let mut hops = vec![n as u64; n]; // the maximum keeps n
    let mut waiting: Vec<usize> = Vec::new(); // positions still looking, ids decreasing
    for k in 0..2 * n {
        while let Some(&j) = waiting.last() {
            if uids[j] >= uids[k % n] {
                break;
            }
            waiting.pop();
            hops[j] = (k - j) as u64;
        }
        if k < n {
            waiting.push(k);
        }
    }
    hops.iter().sum::<u64>() + n as u64
}

/// CPU time (user + system) of this process so far, from getrusage (microsecond resolution:
/// the 1,000-node ring takes a few milliseconds, below /proc/self/stat's 10 ms ticks).
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage only writes the struct it is given, which is zero-initialised.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

/// Peak resident memory (VmHWM) in MiB.
fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmHWM:")).map(str::to_owned))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|kb| kb.parse::<f64>().ok()))
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let parsed = match args.as_slice() {
        [n] => n.parse::<u32>().ok().map(|n| (n, 1)),
        [n, seed] => n.parse::<u32>().ok().zip(seed.parse::<u64>().ok()),
        _ => None,
    };
    let Some((n, seed)) = parsed.filter(|&(n, _)| n >= 2) else {
        eprintln!("usage: nexosim-ring NODES [SEED]  (NODES an integer >= 2, SEED an integer)");
        return ExitCode::from(2);
    };

    let cpu_start = cpu_seconds();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut uids: Vec<u32> = (1..=n).collect();
    uids.shuffle(&mut rng);

    // Single-threaded executor: ringleader's simulator is single-threaded too.
    let mut bench = SimInit::with_num_threads(1);
    let mailboxes: Vec<Mailbox<Node>> = (0..n).map(|_| Mailbox::new()).collect();
    let (report_sink, mut reports) = event_queue(SinkState::Enabled);
    let mut report_source = EventSource::new();
    let mut nodes = Vec::with_capacity(n as usize);
    for (i, &uid) in uids.iter().enumerate() {
        let mut node = Node::new(uid, seed ^ (u64::from(uid) << 32));
        let successor = &mailboxes[(i + 1) % n as usize];
        node.to_successor.connect(Node::receive, successor);
        node.report.connect_sink(report_sink.clone());
        report_source = report_source.connect(Node::report, &mailboxes[i]);
        nodes.push(node);
    }
    let report_all = report_source.register(&mut bench);
    for (i, (node, mailbox)) in nodes.into_iter().zip(mailboxes).enumerate() {
        bench = bench.add_model(node, mailbox, &format!("node{i}"));
    }
    let mut simu = bench.init(MonotonicTime::EPOCH).expect("the bench initialises");
    simu.run().expect("the simulation runs to the end");
    let cpu = cpu_seconds() - cpu_start;
    let end = simu.time().duration_since(MonotonicTime::EPOCH);

    simu.process_event(&report_all, ()).expect("every node reports");
    let mut delivered = 0;
    let mut leaders = Vec::with_capacity(n as usize);
    while let Some(r) = reports.try_read() {
        delivered += r.delivered;
        leaders.push(r.leader);
    }
    // Every node must have recorded the same leader, the maximum id.
    let agreed = match leaders.first() {
        Some(&first) if leaders.len() == n as usize && leaders.iter().all(|&l| l == first) => first,
        _ => None,
    };
    let implied = implied_deliveries(&uids);
    println!(
        "{{\"framework\": \"NeXosim\", \"nodes\": {n}, \"delivered\": {delivered}, \"implied\": {implied}, \"leader\": {}, \
         \"end_time_ms\": {:.3}, \"cpu_seconds\": {cpu:.4}, \"peak_rss_mib\": {:.1}}}",
        agreed.map_or("null".to_owned(), |l| l.to_string()),
        end.as_secs_f64() * 1e3,
        peak_rss_mib(),
    );
    if agreed == Some(n) && delivered == implied { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}
