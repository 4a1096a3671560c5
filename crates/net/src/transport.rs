//! TCP transport: one outbound writer per peer, one listener, one reader per inbound connection.
//!
//! - **Writers** dial their peer, send the [`Hello`], then write the frames
//!   of the peer's bounded queue. When the connection fails they redial with exponential backoff
//!   (50 ms doubling to 2 s); messages queued meanwhile wait in the queue, and the driver drops
//!   (and counts) what does not fit. The frame being written when a connection breaks is lost
//!   and counted — as in any real network, the algorithms must tolerate loss.
//! - **Readers** accept at most `max_connections` connections at once, require a valid hello
//!   within [`HANDSHAKE_TIMEOUT`], then deliver each frame to the driver. Garbage, a truncated
//!   or oversized frame, a wrong version, algorithm or sender: logged, counted, connection
//!   closed. The node keeps serving everyone else.
//! - **Idle connections** do not hold a slot for good: a writer with nothing to send writes an
//!   empty keep-alive frame every quarter of [`NodeConfig::peer_idle_timeout`], and a reader
//!   that receives no frame for the whole timeout (a stranger that said hello and nothing more,
//!   a peer gone from the network) closes the connection and counts it.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use parking_lot::Mutex;
use ringleader_core::{Message, NodeId};
use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_util::codec::{FramedRead, FramedWrite};
use tokio_util::sync::CancellationToken;

use crate::NodeConfig;
use crate::auth;
use crate::metrics::Counters;
use crate::shared::{Input, PeerLink, Shared};
use crate::wire::{self, Challenge, Envelope, FrameError, Hello, Proof};

/// How long an inbound connection may take to send its hello.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

/// The largest frame read before a connection's handshake is done (hello, challenge, proof are
/// small): only a peer that proved itself may send frames up to [`NodeConfig::max_frame`],
/// whose buffer the codec reserves from the frame's length prefix alone.
pub const HANDSHAKE_MAX_FRAME: usize = 64 * 1024;

/// How long one dial may take (an unreachable host would otherwise hold it for minutes).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// Backoff bounds for redialling a peer.
const BACKOFF_MIN: Duration = Duration::from_millis(50);
const BACKOFF_MAX: Duration = Duration::from_secs(2);

/// Keeps a connection to peer `pos` and writes its queue into it.
pub async fn writer(
    shared: Arc<Shared>,
    pos: usize,
    queue: mpsc::Receiver<Bytes>,
    cfg: NodeConfig,
    shutdown: CancellationToken,
) {
    let link = shared.peers[pos].as_ref().expect("writer for a peer");
    write_link(&shared, link, Some(pos), queue, cfg, shutdown).await
}

/// Keeps a connection to a peer outside the fixed table `shared.peers` (a node whose members
/// change while it runs keeps its own links) and writes its queue into it. It ends when
/// `shutdown` is cancelled or when the queue's senders are gone and what they queued is
/// written.
pub async fn link_writer(
    shared: Arc<Shared>,
    link: Arc<PeerLink>,
    queue: mpsc::Receiver<Bytes>,
    cfg: NodeConfig,
    shutdown: CancellationToken,
) {
    write_link(&shared, &link, None, queue, cfg, shutdown).await
}

