//! Three raft-rs replicas on `DiskLog`, driven by the `Ready` loop a real node runs: persist,
//! then send. A lagging replica catches up from a snapshot after the leader compacted its log,
//! and every replica restarts from its file alone with its log, hard state and state machine.
//!
//! Deterministic: messages go through one FIFO queue, and the election timeout is fixed (the
//! randomised range holds one value) and long, so only the replica told to campaign does.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use raft::eraftpb::{ConfState, Entry, EntryType, Message};
use raft::{Config, RawNode, StateRole, Storage};
use ringleader_service::disk::{DiskLog, LogUpdate};

const ELECTION_TICK: usize = 1_000;

fn logger() -> slog::Logger {
    slog::Logger::root(slog::Discard, slog::o!())
}

/// One replica: raft over its `DiskLog`, and a state machine that is the list of applied
/// commands.
struct Replica {
    id: u64,
    dir: PathBuf,
    raft: RawNode<DiskLog>,
    applied: Vec<String>,
}

impl Replica {
    /// Opens the replica's log (a new one gets the cluster's voters) and restores the state
    /// machine from the stored snapshot; raft then hands back the committed entries after it.
    fn start(id: u64, dir: &Path) -> Replica {
        let mut log = DiskLog::open(dir).unwrap();
        if log.conf_state() == &ConfState::default() {
            log.set_conf_state(ConfState { voters: vec![1, 2, 3], ..ConfState::default() }).unwrap();
        }
        let (applied, applied_index) = match log.snapshot(0, id) {
            Ok(snapshot) => (decode_state(&snapshot.data), snapshot.get_metadata().index),
            Err(_) => (Vec::new(), 0),
        };
        let config = Config {
            id,
            election_tick: ELECTION_TICK,
            min_election_tick: ELECTION_TICK,
            max_election_tick: ELECTION_TICK + 1,
            heartbeat_tick: 1,
            applied: applied_index,
            ..Config::default()
        };
        let raft = RawNode::new(&config, log, &logger()).unwrap();
        Replica { id, dir: dir.to_path_buf(), raft, applied }
    }

    fn log(&self) -> &DiskLog {
        self.raft.store()
    }

    fn apply(&mut self, entries: Vec<Entry>) {
        for entry in entries {
            if entry.get_entry_type() == EntryType::EntryNormal && !entry.data.is_empty() {
                self.applied.push(String::from_utf8(entry.data.to_vec()).unwrap());
            }
        }
    }

    /// Handles one `Ready` as the contract asks: what the leader may send at once goes out;
    /// the snapshot, entries and hard state are persisted in one call; only then do the
    /// messages that depend on them go out.
    fn on_ready(&mut self, network: &mut VecDeque<Message>) {
        if !self.raft.has_ready() {
            return;
        }
        let mut ready = self.raft.ready();
        network.extend(ready.take_messages());
        let snapshot = (!ready.snapshot().is_empty()).then(|| ready.snapshot().clone());
        if let Some(snapshot) = &snapshot {
            self.applied = decode_state(&snapshot.data);
        }
        self.apply(ready.take_committed_entries());
        let update = LogUpdate { snapshot, entries: ready.take_entries(), hard_state: ready.hs().cloned() };
        self.raft.mut_store().persist(&update).unwrap();
        network.extend(ready.take_persisted_messages());
        let mut light = self.raft.advance(ready);
        if let Some(commit) = light.commit_index() {
            let mut hard_state = self.log().hard_state().clone();
            hard_state.commit = commit;
            self.raft
                .mut_store()
                .persist(&LogUpdate { hard_state: Some(hard_state), ..LogUpdate::default() })
                .unwrap();
        }
        network.extend(light.take_messages());
        self.apply(light.take_committed_entries());
        self.raft.advance_apply();
    }

    /// Snapshots the state machine at the applied index and compacts the log up to it.
    fn snapshot_and_compact(&mut self) {
        let index = self.raft.raft.raft_log.applied;
        let data = self.applied.join("\n").into_bytes();
        let log = self.raft.mut_store();
        log.create_snapshot(index, data).unwrap();
        log.compact(index).unwrap();
    }
}

fn decode_state(data: &[u8]) -> Vec<String> {
    if data.is_empty() {
        return Vec::new();
    }
    String::from_utf8(data.to_vec()).unwrap().split('\n').map(str::to_string).collect()
}

/// Three replicas and the messages between them; `cut` replicas lose every message to or
/// from them.
struct Cluster {
    replicas: Vec<Replica>,
    network: VecDeque<Message>,
    cut: Vec<u64>,
}

impl Cluster {
    fn replica(&mut self, id: u64) -> &mut Replica {
        &mut self.replicas[id as usize - 1]
    }

    /// One round: every replica handles its `Ready`, then every message in flight is delivered
    /// (or dropped across a cut), then every replica ticks.
    fn round(&mut self) {
        for replica in &mut self.replicas {
            replica.on_ready(&mut self.network);
        }
        while let Some(message) = self.network.pop_front() {
            if self.cut.contains(&message.to) || self.cut.contains(&message.from) {
                continue;
            }
            let replica = &mut self.replicas[message.to as usize - 1];
            replica.raft.step(message).unwrap();
            replica.on_ready(&mut self.network);
        }
        for replica in &mut self.replicas {
            replica.raft.tick();
        }
    }

