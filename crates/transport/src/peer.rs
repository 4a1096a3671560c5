//! Peer links over TCP: one outbound writer per peer, one listener, one reader per inbound
//! connection. Generic over the payload: a writer writes the frames its queue holds (encoded by
//! its user, [`crate::wire::encode`]), a reader decodes each frame as the listener's payload
//! type and hands it on as an [`Inbound`].
//!
//! - **Writers** dial their peer, send the [`Hello`], then write the frames
//!   of the peer's bounded queue. When the connection fails they redial with exponential backoff
//!   (50 ms doubling to 2 s); messages queued meanwhile wait in the queue, and the user drops
//!   (and counts) what does not fit. The frame being written when a connection breaks is lost
//!   and counted — as in any real network, the protocols above must tolerate loss.
//! - **Readers** require a valid hello within [`HANDSHAKE_TIMEOUT`], then deliver each frame to
//!   the driver. Garbage, a truncated or oversized frame, a wrong version, algorithm or sender:
//!   logged, counted, connection closed. The node keeps serving everyone else.
//! - **Two pools of connections, capped separately.** At most [`MAX_HANDSHAKES`] connections
//!   are in their handshake at once, each reading frames of at most [`HANDSHAKE_MAX_FRAME`]
//!   bytes (what a hello needs); at the cap the oldest of them is closed for the newcomer,
//!   those that have not even sent a valid hello first. Peers through their handshake (proven,
//!   with a secret) hold their slots in a pool of their own, at most
//!   [`PeerConfig::max_connections`]; when it is full, a peer's newer connection replaces its
//!   oldest one (left by a restart), and only a peer with none there is refused. No number of
//!   strangers can thus close, or keep out, a peer that proved itself.
//! - **TLS** ([`PeerConfig::tls`]): a writer's connection is a mutual-TLS session before its
//!   hello is written (the peer's certificate must name the host dialled and be signed by the
//!   peer CA), a reader's is one before its hello is read (the dialler's certificate must be
//!   signed by the peer CA), within [`HANDSHAKE_TIMEOUT`]; the hello and the challenge–response
//!   then run inside it.
//! - **Idle connections** do not hold a slot for good: a writer with nothing to send writes an
//!   empty keep-alive frame every quarter of [`PeerConfig::peer_idle_timeout`], and a reader
//!   that receives no frame for the whole timeout (a stranger that said hello and nothing more,
//!   a peer gone from the network) closes the connection and counts it.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use parking_lot::Mutex;
use serde::de::DeserializeOwned;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadHalf, WriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_util::codec::{FramedRead, FramedWrite};
use tokio_util::sync::CancellationToken;

use crate::PeerConfig;
use crate::auth;
use crate::counters::{Counted, TransportCounts};
use crate::wire::{self, Challenge, FrameError, Hello, Proof};

/// A peer connection: plain TCP, or a TLS session over it.
trait PeerIo: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> PeerIo for T {}
type Io = Box<dyn PeerIo>;

/// How long an inbound connection may take to send its hello.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

/// The largest frame read before a connection's handshake is done: what a hello needs (its
/// magic, version, nonce, sender and a protocol name of at most [`MAX_PROTOCOL_LEN`] bytes;
/// a challenge and a proof are smaller). Only a peer that proved itself may send frames up to
/// [`PeerConfig::max_frame`], whose buffer the codec reserves from the frame's length prefix
/// alone: a stranger announcing a larger frame is cut off before anything is allocated for it.
pub const HANDSHAKE_MAX_FRAME: usize = 512;

/// The longest protocol name a hello may carry (see [`HANDSHAKE_MAX_FRAME`]).
pub const MAX_PROTOCOL_LEN: usize = 256;

/// Inbound connections in their handshake at once (not proven yet); at the cap the oldest is
/// closed for the newcomer, those that sent no valid hello first.
pub const MAX_HANDSHAKES: usize = 64;

/// How long one dial may take (an unreachable host would otherwise hold it for minutes).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// Backoff bounds for redialling a peer.
const BACKOFF_MIN: Duration = Duration::from_millis(50);
const BACKOFF_MAX: Duration = Duration::from_secs(2);

/// One outbound link as its writer keeps it: the peer, its address, and whether the connection
/// is up (shared with the user, who shows it and decides by it).
#[derive(Debug)]
pub struct LinkState {
    /// The peer's id.
    pub id: u64,
    /// Its address, `host:port` (resolved at every connection attempt).
    pub addr: String,
    /// True while the outgoing connection is up (and, with a secret, the peer proved itself).
    pub connected: AtomicBool,
    /// While not connected: since when (ns since the Unix epoch); 0 while connected, and
    /// before the first connection is lost.
    pub down_since_ns: AtomicU64,
}