async fn write_link(
    shared: &Shared,
    link: &PeerLink,
    pos: Option<usize>,
    mut queue: mpsc::Receiver<Bytes>,
    cfg: NodeConfig,
    shutdown: CancellationToken,
) {
    let mut backoff = BACKOFF_MIN;
    let mut first = true;
    loop {
        if !first {
            Counters::bump(&shared.counters.reconnects);
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(backoff) => {}
            }
            backoff = (backoff * 2).min(BACKOFF_MAX);
        }
        first = false;
        let stream = tokio::select! {
            _ = shutdown.cancelled() => return,
            s = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(link.addr.as_str())) => s,
        };
        let Ok(Ok(stream)) = stream else { continue };
        let _ = stream.set_nodelay(true);
        set_user_timeout(&stream);
        // After the handshake the peer never writes on this connection: a readable read half
        // means it closed.
        let (read_half, write_half) = stream.into_split();
        let mut framed = FramedWrite::new(write_half, wire::codec(cfg.max_frame));
        let my_nonce = auth::nonce();
        let hello = Hello::new(&cfg.algorithm, shared.id).with_nonce(my_nonce);
        if framed.send(wire::encode(&hello)).await.is_err() {
            continue;
        }
        let mut read_half = match &cfg.secret {
            None => read_half,
            Some(secret) => {
                let answer = tokio::select! {
                    _ = shutdown.cancelled() => return,
                    a = tokio::time::timeout(
                        HANDSHAKE_TIMEOUT,
                        prove(read_half, &mut framed, secret, my_nonce, shared.id, link.id, &cfg),
                    ) => a,
                };
                match answer {
                    Ok(Ok(r)) => r,
                    Ok(Err(e)) => {
                        Counters::bump(&shared.counters.auth_failures);
                        eprintln!("[id {}] handshake with id {} failed: {e}; redialling", shared.id, link.id);
                        continue;
                    }
                    Err(_) => {
                        Counters::bump(&shared.counters.auth_failures);
                        eprintln!("[id {}] id {} sent no challenge; redialling", shared.id, link.id);
                        continue;
                    }
                }
            }
        };
        link.connected.store(true, Ordering::Relaxed);
        link.down_since_ns.store(0, Ordering::Relaxed);
        backoff = BACKOFF_MIN;
        let mut probe = [0u8; 1];
        let keepalive = cfg.peer_idle_timeout / 4;
        loop {
            let frame = tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = read_half.read(&mut probe) => None,
                f = queue.recv() => match f {
                    Some(f) => Some(f),
                    None => return,
                },
                _ = tokio::time::sleep(keepalive) => Some(Bytes::new()),
            };
            let Some(frame) = frame else {
                lost(shared, link, pos);
                eprintln!("[id {}] connection to id {} closed by the peer; redialling", shared.id, link.id);
                break;
            };
            // Write everything already queued, then flush once.
            let mut batch = vec![frame];
            while batch.len() < 256 {
                match queue.try_recv() {
                    Ok(f) => batch.push(f),
                    Err(_) => break,
                }
            }
            let n = batch.iter().filter(|f| !f.is_empty()).count() as u64;
            let mut ok = true;
            for f in batch {
                if framed.feed(f).await.is_err() {
                    ok = false;
                    break;
                }
            }
            if ok && SinkExt::<Bytes>::flush(&mut framed).await.is_ok() {
                shared.counters.messages_sent.fetch_add(n, Ordering::Relaxed);
            } else {
                shared.counters.messages_dropped_connection.fetch_add(n, Ordering::Relaxed);
                lost(shared, link, pos);
                eprintln!("[id {}] connection to id {} broke; redialling", shared.id, link.id);
                break;
            }
        }
    }
}

/// Marks `link` down since now and, for a link of the fixed table (at `pos`), tells the driver
/// (waiting lock clients may need that peer).
fn lost(shared: &Shared, link: &PeerLink, pos: Option<usize>) {
    link.connected.store(false, Ordering::Relaxed);
    link.down_since_ns.store(crate::shared::wall_ns().max(1), Ordering::Relaxed);
    if let Some(pos) = pos {
        let _ = shared.api_tx.try_send(Input::PeerDown(pos as NodeId));
    }
}

/// The dialler's side of the challenge–response: read the acceptor's challenge, check its
/// proof, send ours. Returns the read half (nothing more is ever read from it but a close).
async fn prove(
    read_half: tokio::net::tcp::OwnedReadHalf,
    framed: &mut FramedWrite<tokio::net::tcp::OwnedWriteHalf, tokio_util::codec::LengthDelimitedCodec>,
    secret: &auth::Secret,
    my_nonce: [u8; auth::NONCE_LEN],
    me: u64,
    peer: u64,
    cfg: &NodeConfig,
) -> Result<tokio::net::tcp::OwnedReadHalf, FrameError> {
    let small = cfg.max_frame.min(HANDSHAKE_MAX_FRAME);
    let mut frames = FramedRead::new(read_half, wire::codec(small));
    let frame = match frames.next().await {
        None => return Err(FrameError::Truncated),
        Some(Err(e)) => return Err(wire::codec_error(&e, small)),
        Some(Ok(f)) => f,
    };
    let challenge: Challenge = wire::decode(&frame)?;
    let ids = auth::ids(me, peer);
    let t = auth::transcript(&my_nonce, &challenge.nonce, &ids, &cfg.algorithm);
    if !secret.verify(auth::ACCEPTOR, &t, &challenge.mac) {
        return Err(FrameError::Unauthenticated(peer));
    }
    let proof = Proof { mac: secret.mac(auth::DIALLER, &t) };
    framed.send(wire::encode(&proof)).await.map_err(|e| FrameError::Decode(e.to_string()))?;
    Ok(frames.into_inner())
}