    /// Runs rounds until `done` holds, at most `limit` of them; returns how many it took.
    fn run_until(&mut self, limit: usize, done: impl Fn(&Cluster) -> bool) -> usize {
        for rounds in 0..limit {
            if done(self) {
                return rounds;
            }
            self.round();
        }
        panic!("not done after {limit} rounds");
    }

    fn elect(&mut self, id: u64) {
        self.replica(id).raft.campaign().unwrap();
        self.run_until(20, |c| c.replicas[id as usize - 1].raft.raft.state == StateRole::Leader);
    }

    fn propose(&mut self, leader: u64, commands: impl IntoIterator<Item = String>) {
        for command in commands {
            self.replica(leader).raft.propose(vec![], command.into_bytes()).unwrap();
        }
    }

    fn applied(&self, id: u64) -> &[String] {
        &self.replicas[id as usize - 1].applied
    }
}

fn commands(prefix: &str, count: usize) -> impl Iterator<Item = String> {
    (0..count).map(move |i| format!("{prefix}{i}"))
}

#[test]
fn replicas_on_disk_catch_up_from_a_snapshot_and_survive_a_restart() {
    let root = tempfile::tempdir().unwrap();
    let dirs: Vec<PathBuf> = (1..=3).map(|id| root.path().join(format!("{id}"))).collect();
    let mut cluster = Cluster {
        replicas: (1..=3).map(|id| Replica::start(id, &dirs[id as usize - 1])).collect(),
        network: VecDeque::new(),
        cut: vec![],
    };
    cluster.elect(1);
    cluster.propose(1, commands("a", 10));
    cluster.run_until(20, |c| (1..=3).all(|id| c.applied(id).len() == 10));

    // Replica 3 is cut off while 20 more commands commit, and the leader compacts past them.
    cluster.cut = vec![3];
    cluster.propose(1, commands("b", 20));
    cluster.run_until(20, |c| c.applied(1).len() == 30 && c.applied(2).len() == 30);
    assert_eq!(cluster.applied(3).len(), 10);
    let lagging = cluster.replica(3).log().last_index().unwrap();
    cluster.replica(1).snapshot_and_compact();
    let leader_first = cluster.replica(1).log().first_index().unwrap();
    assert!(leader_first > lagging + 1, "{leader_first} vs {lagging}");

    // Healed, it can only catch up from the snapshot.
    cluster.cut.clear();
    cluster.run_until(50, |c| c.applied(3).len() == 30);
    let expected: Vec<String> = commands("a", 10).chain(commands("b", 20)).collect();
    for id in 1..=3 {
        assert_eq!(cluster.applied(id), expected, "replica {id}");
    }
    let snapshot_index = cluster.replica(1).log().snapshot_metadata().index;
    assert_eq!(cluster.replica(3).log().snapshot_metadata().index, snapshot_index);
    assert_eq!(cluster.replica(3).log().first_index().unwrap(), snapshot_index + 1);

    // Every replica restarts from its file alone.
    let before: Vec<_> = cluster
        .replicas
        .iter()
        .map(|r| {
            let log = r.log();
            let (first, last) = (log.first_index().unwrap(), log.last_index().unwrap());
            let entries = log.entries(first, last + 1, None, raft::GetEntriesContext::empty(false)).unwrap();
            (log.hard_state().clone(), log.conf_state().clone(), first, entries)
        })
        .collect();
    let ids: Vec<(u64, PathBuf)> = cluster.replicas.iter().map(|r| (r.id, r.dir.clone())).collect();
    cluster.replicas.clear();
    cluster.replicas = ids.iter().map(|(id, dir)| Replica::start(*id, dir)).collect();
    for (replica, (hard_state, conf_state, first, entries)) in cluster.replicas.iter().zip(&before) {
        let log = replica.log();
        // Term and vote are durable. The commit index may lag what was in memory (a commit
        // index alone is not synced), never below the snapshot, which covers committed entries.
        let hs = log.hard_state();
        assert_eq!((hs.term, hs.vote), (hard_state.term, hard_state.vote), "replica {}", replica.id);
        assert!(hs.commit <= hard_state.commit, "replica {}: {hs:?} after {hard_state:?}", replica.id);
        assert!(hs.commit >= log.snapshot_metadata().index, "replica {}: {hs:?}", replica.id);
        assert_eq!(log.conf_state(), conf_state, "replica {}", replica.id);
        let last = log.last_index().unwrap();
        assert_eq!(log.first_index().unwrap(), *first, "replica {}", replica.id);
        let again = log.entries(*first, last + 1, None, raft::GetEntriesContext::empty(false)).unwrap();
        assert_eq!(&again, entries, "replica {}", replica.id);
    }
    let term = cluster.replica(2).log().hard_state().term;

    // A new leader in a higher term; the state machines come back (from the snapshot and the
    // replayed log) and go on.
    cluster.elect(2);
    assert!(cluster.replica(2).log().hard_state().term > term);
    cluster.propose(2, commands("c", 5));
    cluster.run_until(20, |c| (1..=3).all(|id| c.applied(id).len() == 35));
    let expected: Vec<String> = expected.into_iter().chain(commands("c", 5)).collect();
    for id in 1..=3 {
        assert_eq!(cluster.applied(id), expected, "replica {id}");
    }
}
