//! Starting a node: configuring its algorithm, binding its sockets and spawning its tasks.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use parking_lot::Mutex;
use std::time::Duration;

use ringleader_algorithms::{Algorithm, ConfigError, Family, Params, PlainAlgorithm, PlainVisitor, Setup};
use ringleader_core::{NodeId, Outbox, Topology, Uid};
use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;

use super::event_loop::{Driver, SplitMix};
use super::lock_session::{LockSession, Needs};
use super::wall_ns;
use crate::metrics::{Counters, LockHistograms};
use crate::shared::{EventLog, Input, PeerLink, Shared, View};
use crate::storage::{Identity, Storage};
use crate::{NetError, NodeConfig, NodeHandle};
use ringleader_transport::{LinkState, TransportCounts, peer};

/// Starts a node running algorithm `A` (see [`crate::start`]).
pub struct StartVisitor {
    /// The node's configuration.
    pub cfg: NodeConfig,
}

/// The future [`StartVisitor`] returns.
pub type StartFuture = Pin<Box<dyn Future<Output = Result<NodeHandle, NetError>> + Send>>;

impl PlainVisitor for StartVisitor {
    type Output = StartFuture;
    fn visit<A: PlainAlgorithm>(self) -> StartFuture {
        let cfg = self.cfg;
        let prepared = prepare::<A>(&cfg);
        Box::pin(async move {
            let (process, topology, members) = prepared?;
            launch::<A>(cfg, process, topology, members).await
        })
    }
}

/// The parameters of the failure detector an election watches its coordinator with (see
/// `ringleader_algorithms::election::watch`).
const DETECTION_KEYS: [&str; 6] =
    ["heartbeat", "suspect_after", "election_timeout", "phi", "window", "min_std"];

