//! The driver loop: one task owns the algorithm and handles its inputs one at a time.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use ringleader_algorithms::PlainAlgorithm;
use ringleader_core::stamp::{LogicalClocks, Stamp};
use ringleader_core::trace::{RecordKind, TraceRecord};
use ringleader_core::{Command, Context, Event, Message, NodeId, Outbox, Request, Time, Topology, Uid};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::Input;
use super::lock_session::LockSession;
use super::wall_ns;
use crate::metrics::Counters;
use crate::shared::{NodeEventKind, Shared};
use crate::storage::Storage;
use crate::wire::Envelope;

/// A small splitmix64 stream for `Context.random`, seeded from the wall clock and the id.
pub(super) struct SplitMix(pub(super) u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// The task that owns a node's algorithm state (see the [module](super) documentation).
pub(super) struct Driver<A: PlainAlgorithm> {
    pub(super) process: A,
    pub(super) topology: Topology,
    pub(super) members: Vec<Uid>,
    pub(super) me: NodeId,
    pub(super) shared: Arc<Shared>,
    pub(super) input_tx: mpsc::Sender<Input<A::Msg, A::Timer>>,
    pub(super) timers: BTreeMap<A::Timer, u64>,
    pub(super) generation: u64,
    pub(super) clock_offset: i64,
    pub(super) rng: SplitMix,
    /// The Lamport and vector clocks the trace and the envelopes carry.
    pub(super) clocks: LogicalClocks,
    pub(super) step: u64,
    pub(super) next_msg_id: u64,
    pub(super) trace: Option<std::io::BufWriter<std::fs::File>>,
    pub(super) lock: LockSession,
    pub(super) out: Outbox<A::Msg, A::Timer>,
    /// Stable storage (`--data-dir`), if any.
    pub(super) storage: Option<Storage>,
    /// The node starts from a state loaded from stable storage: it recovers rather than starts.
    pub(super) recovered: bool,
    /// Cancelled when the node must stop (stable storage failed).
    pub(super) halt: CancellationToken,
}

impl<A: PlainAlgorithm> Driver<A> {
    pub(super) async fn run(
        mut self,
        mut rx: mpsc::Receiver<Input<A::Msg, A::Timer>>,
        shutdown: CancellationToken,
        stopped: CancellationToken,
    ) {
        let mut start = self.record(RecordKind::Start);
        start.detail = Some(format!(
            "algorithm={} members={}",
            A::NAME,
            self.members.iter().map(|u| u.to_string()).collect::<Vec<_>>().join(",")
        ));
        self.tick();
        self.clocks.write_to(&mut start);
        self.write(&start);
        if self.recovered {
            // The state was loaded from stable storage: the node crashed in it and recovers now,
            // as the simulator's recovery does. The trace's second `start` tells `verify`.
            let mut r = self.record(RecordKind::Recover);
            r.detail = self.storage.as_ref().map(|s| format!("from {}", s.dir().display()));
            self.write(&r);
            self.with_cx(|p, cx, out| p.on_recover(cx, out));
        } else {
            self.with_cx(|p, cx, out| p.on_start(cx, out));
        }
        self.flush();
        loop {
            let input = tokio::select! {
                _ = shutdown.cancelled() => break,
                input = rx.recv() => input,
            };
            let Some(input) = input else { break };
            self.handle(input);
            // Handle whatever else is already queued before flushing the trace.
            while let Ok(input) = rx.try_recv() {
                self.handle(input);
            }
            self.flush();
        }
        self.flush();
        stopped.cancel();
    }

    fn handle(&mut self, input: Input<A::Msg, A::Timer>) {
        match input {
            Input::Message { from, env } => {
                if from != self.me
                    && let Err((counter, why)) = self.admit(from, &env)
                {
                    Counters::bump(counter);
                    let uid = self.members[from as usize];
                    eprintln!("[id {}] refused a {} from id {uid}: {why}", self.shared.id, env.msg.kind());
                    let mut r = self.record(RecordKind::Drop);
                    r.peer = Some(from);
                    r.msg_kind = Some(env.msg.kind().to_string());
                    r.msg = serde_json::to_value(&env.msg).ok();
                    r.detail = Some(format!("refused: {why}"));
                    self.write(&r);
                    return;
                }
                Counters::bump(&self.shared.counters.messages_received);
                let Envelope { msg_id, lamport, vector, msg } = env;
                self.step += 1;
                self.clocks.receive(Some(&Stamp { lamport, vector: Some(vector) }));
                let mut r = self.record(RecordKind::Deliver);
                r.peer = Some(from);
                r.msg_id = Some(msg_id);
                r.msg_kind = Some(msg.kind().to_string());
                r.msg = serde_json::to_value(&msg).ok();
                self.write(&r);
                self.with_cx(|p, cx, out| p.on_message(cx, from, msg, out));
            }
            Input::Timer { timer, generation } => {
                if self.timers.get(&timer) != Some(&generation) {
                    return;
                }
                self.timers.remove(&timer);
                Counters::bump(&self.shared.counters.timers_fired);
                self.tick();
                let mut r = self.record(RecordKind::Timer);
                r.timer = Some(format!("{timer:?}"));
                self.write(&r);
                self.with_cx(|p, cx, out| p.on_timer(cx, timer, out));
            }
            Input::Request(req) => self.request(req),
            Input::ElectAtStart => {
                let electing = self.shared.view.lock().electing;
                if self.process.leader().is_none() && !electing {
                    self.request(Request::StartElection);
                }
            }
            Input::Acquire(ask) => self.acquire(ask),
            Input::Release { handle, reply } => self.release(handle, reply),
            Input::KeepAlive { handle, reply } => self.keep_alive(handle, reply),
            Input::LeaseExpired { lease } => self.lease_expired(lease),
            Input::PeerDown(_) => self.settle_lock(),
        }
    }

    /// Checks what a peer's message says against what its connection proved and what the
    /// algorithm allows: the sender id in its envelope (`msg_id` carries it) and in the message,
    /// the ids it names, and [`Algorithm::admits`]. Returns the counter to bump and why not.
    fn admit(
        &self,
        from: NodeId,
        env: &Envelope<A::Msg>,
    ) -> Result<(), (&std::sync::atomic::AtomicU64, String)> {
        let counters = &self.shared.counters;
        let proved = self.members[from as usize];
        // A sender numbers its messages `id << 40 | n`: the low 24 bits of its id.
        let claimed = env.msg_id >> 40;
        if claimed != proved & 0xFF_FFFF {
            return Err((
                &counters.messages_rejected_sender,
                format!("its envelope claims sender id {claimed}, the connection proved {proved}"),
            ));
        }
        if let Some(stranger) = env.msg.uids_named().into_iter().find(|u| !self.members.contains(u)) {
            return Err((
                &counters.messages_rejected_stranger,
                format!("it names id {stranger}, not a member"),
            ));
        }
        if let Some(claimed) = env.msg.sender_uid().filter(|&u| u != proved) {
            return Err((
                &counters.messages_rejected_sender,
                format!("it says its sender is id {claimed}, the connection proved {proved}"),
            ));
        }
        self.process
            .admits(from, &env.msg)
            .map_err(|why| (&counters.messages_rejected_rules, why.to_string()))
    }

    pub(super) fn request(&mut self, req: Request) {
        Counters::bump(&self.shared.counters.requests);
        self.tick();
        let mut r = self.record(RecordKind::Request);
        r.request = Some(req.clone());
        self.write(&r);
        self.with_cx(|p, cx, out| p.on_request(cx, req, out));
    }

    /// A local step: the step count and the clocks advance.
    fn tick(&mut self) {
        self.step += 1;
        self.clocks.tick();
    }

    fn now(&self) -> Time {
        (wall_ns() as i64).saturating_add(self.clock_offset).max(0) as Time
    }

    /// Runs one handler with a fresh context, then carries out its outbox.
    fn with_cx(&mut self, f: impl FnOnce(&mut A, &Context, &mut Outbox<A::Msg, A::Timer>)) {
        let cx = Context {
            me: self.me,
            uids: &self.members,
            topology: &self.topology,
            now: self.now(),
            random: self.rng.next(),
        };
        f(&mut self.process, &cx, &mut self.out);
        if !self.persist() {
            // Nothing this step produced may leave the node: its state is not on disk.
            self.out.drain();
            return;
        }
        let commands: Vec<_> = self.out.drain().collect();
        for command in commands {
            self.act(command);
        }
        self.settle_lock();
        let leader = self.process.leader();
        if leader.is_some() {
            let mut view = self.shared.view.lock();
            if view.leader != leader {
                view.leader = leader;
                Counters::bump(&self.shared.counters.leader_changes);
            }
        }
    }

    /// Writes the state to stable storage, if the node has one and what survives a crash
    /// changed (see [`crate::storage`]), before the step's outbox is carried out. Returns false
    /// when the write failed: the node then stops, since it can no longer keep its promises.
    fn persist(&mut self) -> bool {
        if self.halt.is_cancelled() {
            return false;
        }
        let Some(storage) = self.storage.as_mut() else { return true };
        match storage.save(&self.process, self.me, &self.members, &self.topology) {
            Ok(wrote) => {
                if wrote {
                    Counters::bump(&self.shared.counters.state_writes);
                }
                true
            }
            Err(e) => {
                eprintln!("[id {}] stable storage failed, the node stops: {e}", self.shared.id);
                self.halt.cancel();
                false
            }
        }
    }

    fn act(&mut self, command: Command<A::Msg, A::Timer>) {
        match command {
            Command::Send { to, msg } => self.send(to, msg),
            Command::SetTimer { timer, after } => {
                self.generation += 1;
                let generation = self.generation;
                self.timers.insert(timer.clone(), generation);
                let tx = self.input_tx.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_nanos(after)).await;
                    let _ = tx.send(Input::Timer { timer, generation }).await;
                });
            }
            Command::CancelTimer(timer) => {
                self.timers.remove(&timer);
            }
            Command::Emit(event) => self.emit(event),
            Command::AdjustClock(delta) => {
                // Applied as an offset on the wall clock the algorithm reads.
                self.clock_offset = self.clock_offset.saturating_add(delta);
            }
        }
    }

    fn send(&mut self, to: NodeId, msg: A::Msg) {
        self.step += 1;
        let stamp = self.clocks.send();
        self.next_msg_id += 1;
        let msg_id = (self.shared.id << 40) | self.next_msg_id;
        let mut r = self.record(RecordKind::Send);
        r.peer = Some(to);
        r.msg_id = Some(msg_id);
        r.msg_kind = Some(msg.kind().to_string());
        r.msg = serde_json::to_value(&msg).ok();
        self.write(&r);
        if to == self.me {
            // A message to oneself is delivered through the input queue like any other.
            let env = Envelope::stamped(msg_id, stamp, msg);
            if self.input_tx.try_send(Input::Message { from: to, env }).is_err() {
                self.drop_record(to, msg_id, "input queue full");
            }
            return;
        }
        let Some(Some(link)) = self.shared.peers.get(to as usize) else {
            self.drop_record(to, msg_id, "no such position");
            return;
        };
        let env = Envelope::stamped(msg_id, stamp, msg);
        if link.queue.try_send(crate::wire::encode(&env)).is_err() {
            Counters::bump(&self.shared.counters.messages_dropped_queue_full);
            self.drop_record(to, msg_id, "outgoing queue full");
        }
    }

    fn drop_record(&mut self, to: NodeId, msg_id: u64, why: &str) {
        let mut r = self.record(RecordKind::Drop);
        r.peer = Some(to);
        r.msg_id = Some(msg_id);
        r.detail = Some(why.into());
        self.write(&r);
    }

    fn emit(&mut self, event: Event) {
        Counters::bump(&self.shared.counters.events);
        let mut r = self.record(RecordKind::Emit);
        r.event = Some(event.clone());
        self.write(&r);
        {
            let mut view = self.shared.view.lock();
            match &event {
                Event::ElectionStarted => view.electing = true,
                Event::Leader { leader, term } => {
                    if view.leader != Some(*leader) {
                        Counters::bump(&self.shared.counters.leader_changes);
                    }
                    view.leader = Some(*leader);
                    view.term = Some(*term);
                    view.electing = false;
                }
                Event::LeaderLost => view.leader = None,
                Event::Suspect { node } => {
                    view.suspected.entry(*node).or_insert_with(wall_ns);
                }
                Event::Trust { node } => {
                    view.suspected.remove(node);
                }
                Event::Entered { fencing } => {
                    Counters::bump(&self.shared.counters.lock_grants);
                    view.waiting = false;
                    view.holding = Some(*fencing);
                    self.lock.granted(*fencing);
                }
                Event::Exited => {
                    Counters::bump(&self.shared.counters.lock_releases);
                    view.holding = None;
                }
                _ => {}
            }
        }
        self.shared.publish(wall_ns(), NodeEventKind::Algorithm(event));
    }

    fn record(&self, kind: RecordKind) -> TraceRecord {
        let mut r = TraceRecord::new(self.step, wall_ns(), kind);
        r.node = Some(self.me);
        r.uid = Some(self.shared.id);
        self.clocks.write_to(&mut r);
        r
    }

    fn write(&mut self, r: &TraceRecord) {
        if let Some(w) = self.trace.as_mut() {
            let ok = serde_json::to_writer(&mut *w, r).is_ok() && w.write_all(b"\n").is_ok();
            if !ok {
                eprintln!("[id {}] trace write failed; tracing stops", self.shared.id);
                self.trace = None;
            }
        }
    }

    fn flush(&mut self) {
        if let Some(w) = self.trace.as_mut() {
            let _ = w.flush();
        }
    }
}