/// How long written data may stay unacknowledged before the kernel aborts the connection
/// (`TCP_USER_TIMEOUT`): a peer that vanished from the network (its container disconnected,
/// its host gone) is noticed within seconds, and the writer redials, resolving its name again.
pub const USER_TIMEOUT_MS: u32 = 3000;

fn set_user_timeout(stream: &TcpStream) {
    use std::os::fd::AsRawFd;
    let ms: libc::c_uint = USER_TIMEOUT_MS;
    // SAFETY: a valid socket descriptor and a correctly sized option value.
    unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_USER_TIMEOUT,
            (&ms as *const libc::c_uint).cast(),
            std::mem::size_of::<libc::c_uint>() as libc::socklen_t,
        );
    }
}

/// Which senders a listener lets in, and the position their messages are delivered from
/// (`None`: refused as an unknown sender).
pub type Admit = Arc<dyn Fn(u64) -> Option<NodeId> + Send + Sync>;

/// Accepts inbound connections until shutdown, from the members of `shared.members`.
pub async fn listen<M: Message, T: Send + 'static>(
    listener: TcpListener,
    shared: Arc<Shared>,
    input: mpsc::Sender<Input<M, T>>,
    cfg: NodeConfig,
    shutdown: CancellationToken,
) {
    let members = shared.members.clone();
    let admit: Admit = Arc::new(move |u| members.iter().position(|&m| m == u).map(|p| p as NodeId));
    listen_admitting(listener, shared, input, cfg, shutdown, admit).await
}

/// Accepts inbound connections until shutdown, from the senders `admit` lets in, asked at each
/// hello (a node whose members change while it runs).
pub async fn listen_admitting<M: Message, T: Send + 'static>(
    listener: TcpListener,
    shared: Arc<Shared>,
    input: mpsc::Sender<Input<M, T>>,
    cfg: NodeConfig,
    shutdown: CancellationToken,
    admit: Admit,
) {
    let open = Arc::new(AtomicUsize::new(0));
    // Connections not through their handshake yet, oldest first, each with the switch that
    // closes it. At the limit, the oldest of them makes room for the newcomer: a flood of
    // connections that say nothing (or say hello and prove nothing) then holds no slot for
    // long, and a real peer's handshake, which takes a round trip, gets through. Only when
    // every open connection is a proven peer is a newcomer refused.
    let handshakes: Arc<Mutex<VecDeque<(u64, CancellationToken)>>> = Default::default();
    let mut next_key = 0u64;
    loop {
        let accepted = tokio::select! {
            _ = shutdown.cancelled() => return,
            a = listener.accept() => a,
        };
        let Ok((stream, addr)) = accepted else { continue };
        let at_limit = open.load(Ordering::Relaxed) >= cfg.max_connections;
        let evicted = at_limit && {
            let oldest = handshakes.lock().pop_front();
            oldest.map(|(_, close)| close.cancel()).is_some()
        };
        if evicted {
            Counters::bump(&shared.counters.handshakes_evicted);
        } else if at_limit {
            Counters::bump(&shared.counters.connections_over_limit);
            Counters::bump(&shared.counters.connections_rejected);
            eprintln!(
                "[id {}] refused connection from {addr}: {} connections open",
                shared.id, cfg.max_connections
            );
            drop(stream);
            continue;
        }
        open.fetch_add(1, Ordering::Relaxed);
        let key = next_key;
        next_key += 1;
        let close = CancellationToken::new();
        handshakes.lock().push_back((key, close.clone()));
        let (shared, input, cfg, shutdown, open, admit, handshakes) = (
            shared.clone(),
            input.clone(),
            cfg.clone(),
            shutdown.clone(),
            open.clone(),
            admit.clone(),
            handshakes.clone(),
        );
        tokio::spawn(async move {
            let through = || handshakes.lock().retain(|(k, _)| *k != key);
            let result = tokio::select! {
                _ = shutdown.cancelled() => Ok(()),
                _ = close.cancelled() => Err(FrameError::Decode(
                    "closed during its handshake to make room for a newer connection".into(),
                )),
                r = read_connection(stream, &shared, &input, &cfg, &admit, &through) => r,
            };
            through();
            if let Err(e) = result {
                let c = &shared.counters;
                Counters::bump(&c.connections_rejected);
                match e {
                    FrameError::Magic(_)
                    | FrameError::Version { .. }
                    | FrameError::Algorithm { .. }
                    | FrameError::UnknownSender(_) => Counters::bump(&c.handshake_errors),
                    FrameError::Unauthenticated(_) => {
                        Counters::bump(&c.handshake_errors);
                        Counters::bump(&c.auth_failures);
                    }
                    _ => Counters::bump(&c.frame_errors),
                }
                eprintln!("[id {}] closed connection from {addr}: {e}", shared.id);
            }
            open.fetch_sub(1, Ordering::Relaxed);
        });
    }
}