impl LinkState {
    /// A link to peer `id` at `addr`, not connected yet.
    pub fn new(id: u64, addr: String) -> LinkState {
        LinkState { id, addr, connected: AtomicBool::new(false), down_since_ns: AtomicU64::new(0) }
    }

    /// True while the outgoing connection is up.
    pub fn is_connected(&self) -> bool {
        self.connected.load(Ordering::Relaxed)
    }

    /// Marks the link down since now.
    fn lost(&self) {
        self.connected.store(false, Ordering::Relaxed);
        self.down_since_ns.store(crate::wall_ns().max(1), Ordering::Relaxed);
    }
}

/// Keeps a connection to the peer of `link` and writes the frames of `queue` into it. It ends
/// when `shutdown` is cancelled, or when the queue's senders are gone and what they queued is
/// written. `on_lost` is called each time an established connection is lost (after the link
/// is marked down).
pub async fn writer(
    cfg: PeerConfig,
    counts: Arc<dyn TransportCounts>,
    link: Arc<LinkState>,
    mut queue: mpsc::Receiver<Bytes>,
    on_lost: impl Fn() + Send + 'static,
    shutdown: CancellationToken,
) {
    let me = cfg.id;
    let mut backoff = BACKOFF_MIN;
    let mut first = true;
    loop {
        if !first {
            counts.bump(Counted::Reconnects);
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
        let stream: Io = match &cfg.tls {
            None => Box::new(stream),
            Some(tls) => {
                let Some(name) = crate::tls::server_name(&link.addr) else {
                    eprintln!("[id {me}] id {}'s address {:?} names no TLS server name", link.id, link.addr);
                    continue;
                };
                let session = tokio::select! {
                    _ = shutdown.cancelled() => return,
                    s = tokio::time::timeout(HANDSHAKE_TIMEOUT, tls.connector.connect(name, stream)) => s,
                };
                match session {
                    Ok(Ok(s)) => Box::new(s),
                    Ok(Err(e)) => {
                        counts.bump(Counted::AuthFailures);
                        eprintln!("[id {me}] TLS with id {} refused: {e}; redialling", link.id);
                        continue;
                    }
                    Err(_) => {
                        counts.bump(Counted::AuthFailures);
                        eprintln!("[id {me}] id {} did not finish the TLS handshake; redialling", link.id);
                        continue;
                    }
                }
            }
        };
        // After the handshake the peer never writes on this connection: a readable read half
        // means it closed.
        let (read_half, write_half) = tokio::io::split(stream);
        let mut framed = FramedWrite::new(write_half, wire::codec(cfg.max_frame));
        let my_nonce = auth::nonce();
        let hello = Hello::new(&cfg.protocol, me).with_nonce(my_nonce);
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
                        prove(read_half, &mut framed, secret, my_nonce, me, link.id, &cfg),
                    ) => a,
                };
                match answer {
                    Ok(Ok(r)) => r,
                    Ok(Err(e)) => {
                        counts.bump(Counted::AuthFailures);
                        eprintln!("[id {me}] handshake with id {} failed: {e}; redialling", link.id);
                        continue;
                    }
                    Err(_) => {
                        counts.bump(Counted::AuthFailures);
                        eprintln!("[id {me}] id {} sent no challenge; redialling", link.id);
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
                link.lost();
                on_lost();
                eprintln!("[id {me}] connection to id {} closed by the peer; redialling", link.id);
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
                counts.add(Counted::MessagesSent, n);
            } else {
                counts.add(Counted::MessagesDroppedConnection, n);
                link.lost();
                on_lost();
                eprintln!("[id {me}] connection to id {} broke; redialling", link.id);
                break;
            }
        }
    }
}