/// The parameter sets to try, in order, for an algorithm of `family` given `params`, each with
/// the keys the driver added (which the algorithm must read for the set to be taken), and the
/// index of the set whose error is reported when none configures.
///
/// On a real node an election watches its coordinator by default: with no `heartbeat` and no
/// `detector` given, `detector=heartbeat heartbeat=`[`crate::DEFAULT_HEARTBEAT`] is added for
/// the elections that read them. `detector=none` switches detection off (`heartbeat=0`) and
/// cannot be combined with a detector's settings.
type Candidates = (Vec<(BTreeMap<String, String>, Vec<&'static str>)>, usize);

fn detection_candidates(family: Family, params: &BTreeMap<String, String>) -> Result<Candidates, NetError> {
    let plain = (params.clone(), vec![]);
    if family != Family::Election {
        return Ok((vec![plain], 0));
    }
    let with = |drop: &[&str], add: &[(&'static str, &str)]| {
        let mut m = params.clone();
        for k in drop {
            m.remove(*k);
        }
        for (k, v) in add {
            m.insert(k.to_string(), v.to_string());
        }
        (m, add.iter().map(|(k, _)| *k).collect::<Vec<_>>())
    };
    match params.get("detector").map(|d| d.trim()) {
        Some("none") => {
            let off = |k: &&str| *k == "heartbeat" && params[*k].trim().trim_end_matches("ms").trim() == "0";
            if let Some(k) = DETECTION_KEYS.iter().find(|k| params.contains_key(**k) && !off(k)) {
                return Err(NetError::DetectorContradiction { key: k });
            }
            // The algorithm's own `none` if it has one, else heartbeat=0; an election without a
            // detector accepts `none` as what it already is.
            let mut plain_none = params.clone();
            plain_none.remove("detector");
            Ok((vec![plain, with(&["detector"], &[("heartbeat", "0")]), (plain_none, vec![])], 1))
        }
        Some(_) if !params.contains_key("heartbeat") => {
            Ok((vec![with(&[], &[("heartbeat", crate::DEFAULT_HEARTBEAT)]), plain], 0))
        }
        None if !params.contains_key("heartbeat") => Ok((
            vec![with(&[], &[("detector", "heartbeat"), ("heartbeat", crate::DEFAULT_HEARTBEAT)]), plain],
            0,
        )),
        _ => Ok((vec![plain], 0)),
    }
}

/// Configures the algorithm (synchronously: parameters are not `Sync`) and builds the node's
/// initial state.
pub(crate) fn prepare<A: Algorithm>(cfg: &NodeConfig) -> Result<(A, Topology, Vec<Uid>), NetError> {
    use rand_xoshiro::rand_core::SeedableRng;
    let members = cfg.members();
    let n = members.len() as u32;
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(0);
    let topology = A::TOPOLOGY.default_topology(n, None, &mut rng)?;
    let (candidates, report) = detection_candidates(A::FAMILY, &cfg.params)?;
    let mut errors = Vec::new();
    for (values, added) in candidates {
        let params = Params::new(values);
        let setup =
            Setup { uids: &members, topology: &topology, params: &params, max_delay: cfg.max_delay, seed: 1 };
        let config = match ringleader_algorithms::configure::<A>(&setup) {
            Ok(c) => c,
            Err(ConfigError::Unknown { keys, .. }) if added.iter().any(|k| keys.iter().any(|u| u == k)) => {
                // This algorithm does not read what the driver added: try the next set.
                errors.push(NetError::NoDetector { algorithm: A::NAME });
                continue;
            }
            Err(e @ ConfigError::Unknown { .. }) => return Err(e.into()),
            Err(e) => {
                errors.push(e.into());
                continue;
            }
        };
        let me = members.iter().position(|&u| u == cfg.id).expect("own id is a member") as NodeId;
        return Ok((A::new(me, &config, &setup), topology, members));
    }
    let n = errors.len();
    Err(errors.into_iter().nth(report.min(n - 1)).expect("at least one candidate"))
}

/// Binds the node's sockets, spawns its transport, API and driver tasks and returns its handle.
pub(super) async fn launch<A: PlainAlgorithm>(
    cfg: NodeConfig,
    mut process: A,
    topology: Topology,
    members: Vec<Uid>,
) -> Result<NodeHandle, NetError> {
    let me = members.iter().position(|&u| u == cfg.id).expect("own id is a member") as NodeId;
    // Stable storage: a state on disk is the state this node crashed in; it recovers from it.
    let (storage, recovered) = match &cfg.data_dir {
        Some(dir) => {
            let identity = Identity {
                format: crate::storage::FORMAT,
                algorithm: A::NAME.to_string(),
                id: cfg.id,
                members: members.clone(),
                params: cfg.params.clone(),
            };
            let (mut storage, loaded) = Storage::open::<A>(dir, identity, cfg.wipe_data)?;
            let recovered = loaded.is_some();
            if let Some(state) = loaded {
                storage.loaded(&state, me, &members, &topology)?;
                process = state;
            }
            (Some(storage), recovered)
        }
        None => (None, false),
    };
    let listener = tokio::net::TcpListener::bind(cfg.listen)
        .await
        .map_err(|source| NetError::Io { what: format!("listen on {}", cfg.listen), source })?;
    let listen =
        listener.local_addr().map_err(|source| NetError::Io { what: "listen address".into(), source })?;
    let api_listener = match cfg.api {
        Some(addr) => Some(
            tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|source| NetError::Io { what: format!("HTTP API on {addr}"), source })?,
        ),
        None => None,
    };
    let trace = match &cfg.trace {
        Some(path) => Some(std::io::BufWriter::new(
            crate::verify::open_trace_for_append(path)
                .map_err(|source| NetError::Io { what: format!("trace {}", path.display()), source })?,
        )),
        None => None,
    };

    let (input_tx, input_rx) = mpsc::channel::<Input<A::Msg, A::Timer>>(4096);
    let (api_tx, mut api_rx) = mpsc::channel::<Input<Infallible, Infallible>>(256);
    let mut writers = Vec::new();
    let peers: Vec<Option<PeerLink>> = members
        .iter()
        .enumerate()
        .map(|(pos, &id)| {
            if id == cfg.id {
                return None;
            }
            let addr = cfg.peers.iter().find(|p| p.0 == id).expect("peer is a member").1.clone();
            let (tx, rx) = mpsc::channel(cfg.queue_capacity);
            let state = Arc::new(LinkState::new(id, addr));
            writers.push((pos, state.clone(), rx));
            Some(PeerLink { position: pos as NodeId, state, queue: tx })
        })
        .collect();
    let (events, _) = broadcast::channel(1024);
    let shared = Arc::new(Shared {
        id: cfg.id,
        position: me,
        members: members.clone(),
        algorithm: A::NAME,
        family: A::FAMILY,
        counters: Counters::default(),
        view: Mutex::new(View::default()),
        events,
        event_log: Mutex::new(EventLog::default()),
        lock_times: LockHistograms::default(),
        peers,
        api_tx,
        api_connections: Default::default(),
    });
    let shutdown = CancellationToken::new();
    let stopped = CancellationToken::new();

    // Outbound writers and the inbound listener. A lost connection tells the driver (waiting
    // lock clients may need that peer); the listener admits the members, delivering their
    // envelopes from their positions.
    let peer_cfg = cfg.peer_config();
    let counts: Arc<dyn TransportCounts> = shared.clone();
    for (pos, state, rx) in writers {
        let api_tx = shared.api_tx.clone();
        let on_lost = move || drop(api_tx.try_send(Input::PeerDown(pos as NodeId)));
        tokio::spawn(peer::writer(peer_cfg.clone(), counts.clone(), state, rx, on_lost, shutdown.clone()));
    }
    let admit: peer::Admit<NodeId> = {
        let members = shared.members.clone();
        Arc::new(move |u| members.iter().position(|&m| m == u).map(|p| p as NodeId))
    };
    tokio::spawn(peer::listen::<crate::wire::Envelope<A::Msg>, NodeId, Input<A::Msg, A::Timer>>(
        listener,
        peer_cfg,
        counts,
        admit,
        input_tx.clone(),
        shutdown.clone(),
    ));
    // API requests are forwarded into the typed input channel.
    {
        let input_tx = input_tx.clone();
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            loop {
                let item = tokio::select! {
                    _ = shutdown.cancelled() => return,
                    item = api_rx.recv() => item,
                };
                let Some(item) = item else { return };
                if input_tx.send(item.widen()).await.is_err() {
                    return;
                }
            }
        });
    }
    if A::FAMILY == Family::Election && cfg.elect_at_start {
        let shared = shared.clone();
        let input_tx = input_tx.clone();
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            let settle = tokio::time::Instant::now() + crate::ELECTION_SETTLE;
            let connected =
                |s: &Shared| s.peers.iter().flatten().all(|p| p.state.connected.load(Ordering::Relaxed));
            while !connected(&shared) && tokio::time::Instant::now() < settle {
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    _ = tokio::time::sleep(Duration::from_millis(5)) => {}
                }
            }
            // A node that joins a running cluster hears its coordinator's heartbeat in this
            // while and does not disturb it with an election.
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(crate::ELECTION_QUIET) => {}
            }
            let _ = input_tx.send(Input::ElectAtStart).await;
        });
    }
    let api = match api_listener {
        Some(l) => {
            let addr = l.local_addr().ok();
            tokio::spawn(crate::api::serve(
                l,
                shared.clone(),
                cfg.api_token.clone(),
                crate::api::ConnectionLimits {
                    idle_timeout: cfg.api_idle_timeout,
                    write_stall_timeout: cfg.api_write_stall_timeout,
                    max_connections: cfg.api_max_connections,
                },
                shutdown.clone(),
            ));
            addr
        }
        None => None,
    };

    let driver = Driver::<A> {
        process,
        topology,
        members,
        me,
        shared: shared.clone(),
        input_tx,
        timers: BTreeMap::new(),
        generation: 0,
        clock_offset: 0,
        rng: SplitMix(wall_ns() ^ cfg.id.rotate_left(32)),
        clocks: ringleader_core::stamp::LogicalClocks::new(me as usize, shared.members.len(), true),
        step: 0,
        next_msg_id: 0,
        trace,
        lock: LockSession::new(Needs::of(A::NAME, &cfg.params, me)),
        out: Outbox::new(),
        storage,
        recovered,
        halt: shutdown.clone(),
    };
    tokio::spawn(driver.run(input_rx, shutdown.clone(), stopped.clone()));
    Ok(NodeHandle { listen, api, shared, shutdown, stopped })
}