/// Reads one inbound connection: the hello, then envelopes until the peer closes.
async fn read_connection<M: Message, T>(
    stream: TcpStream,
    shared: &Shared,
    input: &mpsc::Sender<Input<M, T>>,
    cfg: &NodeConfig,
    admit: &Admit,
    through: &(dyn Fn() + Sync),
) -> Result<(), FrameError> {
    let _ = stream.set_nodelay(true);
    let (read_half, mut write_half) = stream.into_split();
    let small = cfg.max_frame.min(HANDSHAKE_MAX_FRAME);
    let mut frames = FramedRead::new(read_half, wire::codec(small));
    let deadline = tokio::time::Instant::now() + HANDSHAKE_TIMEOUT;
    let first = match tokio::time::timeout_at(deadline, frames.next()).await {
        Err(_) => return Err(FrameError::Decode("no hello within the handshake timeout".into())),
        Ok(None) => return Err(FrameError::Truncated),
        Ok(Some(Err(e))) => return Err(wire::codec_error(&e, small)),
        Ok(Some(Ok(f))) => f,
    };
    let hello = wire::check_hello_with(&first, &cfg.algorithm, |u| u != shared.id && admit(u).is_some())?;
    if let Some(secret) = &cfg.secret {
        // Challenge the claimed sender; only a proof for this connection's nonces and these
        // two ids lets its frames through.
        use tokio::io::AsyncWriteExt;
        let nonce = auth::nonce();
        let ids = auth::ids(hello.sender, shared.id);
        let t = auth::transcript(&hello.nonce, &nonce, &ids, &cfg.algorithm);
        let challenge = wire::encode(&Challenge { nonce, mac: secret.mac(auth::ACCEPTOR, &t) });
        let mut framed = Vec::with_capacity(challenge.len() + 4);
        framed.extend_from_slice(&(challenge.len() as u32).to_be_bytes());
        framed.extend_from_slice(&challenge);
        write_half.write_all(&framed).await.map_err(|e| FrameError::Decode(e.to_string()))?;
        let proof = match tokio::time::timeout_at(deadline, frames.next()).await {
            Err(_) | Ok(None) => return Err(FrameError::Unauthenticated(hello.sender)),
            Ok(Some(Err(e))) => return Err(wire::codec_error(&e, small)),
            Ok(Some(Ok(f))) => f,
        };
        let proof: Proof = wire::decode(&proof).map_err(|_| FrameError::Unauthenticated(hello.sender))?;
        if !secret.verify(auth::DIALLER, &t, &proof.mac) {
            return Err(FrameError::Unauthenticated(hello.sender));
        }
    }
    let from = admit(hello.sender).ok_or(FrameError::UnknownSender(hello.sender))?;
    through();
    Counters::bump(&shared.counters.connections_accepted);
    // Admitted (and, with a secret, proven): its frames may be as large as the node takes.
    frames.decoder_mut().set_max_frame_length(cfg.max_frame);
    loop {
        let frame = match tokio::time::timeout(cfg.peer_idle_timeout, frames.next()).await {
            Err(_) => {
                Counters::bump(&shared.counters.connections_idle_closed);
                eprintln!(
                    "[id {}] closed the connection of id {}: no frame for {:?}",
                    shared.id, hello.sender, cfg.peer_idle_timeout
                );
                return Ok(());
            }
            Ok(None) => return Ok(()),
            Ok(Some(f)) => f.map_err(|e| wire::codec_error(&e, cfg.max_frame))?,
        };
        if frame.is_empty() {
            continue; // a keep-alive
        }
        let env: Envelope<M> = wire::decode(&frame)?;
        if input.send(Input::Message { from, env }).await.is_err() {
            return Ok(());
        }
    }
}