/// The dialler's side of the challenge–response: read the acceptor's challenge, check its
/// proof, send ours. Returns the read half (nothing more is ever read from it but a close).
async fn prove(
    read_half: ReadHalf<Io>,
    framed: &mut FramedWrite<WriteHalf<Io>, tokio_util::codec::LengthDelimitedCodec>,
    secret: &auth::Secret,
    my_nonce: [u8; auth::NONCE_LEN],
    me: u64,
    peer: u64,
    cfg: &PeerConfig,
) -> Result<ReadHalf<Io>, FrameError> {
    let small = cfg.max_frame.min(HANDSHAKE_MAX_FRAME);
    let mut frames = FramedRead::new(read_half, wire::codec(small));
    let frame = match frames.next().await {
        None => return Err(FrameError::Truncated),
        Some(Err(e)) => return Err(wire::codec_error(&e, small)),
        Some(Ok(f)) => f,
    };
    let challenge: Challenge = wire::decode(&frame)?;
    let ids = auth::ids(me, peer);
    let t = auth::transcript(&my_nonce, &challenge.nonce, &ids, &cfg.protocol);
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

/// Which senders a listener lets in, and what their messages are delivered as coming from
/// (`None`: refused as an unknown sender). Asked at each hello, so the members may change while
/// the listener runs.
pub type Admit<P> = Arc<dyn Fn(u64) -> Option<P> + Send + Sync>;

/// A message a reader decoded, from the sender its connection proved (as [`Admit`] names it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inbound<M, P> {
    /// The sender, as the listener's [`Admit`] named it.
    pub from: P,
    /// The message.
    pub msg: M,
}

/// Accepts inbound connections until shutdown, from the senders `admit` lets in; each frame of
/// an admitted connection is decoded as an `M` and sent on `input` as an [`Inbound`].
pub async fn listen<M, P, T>(
    listener: TcpListener,
    cfg: PeerConfig,
    counts: Arc<dyn TransportCounts>,
    admit: Admit<P>,
    input: mpsc::Sender<T>,
    shutdown: CancellationToken,
) where
    M: DeserializeOwned + Send + 'static,
    P: Copy + Send + Sync + 'static,
    T: From<Inbound<M, P>> + Send + 'static,
{
    let slots: Arc<Mutex<Slots>> = Default::default();
    let mut next_key = 0u64;
    loop {
        let accepted = tokio::select! {
            _ = shutdown.cancelled() => return,
            a = listener.accept() => a,
        };
        let (stream, addr) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // Out of descriptors, typically: give connections a moment to close rather
                // than spin on the error.
                eprintln!("[id {}] peer accept failed: {e}", cfg.id);
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    _ = tokio::time::sleep(Duration::from_millis(50)) => continue,
                }
            }
        };
        let key = next_key;
        next_key += 1;
        let close = CancellationToken::new();
        let hello_ok = Arc::new(AtomicBool::new(false));
        let evicted = slots.lock().enter(Pending { key, close: close.clone(), hello_ok: hello_ok.clone() });
        if evicted {
            counts.bump(Counted::HandshakesEvicted);
        }
        let (counts, input, cfg, shutdown, admit, slots) =
            (counts.clone(), input.clone(), cfg.clone(), shutdown.clone(), admit.clone(), slots.clone());
        tokio::spawn(async move {
            let proven = AtomicBool::new(false);
            let sender = AtomicU64::new(0);
            let step = |s: Step| match s {
                Step::Hello => {
                    hello_ok.store(true, Ordering::Relaxed);
                    true
                }
                Step::Proven(id) => {
                    sender.store(id, Ordering::Relaxed);
                    let ok = slots.lock().prove(key, id, &close, cfg.max_connections);
                    proven.store(ok, Ordering::Relaxed);
                    ok
                }
            };
            let result = tokio::select! {
                _ = shutdown.cancelled() => Ok(()),
                _ = close.cancelled() => {
                    if proven.load(Ordering::Relaxed) {
                        eprintln!(
                            "[id {}] closed the connection of id {} from {addr}: replaced by its newer one",
                            cfg.id,
                            sender.load(Ordering::Relaxed)
                        );
                        Ok(())
                    } else {
                        Err(FrameError::Decode(
                            "closed during its handshake to make room for a newer connection".into(),
                        ))
                    }
                }
                r = read_connection::<M, P, T>(stream, &*counts, &input, &cfg, &admit, &step) => r,
            };
            slots.lock().leave(key);
            if let Err(e) = result {
                counts.bump(Counted::ConnectionsRejected);
                match e {
                    FrameError::Magic(_)
                    | FrameError::Version { .. }
                    | FrameError::Algorithm { .. }
                    | FrameError::UnknownSender(_) => counts.bump(Counted::HandshakeErrors),
                    FrameError::Unauthenticated(_) | FrameError::Tls(_) => {
                        counts.bump(Counted::HandshakeErrors);
                        counts.bump(Counted::AuthFailures);
                    }
                    FrameError::OverLimit(_) => counts.bump(Counted::ConnectionsOverLimit),
                    _ => counts.bump(Counted::FrameErrors),
                }
                eprintln!("[id {}] closed connection from {addr}: {e}", cfg.id);
            }
        });
    }
}

/// A connection in its handshake, as the listener keeps it.
struct Pending {
    key: u64,
    /// Cancelled to close it.
    close: CancellationToken,
    /// Set once it sent a valid hello (it is then evicted after those that did not).
    hello_ok: Arc<AtomicBool>,
}

/// The listener's two pools: connections in their handshake and proven peers' connections,
/// each oldest first.
#[derive(Default)]
struct Slots {
    pending: VecDeque<Pending>,
    /// (connection key, peer id, the switch that closes it).
    proven: VecDeque<(u64, u64, CancellationToken)>,
}

impl Slots {
    /// Lets a new connection into the handshake pool; at [`MAX_HANDSHAKES`], the oldest that
    /// sent no valid hello, else the oldest, is closed for it (returns true then).
    fn enter(&mut self, newcomer: Pending) -> bool {
        let evicted = self.pending.len() >= MAX_HANDSHAKES && {
            let at = self.pending.iter().position(|p| !p.hello_ok.load(Ordering::Relaxed)).unwrap_or(0);
            self.pending.remove(at).map(|p| p.close.cancel()).is_some()
        };
        self.pending.push_back(newcomer);
        evicted
    }

    /// Moves connection `key` to the proven pool as peer `id`'s. With `max` proven connections
    /// open, the oldest other connection of the same peer (left by a restart) is closed for it;
    /// when that peer has none, false: the connection must close.
    fn prove(&mut self, key: u64, id: u64, close: &CancellationToken, max: usize) -> bool {
        self.pending.retain(|p| p.key != key);
        if self.proven.len() >= max {
            let Some(at) = self.proven.iter().position(|(_, peer, _)| *peer == id) else { return false };
            if let Some((_, _, older)) = self.proven.remove(at) {
                older.cancel();
            }
        }
        self.proven.push_back((key, id, close.clone()));
        true
    }

    /// Forgets connection `key`.
    fn leave(&mut self, key: u64) {
        self.pending.retain(|p| p.key != key);
        self.proven.retain(|(k, _, _)| *k != key);
    }
}

/// How far a connection's handshake got, as [`read_connection`] tells the listener.
enum Step {
    /// It sent a valid hello.
    Hello,
    /// It proved itself (or, without a secret, said hello) as this peer id; the answer says
    /// whether it may stay.
    Proven(u64),
}

/// Reads one inbound connection: the hello, then messages until the peer closes.
async fn read_connection<M, P, T>(
    stream: TcpStream,
    counts: &dyn TransportCounts,
    input: &mpsc::Sender<T>,
    cfg: &PeerConfig,
    admit: &Admit<P>,
    step: &(dyn Fn(Step) -> bool + Sync),
) -> Result<(), FrameError>
where
    M: DeserializeOwned,
    P: Copy,
    T: From<Inbound<M, P>>,
{
    let _ = stream.set_nodelay(true);
    let deadline = tokio::time::Instant::now() + HANDSHAKE_TIMEOUT;
    let stream: Io = match &cfg.tls {
        None => Box::new(stream),
        Some(tls) => match tokio::time::timeout_at(deadline, tls.acceptor.accept(stream)).await {
            Err(_) => return Err(FrameError::Tls("no TLS handshake within the handshake timeout".into())),
            Ok(Err(e)) => return Err(FrameError::Tls(e.to_string())),
            Ok(Ok(s)) => Box::new(s),
        },
    };
    let (read_half, mut write_half) = tokio::io::split(stream);
    let small = cfg.max_frame.min(HANDSHAKE_MAX_FRAME);
    let mut frames = FramedRead::with_capacity(read_half, wire::codec(small), small + 4);
    let first = match tokio::time::timeout_at(deadline, frames.next()).await {
        Err(_) => return Err(FrameError::Decode("no hello within the handshake timeout".into())),
        Ok(None) => return Err(FrameError::Truncated),
        Ok(Some(Err(e))) => return Err(wire::codec_error(&e, small)),
        Ok(Some(Ok(f))) => f,
    };
    let hello = wire::check_hello_with(&first, &cfg.protocol, |u| u != cfg.id && admit(u).is_some())?;
    step(Step::Hello);
    if let Some(secret) = &cfg.secret {
        // Challenge the claimed sender; only a proof for this connection's nonces and these
        // two ids lets its frames through.
        use tokio::io::AsyncWriteExt;
        let nonce = auth::nonce();
        let ids = auth::ids(hello.sender, cfg.id);
        let t = auth::transcript(&hello.nonce, &nonce, &ids, &cfg.protocol);
        let challenge = wire::encode(&Challenge { nonce, mac: secret.mac(auth::ACCEPTOR, &t) });
        let mut framed = Vec::with_capacity(challenge.len() + 4);
        framed.extend_from_slice(&(challenge.len() as u32).to_be_bytes());
        framed.extend_from_slice(&challenge);
        write_half.write_all(&framed).await.map_err(|e| FrameError::Decode(e.to_string()))?;
        write_half.flush().await.map_err(|e| FrameError::Decode(e.to_string()))?;
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
    if !step(Step::Proven(hello.sender)) {
        return Err(FrameError::OverLimit(cfg.max_connections));
    }
    counts.bump(Counted::ConnectionsAccepted);
    // Admitted (and, with a secret, proven): its frames may be as large as the node takes.
    frames.decoder_mut().set_max_frame_length(cfg.max_frame);
    loop {
        let frame = match tokio::time::timeout(cfg.peer_idle_timeout, frames.next()).await {
            Err(_) => {
                counts.bump(Counted::ConnectionsIdleClosed);
                eprintln!(
                    "[id {}] closed the connection of id {}: no frame for {:?}",
                    cfg.id, hello.sender, cfg.peer_idle_timeout
                );
                return Ok(());
            }
            Ok(None) => return Ok(()),
            Ok(Some(f)) => f.map_err(|e| wire::codec_error(&e, cfg.max_frame))?,
        };
        if frame.is_empty() {
            continue; // a keep-alive
        }
        let msg: M = wire::decode(&frame)?;
        if input.send(T::from(Inbound { from, msg })).await.is_err() {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_largest_hello_fits_the_handshake_frame() {
        let hello = Hello::new(&"p".repeat(MAX_PROTOCOL_LEN), u64::MAX).with_nonce([0xff; 32]);
        let len = wire::encode(&hello).len();
        assert!(len <= HANDSHAKE_MAX_FRAME, "a hello of {len} bytes");
        let challenge = Challenge { nonce: [0xff; 32], mac: [0xff; 32] };
        assert!(wire::encode(&challenge).len() <= HANDSHAKE_MAX_FRAME);
    }

    fn pending(key: u64, hello: bool) -> (Pending, CancellationToken) {
        let close = CancellationToken::new();
        (Pending { key, close: close.clone(), hello_ok: Arc::new(AtomicBool::new(hello)) }, close)
    }

    #[test]
    fn strangers_make_room_for_each_other_silent_ones_first_never_for_proven_peers() {
        let mut slots = Slots::default();
        let (first, first_close) = pending(0, false);
        assert!(!slots.enter(first));
        // A peer's connection that said its hello, then enough silent ones to fill the pool.
        let (peer, peer_close) = pending(1, true);
        assert!(!slots.enter(peer));
        for key in 2..MAX_HANDSHAKES as u64 {
            assert!(!slots.enter(pending(key, false).0));
        }
        // Each newcomer now closes the oldest silent connection, never the one that said hello
        // while a silent one is left.
        assert!(slots.enter(pending(1000, false).0));
        assert!(first_close.is_cancelled());
        for key in 1001..1000 + MAX_HANDSHAKES as u64 {
            assert!(slots.enter(pending(key, false).0));
        }
        assert!(!peer_close.is_cancelled(), "the peer's handshake survived {MAX_HANDSHAKES} strangers");
        assert!(slots.prove(1, 7, &peer_close, 1));
        // Proven peers have their own pool: strangers never close them.
        for key in 2000..2000 + 4 * MAX_HANDSHAKES as u64 {
            slots.enter(pending(key, true).0);
        }
        assert!(!peer_close.is_cancelled());
        // One more peer than the proven pool takes is refused; the same peer again, with the
        // pool full, replaces its older connection.
        let other = CancellationToken::new();
        assert!(!slots.prove(3000, 8, &other, 1));
        let newer = CancellationToken::new();
        assert!(slots.prove(3001, 7, &newer, 1));
        assert!(peer_close.is_cancelled());
        slots.leave(1);
        assert_eq!(
            slots.proven.iter().map(|(k, _, _)| *k).collect::<Vec<_>>(),
            [3001],
            "the older one leaving keeps the newer"
        );
        // With room, a peer may have two connections (its restart's old one times out).
        assert!(slots.prove(3002, 7, &CancellationToken::new(), 2));
        assert!(!newer.is_cancelled());
    }
}
